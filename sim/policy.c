/* sim/policy.c - scheduler decisions (contract in sim/policy.h). */
#include "sim/policy.h"

#include <stdint.h>

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
