/* tests/test_gpu_host.c - the GPU stage's host side, which runs in every
 * build (no device needed): element rounding, shape validation, the CPU
 * reference check (it must catch a wrong element and a NaN), the planner and
 * the per-shape default version, the cost-model profile writer (and that
 * the simulator's reader loads what it writes exactly), and the
 * "unavailable" answers of a build without CUDA. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <criterion/criterion.h>
#include <stdio.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/attn.h"
#include "core/config.h"
#include "core/err.h"
#include "core/rng.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"
#include "sim/cost.h"

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

/* Rounded weights: an output moved by more than the output's rounding
 * allows, but less than the weights' rounding can (p_eps x sum p |v| /
 * sum p), fails with p_eps 0 and passes with it; past both it fails. */
Test(gpu_host, ref_check_allows_for_rounded_weights)
{
    ref_case c;
    ref_case_make(&c);
    pf_gpu_refcheck in = ref_check_of(&c, 1);
    /* sequence 2 (40 tokens), q head 3 (kv head 1), element 5 */
    const int s = 2, qh = 3, d = 5, D = 64;
    pf_attn_shape sh = {4, 2, D, 1.f / 8.f};
    double ref[4 * 64], wabs[4 * 64];
    cr_assert_eq(pf_attn_ref_contig_f64_abs(&sh, c.q + (size_t)s * 4 * D, c.k + c.off[s],
                                            c.v + c.off[s], c.lens[s], c.lens[s], ref, wabs),
                 PF_OK);
    const double r = ref[qh * D + d], p_eps = 0x1p-8;
    const double out_allows = in.tol + pf_gpu_dtype_rel_eps(PF_GPU_BF16) * fabs(r);
    const double p_allows = p_eps * wabs[qh * D + d];
    cr_assert_gt(p_allows, 0.5 * out_allows, "a case where the weights' term matters");
    const size_t i = ((size_t)s * 4 + qh) * D + d;
    pf_gpu_refcheck_out o;
    /* bf16 holds the moved value to 2^-8 relative: aim mid-way into the
     * weights' share (the asserts below check where it landed), then past
     * both */
    pf_gpu_host_store(PF_GPU_BF16, c.out, i, (float)(r + out_allows + 0.5 * p_allows));
    const double moved = fabs(pf_gpu_host_load(PF_GPU_BF16, c.out, i) - r);
    cr_assert_gt(moved, out_allows);
    cr_assert_lt(moved, out_allows + p_allows);
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 1, "p_eps 0: over the output's rounding");
    in.p_eps = p_eps;
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 0, "within the weights' rounding");
    pf_gpu_host_store(PF_GPU_BF16, c.out, i, (float)(r + 1.5 * (out_allows + p_allows)));
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_OK);
    cr_assert_eq(o.bad, 1, "past both");
    cr_assert_eq(o.first_bad_seq, s);
    cr_assert_eq(o.first_bad_head, qh);
    /* a kept reference without its weights cannot serve p_eps */
    double keep[3 * 4 * 64];
    in.ref = keep;
    in.ref_ready = 1;
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_ERR_ARG);
    in.p_eps = -1;
    in.ref = NULL;
    in.ref_ready = 0;
    cr_assert_eq(pf_gpu_ref_check(&in, &o), PF_ERR_ARG);
    ref_case_free(&c);
}

/* The kept reference (pagefault bench --compare checks several versions'
 * outputs against one): the call that fills it answers as an uncached one,
 * and a call with ref_ready reads it rather than computing it again. */
Test(gpu_host, ref_check_keeps_and_reads_its_reference)
{
    ref_case c;
    ref_case_make(&c);
    for (int all = 0; all < 2; all++) {
        pf_gpu_refcheck in = ref_check_of(&c, all);
        pf_gpu_refcheck_out plain, filled, read;
        cr_assert_eq(pf_gpu_ref_check(&in, &plain), PF_OK);
        double *ref = malloc(sizeof(double) * 3 * 4 * 64);
        cr_assert(ref);
        for (int i = 0; i < 3 * 4 * 64; i++)
            ref[i] = NAN; /* rows the check does not use stay NaN */
        in.ref = ref;
        cr_assert_eq(pf_gpu_ref_check(&in, &filled), PF_OK);
        cr_assert_eq(filled.checked, plain.checked);
        cr_assert_eq(filled.bad, 0);
        cr_assert_eq(filled.max_err, plain.max_err);
        in.ref_ready = 1;
        cr_assert_eq(pf_gpu_ref_check(&in, &read), PF_OK);
        cr_assert_eq(read.checked, plain.checked);
        cr_assert_eq(read.bad, 0);
        cr_assert_eq(read.max_err, plain.max_err);
        /* sequence 1's first checked row, changed in the kept reference
         * only: a call that reads it must now fail there */
        const int qh = all ? 0 : (1 + 0) % 2; /* kv head 0's sampled q head */
        ref[(size_t)(1 * 4 + qh) * 64 + 9] += 0.5;
        cr_assert_eq(pf_gpu_ref_check(&in, &read), PF_OK);
        cr_assert_eq(read.bad, 1);
        cr_assert_eq(read.first_bad_seq, 1);
        cr_assert_eq(read.first_bad_head, qh);
        free(ref);
    }
    /* the weights over |V| kept beside it serve a p_eps call as computed */
    pf_gpu_refcheck in = ref_check_of(&c, 1);
    in.p_eps = 0x1p-8;
    pf_gpu_refcheck_out plain, read;
    cr_assert_eq(pf_gpu_ref_check(&in, &plain), PF_OK);
    double ref[3 * 4 * 64], wabs[3 * 4 * 64];
    in.ref = ref;
    in.ref_abs = wabs;
    in.p_eps = 0; /* filled by a call that does not need them */
    cr_assert_eq(pf_gpu_ref_check(&in, &read), PF_OK);
    in.p_eps = 0x1p-8;
    in.ref_ready = 1;
    cr_assert_eq(pf_gpu_ref_check(&in, &read), PF_OK);
    cr_assert_eq(read.allowed_at_max, plain.allowed_at_max);
    cr_assert_eq(read.max_err, plain.max_err);
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

/* ---- issue 8 point 10: the public API's bounds, checked on the host ---- */

static pf_gpu_attn_shape llama_shape(void)
{
    pf_gpu_attn_shape s = {.num_seqs = 64, .num_q_heads = 32, .num_kv_heads = 8, .head_dim = 128,
                           .block_size = 16, .max_blocks_per_seq = 256, .naive_cap = 4096,
                           .dtype = PF_GPU_BF16, .scale = 0.f};
    return s;
}

/* The batch workload (256 x 1024, llama's heads): its shape, and its
 * lengths into lens[BATCH_N]. */
enum { BATCH_N = 256 };
static pf_gpu_attn_shape batch_shape(int *lens)
{
    for (int i = 0; i < BATCH_N; i++)
        lens[i] = 1024;
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = BATCH_N;
    s.max_blocks_per_seq = 64;
    return s;
}

Test(gpu_host, validate_accepts_real_shapes)
{
    pf_gpu_attn_shape s = llama_shape();
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_OK);
    cr_assert_eq(pf_gpu_attn_validate(&s, 0), PF_OK);
    s.num_seqs = 65535;
    s.max_blocks_per_seq = (1 << 20) / 16;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_OK);
}

Test(gpu_host, validate_rejects_overflowing_products)
{
    pf_gpu_attn_shape s = llama_shape();
    /* tokens per sequence past INT_MAX: 2^24 blocks of 256 */
    s.block_size = 256;
    s.max_blocks_per_seq = 1 << 24;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    s.max_blocks_per_seq = INT32_MAX;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    /* num_seqs * num_q_heads past INT_MAX */
    s = llama_shape();
    s.num_seqs = 65535;
    s.num_q_heads = 65535;
    s.num_kv_heads = 65535 / 15; /* 4369: every count in range, the product not */
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    /* naive buffers [S][Hkv][cap][D] past size_t */
    s = llama_shape();
    s.num_seqs = 65535;
    s.num_q_heads = 4096;
    s.num_kv_heads = 4096;
    s.naive_cap = INT32_MAX;
    cr_assert_eq(pf_gpu_attn_validate(&s, 0), PF_ERR_ARG);
    /* counts out of range, NaN scale */
    s = llama_shape();
    s.num_seqs = 0;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    s.num_seqs = 65536;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    s = llama_shape();
    s.max_blocks_per_seq = 0;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    s = llama_shape();
    s.scale = NAN;
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_validate(NULL, 1), PF_ERR_ARG);
}

/* The public one-shot calls refuse such shapes with PF_ERR_ARG before any
 * device work, with or without CUDA and a device: never "unavailable". */
Test(gpu_host, public_calls_refuse_overflow_without_a_device)
{
    pf_gpu_attn_shape s = llama_shape();
    s.block_size = 256;
    s.max_blocks_per_seq = 1 << 24;
    int dummy[4] = {0};
    cr_assert_eq(pf_gpu_paged_attention(&s, dummy, dummy, dummy, dummy, dummy, dummy, NULL),
                 PF_ERR_ARG);
    s = llama_shape();
    s.naive_cap = INT32_MAX;
    s.num_seqs = 65535;
    s.num_q_heads = s.num_kv_heads = 4096;
    cr_assert_eq(pf_gpu_naive_attention(&s, dummy, dummy, dummy, dummy, dummy, NULL), PF_ERR_ARG);
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 0, NULL, 100, 0), PF_ERR_ARG);
    s = llama_shape();
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 1, NULL, 100, PF_GPU_KERNEL_VERSIONS + 1),
                 PF_ERR_ARG);
    /* a run needs a plan made by plan_make */
    memset(&p, 0, sizeof p);
    int rc = pf_gpu_attn_run(&p, dummy, dummy, dummy, dummy, dummy, dummy, NULL, NULL);
    cr_assert(rc == PF_ERR_ARG || rc == PF_ERR_UNAVAILABLE, "rc %d", rc);
}

/* ---- issue 11 point 2: split-KV planned from the lengths ---- */

static void assert_covers(const pf_gpu_attn_plan *p, int maxlen, int B)
{
    cr_assert_eq(p->chunk % B, 0, "chunk %d, block %d", p->chunk, B);
    cr_assert_leq(p->chunk, pf_gpu_chunk_max_tokens(B, p->version));
    cr_assert_geq((long long)p->chunk * p->splits, maxlen);
    cr_assert_lt((long long)p->chunk * (p->splits - 1), maxlen);
    const int group = p->shape.num_q_heads / p->shape.num_kv_heads;
    /* (sequence, block's head tiles) pairs: version 14 serves 4 tiles a block */
    const int tiles = p->shape.num_kv_heads * (group / p->group_tile);
    const int per = pf_gpu_version_heads(p->version, p->shape.dtype);
    const size_t pairs = (size_t)p->shape.num_seqs * ((tiles + per - 1) / per);
    const size_t counters = pf_gpu_version_fused(p->version) ? pairs * sizeof(unsigned) : 0;
    size_t want = 0;
    if (pf_gpu_version_steal(p->version)) {
        /* v11, split or not: a partial per visit (4 a chunk), two run
         * counters and two per pair, then a claim word per item */
        cr_assert_gt(p->units, 0, "v11 runs from a work list");
        want = (size_t)p->shape.num_seqs * p->shape.num_q_heads * p->splits *
                   PF_GPU_STEAL_VISITS * (p->shape.head_dim + 1) * sizeof(float) +
               (2 + 2 * pairs) * sizeof(unsigned);
        want = (want + 7) / 8 * 8 +
               (size_t)p->units * (pairs / p->shape.num_seqs) * sizeof(unsigned long long);
    } else if (p->splits > 1 && !pf_gpu_version_cluster(p->version)) { /* v9, v10, v31: on chip */
        want = (size_t)p->shape.num_seqs * p->shape.num_q_heads * p->splits *
                   (p->shape.head_dim + 1) * sizeof(float) +
               counters;
    }
    if (p->units) /* the work list after it, 8-byte aligned: a header and the units */
        want = (want + 7) / 8 * 8 + (size_t)(p->units + 1) * 2 * sizeof(int);
    cr_assert_eq(p->workspace_bytes, want, "splits %d, units %d", p->splits, p->units);
}

