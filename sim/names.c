/* sim/names.c - the simulator's one table of names: modes, victim
 * policies, preemption modes, engines, scheduler rules, naive reservations
 * and events, indexed by the enums of
 * sim/sim.h and NULL-terminated (command-line choices read them as such).
 *
 * Its own file and its own small library (pf_sim_names), so that a viewer
 * that draws snapshots without running a simulator (tui/render.c, the
 * render benchmark) spells every name from here too, without linking the
 * engines. Callers: tui/simflags.c, tui/cmd_sim.c, tui/bridge.c,
 * tui/render.c, sim/ itself.
 */
#include "sim/sim.h"

const char *const pf_sim_mode_names[] = {"naive", "paged", NULL};
const char *const pf_victim_names[] = {"faulting",    "newest",          "fewest-generated",
                                       "most-frames", "lowest-priority", NULL};
const char *const pf_preempt_names[] = {"recompute", "swap", NULL};
const char *const pf_engine_names[] = {"deterministic", "threaded", NULL};
const char *const pf_sched_rules_names[] = {"vllm", "seed", NULL};
const char *const pf_naive_reserve_names[] = {"max", "pow2", "oracle", NULL};
const char *const pf_event_names[] = {"admit",  "stall",     "preempt", "swap-out", "swap-in",  "finish",
                                      "ping-pong", "reset", "abort",   "watermark", NULL};

/* A new enum value without its name fails to compile here. */
_Static_assert(sizeof pf_event_names / sizeof pf_event_names[0] == PF_EV_COUNT + 1, "event names");
_Static_assert(sizeof pf_victim_names / sizeof pf_victim_names[0] == PF_VICTIM_COUNT + 1, "victim names");
_Static_assert(sizeof pf_sched_rules_names / sizeof pf_sched_rules_names[0] == PF_SCHED_COUNT + 1,
               "scheduler names");
_Static_assert(sizeof pf_naive_reserve_names / sizeof pf_naive_reserve_names[0] ==
                   PF_RESERVE_ORACLE + 2,
               "naive reservation names");
_Static_assert(sizeof pf_preempt_names / sizeof pf_preempt_names[0] == PF_PREEMPT_COUNT + 1,
               "preempt names");

const char *pf_sim_mode_name(pf_sim_mode m)
{
    return (unsigned)m <= PF_SIM_PAGED ? pf_sim_mode_names[m] : "?";
}

const char *pf_victim_name(pf_victim_policy p)
{
    return (unsigned)p < PF_VICTIM_COUNT ? pf_victim_names[p] : "?";
}

const char *pf_preempt_name(pf_preempt_mode m)
{
    return (unsigned)m < PF_PREEMPT_COUNT ? pf_preempt_names[m] : "?";
}

const char *pf_engine_name(pf_engine e)
{
    return (unsigned)e <= PF_ENGINE_THREADED ? pf_engine_names[e] : "?";
}

const char *pf_event_name(pf_event_kind k)
{
    return (unsigned)k < PF_EV_COUNT ? pf_event_names[k] : "?";
}
