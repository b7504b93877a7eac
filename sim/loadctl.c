/* sim/loadctl.c - PFF load control of the admission watermark (contract in
 * sim/loadctl.h).
 *
 * The defaults, and why:
 *   window 0.5 s    long enough to hold tens of steps of a decode-bound
 *                   server (a Llama-3-8B decode step on an H200 is ~5-20 ms)
 *                   so one unlucky step does not swing the knob, short
 *                   enough to react within a second of a burst;
 *   high 5%         a server that recomputes more than one token in twenty
 *                   is visibly thrashing (vLLM warns on every preemption);
 *   low 1%          below it preemption costs less than the memory a higher
 *                   reserve would idle; the gap between low and high is the
 *                   hysteresis that keeps the knob still in steady state;
 *   up x1.5, +0.01  leave a thrash in a few windows from any starting point
 *                   (0 -> 0.01 -> 0.025 -> 0.0375 -> ...);
 *   down 0.005      half a percent of the pool per window: creep back;
 *   bounds [0, 0.5] a reserve above half the pool wastes more memory than
 *                   any measured thrash (the seed's sweep falls back at 50%).
 */
#include "sim/loadctl.h"

#include <math.h>

#include "core/err.h"

void pf_loadctl_params_default(pf_loadctl_params *p)
{
    p->window_s = 0.5;
    p->high = 0.05;
    p->low = 0.01;
    p->up_factor = 1.5;
    p->up_floor = 0.01;
    p->down = 0.005;
    p->w_min = 0.0;
    p->w_max = 0.5;
}

static double clamp(double w, const pf_loadctl_params *p)
{
    return w < p->w_min ? p->w_min : w > p->w_max ? p->w_max : w;
}

int pf_loadctl_init(pf_loadctl *c, const pf_loadctl_params *p, double w0, double t)
{
    if (!c || !p)
        return PF_ERR_ARG;
    if (!(p->window_s > 0.0) || !isfinite(p->window_s) || !(p->low >= 0.0 && p->low < p->high &&
                                                             p->high <= 1.0) ||
        !(p->up_factor >= 1.0) || !(p->up_floor >= 0.0) || !(p->down >= 0.0) ||
        !(p->w_min >= 0.0 && p->w_min <= p->w_max && p->w_max <= 1.0) || !(w0 >= 0.0))
        return PF_ERR_ARG;
    c->p = *p;
    c->w = clamp(w0, p);
    c->t0 = t;
    c->useful = c->wasted = 0;
    c->queued = 0;
    c->last_waste = 0.0;
    c->raises = c->lowers = 0;
    return PF_OK;
}

pf_loadctl_action pf_loadctl_step(pf_loadctl *c, double t, int64_t useful, int64_t wasted,
                                  int waiting)
{
    c->useful += useful > 0 ? useful : 0;
    c->wasted += wasted > 0 ? wasted : 0;
    c->queued |= waiting > 0;
    if (t - c->t0 < c->p.window_s)
        return PF_LOADCTL_HOLD;
    int64_t all = c->useful + c->wasted;
    double waste = all > 0 ? (double)c->wasted / (double)all : 0.0;
    c->last_waste = waste;
    pf_loadctl_action a = PF_LOADCTL_HOLD;
    double w = c->w;
    if (waste > c->p.high) {
        double up = w * c->p.up_factor;
        w = clamp(up > w + c->p.up_floor ? up : w + c->p.up_floor, &c->p);
        if (w != c->w) {
            a = PF_LOADCTL_RAISE;
            c->raises++;
        }
    } else if (waste < c->p.low && c->queued) {
        w = clamp(w - c->p.down, &c->p);
        if (w != c->w) {
            a = PF_LOADCTL_LOWER;
            c->lowers++;
        }
    }
    c->w = w;
    c->t0 = t;
    c->useful = c->wasted = 0;
    c->queued = 0;
    return a;
}

const char *pf_loadctl_action_name(pf_loadctl_action a)
{
    static const char *const n[] = {"hold", "raise", "lower"};
    return (unsigned)a <= PF_LOADCTL_LOWER ? n[a] : "?";
}
