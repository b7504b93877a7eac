/* gpu/kernels/mma.cuh - versions 6, 12-14 and 17-37: the GQA group on tensor cores
 * (attn_mma, mma_body), and versions 15 and 16, their tiles brought by
 * Hopper's copy engine (attn_tma).
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
#pragma once

#include "gpu/kernels/v2.cuh"

namespace {

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
 * versions 19-21); the sum l
 * is taken from the unrounded fp32 P. fp32 data has no 16-bit mma: version 6 runs version 5's
 * kernel on it. */

/* x as computed, opaque to the optimizer: version 28's loop-invariant
 * addresses, which NVVM otherwise recomputes at each use inside the loop
 * (its PTX: the swizzle's and/xor/shl again before every copy) */
__device__ __forceinline__ unsigned pin_u32(unsigned x)
{
    asm volatile("mov.b32 %0, %0;\n" : "+r"(x));
    return x;
}
__device__ __forceinline__ unsigned long long pin_u64(unsigned long long x)
{
    asm volatile("mov.b64 %0, %0;\n" : "+l"(x));
    return x;
}

/* (from a shared-memory address s, or a generic pointer into shared memory) */
__device__ __forceinline__ void ldsm_x4(unsigned *r, unsigned s)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
__device__ __forceinline__ void ldsm_x4(unsigned *r, const void *smem)
{
    ldsm_x4(r, (unsigned)__cvta_generic_to_shared(smem));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned *r, unsigned s)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned *r, const void *smem)
{
    ldsm_x4_t(r, (unsigned)__cvta_generic_to_shared(smem));
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
    }                                                                                        \
    __device__ static void run8(float *x, float *y, unsigned long long a, unsigned b0)       \
    {                                                                                        \
        asm volatile("{\n .reg .b32 a0, a1;\n mov.b64 {a0, a1}, %4;\n"                      \
                     " mma.sync.aligned.m16n8k8.row.col.f32." TY "." TY ".f32 {%0,%1,%2,%3}, " \
                     "{a0, a1}, {%5}, {%0,%1,%2,%3};\n}\n"                                  \
                     : "+f"(x[0]), "+f"(x[1]), "+f"(y[0]), "+f"(y[1])                        \
                     : "l"(a), "r"(b0));                                                     \
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
 * see mma_static); version 26 (fix) pads each row by 16 bytes. */
__host__ __device__ constexpr int v6_smem_bytes(int D, int stages, int tok, bool fix = false)
{
    return kV6Warps * stages * 2 * tok * (D * 2 + (fix ? 16 : 0)); /* fix: version 26's pad */
}
/* Static up to version 12's 32 KB and version 26's padded 34 KB, which
 * with the table cache and Q stay under the 48 KB a block may declare
 * statically (ptxas: 37-39 KB); else launched with kSmemAlign bytes more,
 * see smem_align (versions 15 and 16 with kTmaAlign more). */
__host__ __device__ constexpr bool mma_static(int D, int stages, int tok, bool fix = false)
{
    return v6_smem_bytes(D, stages, tok, fix) <= 34 * 1024;
}
/* Blocks an SM's 227 KB of shared memory holds (the static part, mostly
 * the table cache, counted as 4 KB), at most 4: the register bound asks no
 * more, so the compiler never spills to reach an occupancy the memory
 * forbids (ptxas, sm_90, version 6: 166-208 registers at D = 128, 2
 * blocks; 108-128 at D = 64, 4 blocks; no spills). */
