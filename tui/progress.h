/* tui/progress.h - progress lines of long `pagefault sim` runs.
 *
 * A simulator run can take minutes (a trace of millions of requests, a
 * pool that holds one long sequence at a time) and prints its tables only
 * at the end. While runs are registered, a reporter thread writes a line
 * `first_s` seconds in and every `every_s` seconds after: each run's
 * requests finished of its total and its step, and how many runs are
 * done. `pagefault sim` starts one only where stderr is a terminal, with
 * PF_PROGRESS_FIRST_S and PF_PROGRESS_EVERY_S: nothing for a run shorter
 * than that (every run the README shows), and a script or a log gets the
 * bytes it got before. Whole lines, no carriage returns: the runs' own
 * stderr lines (a sweep's point, aborted requests) interleave with them
 * without garbling either.
 *
 * Contract: pf_progress_start once before the runs, pf_progress_stop once
 * after they are all done; pf_progress_add / pf_progress_remove from any
 * thread, around the run. A simulator must be removed before it is
 * destroyed: the reporter reads it through pf_sim_get_stats, which the
 * simulator lets in between steps. Every function takes NULL (no
 * reporting) and does nothing. Called by tui/cmd_sim.c.
 */
#ifndef PF_TUI_PROGRESS_H
#define PF_TUI_PROGRESS_H

#include <stdio.h>

#include "sim/sim.h"

#define PF_PROGRESS_FIRST_S 5.0
#define PF_PROGRESS_EVERY_S 10.0

typedef struct pf_progress pf_progress;

/* The reporter for `total_runs` runs, its lines written to `out` and
 * prefixed by `prog`; NULL when the thread cannot start (the runs go on
 * without it). */
pf_progress *pf_progress_start(FILE *out, const char *prog, int total_runs, double first_s,
                               double every_s);

/* Registers a run about to start; `label` (copied) names it in the line,
 * e.g. "paged" or "paged watermark=0.05". A line lists the runs going by
 * `order`, smallest first, whatever thread registered first: the same
 * runs read in the same order from one invocation to the next. Returns
 * the slot to remove, or -1 when every slot is taken (that run is
 * counted, not named). */
int pf_progress_add(pf_progress *p, pf_sim *sim, int order, const char *label);

/* The run of `slot` has ended (before its pf_sim_destroy); -1 is ignored. */
void pf_progress_remove(pf_progress *p, int slot);

/* Stops and joins the reporter and frees it. */
void pf_progress_stop(pf_progress *p);

#endif
