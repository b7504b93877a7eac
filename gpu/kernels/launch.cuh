/* gpu/kernels/launch.cuh - the host side of every version: the split-KV merge kernel,
 * which kernel a (version, element type, D, head tile, paged) runs and with
 * how much shared memory (pick_v), the copy engine's tensor maps, the
 * launch (launch_t) and the planner's occupancy query (occupancy_t); and
 * the host helpers that gpu/kernels.cu defines once (pf_kern).
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
#pragma once

#include "gpu/kernels/v1.cuh"
#include "gpu/kernels/mma.cuh"
#include "gpu/kernels/v7.cuh"

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

/* fn's driver function on the current device (into *dev_out when given),
 * cached per host thread; nullptr where there is none */
CUfunction driver_function(const void *fn, int *dev_out = nullptr);
/* One kernel's one-time setup made (a driver function looked up, a shared
 * memory reservation queried): counted for pf_gpu__kernel_setups */
void note_setup();
/* launch fn on grid x kThreads threads (a replay of the stream's graph
 * unless `direct`, else the driver's launch, else the runtime's), in
 * clusters of cluster_x blocks along x when it is > 1; a PF_ code */
int launch_kernel(const void *fn, dim3 grid, int smem, cudaStream_t st, void **params,
                  int cluster_x = 1, bool direct = false);

} /* namespace pf_kern */