Test(gpu_host, plan_comes_from_lengths_not_capacity)
{
    int lens[64];
    for (int i = 0; i < 64; i++)
        lens[i] = 4096;
    pf_gpu_attn_shape s = llama_shape();
    pf_gpu_attn_plan a, b, c;
    /* the same lengths in tables of 4096 and of 32768 tokens, block 16 or 128 */
    cr_assert_eq(pf_gpu_attn_plan_compute(&a, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    s.max_blocks_per_seq = 2048;
    cr_assert_eq(pf_gpu_attn_plan_compute(&b, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    s.block_size = 128;
    s.max_blocks_per_seq = 256;
    cr_assert_eq(pf_gpu_attn_plan_compute(&c, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(a.max_len, 4096);
    cr_assert_eq(b.max_len, 4096);
    cr_assert_eq(a.chunk, b.chunk);
    cr_assert_eq(a.splits, b.splits);
    assert_covers(&a, 4096, 16);
    assert_covers(&c, 4096, 128);
    /* 64 x 8 = 512 (sequence, kv head) pairs nearly fill 132 x 4 slots:
     * one chunk per sequence, as many blocks at block 128 as at 16 */
    cr_assert_eq(c.splits, a.splits);
    /* an upper bound instead of lengths plans every sequence at it */
    s = llama_shape();
    s.max_blocks_per_seq = 2048;
    cr_assert_eq(pf_gpu_attn_plan_compute(&b, &s, 1, NULL, 32768, 0, 132, 4), PF_OK);
    cr_assert_eq(b.max_len, 32768);
    assert_covers(&b, 32768, 16);
}

/* Version 0 on batch (256 x 1024, GQA 32/8): version 34 where its own plan
 * splits no sequence, else 29. Its 512 blocks fill 132 SMs unsplit at 4
 * blocks an SM (528 slots), not at 3 (396), so which version runs depends
 * on version 34's occupancy, which the planner must weigh apart from
 * version 29's: plan_make asks the device for each. */
Test(gpu_host, version_34_is_planned_at_its_own_occupancy)
{
    int lens[BATCH_N];
    pf_gpu_attn_shape s = batch_shape(lens);
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION, "4 of each an SM: version %d", p.version);
    cr_assert_eq(p.splits, 1);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 3), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION, "3 of each an SM: version %d", p.version);
    /* 29 at 3 an SM, 34 at 4: 34 fills the machine unsplit */
    cr_assert_eq(pf_gpu__plan_compute_occ(&p, &s, 1, lens, 0, 0, 132, 3, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION, "29 at 3, 34 at 4: version %d", p.version);
    cr_assert_eq(p.blocks_per_sm, 4, "the plan records the occupancy it ran on");
    /* 29 at 4, 34 at 3: 34 would split, so 29 */
    cr_assert_eq(pf_gpu__plan_compute_occ(&p, &s, 1, lens, 0, 0, 132, 4, 3), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION, "29 at 4, 34 at 3: version %d", p.version);
    cr_assert_eq(p.blocks_per_sm, 4);
    cr_assert_eq(pf_gpu__plan_compute_occ(&p, &s, 1, lens, 0, 0, 132, 4, 0), PF_ERR_ARG);
}

/* The work list without a tail is made in its order, not sorted whole
 * (host.c, plan_units_ordered): every chunk with tokens a unit (an empty
 * sequence one), longest first, then by sequence and chunk, each with its
 * tokens at the planned lengths. */
Test(gpu_host, work_list_is_longest_first_without_a_sort)
{
    enum { N = 300 };
    static int lens[N];
    static pf_gpu_unit list[N * 64];
    pf_rng r;
    pf_rng_seed(&r, 7);
    for (int round = 0; round < 20; round++) {
        const int chunk = 128 * (1 + (int)(pf_rng_next(&r) % 8)), bound = 8192;
        long long want = 0;
        for (int i = 0; i < N; i++) {
            const int kind = (int)(pf_rng_next(&r) % 4);
            lens[i] = kind == 0 ? 0 : kind == 1 ? chunk * (int)(1 + pf_rng_next(&r) % 4)
                                                : (int)(pf_rng_next(&r) % 10000);
            const int len = lens[i] > bound ? bound : lens[i];
            want += len > 0 ? (len + chunk - 1) / chunk : 1;
        }
        const long long u = pf_gpu__plan_units(lens, N, bound, chunk, 0, list);
        cr_assert_eq(u, want, "chunk %d: %lld units, %lld chunks with tokens", chunk, u, want);
        for (long long k = 0; k < u; k++) {
            const pf_gpu_unit *x = &list[k];
            const int len = lens[x->seq] > bound ? bound : lens[x->seq];
            int tok = len - x->chunk * chunk;
            tok = tok < 0 ? 0 : tok > chunk ? chunk : tok;
            cr_assert_eq(x->tok, tok, "unit %lld (seq %d chunk %d)", k, x->seq, x->chunk);
            cr_assert_eq(x->nch, len > 0 ? (len + chunk - 1) / chunk : 1);
            cr_assert_eq(x->span, 1);
            if (k == 0)
                continue;
            const pf_gpu_unit *w = &list[k - 1];
            cr_assert(w->tok > x->tok || (w->tok == x->tok && (w->seq < x->seq ||
                                                               (w->seq == x->seq && w->chunk < x->chunk))),
                      "unit %lld out of order: (%d, %d, %d) after (%d, %d, %d)", k, x->tok, x->seq,
                      x->chunk, w->tok, w->seq, w->chunk);
        }
    }
}

/* Two plans' every field (not memcmp: the struct has padding). */
static int plans_equal(const pf_gpu_attn_plan *a, const pf_gpu_attn_plan *b)
{
    const pf_gpu_attn_shape *x = &a->shape, *y = &b->shape;
    return x->num_seqs == y->num_seqs && x->num_q_heads == y->num_q_heads &&
           x->num_kv_heads == y->num_kv_heads && x->head_dim == y->head_dim &&
           x->block_size == y->block_size && x->max_blocks_per_seq == y->max_blocks_per_seq &&
           x->naive_cap == y->naive_cap && x->dtype == y->dtype && x->scale == y->scale &&
           a->paged == b->paged && a->version == b->version && a->max_len == b->max_len &&
           a->chunk == b->chunk && a->splits == b->splits && a->sm_count == b->sm_count &&
           a->blocks_per_sm == b->blocks_per_sm && a->group_tile == b->group_tile &&
           a->workspace_bytes == b->workspace_bytes && a->units == b->units && a->tail == b->tail &&
           a->pack == b->pack && a->lens_hash == b->lens_hash && a->magic == b->magic;
}

/* The planner skips a candidate chunk whose floor (plan_cost_floor: the
 * blocks' work over the machine, or the largest block's) cannot beat the
 * best so far, stops once the floor's rising part cannot, and version 0's
 * try of version 34 stops once its pick splits; its simulation groups
 * blocks that end together and its work list is made in order. None may
 * change a plan: every field equals the exhaustive search's (every
 * candidate, a heap entry a block, the list sorted whole) over random
 * shapes, lengths, versions and machines (uniform,
 * mixed, one long among short ones, and some empty sequences; host lengths
 * or a bound). */
Test(gpu_host, the_planners_shortcuts_change_no_plan)
{
    static const int versions[] = {0, 0, 0, 5, 7, 8, 9, 11, 12, 14, 29, 33, 34, 36, 37};
    static const int blocks[] = {8, 16, 32, 64, 128, 256};
    static const int heads[][2] = {{32, 8}, {32, 32}, {8, 2}, {64, 8}, {8, 8}, {16, 1}, {28, 4}};
    static const pf_gpu_dtype dts[] = {PF_GPU_F32, PF_GPU_BF16, PF_GPU_F16};
    pf_rng r;
    pf_rng_seed(&r, 39);
#define DRAW(n) ((int)(pf_rng_next(&r) % (uint64_t)(n)))
    int lens[64], same = 0, split = 0;
    for (int k = 0; k < 400; k++) {
        const int n = 1 + DRAW(DRAW(2) ? 8 : 64), kind = DRAW(4);
        const int longest = 1 + DRAW(DRAW(3) ? 8192 : 40000);
        int mx = 1;
        for (int i = 0; i < n; i++) {
            lens[i] = kind == 0   ? longest
                      : kind == 1 ? DRAW(longest + 1)
                      : kind == 2 ? (i == 0 ? longest : 1 + DRAW(64))
                                  : (DRAW(5) == 0 ? 0 : 1 + DRAW(longest));
            mx = lens[i] > mx ? lens[i] : mx;
        }
        const int h = DRAW(7), B = blocks[DRAW(6)], v = versions[DRAW(15)], paged = DRAW(4) != 0;
        pf_gpu_attn_shape s = {n, heads[h][0], heads[h][1], DRAW(3) ? 128 : 64, B, (mx + B - 1) / B,
                               mx, dts[DRAW(3)], 0};
        const int sm = DRAW(2) ? 132 : DRAW(2) ? 114 : 78, bps = 1 + DRAW(4), mbps = 1 + DRAW(4);
        const int *l = DRAW(5) ? lens : NULL;
        pf_gpu_attn_plan fast, slow;
        memset(&fast, 0, sizeof fast);
        memset(&slow, 0, sizeof slow);
        const int rf = pf_gpu__plan_compute_occ(&fast, &s, paged, l, l ? 0 : mx, v, sm, bps, mbps);
        const int rs = pf_gpu__plan_compute_exhaustive(&slow, &s, paged, l, l ? 0 : mx, v, sm, bps,
                                                       mbps);
        cr_assert_eq(rf, rs, "case %d: status %d against %d", k, rf, rs);
        cr_assert(plans_equal(&fast, &slow),
                  "case %d (n %d, v%d, B %d): version %d/%d chunk %d/%d splits %d/%d units %d/%d "
                  "pack %d/%d",
                  k, n, v, B, fast.version, slow.version, fast.chunk, slow.chunk, fast.splits,
                  slow.splits, fast.units, slow.units, fast.pack, slow.pack);
        same += rf == PF_OK;
        split += rf == PF_OK && fast.splits > 1;
    }
#undef DRAW
    /* the draw reaches both kinds of plan */
    cr_assert_gt(same, 300, "%d plans made", same);
    cr_assert_gt(split, 30, "%d of them split", split);
    /* Grid order past 2^20 blocks: a candidate is estimated, not
     * simulated, and the floor does not bound the estimate, so the
     * search may not stop where no simulated candidate can win (the
     * review's counterexamples: the first form of the stop picked 1 x 2048
     * here where the exhaustive search picks 9 x 240). */
    static const int big[][4] = {{16384, 2048, 5, 16}, {32768, 1024, 0, 8}};
    for (int k = 0; k < 2; k++) {
        const pf_gpu_attn_shape s = {big[k][0], 32, 8, 128, 16, big[k][1] / 16, big[k][1], PF_GPU_BF16,
                                     0};
        pf_gpu_attn_plan fast, slow;
        memset(&fast, 0, sizeof fast);
        memset(&slow, 0, sizeof slow);
        cr_assert_eq(pf_gpu__plan_compute_occ(&fast, &s, 1, NULL, big[k][1], big[k][2], 132, big[k][3],
                                              big[k][3]),
                     PF_OK);
        cr_assert_eq(pf_gpu__plan_compute_exhaustive(&slow, &s, 1, NULL, big[k][1], big[k][2], 132,
                                                     big[k][3], big[k][3]),
                     PF_OK);
        cr_assert(plans_equal(&fast, &slow), "%d x %d: %d x %d tokens against %d x %d", big[k][0],
                  big[k][1], fast.splits, fast.chunk, slow.splits, slow.chunk);
    }
}

Test(gpu_host, plan_fills_the_machine_for_few_long_sequences)
{
    int lens[8];
    for (int i = 0; i < 8; i++)
        lens[i] = 32768;
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 8;
    s.max_blocks_per_seq = 2048;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    assert_covers(&p, 32768, 16);
    /* 64 pairs on 528 slots: without splitting 7/8 of the GPU idles. The
     * model's pick is cuDNN's cut, the fastest measured (gpu.h,
     * PF_GPU_CHUNK_MAX_TOKENS): 4 chunks of 8192, 256 blocks, one wave */
    cr_assert_geq((long long)p.splits * 64, 132, "splits %d", p.splits);
    cr_assert_eq(p.splits, 4);
    cr_assert_eq(p.chunk, 8192);
    /* 256 blocks, about 2 an SM: version 29, which led 35 and 36 there on
     * the H200 (gpu_internal.h, PF_GPU_DEEP_GQA_VERSION); asked for by name
     * it plans the same cut */
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION);
    pf_gpu_attn_plan p29;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p29, &s, 1, lens, 0, PF_GPU_GQA_VERSION, 132, 4), PF_OK);
    cr_assert_eq(p29.version, PF_GPU_GQA_VERSION);
    cr_assert_eq(p29.splits, p.splits);
    cr_assert_eq(p29.units, p.units);
    cr_assert_eq(p29.workspace_bytes, p.workspace_bytes);
    /* 16 x 4096 unsplit: 128 blocks, 36 on 132 SMs, 29 on 120 (more than
     * one an SM); asked for by name, 29 stays 29 with the same plan */
    int lens16[16];
    for (int i = 0; i < 16; i++)
        lens16[i] = 4096;
    s.num_seqs = 16;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens16, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.splits, 1);
    cr_assert_eq(p.version, PF_GPU_DEEP_GQA_VERSION, "16 x 4096: version %d", p.version);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p29, &s, 1, lens16, 0, PF_GPU_GQA_VERSION, 132, 4), PF_OK);
    cr_assert_eq(p29.version, PF_GPU_GQA_VERSION);
    cr_assert_eq(p29.splits, p.splits);
    cr_assert_eq(p29.workspace_bytes, p.workspace_bytes);
    /* a forced cut of version 0 runs the version its blocks ask for: 2
     * chunks are 256 blocks (29), 1 again 128 (36) */
    pf_gpu_attn_plan f = p;
    cr_assert_eq(pf_gpu__plan_set_splits(&f, 2, lens16), PF_OK);
    pf_gpu__plan_pick_depth(&f);
    cr_assert_eq(f.version, PF_GPU_GQA_VERSION, "256 blocks: version %d", f.version);
    cr_assert_eq(pf_gpu__plan_set_splits(&f, 1, lens16), PF_OK);
    pf_gpu__plan_pick_depth(&f);
    cr_assert_eq(f.version, PF_GPU_DEEP_GQA_VERSION, "128 blocks: version %d", f.version);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p29, &s, 1, lens16, 0, 0, 120, 4), PF_OK);
    cr_assert_eq(p29.version, PF_GPU_GQA_VERSION, "128 blocks on 120 SMs: version %d", p29.version);
    /* chunks past 4096 tokens only with about 2 blocks an SM (host.c,
     * PLAN_LONG_CHUNK_FILL): 16 x 6144 unsplit would be 128 blocks and 8 x
     * 16384 in 3 chunks 192, each measured slower than the cut below */
    static const int shapes[][4] = {/* seqs, length, splits, chunk */
                                    {16, 6144, 2, 3072},
                                    {8, 16384, 4, 4096},
                                    {32, 8192, 1, 8192},
                                    {16, 12288, 2, 6144}};
    for (int k = 0; k < 4; k++) {
        s.num_seqs = shapes[k][0];
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, shapes[k][1], 0, 132, 4), PF_OK);
        cr_assert_eq(p.splits, shapes[k][2], "%d x %d: %d splits", shapes[k][0], shapes[k][1],
                     p.splits);
        cr_assert_eq(p.chunk, shapes[k][3]);
    }
    s.num_seqs = 8;
    /* at 8-token pages a chunk is at most 512 pages: 8 of 4096 */
    s.block_size = 8;
    s.max_blocks_per_seq = 4096;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    assert_covers(&p, 32768, 8);
    cr_assert_eq(p.chunk, 4096);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 4, lens), PF_ERR_ARG, "1024 pages a chunk");
    /* and the mixed lengths of a batch: every chunk a whole page */
    int mixed[5] = {1, 17, 300, 1024, 2049};
    s.num_seqs = 5;
    s.block_size = 24;
    s.max_blocks_per_seq = 100;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, mixed, 0, 2, 132, 6), PF_OK);
    assert_covers(&p, 2049, 24);
    cr_assert_eq(p.version, 2);
    /* version 0: the measured default, v8 for 16-bit MHA (GQA tile 1), v29
     * for GQA (its plan's 152 blocks are more than one an SM) */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, mixed, 0, 0, 132, 6), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION, "%lld blocks: version %d", pf_gpu__plan_blocks(&p),
                 p.version);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 152);
    s.num_kv_heads = s.num_q_heads;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, mixed, 0, 0, 132, 6), PF_OK);
    cr_assert_eq(p.version, 8);
}

