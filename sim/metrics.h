/* sim/metrics.h - serving latency metrics with vLLM's names, in seconds.
 *
 * What is measured, per finished request (pf_metrics_add_request):
 *   time_to_first_token      first output token - arrival
 *   request_queue_time       first scheduled - arrival (the WAITING phase;
 *                            like vLLM V1, only the first wait: time waiting
 *                            again after a preemption counts in e2e, not here)
 *   e2e_request_latency      last output token - arrival
 *   request_time_per_output_token  (last - first token) / (outputs - 1), the
 *                            request's mean gap (TPOT); requests of one output
 *                            token have none
 * and per output token after the first (pf_metrics_add_itl):
 *   inter_token_latency      the gap since the same request's previous token
 * Each keeps count, sum, min, max, p50/p90/p99 and mean, and the counts of
 * vLLM's own Prometheus histogram buckets (pf_metric_buckets) so a /metrics
 * writer can serve `vllm:<name>_seconds` unchanged.
 *
 * Quantiles come from a bounded log-linear histogram (128 sub-buckets per
 * power of two, indexed from the bits of the double: no libm, the same bytes
 * on every machine): the returned value is within 1/256 (0.39%) of the exact
 * nearest-rank quantile (the ceil(q x n)-th smallest sample) for samples
 * between 2^-20 s (0.95 us) and 2^23 s (97 days); below that range the answer
 * is within 1 us, above it the maximum. Memory is fixed (about 44 KB per
 * metric), whatever the number of requests or tokens: 10^6 requests and 10^9
 * tokens fit; nothing is kept per request once it is folded in.
 *
 * Requests also feed throughput (requests, output tokens and all tokens per
 * second of the run) and SLO attainment: the fraction of requests whose TTFT
 * and TPOT are within --slo-ttft and --slo-tpot, and slo_goodput, requests
 * per second meeting both (DistServe, OSDI 2024, judges a system by the rate
 * of requests that meet both their TTFT and TPOT objectives; vLLM's
 * `benchmark_serving --goodput` reports the same per-run figure).
 *
 * Not thread-safe: one pf_metrics per engine or thread, merged with
 * pf_metrics_merge. Filled by the scheduler core (sim/sched.c: requests at
 * commit, inter-token gaps folded in at commit from the landing shards'
 * runs), read by the simulator's statistics (sim/snapshot.c), `sim`'s
 * latency table, the dashboard and its /metrics histograms
 * (tui/simmetrics.c), and tests.
 */
#ifndef PF_SIM_METRICS_H
#define PF_SIM_METRICS_H

#include <stdint.h>

typedef enum {
    PF_MET_TTFT = 0, /* time_to_first_token */
    PF_MET_ITL,      /* inter_token_latency */
    PF_MET_TPOT,     /* request_time_per_output_token */
    PF_MET_E2E,      /* e2e_request_latency */
    PF_MET_QUEUE,    /* request_queue_time */
    PF_MET_COUNT
} pf_metric;

/* "time_to_first_token", ...; NULL for a bad id. */
const char *pf_metric_name(pf_metric m);
/* vLLM's Prometheus name: "vllm:time_to_first_token_seconds", ... */
const char *pf_metric_prom_name(pf_metric m);

/* vLLM's histogram bucket upper bounds ("le"), in seconds, ascending, from
 * vllm/v1/metrics/loggers.py (PrometheusStatLogger); a last +Inf bucket is
 * implied. */
#define PF_VLLM_TTFT_BUCKETS 22
#define PF_VLLM_ITL_BUCKETS 19
#define PF_VLLM_REQUEST_LATENCY_BUCKETS 21
#define PF_METRICS_MAX_BUCKETS 22
extern const double pf_vllm_ttft_buckets[PF_VLLM_TTFT_BUCKETS];
extern const double pf_vllm_itl_buckets[PF_VLLM_ITL_BUCKETS]; /* ITL and TPOT */
extern const double pf_vllm_request_latency_buckets[PF_VLLM_REQUEST_LATENCY_BUCKETS];

/* The bounds of metric m and their number (not counting +Inf); NULL and 0
 * for a bad id. */
const double *pf_metric_buckets(pf_metric m, int *n);

