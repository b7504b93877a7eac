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
#include <algorithm>
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    int version;   /* kernel version, 0: default      */
    int splits;    /* 0: the planner's; else forced   */
    int grid_order; /* 1: drop the plan's work list   */
    int tail;      /* pf_gpu__plan_set_tail: 0 none  */
    int pack;      /* pf_gpu__plan_set_pack (version 33): 0 the planner's */
    int host_time; /* measure the host time of a run */
    int timeline;  /* one more launch, traced          */
    int group_tile; /* 0: the plan's; else forced      */
    const char *timeline_csv; /* its records (or NULL) */
    int rivals[PF_GPU_BENCH_MAX_RIVALS]; /* more versions, timed beside */
    int num_rivals;
    int interleave; /* pools in FlashInfer's layout (pf_gpu_bench_cfg) */
    int check_only; /* no timed rounds (measure_bw, host_time off too) */
    int layers;     /* runs a step, changing-batch loop (resolved: >= 2) */
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

/* max |a - b| over n elements of type dt; NaN/inf anywhere -> +inf.
 * With `within`, also whether every |a - b| is at most tol, and, for a
 * version whose sums' order moves at run time (pf_gpu_version_exact 0:
 * 11, 37), at most one output ulp beyond it: each run may round an output
 * to either neighbour of the exact sum (NaN/inf: not within). */
double diff_scan(pf_gpu_dtype dt, const void *a, const void *b, size_t n, double tol, int version,
                 int *within)
{
    const int exact = pf_gpu_version_exact(version);
    double m = 0;
    if (within)
        *within = 1;
    for (size_t i = 0; i < n; i++) {
        const float x = pf_gpu_host_load(dt, a, i), y = pf_gpu_host_load(dt, b, i);
        if (!isfinite(x) || !isfinite(y)) {
            if (within)
                *within = 0;
            return INFINITY;
        }
        const double d = fabs((double)x - (double)y);
        if (d > m)
            m = d;
        if (within && *within &&
            !(d <= (exact ? tol : tol + pf_gpu_out_ulp(dt, fmax(fabs(x), fabs(y))))))
            *within = 0;
    }
    return m;
}

double max_abs_diff(pf_gpu_dtype dt, const void *a, const void *b, size_t n)
{
    return diff_scan(dt, a, b, n, 0.0, 0, NULL);
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

/* ---- the runner: one Case, one function per step ------------------------
 * Every buffer a case owns is a member, NULL until allocated, freed by
 * case_free whatever step failed. Each step returns PF_OK or a pf_err with
 * err filled; a failed check is not an error (fail() records it in res).
 *
 * A case runs one or more kernel versions on the same data (`--compare`):
 * each has its own plans, workspace and outputs (a Ver). The passes are
 * numbered version by version: pass p is layout p % np (0 naive, 1 paged
 * on ordered frames, 2 paged on the second layout) of version p / np, and
 * pass np * nv, with the read probe on, is the stream of the same bytes. */
struct Ver {
    int version;              /* as asked: 0 is the default pick      */
    pf_gpu_attn_plan plan[2]; /* naive, paged                         */
    void *d_ws;               /* the paged plan's workspace (or NULL) */
    void *d_out[3];           /* by layout                            */
    void *out_h[3];           /* the checked outputs, by layout       */
};

struct Case {
    const CaseIn *in;
    pf_gpu_bench_result *res;
    char *err;
    size_t errlen;
    size_t el, row_bytes, q_elems, total_tok, flush_bytes;
    int maxb, frames_o, have_b, np;
    cudaDeviceProp prop;
    cudaStream_t st;
    /* host */
    size_t *off;              /* element offset of sequence i, packed arrays */
    int *tab_o;               /* ordered tables [S][maxb]                    */
    const int *tab_h[2];      /* the tables as the device gets them: tab_o and
                                 in->tables_b, or tab_x when interleaved    */
    int *tab_x[2];            /* interleaved: each frame f as 2 f            */
    float *qf, *kf, *vf;      /* reference floats (head-major K/V)           */
    double *ref, *ref_abs;    /* with several versions: the CPU reference
                                 and its weights over |V|, computed by the
                                 first one's check and read by the others'
                                 ([S][hq][D] each)                        */
    void *qd, *stage_k, *stage_v; /* token-major staging in the element type */
    void *out_chk;
    /* device */
    void *d_q, *d_sk, *d_sv, *d_nk, *d_nv, *d_pk[2], *d_pv[2];
    int *d_tab[2], *d_lens;
    void *d_flush;
    void *d_stream;  /* kv_bytes to stream beside the passes (case_time) */
    size_t stream_bytes;
    unsigned *d_sink;
    unsigned long long *d_trace, *trace_h; /* the block timeline's records */
    pf_gpu_attn_graph *graph;              /* the host-time loop's captured run */
    Ver ver[1 + PF_GPU_BENCH_MAX_RIVALS]; /* [0]: in->version, then the rivals */
    int nv;
};

/* A run's output against the output checked before it: bitwise for a
 * version whose sums are added in a fixed order, as paged vs naive is
 * checked for one that shares its work out at run time (v11, v37). */
int same_output(const Case *c, const Ver *v, const void *a, const void *b)
{
    if (pf_gpu_version_exact(v->plan[1].version))
        return !memcmp(a, b, c->q_elems * c->el);
    int within;
    diff_scan(c->in->dt, a, b, c->q_elems, c->in->tol, v->plan[1].version, &within);
    return within;
}

int cuda_fail(Case *c, cudaError_t e, const char *what)
{
    set_err(c->err, c->errlen, "%s: %s", what, cudaGetErrorString(e));
    return pf_gpu_cuda_err((int)e);
}

int pf_fail(Case *c, int rc, const char *what)
{
    set_err(c->err, c->errlen, "%s failed: %s (%s)", what, pf_strerror(rc),
            cudaGetErrorString(cudaGetLastError()));
    return rc;
}

int nomem(Case *c, const char *what)
{
    set_err(c->err, c->errlen, "out of host memory for %s", what);
    return PF_ERR_NOMEM;
}

#define CKC(call)                                                                                  \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return cuda_fail(c, e_, #call);                                                        \
    } while (0)
#define CKP(call, what)                                                                            \
    do {                                                                                           \
        int r_ = (call);                                                                           \
        if (r_ != PF_OK)                                                                           \
            return pf_fail(c, r_, what);                                                           \
    } while (0)

