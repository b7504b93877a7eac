/* tests/test_sim_policy.c - the scheduler's decision functions
 * (sim/policy.h), each rule on its own, and the simulator's name tables.
 * (Admission sizes and the never-fits rule moved into the scheduler core
 * with issue 9: tests/test_sim_sched.c covers them.) */
#include <criterion/criterion.h>

#include "sim/policy.h"

static pf_victim_cand C(int id, int gen, int frames, int prio, int order)
{
    pf_victim_cand c = {id, gen, frames, prio, order};
    return c;
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

Test(sim_policy, names)
{
    cr_assert_str_eq(pf_victim_name(PF_VICTIM_NEWEST), "newest");
    cr_assert_str_eq(pf_victim_name(PF_VICTIM_LOWEST_PRIORITY), "lowest-priority");
    cr_assert_str_eq(pf_preempt_name(PF_PREEMPT_SWAP), "swap");
    cr_assert_str_eq(pf_engine_name(PF_ENGINE_THREADED), "threaded");
    cr_assert_str_eq(pf_sim_mode_name(PF_SIM_NAIVE), "naive");
    cr_assert_str_eq(pf_event_name(PF_EV_PINGPONG), "ping-pong");
    cr_assert_str_eq(pf_event_name(PF_EV_ABORT), "abort");
    cr_assert_str_eq(pf_event_name(PF_EV_WATERMARK), "watermark");
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
    table_ok(pf_sched_rules_names, PF_SCHED_COUNT);
    table_ok(pf_naive_reserve_names, PF_RESERVE_ORACLE + 1);
    cr_assert_str_eq(pf_sched_rules_names[PF_SCHED_VLLM], "vllm");
    cr_assert_str_eq(pf_sched_rules_names[PF_SCHED_SEED], "seed");
    cr_assert_str_eq(pf_naive_reserve_names[PF_RESERVE_POW2], "pow2");
    for (int k = 0; k < PF_EV_COUNT; k++)
        cr_assert_eq(pf_event_name((pf_event_kind)k), pf_event_names[k]);
    for (int k = 0; k < PF_VICTIM_COUNT; k++)
        cr_assert_eq(pf_victim_name((pf_victim_policy)k), pf_victim_names[k]);
}
