/* gpu/gpu.h - PageFault's GPU stage behind a plain C API.
 *
 * What it is: a device block pool (K and V of every frame: a K pool and a V
 * pool, or one pool with each page's K and V side by side), a kernel that
 * appends tokens' K/V through the block table, a naive decode-attention
 * kernel over contiguous per-sequence buffers and a paged one that reads
 * every K/V through the block table (numbered kernel versions, docs/gpu.md),
 * a plan/run split in FlashInfer's manner, and the checked,
 * timed benchmark. Implemented in CUDA (gpu/gpu.cu and gpu/kernels.cu,
 * extern "C"; the kernels in gpu/kernels.cuh); host-only parts
 * (validation, planning, the profile writer, the block timeline's summary)
 * in gpu/host.c. Without a CUDA compiler the
 * same functions exist; device work returns PF_ERR_UNAVAILABLE with a
 * reason, validation still answers.
 *
 * Errors: PF_ERR_ARG for a bad argument or shape (checked before any device
 * work), PF_ERR_NOMEM when memory runs out, PF_ERR_UNAVAILABLE when there is
 * no device or the device failed (a kernel fault is never PF_ERR_ARG).
 *
 * Layouts (see core/paging.h):
 *   q        [num_seqs][num_q_heads][head_dim]
 *   out      [num_seqs][num_q_heads][head_dim]
 *   k_pool   [pool_frames][num_kv_heads][block_size][head_dim]  (v_pool same)
 *            or one pool with each page's K and V side by side (FlashInfer's
 *            [page][2][...]): k_pool its start, v_pool one frame later, and
 *            the tables name page p as frame 2 p (`--kv-layout interleaved`)
 *   block_tables [num_seqs][max_blocks_per_seq] int32 frame ids
 *   seq_lens [num_seqs] int32 (<= 0: the output row is zeros; lengths are
 *            read up to the plan's bound, never past the table or capacity)
 *   naive k/v [num_seqs][num_kv_heads][cap][head_dim]
 * Elements are fp32, fp16 or bf16 (pf_gpu_dtype); accumulation is fp32.
 * Query head h uses kv head h / (num_q_heads / num_kv_heads) (GQA).
 *
 * Callers: `pagefault bench` (tui/), the dashboard's GPU panel (tui/), any
 * program through the shared library libpagefault_gpu.so (ctypes...).
 */
#ifndef PF_GPU_GPU_H
#define PF_GPU_GPU_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { PF_GPU_F32 = 0, PF_GPU_F16 = 1, PF_GPU_BF16 = 2 } pf_gpu_dtype;

const char *pf_gpu_dtype_name(pf_gpu_dtype t); /* "fp32", "fp16", "bf16" */
size_t pf_gpu_dtype_size(pf_gpu_dtype t);

/* 1 if the library was built with CUDA and a device is usable; otherwise 0
 * and a one-line reason in why ("built without CUDA", "no CUDA device: ..."). */
int pf_gpu_available(char *why, size_t whylen);

/* Name of device 0 ("NVIDIA H200"), or the reason it is unavailable. */
int pf_gpu_device_name(char *name, size_t len);

/* ---- device memory, for callers without the CUDA headers (C programs,
 * ctypes, the tests): plain cudaMalloc/cudaMemcpy/cudaMemset underneath,
 * PF_ERR_NOMEM / PF_ERR_UNAVAILABLE / PF_ERR_ARG on failure. ---- */
typedef enum { PF_GPU_H2D = 0, PF_GPU_D2H = 1, PF_GPU_D2D = 2 } pf_gpu_copy_kind;
int pf_gpu_malloc(void **ptr, size_t bytes);
int pf_gpu_free(void *ptr);
int pf_gpu_memcpy(void *dst, const void *src, size_t bytes, pf_gpu_copy_kind kind);
int pf_gpu_memset(void *ptr, int byte, size_t bytes);
int pf_gpu_sync(void); /* wait for the device; reports an earlier kernel's failure */
/* A stream of the device that does not wait on the legacy default stream (a
 * cudaStream_t, for the stream arguments below), and its end. */
