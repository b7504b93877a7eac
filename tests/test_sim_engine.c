/* tests/test_sim_engine.c - the serving simulator's behaviour (sim/sim.h):
 * no frame leaks in any mode, policy, preemption mode or engine; naive's
 * capacity; paged beats naive; the watermark cuts preemptions; the
 * deterministic engine repeats itself and matches a checked-in result; the
 * threaded engine agrees with it; snapshots and live control.
 * Workloads are small (max_len 512, pool 256 blocks) so the suite stays
 * fast under the sanitizers; the default-size runs take ~10 ms each. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim.h"
#include "sim/sim_internal.h" /* white box: the unskipped step loop */

/* Produced by this engine (deterministic_repeats_and_matches_expectation's
 * run), pasted here; re-pasted after issue 8 (FCFS admission at the end of
 * a step, readmission without the watermark). */
#define EXPECT_STEPS 1219
#define EXPECT_PREEMPTIONS 19
#define EXPECT_RECOMPUTED 2749
#define EXPECT_TOKENS 13439
#define EXPECT_PINGPONGS 5
#define EXPECT_RUNNING_PEAK 16
#define EXPECT_WAIT_MEAN 334.578125

/* A small, crowded workload: 64 jobs of the seed's mix clamped to 512
 * tokens, 16 workers, 256 blocks of 16 (naive capacity 8). */
static void small_params(pf_sim_params *p)
{
    pf_sim_params_default(p);
    p->cfg.max_seq_len = 512;
    p->cfg.pool_blocks = 256;
    p->workers = 16;
    p->watermark = 0.0;
    p->tick_us = 0;
}

static void small_jobs(pf_jobs *j, uint64_t seed)
{
    cr_assert_eq(pf_jobs_generate(j, seed, 64, pf_mix_seed(), 0.0, 512), PF_OK);
}

static void run_checked(const pf_sim_params *p, const pf_jobs *j, pf_sim_stats *st)
{
    char err[256];
    pf_sim *s = pf_sim_create(p, j, err, sizeof err);
    cr_assert_not_null(s, "create: %s", err);
    cr_assert_eq(pf_sim_run(s, st), PF_OK, "%s/%s/%s/%s", pf_sim_mode_name(p->mode),
                 pf_victim_name(p->policy), pf_preempt_name(p->preempt), pf_engine_name(p->engine));
    cr_assert(st->done);
    cr_assert_eq(st->finished, j->njobs);
    cr_assert_eq(pf_sim_check(s), PF_OK);
    cr_assert_eq(st->pool_used, 0, "frames leaked: %d", st->pool_used);
    cr_assert_eq(st->pool_free, p->cfg.pool_blocks);
    int64_t want = 0;
    for (int i = 0; i < j->njobs; i++)
        want += j->jobs[i].output;
    cr_assert_eq(st->tokens_generated, want);
    pf_sim_destroy(s);
}

static pf_sim *make(const pf_sim_params *p, const pf_job *jobs, int n)
{
    pf_jobs j = {(pf_job *)jobs, n, 0};
    char err[256];
    pf_sim *s = pf_sim_create(p, &j, err, sizeof err);
    cr_assert_not_null(s, "create: %s", err);
    return s;
}

Test(sim_engine, no_leak_any_mode_policy_preempt_deterministic)
{
    pf_jobs j;
    small_jobs(&j, 3);
    int64_t total_pre = 0, total_swapped = 0;
    for (int mode = 0; mode <= 1; mode++)
        for (int pol = 0; pol < PF_VICTIM_COUNT; pol++)
            for (int pre = 0; pre < PF_PREEMPT_COUNT; pre++) {
                pf_sim_params p;
                small_params(&p);
                p.mode = (pf_sim_mode)mode;
                p.policy = (pf_victim_policy)pol;
                p.preempt = (pf_preempt_mode)pre;
                p.swap_host_blocks = 64; /* small: swap must also fall back to recompute */
                pf_sim_stats st;
                run_checked(&p, &j, &st);
                if (mode == PF_SIM_NAIVE)
                    cr_assert_eq(st.preemptions, 0, "naive never preempts");
                total_pre += st.preemptions;
                total_swapped += st.swapped_pages;
            }
    /* The paths were exercised, not skipped. */
    cr_assert_gt(total_pre, 0);
    cr_assert_gt(total_swapped, 0);
    pf_jobs_free(&j);
}

