/* gpu/kernels.cu - the decode-attention kernels (naive and paged), the
 * split-KV merge, the append kernel and the read-bandwidth probe, with their
 * host launchers (declared in gpu/gpu_internal.h).
 *
 * Shapes (llm.c manner): S sequences, Hq query heads, Hkv KV heads, group
 * G = Hq / Hkv, head dim D, block size B, one query token per sequence.
 *   q, out        [S][Hq][D]
 *   k/v naive     [S][Hkv][cap][D]
 *   k/v pool      [frames][Hkv][B][D]        (core/paging.h)
 *   block_tables  [S][maxb]
 *   part_o        [S][Hq][splits][D] float   (split-KV partial outputs)
 *   part_lse      [S][Hq][splits]    float   (their log2-sum-exp)
 *
 * The algorithm (one kernel, two address modes). A thread block owns one
 * (chunk of tokens, KV head, sequence) and serves the GT query heads of the
 * group that share that KV head, so each K/V byte is read from memory once.
 * Inside the block, TG = D * sizeof(T) / 16 consecutive threads own one
 * token row: each holds one 16-byte vector of it, so a row is one coalesced
 * run and the 128 threads cover NG = 128 / TG rows per step. A tile is N
 * such steps: the loads of N rows of K and N rows of V are all issued before
 * the first use (2N independent 16-byte loads per thread in flight); with
 * PREFETCH the next tile's loads go out before this tile's math (registers
 * double-buffered; the default for the paged kernel, see prefetch_on). Scores
 * are partial dot products reduced across the TG lanes by xor shuffles (all
 * lanes end with the same sum), then one-pass online softmax in fp32 and in
 * base 2 (q is pre-scaled by scale * log2(e), so exp becomes exp2): per tile
 * the running max moves once, the accumulator is rescaled once, then the N
 * rows of V are accumulated. Each row group keeps its own (m, l, acc); at the
 * end the groups are merged through shared memory by log-sum-exp. When the
 * host planned several chunks per sequence (split-KV, to fill the SMs), each
 * block writes a normalized partial output and its log2-sum-exp, and a small
 * second kernel merges the chunks.
 *
 * The naive kernel is the same code reading contiguous rows; the paged one
 * first copies the chunk's slice of the block table to shared memory (read
 * ahead of use, one coalesced load), then finds each row through it. Same
 * tiling, same order of floating-point operations: on the same data both
 * give bitwise-equal outputs, so their comparison isolates the gather.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

extern "C" {
#include "core/err.h"
}
#include "core/paging.h"
#include "gpu/gpu_internal.h"

namespace {

constexpr int kThreads = 128;
constexpr int kMinChunk = 128;
constexpr int kMaxChunk = 4096;
/* table entries one chunk can span: chunk / B + 2 with B >= 8, rounding slack */
constexpr int kTableCache = kMaxChunk / 8 + 40;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint4 ld16(const void *p)
{
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

/* Element types: unpack a 16-byte vector to floats, store one float. */
template <typename T> struct Elt;

template <> struct Elt<float> {
    static constexpr int kPer16 = 4;
    __device__ static void unpack(const uint4 &u, float *f)
    {
        f[0] = __uint_as_float(u.x);
        f[1] = __uint_as_float(u.y);
        f[2] = __uint_as_float(u.z);
        f[3] = __uint_as_float(u.w);
    }
    __device__ static float store(float x) { return x; }
};

template <> struct Elt<__nv_bfloat16> {
    static constexpr int kPer16 = 8;
    __device__ static void unpack(const uint4 &u, float *f)
    {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) { /* element 2i is the low half (little endian) */
            f[2 * i] = __uint_as_float(w[i] << 16);
            f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
    __device__ static __nv_bfloat16 store(float x) { return __float2bfloat16_rn(x); }
};

template <> struct Elt<__half> {
    static constexpr int kPer16 = 8;
    __device__ static void unpack(const uint4 &u, float *f)
    {
        const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __half2 h = *reinterpret_cast<const __half2 *>(&w[i]);
            float2 x = __half22float2(h);
            f[2 * i] = x.x;
            f[2 * i + 1] = x.y;
        }
    }
    __device__ static __half store(float x) { return __float2half_rn(x); }
};

/* The attention kernel. Grid: x = chunk index, y = KV head * (G / GT) + sub
 * group, z = sequence. Block: 128 threads. */
template <typename T, int D, int GT, bool PAGED, bool PREFETCH>
__global__ void __launch_bounds__(kThreads)
    attn_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                const int *__restrict__ tables, const int *__restrict__ lens, T *__restrict__ out,
                float *__restrict__ part_o, float *__restrict__ part_lse, int hq, int hkv, int B,
                int bshift, int maxb, int cap, int chunk, int splits, float qscale)
{
    constexpr int EPV = Elt<T>::kPer16;  /* elements per 16-byte vector */
    constexpr int TG = D / EPV;          /* threads per token row       */
    constexpr int NG = kThreads / TG;    /* rows per step               */
    constexpr int N = GT >= 8 ? 2 : 4;   /* steps per tile              */
    constexpr int TILE = NG * N;
    static_assert(TG <= 32 && 32 % TG == 0, "a row must fit in one warp");

    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[NG][GT], sm_l[NG][GT];
    __shared__ __align__(16) float sm_acc[NG][GT][D];

    const int seq = blockIdx.z;
    const int len = lens[seq];
    const int t0 = blockIdx.x * chunk;
    if (t0 >= len)
        return; /* this sequence has fewer chunks; the merge never reads this one */
    const int t1 = min(len, t0 + chunk);
    const int group = hq / hkv;
    const int nsub = group / GT;
    const int kvh = blockIdx.y / nsub;
    const int qh0 = kvh * group + (blockIdx.y % nsub) * GT;
    const int tid = threadIdx.x, grp = tid / TG, r = tid % TG;

    /* Read the chunk's slice of the block table ahead of use. */
    int b0 = 0;
    if (PAGED) {
        b0 = bshift >= 0 ? (t0 >> bshift) : t0 / B;
        const int b1 = bshift >= 0 ? ((t1 - 1) >> bshift) : (t1 - 1) / B;
        const int *row = tables + (size_t)seq * maxb;
        for (int i = tid; i <= b1 - b0; i += kThreads)
            tbl[i] = row[b0 + i];
    }

    /* This thread's slice of the GT query vectors, pre-scaled for exp2. */
    float qf[GT][EPV];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        uint4 u = ld16(q + ((size_t)seq * hq + qh0 + g) * D + r * EPV);
        Elt<T>::unpack(u, qf[g]);
#pragma unroll
        for (int e = 0; e < EPV; e++)
            qf[g][e] *= qscale;
    }
    float m[GT], l[GT], acc[GT][EPV];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -INFINITY;
        l[g] = 0.f;
