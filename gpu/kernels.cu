/* gpu/kernels.cu - the host side of the kernels: the C entry points that
 * gpu/gpu_internal.h declares (a run's launch, the planner's occupancy
 * query, the append kernel, the read-bandwidth probe, the empty launch of
 * the host-time floor), and the driver's launch and its caches, which the
 * element types' translation units share (pf_kern, gpu/kernels.cuh). The
 * attention kernels and their algorithm are in gpu/kernels.cuh;
 * gpu/kernels_f32.cu, kernels_f16.cu and kernels_bf16.cu instantiate them. */
#include <atomic>

#include "gpu/kernels.cuh"

namespace {

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

/* The floor under a run's host time (pagefault bench): it does nothing, but
 * it is launched with the attention kernels' argument block. */
__global__ void empty_kernel(const AttnArgs<__nv_bfloat16> a)
{
    (void)a;
}

/* The element type's instances of the attention templates. */
const pf_kern::Dtype &dtype_of(int dtype)
{
    switch (dtype) {
    case PF_GPU_F16: return pf_kern::kF16;
    case PF_GPU_BF16: return pf_kern::kBf16;
    default: return pf_kern::kF32;
    }
}

/* A driver entry point (CUDA 12.0's form of it), looked up through the
 * runtime, so that the library does not link the driver library itself (a
 * machine without a GPU still loads it); nullptr where there is none. */
void *driver_entry(const char *name)
{
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return f;
}

/* Register prefetch in version 1: measured on the H200 (docs/gpu.md), it
 * speeds the paged kernel up (llama: 0.309 -> 0.292 ms) but slows the naive
 * one down (0.296 -> 0.333 ms, cause not established), so each runs the
 * variant that is fastest for it; PF_GPU_PREFETCH=0|1 forces one for both.
 * Read once, so a run reads no environment. */
int prefetch_env()
{
    const char *e = getenv("PF_GPU_PREFETCH");
    return e && *e ? atoi(e) : -1;
}

typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*LaunchExFn)(const CUlaunchConfig *, CUfunction, void **, void **);

/* PF_GPU_LAUNCH=runtime takes the runtime's path only, to compare the two
 * (read once, so a run reads no environment) */
bool driver_launch_on()
{
    static const bool on = [] {
        const char *e = getenv("PF_GPU_LAUNCH");
        return !(e && !strcmp(e, "runtime"));
    }();
    return on;
}

} /* namespace */

