/* sim/sched.h - the scheduler core: which requests run in an iteration, how
 * many tokens each processes, who is admitted and who is preempted.
 *
 * What it is. One iteration (a "step") of a continuous-batching server, as a
 * plain function over plain state: the requests, a waiting queue, a running
 * list in admission order, and the frame pool. Two rule sets share it:
 *
 *  - vLLM (the default; vLLM V1's Scheduler.schedule(), 0.8-0.11): a token
 *    budget per step (max_num_batched_tokens) spent first on the running
 *    requests in admission order, then on the waiting queue in FCFS order;
 *    prompts are prefilled in chunks that fit the budget (chunked prefill); a
 *    running request that needs a frame when none is free preempts the newest
 *    running request at once (possibly itself), which frees all its frames and
 *    goes back to the front of the waiting queue to be recomputed - its
 *    prompt and the tokens it had generated are prefilled again out of the
 *    token budget; no new request is admitted in a step that preempted; a
 *    waiting request is admitted only if, after its frames, watermark x pool
 *    frames stay free; the head of the queue blocks the rest (FCFS).
 *  - seed (the original description's): no token budget (a prompt is
 *    prefilled in its admission step); a running request that faults stalls,
 *    holding its frames, for up to stall_limit steps, then a victim chosen by
 *    the victim policy is preempted; admission FCFS with the watermark.
 *
 * Both take any victim policy (sim/policy.h) and preemption by recompute or
 * by swap to a bounded host pool (the victim's frames copied out over the
 * host link and back in at readmission, no recompute).
 *
 * Prefix caching (either rule set, paged): full blocks are named by the
 * chained hash of their tokens (sim/prefix.h); an admitted request starts
 * from its longest cached prefix, taking a reference on each of those
 * frames instead of computing them; a block that fills during a step is
 * offered to the cache; a released block stays cached, unreferenced and
 * counted as free, until the pool runs short and the least recently
 * released one is evicted. The pool's reference counts mirror the holders
 * (each request holding a frame, and the cache for an unreferenced cached
 * one), so a viewer sees sharing from the pool alone.
 *
 * Naive mode (either rule set): a request reserves its whole KV up front at
 * admission, by a named policy (the PagedAttention paper's three Orca
 * baselines): max (max_seq_len tokens), pow2 (the next power of two at or
 * above its final length), oracle (exactly its final length). It never
 * faults, so it never preempts.
 *
 * Time is not computed here: each step's work is summarised in a
 * pf_sched_batch (decode and prefill tokens, KV read, attention work) and the
 * caller's cost function turns it into seconds (sim/cost.h); the step's end
 * time stamps every token it produced.
 *
 * Contract. Single-threaded: the caller owns the pf_sched and serialises
 * every call. Deterministic: the same requests and parameters give the same
 * decisions and figures on every machine (frame ids come from the pool and
 * are the only thing that may differ under a threaded caller). Memory is
 * proportional to the live requests: a block table exists only while its
 * request holds frames. Errors are returned, never aborted on.
 * Callers: sim/sim.c (the simulator's two engines), net/kvpub.c (block
 * events), tests/test_sim_sched.c, tests/race_sched.c, bench/bench_sched.c.
 */
#ifndef PF_SIM_SCHED_H
#define PF_SIM_SCHED_H

#include <stdint.h>

#include "core/pool.h"
#include "sim/cost.h"
#include "sim/metrics.h"
#include "sim/prefix.h"
#include "sim/sim.h"

/* pf_sched_rules and pf_naive_reserve (with their name tables) are in
 * sim/sim.h: they are the simulator's user-facing choices too. */