#pragma unroll
        for (int e = 0; e < EPV; e++)
            acc[g][e] = 0.f;
    }
    if (PAGED)
        __syncthreads();

    /* Row addresses. naive: rows of this (sequence, KV head) are
     * contiguous. paged: frame * frame_stride + (kv head * B + offset) * D,
     * only the frame term in 64 bits. */
    const T *kb, *vb;
    const size_t frame_stride = (size_t)hkv * B * D;
    const int head_off = kvh * B * D + r * EPV;
    if (PAGED) {
        kb = k;
        vb = v;
    } else {
        const size_t nb = ((size_t)seq * hkv + kvh) * (size_t)cap * D + r * EPV;
        kb = k + nb;
        vb = v + nb;
    }
    auto load_tile = [&](int base, uint4 *kr, uint4 *vr) {
#pragma unroll
        for (int j = 0; j < N; j++) {
            const int t = base + j * NG + grp;
            kr[j] = make_uint4(0, 0, 0, 0);
            vr[j] = kr[j];
            if (t < t1) {
                size_t rowi;
                if (PAGED) {
                    const int blk = bshift >= 0 ? (t >> bshift) : t / B;
                    rowi = (size_t)tbl[blk - b0] * frame_stride +
                           (unsigned)(head_off + (t - blk * B) * D);
                } else {
                    rowi = (size_t)t * D;
                }
                kr[j] = ld16(kb + rowi);
                vr[j] = ld16(vb + rowi);
            }
        }
    };

    /* With PREFETCH the next tile's loads are issued before this tile's
     * math (registers double-buffered), so memory never waits on the ALUs. */
    uint4 kr[N], vr[N];
    if (PREFETCH)
        load_tile(t0, kr, vr);
    for (int base = t0; base < t1; base += TILE) {
        uint4 kn[N], vn[N];
        if (PREFETCH)
            load_tile(base + TILE, kn, vn);
        else
            load_tile(base, kr, vr);
        /* scores: partial dot products, then a butterfly over the TG lanes */
        float s[N][GT];
#pragma unroll
        for (int j = 0; j < N; j++) {
            float kf[EPV];
            Elt<T>::unpack(kr[j], kf);
#pragma unroll
            for (int g = 0; g < GT; g++) {
                float a = 0.f;
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    a = fmaf(qf[g][e], kf[e], a);
                s[j][g] = a;
            }
        }
#pragma unroll
        for (int off = TG / 2; off > 0; off >>= 1)
#pragma unroll
            for (int j = 0; j < N; j++)
#pragma unroll
                for (int g = 0; g < GT; g++)
                    s[j][g] += __shfl_xor_sync(0xffffffffu, s[j][g], off);
#pragma unroll
        for (int j = 0; j < N; j++)
            if (base + j * NG + grp >= t1)
#pragma unroll
                for (int g = 0; g < GT; g++)
                    s[j][g] = -INFINITY;
        /* online softmax, once per tile */
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float mt = s[0][g];
#pragma unroll
            for (int j = 1; j < N; j++)
                mt = fmaxf(mt, s[j][g]);
            const float mn = fmaxf(m[g], mt);
            const float ms = mn == -INFINITY ? 0.f : mn; /* no valid row yet */
            const float alpha = fast_exp2(m[g] - ms);
            m[g] = mn;
            l[g] *= alpha;
#pragma unroll
            for (int e = 0; e < EPV; e++)
                acc[g][e] *= alpha;
#pragma unroll
            for (int j = 0; j < N; j++) {
                s[j][g] = fast_exp2(s[j][g] - ms);
                l[g] += s[j][g];
            }
        }