int pf_gpu_stream_create(void **stream);
int pf_gpu_stream_destroy(void *stream);

typedef struct {
    int num_seqs;
    int num_q_heads;
    int num_kv_heads;
    int head_dim;          /* 64 or 128 */
    int block_size;        /* 8..256, paged only */
    int max_blocks_per_seq;/* row stride of block_tables */
    int naive_cap;         /* tokens per sequence in the naive buffers */
    pf_gpu_dtype dtype;
    float scale;           /* 0 -> 1/sqrt(head_dim) */
} pf_gpu_attn_shape;

/* Check a shape before any device work: PF_OK, or PF_ERR_ARG when a count is
 * out of range or a product the kernels index with overflows (tokens per
 * sequence max_blocks_per_seq * block_size or naive_cap past INT_MAX,
 * num_seqs * num_q_heads past INT_MAX, element offsets of the naive buffers
 * or of q/out past what size_t holds). paged: 1 checks the block-table
 * fields, 0 the naive capacity. Pure host code: the same answer in a build
 * without CUDA. */
int pf_gpu_attn_validate(const pf_gpu_attn_shape *s, int paged);

/* ---- (a) plan once, run many times (FlashInfer's decode-wrapper split) ----
 *
 * plan: on the host, from the shape and either the host lengths or an upper
 * bound of them, choose the kernel version, the split-KV chunking (how
 * many chunks per sequence, merged by log-sum-exp) and how many query heads
 * of a GQA group one thread block serves, and say how many bytes of
 * workspace a run needs. It may query the device (SM count, occupancy).
 * workspace_init: prepare a workspace of plan->workspace_bytes for the
 * plan's runs, once (runs leave it as they found it). Given the host
 * lengths, versions 5-8, 11-30 and 32-37 run from a work list (plan->units > 0): one
 * unit per chunk that holds tokens, longest first, so that blocks start in
 * longest-processing-time order and no block is launched for a short
 * sequence's empty chunks; workspace_init writes that list. Version 11
 * (work stealing) needs the list, so it is planned from lengths only, and
 * its outputs are not bitwise reproducible run to run (docs/gpu.md).
 * run: launch on device pointers with the prepared workspace; it allocates
 * nothing, queries nothing and synchronizes nothing, so it can be captured
 * in a CUDA graph. It launches as a replay of a graph of its kernel kept
 * per host thread and stream (about half a launch's host time), which the
 * first run of a kernel on a stream from a thread makes; into a stream
 * being captured it launches directly (docs/gpu.md, Plan and run). Device
 * lengths: a length <= 0 gives an output of zeros;
 * a length above the planned bound (plan->max_len) is read only up to that
 * bound, and with a work list a sequence's length only up to the end of the
 * chunks planned for it (its host length rounded up to plan->chunk): plan
 * again when the lengths grow past that. */
#define PF_GPU_KERNEL_VERSIONS 37 /* versions 1..N, docs/gpu.md's table */
typedef struct {
    pf_gpu_attn_shape shape; /* as given, scale resolved (0 -> 1/sqrt(D))  */
    int paged;               /* 1: pools + block tables; 0: naive buffers  */
    int version;             /* kernel version (1..PF_GPU_KERNEL_VERSIONS) */
    int max_len;             /* tokens per sequence the plan covers        */
    int chunk;               /* tokens per thread block, whole blocks      */
    int splits;              /* chunks of the longest sequence; 1: no merge */
    int sm_count;            /* SMs the plan was made for                  */
    int blocks_per_sm;       /* resident blocks per SM it assumed          */
    int group_tile;          /* query heads one block serves (of a GQA group
                                of num_q_heads / num_kv_heads: 1, 2, 4, 8) */
    size_t workspace_bytes;  /* 0 when splits == 1 and no work list         */
    int units;               /* work-list units (0: every chunk of the grid) */
    int tail;                /* 0, or each block's worth of tokens cut into
                                a unit of its first 7/8 and `tail` units of
                                its last 1/8, balanced by the block
                                scheduler (gpu_internal.h)                 */
    int pack;                /* version 33: units (whole sequences) a block
                                streams, a warp each in turn; 0: one a block */
    unsigned long long lens_hash; /* of the host lengths the list is made of */
    unsigned magic;          /* set by plan; run refuses anything else     */
} pf_gpu_attn_plan;