typedef struct {
    pf_sched_rules rules;
    int paged;                  /* 1 paged (demand paging), 0 naive reservation      */
    pf_naive_reserve reserve;   /* naive mode's reservation policy                    */
    int block_size;             /* tokens per frame                                  */
    int max_seq_len;            /* longest request (naive max reservation)           */
    int max_num_seqs;           /* running requests at most (vLLM --max-num-seqs)     */
    int max_num_batched_tokens; /* token budget per step (vLLM only)                 */
    double watermark;           /* admission reserve, fraction of the pool            */
    pf_victim_policy victim;    /* vLLM's is PF_VICTIM_NEWEST                         */
    pf_preempt_mode preempt;    /* recompute (vLLM V1's only mode) or swap            */
    int swap_host_blocks;       /* host swap pool, frames                             */
    int stall_limit;            /* seed rules: steps a faulting request stalls
                                   (0..PF_SCHED_STALL_LIMIT_MAX)                       */
    int pingpong_window;        /* steps: preempted again this soon after readmission */
    int always_walk;            /* tests: never take the fast plan (same results)     */
    double slo_ttft_s, slo_tpot_s; /* latency objectives (0: none), sim/metrics.h    */
    int prefix_caching;         /* vLLM's --enable-prefix-caching (sim/prefix.h)       */
    uint64_t token_seed;        /* synthetic token ids (pf_token_at)                  */
} pf_sched_params;

/* The longest stall the seed's rules take: a request's stall count must
 * never reach INT_MAX (it grows by one a step, and by the skipped steps
 * when every running request stalls), and a million steps of stalling is
 * already far past any run the seed describes (its limit is 4). */
#define PF_SCHED_STALL_LIMIT_MAX 1000000

/* vLLM's defaults for a >= 70 GiB GPU serving the OpenAI API (vLLM 0.8-0.11,
 * EngineArgs._set_default_args_v1): 8192 batched tokens, 1024 sequences,
 * watermark 0.01, newest victim, recompute; block 16. Pool and lengths from
 * the seed (4096 frames, 2048 tokens). */
void pf_sched_params_default(pf_sched_params *p);

/* A request as the scheduler sees it. */
typedef enum {
    PF_REQ_PENDING = 0, /* not arrived                                   */
    PF_REQ_WAITING,     /* in the waiting queue (new or preempted)       */
    PF_REQ_RUNNING,     /* admitted: holds frames                        */
    PF_REQ_STALLED,     /* running, faulted this step (seed rules)       */
    PF_REQ_SWAPPED,     /* preempted to the host, in the waiting queue   */
    PF_REQ_DONE,
    PF_REQ_ABORTED      /* can never fit the pool: dropped alone         */
} pf_req_state;

typedef struct {
    /* What every step touches comes first, in one cache line's worth. */
    int32_t prompt, output;
    int32_t generated;    /* output tokens sampled so far (kept on preemption)*/
    int32_t computed;     /* tokens whose KV is in its frames                 */
    int32_t computed_max; /* most ever computed: below it, a prefill is recompute */
    int32_t nframes;      /* block table length                               */
    int32_t sched_tokens; /* tokens scheduled explicitly in this step         */
    int32_t hold;         /* admitted this step: frames to hold once landed   */
    uint8_t state;        /* pf_req_state                                     */
    uint8_t decode;       /* running and asking for exactly one token         */
    uint8_t flags;        /* land -> commit (internal)                        */
    int32_t stalled;      /* consecutive stalled steps (seed rules)           */
    int32_t *table;       /* block table, owned; NULL when it holds no frame  */
    double t_last_token;
    int32_t cap;          /* block table capacity                             */
    int32_t slot;         /* running slot, -1 when not running                */
    /* The rest changes at admission, preemption and the end. */
    double arrival;       /* seconds                                          */
    int32_t priority;
    int32_t host_frames;  /* frames held in host swap                         */
    int32_t preemptions;
    int64_t admit_order;  /* admission counter at the last admission          */
    int64_t admit_step;   /* step of the last admission (ping-pong detection) */
    double t_first_sched, t_first_token, t_done;
    int32_t prev, next;   /* running list, admission order, -1 terminated     */
    int32_t pprev, pnext; /* prefilling list (running, not decode), likewise  */
    /* prefix caching */
    int32_t group;        /* prefix group (system prompt), -1 for none        */
    int32_t shared_tokens;/* the group's first N prompt tokens are common     */
    int32_t fork_of;      /* --n: 1 + the index of the request whose prompt
                             it shares (an earlier one); 0 for none (so a
                             zeroed request is an original)                 */
    int32_t sample;       /* --n: sample number, 0 for the first            */
    int32_t hashed;       /* leading full blocks already offered to the cache */
    uint64_t last_hash;   /* chained hash of block hashed - 1                 */
    int32_t hit_blocks;   /* leading blocks taken from the prefix cache       */
} pf_req;

