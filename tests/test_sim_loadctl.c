/* tests/test_sim_loadctl.c - the PFF load controller (sim/loadctl.h): it
 * raises under thrash, lowers when calm and queued, holds inside the band,
 * and never leaves its bounds. */
#include <criterion/criterion.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/loadctl.h"

static pf_loadctl mk(double w0)
{
    pf_loadctl_params p;
    pf_loadctl_params_default(&p);
    pf_loadctl c;
    cr_assert_eq(pf_loadctl_init(&c, &p, w0, 0.0), PF_OK);
    return c;
}

Test(sim_loadctl, raises_under_thrash_within_the_window_only)
{
    pf_loadctl c = mk(0.0);
    /* 10% waste, but the window (0.5 s) has not closed: hold */
    cr_assert_eq(pf_loadctl_step(&c, 0.2, 90, 10, 5), PF_LOADCTL_HOLD);
    cr_assert_float_eq(c.w, 0.0, 1e-12);
    cr_assert_eq(pf_loadctl_step(&c, 0.5, 90, 10, 5), PF_LOADCTL_RAISE);
    cr_assert_float_eq(c.w, 0.01, 1e-12, "floor step from 0");
    cr_assert_eq(pf_loadctl_step(&c, 1.0, 80, 20, 5), PF_LOADCTL_RAISE);
    cr_assert_float_eq(c.w, 0.02, 1e-12, "max(0.01 x 1.5, 0.01 + 0.01)");
    cr_assert_eq(pf_loadctl_step(&c, 1.5, 80, 20, 5), PF_LOADCTL_RAISE);
    cr_assert_float_eq(c.w, 0.03, 1e-12);
    c.w = 0.2;
    cr_assert_eq(pf_loadctl_step(&c, 2.0, 80, 20, 5), PF_LOADCTL_RAISE);
    cr_assert_float_eq(c.w, 0.3, 1e-12, "multiplicative above the floor");
    cr_assert_eq(c.raises, 4);
    cr_assert_float_eq(c.last_waste, 0.2, 1e-12);
}

Test(sim_loadctl, lowers_only_when_calm_and_requests_wait)
{
    pf_loadctl c = mk(0.1);
    cr_assert_eq(pf_loadctl_step(&c, 0.6, 1000, 0, 0), PF_LOADCTL_HOLD, "calm but nobody waits");
    cr_assert_float_eq(c.w, 0.1, 1e-12);
    cr_assert_eq(pf_loadctl_step(&c, 1.2, 1000, 0, 3), PF_LOADCTL_LOWER);
    cr_assert_float_eq(c.w, 0.095, 1e-12);
    /* inside the band (1% <= waste <= 5%): hold */
    cr_assert_eq(pf_loadctl_step(&c, 1.8, 970, 30, 3), PF_LOADCTL_HOLD);
    cr_assert_float_eq(c.w, 0.095, 1e-12);
}

Test(sim_loadctl, stays_within_bounds_on_any_input)
{
    pf_rng g;
    pf_rng_seed(&g, 5);
    pf_loadctl c = mk(0.3);
    double t = 0;
    for (int i = 0; i < 100000; i++) {
        t += pf_rng_unit(&g) * 0.3;
        /* stormy and calm spells of 50 steps each */
        int64_t useful = pf_rng_range(&g, 0, 1000);
        int64_t wasted = (i / 50) % 2 ? pf_rng_range(&g, 0, 500) : 0;
        pf_loadctl_step(&c, t, useful, wasted, (int)pf_rng_range(&g, 0, 2));
        cr_assert(c.w >= c.p.w_min && c.w <= c.p.w_max, "w = %g", c.w);
    }
    cr_assert_gt(c.raises, 0);
    cr_assert_gt(c.lowers, 0);
}

Test(sim_loadctl, bad_parameters_are_refused)
{
    pf_loadctl_params p;
    pf_loadctl c;
    pf_loadctl_params_default(&p);
    p.low = 0.1;
    p.high = 0.05;
    cr_assert_eq(pf_loadctl_init(&c, &p, 0, 0), PF_ERR_ARG);
    pf_loadctl_params_default(&p);
    p.window_s = 0;
    cr_assert_eq(pf_loadctl_init(&c, &p, 0, 0), PF_ERR_ARG);
    pf_loadctl_params_default(&p);
    p.w_max = 1.5;
    cr_assert_eq(pf_loadctl_init(&c, &p, 0, 0), PF_ERR_ARG);
    pf_loadctl_params_default(&p);
    cr_assert_eq(pf_loadctl_init(&c, &p, 0.9, 0), PF_OK);
    cr_assert_float_eq(c.w, 0.5, 1e-12, "start clamped into the bounds");
    cr_assert_str_eq(pf_loadctl_action_name(PF_LOADCTL_LOWER), "lower");
}
