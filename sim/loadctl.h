/* sim/loadctl.h - the load controller behind `--watermark auto`.
 *
 * What it is. Denning's page-fault-frequency (PFF) load control, applied to
 * a KV-cache: when sequences fault too often (preemptions destroy work that
 * must be recomputed), admit fewer of them; when they hardly fault and
 * requests are queueing, admit more. The knob is the admission watermark
 * (the fraction of the pool kept free for running sequences to grow into);
 * the signal is the share of the work the GPU did that preemption threw
 * away, measured over a window of simulated time:
 *
 *     waste = recomputed tokens / (useful tokens + recomputed tokens)
 *
 * Rule, evaluated at the end of every window:
 *   - waste > high:            raise the watermark by `up` (multiplicative
 *                               on top of a floor step, so a thrash is left
 *                               in a few windows);
 *   - waste < low and queue:   lower it by `down` (additive: creep back
 *                               towards full use of the pool);
 *   - otherwise:               hold.
 * The watermark stays in [w_min, w_max]. Additive decrease after a
 * multiplicative increase is TCP's AIMD, which converges instead of
 * oscillating wildly; the defaults are defended in loadctl.c.
 *
 * Contract: a plain value type, no allocation, no threads; the caller feeds
 * it each step's figures and applies the watermark it returns. Every
 * decision (raise, lower) is returned as such so the caller can log it.
 * Callers: the simulator (sim/sim.c, `--watermark auto`: one step per
 * scheduler step, its decisions logged as PF_EV_WATERMARK events),
 * tests/test_sim_loadctl.c.
 */
#ifndef PF_SIM_LOADCTL_H
#define PF_SIM_LOADCTL_H

#include <stdint.h>

typedef struct {
    double window_s;   /* decision interval, simulated seconds             */
    double high, low;  /* waste thresholds                                 */
    double up_factor;  /* raise: w = max(w * up_factor, w + up_floor)      */
    double up_floor;
    double down;       /* lower: w = w - down                              */
    double w_min, w_max;
} pf_loadctl_params;

void pf_loadctl_params_default(pf_loadctl_params *p);

typedef enum { PF_LOADCTL_HOLD = 0, PF_LOADCTL_RAISE, PF_LOADCTL_LOWER } pf_loadctl_action;

typedef struct {
    pf_loadctl_params p;
    double w;            /* the watermark in force                        */
    double t0;           /* start of the current window                    */
    int64_t useful, wasted; /* tokens in the current window                */
    int queued;          /* requests were waiting at some point in it      */
    double last_waste;   /* waste of the last closed window                */
    int64_t raises, lowers;
} pf_loadctl;

/* Start at watermark w0 (clamped into [w_min, w_max]) at time t. Returns
 * PF_ERR_ARG for parameters out of range (thresholds not 0 <= low < high
 * <= 1, factors < 1, bounds not 0 <= w_min <= w_max <= 1, window <= 0). */
int pf_loadctl_init(pf_loadctl *c, const pf_loadctl_params *p, double w0, double t);

/* One step that ended at time t: `useful` tokens generated, `wasted`
 * tokens recomputed, `waiting` requests queued. When t closes a window the
 * rule runs: the return value says what it did and c->w is the watermark
 * to apply. */
pf_loadctl_action pf_loadctl_step(pf_loadctl *c, double t, int64_t useful, int64_t wasted,
                                  int waiting);

const char *pf_loadctl_action_name(pf_loadctl_action a); /* "hold", "raise", "lower" */

#endif
