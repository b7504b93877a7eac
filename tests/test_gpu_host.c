/* tests/test_gpu_host.c - the GPU stage's host side, which runs in every
 * build (no device needed): element rounding, shape validation, the CPU
 * reference check (it must catch a wrong element and a NaN), and the
 * "unavailable" answers of a build without CUDA. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn.h"
#include "core/err.h"
#include "core/rng.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

Test(gpu_host, dtype_names_and_sizes)
{
    cr_assert_str_eq(pf_gpu_dtype_name(PF_GPU_F32), "fp32");
    cr_assert_str_eq(pf_gpu_dtype_name(PF_GPU_F16), "fp16");
    cr_assert_str_eq(pf_gpu_dtype_name(PF_GPU_BF16), "bf16");
    cr_assert_eq(pf_gpu_dtype_size(PF_GPU_F32), 4);
    cr_assert_eq(pf_gpu_dtype_size(PF_GPU_F16), 2);
    cr_assert_eq(pf_gpu_dtype_size(PF_GPU_BF16), 2);
}

Test(gpu_host, bf16_rounds_to_nearest_even)
{
    cr_assert_eq(pf_gpu_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(pf_gpu_f32_to_bf16(-2.0f), 0xc000);
    /* 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties to even (1) */
    cr_assert_eq(pf_gpu_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    /* 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up */
    cr_assert_eq(pf_gpu_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    cr_assert(isnan(pf_gpu_bf16_to_f32(pf_gpu_f32_to_bf16(NAN))));
}

Test(gpu_host, fp16_known_values_and_round_trip)
{
    cr_assert_eq(pf_gpu_f32_to_f16(1.0f), 0x3c00);
    cr_assert_eq(pf_gpu_f32_to_f16(-2.0f), 0xc000);
    cr_assert_eq(pf_gpu_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(pf_gpu_f32_to_f16(1e6f), 0x7c00);            /* overflow: inf */
    cr_assert_eq(pf_gpu_f32_to_f16(5.9604645e-8f), 0x0001);   /* smallest subnormal */
    cr_assert_eq(pf_gpu_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00); /* tie to even */
    cr_assert(isnan(pf_gpu_f16_to_f32(pf_gpu_f32_to_f16(NAN))));
    /* every finite half survives half -> float -> half */
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u)
            continue;
        float f = pf_gpu_f16_to_f32((uint16_t)h);
        cr_assert_eq(pf_gpu_f32_to_f16(f), h, "half 0x%04x -> %g -> 0x%04x", h, f,
                     pf_gpu_f32_to_f16(f));
    }
}

Test(gpu_host, store_returns_the_rounded_value)
{
    uint16_t b[1];
    float x = 0.1f;
    float r = pf_gpu_host_store(PF_GPU_BF16, b, 0, x);
    cr_assert_eq(r, pf_gpu_host_load(PF_GPU_BF16, b, 0));
    cr_assert_neq(r, x);
    cr_assert_lt(fabsf(r - x), x / 128);
}

Test(gpu_host, shape_validation_names_the_problem)
{
    char why[160];
    cr_assert(pf_gpu_shape_ok(32, 8, 128, 16, why, sizeof why));
    cr_assert(pf_gpu_shape_ok(1, 1, 64, 8, why, sizeof why));
    cr_assert(pf_gpu_shape_ok(1, 1, 64, 256, why, sizeof why));
    cr_assert_not(pf_gpu_shape_ok(6, 4, 128, 16, why, sizeof why));
    cr_assert(strstr(why, "multiple") != NULL, "%s", why);
    cr_assert_not(pf_gpu_shape_ok(8, 8, 96, 16, why, sizeof why));
    cr_assert(strstr(why, "head dim") != NULL, "%s", why);
    cr_assert_not(pf_gpu_shape_ok(8, 8, 64, 4, why, sizeof why));
    cr_assert(strstr(why, "block size") != NULL, "%s", why);
    cr_assert_not(pf_gpu_shape_ok(8, 8, 64, 512, why, sizeof why));
}

/* A small GQA problem with its exact CPU output, to feed the checker. */
typedef struct {
    int lens[3];
    size_t off[4];
    float *q, *k, *v;
    uint16_t *out; /* bf16 */
} ref_case;