Test(gpu_host, plan_accepts_empty_sequences_and_refuses_overlong_ones)
{
    int lens[3] = {0, -5, 0};
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 3;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.splits, 1);
    cr_assert_geq(p.max_len, 1);
    lens[1] = 4097; /* the table holds 256 x 16 = 4096 tokens */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4097, 0, 132, 4), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 0, 0, 132, 4), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 100, 0, 0, 4), PF_ERR_ARG);
    cr_assert_neq(p.magic, PF_GPU_PLAN_MAGIC); /* a refused plan cannot be run */
}

/* The longest sequence a plan takes is PF_GPU_MAX_SEQ_TOKENS (2^20: 256
 * chunks of 4096), for a bound and for lengths alike; the validator allows
 * capacities past it (the one-shot calls, which plan at capacity, refuse
 * those: gpu.h), and plans from the lengths of such a shape work. */
Test(gpu_host, plan_takes_sequences_up_to_the_documented_longest)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 2;
    s.max_blocks_per_seq = 2 * PF_GPU_MAX_SEQ_TOKENS / s.block_size; /* capacity 2^21 */
    cr_assert_eq(pf_gpu_attn_validate(&s, 1), PF_OK);
    pf_gpu_attn_plan p;
    for (int v = 0; v <= 19; v += 19) {
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, PF_GPU_MAX_SEQ_TOKENS, v, 132, 4),
                     PF_OK, "version %d", v);
        cr_assert_leq(p.splits, PF_GPU_MAX_SPLITS);
        cr_assert_leq(p.chunk, PF_GPU_CHUNK_MAX_TOKENS);
        cr_assert_geq((long long)p.splits * p.chunk, PF_GPU_MAX_SEQ_TOKENS);
        cr_assert_eq(
            pf_gpu_attn_plan_compute(&p, &s, 1, NULL, PF_GPU_MAX_SEQ_TOKENS + 1, v, 132, 4),
            PF_ERR_ARG, "version %d", v);
        /* at capacity, as the one-shot calls plan */
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, s.max_blocks_per_seq * s.block_size,
                                              v, 132, 4),
                     PF_ERR_ARG);
        int lens[2] = {700, PF_GPU_MAX_SEQ_TOKENS};
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_OK);
        lens[1]++;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_ERR_ARG);
    }
}

/* A chunk's cap (gpu.h): at most 512 pages (the block's table cache) and
 * 8192 tokens, whole pages, 4096 for the cluster versions; the longest
 * sequence stays 2^20 at 16-token pages, where 256 chunks would hold 2^21. */
Test(gpu_host, chunk_cap_is_pages_and_tokens)
{
    const int B[] = {8, 16, 24, 48, 128, 256};
    const int most[] = {4096, 8192, 8184, 8160, 8192, 8192};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(pf_gpu_chunk_max_tokens(B[i], 29), most[i], "%d-token pages", B[i]);
        cr_assert_eq(pf_gpu_chunk_max_tokens(B[i], 0), most[i]);
        cr_assert_leq(pf_gpu_chunk_max_tokens(B[i], 29) / B[i], PF_GPU_CHUNK_MAX_PAGES);
        const int c = pf_gpu_chunk_max_tokens(B[i], 9);
        cr_assert_eq(c % B[i], 0);
        cr_assert(c <= 4096 && c > 4096 - B[i], "v9 at %d-token pages: %d", B[i], c);
    }
    cr_assert_eq(pf_gpu_chunk_max_tokens(0, 29), 0);
    /* planned: no chunk past its cap, and forced splits respect it too */
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 1;
    s.max_blocks_per_seq = PF_GPU_MAX_SEQ_TOKENS / 16 + 1;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, PF_GPU_MAX_SEQ_TOKENS, 29, 132, 4),
                 PF_OK);
    cr_assert_leq(p.chunk, 8192);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, PF_GPU_MAX_SEQ_TOKENS + 16, 29, 132, 4),
                 PF_ERR_ARG, "2^20 is the longest at every page size");
    int len = 3 * 8192;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 29, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 3, &len), PF_OK);
    cr_assert_eq(p.chunk, 8192);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, &len), PF_ERR_ARG, "12288 tokens a chunk");
}

/* ---- issue 9's input: the cost-model profile ---- */

