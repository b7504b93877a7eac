/* tests/test_sim_sched.c - the scheduler core (sim/sched.h), rule by rule
 * on small hand-made traces. With no cost function every step lasts 1 s,
 * so times below are step counts and each expectation is worked by hand in
 * the comment above it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/sched.h"

static pf_req J(double arrival, int prompt, int output)
{
    pf_req r = {0};
    r.arrival = arrival;
    r.prompt = prompt;
    r.output = output;
    r.group = -1;
    return r;
}

static pf_req G(double arrival, int prompt, int output, int group, int shared)
{
    pf_req r = J(arrival, prompt, output);
    r.group = group;
    r.shared_tokens = shared;
    return r;
}

static pf_sched *mk(const pf_sched_params *p, const pf_req *jobs, int n, int frames)
{
    char err[200];
    pf_sched *s = pf_sched_create(p, jobs, n, frames, NULL, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    return s;
}

/* Record events for the assertions. */
typedef struct {
    int n;
    pf_sched_ev ev[4096];
    int req[4096];
    int a[4096];
    int64_t step[4096];
    pf_sched *s;
} evlog;

static void on_ev(void *ctx, pf_sched_ev e, int req, int a)
{
    evlog *l = ctx;
    if (l->n < 4096) {
        l->ev[l->n] = e;
        l->req[l->n] = req;
        l->a[l->n] = a;
        l->step[l->n] = pf_sched_steps(l->s);
        l->n++;
    }
}

/* Record s's events into l (emptied first). */
static void log_events(pf_sched *s, evlog *l)
{
    memset(l, 0, sizeof *l);
    l->s = s;
    pf_sched_on_event(s, on_ev, l);
}

static int count_ev(const evlog *l, pf_sched_ev e, int req)
{
    int c = 0;
    for (int i = 0; i < l->n; i++)
        if (l->ev[i] == e && (req < 0 || l->req[i] == req))
            c++;
    return c;
}

static pf_sched_params vllm(int block, int budget, double wm)
{
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.block_size = block;
    p.max_num_batched_tokens = budget;
    p.watermark = wm;
    return p;
}

/* n random requests from seed: arrivals gap x U(0, 1) s apart, prompts
 * in [p_lo, p_hi] and outputs in [1, o_hi] tokens; with groups, each in
 * prefix group -1..3 sharing its first 0..128 tokens. */
static void random_reqs(pf_req *j, int n, uint64_t seed, double gap, int p_lo, int p_hi, int o_hi,
                        int groups)
{
    pf_rng g;
    pf_rng_seed(&g, seed);
    double t = 0;
    for (int i = 0; i < n; i++) {
        t += pf_rng_unit(&g) * gap;
        if (groups)
            j[i] = G(t, (int)pf_rng_range(&g, p_lo, p_hi), (int)pf_rng_range(&g, 1, o_hi),
                     (int)pf_rng_range(&g, -1, 3), (int)pf_rng_range(&g, 0, 128));
        else
            j[i] = J(t, (int)pf_rng_range(&g, p_lo, p_hi), (int)pf_rng_range(&g, 1, o_hi));
    }
}

/* Three prefix groups of 48 shared tokens, 40 requests half a second
 * apart, on a 40-frame pool with caching on: sharing and eviction. */
static pf_sched *three_groups(void)
{
    pf_sched_params p = vllm(16, 64, 0.0);
    p.prefix_caching = 1;
    pf_req j[40];
    for (int i = 0; i < 40; i++)
        j[i] = G(i * 0.5, 80 + (i % 5) * 10, 20 + (i % 7) * 9, i % 3, 48);
    return mk(&p, j, 40, 40);
}

/* Prompt 100 with a budget of 32: chunks 32, 32, 32, 4; the last chunk
 * samples the first token at the end of step 4; two decode steps follow. */