Test(sim_engine, no_leak_threaded)
{
    pf_jobs j;
    small_jobs(&j, 5);
    const pf_victim_policy pols[] = {PF_VICTIM_FAULTING, PF_VICTIM_NEWEST};
    for (int m = 0; m <= 1; m++)
        for (int k = 0; k < 2; k++)
            for (int pre = 0; pre < PF_PREEMPT_COUNT; pre++) {
                pf_sim_params p;
                small_params(&p);
                p.mode = (pf_sim_mode)m;
                p.engine = PF_ENGINE_THREADED;
                p.policy = pols[k];
                p.preempt = (pf_preempt_mode)pre;
                pf_sim_stats st;
                run_checked(&p, &j, &st);
            }
    pf_jobs_free(&j);
}

/* The seed's configuration: 4096 blocks of 16, MAX_SEQ_LEN 2048. */
static void seed_run(pf_sim_mode mode, double wm, pf_victim_policy pol, pf_sim_stats *st)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 42, 512, pf_mix_seed(), 0.0, 2048), PF_OK);
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.mode = mode;
    p.watermark = wm;
    p.policy = pol;
    run_checked(&p, &j, st);
    pf_jobs_free(&j);
}

Test(sim_engine, naive_never_exceeds_capacity)
{
    pf_sim_stats st;
    seed_run(PF_SIM_NAIVE, 0.0, PF_VICTIM_FAULTING, &st);
    /* 4096 blocks / (2048 / 16) = 32 reservations fit; with 128 workers
     * and 512 jobs waiting, naive must fill them but never exceed. */
    cr_assert_eq(st.running_peak, 32);
    cr_assert_leq(st.pool_peak, 4096);
    cr_assert_leq(st.decoding_mean, 32.0);
}

Test(sim_engine, paged_decodes_more_than_naive)
{
    pf_sim_stats n, p;
    seed_run(PF_SIM_NAIVE, 0.0, PF_VICTIM_FAULTING, &n);
    seed_run(PF_SIM_PAGED, 0.05, PF_VICTIM_FAULTING, &p);
    cr_assert_gt(p.decoding_mean, 1.5 * n.decoding_mean, "paged %.1f naive %.1f", p.decoding_mean,
                 n.decoding_mean);
    cr_assert_gt(p.throughput_vs_naive, 1.5);
    cr_assert_lt(p.step, n.step);
    cr_assert_gt(p.running_peak, 32);
}

/* The watermark trades preemptions for admission: none at 0.5, fewer at
 * 5% than at 0, and a huge reserve admits too little (throughput falls
 * back). The seed's "no watermark thrashes below naive" came from a
 * readmission artefact (a sequence that preempted itself came straight back
 * into the frames it had freed and faulted again); with that fixed (issue 8
 * point 1) no watermark is about as fast as 5% on this workload. */
Test(sim_engine, watermark_trades_preemptions_for_admission)
{
    pf_sim_stats w0, w5, w50;
    seed_run(PF_SIM_PAGED, 0.0, PF_VICTIM_FAULTING, &w0);
    seed_run(PF_SIM_PAGED, 0.05, PF_VICTIM_FAULTING, &w5);
    seed_run(PF_SIM_PAGED, 0.5, PF_VICTIM_FAULTING, &w50);
    cr_assert_gt(w0.preemptions, w5.preemptions, "0%%: %lld, 5%%: %lld", (long long)w0.preemptions,
                 (long long)w5.preemptions);
    cr_assert_gt(w5.preemptions, 0);
    cr_assert_eq(w50.preemptions, 0);
    cr_assert_gt(w5.throughput_vs_naive, 1.8);
    cr_assert_lt(w50.throughput_vs_naive, w5.throughput_vs_naive);
    cr_assert_lt(w0.goodput, w5.goodput);
}

/* A small fixed run whose statistics were produced by this engine and
 * pasted here: any change to the model or the PRNG shows up. */
Test(sim_engine, deterministic_repeats_and_matches_expectation)
{
    pf_jobs j;
    small_jobs(&j, 7);
    pf_sim_params p;
    small_params(&p);
    p.watermark = 0.02;
    p.policy = PF_VICTIM_NEWEST;
    pf_sim_stats a, b;
    run_checked(&p, &j, &a);
    run_checked(&p, &j, &b);
    cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "two runs differ");
    /* expectation (see the comment above) */
    cr_expect_eq(a.step, EXPECT_STEPS);
    cr_expect_eq(a.preemptions, EXPECT_PREEMPTIONS);
    cr_expect_eq(a.recomputed_tokens, EXPECT_RECOMPUTED);
    cr_expect_eq(a.tokens_generated, EXPECT_TOKENS);
    cr_expect_eq(a.pingpongs, EXPECT_PINGPONGS);
    cr_expect_eq(a.running_peak, EXPECT_RUNNING_PEAK);
    cr_expect(fabs(a.wait_mean - EXPECT_WAIT_MEAN) < 1e-9, "wait mean %.17g", a.wait_mean);
    pf_jobs_free(&j);
}

