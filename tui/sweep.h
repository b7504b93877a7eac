/* tui/sweep.h - the dashboard's watermark sweep (key x), in the background.
 *
 * What it is: the live run's jobs and parameters, replayed under the paged
 * mode and the deterministic engine at each of PF_SWEEP_POINTS watermarks,
 * the points spread over worker threads (one per core, at most one per
 * point). Each point yields throughput (tokens per step) and preemptions;
 * the dashboard draws them against the watermark, the live setting marked.
 * The deterministic engine makes the curve the same on every machine and
 * the same as `pagefault sim --sweep watermark=...` prints.
 *
 * Contract: pf_sweep_start copies what it needs (parameters; the jobs are
 * the caller's and must outlive the sweep); pf_sweep_view copies the
 * results so far under the sweep's lock (any thread); pf_sweep_stop cancels
 * (each point stops at its next step) and joins. One sweep at a time:
 * starting again stops the previous one first.
 * Callers: tui/dash.c, tests/race_tui_bridge.c.
 */
#ifndef PF_TUI_SWEEP_H
#define PF_TUI_SWEEP_H

#include <pthread.h>
#include <stdatomic.h>

#include "sim/sim.h"
#include "tui/render.h"

#define PF_SWEEP_THREADS 16

typedef struct {
    pthread_mutex_t mu;
    pf_sweep_view v;          /* guarded by mu                       */
    pf_sim_params p;          /* the live parameters, copied         */
    const pf_jobs *jobs;      /* the caller's                        */
    atomic_int next;          /* next point to take                  */
    atomic_int cancel;
    pthread_t th[PF_SWEEP_THREADS];
    int nth;
    int inited;
} pf_sweep;

/* Start a sweep of the live parameters p over jobs. 0, or -1 with nothing
 * started (threads). */
int pf_sweep_start(pf_sweep *sw, const pf_sim_params *p, const pf_jobs *jobs);

/* Copy the results so far; returns 1 when a sweep was ever started. */
int pf_sweep_get(pf_sweep *sw, pf_sweep_view *out);

/* Cancel and join (a no-op when none runs). */
void pf_sweep_stop(pf_sweep *sw);

/* Stop, then release the lock. The struct may be started again after. */
void pf_sweep_free(pf_sweep *sw);

#endif
