/* sim/policy.c - scheduler decisions (contract in sim/policy.h). */
#include "sim/policy.h"

#include <math.h>
#include <stdint.h>

#include "core/pool.h"

int pf_policy_admit_frames(const pf_sim_params *p, int tokens)
{
    int B = p->cfg.block_size;
    if (p->mode == PF_SIM_NAIVE)
        return (p->cfg.max_seq_len + B - 1) / B;
    if (tokens < 1)
        tokens = 1;
    return (tokens + B - 1) / B;
}

int pf_policy_readmit_frames(const pf_sim_params *p, int tokens)
{
    return pf_policy_admit_frames(p, tokens + 1);
}

double pf_policy_admit_watermark(const pf_sim_params *p, int returning)
{
    return p->mode == PF_SIM_NAIVE || returning ? 0.0 : p->watermark;
}

int pf_policy_never_fits(const pf_sim_params *p, const pf_job *j)
{
    if (p->mode == PF_SIM_NAIVE)
        return 0;
    int N = p->cfg.pool_blocks, B = p->cfg.block_size;
    int64_t total = ((int64_t)j->prompt + j->output + B - 1) / B;
    if (total > N)
        return 1;
    int reserve = pf_pool_reserve_for(N, pf_policy_admit_watermark(p, 0));
    return pf_policy_admit_frames(p, j->prompt) > N - reserve;
}

pf_fault_action pf_policy_on_fault(int stalled_steps, int stall_limit)
{
    return stalled_steps > stall_limit ? PF_FAULT_PREEMPT : PF_FAULT_WAIT;
}

/* Is a a better victim than b under policy? (strictly) */
static int better(pf_victim_policy policy, const pf_victim_cand *a, const pf_victim_cand *b)
{
    switch (policy) {
    case PF_VICTIM_FEWEST_GENERATED:
        if (a->generated != b->generated)
            return a->generated < b->generated;
        break;
    case PF_VICTIM_MOST_FRAMES:
        if (a->frames != b->frames)
            return a->frames > b->frames;
        break;
    case PF_VICTIM_LOWEST_PRIORITY:
        if (a->priority != b->priority)
            return a->priority < b->priority;
        break;
    default:
        break;
    }
    return a->admit_order > b->admit_order;
}

int pf_policy_pick_victim(pf_victim_policy policy, const pf_victim_cand *c, int n, int faulting)
{
    if (n <= 0)
        return -1;
    if (policy == PF_VICTIM_FAULTING && faulting >= 0 && faulting < n)
        return faulting;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (better(policy, &c[i], &c[best]))
            best = i;
    return best;
}

pf_preempt_mode pf_policy_preempt_how(pf_preempt_mode mode, int host_free, int frames)
{
    if (mode == PF_PREEMPT_SWAP && frames <= host_free)
        return PF_PREEMPT_SWAP;
    return PF_PREEMPT_RECOMPUTE;
}

int pf_policy_livelocked(int64_t idle_preempts, int in_flight)
{
    return idle_preempts > 4 * (int64_t)in_flight + 16;
}

int pf_policy_cost_steps(double units, double cost_per_unit)
{
    if (!(units > 0.0) || !(cost_per_unit > 0.0))
        return 0;
    double s = ceil(units * cost_per_unit - 1e-9);
    if (s > 1e9)
        s = 1e9;
    return (int)s;
}