void case_free(Case *c)
{
    if (c->in->interleave) /* a V pool lies inside its K pool's allocation */
        c->d_pv[0] = c->d_pv[1] = NULL;
    void *dev[] = {c->d_q,      c->d_sk,     c->d_sv,    c->d_nk,     c->d_nv,
                   c->d_pk[0],  c->d_pv[0],  c->d_pk[1], c->d_pv[1],  c->d_tab[0],
                   c->d_tab[1], c->d_lens,   c->d_flush, c->d_sink,   c->d_trace,
                   c->d_stream};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            cudaFree(dev[i]);
    for (Ver &v : c->ver) {
        void *vd[] = {v.d_ws, v.d_out[0], v.d_out[1], v.d_out[2]};
        for (void *p : vd)
            if (p)
                cudaFree(p);
        for (void *p : v.out_h)
            free(p);
    }
    pf_gpu_attn_graph_free(c->graph);
    if (c->st)
        cudaStreamDestroy(c->st);
    void *host[] = {c->off,     c->tab_o,   c->tab_x[0], c->tab_x[1], c->qf,
                    c->kf,      c->vf,      c->ref,      c->ref_abs,  c->qd,
                    c->stage_k, c->stage_v, c->out_chk,  c->trace_h};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

/* Sizes, packed offsets and the ordered tables (frames in sequence order). */
int case_layout(Case *c)
{
    const CaseIn &in = *c->in;
    c->off = (size_t *)malloc(sizeof(size_t) * (in.S + 1));
    if (!c->off)
        return nomem(c, "offsets");
    c->maxb = 1;
    for (int s = 0; s < in.S; s++) {
        c->off[s] = c->total_tok * in.hkv * in.D;
        c->total_tok += (size_t)in.lens[s];
        const int nb = pf_page_blocks_for(in.lens[s], in.B);
        c->maxb = nb > c->maxb ? nb : c->maxb;
        c->frames_o += nb;
    }
    c->off[in.S] = c->total_tok * in.hkv * in.D;
    if (c->have_b && in.frames_b < 1) {
        set_err(c->err, c->errlen, "layout has no frames");
        return PF_ERR_ARG;
    }
    c->tab_o = (int *)calloc((size_t)in.S * c->maxb, sizeof(int));
    if (!c->tab_o)
        return nomem(c, "block tables");
    int next = 0;
    for (int s = 0; s < in.S; s++)
        for (int b = 0; b < pf_page_blocks_for(in.lens[s], in.B); b++)
            c->tab_o[(size_t)s * c->maxb + b] = next++;
    c->tab_h[0] = c->tab_o;
    c->tab_h[1] = in.tables_b;
    if (in.interleave)
        for (int i = 0; i < 1 + c->have_b; i++) {
            /* FlashInfer's [page][K|V] layout from two pool views: the
             * table names frame 2 f, K's view starts at the allocation and
             * V's one frame later, so page f's K and V lie side by side */
            const size_t n = (size_t)in.S * c->maxb;
            if (!(c->tab_x[i] = (int *)malloc(n * sizeof(int))))
                return nomem(c, "block tables");
            for (size_t j = 0; j < n; j++)
                c->tab_x[i][j] = 2 * c->tab_h[i][j];
            c->tab_h[i] = c->tab_x[i];
        }
    pf_gpu_bench_result *res = c->res;
    res->frames = c->frames_o;
    res->kv_bytes = (long long)(2 * c->total_tok * in.hkv * c->row_bytes);
    res->naive_reserved = (long long)in.S * in.cap * in.hkv * (long long)c->row_bytes * 2;
    res->paged_reserved = (long long)c->frames_o * in.B * in.hkv * (long long)c->row_bytes * 2;
    return PF_OK;
}

/* q, K, V drawn on the host and rounded to the element type, so the CPU
 * reference sees exactly what the GPU reads: staging token-major
 * [t][Hkv][D], reference floats head-major [Hkv][t][D]. */
int case_host_data(Case *c)
{
    const CaseIn &in = *c->in;
    const size_t kv = c->off[in.S], el = c->el, qn = c->q_elems;
    c->qf = (float *)malloc(qn * sizeof(float));
    c->qd = malloc(qn * el);
    c->kf = (float *)malloc(kv * sizeof(float));
    c->vf = (float *)malloc(kv * sizeof(float));
    c->stage_k = malloc(kv * el);
    c->stage_v = malloc(kv * el);
    c->out_chk = malloc(qn * el);
    if (!c->qf || !c->qd || !c->kf || !c->vf || !c->stage_k || !c->stage_v || !c->out_chk)
        return nomem(c, "the KV data");
    if (c->nv > 1 && (!(c->ref = (double *)malloc(qn * sizeof(double))) ||
                      !(c->ref_abs = (double *)malloc(qn * sizeof(double)))))
        return nomem(c, "the CPU reference");
    for (int k = 0; k < c->nv; k++)
        for (int i = 0; i < c->np; i++)
            if (!(c->ver[k].out_h[i] = malloc(qn * el)))
                return nomem(c, "the outputs");
    pf_rng rng;
    pf_rng_seed(&rng, in.seed);
    for (size_t i = 0; i < qn; i++)
        c->qf[i] = pf_gpu_host_store(in.dt, c->qd, i, pf_rng_symf(&rng));
    for (int s = 0; s < in.S; s++) {
        const int len = in.lens[s];
        for (int t = 0; t < len; t++)
            for (int h = 0; h < in.hkv; h++)
                for (int d = 0; d < in.D; d++) {
                    const size_t si = c->off[s] + ((size_t)t * in.hkv + h) * in.D + d;
                    const size_t ri = c->off[s] + ((size_t)h * len + t) * in.D + d;
                    c->kf[ri] = pf_gpu_host_store(in.dt, c->stage_k, si, pf_rng_symf(&rng));
                    c->vf[ri] = pf_gpu_host_store(in.dt, c->stage_v, si, pf_rng_symf(&rng));
                }
    }
    /* a given layout may map one frame into several sequences (shared
     * prefix blocks): make those rows the same data in every sharer, as a
     * real shared prefix is, so the pool holds one consistent copy */
    if (c->have_b && !share_rows(in, c->off, c->maxb, el, c->stage_k, c->stage_v, c->kf, c->vf,
                                 c->res, c->err, c->errlen))
        return PF_ERR_NOMEM;
    return PF_OK;
}

/* A frame's bytes of K (or of V), and the bytes of a pool as the kernels
 * index it: its frames, twice as many views of them when interleaved (K's
 * even, V's odd, one frame later). */
size_t frame_bytes(const Case *c)
{
    return (size_t)c->in->hkv * c->in->B * c->row_bytes;
}

size_t pool_bytes(const Case *c, int which)
{
    const int frames = which == 0 ? c->frames_o : c->in->frames_b;
    return (size_t)frames * (c->in->interleave ? 2 : 1) * frame_bytes(c);
}

/* Device buffers, uploads, and NaN everywhere a pass could read by mistake. */
int case_upload(Case *c)
{
    const CaseIn &in = *c->in;
    const size_t kvb = c->off[in.S] * c->el, qb = c->q_elems * c->el;
    const size_t naive = (size_t)in.S * in.hkv * in.cap * c->row_bytes;
    const size_t tabb = (size_t)in.S * c->maxb * sizeof(int);
    CKC(cudaMalloc(&c->d_q, qb));
    CKC(cudaMalloc(&c->d_sk, kvb));
    CKC(cudaMalloc(&c->d_sv, kvb));
    CKC(cudaMalloc(&c->d_nk, naive));
    CKC(cudaMalloc(&c->d_nv, naive));
    for (int i = 0; i < 1 + c->have_b; i++) {
        if (in.interleave) {
            /* one allocation, V's view a frame in. The kernels touch frames
             * 0 .. 2 F - 1 through either view; the spare frame at the end
             * lets the read-back copy pool_bytes from V's view as from K's */
            const size_t all = pool_bytes(c, i) + frame_bytes(c);
            CKC(cudaMalloc(&c->d_pk[i], all));
            c->d_pv[i] = (char *)c->d_pk[i] + frame_bytes(c);
            CKC(cudaMemsetAsync(c->d_pk[i], 0xff, all, c->st));
            c->res->kv_interleaved = 1; /* what ran, for the report */
        } else {
            CKC(cudaMalloc(&c->d_pk[i], pool_bytes(c, i)));
            CKC(cudaMalloc(&c->d_pv[i], pool_bytes(c, i)));
            CKC(cudaMemsetAsync(c->d_pk[i], 0xff, pool_bytes(c, i), c->st));
            CKC(cudaMemsetAsync(c->d_pv[i], 0xff, pool_bytes(c, i), c->st));
        }
        CKC(cudaMalloc((void **)&c->d_tab[i], tabb));
    }
    CKC(cudaMalloc((void **)&c->d_lens, (size_t)in.S * sizeof(int)));
    for (int k = 0; k < c->nv; k++)
        for (int i = 0; i < c->np; i++)
            CKC(cudaMalloc(&c->ver[k].d_out[i], qb));
    CKC(cudaMalloc((void **)&c->d_sink, sizeof(unsigned)));
    c->flush_bytes = (size_t)(c->prop.l2CacheSize > 0 ? c->prop.l2CacheSize : (64 << 20)) * 2;
    CKC(cudaMalloc(&c->d_flush, c->flush_bytes));
    CKC(cudaMemsetAsync(c->d_flush, 0x5a, c->flush_bytes, c->st));
    CKC(cudaMemsetAsync(c->d_nk, 0xff, naive, c->st));
    CKC(cudaMemsetAsync(c->d_nv, 0xff, naive, c->st));
    CKC(cudaMemcpy(c->d_q, c->qd, qb, cudaMemcpyHostToDevice));
    CKC(cudaMemcpy(c->d_sk, c->stage_k, kvb, cudaMemcpyHostToDevice));
    CKC(cudaMemcpy(c->d_sv, c->stage_v, kvb, cudaMemcpyHostToDevice));
    for (int i = 0; i < 1 + c->have_b; i++)
        CKC(cudaMemcpy(c->d_tab[i], c->tab_h[i], tabb, cudaMemcpyHostToDevice));
    CKC(cudaMemcpy(c->d_lens, in.lens, (size_t)in.S * sizeof(int), cudaMemcpyHostToDevice));
    return PF_OK;
}

/* The shape of a case's input for the launchers, with tables of maxb
 * blocks a sequence (num_seqs as given). */
pf_gpu_attn_shape in_shape(const CaseIn &in, int maxb, int num_seqs)
{
    pf_gpu_attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.num_seqs = num_seqs;
    sh.num_q_heads = in.hq;
    sh.num_kv_heads = in.hkv;
    sh.head_dim = in.D;
    sh.block_size = in.B;
    sh.max_blocks_per_seq = maxb;
    sh.naive_cap = in.cap;
    sh.dtype = in.dt;
    return sh;
}

/* The shape of this case for the launchers (num_seqs as given). */
pf_gpu_attn_shape case_shape(const Case *c, int num_seqs)
{
    return in_shape(*c->in, c->maxb, num_seqs);
}

/* Naive buffers by strided device copies, pools through the append kernel. */
int case_fill(Case *c)
{
    const CaseIn &in = *c->in;
    const pf_gpu_attn_shape one = case_shape(c, 1);
    for (int s = 0; s < in.S; s++) {
        const int len = in.lens[s];
        for (int h = 0; h < in.hkv; h++) {
            const size_t dst = (((size_t)s * in.hkv + h) * in.cap) * c->row_bytes;
            const size_t src = (c->off[s] + (size_t)h * in.D) * c->el;
            CKC(cudaMemcpy2DAsync((char *)c->d_nk + dst, c->row_bytes, (const char *)c->d_sk + src,
                                  in.hkv * c->row_bytes, c->row_bytes, len,
                                  cudaMemcpyDeviceToDevice, c->st));
            CKC(cudaMemcpy2DAsync((char *)c->d_nv + dst, c->row_bytes, (const char *)c->d_sv + src,
                                  in.hkv * c->row_bytes, c->row_bytes, len,
                                  cudaMemcpyDeviceToDevice, c->st));
        }
        const void *ks = (const char *)c->d_sk + c->off[s] * c->el;
        const void *vs = (const char *)c->d_sv + c->off[s] * c->el;
        for (int i = 0; i < 1 + c->have_b; i++)
            CKP(pf_gpu_launch_append(&one, ks, vs, len, c->d_tab[i] + (size_t)s * c->maxb,
                                     c->d_lens + s, c->d_pk[i], c->d_pv[i], c->st),
                "append");
    }
    CKC(cudaStreamSynchronize(c->st));
    return PF_OK;
}

/* Each pool read back and walked through the page tables on the host. */
int case_readback(Case *c)
{
    const CaseIn &in = *c->in;
    const size_t most = pool_bytes(c, 0) > (c->have_b ? pool_bytes(c, 1) : 0)
                            ? pool_bytes(c, 0)
                            : pool_bytes(c, 1);
    unsigned char *h = (unsigned char *)malloc(most);
    if (!h)
        return nomem(c, "the pool read-back");
    c->res->readback_ok = 1;
    int rc = PF_OK;
    for (int i = 0; i < 2 * (1 + c->have_b) && rc == PF_OK; i++) {
        const int pool = i / 2;
        const void *src = i % 2 ? c->d_pv[pool] : c->d_pk[pool];
        cudaError_t e = cudaMemcpy(h, src, pool_bytes(c, pool), cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            rc = cuda_fail(c, e, "pool read-back copy");
            break;
        }
        if (!pool_readback_ok(h, (const unsigned char *)(i % 2 ? c->stage_v : c->stage_k), c->off,
                              in.lens, in.S, c->tab_h[pool], c->maxb, in.hkv, in.B,
                              c->row_bytes, in.D)) {
            c->res->readback_ok = 0;
            fail(c->res, "pool read-back: the %s %s pool differs from what was written",
                 pool ? "second" : "ordered", i % 2 ? "V" : "K");
        }
    }
    free(h);
    return rc;
}

/* A planning step's name for its error: with --compare, "version 9's
 * --splits", so that a refusal names the version that refused. Built only
 * on failure (CKP evaluates its label then). */
const char *step_name(const Case *c, const Ver *v, const char *step, char (&buf)[64])
{
    if (c->nv == 1)
        return step;
    snprintf(buf, sizeof buf, "version %d's %s", v->version, step);
    return buf;
}

/* Plans from the real lengths, for each version asked. The naive pass
 * runs the paged plan's chunking (any chunk suits contiguous rows), so a
 * version's two passes do the same floating-point operations in the same
 * order: their outputs are bitwise equal and their times differ by the
 * gather alone. The forcing flags (splits, tail, grid order, group tile)
 * apply to every version; one whose plan refuses is a bad argument. */
int plan_version(Case *c, Ver *v)
{
    const CaseIn &in = *c->in;
    const pf_gpu_attn_shape sh = case_shape(c, in.S);
    pf_gpu_attn_plan *pl = &v->plan[1];
    char name[64];
    CKP(pf_gpu_attn_plan_make(pl, &sh, 1, in.lens, 0, v->version),
        step_name(c, v, "plan", name));
    if (in.splits > 0)
        CKP(pf_gpu__plan_set_splits(pl, in.splits, in.lens), step_name(c, v, "--splits", name));
    if (in.tail > 0 && pf_gpu__plan_set_tail(pl, in.tail, in.lens) != PF_OK) {
        char can[64];
        pf_gpu_tail_versions(can, sizeof can);
        set_err(c->err, c->errlen,
                "--tail %d: version %d's plan (%d-token chunks, %s) cannot take one: it needs a "
                "work list, a version that merges in place (%s) and chunks "
                "that cut into %d pieces of whole pages of at least 16 tokens",
                in.tail, pl->version, pl->chunk, pl->units ? "a work list" : "grid order", can,
                8 * in.tail);
        return PF_ERR_ARG;
    }
    if (!v->version && (in.splits > 0 || in.tail > 0))
        pf_gpu__plan_pick_depth(pl); /* version 0's depth follows the forced cut */
    if (in.grid_order)
        pf_gpu__plan_drop_list(pl);
    if (in.group_tile > 0)
        CKP(pf_gpu__plan_set_group_tile(pl, in.group_tile),
            step_name(c, v, "--group-tile", name));
    if (in.pack > 0 && pf_gpu_version_packs(pl->version) &&
        pf_gpu__plan_set_pack(pl, in.pack) != PF_OK) {
        set_err(c->err, c->errlen,
                "--pack %d: version %d's plan (%s, %d chunk%s of %d tokens, %s) cannot take it: a "
                "pack is 1 or a multiple of %d up to %d whole sequences of a 16-bit work list, "
                "unsplit, without a tail, within %d tokens a block",
                in.pack, pl->version, pf_gpu_dtype_name(pl->shape.dtype), pl->splits,
                pl->splits == 1 ? "" : "s", pl->chunk, pl->units ? "a work list" : "grid order",
                PF_GPU_PACK_STEP, PF_GPU_PACK_MAX,
                pf_gpu_chunk_max_tokens(pl->shape.block_size, pl->version));
        return PF_ERR_ARG;
    }
    pf_gpu_kernel_prepare(pl); /* the forced tile or pack: another kernel */
    v->plan[0] = *pl;
    v->plan[0].paged = 0;
    pf_gpu_kernel_prepare(&v->plan[0]);
    if (pl->workspace_bytes) {
        CKC(cudaMalloc(&v->d_ws, pl->workspace_bytes));
        CKP(pf_gpu_attn_workspace_init(pl, in.lens, v->d_ws, c->st), "workspace_init");
    }
    return PF_OK;
}

int case_plan(Case *c)
{
    for (int k = 0; k < c->nv; k++) {
        const int rc = plan_version(c, &c->ver[k]);
        if (rc != PF_OK)
            return rc;
        const pf_gpu_attn_plan *pl = &c->ver[k].plan[1];
        if (k == 0) {
            c->res->chunk_tokens = pl->chunk;
            c->res->splits = pl->splits;
            c->res->units = pl->units;
            c->res->pack = pl->pack;
            c->res->version = pl->version;
            c->res->group_tile = pl->group_tile;
        } else {
            pf_gpu_bench_rival *r = &c->res->rival[k - 1];
            r->chunk_tokens = pl->chunk;
            r->splits = pl->splits;
            r->units = pl->units;
            r->pack = pl->pack;
            r->version = pl->version;
            r->group_tile = pl->group_tile;
        }
    }
    c->res->num_rivals = c->nv - 1;
    return PF_OK;
}

/* Pass p (see Ver): layout p % np of version p / np; np * nv (case_time
 * only): the stream of the same bytes. */
int case_launch(Case *c, int p)
{
    if (p == c->np * c->nv)
        return pf_gpu_launch_read_bw(c->d_stream, c->stream_bytes / 16, c->d_sink,
                                     c->prop.multiProcessorCount, c->st);
    const Ver &v = c->ver[p / c->np];
    const int L = p % c->np;
    if (L == 0)
        return pf_gpu_attn_run(&v.plan[0], c->d_q, c->d_nk, c->d_nv, NULL, c->d_lens, v.d_out[0],
                               v.d_ws, c->st);
    return pf_gpu_attn_run(&v.plan[1], c->d_q, c->d_pk[L - 1], c->d_pv[L - 1], c->d_tab[L - 1],
                           c->d_lens, v.d_out[L], v.d_ws, c->st);
}

/* Version k's checks: one run of each of its passes on NaN-poisoned
 * outputs, then its naive output against the CPU reference for every
 * sequence (computed once, in the first version's check, and kept for the
 * others) and each paged output against its naive one. The first
 * version's figures go to the result's own fields, a rival's to its
 * entry; a failure names the version when there are several. */
int check_version(Case *c, int k)
{
    const CaseIn &in = *c->in;
    pf_gpu_bench_result *res = c->res;
    Ver *v = &c->ver[k];
    const size_t qb = c->q_elems * c->el;
    for (int L = 0; L < c->np; L++) {
        CKC(cudaMemsetAsync(v->d_out[L], 0xff, qb, c->st));
        CKP(case_launch(c, k * c->np + L), L ? "paged attention" : "naive attention");
        CKC(cudaStreamSynchronize(c->st));
        CKC(cudaMemcpy(v->out_h[L], v->d_out[L], qb, cudaMemcpyDeviceToHost));
    }
    char who[32] = "";
    if (c->nv > 1)
        snprintf(who, sizeof who, "version %d: ", v->plan[1].version);
    pf_gpu_refcheck rin;
    pf_gpu_refcheck_out rout;
    memset(&rin, 0, sizeof rin);
    rin.num_seqs = in.S;
    rin.lens = in.lens;
    rin.hq = in.hq;
    rin.hkv = in.hkv;
    rin.head_dim = in.D;
    rin.scale = 1.f / sqrtf((float)in.D);
    rin.q = c->qf;
    rin.k = c->kf;
    rin.v = c->vf;
    rin.off = c->off;
    rin.out = v->out_h[0];
    rin.dtype = in.dt;
    rin.all_heads = in.ref_all_heads;
    rin.tol = in.tol;
    rin.p_eps = pf_gpu_version_p_eps(v->plan[1].version, in.dt);
    rin.ref = c->ref; /* computed by the first version's check, read by the rivals' */
    rin.ref_abs = c->ref_abs;
    rin.ref_ready = k > 0;
    int rc = pf_gpu_ref_check(&rin, &rout);
    if (rc != PF_OK) {
        set_err(c->err, c->errlen, "CPU reference failed: %s", pf_strerror(rc));
        return rc;
    }
    if (rout.bad)
        fail(res, "%snaive vs CPU reference: %lld of %lld elements off (first: seq %d, head %d), "
                  "max |err| %.3g", who, rout.bad, rout.checked, rout.first_bad_seq,
             rout.first_bad_head, rout.max_err);
    /* (a version whose order moves may also differ by an output ulp: diff_scan) */
    const int ver = v->plan[1].version;
    const char *ulp = pf_gpu_version_exact(ver) ? "" : " and an output ulp";
    int within;
    const double ordered =
        diff_scan(in.dt, v->out_h[1], v->out_h[0], c->q_elems, in.tol, ver, &within);
    if (!within)
        fail(res, "%spaged (ordered) vs naive: max |diff| %.3g over tolerance %.3g%s", who,
             ordered, in.tol, ulp);
    double shuffled = 0;
    if (c->have_b) {
        shuffled = diff_scan(in.dt, v->out_h[2], v->out_h[0], c->q_elems, in.tol, ver, &within);
        if (!within)
            fail(res, "%spaged (second layout) vs naive: max |diff| %.3g over tolerance %.3g%s",
                 who, shuffled, in.tol, ulp);
    }
    if (k > 0) {
        pf_gpu_bench_rival *r = &res->rival[k - 1];
        r->max_err_ref = rout.max_err;
        r->max_diff_base = max_abs_diff(in.dt, v->out_h[0], c->ver[0].out_h[0], c->q_elems);
        r->max_diff_ordered = ordered;
        r->max_diff_shuffled = shuffled;
        return PF_OK;
    }
    res->max_err_ref = rout.max_err;
    res->ref_allowed = rout.allowed_at_max;
    res->ref_checked = rout.checked;
    res->max_diff_ordered = ordered;
    res->max_diff_shuffled = shuffled;
    res->have_shuffled = c->have_b;
    return PF_OK;
}

int case_check(Case *c)
{
    for (int k = 0; k < c->nv; k++) {
        const int rc = check_version(c, k);
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

/* The device's streaming read bandwidth: a read-only pass over up to 4 GiB,
 * median of 10 timed passes after 2 warm-ups. */
int case_read_bw(Case *c)
{
    size_t bytes = (size_t)4 << 30;
    void *buf = NULL;
    while (bytes >= ((size_t)256 << 20) && cudaMalloc(&buf, bytes) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the failed allocation */
        bytes /= 2;
    }
    if (!buf)
        return PF_OK; /* no room: the fractions print as 0 */
    cudaEvent_t ea = NULL, eb = NULL;
    double t[10] = {0};
    cudaError_t e = cudaEventCreate(&ea);
    if (e == cudaSuccess)
        e = cudaEventCreate(&eb);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(buf, 0x5a, bytes, c->st);
    for (int i = 0; i < 12 && e == cudaSuccess; i++) {
        float f = 0;
        e = cudaEventRecord(ea, c->st);
        if (e == cudaSuccess && pf_gpu_launch_read_bw(buf, bytes / 16, c->d_sink,
                                                      c->prop.multiProcessorCount, c->st) != PF_OK)
            e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaEventRecord(eb, c->st);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(eb);
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&f, ea, eb);
        if (i >= 2)
            t[i - 2] = f;
    }
    if (ea)
        cudaEventDestroy(ea);
    if (eb)
        cudaEventDestroy(eb);
    cudaFree(buf);
    if (e != cudaSuccess)
        return cuda_fail(c, e, "read-bandwidth probe");
    c->res->read_bw_gbps = (double)bytes / (median_of(t, 10) * 1e-3) / 1e9;
    return PF_OK;
}

/* Where pass p's timings go: the result's own fields for the first
 * version and the stream, a rival's entry for the others. */
pf_gpu_timing *pass_timing(Case *c, int p)
{
    pf_gpu_bench_result *r = c->res;
    if (p == c->np * c->nv)
        return &r->stream;
    const int k = p / c->np, L = p % c->np;
    if (k == 0)
        return L == 0 ? &r->naive : L == 1 ? &r->ordered : &r->shuffled;
    pf_gpu_bench_rival *v = &r->rival[k - 1];
    return L == 0 ? &v->naive : L == 1 ? &v->ordered : &v->shuffled;
}

/* Passes interleaved round-robin, one CUDA-event pair per launch, the L2
 * flushed before each launch by a read over twice its size (a read, not a
 * memset: a write flush would leave dirty lines the timed kernel pays to
 * write back); then the timed outputs must be bitwise what was checked. */
int case_time(Case *c)
{
    /* with the read probe on, a stream of the pass's bytes runs as one
     * more pass (np * nv): the same flushes, the same interleaving */
    if (c->in->measure_bw && !c->d_stream) {
        c->stream_bytes = ((size_t)c->res->kv_bytes + 15) / 16 * 16;
        if (cudaMalloc(&c->d_stream, c->stream_bytes) != cudaSuccess) {
            (void)cudaGetLastError(); /* no room: no stream row */
            c->d_stream = NULL;
        } else if (cudaMemsetAsync(c->d_stream, 0x5a, c->stream_bytes, c->st) != cudaSuccess) {
            return cuda_fail(c, cudaGetLastError(), "the stream's buffer");
        }
    }
    const int np = c->np * c->nv, iters = c->in->iters, nt = np + (c->d_stream != NULL);
    const int nev = 2 * nt * iters;
    cudaEvent_t *ev = (cudaEvent_t *)calloc((size_t)nev, sizeof(cudaEvent_t));
    double *ms = (double *)malloc(sizeof(double) * (size_t)iters);
    int rc = PF_OK, made = 0;
    cudaError_t e = cudaSuccess;
    if (!ev || !ms) {
        free(ev);
        free(ms);
        return nomem(c, "the timings");
    }
    for (; made < nev && e == cudaSuccess; made++)
        e = cudaEventCreate(&ev[made]);
    if (e != cudaSuccess) {
        made--;
        rc = cuda_fail(c, e, "cudaEventCreate");
    }
    for (int it = -2; it < iters && rc == PF_OK; it++) /* two warm-up rounds */
        for (int p = 0; p < nt && rc == PF_OK; p++) {
            rc = pf_gpu_launch_read_bw(c->d_flush, c->flush_bytes / 16, c->d_sink,
                                       c->prop.multiProcessorCount, c->st);
            if (rc == PF_OK && it >= 0)
                rc = pf_gpu_cuda_err((int)cudaEventRecord(ev[2 * (p * iters + it)], c->st));
            if (rc == PF_OK)
                rc = case_launch(c, p);
            if (rc == PF_OK && it >= 0)
                rc = pf_gpu_cuda_err((int)cudaEventRecord(ev[2 * (p * iters + it) + 1], c->st));
            if (rc != PF_OK)
                pf_fail(c, rc, "timed launch");
        }
    if (rc == PF_OK && (e = cudaStreamSynchronize(c->st)) != cudaSuccess)
        rc = cuda_fail(c, e, "cudaStreamSynchronize");
    c->res->have_stream = nt > np;
    for (int p = 0; p < nt && rc == PF_OK; p++) {
        for (int it = 0; it < iters && rc == PF_OK; it++) {
            float f = 0;
            e = cudaEventElapsedTime(&f, ev[2 * (p * iters + it)], ev[2 * (p * iters + it) + 1]);
            if (e != cudaSuccess)
                rc = cuda_fail(c, e, "cudaEventElapsedTime");
            ms[it] = f;
        }
        if (rc == PF_OK)
            stats(ms, iters, (double)c->res->kv_bytes, c->res->read_bw_gbps, pass_timing(c, p));
    }
    for (int p = 0; p < np && rc == PF_OK; p++) {
        const Ver &v = c->ver[p / c->np];
        const int L = p % c->np;
        e = cudaMemcpy(c->out_chk, v.d_out[L], c->q_elems * c->el, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess)
            rc = cuda_fail(c, e, "cudaMemcpy of a timed output");
        else if (!same_output(c, &v, c->out_chk, v.out_h[L]))
            fail(c->res, "version %d: the %s pass gave a different output when timed than when "
                         "checked", v.plan[1].version,
                 L == 0 ? "naive" : L == 1 ? "paged-ordered" : "paged (second layout)");
    }
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    return rc;
}

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Host time of a launch: the median of 5 loops of 50 calls with no sync in
 * between (what a serving loop pays per layer) of
 *   HOST_RUN    the paged run (pf_gpu_attn_run);
 *   HOST_EMPTY  the launch of an empty kernel with the same argument block,
 *               made as the run makes its launch (a replay of the stream's
 *               graph): the floor under the run;
 *   HOST_DIRECT the same by the driver's launch (cuLaunchKernel): what the
 *               run would pay without its graph;
 *   HOST_GRAPH  the replay of a CUDA graph holding one run
 *               (pf_gpu_attn_graph_launch): what a serving loop that
 *               captures its decode step, as vLLM does by default, pays.
 * The device work queues up meanwhile; 50 launches do not fill the launch
 * queue and block. */
enum HostLoop { HOST_RUN, HOST_EMPTY, HOST_DIRECT, HOST_GRAPH };

int host_loop_us(Case *c, HostLoop what, double *us)
{
    double per[5];
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now_us();
        for (int i = 0; i < 50; i++) {
            if (what == HOST_EMPTY || what == HOST_DIRECT)
                CKP(pf_gpu_launch_empty(c->st, what == HOST_DIRECT), "empty kernel (host-time floor)");
            else if (what == HOST_GRAPH)
                CKP(pf_gpu_attn_graph_launch(c->graph, 1, c->st), "graph replay (host-time loop)");
            else
                CKP(case_launch(c, 1), "paged attention (host-time loop)");
        }
        per[rep] = (now_us() - t0) / 50;
        CKC(cudaStreamSynchronize(c->st));
    }
    *us = median_of(per, 5);
    return PF_OK;
}

/* Host time of a run when the batch changes, as a serving loop's does
 * from step to step: plans for the first S, S-1, ..., S-K+1 sequences
 * (K = min(S, kChurnPlans)) of the paged pass's tables and lengths,
 * planned as --kernel plans them (the forcing flags aside), each on a
 * workspace of its own, taken in turn, and the graphs made meanwhile
 * (pf_gpu_graph_lru). Two loops:
 *   a step      in.layers runs of one plan, then the next plan (a model
 *               runs its attention once a layer with one batch a step):
 *               5 timings of 4 steps each after two warm rounds; a step
 *               whose key left the cache makes one graph;
 *   every run   each call the next plan, the worst case for the cache: 5
 *               timings of 50 calls after two warm rounds; once settled
 *               it makes no graph.
 * Each timing is taken by the graph path and by direct launches in turn
 * (churn_loop): host times on the shared device machines move 2x from
 * process to process, so the two ways are compared within one.
 * 24 plans: more grids than the cache's 16 slots, where every run of the
 * second loop made a graph before that policy. */
constexpr int kChurnPlans = 24;

/* One of the loops above, timed by the graph path and by direct launches
 * in turn (pf_gpu__launch_direct), so that the two are compared in one
 * process, into *out: each way's median of 5 timings, and the graphs the
 * graph path's timings made. Each way keeps its
 * own place in the sequence of plans, so each runs the whole cycle: with
 * one place shared, the graph path's timed steps saw every other group of
 * 4 steps (12 of 24 sizes, a cycle the cache's 16 slots hold). */
int churn_loop(Case *c, const pf_gpu_attn_plan *pl, void *const *ws, int K, int per,
               pf_gpu_churn *out)
{
    const Ver &v = c->ver[0];
    long long call[2] = {0, 0}; /* each way's place in the sequence */
    double t[2][5];
    unsigned made = 0;
    int rc = PF_OK;
    for (int rep = -2; rep < 5 && rc == PF_OK; rep++)
        for (int way = 0; way < 2 && rc == PF_OK; way++) {
            if (rep < 0 && way == 1)
                continue; /* the warm rounds are the graph path's */
            pf_gpu__launch_direct(way);
            const unsigned m0 = pf_gpu__graph_makes();
            const int calls = rep < 0 ? K * per : per == 1 ? 50 : 4 * per;
            if (rep == 0 && way == 1)
                call[1] = call[0] - calls; /* where the graph path's timings began */
            const double t0 = now_us();
            for (int i = 0; i < calls && rc == PF_OK; i++, call[way]++) {
                const int k = (int)(call[way] / per % K);
                rc = pf_gpu_attn_run(&pl[k], c->d_q, c->d_pk[0], c->d_pv[0], c->d_tab[0], c->d_lens,
                                     v.d_out[1], ws[k], c->st);
            }
            const double dt = (now_us() - t0) / calls;
            if (rc != PF_OK) {
                pf_fail(c, rc, "paged attention (host-time loop, changing batch)");
                break;
            }
            if (rep >= 0) {
                t[way][rep] = dt;
                if (way == 0)
                    made += pf_gpu__graph_makes() - m0;
            }
            const cudaError_t e = cudaStreamSynchronize(c->st);
            if (e != cudaSuccess)
                rc = cuda_fail(c, e, "cudaStreamSynchronize (host-time loop)");
        }
    pf_gpu__launch_direct(0);
    if (rc == PF_OK) {
        out->us_per_run = median_of(t[0], 5);
        out->direct_us = median_of(t[1], 5);
        out->graph_makes = (int)made;
    }
    return rc;
}

int case_host_churn(Case *c)
{
    const CaseIn &in = *c->in;
    pf_gpu_bench_result *r = c->res;
    const int K = in.S < kChurnPlans ? in.S : kChurnPlans;
    pf_gpu_attn_plan pl[kChurnPlans] = {};
    void *ws[kChurnPlans] = {};
    int rc = PF_OK;
    double make_us[kChurnPlans];
    for (int k = 0; k < K && rc == PF_OK; k++) {
        const pf_gpu_attn_shape sh = case_shape(c, in.S - k);
        /* a decode loop makes a plan each step its batch changes: the
         * host time of each, from the host lengths */
        const double t0 = now_us();
        rc = pf_gpu_attn_plan_make(&pl[k], &sh, 1, in.lens, 0, in.version);
        make_us[k] = now_us() - t0;
        if (rc != PF_OK) {
            pf_fail(c, rc, "plan of a smaller batch (host-time loop)");
            break;
        }
        if (pl[k].workspace_bytes) {
            const cudaError_t e = cudaMalloc(&ws[k], pl[k].workspace_bytes);
            rc = e == cudaSuccess ? pf_gpu_attn_workspace_init(&pl[k], in.lens, ws[k], c->st)
                                  : cuda_fail(c, e, "cudaMalloc of a workspace (host-time loop)");
            if (e == cudaSuccess && rc != PF_OK)
                pf_fail(c, rc, "workspace_init (host-time loop)");
        }
    }
    if (rc == PF_OK)
        rc = churn_loop(c, pl, ws, K, in.layers, &r->churn_step);
    if (rc == PF_OK)
        rc = churn_loop(c, pl, ws, K, 1, &r->churn_run);
    if (rc == PF_OK) {
        r->churn_plans = K;
        r->churn_layers = in.layers;
        r->plan_make_us = median_of(make_us, K);
    }
    for (int k = 0; k < K; k++)
        if (ws[k])
            cudaFree(ws[k]);
    return rc;
}

int case_host_time(Case *c)
{
    pf_gpu_bench_result *r = c->res;
    CKP(host_loop_us(c, HOST_RUN, &r->host_us_per_run), "host time of a run");
    const int rc = case_host_churn(c); /* names its own failure */
    if (rc != PF_OK)
        return rc;
    CKP(host_loop_us(c, HOST_EMPTY, &r->launch_floor_us), "host time of an empty launch");
    CKP(host_loop_us(c, HOST_DIRECT, &r->launch_direct_us), "host time of a direct launch");
    /* the run case_launch(c, 1) makes, captured */
    CKP(pf_gpu_attn_graph_make(&c->graph, &c->ver[0].plan[1], c->d_q, c->d_pk[0], c->d_pv[0],
                               c->d_tab[0], c->d_lens, c->ver[0].d_out[1], c->ver[0].d_ws),
        "capture of a run in a CUDA graph");
    return host_loop_us(c, HOST_GRAPH, &r->graph_us_per_replay);
}

/* The block timeline: one more paged launch on the last layout (shuffled
 * frames when there are), after an L2 flush as a timed launch, with the
 * kernel's records on (PF_GPU_TRACE_WORDS a block of the launch grid); its
 * output must be the checked one (same_output: the marks change nothing
 * else). The records are summarized into res->timeline and, when asked,
 * written as CSV. */
int case_timeline(Case *c)
{
    const CaseIn &in = *c->in;
    const Ver &v = c->ver[0];
    const pf_gpu_attn_plan *p = &v.plan[1];
    if (p->version < PF_GPU_TRACE_MIN_VERSION) { /* only version 0's pick gets here */
        set_err(c->err, c->errlen, "the block timeline needs kernel version %d or later, not %d",
                PF_GPU_TRACE_MIN_VERSION, p->version);
        return PF_ERR_ARG;
    }
    const long long blocks = pf_gpu__plan_blocks(p);
    const size_t words = (size_t)blocks * PF_GPU_TRACE_WORDS;
    const int L = c->np - 1; /* the last pass's layout */
    c->trace_h = (unsigned long long *)malloc(words * sizeof *c->trace_h);
    if (!c->trace_h)
        return nomem(c, "the block timeline");
    CKC(cudaMalloc(&c->d_trace, words * sizeof *c->d_trace));
    CKC(cudaMemsetAsync(c->d_trace, 0, words * sizeof *c->d_trace, c->st));
    CKC(cudaMemsetAsync(v.d_out[L], 0xff, c->q_elems * c->el, c->st));
    CKP(pf_gpu_launch_read_bw(c->d_flush, c->flush_bytes / 16, c->d_sink,
                              c->prop.multiProcessorCount, c->st),
        "L2 flush");
    CKP(pf_gpu_launch_attention(p, c->d_q, c->d_pk[L - 1], c->d_pv[L - 1], c->d_tab[L - 1],
                                c->d_lens, v.d_out[L], v.d_ws, c->st, c->d_trace),
        "traced paged attention");
    CKC(cudaStreamSynchronize(c->st));
    CKC(cudaMemcpy(c->trace_h, c->d_trace, words * sizeof *c->trace_h, cudaMemcpyDeviceToHost));
    CKC(cudaMemcpy(c->out_chk, v.d_out[L], c->q_elems * c->el, cudaMemcpyDeviceToHost));
    if (!same_output(c, &v, c->out_chk, v.out_h[L]))
        fail(c->res, "the traced launch gave a different output than the checked one");
    CKP(pf_gpu_timeline_summarize(c->trace_h, (int)blocks, &c->res->timeline),
        "the block timeline (a block left no record)");
    c->res->have_timeline = 1;
    if (in.timeline_csv) {
        FILE *f = fopen(in.timeline_csv, "w");
        if (!f) {
            set_err(c->err, c->errlen, "cannot write %s: %s", in.timeline_csv, strerror(errno));
            return PF_ERR_IO;
        }
        int rc = pf_gpu_timeline_write(f, c->trace_h, (int)blocks);
        if (fclose(f) != 0 && rc == PF_OK)
            rc = PF_ERR_IO;
        if (rc != PF_OK) {
            set_err(c->err, c->errlen, "writing %s failed", in.timeline_csv);
            return rc;
        }
    }
    return PF_OK;
}

/* The whole case, step by step; one exit frees everything. */
int run_case(const CaseIn &in, pf_gpu_bench_result *res, char *err, size_t errlen)
{
    Case c;
    memset(&c, 0, sizeof c);
    c.in = &in;
    c.res = res;
    c.err = err;
    c.errlen = errlen;
    c.el = pf_gpu_dtype_size(in.dt);
    c.row_bytes = (size_t)in.D * c.el;
    c.q_elems = (size_t)in.S * in.hq * in.D;
    c.have_b = in.tables_b != NULL;
    c.np = c.have_b ? 3 : 2;
    c.nv = 1 + in.num_rivals;
    c.ver[0].version = in.version;
    for (int k = 1; k < c.nv; k++)
        c.ver[k].version = in.rivals[k - 1];
    memset(res, 0, sizeof *res);
    res->pass = 1;
    cudaError_t e = cudaGetDeviceProperties(&c.prop, 0);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking);
    int rc = e == cudaSuccess ? PF_OK : cuda_fail(&c, e, "device set-up");
    if (rc == PF_OK) {
        copy_trunc(res->device, sizeof res->device, c.prop.name);
        res->sm_count = c.prop.multiProcessorCount;
    }
    int (*const steps[])(Case *) = {case_layout, case_host_data, case_upload, case_fill,
                                    case_readback, case_plan, case_check};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && rc == PF_OK; i++)
        rc = steps[i](&c);
    if (rc == PF_OK && in.measure_bw)
        rc = case_read_bw(&c);
    if (rc == PF_OK && !in.check_only) {
        rc = case_time(&c);
        res->timed = rc == PF_OK;
    }
    if (rc == PF_OK && in.host_time)
        rc = case_host_time(&c);
    if (rc == PF_OK && in.timeline)
        rc = case_timeline(&c);
    case_free(&c);
    return rc;
}

