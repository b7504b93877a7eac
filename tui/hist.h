/* tui/hist.h - the dashboard's long history: per-step series for charts.
 *
 * What it is: the simulator keeps only its last PF_SIM_HISTORY (256) steps;
 * the dashboard's charts zoom out to PF_HIST_CAP steps, so the UI keeps its
 * own ring and folds in each snapshot's history (the steps it has not seen
 * yet). Series: tokens per step (= decoding sequences: one token each),
 * stalled sequences, preemptions per step, KV use (held frames / pool) and
 * the waiting queue. The simulator has no per-step waiting history, so the
 * waiting series holds the queue length of the snapshot that brought the
 * step in (sampled about 30 times a second, exact in headless mode where
 * every dumped step is a snapshot).
 *
 * Contract: one thread (the UI); a snapshot whose step went backwards (reset,
 * mode change) clears the history; steps that fell out of the simulator's
 * ring between two snapshots (more than 256 steps apart) are missing, and
 * the series then runs on without them. Memory: 5 float series of
 * PF_HIST_CAP, 1.3 MB, allocated on the first update.
 * Callers: tui/dash.c, tui/render.c (reads), tests/test_tui_render.c.
 */
#ifndef PF_TUI_HIST_H
#define PF_TUI_HIST_H

#include <stdint.h>

#include "sim/sim.h"

#define PF_HIST_CAP 65536 /* steps: the widest chart window */

enum { PF_HIST_TOKENS = 0, PF_HIST_STALLED, PF_HIST_PREEMPT, PF_HIST_USAGE, PF_HIST_WAITING, PF_HIST_SERIES };

typedef struct {
    float *v[PF_HIST_SERIES]; /* rings of PF_HIST_CAP, owned            */
    int head, n;              /* oldest sample at head, n samples       */
    int64_t next_step;        /* step of the next sample to append; -1: empty */
} pf_hist;

/* Fold in a snapshot's history. 0, or -1 when memory ran out. */
int pf_hist_update(pf_hist *h, const pf_sim_snapshot *s);

/* Append one step's sample by hand (tests, the split view). */
int pf_hist_push(pf_hist *h, const float sample[PF_HIST_SERIES]);

/* Sample i (0 = oldest of the n) of a series. */
static inline float pf_hist_at(const pf_hist *h, int series, int i)
{
    return h->v[series][(h->head + i) % PF_HIST_CAP];
}

/* Mean of a series over the last `window` samples (fewer if fewer exist);
 * 0 when empty. */
double pf_hist_mean(const pf_hist *h, int series, int window);

void pf_hist_clear(pf_hist *h);
void pf_hist_free(pf_hist *h);

#endif
