/* sim/engine_thr.c - the background engines: the threaded engine (one
 * pthread per worker slot) and the deterministic engine's live driver.
 *
 * Threaded engine. A driver thread owns the clock and the worker threads.
 * Each step it (1) applies control requests (reset, worker count: spawns
 * threads for new slots, retires drained ones), (2) admits arrivals,
 * (3) bumps the step generation `gen` and wakes every worker, (4) waits
 * until all of them have taken their slot's action (`pending` reaches 0),
 * (5) folds the step into the statistics and (6) sleeps out the rest of the
 * tick. Workers run pf_sim__slot_step, the same function the deterministic
 * engine runs; it holds mu except around frame allocations, so within a
 * step the workers really race for the pool's frames and the order in which
 * they get them is the scheduler's, not ours. That is the only difference
 * from the deterministic engine, whose slots go in a fixed rotating order.
 *
 * The step barrier (gen + pending, both under mu) means a worker never
 * runs two actions in one step and the driver never reads half a step.
 *
 * Live deterministic driver: one thread runs pf_sim__det_step under mu,
 * then sleeps out the tick. Pause, single step, reset and worker changes
 * are handled at step boundaries by the driver in both cases. A run to
 * completion (pf_sim_run, threaded) skips quiet steps as the deterministic
 * engine does (pf_sim__skip_quiet) and stops on a livelock; a live run
 * shows every step and keeps going (a viewer sees the livelock's counters).
 *
 * Stopping. pf_sim_stop sets quit and wakes every wait; the driver leaves
 * its loop at the next check (a step in flight is dropped: workers that
 * have not taken their action leave without it, and every frame stays in a
 * sequence's list), joins the workers, and exits; stop joins the driver.
 * Ticks are measured on CLOCK_MONOTONIC (ctl_cv is created with that
 * clock in pf_sim_create), so a change of the wall clock cannot stretch a
 * timed wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim_internal.h"

typedef struct {
    pf_sim *s;
    int w;
    uint64_t gen0;
} worker_arg;

static void *worker_main(void *arg)
{
    worker_arg *a = arg;
    pf_sim *s = a->s;
    int w = a->w;
    uint64_t my = a->gen0;
    free(a);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->gen == my && !s->quit && !s->th_exit[w])
            pthread_cond_wait(&s->go_cv, &s->mu);
        if (s->quit || s->th_exit[w])
            break;
        my = s->gen;
        pf_sim__slot_step(s, w);
        if (--s->pending == 0)
            pthread_cond_signal(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Under mu, at a step boundary: one thread per slot below the worker
 * count; drained slots above it lose theirs. Joining needs mu released. */
static void sync_threads(pf_sim *s)
{
    if (s->workers_target != s->p.workers)
        pf_sim__apply_workers_locked(s, s->workers_target);
    for (int w = 0; w < PF_SIM_MAX_WORKERS; w++) {
        if (w < s->p.workers && !s->th_alive[w]) {
            worker_arg *a = malloc(sizeof *a);
            if (!a)
                continue; /* fewer threads this step; retried next boundary */
            a->s = s;
            a->w = w;
            a->gen0 = s->gen;
            s->th_exit[w] = 0;
            /* A worker needs little stack; 256 KiB instead of the default
             * (often 8 MiB) keeps 4096 workers cheap in address space. */
            pthread_attr_t attr;
            int have_attr = pthread_attr_init(&attr) == 0;
            if (have_attr)
                (void)pthread_attr_setstacksize(&attr, 256 * 1024);
            int crc = pthread_create(&s->th[w], have_attr ? &attr : NULL, worker_main, a);
            if (have_attr)
                pthread_attr_destroy(&attr);
            if (crc != 0) {
                free(a);
                continue;
            }
            s->th_alive[w] = 1;
            s->nthreads++;
        } else if (w >= s->p.workers && s->th_alive[w] && s->slot_seq[w] < 0) {
            s->th_exit[w] = 1;
            pthread_cond_broadcast(&s->go_cv);
            pthread_mutex_unlock(&s->mu);
            pthread_join(s->th[w], NULL);
            pthread_mutex_lock(&s->mu);
            s->th_alive[w] = 0;
            s->th_exit[w] = 0;
            s->nthreads--;
        }
    }
}

static void stop_threads(pf_sim *s)
{
    s->quit = 1;
    pthread_cond_broadcast(&s->go_cv);
    for (int w = 0; w < PF_SIM_MAX_WORKERS; w++) {
        if (!s->th_alive[w])
            continue;
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->th[w], NULL);
        pthread_mutex_lock(&s->mu);
        s->th_alive[w] = 0;
        s->nthreads--;
    }
}

