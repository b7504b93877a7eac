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

/* PF_GPU_LAUNCH picks how a run launches, to compare the ways: graph (the
 * default: a replay of the stream's graph, below), driver (cuLaunchKernel
 * on the cached function) or runtime (the runtime's launch only). Read
 * once, so a run reads no environment. */
enum LaunchWay { kWayRuntime, kWayDriver, kWayGraph };
LaunchWay launch_way()
{
    static const LaunchWay w = [] {
        const char *e = getenv("PF_GPU_LAUNCH");
        if (e && !strcmp(e, "runtime"))
            return kWayRuntime;
        return e && !strcmp(e, "driver") ? kWayDriver : kWayGraph;
    }();
    return w;
}

bool driver_launch_on()
{
    return launch_way() != kWayRuntime;
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

CUfunction driver_function(const void *fn, int *dev_out)
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
    if (dev_out)
        *dev_out = dev;
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

/* ---- the launch as a graph replay ------------------------------------------
 *
 * Why. Even on a function found once, the driver's launch is most of a
 * run's host time (3-5 us on the device machines), more than the issue's 5
 * us on a slow host. Giving the one kernel node of an executable graph new
 * arguments and replaying the graph (cuGraphExecKernelNodeSetParams, then
 * cuGraphLaunch) does the same work for about half: gpu/launch_probe.cu's
 * graph-set row, median host us a launch with the 160-byte argument block,
 * 2.73 against cuLaunchKernel's 3.72, pinned to a CPU 1.74 against 3.16
 * (H100, thirtieth session). The arguments change every run, so the node
 * is given them every run; nothing is skipped.
 *
 * The graphs. One per (host thread, device, stream, kernel, grid and
 * shared memory), made by the second launch of that key while the thread
 * remembers its first, and kept in a per-thread cache of 16 slots; a key
 * launched once, met while every slot served a launch lately, or whose
 * last graph was evicted before it paid for its making, launches directly
 * (the policy and its numbers: pf_gpu_graph_lru in gpu_internal.h). A
 * replaced graph is destroyed, which the driver defers until its launches
 * are done. The stream is in the key because launches of one executable
 * graph are ordered after one another: a graph shared by two streams would
 * order their runs, while one graph a stream adds no order the stream does
 * not already have. The cache is per thread
 * because graph objects are not thread-safe. Making a graph is counted
 * apart from the kernels' setups (pf_gpu__graph_makes): a key repeated on
 * a stream pays it once, and never inside a capture (below).
 *
 * What launches directly instead: a stream being captured into a graph
 * (launching a graph into it would invalidate the capture, so the run asks
 * the driver first, cuStreamIsCapturing, a host-side check of the stream
 * that costs no device work), a cluster launch (versions 9, 10 and 31
 * split: its cluster size would be a node attribute, not yet run on a
 * device), PF_GPU_LAUNCH=driver or runtime, and any failure on the graph
 * path: the graph is dropped, the launch made directly, and that key
 * launched directly from then on. A failed replay enqueues nothing, so
 * nothing runs twice. A device reset invalidates the cached graphs, as it
 * does the cached functions above: neither is supported while a run's
 * thread lives. */
typedef CUresult (*IsCapturingFn)(CUstream, CUstreamCaptureStatus *);
typedef CUresult (*NodeSetFn)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*GraphLaunchFn)(CUgraphExec, CUstream);

struct GraphFns {
    IsCapturingFn capturing;
    NodeSetFn set;
    GraphLaunchFn launch;
};

/* The driver's three per-run entry points, found once; nullptr when the
 * graph path is off or any is missing. */
const GraphFns *graph_fns()
{
    static const GraphFns g = [] {
        GraphFns r = {};
        if (launch_way() != kWayGraph)
            return r;
        r.capturing = (IsCapturingFn)driver_entry("cuStreamIsCapturing");
        r.set = (NodeSetFn)driver_entry("cuGraphExecKernelNodeSetParams");
        r.launch = (GraphLaunchFn)driver_entry("cuGraphLaunch");
        if (!r.capturing || !r.set || !r.launch)
            r = GraphFns{};
        return r;
    }();
    return g.launch ? &g : nullptr;
}