Test(gpu_host, profile_writer_format_and_values)
{
    pf_gpu_profile p = {.device = "NVIDIA H200", .mem_read_gbps = 4612.5,
                        .attn_kv_gbps = 4401.25, .attn_fixed_us = 6.5};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    cr_assert_eq(pf_gpu_profile_write(f, &p), PF_OK);
    fclose(f);
    /* parse it back as the simulator's reader will: key = value, # comments */
    int seen = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char key[64], val[128];
        if (sscanf(line, " %63[a-z_] = %127[^\n]", key, val) != 2)
            continue;
        for (char *e = val + strlen(val); e > val && e[-1] == ' '; e--)
            e[-1] = '\0';
        if (!strcmp(key, "format")) {
            cr_assert_str_eq(val, "pagefault-gpu-profile/1");
            seen |= 1;
        } else if (!strcmp(key, "device")) {
            cr_assert_str_eq(val, "NVIDIA H200");
            seen |= 2;
        } else {
            double x = strtod(val, NULL);
            cr_assert(isfinite(x) && x > 0, "%s = %s", key, val);
            const char *names[3] = {"mem_read_gbps", "attn_kv_gbps", "attn_fixed_us"};
            const double want[3] = {4612.5, 4401.25, 6.5};
            for (int k = 0; k < 3; k++)
                if (!strcmp(key, names[k])) {
                    cr_assert_float_eq(x, want[k], 0.05, "%s = %s", key, val);
                    seen |= 4 << k;
                }
        }
    }
    cr_assert_eq(seen, 31, "keys seen: %#x\n%s", seen, buf);
    free(buf);
}

/* The writer's file is what the simulator's reader takes, to the last bit
 * (the reader is sim/cost.c's; one format, one writer). */
Test(gpu_host, profile_written_loads_exactly_into_the_cost_model)
{
    pf_gpu_profile p = {.device = "NVIDIA H100 # 80GB\nSXM", .mem_read_gbps = 3123.4567890123,
                        .attn_kv_gbps = 2987.25, .attn_fixed_us = 17.4};
    char path[] = "/tmp/pf_profile_XXXXXX", err[256] = "";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_eq(pf_gpu_profile_write(f, &p), PF_OK);
    fclose(f);
    pf_cost c;
    cr_assert_eq(pf_cost_init(&c, pf_model_find("llama3-8b"), pf_gpu_find("h200"), 1e-3), PF_OK);
    cr_assert_eq(pf_cost_load_profile(&c, path, err, sizeof err), PF_OK, "%s", err);
    unlink(path);
    cr_assert(c.profiled);
    cr_assert_eq(c.mem_bps, 3123.4567890123 * 1e9, "read back exactly");
    cr_assert_eq(c.attn_bps, 2987.25 * 1e9);
    cr_assert_eq(c.attn_fixed_s, 17.4 * 1e-6);
    cr_assert_str_eq(c.profile_device, "NVIDIA H100   80GB SXM");
}

Test(gpu_host, profile_writer_refuses_bad_figures)
{
    const double bad[] = {0.0, -1.0, NAN, INFINITY};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++) {
            pf_gpu_profile p = {.device = "X", .mem_read_gbps = 1, .attn_kv_gbps = 1,
                                .attn_fixed_us = 1};
            double *f = k == 0 ? &p.mem_read_gbps : k == 1 ? &p.attn_kv_gbps : &p.attn_fixed_us;
            *f = bad[i];
            char *buf = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&buf, &len);
            cr_assert_eq(pf_gpu_profile_write(m, &p), PF_ERR_ARG);
            fclose(m);
            cr_assert_eq(len, 0, "wrote %zu bytes for a bad figure", len);
            free(buf);
        }
    pf_gpu_profile p = {.device = "", .mem_read_gbps = 1, .attn_kv_gbps = 1, .attn_fixed_us = 1};
    cr_assert_eq(pf_gpu_profile_write(stdout, &p), PF_ERR_ARG);
}

/* Without a device every call that needs one says so: PF_ERR_UNAVAILABLE,
 * never PF_ERR_ARG (issue 8: CUDA errors keep their meaning; before, a
 * failed cudaDeviceSynchronize was reported as a bad argument). */
Test(gpu_host, device_failures_are_not_bad_arguments)
{
    char why[200] = "";
    if (pf_gpu_available(why, sizeof why))
        return; /* a device is here: test_gpu covers it */
    cr_assert_eq(pf_gpu_sync(), PF_ERR_UNAVAILABLE);
    int x[4] = {0};
    cr_assert_eq(pf_gpu_memset(x, 0, sizeof x), PF_ERR_UNAVAILABLE);
    cr_assert_eq(pf_gpu_memcpy(x, x, sizeof x, PF_GPU_D2D), PF_ERR_UNAVAILABLE);
    void *st = x;
    cr_assert_eq(pf_gpu_stream_create(&st), PF_ERR_UNAVAILABLE);
    cr_assert_null(st, "no stream handed out");
    cr_assert_eq(pf_gpu_stream_create(NULL), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_stream_destroy(NULL), PF_OK);
    pf_gpu_attn_shape s = llama_shape();
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_make(&p, &s, 1, NULL, 4096, 0), PF_ERR_UNAVAILABLE);
    pf_gpu_profile prof;
    char err[200] = "";
    cr_assert_eq(pf_gpu_profile_measure(&prof, 1, err, sizeof err), PF_ERR_UNAVAILABLE);
    cr_assert_gt(strlen(err), 0);
}

/* version 0's choice per shape, as docs/gpu.md measured it (gpu_internal.h) */
Test(gpu_host, default_version_follows_the_measurements)
{
    pf_gpu_attn_shape s = llama_shape();
    cr_assert_eq(pf_gpu_default_version(&s), PF_GPU_GQA_VERSION); /* llama: 1 GiB of K+V */
    s.num_seqs = 1;
    cr_assert_eq(pf_gpu_default_version(&s), 9); /* single: 8 head tiles, small */
    s.num_seqs = 4;
    cr_assert_eq(pf_gpu_default_version(&s), 9); /* 32 pairs */
    s.num_seqs = 5;
    cr_assert_eq(pf_gpu_default_version(&s), PF_GPU_GQA_VERSION);
    /* few pairs, but small only up to PF_GPU_SMALL_TOKENS tokens in all
     * (v9 trailed 29 from 1536 tokens, or two sequences of 1024, on): past
     * it the large launch's plan, here 29's at under one block an SM, so
     * 36 */
    s.num_seqs = 1;
    s.max_blocks_per_seq = 4096;
    pf_gpu_attn_plan p;
    int len = PF_GPU_SMALL_TOKENS + 16;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_DEEP_GQA_VERSION, "1 x 1040: version %d", p.version);
    cr_assert_eq(p.group_tile, 4);
    len = 8 * PF_GPU_CLUSTER_CHUNK_MAX_TOKENS; /* fits a cluster, not small */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 0, 132, 4), PF_OK);
    cr_assert(p.version == PF_GPU_GQA_VERSION || p.version == PF_GPU_DEEP_GQA_VERSION,
              "1 x 32768: 29's plan, version %d", p.version);
    int two[2] = {PF_GPU_SMALL_TOKENS / 2 + 16, 16}; /* the longest, times the sequences */
    s.num_seqs = 2;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, two, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_DEEP_GQA_VERSION, "2 x 528: version %d", p.version);
    two[0] -= 16;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, two, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, 9, "2 x 512: version %d", p.version);
    s.num_seqs = 1;
    len = PF_GPU_SMALL_TOKENS;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, 9);
    /* a small launch: one query head a block, the chunking the group's
     * tile of 4 gets (as measured: plan, then the tile cut) */
    cr_assert_eq(p.group_tile, PF_GPU_SMALL_TILE);
    cr_assert_eq(pf_gpu__plan_head_tiles(&p), 32);
    pf_gpu_attn_plan q;
    cr_assert_eq(pf_gpu_attn_plan_compute(&q, &s, 1, &len, 0, 9, 132, 4), PF_OK);
    cr_assert_eq(q.group_tile, 4, "an explicit version keeps the group's tile");
    cr_assert_eq(q.chunk, p.chunk);
    cr_assert_eq(q.splits, p.splits);
    /* plan_make sizes the SM's slots by the version the planner will run
     * (pf_gpu__plan_version): the same resolution */
    int v = -1;
    cr_assert_eq(pf_gpu__plan_version(&s, 1, &len, 0, 0, &v), PF_OK);
    cr_assert_eq(v, 9);
    len += 16;
    cr_assert_eq(pf_gpu__plan_version(&s, 1, &len, 0, 0, &v), PF_OK);
    cr_assert_eq(v, PF_GPU_GQA_VERSION);
    cr_assert_eq(pf_gpu__plan_version(&s, 1, NULL, PF_GPU_SMALL_TOKENS, 0, &v), PF_OK);
    cr_assert_eq(v, 9, "without lengths, max_len bounds the sequence");
    cr_assert_eq(pf_gpu__plan_version(&s, 1, NULL, 2 * PF_GPU_SMALL_TOKENS, 0, &v), PF_OK);
    cr_assert_eq(v, PF_GPU_GQA_VERSION);
    /* version 9 asked for by name is kept, up to what a cluster merges */
    len = 8 * PF_GPU_CLUSTER_CHUNK_MAX_TOKENS;
    cr_assert_eq(pf_gpu__plan_version(&s, 1, &len, 0, 9, &v), PF_OK);
    cr_assert_eq(v, 9, "an explicit version is kept");
    cr_assert_eq(pf_gpu_attn_plan_compute(&q, &s, 1, &len, 0, 9, 132, 4), PF_OK);
    len += 16;
    cr_assert_neq(pf_gpu_attn_plan_compute(&q, &s, 1, &len, 0, 9, 132, 4), PF_OK,
                  "version 9 cannot merge more chunks than a cluster holds");
    len = s.max_blocks_per_seq * s.block_size + 1;
    cr_assert_eq(pf_gpu__plan_version(&s, 1, &len, 0, 0, &v), PF_ERR_ARG, "past the capacity");
    s.dtype = PF_GPU_F32;
    cr_assert_eq(pf_gpu_default_version(&s), 7); /* fp32 small: v9 measured slower (seed) */
    s = llama_shape();
    s.num_seqs = 32;
    s.num_kv_heads = s.num_q_heads; /* MHA (GQA tile 1), 16-bit: 3 stages */
    cr_assert_eq(pf_gpu_default_version(&s), 8);
    s.dtype = PF_GPU_F32; /* fp32, even with tile 1 (the seed workload) */
    cr_assert_eq(pf_gpu_default_version(&s), 7);
    s = llama_shape();
    s.num_q_heads = 12; /* group 3: tile 1 */
    s.num_kv_heads = 4;
    cr_assert_eq(pf_gpu_default_version(&s), 8);
    s = llama_shape();
    s.dtype = PF_GPU_F16; /* fp16 GQA: tensor cores as for bf16 */
    cr_assert_eq(pf_gpu_default_version(&s), PF_GPU_GQA_VERSION);
    s.dtype = PF_GPU_F32; /* fp32 GQA: versions 6 and 12 are 16-bit only */
    cr_assert_eq(pf_gpu_default_version(&s), 7);
}

Test(gpu_host, plan_split_count_can_be_forced)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 1;
    int len = 1000;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 5, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 4, &len), PF_OK);
    cr_assert_eq(p.chunk, 256); /* 250 rounded up to whole pages of 16 */
    cr_assert_eq(p.splits, 4);
    assert_covers(&p, 1000, 16);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 3, &len), PF_OK);
    cr_assert_eq(p.chunk, 336);
    cr_assert_eq(p.splits, 3);
    assert_covers(&p, 1000, 16);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 1, &len), PF_OK);
    cr_assert_eq(p.splits, 1);
    assert_covers(&p, 1000, 16); /* no workspace without a split */
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 0, &len), PF_ERR_ARG);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 257, &len), PF_ERR_ARG);
    p.magic = 0;
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, &len), PF_ERR_ARG);
}

