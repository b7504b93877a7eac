/* tests/test_sim_fail.c - the simulator when threads or memory run out:
 * what a failed call leaves behind.
 *
 * The failures are real ones, made at link time: this executable is linked
 * with --wrap for pthread_create, pf_pool_cache_new (the allocation a new
 * scheduler shard makes), pf_pool_alloc_n_c (the frames a request's tokens
 * land in) and realloc (host memory for the scheduler's growing arrays),
 * whose wrappers fail while a test asks them to (tests/sim.cmake).
 * Criterion's own threads and allocations are made inside its shared
 * library, which the wrap does not reach. Each case checks that the state
 * after the failure is consistent: the parameters read back what runs, the
 * crew and the shard counts agree, the scheduler's totals are what its
 * requests say, nothing finished is lost, and runs give the figures they
 * give without the failure.
 *
 * The crew and the shards: a step lands the scheduler's shards on the
 * crew's threads, so the crew's size, the simulator's shard count and the
 * scheduler's shards must agree after every pf_sim_set_threads, failed or
 * not: fewer threads than shards leaves a shard's tokens unlanded, more
 * lands shards the scheduler does not have. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "core/pool.h"
#include "sim/crew.h"
#include "sim/sched.h"
#include "sim/sim.h"
#include "sim/sim_internal.h" /* the crew and the shard counts, to see them agree */

static atomic_int fail_threads, fail_frames, fail_realloc;
/* pf_pool_cache_new: fail every call once `caches_ok` more have succeeded
 * (-1: never fail). */
static atomic_int caches_ok = -1;

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
    int left = atomic_load(&caches_ok);
    if (left == 0)
        return NULL;
    if (left > 0)
        atomic_fetch_sub(&caches_ok, 1);
    return __real_pf_pool_cache_new(pool);
}

int __real_pf_pool_alloc_n_c(pf_pool_cache *cache, int owner, int n, int *frames_out);
int __wrap_pf_pool_alloc_n_c(pf_pool_cache *cache, int owner, int n, int *frames_out);
int __wrap_pf_pool_alloc_n_c(pf_pool_cache *cache, int owner, int n, int *frames_out)
{
    if (atomic_load(&fail_frames))
        return PF_ERR_NOMEM;
    return __real_pf_pool_alloc_n_c(cache, owner, n, frames_out);
}

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    if (atomic_load(&fail_realloc))
        return NULL;
    return __real_realloc(p, n);
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

/* The failures failed_change makes: no thread to be had, or no memory
 * for a scheduler shard's frame cache. */
static void no_threads(int on)
{
    atomic_store(&fail_threads, on);
}
static void no_caches(int on)
{
    atomic_store(&caches_ok, on ? 0 : -1);
}

/* A simulator on `from` threads (its run checked), a change to `to` that
 * fails while `failing` is on, then: PF_ERR_NOMEM, the crew and both shard
 * counts at left_at, the parameters saying so, the same figures; and once
 * the failure is gone, the change made and the figures still the same. */
static void failed_change(uint64_t seed, int from, int to, void (*failing)(int on), int left_at)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, seed, 64, pf_mix_seed(), 0.0, 512), PF_OK);
    const pf_sim_stats want = reference(&j);
    pf_sim_params p;
    params(&p, PF_ENGINE_THREADED, from);
    pf_sim *s = make(&p, &j);
    run_matches(s, &want, "before");
    failing(1);
    const int rc = pf_sim_set_threads(s, to);
    failing(0);
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
Test(sim_fail, no_memory_for_shards_changes_nothing)
{
    failed_change(19, 2, 5, no_caches, 2);
}

/* No threads at all: growing from 3 to 6 fails, and the crew's old threads
 * cannot be restarted either, so it runs on one (pf_crew_resize). The
 * scheduler's shards follow it down (before the fix they stayed at 3, and
 * shards 1 and 2 were never landed when the crew ran the step), and the
 * parameters say 1. */
Test(sim_fail, no_threads_leaves_crew_and_shards_agreeing)
{
    failed_change(23, 3, 6, no_threads, 1);
}

/* A crew that cannot be created at all (1 -> 4 with no thread to be had):
 * the simulator stays on one shard and runs as before. */
Test(sim_fail, no_crew_at_all)
{
    failed_change(29, 1, 4, no_threads, 1);
}

/* Live: the driver applies a new thread count between steps. When no
 * thread can be had it runs on what the crew was left with and says so
 * (the parameters read back 1), instead of stopping and restarting the crew
 * at every step, and the steps go on. */