constexpr int v6_min_blocks(int D, int stages, int tok, bool fix = false)
{
    const int fit = 227 * 1024 / (v6_smem_bytes(D, stages, tok, fix) + 4096);
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
/* ---- version 21: K and V awaited apart, each half refilled once read ----
 *
 * Why. Nsight Compute on version 19 (twenty-second session) has its warps
 * waiting on their copies (long scoreboard) for 6.2-6.6 of 10.6-10.8
 * cycles an issued instruction on the H200 and 12 of 16 on the H100
 * (cuDNN's decode kernel, 3% faster on the H200: 5.0 of 10.4).
 * FlashAttention's kernels load V while they compute the scores. Version
 * 19 waits for a tile's K and V together and refills the stage only when
 * both are read, so during a tile's arithmetic one tile of copies (4 KB a
 * warp) is in flight.
 *
 * How. Each tile's copies are two groups, K's then V's, and every stage
 * is filled at the start. In iteration k the warp waits for K_k alone,
 * computes the scores, and at once refills K's half of the stage with
 * K_{k+S}; then the softmax; then it waits for V_k, runs P V, and refills
 * V's half with V_{k+S}. The scores start while V_k still lands, and
 * during the softmax and P V three half tiles (6 KB a warp) are in flight,
 * in the same 32 KB a block and the same registers (ptxas: 122, as
 * version 19). The arithmetic and its order are version 19's, so the
 * outputs are bitwise the same.
 *
 * Versions 22-24: what more bytes in flight a warp buy on the H200. At the
 * same latency the H200's 4.6 TB/s asks each SM for 1.5 times the bytes in
 * flight of the H100's 3.1, and only the H200 misses 0.95 (twenty-second
 * session); version 21 had no lead on an H100, where the memory leaves the
 * SMs slack. Version 22 is 21 with 3 stages: 48 KB a block (dynamic), still
 * 4 blocks an SM (4 x 52 KB of the 227), five half tiles (10 KB a warp) in
 * flight during the arithmetic instead of three. Version 23 is 19 with the
 * same 3 stages and one copy group a tile (8 KB in flight during the
 * arithmetic), so 22 against 23 and 19 tells the stage from the split.
 * Version 24 is 20 (cuDNN's shape: 16-token tiles, 3 stages, 96 KB and 2
 * blocks an SM) with the split groups, which is how FlashAttention-2 and
 * cuDNN's decode kernel order a tile: V lands while the scores run. Each
 * keeps its base version's arithmetic: 22 and 23 are bitwise 19's outputs,
 * 24 is 20's.
 *
 * Version 25: 19's arithmetic with 13's whole quads. Nsight Compute's
 * source counters (twenty-third session) count 291 warp instructions a
 * 4 KB piece of K and V in version 19 against 147 in cuDNN's decode
 * kernel, and the difference is all register moves and zeros (80 against
 * 3: 54 IMAD.MOV and 13 CS2R a piece, which we read as mostly the zeroed
 * padding halves of the mma's A and C) and integer work (123 against
 * 52). Version 13 removed the padding moves from v12 (ninth session, level
 * with v12 on the H200); 25 does the same for 19, whose one-term weights
 * already took 8 mma a tile out.
 *
 * Version 26 (FIX): 25 with its addresses fixed, for the integer work.
 * In 25's code (its PTX) every tile recomputes each shared-memory address
 * of its copies and ldmatrix loads: the XOR swizzle mixes the lane's row
 * with the piece (pc ^ (r % 8)), which no constant offset can express, and
 * the stage (k % STAGES) is a run-time value; and the page walk multiplies
 * in 64 bits twice. Version 26 pads each row of the tiles and of Q by 16
 * bytes instead of swizzling (a row's pitch 272 bytes at D = 128: the
 * eight rows an ldmatrix reads still start in eight different 16-byte
 * bank groups, and a copy's eight lanes of a phase write 128 contiguous
 * bytes), so piece (r, pc) is r * (CPR + 1) + pc: the lane's part is a
 * register fixed for the kernel, r's and pc's compile-time parts an
 * immediate. The loop is unrolled over the stages, so the stage is an
 * immediate too, and the walk is one 32 x 32 -> 64-bit multiply. 34 KB a
 * block instead of 32 (still static, 4 blocks an SM); the arithmetic and
 * its order are 25's, so the outputs are bitwise 25's.
 *
 * Version 27 (QREG): 26 with Q's fragments loaded once and held in
 * registers, as version 6 holds them: 8 ldmatrix of the 16 a tile (and
 * 4 KB of shared-memory reads a warp a tile, as much as the tile's K and V)
 * fewer. Version 12 spilled when it held Q (eighth session); 26 needs 88
 * registers, and the 32 of the held quads (their padding halves zero, as
 * the mma takes them) bring it to 119 of the 128 (ptxas, bf16 D128 paged,
 * no spill). Same arithmetic: bitwise 25's outputs.
 *
 * Measured (twenty-fourth session, H200): 26 and 27 are 8-9% slower than
 * 25 on every workload and block size, though Nsight Compute counts 45.8
 * million warp instructions a llama launch for 27 against 76.3 for 19
 * (cuDNN's kernel: 38.5). The same profile has 33% of the kernel's L2
 * sectors and 44% of its shared-memory wavefronts excessive: a padded row
 * starts 16 bytes further into shared memory's 128-byte lines each row, so
 * the 128-byte line of global memory that eight lanes copy lands across
 * two of them, and the copy is split (with the swizzle, each line lands in
 * one, its pieces permuted within it). So the padding goes, the swizzle
 * stays, and the addresses are fixed another way: versions 28 and 29
 * (FIX 2, below) are 26 and 27 with 25's swizzled rows, the lane's part of
 * every address taken once before the loop (see cslot), and the same
 * unrolled stages and multiply-add walk. Bitwise 25's outputs.
 *
 * Version 30 (FIX 3): 29 with P's A pairs built once a tile. In v27's
 * SASS (the same profile) the P V products of a tile, m16n8k8 on the pairs
 * {pa0, 0} and {0, pa0} (see run_quad's run8), are surrounded by about 20
 * register moves and zeros that rebuild the pairs in other registers
 * before each mma; 30 makes each pair one 64-bit value, pinned, which the
 * mma unpacks in place. Same arithmetic: bitwise 25's outputs. */
/* ---- version 33: whole sequences packed, a warp each ------------------
 *
 * Why. llama (64 x 4096) and batch (256 x 1024) read the same bytes with
 * the same kernel, and batch has run 0.5-1 point behind llama on both
 * machines in every session since the ninth (H200, twenty-fourth session:
 * 0.948 against 0.953; H100, twenty-fifth: 0.967-0.971 against
 * 0.977-0.982). Each of its 2048 blocks (llama: 512) starts with three
 * memory latencies in a row (its work-list entry, then its table slice
 * and length, then its first tiles) and ends waiting at a barrier for its
 * slowest warp: the warps run their pipelines apart and drift over a
 * chunk, and the block merge needs them all.
 *
 * How. The planner (gpu/host.c, "packing") gives a block `pack`
 * consecutive units of the work list, each a whole sequence (only plans
 * that split no sequence are packed), a multiple of its W warps, for one
 * head tile. The block reads their table slices together at its start
 * (each sequence `chunk / B` entries: pack x chunk <= the table cache's
 * 4096 tokens), and warp w streams sequences w, w + W, ... one after
 * another, every tile of each (not every W-th: version 14's shape, a
 * warp's own work, with sequences for head tiles). A warp holds its
 * sequence's whole result, so there is no block merge and no barrier: at
 * the end of a sequence the warp writes its output from its registers,
 * takes the next sequence's Q (its own rows of sq) and goes on, its
 * pipeline running across the boundary (the next sequence's first tile
 * was issued before the last one of this was computed). The warps meet
 * only at the block's end. The arithmetic is version 29's per tile, but
 * a sequence's tiles are summed in order by one warp instead of by four
 * warps merged, so the outputs agree with v29's to rounding, not bitwise;
 * a plan with no pack runs version 29's kernel itself (launch.cuh).
 *
 * First form (twenty-sixth session, calls 1-3, H100): the pack's
 * sequences in rounds of W x TOK tokens, every warp a tile of each round
 * and the warps' results merged at each sequence's end through shared
 * memory between two barriers (bitwise v29's outputs). On batch it was
 * level with v29 over three machine starts (v33 / v29 shuffled 1.000,
 * 0.996, 1.002), and its block timeline had 512 blocks take 4.8 us longer
 * than llama's 512: each sequence's end cost about what a block's end and
 * start cost in v29. */
constexpr int kPackMax = PF_GPU_PACK_MAX;

/* Version 33's start: the pack's sequences (units first .. first + n - 1
 * of the work list, first = the block's pack times a.pack), their lengths
 * read up to each unit's bound as block_begin reads one, their tiles of
 * TOK tokens in the order of their warp (sequence j is warp j % W's; its
 * tiles are that warp's pk_t0[j] .. pk_t1[j] - 1) and their table slices,
 * sequence j's from tbl[j (chunk / B)]. An empty sequence gets its zeros
 * here and no tiles. Returns false when no sequence of the pack has
 * tokens. Every thread of the block calls it. */
template <typename T, int D, int GT, bool PAGED, int TOK, int W>
__device__ bool pack_begin(const AttnArgs<T> &a, int *tbl, int qh0, int *pk_seq, int *pk_len,
                           int *pk_t0, int *pk_t1, int &n)
{
    const int first = (int)blockIdx.x / a.htiles * a.pack;
    n = min(a.pack, a.items / a.htiles - first);
    if (PAGED) { /* each entry through its unit's sequence: two latencies, as block_begin's */
        const int per = a.chunk / a.B;
        for (int e = threadIdx.x; e < n * per; e += kThreads) {
            const int j = e / per, b = e - j * per;
            if (b < a.maxb)
                cp_async4(&tbl[e], a.tables + (size_t)a.work[first + j].x * a.maxb + b);
        }
        cp_async_commit();
    }
    if ((int)threadIdx.x < n) {
        const int2 w = a.work[first + threadIdx.x];
        pk_seq[threadIdx.x] = w.x;
        pk_len[threadIdx.x] = min(a.lens[w.x], min(PF_GPU_WORK_NCH(w.y) * a.chunk, a.lim));
    }
    __syncthreads();
    if ((int)threadIdx.x < W) { /* thread w counts warp w's tiles */
        int end = 0;
        for (int j = threadIdx.x; j < n; j += W) {
            pk_t0[j] = end;
            end += pk_len[j] > 0 ? (pk_len[j] + TOK - 1) / TOK : 0;
            pk_t1[j] = end;
        }
    }
    for (int j = 0; j < n; j++)
        if (pk_len[j] <= 0)
            write_zeros<T, D, GT>(a, pk_seq[j], qh0, 0, true);
    if (PAGED)
        cp_async_wait<0>();
    __syncthreads();
    bool any = false;
    for (int j = 0; j < n; j++)
        any |= pk_t1[j] > pk_t0[j];
    return any;
}

/* ---- version 37: the block's warps claim their tiles ------------------
 *
 * In versions 6 and 12-36 warp w of a block takes the chunk's tiles w,
 * w + W, w + 2W, ... and the block ends with its slowest warp. On ordered
 * frames the warps' tiles arrive alike and they end together; on shuffled
 * 16-token pages each warp waits on its own pages, and the block timeline
 * (docs/gpu-journal.md, thirty-fifth session, long, v29, an H100) has the
 * median block 1.3 us longer from warp 0's last tile to the block's end
 * (4.4 against 3.0 us; up to 18 against 9), the launch's last block 6 us
 * later in all. Version 37 is 29 whose warps take the next tile from a
 * counter in shared memory each time they issue one, so a warp held up by
 * its pages takes fewer tiles and the warps end within about a tile of
 * one another. Lane 0 claims, the warp shares the index (one shared
 * atomic and one shuffle a tile); a warp keeps the tile of each of its
 * STAGES slots (`slot_tile`) and stops at the first claim past the chunk.
 * Which warp sums which tiles depends on timing, so the outputs agree
 * with 29's within rounding but not bitwise from run to run
 * (pf_gpu_version_exact is 0). */
__device__ __forceinline__ int warp_claim(int *counter, int lane)
{
    int t = 0;
    if (lane == 0)
        t = atomicAdd(counter, 1);
    return __shfl_sync(0xffffffffu, t, 0);
}

/* Versions 6 (TOK 16, STAGES 3, LAZY false), 12 and 13 (TOK 8, STAGES 2,
 * LAZY true; QUAD false or true), 14 (12 with MH: a head tile a warp), 15
 * and 16 (12 with TMA: the copy engine, 2 or 3 stages), 17 (12 with L2P =
 * 128, the L2 prefetch hint), 18 (6 with LAZY true, see pick_mma), 19 and
 * 20 (12 and 18 with P1: bf16's P as one term), 21 (19 with KVS: K and V
 * as two copy groups, below), 22 and 23 (21 and 19 with 3 stages), 24 (20
 * with KVS), 25 (13 with P1), 26 (25 with FIX: padded rows, the stages
 * unrolled), 27 (26 with QREG: Q in registers), 28 and 29 (26 and 27
 * with FIX 2: 25's swizzle, the lane addresses taken once), 30 (29 with
 * FIX 3: P's pairs built once), 31 (29 with END kEndCluster: a split
 * sequence's chunks one cluster, merged through distributed shared memory
 * by v9's end, attn_finish_cluster), 32 (29 with END kEndAcqRel: the
 * workspace merge's count one acquire-release atomic, no fences; v2.cuh),
 * 33 (29 with END kEndPack: several whole sequences a block, a warp
 * each), 34 (29 with MH: 14's head tile a warp, whole quads, the lane
 * addresses taken once and Q held), 35 and 36 (29 with 3 and 4 stages),
 * 37 (29 with CLM: the warps claim their tiles): see the comments above.
 * TOK is a warp's tile in tokens: 16 makes the scores two m16n8 n-tiles
 * and P V one m16n8k16 a 8-wide slice of D; 8 makes the scores one n-tile
 * and P V one m16n8k8 a slice. QUAD (version 13) passes the mma whole
 * quads (see PF_MMA_PRODUCTS). */
template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH, bool TMA, int L2P, bool P1, bool KVS, int FIX, bool QREG, int END = kEndFence,
          bool CLM = false>
__device__ __forceinline__ void mma_body(const AttnArgs<T> &a, const TmaMaps *tm)
{
    /* P V's weights as two terms (bf16's hi + lo, see Mma), unless P1
     * (versions 19-21) feeds them as one */
    constexpr bool kSplitP = Mma<T>::kSplitP && !P1;
    constexpr int CPR = D * 2 / 16;   /* 16-byte pieces per row          */
    constexpr bool PAD = FIX == 1;    /* versions 26 and 27: padded rows */
    constexpr int RU4 = CPR + PAD;    /* a row's pitch in shared memory */
    constexpr int RPI = 32 / CPR;     /* rows a warp copies per step     */
    constexpr int NT = D / 8;         /* n-tiles of the output           */
    constexpr int KS = D / 16;        /* k-steps of the scores           */
    constexpr int TILE_U4 = TOK * RU4;
    constexpr int W = kV6Warps;
    constexpr int X = TOK / 4;        /* scores a lane holds a tile      */
    constexpr int kTmaBoxes = D / kTmaBoxElts; /* boxes of a tile (15, 16) */
    static_assert(TOK == 8 || TOK == 16, "a tile is one or two m16n8 n-tiles");
    static_assert(!QUAD || TOK == 8, "version 13 is version 12 with quads");
    static_assert(!MH || (TOK == 8 && (!QUAD || (FIX == 2 && QREG))),
                  "versions 14 and 34 are versions 12 and 29 a warp a head tile");
    static_assert(!MH || W == PF_GPU_MH_TILES, "the planner's head tiles a block (gpu_internal.h)");
    static_assert(!TMA || (TOK == 8 && !QUAD && !MH), "versions 15 and 16 are version 12's copy");
    static_assert(!KVS || (!QUAD && !MH && !TMA), "versions 21, 22 and 24 split 19's and 20's copy");
    static_assert(!FIX || (QUAD && !KVS && (!MH || FIX == 2) && !TMA),
                  "versions 26-30 and 34 are 25's addressing");
    static_assert(!QREG || FIX, "versions 27 and 29 are 26 and 28 with Q in registers");
    static_assert(FIX < 2 || (TOK == 8 && RPI <= 8), "version 28's lane addresses (below)");
    static_assert(FIX != 3 || !kSplitP, "version 30's pairs are P's one term");
    static_assert(END == kEndFence || (FIX == 2 && QREG && !MH), "versions 31-33: 29's ends");
    constexpr bool CL = END == kEndCluster;
    constexpr bool PK = END == kEndPack; /* version 33 */
    static_assert(!PK || W == PF_GPU_PACK_STEP, "a pack is sequences a warp (gpu_internal.h)");
    static_assert(!CLM || (FIX == 2 && QREG && !MH && !PK && !CL), "version 37 is 29's claims");
    static_assert(GT <= 8, "rows g + 8 of the mma are padding");
    static_assert(W * GT * D * 4 <= W * STAGES * 2 * TILE_U4 * 16, "merge scratch must fit");
    /* version 12's 32 KB fit the static 48 KB, as v7's do: a launch with
     * no dynamic shared memory costs the host less (docs/gpu-journal.md,
     * eighth session); version 6's 96 KB are dynamic, on the 128-byte grid */
    uint4 *v6buf;
    if constexpr (mma_static(D, STAGES, TOK, PAD)) {
        /* the copy engine's swizzle needs each tile on the 1024-byte grid */
        __shared__ alignas(TMA ? kTmaAlign : kSmemAlign) uint4
            sbuf[v6_smem_bytes(D, STAGES, TOK, PAD) / 16];
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
    __shared__ int sm_claim; /* version 37: the chunk's next tile to claim */
    __shared__ float cl_lse[CL ? GT : 1]; /* version 31: this chunk's log2-sum-exps */
    /* version 33: the pack's sequences, lengths, and tiles in their warps' order */
    __shared__ int pk_seq[PK ? kPackMax : 1], pk_len[PK ? kPackMax : 1], pk_t0[PK ? kPackMax : 1],
        pk_t1[PK ? kPackMax : 1];
    /* versions 12, 13 and 15-17 keep Q here (below); 13 also a zero row;
     * 14 each warp's own 8 rows */
    __shared__ __align__(128) uint4 sq[TOK == 8 ? (MH || PK ? W : 1) * (QUAD ? 9 : 8) * RU4 : 1];

    trace_mark(a, kTrStart);
    trace_mark(a, kTrSm);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const Work job = work_of(a);
    int seq = job.seq; /* version 33: this warp's sequence (below, and at each of its ends) */
    /* Versions 14 and 34 (MH): the block serves head tiles W ht .. W ht + W - 1,
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
    /* version 33: the pack's size; this warp's sequence being computed
     * (cj: its index, its tiles crb .. cre - 1 of the warp's, length t1),
     * the one whose tiles are being issued (pj, a tile ahead), and the
     * warp's tiles in all (pk_mine) */
    int pk_n = 0, cj = 0, crb = 0, cre = 0, pj = 0, pk_mine = 0;
    if constexpr (PK) {
        if (!pack_begin<T, D, GT, PAGED, TOK, W>(a, tbl, qh0, pk_seq, pk_len, pk_t0, pk_t1,
                                                 pk_n)) {
            trace_mark(a, kTrEnd);
            return;
        }
        for (cj = warp; cj < pk_n && pk_t1[cj] == pk_t0[cj]; cj += W) /* empty: zeros written */
            ;
        for (int j = warp; j < pk_n; j += W)
            pk_mine = pk_t1[j];
        pj = cj;
        if (cj < pk_n) {
            seq = pk_seq[cj];
            crb = pk_t0[cj];
            cre = pk_t1[cj];
        }
        t0 = 0;
        t1 = len = cj < pk_n ? pk_len[cj] : 0;
    } else if (!block_begin<T, D, GT, PAGED, true>(a, tbl, job, bq0, len, t0, t1, brows)) {
        if constexpr (CL)
            if (len > 0 && gridDim.x > 1) /* an empty chunk still joins its cluster */
                attn_finish_cluster<T, D, GT, W>(a, &sm_m[0][0], &sm_l[0][0],
                                                 reinterpret_cast<float *>(v6buf), cl_lse, seq,
                                                 qh0, true);
        trace_mark(a, kTrEnd);
        return;
    }
    const int B = a.B;
    const T *kb = kv_base<T, D, PAGED>(a, a.k, seq, kvh);
    const T *vb = kv_base<T, D, PAGED>(a, a.v, seq, kvh);
    uint4 *wbuf = v6buf + warp * STAGES * 2 * TILE_U4;
    const unsigned fstride = (unsigned)(a.hkv * B * D); /* a frame, in elements */
    const int crow = lane / CPR, cpc = lane % CPR; /* the piece this lane copies */
    const bool walk_per_tile = B % TOK == 0;
    const int pk_per = PK ? a.chunk / B : 0; /* version 33: table entries a sequence */
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

    /* A tile's 16-byte piece pc of row r (and of Q's rows in sq): rows of
     * D elements, the pieces XOR-swizzled by r % 8 (versions 6, 12-14,
     * 17-25, 28-30); the copy engine's layout (versions 15, 16) is the same
     * swizzle on 128-byte half rows: D / 64 boxes of 8 rows one after the
     * other; versions 26 and 27 pad the rows instead (see FIX, above) */
    auto piece = [](int r, int pc) {
        return PAD   ? r * RU4 + pc
               : TMA ? (pc >> 3) * (TOK * 8) + r * 8 + ((pc & 7) ^ (r & 7))
                     : r * CPR + (pc ^ (r & 7));
    };
    /* the piece pc of Q's row r in sq (versions 12, 13, 15-17, 19, 21-33) */
    auto qpiece = [](int r, int pc) { return PAD ? r * RU4 + pc : r * CPR + (pc ^ (r & 7)); };
    /* Version 28 (FIX 2): the lane's shared-memory addresses, each taken
     * once for the kernel, so that in the loop every address is one of
     * them plus an immediate. The swizzle stays: a piece pc = 4 m + j of
     * row r (j < 4, r < 8 within the XOR) lies at
     *     r CPR + 8 (m / 2) + ((4 (m % 2) + j) ^ r),
     * a base for m % 2 plus 8 (m / 2): two bases cover the four k-steps of
     * K's ldmatrix loads and the four n-tile groups of V's (the same lanes
     * read the same rows and pieces of both at TOK 8), four Q's (its two
     * loads a step, pc = 4 m + (0 | 2) + qpc). A lane's copy slot in row
     * step it is fixed too (its row and piece are), one base a step. The
     * stage and K or V add TILE_U4 multiples, immediates since the loop is
     * unrolled over the stages. */
    unsigned cslot[FIX >= 2 ? TOK / RPI : 1], kab[2], qab[4];
    /* and the element offset of its piece of a tile's first row, which the
     * walk folds into its 32-bit part (0: added by copy_rows) */
    const unsigned loff = FIX >= 2 ? pin_u32(crow * D + cpc * 8) : 0u;
    if constexpr (FIX >= 2) {
        const unsigned sw = smem_u32(wbuf), sqa = smem_u32(sq);
        const int lr8 = lane % 8, lm4 = lane / 8, qr = (lm4 & 1) ? 8 : lr8;
#pragma unroll
        for (int it = 0; it < TOK / RPI; it++)
            cslot[it] = pin_u32(sw + 16u * piece(it * RPI + crow, cpc));
#pragma unroll
        for (int i = 0; i < 2; i++) {
            kab[i] = pin_u32(sw + 16u * piece(lr8, 4 * i + lm4));
            qab[2 * i] = pin_u32(sqa + 16u * qpiece(qr, 4 * i + (lm4 >> 1)));
            qab[2 * i + 1] = pin_u32(sqa + 16u * qpiece(qr, 4 * i + 2 + (lm4 >> 1)));
        }
    }

    /* version 37: the chunk tile in each of the warp's slots (claimed) */
    int slot_tile[STAGES] = {};
    /* Copy this warp's k-th tile (chunk tile warp + k W; MH: k; version 37:
     * the tile claimed for slot st) into slot st: its K and V rows (half
     * 0), or K's only (1) or V's only (2), version 21's two copy groups a
     * tile. */
    auto issue = [&](int k, int st, int half) {
        /* first token, within the chunk */
        int u0 = (MH ? k : CLM ? slot_tile[st] : warp + k * W) * TOK;
        /* the chunk's start, end, table slice and K and V rows; version 33:
         * those of the warp's sequence tile k belongs to (pj moves forward
         * only: the tiles are issued in order) */
        int it0 = t0, it1 = t1;
        const int *itb = tbl;
        const T *ikb = kb, *ivb = vb;
        if constexpr (PK) {
            while (k >= pk_t1[pj]) /* past this sequence (or an empty one): the warp's next */
                pj += W;
            u0 = (k - pk_t0[pj]) * TOK;
            it0 = 0;
            it1 = pk_len[pj];
            itb = tbl + pj * pk_per;
            if (!PAGED) {
                ikb = kv_base<T, D, PAGED>(a, a.k, pk_seq[pj], kvh);
                ivb = kv_base<T, D, PAGED>(a, a.v, pk_seq[pj], kvh);
            }
        }
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
         * element offset in K's buffer and V's; version 28: with the lane's
         * own offset already in, see loff), at fixed offsets. */
        auto copy_rows = [&](size_t e, int r0, int n) {
            const size_t le = FIX >= 2 ? e : e + (size_t)(crow * D + cpc * 8);
            const T *pk = ikb + le, *pv = ivb + le;
#pragma unroll
            for (int it = r0 / RPI; it < (r0 + n) / RPI; it++) {
                if constexpr (FIX >= 2) { /* version 28: the slot's base, the stage's immediate */
                    const unsigned sk = cslot[it] + 16u * (st * 2) * TILE_U4;
                    cp_async16_s(sk, pk + (it * RPI - r0) * D);
                    cp_async16_s(sk + 16u * TILE_U4, pv + (it * RPI - r0) * D);
                    continue;
                }
                const int slot = piece(it * RPI + crow, cpc);
                if (half != 2)
                    cp_async16<L2P>(dk + slot, pk + (it * RPI - r0) * D, true);
                if (half != 1)
                    cp_async16<L2P>(dv + slot, pv + (it * RPI - r0) * D, true);
            }
        };
        /* the pool offset of chunk token u's row, plus lo; versions 26-29
         * as one 32 x 32 -> 64-bit multiply-add (the frame by fstride) and
         * 32-bit sums, as the shape's bounds allow (pf_gpu_shape_ok: Hkv B
         * D < 2^27) */
        auto walk = [&](int u, unsigned lo = 0u) -> size_t {
            const int blk = a.bshift >= 0 ? u >> a.bshift : u / B;
            if constexpr (FIX)
                return (size_t)(unsigned)itb[blk] * fstride +
                       ((unsigned)((kvh * B + u - blk * B) * D) + lo);
            return pf_page_pool_index(itb[blk], kvh, u - blk * B, a.hkv, B, D) + lo;
        };
        if (kFixedRows && it0 + u0 + TOK <= it1) {
            /* version 12's common case, as version 7's: the whole tile is
             * in the chunk and in one page, so one walk places every row,
             * and the lane's rows are fixed offsets from one address (no
             * bounds check, no per-row address arithmetic). Version 18's
             * 16-token tile at 8-token pages lies in two pages: a walk
             * for each half. */
            if (!PAGED) {
                copy_rows((size_t)(it0 + u0) * D + loff, 0, TOK);
                return;
            }
            if (walk_per_tile) {
                copy_rows(walk(u0, loff), 0, TOK);
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
            const bool ok = it0 + u < it1;
            size_t e = 0;
            if (ok) {
                if (!PAGED) {
                    e = (size_t)(it0 + u) * D;
                } else if (walk_per_tile) {
                    e = e0 + (size_t)rr * D;
                } else {
                    e = walk(u);
                }
                e += cpc * 8;
            }
            const int slot = piece(rr, cpc);
            if (half != 2)
                cp_async16<L2P>(dk + slot, ikb + e, ok);
            if (half != 1)
                cp_async16<L2P>(dv + slot, ivb + e, ok);
        }
    };
    const int nt_chunk = (t1 - t0 + TOK - 1) / TOK;
    /* version 37: at most every tile (the loop stops at a claim past the end) */
    const int mine = PK    ? pk_mine /* version 33: every tile of the warp's sequences */
                     : MH  ? (active ? nt_chunk : 0)
                     : CLM ? nt_chunk
                           : nt_chunk > warp ? (nt_chunk - warp + W - 1) / W : 0;
    if constexpr (CLM) {
        if (tid == 0)
            sm_claim = 0;
        __syncthreads(); /* once a block: the counter is zero before any claim */
    }
    if constexpr (KVS) {
        /* version 21: every stage filled at the start, each tile as two
         * copy groups, K's then V's (see the loop) */
#pragma unroll
        for (int i = 0; i < STAGES; i++) {
            if (i < mine)
                issue(i, i, 1);
            cp_async_commit();
            if (i < mine)
                issue(i, i, 2);
            cp_async_commit();
        }
    } else {
#pragma unroll
        for (int i = 0; i < STAGES - 1; i++) {
            if constexpr (CLM)
                slot_tile[i] = warp_claim(&sm_claim, lane);
            if (CLM ? slot_tile[i] < nt_chunk : i < mine)
                issue(i, i, 0);
            if constexpr (!TMA)
                cp_async_commit();
        }
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
    /* this warp's rows of Q (version 33: and a zero row) */
    uint4 *const sqw = sq + (MH || PK ? warp * (QUAD ? 9 : 8) * CPR : 0);
    /* version 33: sequence j's Q into the warp's rows (a lane a few 16-byte
     * pieces), the zero row after them. Version 14's load below is its
     * twin for a head tile; one lambda for both cost this kernel a 16-byte
     * spill at its 128 registers and v14 two registers (ptxas, twenty-sixth
     * session), so they stay apart. */
    auto warp_q = [&](int j) {
        for (int i = lane; i < 9 * CPR; i += 32) {
            const int row = i / CPR, pc = i % CPR;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (row < GT)
                v = *reinterpret_cast<const uint4 *>(
                    a.q + ((size_t)pk_seq[j] * a.hq + qh0 + row) * D + pc * 8);
            sqw[qpiece(row, pc)] = v;
        }
        __syncwarp();
    };
    if constexpr (PK) {
        if (cj < pk_n)
            warp_q(cj);
    } else if constexpr (MH) {
        /* a warp its own head tile's rows (none when inactive); version 34
         * (QUAD) a zero row after them */
#pragma unroll
        for (int i = lane; i < (QUAD ? 9 : 8) * CPR; i += 32) {
            const int row = i / CPR, pc = i % CPR;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (active && row < GT)
                v = *reinterpret_cast<const uint4 *>(a.q + ((size_t)seq * a.hq + qh0 + row) * D +
                                                     pc * 8);
            sqw[qpiece(row, pc)] = v;
        }
        __syncwarp();
    } else if constexpr (kQShared) {
        if (tid < 8 * CPR) {
            const int row = tid / CPR, pc = tid % CPR;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (row < GT)
                v = *reinterpret_cast<const uint4 *>(a.q + ((size_t)seq * a.hq + qh0 + row) * D +
                                                     pc * 8);
            sq[qpiece(row, pc)] = v;
        }
        if (QUAD && tid < CPR) /* version 13: row 8, A's rows g + 8 */
            sq[qpiece(8, tid)] = make_uint4(0u, 0u, 0u, 0u);
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
    /* version 27: those quads loaded once, held for the chunk */
    unsigned qq[QREG ? KS / 2 : 1][2][4];
    auto load_qq = [&] {
        if constexpr (QREG) {
#pragma unroll
            for (int ks = 0; ks < KS; ks += 2) {
                ldsm_x4(qq[ks / 2][0], sqw + qpiece(qrow, ks * 2 + qpc));
                ldsm_x4(qq[ks / 2][1], sqw + qpiece(qrow, ks * 2 + 2 + qpc));
            }
        }
    };
    if constexpr (QREG)
        load_qq();
    /* Version 33's end of sequence cj, after its last tile: the warp
     * writes the output from its registers (v14's end, for a sequence
     * instead of a chunk), then takes the next of its sequences with
     * tokens (W on), its Q and a fresh state. */
    auto pack_end = [&] {
        float lq = l;
        lq += __shfl_xor_sync(0xffffffffu, lq, 1);
        lq += __shfl_xor_sync(0xffffffffu, lq, 2);
        if (g < GT) {
            T *po = a.out + ((size_t)seq * a.hq + qh0 + g) * D + 2 * c;
#pragma unroll
            for (int n = 0; n < NT; n++) {
                po[n * 8] = Elt<T>::store(o[n][0] / lq);
                po[n * 8 + 1] = Elt<T>::store(o[n][1] / lq);
            }
        }
        do
            cj += W;
        while (cj < pk_n && pk_t1[cj] == pk_t0[cj]);
        if (cj >= pk_n)
            return;
        seq = pk_seq[cj];
        crb = pk_t0[cj];
        cre = pk_t1[cj];
        t1 = pk_len[cj];
        warp_q(cj);
        load_qq();
        m = -INFINITY;
        l = 0.f;
#pragma unroll
        for (int n = 0; n < NT; n++)
            o[n][0] = o[n][1] = 0.f;
    };

    /* Version 21 (KVS) waits for K and for V apart and refills each half of
     * a slot as soon as it is read. The groups are committed K_0, V_0, ...,
     * K_{S-1}, V_{S-1} (S = STAGES), then in iteration k K_{k+S} after the
     * scores and V_{k+S} after P V (empty groups past the end keep the
     * count), so when K_k is awaited 2S - 1 groups follow it (V_k and the
     * S - 1 tiles after it), and as many follow V_k when it is awaited
     * (their K_{k+S} now among them): both waits are wait_group(2S - 1).
     *
     * Version 26 (FIX) unrolls the loop over the stages, so a tile's stage
     * is a constant and every shared-memory address in the loop is one of
     * a few per-lane registers plus an immediate (see FIX, above). */
    constexpr int UNR = FIX ? STAGES : 1;
    bool claimed_all = false; /* version 37: the warp's last claim was past the chunk */
    for (int k0 = 0; k0 < mine && !claimed_all; k0 += UNR) {
#pragma unroll
        for (int sub = 0; sub < UNR; sub++) {
            const int k = k0 + sub;
            if (UNR > 1 && k >= mine)
                break;
            const int st = UNR > 1 ? sub : k % STAGES; /* the tile's stage */
            if constexpr (CLM)
                if (slot_tile[st] >= nt_chunk) {
                    claimed_all = true;
                    break;
                }
            if constexpr (KVS) {
                cp_async_wait<2 * STAGES - 1>();
                __syncwarp(); /* the warp's copies of K_k are visible to all its lanes */
            } else {
                __syncwarp(); /* every lane is done reading the slot about to be refilled */
                const int nst = (st + STAGES - 1) % STAGES; /* tile k - 1's slot, read */
                if constexpr (CLM)
                    slot_tile[nst] = warp_claim(&sm_claim, lane);
                if (CLM ? slot_tile[nst] < nt_chunk : k + STAGES - 1 < mine)
                    issue(k + STAGES - 1, nst, 0);
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
            }
            if (k == 0 && !CLM)
                trace_mark(a, kTrReady);
            if constexpr (CLM) /* warp 0 may have claimed none of the first tiles */
                if (slot_tile[st] == 0 && lane == 0)
                    trace_write(a, kTrReady);
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
                    unsigned b[4];
                    const int pc = ks * 2 + kpc, m = ks / 2; /* pc = 4 m + kpc */
                    if constexpr (FIX >= 2)
                        ldsm_x4(b, kab[m & 1] + 16u * (st * 2 * TILE_U4 + 8 * (m >> 1)));
                    else
                        ldsm_x4(b, ks_ + piece(ktok, pc));
                    if constexpr (QREG) {
                        Mma<T>::run_quad(s, qq[ks / 2][0], b[0], b[1]);
                        Mma<T>::run_quad(s, qq[ks / 2][1], b[2], b[3]);
                    } else {
                        unsigned q0[4], q1[4];
                        if constexpr (FIX >= 2) {
                            ldsm_x4(q0, qab[2 * (m & 1)] + 128u * (m >> 1));
                            ldsm_x4(q1, qab[2 * (m & 1) + 1] + 128u * (m >> 1));
                        } else {
                            ldsm_x4(q0, sq + qpiece(qrow, ks * 2 + qpc));
                            ldsm_x4(q1, sq + qpiece(qrow, ks * 2 + 2 + qpc));
                        }
                        Mma<T>::run_quad(s, q0, b[0], b[1]);
                        Mma<T>::run_quad(s, q1, b[2], b[3]);
                    }
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
            if constexpr (KVS) { /* K_k read: its half of the slot takes K_{k+S} */
                __syncwarp();
                if (k + STAGES < mine)
                    issue(k + STAGES, st, 1);
                cp_async_commit();
            }
            const int tb = t0 + (PK ? k - crb : MH ? k : CLM ? slot_tile[st] : warp + k * W) * TOK + 2 * c;
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
            const unsigned pa0 = Mma<T>::pack(p[0], p[1], &pr0);
            const unsigned pa2 = Mma<T>::pack(p[2], p[3], &pr2);
            /* version 30: P's A pairs for the C quads, {pa0, 0} and {0, pa0},
             * each as one 64-bit value, so that they are built once a tile
             * (in v27's SASS, about 20 register moves a tile rebuilt them
             * before the mma) */
            unsigned long long plo = 0, phi = 0;
            if constexpr (FIX == 3) {
                plo = pin_u64(pa0);
                phi = pin_u64((unsigned long long)pa0 << 32);
            }
            if constexpr (KVS) {
                cp_async_wait<2 * STAGES - 1>();
                __syncwarp(); /* V_k visible */
            }
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
                    if constexpr (FIX >= 2) /* V's half of the stage; pc = 4 j + vpc */
                        ldsm_x4_t(b, kab[j & 1] + 16u * ((st * 2 + 1) * TILE_U4 + 8 * (j >> 1)));
                    else
                        ldsm_x4_t(b, vs_ + piece(vtok, pc));
                    if constexpr (FIX == 3) { /* version 30: the pairs built once a tile */
#pragma unroll
                        for (int q = 0; q < 4; q += 2) {
                            float *x = o[4 * j + q], *y = o[4 * j + q + 1];
                            Mma<T>::run8(x, y, plo, b[q]);
                            Mma<T>::run8(x, y, phi, b[q + 1]);
                        }
                    } else if constexpr (QUAD) {
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
            if constexpr (KVS) { /* V_k read: its half of the slot takes V_{k+S} */
                __syncwarp();
                if (k + STAGES < mine)
                    issue(k + STAGES, st, 2);
                cp_async_commit();
            }
            if constexpr (PK)
                if (k + 1 == cre)
                    pack_end();
        }
    }
    cp_async_wait<0>();
    if constexpr (PK) { /* every warp has ended its sequences; the timeline's marks */
        __syncthreads(); /* are the block's: after its last warp */
        trace_mark(a, kTrStreamed);
        trace_mark(a, kTrEnd);
        return;
    }
    if constexpr (!CLM)
        trace_mark(a, kTrStreamed);
    /* every warp is done with the pipeline buffer, which the block merge
     * below reuses (version 14 does not; the barrier was kept as measured) */
    __syncthreads();
    /* version 37: the last tile is any warp's, done once all are (and after
     * the first tile's mark, which another warp may have written) */
    if constexpr (CLM)
        trace_mark(a, kTrStreamed);

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
    if constexpr (CL)
        if (gridDim.x > 1) { /* version 31: a split sequence's chunks are one cluster */
            attn_finish_cluster<T, D, GT, W>(a, &sm_m[0][0], &sm_l[0][0], sm_acc, cl_lse, seq,
                                             qh0, false);
            trace_mark(a, kTrEnd);
            return;
        }
    /* (version 31 unsplit: one block a sequence, nothing to merge) */
    attn_finish<T, D, GT, W, true, CL || PK ? kEndFence : END>(a, &sm_m[0][0], &sm_l[0][0], sm_acc,
                                                         &sm_last, job, qh0, len);
    trace_mark(a, kTrEnd);
}

template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH, int L2P, bool P1, bool KVS, int FIX, bool QREG, int END, bool CLM>
__global__ void __launch_bounds__(kThreads, v6_min_blocks(D, STAGES, TOK, FIX == 1))
    attn_mma(const AttnArgs<T> a)
{
    mma_body<T, D, GT, PAGED, STAGES, TOK, LAZY, QUAD, MH, false, L2P, P1, KVS, FIX, QREG, END,
             CLM>(a, nullptr);
}

/* Versions 15 (2 stages) and 16 (3): version 12 with its tiles brought by
 * the copy engine. The tensor maps are a __grid_constant__ parameter: the
 * engine reads them where the launch put them. */
template <typename T, int D, int GT, bool PAGED, int STAGES>
__global__ void __launch_bounds__(kThreads, v6_min_blocks(D, STAGES, 8))
    attn_tma(const AttnArgs<T> a, const __grid_constant__ TmaMaps tm)
{
    mma_body<T, D, GT, PAGED, STAGES, 8, true, false, false, true, 0, false, false, false, false>(
        a, &tm);
}

} /* namespace */
