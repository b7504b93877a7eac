/* gpu/kernels.cuh - the decode-attention kernels (naive and paged, numbered
 * versions 1-33 in llm.c's manner, docs/gpu.md has each one's figures), the
 * split-KV merge, and the host templates that pick and launch them.
 *
 * CUDA C++, inside gpu/ only. Included by the three translation units that
 * instantiate it, one an element type (gpu/kernels_f32.cu, kernels_f16.cu,
 * kernels_bf16.cu: nvcc compiles them at once, where one file of all three
 * took the build's longest step), and by gpu/kernels.cu, which holds the
 * host side they share (the driver's launch, its caches), the append kernel,
 * the read-bandwidth probe and the C entry points of gpu/gpu_internal.h.
 * The kernels are in gpu/kernels/, a file a family, in the order the
 * versions were written: common.cuh (what all share), v1.cuh, v2.cuh
 * (versions 2-5 and the shared finish), mma.cuh (6 and 12-33, tensor
 * cores; 15 and 16, the copy engine), v7.cuh (7-11), launch.cuh (the host
 * side: pick, launch, occupancy). Everything there is in an unnamed
 * namespace: each unit keeps the instances it makes to itself, and hands
 * them out through its pf_kern::Dtype table (the end of this file).
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
 * and 12-33 move the scores and the V sums to tensor cores (attn_mma; 15
 * and 16, attn_tma, bring their tiles by Hopper's copy engine). Same
 * tiling, same order of floating-point operations: on the same data both
 * give bitwise-equal outputs, so their comparison isolates the gather.
 */
#pragma once

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/v1.cuh"
#include "gpu/kernels/v2.cuh"
#include "gpu/kernels/mma.cuh"
#include "gpu/kernels/v7.cuh"
#include "gpu/kernels/launch.cuh"

namespace PF_KERN_HIDDEN pf_kern {

/* One element type's instances of the templates above: launch_t (a run's
 * launch, the split-KV merge after it where the kernel does not merge in
 * place) and occupancy_t (blocks an SM, for the planner). */
struct Dtype {
    int (*launch)(const pf_gpu_attn_plan *p, const void *q, const void *k, const void *v,
                  const int *tables, const int *lens, void *out, void *ws, cudaStream_t st,
                  unsigned long long *trace);
    int (*occupancy)(const pf_gpu_attn_shape *s, int paged, int version);
    void (*prepare)(const pf_gpu_attn_plan *p);
};

/* Each defined by its own translation unit: gpu/kernels_f32.cu, kernels_f16.cu,
 * kernels_bf16.cu. */
extern const Dtype kF32, kF16, kBf16;

} /* namespace pf_kern */