namespace PF_KERN_HIDDEN pf_kern {

int log2_exact(int b)
{
    int s = 0;
    while ((1 << s) < b)
        s++;
    return (1 << s) == b ? s : -1;
}

int prefetch_on(bool paged)
{
    static const int v = prefetch_env(); /* C++ initialises it once, thread-safely */
    return v < 0 ? (paged ? 1 : 0) : (v ? 1 : 0);
}

/* The driver's tensor-map encoder, looked up once (a thread-safe C++
 * static). */
EncodeTiledFn tma_encoder()
{
    static const EncodeTiledFn fn = (EncodeTiledFn)driver_entry("cuTensorMapEncodeTiled");
    return fn;
}

/* Whether versions 15 and 16 can run their copy-engine kernel on a shape:
 * an 8-row box must lie in one page (8 divides the block size; chunks are
 * whole pages) and, naive, within the capacity (a box no larger than the
 * tensor, as the engine requires). Otherwise version 12 runs, as it does
 * when the encoder refuses the buffers (tma_maps): same results, v12's
 * speed. */
bool tma_fits(const pf_gpu_attn_shape *s, int paged)
{
    return paged ? s->block_size % 8 == 0 : s->naive_cap >= 8;
}

/* ---- the launch ----------------------------------------------------------
 *
 * A run's host time is almost all the launch: the same loop launching an
 * empty kernel cost 3.5-6.8 us on the device machine, a run a median 0.5 us
 * more (docs/gpu-journal.md, eleventh session). The runtime's launch (<<<>>>, or
 * cudaLaunchKernel) finds the kernel's driver function from its host stub
 * on every call, and its error comes back through a second call
 * (cudaGetLastError). The driver's cuLaunchKernel, on a function found
 * once, does neither: gpu/launch_probe.cu measured it 0.12-0.37 us (3-9%)
 * cheaper a launch than <<<>>> in each of its four settings (160- or 8-byte
 * arguments, pinned to a CPU or not), in two calls (twelfth session).
 *
 * A driver function belongs to one device's context, so the functions are
 * cached per host thread and keyed by device (8 entries, replaced in turn:
 * a thread runs a few kernels). Whatever the driver's path cannot do (no
 * entry point, a lookup that fails, a launch it refuses, such as a stream
 * of another context) falls to the runtime's launch, which makes the
 * launch or reports its error as before; a refused launch enqueues
 * nothing, so nothing runs twice. Streams are captured into CUDA graphs the
 * same way by both. */
static std::atomic<unsigned> g_setups; /* pf_gpu__kernel_setups */

void note_setup()
{
    g_setups.fetch_add(1, std::memory_order_relaxed);
}

CUfunction driver_function(const void *fn)
{
    struct Entry {
        const void *fn;
        int dev;
        CUfunction f;
    };
    static thread_local Entry cache[8];
    static thread_local unsigned next;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    for (const Entry &e : cache)
        if (e.fn == fn && e.dev == dev)
            return e.f;
    cudaFunction_t f = nullptr;
    note_setup();
    if (cudaGetFuncBySymbol(&f, fn) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    cache[next++ % 8] = {fn, dev, (CUfunction)f};
    return (CUfunction)f;
}

/* Launch fn on grid x kThreads threads with smem bytes of dynamic shared
 * memory, its parameters as cudaLaunchKernel takes them; with cluster_x >
 * 1, as clusters of cluster_x blocks along x (versions 9, 10 and 31), by
 * the driver's cuLaunchKernelEx, else the runtime's cudaLaunchKernelExC. */
int launch_kernel(const void *fn, dim3 grid, int smem, cudaStream_t st, void **params,
                  int cluster_x)
{
    static const LaunchFn drv =
        driver_launch_on() ? (LaunchFn)driver_entry("cuLaunchKernel") : nullptr;
    static const LaunchExFn drv_ex =
        driver_launch_on() ? (LaunchExFn)driver_entry("cuLaunchKernelEx") : nullptr;
    cudaError_t e;
    if (cluster_x > 1) {
        const CUfunction f = drv_ex ? driver_function(fn) : nullptr;
        CUlaunchAttribute at = {};
        at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at.value.clusterDim.x = (unsigned)cluster_x;
        at.value.clusterDim.y = 1;
        at.value.clusterDim.z = 1;
        CUlaunchConfig cfg = {};
        cfg.gridDimX = grid.x;
        cfg.gridDimY = grid.y;
        cfg.gridDimZ = grid.z;
        cfg.blockDimX = kThreads;
        cfg.blockDimY = 1;
        cfg.blockDimZ = 1;
        cfg.sharedMemBytes = (unsigned)smem;
        cfg.hStream = (CUstream)st;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        if (f && drv_ex(&cfg, f, params, nullptr) == CUDA_SUCCESS)
            return PF_OK;
        cudaLaunchAttribute rat[1];
        rat[0].id = cudaLaunchAttributeClusterDimension;
        rat[0].val.clusterDim.x = (unsigned)cluster_x;
        rat[0].val.clusterDim.y = 1;
        rat[0].val.clusterDim.z = 1;
        cudaLaunchConfig_t rcfg = {};
        rcfg.gridDim = grid;
        rcfg.blockDim = dim3(kThreads);
        rcfg.dynamicSmemBytes = (size_t)smem;
        rcfg.stream = st;
        rcfg.attrs = rat;
        rcfg.numAttrs = 1;
        e = cudaLaunchKernelExC(&rcfg, fn, params);
    } else {
        const CUfunction f = drv ? driver_function(fn) : nullptr;
        if (f && drv(f, grid.x, grid.y, grid.z, kThreads, 1, 1, (unsigned)smem, (CUstream)st,
                     params, nullptr) == CUDA_SUCCESS)
            return PF_OK;
        e = cudaLaunchKernel(fn, grid, dim3(kThreads), params, (size_t)smem, st);
    }
    if (e != cudaSuccess)
        (void)cudaGetLastError(); /* reported here, not left for a later check */
    return pf_gpu_cuda_err((int)e);
}

} /* namespace pf_kern */

extern "C" void *pf_gpu_driver_entry(const char *name)
{
    return driver_entry(name);
}

/* Launched as a run launches its kernel (launch_kernel), so that the two
 * loops differ by the run's own work only. */
extern "C" int pf_gpu_launch_empty(void *stream)
{
    AttnArgs<__nv_bfloat16> a = {};
    void *params[1] = {&a};
    return pf_kern::launch_kernel((const void *)empty_kernel, dim3(1), 0, (cudaStream_t)stream, params);
}

extern "C" int pf_gpu_cuda_err(int e)
{
    switch ((cudaError_t)e) {
    case cudaSuccess: return PF_OK;
    case cudaErrorMemoryAllocation: return PF_ERR_NOMEM;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidConfiguration:
    case cudaErrorInvalidResourceHandle: return PF_ERR_ARG;
    default: return PF_ERR_UNAVAILABLE;
    }
}

extern "C" int pf_gpu_kernel_blocks_per_sm(const pf_gpu_attn_shape *s, int paged, int version)
{
    return dtype_of(s->dtype).occupancy(s, paged, version);
}

extern "C" unsigned pf_gpu__kernel_setups(void)
{
    return pf_kern::g_setups.load(std::memory_order_relaxed);
}

extern "C" void pf_gpu_kernel_prepare(const pf_gpu_attn_plan *p)
{
    dtype_of(p->shape.dtype).prepare(p);
}

/* No checks beyond the plan's stamp: plan_make validated the shape, and a
 * run must cost as little host time as possible. */
extern "C" int pf_gpu_launch_attention(const pf_gpu_attn_plan *p, const void *q, const void *k,
                                       const void *v, const int *block_tables,
                                       const int *seq_lens, void *out, void *ws, void *stream,
                                       unsigned long long *trace)
{
    return dtype_of(p->shape.dtype)
        .launch(p, q, k, v, block_tables, seq_lens, out, ws, (cudaStream_t)stream, trace);
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
    return pf_gpu_cuda_err((int)cudaGetLastError());
}

extern "C" int pf_gpu_launch_read_bw(const void *buf, size_t n16, unsigned *sink, int sm_count,
                                     void *stream)
{
    const int blocks = (sm_count > 0 ? sm_count : 132) * 8;
    read_bw_kernel<<<blocks, 256, 0, (cudaStream_t)stream>>>((const uint4 *)buf, n16, sink);
    return pf_gpu_cuda_err((int)cudaGetLastError());
}