#pragma unroll
        for (int j = 0; j < N; j++) {
            float vf[EPV];
            Elt<T>::unpack(vr[j], vf);
#pragma unroll
            for (int g = 0; g < GT; g++)
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    acc[g][e] = fmaf(s[j][g], vf[e], acc[g][e]);
        }
        if (PREFETCH) {
#pragma unroll
            for (int j = 0; j < N; j++) {
                kr[j] = kn[j];
                vr[j] = vn[j];
            }
        }
    }

    /* merge the NG row groups of the block by log-sum-exp */
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (r == 0) {
            sm_m[grp][g] = m[g];
            sm_l[grp][g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < EPV; e++)
            sm_acc[grp][g][r * EPV + e] = acc[g][e];
    }
    __syncthreads();
    const int split = blockIdx.x;
    for (int idx = tid; idx < GT * D; idx += kThreads) {
        const int g = idx / D, d = idx % D;
        float M = -INFINITY;
#pragma unroll
        for (int i = 0; i < NG; i++)
            M = fmaxf(M, sm_m[i][g]);
        float L = 0.f, O = 0.f;
#pragma unroll
        for (int i = 0; i < NG; i++) {
            const float w = fast_exp2(sm_m[i][g] - M);
            L = fmaf(sm_l[i][g], w, L);
            O = fmaf(sm_acc[i][g][d], w, O);
        }
        const size_t rowo = (size_t)seq * hq + qh0 + g;
        if (splits == 1) {
            out[rowo * D + d] = Elt<T>::store(O / L);
        } else {
            part_o[(rowo * splits + split) * D + d] = O / L;
            if (d == 0)
                part_lse[rowo * splits + split] = M + log2f(L);
        }
    }
}

