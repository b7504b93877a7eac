/* gpu/kernels.cuh - the decode-attention kernels (naive and paged, numbered
 * versions 1-20 in llm.c's manner, docs/gpu.md has each one's figures), the
 * split-KV merge, and the host templates that pick and launch them.
 *
 * CUDA C++, inside gpu/ only. Included by the three translation units that
 * instantiate it, one an element type (gpu/kernels_f32.cu, kernels_f16.cu,
 * kernels_bf16.cu: nvcc compiles them at once, where one file of all three
 * took the build's longest step), and by gpu/kernels.cu, which holds the
 * host side they share (the driver's launch, its caches), the append kernel,
 * the read-bandwidth probe and the C entry points of gpu/gpu_internal.h.
 * Everything here is in an unnamed namespace: each unit keeps the
 * instances it makes to itself, and hands them out through its
 * pf_kern::Dtype table (the end of this file).
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
 * The algorithm (version 1; later versions keep it and change how rows get
 * to the threads, see attn_v2). A thread block owns one
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
 * ahead of use, one coalesced load), then finds each row through it (v1 by
 * a shift and the frame stride; v2-v6 through core/paging.h). Versions 6
 * and 12-20 move the scores and the V sums to tensor cores (attn_mma; 15
 * and 16, attn_tma, bring their tiles by Hopper's copy engine). Same
 * tiling, same order of floating-point operations: on the same data both
 * give bitwise-equal outputs, so their comparison isolates the gather.
 */
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda.h> /* the driver's types only (CUtensorMap, CUfunction): the driver is
                     reached through cudaGetDriverEntryPointByVersion, not linked */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

extern "C" {
#include "core/err.h"
}
#include "core/paging.h"
#include "gpu/gpu_internal.h"

/* The host side the element types share, defined once in gpu/kernels.cu:
 * the driver's launch and its per-thread function cache, the tensor-map
 * encoder, the environment read once. Hidden: the shared library exports
 * the C API of gpu/gpu.h and nothing of this. */
#define PF_KERN_HIDDEN __attribute__((visibility("hidden")))
namespace PF_KERN_HIDDEN pf_kern {

/* log2 of a power of two; -1 for any other b */
int log2_exact(int b);
/* version 1's register prefetch for the paged or naive kernel (PF_GPU_PREFETCH) */
int prefetch_on(bool paged);

typedef CUresult (*EncodeTiledFn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
                                  const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                  const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
/* cuTensorMapEncodeTiled, looked up once; nullptr without it */
EncodeTiledFn tma_encoder();
/* whether versions 15 and 16 can run their copy-engine kernel on a shape */
bool tma_fits(const pf_gpu_attn_shape *s, int paged);

/* fn's driver function on the current device, cached per host thread;
 * nullptr where there is none */
CUfunction driver_function(const void *fn);
/* launch fn on grid x kThreads threads (the driver's launch, else the
 * runtime's); a PF_ code */
int launch_kernel(const void *fn, dim3 grid, int smem, cudaStream_t st, void **params);

} /* namespace pf_kern */

namespace {

using namespace pf_kern;

constexpr int kThreads = PF_GPU_THREADS;
/* table entries one chunk spans: chunks are whole pages starting on a page
 * boundary, so chunk / B <= PF_GPU_MAX_CHUNK / 8 */
constexpr int kTableCache = PF_GPU_TABLE_CACHE;

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

/* The attention kernel. Grid (no work list): x = chunk index, y = head
 * tile (KV head * (G / GT) + sub group; version 14: a block of 4 of them),
 * z = sequence. Block: 128 threads. */
/* Every attention kernel version takes these arguments (one launcher). */
template <typename T> struct AttnArgs {
    const T *q, *k, *v;
    const int *tables, *lens;
    T *out;
    float *part_o, *part_lse;
    unsigned *counters; /* v5 on: chunks done per (sequence, htiles)     */
    int hq, hkv, B, bshift, maxb, cap, chunk, splits;
    int lim;      /* device lengths are read up to this planned bound      */
    float qscale; /* scale * log2(e)                                       */
    int htiles;   /* blocks a chunk of a sequence has: its head tiles (v14:
                     blocks of 4 tiles)                                    */
    const int2 *work; /* the plan's work list (versions 5-8), or null      */
    unsigned long long *trace; /* the block timeline (see trace_mark), or null */
    /* version 11 (attn_steal): a claim word per item (unit x head tile),
     * the items, sequences, and partial slots per (sequence, query head) */
    unsigned long long *claims;
    int items, nseq, slots;
    /* the plan's tail (pf_gpu__plan_set_tail; 0: none): units span
     * several chunks, and their partials go to slots by unit (slot_of) */
    int tail;
};

/* What one thread block works on: a chunk of one sequence for one head
 * tile, and the bound its length is read up to. In grid order (no work
 * list) blockIdx is (chunk, head tile, sequence). With a work list (host.c,
 * "the work list") the grid is 1-D: blockIdx.x / htiles picks the unit
 * (an entry {sequence, PF_GPU_WORK_Y(chunk, span, the chunks the plan gave
 * that sequence)}: `span` chunks from `chunk`, one unless the plan has a
 * tail) and blockIdx.x % htiles the head tile, so the hardware, which
 * hands out blocks in index order, starts the longest units first; the
 * sequence's length is read up to the end of its planned chunks. The list's
 * header, work[-1] = {kWorkMagic, units}, is checked by block 0: a workspace
 * never prepared (pf_gpu_attn_workspace_init) fails the launch instead of
 * computing garbage. */
constexpr int kWorkMagic = PF_GPU_WORK_MAGIC;
struct Work {
    int seq, chunk, ht, lim, span;
};

template <typename T> __device__ __forceinline__ Work work_of(const AttnArgs<T> &a)
{
    if (!a.work)
        return {(int)blockIdx.z, (int)blockIdx.x, (int)blockIdx.y, a.lim, 1};
    const int i = (int)blockIdx.x / a.htiles;
    if (blockIdx.x == 0 && a.work[-1].x != kWorkMagic)
        __trap();
    const int2 w = a.work[i];
    return {w.x, PF_GPU_WORK_CHUNK(w.y), (int)blockIdx.x - i * a.htiles,
            min(PF_GPU_WORK_NCH(w.y) * a.chunk, a.lim), PF_GPU_WORK_SPAN(w.y)};
}

/* Head tile ht's KV head (x) and first query head (y): a group's query
 * heads are served in tiles of GT. */
template <typename T, int GT> __device__ __forceinline__ int2 head_of(const AttnArgs<T> &a, int ht)
{
    const int group = a.hq / a.hkv, nsub = group / GT, kvh = ht / nsub;
    return make_int2(kvh, kvh * group + (ht % nsub) * GT);
}

/* Where (seq, kvh)'s rows start in p (a.k or a.v): the pool itself when
 * paged (rows are found through the table), else the sequence's naive
 * buffer for that head. */
template <typename T, int D, bool PAGED>
__device__ __forceinline__ const T *kv_base(const AttnArgs<T> &a, const T *p, int seq, int kvh)
{
    return PAGED ? p : p + ((size_t)seq * a.hkv + kvh) * (size_t)a.cap * D;
}

/* A sequence of length <= 0 has nothing to attend to: its output is zeros
 * (written by chunk 0 when there is one chunk; the merge writes them when
 * there are several). */
template <typename T, int D, int GT>
__device__ void write_zeros(const AttnArgs<T> &a, int seq, int qh0, int chunk, bool fused = false,
                            int rows = GT)
{
    if ((a.splits != 1 && !fused) || chunk != 0)
        return;
    for (int i = threadIdx.x; i < rows * D; i += blockDim.x)
        a.out[((size_t)seq * a.hq + qh0) * D + i] = Elt<T>::store(0.f);
}

/* Version 1: register tiles (issue 4's kernel). */
template <typename T, int D, int GT, bool PAGED, bool PREFETCH>
__global__ void __launch_bounds__(kThreads) attn_v1(const AttnArgs<T> a)
{
    const T *__restrict__ q = a.q;
    const T *__restrict__ k = a.k;
    const T *__restrict__ v = a.v;
    const int *__restrict__ tables = a.tables;
    T *__restrict__ out = a.out;
    float *__restrict__ part_o = a.part_o;
    float *__restrict__ part_lse = a.part_lse;
    const int hq = a.hq, hkv = a.hkv, B = a.B, bshift = a.bshift, maxb = a.maxb, cap = a.cap;
    const int chunk = a.chunk, splits = a.splits;
    const float qscale = a.qscale;
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
    const int len = min(a.lens[seq], a.lim);
    const int group = hq / hkv;
    const int nsub = group / GT;
    const int kvh = blockIdx.y / nsub;
    const int qh0 = kvh * group + (blockIdx.y % nsub) * GT;
    if (len <= 0) {
        write_zeros<T, D, GT>(a, seq, qh0, blockIdx.x);
        return;
    }
    const int t0 = blockIdx.x * chunk;
    if (t0 >= len)
        return; /* this sequence has fewer chunks; the merge never reads this one */
    const int t1 = min(len, t0 + chunk);
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

/* ---- version 2: a cp.async pipeline per thread ------------------------
 *
 * Same work split and arithmetic as version 1 (a block per chunk, KV head
 * and GQA tile; TG threads a row; one-pass online softmax in base 2), but
 * the loads go straight from global to shared memory with cp.async, STAGES
 * tiles ahead of the math, instead of through registers. Each thread copies
 * exactly the 16-byte pieces it later reads, so the pipeline needs no
 * barrier: cp.async.wait_group per thread orders a thread's own copies
 * before its own reads. That keeps 2 x N x STAGES 16-byte loads in flight
 * per thread (32 KB a block) without holding them in registers, so more
 * blocks fit on an SM and the loads never wait on the math. The page-table
 * walk is core/paging.h's pf_page_kv_index on the chunk's slice of the
 * table, cached in shared memory (chunks start on a page boundary). Rows
 * past the end are zero-filled by the copy (src-size 0), never read. */
/* Versions 2-4 are this one template:
 *   v2: N = 2 rows of K and V per thread per stage, 4 stages, walk by
 *       pf_page_kv_index (a division by the block size per row);
 *   v3: the same with the walk split into a shift (power-of-two block sizes;
 *       a division otherwise) and pf_page_pool_index, so a row costs a
 *       shared-memory read and a multiply-add instead of a division;
 *   v4: v3 with N = 4 rows per stage and 2 stages: the same bytes in flight,
 *       half the per-tile softmax work (running max, rescale) per row;
 *   v5: v4 with the split-KV merge done by the last block of each sequence
 *       and head tile (an atomic count in the workspace), not a second
 *       launch: one launch per run, and no launch gap before the merge. */


/* L2P (version 17): the L2 prefetch-size hint, 0 (none) or 128 bytes: the
 * L2 fetches the whole 128-byte line around the 16 bytes asked for, as
 * FlashInfer's decode kernels ask. (256 bytes was measured too and lost 4-5
 * points: docs/gpu-journal.md, eleventh session.) */
template <int L2P = 0>
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    static_assert(L2P == 0 || L2P == 128, "no hint, or 128 bytes");
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    if constexpr (L2P == 128)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(s),
                     "l"(gmem), "r"(valid ? 16 : 0)
                     : "memory");
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
                     "r"(valid ? 16 : 0)
                     : "memory");
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void cp_async4(void *smem, const void *gmem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
}

/* The dynamic shared memory with its start rounded up to N bytes: 128 (the
 * launch asks for kSmemAlign more), or for the copy engine's swizzled boxes
 * 1024 (kTmaAlign). Dynamic shared memory follows the
 * static variables, so it starts wherever they end (2352 bytes for v7's
 * table cache and merge scalars: 48 past a 128-byte line). cp.async into a
 * destination off the 128-byte grid costs twice the L2 requests: measured
 * on the H200 (docs/gpu-journal.md, fourth session), v7 copying into such
 * a buffer ran the llama shape at 0.73 of the read bandwidth with an L2
 * hit rate of 49% (every sector asked for twice) against 0.93 and 1.5%
 * from an aligned static buffer, and version 6, which had the same flaw
 * since it was written, went from 0.74 to 0.93 once aligned. */
constexpr int kSmemAlign = 128;
template <int N> __device__ __forceinline__ uint4 *smem_align(uint4 *dyn)
{
    const unsigned off = (unsigned)__cvta_generic_to_shared(dyn);
    return dyn + ((N - (off & (N - 1))) & (N - 1)) / 16;
}

/* This lane's slice (16 bytes, EPV elements from r EPV) of the GT query
 * vectors of the tile, as floats pre-scaled by scale x log2(e) for exp2
 * (versions 2-5 and 7-8). */
template <typename T, int D, int GT>
__device__ __forceinline__ void load_q(const AttnArgs<T> &a, int seq, int qh0, int r,
                                       float (&qf)[GT][Elt<T>::kPer16])
{
    constexpr int EPV = Elt<T>::kPer16;
#pragma unroll
    for (int g = 0; g < GT; g++) {
        uint4 u = ld16(a.q + ((size_t)seq * a.hq + qh0 + g) * D + r * EPV);
        Elt<T>::unpack(u, qf[g]);
#pragma unroll
        for (int e = 0; e < EPV; e++)
            qf[g][e] *= a.qscale;
    }
}

/* The start of version 6 on (and of v6's fp32 kernel). The chunk's slice of
 * the block table is copied to shared memory (cp.async, 4 bytes an entry)
 * before the sequence's length is read: only the block's chunk index places
 * the slice, so the table's memory latency and the length's overlap instead
 * of following each other (v2-v5 read the length, then the table, then
 * K/V: three latencies before the first row arrives; this is two). Entries
 * past the length are copied but never used: the slice stays inside the
 * caller's row of max_blocks_per_seq entries, chunks being whole pages.
 * Returns false when the block has no tokens (zeros written if the
 * sequence is empty: `rows` query heads from qh0, GT unless the block serves
 * several head tiles); else len, t0, t1 and the table are ready. */
template <typename T, int D, int GT, bool PAGED, bool FUSED>
__device__ __forceinline__ bool block_begin(const AttnArgs<T> &a, int *tbl, const Work &job,
                                            int qh0, int &len, int &t0, int &t1, int rows = GT)
{
    const int seq = job.seq;
    t0 = job.chunk * a.chunk;
    if (PAGED) {
        const int b0 = t0 / a.B;
        const int nb = min(job.span * a.chunk / a.B, a.maxb - b0);
        const int *row = a.tables + (size_t)seq * a.maxb + b0;
        for (int i = threadIdx.x; i < nb; i += kThreads)
            cp_async4(&tbl[i], row + i);
        cp_async_commit();
    }
    len = min(a.lens[seq], job.lim);
    if (len <= 0 || t0 >= len) {
        if (PAGED)
            cp_async_wait<0>(); /* no copy outlives its thread */
        if (len <= 0)
            write_zeros<T, D, GT>(a, seq, qh0, job.chunk, FUSED, rows);
        return false;
    }
    t1 = min(len, t0 + job.span * a.chunk);
    if (PAGED) {
        cp_async_wait<0>();
        __syncthreads();
    }
    return true;
}

/* Element d of query head g, merged by log-sum-exp over a block's NP
 * partials (running max sm_m[NP][GT], sum sm_l[NP][GT], unnormalised
 * output sm_acc[NP][GT][D]): returns the unnormalised output and sets M to
 * the max and L to the weighted sum, so O / L is the merged output and
 * M + log2(L) its log2-sum-exp. The block merge of attn_finish and of
 * attn_finish_cluster. */
template <int D, int GT, int NP>
__device__ __forceinline__ float merge_groups(const float *sm_m, const float *sm_l,
                                              const float *sm_acc, int g, int d, float &M,
                                              float &L)
{
    M = -INFINITY;
#pragma unroll
    for (int i = 0; i < NP; i++)
        M = fmaxf(M, sm_m[i * GT + g]);
    L = 0.f;
    float O = 0.f;
#pragma unroll
    for (int i = 0; i < NP; i++) {
        const float w = fast_exp2(sm_m[i * GT + g] - M);
        L = fmaf(sm_l[i * GT + g], w, L);
        O = fmaf(sm_acc[(i * GT + g) * D + d], w, O);
    }
    return O;
}

/* The block's result (its NP row groups merged by merge_groups) for the
 * GT query heads qh0 .. of seq: the output when `whole`, else a normalised
 * partial and its log2-sum-exp in slot `slot` of the `stride` a query head
 * has in the workspace (attn_finish: a chunk's; attn_steal: a visit's). */
template <typename T, int D, int GT, int NP>
__device__ __forceinline__ void write_block(const AttnArgs<T> &a, const float *sm_m,
                                            const float *sm_l, const float *sm_acc, int seq,
                                            int qh0, bool whole, int stride, int slot)
{
    for (int idx = threadIdx.x; idx < GT * D; idx += kThreads) {
        const int g = idx / D, d = idx % D;
        float M, L;
        const float O = merge_groups<D, GT, NP>(sm_m, sm_l, sm_acc, g, d, M, L);
        const size_t rowo = (size_t)seq * a.hq + qh0 + g;
        if (whole) {
            a.out[rowo * D + d] = Elt<T>::store(O / L);
        } else {
            a.part_o[(rowo * stride + slot) * D + d] = O / L;
            if (d == 0)
                a.part_lse[rowo * stride + slot] = M + log2f(L);
        }
    }
}

/* The partial slot of the unit that holds chunk c of job's sequence: the
 * chunk itself, or, with a tail, the unit's ordinal in
 * its sequence (host.c, seq_units: each run of 8 x tail chunks is a unit
 * of all but its last `tail` chunks, then a unit for each of those; a run
 * of at most `tail` chunks, a unit for each). So a sequence's units fill
 * slots 0, 1, 2 ... in chunk order, and the merge reads a few slots, not
 * one a chunk (the first form, one a chunk with the unused ones skipped,
 * read 32-64 slots in 4-8 rounds and cost llama 2-10 points). */
template <typename T>
__device__ __forceinline__ int slot_of(const AttnArgs<T> &a, const Work &job, int c)
{
    if (!a.tail)
        return c;
    const int nch = (job.lim + a.chunk - 1) / a.chunk; /* the sequence's planned chunks */
    const int run = 8 * a.tail, j = c / run, off = c - j * run;
    const int n = min(run, nch - j * run), head = n > a.tail ? n - a.tail : 0;
    return j * (1 + a.tail) + (head ? (off < head ? 0 : 1 + off - head) : off);
}

/* The in-place split-KV merge (merge_if_last's, for v5-v8 and v12-v17;
 * v11's attn_steal): the np partials of each of the `rows` query heads qh0 .. of seq
 * (slots 0 .. np-1 of `stride`), written by other SMs and so read through
 * L2 (__ldcg), merged by log-sum-exp into the output. The caller has
 * fenced after learning that every partial is written.
 *
 * Why it is shaped so. This runs at the end of the last block of a split
 * sequence, so its memory latencies add to the launch's tail (and, for
 * shapes split into several waves, hold a block's slot without streaming).
 * Until the tenth session each thread walked its elements one at a time
 * and the partials one at a time, a loop of dependent L2 reads (two per
 * partial per element: 4 x 16 for llama's tile at 8 chunks) in a memory
 * system saturated by the other blocks' streams. Now a thread takes 4
 * consecutive elements of one head (a float4 of each partial: at GT x D =
 * 512, one group a thread) and loads up to kMergeBatch partials and their
 * log2-sum-exps at once, so a sequence of at most kMergeBatch chunks (every
 * version-0 plan of the named workloads) costs one round trip. More chunks
 * are merged kMergeBatch at a time, online: the running sums rescaled to
 * each batch's max (version 14 plans long in 33 chunks: 5 batches, one
 * after another, for each of its 4 float4 groups a thread). The arrays
 * cost registers: version 11's attn_steal, at its bound, spills 24 bytes in
 * five of its instances (ptxas, tenth session; v11 is never version 0).
 * With one batch the sums are added in the order and against
 * the max of the loop before, so the output is bitwise what it was. */
constexpr int kMergeBatch = 8;
template <typename T, int D>
__device__ __forceinline__ void merge_partials(const AttnArgs<T> &a, int seq, int qh0, int rows,
                                               int stride, int np)
{
    static_assert(D % 4 == 0, "a thread merges a float4 of a row");
    for (int idx = threadIdx.x; idx < rows * D / 4; idx += kThreads) {
        const int g = idx / (D / 4), d = idx % (D / 4) * 4;
        const size_t rowo = (size_t)seq * a.hq + qh0 + g;
        const float *lse = a.part_lse + rowo * stride;
        const float4 *po = reinterpret_cast<const float4 *>(a.part_o + rowo * stride * D + d);
        float M = -INFINITY, L = 0.f;
        float4 O = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int i0 = 0; i0 < np; i0 += kMergeBatch) {
            float ls[kMergeBatch];
            float4 ov[kMergeBatch];
#pragma unroll
            for (int j = 0; j < kMergeBatch; j++) { /* every load issued before any use */
                const bool ok = i0 + j < np;
                ls[j] = ok ? __ldcg(lse + i0 + j) : -INFINITY;
                ov[j] = ok ? __ldcg(po + (size_t)(i0 + j) * (D / 4))
                           : make_float4(0.f, 0.f, 0.f, 0.f);
            }
            float Mn = M;
#pragma unroll
            for (int j = 0; j < kMergeBatch; j++)
                Mn = fmaxf(Mn, ls[j]);
            if (i0 > 0) { /* the sums so far, to the new max (M <= Mn, both finite) */
                const float r = fast_exp2(M - Mn);
                L *= r;
                O.x *= r, O.y *= r, O.z *= r, O.w *= r;
            }
            M = Mn;
#pragma unroll
            for (int j = 0; j < kMergeBatch; j++) {
                if (i0 + j < np) {
                    const float w = fast_exp2(ls[j] - M);
                    L += w;
                    O.x = fmaf(w, ov[j].x, O.x);
                    O.y = fmaf(w, ov[j].y, O.y);
                    O.z = fmaf(w, ov[j].z, O.z);
                    O.w = fmaf(w, ov[j].w, O.w);
                }
            }
        }
        T *out = a.out + rowo * D + d;
        out[0] = Elt<T>::store(O.x / L);
        out[1] = Elt<T>::store(O.y / L);
        out[2] = Elt<T>::store(O.z / L);
        out[3] = Elt<T>::store(O.w / L);
    }
}

