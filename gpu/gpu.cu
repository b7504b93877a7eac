/* gpu/gpu.cu - the GPU stage's C API (gpu/gpu.h) on CUDA: device queries,
 * the kernels on caller pointers, and the checked, timed runner behind
 * `pagefault bench` and the dashboard's GPU panel.
 *
 * The runner (run_case) for one workload:
 *   1. draws q, K, V on the host (values rounded to the element type, so the
 *      CPU reference sees exactly what the GPU reads), token-major staging
 *      [tok][Hkv][D] per sequence and head-major floats for the reference;
 *   2. uploads the staging, fills the naive buffers [S][Hkv][cap][D] by
 *      strided device copies and both pools through the append kernel
 *      (pools poisoned with NaN first, so a wrong frame shows up as NaN);
 *   3. reads each pool back and walks the page tables on the host: every
 *      row must equal what was written;
 *   4. runs each pass once on NaN-poisoned outputs: naive against the CPU
 *      reference for every sequence, paged (ordered frames, and shuffled or
 *      as-laid-out frames) against naive;
 *   5. measures the streaming read bandwidth, then times the passes
 *      interleaved round-robin, one CUDA-event pair per launch, the L2
 *      flushed before each launch by reading a buffer of twice its size
 *      (a read, not a memset: a write flush would leave the L2 full of
 *      dirty lines whose write-back the timed kernel would then pay);
 *   6. checks the timed outputs are still bitwise what was validated.
 * Every CUDA call is checked; one exit path frees everything.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" { /* core's headers are plain C without their own guards */
#include "core/err.h"
#include "core/rng.h"
}
#include "core/paging.h"
#include "gpu/gpu.h"
#include "gpu/gpu_internal.h"

