/* gpu/gpu_internal.h - pieces shared inside gpu/, not part of the public API.
 *
 * - host conversion between float and the element types (host.c, plain C),
 *   so the host rounds test data exactly as the device stores it;
 * - the threaded CPU-reference check (host.c): every sequence of a GPU
 *   output against core/attn.h's double-accumulating reference;
 * - the planning constants and the kernel launchers (kernels.cu; the kernels
 *   in kernels.cuh), called by
 *   the API in gpu.cu and the planner in host.c.
 * Callers: host.c, gpu.cu, kernels.cu and the gpu tests.
 */
#ifndef PF_GPU_INTERNAL_H
#define PF_GPU_INTERNAL_H

#include <math.h> /* pf_gpu_out_ulp */
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- planning ---- */
/* The start every plan maker shares (host.c): *plan cleared, the shape
 * validated (pf_gpu_attn_validate's answer), the kernel version in
 * [0, PF_GPU_KERNEL_VERSIONS]. PF_OK or the error to return. */
int pf_gpu__plan_begin(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged, int version);
/* The kernel version a plan of this shape, these lengths (or max_len) and
 * `version` runs, as pf_gpu_attn_plan_compute resolves it (0: the shape's
 * default; for a small launch's pairs with more than its tokens, the large
 * launch's), into *v_out: what pf_gpu_attn_plan_make sizes the SM's slots
 * by. Call it after pf_gpu__plan_begin. PF_OK or PF_ERR_ARG (lengths past
 * the capacity). */
int pf_gpu__plan_version(const pf_gpu_attn_shape *s, int paged, const int *lens_host, int max_len,
                         int version, int *v_out);
/* pf_gpu_attn_plan_compute with the occupancy of version 0's second
 * candidate (PF_GPU_MH_GQA_VERSION) given apart: mh_blocks_per_sm of its
 * blocks fit an SM where blocks_per_sm of the resolved version's do. The
 * public call passes blocks_per_sm for both; pf_gpu_attn_plan_make asks the
 * device for each kernel's. */
int pf_gpu__plan_compute_occ(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                             const int *lens_host, int max_len, int version, int sm_count,
                             int blocks_per_sm, int mh_blocks_per_sm);
/* The same plan, the slow way: every candidate chunk costed (simulated,
 * or past 2^20 blocks in grid order estimated), with no floor to skip the
 * ones that cannot win, no early stop, a heap entry a block and each work
 * list sorted whole (gpu/host.c, plan_cost_floor). The tests compare the
 * two; bench_gpu_plan times them. */
int pf_gpu__plan_compute_exhaustive(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                                    const int *lens_host, int max_len, int version, int sm_count,
                                    int blocks_per_sm, int mh_blocks_per_sm);
/* Set a made plan's chunking: the longest sequence (plan->max_len) in about
 * `splits` chunks of whole pages (at most pf_gpu_chunk_max_tokens each), and
 * the workspace that needs (a plan with a work list needs the lengths it
 * was made from, lens_host). PF_ERR_ARG when splits < 1, the chunk cannot
 * be made (more than 256 chunks) or the lengths are not the plan's. For
 * measuring the planner (the bench's --splits); plans otherwise come from
 * pf_gpu_attn_plan_compute. */
int pf_gpu__plan_set_splits(pf_gpu_attn_plan *plan, int splits, const int *lens_host);

/* Run a made plan in grid order: no work list (nor tail), the workspace it
 * then needs (for measuring the list: the bench's --grid-order). */
void pf_gpu__plan_drop_list(pf_gpu_attn_plan *plan);

/* Head tiles of a shape: the blocks one chunk of a sequence launches. */
int pf_gpu__head_tiles(const pf_gpu_attn_shape *s);
/* Blocks a (sequence, chunk) takes under the plan: KV heads x the group's
 * tiles of plan->group_tile query heads, divided among blocks of
 * pf_gpu_version_heads tiles (rounded up). */
int pf_gpu__plan_head_tiles(const pf_gpu_attn_plan *plan);
/* Thread blocks the plan's attention launch has: in grid order, chunks x
 * head tiles x sequences; from a work list, units x head tiles; version 11,
 * those items but at most one wave (sm_count x blocks_per_sm). The
 * launcher's grid and the bench's block timeline both size from it. */
long long pf_gpu__plan_blocks(const pf_gpu_attn_plan *plan);
/* Serve `tile` query heads a block instead of the plan's (for measuring
 * it: `pagefault bench --group-tile`): 1, 2, 4 or 8, dividing the group.
 * The chunking stays; the workspace is sized again. PF_ERR_ARG otherwise
 * (the plan is then unchanged). */