/* Public entry points on caller pointers, one shot: plan for every
 * sequence at capacity (device lengths cannot be planned from), take the
 * workspace from the stream-ordered allocator, run, give it back. */
int attention_public(const pf_gpu_attn_shape *s, int paged, const void *q, const void *k,
                     const void *v, const int *tables, const int *lens, void *out, void *stream)
{
    int rc = pf_gpu_attn_validate(s, paged);
    if (rc != PF_OK)
        return rc;
    pf_gpu_attn_plan plan;
    rc = pf_gpu_attn_plan_make(&plan, s, paged, NULL,
                               paged ? s->max_blocks_per_seq * s->block_size : s->naive_cap, 0);
    if (rc != PF_OK)
        return rc;
    void *ws = NULL;
    cudaStream_t st = (cudaStream_t)stream;
    if (plan.workspace_bytes) {
        cudaError_t e = cudaMallocAsync(&ws, plan.workspace_bytes, st);
        if (e != cudaSuccess)
            return pf_gpu_cuda_err((int)e);
    }
    rc = pf_gpu_attn_workspace_init(&plan, NULL, ws, stream); /* a bound: no list */
    if (rc == PF_OK)
        rc = pf_gpu_attn_run(&plan, q, k, v, tables, lens, out, ws, stream);
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
    return pf_gpu_cuda_err((int)cudaFree(ptr));
}