/* The split-KV merge without a second launch (version 5 on). Each block of a split
 * sequence, its partials stored, counts itself done for its (sequence, head
 * tile); the block that counts last merges all chunks (the `rows` query
 * heads qh0 ..) and resets the counter to 0 for the next run (no other
 * block of this launch touches it after that). Partials written by other
 * SMs are read through L2 (__ldcg). The workspace's counters start at zero
 * (pf_gpu_attn_workspace_init). Every thread of the block calls it. */
template <typename T, int D>
__device__ __forceinline__ void merge_if_last(const AttnArgs<T> &a, int *sm_last, const Work &job,
                                              int qh0, int rows, int len)
{
    __syncthreads(); /* every thread's partials are stored ... */
    const int seq = job.seq, ht = job.ht;
    /* the count is of chunks: a unit counts those of its span that hold
     * tokens (it holds tokens, so job.chunk < nch) */
    const int nch = (len + a.chunk - 1) / a.chunk;
    const unsigned mine = (unsigned)min(job.span, nch - job.chunk);
    /* the slots filled: those of the units up to the one holding the last
     * chunk with tokens (nch itself without a tail) */
    const int np = slot_of(a, job, nch - 1) + 1;
    if (threadIdx.x == 0) {
        /* ... and thread 0's fence, after the barrier, makes them all
         * visible to the GPU before the count (the barrier-then-one-fence
         * pattern of cooperative groups' grid sync: one fence a block, not
         * one a thread) */
        __threadfence();
        unsigned *cnt = a.counters + (size_t)seq * a.htiles + ht;
        const unsigned prev = atomicAdd(cnt, mine);
        *sm_last = prev + mine == (unsigned)nch;
        if (*sm_last)
            *cnt = 0u;
    }
    __syncthreads();
    if (!*sm_last)
        return;
    __threadfence();
    merge_partials<T, D>(a, seq, qh0, rows, a.slots, np);
}

/* The end every version from 2 on shares. The block's NP partial results
 * (NP row groups or warps, each with its running max sm_m[NP][GT], sum
 * sm_l[NP][GT] and unnormalised output sm_acc[NP][GT][D], all in shared
 * memory and visible to every thread) are merged by log-sum-exp into this
 * chunk's output: the final one when the sequence has one chunk, else a
 * normalised partial and its log2-sum-exp; with FUSED (v5 on) the block
 * that finishes its sequence's chunks last also merges them. */
template <typename T, int D, int GT, int NP, bool FUSED>
__device__ __forceinline__ void attn_finish(const AttnArgs<T> &a, const float *sm_m,
                                            const float *sm_l, const float *sm_acc, int *sm_last,
                                            const Work &job, int qh0, int len)
{
    const int seq = job.seq;
    /* a sequence that fits in one chunk has nothing to merge: its one
     * block writes the output (every block of a sequence sees the same len) */
    const bool whole = a.splits == 1 || (FUSED && len <= job.span * a.chunk);
    write_block<T, D, GT, NP>(a, sm_m, sm_l, sm_acc, seq, qh0, whole, a.slots,
                              slot_of(a, job, job.chunk));
    if (!FUSED || whole)
        return;
    merge_if_last<T, D>(a, sm_last, job, qh0, GT, len);
}

template <typename T, int D, int GT, bool PAGED, int N, int kStages, bool SHIFT, bool FUSED,
          bool EARLY = false>
__global__ void __launch_bounds__(kThreads) attn_v2(const AttnArgs<T> a)
{
    constexpr int EPV = Elt<T>::kPer16;
    constexpr int TG = D / EPV;
    constexpr int NG = kThreads / TG;
    constexpr int TILE = NG * N;
    static_assert(TG <= 32 && 32 % TG == 0, "a row must fit in one warp");
    /* the pipeline buffer; after the loop it holds the block's merge */
    constexpr int kBufU4 = kStages * 2 * N * kThreads;
    static_assert(NG * GT * D * 4 <= kBufU4 * 16, "merge scratch must fit the pipeline buffer");
    __shared__ uint4 buf[kBufU4];
    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[NG][GT], sm_l[NG][GT];
    __shared__ int sm_last;

    const Work job = work_of(a);
    const int seq = job.seq;
    const int2 hd = head_of<T, GT>(a, job.ht);
    const int kvh = hd.x, qh0 = hd.y;
    const int tid = threadIdx.x, grp = tid / TG, r = tid % TG;
    const int B = a.B;
    int len, t0, t1;
    if (EARLY) {
        if (!block_begin<T, D, GT, PAGED, FUSED>(a, tbl, job, qh0, len, t0, t1))
            return;
    } else {
        len = min(a.lens[seq], job.lim);
        if (len <= 0) {
            write_zeros<T, D, GT>(a, seq, qh0, job.chunk, FUSED);
            return;
        }
        t0 = job.chunk * a.chunk;
        if (t0 >= len)
            return;
        t1 = min(len, t0 + job.span * a.chunk);
        if (PAGED) { /* the chunk's slice of the block table, read ahead of use */
            const int *row = a.tables + (size_t)seq * a.maxb + t0 / B;
            const int nb = pf_page_blocks_for(t1 - t0, B);
            for (int i = tid; i < nb; i += kThreads)
                tbl[i] = row[i];
            __syncthreads();
        }
    }
    const T *kb = kv_base<T, D, PAGED>(a, a.k, seq, kvh);
    const T *vb = kv_base<T, D, PAGED>(a, a.v, seq, kvh);
    /* issue the copies of tile i into stage slot st */
    auto issue = [&](int i, int st) {
#pragma unroll
        for (int j = 0; j < N; j++) {
            const int t = t0 + i * TILE + j * NG + grp;
            const bool ok = t < t1;
            size_t e = 0; /* element index of this thread's 16 bytes */
            if (ok && PAGED && SHIFT) {
                const int u = t - t0; /* token within the chunk's table slice */
                const int blk = a.bshift >= 0 ? u >> a.bshift : u / B;
                e = pf_page_pool_index(tbl[blk], kvh, u - blk * B, a.hkv, B, D) + r * EPV;
            } else if (ok) {
                e = (PAGED ? pf_page_kv_index(tbl, t - t0, kvh, a.hkv, B, D)
                           : pf_page_contig_index(t, 0, a.cap, D)) +
                    r * EPV;
            }
            uint4 *dk = &buf[((st * 2 + 0) * N + j) * kThreads + tid];
            uint4 *dv = &buf[((st * 2 + 1) * N + j) * kThreads + tid];
            cp_async16(dk, kb + e, ok);
            cp_async16(dv, vb + e, ok);
        }
    };
    const int ntiles = (t1 - t0 + TILE - 1) / TILE;
#pragma unroll
    for (int i = 0; i < kStages - 1; i++) {
        if (i < ntiles)
            issue(i, i);
        cp_async_commit();
    }

    float qf[GT][EPV];
    load_q<T, D, GT>(a, seq, qh0, r, qf);
    float m[GT], l[GT], acc[GT][EPV];
#pragma unroll
    for (int g = 0; g < GT; g++) {
        m[g] = -INFINITY;
        l[g] = 0.f;
#pragma unroll
        for (int e = 0; e < EPV; e++)
            acc[g][e] = 0.f;
    }

    for (int i = 0; i < ntiles; i++) {
        const int st = i % kStages;
        if (i + kStages - 1 < ntiles)
            issue(i + kStages - 1, (i + kStages - 1) % kStages);
        cp_async_commit();
        cp_async_wait<kStages - 1>(); /* tile i has landed (this thread's part) */
        const int base = t0 + i * TILE;
        float s[N][GT];
#pragma unroll
        for (int j = 0; j < N; j++) {
            float kf[EPV];
            Elt<T>::unpack(buf[((st * 2 + 0) * N + j) * kThreads + tid], kf);
#pragma unroll
            for (int g = 0; g < GT; g++) {
                float x = 0.f;
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    x = fmaf(qf[g][e], kf[e], x);
                s[j][g] = x;
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
#pragma unroll
        for (int g = 0; g < GT; g++) {
            float mt = s[0][g];
#pragma unroll
            for (int j = 1; j < N; j++)
                mt = fmaxf(mt, s[j][g]);
            const float mn = fmaxf(m[g], mt);
            const float ms = mn == -INFINITY ? 0.f : mn;
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
            Elt<T>::unpack(buf[((st * 2 + 1) * N + j) * kThreads + tid], vf);
#pragma unroll
            for (int g = 0; g < GT; g++)
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    acc[g][e] = fmaf(s[j][g], vf[e], acc[g][e]);
        }
    }
    cp_async_wait<0>();
    __syncthreads(); /* every thread is done with the pipeline buffer */

    float *sm_acc = reinterpret_cast<float *>(buf); /* [NG][GT][D] */
#pragma unroll
    for (int g = 0; g < GT; g++) {
        if (r == 0) {
            sm_m[grp][g] = m[g];
            sm_l[grp][g] = l[g];
        }
#pragma unroll
        for (int e = 0; e < EPV; e++)
            sm_acc[(grp * GT + g) * D + r * EPV + e] = acc[g][e];
    }
    __syncthreads();
    attn_finish<T, D, GT, NG, FUSED>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, &sm_last, job, qh0,
                                     len);
}

/* The block timeline (`pagefault bench --timeline`, versions 7 on): with
 * a.trace set, thread 0 of each block writes PF_GPU_TRACE_WORDS words at
 * that many times its linear block index: the global nanosecond timer when
 * the block starts (kTrStart), when its first tile of K/V has landed
 * (kTrReady), when its last tile is done (kTrStreamed; both 0 when the block
 * found no tokens), when it ends (kTrEnd, after its merge), and the SM it
 * ran on (kTrSm). With a.trace null (every run but the bench's one traced
 * launch) it costs a branch on a kernel argument at each mark. */
enum { kTrStart, kTrReady, kTrStreamed, kTrEnd, kTrSm };
static_assert(kTrSm + 1 == PF_GPU_TRACE_WORDS, "gpu.h's record layout");
template <typename T> __device__ __forceinline__ void trace_mark(const AttnArgs<T> &a, int what)
{
    if (!a.trace || threadIdx.x != 0)
        return;
    const size_t b = blockIdx.x + (size_t)gridDim.x * (blockIdx.y + (size_t)gridDim.y * blockIdx.z);
    unsigned long long x;
    if (what == kTrSm) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        x = sm;
    } else {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(x));
    }
    a.trace[b * PF_GPU_TRACE_WORDS + what] = x;
}