Test(sim_sched, chunked_prefill_within_the_budget)
{
    pf_sched_params p = vllm(16, 32, 0.0);
    pf_req j[1] = {J(0, 100, 3)};
    pf_sched *s = mk(&p, j, 1, 64);
    int64_t chunks[4] = {32, 32, 32, 4};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(pf_sched_step(s), 0);
        cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, chunks[k], "step %d", k + 1);
        cr_assert_eq(pf_sched_req(s, 0)->nframes, (int)((32 * k + chunks[k] + 15) / 16));
    }
    cr_assert_float_eq(pf_sched_req(s, 0)->t_first_token, 4.0, 1e-12);
    cr_assert_eq(pf_sched_req(s, 0)->generated, 1);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_last_batch(s)->work.decode_tokens, 1);
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, 0);
    cr_assert_eq(pf_sched_step(s), 1);
    cr_assert_float_eq(pf_sched_req(s, 0)->t_done, 6.0, 1e-12);
    cr_assert_eq(pf_pool_used_count(pf_sched_pool(s)), 0, "finished: every frame back");
    /* vLLM's metrics: TTFT 4 s, queue 0 s, e2e 6 s, two 1 s token gaps */
    pf_metrics m;
    cr_assert_eq(pf_sched_metrics(s, &m), PF_OK);
    pf_metrics_summary sum;
    pf_metrics_summarize(&m, 0, &sum);
    cr_assert_eq(sum.requests, 1);
    cr_assert_float_eq(sum.lat[PF_MET_TTFT].p50, 4.0, 4.0 / 256);
    cr_assert_float_eq(sum.lat[PF_MET_QUEUE].max, 0.0, 1e-12);
    cr_assert_float_eq(sum.lat[PF_MET_E2E].p50, 6.0, 6.0 / 256);
    cr_assert_eq(sum.lat[PF_MET_ITL].count, 2);
    cr_assert_float_eq(sum.lat[PF_MET_ITL].mean, 1.0, 1e-9);
    pf_sched_destroy(s);
}

/* Running requests are served before waiting ones, and the budget is
 * shared: 20 + 12 in step 1 (the second prompt chunked), then 1 decode +
 * the second's remaining 8. */
Test(sim_sched, budget_running_first_then_waiting)
{
    pf_sched_params p = vllm(16, 32, 0.0);
    pf_req j[2] = {J(0, 20, 5), J(0, 20, 5)};
    pf_sched *s = mk(&p, j, 2, 64);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_req(s, 0)->computed, 20);
    cr_assert_eq(pf_sched_req(s, 1)->computed, 12);
    cr_assert_eq(pf_sched_req(s, 0)->generated, 1);
    cr_assert_eq(pf_sched_req(s, 1)->generated, 0);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_last_batch(s)->work.decode_tokens, 1);
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, 8);
    cr_assert_eq(pf_sched_req(s, 1)->generated, 1);
    cr_assert_float_eq(pf_sched_req(s, 1)->t_first_token, 2.0, 1e-12);
    pf_sched_destroy(s);
}

/* A cap of one running request: the second waits until the first ends. */
Test(sim_sched, max_num_seqs_caps_the_batch)
{
    pf_sched_params p = vllm(16, 1000, 0.0);
    p.max_num_seqs = 1;
    pf_req j[2] = {J(0, 10, 3), J(0, 10, 3)};
    pf_sched *s = mk(&p, j, 2, 64);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    /* first: steps 1-3; second admitted in step 4 (after the finish frees
     * the slot at the end of step 3), done at the end of step 6 */
    cr_assert_float_eq(pf_sched_req(s, 0)->t_done, 3.0, 1e-12);
    cr_assert_float_eq(pf_sched_req(s, 1)->t_first_sched, 3.0, 1e-12);
    cr_assert_float_eq(pf_sched_req(s, 1)->t_done, 6.0, 1e-12);
    pf_sched_destroy(s);
}

/* Pool of 4 frames of 4 tokens, two requests of prompt 4 and output 8
 * (3 frames each at the end): when the older needs its third frame and
 * none is free, the newest running request (the other) is preempted at
 * once, frees its frames, and is prefilled again (prompt + the tokens it
 * had generated) when it comes back. No admission in that step. */