/* One step's work, for the cost model. */
typedef struct {
    pf_cost_batch work;       /* what the forward pass computes (sim/cost.h) */
    int64_t recompute_tokens; /* of the prefill: KV computed before and lost to
                                 a recompute preemption (wasted work)        */
    int64_t swap_out_frames, swap_in_frames; /* over the host link           */
} pf_sched_batch;

/* What happened in a step, for statistics and viewers. */
typedef enum {
    PF_SCHED_EV_ADMIT = 0, /* a = frames taken                               */
    PF_SCHED_EV_PREEMPT,   /* recompute preemption; a = frames freed         */
    PF_SCHED_EV_SWAP_OUT,  /* a = frames copied out                          */
    PF_SCHED_EV_SWAP_IN,   /* a = frames copied back                         */
    PF_SCHED_EV_STALL,     /* seed rules: a request started stalling         */
    PF_SCHED_EV_FIRST_TOKEN,
    PF_SCHED_EV_FINISH,    /* a = frames freed                               */
    PF_SCHED_EV_ABORT,     /* a request that can never fit was dropped       */
    PF_SCHED_EV_PINGPONG,  /* preempted again within the ping-pong window    */
    PF_SCHED_EV_COUNT
} pf_sched_ev;

typedef void (*pf_sched_event_fn)(void *ctx, pf_sched_ev ev, int req, int a);

/* Seconds a step takes, from its batch (sim/cost.h), >= 0. */
typedef double (*pf_sched_cost_fn)(void *ctx, const pf_sched_batch *b);

typedef struct pf_sched pf_sched;

/* A scheduler over n requests (copied from jobs: arrival in seconds,
 * sorted), on a pool of pool_frames frames. NULL with a reason in err on bad
 * parameters or allocation failure. cost may be NULL (every step 1 s). */
pf_sched *pf_sched_create(const pf_sched_params *p, const pf_req *jobs, int n, int pool_frames,
                          pf_sched_cost_fn cost, void *cost_ctx, char *err, size_t errlen);
void pf_sched_destroy(pf_sched *s);
void pf_sched_on_event(pf_sched *s, pf_sched_event_fn fn, void *ctx);

/* The prefix cache's block events, in vLLM's KV-event vocabulary
 * (vllm/distributed/kv_events.py): a block stored under its chained hash
 * (with its parent's hash, PF_PREFIX_ROOT_HASH for a first block, and the
 * request whose tokens filled it: pf_token_at gives its token ids), or
 * removed (evicted). Called from plan and commit, on the caller's thread,
 * in a deterministic order. */
typedef enum { PF_SCHED_BLOCK_STORED = 0, PF_SCHED_BLOCK_REMOVED } pf_sched_block_ev;
typedef struct pf_sched_block_event {
    pf_sched_block_ev kind;
    uint64_t hash, parent;   /* parent: stored blocks only                  */
    int32_t frame;
    int32_t req;             /* stored: the filling request; removed: -1    */
    int32_t block;           /* stored: the block's index in that request   */
} pf_sched_block_event;
typedef void (*pf_sched_block_fn)(void *ctx, const pf_sched_block_event *e);
void pf_sched_on_block(pf_sched *s, pf_sched_block_fn fn, void *ctx);

/* One step: arrivals up to the current time join the queue, the rules pick
 * the batch, the cost function gives its duration, the clock advances, and
 * every scheduled request's tokens land. When nothing is running and
 * nothing can be admitted, the clock jumps to the next arrival instead (one
 * call, no empty steps). Returns 1 when every request is done or aborted,
 * 0 otherwise, or a negative pf_err. Same as plan, land(0 of 1), commit. */
int pf_sched_step(pf_sched *s);

/* The step in three phases, for engines that land in parallel:
 *   plan    (one thread)  every decision of the step and its duration;
 *   land    (any thread)  the tokens of the running slots of one shard
 *                         land: frames taken and freed, tokens sampled; a
 *                         shard is the slot range [k*S/n, (k+1)*S/n) of the
 *                         S = pf_sched_nslots slots; shards touch disjoint
 *                         requests and only the (thread-safe) pool besides;
 *   commit  (one thread)  after every shard landed: finished requests leave,
 *                         events go out in slot order, totals are summed.
 * The results do not depend on the number of shards. plan returns 1 when
 * every request is done (nothing to land or commit), 0 when a step was
 * planned, or a negative pf_err. pf_sched_set_shards sizes the per-shard
 * state (1..4096) between steps; on failure the shards are as they were.
 * pf_sched_shards: how many there are. */