/* Versions 7 on and 12: the running max moves only when a tile's max
 * passes it by more than this (base 2; version 7's comment, point 3). */
constexpr float kLazy = 8.f;

/* ---- version 6: the GQA group on tensor cores --------------------------
 *
 * Versions 1-5 spend most of their issue slots on fp32 FMAs: per 16 bytes
 * of K/V a thread unpacks 8 elements and does 8 FMAs per query head for the
 * scores and as many for V, plus the shuffles of the dot products. Here the
 * group's query heads are the M dimension of mma.sync m16n8k16 (fp16/bf16
 * operands, fp32 accumulate), padded to 16 rows as FlashInfer does for
 * groups >= 4: S = Q K^T and O += P V take D / 4 mma instructions per 16
 * tokens of a warp (D / 8 more for bf16's P, see Mma), where v5 issues about
 * D x GT warp-wide FMAs for the same tokens (512 at D = 128, GT = 4).
 * Measured on the H200 it is slower than v5 all the same (docs/gpu-journal.md,
 * third session: 8 warps an SM keep too few requests in flight).
 *
 * Work split: a block (4 warps) owns the same (chunk, KV head, GQA tile) as
 * before; warp w takes the chunk's 16-token tiles w, w + 4, w + 8, ... and
 * keeps its own running max, sum and output, merged at the end through
 * shared memory like v2's row groups (attn_finish). Each warp has its own
 * cp.async pipeline of STAGES tiles (K and V, 16 rows each) in shared
 * memory, so the loop needs no block barrier: a lane waits for its own
 * copies (cp.async.wait_group) and __syncwarp makes the warp's copies
 * visible to the warp's ldmatrix. Rows are stored with their 16-byte pieces
 * XOR-swizzled by (row mod 8), so the eight rows an ldmatrix reads hit
 * eight different bank groups.
 *
 * The page walk is done once per tile when the block size is a multiple of
 * 16 (a tile then lies in one page: the frame's base is reused for its 16
 * rows), per row otherwise (block sizes 8 and 24).
 *
 * Fragments (PTX ISA, mma.m16n8k16; g = lane / 4, c = lane % 4):
 *   A (Q, then P)  row g: a0 = cols 2c..2c+1, a2 = cols 2c+8..; rows g + 8
 *                  (a1, a3) are padding, always zero;
 *   B (K^T, then V) b0 = rows 2c..2c+1 of col g, b1 = rows 2c+8..;
 *                  ldmatrix on K rows gives K^T's, ldmatrix.trans on V rows
 *                  gives V's;
 *   C              c0, c1 = row g, cols 2c..2c+1 (c2, c3: padding rows).
 * So a thread holds the scores of query head g for 4 of the tile's 16
 * tokens; the row's max is reduced over the 4 lanes of a quad, and the
 * scores' C fragment is, once rounded to 16 bits, the A fragment of P.
 * P goes to the mma as fp16, or for bf16 as hi + lo (see Mma; one term in
 * versions 19 and 20); the sum l
 * is taken from the unrounded fp32 P. fp32 data has no 16-bit mma: version 6 runs version 5's
 * kernel on it. */

__device__ __forceinline__ void ldsm_x4(unsigned *r, const void *smem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned *r, const void *smem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

/* ---- the copy engine (versions 15 and 16) -------------------------------
 *
 * Hopper's bulk tensor copy (TMA): one thread names a box of a tensor
 * described by a tensor map (a 128-byte descriptor the host encodes, passed
 * to the kernel as a __grid_constant__ parameter), and the copy engine, not
 * the SM's load units, moves it to shared memory, counting its bytes on an
 * mbarrier in shared memory as they land. The warp waits on the barrier's
 * phase instead of cp.async.wait_group. With 128-byte swizzle the engine
 * stores row r's 16-byte piece j of each 128-byte row at piece j ^ (r % 8),
 * the address bits 4-6 XOR bits 7-9, so a box must start on a 1024-byte
 * boundary for that to be r's own row within the box. */
struct TmaMaps { /* aligned as CUtensorMap asks */
    CUtensorMap k, v; /* K's and V's pool (paged) or naive buffers */
};
constexpr int kTmaAlign = 1024;   /* a swizzled box's alignment        */
constexpr int kTmaBoxElts = 64;   /* a box row: 128 bytes of 16-bit data */

__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count)
                 : "memory");
}
/* make the barriers' initialisation visible to the copy engine */
__device__ __forceinline__ void mbar_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* arrive once and expect `bytes` more from the copy engine in this phase */
__device__ __forceinline__ void mbar_expect(unsigned long long *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
}
/* spin until the barrier's phase `parity` has completed */
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity)
{
    const unsigned b = smem_u32(bar);
    unsigned done;
    do {
        asm volatile("{\n .reg .pred p;\n"
                     " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(b), "r"(parity)
                     : "memory");
    } while (!done);
}
/* the box at (c0, c1, c2, c3) of a 4-D tensor map into dst, counted on bar */
__device__ __forceinline__ void tma_load4(void *dst, const CUtensorMap *map, int c0, int c1,
                                          int c2, int c3, unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_u32(dst)),
                 "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2),
                 "r"(c3), "r"(smem_u32(bar))
                 : "memory");
}
/* order this thread's ordinary shared-memory stores before later copies
 * of the engine into the same bytes */
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* c[0..1] += A B for the rows g of a m16n8k16 product whose rows g + 8 are
 * zero (a1 = a3 = 0): the padding half of C is neither kept nor passed.
 * run8 is the m16n8k8 product (A 16 x 8: a0 only; B 8 x 8: b0), version
 * 12's P V over an 8-token tile. TY is the operands' PTX type.
 *
 * ORDERED (version 12) makes the mma volatile, so it stays in program
 * order with the ldmatrix (volatile too) that feed it. It was tried
 * against version 12's register spill and did not change it (ptxas: 24
 * bytes of stack either way; the copy loop's unrolling was the cause); it
 * stays because it is the build the eighth session measured. run8 is
 * version 12's alone, so always ordered.
 *
 * Version 13 passes whole quads instead. In version 12's SASS (ninth
 * session) the forms above cost about 60 register moves a tile: A and C
 * must each be consecutive registers, so before every mma the compiler
 * puts a zero into the padding half of A and of C and copies P's fragment
 * into a fresh pair. run_quad takes A's four registers as ldmatrix loaded
 * them (rows g + 8 read from a zero row of shared memory) and all of C,
 * whose padding rows then simply stay zero. The second run8 is the m16n8k8
 * product on the C quad {x, y} (A: a0 rows g, a1 rows g + 8): with a1 = 0
 * it adds P V to x and exactly nothing to y, with a0 = 0 the other way
 * round, so two n-tiles of the output share one quad and every accumulator
 * in it is real. */
#define PF_MMA_K16(TY, VOLATILE)                                                         \
    asm VOLATILE("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, " \
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                              \
                 : "+f"(c[0]), "+f"(c[1]), "+f"(d2), "+f"(d3)                            \
                 : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1))
#define PF_MMA_PRODUCTS(TY)                                                                  \
    template <bool ORDERED = false>                                                          \
    __device__ static void run(float *c, unsigned a0, unsigned a2, unsigned b0, unsigned b1) \
    {                                                                                        \
        float d2 = 0.f, d3 = 0.f; /* the padding rows' C, in and out */                      \
        if constexpr (ORDERED)                                                               \
            PF_MMA_K16(TY, volatile);                                                        \
        else                                                                                 \
            PF_MMA_K16(TY, );                                                                \
    }                                                                                        \
    __device__ static void run8(float *c, unsigned a0, unsigned b0)                          \
    {                                                                                        \
        float d2 = 0.f, d3 = 0.f;                                                            \
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, " \
                     "{%4,%5}, {%6}, {%0,%1,%2,%3};\n"                                       \
                     : "+f"(c[0]), "+f"(c[1]), "+f"(d2), "+f"(d3)                            \
                     : "r"(a0), "r"(0u), "r"(b0));                                           \
    }                                                                                        \
    __device__ static void run_quad(float *c, const unsigned *a, unsigned b0, unsigned b1)   \
    {                                                                                        \
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, " \
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                              \
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                        \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));        \
    }                                                                                        \
    __device__ static void run8(float *x, float *y, unsigned a0, unsigned a1, unsigned b0)   \
    {                                                                                        \
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, " \
                     "{%4,%5}, {%6}, {%0,%1,%2,%3};\n"                                       \
                     : "+f"(x[0]), "+f"(x[1]), "+f"(y[0]), "+f"(y[1])                        \
                     : "r"(a0), "r"(a1), "r"(b0));                                           \
    }
template <typename T> struct Mma;
template <> struct Mma<__nv_bfloat16> {
    PF_MMA_PRODUCTS("bf16")
    /* P as two bf16 terms, hi + lo: bf16 keeps 8 bits, and P rounded once
     * moves an output by up to 2^-9 max |v|, which our check's allowance
     * (1e-3 + 2^-7 |ref|) does not always cover on short sequences (a
     * simulation of the test cases failed 10 elements in 192000); hi + lo
     * keeps about 16 bits for one more mma per n-tile. */
    static constexpr bool kSplitP = true;
    __device__ static unsigned pack(float lo, float hi, unsigned *rest)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        __nv_bfloat162 r = __floats2bfloat162_rn(lo - __low2float(h), hi - __high2float(h));
        *rest = *reinterpret_cast<unsigned *>(&r);
        return *reinterpret_cast<unsigned *>(&h);
    }
};
template <> struct Mma<__half> {
    PF_MMA_PRODUCTS("f16")
    /* fp16 keeps 11 bits of P in [0, 1]: one term is enough (2^-12; with
     * version 12's lazy max P < 2^8, still 11 bits relative). */
    static constexpr bool kSplitP = false;
    __device__ static unsigned pack(float lo, float hi, unsigned *rest)
    {
        __half2 h = __floats2half2_rn(lo, hi);
        *rest = 0u;
        return *reinterpret_cast<unsigned *>(&h);
    }
};

constexpr int kV6Warps = kThreads / 32;

/* The pipeline buffer of versions 6 and 12: per warp STAGES tiles of
 * `tok` rows of K and of V (dynamic shared memory for v6, static for v12,
 * see mma_static). */
__host__ __device__ constexpr int v6_smem_bytes(int D, int stages, int tok)
{
    return kV6Warps * stages * 2 * tok * D * 2;
}
/* (launched with kSmemAlign bytes more, see smem_align, unless static;
 * versions 15 and 16 with kTmaAlign more, see smem_align) */
__host__ __device__ constexpr bool mma_static(int D, int stages, int tok)
{
    return v6_smem_bytes(D, stages, tok) <= 32 * 1024;
}
/* Blocks an SM's 227 KB of shared memory holds (the static part, mostly
 * the table cache, counted as 4 KB), at most 4: the register bound asks no
 * more, so the compiler never spills to reach an occupancy the memory
 * forbids (ptxas, sm_90, version 6: 166-208 registers at D = 128, 2
 * blocks; 108-128 at D = 64, 4 blocks; no spills). */
constexpr int v6_min_blocks(int D, int stages, int tok)
{
    const int fit = 227 * 1024 / (v6_smem_bytes(D, stages, tok) + 4096);
    return fit < 4 ? fit : 4;
}

/* ---- version 12: version 6's tensor cores in version 7's shape ---------
 *
 * The seventh session's probe (gpu/stream_probe.cu) ran version 7's copy
 * pipeline with no arithmetic at 0.973 of the read bandwidth on shuffled
 * pages, and 0.941 with one round of v7-like arithmetic (about 380
 * instructions a warp a stage) between the waits: two rounds made it
 * compute-bound at 0.684, so one round leaves the SMs only about 1.4x the
 * rate their share of the bandwidth asks, and that is not enough to absorb
 * the unevenness of a one-wave launch (some SMs finish their blocks early;
 * the rest must then run faster to keep the memory busy). Version 7 (0.93)
 * sits exactly there. Version 6 has a fraction of v7's instructions but a
 * different shape: 16-token tiles a warp, 3 stages, 96 KB and 212
 * registers a block, so 2 blocks an SM and llama's 512 blocks in two ragged
 * waves (Nsight Compute: SMs active 89.7% of the time).
 *
 * Version 12 keeps v6's arithmetic and takes v7's shape: a warp's tile is 8
 * tokens (the scores one m16n8k16 n-tile a k-step, P V one m16n8k8 an
 * 8-wide slice of D, P's C fragment again the A fragment), 2 stages, so a
 * block holds 32 KB (16 KB a stage: each lane copies 4 K and 4 V vectors
 * a stage, as in v7) and 4 blocks fit an SM in one wave; and v7's lazy
 * rescale, since at 8 tokens a tile the per-tile rescale of v6 (2 x D / 8
 * multiplies a lane) would be a third of the loop. Per warp and 8 tokens
 * (4 KB of K and V) the source asks about 100 instructions (4 + 4
 * ldmatrix, D / 16 + 2 x D / 8 mma for bf16, the softmax of 2 scores a
 * lane); Nsight Compute counted 315 (ninth session: register moves around
 * the padded mma, swizzled addresses, the copy), against v7's 445.
 * Measured (docs/gpu-journal.md): in the eighth session its paged pass trailed
 * v7's, its gather costing a point more; with v7's fixed-offset copy for
 * whole tiles (ninth session) it leads v7 by 0.6-1.1 points, and is
 * version 0 for 16-bit GQA. */
/* ---- version 14: a head tile a warp -----------------------------------
 *
 * Why. The pool is [frame][kv head][block_size][D]: one head's page of a
 * frame is B x D elements (4 KB for a 16-token bf16 page at D = 128) and
 * the frame's other heads lie right after it. Version 12's block serves one
 * head, so it reads 4 KB pieces scattered over the pool (2 KB at 8-token
 * pages), and the seventh session's probe measured what such pieces cost
 * a pure copy: 0.982 of the read bandwidth at 4 KB, 0.983 at 2 KB, 0.996
 * at 32 KB, 1.00 contiguous. Version 12 shows the same slope: paged over
 * naive 1.5 points at 8-16 tokens, none at 128 (ninth session).
 *
 * How. The block serves W = 4 consecutive head tiles and warp w takes tile
 * W ht + w over the whole chunk, in 8-token tiles with its own 2 stages,
 * its own Q rows and its own (m, l, O), as a v12 warp does. At a step the 4
 * warps copy the same tokens of 4 neighbouring heads: with group tiles of
 * a whole KV head (GQA groups up to 8) that is 4 consecutive pages of one
 * frame, 16 KB of K and 16 KB of V in one piece at 16-token pages. Each
 * warp then holds its tile's whole result over the chunk, so the block
 * merge of versions 2-13 is gone: the output (or the chunk's partial) goes
 * from the registers. The price is the split: a chunk of a sequence is a
 * quarter of the blocks, so llama (64 x 8 heads) needs 4 chunks to fill
 * 528 slots, with their partials and merge (the planner counts a block as
 * a quarter of an SM, host.c). Its naive pass reads 4 separate per-head
 * streams (the naive layout is [seq][head][cap][D]), so it is the paged
 * pass that this version is for. */
