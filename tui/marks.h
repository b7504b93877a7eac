/* tui/marks.h - what just happened to each frame: the flashes on the grid.
 *
 * What it is: per-frame "last changed" marks the dashboard derives from two
 * consecutive snapshots and the events between them. A frame that a
 * preemption took from its victim (freed, or already handed to someone
 * else) gets a PREEMPTED mark; a frame a newly admitted sequence took gets
 * an ADMITTED mark. Each mark lasts PF_MARK_SECONDS of wall time, so a
 * thrash is a storm of flashes on the grid rather than something read from
 * counters. The simulator keeps no per-frame history; diffing snapshots
 * here costs one pass over the frames per snapshot (about 30 a second) and
 * catches every change that survives until the next snapshot, which is
 * what a person can see anyway.
 *
 * Contract: pure data, no clock of its own (the caller passes `now`, in
 * seconds of CLOCK_MONOTONIC), one thread. A snapshot whose step went
 * backwards (reset, mode change) or whose pool changed size clears every
 * mark. Callers: tui/dash.c, tui/render.c (reads), tests/test_tui_render.c.
 */
#ifndef PF_TUI_MARKS_H
#define PF_TUI_MARKS_H

#include <stdint.h>

#include "sim/sim.h"

/* About half a second: long enough to be seen at 30 frames a second, short
 * enough that a steady state shows no flashes. */
#define PF_MARK_SECONDS 0.5

enum { PF_MARK_NONE = 0, PF_MARK_ADMITTED = 1, PF_MARK_PREEMPTED = 2 };

typedef struct {
    int n;             /* frames                                     */
    int32_t *owner;    /* [n] owner in the last snapshot seen         */
    uint8_t *kind;     /* [n] PF_MARK_*                               */
    float *until;      /* [n] the mark shows while now < until        */
    double t0;         /* time origin of until (keeps floats precise) */
    int64_t step;      /* step of the last snapshot seen, -1: none    */
    int64_t admitted, preempted; /* marks set so far (for tests)      */
} pf_marks;

/* Fold in a new snapshot. Returns 0, or -1 when memory ran out (the marks
 * are then cleared and stay off until the next successful call). */
int pf_marks_update(pf_marks *m, const pf_sim_snapshot *s, double now);

/* The live mark of frame f at time now (PF_MARK_NONE when none). */
static inline int pf_marks_at(const pf_marks *m, int f, double now)
{
    if (!m || f < 0 || f >= m->n || !m->kind[f])
        return PF_MARK_NONE;
    return (double)m->until[f] + m->t0 > now ? m->kind[f] : PF_MARK_NONE;
}

void pf_marks_free(pf_marks *m);

#endif
