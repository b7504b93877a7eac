/* gpu/kernels/v7.cuh - versions 7-10 (attn_v7: version 5 with a third fewer
 * instructions; 9 and 10 merge a sequence's chunks in a thread-block
 * cluster) and 11 (attn_steal: a persistent kernel with work stealing).
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
#pragma once

#include "gpu/kernels/v2.cuh"

namespace {

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
constexpr int kMaxPieces = PF_GPU_CHUNK_MAX_TOKENS / kPiece; /* a visit's, at most */

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

} /* namespace */