extern "C" int pf_gpu_memcpy(void *dst, const void *src, size_t bytes, pf_gpu_copy_kind kind)
{
    static const cudaMemcpyKind kinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                           cudaMemcpyDeviceToDevice};
    if ((unsigned)kind > PF_GPU_D2D)
        return PF_ERR_ARG;
    return pf_gpu_cuda_err((int)cudaMemcpy(dst, src, bytes, kinds[kind]));
}

extern "C" int pf_gpu_memset(void *ptr, int byte, size_t bytes)
{
    return pf_gpu_cuda_err((int)cudaMemset(ptr, byte, bytes));
}

/* A kernel fault surfaces here: PF_ERR_UNAVAILABLE (the device failed),
 * not PF_ERR_ARG; cudaGetErrorString of the sticky error says which. */
extern "C" int pf_gpu_sync(void)
{
    return pf_gpu_cuda_err((int)cudaDeviceSynchronize());
}

extern "C" int pf_gpu_stream_create(void **stream)
{
    if (!stream)
        return PF_ERR_ARG;
    *stream = NULL;
    if (!device_ready(NULL, 0))
        return PF_ERR_UNAVAILABLE;
    cudaStream_t st = nullptr;
    const int rc = pf_gpu_cuda_err((int)cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (rc == PF_OK)
        *stream = st;
    return rc;
}

extern "C" int pf_gpu_stream_destroy(void *stream)
{
    return stream ? pf_gpu_cuda_err((int)cudaStreamDestroy((cudaStream_t)stream)) : PF_OK;
}

extern "C" int pf_gpu_attn_plan_make(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s,
                                     int paged, const int *lens_host, int max_len, int version)
{
    int rc = pf_gpu__plan_begin(plan, s, paged, version);
    if (rc != PF_OK)
        return rc;
    if (!device_ready(NULL, 0))
        return PF_ERR_UNAVAILABLE;
    int dev = 0, sms = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess)
        return pf_gpu_cuda_err((int)e);
    /* the version is resolved here only to size the SM's slots: the
     * planner is given the caller's `version`, since version 0 plans more
     * than a version (a small launch's head tile, the large launch's
     * version past a small launch's tokens, version 34 where it splits
     * nothing, each sized by its own kernel's occupancy, version 36 at one
     * block an SM; pf_gpu_attn_plan_compute) */
    int v;
    if ((rc = pf_gpu__plan_version(s, paged, lens_host, max_len, version, &v)) != PF_OK)
        return rc;
    const int per_sm = std::max(1, pf_gpu_kernel_blocks_per_sm(s, paged, v));
    const int mh_per_sm =
        !version && v == PF_GPU_GQA_VERSION
            ? std::max(1, pf_gpu_kernel_blocks_per_sm(s, paged, PF_GPU_MH_GQA_VERSION))
            : per_sm;
    rc = pf_gpu__plan_compute_occ(plan, s, paged, lens_host, max_len, version, sms, per_sm,
                                  mh_per_sm);
    if (rc == PF_OK)
        pf_gpu_kernel_prepare(plan); /* a run then queries nothing */
    return rc;
}