static std::atomic<unsigned> g_graph_makes; /* pf_gpu__graph_makes */

/* What a graph is made for: the function on a device and stream, at a
 * grid and dynamic shared memory. */
struct GraphKey {
    CUfunction f;
    int dev;
    cudaStream_t st;
    dim3 grid;
    int smem;
};

bool same_key(const GraphKey &a, const GraphKey &b)
{
    return a.f == b.f && a.dev == b.dev && a.st == b.st && a.grid.x == b.grid.x &&
           a.grid.y == b.grid.y && a.grid.z == b.grid.z && a.smem == b.smem;
}

/* A cache entry: empty, a key with its graph (gx), or a key the graph
 * path refused (direct). */
struct StreamGraph {
    GraphKey key;
    bool direct;   /* the graph path failed for this key: launch directly */
    cudaGraph_t g; /* kept: the exec's node is named by the graph's node */
    cudaGraphNode_t node;
    cudaGraphExec_t gx;
};

void graph_drop(StreamGraph &x)
{
    bool failed = false;
    if (x.gx)
        failed |= cudaGraphExecDestroy(x.gx) != cudaSuccess;
    if (x.g)
        failed |= cudaGraphDestroy(x.g) != cudaSuccess;
    if (failed)
        (void)cudaGetLastError(); /* a context reset since: nothing to report */
    x = StreamGraph{};
}

/* The key's hash for the admission filter (pf_gpu__graph_lru_miss): FNV-1a
 * over the fields, never 0 (an empty remembered entry). */
unsigned long long key_hash(const GraphKey &k)
{
    const unsigned long long w[] = {(unsigned long long)(uintptr_t)k.f, (unsigned long long)k.dev,
                                    (unsigned long long)(uintptr_t)k.st, k.grid.x, k.grid.y,
                                    k.grid.z, (unsigned long long)k.smem};
    unsigned long long h = 1469598103934665603ull;
    for (unsigned long long x : w)
        for (int b = 0; b < 8; b++, x >>= 8)
            h = (h ^ (x & 0xff)) * 1099511628211ull;
    return h ? h : 1;
}

/* A thread's graphs, a slot each, and the policy's state that decides
 * which keys get one (pf_gpu_graph_lru, gpu_internal.h); destroyed when
 * the thread ends. */
struct GraphCache {
    StreamGraph e[PF_GPU_GRAPH_SLOTS];
    pf_gpu_graph_lru lru;
    ~GraphCache()
    {
        for (StreamGraph &x : e)
            graph_drop(x);
    }
};

/* x's graph dropped and its key kept, marked direct (graph_launch). */
void graph_refused(StreamGraph &x)
{
    const GraphKey key = x.key;
    graph_drop(x);
    x.key = key;
    x.direct = true;
}

/* x made for fn (the host stub) on its key's stream: a graph of one
 * kernel node with this launch's configuration and arguments,
 * instantiated. false when the runtime refuses. */
bool graph_make(StreamGraph &x, const void *fn, dim3 grid, int smem, void **params)
{
    g_graph_makes.fetch_add(1, std::memory_order_relaxed);
    cudaKernelNodeParams np = {};
    np.func = const_cast<void *>(fn);
    np.gridDim = grid;
    np.blockDim = dim3(kThreads);
    np.sharedMemBytes = (unsigned)smem;
    np.kernelParams = params;
    if (cudaGraphCreate(&x.g, 0) != cudaSuccess ||
        cudaGraphAddKernelNode(&x.node, x.g, nullptr, 0, &np) != cudaSuccess ||
        cudaGraphInstantiate(&x.gx, x.g, 0) != cudaSuccess) {
        (void)cudaGetLastError(); /* the direct launch reports what matters */
        return false;
    }
    return true;
}

/* Launch as a replay of the stream's graph (above); false when it did not
 * (nothing enqueued), for the caller to launch directly. A key whose graph
 * could not be made or replayed is remembered as direct, so that a
 * configuration the graph path refuses costs one attempt, not one a run. */