Test(sim_fail, live_driver_settles_on_what_it_has)
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

/* pf_sim_create promises a reason in err whenever it returns NULL. When
 * the scheduler is made but its shards for the crew cannot be (the second
 * shard's frame cache here), it returned NULL with err empty. */
Test(sim_fail, create_says_why_when_shards_fail)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 7, 16, pf_mix_seed(), 0.0, 512), PF_OK);
    pf_sim_params p;
    params(&p, PF_ENGINE_THREADED, 2);
    char err[256];
    memset(err, 0, sizeof err);
    atomic_store(&caches_ok, 1); /* the scheduler's own shard 0, then no more */
    pf_sim *s = pf_sim_create(&p, &j, err, sizeof err);
    atomic_store(&caches_ok, -1);
    cr_assert_null(s);
    cr_assert(strstr(err, "out of memory") != NULL, "err: '%s'", err);
    pf_jobs_free(&j);
}

/* A thread count asked for while the driver runs is applied by the driver
 * at its next step. When the driver is stopped before that step (here it
 * is paused), the count was never applied: the parameters read 4 while the
 * crew and the shards stayed at 2, and every later pf_sim_step / pf_sim_run
 * ran on 2 (pf_sim_set_threads applies at once only when no driver runs). */
Test(sim_fail, stop_applies_a_pending_thread_count)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 11, 64, pf_mix_seed(), 0.0, 512), PF_OK);
    pf_sim_params p;
    params(&p, PF_ENGINE_THREADED, 2);
    p.tick_us = 100;
    pf_sim *s = make(&p, &j);
    cr_assert_eq(pf_sim_set_paused(s, 1), PF_OK);
    cr_assert_eq(pf_sim_start(s), PF_OK);
    cr_assert_eq(pf_sim_set_threads(s, 4), PF_OK);
    cr_assert_eq(pf_sim_stop(s), PF_OK);
    pf_sim_params got;
    pf_sim_get_params(s, &got);
    const int crew = s->crew ? pf_crew_size(s->crew) : 1;
    cr_assert_eq(crew, got.threads, "parameters say %d threads, the crew has %d", got.threads,
                 crew);
    cr_assert_eq(crew, 4);
    cr_assert_eq(s->nshards, 4);
    cr_assert_eq(pf_sched_shards(s->sc), 4);
    pf_sim_stats st;
    cr_assert_eq(pf_sim_run(s, &st), PF_OK);
    cr_assert_eq(pf_sim_check(s), PF_OK);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* One job of prompt + output tokens, arriving at 0. */
static pf_jobs one_job(int prompt, int output)
{
    pf_jobs j = {0};
    j.njobs = 1;
    j.jobs = calloc(1, sizeof *j.jobs);
    cr_assert_not_null(j.jobs);
    j.jobs[0] = (pf_job){.arrival = 0.0, .prompt = prompt, .output = output, .group = -1};
    return j;
}

/* A deterministic simulator of job j (one_job) in blocks of one token:
 * every token it decodes takes a frame. */
static pf_sim *token_blocks_sim(const pf_jobs *j)
{
    pf_sim_params p;
    params(&p, PF_ENGINE_DETERMINISTIC, 1);
    p.cfg.block_size = 1;
    return make(&p, j);
}

/* One request of 1 + 8 tokens in blocks of one token: every decode step
 * takes a frame. When the frame cannot be taken the step fails (the error
 * is returned), but the request, still decoding, was left out of the
 * scheduler's decode totals: pf_sim_check failed after it, and the next
 * fast plan landed the request without its token or its frame promised. */
Test(sim_fail, failed_landing_keeps_decode_totals)
{
    pf_jobs j = one_job(1, 8);
    pf_sim *s = token_blocks_sim(&j);
    cr_assert_eq(pf_sim_step(s), 0); /* the prompt: now decoding */
    cr_assert_eq(pf_sim_check(s), PF_OK);
    atomic_store(&fail_frames, 1);
    const int rc = pf_sim_step(s); /* its next token needs a frame */
    /* the same through the dashboard's single step (no driver): the
     * error as it is, not a livelock's PF_ERR_RANGE */
    const int rc1 = pf_sim_single_step(s);
    atomic_store(&fail_frames, 0);
    cr_assert_eq(rc, PF_ERR_NOMEM);
    cr_assert_eq(rc1, PF_ERR_NOMEM);
    cr_expect_eq(pf_sim_check(s), PF_OK, "consistent after the failed step");
    int r;
    while ((r = pf_sim_step(s)) == 0)
        cr_expect_eq(pf_sim_check(s), PF_OK);
    cr_assert_eq(r, 1);
    pf_sim_stats st;
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.tokens_generated, 8);
    cr_assert_eq(st.finished, 1);
    cr_assert_eq(st.pool_used, 0);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* A failed step still happened: commit moved the scheduler's step count
 * and clock on (and what did land stays landed), so the simulator must
 * account for it as for any other step: a history entry, the publisher's
 * step_end, the livelock guard. Before the fix it returned the error first:
 * the failed step had no history entry and no step_end, and the next step's
 * entry stood for both (its sums weighted twice). */