/* Versions 6 (TOK 16, STAGES 3, LAZY false), 12 and 13 (TOK 8, STAGES 2,
 * LAZY true; QUAD false or true), 14 (12 with MH: a head tile a warp), 15
 * and 16 (12 with TMA: the copy engine, 2 or 3 stages), 17 (12 with L2P =
 * 128, the L2 prefetch hint), 18 (6 with LAZY true, see pick_mma), 19 and
 * 20 (12 and 18 with P1: bf16's P as one term): see the comments above.
 * TOK is a warp's tile in tokens: 16 makes the scores two m16n8 n-tiles
 * and P V one m16n8k16 a 8-wide slice of D; 8 makes the scores one n-tile
 * and P V one m16n8k8 a slice. QUAD (version 13) passes the mma whole
 * quads (see PF_MMA_PRODUCTS). */
template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH, bool TMA, int L2P, bool P1>
__device__ __forceinline__ void mma_body(const AttnArgs<T> &a, const TmaMaps *tm)
{
    /* P V's weights as two terms (bf16's hi + lo, see Mma), unless P1
     * (versions 19 and 20) feeds them as one */
    constexpr bool kSplitP = Mma<T>::kSplitP && !P1;
    constexpr int CPR = D * 2 / 16;   /* 16-byte pieces per row          */
    constexpr int RPI = 32 / CPR;     /* rows a warp copies per step     */
    constexpr int NT = D / 8;         /* n-tiles of the output           */
    constexpr int KS = D / 16;        /* k-steps of the scores           */
    constexpr int TILE_U4 = TOK * CPR;
    constexpr int W = kV6Warps;
    constexpr int X = TOK / 4;        /* scores a lane holds a tile      */
    constexpr int kTmaBoxes = D / kTmaBoxElts; /* boxes of a tile (15, 16) */
    static_assert(TOK == 8 || TOK == 16, "a tile is one or two m16n8 n-tiles");
    static_assert(!QUAD || TOK == 8, "version 13 is version 12 with quads");
    static_assert(!MH || (TOK == 8 && !QUAD), "version 14 is version 12 a warp a head tile");
    static_assert(!MH || W == PF_GPU_MH_TILES, "the planner's head tiles a block (gpu_internal.h)");
    static_assert(!TMA || (TOK == 8 && !QUAD && !MH), "versions 15 and 16 are version 12's copy");
    static_assert(GT <= 8, "rows g + 8 of the mma are padding");
    static_assert(W * GT * D * 4 <= W * STAGES * 2 * TILE_U4 * 16, "merge scratch must fit");
    /* version 12's 32 KB fit the static 48 KB, as v7's do: a launch with
     * no dynamic shared memory costs the host less (docs/gpu-journal.md,
     * eighth session); version 6's 96 KB are dynamic, on the 128-byte grid */
    uint4 *v6buf;
    if constexpr (mma_static(D, STAGES, TOK)) {
        /* the copy engine's swizzle needs each tile on the 1024-byte grid */
        __shared__ alignas(TMA ? kTmaAlign : kSmemAlign) uint4
            sbuf[v6_smem_bytes(D, STAGES, TOK) / 16];
        v6buf = sbuf;
    } else {
        extern __shared__ uint4 v6dyn[];
        v6buf = smem_align<TMA ? kTmaAlign : kSmemAlign>(v6dyn);
    }
    /* versions 15 and 16: a barrier a stage of each warp, which its copy's
     * bytes complete */
    __shared__ unsigned long long bars[TMA ? W : 1][TMA ? STAGES : 1];
    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[W][GT], sm_l[W][GT];
    __shared__ int sm_last;
    /* versions 12, 13 and 15-17 keep Q here (below); 13 also a zero row;
     * 14 each warp's own 8 rows */
    __shared__ __align__(128) uint4 sq[TOK == 8 ? (MH ? W : 1) * (QUAD ? 9 : 8) * CPR : 1];

    trace_mark(a, kTrStart);
    trace_mark(a, kTrSm);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const Work job = work_of(a);
    const int seq = job.seq;
    /* Version 14 (MH): the block serves head tiles W ht .. W ht + W - 1,
     * warp w tile W ht + w over the whole chunk (a warp past the last
     * tile, when the tiles are not a multiple of W, copies and computes
     * nothing); the block's query heads are bq0 .. bq0 + brows - 1. Else
     * the block's W warps share head tile ht, a warp every W-th tile of
     * the chunk. */
    const int myht = MH ? job.ht * W + warp : job.ht;
    const bool active = !MH || myht * GT < a.hq;
    const int2 hd = head_of<T, GT>(a, active ? myht : job.ht * W);
    const int kvh = hd.x, qh0 = hd.y;
    const int bq0 = MH ? job.ht * W * GT : qh0;
    const int brows = MH ? min(W * GT, a.hq - bq0) : GT;
    int len, t0, t1;
    if (!block_begin<T, D, GT, PAGED, true>(a, tbl, job, bq0, len, t0, t1, brows)) {
        trace_mark(a, kTrEnd);
        return;
    }
    const int B = a.B;
    const T *kb = kv_base<T, D, PAGED>(a, a.k, seq, kvh);
    const T *vb = kv_base<T, D, PAGED>(a, a.v, seq, kvh);
    uint4 *wbuf = v6buf + warp * STAGES * 2 * TILE_U4;
    const int crow = lane / CPR, cpc = lane % CPR; /* the piece this lane copies */
    const bool walk_per_tile = B % TOK == 0;
    /* Whole tiles copied at fixed offsets (below): every 8-token tile, and
     * version 18's 16-token ones at D = 128. Version 6 (LAZY false, the only
     * version without the lazy rescale) keeps the row loop as measured: with
     * the fixed offsets its D = 64 paged kernel spilled 8 bytes at its 128
     * registers (ptxas, ninth session), and so do version 18's bf16 D = 64
     * paged kernels (4 bytes, fifteenth session), which keep it too. */
    constexpr bool kFixedRows = TOK == 8 || (LAZY && D == 128);
    if constexpr (TMA) {
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < STAGES; i++)
                mbar_init(&bars[warp][i], 1);
            mbar_init_fence();
        }
        __syncwarp();
    }

    /* A tile's 16-byte piece pc of row r: rows of D elements, the pieces
     * XOR-swizzled by r % 8 (versions 6, 12-14, 17, 18); the copy engine's
     * layout (versions 15, 16) is the same swizzle on 128-byte half rows:
     * D / 64 boxes of 8 rows one after the other */
    auto piece = [](int r, int pc) {
        return TMA ? (pc >> 3) * (TOK * 8) + r * 8 + ((pc & 7) ^ (r & 7))
                   : r * CPR + (pc ^ (r & 7));
    };

    /* Copy this warp's k-th tile (chunk tile warp + k W; MH: k) into slot st. */
    auto issue = [&](int k, int st) {
        const int u0 = (MH ? k : warp + k * W) * TOK; /* first token, within the chunk */
        if constexpr (TMA) {
            /* versions 15 and 16: lane 0 names the tile's boxes, 8 rows by
             * 64 elements (128 bytes: the swizzle's width), D / 64 of K and
             * of V. The launcher runs them only when 8 divides the block
             * size, so the tile's rows lie in one page (chunks are whole
             * pages). Rows past the chunk's end are copied as they are
             * (past the naive capacity the engine fills zeros) and their
             * V rows zeroed after the wait: see the loop. */
            if (lane == 0) {
                int row = t0 + u0, outer = seq; /* naive: [seq][kvh][cap][D] */
                if (PAGED) {                    /* the pool: [frame][kvh][B][D] */
                    const int blk = a.bshift >= 0 ? u0 >> a.bshift : u0 / B;
                    row = u0 - blk * B;
                    outer = tbl[blk];
                }
                unsigned long long *bar = &bars[warp][st];
                mbar_expect(bar, 2u * TOK * D * (unsigned)sizeof(T));
                uint4 *dk = wbuf + (st * 2 + 0) * TILE_U4, *dv = wbuf + (st * 2 + 1) * TILE_U4;
#pragma unroll
                for (int h = 0; h < kTmaBoxes; h++) {
                    tma_load4(dk + h * TOK * 8, &tm->k, h * kTmaBoxElts, row, kvh, outer, bar);
                    tma_load4(dv + h * TOK * 8, &tm->v, h * kTmaBoxElts, row, kvh, outer, bar);
                }
            }
            return;
        }
        uint4 *dk = wbuf + (st * 2 + 0) * TILE_U4;
        uint4 *dv = wbuf + (st * 2 + 1) * TILE_U4;
        /* Rows r0 .. r0 + n of the tile from the address of row r0 (e: its
         * element offset in K's buffer and V's), at fixed offsets. */
        auto copy_rows = [&](size_t e, int r0, int n) {
            const T *pk = kb + e + (size_t)(crow * D + cpc * 8);
            const T *pv = vb + e + (size_t)(crow * D + cpc * 8);
#pragma unroll
            for (int it = r0 / RPI; it < (r0 + n) / RPI; it++) {
                const int slot = piece(it * RPI + crow, cpc);
                cp_async16<L2P>(dk + slot, pk + (it * RPI - r0) * D, true);
                cp_async16<L2P>(dv + slot, pv + (it * RPI - r0) * D, true);
            }
        };
        /* the pool offset of chunk token u's row */
        auto walk = [&](int u) {
            const int blk = a.bshift >= 0 ? u >> a.bshift : u / B;
            return pf_page_pool_index(tbl[blk], kvh, u - blk * B, a.hkv, B, D);
        };
        if (kFixedRows && t0 + u0 + TOK <= t1) {
            /* version 12's common case, as version 7's: the whole tile is
             * in the chunk and in one page, so one walk places every row,
             * and the lane's rows are fixed offsets from one address (no
             * bounds check, no per-row address arithmetic). Version 18's
             * 16-token tile at 8-token pages lies in two pages: a walk
             * for each half. */
            if (!PAGED) {
                copy_rows((size_t)(t0 + u0) * D, 0, TOK);
                return;
            }
            if (walk_per_tile) {
                copy_rows(walk(u0), 0, TOK);
                return;
            }
            if constexpr (TOK == 16) {
                if (B == 8) {
                    copy_rows(walk(u0), 0, 8);
                    copy_rows(walk(u0 + 8), 8, 8);
                    return;
                }
            }
        }
        /* the tail tile, block sizes the tile's rows do not divide (other
         * than version 18's 8), and every tile of version 6 and of version
         * 18 at D = 64: row by row. Version 12: not unrolled. Unrolled, each
         * row's 64-bit source address was live at once, and at 128 registers
         * the paged kernel spilled (24 bytes of stack; ptxas: 122 registers
         * and none without) */
        const size_t e0 = PAGED && walk_per_tile ? walk(u0) : 0;
#pragma unroll(TOK == 8 ? 1 : TOK / RPI)
        for (int it = 0; it < TOK / RPI; it++) {
            const int rr = it * RPI + crow, u = u0 + rr;
            const bool ok = t0 + u < t1;
            size_t e = 0;
            if (ok) {
                if (!PAGED) {
                    e = (size_t)(t0 + u) * D;
                } else if (walk_per_tile) {
                    e = e0 + (size_t)rr * D;
                } else {
                    e = walk(u);
                }
                e += cpc * 8;
            }
            const int slot = piece(rr, cpc);
            cp_async16<L2P>(dk + slot, kb + e, ok);
            cp_async16<L2P>(dv + slot, vb + e, ok);
        }
    };
    const int nt_chunk = (t1 - t0 + TOK - 1) / TOK;
    const int mine = MH ? (active ? nt_chunk : 0)
                        : nt_chunk > warp ? (nt_chunk - warp + W - 1) / W : 0;
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < mine)
            issue(i, i);
        if constexpr (!TMA)
            cp_async_commit();
    }

    /* Q as A fragments (rows g < GT; the other rows zero), unscaled: the
     * fp32 scores are scaled instead, so Q is used exactly as stored.
     * Version 6 keeps them in registers (D / 8 of them). Version 12 at 4
     * blocks an SM has 128 registers a thread, and with Q held it spilled
     * (eighth session: 88 bytes of stack, 4.3 million local requests a
     * launch, llama 0.904), so it keeps the block's 8 rows of Q in shared
     * memory (swizzled as the tiles) and loads each k-step's fragment by
     * ldmatrix: D / 32 more instructions a tile, D / 8 registers fewer. */
    const int g = lane / 4, c = lane % 4;
    constexpr bool kQShared = TOK == 8;
    unsigned qa[kQShared ? 1 : KS][2];
    uint4 *const sqw = sq + (MH ? warp * 8 * CPR : 0); /* this warp's rows of Q */
    if constexpr (MH) { /* a warp its own head tile's rows (none when inactive) */
#pragma unroll
        for (int i = lane; i < 8 * CPR; i += 32) {
            const int row = i / CPR, pc = i % CPR;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (active && row < GT)
                v = *reinterpret_cast<const uint4 *>(a.q + ((size_t)seq * a.hq + qh0 + row) * D +
                                                     pc * 8);
            sqw[row * CPR + (pc ^ row)] = v;
        }
        __syncwarp();
    } else if constexpr (kQShared) {
        if (tid < 8 * CPR) {
            const int row = tid / CPR, pc = tid % CPR;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (row < GT)
                v = *reinterpret_cast<const uint4 *>(a.q + ((size_t)seq * a.hq + qh0 + row) * D +
                                                     pc * 8);
            sq[row * CPR + (pc ^ row)] = v;
        }
        if (QUAD && tid < CPR) /* version 13: row 8, A's rows g + 8 */
            sq[8 * CPR + tid] = make_uint4(0u, 0u, 0u, 0u);
        __syncthreads();
    } else {
        const T *qrow = a.q + ((size_t)seq * a.hq + qh0 + (g < GT ? g : 0)) * D + 2 * c;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            qa[ks][0] = g < GT ? *reinterpret_cast<const unsigned *>(qrow + ks * 16) : 0u;
            qa[ks][1] = g < GT ? *reinterpret_cast<const unsigned *>(qrow + ks * 16 + 8) : 0u;
        }
    }
    float o[NT][2];