namespace {

void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void copy_trunc(char *dst, size_t n, const char *src)
{
    size_t i = 0;
    for (; i + 1 < n && src[i]; i++)
        dst[i] = src[i];
    if (n)
        dst[i] = '\0';
}

int device_ready(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        set_err(why, whylen, "no CUDA device: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n < 1) {
        set_err(why, whylen, "no CUDA device: none found");
        return 0;
    }
    return 1;
}

/* CK: check a CUDA call, record where it failed, go to the one exit. */
#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            set_err(err, errlen, "%s: %s", #call, cudaGetErrorString(e_));                          \
            rc = e_ == cudaErrorMemoryAllocation ? PF_ERR_NOMEM : PF_ERR_UNAVAILABLE;              \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

#define CKPF(call, what)                                                                           \
    do {                                                                                           \
        int r_ = (call);                                                                           \
        if (r_ != PF_OK) {                                                                         \
            cudaError_t e_ = cudaGetLastError();                                                   \
            set_err(err, errlen, "%s failed: %s (%s)", what, pf_strerror(r_),                      \
                    cudaGetErrorString(e_));                                                       \
            rc = r_;                                                                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* One workload as the runner sees it. tables_b (host, [S][maxb]) are the
 * frames of the second paged pass: shuffled frames for the bench, the
 * simulator's layout for the dashboard; NULL means ordered only. */
struct CaseIn {
    int S;
    const int *lens;
    int cap;
    int hq, hkv, D, B;
    pf_gpu_dtype dt;
    int iters;
    uint64_t seed;
    const int *tables_b;
    int frames_b;
    double tol;
    int ref_all_heads;
    int measure_bw;
};

double median_of(double *x, int n)
{
    /* insertion sort: n is an iteration count (small) */
    for (int i = 1; i < n; i++) {
        double v = x[i];
        int j = i - 1;
        while (j >= 0 && x[j] > v) {
            x[j + 1] = x[j];
            j--;
        }
        x[j + 1] = v;
    }
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void stats(double *ms, int n, double kv_bytes, double bw_gbps, pf_gpu_timing *t)
{
    double sum = 0, mn = ms[0];
    for (int i = 0; i < n; i++) {
        sum += ms[i];
        if (ms[i] < mn)
            mn = ms[i];
    }
    t->mean_ms = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++)
        var += (ms[i] - t->mean_ms) * (ms[i] - t->mean_ms);
    t->sd_ms = n > 1 ? sqrt(var / (n - 1)) : 0.0;
    t->min_ms = mn;
    t->median_ms = median_of(ms, n);
    t->gbps = t->median_ms > 0 ? kv_bytes / (t->median_ms * 1e-3) / 1e9 : 0.0;
    t->frac_bw = bw_gbps > 0 ? t->gbps / bw_gbps : 0.0;
}

/* max |a - b| over n elements of type dt; NaN/inf anywhere -> +inf. */
double max_abs_diff(pf_gpu_dtype dt, const void *a, const void *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        float x = pf_gpu_host_load(dt, a, i), y = pf_gpu_host_load(dt, b, i);
        if (!isfinite(x) || !isfinite(y))
            return INFINITY;
        double d = fabs((double)x - (double)y);
        if (d > m)
            m = d;
    }
    return m;
}

void fail(pf_gpu_bench_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fail(pf_gpu_bench_result *res, const char *fmt, ...)
{
    if (!res->pass)
        return; /* keep the first failure */
    res->pass = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->failure, sizeof res->failure, fmt, ap);
    va_end(ap);
}

/* Read a pool back and compare every (sequence, token, kv head) row, found
 * through the host block tables, with the staging it was written from. */
int pool_readback_ok(const unsigned char *pool, const unsigned char *stage, const size_t *off,
                     const int *lens, int S, const int *tables, int maxb, int hkv, int B,
                     size_t row_bytes, int D)
{
    for (int s = 0; s < S; s++) {
        const int *row = tables + (size_t)s * maxb;
        for (int t = 0; t < lens[s]; t++)
            for (int h = 0; h < hkv; h++) {
                size_t pi = pf_page_kv_index(row, t, h, hkv, B, D) / D; /* in rows */
                size_t si = off[s] / D + (size_t)t * hkv + h;
                if (memcmp(pool + pi * row_bytes, stage + si * row_bytes, row_bytes))
                    return 0;
            }
    }
    return 1;
}

/* Copy one token's rows (all kv heads) from (s0, t0) to (s1, t1) in the
 * staging and in the reference floats. */
void copy_token(const CaseIn &in, const size_t *off, size_t el, void *sk, void *sv, float *kf,
                float *vf, int s0, int t0, int s1, int t1)
{
    const int hkv = in.hkv, D = in.D;
    const size_t row = (size_t)hkv * D;
    memcpy((char *)sk + (off[s1] + t1 * row) * el, (char *)sk + (off[s0] + t0 * row) * el, row * el);
    memcpy((char *)sv + (off[s1] + t1 * row) * el, (char *)sv + (off[s0] + t0 * row) * el, row * el);
    for (int h = 0; h < hkv; h++) {
        const size_t a = off[s0] + ((size_t)h * in.lens[s0] + t0) * D;
        const size_t b = off[s1] + ((size_t)h * in.lens[s1] + t1) * D;
        memcpy(kf + b, kf + a, sizeof(float) * D);
        memcpy(vf + b, vf + a, sizeof(float) * D);
    }
}

int share_rows(const CaseIn &in, const size_t *off, int maxb, size_t el, void *sk, void *sv,
               float *kf, float *vf, pf_gpu_bench_result *res, char *err, size_t errlen)
{
    (void)res;
    int *owner = (int *)malloc(sizeof(int) * 2 * (size_t)in.frames_b);
    if (!owner) {
        set_err(err, errlen, "out of host memory");
        return 0;
    }
    for (int f = 0; f < 2 * in.frames_b; f++)
        owner[f] = -1;
    for (int s = 0; s < in.S; s++)
        for (int b = 0; b < pf_page_blocks_for(in.lens[s], in.B); b++) {
            const int f = in.tables_b[(size_t)s * maxb + b];
            if (owner[2 * f] < 0) {
                owner[2 * f] = s;
                owner[2 * f + 1] = b;
                continue;
            }
            const int s0 = owner[2 * f], b0 = owner[2 * f + 1];
            for (int o = 0; o < in.B; o++) {
                const int t0 = b0 * in.B + o, t1 = b * in.B + o;
                if (t0 < in.lens[s0] && t1 < in.lens[s])
                    copy_token(in, off, el, sk, sv, kf, vf, s0, t0, s, t1);
            }
        }
    free(owner);
    return 1;
}

int run_case(const CaseIn &in, pf_gpu_bench_result *res, char *err, size_t errlen)
{
    int rc = PF_OK;
    const int S = in.S, hq = in.hq, hkv = in.hkv, D = in.D, B = in.B;
    const size_t el = pf_gpu_dtype_size(in.dt);
    const size_t row_bytes = (size_t)D * el;
    const size_t q_elems = (size_t)S * hq * D;
    /* host */
    size_t *off = NULL;        /* element offset of sequence i in the packed arrays */
    int *tab_o = NULL;         /* ordered tables */
    float *qf = NULL, *kf = NULL, *vf = NULL;
    void *qd = NULL, *stage_k = NULL, *stage_v = NULL, *pool_h = NULL;
    void *out_n = NULL, *out_o = NULL, *out_b = NULL, *out_chk = NULL;
    double *ms = NULL;
    cudaEvent_t *ev = NULL;
    int nev = 0;
    cudaEvent_t bw_a = NULL, bw_b = NULL;
    /* device */
    void *d_q = NULL, *d_sk = NULL, *d_sv = NULL, *d_nk = NULL, *d_nv = NULL;
    void *d_pok = NULL, *d_pov = NULL, *d_pbk = NULL, *d_pbv = NULL;
    int *d_tab_o = NULL, *d_tab_b = NULL, *d_lens = NULL;
    void *d_out[3] = {NULL, NULL, NULL};
    void *d_ws = NULL, *d_flush = NULL, *d_bw = NULL;
    unsigned *d_sink = NULL;
    cudaStream_t st = NULL;
    const int have_b = in.tables_b != NULL;
    size_t total_tok = 0, flush_bytes = 0;
    int maxb = 1, maxlen = 1, frames_o = 0;
    cudaDeviceProp prop;
    pf_gpu_attn_shape sh;
    pf_gpu_plan plan;
    pf_rng rng;
    pf_gpu_refcheck rc_in;
    pf_gpu_refcheck_out rc_out;

    memset(res, 0, sizeof *res);
    res->pass = 1;
    CK(cudaGetDeviceProperties(&prop, 0));
    copy_trunc(res->device, sizeof res->device, prop.name);
    res->sm_count = prop.multiProcessorCount;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    /* ---- sizes and host tables ---- */
    off = (size_t *)malloc(sizeof(size_t) * (S + 1));
    if (!off) {
        rc = PF_ERR_NOMEM;
        set_err(err, errlen, "out of host memory");
        goto done;
    }
    for (int s = 0; s < S; s++) {
        off[s] = total_tok * hkv * D;
        total_tok += (size_t)in.lens[s];
        int nb = pf_page_blocks_for(in.lens[s], B);
        if (nb > maxb)
            maxb = nb;
        if (in.lens[s] > maxlen)
            maxlen = in.lens[s];
        frames_o += nb;
    }
    off[S] = total_tok * hkv * D;
    if (have_b && in.frames_b < 1) {
        rc = PF_ERR_ARG;
        set_err(err, errlen, "layout has no frames");
        goto done;
    }
    tab_o = (int *)calloc((size_t)S * maxb, sizeof(int));
    if (!tab_o) {
        rc = PF_ERR_NOMEM;
        set_err(err, errlen, "out of host memory");
        goto done;
    }
    {
        int next = 0;
        for (int s = 0; s < S; s++)
            for (int b = 0; b < pf_page_blocks_for(in.lens[s], B); b++)
                tab_o[(size_t)s * maxb + b] = next++;
    }
    res->frames = frames_o;
    res->kv_bytes = (long long)(2 * total_tok * hkv * row_bytes);
    res->naive_reserved = (long long)S * in.cap * hkv * (long long)row_bytes * 2;
    res->paged_reserved = (long long)frames_o * B * hkv * (long long)row_bytes * 2;

    /* ---- host data: values rounded to the element type ---- */
    {
        const size_t kv_elems = off[S];
        qf = (float *)malloc(q_elems * sizeof(float));
        qd = malloc(q_elems * el);
        kf = (float *)malloc(kv_elems * sizeof(float));
        vf = (float *)malloc(kv_elems * sizeof(float));
        stage_k = malloc(kv_elems * el);
        stage_v = malloc(kv_elems * el);
        out_n = malloc(q_elems * el);
        out_o = malloc(q_elems * el);
        out_b = malloc(q_elems * el);
        out_chk = malloc(q_elems * el);
        if (!qf || !qd || !kf || !vf || !stage_k || !stage_v || !out_n || !out_o || !out_b ||
            !out_chk) {
            rc = PF_ERR_NOMEM;
            set_err(err, errlen, "out of host memory for %zu KV elements", kv_elems);
            goto done;
        }
        pf_rng_seed(&rng, in.seed);
        for (size_t i = 0; i < q_elems; i++)
            qf[i] = pf_gpu_host_store(in.dt, qd, i, pf_rng_symf(&rng));
        /* staging token-major [t][h][d]; reference floats head-major [h][t][d] */
        for (int s = 0; s < S; s++) {
            const int len = in.lens[s];
            for (int t = 0; t < len; t++)
                for (int h = 0; h < hkv; h++)
                    for (int d = 0; d < D; d++) {
                        size_t si = off[s] + ((size_t)t * hkv + h) * D + d;
                        size_t ri = off[s] + ((size_t)h * len + t) * D + d;
                        kf[ri] = pf_gpu_host_store(in.dt, stage_k, si, pf_rng_symf(&rng));
                        vf[ri] = pf_gpu_host_store(in.dt, stage_v, si, pf_rng_symf(&rng));
                    }
        }
    }

    /* ---- a given layout may map one frame into several sequences (shared
     * prefix blocks): make those rows the same data in every sharer, as a
     * real shared prefix is, so the pool holds one consistent copy ---- */
    if (have_b && !share_rows(in, off, maxb, el, stage_k, stage_v, kf, vf, res, err, errlen)) {
        rc = PF_ERR_NOMEM;
        goto done;
    }

    /* ---- device buffers ---- */
    {
        const size_t kv_bytes_packed = off[S] * el;
        const size_t naive_bytes = (size_t)S * hkv * in.cap * row_bytes;
        const size_t pool_o_bytes = (size_t)frames_o * hkv * B * row_bytes;
        const size_t pool_b_bytes = have_b ? (size_t)in.frames_b * hkv * B * row_bytes : 0;
        CK(cudaMalloc(&d_q, q_elems * el));
        CK(cudaMalloc(&d_sk, kv_bytes_packed));
        CK(cudaMalloc(&d_sv, kv_bytes_packed));
        CK(cudaMalloc(&d_nk, naive_bytes));
        CK(cudaMalloc(&d_nv, naive_bytes));
        CK(cudaMalloc(&d_pok, pool_o_bytes));
        CK(cudaMalloc(&d_pov, pool_o_bytes));
        if (have_b) {
            CK(cudaMalloc(&d_pbk, pool_b_bytes));
            CK(cudaMalloc(&d_pbv, pool_b_bytes));
            CK(cudaMalloc((void **)&d_tab_b, (size_t)S * maxb * sizeof(int)));
        }
        CK(cudaMalloc((void **)&d_tab_o, (size_t)S * maxb * sizeof(int)));
        CK(cudaMalloc((void **)&d_lens, (size_t)S * sizeof(int)));
        for (int i = 0; i < 3; i++)
            CK(cudaMalloc(&d_out[i], q_elems * el));
        CK(cudaMalloc((void **)&d_sink, sizeof(unsigned)));
        flush_bytes = (size_t)(prop.l2CacheSize > 0 ? prop.l2CacheSize : (64 << 20)) * 2;
        CK(cudaMalloc(&d_flush, flush_bytes));
        CK(cudaMemsetAsync(d_flush, 0x5a, flush_bytes, st));

        CK(cudaMemcpy(d_q, qd, q_elems * el, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_sk, stage_k, kv_bytes_packed, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_sv, stage_v, kv_bytes_packed, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_tab_o, tab_o, (size_t)S * maxb * sizeof(int), cudaMemcpyHostToDevice));
        if (have_b)
            CK(cudaMemcpy(d_tab_b, in.tables_b, (size_t)S * maxb * sizeof(int),
                          cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_lens, in.lens, (size_t)S * sizeof(int), cudaMemcpyHostToDevice));
        /* NaN everywhere a pass could read by mistake */
        CK(cudaMemsetAsync(d_nk, 0xff, naive_bytes, st));
        CK(cudaMemsetAsync(d_nv, 0xff, naive_bytes, st));
        CK(cudaMemsetAsync(d_pok, 0xff, pool_o_bytes, st));
        CK(cudaMemsetAsync(d_pov, 0xff, pool_o_bytes, st));
        if (have_b) {
            CK(cudaMemsetAsync(d_pbk, 0xff, pool_b_bytes, st));
            CK(cudaMemsetAsync(d_pbv, 0xff, pool_b_bytes, st));
        }
    }

    /* ---- fill: naive by strided copies, pools through the append kernel ---- */
    sh.num_seqs = 1;
    sh.num_q_heads = hq;
    sh.num_kv_heads = hkv;
    sh.head_dim = D;
    sh.block_size = B;
    sh.max_blocks_per_seq = maxb;
    sh.naive_cap = in.cap;
    sh.dtype = in.dt;
    sh.scale = 0.f;
    for (int s = 0; s < S; s++) {
        const int len = in.lens[s];
        for (int h = 0; h < hkv; h++) {
            const size_t dst = (((size_t)s * hkv + h) * in.cap) * row_bytes;
            const size_t src = (off[s] + (size_t)h * D) * el;
            CK(cudaMemcpy2DAsync((char *)d_nk + dst, row_bytes, (const char *)d_sk + src,
                                 hkv * row_bytes, row_bytes, len, cudaMemcpyDeviceToDevice, st));
            CK(cudaMemcpy2DAsync((char *)d_nv + dst, row_bytes, (const char *)d_sv + src,
                                 hkv * row_bytes, row_bytes, len, cudaMemcpyDeviceToDevice, st));
        }
        const void *ks = (const char *)d_sk + off[s] * el, *vs = (const char *)d_sv + off[s] * el;
        CKPF(pf_gpu_launch_append(&sh, ks, vs, len, d_tab_o + (size_t)s * maxb, d_lens + s, d_pok,
                                  d_pov, st),
             "append (ordered pool)");
        if (have_b)
            CKPF(pf_gpu_launch_append(&sh, ks, vs, len, d_tab_b + (size_t)s * maxb, d_lens + s,
                                      d_pbk, d_pbv, st),
                 "append (second pool)");
    }
    CK(cudaStreamSynchronize(st));
    sh.num_seqs = S;

    /* ---- read-back through the page tables ---- */
    {
        const size_t pool_o_bytes = (size_t)frames_o * hkv * B * row_bytes;
        const size_t pool_b_bytes = have_b ? (size_t)in.frames_b * hkv * B * row_bytes : 0;
        pool_h = malloc(pool_o_bytes > pool_b_bytes ? pool_o_bytes : pool_b_bytes);
        if (!pool_h) {
            rc = PF_ERR_NOMEM;
            set_err(err, errlen, "out of host memory for the pool read-back");
            goto done;
        }
        res->readback_ok = 1;
        const void *pools[4] = {d_pok, d_pov, d_pbk, d_pbv};
        const void *stages[4] = {stage_k, stage_v, stage_k, stage_v};
        for (int i = 0; i < (have_b ? 4 : 2); i++) {
            const size_t bytes = i < 2 ? pool_o_bytes : pool_b_bytes;
            CK(cudaMemcpy(pool_h, pools[i], bytes, cudaMemcpyDeviceToHost));
            if (!pool_readback_ok((const unsigned char *)pool_h, (const unsigned char *)stages[i],
                                  off, in.lens, S, i < 2 ? tab_o : in.tables_b, maxb, hkv, B,
                                  row_bytes, D)) {
                res->readback_ok = 0;
                fail(res, "pool read-back: the %s %s pool differs from what was written",
                     i < 2 ? "ordered" : "second", i % 2 ? "V" : "K");
            }
        }
        free(pool_h);
        pool_h = NULL;
    }

    /* ---- plan, then one checked run of each pass on poisoned outputs ---- */
    plan = pf_gpu_make_plan(&sh, in.lens, prop.multiProcessorCount);
    res->chunk_tokens = plan.chunk;
    res->splits = plan.splits;
    if (plan.splits > 1)
        CK(cudaMalloc(&d_ws, pf_gpu_workspace_bytes(&sh, &plan)));
    {
        void *host_out[3] = {out_n, out_o, out_b};
        for (int p = 0; p < (have_b ? 3 : 2); p++) {
            CK(cudaMemsetAsync(d_out[p], 0xff, q_elems * el, st));
            if (p == 0)
                CKPF(pf_gpu_launch_attention(&sh, &plan, 0, d_q, d_nk, d_nv, NULL, d_lens,
                                             d_out[0], d_ws, st),
                     "naive attention");
            else
                CKPF(pf_gpu_launch_attention(&sh, &plan, 1, d_q, p == 1 ? d_pok : d_pbk,
                                             p == 1 ? d_pov : d_pbv, p == 1 ? d_tab_o : d_tab_b,
                                             d_lens, d_out[p], d_ws, st),
                     "paged attention");
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(host_out[p], d_out[p], q_elems * el, cudaMemcpyDeviceToHost));
        }
    }
    rc_in.num_seqs = S;
    rc_in.lens = in.lens;
    rc_in.hq = hq;
    rc_in.hkv = hkv;
    rc_in.head_dim = D;
    rc_in.scale = 1.f / sqrtf((float)D);
    rc_in.q = qf;
    rc_in.k = kf;
    rc_in.v = vf;
    rc_in.off = off;
    rc_in.out = out_n;
    rc_in.dtype = in.dt;
    rc_in.all_heads = in.ref_all_heads;
    rc_in.tol = in.tol;
    rc_in.threads = 0;
    rc = pf_gpu_ref_check(&rc_in, &rc_out);
    if (rc != PF_OK) {
        set_err(err, errlen, "CPU reference failed: %s", pf_strerror(rc));
        goto done;
    }
    res->max_err_ref = rc_out.max_err;
    res->ref_allowed = rc_out.allowed_at_max;
    res->ref_checked = rc_out.checked;
    if (rc_out.bad)
        fail(res, "naive vs CPU reference: %lld of %lld elements off (first: seq %d, head %d), "
                  "max |err| %.3g", rc_out.bad, rc_out.checked, rc_out.first_bad_seq,
             rc_out.first_bad_head, rc_out.max_err);
    res->max_diff_ordered = max_abs_diff(in.dt, out_o, out_n, q_elems);
    if (!(res->max_diff_ordered <= in.tol))
        fail(res, "paged (ordered) vs naive: max |diff| %.3g over tolerance %.3g",
             res->max_diff_ordered, in.tol);
    if (have_b) {
        res->have_shuffled = 1;
        res->max_diff_shuffled = max_abs_diff(in.dt, out_b, out_n, q_elems);
        if (!(res->max_diff_shuffled <= in.tol))
            fail(res, "paged (second layout) vs naive: max |diff| %.3g over tolerance %.3g",
                 res->max_diff_shuffled, in.tol);
    }

    /* ---- streaming read bandwidth: a read-only pass over a few GiB ---- */
    if (in.measure_bw) {
        size_t bw_bytes = (size_t)4 << 30;
        while (bw_bytes >= ((size_t)256 << 20) && cudaMalloc(&d_bw, bw_bytes) != cudaSuccess) {
            (void)cudaGetLastError(); /* clear the failed allocation */
            bw_bytes /= 2;
        }
        if (d_bw) {
            double t[10] = {0};
            CK(cudaEventCreate(&bw_a));
            CK(cudaEventCreate(&bw_b));
            CK(cudaMemsetAsync(d_bw, 0x5a, bw_bytes, st));
            int ok = 1;
            for (int i = 0; i < 12 && ok; i++) {
                ok = cudaEventRecord(bw_a, st) == cudaSuccess &&
                     pf_gpu_launch_read_bw(d_bw, bw_bytes / 16, d_sink, prop.multiProcessorCount,
                                           st) == PF_OK &&
                     cudaEventRecord(bw_b, st) == cudaSuccess &&
                     cudaEventSynchronize(bw_b) == cudaSuccess;
                float f = 0;
                if (ok && cudaEventElapsedTime(&f, bw_a, bw_b) == cudaSuccess && i >= 2)
                    t[i - 2] = f;
            }
            CK(cudaFree(d_bw));
            d_bw = NULL;
            if (!ok) {
                rc = PF_ERR_UNAVAILABLE;
                set_err(err, errlen, "read-bandwidth probe failed: %s",
                        cudaGetErrorString(cudaGetLastError()));
                goto done;
            }
            res->read_bw_gbps = (double)bw_bytes / (median_of(t, 10) * 1e-3) / 1e9;
        }
    }

    /* ---- timing: passes interleaved, L2 flushed before each launch ---- */
    {
        const int np = have_b ? 3 : 2, iters = in.iters;
        nev = 2 * np * iters;
        ev = (cudaEvent_t *)calloc((size_t)nev, sizeof(cudaEvent_t));
        ms = (double *)malloc(sizeof(double) * (size_t)iters);
        if (!ev || !ms) {
            rc = PF_ERR_NOMEM;
            set_err(err, errlen, "out of host memory");
            nev = 0;
            goto done;
        }
        for (int i = 0; i < nev; i++) {
            cudaError_t e = cudaEventCreate(&ev[i]);
            if (e != cudaSuccess) {
                nev = i;
                CK(e);
            }
        }
        for (int it = -2; it < iters; it++) { /* two warm-up rounds */
            for (int p = 0; p < np; p++) {
                CKPF(pf_gpu_launch_read_bw(d_flush, flush_bytes / 16, d_sink,
                                           prop.multiProcessorCount, st),
                     "L2 flush");
                if (it >= 0)
                    CK(cudaEventRecord(ev[2 * (p * iters + it)], st));
                if (p == 0)
                    CKPF(pf_gpu_launch_attention(&sh, &plan, 0, d_q, d_nk, d_nv, NULL, d_lens,
                                                 d_out[0], d_ws, st),
                         "naive attention");
                else
                    CKPF(pf_gpu_launch_attention(&sh, &plan, 1, d_q, p == 1 ? d_pok : d_pbk,
                                                 p == 1 ? d_pov : d_pbv,
                                                 p == 1 ? d_tab_o : d_tab_b, d_lens, d_out[p],
                                                 d_ws, st),
                         "paged attention");
                if (it >= 0)
                    CK(cudaEventRecord(ev[2 * (p * iters + it) + 1], st));
            }
        }
        CK(cudaStreamSynchronize(st));
        pf_gpu_timing *dst[3] = {&res->naive, &res->ordered, &res->shuffled};
        for (int p = 0; p < np; p++) {
            for (int it = 0; it < iters; it++) {
                float f = 0;
                CK(cudaEventElapsedTime(&f, ev[2 * (p * iters + it)], ev[2 * (p * iters + it) + 1]));
                ms[it] = f;
            }
            stats(ms, iters, (double)res->kv_bytes, res->read_bw_gbps, dst[p]);
        }
        /* the timed launches must have computed exactly what was validated */
        void *host_out[3] = {out_n, out_o, out_b};
        for (int p = 0; p < np; p++) {
            CK(cudaMemcpy(out_chk, d_out[p], q_elems * el, cudaMemcpyDeviceToHost));
            if (memcmp(out_chk, host_out[p], q_elems * el))
                fail(res, "the %s pass gave a different output when timed than when checked",
                     p == 0 ? "naive" : p == 1 ? "paged-ordered" : "paged (second layout)");
        }
    }

done:
    if (bw_a)
        cudaEventDestroy(bw_a);
    if (bw_b)
        cudaEventDestroy(bw_b);
    for (int i = 0; i < nev; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    void *dev[] = {d_q, d_sk, d_sv, d_nk, d_nv, d_pok, d_pov, d_pbk, d_pbv, d_tab_o, d_tab_b,
                   d_lens, d_out[0], d_out[1], d_out[2], d_ws, d_flush, d_bw, d_sink};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            cudaFree(dev[i]);
    if (st)
        cudaStreamDestroy(st);
    free(off);
    free(tab_o);
    free(qf);
    free(kf);
    free(vf);
    free(qd);
    free(stage_k);
    free(stage_v);
    free(pool_h);
    free(out_n);
    free(out_o);
    free(out_b);
    free(out_chk);
    return rc;
}

int check_attn_shape(const pf_gpu_attn_shape *s, int paged)
{
    if (!s || s->num_seqs < 1 || s->num_seqs > 65535 || (paged && s->max_blocks_per_seq < 1))
        return PF_ERR_ARG;
    if (!pf_gpu_shape_ok(s->num_q_heads, s->num_kv_heads, s->head_dim,
                         paged ? s->block_size : 16, NULL, 0))
        return PF_ERR_ARG;
    if (s->dtype != PF_GPU_F32 && s->dtype != PF_GPU_F16 && s->dtype != PF_GPU_BF16)
        return PF_ERR_ARG;
    return PF_OK;
}

/* Public entry points on caller pointers: device lengths cannot be planned
 * from, so the split-KV plan assumes every sequence may be as long as its
 * capacity; the workspace comes from the stream-ordered allocator. */
int attention_public(const pf_gpu_attn_shape *s, int paged, const void *q, const void *k,
                     const void *v, const int *tables, const int *lens, void *out, void *stream)
{
    int rc = check_attn_shape(s, paged);
    if (rc != PF_OK)
        return rc;
    if (!q || !k || !v || !lens || !out || (paged && !tables) || (!paged && s->naive_cap < 1))
        return PF_ERR_ARG;
    const int cap = paged ? s->max_blocks_per_seq * s->block_size : s->naive_cap;
    int *caps = (int *)malloc(sizeof(int) * (size_t)s->num_seqs);
    if (!caps)
        return PF_ERR_NOMEM;
    for (int i = 0; i < s->num_seqs; i++)
        caps[i] = cap;
    pf_gpu_attn_shape sh = *s;
    if (!paged && sh.block_size < 1)
        sh.block_size = 16;
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        free(caps);
        return PF_ERR_UNAVAILABLE;
    }
    pf_gpu_plan plan = pf_gpu_make_plan(&sh, caps, sms);
    free(caps);
    void *ws = NULL;
    cudaStream_t st = (cudaStream_t)stream;
    if (plan.splits > 1 && cudaMallocAsync(&ws, pf_gpu_workspace_bytes(&sh, &plan), st) != cudaSuccess)
        return PF_ERR_NOMEM;
    rc = pf_gpu_launch_attention(&sh, &plan, paged, q, k, v, tables, lens, out, ws, stream);
    if (ws)
        cudaFreeAsync(ws, st);
    return rc;
}

} /* namespace */

