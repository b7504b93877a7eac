/* gpu/stream_probe.cu - where the last 5% of decode attention's bandwidth
 * goes: version 7's copy pipeline with the arithmetic taken out.
 *
 * Version 7 streams llama's K/V at 0.93-0.95 of the read bandwidth, its
 * naive pass at 0.95; cuDNN reaches 0.97 on contiguous K/V. The block
 * timeline (docs/gpu-journal.md, sixth session) shows the SMs finishing over
 * 40 us. This program asks, on the device alone and without any attention
 * arithmetic, what a pipeline of the same shape reaches: 128-thread blocks,
 * each thread copying 4 K and 4 V vectors of 16 bytes a stage by cp.async
 * into its own shared-memory slots (16 KB a stage), 2 stages in flight (v7),
 * 3 (v8) or 4, then reading back what it copied. Each configuration is timed
 * beside read_bw (pf_gpu_launch_read_bw: plain 16-byte streaming loads over
 * the whole buffer, the figure `pagefault bench` divides by), in one
 * process, each launch after an L2 flush, median of 15 CUDA-event timings.
 *
 * The K/V of "stream" s (one block's work: one sequence's KV head) are
 * contiguous (the naive layout) or pages of 2, 4 or 32 KB (bf16 D=128
 * pages of 8, 16 or 128 tokens) scattered by a random permutation, as the
 * bench shuffles its frames. A static block first copies its slice of the
 * permutation into shared memory, as v7 copies its slice of the block
 * table; what is left out is the attention arithmetic: this is the ceiling
 * of the copy shape and the access pattern.
 *
 * Modes:
 *   static   one block a stream, the hardware's block order (v7);
 *   subset   one wave of blocks, but only those on SMs with id < N stream
 *            (are the SMs' shares of the bandwidth fixed, or does the
 *            DRAM's total follow the SMs that ask?);
 *   dynamic  one wave of persistent blocks taking `piece` bytes of the
 *            streams at a time from one atomic counter (the balance work
 *            stealing buys, without its bookkeeping).
 * Every row runs at 4 blocks an SM, as v7 does (the probe pads its shared
 * memory to get there; the row prints the occupancy calculator's figure),
 * unless it says otherwise. Some static rows also record every block's SM
 * and end time and print how the SMs' last ends spread.
 *
 * Built with the GPU targets (gpu/CMakeLists.txt) and run by
 * gpu/device_run.sh (PROBE=1): pagefault_stream_probe [STREAMS [MB [PAD]]],
 * by default 512 streams of 1 MB of K (and of V): llama's 64 sequences x 8
 * KV heads of 4096 tokens x 256 bytes. With PAD (MB allocated before K and
 * V), it runs the thirteenth and fourteenth sessions' rows instead:
 * placement, address translation, L2 prefetch, balance by the block
 * scheduler (each stream's tail as blocks of its own) and the pool's frame
 * layout (device_run.sh: PROBE_PADS). With the word `translation` in
 * PAD's place it runs the seventeenth session's rows: the same shuffled
 * pages in a buffer from cudaMalloc and in one mapped through the driver's
 * virtual memory calls at a 512 MB boundary, with the shuffle kept within
 * windows of 2 MB to 128 MB (device_run.sh: PROBE_TRANSLATION=1). With
 * the word `step` there it runs the thirty-fifth session's rows: the
 * frame layout's heads read in step by a thread-block cluster
 * (device_run.sh: PROBE_STEP=1; pagefault_stream_probe 256 2 step is
 * long's shape). Exit
 * status 2 for bad arguments, 77 without a device. */
#include <cuda.h> /* the driver's types: the translation rows' mappings */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/gpu_internal.h" /* pf_gpu_launch_read_bw: the bench's probe */

#include <algorithm>
#include <random>
#include <vector>