Test(sim_sched, newest_preempted_and_recomputed)
{
    pf_sched_params p = vllm(4, 1000, 0.0);
    pf_req j[2] = {J(0, 4, 8), J(0, 4, 8)};
    pf_sched *s = mk(&p, j, 2, 4);
    evlog l;
    log_events(s, &l);
    /* after step k each has generated k tokens and computed 3 + k.
     * step 1: both prefill 4 (1 frame each) and sample.
     * step 2: each computes token 5 -> second frame each: pool full.
     * steps 3-5: tokens 6, 7, 8 land in frame 2.
     * step 6: each wants token 9 -> third frame: r0 first, none free ->
     *         r1 (newest, 5 generated) preempted; r0 takes a frame. */
    int preempt_step = -1;
    for (int k = 1; k <= 6; k++) {
        cr_assert_eq(pf_sched_step(s), 0);
        if (count_ev(&l, PF_SCHED_EV_PREEMPT, 1) && preempt_step < 0)
            preempt_step = k;
    }
    cr_assert_eq(preempt_step, 6);
    cr_assert_eq(count_ev(&l, PF_SCHED_EV_PREEMPT, 0), 0, "the older request is never the victim");
    const pf_req *r1 = pf_sched_req(s, 1);
    cr_assert_eq(r1->state, PF_REQ_WAITING);
    cr_assert_eq(r1->computed, 0);
    cr_assert_eq(r1->generated, 5, "generated tokens are kept");
    cr_assert_eq(r1->nframes, 0);
    cr_assert_eq(pf_sched_req(s, 0)->nframes, 3);
    cr_assert_eq(pf_sched_running(s), 1);
    /* step 7: r0 decodes; r1 needs ceil(9/4) = 3 frames, 1 is free: waits */
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_req(s, 1)->state, PF_REQ_WAITING);
    /* r0 finishes at step 8 (8 outputs: tokens sampled at 1..8); its 3
     * frames free up; step 9 readmits r1 and prefills 4 + 5 tokens */
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_DONE);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, 9);
    cr_assert_eq(pf_sched_last_batch(s)->recompute_tokens, 8,
                 "the 8 tokens it had in KV are computed again; the 9th is new work");
    cr_assert_eq(pf_sched_run(s), PF_OK);
    cr_assert_eq(pf_sched_req(s, 1)->generated, 8);
    cr_assert_eq(pf_sched_check(s), PF_OK);
    pf_sched_destroy(s);
}

/* FCFS: a head that cannot be admitted blocks a small request behind it. */
Test(sim_sched, fcfs_head_blocks_the_queue)
{
    pf_sched_params p = vllm(16, 100000, 0.0);
    /* r0 holds 6 of 8 frames while it runs; r1 needs 4 (blocked); r2 needs
     * 1 and would fit, but must not overtake r1 */
    pf_req j[3] = {J(0, 96, 20), J(0.5, 64, 2), J(0.5, 10, 2)};
    pf_sched *s = mk(&p, j, 3, 8);
    cr_assert_eq(pf_sched_step(s), 0); /* t 0 -> 1: r0 admitted */
    for (int k = 0; k < 5; k++) {
        cr_assert_eq(pf_sched_step(s), 0);
        cr_assert_eq(pf_sched_req(s, 2)->state, PF_REQ_WAITING, "r2 must wait behind r1");
    }
    cr_assert_eq(pf_sched_run(s), PF_OK);
    cr_assert(pf_sched_req(s, 1)->t_first_sched <= pf_sched_req(s, 2)->t_first_sched);
    pf_sched_destroy(s);
}

/* The watermark gates new requests only: with w = 0.5 of 8 frames (4
 * reserved) a 5-frame prompt can never be admitted and is aborted alone;
 * the rest of the run goes on. */
Test(sim_sched, never_admissible_head_is_aborted_alone)
{
    pf_sched_params p = vllm(16, 100000, 0.5);
    pf_req j[3] = {J(0, 16, 2), J(0, 80, 2), J(0, 16, 2)};
    pf_sched *s = mk(&p, j, 3, 8);
    evlog l;
    log_events(s, &l);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    cr_assert_eq(pf_sched_req(s, 1)->state, PF_REQ_ABORTED);
    cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_DONE);
    cr_assert_eq(pf_sched_req(s, 2)->state, PF_REQ_DONE);
    cr_assert_eq(count_ev(&l, PF_SCHED_EV_ABORT, -1), 1);
    pf_sched_destroy(s);
}

/* Audit regression (off by one at pool exhaustion): a request holds at most
 * prompt + output - 1 tokens of KV, since its last token is sampled and
 * never computed. Pool of 4 frames of 4 tokens: prompt 15 + output 2 peaks
 * at 16 tokens, exactly the pool, and must run (it was aborted as if it
 * needed 17); prompt 15 + output 3 peaks at 17 and can never fit. Both
 * rule sets, both preemption modes. */