#pragma unroll
    for (int n = 0; n < NT; n++)
        o[n][0] = o[n][1] = 0.f;
    float m = -INFINITY, l = 0.f;

    /* ldmatrix row addresses: lane -> (matrix lane / 8, row lane % 8).
     * TOK 16: K's four matrices are (tokens 0-7 | 8-15) x (d lo | hi) of one
     * k-step, V's (tokens lo | hi) x (n-tile lo | hi). TOK 8: K's are
     * (d lo | hi) x (k-step ks | ks + 1), V's four n-tiles. */
    const int lm = lane / 8, lr = lane % 8;
    const int ktok = TOK == 16 ? (lm >> 1) * 8 + lr : lr, kpc = TOK == 16 ? lm & 1 : lm;
    const int vtok = TOK == 16 ? (lm & 1) * 8 + lr : lr, vpc = TOK == 16 ? lm >> 1 : lm;
    /* version 13: Q's matrices for one k-step are (rows 0-7 | the zero row)
     * x (d lo | hi): the A operand of run_quad as loaded */
    const int qrow = (lm & 1) ? 8 : lr, qpc = lm >> 1;

    for (int k = 0; k < mine; k++) {
        const int st = k % STAGES;
        __syncwarp(); /* every lane is done reading the slot about to be refilled */
        if (k + STAGES - 1 < mine)
            issue(k + STAGES - 1, (k + STAGES - 1) % STAGES);
        if constexpr (TMA) {
            /* the slot's (k / STAGES)-th fill has landed */
            mbar_wait(&bars[warp][st], (unsigned)(k / STAGES) & 1u);
            const int valid = t1 - (t0 + (warp + k * W) * TOK);
            if (valid < TOK) {
                /* the chunk's last tile: its rows past the end were copied
                 * as the memory holds them. Their scores are masked below,
                 * but P = 0 times V = NaN is NaN, so V's rows are zeroed
                 * (cp.async's zero-fill does this in versions 6, 12-14,
                 * 17 and 18). The fence orders the stores before any later
                 * copy into the slot; there is none (it is the warp's last
                 * tile), so it only keeps the order safe if that changes. */
                uint4 *vz = wbuf + (st * 2 + 1) * TILE_U4;
                for (int i = lane; i < (TOK - valid) * CPR; i += 32)
                    vz[piece(valid + i / CPR, i % CPR)] = make_uint4(0u, 0u, 0u, 0u);
                fence_proxy_async();
                __syncwarp();
            }
        } else {
            cp_async_commit();
            cp_async_wait<STAGES - 1>();
            __syncwarp(); /* the warp's copies of tile k are visible to all its lanes */
        }
        if (k == 0)
            trace_mark(a, kTrReady);
        const uint4 *ks_ = wbuf + (st * 2 + 0) * TILE_U4;
        const uint4 *vs_ = wbuf + (st * 2 + 1) * TILE_U4;

        /* S = Q K^T: s[0..1] tokens 2c, 2c + 1 of the tile, s[2..3] (TOK
         * 16) 8 + 2c, 9 + 2c */
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        if constexpr (TOK == 16) {
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                unsigned b[4];
                const int pc = ks * 2 + kpc;
                ldsm_x4(b, ks_ + ktok * CPR + (pc ^ (ktok & 7)));
                Mma<T>::run(&s[0], qa[ks][0], qa[ks][1], b[0], b[1]);
                Mma<T>::run(&s[2], qa[ks][0], qa[ks][1], b[2], b[3]);
            }
        } else if constexpr (QUAD) { /* K's matrices (d lo | hi) x (k-step ks | ks + 1) */
#pragma unroll
            for (int ks = 0; ks < KS; ks += 2) {
                unsigned b[4], q0[4], q1[4];
                const int pc = ks * 2 + kpc;
                ldsm_x4(b, ks_ + ktok * CPR + (pc ^ (ktok & 7)));
                ldsm_x4(q0, sq + qrow * CPR + ((ks * 2 + qpc) ^ (qrow & 7)));
                ldsm_x4(q1, sq + qrow * CPR + ((ks * 2 + 2 + qpc) ^ (qrow & 7)));
                Mma<T>::run_quad(s, q0, b[0], b[1]);
                Mma<T>::run_quad(s, q1, b[2], b[3]);
            }
        } else { /* Q's and K's four matrices: (d lo | hi) x (k-step ks | ks + 1) */
#pragma unroll
            for (int ks = 0; ks < KS; ks += 2) {
                unsigned b[4], q[4];
                const int pc = ks * 2 + kpc;
                ldsm_x4(q, sqw + lr * CPR + (pc ^ lr));
                ldsm_x4(b, ks_ + piece(ktok, pc));
                Mma<T>::template run<true>(&s[0], q[0], q[1], b[0], b[1]);
                Mma<T>::template run<true>(&s[0], q[2], q[3], b[2], b[3]);
            }
        }
        const int tb = t0 + (MH ? k : warp + k * W) * TOK + 2 * c;
        float x[X];
#pragma unroll
        for (int i = 0; i < X; i++) {
            const int off = (i & 1) + (i >> 1) * 8; /* token tb + off */
            x[i] = tb + off < t1 ? s[i] * a.qscale : -INFINITY;
        }
        float mt = x[0];
#pragma unroll
        for (int i = 1; i < X; i++)
            mt = fmaxf(mt, x[i]);
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
        mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
        float ms;         /* the max the exps are taken against */
        float alpha = 1.f; /* version 6: l's rescale, fused with its sum */
        if constexpr (LAZY) {
            /* version 7's lazy rescale: m moves only when the tile's max
             * passes it by more than kLazy; the quad agrees (same mt, m) */
            const bool mv = mt > m + kLazy;
            if (__any_sync(0xffffffffu, mv)) {
                const float al = mv ? fast_exp2(m - mt) : 1.f; /* m = -inf: 0 */
                m = mv ? mt : m;
                l *= al;
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    o[n][0] *= al;
                    o[n][1] *= al;
                }
            }
            ms = m == -INFINITY ? 0.f : m;
        } else {
            const float mn = fmaxf(m, mt);
            ms = mn == -INFINITY ? 0.f : mn; /* no valid token yet */
            alpha = fast_exp2(m - ms);
            m = mn;
#pragma unroll
            for (int n = 0; n < NT; n++) {
                o[n][0] *= alpha;
                o[n][1] *= alpha;
            }
        }
        float p[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int i = 0; i < X; i++)
            p[i] = fast_exp2(x[i] - ms);
        l = fmaf(l, alpha, (p[0] + p[1]) + (p[2] + p[3]));
        /* O += P V */
        unsigned pr0, pr2;
        const unsigned pa0 = Mma<T>::pack(p[0], p[1], &pr0), pa2 = Mma<T>::pack(p[2], p[3], &pr2);
#pragma unroll
        for (int j = 0; j < NT / 4 * (TOK / 8); j++) {
            unsigned b[4];
            if constexpr (TOK == 16) {
                const int pc = 2 * j + vpc;
                ldsm_x4_t(b, vs_ + vtok * CPR + (pc ^ (vtok & 7)));
                Mma<T>::run(o[2 * j], pa0, pa2, b[0], b[1]);
                Mma<T>::run(o[2 * j + 1], pa0, pa2, b[2], b[3]);
                if constexpr (kSplitP) {
                    Mma<T>::run(o[2 * j], pr0, pr2, b[0], b[1]);
                    Mma<T>::run(o[2 * j + 1], pr0, pr2, b[2], b[3]);
                }
            } else {
                const int pc = 4 * j + vpc;
                ldsm_x4_t(b, vs_ + piece(vtok, pc));
                if constexpr (QUAD) {
#pragma unroll
                    for (int q = 0; q < 4; q += 2) { /* n-tiles x, y in one C quad */
                        float *x = o[4 * j + q], *y = o[4 * j + q + 1];
                        Mma<T>::run8(x, y, pa0, 0u, b[q]);
                        Mma<T>::run8(x, y, 0u, pa0, b[q + 1]);
                        if constexpr (kSplitP) {
                            Mma<T>::run8(x, y, pr0, 0u, b[q]);
                            Mma<T>::run8(x, y, 0u, pr0, b[q + 1]);
                        }
                    }
                } else {
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        Mma<T>::run8(o[4 * j + q], pa0, b[q]);
                        if constexpr (kSplitP)
                            Mma<T>::run8(o[4 * j + q], pr0, b[q]);
                    }
                }
            }
        }
    }
    cp_async_wait<0>();
    trace_mark(a, kTrStreamed);
    /* every warp is done with the pipeline buffer, which the block merge
     * below reuses (version 14 does not; the barrier was kept as measured) */
    __syncthreads();

    /* the quad's partial sums make the row's l; m is already the quad's */
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if constexpr (MH) {
        /* version 14: each warp holds its head tile's whole result over
         * the chunk (m, l and the output rows g < GT), so there is no block
         * merge: the output, or the chunk's normalised partial and its
         * log2-sum-exp, goes straight from the registers; then the count,
         * and the merge of the block's brows query heads by the last chunk */
        const bool whole = a.splits == 1 || len <= job.span * a.chunk;
        if (active && g < GT) {
            const size_t rowo = (size_t)seq * a.hq + qh0 + g;
            const float inv = 1.f / l;
            if (whole) {
                T *po = a.out + rowo * D + 2 * c;
#pragma unroll
                for (int n = 0; n < NT; n++) {
                    po[n * 8] = Elt<T>::store(o[n][0] * inv);
                    po[n * 8 + 1] = Elt<T>::store(o[n][1] * inv);
                }
            } else {
                float *po = a.part_o + (rowo * a.splits + job.chunk) * D + 2 * c;
#pragma unroll
                for (int n = 0; n < NT; n++)
                    *reinterpret_cast<float2 *>(po + n * 8) =
                        make_float2(o[n][0] * inv, o[n][1] * inv);
                if (c == 0)
                    a.part_lse[rowo * a.splits + job.chunk] = m + log2f(l);
            }
        }
        if (!whole)
            merge_if_last<T, D>(a, &sm_last, job, bq0, brows, len);
        trace_mark(a, kTrEnd);
        return;
    }
    float *sm_acc = reinterpret_cast<float *>(v6buf); /* [W][GT][D] */
    if (g < GT) {
        if (c == 0) {
            sm_m[warp][g] = m;
            sm_l[warp][g] = l;
        }
#pragma unroll
        for (int n = 0; n < NT; n++)
            *reinterpret_cast<float2 *>(&sm_acc[(warp * GT + g) * D + n * 8 + 2 * c]) =
                make_float2(o[n][0], o[n][1]);
    }
    __syncthreads();
    attn_finish<T, D, GT, W, true>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, &sm_last, job, qh0, len);
    trace_mark(a, kTrEnd);
}

template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH, int L2P, bool P1>
__global__ void __launch_bounds__(kThreads, v6_min_blocks(D, STAGES, TOK))
    attn_mma(const AttnArgs<T> a)
{
    mma_body<T, D, GT, PAGED, STAGES, TOK, LAZY, QUAD, MH, false, L2P, P1>(a, nullptr);
}

/* Versions 15 (2 stages) and 16 (3): version 12 with its tiles brought by
 * the copy engine. The tensor maps are a __grid_constant__ parameter: the
 * engine reads them where the launch put them. */
template <typename T, int D, int GT, bool PAGED, int STAGES>
__global__ void __launch_bounds__(kThreads, v6_min_blocks(D, STAGES, 8))
    attn_tma(const AttnArgs<T> a, const __grid_constant__ TmaMaps tm)
{
    mma_body<T, D, GT, PAGED, STAGES, 8, true, false, false, true, 0, false>(a, &tm);
}

/* ---- version 7: version 5 with a third fewer instructions ---------------
 *
 * v5 is limited by issuing instructions as much as by memory
 * (docs/gpu-journal.md, fourth session: Nsight Compute gives it 72.9% SM
 * throughput beside 77.8% DRAM; its naive pass, the same code minus the page
 * walk, is 10% faster). Per 16 bytes of K/V a v5 thread does the unavoidable
 * (unpack, GT x 8 FMAs) and much that is not: a page walk per row, log2(TG)
 * shuffles per score and GT exps per row on every lane of the row (each lane
 * ends holding every score), and a rescale of its whole accumulator every
 * tile. Version 7 keeps v5's work split, pipeline and in-place merge and
 * removes those:
 *
 *  1. Rows. Row group grp takes N consecutive tokens of a tile (v5: rows NG
 *     apart). When N divides the block size the N rows lie in one page, so
 *     the walk (a table read and a multiply-add) is done once per tile and
 *     the rows are fixed offsets from it (cp.async with an immediate).
 *
 *  2. Scores, reduce-scatter. A lane's V = N x GT partial dot products are
 *     summed over the TG lanes of its row by xor steps that each send half
 *     of the values still held and keep the other half: V/2 + V/4 + ...
 *     shuffles (15 for V = TG = 16) instead of V log2(TG) (64). Afterwards
 *     lane r holds C = max(V / TG, 1) whole scores, values
 *     (r / R) C .. (r / R) C + C - 1 of v = j GT + g, where R = TG / V lanes
 *     hold the same ones when V < TG. Every score's exp is then taken once,
 *     and the probabilities reach every lane of the row by V indexed
 *     shuffles. A lane's C values are GT/C-aligned heads of one row j, so
 *     the tile's max over rows is an xor reduce over the lane bits that
 *     encode j (offsets JOFF .. TG/2), and each lane keeps a partial l for
 *     its own values, summed over those bits at the end.
 *
 *  3. Lazy rescale (FlashAttention-4's): the running max m moves only when
 *     a tile's max passes it by more than kLazy = 8 (base 2), so exps are
 *     taken against a max that may lag the true one by up to 8: p <= 2^8,
 *     far from fp32's range. The accumulator is rescaled only on such a
 *     move (a warp vote), in practice in the first tiles only. The merge is
 *     unchanged: every (m, l, acc) is consistent with its own m.
 *
 * Same bytes read in the same order by the same pipeline; the sums are
 * added in another order than v5's, so v7 is not bitwise v5 (its paged and
 * naive passes are bitwise equal to each other, as for every version). */
/* The pipeline buffer of v7 and v8: per stage, N = 4 rows of K and of V
 * for each of the 128 threads (16 KB a stage). */
__host__ __device__ constexpr int v7_smem_bytes(int stages)
{
    return stages * 2 * 4 * kThreads * 16;
}

/* Step 2 of version 7: x[0 .. 2H) summed over the lanes that differ in bits
 * OFF, OFF/2 .. 1 of r; each step keeps the half of the values that bit
 * selects (upper when set) and adds the partner's copy of it, so that after
 * the steps that split (H >= 1) lane r holds x[0 .. C) of the values
 * (r / R) C ..; the steps left (H = 0) all-reduce the one value. Indices are
 * compile-time, so x stays in registers. */
template <int H, int OFF> __device__ __forceinline__ void reduce_scatter(float *x, int r)
{
    if constexpr (OFF > 0) {
        if constexpr (H >= 1) {
            const bool up = r & OFF;
#pragma unroll
            for (int k = 0; k < H; k++) {
                const float send = up ? x[k] : x[k + H];
                const float keep = up ? x[k + H] : x[k];
                x[k] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
            }
            reduce_scatter<H / 2, OFF / 2>(x, r);
        } else {
            x[0] += __shfl_xor_sync(0xffffffffu, x[0], OFF);
            reduce_scatter<0, OFF / 2>(x, r);
        }
    }
}

namespace cg = cooperative_groups;

/* The end of versions 9 and 10: the split-KV merge inside a thread-block
 * cluster (sm_90). The chunks of one (sequence, head tile) form one cluster
 * (grid x = splits = the cluster's size, at most 8). Each block merges its
 * row groups as attn_finish does, but leaves the normalised partial output
 * in its own shared memory (slot 0 of sm_acc: the thread that owns (g, d)
 * has read every slot of it before it writes) and its log2-sum-exp in
 * cl_lse. The cluster barrier publishes them (release/acquire across the
 * cluster). Then the cluster's blocks share the output out: block r merges
 * elements r x 128 + tid of the GT x D, reading the others' partials
 * through distributed shared memory; a second barrier keeps every block
 * resident until all have read. Against v5-v8's merge (partials to global
 * memory, a fence, an atomic, the last block reading them back through L2)
 * this takes two dependent memory round trips off the end of a small
 * launch.
 *
 * Written for latency. Every block first copies the cluster's nr x GT
 * log2-sum-exps into its own shared memory (one remote read a thread, all
 * at once) and turns them into weights; each output element then issues
 * its nr remote reads together (the loop over ranks is unrolled to the
 * cluster's most, 8). The sixth session's block timeline found the first
 * form of this merge (block 0 alone, each element reading every rank's
 * log2-sum-exp twice in dependent loops) taking 5.4 of single's 9.0 us
 * blocks, against 2.3 us for all their tiles.
 *
 * A block whose chunk holds no tokens (a sequence shorter than the
 * longest) still joins both barriers, with a log2-sum-exp of -inf, whose
 * weight is 0 and whose slot is never multiplied (it was never written, and
 * 0 times garbage may be NaN). Chunk 0 has tokens whenever the length is >
 * 0; when it is not, no block of the cluster merges and chunk 0 writes the
 * zeros. */
