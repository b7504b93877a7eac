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
 * the caller's and must outlive pf_sweep_free); pf_sweep_get copies the
 * results so far under the sweep's lock. pf_sweep_stop cancels (each point
 * stops at its next step) and returns at once: a point can be deep in
 * pf_sim_create of a million jobs, which no flag reaches, and the UI
 * thread that stops a sweep must not wait for that. The cancelled sweep's
 * threads finish on their own; the next start, get or stop joins them once
 * they have (a join that no longer waits), and pf_sweep_free waits for the
 * rest. One sweep is shown at a time: starting again stops the previous.
 * All calls from one thread (the UI's).
 * Callers: tui/dash.c, tests/race_tui_bridge.c.
 */
#ifndef PF_TUI_SWEEP_H
#define PF_TUI_SWEEP_H

#include "sim/sim.h"
#include "tui/render.h"

#define PF_SWEEP_THREADS 16

typedef struct pf_sweep_run pf_sweep_run; /* one sweep, on the heap (sweep.c) */

typedef struct {
    pf_sweep_run *cur;     /* the sweep being shown; NULL: none        */
    pf_sweep_run *retired; /* stopped, threads finishing: a list       */
} pf_sweep;                /* zeroed: no sweep                          */

/* Start a sweep of the live parameters p over jobs. 0, or -1 with nothing
 * started (no memory, no threads). */
int pf_sweep_start(pf_sweep *sw, const pf_sim_params *p, const pf_jobs *jobs);

/* Copy the current sweep's results so far; 1, or 0 when none is shown. */
int pf_sweep_get(pf_sweep *sw, pf_sweep_view *out);

/* Cancel the current sweep without waiting for its threads. */
void pf_sweep_stop(pf_sweep *sw);

/* Stop, and wait for every sweep's threads to finish. The struct is zeroed
 * and may be started again. */
void pf_sweep_free(pf_sweep *sw);

#endif