/* A small launch is split, but never below PF_GPU_MIN_CHUNK tokens a chunk
 * (chunks of 64 lost to 128 on the H200, gpu_internal.h). */
Test(gpu_host, plan_keeps_chunks_of_the_minimum)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 1;
    int len = 1024;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 5, 132, 4), PF_OK);
    assert_covers(&p, 1024, 16);
    cr_assert_gt(p.splits, 1, "8 blocks on 132 SMs must be split");
    cr_assert_geq(p.chunk, PF_GPU_MIN_CHUNK);
}

/* The work list of a plan made from lengths (versions 5-8): every chunk
 * that holds tokens exactly once, longest first, a unit for an empty
 * sequence, nothing for a short sequence's empty chunks; only from the very
 * lengths the plan was made of. */
Test(gpu_host, work_list_covers_each_chunk_once_longest_first)
{
    enum { N = 40 };
    int lens[N];
    for (int i = 0; i < N; i++) /* short, medium and long, interleaved */
        lens[i] = i % 5 == 0 ? 3000 + 20 * i : i % 3 == 0 ? 700 + i : 40 + 3 * i;
    lens[7] = 0;
    lens[11] = -5;
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = N;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 7, 132, 4), PF_OK);
    cr_assert_gt(p.units, 0);
    cr_assert_gt(p.splits, 1, "3,400 tokens beside 40 short ones on 528 slots: split");
    assert_covers(&p, p.max_len, 16);
    int *pairs = malloc(sizeof(int) * 2 * (size_t)(p.units + 1));
    cr_assert_not_null(pairs);
    cr_assert_eq(pf_gpu__work_list(&p, lens, pairs), PF_OK);
    cr_assert_eq(pairs[0], PF_GPU_WORK_MAGIC);
    cr_assert_eq(pairs[1], p.units);
    int seen[N][256] = {{0}};
    int prev_tok = INT32_MAX, want_units = 0;
    for (int i = 0; i < N; i++)
        want_units += lens[i] > 0 ? (lens[i] + p.chunk - 1) / p.chunk : 1;
    cr_assert_eq(p.units, want_units);
    for (int u = 0; u < p.units; u++) {
        const int seq = pairs[2 * u + 2], chunk = pairs[2 * u + 3] & 0xffff;
        const int nch = pairs[2 * u + 3] >> 16;
        cr_assert(seq >= 0 && seq < N && chunk >= 0 && chunk < p.splits, "unit %d", u);
        const int len = lens[seq];
        cr_assert_eq(nch, len > 0 ? (len + p.chunk - 1) / p.chunk : 1, "seq %d", seq);
        int tok = len - chunk * p.chunk;
        tok = tok < 0 ? 0 : tok > p.chunk ? p.chunk : tok;
        cr_assert(tok > 0 || (len <= 0 && chunk == 0), "unit %d: seq %d chunk %d is empty", u,
                  seq, chunk);
        cr_assert_leq(tok, prev_tok, "unit %d: %d tokens after %d", u, tok, prev_tok);
        prev_tok = tok;
        seen[seq][chunk]++;
    }
    for (int i = 0; i < N; i++) {
        const int nch = lens[i] > 0 ? (lens[i] + p.chunk - 1) / p.chunk : 1;
        for (int c = 0; c < nch; c++)
            cr_assert_eq(seen[i][c], 1, "seq %d chunk %d seen %d times", i, c, seen[i][c]);
    }
    /* other lengths than the plan's: refused, nothing half-written matters */
    lens[3] += 1;
    cr_assert_eq(pf_gpu__work_list(&p, lens, pairs), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_workspace_init(&p, NULL, (void *)pairs, NULL), PF_ERR_ARG);
    lens[3] -= 1;
    /* a workspace off the 16-byte grid (the merge reads its partials as
     * float4): refused by init and run, with or without a device */
    char *odd = (char *)pairs + 8;
    cr_assert_eq(pf_gpu__workspace_args(&p, lens, pairs), PF_OK);
    cr_assert_eq(pf_gpu__workspace_args(&p, lens, odd), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_workspace_init(&p, lens, odd, NULL), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_run(&p, odd, odd, odd, (int *)odd, (int *)odd, odd, odd, NULL),
                 PF_ERR_ARG);
    /* forcing the chunking rebuilds the count from the same lengths */
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, lens), PF_OK);
    assert_covers(&p, p.max_len, 16);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, NULL), PF_ERR_ARG);
    free(pairs);
}

/* A tail (pf_gpu__plan_set_tail): each block's worth of chunks (8 x tail
 * of the new chunk) becomes one unit of all but its last `tail` chunks
 * with tokens and a unit for each of those; every chunk with tokens is in
 * exactly one unit, the units longest first, their pairs encoded as the
 * kernels decode them. Refused where it cannot run. */
Test(gpu_host, tail_cuts_each_block_into_one_big_unit_and_small_ones)
{
    enum { N = 6 };
    /* whole blocks, a short last block, shorter than one tail, empty */
    int lens[N] = {4096, 4000, 1000, 100, 0, 8192};
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = N;
    s.max_blocks_per_seq = 8192 / 16;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 12, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, lens), PF_OK);
    cr_assert_eq(p.chunk, 4096);
    const int units_before = p.units;
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 0, lens), PF_ERR_ARG);
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 9, lens), PF_ERR_ARG);
    lens[1]++;
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 4, lens), PF_ERR_ARG, "not the plan's lengths");
    lens[1]--;
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 4, NULL), PF_ERR_ARG);
    cr_assert_eq(p.units, units_before, "a refused tail leaves the plan");
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 4, lens), PF_OK);
    cr_assert_eq(p.tail, 4);
    cr_assert_eq(p.chunk, 128, "4096 / (8 x 4)");
    cr_assert_eq(p.splits, 64);
    pf_gpu_ws_layout l;
    pf_gpu__ws_layout(&p, &l);
    cr_assert_eq(l.slots, 2 * (1 + 4), "a slot a unit: 2 runs of 32 chunks, 5 units each");
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 4, lens), PF_ERR_ARG, "one tail a plan");
    int *pairs = malloc(sizeof(int) * 2 * (size_t)(p.units + 1));
    cr_assert_not_null(pairs);
    cr_assert_eq(pf_gpu__work_list(&p, lens, pairs), PF_OK);
    cr_assert_eq(pairs[1], p.units);
    int seen[N][64] = {{0}}, spans[N][64] = {{0}};
    int prev_tok = INT32_MAX;
    for (int u = 0; u < p.units; u++) {
        const int seq = pairs[2 * u + 2], y = pairs[2 * u + 3];
        const int chunk = y & 0xff, span = ((y >> 8) & 0xff) + 1, nch = y >> 16;
        cr_assert(seq >= 0 && seq < N && chunk + span <= 64, "unit %d", u);
        cr_assert_eq(y, PF_GPU_WORK_Y(chunk, span, nch));
        const int len = lens[seq];
        cr_assert_eq(nch, len > 0 ? (len + 127) / 128 : 1, "seq %d", seq);
        cr_assert_eq(chunk / 32, (chunk + span - 1) / 32, "unit %d crosses a block", u);
        int tok = len - chunk * 128;
        tok = tok < 0 ? 0 : tok > span * 128 ? span * 128 : tok;
        cr_assert(tok > 0 || (len <= 0 && chunk == 0), "unit %d is empty", u);
        cr_assert_leq(tok, prev_tok, "unit %d: longest first", u);
        prev_tok = tok;
        for (int c = chunk; c < chunk + span; c++)
            seen[seq][c]++;
        spans[seq][chunk] = span;
    }
    for (int i = 0; i < N; i++) {
        const int nch = lens[i] > 0 ? (lens[i] + 127) / 128 : 1;
        for (int c = 0; c < 64; c++)
            cr_assert_eq(seen[i][c], c < nch, "seq %d chunk %d seen %d times", i, c, seen[i][c]);
    }
    /* 4096: 28 + 4 x 1; 4000 (32 chunks, the last short): the same;
     * 1000 (8 chunks): 4 + 4 x 1; 100 (1 chunk): 1; 8192: twice 28 + 4 */
    cr_assert_eq(spans[0][0], 28);
    cr_assert_eq(spans[0][28], 1);
    cr_assert_eq(spans[1][0], 28);
    cr_assert_eq(spans[2][0], 4);
    cr_assert_eq(spans[2][4], 1);
    cr_assert_eq(spans[3][0], 1);
    cr_assert_eq(spans[5][32], 28);
    cr_assert_eq(p.units, 5 + 5 + 5 + 1 + 1 + 10);
    free(pairs);
    /* what cannot run one: no list, cluster, stealing, 4 head tiles a block */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4096, 12, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 1, lens), PF_ERR_ARG);
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_OK);
        cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, lens), PF_OK, "v%d", v); /* 4096 */
        const int can = v >= 5 && v != 9 && v != 10 && v != 11 && v != 14 && v != 31 && v != 34;
        cr_assert_eq(pf_gpu_version_tail(v), can, "v%d", v);
        cr_assert_eq(pf_gpu__plan_set_tail(&p, 2, lens), can ? PF_OK : PF_ERR_ARG, "v%d", v);
    }
    /* the messages' list of them, as ranges; cut short, still a string */
    char can[64];
    pf_gpu_tail_versions(can, sizeof can);
    cr_assert_str_eq(can, "5-8, 12, 13, 15-30, 32, 33, 35-37");
    pf_gpu_tail_versions(can, 6);
    cr_assert_str_eq(can, "5-8");
    /* bindings check their mirror of the plan against this */
    size_t bytes = 0, magic_at = 0;
    pf_gpu_attn_plan_layout(&bytes, &magic_at);
    cr_assert_eq(bytes, sizeof(pf_gpu_attn_plan));
    cr_assert_eq(magic_at, offsetof(pf_gpu_attn_plan, magic));
    /* 256-token pages: 4096 / 32 = 128 is half a page */
    s.block_size = 256;
    s.max_blocks_per_seq = 8192 / 256;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 12, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, lens), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 4, lens), PF_ERR_ARG);
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 2, lens), PF_OK, "256-token chunks");
}

/* Version 33 packs whole sequences: a block streams `pack` consecutive
 * units of the work list (a multiple of its 4 warps) when the plan splits
 * no sequence and its blocks outnumber the slots, as many as keep
 * PLAN_PACK_FILL (0.9) of the slots busy and pack x chunk within the table
 * cache's 4096 tokens. */
