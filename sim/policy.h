/* sim/policy.h - the scheduler's decisions as plain functions.
 *
 * The scheduler core (sim/sched.c) calls these to decide whether a page
 * fault waits or preempts (seed rules), which sequence is the victim, and
 * whether the victim is swapped or recomputed; the simulator (sim/sim.c)
 * asks whether a run is in a livelock. They are pure: no locks, no globals,
 * no I/O, so the tests can check each rule on its own. (Admission sizes,
 * the watermark and requests that can never fit moved into the scheduler
 * core with issue 9.) Callers: sim/sched.c, sim/sim.c,
 * tests/test_sim_policy.c.
 */
#ifndef PF_SIM_POLICY_H
#define PF_SIM_POLICY_H

#include <stdint.h>

#include "sim/sim.h"

typedef enum { PF_FAULT_WAIT = 0, PF_FAULT_PREEMPT = 1 } pf_fault_action;

/* A running sequence needs a frame and none is free. It waits (stalls,
 * holding its frames, decoding nothing) for up to stall_limit steps in a
 * row; then a victim is preempted. stall_limit 0 preempts at once, as vLLM
 * does. */
pf_fault_action pf_policy_on_fault(int stalled_steps, int stall_limit);

/* What the victim policy sees of a candidate (a running sequence). */
typedef struct {
    int id;             /* sequence id                                */
    int generated;      /* output tokens generated so far             */
    int frames;         /* frames held                                */
    int priority;       /* larger = more important                    */
    int64_t admit_order;/* increasing with each admission            */
} pf_victim_cand;

/* Index into c[0..n) of the victim, or -1 if n == 0. faulting is the index
 * of the faulting sequence among the candidates (-1 if it is not one).
 * Ties break towards the newest admission, then the lowest index, so the
 * choice is a function of the candidates alone. */
int pf_policy_pick_victim(pf_victim_policy policy, const pf_victim_cand *c, int n, int faulting);

/* Swap the victim out if swap mode is on and the host pool has room for
 * all its frames; otherwise recompute. */
pf_preempt_mode pf_policy_preempt_how(pf_preempt_mode mode, int host_free, int frames);

/* Is the run in a livelock? idle_preempts: preemptions since the last
 * progress (a token, a finish, an abort, a first admission); in_flight:
 * requests admitted, swapped out or queued. A legitimate run preempts each
 * sequence in flight at most once or twice before one of them decodes with
 * the frames set free, so more than 4 per sequence in flight, plus 16, with
 * no progress means the preemptions only undo one another. */
int pf_policy_livelocked(int64_t idle_preempts, int in_flight);

#endif