/* Split-KV merge: one block per (sequence, query head), one thread per d. */
template <typename T>
__global__ void merge_kernel(const float *__restrict__ part_o, const float *__restrict__ part_lse,
                             const int *__restrict__ lens, T *__restrict__ out, int hq, int D,
                             int chunk, int splits)
{
    const int rowo = blockIdx.x;
    const int seq = rowo / hq;
    const int n = (lens[seq] + chunk - 1) / chunk;
    const float *lse = part_lse + (size_t)rowo * splits;
    float M = -INFINITY;
    for (int i = 0; i < n; i++)
        M = fmaxf(M, lse[i]);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float L = 0.f, O = 0.f;
        for (int i = 0; i < n; i++) {
            const float w = fast_exp2(lse[i] - M);
            L += w;
            O = fmaf(w, part_o[((size_t)rowo * splits + i) * D + d], O);
        }
        out[(size_t)rowo * D + d] = Elt<T>::store(O / L);
    }
}

/* Append: one thread per 16-byte word of the new rows; source index i is
 * ((seq * n_tokens + j) * Hkv + h) * vpr + w, vpr = 16-byte words per row. */
__global__ void append_kernel(const uint4 *__restrict__ k_new, const uint4 *__restrict__ v_new,
                              int n_tokens, const int *__restrict__ tables,
                              const int *__restrict__ lens, uint4 *k_pool, uint4 *v_pool, int hkv,
                              int vpr, int B, int maxb, long long total)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int w = (int)(i % vpr);
        long long rest = i / vpr;
        const int h = (int)(rest % hkv);
        rest /= hkv;
        const int j = (int)(rest % n_tokens);
        const int seq = (int)(rest / n_tokens);
        const int t = lens[seq] - n_tokens + j;
        if (t < 0)
            continue;
        const int *row = tables + (size_t)seq * maxb;
        const size_t dst = pf_page_kv_index(row, t, h, hkv, B, vpr) + w;
        k_pool[dst] = k_new[i];
        v_pool[dst] = v_new[i];
    }
}

/* Streaming read probe: 4 independent 16-byte loads in flight per thread;
 * the xor is written only on an impossible value so nothing is dropped. */
__global__ void read_bw_kernel(const uint4 *__restrict__ p, size_t n, unsigned *sink)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned a = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 x0 = __ldcs(p + i), x1 = __ldcs(p + i + stride);
        const uint4 x2 = __ldcs(p + i + 2 * stride), x3 = __ldcs(p + i + 3 * stride);
        a ^= x0.x ^ x0.y ^ x0.z ^ x0.w ^ x1.x ^ x1.y ^ x1.z ^ x1.w;
        a ^= x2.x ^ x2.y ^ x2.z ^ x2.w ^ x3.x ^ x3.y ^ x3.z ^ x3.w;
    }
    for (; i < n; i += stride) {
        const uint4 x = __ldcs(p + i);
        a ^= x.x ^ x.y ^ x.z ^ x.w;
    }
    if (a == 0x9e3779b9u)
        *sink = a;
}

int group_tile(int group)
{
    return group % 8 == 0 ? 8 : group % 4 == 0 ? 4 : group % 2 == 0 ? 2 : 1;
}

int log2_exact(int b)
{
    int s = 0;
    while ((1 << s) < b)
        s++;
    return (1 << s) == b ? s : -1;
}

int cuda_err(cudaError_t e)
{
    if (e == cudaSuccess)
        return PF_OK;
    return e == cudaErrorMemoryAllocation ? PF_ERR_NOMEM : PF_ERR_UNAVAILABLE;
}

