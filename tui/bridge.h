/* tui/bridge.h - the dashboard's control thread: the only bridge between
 * the UI thread and the simulator.
 *
 * What it is: a thread that owns every call into the simulator's control
 * API and takes the snapshots. The UI posts commands (never lost: queued
 * and applied in order, each computed from the simulator's current value)
 * and takes the newest snapshot through a triple buffer, so the UI thread
 * only ever waits for a mutex held over a pointer swap or a queue append,
 * never for the simulator's work.
 *
 * Contract: pf_dash_bridge_post, _take and _status are called from one
 * thread (the UI); the snapshot _take returns stays valid and unchanged
 * until the next _take. _start blocks SIGINT, SIGTERM, SIGHUP and SIGWINCH
 * in the new thread (they belong to the UI thread). _stop joins the thread
 * and frees everything; the simulator itself is the caller's.
 * Callers: tui/dash.c, tests/race_tui_bridge.c.
 */
#ifndef PF_TUI_BRIDGE_H
#define PF_TUI_BRIDGE_H

#include <signal.h>
#include <stddef.h>

#include "sim/sim.h"
#include "tui/dash.h"

typedef struct pf_dash_bridge pf_dash_bridge;

/* Start the control thread over a (started or not) simulator. NULL on
 * failure, with a reason in err. */
pf_dash_bridge *pf_dash_bridge_start(pf_sim *sim, char *err, size_t errlen);

/* Queue a simulator command (PF_DASH_CMD_WATERMARK_DOWN .. _RESET; others
 * are ignored). The queue is unbounded: returns 0, or -1 only when memory
 * ran out, and then the caller must tell the user the key was dropped. */
int pf_dash_bridge_post(pf_dash_bridge *b, pf_dash_cmd cmd);

/* The newest snapshot, or NULL when none arrived since the last call. */
const pf_sim_snapshot *pf_dash_bridge_take(pf_dash_bridge *b);

/* Copy the last command's outcome ("watermark 2.0%", "refused: ...") into
 * out when it changed since *seen; returns 1 then, else 0. */
int pf_dash_bridge_status(pf_dash_bridge *b, unsigned *seen, char *out, size_t len);

/* The run's end. The bridge has the simulator hold at the end of a run
 * (pf_sim_set_hold_end, from start to stop): it pauses on the last step,
 * however fast it steps, so the final figures are the run's own and stay
 * on screen; a livelock ends a run the same way. `r` (RESET) or space
 * starts the next run, `s` its first step; with loop set the bridge starts
 * it by itself after PF_DASH_LOOP_HOLD_S. */
#define PF_DASH_LOOP_HOLD_S 3.0

typedef struct {
    int run;            /* 1, 2, ...: the run on screen                  */
    int ended;          /* the run on screen has ended                   */
    pf_sim_stats final; /* the figures at the end (when ended)           */
} pf_dash_run;

void pf_dash_bridge_run(pf_dash_bridge *b, pf_dash_run *out);

/* --loop: restart by itself at each end (call before the first end). */
void pf_dash_bridge_set_loop(pf_dash_bridge *b, int loop);

/* The split view (PF_DASH_CMD_SPLIT, key 2): the same jobs under naive and
 * under paged, each in a deterministic simulator of its own that the bridge
 * steps in lockstep (as many steps as the tick allows per 30 ms, the same
 * count on both sides), while the live simulator waits paused. The paged
 * side's snapshot comes from pf_dash_bridge_take as usual; the naive side's
 * from pf_dash_bridge_split, valid as long as that snapshot. Parameters
 * are fixed in the split view (its keys are refused with a status line);
 * space pauses the lockstep, s steps it, r restarts both, 2 leaves.
 * pf_dash_bridge_set_jobs gives the bridge the jobs (the caller's, which
 * outlive the bridge); without them the split view is refused. */
void pf_dash_bridge_set_jobs(pf_dash_bridge *b, const pf_jobs *jobs);
const pf_sim_snapshot *pf_dash_bridge_split(pf_dash_bridge *b);

/* Stop and join the thread, free the snapshots and the bridge. NULL is ok. */
void pf_dash_bridge_stop(pf_dash_bridge *b);

/* Block the UI thread's signals in the calling thread (the old mask goes to
 * *old): call around pthread_create so the new thread inherits the mask. */
void pf_dash_block_ui_signals(sigset_t *old);
void pf_dash_restore_signals(const sigset_t *old);

#endif