/* lens_host: host [num_seqs] lengths, or NULL to plan for every sequence at
 * max_len (an upper bound, >= 1). version 0: the default (fastest) kernel.
 * Returns PF_OK, PF_ERR_ARG (bad shape, lengths or version) or
 * PF_ERR_UNAVAILABLE (no CUDA/device). */
int pf_gpu_attn_plan_make(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                          const int *lens_host, int max_len, int version);

/* Prepare workspace (device memory of plan->workspace_bytes; nothing to do
 * when that is 0) for the plan's runs: zero its counters and, when the plan
 * has a work list, write it. lens_host: the lengths given to plan_make (NULL
 * when the plan was made from a bound). Ordered on stream; the host copy of
 * the list is taken before it returns. Not for capture in a CUDA graph.
 * PF_ERR_ARG when lens_host are not the plan's lengths; PF_ERR_NOMEM. */
int pf_gpu_attn_workspace_init(const pf_gpu_attn_plan *plan, const int *lens_host,
                               void *workspace, void *stream);
#define PF_GPU_WORKSPACE_ALIGN 16 /* bytes; init and run refuse less (PF_ERR_ARG) */

/* k/v: pools (paged) or naive buffers; block_tables NULL when naive.
 * workspace: device memory of plan->workspace_bytes (NULL when 0),
 * prepared by pf_gpu_attn_workspace_init, aligned to PF_GPU_WORKSPACE_ALIGN
 * bytes (cudaMalloc's are; the split-KV merge reads its partials 16 bytes
 * at a time).
 * Returns PF_OK, PF_ERR_ARG (NULL or misaligned pointer, plan not made by
 * plan_make) or
 * the launch's error (PF_ERR_UNAVAILABLE: the device refused the launch). */
int pf_gpu_attn_run(const pf_gpu_attn_plan *plan, const void *q, const void *k, const void *v,
                    const int *block_tables, const int *seq_lens, void *out, void *workspace,
                    void *stream);

/* CUDA graphs of one run, for callers without the CUDA headers: capture
 * pf_gpu_attn_run with these arguments on a private stream (nothing runs
 * then), instantiate it; launch replays it `times` times on `stream`.
 * The pointers are baked in: replays read the buffers' current contents. */
typedef struct pf_gpu_attn_graph pf_gpu_attn_graph;
int pf_gpu_attn_graph_make(pf_gpu_attn_graph **g, const pf_gpu_attn_plan *plan, const void *q,
                           const void *k, const void *v, const int *block_tables,
                           const int *seq_lens, void *out, void *workspace);
int pf_gpu_attn_graph_launch(pf_gpu_attn_graph *g, int times, void *stream);
void pf_gpu_attn_graph_free(pf_gpu_attn_graph *g);

/* The pure planning step under plan_make, for callers (and tests) that know
 * the device: sm_count and blocks_per_sm as the device reports them. */
int pf_gpu_attn_plan_compute(pf_gpu_attn_plan *plan, const pf_gpu_attn_shape *s, int paged,
                             const int *lens_host, int max_len, int version, int sm_count,
                             int blocks_per_sm);

/* ---- (b) one-shot calls on device pointers (stream: a cudaStream_t or NULL).
 * Each plans for every sequence at capacity (max_blocks_per_seq * block_size,
 * or naive_cap), takes its workspace from the stream-ordered allocator and
 * runs: convenient, but plan + run is the fast path. Planning at capacity,
 * they refuse (PF_ERR_ARG) a capacity past PF_GPU_MAX_SEQ_TOKENS, which the
 * validator allows: plan with the lengths (or a bound) for such a shape. ---- */

int pf_gpu_paged_attention(const pf_gpu_attn_shape *s, const void *q, const void *k_pool,
                           const void *v_pool, const int *block_tables, const int *seq_lens,
                           void *out, void *stream);