#define CK(x)                                                                                \
    do {                                                                                     \
        cudaError_t e_ = (x);                                                                \
        if (e_ != cudaSuccess) {                                                             \
            fprintf(stderr, "stream_probe: %s: %s\n", #x, cudaGetErrorString(e_));           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

namespace {

constexpr int kThreads = 128;
constexpr int kVec = 4;                         /* K (and V) vectors a thread a stage */
constexpr int kStageK = kVec * kThreads * 16;   /* 8 KB of K (and of V) a stage       */
constexpr int kTblMax = 1024;                   /* a stream's pieces, at most      */

struct Probe {
    const uint4 *k, *v;
    long long kbytes;    /* one buffer's bytes (a power of two)                 */
    long long sbytes;    /* one stream's K bytes                                */
    int run_shift;       /* log2 of the shuffled piece's bytes (0: contiguous)  */
    const int *perm;     /* piece i of the logical bytes is physical piece perm[i] */
    int streams;
    int active_sms;      /* subset: SMs with a smaller id stream                */
    int work;            /* rounds of arithmetic a vector (consume)             */
    int l2_ahead;        /* static: prefetch stage i + S - 1 + this into L2 (0: none) */
    int l2_line;         /* that prefetch: 0 the bulk 2 KB, 1 one line (prefetch.global.L2) */
    int home;            /* static: a block takes its stream by the SM it runs on (home_stream) */
    int sms;             /* home: the device's SMs                              */
    unsigned *cur;       /* home: sms claim cursors, then a count of blocks out */
    long long piece;     /* dynamic: stream bytes taken at a time (K's)         */
    int tail_pieces;     /* static: each stream's last tail_bytes as this many blocks */
    long long tail_bytes; /* (after the streams' own blocks; 0: no tail blocks)  */
    int cluster;         /* static: blocks a thread-block cluster (0: none)     */
    int in_step;         /* with cluster: a cluster barrier every stage        */
    unsigned long long *counter;
    unsigned long long *rec; /* per block: start, end (ns), SM; null: none   */
    unsigned *sink;
};

__device__ __forceinline__ unsigned long long now_ns()
{
    unsigned long long x;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(x));
    return x;
}

__device__ __forceinline__ unsigned sm_id()
{
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

/* The dynamic buffer rounded up to the 128-byte grid: a cp.async target off
 * it makes the L2 serve every sector twice (docs/gpu-journal.md, fourth
 * session). */
__device__ __forceinline__ uint4 *align128(uint4 *p)
{
    return (uint4 *)(((uintptr_t)p + 127) & ~(uintptr_t)127);
}

__device__ __forceinline__ void cp16(void *dst, const void *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void wait_groups()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}
/* The cluster barrier split in two (sm_90): every thread of the cluster
 * arrives, and a wait returns once all of them have arrived. Relaxed: it
 * orders nothing in memory, it only holds the cluster's blocks together. */
__device__ __forceinline__ void cluster_arrive()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

/* Where logical byte o of the K (or V) streams lies: a piece of
 * 2^run_shift bytes through the permutation (from `tbl`, the block's
 * slice of it in shared memory, first piece `tbl0`, when given; else read
 * through L1/L2), or o itself when contiguous. */
struct Place {
    const Probe *p;
    const int *tbl;
    long long tbl0;
    __device__ __forceinline__ long long operator()(long long o) const
    {
        if (!p->run_shift)
            return o;
        const long long i = o >> p->run_shift;
        const int pg = tbl ? tbl[i - tbl0] : __ldg(p->perm + i);
        return ((long long)pg << p->run_shift) + (o & ((1LL << p->run_shift) - 1));
    }
};

/* Issue stage `o` (logical K byte of its start) into slot st. */
__device__ __forceinline__ void issue(const Probe &p, const Place &place, uint4 *buf, int st,
                                      long long o)
{
#pragma unroll
    for (int j = 0; j < kVec; j++) {
        const long long e = place(o + (long long)(j * kThreads + threadIdx.x) * 16) / 16;
        cp16(&buf[(st * 2 + 0) * kVec * kThreads + j * kThreads + threadIdx.x], p.k + e);
        cp16(&buf[(st * 2 + 1) * kVec * kThreads + j * kThreads + threadIdx.x], p.v + e);
    }
}

/* Read back this thread's vectors of stage st. With work > 0, also do
 * arithmetic on them in the manner of v7's tile, so the copies must wait
 * on it as v7's do: each vector's 8 elements (as bf16 pairs) enter `work`
 * rounds of 4 independent FMA chains (v7's 4 query heads) and a shuffle
 * reduction step for each: 32 FMAs, 8 unpacking operations, 4 shuffles
 * and 4 adds a vector, about 380 instructions a stage a round; v7's whole
 * tile is about 445 (docs/gpu-journal.md, fourth session). */
__device__ __forceinline__ unsigned consume(const uint4 *buf, int st, int work)
{
    unsigned a = 0;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < 2 * kVec; j++) {
        const uint4 x = buf[(st * 2 + j / kVec) * kVec * kThreads + (j % kVec) * kThreads +
                            threadIdx.x];
        a ^= x.x ^ x.y ^ x.z ^ x.w;
        const unsigned u[4] = {x.x, x.y, x.z, x.w};
        for (int w = 0; w < work; w++) {
#pragma unroll
            for (int e = 0; e < 8; e++) {
                const float f = __uint_as_float(e & 1 ? u[e / 2] & 0xffff0000u : u[e / 2] << 16);
#pragma unroll
                for (int g = 0; g < 4; g++)
                    acc[g] = fmaf(f, acc[g], f);
            }
#pragma unroll
            for (int g = 0; g < 4; g++)
                acc[g] += __shfl_xor_sync(0xffffffffu, acc[g], 1 << ((j + g) & 3));
        }
    }
    if (acc[0] + acc[1] + acc[2] + acc[3] == 1.5e-30f) /* keeps the arithmetic */
        a ^= 1;
    return a;
}

/* Ask the L2 for stage `o` (logical K byte of its start) without copying
 * it anywhere: threads 0-3 name its K, 4-7 its V, 2 KB each (the smallest
 * piece), by the copy engine's bulk L2 prefetch (sm_90), or by one line's
 * prefetch.global.L2 (which at least takes the piece's address translation
 * early). The hope: the stage's own copies then hit in the L2. Measured
 * (docs/gpu-journal.md, thirteenth session): both are slower than no
 * prefetch. */
__device__ __forceinline__ void prefetch_l2(const Probe &p, const Place &place, long long o)
{
    const int t = threadIdx.x;
    if (t < 8) {
        const long long e = place(o + (long long)(t & 3) * 2048);
        const char *src = (const char *)(t < 4 ? p.k : p.v) + e;
        if (p.l2_line) /* the piece's first line: its translation, warmed early */
            asm volatile("prefetch.global.L2 [%0];" ::"l"(src) : "memory");
        else
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], 2048;" ::"l"(src) : "memory");
    }
}

/* Stream [o0, o1) of the K (and V) logical bytes through an S-stage pipeline. */
template <int S>
__device__ __forceinline__ unsigned stream(const Probe &p, const Place &place, uint4 *buf,
                                           long long o0, long long o1)
{
    const int n = (int)((o1 - o0) / kStageK);
    unsigned a = 0;
#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        if (i < n)
            issue(p, place, buf, i, o0 + (long long)i * kStageK);
        commit();
    }
    for (int i = 0; i < p.l2_ahead; i++)
        if (S - 1 + i < n)
            prefetch_l2(p, place, o0 + (long long)(S - 1 + i) * kStageK);
    /* in step (a cluster, p.in_step): no block issues stage i + S - 1
     * before every block of its cluster has issued stage i + S - 2, so the
     * cluster's blocks, the heads of one sequence in the frame layout, ask
     * for the same frames within a stage of one another. The barrier's
     * wait is a stage after its arrive, so its latency hides behind one
     * stage's copies. Every block of a cluster has the same n. */
    for (int i = 0; i < n; i++) {
        if (p.in_step && i > 0)
            cluster_wait();
        if (p.l2_ahead && i + S - 1 + p.l2_ahead < n)
            prefetch_l2(p, place, o0 + (long long)(i + S - 1 + p.l2_ahead) * kStageK);
        if (i + S - 1 < n)
            issue(p, place, buf, (i + S - 1) % S, o0 + (long long)(i + S - 1) * kStageK);
        commit();
        if (p.in_step)
            cluster_arrive();
        wait_groups<S - 1>();
        a ^= consume(buf, i % S, p.work);
    }
    if (p.in_step && n > 0)
        cluster_wait(); /* the last arrive's pair: none is left pending at exit */
    wait_groups<0>();
    return a;
}

/* Streams by SM ("home"): SM y's home is streams 4y .. 4y + 3, which in
 * the frame layout are 4 heads of one sequence, reading the same frames at
 * about the same time, so an SM's 4 blocks share their address
 * translations. A block claims a slot of its own SM's home (an atomic
 * cursor), or, that home full, of the next SM's, and so on: each stream is
 * taken once, whichever SMs the blocks land on, as long as there are as
 * many blocks as streams. The last block to claim resets the cursors for
 * the next launch. With fewer streams than 4 an SM (512 on 132 SMs), the
 * last SMs' homes are empty and their blocks displace the next SM's in a
 * cascade: only 4 x SMs streams measure the sharing itself
 * (docs/gpu-journal.md, thirteenth session: it lost to the grid order). */
__device__ int home_stream(const Probe &p)
{
    __shared__ int s_sh;
    if (threadIdx.x == 0) {
        const int x = (int)(sm_id() % (unsigned)p.sms);
        int s = -1;
        for (int k = 0; k < p.sms && s < 0; k++) {
            const int y = (x + k) % p.sms;
            if (*(volatile unsigned *)&p.cur[y] >= 4u)
                continue;
            const unsigned t = atomicAdd(&p.cur[y], 1u);
            if (t < 4u && 4 * y + (int)t < p.streams)
                s = 4 * y + (int)t;
        }
        if (atomicAdd(&p.cur[p.sms], 1u) == gridDim.x - 1) {
            for (int y = 0; y <= p.sms; y++)
                p.cur[y] = 0;
        }
        s_sh = s;
    }
    __syncthreads();
    return s_sh;
}

template <int S> __global__ void __launch_bounds__(kThreads) static_kernel(Probe p)
{
    extern __shared__ __align__(128) uint4 dyn[];
    uint4 *buf = align128(dyn);
    if (p.rec && threadIdx.x == 0)
        p.rec[3 * blockIdx.x] = now_ns();
    if (p.active_sms > 0 && (int)sm_id() >= p.active_sms)
        return;
    /* the stream's slice of the permutation first, as v7 copies its slice
     * of the block table */
    __shared__ int tbl[kTblMax];
    long long s = p.home ? home_stream(p) : (long long)blockIdx.x;
    /* the block's bytes of its stream: all of them, or, with tail blocks,
     * all but the tail; block streams + j takes piece j / streams of
     * stream j % streams's tail (the hardware hands these out as the big
     * blocks end: balance by the block scheduler, in a fixed split) */
    long long o0 = s * p.sbytes, o1 = o0 + p.sbytes - p.tail_bytes;
    if (p.tail_pieces && s >= p.streams) {
        const long long j = s - p.streams, tp = p.tail_bytes / p.tail_pieces;
        s = j % p.streams;
        o0 = (s + 1) * p.sbytes - p.tail_bytes + j / p.streams * tp;
        o1 = o0 + tp;
    }
    unsigned a = 0;
    if (s >= 0 && s < p.streams) {
        Place place{&p, nullptr, 0};
        if (p.run_shift) {
            const long long i0 = o0 >> p.run_shift;
            const int n = (int)((o1 - o0) >> p.run_shift);
            for (int i = threadIdx.x; i < n; i += kThreads)
                tbl[i] = p.perm[i0 + i];
            __syncthreads();
            place.tbl = tbl;
            place.tbl0 = i0;
        }
        a = stream<S>(p, place, buf, o0, o1);
    }
    if (p.rec && threadIdx.x == 0) {
        p.rec[3 * blockIdx.x + 1] = now_ns();
        p.rec[3 * blockIdx.x + 2] = sm_id();
    }
    if (a == 0x9e3779b9u)
        *p.sink = a;
}

/* Persistent blocks: each takes `piece` bytes of the streams at a time
 * from one counter. The pipeline runs on across pieces (no drain between
 * them): when a block issues the first stage of its piece P it claims
 * piece P + 1, so a claim's latency hides behind a whole piece of copying,
 * and one barrier a piece makes the claim visible. The last block to leave
 * resets the counter. */
template <int S> __global__ void __launch_bounds__(kThreads) dynamic_kernel(Probe p)
{
    extern __shared__ __align__(128) uint4 dyn[];
    uint4 *buf = align128(dyn);
    __shared__ long long claim[4];
    const long long npieces = (long long)p.streams * p.sbytes / p.piece;
    const int spp = (int)(p.piece / kStageK);
    if (threadIdx.x == 0) {
        claim[0] = (long long)atomicAdd(p.counter, 1ull);
        claim[1] = (long long)atomicAdd(p.counter, 1ull);
    }
    __syncthreads();
    bool stop = false;
    long long issued = 0;
    /* issue stage g of this block's stages, unless its piece is past the end */
    auto next = [&](long long g) {
        if (stop)
            return;
        const long long P = g / spp;
        if (g % spp == 0 && P >= 1) {
            __syncthreads(); /* claim[P] (made a piece ago) visible to all */
            if (threadIdx.x == 0)
                claim[(P + 1) & 3] = (long long)atomicAdd(p.counter, 1ull);
        }
        const long long c = claim[P & 3];
        if (c >= npieces) {
            stop = true;
            return;
        }
        issue(p, Place{&p, nullptr, 0}, buf, (int)(g % S), c * p.piece + (g % spp) * kStageK);
        issued++;
    };
    unsigned a = 0;
#pragma unroll
    for (int i = 0; i < S - 1; i++) {
        next(i);
        commit();
    }
    for (long long g = 0; g < issued; g++) {
        next(g + S - 1);
        commit();
        wait_groups<S - 1>();
        a ^= consume(buf, (int)(g % S), p.work);
    }
    wait_groups<0>();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(p.counter + 1, 1ull) == gridDim.x - 1) {
            p.counter[0] = 0;
            p.counter[1] = 0;
        }
    }
    if (a == 0x9e3779b9u)
        *p.sink = a;
}

