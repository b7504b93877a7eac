/* tui/sweep.c - the watermark sweep in the background (see sweep.h).
 *
 * The points are the watermarks `pagefault sim` is usually swept over, dense
 * near zero where the curve turns (no watermark thrashes, a few percent
 * recovers) and sparse up to one half (too large a reserve starves
 * admission). Each worker takes the next point, creates a deterministic
 * paged simulator with the live parameters at that watermark and steps it
 * to the end, checking the cancel flag between steps.
 */
#include "tui/sweep.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const double sweep_wm[PF_SWEEP_POINTS] = {0,    0.01, 0.02, 0.03, 0.05, 0.075,
                                                  0.1,  0.15, 0.2,  0.3,  0.4,  0.5};

struct pf_sweep_run {
    pthread_mutex_t mu;
    pf_sweep_view v;       /* guarded by mu                               */
    pf_sim_params p;       /* the live parameters, copied                 */
    const pf_jobs *jobs;   /* the caller's                                */
    atomic_int next;       /* next point to take                          */
    atomic_int cancel;
    atomic_int live;       /* threads not finished yet                    */
    pthread_t th[PF_SWEEP_THREADS];
    int nth;
    pf_sweep_run *older;   /* the retired list                            */
};

static void *sweep_main(void *arg)
{
    pf_sweep_run *sw = arg;
    for (;;) {
        int i = atomic_fetch_add(&sw->next, 1);
        if (i >= PF_SWEEP_POINTS || atomic_load(&sw->cancel))
            break;
        pthread_mutex_lock(&sw->mu);
        sw->v.state[i] = PF_SWEEP_RUNNING;
        pthread_mutex_unlock(&sw->mu);
        pf_sim_params p = sw->p;
        p.mode = PF_SIM_PAGED;
        p.engine = PF_ENGINE_DETERMINISTIC;
        p.watermark = sweep_wm[i];
        p.watermark_auto = 0; /* the curve is of fixed settings, even when the live run is auto */
        pf_sim *s = pf_sim_create(&p, sw->jobs, NULL, 0);
        int rc = s ? 0 : -1;
        while (rc == 0 && !atomic_load(&sw->cancel))
            rc = pf_sim_step(s);
        pf_sim_stats st;
        memset(&st, 0, sizeof st);
        if (s)
            pf_sim_get_stats(s, &st);
        pf_sim_destroy(s);
        pthread_mutex_lock(&sw->mu);
        sw->v.state[i] = rc == 1 ? PF_SWEEP_DONE : PF_SWEEP_FAILED; /* stuck or cancelled: no point */
        sw->v.tput[i] = st.throughput;
        sw->v.preempt[i] = (long long)st.preemptions;
        if (rc == 1 && st.throughput_vs_naive > 0)
            sw->v.naive_tput = st.throughput / st.throughput_vs_naive;
        pthread_mutex_unlock(&sw->mu);
    }
    atomic_fetch_sub(&sw->live, 1); /* last: the run may be freed after this */
    return NULL;
}

/* Join r's threads (waiting for them) and free it. */
static void run_free(pf_sweep_run *r)
{
    for (int i = 0; i < r->nth; i++)
        pthread_join(r->th[i], NULL);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Free the retired runs whose threads have all finished. */
static void reap(pf_sweep *sw)
{
    for (pf_sweep_run **pp = &sw->retired; *pp;) {
        pf_sweep_run *r = *pp;
        if (atomic_load(&r->live) == 0) {
            *pp = r->older;
            run_free(r);
        } else {
            pp = &r->older;
        }
    }
}

int pf_sweep_start(pf_sweep *sw, const pf_sim_params *p, const pf_jobs *jobs)
{
    pf_sweep_stop(sw);
    pf_sweep_run *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    pthread_mutex_init(&r->mu, NULL);
    r->v.n = PF_SWEEP_POINTS;
    memcpy(r->v.wm, sweep_wm, sizeof sweep_wm);
    r->v.current = p->watermark;
    r->p = *p;
    r->jobs = jobs;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores < 1 ? 1 : cores > PF_SWEEP_POINTS ? PF_SWEEP_POINTS : (int)cores;
    if (n > PF_SWEEP_THREADS)
        n = PF_SWEEP_THREADS;
    for (int i = 0; i < n; i++) {
        atomic_fetch_add(&r->live, 1);
        if (pthread_create(&r->th[r->nth], NULL, sweep_main, r) != 0) {
            atomic_fetch_sub(&r->live, 1);
            break;
        }
        r->nth++;
    }
    if (r->nth == 0) {
        run_free(r);
        return -1;
    }
    sw->cur = r;
    return 0;
}

int pf_sweep_get(pf_sweep *sw, pf_sweep_view *out)
{
    reap(sw);
    if (!sw->cur)
        return 0;
    pthread_mutex_lock(&sw->cur->mu);
    *out = sw->cur->v;
    pthread_mutex_unlock(&sw->cur->mu);
    return 1;
}

void pf_sweep_stop(pf_sweep *sw)
{
    if (sw->cur) {
        atomic_store(&sw->cur->cancel, 1);
        sw->cur->older = sw->retired;
        sw->retired = sw->cur;
        sw->cur = NULL;
    }
    reap(sw);
}

void pf_sweep_free(pf_sweep *sw)
{
    pf_sweep_stop(sw);
    while (sw->retired) {
        pf_sweep_run *r = sw->retired;
        sw->retired = r->older;
        run_free(r);
    }
}