int pf_gpu__plan_set_group_tile(pf_gpu_attn_plan *plan, int tile);

/* One unit of a work list (host.c, "the work list"): `span` chunks from
 * chunk `chunk` of sequence `seq` (1 unless the plan has a tail), tok
 * tokens of them at the planned lengths, nch the chunks the sequence was
 * planned with. */
typedef struct {
    int tok, seq, chunk, nch, span;
} pf_gpu_unit;

/* The work list of lens[0..n) (read up to bound) at `chunk` tokens:
 * written to out (room for every unit: at most n * ceil(bound / chunk),
 * and n at least), longest first. Returns the number of units. tail 0:
 * a unit a chunk. tail > 0 (pf_gpu__plan_set_tail): the chunks of each run
 * of 8 x tail (a block's worth before the cut) go out as one unit of all
 * but the run's last `tail` chunks that hold tokens, and a unit for each
 * of those. */
long long pf_gpu__plan_units(const int *lens, int n, int bound, int chunk, int tail,
                             pf_gpu_unit *out);

/* Cut a made plan's blocks (its work list's units, at their chunk) each
 * into a unit of its first 7/8 and `tail` units of its last 1/8 (chunks of
 * chunk / (8 x tail) tokens), longest first, so that the tail units go to
 * the SMs that finish early (the block scheduler balances them, and the
 * split, being fixed, sums in the same order every run). tail 0 undoes
 * nothing: plan again. PF_ERR_ARG when tail is outside 1..8, the plan
 * has no work list or a version that cannot run one (it must merge in
 * place, without a cluster or work stealing, and not be version 14),
 * lens_host are not the plan's lengths, or the chunk does not cut into
 * whole pages of at least 16 tokens. For measuring it: the bench's --tail. */
int pf_gpu__plan_set_tail(pf_gpu_attn_plan *plan, int tail, const int *lens_host);

/* Give a made plan of version 33 `pack` units a block (1: one, as version
 * 29; host.c, "packing"), whatever the planner chose. PF_ERR_ARG unless
 * the plan is version 33's, 16-bit, has a work list and one chunk a
 * sequence, and pack is 1 or a multiple of PF_GPU_PACK_STEP up to
 * PF_GPU_PACK_MAX with pack x chunk <= pf_gpu_chunk_max_tokens. For
 * measuring it and for tests: the bench's --pack. */
int pf_gpu__plan_set_pack(pf_gpu_attn_plan *plan, int pack);

/* The list as the kernels read it, int pairs: {PF_GPU_WORK_MAGIC, units},
 * then {sequence, PF_GPU_WORK_Y(chunk, span, the sequence's chunks)} per
 * unit (chunk < 256 and span <= 256, as splits <= 256); pairs has room for
 * 2 * (plan->units + 1) ints. PF_ERR_ARG when the plan has no list or
 * lens_host are not the lengths it was made from; PF_ERR_NOMEM. */
#define PF_GPU_WORK_MAGIC 0x6b726f77 /* "work" */
#define PF_GPU_WORK_Y(chunk, span, nch) ((chunk) | ((span) - 1) << 8 | (nch) << 16)
/* ... and its fields back (the kernels' work_of and item_of) */
#define PF_GPU_WORK_CHUNK(y) ((y) & 0xff)
#define PF_GPU_WORK_SPAN(y) ((((y) >> 8) & 0xff) + 1)
#define PF_GPU_WORK_NCH(y) ((y) >> 16)
int pf_gpu__work_list(const pf_gpu_attn_plan *plan, const int *lens_host, int *pairs);

/* pf_gpu_attn_workspace_init's argument checks: PF_OK or PF_ERR_ARG (no
 * plan, no workspace where one is needed or one off PF_GPU_WORKSPACE_ALIGN,
 * lens_host not the plan's). */
int pf_gpu__workspace_args(const pf_gpu_attn_plan *plan, const int *lens_host,
                           const void *workspace);
/* pf_gpu_attn_run's argument checks (both builds): PF_OK or PF_ERR_ARG (no
 * made plan, a NULL pointer, no block table when paged, a workspace missing
 * or off PF_GPU_WORKSPACE_ALIGN). */
int pf_gpu__run_args(const pf_gpu_attn_plan *plan, const void *q, const void *k, const void *v,
                     const int *block_tables, const int *seq_lens, const void *out,
                     const void *workspace);
/* pf_gpu_append_kv's argument checks (both builds): PF_OK, or the paged
 * shape's validation error, or PF_ERR_ARG (n_tokens < 0, a NULL pointer). */
int pf_gpu__append_args(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                        int n_tokens, const int *block_tables, const int *seq_lens,
                        const void *k_pool, const void *v_pool);