/* Log-linear sketch geometry (see the contract above). */
#define PF_LAT_SUB_BITS 7
#define PF_LAT_MIN_EXP (-20)
#define PF_LAT_MAX_EXP 23
#define PF_LAT_BINS (((PF_LAT_MAX_EXP) - (PF_LAT_MIN_EXP)) << (PF_LAT_SUB_BITS))

/* One latency distribution. */
typedef struct {
    uint64_t count;
    double sum, min, max;
    uint64_t under, over;            /* below 2^-20 s, at or above 2^23 s */
    uint64_t bins[PF_LAT_BINS];
    pf_metric metric;
    uint64_t buckets[PF_METRICS_MAX_BUCKETS + 1]; /* per vLLM bucket, last = +Inf */
    int32_t bin_lo, bin_hi;          /* bins[i] != 0 only for lo <= i < hi */
} pf_latency;

typedef struct {
    uint64_t count;
    double mean, p50, p90, p99, min, max; /* 0 when count is 0 */
} pf_latency_summary;

/* Nearest-rank quantile q in [0, 1] (q = 0 gives the minimum); 0 when empty. */
double pf_latency_quantile(const pf_latency *l, double q);
void pf_latency_summarize(const pf_latency *l, pf_latency_summary *out);

/* One finished request's timeline (seconds on the simulator's clock). */
typedef struct {
    double arrival_s;     /* enters the waiting queue */
    double scheduled_s;   /* first scheduled */
    double first_token_s; /* first output token produced */
    double finish_s;      /* last output token produced */
    int64_t prompt_tokens;
    int64_t output_tokens; /* >= 1 */
} pf_request_times;

/* About 220 KB: allocate it (or embed it in a heap object), not on a stack. */
typedef struct {
    pf_latency lat[PF_MET_COUNT];
    double slo_ttft_s, slo_tpot_s; /* 0: no objective (always met) */
    int64_t requests, prompt_tokens, output_tokens;
    int64_t met_ttft, met_tpot, met_both;
    double first_arrival_s, last_finish_s;
} pf_metrics;

/* Empty accumulators with the SLO targets (each 0 for none, else > 0).
 * PF_ERR_ARG for a negative or non-finite target. */
int pf_metrics_init(pf_metrics *m, double slo_ttft_s, double slo_tpot_s);

/* Fold in one finished request. PF_ERR_ARG (and nothing recorded) unless
 * the times are finite and ordered arrival <= scheduled <= first token <=
 * finish, prompt_tokens >= 0 and output_tokens >= 1. */
int pf_metrics_add_request(pf_metrics *m, const pf_request_times *r);

/* `count` output tokens each came gap_s after their request's previous one
 * (one call per step serves every decoding sequence). PF_ERR_ARG for a
 * negative or non-finite gap. */
int pf_metrics_add_itl(pf_metrics *m, double gap_s, uint64_t count);

/* dst = src, moving only the bins in use (samples span a few powers of
 * two: a few of the 5,504 bins a metric has, so a copy is some tens of KB,
 * not 220). dst must be zeroed (calloc) or an earlier copy's destination.
 * For readers that copy under a lock (sim/snapshot.c). */
void pf_metrics_copy(pf_metrics *dst, const pf_metrics *src);

/* Add src's samples to dst (engines or sweep shards). Both must have the
 * same SLO targets, else PF_ERR_ARG and dst unchanged. */
int pf_metrics_merge(pf_metrics *dst, const pf_metrics *src);

typedef struct {
    pf_latency_summary lat[PF_MET_COUNT];
    int64_t requests, prompt_tokens, output_tokens;
    double duration_s;
    double request_throughput;     /* requests / s */
    double output_throughput;      /* output tokens / s */
    double total_token_throughput; /* (prompt + output) tokens / s */
    double slo_ttft_attainment;    /* fractions of requests, 0..1 */
    double slo_tpot_attainment;
    double slo_attainment;         /* both */
    double slo_goodput;            /* requests meeting both / s */
} pf_metrics_summary;

/* Everything at once. duration_s > 0 is the run's length; 0 takes the span
 * from the first arrival to the last finish folded in. Rates are 0 when the
 * duration is 0 (no request, or all at one instant). */
void pf_metrics_summarize(const pf_metrics *m, double duration_s, pf_metrics_summary *out);

#endif