extern "C" int pf_gpu_attn_workspace_init(const pf_gpu_attn_plan *plan, const int *lens_host,
                                          void *workspace, void *stream)
{
    int rc = pf_gpu__workspace_args(plan, lens_host, workspace);
    if (rc != PF_OK || !plan->workspace_bytes)
        return rc;
    cudaStream_t st = (cudaStream_t)stream;
    pf_gpu_ws_layout l;
    pf_gpu__ws_layout(plan, &l);
    int *pairs = NULL;
    const size_t list_bytes = l.bytes - l.work;
    if (plan->units) {
        pairs = (int *)malloc(list_bytes);
        if (!pairs)
            return PF_ERR_NOMEM;
        rc = pf_gpu__work_list(plan, lens_host, pairs);
        if (rc != PF_OK) {
            free(pairs);
            return rc;
        }
    }
    cudaError_t e = cudaMemsetAsync(workspace, 0, l.work, st); /* the merge counters */
    /* from pageable memory: the call returns once the host buffer is copied */
    if (e == cudaSuccess && pairs)
        e = cudaMemcpyAsync((char *)workspace + l.work, pairs, list_bytes, cudaMemcpyHostToDevice,
                            st);
    free(pairs);
    return pf_gpu_cuda_err((int)e);
}

extern "C" int pf_gpu_attn_run(const pf_gpu_attn_plan *plan, const void *q, const void *k,
                               const void *v, const int *block_tables, const int *seq_lens,
                               void *out, void *workspace, void *stream)
{
    if (pf_gpu__run_args(plan, q, k, v, block_tables, seq_lens, out, workspace) != PF_OK)
        return PF_ERR_ARG;
    return pf_gpu_launch_attention(plan, q, k, v, block_tables, seq_lens, out, workspace, stream,
                                   NULL);
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
    const int rc = pf_gpu__append_args(s, k_new, v_new, n_tokens, block_tables, seq_lens, k_pool,
                                       v_pool);
    if (rc != PF_OK)
        return rc;
    return pf_gpu_launch_append(s, k_new, v_new, n_tokens, block_tables, seq_lens, k_pool, v_pool,
                                stream);
}

