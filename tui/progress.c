/* tui/progress.c - the reporter thread of tui/progress.h. */
#include "tui/progress.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

/* Runs at once: --jobs-parallel's most (256) can exceed it; the runs past
 * it are counted, not named. A line names at most PROGRESS_SHOWN. */
#define PROGRESS_SLOTS 64
#define PROGRESS_SHOWN 4

typedef struct {
    pf_sim *sim; /* NULL: a free slot */
    int order;   /* the caller's place for it in the line */
    char label[96];
} progress_run;

struct pf_progress {
    FILE *out;
    const char *prog;
    double first_s, every_s;
    int total, done, unshown; /* runs: all, ended, going but not in a slot */
    double t0;                /* pf_clock_s at the start                     */
    progress_run run[PROGRESS_SLOTS];
    pthread_mutex_t mu; /* the fields above and `stop`; held while a line is made */
    pthread_cond_t cv;  /* on CLOCK_MONOTONIC: stop wakes the reporter */
    int stop;
    pthread_t th;
};

/* The going run after (`order`, `slot`) in the line's order, the slot as
 * the tie-break; -1 when none is left. Pass order INT_MIN, slot -1 for the
 * first. At most PROGRESS_SHOWN passes over the slots a line. */
static int progress_next(const pf_progress *p, int order, int slot)
{
    int best = -1;
    for (int i = 0; i < PROGRESS_SLOTS; i++) {
        const progress_run *r = &p->run[i];
        if (!r->sim || r->order < order || (r->order == order && i <= slot))
            continue;
        if (best < 0 || r->order < p->run[best].order)
            best = i; /* ties keep the lower slot, met first */
    }
    return best;
}

/* One line: the elapsed wall time, up to PROGRESS_SHOWN runs going in the
 * callers' order (each its requests finished of its total and its step),
 * the rest counted; none while no run is going.
 * Called with p->mu held, so no run is removed, and so destroyed, while
 * its statistics are read. */
static void progress_line(pf_progress *p)
{
    int going = p->unshown;
    for (int i = 0; i < PROGRESS_SLOTS; i++)
        going += p->run[i].sim != NULL;
    if (going == 0)
        return; /* between runs, or before the first: nothing to say */
    char line[1024];
    size_t n = (size_t)snprintf(line, sizeof line, "%s: %.0f s:", p->prog, pf_clock_s() - p->t0);
    int shown = 0;
    for (int i = progress_next(p, INT_MIN, -1); i >= 0 && shown < PROGRESS_SHOWN && n < sizeof line;
         i = progress_next(p, p->run[i].order, i)) {
        pf_sim_stats st;
        pf_sim_get_stats(p->run[i].sim, &st);
        n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %lld of %d requests finished, step %lld",
                              shown ? ";" : "", p->run[i].label, (long long)st.finished, st.njobs,
                              (long long)st.step);
        shown++;
    }
    if (n < sizeof line && going > shown)
        n += (size_t)snprintf(line + n, sizeof line - n, "; %d more going", going - shown);
    if (n < sizeof line)
        snprintf(line + n, sizeof line - n, " (%d of %d runs done)", p->done, p->total);
    fprintf(p->out, "%s\n", line);
    fflush(p->out);
}

static void *progress_main(void *arg)
{
    pf_progress *p = arg;
    double next = p->first_s;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        /* the condition variable's clock is pf_clock_s's (CLOCK_MONOTONIC),
         * so the deadline converts to its timespec directly */
        const double deadline = p->t0 + next;
        if (pf_clock_s() < deadline) {
            const time_t sec = (time_t)deadline;
            const struct timespec ts = {sec, (long)((deadline - (double)sec) * 1e9)};
            pthread_cond_timedwait(&p->cv, &p->mu, &ts);
            continue; /* woken early, or a stop: look again */
        }
        progress_line(p);
        next += p->every_s;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

pf_progress *pf_progress_start(FILE *out, const char *prog, int total_runs, double first_s,
                               double every_s)
{
    pf_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->out = out;
    p->prog = prog;
    p->first_s = first_s;
    p->every_s = every_s > 0 ? every_s : PF_PROGRESS_EVERY_S;
    p->total = total_runs;
    p->t0 = pf_clock_s();
    /* pf_clock_s is CLOCK_MONOTONIC: the reporter's deadlines are on it */
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        goto fail;
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&p->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok)
        goto fail;
    if (pthread_mutex_init(&p->mu, NULL) != 0)
        goto fail_cv;
    if (pthread_create(&p->th, NULL, progress_main, p) != 0)
        goto fail_mu;
    return p;
fail_mu:
    pthread_mutex_destroy(&p->mu);
fail_cv:
    pthread_cond_destroy(&p->cv);
fail:
    free(p);
    return NULL;
}

int pf_progress_add(pf_progress *p, pf_sim *sim, int order, const char *label)
{
    if (!p || !sim)
        return -1;
    int slot = -1;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < PROGRESS_SLOTS && slot < 0; i++)
        if (!p->run[i].sim)
            slot = i;
    if (slot >= 0) {
        p->run[slot].sim = sim;
        p->run[slot].order = order;
        snprintf(p->run[slot].label, sizeof p->run[slot].label, "%s", label);
    } else {
        p->unshown++;
    }
    pthread_mutex_unlock(&p->mu);
    return slot;
}

void pf_progress_remove(pf_progress *p, int slot)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (slot >= 0 && slot < PROGRESS_SLOTS)
        p->run[slot].sim = NULL;
    else if (p->unshown > 0)
        p->unshown--;
    p->done++;
    pthread_mutex_unlock(&p->mu);
}

void pf_progress_stop(pf_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