Test(gpu_host, pack_streams_whole_sequences_when_blocks_outnumber_slots)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 256; /* batch: 256 x 1024, 8 head tiles a sequence */
    s.max_blocks_per_seq = 1024 / 16;
    int lens[256];
    for (int i = 0; i < 256; i++)
        lens[i] = 1024;
    pf_gpu_attn_plan p;
    /* 2048 blocks for 132 x 4 slots: 4 sequences a block, 512 blocks */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(p.splits, 1);
    cr_assert_eq(p.chunk, 1024);
    cr_assert_eq(p.units, 256);
    cr_assert_eq(p.pack, 4, "pack %d", p.pack);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 64 * 8);
    /* the same plan for version 29, which does not pack */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 29, 132, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 256 * 8);
    /* 150 x 4 slots: 4 a block would leave 512 of 600 busy, under 0.9 */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 150, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 256 * 8);
    /* as many slots as blocks: nothing to gain */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 512, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    /* 128-token sequences: the table cache would take 32 a block, the
     * slots 4 (8 would leave 32 x 8 = 256 blocks for 528 slots) */
    for (int i = 0; i < 256; i++)
        lens[i] = 128;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(p.chunk, 128);
    cr_assert_eq(p.pack, 4, "pack %d", p.pack);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 64 * 8);
    /* forced packs: 1 or multiples of 4 up to 32 within the table cache,
     * version 33's unsplit 16-bit plans only; one is none */
    for (int i = 0; i < 256; i++)
        lens[i] = 1024;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 16), PF_ERR_ARG, "16 x 1024 tokens: 1024 pages");
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 8), PF_OK, "8 x 1024 tokens: 512 pages");
    cr_assert_eq(pf_gpu__plan_blocks(&p), 32 * 8);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 0), PF_ERR_ARG);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 2), PF_ERR_ARG, "a sequence a warp: 4 warps");
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 1), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 256 * 8);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 64 * 8);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 1), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 256 * 8);
    /* what undoes a pack: a forced split, a tail, grid order */
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 2, lens), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_ERR_ARG, "split plans are not packed");
    cr_assert_eq(pf_gpu__plan_set_tail(&p, 1, lens), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 132, 4), PF_OK);
    pf_gpu__plan_drop_list(&p);
    cr_assert_eq(p.pack, 0);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_ERR_ARG, "a pack is units of the list");
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 29, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_ERR_ARG, "version 29 does not pack");
    s.dtype = PF_GPU_F32;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(p.pack, 0, "fp32 runs version 5's kernel: no pack");
    cr_assert_eq(pf_gpu__plan_set_pack(&p, 4), PF_ERR_ARG);
    /* llama (one 4096-token chunk a sequence fills the cache) and long
     * (split) are not packed */
    s = llama_shape();
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4096, 33, 132, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    int llama[64];
    for (int i = 0; i < 64; i++)
        llama[i] = 4096;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, llama, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    s.num_seqs = 8;
    s.max_blocks_per_seq = 32768 / 16;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, llama, 0, 33, 132, 4), PF_OK);
    cr_assert_eq(p.pack, 0);
    cr_assert(pf_gpu_version_takes_pack(33) && !pf_gpu_version_takes_pack(29));
}

/* Without lengths, or with a version that merges in a second launch or in
 * a cluster, the blocks run in grid order: no list. */
Test(gpu_host, work_list_only_from_lengths_and_fused_versions)
{
    int lens[64];
    for (int i = 0; i < 64; i++)
        lens[i] = 100 + 61 * i;
    pf_gpu_attn_shape s = llama_shape();
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4096, 7, 132, 4), PF_OK);
    cr_assert_eq(p.units, 0);
    int pairs[4];
    cr_assert_eq(pf_gpu__work_list(&p, lens, pairs), PF_ERR_ARG);
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++) {
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_OK);
        cr_assert_eq(p.units > 0, (v >= 5 && v <= 8) || (v >= 11 && v != 31),
                     "version %d: %d units", v, p.units);
        assert_covers(&p, p.max_len, 16);
    }
    /* version 11 shares its work out from the list: no plan without one */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4096, 11, 132, 4), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 11, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 1, lens), PF_OK);
    cr_assert_gt(p.workspace_bytes, 0, "v11 keeps partials even unsplit");
    assert_covers(&p, p.max_len, 16);
}

/* Versions 9, 10 and 31 merge a sequence's chunks inside one thread-block
 * cluster: at most PF_GPU_CLUSTER_MAX chunks, no work list, no workspace. */
Test(gpu_host, cluster_version_keeps_a_sequence_in_one_cluster)
{
    const int vs[] = {9, 10, 31};
    for (int i = 0; i < 3; i++) {
        const int v = vs[i];
        cr_assert(pf_gpu_version_cluster(v) && !pf_gpu_version_listed(v));
        pf_gpu_attn_shape s = llama_shape();
        s.num_seqs = 1;
        int len = 1024;
        pf_gpu_attn_plan p;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, v, 132, 4), PF_OK);
        cr_assert_gt(p.splits, 1, "v%d: one sequence on 132 SMs: split", v);
        cr_assert_leq(p.splits, PF_GPU_CLUSTER_MAX);
        cr_assert_eq(p.units, 0);
        cr_assert_eq(p.workspace_bytes, 0);
        cr_assert_eq(pf_gpu__plan_set_splits(&p, PF_GPU_CLUSTER_MAX, &len), PF_OK);
        cr_assert_eq(pf_gpu__plan_set_splits(&p, 2 * PF_GPU_CLUSTER_MAX, &len), PF_ERR_ARG);
        /* 8 x 4096 tokens is the longest a cluster covers */
        s.max_blocks_per_seq = 4096;
        len = 8 * PF_GPU_CLUSTER_CHUNK_MAX_TOKENS;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, v, 132, 4), PF_OK);
        cr_assert_eq(p.splits, PF_GPU_CLUSTER_MAX);
        len += 16;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, v, 132, 4), PF_ERR_ARG);
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 7, 132, 4), PF_OK);
    }
}

/* The block timeline's summary on records whose answer is worked out by
 * hand: SM 0 runs blocks 0 and 1 (overlapping, so it is busy from 1000 to
 * 9000 ns), SM 1 runs block 2 (1000 to 3000); block 1 found no tokens. */
Test(gpu_host, timeline_summary_of_known_records)
{
    const unsigned long long rec[3 * PF_GPU_TRACE_WORDS] = {
        1000, 1500, 4500, 5000, 0, /* start, first tile, last tile, end, SM */
        2000, 0,    0,    9000, 0, /**/
        1000, 1200, 2200, 3000, 1,
    };
    pf_gpu_timeline t;
    cr_assert_eq(pf_gpu_timeline_summarize(rec, 3, &t), PF_OK);
    cr_assert_eq(t.blocks, 3);
    cr_assert_eq(t.sms, 2);
    cr_assert_float_eq(t.span_us, 8.0, 1e-9);
    cr_assert_float_eq(t.last_start_us, 1.0, 1e-9);
    cr_assert_float_eq(t.ready_us, 0.35, 1e-9);  /* median of 0.5 and 0.2 */
    cr_assert_float_eq(t.stream_us, 2.0, 1e-9);  /* of 3 and 1 */
    cr_assert_float_eq(t.finish_us, 0.65, 1e-9); /* of 0.5 and 0.8 */
    cr_assert_float_eq(t.run_us, 4.0, 1e-9);     /* of 4, 7 and 2 */
    cr_assert_float_eq(t.first_end_us, 2.0, 1e-9);
    cr_assert_float_eq(t.median_end_us, 4.0, 1e-9);
    cr_assert_float_eq(t.sm_busy, (8.0 + 2.0) / (2 * 8.0), 1e-12);

    /* a gap on one SM is not busy time */
    const unsigned long long gap[2 * PF_GPU_TRACE_WORDS] = {100, 0, 0, 200, 7, 300, 0, 0, 400, 7};
    cr_assert_eq(pf_gpu_timeline_summarize(gap, 2, &t), PF_OK);
    cr_assert_float_eq(t.sm_busy, 200.0 / 300.0, 1e-12);

    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_assert_eq(pf_gpu_timeline_write(f, rec, 3), PF_OK);
    rewind(f);
    char line[128];
    const char *want[] = {"block,sm,start_us,ready_us,streamed_us,end_us\n",
                          "0,0,0.000,0.500,3.500,4.000\n", "1,0,1.000,,,8.000\n",
                          "2,1,0.000,0.200,1.200,2.000\n"};
    for (int i = 0; i < 4; i++) {
        cr_assert_not_null(fgets(line, sizeof line, f));
        cr_assert_str_eq(line, want[i]);
    }
    cr_assert_null(fgets(line, sizeof line, f));
    fclose(f);
}

/* Records a kernel did not write (or wrote wrong) are refused, not averaged. */
Test(gpu_host, timeline_refuses_what_is_not_a_record)
{
    pf_gpu_timeline t;
    const unsigned long long ok[PF_GPU_TRACE_WORDS] = {10, 20, 25, 30, 5};
    cr_assert_eq(pf_gpu_timeline_summarize(ok, 1, &t), PF_OK);
    cr_assert_eq(pf_gpu_timeline_summarize(ok, 0, &t), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_timeline_summarize(NULL, 1, &t), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_timeline_summarize(ok, 1, NULL), PF_ERR_ARG);
    const unsigned long long bad[][PF_GPU_TRACE_WORDS] = {
        {0, 0, 0, 0, 0},       /* never started: the block was not traced */
        {30, 0, 0, 20, 0},     /* ends before it starts */
        {10, 40, 45, 30, 0},   /* tiles after the end */
        {10, 5, 25, 30, 0},    /* first tile before the start */
        {10, 25, 20, 30, 0},   /* last tile before the first */
        {10, 20, 0, 30, 0},    /* a first tile without a last */
        {10, 0, 20, 30, 0},    /* a last tile without a first */
        {10, 20, 25, 30, 4096}, /* no such SM */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pf_gpu_timeline_summarize(bad[i], 1, &t), PF_ERR_ARG, "record %zu", i);
        cr_assert_eq(pf_gpu_timeline_write(stdout, bad[i], 1), PF_ERR_ARG, "record %zu", i);
    }
}

/* A block serves the largest tile of 1, 2, 4, 8 query heads that divides
 * the group, unless told otherwise (bench --group-tile): then the blocks,
 * and the workspace sized by them, follow the tile. */
Test(gpu_host, group_tile_can_be_forced)
{
    int lens[8] = {1000, 3000, 20, 4096, 1, 700, 2500, 90};
    pf_gpu_attn_shape s = llama_shape(); /* group 4 */
    s.num_seqs = 8;
    for (int v = 7; v <= 11; v += 4) {
        pf_gpu_attn_plan p;
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_OK);
        cr_assert_eq(p.group_tile, 4);
        cr_assert_eq(pf_gpu__plan_head_tiles(&p), 8);
        const size_t ws4 = p.workspace_bytes;
        cr_assert_eq(pf_gpu__plan_set_group_tile(&p, 1), PF_OK);
        cr_assert_eq(p.group_tile, 1);
        cr_assert_eq(pf_gpu__plan_head_tiles(&p), 32);
        assert_covers(&p, p.max_len, 16);
        if (v == 11) /* a claim word per item: 4 times the items */
            cr_assert_gt(p.workspace_bytes, ws4);
        cr_assert_eq(pf_gpu__plan_set_group_tile(&p, 2), PF_OK);
        assert_covers(&p, p.max_len, 16);
        const int bad[] = {0, 3, 8, 16, -1};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            cr_assert_eq(pf_gpu__plan_set_group_tile(&p, bad[i]), PF_ERR_ARG, "tile %d", bad[i]);
            cr_assert_eq(p.group_tile, 2, "a refused tile leaves the plan alone");
        }
    }
    pf_gpu_attn_plan none;
    memset(&none, 0, sizeof none);
    cr_assert_eq(pf_gpu__plan_set_group_tile(&none, 1), PF_ERR_ARG);
}

/* The launch's blocks, as the launcher sizes its grid and the timeline its
 * records: grid order, a work list, and version 11's one wave at most. */