struct Ctx {
    int sms;
    uint4 *flush;
    size_t flush_n;
    unsigned *sink;
    cudaEvent_t e0, e1;
};

/* The bench's read_bw (gpu/kernels.cu) over n16 vectors at buf. */
void read_bw(Ctx &c, const void *buf, size_t n16)
{
    if (pf_gpu_launch_read_bw(buf, n16, c.sink, c.sms, nullptr) != 0) {
        fprintf(stderr, "stream_probe: the read_bw launch failed\n");
        exit(1);
    }
}

/* A buffer mapped through the driver's virtual memory calls: its
 * addresses reserved at a 512 MB boundary and backed by one physical
 * allocation, so that nothing stops the driver from mapping it with pages
 * larger than the 2 MB cudaMalloc's mappings use (Hopper's MMU also has 512
 * MB pages); whether it does is what the translation rows measure. The
 * driver's calls are reached through pf_gpu_driver_entry, as the library
 * reaches cuLaunchKernel. */
struct Mapped {
    CUdeviceptr va;
    size_t size;
    CUmemGenericAllocationHandle h;
};

void *driver_fn(const char *name)
{
    void *f = pf_gpu_driver_entry(name);
    if (!f) {
        fprintf(stderr, "stream_probe: the driver has no %s\n", name);
        exit(1);
    }
    return f;
}

