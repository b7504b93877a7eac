/* tests/test_sim_threads_fail.c - the threaded engine when threads or
 * memory run out while its crew changes size.
 *
 * A step lands the scheduler's shards on the crew's threads, so the crew's
 * size, the simulator's shard count and the scheduler's shards must agree
 * after every pf_sim_set_threads, failed or not: fewer threads than shards
 * leaves a shard's tokens unlanded, more lands shards the scheduler does
 * not have. The failures are real ones, made at link time: this executable
 * is linked with --wrap=pthread_create and --wrap=pf_pool_cache_new (the
 * allocation a new scheduler shard makes), whose wrappers fail while a
 * test asks them to. Criterion's own threads are created inside its shared
 * library, which the wrap does not reach. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "core/err.h"
#include "core/pool.h"
#include "sim/crew.h"
#include "sim/sched.h"
#include "sim/sim.h"
#include "sim/sim_internal.h" /* the crew and the shard counts, to see them agree */

static atomic_int fail_threads, fail_caches;

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    if (atomic_load(&fail_threads))
        return EAGAIN;
    return __real_pthread_create(t, a, fn, arg);
}

pf_pool_cache *__real_pf_pool_cache_new(pf_pool *pool);
pf_pool_cache *__wrap_pf_pool_cache_new(pf_pool *pool);
pf_pool_cache *__wrap_pf_pool_cache_new(pf_pool *pool)
{
    if (atomic_load(&fail_caches))
        return NULL;
    return __real_pf_pool_cache_new(pool);
}

/* 64 jobs of the seed's mix, 16 sequences at most, 256 blocks of 16: the
 * runs preempt, and more than PF_SIM_PARALLEL_MIN sequences run at once, so
 * steps land on the crew as well as serially. */
static void params(pf_sim_params *p, pf_engine engine, int threads)
{
    pf_sim_params_default(p);
    p->cfg.max_seq_len = 512;
    p->cfg.pool_blocks = 256;
    p->workers = 16;
    p->watermark = 0.0;
    p->tick_us = 0;
    p->engine = engine;
    p->threads = threads;
}

static pf_sim *make(const pf_sim_params *p, const pf_jobs *j)
{
    char err[256];
    pf_sim *s = pf_sim_create(p, j, err, sizeof err);
    cr_assert_not_null(s, "create: %s", err);
    return s;
}

/* The deterministic engine's figures for the jobs, which the threaded
 * engine gives exactly at any thread count (test_sim_engine). */
static pf_sim_stats reference(const pf_jobs *j)
{
    pf_sim_params p;
    params(&p, PF_ENGINE_DETERMINISTIC, 1);
    pf_sim *s = make(&p, j);
    pf_sim_stats st;
    cr_assert_eq(pf_sim_run(s, &st), PF_OK);
    pf_sim_destroy(s);
    return st;
}

/* The invariant: the crew's threads (1 without a crew), the simulator's
 * shards and the scheduler's shards are the same number, n. */
static void agree(const pf_sim *s, int n, const char *what)
{
    const int crew = s->crew ? pf_crew_size(s->crew) : 1;
    cr_assert_eq(crew, n, "%s: crew %d", what, crew);
    cr_assert_eq(s->nshards, n, "%s: simulator shards %d", what, s->nshards);
    cr_assert_eq(pf_sched_shards(s->sc), n, "%s: scheduler shards %d", what,
                 pf_sched_shards(s->sc));
}

/* Run s from the start: every job finishes, the pool is consistent and
 * empty, and the figures are the reference's. */
static void run_matches(pf_sim *s, const pf_sim_stats *want, const char *what)
{
    cr_assert_eq(pf_sim_reset(s), PF_OK);
    pf_sim_stats st;
    cr_assert_eq(pf_sim_run(s, &st), PF_OK, "%s", what);
    cr_assert(st.done, "%s", what);
    cr_assert_eq(pf_sim_check(s), PF_OK, "%s", what);
    cr_assert_eq(st.pool_used, 0, "%s: frames leaked", what);
    cr_assert_eq(st.tokens_generated, want->tokens_generated, "%s", what);
    cr_assert_eq(st.tokens_computed, want->tokens_computed, "%s", what);
    cr_assert_eq(st.preemptions, want->preemptions, "%s", what);
    cr_assert_eq(st.step, want->step, "%s", what);
    cr_assert(st.time_s == want->time_s, "%s: time %.17g against %.17g", what, st.time_s,
              want->time_s);
}

