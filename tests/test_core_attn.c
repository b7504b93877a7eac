/* tests/test_core_attn.c - CPU reference attention (core/attn.h): uniform
 * keys give the mean of the values, a one-hot key with a large score gives
 * its value, paged equals contiguous bitwise on a shuffled pool (GQA), and
 * the float version is within 1e-5 of the double-precision ground truth. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/attn.h"
#include "core/err.h"
#include "core/paging.h"
#include "core/pool.h"
#include "core/rng.h"

static float *rand_buf(pf_rng *r, size_t n)
{
    float *b = malloc(n * sizeof *b);
    cr_assert_not_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = pf_rng_symf(r);
    return b;
}

Test(attn, uniform_keys_give_mean_of_values)
{
    enum { HQ = 4, HKV = 2, D = 8, LEN = 37, CAP = 40 };
    pf_attn_shape s = {HQ, HKV, D, 0.0f};
    pf_rng r;
    pf_rng_seed(&r, 1);
    float *q = rand_buf(&r, HQ * D), *v = rand_buf(&r, HKV * CAP * D);
    float *k = calloc(HKV * CAP * D, sizeof *k);
    for (int g = 0; g < HKV; g++) /* every token has the same key */
        for (int t = 0; t < CAP; t++)
            for (int d = 0; d < D; d++)
                k[pf_page_contig_index(t, g, CAP, D) + d] = 0.25f * (float)(d + 1);
    float out[HQ * D];
    cr_assert_eq(pf_attn_ref_contig(&s, q, k, v, LEN, CAP, out), PF_OK);
    for (int h = 0; h < HQ; h++) {
        int g = h / (HQ / HKV);
        for (int d = 0; d < D; d++) {
            double mean = 0;
            for (int t = 0; t < LEN; t++)
                mean += v[pf_page_contig_index(t, g, CAP, D) + d];
            mean /= LEN;
            cr_assert(fabs(out[h * D + d] - mean) < 1e-6, "h %d d %d: %f vs %f", h, d,
                      out[h * D + d], mean);
        }
    }
    free(q);
    free(k);
    free(v);
}

Test(attn, one_hot_key_selects_its_value)
{
    enum { HQ = 2, HKV = 1, D = 16, LEN = 50 };
    pf_attn_shape s = {HQ, HKV, D, 1.0f};
    pf_rng r;
    pf_rng_seed(&r, 2);
    float q[HQ * D] = {0};
    for (int h = 0; h < HQ; h++)
        q[h * D + 3] = 1.0f;
    float *k = calloc(LEN * D, sizeof *k), *v = rand_buf(&r, LEN * D);
    const int hot = 29;
    k[hot * D + 3] = 100.0f; /* score 100 vs 0: weight of the others ~ e^-100 */
    float out[HQ * D];
    cr_assert_eq(pf_attn_ref_contig(&s, q, k, v, LEN, LEN, out), PF_OK);
    for (int h = 0; h < HQ; h++)
        for (int d = 0; d < D; d++)
            cr_assert(fabs(out[h * D + d] - v[hot * D + d]) < 1e-6, "d %d: %f vs %f", d,
                      out[h * D + d], v[hot * D + d]);
    free(k);
    free(v);
}

/* Several sequences through one pool whose frames were handed out after
 * churn (scattered); each sequence's paged result must be bitwise equal to
 * the contiguous result on the same data. GQA 8 q heads over 2 kv heads. */
Test(attn, paged_equals_contiguous_bitwise_on_shuffled_pool)
{
    enum { HQ = 8, HKV = 2, D = 32, B = 16, NF = 96 };
    const int lens[] = {1, 16, 17, 100, 333, 700};
    const int nseq = 6;
    pf_attn_shape s = {HQ, HKV, D, 0.0f};
    pf_rng r;
    pf_rng_seed(&r, 3);
    pf_pool *pool = pf_pool_create(NF);
    int tmp[NF];
    /* shuffle: take everything, give back in a random order */
    cr_assert_eq(pf_pool_alloc_n(pool, 0, NF, tmp), PF_OK);
    for (int i = NF - 1; i > 0; i--) {
        int j = (int)pf_rng_range(&r, 0, i), t = tmp[i];
        tmp[i] = tmp[j];
        tmp[j] = t;
    }
    for (int i = 0; i < NF; i++)
        cr_assert_eq(pf_pool_free(pool, 0, tmp[i]), PF_OK);

    size_t pool_elems = (size_t)NF * HKV * B * D;
    float *kp = rand_buf(&r, pool_elems), *vp = rand_buf(&r, pool_elems);
    int scattered = 0;
    for (int si = 0; si < nseq; si++) {
        int len = lens[si], nb = pf_page_blocks_for(len, B);
        int table[64];
        cr_assert_eq(pf_pool_alloc_n(pool, si + 1, nb, table), PF_OK);
        for (int b = 1; b < nb; b++)
            scattered += table[b] != table[b - 1] + 1;
        /* gather the sequence into a contiguous buffer through the table */
        float *kc = malloc((size_t)HKV * len * D * sizeof *kc);
        float *vc = malloc((size_t)HKV * len * D * sizeof *vc);
        for (int g = 0; g < HKV; g++)
            for (int t = 0; t < len; t++) {
                size_t src = pf_page_kv_index(table, t, g, HKV, B, D);
                size_t dst = pf_page_contig_index(t, g, len, D);
                memcpy(kc + dst, kp + src, D * sizeof(float));
                memcpy(vc + dst, vp + src, D * sizeof(float));
            }
        float *q = rand_buf(&r, HQ * D);
        float oc[HQ * D], op[HQ * D];
        cr_assert_eq(pf_attn_ref_contig(&s, q, kc, vc, len, len, oc), PF_OK);
        cr_assert_eq(pf_attn_ref_paged(&s, q, kp, vp, table, len, B, op), PF_OK);
        cr_assert_eq(memcmp(oc, op, sizeof oc), 0, "seq %d (len %d): not bitwise equal", si, len);
        free(kc);
        free(vc);
        free(q);
    }
    cr_assert_gt(scattered, 10, "the frames really were scattered");
    free(kp);
    free(vp);
    pf_pool_destroy(pool);
}