/* Register prefetch: measured on the H200 (docs/gpu.md), it speeds the
 * paged kernel up (llama: 0.309 -> 0.292 ms) but slows the naive one down
 * (0.296 -> 0.333 ms, cause not established; padding the naive stride did
 * not change it), so each kernel runs the variant that is fastest for it.
 * Tuning knobs, read once from the environment: PF_GPU_PREFETCH=0|1 forces
 * the variant for both kernels; PF_GPU_WAVES=n sets the split-KV plan's
 * target (blocks per SM, default 8). */
int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

int prefetch_on(bool paged)
{
    static int v = -2;
    if (v == -2)
        v = env_int("PF_GPU_PREFETCH", -1);
    return v < 0 ? (paged ? 1 : 0) : (v ? 1 : 0);
}

template <typename T, int D, int GT, bool PAGED>
int launch_attn_t(const pf_gpu_attn_shape *s, const pf_gpu_plan *p, const void *q, const void *k,
                  const void *v, const int *tables, const int *lens, void *out, void *ws,
                  cudaStream_t st)
{
    const int group = s->num_q_heads / s->num_kv_heads;
    const dim3 grid((unsigned)p->splits, (unsigned)(s->num_kv_heads * (group / GT)),
                    (unsigned)s->num_seqs);
    float *part_o = (float *)ws;
    float *part_lse =
        part_o ? part_o + (size_t)s->num_seqs * s->num_q_heads * p->splits * D : nullptr;
    const float scale = s->scale > 0.f ? s->scale : 1.f / sqrtf((float)D);
    auto kern = prefetch_on(PAGED) ? attn_kernel<T, D, GT, PAGED, true>
                              : attn_kernel<T, D, GT, PAGED, false>;
    kern<<<grid, kThreads, 0, st>>>((const T *)q, (const T *)k, (const T *)v, tables, lens,
                                    (T *)out, part_o, part_lse, s->num_q_heads, s->num_kv_heads,
                                    s->block_size, log2_exact(s->block_size),
                                    s->max_blocks_per_seq, s->naive_cap, p->chunk, p->splits,
                                    scale * kLog2e);
    if (p->splits > 1) {
        merge_kernel<T><<<(unsigned)(s->num_seqs * s->num_q_heads), D, 0, st>>>(
            part_o, part_lse, lens, (T *)out, s->num_q_heads, D, p->chunk, p->splits);
    }
    return cuda_err(cudaGetLastError());
}

template <typename T, int D, bool PAGED>
int launch_attn_g(const pf_gpu_attn_shape *s, const pf_gpu_plan *p, const void *q, const void *k,
                  const void *v, const int *tables, const int *lens, void *out, void *ws,
                  cudaStream_t st)
{
    switch (group_tile(s->num_q_heads / s->num_kv_heads)) {
    case 8: return launch_attn_t<T, D, 8, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    case 4: return launch_attn_t<T, D, 4, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    case 2: return launch_attn_t<T, D, 2, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    default: return launch_attn_t<T, D, 1, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    }
}

template <typename T, bool PAGED>
int launch_attn_d(const pf_gpu_attn_shape *s, const pf_gpu_plan *p, const void *q, const void *k,
                  const void *v, const int *tables, const int *lens, void *out, void *ws,
                  cudaStream_t st)
{
    if (s->head_dim == 64)
        return launch_attn_g<T, 64, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    return launch_attn_g<T, 128, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
}

template <bool PAGED>
int launch_attn_p(const pf_gpu_attn_shape *s, const pf_gpu_plan *p, const void *q, const void *k,
                  const void *v, const int *tables, const int *lens, void *out, void *ws,
                  cudaStream_t st)
{
    switch (s->dtype) {
    case PF_GPU_F16:
        return launch_attn_d<__half, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    case PF_GPU_BF16:
        return launch_attn_d<__nv_bfloat16, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    default: return launch_attn_d<float, PAGED>(s, p, q, k, v, tables, lens, out, ws, st);
    }
}

} /* namespace */

