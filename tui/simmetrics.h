/* tui/simmetrics.h - the simulator's figures as vLLM's Prometheus metrics.
 *
 * What it is: the glue between a running simulator's statistics and a
 * Prometheus registry (net/prom.h) that `--metrics-port` serves at
 * /metrics, so a board built for vLLM's /metrics (Grafana, a KV-aware
 * router) reads the simulator unchanged. Each metric keeps vLLM's name and
 * type: gauges vllm:num_requests_running, vllm:num_requests_waiting and
 * vllm:kv_cache_usage_perc (a fraction 0..1, as vLLM reports it); counters
 * vllm:num_preemptions_total, vllm:generation_tokens_total and
 * vllm:request_success_total. From the scheduler core's latency sketches
 * (sim/metrics.h) and prefix cache (sim/prefix.h), pf_simmetrics_update_serving
 * adds vLLM's latency histograms, with vLLM's buckets (bucket counts exact:
 * the sketches count per vLLM bucket as they go):
 *   vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
 *   vllm:request_time_per_output_token_seconds,
 *   vllm:e2e_request_latency_seconds, vllm:request_queue_time_seconds,
 *   and vllm:time_per_output_token_seconds, the inter-token histogram under
 *   its name before vLLM 0.11 (deprecated there, still read by older boards);
 * and the counters vllm:prefix_cache_queries_total and
 * vllm:prefix_cache_hits_total (tokens, as vLLM counts them).
 * (Names and help texts from vllm/v1/metrics/loggers.py, 0.11.)
 *
 * Contract: pf_simmetrics_update takes a stats snapshot and sets the gauges
 * and advances the counters by what the totals grew since the last update;
 * pf_simmetrics_update_serving does the same for the histograms (every
 * bucket, the sum and the count) and the prefix-cache counters. A counter
 * never goes back: when the simulator restarts a run (its totals fall), the
 * new run's totals are added on top, as Prometheus expects of a counter (a
 * histogram's series are counters). Calls are cheap and the registry is
 * thread-safe: one thread updates while the server renders.
 * Callers: tui/dash.c and tui/cmd_sim.c (--metrics-port), tests/test_tui_simmetrics.c.
 */
#ifndef PF_TUI_SIMMETRICS_H
#define PF_TUI_SIMMETRICS_H

#include "net/prom.h"
#include "sim/metrics.h"
#include "sim/prefix.h"
#include "sim/sim.h"

typedef struct pf_simmetrics pf_simmetrics;

/* A registry with every metric at zero; labels as in pf_prom_registry_new
 * (e.g. model_name="pagefault-sim"), may be NULL. NULL on allocation failure. */
pf_simmetrics *pf_simmetrics_new(const char *labels);
void pf_simmetrics_free(pf_simmetrics *m);

/* Fold in the newest statistics. Returns 0 or a negative pf_err. */
int pf_simmetrics_update(pf_simmetrics *m, const pf_sim_stats *st);

/* Fold in the scheduler core's latency metrics (pf_sched_metrics) and
 * prefix-cache counters (pf_sched_prefix_stats): either may be NULL (left as
 * they were). Call it with pf_simmetrics_update, e.g. once per simulator
 * step or per /metrics refresh (the sketches' bucket counts are read, not
 * the samples: cost independent of the run's length). Returns 0 or a
 * negative pf_err. */
int pf_simmetrics_update_serving(pf_simmetrics *m, const pf_metrics *met, const pf_prefix_stats *pc);

/* The registry to serve (owned by m). */
pf_prom_registry *pf_simmetrics_registry(pf_simmetrics *m);

#endif