/* Where the parts of a plan's workspace start (bytes): partial outputs
 * [num_seqs][hq][slots][D] floats at 0 and log2-sum-exps [..][slots] at
 * lse, slots = splits (when split; version 11: splits x
 * PF_GPU_STEAL_VISITS, always); the fused versions' counters at counters
 * (when split: [num_seqs][head tiles]; version 11: its two run counters,
 * then tokens done and partials taken, each [num_seqs][head tiles]);
 * version 11's claim words, one 64-bit word per work item (unit x head
 * tile), at claims (8-byte aligned); the work list (8-byte aligned) at
 * work; bytes in all (plan->workspace_bytes). Everything below work is
 * zero at rest. */
typedef struct {
    size_t lse, counters, claims, work, bytes;
    int slots; /* partial outputs per (sequence, query head) */
} pf_gpu_ws_layout;
void pf_gpu__ws_layout(const pf_gpu_attn_plan *plan, pf_gpu_ws_layout *l);

/* ---- host element conversion (round to nearest even) ---- */
uint16_t pf_gpu_f32_to_bf16(float f);
float pf_gpu_bf16_to_f32(uint16_t h);
uint16_t pf_gpu_f32_to_f16(float f);
float pf_gpu_f16_to_f32(uint16_t h);
/* dst[i] = v rounded to dtype t; returns the rounded value as a float. */
float pf_gpu_host_store(pf_gpu_dtype t, void *dst, size_t i, float v);
float pf_gpu_host_load(pf_gpu_dtype t, const void *src, size_t i);
/* Relative rounding allowance of an output stored in t: 0 for fp32, two
 * units in the last place for fp16 (2^-10) and bf16 (2^-7). */
double pf_gpu_dtype_rel_eps(pf_gpu_dtype t);

/* ---- CPU reference check ---- */
typedef struct {
    int num_seqs;
    const int *lens;       /* [num_seqs]                                 */
    int hq, hkv, head_dim;
    float scale;
    const float *q;        /* [num_seqs][hq][D], values as stored (rounded) */
    const float *k, *v;    /* packed head-major: sequence i at off[i],
                              laid out [hkv][lens[i]][D]                 */
    const size_t *off;
    const void *out;       /* GPU output [num_seqs][hq][D] in dtype      */
    pf_gpu_dtype dtype;
    int all_heads;         /* 0: one q head per kv head, rotating         */
    double tol;            /* absolute part of the allowance             */
    double p_eps;          /* the relative rounding of the weights p as the
                              kernel feeds them to P V (pf_gpu_version_p_eps);
                              the allowance gains p_eps x sum p |v| / sum p */
    int threads;           /* 0: one per online CPU, at most 32          */
    /* Optional, for several outputs of one problem (pagefault bench
     * --compare): ref and ref_abs, [num_seqs][hq][D] doubles each, owned by
     * the caller, keep the reference and its weights over |V| between
     * calls. With ref_ready 0 the call computes the rows it checks into
     * them; with 1 it reads them instead of computing them again (same
     * inputs and all_heads as the call that filled them). Without ref_abs,
     * p_eps must be 0 when ref_ready is 1. */
    double *ref, *ref_abs;
    int ref_ready;
} pf_gpu_refcheck;

typedef struct {
    double max_err;        /* max |out - ref|                            */
    double allowed_at_max; /* allowance at that element                  */
    long long checked;     /* elements compared                          */
    long long bad;         /* elements over the allowance or NaN/inf     */
    int first_bad_seq, first_bad_head; /* -1 when none                  */
} pf_gpu_refcheck_out;

/* Returns PF_OK (check o->bad), PF_ERR_ARG or PF_ERR_NOMEM. */
int pf_gpu_ref_check(const pf_gpu_refcheck *c, pf_gpu_refcheck_out *o);

/* ---- planning constants shared by the planner (host.c) and the kernels */
#define PF_GPU_THREADS 128       /* threads per attention block              */
/* Fewest tokens a split-KV chunk holds. 128: on the H200
 * (docs/gpu-journal.md, third session) chunks of 64 tokens lost to 128 on
 * both small launches, whatever the planner's model said: seed 11.2 vs 10.4
 * us (v5), single 14.9 vs 14.4 (v5) and 14.4 vs 13.2 (v6); a block's fixed
 * latency (table, first rows, its share of the merge) outweighs the 64
 * tokens it saves. */