/* The device is there and the kernels serve this head shape and element
 * type: PF_OK, else PF_ERR_UNAVAILABLE or PF_ERR_ARG with the reason in
 * err. (A dtype out of the enum would size the host buffers at 2 bytes an
 * element and store 4: pf_gpu_dtype_size's and pf_gpu_host_store's
 * fallbacks differ.) */
static int ready_for(int hq, int hkv, int head_dim, int block_size, pf_gpu_dtype dt, char *err,
                     size_t errlen)
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
    if (dt != PF_GPU_F32 && dt != PF_GPU_F16 && dt != PF_GPU_BF16) {
        set_err(err, errlen, "element type %d: fp32 (0), fp16 (1) or bf16 (2)", (int)dt);
        return PF_ERR_ARG;
    }
    return PF_OK;
}

/* The sequences' lengths: each at least 1 and within the naive capacity,
 * and their frames within what an int32 table entry names (doubled in the
 * interleaved pool). Gives the longest sequence's blocks and the frames of
 * all. */
static int bench_check_lens(const pf_gpu_bench_cfg *cfg, int *maxb_out, int *frames_out,
                            char *err, size_t errlen)
{
    int maxlen = 0, maxb = 1;
    long long all_frames = 0;
    for (int i = 0; i < cfg->num_seqs; i++) {
        if (cfg->seq_lens[i] < 1) {
            set_err(err, errlen, "sequence %d has length %d (must be >= 1)", i, cfg->seq_lens[i]);
            return PF_ERR_ARG;
        }
        if (cfg->seq_lens[i] > maxlen)
            maxlen = cfg->seq_lens[i];
        const int nb = pf_page_blocks_for(cfg->seq_lens[i], cfg->block_size);
        if (nb > maxb)
            maxb = nb;
        all_frames += nb;
    }
    if (cfg->naive_cap < maxlen) {
        set_err(err, errlen, "naive capacity %d is below the longest sequence (%d)",
                cfg->naive_cap, maxlen);
        return PF_ERR_ARG;
    }
    if (all_frames * (cfg->kv_interleaved ? 2 : 1) > INT_MAX) {
        set_err(err, errlen, "%lld frames: a table names at most %d", all_frames,
                cfg->kv_interleaved ? INT_MAX / 2 : INT_MAX);
        return PF_ERR_ARG;
    }
    *maxb_out = maxb;
    *frames_out = (int)all_frames;
    return PF_OK;
}