extern "C" int pf_gpu_available(char *why, size_t whylen)
{
    if (!device_ready(why, whylen))
        return 0;
    if (why && whylen)
        why[0] = '\0';
    return 1;
}

extern "C" int pf_gpu_device_name(char *name, size_t len)
{
    if (!device_ready(name, len))
        return PF_ERR_UNAVAILABLE;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, 0);
    if (e != cudaSuccess) {
        set_err(name, len, "no CUDA device: %s", cudaGetErrorString(e));
        return PF_ERR_UNAVAILABLE;
    }
    if (name)
        copy_trunc(name, len, prop.name);
    return PF_OK;
}

extern "C" int pf_gpu_malloc(void **ptr, size_t bytes)
{
    if (!ptr)
        return PF_ERR_ARG;
    *ptr = NULL;
    if (!device_ready(NULL, 0))
        return PF_ERR_UNAVAILABLE;
    return cudaMalloc(ptr, bytes) == cudaSuccess ? PF_OK : PF_ERR_NOMEM;
}

extern "C" int pf_gpu_free(void *ptr)
{
    return cudaFree(ptr) == cudaSuccess ? PF_OK : PF_ERR_ARG;
}

extern "C" int pf_gpu_memcpy(void *dst, const void *src, size_t bytes, pf_gpu_copy_kind kind)
{
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                           cudaMemcpyDeviceToDevice};
    if ((unsigned)kind > PF_GPU_D2D)
        return PF_ERR_ARG;
    return cudaMemcpy(dst, src, bytes, kinds[kind]) == cudaSuccess ? PF_OK : PF_ERR_ARG;
}