#define PF_GPU_MIN_CHUNK 128
#define PF_GPU_TABLE_CACHE (PF_GPU_CHUNK_MAX_PAGES + 8) /* entries              */
#define PF_GPU_PLAN_MAGIC 0x70616765u /* "page" */
/* The kernel version 0 stands for, for a shape: the fastest measured
 * (docs/gpu.md's versions table, docs/gpu-journal.md session by session;
 * NVIDIA H200, paged on shuffled frames):
 *   16-bit small launch (below) 9 (single 11.7 and 12.5 us against 13.5
 *                                 for v7 in two calls, fifth session);
 *   16-bit, GQA tile 1 (MHA)   8 (mha 0.963 of the read bandwidth against
 *                                 0.923 for v7; 0.239 ms beside v1's 0.243
 *                                 and cuDNN's 0.238 in gpu/peers.py);
 *   16-bit, otherwise         29 (PF_GPU_GQA_VERSION: v25, itself v19
 *                                 with whole-quad mma, with its lane
 *                                 addresses taken once and Q held in
 *                                 registers; twenty-fourth session, H200,
 *                                 one process a workload: v29 / v19
 *                                 shuffled llama 0.989, batch 0.991, long
 *                                 0.994, llama at block sizes 8-256 in
 *                                 bf16 and fp16 0.989-0.993, mixed 1.000,
 *                                 bitwise v25's outputs. Before it 19:
 *                                 v12 with bf16's weights as one term;
 *                                 twenty-first session, on an H100, one
 *                                 process a workload: v19 / v12 0.995-1.000
 *                                 on 22 of 22 paired bf16 passes of llama,
 *                                 batch, long and llama at block sizes
 *                                 8-256, while v12 against itself gave
 *                                 0.998-1.001; in fp16, where v12 already
 *                                 feeds one term, the two are one kernel.
 *                                 Before it 12: ninth session, against v7,
 *                                 llama 0.942 vs 0.936, batch 0.935 vs
 *                                 0.926, long 0.911 vs 0.900; v13, its
 *                                 whole-quad form, within +-0.3 points);
 *   fp32                       7 (versions 6 and 12 are 16-bit only; seed
 *                                 9.5 us against 9.9 for v8, and v9's
 *                                 10.5 us: small launches included).
 * Never 10 (v9 with 4 stages: single no faster, llama 0.30 ms), 11
 * (work stealing: slower on every workload in two calls of the sixth
 * session, and not bitwise reproducible), 14 (a head tile a warp, tenth
 * session: below v12 on llama, long, mixed and mha; 0.2-1.0 points above
 * it on batch in three runs, within the run-to-run spread), 15 and 16 (the
 * copy engine, eleventh session: below v12 everywhere), 17 (the L2
 * prefetch hint, eleventh session: tied with v12 in three calls) nor 18
 * (version 6 in cuDNN's decode shape, 2 blocks an SM, fifteenth session:
 * ahead of v12 on llama on two machine starts, behind it on the next two,
 * and 1.5-2.3 points behind at 8-token pages), nor 12 since the
 * twenty-first session (19 is it with one term), nor 20 (18 with one
 * term: 0.977-1.017 of v12 in the same runs, on both sides of it), nor
 * 21-24 (more bytes in flight a warp: level or 0.1-2.0% slower on the
 * H200, twenty-fourth session), 26 and 27 (padded rows: 8% slower), 28
 * and 30 (29 without Q held, and 29 with P's pairs pinned: within 0.3%
 * of 29, no faster), 31 and 32 (the split's merge in a cluster, 6% slower
 * on long; one acquire-release atomic, level with 29: twenty-fifth session)
 * nor 33 (whole sequences packed a warp each: batch level with 29 on four
 * H100 machine starts, twenty-sixth session; its unpacked plans are 29);
 * 34 only as below. */
#define PF_GPU_GQA_VERSION 29
/* ... and where a plan of version 34 (29 with a head tile a warp, version
 * 14's shape) splits no sequence, the planner takes that plan instead
 * (pf_gpu_attn_plan_compute): each block reads 4 heads' pieces of every
 * frame, 16 KB side by side at 16-token pages, where 29's blocks read one
 * head's 4 KB. Split, its chunks are a quarter of 29's and their merges
 * cost more than the pieces save (version 14, tenth session), so it takes
 * only plans that already fill the machine unsplit, such as batch's
 * (256 x 1024: 512 blocks). Only for shapes whose head tiles are a
 * multiple of 4 (every warp busy). Twenty-eighth session, three H100
 * starts: v34 / v29 on batch's shuffled pass 0.991, 0.994 and 0.998
 * (0.979, 0.978 and 0.970 of the read bandwidth against 0.970, 0.972 and
 * 0.968), never slower; not yet run on an H200. */