template <typename T, int D, int GT, int NP>
__device__ void attn_finish_cluster(const AttnArgs<T> &a, const float *sm_m, const float *sm_l,
                                    float *sm_acc, float *cl_lse, int seq, int qh0, bool empty)
{
    constexpr int RMAX = PF_GPU_CLUSTER_MAX;
    __shared__ float w_all[RMAX][GT]; /* rank r's weight for head g, 0 if empty */
    __shared__ float inv_l[GT];       /* 1 / the sum of the weights            */
    cg::cluster_group cl = cg::this_cluster();
    const int tid = threadIdx.x;
    const int nr = (int)cl.num_blocks(), rank = (int)cl.block_rank();
    if (empty) {
        for (int g = tid; g < GT; g += kThreads)
            cl_lse[g] = -INFINITY;
    } else {
        for (int idx = tid; idx < GT * D; idx += kThreads) {
            const int g = idx / D, d = idx % D;
            float M, L;
            const float O = merge_groups<D, GT, NP>(sm_m, sm_l, sm_acc, g, d, M, L);
            sm_acc[g * D + d] = O / L;
            if (d == 0)
                cl_lse[g] = M + log2f(L);
        }
    }
    cl.sync();
    /* every block: the cluster's log2-sum-exps, then their weights */
    for (int i = tid; i < RMAX * GT; i += kThreads) {
        const int r = i / GT, g = i % GT;
        w_all[r][g] = r < nr ? cl.map_shared_rank(cl_lse, r)[g] : -INFINITY;
    }
    __syncthreads();
    for (int g = tid; g < GT; g += kThreads) {
        float M = -INFINITY;
#pragma unroll
        for (int r = 0; r < RMAX; r++)
            M = fmaxf(M, w_all[r][g]);
        float L = 0.f;
#pragma unroll
        for (int r = 0; r < RMAX; r++) {
            const float w = w_all[r][g] == -INFINITY ? 0.f : fast_exp2(w_all[r][g] - M);
            w_all[r][g] = w;
            L += w;
        }
        inv_l[g] = 1.f / L;
    }
    __syncthreads();
    /* every block its share, an empty one too (chunk 0 always has weights) */
    for (int idx = rank * kThreads + tid; idx < GT * D; idx += nr * kThreads) {
        const int g = idx / D, d = idx % D;
        float x[RMAX];
#pragma unroll
        for (int r = 0; r < RMAX; r++) /* all the remote reads first */
            x[r] = r < nr && w_all[r][g] > 0.f ? cl.map_shared_rank(sm_acc, r)[g * D + d] : 0.f;
        float O = 0.f;
#pragma unroll
        for (int r = 0; r < RMAX; r++)
            O = fmaf(w_all[r][g], x[r], O);
        a.out[((size_t)seq * a.hq + qh0 + g) * D + d] = Elt<T>::store(O * inv_l[g]);
    }
    cl.sync();
}

/* The arithmetic of version 7 on one tile, and its end, shared by versions
 * 7-10 (attn_v7) and 11 (attn_steal). Shapes: a tile is TILE = NG x N token
 * rows; row group grp (TG lanes, one 16-byte vector each) owns its N
 * consecutive rows; a lane ends each tile with C whole scores (heads v0 ..
 * v0 + C - 1 of row j0 of its group) after the reduce-scatter. */
template <typename T, int D, int GT> struct V7 {
    static constexpr int N = 4;
    static constexpr int EPV = Elt<T>::kPer16;
    static constexpr int TG = D / EPV;             /* lanes a row                   */
    static constexpr int NG = kThreads / TG;       /* row groups                    */
    static constexpr int TILE = NG * N;
    static constexpr int V = N * GT;               /* partial scores a lane makes   */
    static constexpr int C = V >= TG ? V / TG : 1; /* whole scores a lane holds     */
    static constexpr int R = V >= TG ? 1 : TG / V; /* lanes holding the same ones   */
    static constexpr int JOFF = GT / C * R;        /* lowest lane bit that is row j */
    static_assert(TG <= 32 && 32 % TG == 0, "a row must fit in one warp");
    static_assert(N <= TG && GT % C == 0, "a lane's scores are heads of one row");

    /* The running state of lane r: m, l of its C scores' heads, acc of
     * every head over its 16-byte slice of D. */
    struct State {
        float m[C], l[C], acc[GT][EPV];
    };
    static __device__ __forceinline__ void reset(State &S)
    {
#pragma unroll
        for (int i = 0; i < C; i++) {
            S.m[i] = -INFINITY;
            S.l[i] = 0.f;
        }
#pragma unroll
        for (int g = 0; g < GT; g++)
#pragma unroll
            for (int e = 0; e < EPV; e++)
                S.acc[g][e] = 0.f;
    }

    /* One tile from the stage at ks / vs (this lane's N rows of K and V, a
     * stride of kThreads vectors apart); rows at or past `rows` (counted
     * from the tile's first) are masked out. */
    static __device__ __forceinline__ void tile(const uint4 *ks, const uint4 *vs,
                                                const float (&qf)[GT][EPV], int rows, int r,
                                                int grp, State &S)
    {
        const int v0 = r / R * C, j0 = v0 / GT;
        float x[V]; /* partial dot products, x[j GT + g] */
#pragma unroll
        for (int j = 0; j < N; j++) {
            float kf[EPV];
            Elt<T>::unpack(ks[j * kThreads], kf);
#pragma unroll
            for (int g = 0; g < GT; g++) {
                float sc = 0.f;
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    sc = fmaf(qf[g][e], kf[e], sc);
                x[j * GT + g] = sc;
            }
        }
        reduce_scatter<V / 2, TG / 2>(x, r); /* see 2. above */
        if (grp * N + j0 >= rows) /* a row past the end */
#pragma unroll
            for (int k = 0; k < C; k++)
                x[k] = -INFINITY;
        /* the tile's max over its rows, per head */
        float mt[C];
        bool move = false;
#pragma unroll
        for (int k = 0; k < C; k++) {
            mt[k] = x[k];
#pragma unroll
            for (int off = JOFF; off < TG; off <<= 1)
                mt[k] = fmaxf(mt[k], __shfl_xor_sync(0xffffffffu, mt[k], off));
            move |= mt[k] > S.m[k] + kLazy;
        }
        if (__any_sync(0xffffffffu, move)) { /* rare: the first tiles, a jump */
            float alpha[C];
#pragma unroll
            for (int k = 0; k < C; k++) {
                const bool mv = mt[k] > S.m[k] + kLazy;
                alpha[k] = mv ? fast_exp2(S.m[k] - mt[k]) : 1.f; /* m = -inf: 0 */
                S.l[k] *= alpha[k];
                S.m[k] = mv ? mt[k] : S.m[k];
            }
#pragma unroll
            for (int g = 0; g < GT; g++) {
                const float al = __shfl_sync(0xffffffffu, alpha[g % C], g / C * R, TG);
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    S.acc[g][e] *= al;
            }
        }
        float p[C];
#pragma unroll
        for (int k = 0; k < C; k++) {
            p[k] = fast_exp2(x[k] - (S.m[k] == -INFINITY ? 0.f : S.m[k]));
            S.l[k] += p[k];
        }
#pragma unroll
        for (int j = 0; j < N; j++) {
            float pj[GT];
#pragma unroll
            for (int g = 0; g < GT; g++) {
                const int v = j * GT + g;
                pj[g] = __shfl_sync(0xffffffffu, p[v % C], v / C * R, TG);
            }
            float vf[EPV];
            Elt<T>::unpack(vs[j * kThreads], vf);
#pragma unroll
            for (int g = 0; g < GT; g++)
#pragma unroll
                for (int e = 0; e < EPV; e++)
                    S.acc[g][e] = fmaf(pj[g], vf[e], S.acc[g][e]);
        }
    }

    /* Issue the copies of this lane's 16 bytes of rows u0 .. u0 + N - 1 of
     * a chunk of n rows into the stage at dk / dv (a stride of kThreads
     * vectors); row_at(u) is row u's element index. Rows at or past n are
     * zero-filled from a valid address (row 0). one_page: 4 consecutive
     * rows share a page (or the rows are contiguous), so one walk places
     * all N. */
    template <typename RowAt>
    static __device__ __forceinline__ void issue(uint4 *dk, uint4 *dv, const T *kb, const T *vb,
                                                 int u0, int n, int r, bool one_page,
                                                 const RowAt &row_at)
    {
        if (one_page && u0 + N <= n) { /* the common case: one walk, fixed offsets */
            const size_t e = row_at(u0) + r * EPV;
#pragma unroll
            for (int j = 0; j < N; j++) {
                cp_async16(dk + j * kThreads, kb + e + j * D, true);
                cp_async16(dv + j * kThreads, vb + e + j * D, true);
            }
        } else {
#pragma unroll
            for (int j = 0; j < N; j++) {
                const bool ok = u0 + j < n;
                const size_t e = (ok ? row_at(u0 + j) : row_at(0)) + r * EPV;
                cp_async16(dk + j * kThreads, kb + e, ok);
                cp_async16(dv + j * kThreads, vb + e, ok);
            }
        }
    }

    /* The end of the tiles: every lane's sums over its row group, then each
     * group's (m, l, acc) to shared memory for the block's log-sum-exp merge
     * (sm_m, sm_l [NG][GT]; sm_acc [NG][GT][D], over the pipeline buffer,
     * so the caller has waited for its last copies). Ends with a barrier. */
    static __device__ __forceinline__ void publish(State &S, int r, int grp, float *sm_m,
                                                   float *sm_l, float *sm_acc)
    {
        const int v0 = r / R * C;
#pragma unroll
        for (int k = 0; k < C; k++)
#pragma unroll
            for (int off = JOFF; off < TG; off <<= 1)
                S.l[k] += __shfl_xor_sync(0xffffffffu, S.l[k], off);
        __syncthreads(); /* every thread is done with the pipeline buffer */
        if (r < JOFF && r % R == 0) /* one lane per head of row 0 */
#pragma unroll
            for (int k = 0; k < C; k++) {
                sm_m[grp * GT + v0 + k] = S.m[k];
                sm_l[grp * GT + v0 + k] = S.l[k];
            }
#pragma unroll
        for (int g = 0; g < GT; g++)
#pragma unroll
            for (int e = 0; e < EPV; e++)
                sm_acc[(grp * GT + g) * D + r * EPV + e] = S.acc[g][e];
        __syncthreads();
    }
};

template <typename T, int D, int GT, bool PAGED, int kStages, bool CL>
__device__ __forceinline__ void attn_v7_body(const AttnArgs<T> &a)
{
    using K7 = V7<T, D, GT>;
    constexpr int N = K7::N, TG = K7::TG, NG = K7::NG, TILE = K7::TILE;
    static_assert(v7_smem_bytes(kStages) == kStages * 2 * N * kThreads * 16, "one stage: N rows");
    static_assert(NG * GT * D * 4 <= v7_smem_bytes(kStages), "merge scratch must fit the buffer");
    /* the pipeline: 2 stages (v7) fit the static 48 KB, 3 (v8) go to dynamic
     * memory; on the 128-byte grid either way (see smem_align) */
    uint4 *buf;
    if constexpr (kStages == 2) {
        __shared__ __align__(128) uint4 sbuf[v7_smem_bytes(kStages) / 16];
        buf = sbuf;
    } else {
        extern __shared__ uint4 v7dyn[];
        buf = smem_align<kSmemAlign>(v7dyn);
    }
    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[NG][GT], sm_l[NG][GT];
    __shared__ int sm_last;
    __shared__ float cl_lse[CL ? GT : 1]; /* v9: this chunk's log2-sum-exps */

    const Work job = work_of(a);
    const int seq = job.seq;
    const int2 hd = head_of<T, GT>(a, job.ht);
    const int kvh = hd.x, qh0 = hd.y;
    int len, t0, t1;
    if (!block_begin<T, D, GT, PAGED, true>(a, tbl, job, qh0, len, t0, t1)) {
        if constexpr (CL)
            if (len > 0 && gridDim.x > 1) /* an empty chunk still joins its cluster */
                attn_finish_cluster<T, D, GT, NG>(a, &sm_m[0][0], &sm_l[0][0],
                                                  reinterpret_cast<float *>(buf), cl_lse,
                                                  seq, qh0, true);
        return;
    }
    const int tid = threadIdx.x, grp = tid / TG, r = tid % TG;
    const int B = a.B, n = t1 - t0;
    const T *kb = kv_base<T, D, PAGED>(a, a.k, seq, kvh);
    const T *vb = kv_base<T, D, PAGED>(a, a.v, seq, kvh);
    /* Element index of token u (within the chunk) of this KV head. */
    auto row_at = [&](int u) -> size_t {
        if (!PAGED)
            return (size_t)(t0 + u) * D;
        const int blk = a.bshift >= 0 ? u >> a.bshift : u / B;
        return pf_page_pool_index(tbl[blk], kvh, u - blk * B, a.hkv, B, D);
    };
    const bool one_page = !PAGED || B % N == 0; /* a lane's N rows share a page */
    /* the copies of tile i into stage slot st */
    auto issue = [&](int i, int st) {
        K7::issue(&buf[(st * 2 + 0) * N * kThreads + tid], &buf[(st * 2 + 1) * N * kThreads + tid],
                  kb, vb, i * TILE + grp * N, n, r, one_page, row_at);
    };
    const int ntiles = (n + TILE - 1) / TILE;
#pragma unroll
    for (int i = 0; i < kStages - 1; i++) {
        if (i < ntiles)
            issue(i, i);
        cp_async_commit();
    }

    float qf[GT][K7::EPV];
    load_q<T, D, GT>(a, seq, qh0, r, qf);
    typename K7::State S;
    K7::reset(S);

    for (int i = 0; i < ntiles; i++) {
        const int st = i % kStages;
        if (i + kStages - 1 < ntiles)
            issue(i + kStages - 1, (i + kStages - 1) % kStages);
        cp_async_commit();
        cp_async_wait<kStages - 1>(); /* tile i has landed (this thread's part) */
        if (i == 0)
            trace_mark(a, kTrReady);
        K7::tile(&buf[(st * 2 + 0) * N * kThreads + tid], &buf[(st * 2 + 1) * N * kThreads + tid],
                 qf, n - i * TILE, r, grp, S);
    }
    cp_async_wait<0>();
    trace_mark(a, kTrStreamed);
    float *sm_acc = reinterpret_cast<float *>(buf); /* [NG][GT][D] */
    K7::publish(S, r, grp, &sm_m[0][0], &sm_l[0][0], sm_acc);
    if constexpr (CL) {
        if (gridDim.x > 1) {
            attn_finish_cluster<T, D, GT, NG>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, cl_lse, seq,
                                              qh0, false);
            return;
        }
    }
    attn_finish<T, D, GT, NG, true>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, &sm_last, job, qh0,
                                    len);
}

/* Versions 7-10: the body above between the timeline's marks. */
template <typename T, int D, int GT, bool PAGED, int kStages, bool CL = false>
__global__ void __launch_bounds__(kThreads) attn_v7(const AttnArgs<T> a)
{
    trace_mark(a, kTrStart);
    trace_mark(a, kTrSm);
    attn_v7_body<T, D, GT, PAGED, kStages, CL>(a);
    trace_mark(a, kTrEnd);
}

/* Version 11: version 7's pipeline and arithmetic in a persistent kernel
 * whose blocks balance the work among themselves at run time.
 *
 * Why. The block timeline of version 7 on llama (docs/gpu-journal.md,
 * sixth session) shows every block starting within 0.2 us, but the SMs
 * finishing over 40 us: a fifth of them are done 25-30 us (10%) before the
 * median and then idle, while the last block ends 15 us after the median. The
 * early SMs are not the ones with fewer blocks: equal work per block does
 * not end together. Smaller blocks would let the hardware balance them,
 * but each block start costs ~3.7 us before its first K/V arrive, and
 * measured finer splits were slower (0.2553 -> 0.2743 ms at 8 chunks).
 * (Measured since, gpu/stream_probe.cu: a pure copy of v7's shape ends
 * as raggedly and still streams at 0.98 of the read bandwidth, and a
 * balanced one is no faster; the time v7 loses is in its consumption of
 * each stage, not in the ragged end. v11 is kept as that measurement.)
 *
 * How. The grid is at most one wave (plan->sm_count x blocks_per_sm
 * blocks). A work item is one unit of the plan's work list for one head
 * tile (a chunk of a sequence, one KV head's query heads). Its tokens are
 * handed out kPiece (64) at a time from a claim word in the workspace:
 * {tokens claimed (low 32 bits), visitors (high 32)}.
 *   - Block b first owns item b, then the next unowned item from a
 *     counter, longest first (the list's order), taken when the current
 *     visit starts. An owner takes its first two pieces blindly (it is the
 *     item's first visitor, so they are tokens 0 .. 127) and each later one
 *     by an atomic add, one piece ahead of use, so the add's latency hides
 *     behind a piece of streaming; the copies run on from one piece into
 *     the next without draining the pipeline. Thread 0 claims and
 *     publishes the pieces in shared memory, one barrier a piece.
 *   - When no item is left unowned, a block steals: it scans the claim
 *     words for the item with the most tokens left (at least two pieces)
 *     and joins it by a compare-and-swap that takes two pieces and counts a
 *     visitor (at most kVisits, so the partials have room), then claims on
 *     like the owner. Owner and thieves share the item's one cursor.
 *   - Each visit (a block's stretch on one item) ends in one normalised
 *     partial output in a slot of its (sequence, head tile), unless it
 *     took every token of the sequence (then it writes the output). The
 *     block whose tokens complete the sequence (a count in the workspace)
 *     merges the partials by log-sum-exp, as version 5 does.
 *   - The last block to leave resets every counter, so the workspace is
 *     zero again for the next run.
 * No block ever waits for another, so the grid need not be resident to
 * finish. The price: which block takes which tokens depends on timing, so
 * the sums are added in a different order from run to run and the output
 * is not bitwise reproducible (it is within rounding of the others). */
