/* sim/policy.h - the scheduler's decisions as plain functions.
 *
 * Both engines (deterministic and threaded) call these and nothing else to
 * decide: how many frames admission takes and what it must leave free,
 * whether a request can ever be admitted, whether a page fault waits or
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

/* Frames a returning (preempted) sequence of `tokens` KV tokens takes when
 * it comes back: its KV plus room for the token it decodes next, so that
 * it cannot fault again before producing one. Without that room, a
 * sequence that preempted itself came straight back into the frames it had
 * just freed (nobody else needing them at that moment, e.g. while they
 * rebuild their own KV) and faulted again: a livelock with no token. Naive
 * mode: its whole reservation. Never more than the request's final size. */
int pf_policy_readmit_frames(const pf_sim_params *p, int tokens);

/* Watermark used at admission: the configured one for a new request under
 * paged mode; none under naive (its reservation already covers the whole
 * sequence) and none for a returning sequence (preempted, coming back by
 * recompute or swap-in). Why none for those: running sequences may grow
 * into the reserve, so one preempted after growing past N - ceil(w*N)
 * frames could never come back under the full watermark; and the reserve
 * exists to keep room for sequences already admitted, which a returning one
 * is. The pool turns the watermark into frames (pf_pool_reserve_for). */
double pf_policy_admit_watermark(const pf_sim_params *p, int returning);

/* Can a new request never be admitted under these parameters? Paged: its
 * prompt's frames exceed what the watermark leaves (N - pf_pool_reserve_for
 * (N, w): vLLM's AllocStatus.NEVER, which ignores the request), or the
 * whole request exceeds the pool (it could never finish, even alone).
 * Naive: never (pf_sim_create refuses a reservation larger than the pool).
 * Such a request is aborted alone and the run goes on. */
int pf_policy_never_fits(const pf_sim_params *p, const pf_job *j);

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

/* Busy steps a cost implies: ceil(units * cost_per_unit), 0 for no cost. */
int pf_policy_cost_steps(double units, double cost_per_unit);

#endif
