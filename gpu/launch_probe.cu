/* gpu/launch_probe.cu - what one kernel launch costs the host, by the way it
 * is made.
 *
 * `pagefault bench` reports a run's host time beside the same loop launching
 * an empty kernel with the attention kernels' 160-byte argument block
 * (pf_gpu_launch_empty): on the device machine the empty launch alone took
 * 3.5-6.8 us (docs/gpu-journal.md, eleventh session), so the issue's 5 us target
 * is set by the launch, not by our run. This program asks whether another
 * way of launching the same kernel costs less:
 *
 *   chevron      kernel<<<grid, block, 0, stream>>>(args): the runtime's
 *                launch as our run makes it (the compiler's stub pushes
 *                the configuration, then calls cudaLaunchKernel);
 *   runtime      cudaLaunchKernel(fn, ...) directly;
 *   runtime-ex   cudaLaunchKernelEx with a config and no attributes;
 *   driver       cuLaunchKernel on the CUfunction that cudaGetFuncBySymbol
 *                gives (no lookup from the host stub to the function);
 *   driver-buf   the same, the arguments passed as one buffer
 *                (CU_LAUNCH_PARAM_BUFFER_POINTER) instead of a pointer per
 *                parameter;
 *   driver-ex    cuLaunchKernelEx;
 *   graph        cudaGraphLaunch of a graph of one kernel node (what a
 *                caller that captures a run pays per replay);
 *   graph-set    the same graph, its node given new arguments first
 *                (cudaGraphExecKernelNodeSetParams, then cudaGraphLaunch):
 *                what a run would pay if it replayed a graph the plan
 *                made once instead of launching. The arguments change on
 *                every call (a decode step's pointers and lengths do), so
 *                nothing can be skipped. It was: 1.57-2.73 us against
 *                cuLaunchKernel's 3.07-3.72 (H100, thirtieth session), so
 *                the run takes that path (gpu/kernels.cu, graph_launch),
 *                with a graph per stream (launches of one executable graph
 *                are ordered after one another) and a direct launch into a
 *                stream being captured (a graph cannot be launched into one;
 *                the run asks the driver, a host-side check);
 *   graph-ring   graph-set over 16 graphs of the same node, each launch the
 *                next one's (the run's graph cache's slots, replayed in
 *                turn as a loop over 16 grids replays them): whether a
 *                replay costs more when the last launch was another graph's;
 *   graph-make   a graph of one node made, instantiated, launched and
 *                destroyed: what a run pays whose key has no graph yet
 *                and gets one, and what every run paid when a loop over
 *                more grids than the cache held missed it on every run
 *                (before the thirty-sixth session; pf_gpu_graph_lru in
 *                gpu/gpu_internal.h is the policy since).
 *
 * Each is timed as the bench times a run: 50 launches on a non-blocking
 * stream with no synchronisation, the mean per launch; a round takes every
 * way once, in turn, so the host's drift falls on all of them alike; the
 * medians over ROUNDS rounds are printed, with the 160-byte block and with
 * one 8-byte pointer.
 *
 * Built with the GPU targets (gpu/CMakeLists.txt) and run by
 * gpu/device_run.sh (LAUNCH=1), as is and pinned to one CPU:
 * pagefault_launch_probe [ROUNDS] (default 30). Exit status 2 for a bad
 * argument, 77 without a device. */
