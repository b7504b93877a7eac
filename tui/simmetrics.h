/* tui/simmetrics.h - the simulator's figures as vLLM's Prometheus metrics.
 *
 * What it is: the glue between a running simulator's statistics and a
 * Prometheus registry (net/prom.h) that `--metrics-port` serves at
 * /metrics, so a board built for vLLM's /metrics (Grafana, a KV-aware
 * router) reads the simulator unchanged. Each metric keeps vLLM's name and
 * type: gauges vllm:num_requests_running, vllm:num_requests_waiting and
 * vllm:kv_cache_usage_perc (a fraction 0..1, as vLLM reports it); counters
 * vllm:num_preemptions_total, vllm:generation_tokens_total and
 * vllm:request_success_total.
 *
 * Contract: pf_simmetrics_update takes a stats snapshot and sets the gauges
 * and advances the counters by what the totals grew since the last update.
 * A counter never goes back: when the simulator restarts a run (its totals
 * fall), the new run's totals are added on top, as Prometheus expects of a
 * counter. The latency histograms (time to first token, e2e latency) wait
 * for the simulator's time in seconds (issue 9). Calls are cheap and the
 * registry is thread-safe: one thread updates while the server renders.
 * Callers: tui/dash.c (the live dashboard), tests/test_tui_simmetrics.c.
 */
#ifndef PF_TUI_SIMMETRICS_H
#define PF_TUI_SIMMETRICS_H

#include "net/prom.h"
#include "sim/sim.h"

typedef struct pf_simmetrics pf_simmetrics;

/* A registry with every metric at zero; labels as in pf_prom_registry_new
 * (e.g. model_name="pagefault-sim"), may be NULL. NULL on allocation failure. */
pf_simmetrics *pf_simmetrics_new(const char *labels);
void pf_simmetrics_free(pf_simmetrics *m);

/* Fold in the newest statistics. Returns 0 or a negative pf_err. */
int pf_simmetrics_update(pf_simmetrics *m, const pf_sim_stats *st);

/* The registry to serve (owned by m). */
pf_prom_registry *pf_simmetrics_registry(pf_simmetrics *m);

#endif
