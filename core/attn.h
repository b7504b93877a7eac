/* core/attn.h - CPU reference decode attention (one query token per
 * sequence), contiguous and paged, with grouped-query attention.
 *
 * Shapes: q[hq][D]; out[hq][D]; hq = group * hkv, query head h reads kv head
 * h / group. K/V layouts are the ones in core/paging.h. scale is usually
 * 1/sqrt(D). Softmax is computed in the numerically safe way (max first).
 *
 * The float versions accumulate in float in a fixed order, so the paged and
 * contiguous versions give bitwise-equal results on the same data. The
 * double versions are the ground truth the float ones (and the GPU kernels)
 * are checked against. Callers: tests, bench, the GPU API's checks.
 */
#ifndef PF_CORE_ATTN_H
#define PF_CORE_ATTN_H

typedef struct {
    int num_q_heads;  /* hq */
    int num_kv_heads; /* hkv, divides hq */
    int head_dim;     /* D */
    float scale;      /* softmax scale, 1/sqrt(D) when 0 is passed */
} pf_attn_shape;

/* Contiguous: k/v are [hkv][cap][D], len <= cap tokens used.
 * Returns PF_OK or PF_ERR_ARG (bad shape, len < 1). */
int pf_attn_ref_contig(const pf_attn_shape *s, const float *q, const float *k, const float *v,
                       int len, int cap, float *out);

/* Paged: k_pool/v_pool are [frames][hkv][B][D]; block_table maps the
 * sequence's logical blocks to frames. */
int pf_attn_ref_paged(const pf_attn_shape *s, const float *q, const float *k_pool,
                      const float *v_pool, const int *block_table, int len, int block_size,
                      float *out);

/* Same as the contiguous version with double accumulation (ground truth). */
int pf_attn_ref_contig_f64(const pf_attn_shape *s, const float *q, const float *k,
                           const float *v, int len, int cap, double *out);
/* ... and into out_abs (same shape) the same weights applied to |V|: each
 * output element's sum p |v| / sum p, which bounds how far rounding the
 * weights p (relative error u each) can move it: by u times that. The GPU
 * check (gpu/host.c) allows for it in kernels that round p to 16 bits. */
int pf_attn_ref_contig_f64_abs(const pf_attn_shape *s, const float *q, const float *k,
                               const float *v, int len, int cap, double *out, double *out_abs);

#endif
