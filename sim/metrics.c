/* sim/metrics.c - latency accumulators and serving metrics (see metrics.h). */
#include "sim/metrics.h"

#include <math.h>
#include <string.h>

#include "core/err.h"

/* Copied from vLLM, vllm/v1/metrics/loggers.py, class PrometheusStatLogger
 * (vllm-project/vllm; the same lists in the V0 engine's
 * vllm/engine/metrics.py): histogram_time_to_first_token;
 * histogram_inter_token_latency, whose list histogram_time_per_output_token
 * and histogram_request_time_per_output_token repeat; and
 * request_latency_buckets (e2e, queue, prefill, decode and inference time). */
const double pf_vllm_ttft_buckets[PF_VLLM_TTFT_BUCKETS] = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const double pf_vllm_itl_buckets[PF_VLLM_ITL_BUCKETS] = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const double pf_vllm_request_latency_buckets[PF_VLLM_REQUEST_LATENCY_BUCKETS] = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

static const char *const names[PF_MET_COUNT] = {
    "time_to_first_token", "inter_token_latency", "request_time_per_output_token",
    "e2e_request_latency", "request_queue_time"};
static const char *const prom_names[PF_MET_COUNT] = {
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
    "vllm:request_time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds"};

const char *pf_metric_name(pf_metric m)
{
    return (unsigned)m < PF_MET_COUNT ? names[m] : NULL;
}

const char *pf_metric_prom_name(pf_metric m)
{
    return (unsigned)m < PF_MET_COUNT ? prom_names[m] : NULL;
}

const double *pf_metric_buckets(pf_metric m, int *n)
{
    const double *b = NULL;
    int k = 0;
    switch (m) {
    case PF_MET_TTFT:
        b = pf_vllm_ttft_buckets, k = PF_VLLM_TTFT_BUCKETS;
        break;
    case PF_MET_ITL:
    case PF_MET_TPOT:
        b = pf_vllm_itl_buckets, k = PF_VLLM_ITL_BUCKETS;
        break;
    case PF_MET_E2E:
    case PF_MET_QUEUE:
        b = pf_vllm_request_latency_buckets, k = PF_VLLM_REQUEST_LATENCY_BUCKETS;
        break;
    default:
        break;
    }
    if (n)
        *n = k;
    return b;
}

/* ---- the log-linear sketch ------------------------------------------------
 * A positive double is 2^e x (1 + f). Its bin is (e, the top 7 bits of f):
 * the value's top 7 mantissa bits and its exponent read straight from the
 * IEEE-754 bits, so the bin of a value is the same on every machine. A bin
 * spans [2^e (1 + j/128), 2^e (1 + (j+1)/128)); its midpoint is within 1/256
 * of anything in it. Bins run from 2^MIN_EXP to 2^MAX_EXP; the rest goes to
 * `under` and `over`. */

