/* sim/control.c - the live setters and getters of sim/sim.h.
 *
 * Each takes the simulator's mutex, so it lands between two steps of
 * whichever engine runs. A change the scheduler can take in the middle of a
 * run (watermark, sequence cap, victim policy, preemption mode) goes to it
 * at once; the thread count is applied by the driver at its next step
 * boundary (resizing the crew joins or starts threads, which the stepping
 * thread must do); a mode change starts the run again, since a naive
 * reservation and a paged table cannot be converted into one another.
 */
#include <math.h>
#include <string.h>

#include "core/err.h"
#include "sim/sim_internal.h"

int pf_sim_set_watermark(pf_sim *sim, double watermark)
{
    if (!sim || !(watermark >= 0.0 && watermark <= 1.0))
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.watermark = watermark;
    sim->p.watermark_auto = 0;
    int rc = pf_sched_set_watermark(sim->sc, watermark);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_set_watermark_auto(pf_sim *sim, int on)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int was = sim->p.watermark_auto;
    sim->p.watermark_auto = on != 0;
    if (on && !was) {
        /* the controller starts from the watermark in force, now, and
         * from it again at every reset */
        sim->lc_w0 = sim->p.watermark;
        pf_sim__loadctl_start(sim, pf_sched_now(sim->sc));
    }
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_set_workers(pf_sim *sim, int workers)
{
    if (!sim || workers < 1 || workers > PF_SIM_MAX_SEQS)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->workers_target = workers;
    sim->p.workers = workers;
    int rc = pf_sched_set_max_num_seqs(sim->sc, workers);
    pthread_mutex_unlock(&sim->mu);
    pf_sim__refresh_baseline(sim);
    return rc;
}

int pf_sim_set_threads(pf_sim *sim, int threads)
{
    if (!sim || threads < 0 || threads > PF_CREW_MAX)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int old_target = sim->threads_target, old_threads = sim->p.threads;
    sim->threads_target = pf_sim__threads_of(threads);
    sim->p.threads = threads;
    int rc = PF_OK;
    /* without a driver, the caller steps: apply at once */
    if (!sim->running && sim->p.engine == PF_ENGINE_THREADED)
        rc = pf_sim__apply_threads_locked(sim, threads);
    if (rc != PF_OK) {
        /* the crew kept its size, or (when even its old threads could not
         * be restarted) runs on one: the parameters read back what runs */
        sim->threads_target = sim->nshards;
        sim->p.threads = sim->threads_target == old_target ? old_threads : sim->threads_target;
    }
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_set_policy(pf_sim *sim, pf_victim_policy policy)
{
    if (!sim || (unsigned)policy >= PF_VICTIM_COUNT)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.policy = policy;
    int rc = pf_sched_set_victim(sim->sc, policy);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_set_preempt(pf_sim *sim, pf_preempt_mode mode)
{
    if (!sim || (unsigned)mode >= PF_PREEMPT_COUNT)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.preempt = mode;
    int rc = pf_sched_set_preempt(sim->sc, mode);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_set_mode(pf_sim *sim, pf_sim_mode mode)
{
    if (!sim || (unsigned)mode > PF_SIM_PAGED)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    pf_sim_mode old = sim->p.mode;
    sim->p.mode = mode;
    int rc = pf_sim__reset_locked(sim);
    if (rc == PF_OK)
        pf_sim__event(sim, PF_EV_RESET, -1, 0);
    else /* the old run goes on (out of memory): in its own mode */
        sim->p.mode = old;
    pthread_mutex_unlock(&sim->mu);
    pf_sim__refresh_baseline(sim);
    return rc;
}

int pf_sim_set_paused(pf_sim *sim, int paused)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->paused = paused != 0;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_set_hold_end(pf_sim *sim, int on)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->hold_end = on != 0;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_single_step(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int rc = PF_OK;
    if (!sim->running) {
        /* the step's own error: PF_ERR_RANGE for a livelock, PF_ERR_NOMEM
         * when memory ran out */
        const int st = pf_sim__step_locked(sim);
        rc = st < 0 ? st : PF_OK;
    }
    else if (!sim->paused)
        rc = PF_ERR_ARG;
    else {
        sim->single_req = 1;
        pthread_cond_broadcast(&sim->ctl_cv);
    }
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_set_tick_us(pf_sim *sim, int tick_us)
{
    if (!sim || tick_us < 0 || tick_us > 10 * 1000 * 1000)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.tick_us = tick_us;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_reset(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int rc = pf_sim__reset_locked(sim);
    if (rc == PF_OK)
        pf_sim__event(sim, PF_EV_RESET, -1, 0);
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

void pf_sim_get_params(pf_sim *sim, pf_sim_params *out)
{
    if (!sim || !out)
        return;
    pf_sim__lock(sim);
    *out = sim->p;
    pthread_mutex_unlock(&sim->mu);
}

void pf_sim_get_stats(pf_sim *sim, pf_sim_stats *out)
{
    if (!sim || !out)
        return;
    pf_sim__lock(sim);
    pf_sim__stats_locked(sim, out);
    pthread_mutex_unlock(&sim->mu);
}

int pf_sim_get_metrics(pf_sim *sim, pf_metrics *out)
{
    if (!sim || !out)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int rc = pf_sched_metrics(sim->sc, out);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}
