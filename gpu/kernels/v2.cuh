/* gpu/kernels/v2.cuh - versions 2-5: a cp.async pipeline a thread; and what every
 * later version ends in: the block's log-sum-exp merge (attn_finish), the
 * partial outputs and the in-place merge of a sequence's chunks (through
 * the workspace, or in a cluster: attn_finish_cluster, versions 9, 10 and
 * 31), the block timeline's marks (trace_mark), the lazy rescale's
 * threshold.
 *
 * Part of gpu/kernels.cuh, which includes the parts in order; CUDA C++,
 * inside gpu/ only. Everything is in the unnamed namespace: each element
 * type's translation unit keeps the instances it makes to itself. */
#pragma once

#include "gpu/kernels/common.cuh"

namespace {

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
/* version 28's form: to a shared-memory address, always whole (no
 * src-size operand, so no register for it) */
__device__ __forceinline__ void cp_async16_s(unsigned s, const void *gmem)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
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

/* How a kernel that merges in place orders a split sequence's merge
 * (merge_if_last; the attn_mma kernels' END):
 *   kEndFence    versions 5-8 and 12-30: thread 0 fences (__threadfence,
 *                a sequentially consistent fence) and counts with a
 *                relaxed atomic; the last block's every thread fences again
 *                before reading the partials back;
 *   kEndCluster  version 31: a cluster's distributed shared memory
 *                (attn_finish_cluster), no workspace;
 *   kEndAcqRel   version 32: the count is one acquire-release atomic of
 *                thread 0 and nothing else. Its release half publishes the
 *                block's partials (every thread's stores come before it
 *                through the barrier: release is cumulative); its acquire
 *                half, in the last block, comes before every thread's
 *                reads through the next barrier. The PTX memory model's
 *                message-passing pattern, as libcu++'s barriers use it. The
 *                last block of the launch pays this chain after its own
 *                stream, so the twenty-fifth session took the fences off it
 *                (long, 8 chunks a sequence, ran 1.5% behind llama, the same
 *                512 blocks of 4096 tokens unsplit);
 *   kEndPack     version 33: no split to merge. The block streams several
 *                whole sequences (a pack, gpu/host.c), a warp each, and
 *                each warp writes its sequence's output from its registers
 *                (mma.cuh, version 33). */
enum { kEndFence = 0, kEndCluster = 1, kEndAcqRel = 2, kEndPack = 3 };

/* The split-KV merge without a second launch (version 5 on). Each block of a split
 * sequence, its partials stored, counts itself done for its (sequence, head
 * tile); the block that counts last merges all chunks (the `rows` query
 * heads qh0 ..) and resets the counter to 0 for the next run (no other
 * block of this launch touches it after that). Partials written by other
 * SMs are read through L2 (__ldcg). The workspace's counters start at zero
 * (pf_gpu_attn_workspace_init). Every thread of the block calls it. END:
 * kEndFence or kEndAcqRel, above. */
template <typename T, int D, int END = kEndFence>
__device__ __forceinline__ void merge_if_last(const AttnArgs<T> &a, int *sm_last, const Work &job,
                                              int qh0, int rows, int len)
{
    static_assert(END == kEndFence || END == kEndAcqRel, "a workspace merge");
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
         * one a thread); kEndAcqRel: the count's own release does */
        unsigned *cnt = a.counters + (size_t)seq * a.htiles + ht;
        unsigned prev;
        if constexpr (END == kEndAcqRel) {
            asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
                         : "=r"(prev)
                         : "l"(cnt), "r"(mine)
                         : "memory");
        } else {
            __threadfence();
            prev = atomicAdd(cnt, mine);
        }
        *sm_last = prev + mine == (unsigned)nch;
        if (*sm_last)
            *cnt = 0u;
    }
    __syncthreads();
    if (!*sm_last)
        return;
    if constexpr (END == kEndFence)
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
template <typename T, int D, int GT, int NP, bool FUSED, int END = kEndFence>
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
    merge_if_last<T, D, END>(a, sm_last, job, qh0, GT, len);
}

namespace cg = cooperative_groups;

/* The end of versions 9, 10 and 31: the split-KV merge inside a thread-block
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
 * zeros.
 *
 * The sums run in merge_partials' order (ranks = chunks, from 0; an empty
 * rank adds an exact 0) and the output is O / L as there, so a split
 * sequence's output is bitwise what the in-place merge of version 29 gives
 * it (version 31 is 29 with this end; until the twenty-fifth session the
 * output was O times 1 / L, a rounding apart). */
template <typename T, int D, int GT, int NP>
__device__ void attn_finish_cluster(const AttnArgs<T> &a, const float *sm_m, const float *sm_l,
                                    float *sm_acc, float *cl_lse, int seq, int qh0, bool empty)
{
    constexpr int RMAX = PF_GPU_CLUSTER_MAX;
    __shared__ float w_all[RMAX][GT]; /* rank r's weight for head g, 0 if empty */
    __shared__ float sum_w[GT];       /* the sum of the weights                */
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
        sum_w[g] = L;
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
        a.out[((size_t)seq * a.hq + qh0 + g) * D + d] = Elt<T>::store(O / sum_w[g]);
    }
    cl.sync();
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
template <typename T> __device__ __forceinline__ void trace_write(const AttnArgs<T> &a, int what)
{
    if (!a.trace)
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
/* thread 0's mark; version 37's kTrReady is written by lane 0 of whichever
 * warp claimed the chunk's first tile (trace_write) */
template <typename T> __device__ __forceinline__ void trace_mark(const AttnArgs<T> &a, int what)
{
    if (threadIdx.x == 0)
        trace_write(a, what);
}

/* Versions 7 on and 12: the running max moves only when a tile's max
 * passes it by more than this (base 2; version 7's comment, point 3). */
constexpr float kLazy = 8.f;

} /* namespace */