#define PF_GPU_MH_GQA_VERSION 34
/* ... and where 29's plan launches at most PF_GPU_DEEP_BLOCKS_PER_SM
 * blocks an SM, version 0 runs that plan with PF_GPU_DEEP_GQA_VERSION: 29
 * with 4 stages a warp (pf_gpu_attn_plan_compute). By Little's law an SM
 * must keep its share of the bandwidth times the memory's latency in
 * flight; 29 keeps one 8-token tile a warp in flight while it computes
 * (2 stages), 4 KB, so at 4 blocks an SM 64 KB and with one block an SM a
 * quarter of that; 36 keeps three. Measured (docs/gpu-journal.md,
 * thirty-fourth session, shuffled 16-token pages, llama's heads, v29 / v35
 * / v36 of the read bandwidth): at 128 blocks on 132 SMs 36 gains 5-17%
 * (H200: 16 x 4096 0.714 / 0.814 / 0.836, 8 x 4096 0.617 / 0.686 / 0.695;
 * H100: 16 x 2048 0.781 / 0.810 / 0.820); at 160-192 blocks 35 and 29 are
 * within 2.5% and 36 trails 29 by 3-7%; at 256 (long) 29 leads both by
 * 0.7-1.2%. Our reading, not measured: a second block an SM already
 * covers the latency, and the deeper pipeline's longer fill and drain
 * cost more than it hides. So one block an SM, not two (long keeps 29). */
#define PF_GPU_DEEP_GQA_VERSION 36
#define PF_GPU_DEEP_BLOCKS_PER_SM 1
/* Version 0's choice between those two for a finished plan of either: by
 * its blocks. The bench calls it again after forcing version 0's cut
 * (--splits, --tail), so a forced cut runs the version its blocks ask. */
void pf_gpu__plan_pick_depth(pf_gpu_attn_plan *plan);
/* Version 0 for the shape alone (9 where the pairs make a small launch);
 * the planner then applies the lengths (PF_GPU_SMALL_TOKENS). */
int pf_gpu_default_version(const pf_gpu_attn_shape *s);
/* A launch of at most PF_GPU_SMALL_LAUNCH (sequence, head tile) pairs and
 * PF_GPU_SMALL_TOKENS tokens in all (sequences x the longest) is small: it
 * fills a machine only when split, and the merge's latency is on its
 * critical path, so version 0 is 9 there (resolve_version, gpu/host.c).
 * The token bound is measured (thirty-fourth session, H100, shuffled
 * 16-token pages, llama's heads, version 0 = v9 with one head a block
 * against v29): 1 x 256 8.7 against 10.6 us, 1 x 512 9.5 / 10.6, 1 x 1024
 * 10.7 / 11.0; but 1 x 1536 12.5 / 11.7, 2 x 1024 13.3 / 11.1, 4 x 512
 * 13.2 / 11.1, and on bandwidth-bound lengths v9 reading the pages once
 * per query head falls far behind: 4 x 32768 405 / 187 us. Until then the
 * bound was one cluster's 8 chunks (32768 tokens a sequence), set from the
 * single workload alone. */
#define PF_GPU_SMALL_LAUNCH 32
#define PF_GPU_SMALL_TOKENS 1024
/* ... and there version 0 serves one query head a block (the chunking is
 * planned for the group's tile first, then each block's heads are cut to
 * this): a small launch leaves SMs idle, so more, shorter blocks cost no
 * bandwidth and shorten each block's arithmetic and merge. Measured on the
 * H200 (docs/gpu-journal.md, sixth session, one call): single 9.8 us
 * against 10.0 at the group's tile of 4 in `pagefault bench`, and in
 * gpu/peers.py 9.7 against 10.1 us, cuDNN's SDPA 10.1 us in the same
 * process. (Those were forced tiles: until the twenty-first session
 * pf_gpu_attn_plan_make handed the planner version 0 already resolved, and
 * this tile never reached a caller. Since, on the H200: single 9.8 us
 * beside cuDNN's 10.0 in gpu/peers.py.) */
#define PF_GPU_SMALL_TILE 1

/* Versions 5 on merge split-KV chunks inside the attention kernel; 5 to 8,
 * 11 to 30 and 32 to 37 (33's split plans run version 29's kernel) through
 * global memory (their workspace also holds one counter per (sequence, head
 * tile), zero at rest; versions 14 and 34: per block of 4 tiles) and from a work
 * list when planned from lengths; 9, 10 and 31 inside a thread-block cluster, so their chunks
 * stay in grid order, at most PF_GPU_CLUSTER_MAX of them, and need no
 * workspace. */
#define PF_GPU_CLUSTER_MAX 8 /* the portable cluster size */
/* Version 33 packs: given a plan that splits no sequence, the planner
 * gives each block `pack` consecutive units of the work list (whole
 * sequences), a multiple of PF_GPU_PACK_STEP (the block's warps: each
 * streams its own sequences one after another; gpu/host.c, "packing";
 * gpu/kernels/mma.cuh, version 33); its plans without a pack run version
 * 29's kernel. At most PF_GPU_PACK_MAX sequences a block, and pack x chunk
 * tokens within pf_gpu_chunk_max_tokens (the table cache's pages). */