namespace {

using namespace pf_kern;

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
    note_setup();
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

/* Versions 6, 12, 13, 14 and 17-21 (attn_mma). Version 6: STAGES 3 (per
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
 * arithmetic unchanged in them. 21: 19 with K and V as two copy groups,
 * each half of a stage refilled as soon as it is read (KVS, mma.cuh).
 * 22: 21 with 3 stages (48 KB a block, dynamic; still 4 blocks an SM);
 * 23: 19 with 3 stages (the same 48 KB, one copy group a tile), so 22's
 * figures separate the stage from the split groups; 24: 20 with KVS
 * (cuDNN's shape, 2 blocks an SM, loading V while the scores run, as
 * FlashAttention-2 and cuDNN's kernel do). 25: 13 with one-term weights
 * (19's arithmetic without the mma's padding moves). 26: 25 with its
 * addresses fixed (FIX: padded rows, the stages unrolled; 34 KB a block,
 * static, 4 blocks an SM). 27: 26 with Q's fragments held in registers
 * (QREG). Both measured 8% slower than 25 on the H200 (the padded rows
 * split each copied 128-byte line over two of shared memory's, mma.cuh).
 * 28 and 29: 26 and 27 with 25's swizzled rows, the lane's addresses
 * taken once (FIX 2); 30: 29 with P's mma pairs built once a tile (FIX 3).
 * 31: 29 with a split sequence's chunks launched as one cluster, merged
 * through distributed shared memory (END kEndCluster; v9's end,
 * attn_finish_cluster) instead of partials in the workspace, a fence and an
 * atomic. 32: 29 with the workspace merge's count one acquire-release
 * atomic and no fences (END kEndAcqRel, v2.cuh). 33: 29 streaming several
 * whole sequences a block, as the plan packs them (END kEndPack). 34: 29
 * with 14's head tile a warp (MH with FIX 2 and QREG). 35 and 36: 29 with
 * 3 and 4 stages (48 and 64 KB a block, dynamic; 4 and 3 blocks an SM); 36
 * is version 0 at one block an SM or fewer (gpu_internal.h,
 * PF_GPU_DEEP_GQA_VERSION), 35 is measured only. 37: 29 whose warps claim
 * their tiles from a counter (CLM, mma.cuh), not bitwise run to run.
 * The attributes are set once per kernel (first use, a thread-safe C++
 * static); a refusal shows as the launch's error. fp32 has no 16-bit mma:
 * it runs version 5's kernel with v6's early table read. */
template <typename T, int D, int GT, bool PAGED, int STAGES, int TOK, bool LAZY, bool QUAD,
          bool MH = false, int L2P = 0, bool P1 = false, bool KVS = false, int FIX = 0,
          bool QREG = false, int END = kEndFence, bool CLM = false>
Kern<T> pick_mma()
{
    if constexpr (std::is_same<T, float>::value) {
        return {attn_v2<T, D, GT, PAGED, 4, 2, true, true, true>, 0};
    } else {
        /* one-term weights change bf16's arithmetic only: fp16 gets its
         * base version's kernel itself, not a second copy of it */
        constexpr bool one = P1 && std::is_same<T, __nv_bfloat16>::value;
        constexpr auto fn =
            attn_mma<T, D, GT, PAGED, STAGES, TOK, LAZY, QUAD, MH, L2P, one, KVS, FIX, QREG, END,
                     CLM>;
        if constexpr (mma_static(D, STAGES, TOK, FIX == 1)) {
            if constexpr (QUAD) {
                static const int bytes = reserve_for_four(fn);
                return {fn, bytes};
            }
            return {fn, 0};
        } else {
            constexpr int bytes = v6_smem_bytes(D, STAGES, TOK, FIX == 1) + kSmemAlign;
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
    /* 19-37 feed bf16's weights as one term: pf_gpu_version_one_term_p, the
     * check's allowance, follows this list */
    case 19: return pick_mma<T, D, GT, PAGED, 2, 8, true, false, false, 0, true>();
    case 20: return pick_mma<T, D, GT, PAGED, 3, 16, true, false, false, 0, true>();
    case 21: return pick_mma<T, D, GT, PAGED, 2, 8, true, false, false, 0, true, true>();
    case 22: return pick_mma<T, D, GT, PAGED, 3, 8, true, false, false, 0, true, true>();
    case 23: return pick_mma<T, D, GT, PAGED, 3, 8, true, false, false, 0, true>();
    case 24: return pick_mma<T, D, GT, PAGED, 3, 16, true, false, false, 0, true, true>();
    case 25: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true>();
    case 26: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 1>();
    case 27: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 1, true>();
    case 28: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2>();
    case 29: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2, true>();
    case 30: return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 3, true>();
    case 31: /* 29 whose split sequences merge in a cluster; fp32, which has
              * no 16-bit mma, runs version 9's kernel (a cluster too) */
        if constexpr (std::is_same<T, float>::value)
            return pick_v7<T, D, GT, PAGED, 2, true>();
        else
            return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2, true,
                            kEndCluster>();
    case 32: /* 29 whose merge counts with one acquire-release atomic */
        return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2, true,
                        kEndAcqRel>();
    case 33: /* 29 with whole sequences packed, several a block (a plan
              * with no pack runs 29: launch_t) */
        return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2, true,
                        kEndPack>();
    case 34: /* 29 with a head tile a warp (14's shape) */
        return pick_mma<T, D, GT, PAGED, 2, 8, true, true, true, 0, true, false, 2, true>();
    case 35: /* 29 with 3 stages */
        return pick_mma<T, D, GT, PAGED, 3, 8, true, true, false, 0, true, false, 2, true>();
    case 36: /* 29 with 4 stages */
        return pick_mma<T, D, GT, PAGED, 4, 8, true, true, false, 0, true, false, 2, true>();
    default: /* 37: 29 whose warps claim their tiles */
        return pick_mma<T, D, GT, PAGED, 2, 8, true, true, false, 0, true, false, 2, true,
                        kEndFence, true>();
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

/* The kernel a plan launches: its version's (version 33 unpacked is
 * version 29) at its group tile. */
template <typename T> Kern<T> plan_kernel(const pf_gpu_attn_plan *p)
{
    const int kv = pf_gpu_version_packs(p->version) && p->pack <= 1 ? 29 : p->version;
    return pick<T>(&p->shape, p->group_tile, p->paged, kv);
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
    a.pack = p->pack > 1 ? p->pack : 0;
    a.lim = p->max_len;
    a.qscale = s->scale * 1.4426950408889634f; /* log2(e): exp becomes exp2 */
    const Kern<T> kern = plan_kernel<T>(p);
    if (pf_gpu_version_cluster(p->version) && p->splits > 1) {
        /* v9, v10, v31: a sequence's chunks (grid x) are one cluster */
        void *params[1] = {&a};
        return launch_kernel((const void *)kern.fn, grid, kern.smem, st, params, p->splits);
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

/* What a run of p would do on its first call, done now, on the planning
 * thread: pick's one-time setup of the kernel it launches (its shared
 * memory reservation: device queries and an attribute set) and the
 * driver's handle of the function (cached per host thread). The planner's
 * occupancy query sets up the kernel of the plan's version at the group's
 * tile; a plan of version 33 without a pack runs version 29's kernel, and
 * a plan given another tile another one: their first run made the queries
 * run promises it does not make (the twenty-seventh session's review). */
template <typename T> void prepare_t(const pf_gpu_attn_plan *p)
{
    const Kern<T> kern = plan_kernel<T>(p);
    const bool tma = kern.tma && tma_fits(&p->shape, p->paged);
    (void)driver_function(tma ? (const void *)kern.tma : (const void *)kern.fn);
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
