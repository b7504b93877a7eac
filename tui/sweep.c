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

#include <string.h>
#include <unistd.h>

static const double sweep_wm[PF_SWEEP_POINTS] = {0,    0.01, 0.02, 0.03, 0.05, 0.075,
                                                  0.1,  0.15, 0.2,  0.3,  0.4,  0.5};

static void *sweep_main(void *arg)
{
    pf_sweep *sw = arg;
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
    return NULL;
}

int pf_sweep_start(pf_sweep *sw, const pf_sim_params *p, const pf_jobs *jobs)
{
    pf_sweep_stop(sw);
    if (!sw->inited) {
        pthread_mutex_init(&sw->mu, NULL);
        sw->inited = 1;
    }
    pthread_mutex_lock(&sw->mu);
    memset(&sw->v, 0, sizeof sw->v);
    sw->v.n = PF_SWEEP_POINTS;
    memcpy(sw->v.wm, sweep_wm, sizeof sweep_wm);
    sw->v.current = p->watermark;
    pthread_mutex_unlock(&sw->mu);
    sw->p = *p;
    sw->jobs = jobs;
    atomic_store(&sw->next, 0);
    atomic_store(&sw->cancel, 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores < 1 ? 1 : cores > PF_SWEEP_POINTS ? PF_SWEEP_POINTS : (int)cores;
    if (n > PF_SWEEP_THREADS)
        n = PF_SWEEP_THREADS;
    sw->nth = 0;
    for (int i = 0; i < n; i++) {
        if (pthread_create(&sw->th[sw->nth], NULL, sweep_main, sw) != 0)
            break;
        sw->nth++;
    }
    return sw->nth > 0 ? 0 : -1;
}

int pf_sweep_get(pf_sweep *sw, pf_sweep_view *out)
{
    if (!sw->inited)
        return 0;
    pthread_mutex_lock(&sw->mu);
    *out = sw->v;
    pthread_mutex_unlock(&sw->mu);
    return 1;
}

void pf_sweep_stop(pf_sweep *sw)
{
    if (!sw->inited)
        return;
    atomic_store(&sw->cancel, 1);
    for (int i = 0; i < sw->nth; i++)
        pthread_join(sw->th[i], NULL);
    sw->nth = 0;
}

void pf_sweep_free(pf_sweep *sw)
{
    pf_sweep_stop(sw);
    if (sw->inited)
        pthread_mutex_destroy(&sw->mu);
    sw->inited = 0;
}
