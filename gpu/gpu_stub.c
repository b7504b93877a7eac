/* gpu/gpu_stub.c - the GPU API when the build has no CUDA compiler: every
 * entry point exists and answers PF_ERR_UNAVAILABLE, "built without CUDA".
 * (dtype names, shape checks and the CPU reference check are in host.c and
 * work in every build.)
 */
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

static const char kWhy[] = "built without CUDA";

static void why_copy(char *why, size_t whylen)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", kWhy);
}

int pf_gpu_available(char *why, size_t whylen)
{
    why_copy(why, whylen);
    return 0;
}

int pf_gpu_device_name(char *name, size_t len)
{
    why_copy(name, len);
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_malloc(void **ptr, size_t bytes)
{
    (void)bytes;
    if (ptr)
        *ptr = NULL;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_free(void *ptr)
{
    return ptr ? PF_ERR_UNAVAILABLE : PF_OK;
}

int pf_gpu_memcpy(void *dst, const void *src, size_t bytes, pf_gpu_copy_kind kind)
{
    (void)dst, (void)src, (void)bytes, (void)kind;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_memset(void *ptr, int byte, size_t bytes)
{
    (void)ptr, (void)byte, (void)bytes;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_sync(void)
{
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_stream_create(void **stream)
{
    if (!stream)
        return PF_ERR_ARG;
    *stream = NULL;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_stream_destroy(void *stream)
{
    return stream ? PF_ERR_UNAVAILABLE : PF_OK;
}

int pf_gpu_paged_attention(const pf_gpu_attn_shape *s, const void *q, const void *k_pool,
                           const void *v_pool, const int *block_tables, const int *seq_lens,
                           void *out, void *stream)
{
    (void)q, (void)k_pool, (void)v_pool, (void)block_tables, (void)seq_lens, (void)out,
        (void)stream;
    int rc = pf_gpu_attn_validate(s, 1); /* a bad shape is PF_ERR_ARG in every build */
    return rc != PF_OK ? rc : PF_ERR_UNAVAILABLE;
}

int pf_gpu_naive_attention(const pf_gpu_attn_shape *s, const void *q, const void *k,
                           const void *v, const int *seq_lens, void *out, void *stream)
{
    (void)q, (void)k, (void)v, (void)seq_lens, (void)out, (void)stream;
    int rc = pf_gpu_attn_validate(s, 0);
    return rc != PF_OK ? rc : PF_ERR_UNAVAILABLE;
}

int pf_gpu_append_kv(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                     int n_tokens, const int *block_tables, const int *seq_lens, void *k_pool,
                     void *v_pool, void *stream)
{
    (void)stream;
    const int rc = pf_gpu__append_args(s, k_new, v_new, n_tokens, block_tables, seq_lens, k_pool,
                                       v_pool);
    return rc != PF_OK ? rc : PF_ERR_UNAVAILABLE;
}

int pf_gpu_run_layout(const pf_gpu_layout *layout, const pf_gpu_head_shape *hs,
                      pf_gpu_pass_result *out, char *err, size_t errlen)
{
    (void)layout, (void)hs;
    if (out)
        memset(out, 0, sizeof *out);
    why_copy(err, errlen);
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_bench_run(const pf_gpu_bench_cfg *cfg, pf_gpu_bench_result *res, char *err,
                     size_t errlen)
{
    (void)cfg;
    if (res)
        memset(res, 0, sizeof *res);
    why_copy(err, errlen);
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_attn_plan_make(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                          const int *lens_host, int max_len, int version)
{
    (void)lens_host, (void)max_len;
    int rc = pf_gpu__plan_begin(plan, s, paged, version);
    return rc != PF_OK ? rc : PF_ERR_UNAVAILABLE;
}

int pf_gpu_attn_workspace_init(const pf_gpu_attn_plan *plan, const int *lens_host,
                               void *workspace, void *stream)
{
    (void)stream;
    const int rc = pf_gpu__workspace_args(plan, lens_host, workspace);
    return rc != PF_OK ? rc : PF_ERR_UNAVAILABLE;
}

int pf_gpu_attn_run(const pf_gpu_attn_plan *plan, const void *q, const void *k, const void *v,
                    const int *block_tables, const int *seq_lens, void *out, void *workspace,
                    void *stream)
{
    (void)stream;
    /* the CUDA build's argument checks, so a caller learns of a bad
     * argument without a device too */
    if (pf_gpu__run_args(plan, q, k, v, block_tables, seq_lens, out, workspace) != PF_OK)
        return PF_ERR_ARG;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_profile_measure(pf_gpu_profile *p, int iters, char *err, size_t errlen)
{
    (void)iters;
    if (p)
        memset(p, 0, sizeof *p);
    why_copy(err, errlen);
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_attn_graph_make(pf_gpu_attn_graph **g, const pf_gpu_attn_plan *plan, const void *q,
                           const void *k, const void *v, const int *block_tables,
                           const int *seq_lens, void *out, void *workspace)
{
    if (!g)
        return PF_ERR_ARG;
    *g = NULL;
    if (pf_gpu__run_args(plan, q, k, v, block_tables, seq_lens, out, workspace) != PF_OK)
        return PF_ERR_ARG;
    return PF_ERR_UNAVAILABLE;
}

int pf_gpu_attn_graph_launch(pf_gpu_attn_graph *g, int times, void *stream)
{
    (void)stream;
    return !g || times < 0 ? PF_ERR_ARG : PF_ERR_UNAVAILABLE; /* no graph is ever made here */
}

void pf_gpu_attn_graph_free(pf_gpu_attn_graph *g)
{
    (void)g;
}
