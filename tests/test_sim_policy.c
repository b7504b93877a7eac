/* tests/test_sim_policy.c - the scheduler's decision functions
 * (sim/policy.h), each rule on its own. */
#include <criterion/criterion.h>

#include "sim/policy.h"

static pf_victim_cand C(int id, int gen, int frames, int prio, int order)
{
    pf_victim_cand c = {id, gen, frames, prio, order};
    return c;
}

Test(sim_policy, admit_frames_naive_reserves_max_paged_the_tokens)
{
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.mode = PF_SIM_PAGED;
    cr_assert_eq(pf_policy_admit_frames(&p, 1), 1);
    cr_assert_eq(pf_policy_admit_frames(&p, 16), 1);
    cr_assert_eq(pf_policy_admit_frames(&p, 17), 2);
    cr_assert_eq(pf_policy_admit_frames(&p, 2048), 128);
    p.watermark = 0.3;
    cr_assert_float_eq(pf_policy_admit_watermark(&p, 0), 0.3, 1e-12);
    /* a returning (preempted) sequence needs only its frames */
    cr_assert_float_eq(pf_policy_admit_watermark(&p, 1), 0.0, 1e-12);
    p.mode = PF_SIM_NAIVE;
    cr_assert_eq(pf_policy_admit_frames(&p, 1), 128);
    cr_assert_eq(pf_policy_admit_frames(&p, 17), 128);
    cr_assert_float_eq(pf_policy_admit_watermark(&p, 0), 0.0, 1e-12);
}

/* Issue 8 point 1: which requests can never be admitted (vLLM's
 * AllocStatus.NEVER), with the reserve from pf_pool_reserve_for. */
Test(sim_policy, never_fits)
{
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.pool_blocks = 100;
    p.cfg.block_size = 16;
    p.cfg.max_seq_len = 4096;
    p.watermark = 0.07; /* reserve 7 frames (the pool's tolerance: not 8) */
    pf_job fits = {0, 93 * 16, 1, 0};     /* 93 prompt frames + 1 for the token: 94 <= 100 */
    pf_job too_big = {0, 93 * 16 + 1, 1, 0}; /* 94 prompt frames > 100 - 7 */
    pf_job longer_than_pool = {0, 16, 100 * 16, 0}; /* 101 frames in all */
    cr_assert_not(pf_policy_never_fits(&p, &fits));
    cr_assert(pf_policy_never_fits(&p, &too_big));
    cr_assert(pf_policy_never_fits(&p, &longer_than_pool));
    p.watermark = 0.0;
    cr_assert_not(pf_policy_never_fits(&p, &too_big));
    p.watermark = 1.0;
    cr_assert(pf_policy_never_fits(&p, &fits));
    /* naive: its reservation is checked once, at create */
    p.mode = PF_SIM_NAIVE;
    cr_assert_not(pf_policy_never_fits(&p, &fits));
}

Test(sim_policy, fault_waits_then_preempts)
{
    cr_assert_eq(pf_policy_on_fault(1, 0), PF_FAULT_PREEMPT);
    cr_assert_eq(pf_policy_on_fault(1, 4), PF_FAULT_WAIT);
    cr_assert_eq(pf_policy_on_fault(4, 4), PF_FAULT_WAIT);
    cr_assert_eq(pf_policy_on_fault(5, 4), PF_FAULT_PREEMPT);
}

Test(sim_policy, victims)
{
    /* id, generated, frames, priority, admit order */
    pf_victim_cand c[4] = {C(10, 50, 9, 2, 1), C(11, 5, 30, 0, 7), C(12, 200, 3, 3, 4),
                           C(13, 5, 12, 1, 9)};
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_FAULTING, c, 4, 2), 2);
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_NEWEST, c, 4, 2), 3);
    /* fewest generated: 11 and 13 tie at 5, the newer (13) goes */
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_FEWEST_GENERATED, c, 4, 2), 3);
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_MOST_FRAMES, c, 4, 2), 1);
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_LOWEST_PRIORITY, c, 4, 2), 1);
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_NEWEST, c, 0, -1), -1);
    /* faulting but the faulting one is not a candidate: fall back to newest */
    cr_assert_eq(pf_policy_pick_victim(PF_VICTIM_FAULTING, c, 4, -1), 3);
}