/* The shape as the plans will see it, naive and paged, before any device
 * work: through this API the naive buffers' size, num_seqs x num_kv_heads
 * x naive_cap x row bytes, can pass what a size_t holds (the CLI's bounds
 * keep `pagefault bench` far from it), and K and V together are reported
 * in a long long. */
static int bench_check_shape(const CaseIn &in, int maxb, char *err, size_t errlen)
{
    const pf_gpu_attn_shape sh = in_shape(in, maxb, in.S);
    const double naive_bytes =
        2.0 * in.S * in.hkv * (double)in.cap * in.D * pf_gpu_dtype_size(in.dt);
    if (pf_gpu_attn_validate(&sh, 0) != PF_OK || pf_gpu_attn_validate(&sh, 1) != PF_OK ||
        naive_bytes > 9.0e18) {
        set_err(err, errlen,
                "the shape is too large: %d sequences x %d KV heads x %d tokens of naive "
                "capacity x D %d (%.3g bytes of naive K and V)",
                in.S, in.hkv, in.cap, in.D, naive_bytes);
        return PF_ERR_ARG;
    }
    return PF_OK;
}

/* The kernel versions (the timed one and those compared beside it) and
 * the flags that go with some of them: pack, grid order, timeline, and
 * the shuffle window. */
static int bench_check_versions(const pf_gpu_bench_cfg *cfg, char *err, size_t errlen)
{
    if (cfg->num_rivals < 0 || cfg->num_rivals > PF_GPU_BENCH_MAX_RIVALS) {
        set_err(err, errlen, "%d versions to compare: at most %d", cfg->num_rivals,
                PF_GPU_BENCH_MAX_RIVALS);
        return PF_ERR_ARG;
    }
    if (cfg->pack < 0 || cfg->pack > PF_GPU_PACK_MAX) {
        set_err(err, errlen, "pack %d: 0 (the planner's) to %d sequences a block", cfg->pack,
                PF_GPU_PACK_MAX);
        return PF_ERR_ARG;
    }
    for (int k = 0; k <= cfg->num_rivals; k++) {
        const int v = k ? cfg->rivals[k - 1] : cfg->version;
        if (v < 0 || v > PF_GPU_KERNEL_VERSIONS) {
            set_err(err, errlen, "kernel version %d%s: there are versions 1 to %d (0: the default)",
                    v, k ? " (compared)" : "", PF_GPU_KERNEL_VERSIONS);
            return PF_ERR_ARG;
        }
        if (cfg->grid_order && pf_gpu_version_steal(v)) {
            set_err(err, errlen, "version %d runs from its work list only (no grid order)", v);
            return PF_ERR_ARG;
        }
    }
    if (cfg->timeline && cfg->version > 0 && cfg->version < PF_GPU_TRACE_MIN_VERSION) {
        set_err(err, errlen, "the block timeline is recorded by kernel versions %d to %d, not %d",
                PF_GPU_TRACE_MIN_VERSION, PF_GPU_KERNEL_VERSIONS, cfg->version);
        return PF_ERR_ARG;
    }
    if (cfg->shuffle_window < 0) {
        set_err(err, errlen, "shuffle window %d: must be 0 (the whole pool) or positive",
                cfg->shuffle_window);
        return PF_ERR_ARG;
    }
    return PF_OK;
}

/* The case's input from a configuration (tables_b left to
 * bench_shuffled_tables), made before the checks, which read the shape
 * from it: rivals past PF_GPU_BENCH_MAX_RIVALS are not copied
 * (bench_check_versions refuses such a count). check_only: no read probe,
 * no timed rounds, no host-time loops. */
static CaseIn bench_case_in(const pf_gpu_bench_cfg *cfg)
{
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
    in.measure_bw = cfg->measure_bw && !cfg->check_only;
    in.version = cfg->version;
    in.splits = cfg->splits;
    in.grid_order = cfg->grid_order;
    in.tail = cfg->tail;
    in.pack = cfg->pack;
    in.host_time = !cfg->check_only;
    in.timeline = cfg->timeline;
    in.group_tile = cfg->group_tile;
    in.timeline_csv = cfg->timeline_csv;
    in.num_rivals = cfg->num_rivals;
    for (int k = 0; k < cfg->num_rivals && k < PF_GPU_BENCH_MAX_RIVALS; k++)
        in.rivals[k] = cfg->rivals[k];
    in.interleave = cfg->kv_interleaved != 0;
    in.check_only = cfg->check_only != 0;
    in.layers = cfg->layers ? cfg->layers : PF_GPU_BENCH_LAYERS;
    return in;
}

/* The shuffled pass's tables (num_seqs x maxb, the caller frees them; NULL
 * when out of host memory): the ordered numbering, sequence after sequence,
 * sent through a random permutation of the pool (Fisher-Yates on pf_rng
 * seeded with shuffle_seed), or of each run of shuffle_window frames (the
 * last run may be shorter). */
static int *bench_shuffled_tables(const pf_gpu_bench_cfg *cfg, int maxb, int frames)
{
    int *perm = (int *)malloc(sizeof(int) * (size_t)frames);
    int *tab = (int *)calloc((size_t)cfg->num_seqs * maxb, sizeof(int));
    if (!perm || !tab) {
        free(perm);
        free(tab);
        return NULL;
    }
    pf_rng r;
    pf_rng_seed(&r, cfg->shuffle_seed);
    for (int i = 0; i < frames; i++)
        perm[i] = i;
    const int win = cfg->shuffle_window > 0 ? cfg->shuffle_window : frames;
    for (int w0 = 0; w0 < frames; w0 += win)
        for (int i = (frames - w0 < win ? frames - w0 : win) - 1; i > 0; i--) {
            const int j = (int)pf_rng_range(&r, 0, i);
            const int t = perm[w0 + i];
            perm[w0 + i] = perm[w0 + j];
            perm[w0 + j] = t;
        }
    int next = 0;
    for (int s = 0; s < cfg->num_seqs; s++)
        for (int b = 0; b < pf_page_blocks_for(cfg->seq_lens[s], cfg->block_size); b++)
            tab[(size_t)s * maxb + b] = perm[next++];
    free(perm);
    return tab;
}

extern "C" int pf_gpu_bench_run(const pf_gpu_bench_cfg *cfg, pf_gpu_bench_result *res, char *err,
                                size_t errlen)
{
    if (!cfg || !res)
        return PF_ERR_ARG;
    memset(res, 0, sizeof *res);
    int rc = ready_for(cfg->num_q_heads, cfg->num_kv_heads, cfg->head_dim, cfg->block_size,
                       cfg->dtype, err, errlen);
    if (rc != PF_OK)
        return rc;
    if (cfg->num_seqs < 1 || cfg->num_seqs > 65535 || !cfg->seq_lens || cfg->iters < 1 ||
        cfg->iters > PF_GPU_BENCH_MAX_ITERS) {
        set_err(err, errlen, "need 1..65535 sequences with lengths and 1..%d iters",
                PF_GPU_BENCH_MAX_ITERS);
        return PF_ERR_ARG;
    }
    if (cfg->layers && (cfg->layers < 2 || cfg->layers > PF_GPU_BENCH_MAX_LAYERS)) {
        set_err(err, errlen, "layers %d: 0 (the default, %d) or 2..%d runs a step", cfg->layers,
                PF_GPU_BENCH_LAYERS, PF_GPU_BENCH_MAX_LAYERS);
        return PF_ERR_ARG;
    }
    CaseIn in = bench_case_in(cfg);
    int maxb = 1, frames = 0;
    rc = bench_check_lens(cfg, &maxb, &frames, err, errlen);
    if (rc == PF_OK)
        rc = bench_check_shape(in, maxb, err, errlen);
    if (rc == PF_OK)
        rc = bench_check_versions(cfg, err, errlen);
    if (rc != PF_OK)
        return rc;
    int *tab_b = NULL;
    if (cfg->shuffle_seed) {
        tab_b = bench_shuffled_tables(cfg, maxb, frames);
        if (!tab_b) {
            set_err(err, errlen, "out of host memory");
            return PF_ERR_NOMEM;
        }
        in.tables_b = tab_b;
        in.frames_b = frames;
    }
    rc = run_case(in, res, err, errlen);
    free(tab_b);
    return rc;
}