Test(sim_sched, request_filling_the_pool_exactly_runs)
{
    for (int r = 0; r < PF_SCHED_COUNT; r++)
        for (int m = 0; m < PF_PREEMPT_COUNT; m++) {
            pf_sched_params p = vllm(4, 1000, 0.0);
            p.rules = r;
            p.preempt = m;
            pf_req fits[1] = {J(0, 15, 2)};
            pf_sched *s = mk(&p, fits, 1, 4);
            cr_assert_eq(pf_sched_run(s), PF_OK);
            cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_DONE, "rules %d mode %d", r, m);
            cr_assert_eq(pf_sched_req(s, 0)->generated, 2);
            cr_assert_eq(pf_pool_peak(pf_sched_pool(s)), 4, "it used the whole pool");
            cr_assert_eq(pf_pool_used_count(pf_sched_pool(s)), 0);
            pf_sched_destroy(s);
            pf_req big[1] = {J(0, 15, 3)};
            s = mk(&p, big, 1, 4);
            cr_assert_eq(pf_sched_run(s), PF_OK);
            cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_ABORTED, "17 tokens > 16 slots");
            pf_sched_destroy(s);
        }
}

/* Audit regression (overflow on large flags): the seed's rules have no
 * token budget, but it was INT_MAX tokens, so a step of more than 2^31
 * prompt tokens (a large pool of large blocks) left the rest waiting. 300
 * one-token requests of 2^23-token prompts in 2^16 frames of 65,536
 * tokens: all fit the pool, so all run in the first step (2.5e9 tokens). */
Test(sim_sched, seed_rules_budget_never_runs_out)
{
    pf_sched_params p = vllm(65536, 8192, 0.0);
    p.rules = PF_SCHED_SEED;
    p.max_seq_len = 1 << 24;
    enum { N = 300 };
    static pf_req j[N];
    for (int i = 0; i < N; i++)
        j[i] = J(0, 1 << 23, 1);
    pf_sched *s = mk(&p, j, N, 1 << 16);
    cr_assert_eq(pf_sched_plan(s), 0);
    cr_assert_eq(pf_sched_running(s), N, "every request admitted in the first step");
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, (int64_t)N << 23);
    pf_sched_land(s, 0);
    cr_assert_eq(pf_sched_commit(s), 1, "and finished in it");
    cr_assert_eq(pf_sched_tokens(s), N);
    pf_sched_destroy(s);
}

/* Issue 8's lock-out: a request preempted after growing past N - reserve
 * must come back (returning requests need only the frames). Pool 200
 * frames of 16, watermark 0.3 (60 reserved): r0 grows to ~194 frames, r1
 * arrives and runs; whichever is preempted must still finish. */
static void lockout_case(pf_sched_rules rules, pf_victim_policy v, pf_preempt_mode how)
{
    pf_sched_params p = vllm(16, 8192, 0.3);
    p.rules = rules;
    p.victim = v;
    p.preempt = how;
    p.max_seq_len = 3200;
    p.stall_limit = 4;
    pf_req j[2] = {J(0, 100, 3000), J(1900, 100, 1200)};
    pf_sched *s = mk(&p, j, 2, 200);
    int rc = pf_sched_run(s);
    cr_assert_eq(rc, PF_OK, "rules %d victim %d mode %d", rules, v, how);
    cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_DONE);
    cr_assert_eq(pf_sched_req(s, 1)->state, PF_REQ_DONE);
    cr_assert_eq(pf_sched_check(s), PF_OK);
    pf_sched_destroy(s);
}

Test(sim_sched, preempted_request_always_comes_back)
{
    for (int r = 0; r < PF_SCHED_COUNT; r++)
        for (int m = 0; m < PF_PREEMPT_COUNT; m++) {
            lockout_case(r, PF_VICTIM_FAULTING, m);
            lockout_case(r, PF_VICTIM_MOST_FRAMES, m);
            lockout_case(r, PF_VICTIM_NEWEST, m);
        }
}

/* Seed rules: a faulting request stalls up to stall_limit steps before a
 * victim is preempted; with a huge limit the stalled steps are taken in one
 * jump, not one by one. */
