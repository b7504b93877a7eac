/* tui/simpub.h - the simulator on vLLM's wire: its prefix cache's block
 * events over ZeroMQ and its figures at /metrics, as a vLLM server
 * publishes them (issue 13, point 2).
 *
 * What it is: the glue between a pf_sim and net/ - a KV-event publisher
 * (net/kvpub: PUB socket, optional ROUTER replay socket) handed each run's
 * scheduler through pf_sim_on_sched and flushed once per step with the
 * step's end time, and a /metrics server (net/metrics_http) over vLLM's
 * metric names (tui/simmetrics: gauges, counters, latency histograms with
 * vLLM's buckets, prefix-cache counters), refreshed by pf_simpub_update.
 *
 * Contract: open binds what is asked (either part may be absent) and says
 * why not in one line; attach before the run; the block events flow on the
 * engine's thread under the simulator's lock; pf_simpub_update may be
 * called from any one thread (it reads the simulator through its live
 * API); pf_simpub_linger answers replay requests (the /metrics server runs
 * on its own thread) for a while after a batch run; close detaches and
 * frees. Callers: tui/cmd_sim.c (`sim --kv-events-publish`,
 * `--metrics-port`), tui/dash.c (the same flags on the live dashboard).
 */
#ifndef PF_TUI_SIMPUB_H
#define PF_TUI_SIMPUB_H

#include <stddef.h>

#include "sim/sim.h"

typedef struct pf_simpub pf_simpub;

/* kv_endpoint: "tcp://" "*:5557" or NULL for no events; kv_replay: the replay
 * endpoint or NULL; metrics_port 0 for no /metrics (bound to metrics_bind,
 * NULL meaning 127.0.0.1). Returns 0, or PF_ERR_IO / PF_ERR_ARG /
 * PF_ERR_NOMEM with "what: why" in err. */
int pf_simpub_open(const char *kv_endpoint, const char *kv_replay, const char *metrics_bind,
                   int metrics_port, pf_simpub **out, char *err, size_t errlen);

/* Publish sim's block events from now on (each run's scheduler, including
 * those after a reset). */
void pf_simpub_attach(pf_simpub *p, pf_sim *sim);

/* Refresh /metrics from sim's statistics and latency metrics. Returns 0 or
 * a negative pf_err (out of memory). */
int pf_simpub_update(pf_simpub *p, pf_sim *sim);

/* Same, from a snapshot already taken (the dashboard's). */
int pf_simpub_update_snapshot(pf_simpub *p, const pf_sim_snapshot *snap);

/* Keep answering replay requests for `seconds` (a batch run is over, its
 * subscribers may still ask for what they missed). */
void pf_simpub_linger(pf_simpub *p, double seconds);

/* The first error of the publisher since the last call (a failed send, no
 * memory), 0 if none. */
int pf_simpub_error(pf_simpub *p);

/* Detach from sim (NULL if it is gone already) and free everything. */
void pf_simpub_close(pf_simpub *p, pf_sim *sim);

#endif