static void attach_nothing(void *ctx, struct pf_sched *sc)
{
    (void)ctx;
    (void)sc;
}

static void count_step_end(void *ctx, double t_end)
{
    (void)t_end;
    (*(int *)ctx)++;
}

Test(sim_fail, failed_step_is_accounted)
{
    pf_jobs j = one_job(1, 8);
    pf_sim *s = token_blocks_sim(&j);
    int ends = 0;
    pf_sim_on_sched(s, attach_nothing, count_step_end, &ends);
    cr_assert_eq(pf_sim_step(s), 0); /* the prompt and the first token */
    atomic_store(&fail_frames, 1);
    const int rc = pf_sim_step(s); /* the next token's frame cannot be taken */
    atomic_store(&fail_frames, 0);
    cr_assert_eq(rc, PF_ERR_NOMEM);

    pf_sim_snapshot snap;
    memset(&snap, 0, sizeof snap);
    cr_assert_eq(pf_sim_take_snapshot(s, &snap), PF_OK);
    cr_assert_eq(snap.stats.step, 2, "the failed step counts as a step: %lld",
                 (long long)snap.stats.step);
    cr_expect_eq(ends, 2, "step_end after each step: %d", ends);
    cr_assert_eq(snap.nhistory, 2, "a history entry for each step: %d", snap.nhistory);
    cr_expect_eq(snap.hist_step0, 0);
    cr_expect_eq(snap.hist_tokens[0], 1.0f, "the first step's token: %g",
                 (double)snap.hist_tokens[0]);
    cr_expect_eq(snap.hist_tokens[1], 0.0f, "the failed step landed nothing: %g",
                 (double)snap.hist_tokens[1]);
    cr_expect_eq(snap.hist_time[1], snap.stats.time_s, "the failed step's entry ends at %g, not %g",
                 snap.hist_time[1], snap.stats.time_s);

    int r;
    while ((r = pf_sim_step(s)) == 0)
        ;
    cr_assert_eq(r, 1);
    cr_assert_eq(pf_sim_take_snapshot(s, &snap), PF_OK);
    cr_expect_eq(snap.stats.tokens_generated, 8);
    cr_expect_eq(ends, (int)snap.stats.step, "step_end calls %d, steps %lld", ends,
                 (long long)snap.stats.step);
    cr_expect_eq(snap.nhistory, (int)snap.stats.step, "history entries %d, steps %lld",
                 snap.nhistory, (long long)snap.stats.step);
    float tokens = 0.0f;
    for (int i = 0; i < snap.nhistory; i++)
        tokens += snap.hist_tokens[i];
    cr_expect_eq(tokens, 8.0f, "the history's tokens: %g", (double)tokens);
    pf_sim_snapshot_free(&snap);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* Naive mode reserves a request's whole length when it is admitted: one
 * request of 1 + 8 tokens under a 512-token cap holds 32 frames of 16 from
 * its first landing on. When that landing cannot take them, the request
 * stays admitted and the reservation must survive to the next landing
 * (before the fix the failed landing dropped it, and the request went on
 * taking a frame a block, as a paged one: 1 frame, not its 32). */
Test(sim_fail, failed_first_landing_keeps_the_naive_reservation)
{
    pf_jobs j = one_job(1, 8);
    pf_sim_params p;
    params(&p, PF_ENGINE_DETERMINISTIC, 1);
    p.mode = PF_SIM_NAIVE;
    pf_sim *s = make(&p, &j);
    atomic_store(&fail_frames, 1);
    const int rc = pf_sim_step(s); /* admitted; its frames cannot be taken */
    atomic_store(&fail_frames, 0);
    cr_assert_eq(rc, PF_ERR_NOMEM);
    cr_expect_eq(pf_sim_check(s), PF_OK, "consistent after the failed step");
    pf_sim_stats st;
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.pool_used, 0, "nothing taken by the failed landing: %d", st.pool_used);
    cr_assert_eq(pf_sim_step(s), 0);
    cr_expect_eq(pf_sim_check(s), PF_OK);
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.pool_used, 512 / p.cfg.block_size, "the whole reservation: %d frames",
                 st.pool_used);
    int r;
    while ((r = pf_sim_step(s)) == 0)
        cr_expect_eq(pf_sim_check(s), PF_OK);
    cr_assert_eq(r, 1);
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.tokens_generated, 8);
    cr_assert_eq(st.pool_used, 0);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* Two requests of 4 + 1 tokens (prefix caching on, so their frames are
 * taken in plan and landing allocates nothing but its note list): both
 * finish in the first step. When the note list cannot grow, commit never
 * saw the finishes: the requests stayed running, the next step landed each
 * once more (a token past its output) and only then finished them. */