/* A simulator on `from` threads (its run checked), a change to `to` that
 * fails while *fail is set, then: PF_ERR_NOMEM, the crew and both shard
 * counts at left_at, the parameters saying so, the same figures; and once
 * the failure is gone, the change made and the figures still the same. */
static void failed_change(uint64_t seed, int from, int to, atomic_int *fail, int left_at)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, seed, 64, pf_mix_seed(), 0.0, 512), PF_OK);
    const pf_sim_stats want = reference(&j);
    pf_sim_params p;
    params(&p, PF_ENGINE_THREADED, from);
    pf_sim *s = make(&p, &j);
    run_matches(s, &want, "before");
    atomic_store(fail, 1);
    const int rc = pf_sim_set_threads(s, to);
    atomic_store(fail, 0);
    cr_assert_eq(rc, PF_ERR_NOMEM);
    agree(s, left_at, "after the failed change");
    pf_sim_params got;
    pf_sim_get_params(s, &got);
    cr_assert_eq(got.threads, left_at, "the parameters read back what runs: %d", got.threads);
    run_matches(s, &want, "after the failed change");
    cr_assert_eq(pf_sim_set_threads(s, to), PF_OK, "once it can be had");
    agree(s, to, "changed");
    run_matches(s, &want, "changed");
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* No memory for the scheduler's new shards (2 -> 5): the call fails and
 * nothing changes (before the fix the crew had grown to 5 threads over 2
 * shards, and the next step landed shards 2-4 past the scheduler's array). */
Test(sim_threads_fail, no_memory_for_shards_changes_nothing)
{
    failed_change(19, 2, 5, &fail_caches, 2);
}

/* No threads at all: growing from 3 to 6 fails, and the crew's old threads
 * cannot be restarted either, so it runs on one (pf_crew_resize). The
 * scheduler's shards follow it down (before the fix they stayed at 3, and
 * shards 1 and 2 were never landed when the crew ran the step), and the
 * parameters say 1. */
Test(sim_threads_fail, no_threads_leaves_crew_and_shards_agreeing)
{
    failed_change(23, 3, 6, &fail_threads, 1);
}

/* A crew that cannot be created at all (1 -> 4 with no thread to be had):
 * the simulator stays on one shard and runs as before. */
Test(sim_threads_fail, no_crew_at_all)
{
    failed_change(29, 1, 4, &fail_threads, 1);
}

/* Live: the driver applies a new thread count between steps. When no
 * thread can be had it runs on what the crew was left with and says so
 * (the parameters read back 1), instead of stopping and restarting the crew
 * at every step, and the steps go on. */
Test(sim_threads_fail, live_driver_settles_on_what_it_has)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 31, 64, pf_mix_seed(), 0.0, 512), PF_OK);
    pf_sim_params p;
    params(&p, PF_ENGINE_THREADED, 2);
    p.tick_us = 100;
    pf_sim *s = make(&p, &j);
    cr_assert_eq(pf_sim_start(s), PF_OK);
    atomic_store(&fail_threads, 1);
    cr_assert_eq(pf_sim_set_threads(s, 5), PF_OK, "running: the driver applies it");
    pf_sim_params got;
    got.threads = 5;
    for (int k = 0; k < 4000 && got.threads == 5; k++) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pf_sim_get_params(s, &got);
    }
    cr_assert_eq(got.threads, 1, "settled on what runs: %d", got.threads);
    pf_sim_stats a, b;
    pf_sim_get_stats(s, &a);
    for (int k = 0; k < 4000; k++) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        pf_sim_get_stats(s, &b);
        if (b.step != a.step)
            break;
    }
    cr_assert_neq(b.step, a.step, "the driver steps on");
    cr_assert_eq(pf_sim_stop(s), PF_OK);
    atomic_store(&fail_threads, 0);
    agree(s, 1, "live, after the failed grow");
    cr_assert_eq(pf_sim_check(s), PF_OK);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}