static void ref_case_make(ref_case *c)
{
    const int hq = 4, hkv = 2, D = 64;
    c->lens[0] = 1;
    c->lens[1] = 17;
    c->lens[2] = 40;
    c->off[0] = 0;
    for (int s = 0; s < 3; s++)
        c->off[s + 1] = c->off[s] + (size_t)hkv * c->lens[s] * D;
    c->q = malloc(sizeof(float) * 3 * hq * D);
    c->k = malloc(sizeof(float) * c->off[3]);
    c->v = malloc(sizeof(float) * c->off[3]);
    c->out = malloc(sizeof(uint16_t) * 3 * hq * D);
    cr_assert(c->q && c->k && c->v && c->out);
    pf_rng r;
    pf_rng_seed(&r, 5);
    for (int i = 0; i < 3 * hq * D; i++)
        c->q[i] = pf_rng_symf(&r);
    for (size_t i = 0; i < c->off[3]; i++) {
        c->k[i] = pf_rng_symf(&r);
        c->v[i] = pf_rng_symf(&r);
    }
    for (int s = 0; s < 3; s++) {
        pf_attn_shape sh = {hq, hkv, D, 0.f};
        double ref[4 * 64];
        cr_assert_eq(pf_attn_ref_contig_f64(&sh, c->q + (size_t)s * hq * D, c->k + c->off[s],
                                            c->v + c->off[s], c->lens[s], c->lens[s], ref),
                     PF_OK);
        for (int i = 0; i < hq * D; i++)
            pf_gpu_host_store(PF_GPU_BF16, c->out, (size_t)s * hq * D + i, (float)ref[i]);
    }
}

static void ref_case_free(ref_case *c)
{
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->out);
}

static pf_gpu_refcheck ref_check_of(ref_case *c, int all_heads)
{
    pf_gpu_refcheck in = {
        .num_seqs = 3, .lens = c->lens, .hq = 4, .hkv = 2, .head_dim = 64,
        .scale = 1.f / 8.f, .q = c->q, .k = c->k, .v = c->v, .off = c->off, .out = c->out,
        .dtype = PF_GPU_BF16, .all_heads = all_heads, .tol = 1e-4, .threads = 2,
    };
    return in;
}

Test(gpu_host, ref_check_accepts_a_correct_output)
{
    ref_case c;
    ref_case_make(&c);
    pf_gpu_refcheck in = ref_check_of(&c, 1);
    pf_gpu_refcheck_out o;
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 0, "max err %g allowed %g", o.max_err, o.allowed_at_max);
    cr_assert_eq(o.checked, 3 * 4 * 64);
    in.all_heads = 0; /* sampled: one q head per kv head, every sequence */
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.checked, 3 * 2 * 64);
    ref_case_free(&c);
}

Test(gpu_host, ref_check_catches_a_wrong_element_and_nan)
{
    ref_case c;
    ref_case_make(&c);
    pf_gpu_refcheck in = ref_check_of(&c, 1);
    pf_gpu_refcheck_out o;
    /* sequence 2, head 3, element 5: off by 0.05 */
    size_t i = (size_t)(2 * 4 + 3) * 64 + 5;
    float x = pf_gpu_host_load(PF_GPU_BF16, c.out, i);
    pf_gpu_host_store(PF_GPU_BF16, c.out, i, x + 0.05f);
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 1);
    cr_assert_eq(o.first_bad_seq, 2);
    cr_assert_eq(o.first_bad_head, 3);
    cr_assert_gt(o.max_err, 0.04);
    /* a NaN never passes, even with a huge tolerance */
    pf_gpu_host_store(PF_GPU_BF16, c.out, i, x);
    c.out[7] = 0xffff;
    in.tol = 1e9;
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 1);
    cr_assert_eq(o.first_bad_seq, 0);
    ref_case_free(&c);
}

Test(gpu_host, unavailable_answers_carry_a_reason)
{
    char why[200] = "";
    if (pf_gpu_available(why, sizeof why))
        return; /* a device is here: test_gpu covers it */
    cr_assert_gt(strlen(why), 0);
    pf_gpu_bench_result res;
    char err[200] = "";
    int lens[1] = {16};
    pf_gpu_bench_cfg cfg = {.num_seqs = 1, .seq_lens = lens, .naive_cap = 16, .num_q_heads = 1,
                            .num_kv_heads = 1, .head_dim = 64, .block_size = 16,
                            .dtype = PF_GPU_F32, .iters = 1, .tolerance = 1e-3};
    cr_assert_eq(pf_gpu_bench_run(&cfg, &res, err, sizeof err), PF_ERR_UNAVAILABLE);
    cr_assert_gt(strlen(err), 0);
    pf_gpu_pass_result pr;
    int tab[1] = {0};
    pf_gpu_layout lay = {1, lens, tab, 1, 1, 16};
    pf_gpu_head_shape hs = {1, 1, 64, PF_GPU_F32};
    err[0] = '\0';
    cr_assert_eq(pf_gpu_run_layout(&lay, &hs, &pr, err, sizeof err), PF_ERR_UNAVAILABLE);
    cr_assert_gt(strlen(err), 0);
}
