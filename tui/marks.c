/* tui/marks.c - per-frame flashes from snapshot diffs (see marks.h).
 *
 * The events of a snapshot name the sequences preempted (or swapped out)
 * and admitted since the previous one (events at a step >= the previous
 * snapshot's step; a step seen twice only re-marks the same frames). With
 * those ids sorted, one pass over the frames compares each owner with the
 * one last seen: a frame that left a victim is marked PREEMPTED, whoever
 * holds it now; a frame that came to an admitted sequence is marked
 * ADMITTED. Everything else keeps its mark until it expires.
 */
#include "tui/marks.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int has(const int32_t *v, int n, int32_t id)
{
    return id >= 0 && n > 0 && bsearch(&id, v, (size_t)n, sizeof *v, cmp_i32) != NULL;
}

static int resize(pf_marks *m, int n)
{
    pf_marks_free(m);
    m->owner = malloc((size_t)n * sizeof *m->owner);
    m->kind = calloc((size_t)n, sizeof *m->kind);
    m->until = calloc((size_t)n, sizeof *m->until);
    if (!m->owner || !m->kind || !m->until) {
        pf_marks_free(m);
        return -1;
    }
    m->n = n;
    return 0;
}

int pf_marks_update(pf_marks *m, const pf_sim_snapshot *s, double now)
{
    if (!s || !s->frames || s->nframes < 1)
        return 0;
    int fresh = m->n != s->nframes || m->step < 0 || s->stats.step < m->step;
    if (m->n != s->nframes) {
        if (resize(m, s->nframes) != 0) {
            m->step = -1;
            return -1;
        }
    }
    if (fresh) { /* a first look, a reset or a new pool: nothing to flash */
        memset(m->kind, 0, (size_t)m->n);
        for (int f = 0; f < m->n; f++)
            m->owner[f] = s->frames[f].owner;
        m->t0 = now;
        m->step = s->stats.step;
        return 0;
    }
    int32_t victims[PF_SIM_EVENTS], admits[PF_SIM_EVENTS];
    int nv = 0, na = 0;
    for (int i = 0; i < s->nevents; i++) {
        const pf_event *e = &s->events[i];
        if (e->step < m->step)
            continue;
        if (e->kind == PF_EV_PREEMPT || e->kind == PF_EV_SWAP_OUT)
            victims[nv++] = e->seq;
        else if (e->kind == PF_EV_ADMIT)
            admits[na++] = e->seq;
    }
    qsort(victims, (size_t)nv, sizeof victims[0], cmp_i32);
    qsort(admits, (size_t)na, sizeof admits[0], cmp_i32);
    float until = (float)(now - m->t0 + PF_MARK_SECONDS);
    for (int f = 0; f < m->n; f++) {
        int32_t was = m->owner[f], is = s->frames[f].owner;
        if (was == is)
            continue;
        m->owner[f] = is;
        if (has(victims, nv, was)) {
            m->kind[f] = PF_MARK_PREEMPTED;
            m->until[f] = until;
            m->preempted++;
        } else if (has(admits, na, is)) {
            m->kind[f] = PF_MARK_ADMITTED;
            m->until[f] = until;
            m->admitted++;
        }
    }
    m->step = s->stats.step;
    return 0;
}

void pf_marks_free(pf_marks *m)
{
    free(m->owner);
    free(m->kind);
    free(m->until);
    m->owner = NULL;
    m->kind = NULL;
    m->until = NULL;
    m->n = 0;
}