constexpr int kVisits = PF_GPU_STEAL_VISITS;
constexpr int kPiece = PF_GPU_STEAL_PIECE;
constexpr int kMaxPieces = PF_GPU_MAX_CHUNK / kPiece; /* a visit's, at most */

/* Work item i of version 11: its unit of the work list, the sequence's
 * length as the kernel reads it (up to the chunks planned for it and the
 * plan's bound) and the tokens of the item's chunk (<= 0: none). */
struct Item {
    int seq, chunk, len, n;
};
template <typename T> __device__ __forceinline__ Item item_of(const AttnArgs<T> &a, int i)
{
    const int2 w = a.work[i / a.htiles];
    /* version 11 plans no tail: span 1 */
    const int chunk = PF_GPU_WORK_CHUNK(w.y), nch = PF_GPU_WORK_NCH(w.y);
    const int len = min(min(__ldg(a.lens + w.x), nch * a.chunk), a.lim);
    return {w.x, chunk, len, min(len, chunk * a.chunk + a.chunk) - chunk * a.chunk};
}

template <typename T, int D, int GT, bool PAGED>
__global__ void __launch_bounds__(kThreads) attn_steal(const AttnArgs<T> a)
{
    using K7 = V7<T, D, GT>;
    constexpr int N = K7::N, TG = K7::TG, NG = K7::NG, TILE = K7::TILE;
    constexpr int TP = kPiece / TILE; /* tiles a piece */
    static_assert(kPiece % TILE == 0, "a piece is whole tiles");
    static_assert(NG * GT * D * 4 <= v7_smem_bytes(2), "merge scratch must fit the buffer");
    __shared__ __align__(128) uint4 buf[v7_smem_bytes(2) / 16];
    __shared__ int tbl[kTableCache];
    __shared__ float sm_m[NG][GT], sm_l[NG][GT];
    /* the visit's piece starts in claim order: -1 none */
    __shared__ int sm_piece[kMaxPieces + 2];
    __shared__ int sm_item, sm_first, sm_slot, sm_int;
    __shared__ float sm_red[kThreads / 32];
    __shared__ int sm_red_i[kThreads / 32];

    trace_mark(a, kTrStart);
    trace_mark(a, kTrSm);
    if (blockIdx.x == 0 && a.work[-1].x != kWorkMagic)
        __trap();
    const int tid = threadIdx.x, grp = tid / TG, r = tid % TG;
    const int pairs = a.nseq * a.htiles;
    unsigned *const next_item = a.counters, *const exited = a.counters + 1;
    unsigned *const done = a.counters + 2, *const taken = done + pairs;
    bool traced = false, owning = true;
    unsigned next = 0; /* thread 0, owning: the item taken for after this one */

    int item = blockIdx.x < (unsigned)a.items ? (int)blockIdx.x : -1;
    int first = 0; /* the visit's first piece; an owner's is token 0 */
    while (item >= 0) {
        /* ---- one visit of `item`, starting at piece `first` ---- */
        const Item it = item_of(a, item);
        const int seq = it.seq, chunk = it.chunk, len = it.len, n = it.n, ht = item % a.htiles;
        const int2 hd = head_of<T, GT>(a, ht);
        const int kvh = hd.x, qh0 = hd.y;
        const int t0 = chunk * a.chunk;
        if (PAGED) { /* the chunk's slice of the table, while the length is read */
            const int b0 = t0 / a.B;
            const int nb = min(a.chunk / a.B, a.maxb - b0);
            const int *row = a.tables + (size_t)seq * a.maxb + b0;
            for (int i = tid; i < nb; i += kThreads)
                cp_async4(&tbl[i], row + i);
            cp_async_commit();
        }
        unsigned long long *const cw = a.claims + item;
        /* thread 0: the claim in flight (piece k + 1 while piece k streams;
         * n when there is none) and the tokens this visit has taken */
        int pend = n, mine = 0;
        if (tid == 0) {
            /* A visit starts with two pieces, [first, first + 2 kPiece): the
             * owner, its item's first visitor, takes them blindly (nobody
             * can have claimed before it), a thief took them by its
             * compare-and-swap; piece 2 is claimed now, used a piece later.
             * The owner also takes its next item now, so that neither
             * claim's round trip falls between two visits. */
            if (owning) {
                atomicAdd(cw, (1ull << 32) | (unsigned long long)(2 * kPiece));
                next = atomicAdd(next_item, 1u) + gridDim.x;
            }
            const int p0 = first < n ? first : -1, p1 = first + kPiece < n ? first + kPiece : -1;
            mine = (p0 >= 0 ? min(kPiece, n - p0) : 0) + (p1 >= 0 ? min(kPiece, n - p1) : 0);
            if (p1 >= 0)
                pend = (int)(unsigned)atomicAdd(cw, (unsigned long long)kPiece);
            sm_piece[0] = p0;
            sm_piece[1] = p1;
        }
        if (PAGED)
            cp_async_wait<0>();
        __syncthreads();
        if (sm_piece[0] < 0) { /* nothing here (the device length is shorter) */
            if (len <= 0 && owning)
                write_zeros<T, D, GT>(a, seq, qh0, chunk, true);
        } else {
            const T *kb = kv_base<T, D, PAGED>(a, a.k, seq, kvh);
            const T *vb = kv_base<T, D, PAGED>(a, a.v, seq, kvh);
            const int B = a.B;
            auto row_at = [&](int u) -> size_t {
                if (!PAGED)
                    return (size_t)(t0 + u) * D;
                const int blk = a.bshift >= 0 ? u >> a.bshift : u / B;
                return pf_page_pool_index(tbl[blk], kvh, u - blk * B, a.hkv, B, D);
            };
            const bool one_page = !PAGED || B % N == 0;
            /* tile j of the visit: tile j % TP of piece j / TP; -1 when
             * that piece was not had or the tile starts past the end. Thread
             * 0 publishes piece k + 1 when piece k starts, and a barrier
             * makes it visible before any thread reads it (the last tile of
             * piece k). A form that spun on the slot instead of the barrier
             * (sixth session) measured no faster (llama 0.919, mixed 0.809;
             * with the barrier 0.916-0.918 and 0.816-0.893 in other calls),
             * and it is a data race, which racecheck reports. */
            auto tile_at = [&](int j) -> int {
                const int p = sm_piece[j / TP];
                const int u = p + (j % TP) * TILE;
                return p >= 0 && u < n ? u : -1;
            };
            auto issue = [&](int u, int st) {
                K7::issue(&buf[(st * 2 + 0) * N * kThreads + tid],
                          &buf[(st * 2 + 1) * N * kThreads + tid], kb, vb, u + grp * N, n, r,
                          one_page, row_at);
            };
            issue(tile_at(0), 0);
            cp_async_commit();
            float qf[GT][K7::EPV];
            load_q<T, D, GT>(a, seq, qh0, r, qf);
            typename K7::State S;
            K7::reset(S);
            for (int j = 0;; j++) {
                if (j % TP == 0 && j > 0) {
                    /* piece k = j / TP starts: publish piece k + 1 (claimed
                     * during piece k - 1), claim piece k + 2 */
                    if (tid == 0) {
                        const int k = j / TP, had = pend < n ? pend : -1;
                        sm_piece[k + 1] = had;
                        mine += had >= 0 ? min(kPiece, n - had) : 0;
                        pend = had >= 0 ? (int)(unsigned)atomicAdd(cw, (unsigned long long)kPiece)
                                        : n;
                    }
                    __syncthreads();
                }
                const int u = tile_at(j), un = tile_at(j + 1);
                if (un >= 0)
                    issue(un, (j + 1) & 1);
                cp_async_commit();
                cp_async_wait<1>(); /* tile j has landed (this thread's part) */
                if (!traced) {
                    trace_mark(a, kTrReady);
                    traced = true;
                }
                K7::tile(&buf[((j & 1) * 2 + 0) * N * kThreads + tid],
                         &buf[((j & 1) * 2 + 1) * N * kThreads + tid], qf, n - u, r, grp, S);
                if (un < 0)
                    break;
            }
            cp_async_wait<0>();
            trace_mark(a, kTrStreamed);
            float *sm_acc = reinterpret_cast<float *>(buf); /* [NG][GT][D] */
            K7::publish(S, r, grp, &sm_m[0][0], &sm_l[0][0], sm_acc);

            /* ---- the visit's partial, and the merge if it completes the
             * sequence's tokens ---- */
            if (tid == 0)
                sm_int = mine;
            __syncthreads();
            mine = sm_int;
            const int pair = seq * a.htiles + ht;
            const bool whole = mine == len; /* every token of the sequence */
            if (!whole && tid == 0)
                sm_slot = (int)atomicAdd(&taken[pair], 1u);
            __syncthreads();
            write_block<T, D, GT, NG>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, seq, qh0, whole,
                                      a.slots, sm_slot);
            if (!whole) {
                __threadfence();
                __syncthreads();
                if (tid == 0)
                    sm_int = atomicAdd(&done[pair], (unsigned)mine) + (unsigned)mine == (unsigned)len;
                __syncthreads();
                if (sm_int) { /* the sequence's last tokens: merge every partial */
                    __threadfence();
                    merge_partials<T, D>(a, seq, qh0, GT, a.slots, (int)__ldcg(&taken[pair]));
                }
            }
        }

        /* ---- the next visit: an unowned item, else a steal ---- */
        __syncthreads(); /* everyone is done with the shared state */
        if (owning && tid == 0)
            sm_item = next < (unsigned)a.items ? (int)next : -1;
        __syncthreads();
        if (owning && sm_item >= 0) {
            item = sm_item;
            first = 0;
            continue;
        }
        owning = false;
        /* A steal: every thread scans a share of the items for the most
         * tokens left to claim (visitors 1 .. kVisits - 1, at least two
         * pieces left), the block takes the best, and thread 0 joins it by
         * a compare-and-swap (a piece and a visitor); lost races rescan. */
        item = -1;
        for (int attempt = 0; attempt < 4 && item < 0; attempt++) {
            int best = -1;
            float left = 0.f;
            for (int i = tid; i < a.items; i += kThreads) {
                const unsigned long long c = __ldcg(a.claims + i);
                const unsigned vis = (unsigned)(c >> 32);
                if (vis == 0 || vis >= (unsigned)kVisits)
                    continue;
                const float rest = (float)(item_of(a, i).n - (int)(unsigned)c);
                if (rest >= 2 * kPiece && rest > left) {
                    left = rest;
                    best = i;
                }
            }
            /* the block's best: warps, then warp 0 */
            for (int off = 16; off > 0; off >>= 1) {
                const float ol = __shfl_xor_sync(0xffffffffu, left, off);
                const int ob = __shfl_xor_sync(0xffffffffu, best, off);
                if (ol > left || (ol == left && ob > best)) {
                    left = ol;
                    best = ob;
                }
            }
            if (tid % 32 == 0) {
                sm_red[tid / 32] = left;
                sm_red_i[tid / 32] = best;
            }
            __syncthreads();
            if (tid == 0) {
                for (int i = 1; i < kThreads / 32; i++)
                    if (sm_red[i] > left || (sm_red[i] == left && sm_red_i[i] > best)) {
                        left = sm_red[i];
                        best = sm_red_i[i];
                    }
                int got = -1;
                if (best >= 0) {
                    const int ni = item_of(a, best).n;
                    unsigned long long *c = a.claims + best;
                    unsigned long long old = __ldcg(c);
                    for (;;) {
                        const unsigned vis = (unsigned)(old >> 32);
                        const int at = (int)(unsigned)old;
                        if (vis == 0 || vis >= (unsigned)kVisits || ni - at < 2 * kPiece)
                            break;
                        const unsigned long long seen = atomicCAS(
                            c, old, old + ((1ull << 32) | (unsigned long long)(2 * kPiece)));
                        if (seen == old) {
                            got = at;
                            break;
                        }
                        old = seen;
                    }
                }
                sm_item = got >= 0 ? best : -1;
                sm_first = got;
                sm_int = best; /* -1: nothing worth stealing anywhere */
            }
            __syncthreads();
            item = sm_item;
            first = sm_first;
            if (sm_int < 0)
                break;
            __syncthreads(); /* sm_int is read before the next scan writes it */
        }
    }
    trace_mark(a, kTrEnd);

    /* the last block out resets the counters and claim words for the next run */
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        sm_int = atomicAdd(exited, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (sm_int) {
        __threadfence();
        for (int i = tid; i < a.items; i += kThreads)
            a.claims[i] = 0ull;
        for (int i = tid; i < 2 + 2 * pairs; i += kThreads)
            a.counters[i] = 0u;
    }
}

/* Split-KV merge: one block per (sequence, query head), one thread per d. */
template <typename T>
__global__ void merge_kernel(const float *__restrict__ part_o, const float *__restrict__ part_lse,
                             const int *__restrict__ lens, T *__restrict__ out, int hq, int D,
                             int chunk, int splits, int lim)
{
    const int rowo = blockIdx.x;
    const int seq = rowo / hq;
    const int len = min(lens[seq], lim);
    const int n = len > 0 ? (len + chunk - 1) / chunk : 0; /* 0: zeros below */
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
        out[(size_t)rowo * D + d] = Elt<T>::store(n ? O / L : 0.f);
    }
}

template <typename T> using AttnFn = void (*)(const AttnArgs<T>);
template <typename T> using TmaFn = void (*)(const AttnArgs<T>, const TmaMaps);

/* A kernel and the dynamic shared memory it is launched with; versions 15
 * and 16 also name their copy-engine kernel (fn is then version 12's, for
 * the shapes the engine's boxes do not fit: see launch_t). */
template <typename T> struct Kern {
    AttnFn<T> fn;
    int smem;
    TmaFn<T> tma = nullptr;
    int tma_smem = 0;
};

/* Let fn use `bytes` of dynamic shared memory (past the default 48 KB);
 * with max_carveout also ask for the largest shared-memory carveout of the
 * L1 (version 6, as measured: its 2 blocks of 98 KB need most of it). Left
 * alone (version 8), the driver picks the smallest carveout that holds the
 * kernel's occupancy. */
template <typename F> cudaError_t allow_smem(F fn, int bytes, bool max_carveout)
{
    cudaError_t e = cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if (e == cudaSuccess && max_carveout)
        e = cudaFuncSetAttribute(fn, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared);
    return e;
}

/* Dynamic shared memory that leaves room for 4 blocks of fn an SM and no
 * more (0 if 4 is already the most): version 13 keeps version 12's 4 (its
 * plan, its one wave and the measurements assume them). At D = 128 its
 * 100-102 registers already allow only 4 (Nsight Compute's block limit),
 * but its 35-37 KB of shared memory would allow 5, and at D = 64 (70-80
 * registers, 18-20 KB) both allow more; the first form of it, at 94
 * registers, ran 5 an SM (docs/gpu-journal.md, ninth session). A launch
 * reserves the bytes; the kernel does not use them. The occupancy query sees the same
 * bytes, so the planner counts 4 too. 0 on any error (the launch then
 * shows it). */
