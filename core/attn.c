/* core/attn.c - CPU reference decode attention (contract in attn.h).
 *
 * Algorithm, per query head h (kv head g = h / (hq / hkv)):
 *   pass 1: m = max_t s_t, where s_t = scale * (q_h . k_{g,t})
 *   pass 2: p_t = exp(s_t - m); sum += p_t; out_h += p_t * v_{g,t}
 *   out_h /= sum
 * Scores are recomputed in pass 2 instead of stored, so no scratch memory
 * is needed and nothing can fail for lack of it; the recomputation is the
 * same float expression and gives the same bits.
 *
 * Paged and contiguous versions share this code: they differ only in where
 * the row of token t lives (kv_row below), so every float operation is done
 * in the same order and the two agree bitwise. (Strict ISO C mode keeps the
 * compiler from contracting to FMA or reassociating the sums.)
 */
#include "core/attn.h"

#include <math.h>
#include <stddef.h>

#include "core/err.h"
#include "core/paging.h"

/* Where K/V rows come from: a contiguous [hkv][cap][D] buffer or a
 * head-major pool through a block table. */
typedef struct {
    const float *k, *v;
    int cap;                /* contiguous */
    const int *block_table; /* paged when non-NULL */
    int block_size;
} kv_src;

static size_t kv_row(const kv_src *src, const pf_attn_shape *s, int token, int g)
{
    if (src->block_table)
        return pf_page_kv_index(src->block_table, token, g, s->num_kv_heads, src->block_size,
                                s->head_dim);
    return pf_page_contig_index(token, g, src->cap, s->head_dim);
}

static int shape_valid(const pf_attn_shape *s)
{
    return s && s->num_q_heads >= 1 && s->num_kv_heads >= 1 && s->head_dim >= 1 &&
           s->num_q_heads % s->num_kv_heads == 0 && isfinite(s->scale);
}

static float dot_f(const float *a, const float *b, int n)
{
    float acc = 0.0f;
    for (int i = 0; i < n; i++)
        acc += a[i] * b[i];
    return acc;
}

static void attend_f32(const pf_attn_shape *s, const float *q, const kv_src *src, int len,
                       float *out)
{
    const int D = s->head_dim, group = s->num_q_heads / s->num_kv_heads;
    const float scale = s->scale != 0.0f ? s->scale : 1.0f / sqrtf((float)D);
    for (int h = 0; h < s->num_q_heads; h++) {
        const int g = h / group;
        const float *qh = q + (size_t)h * D;
        float *oh = out + (size_t)h * D;
        float m = -INFINITY;
        for (int t = 0; t < len; t++) {
            float sc = scale * dot_f(qh, src->k + kv_row(src, s, t, g), D);
            if (sc > m)
                m = sc;
        }
        for (int d = 0; d < D; d++)
            oh[d] = 0.0f;
        float sum = 0.0f;
        for (int t = 0; t < len; t++) {
            size_t row = kv_row(src, s, t, g);
            float p = expf(scale * dot_f(qh, src->k + row, D) - m);
            sum += p;
            const float *vr = src->v + row;
            for (int d = 0; d < D; d++)
                oh[d] += p * vr[d];
        }
        for (int d = 0; d < D; d++)
            oh[d] /= sum;
    }
}

int pf_attn_ref_contig(const pf_attn_shape *s, const float *q, const float *k, const float *v,
                       int len, int cap, float *out)
{
    if (!shape_valid(s) || !q || !k || !v || !out || len < 1 || cap < len)
        return PF_ERR_ARG;
    kv_src src = {k, v, cap, NULL, 0};
    attend_f32(s, q, &src, len, out);
    return PF_OK;
}

int pf_attn_ref_paged(const pf_attn_shape *s, const float *q, const float *k_pool,
                      const float *v_pool, const int *block_table, int len, int block_size,
                      float *out)
{
    if (!shape_valid(s) || !q || !k_pool || !v_pool || !block_table || !out || len < 1 ||
        block_size < 1)
        return PF_ERR_ARG;
    for (int b = 0; b < pf_page_blocks_for(len, block_size); b++)
        if (block_table[b] < 0)
            return PF_ERR_RANGE;
    kv_src src = {k_pool, v_pool, 0, block_table, block_size};
    attend_f32(s, q, &src, len, out);
    return PF_OK;
}

int pf_attn_ref_contig_f64(const pf_attn_shape *s, const float *q, const float *k,
                           const float *v, int len, int cap, double *out)
{
    return pf_attn_ref_contig_f64_abs(s, q, k, v, len, cap, out, NULL);
}

int pf_attn_ref_contig_f64_abs(const pf_attn_shape *s, const float *q, const float *k,
                               const float *v, int len, int cap, double *out, double *out_abs)
{
    if (!shape_valid(s) || !q || !k || !v || !out || len < 1 || cap < len)
        return PF_ERR_ARG;
    const int D = s->head_dim, group = s->num_q_heads / s->num_kv_heads;
    const double scale = s->scale != 0.0f ? (double)s->scale : 1.0 / sqrt((double)D);
    for (int h = 0; h < s->num_q_heads; h++) {
        const int g = h / group;
        const float *qh = q + (size_t)h * D;
        double *oh = out + (size_t)h * D;
        double *ah = out_abs ? out_abs + (size_t)h * D : NULL;
        double m = -INFINITY;
        for (int t = 0; t < len; t++) {
            const float *kr = k + pf_page_contig_index(t, g, cap, D);
            double acc = 0.0;
            for (int d = 0; d < D; d++)
                acc += (double)qh[d] * (double)kr[d];
            if (scale * acc > m)
                m = scale * acc;
        }
        for (int d = 0; d < D; d++) {
            oh[d] = 0.0;
            if (ah)
                ah[d] = 0.0;
        }
        double sum = 0.0;
        for (int t = 0; t < len; t++) {
            size_t row = pf_page_contig_index(t, g, cap, D);
            double acc = 0.0;
            for (int d = 0; d < D; d++)
                acc += (double)qh[d] * (double)k[row + d];
            double p = exp(scale * acc - m);
            sum += p;
            for (int d = 0; d < D; d++)
                oh[d] += p * (double)v[row + d];
            if (ah)
                for (int d = 0; d < D; d++)
                    ah[d] += p * fabs((double)v[row + d]);
        }
        for (int d = 0; d < D; d++) {
            oh[d] /= sum;
            if (ah)
                ah[d] /= sum;
        }
    }
    return PF_OK;
}