Test(gpu_host, plan_blocks_follow_the_launch_grid)
{
    enum { N = BATCH_N };
    int lens[N];
    pf_gpu_attn_shape s = batch_shape(lens); /* 256 units of 8 head tiles, 2048 items */
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 7, 132, 4), PF_OK);
    cr_assert_eq(p.units, N);
    cr_assert_eq(pf_gpu__plan_blocks(&p), (long long)N * 8);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 11, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 132 * 4, "v11: one wave of 528, not 2048 items");
    cr_assert_eq(pf_gpu__plan_set_group_tile(&p, 1), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 132 * 4);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 11, 1, 1), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 1, "one slot: one persistent block");
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 3, 132, 4), PF_OK);
    cr_assert_eq(p.units, 0);
    cr_assert_eq(pf_gpu__plan_blocks(&p), (long long)p.splits * 8 * N);
}

/* Versions 14 and 34 (12's and 29's arithmetic) serve 4 head tiles a
 * block (a warp each): a sequence's chunk
 * launches a quarter of the blocks, each reading 4 heads' bytes; llama is
 * split to fill the machine, batch stays unsplit at 512 blocks, the
 * counters are sized per block (in assert_covers), and fp32, which runs
 * version 5's kernel under both numbers, keeps one tile a block. */
static void assert_serves_four_head_tiles(int mh)
{
    enum { N = 256 };
    int lens[N];
    for (int i = 0; i < N; i++)
        lens[i] = 4096;
    pf_gpu_attn_shape s = llama_shape();
    pf_gpu_attn_plan p, q;
    cr_assert_eq(pf_gpu_version_heads(mh, PF_GPU_BF16), 4);
    cr_assert_eq(pf_gpu_version_heads(mh, PF_GPU_F32), 1);
    cr_assert_eq(pf_gpu_version_heads(12, PF_GPU_BF16), 1);
    cr_assert_eq(pf_gpu_attn_plan_compute(&q, &s, 1, lens, 0, 12, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, mh, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_head_tiles(&q), 8);
    cr_assert_eq(pf_gpu__plan_head_tiles(&p), 2, "8 KV heads' tiles, 4 a block");
    cr_assert_eq(q.splits, 1);
    cr_assert_eq(pf_gpu__plan_blocks(&p), (long long)p.splits * 2 * 64);
    /* 128 blocks of 4 heads would leave most of 528 slots empty (a block
     * has one tile's bytes in flight): the plan splits to fill them */
    cr_assert_geq(pf_gpu__plan_blocks(&p), 132 * 4 * 3 / 4, "%d chunks", p.splits);
    cr_assert_leq(pf_gpu__plan_blocks(&p), 132 * 4);
    assert_covers(&p, 4096, 16);
    /* forced to 4 chunks of 1024 (the bench's --splits 4): 512 blocks,
     * and a counter per (sequence, block of heads) */
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 4, lens), PF_OK);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 4 * 2 * 64);
    assert_covers(&p, 4096, 16);
    /* batch: 256 x 2 blocks of 1024 tokens already fill it */
    for (int i = 0; i < N; i++)
        lens[i] = 1024;
    s.num_seqs = N;
    s.max_blocks_per_seq = 64;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, mh, 132, 4), PF_OK);
    cr_assert_eq(p.splits, 1);
    cr_assert_eq(pf_gpu__plan_blocks(&p), (long long)N * 2);
    /* tiles that are not a multiple of 4 round up: 3 KV heads, group 2 */
    s.num_kv_heads = 3;
    s.num_q_heads = 6;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, mh, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_head_tiles(&p), 1);
    assert_covers(&p, 1024, 16);
    s.dtype = PF_GPU_F32;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, mh, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_head_tiles(&p), 3);
    assert_covers(&p, 1024, 16);
}

Test(gpu_host, versions_14_and_34_serve_four_head_tiles_a_block)
{
    assert_serves_four_head_tiles(14);
    assert_serves_four_head_tiles(34);
    cr_assert_eq(pf_gpu_version_heads(29, PF_GPU_BF16), 1);
    cr_assert_eq(pf_gpu_version_heads(33, PF_GPU_F16), 1);
}

/* Versions whose sums' order moves at run time (11: work stealing; 37:
 * the warps claim their tiles) are the ones checked within the tolerance
 * and an output ulp instead of bitwise; the ulp is the output type's at
 * the value's magnitude. */
Test(gpu_host, order_moving_versions_are_checked_within_an_output_ulp)
{
    for (int v = 1; v <= PF_GPU_KERNEL_VERSIONS; v++)
        cr_assert_eq(pf_gpu_version_exact(v), v != 11 && v != PF_GPU_CLAIM_VERSION, "v%d", v);
    cr_assert_eq(PF_GPU_CLAIM_VERSION, 37);
    /* bf16: 8 significant bits; 0.3 lies in [0.25, 0.5): 2^-2 x 2^-7 */
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_BF16, 0.3), ldexp(1.0, -9));
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_BF16, -0.3), ldexp(1.0, -9), "by magnitude");
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_BF16, 1.0), ldexp(1.0, -7));
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_BF16, 0.999), ldexp(1.0, -8));
    /* fp16: 11 bits; fp32: 24 */
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_F16, 0.3), ldexp(1.0, -12));
    cr_assert_eq(pf_gpu_out_ulp(PF_GPU_F32, 1.0), ldexp(1.0, -23));
    /* the mixed workload's 1-ulp difference of the thirty-fifth session
     * (0.00195 at an output of 0.25-0.5) is within 1e-3 and an ulp */
    cr_assert_leq(0.001953125, 1e-3 + pf_gpu_out_ulp(PF_GPU_BF16, 0.3));
    cr_assert_gt(0.001953125 * 2, 1e-3 + pf_gpu_out_ulp(PF_GPU_BF16, 0.3), "two ulps are not");
}

/* Version 0 on a large 16-bit GQA launch is version 34 (29 with a head
 * tile a warp) where 34's plan splits no sequence, else 29
 * (gpu_internal.h, PF_GPU_MH_GQA_VERSION): batch (256 x 1024) runs 34 in
 * 512 unsplit blocks, from lengths or from a bound; llama (64 x 4096),
 * whose 34 plan splits, runs 29; so do head tiles that are not a multiple
 * of 4 (GQA 8/2: two of a block's warps would idle) and fp32 its 7. */
Test(gpu_host, version_0_takes_a_head_tile_a_warp_where_it_needs_no_split)
{
    enum { N = BATCH_N };
    int lens[N];
    pf_gpu_attn_shape s = batch_shape(lens);
    pf_gpu_attn_plan p, q;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION);
    cr_assert_eq(p.splits, 1);
    cr_assert_eq(pf_gpu__plan_blocks(&p), 2 * N, "8 KV heads' tiles, 4 a block");
    cr_assert_eq(pf_gpu_attn_plan_compute(&q, &s, 1, lens, 0, PF_GPU_MH_GQA_VERSION, 132, 4),
                 PF_OK);
    cr_assert_eq(q.chunk, p.chunk, "the plan version 34 makes itself");
    cr_assert_eq(q.units, p.units);
    cr_assert_eq(q.workspace_bytes, p.workspace_bytes);
    assert_covers(&p, 1024, 16);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 1024, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION, "from a bound too");
    cr_assert_eq(p.splits, 1);
    /* fp16 alike; fp32 runs version 7 */
    s.dtype = PF_GPU_F16;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_MH_GQA_VERSION);
    s.dtype = PF_GPU_F32;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, 7);
    /* llama: 34 would split each sequence in chunks a quarter of 29's */
    s = llama_shape();
    cr_assert_eq(pf_gpu_attn_plan_compute(&q, &s, 1, NULL, 4096, PF_GPU_MH_GQA_VERSION, 132, 4),
                 PF_OK);
    cr_assert_gt(q.splits, 1);
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, NULL, 4096, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION);
    /* GQA 8/2: 2 head tiles of 4, unsplit as a batch, still 29 */
    s.num_seqs = N;
    s.num_q_heads = 8;
    s.num_kv_heads = 2;
    s.max_blocks_per_seq = 64;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION);
    /* the same at 1024 sequences: enough blocks, and still 29 */
    int many[4 * N];
    for (int i = 0; i < 4 * N; i++)
        many[i] = 1024;
    s.num_seqs = 4 * N;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, many, 0, 0, 132, 4), PF_OK);
    cr_assert_eq(p.version, PF_GPU_GQA_VERSION);
    cr_assert_eq(p.splits, 1);
}

/* A cluster holds whole pages of at most 4096 tokens a chunk, so 8 x 4080
 * tokens at 48-token pages: version 9 plans 32640 and refuses one more
 * (until the twenty-first session version 0 counted 8 x 4096 and kept
 * version 9 for 32641-32768 tokens, where the plan was refused; since the
 * thirty-fourth a sequence that long is never a small launch, and version
 * 0 runs 29's plan). */
Test(gpu_host, cluster_counts_whole_pages)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 1;
    s.block_size = 48;
    s.max_blocks_per_seq = 700;
    pf_gpu_attn_plan p;
    int v = -1, len = 8 * (PF_GPU_CLUSTER_CHUNK_MAX_TOKENS / 48 * 48); /* 32640: one cluster */
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 9, 132, 4), PF_OK);
    cr_assert_eq(p.version, 9);
    cr_assert_eq(p.chunk, 4080);
    cr_assert_eq(p.splits, 8);
    for (len = 32641; len <= 32768; len += 127) {
        cr_assert_neq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 9, 132, 4), PF_OK,
                      "%d tokens", len);
        cr_assert_eq(pf_gpu__plan_version(&s, 1, &len, 0, 0, &v), PF_OK);
        cr_assert_eq(v, PF_GPU_GQA_VERSION, "%d tokens", len);
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, &len, 0, 0, 132, 4), PF_OK,
                     "%d tokens", len);
        cr_assert(p.version == PF_GPU_GQA_VERSION || p.version == PF_GPU_DEEP_GQA_VERSION,
                  "%d tokens: 29's plan, version %d", len, p.version);
    }
    /* the naive layout's chunks are multiples of 16, which divides 4096 */
    len = 8 * PF_GPU_CLUSTER_CHUNK_MAX_TOKENS;
    s.naive_cap = len;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 0, NULL, len, 9, 132, 4), PF_OK);
    cr_assert_eq(p.chunk, PF_GPU_CLUSTER_CHUNK_MAX_TOKENS);
}

/* Forcing a smaller head tile multiplies the launch's items: past INT_MAX
 * it is refused (set_splits and set_tail already were), and the plan keeps
 * its tile. */
Test(gpu_host, group_tile_refuses_a_launch_past_int_max)
{
    pf_gpu_attn_shape g = {.num_seqs = 256, .num_q_heads = 32768, .num_kv_heads = 4096,
                           .head_dim = 64, .block_size = 16, .max_blocks_per_seq = 256,
                           .dtype = PF_GPU_BF16};
    static int lens[256];
    for (int i = 0; i < 256; i++)
        lens[i] = 4096;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &g, 1, lens, 0, 7, 132, 4), PF_OK);
    cr_assert_eq(pf_gpu__plan_set_splits(&p, 256, lens), PF_OK);
    cr_assert_eq(p.group_tile, 8);
    cr_assert_leq((long long)p.units * pf_gpu__plan_head_tiles(&p), INT_MAX);
    cr_assert_eq(pf_gpu__plan_set_group_tile(&p, 1), PF_ERR_ARG);
    cr_assert_eq(p.group_tile, 8, "a refused tile leaves the plan as it was");
    cr_assert_eq(pf_gpu__plan_set_group_tile(&p, 8), PF_OK);
}

