/* tui/simmetrics.c - simulator statistics as vLLM's metrics (contract in
 * tui/simmetrics.h). */
#include "tui/simmetrics.h"

#include <stdlib.h>

#include "core/err.h"

enum { G_RUNNING = 0, G_WAITING, G_KV, C_PREEMPT, C_TOKENS, C_SUCCESS, N_METRICS };

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
};

struct pf_simmetrics {
    pf_prom_registry *reg;
    int id[N_METRICS];
    int64_t last[N_METRICS]; /* the counters' totals at the last update */
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

pf_prom_registry *pf_simmetrics_registry(pf_simmetrics *m)
{
    return m ? m->reg : NULL;
}