Test(sim_sched, seed_rules_stall_then_preempt_in_one_jump)
{
    pf_sched_params p = vllm(4, 1, 0.0);
    p.rules = PF_SCHED_SEED;
    p.victim = PF_VICTIM_FAULTING;
    p.stall_limit = 1000000;
    pf_req j[2] = {J(0, 4, 8), J(0, 4, 8)};
    pf_sched *s = mk(&p, j, 2, 4);
    evlog l;
    log_events(s, &l);
    int calls = 0;
    while (pf_sched_step(s) == 0)
        calls++;
    cr_assert_lt(calls, 100, "stalls skipped in one jump (%d calls)", calls);
    cr_assert_gt(pf_sched_steps(s), 1000000, "the stalled steps still count");
    cr_assert_geq(count_ev(&l, PF_SCHED_EV_STALL, -1), 1);
    cr_assert_geq(count_ev(&l, PF_SCHED_EV_PREEMPT, -1), 1);
    cr_assert_eq(pf_sched_req(s, 0)->state, PF_REQ_DONE);
    cr_assert_eq(pf_sched_req(s, 1)->state, PF_REQ_DONE);
    pf_sched_destroy(s);
}

/* Swap keeps the computed KV: the victim comes back with its frames copied
 * in, and nothing is recomputed. */
Test(sim_sched, swap_brings_the_kv_back)
{
    pf_sched_params p = vllm(4, 1000, 0.0);
    p.preempt = PF_PREEMPT_SWAP;
    pf_req j[2] = {J(0, 4, 8), J(0, 4, 8)};
    pf_sched *s = mk(&p, j, 2, 4);
    evlog l;
    log_events(s, &l);
    int64_t recomputed = 0, swapped_in = 0;
    int rc;
    while ((rc = pf_sched_step(s)) == 0) {
        recomputed += pf_sched_last_batch(s)->recompute_tokens;
        swapped_in += pf_sched_last_batch(s)->swap_in_frames;
        cr_assert_eq(pf_sched_check(s), PF_OK);
    }
    cr_assert_eq(rc, 1);
    cr_assert_eq(count_ev(&l, PF_SCHED_EV_SWAP_OUT, 1), 1);
    cr_assert_eq(count_ev(&l, PF_SCHED_EV_SWAP_IN, 1), 1);
    cr_assert_eq(recomputed, 0);
    cr_assert_eq(swapped_in, 2);
    pf_sched_destroy(s);
}

Test(sim_sched, naive_reservations)
{
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_MAX, 100, 2048), 2048);
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_POW2, 100, 2048), 128);
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_POW2, 128, 2048), 128);
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_POW2, 1500, 2048), 2048);
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_POW2, 1500, 1800), 1800, "capped at max-len");
    cr_assert_eq(pf_sched_naive_tokens(PF_RESERVE_ORACLE, 100, 2048), 100);

    /* naive max: 8 frames of 16 hold two 64-token reservations at once */
    pf_sched_params p = vllm(16, 100000, 0.0);
    p.paged = 0;
    p.max_seq_len = 64;
    pf_req j[4] = {J(0, 10, 5), J(0, 10, 5), J(0, 10, 5), J(0, 10, 5)};
    pf_sched *s = mk(&p, j, 4, 8);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_running(s), 2);
    cr_assert_eq(pf_pool_used_count(pf_sched_pool(s)), 8);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    pf_sched_destroy(s);
}

/* Random traces under every rule set, victim and preemption mode: the
 * state stays consistent after every step, every request ends, no frame
 * leaks, and the same inputs give the same times. */
Test(sim_sched, random_runs_consistent_and_deterministic)
{
    enum { N = 60 };
    pf_req j[N];
    random_reqs(j, N, 7, 3.0, 1, 200, 300, 0);
    for (int r = 0; r < PF_SCHED_COUNT; r++)
        for (int v = 0; v < PF_VICTIM_COUNT; v++)
            for (int m = 0; m < PF_PREEMPT_COUNT; m++) {
                pf_sched_params p = vllm(16, 64, 0.02);
                p.rules = r;
                p.victim = v;
                p.preempt = m;
                p.swap_host_blocks = 8;
                p.max_seq_len = 512;
                double done[2][N];
                for (int rep = 0; rep < 2; rep++) {
                    pf_sched *s = mk(&p, j, N, 40);
                    int rc;
                    int guard = 0;
                    while ((rc = pf_sched_step(s)) == 0 && guard++ < 1000000)
                        cr_assert_eq(pf_sched_check(s), PF_OK);
                    cr_assert_eq(rc, 1, "rules %d victim %d mode %d", r, v, m);
                    cr_assert_eq(pf_pool_used_count(pf_sched_pool(s)), 0);
                    for (int i = 0; i < N; i++) {
                        const pf_req *q = pf_sched_req(s, i);
                        cr_assert(q->state == PF_REQ_DONE || q->state == PF_REQ_ABORTED);
                        done[rep][i] = q->t_done;
                    }
                    pf_sched_destroy(s);
                }
                for (int i = 0; i < N; i++)
                    cr_assert_eq(done[0][i], done[1][i]);
            }
}