/* A naive plan at a capacity of INT_MAX tokens: refused (no chunking
 * serves it), with no signed overflow on the way (UBSan in CI). */
Test(gpu_host, naive_plan_at_int_max_is_refused_cleanly)
{
    pf_gpu_attn_shape s = llama_shape();
    s.num_seqs = 1;
    s.naive_cap = INT_MAX;
    pf_gpu_attn_plan p;
    cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 0, NULL, INT_MAX, 12, 132, 4), PF_ERR_ARG);
}

/* The argument checks that come before any device work answer the same in
 * both builds (this test links the stub without CUDA, the real library
 * with it; no device here either way). */
Test(gpu_host, argument_errors_before_the_device_in_both_builds)
{
    pf_gpu_attn_shape s = llama_shape();
    int tab = 0, len = 1;
    char buf[16] = {0};
    cr_assert_eq(pf_gpu_append_kv(&s, buf, buf, -1, &tab, &len, buf, buf, NULL), PF_ERR_ARG);
    cr_assert_eq(pf_gpu_append_kv(&s, NULL, buf, 1, &tab, &len, buf, buf, NULL), PF_ERR_ARG);
    s.head_dim = 96;
    cr_assert_eq(pf_gpu_append_kv(&s, buf, buf, 1, &tab, &len, buf, buf, NULL), PF_ERR_ARG);
    pf_gpu_attn_plan unmade;
    memset(&unmade, 0, sizeof unmade);
    pf_gpu_attn_graph *g = (pf_gpu_attn_graph *)buf;
    cr_assert_eq(pf_gpu_attn_graph_make(NULL, &unmade, buf, buf, buf, &tab, &len, buf, NULL),
                 PF_ERR_ARG);
    cr_assert_eq(pf_gpu_attn_graph_make(&g, &unmade, buf, buf, buf, &tab, &len, buf, NULL),
                 PF_ERR_ARG);
    cr_assert_null(g, "a refused capture leaves no graph");
    cr_assert_eq(pf_gpu_attn_graph_launch(NULL, 1, NULL), PF_ERR_ARG);
}

/* One sequence of two chunks' tokens (16384) among 32768 of one, 32 KV
 * heads: the first chunk that fits makes 2 units of the long one, and
 * every candidate's list is past what the planner simulates (2^20 blocks).
 * The plan failed (PF_ERR_ARG) where a bound of that length plans fine; now
 * it falls back to grid order, as a longer list does. */
Test(gpu_host, a_list_too_long_to_simulate_plans_in_grid_order)
{
    enum { N = 32768, LONG = 2 * PF_GPU_CHUNK_MAX_TOKENS };
    pf_gpu_attn_shape s = llama_shape();
    s.num_q_heads = 32;
    s.num_kv_heads = 32;
    s.dtype = PF_GPU_F16;
    s.num_seqs = N;
    s.max_blocks_per_seq = LONG / 16;
    int *lens = malloc(N * sizeof *lens);
    cr_assert_not_null(lens);
    for (int i = 0; i < N; i++)
        lens[i] = 1;
    lens[N / 2] = LONG;
    pf_gpu_attn_plan p, b;
    for (int v = 0; v <= 8; v += 8) {
        cr_assert_eq(pf_gpu_attn_plan_compute(&p, &s, 1, lens, 0, v, 132, 4), PF_OK, "version %d", v);
        cr_assert_eq(pf_gpu_attn_plan_compute(&b, &s, 1, NULL, LONG, v, 132, 4), PF_OK);
        cr_expect_eq(p.units, 0, "version %d: a list of %d units", v, p.units);
        cr_expect_eq(p.splits, b.splits, "version %d: %d splits from the lengths, %d from the bound", v,
                     p.splits, b.splits);
        cr_expect_geq(p.splits * p.chunk, LONG);
    }
    free(lens);
}

/* ---- which launches get a graph (pf_gpu_graph_lru) ----
 *
 * A model of kernels.cu's graph_launch over the policy: slots holding
 * exact keys, looked up first; on a miss the policy names a slot to make
 * the key's graph in, or none (a direct launch). Keys are small integers
 * here and their own hashes. */
typedef struct {
    pf_gpu_graph_lru lru;
    unsigned long long key[PF_GPU_GRAPH_SLOTS];
    int makes, replays, direct;
} graph_model;

static void graph_model_launch(graph_model *m, unsigned long long key)
{
    for (int i = 0; i < PF_GPU_GRAPH_SLOTS; i++)
        if (m->key[i] == key) {
            pf_gpu__graph_lru_hit(&m->lru, i);
            m->replays++;
            return;
        }
    const int slot = pf_gpu__graph_lru_miss(&m->lru, key);
    cr_assert(slot >= -1 && slot < PF_GPU_GRAPH_SLOTS, "slot %d", slot);
    if (slot < 0) {
        m->direct++;
        return;
    }
    m->key[slot] = key;
    m->makes++;
}

/* keys first..first+n-1, each launched `per` times in a row (a step of a
 * model with `per` layers), `rounds` times; the counts of the last round */
static graph_model graph_model_steps(graph_model *m, unsigned long long first, int n, int per,
                                     int rounds)
{
    graph_model before = *m;
    for (int r = 0; r < rounds; r++) {
        before = *m;
        for (int k = 0; k < n; k++)
            for (int l = 0; l < per; l++)
                graph_model_launch(m, first + (unsigned long long)k);
    }
    graph_model d = {.makes = m->makes - before.makes,
                     .replays = m->replays - before.replays,
                     .direct = m->direct - before.direct};
    return d;
}

/* keys first..first+n-1 in turn, `rounds` times; the counts of the last round */
static graph_model graph_model_cycle(graph_model *m, unsigned long long first, int n, int rounds)
{
    return graph_model_steps(m, first, n, 1, rounds);
}

Test(gpu_host, a_graph_is_made_for_a_key_that_repeats)
{
    graph_model m = {0};
    graph_model_launch(&m, 7);
    cr_assert_eq(m.direct, 1, "a key's first launch is direct");
    cr_assert_eq(m.makes, 0);
    graph_model_launch(&m, 7);
    cr_assert_eq(m.makes, 1, "its second makes its graph");
    for (int i = 0; i < 100; i++)
        graph_model_launch(&m, 7);
    cr_assert_eq(m.makes, 1);
    cr_assert_eq(m.replays, 100);

    /* grids that never repeat (a batch that only grows) make none */
    graph_model u = {0};
    for (unsigned long long k = 1; k <= 1000; k++)
        graph_model_launch(&u, k);
    cr_assert_eq(u.makes, 0, "%d graphs for keys seen once", u.makes);
    cr_assert_eq(u.direct, 1000);
}

Test(gpu_host, a_loop_over_more_grids_than_slots_stops_making_graphs)
{
    enum { N = PF_GPU_GRAPH_SLOTS + 8 };
    graph_model m = {0};
    graph_model_cycle(&m, 1, N, 50);
    /* made at most one a slot, all in the first rounds: before the policy
     * a cache replaced in turn made one on every launch of such a loop */
    cr_assert_leq(m.makes, PF_GPU_GRAPH_SLOTS, "%d graphs over 50 rounds of %d keys", m.makes, N);
    const graph_model last = graph_model_cycle(&m, 1, N, 1);
    cr_assert_eq(last.makes, 0);
    cr_assert_eq(last.replays, PF_GPU_GRAPH_SLOTS, "a full cache keeps replaying");
    cr_assert_eq(last.direct, N - PF_GPU_GRAPH_SLOTS);

    /* a loop within the slots replays every key from its third round on */
    graph_model f = {0};
    graph_model_cycle(&f, 1, 10, 2);
    const graph_model r3 = graph_model_cycle(&f, 1, 10, 1);
    cr_assert_eq(r3.replays, 10);
    cr_assert_eq(f.makes, 10);
}

Test(gpu_host, keys_in_use_keep_their_graphs_and_idle_ones_give_way)
{
    /* a hot key between unique ones (a prefill's one-off grids between
     * decode steps) is never evicted */
    graph_model m = {0};
    for (unsigned long long k = 1000; k < 1300; k++) {
        graph_model_launch(&m, 1);
        graph_model_launch(&m, k);
        graph_model_launch(&m, k); /* each one-off key repeats once: gets a graph */
    }
    int hot = 0;
    for (int i = 0; i < PF_GPU_GRAPH_SLOTS; i++)
        hot += m.key[i] == 1;
    cr_assert_eq(hot, 1, "the hot key lost its slot");
    /* its first launch was direct, its second made the graph */
    cr_assert_eq(m.replays, 298, "the hot key replayed %d of 298 launches", m.replays);

    /* a new working set takes the slots of an old one once it idles */
    graph_model p = {0};
    graph_model_cycle(&p, 1, PF_GPU_GRAPH_SLOTS, 5);  /* phase A fills every slot */
    graph_model_cycle(&p, 100, PF_GPU_GRAPH_SLOTS, 20); /* phase B */
    const graph_model b = graph_model_cycle(&p, 100, PF_GPU_GRAPH_SLOTS, 1);
    cr_assert_eq(b.replays, PF_GPU_GRAPH_SLOTS, "phase B replays %d of %d keys", b.replays,
                 PF_GPU_GRAPH_SLOTS);
}

Test(gpu_host, graphs_that_do_not_pay_for_their_making_are_not_made_again)
{
    enum { N = PF_GPU_GRAPH_SLOTS + 8, SHORT = 8, LONG = 32 };
    _Static_assert(SHORT < PF_GPU_GRAPH_PAYBACK && LONG >= PF_GPU_GRAPH_PAYBACK, "the steps");
    /* steps of 8 runs over more grids than slots: each graph served 8
     * launches before the cycle evicted it (a make every step, 1.6-1.8x
     * direct launches' host time on an H100); once the evicted keys are
     * unpaid, the cache keeps its 16 keys and launches the rest directly */
    graph_model m = {0};
    graph_model_steps(&m, 1, N, SHORT, 3);
    const graph_model s = graph_model_steps(&m, 1, N, SHORT, 1);
    cr_assert_eq(s.makes, 0, "%d graphs a round of %d short steps", s.makes, N);
    cr_assert_eq(s.replays, PF_GPU_GRAPH_SLOTS * SHORT);
    cr_assert_eq(s.direct, (N - PF_GPU_GRAPH_SLOTS) * SHORT);

    /* steps of 32 runs: a graph a step pays for itself (0.69-0.91x direct
     * launches' host time), and every step still makes one */
    graph_model l = {0};
    graph_model_steps(&l, 1, N, LONG, 3);
    const graph_model g = graph_model_steps(&l, 1, N, LONG, 1);
    cr_assert_eq(g.makes, N, "%d graphs a round of %d long steps", g.makes, N);
    cr_assert_eq(g.direct, 0);
    cr_assert_eq(g.replays, N * (LONG - 1));

    /* the same keys' steps grow from 8 runs to 32: an unpaid key launched
     * PF_GPU_GRAPH_PAYBACK times in a row is paid again, and after two
     * rounds the loop runs as the long one above */
    graph_model_steps(&m, 1, N, LONG, 2);
    const graph_model grown = graph_model_steps(&m, 1, N, LONG, 1);
    cr_assert_eq(grown.makes, N, "%d graphs after the steps grew", grown.makes);
    cr_assert_eq(grown.direct, 0);
}