int pf_gpu_naive_attention(const pf_gpu_attn_shape *s, const void *q, const void *k,
                           const void *v, const int *seq_lens, void *out, void *stream);

/* Append: write n_tokens new K/V rows for each sequence at positions
 * [seq_lens[i] - n_tokens, seq_lens[i]) through the block table.
 * k_new/v_new: [num_seqs][n_tokens][num_kv_heads][head_dim]. */
int pf_gpu_append_kv(const pf_gpu_attn_shape *s, const void *k_new, const void *v_new,
                     int n_tokens, const int *block_tables, const int *seq_lens,
                     void *k_pool, void *v_pool, void *stream);

/* pf_gpu_attn_plan as this library was built: its size and the offset of
 * its last field (magic). Bindings that mirror the struct by hand
 * (gpu/peers.py, ctypes) check theirs against it before the first call. */
void pf_gpu_attn_plan_layout(size_t *bytes, size_t *magic_at);

/* 1 when kernel version v can run a plan with a tail (pf_gpu_bench_cfg's
 * tail; `pagefault bench --tail`): those that merge in place, without a
 * cluster, work stealing or version 14's head tiles. */
int pf_gpu_version_takes_tail(int version);
/* Those versions as ranges ("5-8, 12, 13, 15-20"), for messages: written to
 * buf (n bytes, NUL-terminated; if short, the whole entries that fit). */
void pf_gpu_tail_versions(char *buf, size_t n);
/* 1 when kernel version v can stream several whole sequences a block
 * (pf_gpu_bench_cfg's pack; `pagefault bench --pack`): version 33. */
int pf_gpu_version_takes_pack(int version);
/* The most split-KV chunks of one sequence kernel version v can run: 8 for
 * those that merge in a thread-block cluster (9, 10, 31), PF_GPU_MAX_SPLITS
 * for the others (`pagefault bench` checks --splits and the lengths). */
int pf_gpu_version_max_splits(int version);
/* The most tokens one split-KV chunk of kernel version v holds at pages of
 * block_size tokens (whole pages; PF_GPU_CHUNK_MAX_TOKENS below says why):
 * 4096 at 8-token pages, 8192 from 16 on, and at most 4096 for the
 * versions that merge in a cluster. Version 0 counts as a large launch's. */
int pf_gpu_chunk_max_tokens(int block_size, int version);

/* The block timeline of one launch (`pagefault bench --timeline`, (f) below).
 * Kernel versions 7 on can record, per thread block of a launch, five words
 * (PF_GPU_TRACE_WORDS): the global nanosecond timer (%globaltimer) when the
 * block started, when its first tile of K/V had landed, when its last tile
 * was done (both 0: the block found no tokens), when it ended (after its
 * share of the merge), and the SM it ran on. The summary says where a
 * launch's time goes: how long the blocks take to get going (start spread,
 * first data), how long they stream and merge, and how ragged the end is
 * (the tail, and the share of SM time spent holding a block). Host code:
 * works in every build (the records come from a CUDA build's bench). */
#define PF_GPU_TRACE_WORDS 5
#define PF_GPU_TRACE_MIN_VERSION 7 /* the first version that records it      */
typedef struct {
    int blocks;           /* blocks of the launch                              */
    int sms;              /* distinct SMs that ran one                         */
    double span_us;       /* first start to last end                           */
    double last_start_us; /* first start to the last block's start             */
    double ready_us;      /* median over blocks with tokens: start to the first
                             tile landed (table, length, first K/V latency)    */
    double stream_us;     /* median, first tile landed to last tile done       */
    double finish_us;     /* median, last tile done to the block's end (the
                             merge, the output)                                */
    double run_us;        /* median block duration, start to end               */
    double first_end_us;  /* first start to the first block's end              */
    double median_end_us; /* first start to the median end                     */
    double sm_busy;       /* time the SMs held at least one block, over
                             sms x span                                        */
} pf_gpu_timeline;

/* ---- (c) the dashboard's call ------------------------------------------ */