template <typename F> int reserve_for_four(F fn)
{
    cudaFuncAttributes fa;
    int dev = 0, per_sm = 0, reserved = 0;
    if (cudaFuncGetAttributes(&fa, fn) != cudaSuccess || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) !=
            cudaSuccess ||
        cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev) !=
            cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    /* 5 blocks fit while 5 (static + dynamic + reserved) <= per_sm */
    const int need = per_sm / 5 + 1 - reserved - (int)fa.sharedSizeBytes;
    const int bytes = need > 0 ? (need + kSmemAlign - 1) / kSmemAlign * kSmemAlign : 0;
    if (bytes && (int)fa.sharedSizeBytes + bytes > 48 * 1024 &&
        allow_smem(fn, bytes, false) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return bytes;
}

/* Versions 6, 12, 13, 14 and 17-20 (attn_mma). Version 6: STAGES 3 (per
 * warp two tiles being copied while one is used; STAGES 2, for 3 blocks an
 * SM at D = 128, spilled registers at the bound that needs and ran at half
 * the speed, docs/gpu-journal.md). Version 12: 8-token tiles, 2 stages, 32 KB a
 * block, 4 blocks an SM as version 7; 13: 12 with whole-quad mma, held to
 * 4 blocks an SM (reserve_for_four); 14: 12 with a head tile a warp (MH);
 * 17: 12 with the L2 prefetch hint (L2P); 18: 6 with 12's lazy rescale and
 * fixed-offset copy (two walks a tile at 8-token pages), which is cuDNN's
 * decode shape: Nsight Compute (fifteenth session) has cuDNN's SDPA
 * kernel in 128-thread blocks of 86 KB and 183 registers, 2 an SM,
 * streaming llama at 91.8% of the DRAM's peak against v12's 90.0% on
 * contiguous KV. v18 (bf16 D = 128: 202-220 registers, 2 blocks an SM)
 * ran llama as fast as cuDNN on one machine start (246.6 us against
 * 246.9), long slower than v12 (two waves: our chunks stop at 4096
 * tokens). In `pagefault bench` over four machine starts its naive pass
 * led v12's on batch and mixed, its paged pass did not lead v12's, and it
 * trailed by 1.5-2.3 points at 8-token pages: not version 0 (docs/gpu.md).
 * 19 and 20: 12 and 18 with bf16's weights P fed to P V as one term (P1),
 * as FlashAttention, FlashInfer and cuDNN feed them: 16 mma a tile fewer
 * (of 40 for v12 at D = 128) and no second rounding; the CPU check allows
 * for the coarser weights (pf_gpu_version_p_eps). fp16 runs 12's and 18's
 * arithmetic unchanged in them.
 * The attributes are set once per kernel (first use, a thread-safe C++
 * static); a refusal shows as the launch's error. fp32 has no 16-bit mma:
 * it runs version 5's kernel with v6's early table read. */
template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH = false, int L2P = 0, bool P1 = false>
Kern<T> pick_mma()
{
    if constexpr (std::is_same<T, float>::value) {
        return {attn_v2<T, D, GT, PAGED, 4, 2, true, true, true>, 0};
    } else {
        /* one-term weights change bf16's arithmetic only: fp16 gets its
         * base version's kernel itself, not a second copy of it */
        constexpr bool one = P1 && std::is_same<T, __nv_bfloat16>::value;
        constexpr auto fn = attn_mma<T, D, GT, PAGED, STAGES, TOK, LAZY, QUAD, MH, L2P, one>;
        if constexpr (mma_static(D, STAGES, TOK)) {
            if constexpr (QUAD) {
                static const int bytes = reserve_for_four(fn);
                return {fn, bytes};
            }
            return {fn, 0};
        } else {
            constexpr int bytes = v6_smem_bytes(D, STAGES, TOK) + kSmemAlign;
            static const cudaError_t set = allow_smem(fn, bytes, true);
            (void)set;
            return {fn, bytes};
        }
    }
}

/* Versions 15 and 16: version 12 with the copy engine, 2 or 3 stages (3:
 * 48 KB a block, dynamic, 4 blocks an SM as version 12's 32 KB). fp32 runs
 * version 12's fallback. The driver's tensor-map encoder is looked up on
 * the first pick, which plan_make's occupancy query makes, so a run does
 * not query the driver. */
template <typename T, int D, int GT, bool PAGED, int STAGES> Kern<T> pick_tma()
{
    Kern<T> k = pick_mma<T, D, GT, PAGED, 2, 8, true, false>();
    if constexpr (!std::is_same<T, float>::value) {
        (void)tma_encoder();
        constexpr auto fn = attn_tma<T, D, GT, PAGED, STAGES>;
        k.tma = fn;
        if constexpr (!mma_static(D, STAGES, 8)) {
            constexpr int bytes = v6_smem_bytes(D, STAGES, 8) + kTmaAlign;
            static const cudaError_t set = allow_smem(fn, bytes, true);
            (void)set;
            k.tma_smem = bytes;
        }
    }
    return k;
}

/* K's and V's tensor maps for versions 15 and 16: 4-D, innermost first
 * (D, rows, KV head, outer), where rows and outer are (B, frame) for the
 * pool and (capacity, sequence) for the naive buffers; a box is 8 rows of
 * 64 elements (128 bytes, the 128-byte swizzle's width). The pool's frame
 * count is not part of the shape: its extent is INT_MAX frames, so the
 * engine's bounds check never clips a frame the table names (the table is
 * trusted as in every version). The last pair of maps is kept per host
 * thread: the encoding is pure host work, but a run repeated on the same
 * buffers skips it. PF_ERR_UNAVAILABLE without the driver's encoder,
 * PF_ERR_ARG when it refuses the buffers (an address off 16 bytes). */
template <typename T>
int tma_maps(const pf_gpu_attn_plan *p, const void *k, const void *v, const TmaMaps **out)
{
    struct Cache {
        TmaMaps maps;
        const void *k, *v;
        pf_gpu_attn_shape shape;
        int paged;
    };
    static thread_local Cache c = {};
    const pf_gpu_attn_shape *s = &p->shape;
    if (c.k == k && c.v == v && c.paged == p->paged && !memcmp(&c.shape, s, sizeof *s)) {
        *out = &c.maps;
        return PF_OK;
    }
    const EncodeTiledFn enc = tma_encoder();
    if (!enc)
        return PF_ERR_UNAVAILABLE;
    const cuuint64_t es = sizeof(T), D = (cuuint64_t)s->head_dim;
    const cuuint64_t rows = (cuuint64_t)(p->paged ? s->block_size : s->naive_cap);
    const cuuint64_t heads = (cuuint64_t)s->num_kv_heads;
    const cuuint64_t outer = (cuuint64_t)(p->paged ? INT_MAX : s->num_seqs);
    const cuuint64_t dim[4] = {D, rows, heads, outer};
    const cuuint64_t stride[3] = {D * es, rows * D * es, heads * rows * D * es};
    const cuuint32_t box[4] = {(cuuint32_t)kTmaBoxElts, 8, 1, 1}, step[4] = {1, 1, 1, 1};
    const CUtensorMapDataType dt = std::is_same<T, __half>::value
                                       ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                       : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    c.k = c.v = nullptr; /* invalid until both maps are made */
    for (int i = 0; i < 2; i++)
        if (enc(i ? &c.maps.v : &c.maps.k, dt, 4, const_cast<void *>(i ? v : k), dim, stride, box,
                step, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
            return PF_ERR_ARG;
    c.k = k;
    c.v = v;
    c.shape = *s;
    c.paged = p->paged;
    *out = &c.maps;
    return PF_OK;
}

/* Versions 7-10: one kernel, 2, 3 or 4 pipeline stages of 16 KB, the
 * merge in place (7, 8) or in a cluster (9: 2 stages; 10: 4). */
template <typename T, int D, int GT, bool PAGED, int STAGES, bool CL = false> Kern<T> pick_v7()
{
    if constexpr (STAGES == 2) {
        return {attn_v7<T, D, GT, PAGED, STAGES, CL>, 0}; /* static shared memory */
    } else {
        constexpr int bytes = v7_smem_bytes(STAGES) + kSmemAlign;
        static const cudaError_t set =
            allow_smem(attn_v7<T, D, GT, PAGED, STAGES, CL>, bytes, false);
        (void)set;
        return {attn_v7<T, D, GT, PAGED, STAGES, CL>, bytes};
    }
}

/* The kernel for (version, element type, D, GQA tile, paged). */
template <typename T, int D, int GT, bool PAGED> Kern<T> pick_v(int version)
{
    switch (version) {
    case 1:
        return {prefetch_on(PAGED) ? attn_v1<T, D, GT, PAGED, true> : attn_v1<T, D, GT, PAGED, false>,
                0};
    case 2: return {attn_v2<T, D, GT, PAGED, 2, 4, false, false>, 0};
    case 3: return {attn_v2<T, D, GT, PAGED, 2, 4, true, false>, 0};
    case 4: return {attn_v2<T, D, GT, PAGED, 4, 2, true, false>, 0};
    case 5: return {attn_v2<T, D, GT, PAGED, 4, 2, true, true>, 0};
    case 6: return pick_mma<T, D, GT, PAGED, 3, 16, false, false>();
    case 7: return pick_v7<T, D, GT, PAGED, 2>();
    case 8: return pick_v7<T, D, GT, PAGED, 3>();
    case 9: return pick_v7<T, D, GT, PAGED, 2, true>();
    case 10: return pick_v7<T, D, GT, PAGED, 4, true>();
    case 11: return {attn_steal<T, D, GT, PAGED>, 0};
    case 12: return pick_mma<T, D, GT, PAGED, 2, 8, true, false>();
    case 13: return pick_mma<T, D, GT, PAGED, 2, 8, true, true>();
    case 14: return pick_mma<T, D, GT, PAGED, 2, 8, true, false, true>();
    case 15: return pick_tma<T, D, GT, PAGED, 2>();
    case 16: return pick_tma<T, D, GT, PAGED, 3>();
    case 17: return pick_mma<T, D, GT, PAGED, 2, 8, true, false, false, 128>();
    case 18: return pick_mma<T, D, GT, PAGED, 3, 16, true, false>();
    /* pf_gpu_version_one_term_p: the check's allowance follows these two */
    case 19: return pick_mma<T, D, GT, PAGED, 2, 8, true, false, false, 0, true>();
    default: return pick_mma<T, D, GT, PAGED, 3, 16, true, false, false, 0, true>(); /* 20 */
    }
}

template <typename T, int D, bool PAGED> Kern<T> pick_g(int gt, int version)
{
    switch (gt) {
    case 8: return pick_v<T, D, 8, PAGED>(version);
    case 4: return pick_v<T, D, 4, PAGED>(version);
    case 2: return pick_v<T, D, 2, PAGED>(version);
    default: return pick_v<T, D, 1, PAGED>(version);
    }
}

template <typename T, bool PAGED> Kern<T> pick_d(int D, int gt, int version)
{
    return D == 64 ? pick_g<T, 64, PAGED>(gt, version) : pick_g<T, 128, PAGED>(gt, version);
}

template <typename T> Kern<T> pick(const pf_gpu_attn_shape *s, int gt, int paged, int version)
{
    return paged ? pick_d<T, true>(s->head_dim, gt, version)
                 : pick_d<T, false>(s->head_dim, gt, version);
}

template <typename T>
int launch_t(const pf_gpu_attn_plan *p, const void *q, const void *k, const void *v,
             const int *tables, const int *lens, void *out, void *ws, cudaStream_t st,
             unsigned long long *trace)
{
    const pf_gpu_attn_shape *s = &p->shape;
    const int D = s->head_dim;
    const int htiles = pf_gpu__plan_head_tiles(p);
    const int items = p->units * htiles;
    /* a work list: 1-D (v11: one wave at most, the blocks share the items
     * out themselves); else (chunk, head tile, sequence) */
    const dim3 grid = p->units ? dim3((unsigned)pf_gpu__plan_blocks(p))
                               : dim3((unsigned)p->splits, (unsigned)htiles, (unsigned)s->num_seqs);
    pf_gpu_ws_layout wl;
    pf_gpu__ws_layout(p, &wl);
    char *const w = (char *)ws;
    AttnArgs<T> a;
    a.q = (const T *)q;
    a.k = (const T *)k;
    a.v = (const T *)v;
    a.tables = tables;
    a.lens = lens;
    a.out = (T *)out;
    a.part_o = (float *)w;
    a.part_lse = w ? (float *)(w + wl.lse) : nullptr;
    a.counters = w ? (unsigned *)(w + wl.counters) : nullptr;
    a.work = p->units ? (const int2 *)(w + wl.work) + 1 : nullptr; /* past the header */
    a.claims = w ? (unsigned long long *)(w + wl.claims) : nullptr;
    a.items = items;
    a.nseq = s->num_seqs;
    a.slots = wl.slots;
    a.htiles = htiles;
    a.trace = trace;
    a.hq = s->num_q_heads;
    a.hkv = s->num_kv_heads;
    a.B = s->block_size;
    a.bshift = log2_exact(s->block_size);
    a.maxb = s->max_blocks_per_seq;
    a.cap = s->naive_cap;
    a.chunk = p->chunk;
    a.splits = p->splits;
    a.tail = p->tail;
    a.lim = p->max_len;
    a.qscale = s->scale * 1.4426950408889634f; /* log2(e): exp becomes exp2 */
    const Kern<T> kern = pick<T>(s, p->group_tile, p->paged, p->version);
    if (pf_gpu_version_cluster(p->version) && p->splits > 1) {
        /* v9, v10: a sequence's chunks (grid x) are one cluster */
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(kThreads);
        cfg.dynamicSmemBytes = (size_t)kern.smem;
        cfg.stream = st;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = (unsigned)p->splits;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        cfg.attrs = at;
        cfg.numAttrs = 1;
        return pf_gpu_cuda_err((int)cudaLaunchKernelEx(&cfg, kern.fn, a));
    }
    const TmaMaps *maps = nullptr;
    int rc;
    if (kern.tma && tma_fits(s, p->paged) && tma_maps<T>(p, k, v, &maps) == PF_OK) {
        void *params[2] = {&a, const_cast<TmaMaps *>(maps)};
        rc = launch_kernel((const void *)kern.tma, grid, kern.tma_smem, st, params);
    } else { /* version 12 (what versions 15 and 16 fall back to) or any other */
        void *params[1] = {&a};
        rc = launch_kernel((const void *)kern.fn, grid, kern.smem, st, params);
    }
    if (rc != PF_OK || p->splits == 1 || pf_gpu_version_fused(p->version))
        return rc;
    merge_kernel<T><<<(unsigned)(s->num_seqs * s->num_q_heads), D, 0, st>>>(
        a.part_o, a.part_lse, lens, (T *)out, a.hq, D, p->chunk, p->splits, p->max_len);
    return pf_gpu_cuda_err((int)cudaGetLastError());
}

template <typename T> int occupancy_t(const pf_gpu_attn_shape *s, int paged, int version)
{
    int n = 0;
    const Kern<T> kern =
        pick<T>(s, pf_gpu_group_tile(s->num_q_heads / s->num_kv_heads), paged, version);
    const bool tma = kern.tma && tma_fits(s, paged);
    const cudaError_t e =
        tma ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern.tma, kThreads,
                                                            (size_t)kern.tma_smem)
            : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kern.fn, kThreads,
                                                            (size_t)kern.smem);
    /* the planning thread's runs then find their driver function cached */
    (void)driver_function(tma ? (const void *)kern.tma : (const void *)kern.fn);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

} /* namespace */

namespace PF_KERN_HIDDEN pf_kern {

/* One element type's instances of the templates above: launch_t (a run's
 * launch, the split-KV merge after it where the kernel does not merge in
 * place) and occupancy_t (blocks an SM, for the planner). */
struct Dtype {
    int (*launch)(const pf_gpu_attn_plan *p, const void *q, const void *k, const void *v,
                  const int *tables, const int *lens, void *out, void *ws, cudaStream_t st,
                  unsigned long long *trace);
    int (*occupancy)(const pf_gpu_attn_shape *s, int paged, int version);
};

/* Each defined by its own translation unit: gpu/kernels_f32.cu, kernels_f16.cu,
 * kernels_bf16.cu. */
extern const Dtype kF32, kF16, kBf16;

} /* namespace pf_kern */
