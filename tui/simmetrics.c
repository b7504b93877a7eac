/* tui/simmetrics.c - simulator statistics as vLLM's metrics (contract in
 * tui/simmetrics.h). */
#include "tui/simmetrics.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"

enum { G_RUNNING = 0, G_WAITING, G_KV, C_PREEMPT, C_TOKENS, C_SUCCESS, C_PC_QUERIES, C_PC_HITS, N_METRICS };

/* name, help and type of each metric, in the enum's order (vLLM's help
 * texts, vllm/v1/metrics/loggers.py) */
static const struct {
    const char *name, *help;
    pf_prom_type type;
} defs[N_METRICS] = {
    {"vllm:num_requests_running", "Number of requests in model execution batches.", PF_PROM_GAUGE},
    {"vllm:num_requests_waiting", "Number of requests waiting to be processed.", PF_PROM_GAUGE},
    {"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", PF_PROM_GAUGE},
    {"vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", PF_PROM_COUNTER},
    {"vllm:generation_tokens_total", "Number of generation tokens processed.", PF_PROM_COUNTER},
    {"vllm:request_success_total", "Count of successfully processed requests.", PF_PROM_COUNTER},
    {"vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.",
     PF_PROM_COUNTER},
    {"vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", PF_PROM_COUNTER},
};

/* The latency histograms: which sketch of a pf_metrics feeds each, under
 * which name (vLLM's, pf_metric_prom_name, except the deprecated alias). */
enum { N_HIST = PF_MET_COUNT + 1 };
static const struct {
    pf_metric src;
    const char *alias; /* NULL: pf_metric_prom_name(src) */
    const char *help;
} hdefs[N_HIST] = {
    {PF_MET_TTFT, NULL, "Histogram of time to first token in seconds."},
    {PF_MET_ITL, NULL, "Histogram of inter-token latency in seconds."},
    {PF_MET_TPOT, NULL, "Histogram of time_per_output_token_seconds per request."},
    {PF_MET_E2E, NULL, "Histogram of e2e request latency in seconds."},
    {PF_MET_QUEUE, NULL, "Histogram of time spent in WAITING phase for request."},
    {PF_MET_ITL, "vllm:time_per_output_token_seconds",
     "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead."},
};

/* What a histogram's source held at the last update. */
typedef struct {
    uint64_t counts[PF_METRICS_MAX_BUCKETS + 1];
    double sum;
    uint64_t count;
} hist_last;

struct pf_simmetrics {
    pf_prom_registry *reg;
    int id[N_METRICS];
    int64_t last[N_METRICS]; /* the counters' totals at the last update */
    int hid[N_HIST];
    hist_last hlast[N_HIST];
};

pf_simmetrics *pf_simmetrics_new(const char *labels)
{
    pf_simmetrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->reg = pf_prom_registry_new(labels);
    if (!m->reg) {
        free(m);
        return NULL;
    }
    for (int i = 0; i < N_METRICS; i++) {
        m->id[i] = pf_prom_add(m->reg, defs[i].name, defs[i].help, defs[i].type, NULL, 0);
        if (m->id[i] < 0) {
            pf_simmetrics_free(m);
            return NULL;
        }
    }
    for (int i = 0; i < N_HIST; i++) {
        int nb = 0;
        const double *b = pf_metric_buckets(hdefs[i].src, &nb);
        const char *name = hdefs[i].alias ? hdefs[i].alias : pf_metric_prom_name(hdefs[i].src);
        m->hid[i] = pf_prom_add(m->reg, name, hdefs[i].help, PF_PROM_HISTOGRAM, b, nb);
        if (m->hid[i] < 0) {
            pf_simmetrics_free(m);
            return NULL;
        }
    }
    return m;
}

void pf_simmetrics_free(pf_simmetrics *m)
{
    if (!m)
        return;
    pf_prom_registry_free(m->reg);
    free(m);
}

/* Advance counter i to a run's total: by the growth since the last update,
 * or by the whole total when the run started again (the total fell). */
static int advance(pf_simmetrics *m, int i, int64_t total)
{
    int64_t step = total >= m->last[i] ? total - m->last[i] : total;
    m->last[i] = total;
    return step > 0 ? pf_prom_inc(m->reg, m->id[i], (double)step) : PF_OK;
}

int pf_simmetrics_update(pf_simmetrics *m, const pf_sim_stats *st)
{
    if (!m || !st)
        return PF_ERR_ARG;
    int rc = pf_prom_set(m->reg, m->id[G_RUNNING], st->running);
    if (!rc)
        rc = pf_prom_set(m->reg, m->id[G_WAITING], st->waiting);
    if (!rc)
        rc = pf_prom_set(m->reg, m->id[G_KV], st->kv_usage);
    if (!rc)
        rc = advance(m, C_PREEMPT, st->preemptions);
    if (!rc)
        rc = advance(m, C_TOKENS, st->tokens_generated);
    if (!rc)
        rc = advance(m, C_SUCCESS, st->finished);
    return rc;
}

/* Advance histogram i to sketch l: by what each bucket, the sum and the
 * count grew since the last update, or by the whole sketch when it is a new
 * run's (its count fell, or a bucket did: never a negative step). */
static int advance_hist(pf_simmetrics *m, int i, const pf_latency *l)
{
    int nb = 0;
    (void)pf_metric_buckets(hdefs[i].src, &nb);
    hist_last *h = &m->hlast[i];
    int restart = l->count < h->count;
    for (int k = 0; k <= nb && !restart; k++)
        restart = l->buckets[k] < h->counts[k];
    uint64_t step[PF_METRICS_MAX_BUCKETS + 1];
    for (int k = 0; k <= nb; k++)
        step[k] = restart ? l->buckets[k] : l->buckets[k] - h->counts[k];
    uint64_t dcount = restart ? l->count : l->count - h->count;
    double dsum = restart ? l->sum : l->sum - h->sum;
    if (dsum < 0) /* rounding: a sum of non-negative samples never falls */
        dsum = 0;
    memcpy(h->counts, l->buckets, sizeof h->counts);
    h->sum = l->sum;
    h->count = l->count;
    if (dcount == 0)
        return PF_OK;
    return pf_prom_hist_add(m->reg, m->hid[i], step, nb + 1, dsum, dcount);
}

int pf_simmetrics_update_serving(pf_simmetrics *m, const pf_metrics *met, const pf_prefix_stats *pc)
{
    if (!m)
        return PF_ERR_ARG;
    int rc = PF_OK;
    for (int i = 0; met && i < N_HIST && !rc; i++)
        rc = advance_hist(m, i, &met->lat[hdefs[i].src]);
    if (pc && !rc)
        rc = advance(m, C_PC_QUERIES, pc->queries);
    if (pc && !rc)
        rc = advance(m, C_PC_HITS, pc->hits);
    return rc;
}

pf_prom_registry *pf_simmetrics_registry(pf_simmetrics *m)
{
    return m ? m->reg : NULL;
}