#define PF_GPU_PACK_VERSION 33 /* PF_GPU_PACK_STEP and _MAX: gpu.h */
static inline int pf_gpu_version_packs(int version)
{
    return version == PF_GPU_PACK_VERSION;
}
static inline int pf_gpu_version_fused(int version)
{
    return version >= 5;
}
static inline int pf_gpu_version_cluster(int version)
{
    return version == 9 || version == 10 || version == 31;
}
static inline int pf_gpu_version_listed(int version)
{
    return (version >= 5 && version <= 8) || (version >= 11 && !pf_gpu_version_cluster(version));
}

/* Version 11 balances the work among its blocks at run time (work
 * stealing, gpu/kernels/v7.cuh attn_steal): it runs only from a work list (a
 * plan made from host lengths), a chunk's tokens are claimed PF_GPU_STEAL_PIECE
 * at a time by at most PF_GPU_STEAL_VISITS blocks (its owner and thieves),
 * each leaving one partial output, so the workspace holds splits x visits
 * partials per (sequence, query head) whatever the split. Which block takes
 * which tokens depends on timing: its outputs agree with the other
 * versions' within rounding, but are not bitwise the same from run to run
 * (pf_gpu_version_exact is 0). */
#define PF_GPU_STEAL_VISITS 4
#define PF_GPU_STEAL_PIECE 64
static inline int pf_gpu_version_steal(int version)
{
    return version == 11;
}
/* Version 37's warps claim their tiles at run time (gpu/kernels/mma.cuh,
 * warp_claim): which warp sums which tiles moves from run to run, so it is
 * not bitwise the same either. */
#define PF_GPU_CLAIM_VERSION 37
static inline int pf_gpu_version_exact(int version)
{
    return !pf_gpu_version_steal(version) && version != PF_GPU_CLAIM_VERSION;
}
/* One unit in the last place of an output of type dt at magnitude |x|
 * (bf16 has 8 significant bits, fp16 11, fp32 24). Two runs of a version
 * whose sums' order moves can round one output to neighbouring values of
 * its type (the thirty-fifth session saw 1 bf16 ulp, 0.00195 at 0.25-0.5,
 * on mixed with version 37), so their checks allow this much beyond the
 * tolerance (gpu/gpu.cu, diff_scan). */
static inline double pf_gpu_out_ulp(pf_gpu_dtype dt, double x)
{
    const int bits = dt == PF_GPU_BF16 ? 8 : dt == PF_GPU_F16 ? 11 : 24;
    int e;
    frexp(fabs(x), &e);
    return ldexp(1.0, e - bits);
}

/* Head tiles one thread block serves: the 16-bit kernels of versions 14
 * and 34 (12's and 29's arithmetic) give each of their 4 warps a head tile
 * of its own over the block's chunk (so, when a tile is a whole GQA group,
 * a block reads 4 heads' pages of every frame, which lie side by side in
 * the pool); every other kernel (their fp32 fallback too) serves one tile
 * a block. */
#define PF_GPU_MH_TILES 4
static inline int pf_gpu_version_mh(int version)
{
    return version == 14 || version == 34;
}
/* Versions whose plans can take a tail (pf_gpu__plan_set_tail): those
 * that merge in place, without a cluster, work stealing or versions 14's
 * and 34's head tiles (their slots are by chunk). */
static inline int pf_gpu_version_tail(int version)
{
    return pf_gpu_version_fused(version) && !pf_gpu_version_cluster(version) &&
           !pf_gpu_version_steal(version) && !pf_gpu_version_mh(version);
}
static inline int pf_gpu_version_heads(int version, pf_gpu_dtype dtype)
{
    return pf_gpu_version_mh(version) && dtype != PF_GPU_F32 ? PF_GPU_MH_TILES : 1;
}

/* Versions 19-37 feed bf16's attention weights to P V as one bf16
 * term, as FlashAttention, FlashInfer and cuDNN do (gpu/kernels/launch.cuh pick_v:
 * P1); the other tensor-core versions as hi + lo terms. */