typedef struct {
    int num_seqs;
    const int *seq_lens;     /* host [num_seqs]                          */
    const int *block_tables; /* host [num_seqs][max_blocks_per_seq]      */
    int max_blocks_per_seq;
    int pool_frames;
    int block_size;
} pf_gpu_layout;

typedef struct {
    int num_q_heads, num_kv_heads, head_dim;
    pf_gpu_dtype dtype;
} pf_gpu_head_shape;

typedef struct {
    char device[64];
    double naive_ms, paged_ms, ordered_ms;       /* median of CUDA-event timings */
    double naive_gbps, paged_gbps, ordered_gbps; /* effective KV bytes / time    */
    double max_err_naive;   /* |naive - CPU reference|, max over elements */
    double max_err_paged;   /* |paged (layout as given) - naive|          */
    double max_err_ordered; /* |paged (frames renumbered in order) - naive| */
    long long kv_bytes;
} pf_gpu_pass_result;

/* Fill a device pool laid out exactly as `layout` says with random K/V,
 * run the naive pass, the paged pass on these frames and the paged pass on
 * the same tables renumbered in order, check them, and time them. Blocking;
 * call it from a background thread. Returns PF_OK, PF_ERR_UNAVAILABLE (no
 * CUDA/device; reason in err) or another pf_err with err filled. */
int pf_gpu_run_layout(const pf_gpu_layout *layout, const pf_gpu_head_shape *hs,
                      pf_gpu_pass_result *out, char *err, size_t errlen);


/* ---- (d) the benchmark: build a workload, check every pass, time it ---- */

/* One timed pass: statistics over `iters` CUDA-event timings (ms), each
 * iteration preceded by an L2 flush (a read over twice the L2). */
typedef struct {
    double median_ms, mean_ms, sd_ms, min_ms;
    double gbps;     /* effective KV bytes / median time, GB/s (1e9)  */
    double frac_bw;  /* gbps / the read bandwidth measured in the run */
} pf_gpu_timing;

/* Most tokens and most pages one split-KV chunk (one thread block) holds.
 * Pages: a block caches its chunk's slice of the block table in shared
 * memory, PF_GPU_CHUNK_MAX_PAGES entries (and 8 of slack). Tokens: 8192,
 * cuDNN's cut of long (8 x 32768 in 4 chunks: 256 blocks, 2 an SM, one
 * wave). Measured on the H200 in one machine start (thirty-second session,
 * docs/gpu-journal.md): long read 0.967-0.976 of the read bandwidth in 4
 * chunks of 8192 against 0.951-0.959 in 8 of 4096, and 0.940, 0.957 and
 * 0.947 in 5, 6 and 7. So a chunk is at most 4096 tokens at 8-token
 * pages and 8192 from 16 on (pf_gpu_chunk_max_tokens); the planner's cost
 * model picks among the cuts below that. Versions that merge in a
 * thread-block cluster (small launches) keep 4096, as measured. */
#define PF_GPU_CHUNK_MAX_TOKENS 8192
#define PF_GPU_CHUNK_MAX_PAGES 512
#define PF_GPU_CLUSTER_CHUNK_MAX_TOKENS 4096
/* Most chunks a sequence is split into, and the longest sequence a plan
 * takes (its lengths' maximum, or its bound): 256 chunks at the smallest
 * page (8 tokens: 4096 a chunk) = 2^20 tokens, whatever the page. Longer
 * needs more partials per output row than the merge is sized for. */
#define PF_GPU_MAX_SPLITS 256
#define PF_GPU_MAX_SEQ_TOKENS (PF_GPU_MAX_SPLITS * 8 * PF_GPU_CHUNK_MAX_PAGES)

/* Most versions one bench run compares beside its own (`--compare`). */
#define PF_GPU_BENCH_MAX_RIVALS 3
/* Most whole sequences version 33 streams in one block (its pack), and
 * the step of a pack above 1 (the block's 4 warps stream one each). */