static uint64_t double_bits(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double bits_double(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#define LAT_SHIFT (52 - PF_LAT_SUB_BITS)
#define LAT_FIRST ((uint64_t)(1023 + PF_LAT_MIN_EXP) << PF_LAT_SUB_BITS)

/* Midpoint of bin i: exponent and sub-bucket, plus half a sub-bucket. */
static double bin_mid(int i)
{
    uint64_t lo = ((uint64_t)i + LAT_FIRST) << LAT_SHIFT;
    uint64_t half = (uint64_t)1 << (LAT_SHIFT - 1);
    return bits_double(lo | half);
}

static void lat_init(pf_latency *l, pf_metric metric)
{
    memset(l, 0, sizeof *l);
    l->metric = metric;
}

static void lat_add(pf_latency *l, double x, uint64_t n)
{
    if (n == 0)
        return;
    if (l->count == 0 || x < l->min)
        l->min = x;
    if (l->count == 0 || x > l->max)
        l->max = x;
    l->count += n;
    l->sum += x * (double)n;

    if (x < ldexp(1.0, PF_LAT_MIN_EXP)) {
        l->under += n;
    } else if (x >= ldexp(1.0, PF_LAT_MAX_EXP)) {
        l->over += n;
    } else {
        uint64_t i = (double_bits(x) >> LAT_SHIFT) - LAT_FIRST;
        l->bins[i] += n;
        if (l->bin_lo >= l->bin_hi) {
            l->bin_lo = (int32_t)i;
            l->bin_hi = (int32_t)i + 1;
        } else if ((int32_t)i < l->bin_lo) {
            l->bin_lo = (int32_t)i;
        } else if ((int32_t)i >= l->bin_hi) {
            l->bin_hi = (int32_t)i + 1;
        }
    }

    /* Prometheus buckets: the first bound with x <= le, else +Inf. */
    int nb;
    const double *b = pf_metric_buckets(l->metric, &nb);
    int k = 0;
    while (k < nb && x > b[k])
        k++;
    l->buckets[k] += n;
}

static void lat_merge(pf_latency *d, const pf_latency *s)
{
    if (s->count == 0)
        return;
    if (d->count == 0 || s->min < d->min)
        d->min = s->min;
    if (d->count == 0 || s->max > d->max)
        d->max = s->max;
    d->count += s->count;
    d->sum += s->sum;
    d->under += s->under;
    d->over += s->over;
    for (int i = s->bin_lo; i < s->bin_hi; i++)
        d->bins[i] += s->bins[i];
    if (s->bin_lo < s->bin_hi) {
        if (d->bin_lo >= d->bin_hi) {
            d->bin_lo = s->bin_lo;
            d->bin_hi = s->bin_hi;
        } else {
            if (s->bin_lo < d->bin_lo)
                d->bin_lo = s->bin_lo;
            if (s->bin_hi > d->bin_hi)
                d->bin_hi = s->bin_hi;
        }
    }
    for (int i = 0; i <= PF_METRICS_MAX_BUCKETS; i++)
        d->buckets[i] += s->buckets[i];
}

/* dst = src through the bins in use: dst's old range is cleared where the
 * new one does not cover it, then the new range is copied. */
static void lat_copy(pf_latency *d, const pf_latency *s)
{
    for (int i = d->bin_lo; i < d->bin_hi; i++)
        if (i < s->bin_lo || i >= s->bin_hi)
            d->bins[i] = 0;
    if (s->bin_lo < s->bin_hi)
        memcpy(d->bins + s->bin_lo, s->bins + s->bin_lo,
               (size_t)(s->bin_hi - s->bin_lo) * sizeof d->bins[0]);
    d->count = s->count;
    d->sum = s->sum;
    d->min = s->min;
    d->max = s->max;
    d->under = s->under;
    d->over = s->over;
    d->metric = s->metric;
    memcpy(d->buckets, s->buckets, sizeof d->buckets);
    d->bin_lo = s->bin_lo;
    d->bin_hi = s->bin_hi;
}

void pf_metrics_copy(pf_metrics *dst, const pf_metrics *src)
{
    for (int m = 0; m < PF_MET_COUNT; m++)
        lat_copy(&dst->lat[m], &src->lat[m]);
    dst->slo_ttft_s = src->slo_ttft_s;
    dst->slo_tpot_s = src->slo_tpot_s;
    dst->requests = src->requests;
    dst->prompt_tokens = src->prompt_tokens;
    dst->output_tokens = src->output_tokens;
    dst->met_ttft = src->met_ttft;
    dst->met_tpot = src->met_tpot;
    dst->met_both = src->met_both;
    dst->first_arrival_s = src->first_arrival_s;
    dst->last_finish_s = src->last_finish_s;
}

double pf_latency_quantile(const pf_latency *l, double q)
{
    if (!l || l->count == 0 || !(q >= 0))
        return 0.0;
    if (q > 1)
        q = 1;
    /* Nearest rank: the k-th smallest sample, k = ceil(q n), at least 1. */
    uint64_t k = (uint64_t)ceil(q * (double)l->count);
    if (k < 1)
        k = 1;
    if (k >= l->count)
        return l->max; /* the largest and smallest samples are kept exactly */
    if (k == 1)
        return l->min;
    double v;
    uint64_t seen = l->under;
    if (k <= seen) {
        v = l->min; /* below 2^-20 s: within a microsecond of anything there */
    } else {
        v = l->max; /* if it lies in `over` */
        for (int i = 0; i < PF_LAT_BINS; i++) {
            seen += l->bins[i];
            if (k <= seen) {
                v = bin_mid(i);
                break;
            }
        }
    }
    /* The true value lies in [min, max]: clamping only brings v closer (and
     * makes a single sample exact). */
    if (v < l->min)
        v = l->min;
    if (v > l->max)
        v = l->max;
    return v;
}

void pf_latency_summarize(const pf_latency *l, pf_latency_summary *out)
{
    memset(out, 0, sizeof *out);
    if (!l || l->count == 0)
        return;
    out->count = l->count;
    out->mean = l->sum / (double)l->count;
    out->min = l->min;
    out->max = l->max;
    out->p50 = pf_latency_quantile(l, 0.50);
    out->p90 = pf_latency_quantile(l, 0.90);
    out->p99 = pf_latency_quantile(l, 0.99);
}

/* ---- requests ------------------------------------------------------------- */

static int slo_ok(double s)
{
    return isfinite(s) && s >= 0;
}

int pf_metrics_init(pf_metrics *m, double slo_ttft_s, double slo_tpot_s)
{
    if (!m || !slo_ok(slo_ttft_s) || !slo_ok(slo_tpot_s))
        return PF_ERR_ARG;
    memset(m, 0, sizeof *m);
    for (int i = 0; i < PF_MET_COUNT; i++)
        lat_init(&m->lat[i], (pf_metric)i);
    m->slo_ttft_s = slo_ttft_s;
    m->slo_tpot_s = slo_tpot_s;
    return PF_OK;
}

int pf_metrics_add_request(pf_metrics *m, const pf_request_times *r)
{
    if (!m || !r)
        return PF_ERR_ARG;
    double t[4] = {r->arrival_s, r->scheduled_s, r->first_token_s, r->finish_s};
    for (int i = 0; i < 4; i++)
        if (!isfinite(t[i]) || (i > 0 && t[i] < t[i - 1]))
            return PF_ERR_ARG;
    if (r->prompt_tokens < 0 || r->output_tokens < 1)
        return PF_ERR_ARG;

    double ttft = r->first_token_s - r->arrival_s;
    lat_add(&m->lat[PF_MET_TTFT], ttft, 1);
    lat_add(&m->lat[PF_MET_QUEUE], r->scheduled_s - r->arrival_s, 1);
    lat_add(&m->lat[PF_MET_E2E], r->finish_s - r->arrival_s, 1);
    /* A one-token request has no gap: no TPOT sample, and (as in vLLM's
     * benchmark, which counts its TPOT as 0) it meets any TPOT objective. */
    double tpot = 0.0;
    if (r->output_tokens > 1) {
        tpot = (r->finish_s - r->first_token_s) / (double)(r->output_tokens - 1);
        lat_add(&m->lat[PF_MET_TPOT], tpot, 1);
    }
    int ok_ttft = m->slo_ttft_s == 0 || ttft <= m->slo_ttft_s;
    int ok_tpot = m->slo_tpot_s == 0 || tpot <= m->slo_tpot_s;
    m->met_ttft += ok_ttft;
    m->met_tpot += ok_tpot;
    m->met_both += ok_ttft && ok_tpot;

    if (m->requests == 0 || r->arrival_s < m->first_arrival_s)
        m->first_arrival_s = r->arrival_s;
    if (m->requests == 0 || r->finish_s > m->last_finish_s)
        m->last_finish_s = r->finish_s;
    m->requests++;
    m->prompt_tokens += r->prompt_tokens;
    m->output_tokens += r->output_tokens;
    return PF_OK;
}

int pf_metrics_add_itl(pf_metrics *m, double gap_s, uint64_t count)
{
    if (!m || !isfinite(gap_s) || gap_s < 0)
        return PF_ERR_ARG;
    lat_add(&m->lat[PF_MET_ITL], gap_s, count);
    return PF_OK;
}

int pf_metrics_merge(pf_metrics *dst, const pf_metrics *src)
{
    if (!dst || !src || dst->slo_ttft_s != src->slo_ttft_s || dst->slo_tpot_s != src->slo_tpot_s)
        return PF_ERR_ARG;
    for (int i = 0; i < PF_MET_COUNT; i++)
        lat_merge(&dst->lat[i], &src->lat[i]);
    if (src->requests > 0) {
        if (dst->requests == 0 || src->first_arrival_s < dst->first_arrival_s)
            dst->first_arrival_s = src->first_arrival_s;
        if (dst->requests == 0 || src->last_finish_s > dst->last_finish_s)
            dst->last_finish_s = src->last_finish_s;
    }
    dst->requests += src->requests;
    dst->prompt_tokens += src->prompt_tokens;
    dst->output_tokens += src->output_tokens;
    dst->met_ttft += src->met_ttft;
    dst->met_tpot += src->met_tpot;
    dst->met_both += src->met_both;
    return PF_OK;
}

void pf_metrics_summarize(const pf_metrics *m, double duration_s, pf_metrics_summary *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < PF_MET_COUNT; i++)
        pf_latency_summarize(&m->lat[i], &out->lat[i]);
    out->requests = m->requests;
    out->prompt_tokens = m->prompt_tokens;
    out->output_tokens = m->output_tokens;
    double d = duration_s;
    if (!(d > 0) || !isfinite(d))
        d = m->requests > 0 ? m->last_finish_s - m->first_arrival_s : 0.0;
    out->duration_s = d;
    if (m->requests > 0) {
        double n = (double)m->requests;
        out->slo_ttft_attainment = (double)m->met_ttft / n;
        out->slo_tpot_attainment = (double)m->met_tpot / n;
        out->slo_attainment = (double)m->met_both / n;
    }
    if (d > 0) {
        out->request_throughput = (double)m->requests / d;
        out->output_throughput = (double)m->output_tokens / d;
        out->total_token_throughput = (double)(m->prompt_tokens + m->output_tokens) / d;
        out->slo_goodput = (double)m->met_both / d;
    }
}