bool graph_launch(const void *fn, CUfunction f, int dev, dim3 grid, int smem, cudaStream_t st,
                  void **params)
{
    const GraphFns *G = graph_fns();
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!G || G->capturing((CUstream)st, &cs) != CUDA_SUCCESS || cs != CU_STREAM_CAPTURE_STATUS_NONE)
        return false;
    static thread_local GraphCache c;
    const GraphKey key = {f, dev, st, grid, smem};
    /* The launch's grid and shared memory are part of the key: an exec
     * made for one grid and set to a larger one launched about 64 us
     * slower on an H100 (docs/gpu-journal.md, thirty-fifth session:
     * gpu/peers.py's llama, 512 blocks, after long's 256 on the same
     * kernel, 0.410 against 0.346 ms a run, and 0.347 with direct
     * launches), so each shape a stream runs gets a graph of its own,
     * when it repeats (pf_gpu_graph_lru). */
    StreamGraph *x = nullptr;
    /* f is never null: an empty slot matches nothing */
    for (int i = 0; i < PF_GPU_GRAPH_SLOTS && !x; i++)
        if (same_key(c.e[i].key, key)) {
            x = &c.e[i];
            pf_gpu__graph_lru_hit(&c.lru, i);
        }
    if (x && x->direct)
        return false;
    if (!x) {
        const int slot = pf_gpu__graph_lru_miss(&c.lru, key_hash(key));
        if (slot < 0)
            return false; /* seen once, or every slot in use: launch directly */
        x = &c.e[slot];
        graph_drop(*x);
        x->key = key;
        if (!graph_make(*x, fn, grid, smem, params)) {
            graph_refused(*x);
            return false;
        }
    }
    CUDA_KERNEL_NODE_PARAMS np = {};
    np.func = f;
    np.gridDimX = grid.x;
    np.gridDimY = grid.y;
    np.gridDimZ = grid.z;
    np.blockDimX = kThreads;
    np.blockDimY = 1;
    np.blockDimZ = 1;
    np.sharedMemBytes = (unsigned)smem;
    np.kernelParams = params;
    if (G->set(x->gx, x->node, &np) == CUDA_SUCCESS && G->launch(x->gx, (CUstream)st) == CUDA_SUCCESS)
        return true;
    graph_refused(*x);
    return false;
}

/* pf_gpu__launch_direct's switch: this thread's runs launch directly */
static thread_local bool t_direct;

/* Launch fn on grid x kThreads threads with smem bytes of dynamic shared
 * memory, its parameters as cudaLaunchKernel takes them: a replay of the
 * stream's graph (above), else the driver's launch, else the runtime's;
 * `direct` skips the graph. With cluster_x > 1, as clusters of cluster_x
 * blocks along x (versions 9, 10 and 31), directly: by the driver's
 * cuLaunchKernelEx, else the runtime's cudaLaunchKernelExC. */
int launch_kernel(const void *fn, dim3 grid, int smem, cudaStream_t st, void **params,
                  int cluster_x, bool direct)
{
    direct = direct || t_direct;
    static const LaunchFn drv =
        driver_launch_on() ? (LaunchFn)driver_entry("cuLaunchKernel") : nullptr;
    static const LaunchExFn drv_ex =
        driver_launch_on() ? (LaunchExFn)driver_entry("cuLaunchKernelEx") : nullptr;
    cudaError_t e;
    int dev = 0;
    const CUfunction f = (cluster_x > 1 ? drv_ex != nullptr : drv != nullptr)
                             ? driver_function(fn, &dev)
                             : nullptr;
    if (f && !direct && cluster_x == 1 && graph_launch(fn, f, dev, grid, smem, st, params))
        return PF_OK;
    if (cluster_x > 1) {
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
 * loops differ by the run's own work only; `direct`: by the driver's launch
 * (no graph), what a run would pay without its graph. */
extern "C" int pf_gpu_launch_empty(void *stream, int direct)
{
    AttnArgs<__nv_bfloat16> a = {};
    void *params[1] = {&a};
    return pf_kern::launch_kernel((const void *)empty_kernel, dim3(1), 0, (cudaStream_t)stream,
                                  params, 1, direct != 0);
}

extern "C" void pf_gpu__launch_direct(int on)
{
    pf_kern::t_direct = on != 0;
}

extern "C" unsigned pf_gpu__graph_makes(void)
{
    return pf_kern::g_graph_makes.load(std::memory_order_relaxed);
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