#define PF_GPU_PACK_MAX 32
#define PF_GPU_PACK_STEP 4
/* Most timed iterations a pass (each is an event pair per pass). */
#define PF_GPU_BENCH_MAX_ITERS 1000000
/* Runs a step of the changing-batch loop (pf_gpu_bench_cfg's layers): the
 * default is llama-3-8B's 32 layers; the most, above llama-3.1-405B's 126. */
#define PF_GPU_BENCH_LAYERS 32
#define PF_GPU_BENCH_MAX_LAYERS 1000

typedef struct {
    int num_seqs;
    const int *seq_lens;   /* host [num_seqs], each >= 1                     */
    int naive_cap;         /* naive reservation per sequence, >= max length  */
    int num_q_heads, num_kv_heads, head_dim, block_size;
    pf_gpu_dtype dtype;
    int iters;             /* timed iterations per pass, 1..PF_GPU_BENCH_MAX_ITERS */
    unsigned long long seed;         /* data (q, K, V)                       */
    unsigned long long shuffle_seed; /* frame permutation; 0: ordered only   */
    int shuffle_window;    /* 0: the permutation spans the pool; N: frames
                              move only within runs of N (an allocator that
                              keeps a sequence near its other frames: fewer
                              address translations; `--shuffle-window`)     */
    double tolerance;      /* max |paged - naive| and base of the ref check  */
    int ref_all_heads;     /* 1: CPU reference on every head; 0: one q head
                              per kv head and sequence when the workload is
                              large (every sequence is always checked)       */
    int measure_bw;        /* 1: measure the streaming read bandwidth        */
    int version;           /* kernel version, 0: the default                 */
    int splits;            /* 0: the planner's split-KV; N: the longest
                              sequence cut into N chunks (for measuring the
                              planner's choice, `pagefault bench --splits`) */
    int grid_order;        /* 1: no work list, blocks in grid order (for
                              measuring the list, `--grid-order`)           */
    int tail;              /* 0: none; N: each block's last 1/8 as N units
                              of its own (`--tail`, pf_gpu__plan_set_tail) */
    int pack;              /* 0: the planner's; N: version 33's plan streams
                              N whole sequences a block, 1 none (`--pack`,
                              pf_gpu__plan_set_pack; other versions ignore it),
                              at most PF_GPU_PACK_MAX                      */
    int timeline;          /* 1: one more paged launch (the last layout)
                              with the block timeline on, summarized in
                              res->timeline; versions 7 on (see (f))        */
    const char *timeline_csv; /* with timeline: its records as CSV here, or
                              NULL                                          */
    int group_tile;        /* 0: the plan's; N: N query heads a block (1, 2,
                              4, 8 dividing the group; `--group-tile`)      */
    /* `--compare`: more kernel versions (0: the default pick; a repeat is
     * allowed: two copies of one version measure the noise) run on the
     * same data in the same process, each checked as `version` is (its
     * naive pass against the CPU reference, its paged passes against its
     * naive), their passes timed in the same round-robin as version's, so
     * that drifts and the machine's start hit them alike. splits, tail,
     * grid_order and group_tile apply to every version; pack to version 33. */
    int rivals[PF_GPU_BENCH_MAX_RIVALS];
    int num_rivals;        /* 0..PF_GPU_BENCH_MAX_RIVALS                    */
    /* The paged passes' pools. 0: a K pool and a V pool, [frame][Hkv][B][D]
     * each (the split of vLLM's FlashAttention backend, [2][page][...]).
     * 1: one pool, a page's K and V side by side, [page][2][Hkv][B][D]
     * (FlashInfer's single-tensor layout, HND; vLLM's FlashInfer backend
     * allocates its cache [page][2][...]), so that one address translation
     * serves both (`--kv-layout interleaved`). The kernels run it as they
     * are: the tables name frame 2 p, and V's pool pointer is K's plus one
     * frame (see *Layouts* at the top of this header). */
    int kv_interleaved;
    /* 1: check every pass of every version and time nothing: no timed
     * rounds, no read probe, no host-time loops (the result's timings stay
     * 0 and res->timed 0). What a compute-sanitizer run needs: the
     * kernels' every launch path once, without the hundreds of launches
     * and 256 MB flushes that timing adds (`--check-only`). */
    int check_only;
    /* Runs of one plan a step in the changing-batch host-time loop (a
     * model runs its attention once a layer with one batch a step): 0:
     * PF_GPU_BENCH_LAYERS; else 2..PF_GPU_BENCH_MAX_LAYERS (`--layers`). */
    int layers;
} pf_gpu_bench_cfg;