int pf_sched_plan(pf_sched *s);
int pf_sched_set_shards(pf_sched *s, int nshards);
int pf_sched_shards(const pf_sched *s);
int pf_sched_nslots(const pf_sched *s);
void pf_sched_land(pf_sched *s, int shard);
int pf_sched_commit(pf_sched *s);

/* Run steps until done. */
int pf_sched_run(pf_sched *s);

/* Live parameter changes (between steps). */
int pf_sched_set_watermark(pf_sched *s, double w);
int pf_sched_set_max_num_seqs(pf_sched *s, int n);
int pf_sched_set_victim(pf_sched *s, pf_victim_policy v);
int pf_sched_set_preempt(pf_sched *s, pf_preempt_mode m);

/* Reads. */
double pf_sched_now(const pf_sched *s);      /* seconds                   */
int64_t pf_sched_steps(const pf_sched *s);
int pf_sched_nreqs(const pf_sched *s);
const pf_req *pf_sched_req(const pf_sched *s, int i);
int pf_sched_running(const pf_sched *s);     /* requests holding frames   */
int pf_sched_slot_req(const pf_sched *s, int slot); /* request id or -1   */
/* The slot table (slots[k]: a request id or -1, *n slots) and the request
 * array, for a reader that walks every running request at once (a
 * snapshot): valid until the next step. */
const int32_t *pf_sched_slots(const pf_sched *s, int *n);
const pf_req *pf_sched_reqs(const pf_sched *s);
int64_t pf_sched_fast_steps(const pf_sched *s); /* steps planned without walking the running list */
int pf_sched_waiting(const pf_sched *s);     /* queued (incl. swapped)    */
int pf_sched_waiting_at(const pf_sched *s, int k); /* k-th in the queue, head
                                                first (preempted requests
                                                are there), or -1          */
int pf_sched_free_frames(const pf_sched *s);
const pf_sched_batch *pf_sched_last_batch(const pf_sched *s);
int64_t pf_sched_tokens(const pf_sched *s);  /* output tokens sampled, total */

/* After a step: running requests that stalled in it (seed rules), and the
 * PagedAttention paper's Figure 2 split of the running requests' frames in
 * tokens (core/memory.h): holding a token now, reserved for tokens still to
 * come, never to be used (internal fragmentation). A frame shared by k
 * requests counts k times. */
int pf_sched_stalled(const pf_sched *s);
void pf_sched_kv_split(const pf_sched *s, int64_t *held, int64_t *reserved, int64_t *internal);
/* Tokens the running requests' frames hold, a block shared through the
 * prefix cache counted once (by the request that filled it; one whose
 * filler has finished is not counted: a lower bound). */
int64_t pf_sched_tokens_held(const pf_sched *s);

/* The prefix cache's counters (zeros when caching is off). */
void pf_sched_prefix_stats(const pf_sched *s, pf_prefix_stats *out);

/* Where request i's tokens come from (what its block hashes are computed
 * from, and what pf_token_at turns into token ids): a KV-event publisher
 * names a stored block's token ids with it (net/kvpub). PF_ERR_ARG for a bad
 * id. (Added for issue 13.) */
int pf_sched_token_src(const pf_sched *s, int i, pf_token_src *out);

/* Latency metrics so far (finished requests, every inter-token gap folded
 * in by the last commit) into *out. */
int pf_sched_metrics(const pf_sched *s, pf_metrics *out);
/* The same into a reused buffer (zeroed, or an earlier copy's), moving only
 * the histogram bins in use (pf_metrics_copy). */
int pf_sched_metrics_copy(const pf_sched *s, pf_metrics *out);
pf_pool *pf_sched_pool(pf_sched *s);
const pf_sched_params *pf_sched_get_params(const pf_sched *s);

/* Frames a request of `tokens` final length reserves under naive policy r. */
int pf_sched_naive_tokens(pf_naive_reserve r, int tokens, int max_seq_len);

/* Consistency: every frame a request lists is owned by it, pool counts
 * agree, queues hold exactly the waiting requests. PF_OK or PF_ERR_ARG. */
int pf_sched_check(pf_sched *s);

#endif