static void add_us(struct timespec *t, long us)
{
    t->tv_sec += us / 1000000;
    t->tv_nsec += (us % 1000000) * 1000L;
    if (t->tv_nsec >= 1000000000L) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000L;
    }
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Under mu: sleep out the tick that began at t0 (re-read each wake-up, so a
 * speed change applies at once), unless asked to quit or reset. */
static void pace(pf_sim *s, const struct timespec *t0)
{
    for (;;) {
        if (s->quit || s->reset_req || s->p.tick_us <= 0)
            return;
        struct timespec end = *t0, now;
        add_us(&end, s->p.tick_us);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (!before(&now, &end))
            return;
        pthread_cond_timedwait(&s->ctl_cv, &s->mu, &end);
    }
}

/* Both drivers share the loop; only the step differs. */
static void *driver_main(void *arg)
{
    pf_sim *s = arg;
    int threaded = s->p.engine == PF_ENGINE_THREADED;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->quit && s->live && s->paused && !s->single_req && !s->reset_req)
            pthread_cond_wait(&s->ctl_cv, &s->mu);
        if (s->quit)
            break;
        /* A single-step request is consumed here, as its step begins: a
         * request made while mu is let go below (let_callers_in, pace)
         * asks for the next step, and must not be cleared by this one. */
        s->single_req = 0;
        if (s->reset_req) {
            s->reset_req = 0;
            pf_sim__reset_locked(s);
        }
        if (threaded)
            sync_threads(s);
        else if (s->workers_target != s->p.workers)
            pf_sim__apply_workers_locked(s, s->workers_target);
        if (s->done || s->livelock) {
            if (!s->live)
                break;
            if (s->done) /* live: the same jobs again, so there is always something to show */
                pf_sim__reset_locked(s);
        }
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (threaded) {
            pf_sim__begin_step(s);
            s->pending = s->nthreads;
            s->gen++;
            pthread_cond_broadcast(&s->go_cv);
            /* On quit, workers leave without taking their action, so the
             * count may never reach 0: the half step is then dropped (the
             * threads are joined below; every frame stays accounted for in
             * the sequences' lists). */
            while (s->pending > 0 && !s->quit)
                pthread_cond_wait(&s->done_cv, &s->mu);
            if (s->quit)
                break;
            pf_sim__end_step(s);
        } else {
            pf_sim__det_step(s);
        }
        if (!s->live)
            pf_sim__skip_quiet(s);
        pf_sim__let_callers_in(s);
        pthread_cond_broadcast(&s->ctl_cv);
        if (!s->done || s->live)
            pace(s, &t0);
    }
    if (threaded)
        stop_threads(s);
    s->driver_exited = 1;
    pthread_cond_broadcast(&s->ctl_cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Called by the controlling thread; viewers may hold mu meanwhile. */
int pf_sim__thr_start(pf_sim *s, int live)
{
    pf_sim__lock(s);
    if (s->running) {
        pthread_mutex_unlock(&s->mu);
        return PF_ERR_ARG;
    }
    s->live = live;
    s->quit = 0;
    s->single_req = 0;
    s->reset_req = 0;
    s->driver_exited = 0;
    s->gen = 0;
    s->pending = 0;
    s->nthreads = 0;
    memset(s->th_alive, 0, sizeof s->th_alive);
    memset(s->th_exit, 0, sizeof s->th_exit);
    /* The driver starts by taking mu, so it runs only after this. */
    if (pthread_create(&s->driver, NULL, driver_main, s) != 0) {
        pthread_mutex_unlock(&s->mu);
        return PF_ERR_NOMEM;
    }
    s->driver_started = 1;
    s->running = 1;
    pthread_mutex_unlock(&s->mu);
    return PF_OK;
}

int pf_sim__thr_wait_done(pf_sim *s)
{
    pf_sim__lock(s);
    while (!s->driver_exited)
        pthread_cond_wait(&s->ctl_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return PF_OK;
}

int pf_sim__thr_stop(pf_sim *s)
{
    pf_sim__lock(s);
    if (!s->driver_started) {
        pthread_mutex_unlock(&s->mu);
        return PF_OK;
    }
    s->quit = 1;
    pthread_cond_broadcast(&s->ctl_cv);
    pthread_cond_broadcast(&s->go_cv);
    pthread_cond_broadcast(&s->done_cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->driver, NULL);
    pf_sim__lock(s);
    s->driver_started = 0;
    s->running = 0;
    /* Requests made while it ran apply now. */
    if (s->workers_target != s->p.workers)
        pf_sim__apply_workers_locked(s, s->workers_target);
    if (s->reset_req) {
        s->reset_req = 0;
        pf_sim__reset_locked(s);
    }
    pthread_mutex_unlock(&s->mu);
    return PF_OK;
}

int pf_sim_start(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__refresh_baseline(sim);
    return pf_sim__thr_start(sim, 1);
}

int pf_sim_stop(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    return pf_sim__thr_stop(sim);
}