#define DRV(call, ...)                                                                       \
    do {                                                                                     \
        const CUresult r_ = ((decltype(&call))driver_fn(#call))(__VA_ARGS__);                \
        if (r_ != CUDA_SUCCESS) {                                                            \
            fprintf(stderr, "stream_probe: %s failed (%d)\n", #call, (int)r_);               \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

Mapped mapped_alloc(int dev, size_t bytes)
{
    const size_t align = 512ull << 20;
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gmin = 0, grec = 0;
    DRV(cuMemGetAllocationGranularity, &gmin, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    DRV(cuMemGetAllocationGranularity, &grec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    Mapped m{};
    m.size = (bytes + align - 1) / align * align;
    DRV(cuMemCreate, &m.h, m.size, &prop, 0ull);
    DRV(cuMemAddressReserve, &m.va, m.size, align, (CUdeviceptr)0, 0ull);
    DRV(cuMemMap, m.va, m.size, (size_t)0, m.h, 0ull);
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV(cuMemSetAccess, m.va, m.size, &acc, (size_t)1);
    printf("mapped %zu MB at offset %llu MB in 512 MB (granularity: minimum %zu KB, "
           "recommended %zu KB)\n",
           m.size >> 20, (unsigned long long)((m.va & (align - 1)) >> 20), gmin >> 10,
           grec >> 10);
    return m;
}

void mapped_free(Mapped &m)
{
    DRV(cuMemUnmap, m.va, m.size);
    DRV(cuMemRelease, m.h);
    DRV(cuMemAddressFree, m.va, m.size);
}

template <typename F> double time_ms(Ctx &c, F launch)
{
    std::vector<float> t;
    for (int i = 0; i < 16; i++) {
        read_bw(c, c.flush, c.flush_n); /* 256 MB: the L2 (50 MB) holds nothing of ours */
        CK(cudaEventRecord(c.e0));
        launch();
        CK(cudaEventRecord(c.e1));
        CK(cudaEventSynchronize(c.e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, c.e0, c.e1));
        if (i > 0) /* the first is a warm-up */
            t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* The probe kernel for a mode and a stage count (2, 3 or 4). */
const void *probe_fn(bool dyn, int stages)
{
    static const void *const fns[2][3] = {
        {(const void *)static_kernel<2>, (const void *)static_kernel<3>,
         (const void *)static_kernel<4>},
        {(const void *)dynamic_kernel<2>, (const void *)dynamic_kernel<3>,
         (const void *)dynamic_kernel<4>}};
    if (stages < 2 || stages > 4) {
        fprintf(stderr, "stream_probe: %d stages unsupported\n", stages);
        exit(1);
    }
    return fns[dyn][stages - 2];
}

/* Blocks an SM the probe runs at: v7 holds 4 (by its registers); the
 * probe's own limit is its shared memory, so its dynamic shared memory is
 * padded until the occupancy calculator gives exactly this many (0: no
 * padding, as many as the stages let fit). */
int g_per_sm = 4;
int probe_smem(bool dyn, int stages)
{
    const int need = stages * 2 * kStageK + 128;
    if (!g_per_sm)
        return need;
    /* remembered: launch_probe runs between a timing's events */
    static int memo[2][5][9];
    int &m = memo[dyn][stages][g_per_sm];
    if (m)
        return m;
    for (int b = 200 * 1024; b >= need; b -= 256) {
        int n = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, probe_fn(dyn, stages), kThreads, b));
        if (n >= g_per_sm)
            return m = b;
    }
    return m = need;
}

int occupancy(bool dyn, int stages)
{
    int n = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, probe_fn(dyn, stages), kThreads,
                                                     probe_smem(dyn, stages)));
    return n;
}

/* A launch of `grid` probe blocks in clusters of `cluster` (at: the
 * configuration's one attribute, the caller's). */
cudaLaunchConfig_t cluster_config(bool dyn, int stages, int grid, int cluster,
                                  cudaLaunchAttribute *at)
{
    cudaLaunchConfig_t cfg = {};
    at->id = cudaLaunchAttributeClusterDimension;
    at->val.clusterDim.x = (unsigned)cluster;
    at->val.clusterDim.y = at->val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = probe_smem(dyn, stages);
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cfg;
}

void launch_probe(bool dyn, int stages, int grid, const Probe &p)
{
    void *args[] = {const_cast<Probe *>(&p)};
    if (!p.cluster) {
        CK(cudaLaunchKernel(probe_fn(dyn, stages), dim3(grid), dim3(kThreads), args,
                            probe_smem(dyn, stages), nullptr));
        return;
    }
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = cluster_config(dyn, stages, grid, p.cluster, &at);
    CK(cudaLaunchKernelExC(&cfg, probe_fn(dyn, stages), args));
}

/* Clusters of `cluster` blocks the machine holds at once (the occupancy
 * calculator's figure for the probe's padded shared memory). */
int clusters_at_once(int stages, int cluster)
{
    cudaLaunchAttribute at;
    const cudaLaunchConfig_t cfg = cluster_config(false, stages, cluster, cluster, &at);
    int n = 0;
    CK(cudaOccupancyMaxActiveClusters(&n, probe_fn(false, stages), &cfg));
    return n;
}

/* One traced launch: how the SMs' last block ends spread, in us after the
 * earliest block start. */
void spread(Ctx &c, bool dyn, int stages, int grid, Probe p)
{
    std::vector<unsigned long long> rec(3 * (size_t)grid, 0);
    unsigned long long *d;
    CK(cudaMalloc(&d, rec.size() * 8));
    CK(cudaMemset(d, 0, rec.size() * 8));
    p.rec = d;
    read_bw(c, c.flush, c.flush_n);
    launch_probe(dyn, stages, grid, p);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(rec.data(), d, rec.size() * 8, cudaMemcpyDeviceToHost));
    CK(cudaFree(d));
    std::vector<unsigned long long> sm_end(c.sms, 0);
    unsigned long long first = ~0ull;
    for (int b = 0; b < grid; b++) {
        if (!rec[3 * b + 1])
            continue;
        first = std::min(first, rec[3 * b]);
        const unsigned s = (unsigned)rec[3 * b + 2];
        if ((int)s < c.sms)
            sm_end[s] = std::max(sm_end[s], rec[3 * b + 1]);
    }
    std::vector<double> e;
    for (unsigned long long x : sm_end)
        if (x)
            e.push_back((double)(x - first) / 1e3);
    if (e.empty())
        return;
    std::sort(e.begin(), e.end());
    const size_t n = e.size();
    double busy = 0;
    for (double x : e)
        busy += x;
    printf("      SMs' last ends, us: first %.1f  p10 %.1f  median %.1f  p90 %.1f  last %.1f;"
           " SM time busy %.3f; %zu SMs ran a block\n",
           e[0], e[n / 10], e[n / 2], e[9 * n / 10], e[n - 1], busy / (n * e[n - 1]), n);
}

/* What every row shares: the device's context, the probe over contiguous K
 * and V, the shuffled permutations drawn so far (freed at the end), and the
 * read bandwidth each row is a fraction of. */
struct Rows {
    Ctx c;
    Probe cont;      /* K and V contiguous: the naive layout */
    long long bytes; /* K and V of every stream: what a row moves */
    double bw;       /* GB/s of read_bw over as many bytes */
    int wave;        /* one wave: v7 holds 4 blocks an SM (probe_smem keeps the probe there) */
    std::mt19937 rng{42};
    std::vector<int *> perms;
    Probe pg4k, pg2k, pg32k; /* pieces of 4, 2 and 32 KB, shuffled over the whole buffer */

    /* A shuffled permutation of the pieces of 2^shift bytes, as the bench
     * shuffles its frames (one draw from the fixed seed; the draws are
     * made in the same order every run, so every run sees the same pages).
     * window: 0 shuffles over the whole buffer; else within each run of
     * `window` pieces (2 MB of 4 KB pieces: the GPU's large page, so the
     * pieces are scattered in memory but not across translations).
     * frame_heads H (no window): the pool's layout, frames of H heads. */
    Probe shuffled(int shift, size_t window = 0, int frame_heads = 0)
    {
        const int streams = cont.streams;
        const long long sbytes = cont.sbytes;
        std::vector<int> h((size_t)((long long)streams * sbytes >> shift));
        for (size_t i = 0; i < h.size(); i++)
            h[i] = (int)i;
        if (window)
            for (size_t w0 = 0; w0 < h.size(); w0 += window)
                std::shuffle(h.begin() + w0, h.begin() + std::min(h.size(), w0 + window), rng);
        else if (!frame_heads)
            std::shuffle(h.begin(), h.end(), rng);
        else {
            /* the pool's layout: stream s is head s % H of sequence s / H;
             * the sequence's piece i lies in frame f[seq np + i] of the
             * shuffled frames, each frame H pieces, one a head */
            const size_t np = (size_t)(sbytes >> shift), frames = h.size() / frame_heads;
            std::vector<int> f(frames);
            for (size_t i = 0; i < frames; i++)
                f[i] = (int)i;
            std::shuffle(f.begin(), f.end(), rng);
            for (size_t st = 0; st < (size_t)streams; st++)
                for (size_t i = 0; i < np; i++)
                    h[st * np + i] = f[st / frame_heads * np + i] * frame_heads +
                                     (int)(st % frame_heads);
        }
        int *d;
        CK(cudaMalloc(&d, h.size() * 4));
        CK(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
        perms.push_back(d);
        Probe q = cont;
        q.run_shift = shift;
        q.perm = d;
        return q;
    }

    /* One row: a configuration timed, printed with its blocks an SM and its
     * fraction of the read bandwidth; show_spread adds a traced launch. */
    void row(const char *name, bool dyn, int stages, int grid, const Probe &q, long long moved,
             bool show_spread)
    {
        const double ms = time_ms(c, [&] { launch_probe(dyn, stages, grid, q); });
        const double gbs = moved / (ms * 1e-3) / 1e9;
        printf("%-52s %d/SM %9.4f %9.0f %8.3f\n", name, occupancy(dyn, stages), ms, gbs,
               gbs / bw);
        if (show_spread)
            spread(c, dyn, stages, grid, q);
    }
};

/* The default rows (up to the twelfth session): the copy shape's ceiling,
 * the arithmetic a stage, page and stage counts, several waves, dynamic
 * pieces and subsets of SMs. */
void rows_default(Rows &r)
{
    const long long bytes = r.bytes, sbytes = r.cont.sbytes;
    const int streams = r.cont.streams;
    r.row("static, contiguous", false, 2, streams, r.cont, bytes, true);
    r.row("static, shuffled 4 KB pages", false, 2, streams, r.pg4k, bytes, true);
    for (int w : {1, 2, 4}) { /* v7's arithmetic between the waits: about 1.2 rounds */
        char name[96];
        Probe q = r.pg4k;
        q.work = w;
        snprintf(name, sizeof name, "static, shuffled 4 KB, %d round%s of arithmetic", w,
                 w > 1 ? "s" : "");
        r.row(name, false, 2, streams, q, bytes, false);
        if (w == 1)
            r.row("static, shuffled 4 KB, 1 round, 3 stages", false, 3, streams, q, bytes, false);
    }
    r.row("static, shuffled 2 KB pages", false, 2, streams, r.pg2k, bytes, false);
    r.row("static, shuffled 32 KB pages", false, 2, streams, r.pg32k, bytes, false);
    r.row("static, 3 stages, shuffled 4 KB", false, 3, streams, r.pg4k, bytes, false);
    r.row("static, 4 stages, shuffled 4 KB", false, 4, streams, r.pg4k, bytes, false);
    {
        /* the same bytes as 4x as many quarter streams: several waves */
        Probe q = r.cont;
        q.streams = streams * 4;
        q.sbytes = sbytes / 4;
        r.row("static, 4x streams of a quarter, contiguous", false, 2, q.streams, q, bytes, true);
        q.run_shift = r.pg4k.run_shift;
        q.perm = r.pg4k.perm;
        r.row("static, 4x streams of a quarter, 4 KB", false, 2, q.streams, q, bytes, true);
        /* more in flight an SM: 6 blocks of 2 stages (32 KB each) */
        for (int per : {3, 2, 0}) { /* fewer or more blocks an SM */
            g_per_sm = per;
            r.row("static, 4x streams of a quarter, 4 KB", false, 2, q.streams, q, bytes, false);
        }
        g_per_sm = 3;
        r.row("static, 4 stages, 4x streams of a quarter, 4 KB", false, 4, q.streams, q, bytes,
              false);
        r.row("static, shuffled 4 KB pages", false, 2, streams, r.pg4k, bytes, false);
        g_per_sm = 4;
    }
    for (long long pc : {262144LL, 65536LL}) {
        char name[96];
        Probe q = r.cont;
        q.piece = pc;
        snprintf(name, sizeof name, "dynamic, %d blocks, %lld KB pieces, contiguous", r.wave,
                 pc >> 10);
        r.row(name, true, 2, r.wave, q, bytes, false);
        q = r.pg4k;
        q.piece = pc;
        snprintf(name, sizeof name, "dynamic, %d blocks, %lld KB pieces, 4 KB", r.wave, pc >> 10);
        r.row(name, true, 2, r.wave, q, bytes, false);
    }
    /* one wave of 4 blocks an SM; only the blocks on SMs below N stream
     * (each its own contiguous stream) */
    const int sms = r.c.sms;
    for (int n : {sms, sms * 3 / 4, sms / 2}) {
        char name[96];
        Probe q = r.cont;
        q.active_sms = n;
        q.streams = r.wave;
        q.sbytes = std::min(sbytes, r.cont.kbytes / r.wave / kStageK * kStageK);
        const long long moved = 2LL * q.sbytes * 4 * n;
        snprintf(name, sizeof name, "subset: %d of %d SMs stream, contiguous", n, sms);
        r.row(name, false, 2, r.wave, q, moved, false);
    }
}

/* The thirteenth and fourteenth sessions' rows (docs/gpu-journal.md): does
 * where the buffers land matter (run it with several pads), do the shuffled
 * pages cost address translations (pages shuffled within 2 MB, the GPU's
 * large page), does asking the L2 for later stages help, balance by the
 * block scheduler, and the pool's own layout (8 heads a frame) in grid
 * order or with an SM's blocks on one sequence. */
void rows_placement(Rows &r, long pad_mb)
{
    const long long bytes = r.bytes, sbytes = r.cont.sbytes;
    const int streams = r.cont.streams;
    for (const uint4 *b : {r.cont.k, r.cont.v}) /* where K and V landed, first */
        printf("%s after %ld MB: offset in 2 MB %llu KB, in 512 MB %llu MB\n",
               b == r.cont.k ? "K" : "V", pad_mb,
               (unsigned long long)(((uintptr_t)b & ((2u << 20) - 1)) >> 10),
               (unsigned long long)(((uintptr_t)b & ((512ull << 20) - 1)) >> 20));
    const Probe local = r.shuffled(12, 512);
    Probe q = r.pg4k, qc = r.cont, ql = local;
    q.work = qc.work = ql.work = 1;
    r.row("static, contiguous", false, 2, streams, r.cont, bytes, false);
    r.row("static, shuffled 4 KB pages", false, 2, streams, r.pg4k, bytes, false);
    r.row("static, 4 KB pages shuffled within 2 MB", false, 2, streams, local, bytes, false);
    r.row("static, shuffled 2 KB pages", false, 2, streams, r.pg2k, bytes, false);
    r.row("static, contiguous, 1 round of arithmetic", false, 2, streams, qc, bytes, false);
    r.row("static, shuffled 4 KB, 1 round of arithmetic", false, 2, streams, q, bytes, false);
    r.row("static, 4 KB within 2 MB, 1 round", false, 2, streams, ql, bytes, false);
    for (int line : {0, 1}) {
        Probe t = q;
        t.l2_ahead = 2;
        t.l2_line = line;
        r.row(line ? "static, shuffled 4 KB, 1 round, L2 line prefetch +2"
                   : "static, shuffled 4 KB, 1 round, L2 bulk prefetch +2",
              false, 2, streams, t, bytes, false);
    }
    {
        /* batch's shape (4x the streams, a quarter each: several waves)
         * against one wave of persistent blocks whose pipeline runs on
         * from one piece to the next, with the arithmetic */
        Probe t = q;
        t.streams = streams * 4;
        t.sbytes = sbytes / 4;
        r.row("static, 4x streams of a quarter, 4 KB, 1 round", false, 2, t.streams, t, bytes,
              false);
        for (long long pc : {sbytes / 4, 131072LL, 65536LL, 32768LL, 16384LL}) {
            char name[96];
            Probe d = q;
            d.piece = pc;
            snprintf(name, sizeof name, "dynamic, %d blocks, %lld KB pieces, 4 KB, 1 round",
                     r.wave, pc >> 10);
            r.row(name, true, 2, r.wave, d, bytes, false);
        }
    }
    /* Balance by the block scheduler with a fixed split (a deterministic
     * reduction): each stream's block stops short of a tail, cut into
     * pieces that later blocks take as SMs free up. (Attention would add a
     * partial output and its merge a piece.) {1 / the tail's share of a
     * stream, its blocks}: pieces of 16-64 KB at 1 MB a stream, each whole
     * stages. */
    const int tails[][2] = {{16, 2}, {16, 4}, {8, 2}, {8, 4}, {8, 8}, {4, 4}, {4, 8}};
    for (const auto &tl : tails) {
        Probe t = q;
        t.tail_bytes = sbytes / tl[0];
        t.tail_pieces = tl[1];
        char name[96];
        snprintf(name, sizeof name, "tail 1/%d as %d blocks of %lld KB, 4 KB, 1 round", tl[0],
                 tl[1], t.tail_bytes / tl[1] >> 10);
        r.row(name, false, 2, streams * (1 + tl[1]), t, bytes, true);
    }
    r.row("static, shuffled 4 KB, 1 round of arithmetic (again)", false, 2, streams, q, bytes,
          true);
    if (streams % 8 != 0)
        return;
    /* the pool's layout: 8 heads a frame, frames shuffled */
    const int sms = r.c.sms;
    unsigned *cur; /* the home rows' claim cursors */
    CK(cudaMalloc(&cur, (sms + 1) * sizeof(unsigned)));
    CK(cudaMemset(cur, 0, (sms + 1) * sizeof(unsigned)));
    Probe fr = r.shuffled(12, 0, 8);
    fr.sms = sms;
    fr.cur = cur;
    for (int work : {0, 1})
        for (int home : {0, 1}) {
            if (home && streams > 4 * sms) /* home_stream needs a block a stream */
                continue;
            char name[96];
            Probe t = fr;
            t.work = work;
            t.home = home;
            snprintf(name, sizeof name, "frames of 8 heads, 4 KB, %s, %d round%s",
                     home ? "by SM" : "grid order", work, work == 1 ? "" : "s");
            r.row(name, false, 2, streams, t, bytes, false);
        }
    CK(cudaFree(cur));
}

/* The thirty-fifth session's rows: is the cost of shuffled 4 KB pieces
 * the DRAM's, for pieces asked for apart, and does asking for a frame's
 * heads together take it back? In the pool's layout a frame holds 8 heads'
 * pieces side by side (32 KB of K at llama's heads and 16-token pages),
 * read by 8 blocks that start together and drift apart; a thread-block
 * cluster of those blocks with a barrier every stage (in step) keeps them
 * within a stage of one another, so the DRAM sees the frame asked for at
 * once, as it sees a 32 KB page read by one block. The rows: the
 * references (contiguous, 4 KB pieces each alone, 32 KB pages), then the
 * frame layout in grid order, in clusters without the barrier (what the
 * cluster's placement alone does) and in step, at 0 and 1 rounds of
 * arithmetic; the cluster rows trace a launch (how many SMs ran a block). */
void rows_step(Rows &r)
{
    const long long bytes = r.bytes;
    const int streams = r.cont.streams;
    if (streams % 8 != 0) {
        printf("step rows: the frame layout needs a multiple of 8 streams\n");
        return;
    }
    for (int cl : {2, 4, 8})
        printf("clusters of %d the machine holds at once (2 stages, %d blocks an SM): %d\n", cl,
               g_per_sm, clusters_at_once(2, cl));
    r.row("static, contiguous", false, 2, streams, r.cont, bytes, false);
    r.row("static, shuffled 4 KB pages (each head alone)", false, 2, streams, r.pg4k, bytes,
          false);
    r.row("static, shuffled 32 KB pages", false, 2, streams, r.pg32k, bytes, false);
    const Probe fr = r.shuffled(12, 0, 8);
    for (int work : {0, 1}) {
        char name[96];
        Probe t = fr;
        t.work = work;
        snprintf(name, sizeof name, "frames of 8 heads, 4 KB, grid order, %d round%s", work,
                 work == 1 ? "" : "s");
        r.row(name, false, 2, streams, t, bytes, work == 0);
        for (int cl : {8, 4, 2})
            for (int step : {0, 1}) {
                if (cl != 8 && !step)
                    continue;
                t.cluster = cl;
                t.in_step = step;
                snprintf(name, sizeof name, "frames of 8 heads, clusters of %d%s, %d round%s", cl,
                         step ? " in step" : "", work, work == 1 ? "" : "s");
                r.row(name, false, 2, streams, t, bytes, work == 0);
            }
    }
}

/* The seventeenth session's rows: is the shuffled pages' cost the 2 MB
 * pages' translations, and does a mapping that allows larger pages remove
 * it? Each row with one round of arithmetic, where the thirteenth session
 * found the translations cost; the two allocations alternate, twice.
 * Windows: the 4 KB pieces shuffled within each 2, 32 or 128 MB (the TLBs'
 * reach), or everywhere. */
void rows_translation(Rows &r, int dev)
{
    const long long kbytes = r.cont.kbytes;
    Mapped mk = mapped_alloc(dev, kbytes), mv = mapped_alloc(dev, kbytes);
    CK(cudaMemset((void *)mk.va, 1, kbytes));
    CK(cudaMemset((void *)mv.va, 2, kbytes));
    const size_t windows[] = {0, 512, 8192, 32768};
    std::vector<Probe> qs;
    for (size_t w : windows) {
        Probe q = w ? r.shuffled(12, w) : r.pg4k;
        q.work = 1;
        qs.push_back(q);
    }
    Probe qc = r.cont;
    qc.work = 1;
    for (int round = 0; round < 2; round++)
        for (int m = 0; m < 2; m++) {
            const char *how = m ? "mapped" : "cudaMalloc";
            char name[96];
            Probe t = qc;
            if (m) {
                t.k = (const uint4 *)mk.va;
                t.v = (const uint4 *)mv.va;
            }
            snprintf(name, sizeof name, "%s, contiguous, 1 round", how);
            r.row(name, false, 2, t.streams, t, r.bytes, false);
            for (size_t i = 0; i < qs.size(); i++) {
                Probe u = qs[i];
                u.k = t.k;
                u.v = t.v;
                if (windows[i])
                    snprintf(name, sizeof name, "%s, 4 KB shuffled within %zu MB, 1 round", how,
                             windows[i] >> 8);
                else
                    snprintf(name, sizeof name, "%s, shuffled 4 KB, 1 round", how);
                r.row(name, false, 2, u.streams, u, r.bytes, false);
            }
        }
    mapped_free(mk);
    mapped_free(mv);
}

} // namespace

/* argv's whole decimal number, or -1 */
static long whole_number(const char *s)
{
    char *end;
    const long x = strtol(s, &end, 10);
    return end != s && *end == '\0' ? x : -1;
}

int main(int argc, char **argv)
{
    /* llama's shape: 512 (sequence, KV head) streams of 4096 x 256 B of K */
    const long nstreams = argc > 1 ? whole_number(argv[1]) : 512;
    const long mb = argc > 2 ? whole_number(argv[2]) : 1;
    /* placement: allocate this many MB before K and V, then run the few
     * rows that tell whether where the buffers land moves the stream */
    const bool translation = argc > 3 && strcmp(argv[3], "translation") == 0;
    const bool step = argc > 3 && strcmp(argv[3], "step") == 0;
    const long pad_mb = argc > 3 && !translation && !step ? whole_number(argv[3]) : -1;
    /* at most 2 MB a stream: 1024 pages of 2 KB, the table slice (kTblMax) */
    if (argc > 4 || nstreams < 1 || nstreams > 4096 || mb < 1 || mb > 2 ||
        (argc > 3 && !translation && !step && (pad_mb < 0 || pad_mb > 65536))) {
        fprintf(stderr, "usage: pagefault_stream_probe [streams 1..4096] [MB of K a stream, 1"
                        " or 2] [MB allocated first, 0..65536, or the word translation or"
                        " step]\n");
        return 2;
    }
    const int streams = (int)nstreams;
    int dev = 0, nd = 0;
    if (cudaGetDeviceCount(&nd) != cudaSuccess || nd == 0) {
        fprintf(stderr, "stream_probe: no CUDA device\n");
        return 77;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    Rows r{};
    Ctx &c = r.c;
    c.sms = prop.multiProcessorCount;
    const long long sbytes = mb << 20;
    long long kbytes = 1;
    while (kbytes < streams * sbytes)
        kbytes <<= 1;
    void *pad = nullptr;
    if (pad_mb > 0)
        CK(cudaMalloc(&pad, (size_t)pad_mb << 20));
    uint4 *k, *v;
    CK(cudaMalloc(&k, kbytes));
    CK(cudaMalloc(&v, kbytes));
    CK(cudaMemset(k, 1, kbytes));
    CK(cudaMemset(v, 2, kbytes));
    c.flush_n = (256u << 20) / 16;
    CK(cudaMalloc(&c.flush, c.flush_n * 16));
    CK(cudaMemset(c.flush, 3, c.flush_n * 16));
    CK(cudaMalloc(&c.sink, 4));
    unsigned long long *counter;
    CK(cudaMalloc(&counter, 16));
    CK(cudaMemset(counter, 0, 16));
    CK(cudaEventCreate(&c.e0));
    CK(cudaEventCreate(&c.e1));
    for (int s = 2; s <= 4; s++) /* room for any padding (probe_smem) */
        for (int dyn = 0; dyn < 2; dyn++)
            CK(cudaFuncSetAttribute(probe_fn(dyn, s), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    200 * 1024));

    /* the same bytes both K and V hold, read as one streaming pass */
    r.bytes = 2 * (long long)streams * sbytes;
    uint4 *whole;
    CK(cudaMalloc(&whole, r.bytes));
    CK(cudaMemset(whole, 4, r.bytes));
    const double bw_ms = time_ms(c, [&] { read_bw(c, whole, r.bytes / 16); });
    r.bw = r.bytes / (bw_ms * 1e-3) / 1e9;
    printf("%s, %d SMs: %d streams x %ld MB of K and of V (%.0f MB)\n", prop.name, c.sms, streams,
           mb, r.bytes / 1e6);
    printf("read_bw: %.4f ms, %.0f GB/s\n", bw_ms, r.bw);
    printf("(each row: blocks an SM by the occupancy calculator, then the figures)\n\n");
    printf("%-52s %4s %9s %9s %8s\n", "configuration", "", "ms", "GB/s", "of read");

    Probe &p = r.cont;
    p.k = k;
    p.v = v;
    p.kbytes = kbytes;
    p.sbytes = sbytes;
    p.streams = streams;
    p.counter = counter;
    p.sink = c.sink;
    r.wave = c.sms * 4;
    r.pg4k = r.shuffled(12); /* drawn in this order in every mode: the same pages */
    r.pg2k = r.shuffled(11);
    r.pg32k = r.shuffled(15);
    if (translation)
        rows_translation(r, dev);
    else if (step)
        rows_step(r);
    else if (pad_mb >= 0)
        rows_placement(r, pad_mb);
    else
        rows_default(r);

    for (int *d : r.perms)
        CK(cudaFree(d));
    CK(cudaFree(pad));
    CK(cudaFree(k));
    CK(cudaFree(v));
    CK(cudaFree(whole));
    CK(cudaFree(c.flush));
    CK(cudaFree(c.sink));
    CK(cudaFree(counter));
    return 0;
}
