/* gpu/kernels/common.cuh - the pieces every version shares: the element types (Elt), the
 * argument block every kernel takes (AttnArgs), reading the work list
 * (work_of), a head tile's heads (head_of), where a sequence's rows start
 * (kv_base), the zeros of an empty sequence (write_zeros).
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
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
namespace {

constexpr int kThreads = PF_GPU_THREADS;
/* table entries one chunk spans: chunks are whole pages starting on a page
 * boundary, at most PF_GPU_CHUNK_MAX_PAGES of them (pf_gpu_chunk_max_tokens) */
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
    int pack;     /* version 33's pack (gpu/host.c, "packing"; 0: none):
                     block i of a head tile streams units i pack .. i pack
                     + pack - 1 of the work list, each a whole sequence, a
                     warp each in turn (in the padding before `work`: the
                     argument block stays 160 bytes)                       */
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

static_assert(sizeof(AttnArgs<__half>) == 160, "the argument block launch_probe.cu times");

/* What one thread block works on: a chunk of one sequence for one head
 * tile, and the bound its length is read up to. In grid order (no work
 * list) blockIdx is (chunk, head tile, sequence). With a work list (host.c,
 * "the work list") the grid is 1-D: blockIdx.x / htiles picks the unit
 * (an entry {sequence, PF_GPU_WORK_Y(chunk, span, the chunks the plan gave
 * that sequence)}: `span` chunks from `chunk`, one unless the plan has a
 * tail; version 33: the first of the block's `pack` units) and
 * blockIdx.x % htiles the head tile, so the hardware, which
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
    const int b = (int)blockIdx.x / a.htiles;
    const int i = a.pack ? b * a.pack : b; /* version 33: the pack's first unit */
    if (blockIdx.x == 0 && a.work[-1].x != kWorkMagic)
        __trap();
    const int2 w = a.work[i];
    return {w.x, PF_GPU_WORK_CHUNK(w.y), (int)blockIdx.x - b * a.htiles,
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

} /* namespace */