extern "C" pf_gpu_plan pf_gpu_make_plan(const pf_gpu_attn_shape *s, const int *lens_host,
                                        int sm_count)
{
    /* Aim for about two waves of four 128-thread blocks per SM, so a long
     * sequence is cut into chunks and short ones are not; chunks of the
     * longest sequence are balanced, rounded up to whole blocks, and kept
     * within [kMinChunk, kMaxChunk] (the table cache holds one chunk). */
    long long total = 0;
    int maxlen = 1;
    for (int i = 0; i < s->num_seqs; i++) {
        total += lens_host[i];
        if (lens_host[i] > maxlen)
            maxlen = lens_host[i];
    }
    const int group = s->num_q_heads / s->num_kv_heads;
    const long long heads = (long long)s->num_kv_heads * (group / group_tile(group));
    static int waves = -1;
    if (waves < 0)
        waves = env_int("PF_GPU_WAVES", 8);
    const long long target = (long long)(sm_count > 0 ? sm_count : 132) * (waves > 0 ? waves : 8);
    long long c = (total * heads + target - 1) / target;
    if (c < kMinChunk)
        c = kMinChunk;
    if (c > kMaxChunk)
        c = kMaxChunk;
    int splits = (int)((maxlen + c - 1) / c);
    c = (maxlen + splits - 1) / splits;
    const int B = s->block_size > 0 ? s->block_size : 16;
    c = (c + B - 1) / B * B;
    pf_gpu_plan p;
    p.chunk = (int)c;
    p.splits = (int)((maxlen + c - 1) / c);
    return p;
}

extern "C" size_t pf_gpu_workspace_bytes(const pf_gpu_attn_shape *s, const pf_gpu_plan *p)
{
    if (p->splits <= 1)
        return 0;
    const size_t rows = (size_t)s->num_seqs * s->num_q_heads * p->splits;
    return rows * (size_t)s->head_dim * sizeof(float) + rows * sizeof(float);
}

extern "C" int pf_gpu_launch_attention(const pf_gpu_attn_shape *s, const pf_gpu_plan *p, int paged,
                                       const void *q, const void *k, const void *v,
                                       const int *block_tables, const int *seq_lens, void *out,
                                       void *ws, void *stream)
{
    if (p->splits > 1 && !ws)
        return PF_ERR_ARG;
    if (p->chunk < 1 || p->chunk > kMaxChunk + 256)
        return PF_ERR_ARG;
    cudaStream_t st = (cudaStream_t)stream;
    if (paged)
        return launch_attn_p<true>(s, p, q, k, v, block_tables, seq_lens, out, ws, st);
    return launch_attn_p<false>(s, p, q, k, v, block_tables, seq_lens, out, ws, st);
}

extern "C" int pf_gpu_launch_append(const pf_gpu_attn_shape *s, const void *k_new,
                                    const void *v_new, int n_tokens, const int *block_tables,
                                    const int *seq_lens, void *k_pool, void *v_pool, void *stream)
{
    const int vpr = (int)(s->head_dim * pf_gpu_dtype_size(s->dtype) / 16);
    const long long total = (long long)s->num_seqs * n_tokens * s->num_kv_heads * vpr;
    if (total <= 0)
        return PF_OK;
    long long blocks = (total + 255) / 256;
    if (blocks > 65536)
        blocks = 65536;
    append_kernel<<<(unsigned)blocks, 256, 0, (cudaStream_t)stream>>>(
        (const uint4 *)k_new, (const uint4 *)v_new, n_tokens, block_tables, seq_lens,
        (uint4 *)k_pool, (uint4 *)v_pool, s->num_kv_heads, vpr, s->block_size,
        s->max_blocks_per_seq, total);
    return cuda_err(cudaGetLastError());
}

extern "C" int pf_gpu_launch_read_bw(const void *buf, size_t n16, unsigned *sink, int sm_count,
                                     void *stream)
{
    const int blocks = (sm_count > 0 ? sm_count : 132) * 8;
    read_bw_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((const uint4 *)buf, n16, sink);
    return cuda_err(cudaGetLastError());
}