/* One compared version's plan, timings and checks (the first version's
 * are the result's own fields below). */
typedef struct {
    int version;               /* kernel version that ran                   */
    int chunk_tokens, splits, units, group_tile; /* its plan                */
    int pack;                  /* version 33: sequences a block (0: one)    */
    pf_gpu_timing naive, ordered, shuffled;
    double max_err_ref;        /* max |its naive - CPU reference|           */
    double max_diff_base;      /* max |its naive - the first version's naive|:
                                  0 when the two do the same arithmetic     */
    double max_diff_ordered;   /* max |its paged ordered - its naive|       */
    double max_diff_shuffled;  /* max |its paged shuffled - its naive|      */
} pf_gpu_bench_rival;

/* One of the bench's changing-batch loops: its host time a run by the
 * graph path, the same loop launched directly (timed in turn with it, in
 * one process), and the graphs the graph path's timed loops made (once the
 * run's graph cache has settled: at most one a step, none for a plan a
 * run). */
typedef struct {
    double us_per_run;
    double direct_us;
    int graph_makes;
} pf_gpu_churn;

typedef struct {
    char device[64];
    int sm_count;
    double read_bw_gbps;       /* read-only reduction over a few GiB        */
    long long kv_bytes;        /* K+V bytes of the real tokens (one pass)   */
    long long naive_reserved;  /* bytes: num_seqs * naive_cap tokens        */
    long long paged_reserved;  /* bytes: frames mapped * block_size tokens  */
    int frames;                /* frames used by the tables                 */
    int chunk_tokens;          /* split-KV chunk planned on the host        */
    int splits;                /* max chunks per sequence (1: no merge)     */
    int units;                 /* work-list units (0: grid order)           */
    int pack;                  /* version 33: sequences a block (0: one)    */
    pf_gpu_timing naive, ordered, shuffled; /* shuffled: if shuffle_seed    */
    int have_shuffled;
    /* with measure_bw: the read probe's kernel over a buffer of the pass's
     * own K+V bytes, timed beside the passes (flushed, interleaved): what
     * a perfect stream of this size reaches, launch ramp and tail included */
    pf_gpu_timing stream;
    int have_stream;
    double max_err_ref;        /* max |naive - CPU reference (double)|      */
    double ref_allowed;        /* the allowance it is checked against at its
                                  worst element: tol + dtype eps * |ref|     */
    long long ref_checked;     /* output elements compared to the reference */
    double max_diff_ordered;   /* max |paged ordered - naive|               */
    double max_diff_shuffled;  /* max |paged shuffled - naive|              */
    int readback_ok;           /* pools read back through the tables == data */
    int pass;                  /* every check passed                        */
    char failure[256];         /* first failed check, when pass == 0        */
    int version;               /* kernel version that ran                   */
    int group_tile;            /* query heads a block served                */
    double host_us_per_run;    /* host time of one pf_gpu_attn_run, a loop
                                  of calls with no sync in between (paged)  */
    double launch_floor_us;    /* the same loop launching a kernel that does
                                  nothing, with the attention kernels'
                                  argument block (160 bytes; versions 15 and
                                  16 pass 448 with their tensor maps), as a
                                  run launches (a graph replay): the
                                  driver's share of it                      */
    double launch_direct_us;   /* the same empty kernel by the driver's
                                  launch (cuLaunchKernel, no graph): what a
                                  run's launch costs without its graph      */
    double graph_us_per_replay; /* the same loop replaying a CUDA graph of
                                  one run (pf_gpu_attn_graph_launch)        */
    /* the batch changing: churn_plans plans for S, S-1, ... sequences
     * (min(S, 24)) taken in turn (gpu.cu, case_host_churn): a plan a step
     * of churn_layers runs (a layer each: cfg's layers), and a plan a run */
    int churn_plans;
    int churn_layers;
    pf_gpu_churn churn_step, churn_run;
    double plan_make_us;       /* host time of one pf_gpu_attn_plan_make from
                                  the host lengths: the median of the
                                  churn_plans plans made for those loops     */
    int have_timeline;         /* cfg->timeline: the traced launch ran      */
    pf_gpu_timeline timeline;  /* its summary                               */
    int num_rivals;            /* cfg->num_rivals                           */
    int kv_interleaved;        /* the paged pools the run used (cfg's)      */
    int timed;                 /* the passes were timed (not check_only)    */
    pf_gpu_bench_rival rival[PF_GPU_BENCH_MAX_RIVALS];
} pf_gpu_bench_result;