Test(sim_engine, threaded_agrees_with_deterministic)
{
    /* Stated tolerance: mean decoding within 10% (docs/simulator.md). The
     * engines differ only in who wins a frame within a step. */
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 11, 128, pf_mix_seed(), 0.0, 512), PF_OK);
    pf_sim_params p;
    small_params(&p);
    p.cfg.pool_blocks = 512;
    p.workers = 32;
    p.watermark = 0.05;
    pf_sim_stats d, t;
    run_checked(&p, &j, &d);
    p.engine = PF_ENGINE_THREADED;
    run_checked(&p, &j, &t);
    double rel = fabs(t.decoding_mean - d.decoding_mean) / d.decoding_mean;
    cr_assert_lt(rel, 0.10, "threaded %.2f vs deterministic %.2f", t.decoding_mean, d.decoding_mean);
    pf_jobs_free(&j);
}

Test(sim_engine, snapshot_matches_pool)
{
    pf_jobs j;
    small_jobs(&j, 9);
    pf_sim_params p;
    small_params(&p);
    p.mode = PF_SIM_NAIVE;
    pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    pf_sim_snapshot snap;
    memset(&snap, 0, sizeof snap);
    int saw_reserved = 0;
    for (int k = 0; k < 200; k++) {
        cr_assert_geq(pf_sim_step(s), 0);
        cr_assert_eq(pf_sim_take_snapshot(s, &snap), PF_OK);
        int used = 0;
        for (int f = 0; f < snap.nframes; f++) {
            if (snap.frames[f].state != PF_FRAME_FREE) {
                used++;
                cr_assert_geq(snap.frames[f].owner, 0);
            }
            saw_reserved |= snap.frames[f].state == PF_FRAME_RESERVED;
        }
        cr_assert_eq(used, snap.stats.pool_used);
        int held = 0;
        for (int i = 0; i < snap.nseqs; i++)
            if (snap.seqs[i].state != PF_SEQ_WAITING)
                held += snap.seqs[i].frames;
        cr_assert_eq(held, used);
        cr_assert_eq(pf_sim_check(s), PF_OK);
    }
    cr_assert(saw_reserved, "naive shows its reserved-but-unused frames");
    cr_assert_gt(snap.nhistory, 0);
    cr_assert_gt(snap.nevents, 0);
    int lens[64], tables[64 * 32];
    int n = pf_sim_layout(s, 64, 32, lens, tables);
    cr_assert_gt(n, 0);
    for (int i = 0; i < n; i++) {
        int nb = (lens[i] + 15) / 16;
        cr_assert(nb >= 1 && nb <= 32);
        int owner = snap.frames[tables[i * 32]].owner;
        for (int k = 0; k < nb; k++) {
            int f = tables[i * 32 + k];
            cr_assert(f >= 0 && f < snap.nframes);
            cr_assert_eq(snap.frames[f].state, PF_FRAME_USED);
            cr_assert_eq(snap.frames[f].owner, owner);
        }
    }
    pf_sim_snapshot_free(&snap);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

Test(sim_engine, live_control_threaded_and_deterministic)
{
    pf_jobs j;
    small_jobs(&j, 13);
    for (int e = 0; e <= 1; e++) {
        pf_sim_params p;
        small_params(&p);
        p.engine = (pf_engine)e;
        p.tick_us = 200;
        pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
        cr_assert_not_null(s);
        cr_assert_eq(pf_sim_start(s), PF_OK);
        pf_sim_snapshot snap;
        memset(&snap, 0, sizeof snap);
        sleep_ms(20);
        cr_assert_eq(pf_sim_set_workers(s, 4), PF_OK);
        cr_assert_eq(pf_sim_set_watermark(s, 0.1), PF_OK);
        cr_assert_eq(pf_sim_set_policy(s, PF_VICTIM_MOST_FRAMES), PF_OK);
        cr_assert_eq(pf_sim_set_preempt(s, PF_PREEMPT_SWAP), PF_OK);
        cr_assert_eq(pf_sim_take_snapshot(s, &snap), PF_OK);
        sleep_ms(20);
        cr_assert_eq(pf_sim_set_workers(s, 24), PF_OK);
        cr_assert_eq(pf_sim_set_paused(s, 1), PF_OK);
        sleep_ms(5);
        pf_sim_stats a, b;
        pf_sim_get_stats(s, &a);
        cr_assert_eq(pf_sim_single_step(s), PF_OK);
        for (int k = 0; k < 200; k++) {
            pf_sim_get_stats(s, &b);
            if (b.step != a.step)
                break;
            sleep_ms(1);
        }
        cr_assert(b.step == a.step + 1 || b.step == 1, "single step: %lld -> %lld", (long long)a.step,
                  (long long)b.step);
        cr_assert_eq(pf_sim_set_paused(s, 0), PF_OK);
        cr_assert_eq(pf_sim_reset(s), PF_OK);
        sleep_ms(10);
        cr_assert_eq(pf_sim_stop(s), PF_OK);
        cr_assert_eq(pf_sim_check(s), PF_OK);
        pf_sim_params got;
        pf_sim_get_params(s, &got);
        cr_assert_eq(got.workers, 24);
        cr_assert_eq(got.policy, PF_VICTIM_MOST_FRAMES);
        /* After stop, a full run from scratch still finishes clean. */
        pf_sim_stats st;
        cr_assert_eq(pf_sim_run(s, &st), PF_OK);
        cr_assert_eq(st.pool_used, 0);
        pf_sim_snapshot_free(&snap);
        pf_sim_destroy(s);
    }
    pf_jobs_free(&j);
}

Test(sim_engine, bad_parameters_refused)
{
    pf_jobs j;
    small_jobs(&j, 1);
    pf_sim_params p;
    small_params(&p);
    char err[128];
    p.watermark = 1.5;
    cr_assert_null(pf_sim_create(&p, &j, err, sizeof err));
    cr_assert(strstr(err, "watermark") != NULL, "%s", err);
    small_params(&p);
    p.workers = 0;
    cr_assert_null(pf_sim_create(&p, &j, err, sizeof err));
    small_params(&p);
    p.cfg.max_seq_len = 100; /* jobs up to 512 tokens no longer fit */
    cr_assert_null(pf_sim_create(&p, &j, err, sizeof err));
    small_params(&p);
    pf_sim *s = pf_sim_create(&p, &j, err, sizeof err);
    cr_assert_not_null(s);
    cr_assert_eq(pf_sim_set_watermark(s, -0.1), PF_ERR_ARG);
    cr_assert_eq(pf_sim_set_workers(s, 5000), PF_ERR_ARG);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* Issue 8 point 1: a request that can never be admitted (here: a
 * watermark of 1 keeps the whole pool free) is aborted alone, counted, and
 * the run goes on (it used to stop as "stuck"). */
Test(sim_engine, never_admissible_requests_are_aborted)
{
    pf_jobs j;
    small_jobs(&j, 2);
    pf_sim_params p;
    small_params(&p);
    p.watermark = 1.0;
    pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    pf_sim_stats st;
    cr_assert_eq(pf_sim_run(s, &st), PF_OK);
    cr_assert(st.done);
    cr_assert_eq(st.aborted, j.njobs);
    cr_assert_eq(st.finished, 0);
    cr_assert_eq(st.livelock, 0);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* One oversized request among ordinary ones: a prompt larger than the
 * pool minus the reserve, and one longer than the whole pool. Those two
 * are aborted, the others finish, in both engines. */
Test(sim_engine, oversized_request_aborted_alone)
{
    const pf_job jobs[] = {{0, 40, 20, 0}, {0, 900, 10, 0}, {1, 30, 30, 0}, {2, 16, 2000, 0}, {3, 50, 5, 0}};
    for (int e = 0; e <= 1; e++) {
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.cfg.pool_blocks = 64;
        p.cfg.max_seq_len = 2048;
        p.workers = 4;
        p.watermark = 0.1; /* reserve 7 of 64: a prompt may take 57 frames (912 tokens) */
        p.tick_us = 0;
        p.engine = (pf_engine)e;
        const pf_job big[] = {{0, 913, 1, 0}};
        pf_sim *s = make(&p, jobs, 5);
        pf_sim_stats st;
        cr_assert_eq(pf_sim_run(s, &st), PF_OK);
        cr_assert_eq(st.finished, 4, "%s", pf_engine_name(p.engine));
        cr_assert_eq(st.aborted, 1);
        cr_assert_eq(st.tokens_generated, 20 + 10 + 30 + 5);
        cr_assert_eq(pf_sim_check(s), PF_OK);
        pf_sim_destroy(s);
        s = make(&p, big, 1);
        cr_assert_eq(pf_sim_run(s, &st), PF_OK);
        cr_assert_eq(st.aborted, 1, "913 tokens need 58 frames > 64 - 7");
        pf_sim_destroy(s);
    }
}

/* Audit regression: with one worker every finish empties the pool and the
 * slot takes the next job only in the following step; that step must not
 * be taken for "stuck" (it was: `sim --workers 1` failed with "a waiting
 * job can never be admitted"). Both modes, both engines. */
Test(sim_engine, one_worker_runs_to_completion)
{
    pf_jobs j;
    small_jobs(&j, 3);
    for (int e = 0; e <= 1; e++)
        for (int m = 0; m <= 1; m++) {
            pf_sim_params p;
            small_params(&p);
            p.workers = 1;
            p.engine = (pf_engine)e;
            p.mode = (pf_sim_mode)m;
            pf_sim_stats st;
            run_checked(&p, &j, &st);
            cr_assert_eq(st.running_peak, 1);
        }
    pf_jobs_free(&j);
}

/* Audit regression: pf_sim_step on a run that could not finish returned 0
 * forever, so `pagefault --headless` (which steps until done) hung. Steps
 * now end: jobs that can never be admitted are aborted, and single_step
 * still steps. */
Test(sim_engine, stepping_ends)
{
    pf_jobs j;
    small_jobs(&j, 2);
    pf_sim_params p;
    small_params(&p);
    p.watermark = 1.0;
    pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    int rc = 0;
    for (int k = 0; k < 10 && rc == 0; k++)
        rc = pf_sim_step(s);
    cr_assert_eq(rc, 1);
    pf_sim_stats st;
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.aborted, j.njobs);
    /* lowering the watermark and starting again: the run then finishes */
    cr_assert_eq(pf_sim_set_watermark(s, 0.0), PF_OK);
    cr_assert_eq(pf_sim_reset(s), PF_OK);
    cr_assert_eq(pf_sim_single_step(s), PF_OK);
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.step, 1);
    rc = 0;
    for (int k = 0; k < 100000 && rc != 1; k++)
        rc = pf_sim_step(s);
    cr_assert_eq(rc, 1);
    pf_sim_get_stats(s, &st);
    cr_assert_eq(st.finished, j.njobs);
    cr_assert_eq(pf_sim_check(s), PF_OK);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* ---- issue 8: the correctness pass ---------------------------------------- */

/* Issue 8 point 1, the issue's own example: a sequence that grew past
 * N - ceil(w*N) frames while running was preempted and could never be
 * readmitted (the full admission watermark was applied to its size), so
 * `sim` exited 1. A returning sequence needs only its frames to fit. */
Test(sim_engine, preempted_sequence_always_comes_back)
{
    const pf_job jobs[] = {{0, 100, 3000, 0}, {1900, 100, 1200, 0}};
    const pf_victim_policy pols[] = {PF_VICTIM_FAULTING, PF_VICTIM_MOST_FRAMES};
    for (int e = 0; e <= 1; e++)
        for (int k = 0; k < 2; k++)
            for (int pre = 0; pre < PF_PREEMPT_COUNT; pre++) {
                pf_sim_params p;
                pf_sim_params_default(&p);
                p.cfg.pool_blocks = 200;
                p.cfg.max_seq_len = 3200;
                p.workers = 2;
                p.watermark = 0.3;
                p.tick_us = 0;
                p.engine = (pf_engine)e;
                p.policy = pols[k];
                p.preempt = (pf_preempt_mode)pre;
                pf_sim *s = make(&p, jobs, 2);
                pf_sim_stats st;
                cr_assert_eq(pf_sim_run(s, &st), PF_OK, "%s/%s/%s", pf_engine_name(p.engine),
                             pf_victim_name(p.policy), pf_preempt_name(p.preempt));
                cr_assert_eq(st.finished, 2);
                cr_assert_gt(st.preemptions, 0, "the example preempts");
                cr_assert_eq(st.tokens_generated, 4200);
                cr_assert_eq(pf_sim_check(s), PF_OK);
                pf_sim_destroy(s);
            }
}

/* Issue 8 point 2: every sequence stalled for a million steps, or a
 * readmission costing a million steps a token, must not be simulated one
 * step at a time (it spun for minutes): quiet steps are skipped in one
 * jump. The run then finishes, with every token, in well under the
 * timeout (which is only a guard against a hang, not a speed target). */
Test(sim_engine, quiet_steps_are_skipped_not_spun, .timeout = 120)
{
    pf_jobs j;
    small_jobs(&j, 3);
    for (int k = 0; k < 4; k++) {
        pf_sim_params p;
        small_params(&p);
        if (k == 0)
            p.stall_limit = 1000000;
        if (k == 1)
            p.recompute_cost = 1e6;
        if (k == 2) {
            p.preempt = PF_PREEMPT_SWAP;
            p.swap_cost_per_page = 1e6;
        }
        if (k == 3) {
            p.stall_limit = 1000000;
            p.engine = PF_ENGINE_THREADED;
        }
        pf_sim_stats st;
        run_checked(&p, &j, &st);
        cr_assert_gt(st.preemptions, 0, "case %d preempts", k);
        cr_assert_gt(st.step, 1000000, "case %d: the skipped steps still count", k);
    }
    pf_jobs_free(&j);
}

/* The jump over quiet steps is exact: a run that skips them and a run
 * that takes every step one by one (the engine's own step, no skipping)
 * end with the same statistics and the same history, byte for byte. */
Test(sim_engine, skipping_quiet_steps_is_exact)
{
    pf_jobs j;
    small_jobs(&j, 6);
    for (int k = 0; k < 3; k++) {
        pf_sim_params p;
        small_params(&p);
        p.stall_limit = 200;
        if (k == 1)
            p.recompute_cost = 3.0;
        if (k == 2) {
            p.preempt = PF_PREEMPT_SWAP;
            p.swap_cost_per_page = 7.0;
            p.stall_limit = 20;
        }
        pf_sim *a = pf_sim_create(&p, &j, NULL, 0), *b = pf_sim_create(&p, &j, NULL, 0);
        cr_assert(a && b);
        pf_sim_stats sa, sb;
        cr_assert_eq(pf_sim_run(a, &sa), PF_OK);
        pthread_mutex_lock(&b->mu);
        memcpy(b->naive_memo, a->naive_memo, sizeof b->naive_memo); /* the same baseline */
        int64_t steps = 0;
        while (!b->done && !b->livelock) {
            pf_sim__det_step(b);
            steps++;
        }
        pthread_mutex_unlock(&b->mu);
        pf_sim_get_stats(b, &sb);
        cr_assert_eq(steps, sb.step);
        cr_assert_gt(sa.preemptions, 0, "case %d preempts", k);
        cr_assert_eq(memcmp(&sa, &sb, sizeof sa), 0, "case %d: steps %lld vs %lld, stalled mean %.17g vs %.17g", k,
                     (long long)sa.step, (long long)sb.step, sa.stalled_mean, sb.stalled_mean);
        pf_sim_snapshot x, y;
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        cr_assert_eq(pf_sim_take_snapshot(a, &x), PF_OK);
        cr_assert_eq(pf_sim_take_snapshot(b, &y), PF_OK);
        cr_assert_eq(x.nhistory, y.nhistory);
        cr_assert_eq(memcmp(x.hist_stalled, y.hist_stalled, sizeof x.hist_stalled), 0);
        cr_assert_eq(memcmp(x.hist_usage, y.hist_usage, sizeof x.hist_usage), 0);
        cr_assert_eq(memcmp(x.hist_decoding, y.hist_decoding, sizeof x.hist_decoding), 0);
        pf_sim_snapshot_free(&x);
        pf_sim_snapshot_free(&y);
        pf_sim_destroy(a);
        pf_sim_destroy(b);
    }
    pf_jobs_free(&j);
}

/* Issue 8 point 3: the vs-naive baseline follows the worker count. After
 * 128 -> 8 workers the dashboard showed the 128-worker baseline (0.28x
 * where a fresh run says 1.00x). */
Test(sim_engine, baseline_follows_workers)
{
    pf_jobs j;
    small_jobs(&j, 4);
    pf_sim_params p;
    small_params(&p);
    p.workers = 128;
    p.watermark = 0.05;
    pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    pf_sim_stats a, b, fresh;
    cr_assert_eq(pf_sim_run(s, &a), PF_OK);
    cr_assert_eq(pf_sim_set_workers(s, 2), PF_OK);
    cr_assert_eq(pf_sim_run(s, &b), PF_OK);
    pf_sim_destroy(s);
    p.workers = 2;
    s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    cr_assert_eq(pf_sim_run(s, &fresh), PF_OK);
    pf_sim_destroy(s);
    cr_assert_eq(b.step, fresh.step, "same run");
    cr_assert_float_eq(b.throughput_vs_naive, fresh.throughput_vs_naive, 1e-12, "after set_workers %.3f, fresh %.3f",
                       b.throughput_vs_naive, fresh.throughput_vs_naive);
    cr_assert_gt(fabs(a.throughput_vs_naive - b.throughput_vs_naive), 0.01, "the worker count matters here");
    /* also while stepping (the dashboard's headless path) */
    p.workers = 128;
    s = pf_sim_create(&p, &j, NULL, 0);
    cr_assert_not_null(s);
    cr_assert_eq(pf_sim_set_workers(s, 2), PF_OK);
    int rc = 0;
    while (rc == 0)
        rc = pf_sim_step(s);
    cr_assert_eq(rc, 1);
    pf_sim_get_stats(s, &b);
    cr_assert_float_eq(b.throughput_vs_naive, fresh.throughput_vs_naive, 1e-12);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
}

/* Issue 8 point 4: pool_peak is the pool's exact peak. A 16-token prompt
 * with one output token takes a second frame for that token and frees both
 * in the same step: the end-of-step sample never saw 2 frames. */
Test(sim_engine, pool_peak_is_exact)
{
    const pf_job jobs[] = {{0, 16, 1, 0}};
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.pool_blocks = 8;
    p.cfg.max_seq_len = 64;
    p.workers = 1;
    p.watermark = 0.0;
    pf_sim *s = make(&p, jobs, 1);
    pf_sim_stats st;
    cr_assert_eq(pf_sim_run(s, &st), PF_OK);
    cr_assert_eq(st.pool_peak, 2);
    pf_sim_destroy(s);
}

/* Issue 8 point 5: first come, first served. Job 1 (6 frames) cannot fit
 * beside job 0; job 2 (1 frame) arrives later and fits, but must not
 * overtake job 1 (each bound worker slot used to retry on its own). */
Test(sim_engine, admission_is_first_come_first_served)
{
    const pf_job jobs[] = {{0, 96, 40, 0}, {1, 96, 8, 0}, {2, 16, 8, 0}};
    for (int e = 0; e <= 1; e++) {
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.cfg.pool_blocks = 10;
        p.cfg.max_seq_len = 160;
        p.workers = 4;
        p.watermark = 0.0;
        p.stall_limit = 1000;
        p.tick_us = 0;
        p.engine = (pf_engine)e;
        pf_sim *s = make(&p, jobs, 3);
        pf_sim_stats st;
        cr_assert_eq(pf_sim_run(s, &st), PF_OK);
        pf_sim_snapshot snap;
        memset(&snap, 0, sizeof snap);
        cr_assert_eq(pf_sim_take_snapshot(s, &snap), PF_OK);
        int order[3], n = 0;
        for (int i = 0; i < snap.nevents; i++)
            if (snap.events[i].kind == PF_EV_ADMIT && n < 3)
                order[n++] = snap.events[i].seq;
        cr_assert_eq(n, 3);
        cr_assert(order[0] == 0 && order[1] == 1 && order[2] == 2, "%s: admitted %d, %d, %d",
                  pf_engine_name(p.engine), order[0], order[1], order[2]);
        cr_assert_eq(st.preemptions, 0);
        pf_sim_snapshot_free(&snap);
        pf_sim_destroy(s);
    }
}

/* Issue 8 point 9: pf_sim_stop at any moment of a threaded run returns
 * (the dashboard paused and polled before stopping, after a hang). Many
 * random moments, with controls in flight; the timeout guards a hang. */
static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
    return *x >> 33;
}

Test(sim_engine, stop_at_random_moments_never_hangs, .timeout = 240)
{
    pf_jobs j;
    small_jobs(&j, 17);
    uint64_t r = 12345;
    for (int it = 0; it < 150; it++) {
        pf_sim_params p;
        small_params(&p);
        p.engine = PF_ENGINE_THREADED;
        p.workers = 1 + (int)(lcg(&r) % 48);
        p.tick_us = (int)(lcg(&r) % 3) * 100;
        p.preempt = (pf_preempt_mode)(lcg(&r) % 2);
        pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
        cr_assert_not_null(s);
        cr_assert_eq(pf_sim_start(s), PF_OK);
        switch (lcg(&r) % 5) {
        case 0:
            pf_sim_set_workers(s, 1 + (int)(lcg(&r) % 64));
            break;
        case 1:
            pf_sim_set_paused(s, 1);
            pf_sim_single_step(s);
            break;
        case 2:
            pf_sim_reset(s);
            break;
        default:
            break;
        }
        struct timespec t = {0, (long)(lcg(&r) % 3000) * 1000L};
        nanosleep(&t, NULL);
        cr_assert_eq(pf_sim_stop(s), PF_OK);
        cr_assert_eq(pf_sim_check(s), PF_OK, "iteration %d", it);
        pf_sim_destroy(s);
    }
    pf_jobs_free(&j);
}

/* Issue 8 points 1-2, as a property: on thousands of random small
 * configurations (pool, block size, workers, watermark, victim, preemption
 * mode, stall limit, costs, host swap, arrivals), every run ends with each
 * request finished or aborted, no livelock, and the pool consistent. */
Test(sim_engine, random_configurations_always_finish)
{
    uint64_t r = 88172645463325252ULL;
    int aborts = 0, preempts = 0;
    for (int it = 0; it < 3000; it++) {
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.cfg.block_size = 1 + (int)(lcg(&r) % 16);
        p.cfg.pool_blocks = 2 + (int)(lcg(&r) % 60);
        p.cfg.max_seq_len = p.cfg.block_size * p.cfg.pool_blocks;
        if (p.cfg.max_seq_len < 2)
            p.cfg.max_seq_len = 2;
        p.workers = 1 + (int)(lcg(&r) % 12);
        p.watermark = (double)(lcg(&r) % 5) * 0.1;
        p.policy = (pf_victim_policy)(lcg(&r) % PF_VICTIM_COUNT);
        p.preempt = (pf_preempt_mode)(lcg(&r) % 2);
        p.stall_limit = lcg(&r) % 3 ? (int)(lcg(&r) % 3) : (int)(lcg(&r) % 50);
        p.recompute_cost = (double)(lcg(&r) % 4) * 0.3;
        p.swap_cost_per_page = (double)(lcg(&r) % 3) * 0.5;
        p.swap_host_blocks = (int)(lcg(&r) % 40);
        p.tick_us = 0;
        pf_job jobs[20];
        int n = 1 + (int)(lcg(&r) % 20), t = 0;
        for (int i = 0; i < n; i++) {
            t += (int)(lcg(&r) % 5);
            int tot = 2 + (int)(lcg(&r) % (uint64_t)(p.cfg.max_seq_len - 1));
            int pr = 1 + (int)(lcg(&r) % (uint64_t)(tot - 1));
            jobs[i] = (pf_job){t, pr, tot - pr, (int)(lcg(&r) % 4)};
        }
        pf_sim *s = make(&p, jobs, n);
        pf_sim_stats st;
        cr_assert_eq(pf_sim_run(s, &st), PF_OK, "configuration %d", it);
        cr_assert_eq(st.finished + st.aborted, n, "configuration %d", it);
        cr_assert_eq(st.pool_used, 0);
        cr_assert_eq(pf_sim_check(s), PF_OK);
        aborts += st.aborted > 0;
        preempts += st.preemptions > 0;
        pf_sim_destroy(s);
    }
    /* the interesting paths were taken */
    cr_assert_gt(aborts, 100);
    cr_assert_gt(preempts, 100);
}

/* A viewer that asks for the next single step as soon as the last one
 * landed (the dashboard drives a run's last steps this way) must get every
 * one, in both engines: a request made while the driver lets callers in
 * between steps used to be cleared by the step that had just run, and the
 * threaded engine then sat paused for ever. */
Test(sim_engine, single_steps_asked_back_to_back_are_never_lost)
{
    for (int e = 0; e <= 1; e++) {
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.tick_us = 200;
        p.engine = e ? PF_ENGINE_THREADED : PF_ENGINE_DETERMINISTIC;
        pf_jobs j;
        cr_assert_eq(pf_jobs_generate(&j, 42, 30, pf_mix_seed(), 0, 2048), PF_OK);
        pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
        cr_assert_not_null(s);
        cr_assert_eq(pf_sim_start(s), PF_OK);
        cr_assert_eq(pf_sim_set_paused(s, 1), PF_OK);
        pf_sim_stats st;
        pf_sim_get_stats(s, &st);
        int64_t asked = st.step;
        cr_assert_eq(pf_sim_single_step(s), PF_OK);
        struct timespec t0, now;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double waited = 0;
        while (!st.done) {
            pf_sim_get_stats(s, &st);
            if (st.step != asked) { /* it landed: ask the next at once */
                asked = st.step;
                cr_assert_eq(pf_sim_single_step(s), PF_OK);
            }
            clock_gettime(CLOCK_MONOTONIC, &now);
            waited = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
            if (waited > 60.0)
                break;
        }
        cr_assert(st.done, "engine %d: stuck at step %lld after %.0f s of single steps", e,
                  (long long)st.step, waited);
        pf_sim_stop(s);
        pf_sim_destroy(s);
        pf_jobs_free(&j);
    }
}