Test(sim_sched, bad_input_is_refused)
{
    pf_sched_params p = vllm(16, 32, 0.0);
    char err[200];
    pf_req j[2] = {J(1, 10, 10), J(0, 10, 10)};
    cr_assert_null(pf_sched_create(&p, j, 2, 8, NULL, NULL, err, sizeof err), "unsorted");
    j[0] = J(0, 0, 10);
    cr_assert_null(pf_sched_create(&p, j, 1, 8, NULL, NULL, err, sizeof err), "empty prompt");
    j[0] = J(0, 10, 10);
    p.max_num_batched_tokens = 0;
    cr_assert_null(pf_sched_create(&p, j, 1, 8, NULL, NULL, err, sizeof err));
    cr_assert(err[0] != '\0');
}

/* The fast plan and the landing shards change nothing: a run walking every
 * step, a run taking the fast plan, and a run landing 7 shards in reverse
 * order give the same times, tokens and events. */
typedef struct {
    double t_done[300], t_first[300];
    int preempt[300];
    uint64_t itl_count;
    double itl_sum;
    int nev;
    uint32_t evhash;
    int64_t steps, fast;
} outcome;

static void hash_ev(void *ctx, pf_sched_ev e, int req, int a)
{
    outcome *o = ctx;
    o->evhash = o->evhash * 2654435761u + (uint32_t)e * 131u + (uint32_t)req * 7u + (uint32_t)a;
    o->nev++;
}

static void run_variant(const pf_sched_params *p, const pf_req *j, int n, int shards, int reverse,
                        outcome *o)
{
    memset(o, 0, sizeof *o);
    pf_sched *s = mk(p, j, n, 300);
    pf_sched_on_event(s, hash_ev, o);
    cr_assert_eq(pf_sched_set_shards(s, shards), PF_OK);
    int rc;
    while ((rc = pf_sched_plan(s)) == 0) {
        for (int k = 0; k < shards; k++)
            pf_sched_land(s, reverse ? shards - 1 - k : k);
        rc = pf_sched_commit(s);
        cr_assert_geq(rc, 0);
        cr_assert_eq(pf_sched_check(s), PF_OK);
        if (rc == 1)
            break;
    }
    cr_assert_eq(rc, 1);
    for (int i = 0; i < n; i++) {
        o->t_done[i] = pf_sched_req(s, i)->t_done;
        o->t_first[i] = pf_sched_req(s, i)->t_first_token;
        o->preempt[i] = pf_sched_req(s, i)->preemptions;
    }
    o->steps = pf_sched_steps(s);
    o->fast = pf_sched_fast_steps(s);
    static pf_metrics m;
    cr_assert_eq(pf_sched_metrics(s, &m), PF_OK);
    o->itl_count = m.lat[PF_MET_ITL].count;
    o->itl_sum = m.lat[PF_MET_ITL].sum;
    pf_sched_destroy(s);
}