static inline int pf_gpu_version_one_term_p(int version)
{
    return version >= 19 && version <= 37;
}
/* The relative rounding of the attention weights p as a version feeds
 * them to its P V product (the CPU check's allowance, pf_gpu_refcheck):
 * 0 where P V is fp32 arithmetic (fp32, and versions 1-5 and 7-11); on the
 * tensor cores (versions 6 and 12-37, 16-bit) p enters as fp16 (11 bits:
 * 2^-11), or for bf16 as hi + lo bf16 terms (about 16 bits: 2^-16) or as
 * one term (8 bits: 2^-8). Relative for normal numbers: fp16 weights below
 * 2^-14 are subnormal and off by up to 2^-25 absolutely, which the check's
 * absolute tolerance (default 1e-3) has to cover (at most 2^-25 x the
 * sequence's sum of |v| over sum p, whose largest p is at least 1). */
static inline double pf_gpu_version_p_eps(int version, pf_gpu_dtype dtype)
{
    if (dtype == PF_GPU_F32 || (version != 6 && version < 12))
        return 0.0;
    if (dtype == PF_GPU_F16)
        return 0x1p-11;
    return pf_gpu_version_one_term_p(version) ? 0x1p-8 : 0x1p-16;
}

/* Query heads one block serves of a GQA group: the largest of 8, 4, 2, 1
 * that divides the group (the group is served in group / tile blocks). */
int pf_gpu_group_tile(int group);

/* ---- launchers (kernels.cu, CUDA builds only); device pointers ---- */
/* Launch the plan's kernel(s): the attention kernel, then the split-KV
 * merge when plan->splits > 1. ws: plan->workspace_bytes of device memory.
 * trace: NULL, or for versions 7 on 4 device words per block of the launch
 * grid that the kernel fills with its block timeline (start, first tile
 * landed, end: globaltimer ns; the SM), for `pagefault bench --timeline`. */
int pf_gpu_launch_attention(const pf_gpu_attn_plan *p, const void *q, const void *k,
                            const void *v, const int *block_tables, const int *seq_lens,
                            void *out, void *ws, void *stream, unsigned long long *trace);

/* Resident blocks per SM of the plan's attention kernel (occupancy API). */
int pf_gpu_kernel_blocks_per_sm(const pf_gpu_attn_shape *s, int paged, int version);

/* Set up, on the calling thread, what the first run of p would (the
 * kernel's one-time shared memory reservation, the driver's handle), so
 * that a run queries nothing: plan_make calls it last, and so does anyone
 * who changes a plan's kernel (its group tile, its pack). (kernels.cu) */
void pf_gpu_kernel_prepare(const pf_gpu_attn_plan *p);
/* Kernel setups made so far, in the process (tests: a run after plan_make
 * makes none). */
unsigned pf_gpu__kernel_setups(void);
/* Graphs made for runs' launches so far (kernels.cu, graph_launch): one by
 * the second launch of a key (a kernel at a grid on a stream from a host
 * thread; pf_gpu_graph_lru below); none while the stream is captured, none
 * with PF_GPU_LAUNCH=driver or runtime. */
unsigned pf_gpu__graph_makes(void);
/* on != 0: the calling thread's launches skip the graph cache and launch
 * directly, as PF_GPU_LAUNCH=driver makes every thread's (the bench's
 * changing-batch loops time both ways in one process); 0: back to graphs. */
void pf_gpu__launch_direct(int on);

/* ---- which launches get a graph (host.c; kernels.cu's graph_launch) ----
 *
 * A run launches as a replay of an executable graph made for its key
 * (host thread, device, stream, kernel, grid, shared memory). Making one
 * costs the host tens of microseconds, a replay about half a direct
 * launch, so a graph pays only for a key that repeats. A serving loop's
 * grid changes as its batch does; with a graph made for every new key and
 * a fixed cache replaced in turn, a loop over more distinct grids than the
 * cache holds made a graph on every run. So the cache admits and keeps
 * keys the way a web cache's "cache on second hit" filter and an LRU with
 * a floor on idleness do:
 *
 *   - a key that misses is remembered (its hash, among the last
 *     PF_GPU_GRAPH_SEEN missed keys) and launched directly; only its second
 *     miss while remembered makes its graph, so a grid seen once never
 *     pays for one;
 *   - the graph goes into an empty slot, else into the least recently used
 *     one, but only if that slot has not been used for PF_GPU_GRAPH_IDLE
 *     launches of the thread; otherwise the key launches directly. So keys
 *     in use keep their graphs, and a loop over more grids than slots
 *     replays PF_GPU_GRAPH_SLOTS of them and launches the rest directly,
 *     making no graph after its first rounds;
 *   - a graph must pay for its making: a slot counts the launches of its
 *     key from the start of the run of misses that made it (the key's
 *     launches in a row, other keys' hits between them allowed) and every
 *     replay since. A graph evicted before PF_GPU_GRAPH_PAYBACK of them
 *     marks its key unpaid, and an unpaid key launches directly instead
 *     of making a graph, so it evicts nothing. A loop of short steps over
 *     more grids than slots (a model with few layers, the batch changing
 *     every step) thus settles as the loop above does: no graph made, the
 *     slots' keys replayed, the others launched directly. An unpaid key
 *     launched PF_GPU_GRAPH_PAYBACK times in a row is paid again (its
 *     steps grew), and its graph is made then, counting that run.
 *
 * The numbers. 16 slots: `pagefault bench --compare` with four versions
 * runs 9 keys a round (naive and paged kernels each, and the read probe);
 * a slot holds a key and an executable graph of one node. Idle for 64
 * launches: a decoding model launches its attention once a layer, with
 * one grid for the whole step (32 layers in llama-3-8B, 80 in 70B), so a
 * key of the last step or two is not evicted by the next's. 32 remembered
 * keys: twice the slots, so that a loop over a few more grids than slots
 * still finds its keys remembered. A payback of 24 launches: a make costs
 * the host what 13-21 direct launches save by replaying instead. With the
 * batch cycling over 24 sizes (`pagefault bench --layers N`, thirty-eighth
 * session, an H100, the graph path against direct launches timed in turn
 * in one process, before this rule), steps of 8 runs took 1.59x and 1.76x
 * direct's host time, of 16 runs 1.09x and 1.12x, of 32 runs 0.91x and
 * 0.69x; on the thirty-seventh session's quieter host steps of 32 runs took
 * 0.71-0.79x (a make there paid back after about 13 runs).
 *
 * The state is per host thread (graph objects are not thread-safe); the
 * caller matches keys exactly in its slots and tells this policy only
 * slot numbers and a hash of the key (a collision makes a graph one miss
 * early, or launches a key directly until its run pays again: nothing
 * worse than a direct launch). */