Test(attn, float_matches_double_ground_truth)
{
    enum { HQ = 4, HKV = 4, D = 64, LEN = 1500 };
    pf_attn_shape s = {HQ, HKV, D, 0.0f};
    pf_rng r;
    pf_rng_seed(&r, 4);
    float *q = rand_buf(&r, HQ * D), *k = rand_buf(&r, HKV * LEN * D), *v = rand_buf(&r, HKV * LEN * D);
    for (int i = 0; i < HQ * D; i++)
        q[i] *= 4.0f; /* sharper softmax than uniform */
    float of[HQ * D];
    double od[HQ * D];
    cr_assert_eq(pf_attn_ref_contig(&s, q, k, v, LEN, LEN, of), PF_OK);
    cr_assert_eq(pf_attn_ref_contig_f64(&s, q, k, v, LEN, LEN, od), PF_OK);
    double maxabs = 0, maxerr = 0;
    for (int i = 0; i < HQ * D; i++) {
        maxabs = fmax(maxabs, fabs(od[i]));
        maxerr = fmax(maxerr, fabs(of[i] - od[i]));
    }
    cr_assert_gt(maxabs, 0.01);
    cr_assert(maxerr <= 1e-5 * maxabs, "max error %g relative to max |out| %g", maxerr, maxabs);
    free(q);
    free(k);
    free(v);
}

/* The weights over |V| are attention over a copy of V made non-negative
 * (the same arithmetic, so equal), the plain output is unchanged beside
 * them, and |out| never exceeds them. */
Test(attn, abs_weights_are_attention_over_abs_v)
{
    enum { HQ = 4, HKV = 2, D = 32, LEN = 300 };
    pf_attn_shape s = {HQ, HKV, D, 0.0f};
    pf_rng r;
    pf_rng_seed(&r, 8);
    float *q = rand_buf(&r, HQ * D), *k = rand_buf(&r, HKV * LEN * D), *v = rand_buf(&r, HKV * LEN * D);
    float *va = malloc(sizeof(float) * HKV * LEN * D);
    cr_assert(va);
    for (int i = 0; i < HKV * LEN * D; i++)
        va[i] = fabsf(v[i]);
    double od[HQ * D], oa[HQ * D], plain[HQ * D], of_abs[HQ * D];
    cr_assert_eq(pf_attn_ref_contig_f64_abs(&s, q, k, v, LEN, LEN, od, oa), PF_OK);
    cr_assert_eq(pf_attn_ref_contig_f64(&s, q, k, v, LEN, LEN, plain), PF_OK);
    cr_assert_eq(pf_attn_ref_contig_f64(&s, q, k, va, LEN, LEN, of_abs), PF_OK);
    cr_assert_eq(memcmp(od, plain, sizeof od), 0, "the output does not change beside |V|'s");
    int below = 0;
    for (int i = 0; i < HQ * D; i++) {
        cr_assert_eq(oa[i], of_abs[i], "element %d", i);
        cr_assert_leq(fabs(od[i]), oa[i]);
        below += fabs(od[i]) < 0.5 * oa[i]; /* V's signs cancel: the bound is not |out| */
    }
    cr_assert_gt(below, HQ * D / 2);
    free(q);
    free(k);
    free(v);
    free(va);
}

Test(attn, bad_arguments)
{
    float q[8] = {0}, k[8] = {0}, v[8] = {0}, out[8];
    double od[8];
    int table[1] = {0};
    pf_attn_shape bad_group = {3, 2, 2, 0.0f}, ok = {1, 1, 2, 0.0f};
    cr_assert_eq(pf_attn_ref_contig(&bad_group, q, k, v, 1, 1, out), PF_ERR_ARG);
    cr_assert_eq(pf_attn_ref_contig(&ok, q, k, v, 0, 1, out), PF_ERR_ARG);
    cr_assert_eq(pf_attn_ref_contig(&ok, q, k, v, 2, 1, out), PF_ERR_ARG, "len > cap");
    cr_assert_eq(pf_attn_ref_contig(NULL, q, k, v, 1, 1, out), PF_ERR_ARG);
    cr_assert_eq(pf_attn_ref_contig_f64(&ok, q, k, v, 1, 1, od), PF_OK);
    cr_assert_eq(pf_attn_ref_paged(&ok, q, k, v, table, 1, 0, out), PF_ERR_ARG);
    cr_assert_eq(pf_attn_ref_paged(&ok, q, k, v, NULL, 1, 4, out), PF_ERR_ARG);
    table[0] = -1;
    cr_assert_eq(pf_attn_ref_paged(&ok, q, k, v, table, 1, 4, out), PF_ERR_RANGE);
}

/* The paged reference checks the block table before reading the pool; with
 * the overflow the check ran over no block at all and a -1 frame was used
 * as an index (a read far before the pool: a crash). */
Test(attn, attn_paged_checks_table_at_int_max_len)
{
    pf_attn_shape s = {1, 1, 1, 0.0f};
    float q[1] = {1.0f}, k[1] = {0.0f}, v[1] = {0.0f}, out[1];
    int table[1] = {-1};
    cr_assert_eq(pf_attn_ref_paged(&s, q, k, v, table, INT_MAX, 2, out), PF_ERR_RANGE);
}