Test(sim_sched, fast_plan_and_shards_change_nothing)
{
    enum { N = 300 };
    static pf_req j[N];
    random_reqs(j, N, 11, 0.5, 1, 300, 400, 0);
    for (int r = 0; r < PF_SCHED_COUNT; r++)
        for (int v = 0; v < PF_VICTIM_COUNT; v += 2) {
            pf_sched_params p = vllm(16, 512, 0.01);
            p.rules = r;
            p.victim = v;
            p.max_seq_len = 1024;
            p.max_num_seqs = 64;
            static outcome walk, fast, sharded;
            p.always_walk = 1;
            run_variant(&p, j, N, 1, 0, &walk);
            p.always_walk = 0;
            run_variant(&p, j, N, 1, 0, &fast);
            run_variant(&p, j, N, 7, 1, &sharded);
            cr_assert_eq(walk.fast, 0);
            cr_assert_gt(fast.fast, fast.steps / 4, "rules %d: the fast plan applies often (%lld of %lld)",
                         r, (long long)fast.fast, (long long)fast.steps);
            for (int i = 0; i < N; i++) {
                cr_assert_eq(walk.t_done[i], fast.t_done[i], "rules %d victim %d req %d", r, v, i);
                cr_assert_eq(walk.t_first[i], fast.t_first[i]);
                cr_assert_eq(walk.preempt[i], fast.preempt[i]);
                cr_assert_eq(fast.t_done[i], sharded.t_done[i]);
            }
            cr_assert_eq(walk.steps, fast.steps);
            cr_assert_eq(fast.evhash, sharded.evhash, "events in the same order");
            cr_assert_eq(walk.itl_count, sharded.itl_count);
            cr_assert_float_eq(walk.itl_sum, sharded.itl_sum, 1e-6 * walk.itl_sum);
            cr_assert_eq(fast.nev, sharded.nev);
        }
}

/* Prefix caching: a request whose system prompt (64 tokens = 4 blocks) is
 * already cached computes only the rest of its prompt, and the hit counters
 * say so in tokens (vLLM's prefix_cache_queries / _hits). */
Test(sim_sched, prefix_hits_skip_the_cached_blocks)
{
    pf_sched_params p = vllm(16, 1000, 0.0);
    p.prefix_caching = 1;
    /* r0 runs alone (done at t = 3); r1 arrives at 10: 4 blocks cached */
    pf_req j[2] = {G(0, 100, 3, 7, 64), G(10, 100, 3, 7, 64)};
    pf_sched *s = mk(&p, j, 2, 64);
    cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, 100);
    while (pf_sched_req(s, 0)->state != PF_REQ_DONE)
        cr_assert_eq(pf_sched_step(s), 0);
    cr_assert_eq(pf_sched_check(s), PF_OK);
    pf_prefix_stats st;
    pf_sched_prefix_stats(s, &st);
    cr_assert_eq(st.cached, 6, "blocks 0-5 of r0 (96 tokens + 2 decoded = 102 computed)");
    cr_assert_eq(st.evictable, 6, "r0 is done: nobody references them");
    cr_assert_eq(pf_pool_used_count(pf_sched_pool(s)), 6, "cached blocks stay in the pool");
    cr_assert_eq(pf_sched_step(s), 0); /* r1 admitted at t = 10 */
    cr_assert_eq(pf_sched_last_batch(s)->work.prefill_tokens, 100 - 64,
                 "only the tokens after the shared 64 are computed");
    pf_sched_prefix_stats(s, &st);
    cr_assert_eq(st.queries, 200);
    cr_assert_eq(st.hits, 64);
    cr_assert_eq(st.evictable, 2, "r1 holds the 4 shared blocks");
    cr_assert_eq(pf_sched_check(s), PF_OK);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    pf_sched_destroy(s);
}

/* Two requests of one group running at once share frames: the pool counts
 * both as holders; when the pool runs short the idle cached blocks are
 * evicted, least recently released first, and everything stays consistent. */
Test(sim_sched, prefix_sharing_and_eviction)
{
    pf_sched *s = three_groups();
    int shared_seen = 0, rc;
    while ((rc = pf_sched_step(s)) == 0) {
        cr_assert_eq(pf_sched_check(s), PF_OK);
        for (int f = 0; f < 40; f++)
            shared_seen |= pf_pool_refcount(pf_sched_pool(s), f) > 1;
    }
    cr_assert_eq(rc, 1);
    cr_assert(shared_seen, "some frame had two holders at once");
    pf_prefix_stats st;
    pf_sched_prefix_stats(s, &st);
    cr_assert_gt(st.hits, 0);
    cr_assert_gt(st.evictions, 0, "a 40-frame pool must evict");
    cr_assert_eq(pf_sched_check(s), PF_OK);
    pf_sched_destroy(s);
}

/* Block events: every stored block names its parent (the chain), and a
 * removed block was stored before and not removed since. */
typedef struct {
    int stored, removed, bad;
    uint64_t live[4096];
    int nlive;
} blocklog;