#define PF_GPU_GRAPH_SLOTS 16
#define PF_GPU_GRAPH_SEEN 32
#define PF_GPU_GRAPH_IDLE 64
#define PF_GPU_GRAPH_PAYBACK 24
typedef struct pf_gpu_graph_lru {
    unsigned long long tick;                         /* launches so far        */
    unsigned long long last[PF_GPU_GRAPH_SLOTS];     /* tick of last use; 0:
                                                        empty                  */
    unsigned long long key[PF_GPU_GRAPH_SLOTS];      /* hash of its key        */
    unsigned long long served[PF_GPU_GRAPH_SLOTS];   /* its key's launches: the
                                                        run that made it, and
                                                        its replays            */
    unsigned long long seen[PF_GPU_GRAPH_SEEN];      /* hashes of missed keys  */
    unsigned char unpaid[PF_GPU_GRAPH_SEEN];         /* 1: its last graph was
                                                        evicted unpaid         */
    unsigned seen_next;                              /* ring position          */
    unsigned long long run_key;                      /* the key missing in a   */
    unsigned long long run_len;                      /* row, and how often     */
} pf_gpu_graph_lru;
/* A launch whose key the caller found in `slot`: the slot is used now. */
void pf_gpu__graph_lru_hit(pf_gpu_graph_lru *c, int slot);
/* A launch whose key is in no slot (hash: of the key, never 0): the slot
 * to make its graph in (the caller drops what the slot held), or -1 to
 * launch directly. A returned slot counts as used now. */
int pf_gpu__graph_lru_miss(pf_gpu_graph_lru *c, unsigned long long hash);

/* A CUDA error as a pf_err: allocation -> PF_ERR_NOMEM, an invalid value
 * or pointer -> PF_ERR_ARG, anything else (a kernel fault, no device, a
 * refused launch) -> PF_ERR_UNAVAILABLE. A caller that needs the message
 * keeps the code for cudaGetErrorString (as gpu.cu's cuda_fail does).
 * (kernels.cu) */
int pf_gpu_cuda_err(int cuda_error);

int pf_gpu_launch_append(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                         int n_tokens, const int *block_tables, const int *seq_lens,
                         void *k_pool, void *v_pool, void *stream);

/* A kernel that does nothing, launched with the attention kernels' argument
 * block (one block) as a run launches (a replay of the stream's graph): the
 * floor under a run's host time, for the bench; direct != 0: by the
 * driver's launch, what a launch costs without the graph. */
int pf_gpu_launch_empty(void *stream, int direct);

/* A driver entry point (CUDA 12.0's form of it) through the runtime, so
 * that nothing links the driver library itself; NULL where there is none.
 * For the library's own driver calls and the probes'. */
void *pf_gpu_driver_entry(const char *name);

/* Read-only streaming reduction over n16 16-byte words; sink: 1 device uint. */
int pf_gpu_launch_read_bw(const void *buf, size_t n16, unsigned *sink, int sm_count,
                          void *stream);

#ifdef __cplusplus
}
#endif

#endif