extern "C" int pf_gpu_memset(void *ptr, int byte, size_t bytes)
{
    return cudaMemset(ptr, byte, bytes) == cudaSuccess ? PF_OK : PF_ERR_ARG;
}

extern "C" int pf_gpu_sync(void)
{
    return cudaDeviceSynchronize() == cudaSuccess ? PF_OK : PF_ERR_ARG;
}

extern "C" int pf_gpu_paged_attention(const pf_gpu_attn_shape *s, const void *q, const void *k_pool,
                                      const void *v_pool, const int *block_tables,
                                      const int *seq_lens, void *out, void *stream)
{
    return attention_public(s, 1, q, k_pool, v_pool, block_tables, seq_lens, out, stream);
}

extern "C" int pf_gpu_naive_attention(const pf_gpu_attn_shape *s, const void *q, const void *k,
                                      const void *v, const int *seq_lens, void *out, void *stream)
{
    return attention_public(s, 0, q, k, v, NULL, seq_lens, out, stream);
}

extern "C" int pf_gpu_append_kv(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                                int n_tokens, const int *block_tables, const int *seq_lens,
                                void *k_pool, void *v_pool, void *stream)
{
    int rc = check_attn_shape(s, 1);
    if (rc != PF_OK)
        return rc;
    if (n_tokens < 0 || !k_new || !v_new || !block_tables || !seq_lens || !k_pool || !v_pool)
        return PF_ERR_ARG;
    return pf_gpu_launch_append(s, k_new, v_new, n_tokens, block_tables, seq_lens, k_pool, v_pool,
                                stream);
}