Test(sim_fail, finish_survives_a_note_list_that_cannot_grow)
{
    pf_sched_params sp;
    pf_sched_params_default(&sp);
    sp.max_seq_len = 512;
    sp.watermark = 0.0;
    sp.prefix_caching = 1;
    pf_req jobs[2];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 2; i++) {
        jobs[i].prompt = 4;
        jobs[i].output = 1;
        jobs[i].group = -1;
    }
    char err[160];
    pf_sched *sc = pf_sched_create(&sp, jobs, 2, 64, NULL, NULL, err, sizeof err);
    cr_assert_not_null(sc, "create: %s", err);
    cr_assert_eq(pf_sched_plan(sc), 0);
    atomic_store(&fail_realloc, 1);
    pf_sched_land(sc, 0);
    atomic_store(&fail_realloc, 0);
    const int rc = pf_sched_commit(sc);
    cr_expect_eq(rc, 1, "both finished in this step: %d", rc);
    cr_expect_eq(pf_sched_check(sc), PF_OK);
    cr_assert_eq(pf_sched_run(sc), PF_OK);
    cr_assert_eq(pf_sched_tokens(sc), 2, "tokens generated: %lld",
                 (long long)pf_sched_tokens(sc));
    cr_assert_eq(pf_sched_check(sc), PF_OK);
    pf_sched_destroy(sc);
}

/* Swap preemption, then a landing that fails as a swapped request comes
 * back: the request runs with its computed tokens and no frames yet (its
 * hold is pending). Figure 2's split counted those tokens as held in the
 * pool, and its "reserved" share went negative by as much (held 14,
 * reserved -14). Whatever fails, the split's parts stay >= 0. */
Test(sim_fail, the_kv_split_stays_whole_when_a_swap_in_cannot_land)
{
    pf_sched_params sp;
    pf_sched_params_default(&sp);
    sp.block_size = 4;
    sp.max_seq_len = 64;
    sp.watermark = 0.0;
    sp.preempt = PF_PREEMPT_SWAP;
    sp.swap_host_blocks = 64;
    enum { N = 6 };
    pf_req jobs[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++)
        jobs[i] = (pf_req){.arrival = 0.0, .prompt = 8, .output = 12, .group = -1};
    char err[160];
    pf_sched *sc = pf_sched_create(&sp, jobs, N, 12, NULL, NULL, err, sizeof err);
    cr_assert_not_null(sc, "create: %s", err);
    int swapped_in_failed = 0, rc = 0;
    for (int step = 0; step < 10000 && rc != 1; step++) {
        int swapped[N];
        for (int i = 0; i < N; i++)
            swapped[i] = pf_sched_req(sc, i)->state == PF_REQ_SWAPPED;
        rc = pf_sched_plan(sc);
        if (rc != 0)
            break;
        /* a swapped request admitted back by this plan: its landing fails */
        int back = 0;
        for (int i = 0; i < N; i++)
            back |= swapped[i] && pf_sched_req(sc, i)->state == PF_REQ_RUNNING;
        atomic_store(&fail_frames, back);
        pf_sched_land(sc, 0);
        atomic_store(&fail_frames, 0);
        rc = pf_sched_commit(sc);
        swapped_in_failed += back;
        int64_t held, resv, internal;
        pf_sched_kv_split(sc, &held, &resv, &internal);
        cr_assert(held >= 0 && resv >= 0 && internal >= 0,
                  "step %d (rc %d): held %lld reserved %lld internal %lld", step, rc,
                  (long long)held, (long long)resv, (long long)internal);
    }
    cr_assert_eq(rc, 1, "the run did not finish");
    cr_assert_gt(swapped_in_failed, 0, "no swap-in landing failed: the test proves nothing");
    cr_assert_eq(pf_sched_check(sc), PF_OK);
    pf_sched_destroy(sc);
}