static void on_block(void *ctx, const pf_sched_block_event *e)
{
    blocklog *l = ctx;
    if (e->kind == PF_SCHED_BLOCK_STORED) {
        l->stored++;
        if (e->block == 0 && e->parent != PF_PREFIX_ROOT_HASH)
            l->bad++;
        if (l->nlive < 4096)
            l->live[l->nlive++] = e->hash;
        return;
    }
    l->removed++;
    for (int i = 0; i < l->nlive; i++)
        if (l->live[i] == e->hash) {
            l->live[i] = l->live[--l->nlive];
            return;
        }
    l->bad++; /* removed a block that was never stored (or twice) */
}

Test(sim_sched, block_events_pair_up)
{
    pf_sched *s = three_groups();
    static blocklog l;
    memset(&l, 0, sizeof l);
    pf_sched_on_block(s, on_block, &l);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    pf_prefix_stats st;
    pf_sched_prefix_stats(s, &st);
    cr_assert_eq(l.bad, 0);
    cr_assert_eq(l.stored, st.inserts);
    cr_assert_eq(l.removed, st.evictions);
    cr_assert_eq(l.nlive, st.cached, "stored - removed = what the cache holds");
    pf_sched_destroy(s);
}

/* Random traces with prefix groups, every rule set and victim, walking or
 * fast, one shard or seven: consistent after every step, same outcome. */
Test(sim_sched, prefix_random_runs_agree)
{
    enum { N = 200 };
    static pf_req j[N];
    random_reqs(j, N, 21, 0.5, 20, 300, 200, 1);
    for (int r = 0; r < PF_SCHED_COUNT; r++)
        for (int m = 0; m < PF_PREEMPT_COUNT; m++) {
            pf_sched_params p = vllm(16, 256, 0.01);
            p.rules = r;
            p.preempt = m;
            p.swap_host_blocks = 20;
            p.prefix_caching = 1;
            p.max_seq_len = 600;
            static outcome walk, sharded;
            p.always_walk = 1;
            run_variant(&p, j, N, 1, 0, &walk);
            p.always_walk = 0;
            run_variant(&p, j, N, 7, 1, &sharded);
            for (int i = 0; i < N; i++)
                cr_assert_eq(walk.t_done[i], sharded.t_done[i], "rules %d mode %d req %d", r, m, i);
            cr_assert_eq(walk.evhash, sharded.evhash);
        }
}

/* Seed rules skip the steps in which every running request stalls alike,
 * stopping short of the next arrival. Two requests of 4 + 3 tokens fill 2
 * frames of 4 and stall from t = 1 (one step = 1 s without a cost model);
 * a third, too large for the pool, arrives at t = 3 and is aborted as it
 * arrives: at step 3, t = 3, as stepping one by one has it. The skip took
 * floor((3 - 1) / 1) = 2 steps and aborted it at step 4, t = 4. */
typedef struct {
    pf_sched *s;
    int64_t step;
    double t;
} abort_seen;

static void note_abort(void *ctx, pf_sched_ev e, int req, int arg)
{
    (void)req;
    (void)arg;
    abort_seen *a = ctx;
    if (e == PF_SCHED_EV_ABORT) {
        a->step = pf_sched_steps(a->s);
        a->t = pf_sched_now(a->s);
    }
}

Test(sim_sched, skipped_stalls_stop_before_an_arrival_at_a_whole_step)
{
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.rules = PF_SCHED_SEED;
    p.block_size = 4;
    p.max_seq_len = 64;
    p.watermark = 0;
    p.stall_limit = 4;
    pf_req j[3];
    memset(j, 0, sizeof j);
    j[0] = (pf_req){.arrival = 0, .prompt = 4, .output = 3, .group = -1};
    j[1] = (pf_req){.arrival = 0, .prompt = 4, .output = 3, .group = -1};
    j[2] = (pf_req){.arrival = 3, .prompt = 30, .output = 2, .group = -1};
    char err[128];
    pf_sched *s = pf_sched_create(&p, j, 3, 2, NULL, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    abort_seen a = {s, -1, -1};
    pf_sched_on_event(s, note_abort, &a);
    int rc;
    while ((rc = pf_sched_step(s)) == 0)
        ;
    cr_assert_eq(rc, 1);
    cr_expect_eq(a.step, 3, "aborted at step %lld", (long long)a.step);
    cr_expect_eq(a.t, 3.0, "aborted at t = %g", a.t);
    cr_expect_eq(pf_sched_check(s), PF_OK);
    pf_sched_destroy(s);
}