/* The live sequences (length >= 1) of a layout: their lengths into lens
 * and their table rows into tabs, compacted, at the stride the runner
 * uses (the longest live sequence's blocks), each frame they map checked
 * to lie inside the pool. Gives the live count and the longest length. */
static int layout_live(const pf_gpu_layout *layout, int *lens, int *tabs, int *n_out,
                       int *maxlen_out, char *err, size_t errlen)
{
    const int B = layout->block_size, mb = layout->max_blocks_per_seq;
    int n = 0, maxlen = 0, maxb = 1;
    for (int s = 0; s < layout->num_seqs; s++) {
        const int len = layout->seq_lens[s];
        if (len < 1)
            continue;
        const int nb = pf_page_blocks_for(len, B);
        if (nb > mb) {
            set_err(err, errlen, "sequence %d: %d tokens need %d blocks, table holds %d", s, len,
                    nb, mb);
            return PF_ERR_RANGE;
        }
        for (int b = 0; b < mb; b++) {
            const int f = layout->block_tables[(size_t)s * mb + b];
            if (b < nb && (f < 0 || f >= layout->pool_frames)) {
                set_err(err, errlen, "sequence %d block %d maps frame %d outside the pool of %d",
                        s, b, f, layout->pool_frames);
                return PF_ERR_RANGE;
            }
            tabs[(size_t)n * mb + b] = b < nb ? f : 0;
        }
        lens[n++] = len;
        if (len > maxlen)
            maxlen = len;
        if (nb > maxb)
            maxb = nb;
    }
    if (n == 0) {
        set_err(err, errlen, "no live sequence in the layout");
        return PF_ERR_ARG;
    }
    /* rows from stride mb to the runner's maxb <= mb: row i moves down to
     * i x maxb, below every row not yet moved, so in order is safe */
    if (maxb != mb)
        for (int i = 0; i < n; i++)
            memmove(tabs + (size_t)i * maxb, tabs + (size_t)i * mb, sizeof(int) * maxb);
    *n_out = n;
    *maxlen_out = maxlen;
    return PF_OK;
}

/* One pass of a layout's live sequences: the runner's case with the
 * layout's tables as the shuffled pass's, 10 timed rounds, no read probe. */
static int layout_run(const pf_gpu_layout *layout, const pf_gpu_head_shape *hs, const int *lens,
                      const int *tabs, int n, int maxlen, pf_gpu_pass_result *out, char *err,
                      size_t errlen)
{
    CaseIn in;
    memset(&in, 0, sizeof in);
    in.S = n;
    in.lens = lens;
    in.cap = maxlen;
    in.hq = hs->num_q_heads;
    in.hkv = hs->num_kv_heads;
    in.D = hs->head_dim;
    in.B = layout->block_size;
    in.dt = hs->dtype;
    in.iters = 10;
    in.seed = 0x5eedULL;
    in.tables_b = tabs;
    in.frames_b = layout->pool_frames;
    in.tol = 1e-3;
    pf_gpu_bench_result res;
    const int rc = run_case(in, &res, err, errlen);
    if (rc != PF_OK)
        return rc;
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
        return PF_ERR_RANGE;
    }
    return PF_OK;
}

extern "C" int pf_gpu_run_layout(const pf_gpu_layout *layout, const pf_gpu_head_shape *hs,
                                 pf_gpu_pass_result *out, char *err, size_t errlen)
{
    if (!layout || !hs || !out) {
        set_err(err, errlen, "pf_gpu_run_layout: NULL argument");
        return PF_ERR_ARG;
    }
    memset(out, 0, sizeof *out);
    int rc = ready_for(hs->num_q_heads, hs->num_kv_heads, hs->head_dim, layout->block_size,
                       hs->dtype, err, errlen);
    if (rc != PF_OK)
        return rc;
    if (layout->num_seqs < 1 || !layout->seq_lens || !layout->block_tables ||
        layout->max_blocks_per_seq < 1 || layout->pool_frames < 1) {
        set_err(err, errlen, "layout needs sequences, lengths, block tables and frames");
        return PF_ERR_ARG;
    }
    int *lens = (int *)malloc(sizeof(int) * (size_t)layout->num_seqs);
    int *tabs = (int *)malloc(sizeof(int) * (size_t)layout->num_seqs * layout->max_blocks_per_seq);
    int n = 0, maxlen = 0;
    if (!lens || !tabs) {
        set_err(err, errlen, "out of host memory");
        rc = PF_ERR_NOMEM;
    }
    if (rc == PF_OK)
        rc = layout_live(layout, lens, tabs, &n, &maxlen, err, errlen);
    if (rc == PF_OK)
        rc = layout_run(layout, hs, lens, tabs, n, maxlen, out, err, errlen);
    free(lens);
    free(tabs);
    return rc;
}

/* The cost-model profile: llama (64 x 4096, GQA 32/8, D128, bf16, block 16)
 * and single (1 x 1024, same heads), paged on shuffled frames, each checked
 * before it is timed, through the same runner as `pagefault bench`. */
extern "C" int pf_gpu_profile_measure(pf_gpu_profile *p, int iters, char *err, size_t errlen)
{
    if (!p || iters < 1) {
        set_err(err, errlen, "pf_gpu_profile_measure: bad argument");
        return PF_ERR_ARG;
    }
    memset(p, 0, sizeof *p);
    static int llama[64];
    for (int i = 0; i < 64; i++)
        llama[i] = 4096;
    static const int single[1] = {1024};
    pf_gpu_bench_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.num_q_heads = 32;
    cfg.num_kv_heads = 8;
    cfg.head_dim = 128;
    cfg.block_size = 16;
    cfg.dtype = PF_GPU_BF16;
    cfg.iters = iters;
    cfg.seed = 42;
    cfg.shuffle_seed = 1;
    cfg.tolerance = 1e-3;
    pf_gpu_bench_result *res = (pf_gpu_bench_result *)malloc(sizeof *res);
    if (!res) {
        set_err(err, errlen, "out of host memory");
        return PF_ERR_NOMEM;
    }
    int rc = PF_OK;
    for (int w = 0; w < 2 && rc == PF_OK; w++) {
        cfg.num_seqs = w ? 1 : 64;
        cfg.seq_lens = w ? single : llama;
        cfg.naive_cap = w ? 1024 : 4096;
        cfg.measure_bw = w ? 0 : 1;
        rc = pf_gpu_bench_run(&cfg, res, err, errlen);
        if (rc == PF_OK && !res->pass) {
            set_err(err, errlen, "profile run failed its check: %s", res->failure);
            rc = PF_ERR_RANGE;
        }
        if (rc != PF_OK)
            break;
        if (w == 0) {
            copy_trunc(p->device, sizeof p->device, res->device);
            p->mem_read_gbps = res->read_bw_gbps;
            p->attn_kv_gbps = res->shuffled.gbps;
        } else {
            p->attn_fixed_us = res->shuffled.median_ms * 1e3;
        }
    }
    free(res);
    return rc;
}

struct pf_gpu_attn_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

extern "C" int pf_gpu_attn_graph_make(pf_gpu_attn_graph **g, const pf_gpu_attn_plan *plan,
                                      const void *q, const void *k, const void *v,
                                      const int *block_tables, const int *seq_lens, void *out,
                                      void *workspace)
{
    if (!g)
        return PF_ERR_ARG;
    *g = NULL;
    /* the run's argument checks before any device work, as the stub makes
     * them (the capture would give the same answer, a stream later) */
    if (pf_gpu__run_args(plan, q, k, v, block_tables, seq_lens, out, workspace) != PF_OK)
        return PF_ERR_ARG;
    pf_gpu_attn_graph *h = (pf_gpu_attn_graph *)calloc(1, sizeof *h);
    if (!h)
        return PF_ERR_NOMEM;
    cudaStream_t st = NULL;
    int rc = pf_gpu_cuda_err((int)cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (rc == PF_OK)
        rc = pf_gpu_cuda_err((int)cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    if (rc == PF_OK) {
        /* the run's own error first; the capture must be ended either way */
        int run = pf_gpu_attn_run(plan, q, k, v, block_tables, seq_lens, out, workspace, st);
        int end = pf_gpu_cuda_err((int)cudaStreamEndCapture(st, &h->graph));
        rc = run != PF_OK ? run : end;
    }
    if (rc == PF_OK)
        rc = pf_gpu_cuda_err((int)cudaGraphInstantiate(&h->exec, h->graph, 0));
    if (st)
        cudaStreamDestroy(st);
    if (rc != PF_OK) {
        pf_gpu_attn_graph_free(h);
        return rc;
    }
    *g = h;
    return PF_OK;
}

extern "C" int pf_gpu_attn_graph_launch(pf_gpu_attn_graph *g, int times, void *stream)
{
    if (!g || !g->exec || times < 0)
        return PF_ERR_ARG;
    for (int i = 0; i < times; i++) {
        int rc = pf_gpu_cuda_err((int)cudaGraphLaunch(g->exec, (cudaStream_t)stream));
        if (rc != PF_OK)
            return rc;
    }
    return PF_OK;
}

extern "C" void pf_gpu_attn_graph_free(pf_gpu_attn_graph *g)
{
    if (!g)
        return;
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    free(g);
}
