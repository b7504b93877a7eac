/* sim/live.c - live mode: the engine steps on a background driver thread
 * while viewers read snapshots and change parameters.
 *
 * The driver holds the simulator's mutex for a step (the crew's threads
 * land its shards meanwhile), then hands it to any waiting caller, then
 * sleeps the rest of its tick. Between steps it applies what callers asked
 * for that the stepping thread must do itself: a new thread count (the crew
 * is resized here), a reset, one step while paused. When every job is done
 * (or the run livelocked) and the run is not paused, it starts the same
 * jobs again at once (a PF_EV_RESET event), so a viewer always has a run to
 * watch; with hold_end (the dashboard's) it pauses there instead, on the
 * last step, so the end stays on screen with its final figures.
 */
#include <time.h>

#include "core/err.h"
#include "sim/sim_internal.h"

static void add_us(struct timespec *t, long us)
{
    t->tv_sec += us / 1000000;
    t->tv_nsec += (us % 1000000) * 1000;
    if (t->tv_nsec >= 1000000000) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000;
    }
}

/* Wait on ctl_cv until `until` (CLOCK_MONOTONIC, the clock ctl_cv uses) or
 * a control call wakes the driver; mu held. */
static void wait_until(pf_sim *s, const struct timespec *until)
{
    int rc = pthread_cond_timedwait(&s->ctl_cv, &s->mu, until);
    (void)rc; /* ETIMEDOUT or a wake-up: the loop re-reads its state */
}

/* The thread count asked for while the driver ran (pf_sim_set_threads only
 * records it then), applied; mu held, no step in flight. When no threads
 * are to be had it settles on the crew it was left with and says so (the
 * parameters read back what runs), rather than stop and restart the crew
 * at every step. */
static void apply_threads_target(pf_sim *s)
{
    if (s->p.engine != PF_ENGINE_THREADED ||
        (s->crew ? pf_crew_size(s->crew) : 1) == s->threads_target)
        return;
    if (pf_sim__apply_threads_locked(s, s->threads_target) != PF_OK) {
        s->threads_target = s->nshards;
        s->p.threads = s->nshards;
    }
}

static void *driver_main(void *arg)
{
    pf_sim *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->quit) {
        if (s->paused && !s->single_req && !s->reset_req) {
            pthread_cond_wait(&s->ctl_cv, &s->mu);
            continue;
        }
        /* a single-step request is consumed as its step begins: one made
         * while mu is let go below asks for the next step */
        const int single = s->single_req;
        s->single_req = 0;
        if (s->hold_end && (s->done || s->livelock) && !s->reset_req && !single) {
            s->paused = 1; /* held at the end; a step or a reset goes on */
            continue;
        }
        if (s->reset_req || s->done || s->livelock) {
            /* asked for, or the run is over (and not paused: a viewer that
             * keeps the end on screen pauses first, as the dashboard
             * does): the same jobs again */
            s->reset_req = 0;
            if (pf_sim__reset_locked(s) == PF_OK)
                pf_sim__event(s, PF_EV_RESET, -1, 0);
        }
        apply_threads_target(s);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        (void)pf_sim__step_locked(s); /* done and livelock are read above */
        if (s->hold_end && (s->done || s->livelock))
            s->paused = 1; /* held now, not after the tick's wait: a viewer
                            * that sees the end sees the pause with it */
        pf_sim__let_callers_in(s);
        if (s->p.tick_us > 0 && !s->quit) {
            struct timespec until = t0;
            add_us(&until, s->p.tick_us);
            wait_until(s, &until);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int pf_sim_start(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__refresh_baseline(sim);
    pf_sim__lock(sim);
    int rc = PF_OK;
    if (sim->running) {
        rc = PF_ERR_ARG;
    } else {
        sim->quit = 0;
        if (pthread_create(&sim->driver, NULL, driver_main, sim) != 0) {
            rc = PF_ERR_NOMEM;
        } else {
            sim->running = 1;
            sim->driver_started = 1;
        }
    }
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

int pf_sim_stop(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    if (!sim->driver_started) {
        pthread_mutex_unlock(&sim->mu);
        return PF_OK;
    }
    sim->quit = 1;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    pthread_join(sim->driver, NULL);
    pf_sim__lock(sim);
    sim->driver_started = 0;
    sim->running = 0;
    /* a count asked for since the driver's last step (or while it was
     * paused) would otherwise never be applied: without a driver the
     * caller steps, and pf_sim_set_threads applies at once only what it is
     * asked from now on */
    apply_threads_target(sim);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}
