/* sim/policy.h - the scheduler's decisions as plain functions.
 *
 * Both engines (deterministic and threaded) call these and nothing else to
 * decide: how many frames admission takes, whether a page fault waits or
 * preempts, which sequence is the victim, and whether the victim is swapped
 * or recomputed. They are pure: no locks, no globals, no I/O, so the two
 * engines cannot disagree on a decision given the same state, and the tests
 * can check each rule on its own. Callers: sim/sim.c, sim/engine_thr.c,
 * tests/test_sim_policy.c.
 */
#ifndef PF_SIM_POLICY_H
#define PF_SIM_POLICY_H

#include <stdint.h>

#include "sim/sim.h"

/* Frames a sequence of `tokens` KV tokens holds under mode: paged takes
 * ceil(tokens / B); naive reserves ceil(max_seq_len / B) whatever the size. */
int pf_policy_admit_frames(const pf_sim_params *p, int tokens);

/* Watermark used at admission: the configured one under paged mode, none
 * under naive (its reservation already covers the whole sequence). */
double pf_policy_admit_watermark(const pf_sim_params *p);

typedef enum { PF_FAULT_WAIT = 0, PF_FAULT_PREEMPT = 1 } pf_fault_action;

/* A running sequence needs a frame and none is free. It waits (stalls,
 * holding its frames, decoding nothing) while frames are already on their
 * way back (pending_free > 0) or for up to stall_limit steps in a row; then
 * a victim is preempted. stall_limit 0 preempts at once, as vLLM does. */
pf_fault_action pf_policy_on_fault(int stalled_steps, int stall_limit, int pending_free);

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

/* Busy steps a cost implies: ceil(units * cost_per_unit), 0 for no cost. */
int pf_policy_cost_steps(double units, double cost_per_unit);

#endif