/* The device is there and the kernels serve this head shape: PF_OK, else
 * PF_ERR_UNAVAILABLE or PF_ERR_ARG with the reason in err. */
static int ready_for(int hq, int hkv, int head_dim, int block_size, char *err, size_t errlen)
{
    char why[200];
    if (!device_ready(why, sizeof why)) {
        set_err(err, errlen, "%s", why);
        return PF_ERR_UNAVAILABLE;
    }
    if (!pf_gpu_shape_ok(hq, hkv, head_dim, block_size, why, sizeof why)) {
        set_err(err, errlen, "%s", why);
        return PF_ERR_ARG;
    }
    return PF_OK;
}

extern "C" int pf_gpu_bench_run(const pf_gpu_bench_cfg *cfg, pf_gpu_bench_result *res, char *err,
                                size_t errlen)
{
    if (!cfg || !res)
        return PF_ERR_ARG;
    memset(res, 0, sizeof *res);
    int ready = ready_for(cfg->num_q_heads, cfg->num_kv_heads, cfg->head_dim, cfg->block_size,
                          err, errlen);
    if (ready != PF_OK)
        return ready;
    if (cfg->num_seqs < 1 || cfg->num_seqs > 65535 || !cfg->seq_lens || cfg->iters < 1) {
        set_err(err, errlen, "need 1..65535 sequences with lengths and iters >= 1");
        return PF_ERR_ARG;
    }
    int maxlen = 0, maxb = 1, frames = 0;
    for (int i = 0; i < cfg->num_seqs; i++) {
        if (cfg->seq_lens[i] < 1) {
            set_err(err, errlen, "sequence %d has length %d (must be >= 1)", i, cfg->seq_lens[i]);
            return PF_ERR_ARG;
        }
        if (cfg->seq_lens[i] > maxlen)
            maxlen = cfg->seq_lens[i];
        int nb = pf_page_blocks_for(cfg->seq_lens[i], cfg->block_size);
        if (nb > maxb)
            maxb = nb;
        frames += nb;
    }
    if (cfg->naive_cap < maxlen) {
        set_err(err, errlen, "naive capacity %d is below the longest sequence (%d)",
                cfg->naive_cap, maxlen);
        return PF_ERR_ARG;
    }
    CaseIn in;
    memset(&in, 0, sizeof in);
    in.S = cfg->num_seqs;
    in.lens = cfg->seq_lens;
    in.cap = cfg->naive_cap;
    in.hq = cfg->num_q_heads;
    in.hkv = cfg->num_kv_heads;
    in.D = cfg->head_dim;
    in.B = cfg->block_size;
    in.dt = cfg->dtype;
    in.iters = cfg->iters;
    in.seed = cfg->seed;
    in.tol = cfg->tolerance;
    in.ref_all_heads = cfg->ref_all_heads;
    in.measure_bw = cfg->measure_bw;
    int *tab_b = NULL;
    if (cfg->shuffle_seed) {
        /* shuffled frames: the ordered numbering sent through a random
         * permutation of the pool (Fisher-Yates on pf_rng) */
        int *perm = (int *)malloc(sizeof(int) * (size_t)frames);
        tab_b = (int *)calloc((size_t)cfg->num_seqs * maxb, sizeof(int));
        if (!perm || !tab_b) {
            free(perm);
            free(tab_b);
            set_err(err, errlen, "out of host memory");
            return PF_ERR_NOMEM;
        }
        pf_rng r;
        pf_rng_seed(&r, cfg->shuffle_seed);
        for (int i = 0; i < frames; i++)
            perm[i] = i;
        for (int i = frames - 1; i > 0; i--) {
            int j = (int)pf_rng_range(&r, 0, i);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        int next = 0;
        for (int s = 0; s < cfg->num_seqs; s++)
            for (int b = 0; b < pf_page_blocks_for(cfg->seq_lens[s], cfg->block_size); b++)
                tab_b[(size_t)s * maxb + b] = perm[next++];
        free(perm);
        in.tables_b = tab_b;
        in.frames_b = frames;
    }
    int rc = run_case(in, res, err, errlen);
    free(tab_b);
    return rc;
}

extern "C" int pf_gpu_run_layout(const pf_gpu_layout *layout, const pf_gpu_head_shape *hs,
                                 pf_gpu_pass_result *out, char *err, size_t errlen)
{
    if (!layout || !hs || !out) {
        set_err(err, errlen, "pf_gpu_run_layout: NULL argument");
        return PF_ERR_ARG;
    }
    memset(out, 0, sizeof *out);
    int ready = ready_for(hs->num_q_heads, hs->num_kv_heads, hs->head_dim, layout->block_size, err,
                          errlen);
    if (ready != PF_OK)
        return ready;
    if (layout->num_seqs < 1 || !layout->seq_lens || !layout->block_tables ||
        layout->max_blocks_per_seq < 1 || layout->pool_frames < 1) {
        set_err(err, errlen, "layout needs sequences, lengths, block tables and frames");
        return PF_ERR_ARG;
    }
    /* Keep the live sequences (length >= 1), compacting their table rows;
     * every frame they map must lie inside the pool. */
    const int B = layout->block_size, mb = layout->max_blocks_per_seq;
    int *lens = (int *)malloc(sizeof(int) * (size_t)layout->num_seqs);
    int *tabs = (int *)malloc(sizeof(int) * (size_t)layout->num_seqs * mb);
    if (!lens || !tabs) {
        free(lens);
        free(tabs);
        set_err(err, errlen, "out of host memory");
        return PF_ERR_NOMEM;
    }
    int n = 0, maxlen = 0, rc = PF_OK;
    for (int s = 0; s < layout->num_seqs && rc == PF_OK; s++) {
        const int len = layout->seq_lens[s];
        if (len < 1)
            continue;
        const int nb = pf_page_blocks_for(len, B);
        if (nb > mb) {
            set_err(err, errlen, "sequence %d: %d tokens need %d blocks, table holds %d", s, len,
                    nb, mb);
            rc = PF_ERR_RANGE;
            break;
        }
        for (int b = 0; b < mb; b++) {
            const int f = layout->block_tables[(size_t)s * mb + b];
            if (b < nb && (f < 0 || f >= layout->pool_frames)) {
                set_err(err, errlen, "sequence %d block %d maps frame %d outside the pool of %d",
                        s, b, f, layout->pool_frames);
                rc = PF_ERR_RANGE;
                break;
            }
            tabs[(size_t)n * mb + b] = b < nb ? f : 0;
        }
        lens[n++] = len;
        if (len > maxlen)
            maxlen = len;
    }
    if (rc == PF_OK && n == 0) {
        set_err(err, errlen, "no live sequence in the layout");
        rc = PF_ERR_ARG;
    }
    if (rc == PF_OK) {
        CaseIn in;
        memset(&in, 0, sizeof in);
        in.S = n;
        in.lens = lens;
        in.cap = maxlen;
        in.hq = hs->num_q_heads;
        in.hkv = hs->num_kv_heads;
        in.D = hs->head_dim;
        in.B = B;
        in.dt = hs->dtype;
        in.iters = 10;
        in.seed = 0x5eedULL;
        in.tables_b = tabs;
        in.frames_b = layout->pool_frames;
        in.tol = 1e-3;
        in.ref_all_heads = 0;
        in.measure_bw = 0;
        pf_gpu_bench_result res;
        /* maxb of the runner is recomputed from the lengths; the given rows
         * are re-packed to that stride below when it differs */
        int maxb = 1;
        for (int i = 0; i < n; i++) {
            int nb = pf_page_blocks_for(lens[i], B);
            if (nb > maxb)
                maxb = nb;
        }
        if (maxb != mb)
            for (int i = 0; i < n; i++)
                memmove(tabs + (size_t)i * maxb, tabs + (size_t)i * mb, sizeof(int) * maxb);
        rc = run_case(in, &res, err, errlen);
        if (rc == PF_OK) {
            copy_trunc(out->device, sizeof out->device, res.device);
            out->naive_ms = res.naive.median_ms;
            out->paged_ms = res.shuffled.median_ms;
            out->ordered_ms = res.ordered.median_ms;
            out->naive_gbps = res.naive.gbps;
            out->paged_gbps = res.shuffled.gbps;
            out->ordered_gbps = res.ordered.gbps;
            out->max_err_naive = res.max_err_ref;
            out->max_err_paged = res.max_diff_shuffled;
            out->max_err_ordered = res.max_diff_ordered;
            out->kv_bytes = res.kv_bytes;
            if (!res.pass) {
                set_err(err, errlen, "check failed: %s", res.failure);
                rc = PF_ERR_RANGE;
            }
        }
    }
    free(lens);
    free(tabs);
    return rc;
}