/* Run one workload: upload, check (poisoned outputs, NaN never passes,
 * naive vs CPU reference for every sequence, paged vs naive on ordered and
 * shuffled frames, pool read-back) and time naive, paged-ordered and
 * paged-shuffled, for cfg->version and each of cfg->rivals. Returns PF_OK
 * when it ran (check res->pass), or a pf_err (PF_ERR_UNAVAILABLE without
 * CUDA/device, PF_ERR_ARG for a bad shape, version or flag a version's plan
 * refuses, PF_ERR_NOMEM when device or host memory runs out) with err
 * filled. */
int pf_gpu_bench_run(const pf_gpu_bench_cfg *cfg, pf_gpu_bench_result *res, char *err,
                     size_t errlen);

/* Validate a shape for the kernels: 1 on success, else 0 with a one-line
 * reason (head_dim not 64/128, q heads not a multiple of kv heads...). */
int pf_gpu_shape_ok(int num_q_heads, int num_kv_heads, int head_dim, int block_size,
                    char *why, size_t whylen);

/* ---- (e) measured figures for the simulator's cost model -------------- */
typedef struct {
    char device[64];
    double mem_read_gbps;  /* streaming read bandwidth, GB/s (1e9)            */
    double attn_kv_gbps;   /* paged attention at the llama shape, KV GB/s      */
    double attn_fixed_us;  /* time of the smallest launch (single 1 x 1024), us */
} pf_gpu_profile;

/* Write p in the text format `pagefault-gpu-profile/1` (one `key = value` a
 * line, `#` comments) that the simulator's pf_cost_load_profile reads: the
 * figures exactly (%.17g), a '#' or line break of the device name as a space.
 * PF_ERR_ARG (nothing written) when a figure is not finite and positive or
 * the device name is empty; PF_ERR_IO when writing fails. Host code: works
 * in every build. */
int pf_gpu_profile_write(FILE *f, const pf_gpu_profile *p);

/* Measure p on the device: the llama workload and the single one (paged,
 * shuffled frames, checked first), `iters` timings each. PF_OK, or a pf_err
 * with err filled (PF_ERR_UNAVAILABLE without a device). */
int pf_gpu_profile_measure(pf_gpu_profile *p, int iters, char *err, size_t errlen);

/* ---- (f) the block timeline (its records: see pf_gpu_timeline above) ----
 * Summarize `blocks` records. PF_ERR_ARG when there are none or one is not
 * a record (a start of 0, times out of order, one of the first and last
 * tile marks without the other, an SM number of 4096 or more);
 * PF_ERR_NOMEM. */
int pf_gpu_timeline_summarize(const unsigned long long *rec, int blocks, pf_gpu_timeline *t);

/* Write the records as CSV: a header line, then one line a block in launch
 * order, `block,sm,start_us,ready_us,streamed_us,end_us`, times in
 * microseconds from the first start (ready and streamed empty for a block
 * without tokens). PF_ERR_ARG for records summarize refuses, PF_ERR_IO when
 * writing fails. */
int pf_gpu_timeline_write(FILE *f, const unsigned long long *rec, int blocks);

#ifdef __cplusplus
}
#endif

#endif
