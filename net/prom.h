/* net/prom.h - the Prometheus text exposition format: a bounded parser, a
 * metrics registry with a writer, and quantiles from histogram buckets.
 *
 * What it is: vLLM serves its metrics at /metrics in this format (counters,
 * gauges and histograms named vllm:...); `attach` parses the page it polls,
 * and the simulator will serve its own through a registry rendered here.
 * No C library exists for the text format, so the parser is ours; its
 * grammar is in prom.c's opening comment.
 *
 * Contract (parser): the page is untrusted. Lines longer than
 * max_line, pages longer than max_bytes (the rest is ignored and counted),
 * and more than max_samples samples are bounded; a line that breaks the
 * grammar is counted in n_bad and skipped, never fatal. Numbers are read (and
 * written, by the registry) as C numbers whatever the process's locale: each
 * call switches its own thread to the C locale and back. Samples with the
 * same name and different labels (several engines, several models) are kept
 * apart; the queries sum them (counters, gauges) or add their buckets by
 * `le` (histograms), as `sum by (le)` does in PromQL.
 *
 * Contract (registry): thread-safe (one mutex): the simulator updates while
 * an HTTP thread renders. Names, help and label text are copied; bucket
 * bounds are given by the caller (vLLM's, for compatibility).
 * Callers: net/metrics_http, net/attach_model, tui/cmd_attach.c, tests.
 */
#ifndef PF_NET_PROM_H
#define PF_NET_PROM_H

#include <stddef.h>
#include <stdint.h>

#define PF_PROM_NAME_MAX 128 /* longer metric names are counted as bad lines */

typedef enum {
    PF_PROM_UNTYPED = 0,
    PF_PROM_COUNTER,
    PF_PROM_GAUGE,
    PF_PROM_HISTOGRAM,
    PF_PROM_SUMMARY
} pf_prom_type;

typedef struct {
    char name[PF_PROM_NAME_MAX];
    double le;    /* the `le` label of a _bucket sample; NAN when absent */
    double value;
} pf_prom_sample;

typedef struct {
    char name[PF_PROM_NAME_MAX];
    pf_prom_type type;
} pf_prom_family;

/* Defaults (pf_prom_limits_default): max_bytes 4 MiB (vLLM's page for one
 * model is about 100 KB; a hundred models' worth still fits), max_line 16 KiB
 * (label sets of real exporters stay under 1 KiB), max_samples 100,000,
 * max_families 10,000. */
typedef struct {
    size_t max_bytes;
    size_t max_line;
    uint32_t max_samples;
    uint32_t max_families;
} pf_prom_limits;

pf_prom_limits pf_prom_limits_default(void);

typedef struct {
    pf_prom_sample *samples; /* owned */
    uint32_t n_samples, cap_samples;
    pf_prom_family *families; /* owned: from # TYPE lines */
    uint32_t n_families, cap_families;
    uint32_t n_lines;     /* lines looked at                         */
    uint32_t n_bad;       /* lines that break the grammar: skipped     */
    uint32_t n_long;      /* lines over max_line: skipped              */
    uint32_t n_dropped;   /* samples or families past the caps         */
    int truncated;        /* the page was longer than max_bytes        */
} pf_prom_page;

/* Parse `len` bytes into *page (zeroed first; pf_prom_page_free after,
 * whatever the result). Returns 0 (broken lines are counted, not errors),
 * PF_ERR_ARG or PF_ERR_NOMEM. lim NULL means the defaults. */
int pf_prom_parse(const char *text, size_t len, const pf_prom_limits *lim, pf_prom_page *page);
void pf_prom_page_free(pf_prom_page *page);

/* Sum of every sample named exactly `name` (all label sets). Returns how
 * many samples matched (0: *sum untouched). */
int pf_prom_sum(const pf_prom_page *page, const char *name, double *sum);
/* The type a # TYPE line gave `name` (UNTYPED if none). */
pf_prom_type pf_prom_type_of(const pf_prom_page *page, const char *name);

/* A histogram summed over label sets: cumulative counts per upper bound. */
#define PF_PROM_BUCKETS_MAX 64
typedef struct {
    double le[PF_PROM_BUCKETS_MAX];    /* ascending, +Inf last when present */
    double count[PF_PROM_BUCKETS_MAX]; /* cumulative                         */
    int n;
    double sum, total; /* <base>_sum and <base>_count */
} pf_prom_hist;

/* Collect <base>_bucket / _sum / _count. Returns the number of buckets
 * (0: no such histogram); more than PF_PROM_BUCKETS_MAX distinct bounds:
 * the extra ones are dropped (returns PF_ERR_RANGE). */
int pf_prom_histogram(const pf_prom_page *page, const char *base, pf_prom_hist *h);

/* The q-quantile (0 <= q <= 1) estimated from cumulative buckets as
 * Prometheus' histogram_quantile() does: find the bucket holding rank
 * q * total, interpolate linearly inside it (lower bound 0 for the first
 * bucket), and answer the highest finite bound when the rank falls in +Inf.
 * NAN when there are no observations, fewer than two buckets, or no +Inf. */
double pf_prom_quantile(const pf_prom_hist *h, double q);

/* ---- registry and writer ---------------------------------------------- */

typedef struct pf_prom_registry pf_prom_registry;

/* labels: the label text shared by every metric, e.g. model_name="x" (may be
 * NULL or ""); copied. */
pf_prom_registry *pf_prom_registry_new(const char *labels);
void pf_prom_registry_free(pf_prom_registry *r);

/* Add a metric; returns its id (>= 0) or a negative pf_err. Histograms take
 * their finite upper bounds in ascending order (+Inf is implied); others
 * pass NULL, 0. Names must match [a-zA-Z_:][a-zA-Z0-9_:]*. */
int pf_prom_add(pf_prom_registry *r, const char *name, const char *help, pf_prom_type type,
                const double *bounds, int n_bounds);
/* Counters: inc by v >= 0. Gauges: set / inc. Histograms: observe. Each
 * returns 0 or PF_ERR_ARG (wrong id, wrong type, negative counter step). */
int pf_prom_inc(pf_prom_registry *r, int id, double v);
int pf_prom_set(pf_prom_registry *r, int id, double v);
int pf_prom_observe(pf_prom_registry *r, int id, double x);

/* Histograms fed from elsewhere (a latency sketch that keeps its own
 * per-bucket counts, as sim/metrics.h does): add counts[0..n) to the
 * buckets (n = the bounds + 1, the last for +Inf; not cumulative), sum to
 * the sum and count to the count. A histogram's series are counters, so
 * they only grow: the caller adds what its source grew by. Returns 0 or
 * PF_ERR_ARG (wrong id or type, n not the bucket count, NaN or negative sum,
 * count not the sum of counts). */
int pf_prom_hist_add(pf_prom_registry *r, int id, const uint64_t *counts, int n, double sum, uint64_t count);

/* Render every family (# HELP, # TYPE, samples) into a malloc'd string.
 * Returns 0 or PF_ERR_NOMEM. */
int pf_prom_render(pf_prom_registry *r, char **out, size_t *len);

#endif
