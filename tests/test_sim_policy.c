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
    cr_assert_float_eq(pf_policy_admit_watermark(&p), 0.3, 1e-12);
    p.mode = PF_SIM_NAIVE;
    cr_assert_eq(pf_policy_admit_frames(&p, 1), 128);
    cr_assert_eq(pf_policy_admit_frames(&p, 17), 128);
    cr_assert_float_eq(pf_policy_admit_watermark(&p), 0.0, 1e-12);
}

Test(sim_policy, fault_waits_then_preempts)
{
    cr_assert_eq(pf_policy_on_fault(1, 0, 0), PF_FAULT_PREEMPT);
    cr_assert_eq(pf_policy_on_fault(1, 4, 0), PF_FAULT_WAIT);
    cr_assert_eq(pf_policy_on_fault(4, 4, 0), PF_FAULT_WAIT);
    cr_assert_eq(pf_policy_on_fault(5, 4, 0), PF_FAULT_PREEMPT);
    cr_assert_eq(pf_policy_on_fault(50, 4, 3), PF_FAULT_WAIT, "frames already on their way");
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
}