Test(sim_policy, swap_only_when_the_host_has_room)
{
    cr_assert_eq(pf_policy_preempt_how(PF_PREEMPT_SWAP, 10, 10), PF_PREEMPT_SWAP);
    cr_assert_eq(pf_policy_preempt_how(PF_PREEMPT_SWAP, 9, 10), PF_PREEMPT_RECOMPUTE);
    cr_assert_eq(pf_policy_preempt_how(PF_PREEMPT_RECOMPUTE, 100, 10), PF_PREEMPT_RECOMPUTE);
}

Test(sim_policy, livelock_bound)
{
    cr_assert_not(pf_policy_livelocked(0, 0));
    cr_assert_not(pf_policy_livelocked(16, 0));
    cr_assert(pf_policy_livelocked(17, 0));
    cr_assert_not(pf_policy_livelocked(4 * 100 + 16, 100));
    cr_assert(pf_policy_livelocked(4 * 100 + 17, 100));
}

Test(sim_policy, cost_steps_round_up)
{
    cr_assert_eq(pf_policy_cost_steps(100, 0.25), 25);
    cr_assert_eq(pf_policy_cost_steps(101, 0.25), 26);
    cr_assert_eq(pf_policy_cost_steps(1, 0.01), 1);
    cr_assert_eq(pf_policy_cost_steps(100, 0.0), 0);
    cr_assert_eq(pf_policy_cost_steps(0, 3.0), 0);
}

Test(sim_policy, names)
{
    cr_assert_str_eq(pf_victim_name(PF_VICTIM_NEWEST), "newest");
    cr_assert_str_eq(pf_victim_name(PF_VICTIM_LOWEST_PRIORITY), "lowest-priority");
    cr_assert_str_eq(pf_preempt_name(PF_PREEMPT_SWAP), "swap");
    cr_assert_str_eq(pf_engine_name(PF_ENGINE_THREADED), "threaded");
    cr_assert_str_eq(pf_sim_mode_name(PF_SIM_NAIVE), "naive");
    cr_assert_str_eq(pf_event_name(PF_EV_PINGPONG), "ping-pong");
    cr_assert_str_eq(pf_event_name(PF_EV_ABORT), "abort");
    cr_assert_str_eq(pf_event_name(PF_EV_COUNT), "?");
}

/* Issue 8 point 17: one table of names per enum, exported, NULL-terminated,
 * one distinct name per value, and the lookups answer from it. */
static void table_ok(const char *const *t, int n)
{
    for (int i = 0; i < n; i++) {
        cr_assert_not_null(t[i], "entry %d", i);
        for (int k = 0; k < i; k++)
            cr_assert_str_neq(t[i], t[k]);
    }
    cr_assert_null(t[n]);
}

Test(sim_policy, name_tables)
{
    table_ok(pf_event_names, PF_EV_COUNT);
    table_ok(pf_victim_names, PF_VICTIM_COUNT);
    table_ok(pf_preempt_names, PF_PREEMPT_COUNT);
    table_ok(pf_engine_names, PF_ENGINE_THREADED + 1);
    table_ok(pf_sim_mode_names, PF_SIM_PAGED + 1);
    for (int k = 0; k < PF_EV_COUNT; k++)
        cr_assert_eq(pf_event_name((pf_event_kind)k), pf_event_names[k]);
    for (int k = 0; k < PF_VICTIM_COUNT; k++)
        cr_assert_eq(pf_victim_name((pf_victim_policy)k), pf_victim_names[k]);
}