#include <cuda.h> /* the driver's types only */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#define CK(x)                                                                                \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "launch_probe: %s: %s\n", #x, cudaGetErrorString(e_));           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define CKD(x)                                                                               \
    do {                                                                                     \
        CUresult r_ = (x);                                                                   \
        if (r_ != CUDA_SUCCESS) {                                                            \
            fprintf(stderr, "launch_probe: %s: driver error %d\n", #x, (int)r_);             \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

namespace {

/* the size of AttnArgs<T> in gpu/kernels/common.cuh */
struct Args160 {
    unsigned long long w[20];
};
static_assert(sizeof(Args160) == 160, "the attention kernels' argument block");

__global__ void empty160(const Args160 a) { (void)a; }
__global__ void empty8(const void *p) { (void)p; }

constexpr int kLoop = 50;   /* launches a timing, as host_loop_us (gpu/gpu.cu) */
constexpr int kBlocks = 512; /* llama's grid; the host does not see its size */

double now_us()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

enum Way {
    CHEVRON, RUNTIME, RUNTIME_EX, DRIVER, DRIVER_BUF, DRIVER_EX, GRAPH, GRAPH_SET, GRAPH_RING,
    GRAPH_MAKE, NWAYS
};
const char *const kName[NWAYS] = {"chevron",   "runtime",   "runtime-ex", "driver",
                                  "driver-buf", "driver-ex", "graph",      "graph-set",
                                  "graph-ring", "graph-make"};
constexpr int kRing = 16; /* graph-ring's graphs: the run's cache's slots */

/* the driver's launches, reached as gpu/kernels.cu reaches them (the
 * runtime's entry-point query), so that nothing links libcuda */
typedef CUresult (*LaunchFn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*LaunchExFn)(const CUlaunchConfig *, CUfunction, void **, void **);

void *entry(const char *name)
{
    void *f = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    CK(cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !f) {
        fprintf(stderr, "launch_probe: the driver has no %s\n", name);
        exit(1);
    }
    return f;
}

struct Kit {
    LaunchFn launch;
    LaunchExFn launch_ex;
    cudaStream_t st;
    bool big;          /* the 160-byte block, else one pointer */
    Args160 a;
    const void *p;
    const void *fn;    /* host stub */
    CUfunction cf;
    cudaGraph_t g;       /* kept: graph-set names its node */
    cudaGraphNode_t node;
    cudaGraphExec_t gx;
    cudaGraph_t rg[kRing]; /* graph-ring's */
    cudaGraphNode_t rnode[kRing];
    cudaGraphExec_t rgx[kRing];
    unsigned ring;
};

/* One kernel node of the probe's kernel, arguments params, as a graph,
 * instantiated. */
void make_graph(const Kit &k, void **params, cudaGraph_t *g, cudaGraphNode_t *node,
                cudaGraphExec_t *gx)
{
    cudaKernelNodeParams np = {};
    np.func = (void *)k.fn;
    np.gridDim = dim3(kBlocks);
    np.blockDim = dim3(128);
    np.kernelParams = params;
    CK(cudaGraphCreate(g, 0));
    CK(cudaGraphAddKernelNode(node, *g, nullptr, 0, &np));
    CK(cudaGraphInstantiate(gx, *g, 0));
}

void launch(Kit &k, Way w)
{
    void *params[1] = {k.big ? (void *)&k.a : (void *)&k.p};
    const size_t bytes = k.big ? sizeof k.a : sizeof k.p;
    switch (w) {
    case CHEVRON:
        if (k.big)
            empty160<<<kBlocks, 128, 0, k.st>>>(k.a);
        else
            empty8<<<kBlocks, 128, 0, k.st>>>(k.p);
        break;
    case RUNTIME: CK(cudaLaunchKernel(k.fn, dim3(kBlocks), dim3(128), params, 0, k.st)); break;
    case RUNTIME_EX: {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(kBlocks);
        cfg.blockDim = dim3(128);
        cfg.stream = k.st;
        CK(cudaLaunchKernelExC(&cfg, k.fn, params));
        break;
    }
    case DRIVER:
        CKD(k.launch(k.cf, kBlocks, 1, 1, 128, 1, 1, 0, (CUstream)k.st, params, nullptr));
        break;
    case DRIVER_BUF: {
        void *buf = params[0];
        size_t size = bytes;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                         CU_LAUNCH_PARAM_END};
        CKD(k.launch(k.cf, kBlocks, 1, 1, 128, 1, 1, 0, (CUstream)k.st, nullptr, extra));
        break;
    }
    case DRIVER_EX: {
        CUlaunchConfig cfg = {};
        cfg.gridDimX = kBlocks;
        cfg.gridDimY = cfg.gridDimZ = 1;
        cfg.blockDimX = 128;
        cfg.blockDimY = cfg.blockDimZ = 1;
        cfg.hStream = (CUstream)k.st;
        CKD(k.launch_ex(&cfg, k.cf, params, nullptr));
        break;
    }
    case GRAPH: CK(cudaGraphLaunch(k.gx, k.st)); break;
    case GRAPH_SET:
    case GRAPH_RING: {
        /* new arguments each call, as a decode step's differ from the last */
        if (k.big)
            k.a.w[0] ^= 0x100;
        else
            k.p = (const char *)k.p + 0x100;
        cudaKernelNodeParams np = {};
        np.func = (void *)k.fn;
        np.gridDim = dim3(kBlocks);
        np.blockDim = dim3(128);
        np.kernelParams = params;
        cudaGraphExec_t gx = k.gx;
        cudaGraphNode_t node = k.node;
        if (w == GRAPH_RING) {
            const unsigned i = k.ring++ % kRing;
            gx = k.rgx[i];
            node = k.rnode[i];
        }
        CK(cudaGraphExecKernelNodeSetParams(gx, node, &np));
        CK(cudaGraphLaunch(gx, k.st));
        break;
    }
    case GRAPH_MAKE: {
        /* a graph of one node made, instantiated, launched and destroyed
         * (the driver frees it when the launch is done) */
        cudaGraph_t g;
        cudaGraphNode_t node;
        cudaGraphExec_t gx;
        make_graph(k, params, &g, &node, &gx);
        CK(cudaGraphLaunch(gx, k.st));
        CK(cudaGraphExecDestroy(gx));
        CK(cudaGraphDestroy(g));
        break;
    }
    default: break;
    }
}

double loop_us(Kit &k, Way w)
{
    const double t0 = now_us();
    for (int i = 0; i < kLoop; i++)
        launch(k, w);
    const double us = (now_us() - t0) / kLoop;
    CK(cudaStreamSynchronize(k.st));
    return us;
}

void setup(Kit &k, bool big)
{
    memset(&k, 0, sizeof k);
    k.big = big;
    for (int i = 0; i < 20; i++)
        k.a.w[i] = 0x1000u * (i + 1);
    k.fn = big ? (const void *)empty160 : (const void *)empty8;
    k.launch = (LaunchFn)entry("cuLaunchKernel");
    k.launch_ex = (LaunchExFn)entry("cuLaunchKernelEx");
    CK(cudaStreamCreateWithFlags(&k.st, cudaStreamNonBlocking));
    cudaFunction_t f;
    CK(cudaGetFuncBySymbol(&f, k.fn));
    k.cf = (CUfunction)f;
    /* the graph: one launch of the same kernel, captured */
    CK(cudaStreamBeginCapture(k.st, cudaStreamCaptureModeThreadLocal));
    launch(k, CHEVRON);
    CK(cudaStreamEndCapture(k.st, &k.g));
    size_t nodes = 1;
    CK(cudaGraphGetNodes(k.g, &k.node, &nodes));
    if (nodes != 1) {
        fprintf(stderr, "launch_probe: the captured graph has %zu nodes, not 1\n", nodes);
        exit(1);
    }
    CK(cudaGraphInstantiate(&k.gx, k.g, 0));
    void *params[1] = {big ? (void *)&k.a : (void *)&k.p};
    for (int i = 0; i < kRing; i++)
        make_graph(k, params, &k.rg[i], &k.rnode[i], &k.rgx[i]);
}

} /* namespace */

int main(int argc, char **argv)
{
    long rounds = 30;
    if (argc == 2) {
        char *end = nullptr;
        rounds = strtol(argv[1], &end, 10);
        if (end == argv[1] || *end)
            rounds = 0;
    }
    if (argc > 2 || rounds < 1 || rounds > 10000) {
        fprintf(stderr, "usage: launch_probe [ROUNDS, 1..10000]\n");
        return 2;
    }
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        fprintf(stderr, "launch_probe: no CUDA device\n");
        return 77;
    }
    CK(cudaFree(nullptr));
    for (int big = 1; big >= 0; big--) {
        Kit k;
        setup(k, big);
        for (int w = 0; w < NWAYS; w++) /* warm: lazy loading, first-launch set-up */
            for (int i = 0; i < 4; i++)
                loop_us(k, (Way)w);
        std::vector<double> t[NWAYS];
        for (long r = 0; r < rounds; r++)
            for (int w = 0; w < NWAYS; w++)
                t[w].push_back(loop_us(k, (Way)w));
        printf("arguments %s, %ld rounds of %d launches (host us a launch):\n",
               big ? "160 bytes (AttnArgs)" : "8 bytes (one pointer)", rounds, kLoop);
        printf("  %-11s %7s %7s %7s %7s\n", "way", "min", "median", "p90", "max");
        for (int w = 0; w < NWAYS; w++) {
            std::vector<double> &v = t[w];
            std::sort(v.begin(), v.end());
            printf("  %-11s %7.2f %7.2f %7.2f %7.2f\n", kName[w], v.front(), v[v.size() / 2],
                   v[v.size() * 9 / 10], v.back());
        }
        CK(cudaGraphExecDestroy(k.gx));
        CK(cudaGraphDestroy(k.g));
        for (int i = 0; i < kRing; i++) {
            CK(cudaGraphExecDestroy(k.rgx[i]));
            CK(cudaGraphDestroy(k.rg[i]));
        }
        CK(cudaStreamDestroy(k.st));
    }
    return 0;
}
