/* sim/sim.h - the serving simulator: jobs, two engines over the scheduler
 * core, the control API and snapshots for viewers.
 *
 * A job has an arrival time in seconds, a prompt and an output length (and,
 * for prefix caching, a group whose first tokens it shares, or a parent it
 * was forked from by --n). The simulator turns the jobs into the scheduler
 * core's requests (sim/sched.h: vLLM's rules by default, the seed's as an
 * option), times every step with the roofline cost model (sim/cost.h) and
 * keeps what viewers and reports read: totals, latency metrics in seconds
 * (sim/metrics.h), the KV split of the PagedAttention paper's Figure 2, a
 * per-step history and recent events.
 *
 * Two engines run the same scheduler:
 *  - deterministic: one thread; same inputs -> same bytes on any machine.
 *  - threaded: a fixed crew of OS threads (params.threads, default the core
 *    count; sim/crew.h); each step is planned on the driver thread and its
 *    tokens land shard by shard on every thread at once, contending on the
 *    pool's per-thread frame caches; commit is serial again. The decisions
 *    and figures are those of the deterministic engine (only frame ids may
 *    differ); the thread count and the sequence cap change live.
 *
 * Threads. Functions marked "live" below are safe to call from any thread
 * at any time, also while an engine runs on another thread: each takes the
 * simulator's mutex, which the engine holds for a step and hands over to
 * waiting callers between steps. The lifecycle functions (create, destroy,
 * run, step, start, stop) are for one controlling thread.
 * Callers: tui/ (the `sim` subcommand, sweeps and the dashboard), tests,
 * benchmarks.
 */
#ifndef PF_SIM_SIM_H
#define PF_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/memory.h"
#include "core/workload.h"
#include "sim/cost.h"
#include "sim/metrics.h"

/* ---- jobs ------------------------------------------------------------ */

typedef struct {
    double arrival; /* seconds from the start of the run (>= 0)      */
    int prompt;     /* prompt tokens (>= 1)                          */
    int output;     /* tokens to generate (>= 1)                     */
    int priority;   /* larger = more important (lowest-priority victim policy) */
    int group;      /* prefix group: a shared system prompt; -1 none  */
    int shared;     /* the group's first `shared` prompt tokens are common */
    int fork_of;    /* --n: 1 + the index of the job whose prompt this
                       sample shares; 0 for an original job          */
    int sample;     /* --n: sample number under the parent, 0 first  */
} pf_job;

typedef struct {
    pf_job *jobs; /* owned; pf_jobs_free releases it */
    int njobs;
    int rejected; /* trace jobs dropped because prompt+output > max_seq_len */
} pf_jobs;

/* The most jobs a run holds, after --n's fan-out into samples (a trace of
 * the Azure code trace's length is 8,819; a million-request run fits). */
#define PF_JOBS_MAX 10000000

/* Jobs from the seed's mix: total length from pf_workload_lengths, split
 * into prompt and output from the same seed; arrival_rate requests per
 * second, evenly spaced (request i at i / rate seconds; 0 = all at time 0,
 * as in the seed's batch). */
int pf_jobs_generate(pf_jobs *out, uint64_t seed, int njobs, const pf_mix *mix,
                     double arrival_rate, int max_seq_len);

/* Shared system prompts (--shared-prefix-tokens N --prefix-groups G): job i
 * joins group i mod G and its prompt starts with that group's N tokens (a
 * prompt shorter than N + 1 is lengthened to N + 1, and the output is cut so
 * the job still fits max_seq_len; a job that cannot fit keeps no prefix).
 * N = 0 or G = 0 removes every group. PF_ERR_ARG for negatives. */
int pf_jobs_add_prefix(pf_jobs *jobs, int shared_tokens, int groups, int max_seq_len);

/* Parallel sampling (--n K): every job becomes K samples arriving together,
 * sharing its prompt (samples 1..K-1 follow the first, with fork_of = 1 +
 * the first's index). The scheduler shares their
 * prompt blocks through the prefix cache, each sample computing its own last
 * partial block (copy on write), as vLLM V1 fans a request with n > 1 out
 * into n requests. K = 1 changes nothing. PF_ERR_ARG for K < 1 or a result
 * above PF_JOBS_MAX jobs, PF_ERR_NOMEM. */
int pf_jobs_fork(pf_jobs *jobs, int n);

/* Trace file: either our CSV ("arrival,prompt,output[,priority]" with a
 * header line, arrival in seconds, a decimal number) or the Azure public
 * format ("TIMESTAMP,ContextTokens,GeneratedTokens", wall-clock times: the
 * arrival is the time since the earliest timestamp, in seconds, used as it
 * is). Jobs longer than max_seq_len are dropped and counted in ->rejected.
 * On a malformed line returns PF_ERR_IO and writes "FILE:LINE: what" into
 * err. Never crashes on any input. */
int pf_jobs_load_trace(pf_jobs *out, const char *path, int max_seq_len, char *err,
                       size_t errlen);

/* The same from bytes already in memory (name is used in messages), so a
 * trace read once (pf_jobs_read_file: a pipe too) can be parsed again for
 * each point of a sweep. Accepts a UTF-8 BOM, rows in any order (sorted;
 * Azure time 0 is the earliest timestamp), ISO timestamps with T and Z or
 * +HH:MM; refuses NUL bytes, impossible dates and numbers out of range,
 * each with "NAME:LINE: what". */
int pf_jobs_parse_trace(pf_jobs *out, const char *name, const char *data, size_t len,
                        int max_seq_len, char *err, size_t errlen);

/* Read a whole file (or pipe) into *data (malloc'd, caller frees), *len
 * bytes. PF_OK, or PF_ERR_IO / PF_ERR_NOMEM with "PATH: why" in err. */
int pf_jobs_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);

void pf_jobs_free(pf_jobs *jobs);

/* A synthetic trace in the Azure format, of the shape of Azure's public
 * conversation trace: n requests over one hour (Poisson arrivals), prompts
 * of 100 + an exponential of mean 1,000 tokens capped at max_prompt (the
 * last request has exactly max_prompt), outputs of 1 + an exponential of
 * mean 210 capped at 2,000 (the trace's means are 1,155 and 211). The same
 * bytes for the same arguments on any machine. Returns malloc'd text (its
 * length in *len) for pf_jobs_parse_trace, or NULL (bad arguments: n in
 * [1, 10^7], max_prompt > 100; or no memory). For tests and benchmarks. */
char *pf_jobs_azure_like(int n, int max_prompt, uint64_t seed, size_t *len);

/* ---- parameters -------------------------------------------------------- */

typedef enum { PF_SIM_NAIVE = 0, PF_SIM_PAGED = 1 } pf_sim_mode;

typedef enum {
    PF_VICTIM_FAULTING = 0, /* the sequence that faulted (the seed's)       */
    PF_VICTIM_NEWEST,       /* most recently admitted (vLLM's)              */
    PF_VICTIM_FEWEST_GENERATED,
    PF_VICTIM_MOST_FRAMES,
    PF_VICTIM_LOWEST_PRIORITY,
    PF_VICTIM_COUNT
} pf_victim_policy;

typedef enum { PF_PREEMPT_RECOMPUTE = 0, PF_PREEMPT_SWAP = 1, PF_PREEMPT_COUNT } pf_preempt_mode;

typedef enum { PF_ENGINE_DETERMINISTIC = 0, PF_ENGINE_THREADED = 1 } pf_engine;

/* The scheduler's rule set (sim/sched.h says what each does). */
typedef enum { PF_SCHED_VLLM = 0, PF_SCHED_SEED = 1, PF_SCHED_COUNT } pf_sched_rules;

/* Naive mode's reservation: max, pow2, oracle (core/memory.h's first three
 * policies, the PagedAttention paper's Orca baselines). */
typedef pf_mem_reserve pf_naive_reserve;

/* NULL-terminated name tables indexed by the enums: the one spelling of
 * every name, for command-line choices, reports and the dashboard alike
 * (pf_event_names, for the event kinds, is below them). */
extern const char *const pf_sim_mode_names[];
extern const char *const pf_victim_names[];
extern const char *const pf_preempt_names[];
extern const char *const pf_engine_names[];
extern const char *const pf_sched_rules_names[];   /* {"vllm", "seed", NULL}         */
extern const char *const pf_naive_reserve_names[]; /* {"max", "pow2", "oracle", NULL} */

const char *pf_sim_mode_name(pf_sim_mode m);
const char *pf_victim_name(pf_victim_policy p);   /* "faulting", "newest", "fewest-generated", "most-frames", "lowest-priority" */
const char *pf_preempt_name(pf_preempt_mode m);   /* "recompute", "swap" */
const char *pf_engine_name(pf_engine e);          /* "deterministic", "threaded" */

typedef struct {
    pf_config cfg;            /* block size, max_seq_len, pool blocks      */
    pf_sim_mode mode;
    pf_engine engine;
    pf_sched_rules scheduler; /* vllm (default) or seed                    */
    double watermark;         /* 0..1 fraction of the pool kept free when a
                                 new request is admitted                   */
    int watermark_auto;       /* 1: the load controller (sim/loadctl.h)
                                 moves the watermark, starting from it     */
    int workers;              /* max_num_seqs: running sequences at most
                                 (1..PF_SIM_MAX_SEQS)                      */
    int max_num_batched_tokens; /* token budget per step (vllm rules)      */
    pf_victim_policy policy;
    pf_preempt_mode preempt;
    pf_naive_reserve naive_reserve; /* naive mode: max, pow2 or oracle     */
    int prefix_caching;       /* vLLM's --enable-prefix-caching            */
    int swap_host_blocks;     /* capacity of the host swap pool (frames)   */
    int stall_limit;          /* seed rules: steps a faulting sequence
                                 stalls before a victim is preempted       */
    int pingpong_window;      /* steps: preempted again this soon after its
                                 readmission counts as a ping-pong         */
    double slo_ttft_s, slo_tpot_s; /* latency objectives (0: none)         */
    pf_cost cost;             /* the model and GPU every step is timed on  */
    int threads;              /* threaded engine: OS threads (0 = cores)   */
    int tick_us;              /* live mode: wall time per step (0 = as fast
                                 as it goes)                               */
    uint64_t seed;            /* token ids of the synthetic prompts        */
    double naive_throughput;  /* baseline for throughput_vs_naive when the
                                 caller already has it (output tokens/s); 0
                                 = computed with a naive deterministic run
                                 of the same jobs (same reservation policy,
                                 same cap), remembered per cap             */
} pf_sim_params;

#define PF_SIM_MAX_SEQS 65536

/* vLLM's defaults (sim/sched.h: 8192 batched tokens, 1024 sequences,
 * watermark 0.01, newest victim, recompute), the seed's pool (4096 frames
 * of 16 tokens, max-len 2048), Llama 3 8B on an H200 for time. */
void pf_sim_params_default(pf_sim_params *p);

/* ---- statistics ---------------------------------------------------------- */

/* One latency metric's figures in seconds (sim/metrics.h). */
typedef pf_latency_summary pf_sim_latency;

typedef struct {
    int64_t step;             /* steps run                                 */
    double time_s;            /* simulated seconds                         */
    int waiting, running, decoding, stalled, swapped_out;
    int64_t admitted, finished;
    int64_t preemptions, recomputed_tokens, swapped_pages, pingpongs;
    int64_t tokens_generated; /* useful output tokens                      */
    int64_t tokens_computed;  /* generated + recomputed                    */
    double decoding_mean;     /* mean decoding sequences per step          */
    double stalled_mean;
    double wait_mean, wait_p50, wait_p99; /* request_queue_time, seconds   */
    double kv_usage;          /* used frames / pool, now, 0..1             */
    double kv_usage_mean;     /* mean over steps                           */
    double throughput;        /* output tokens per second                  */
    double throughput_vs_naive; /* throughput / naive throughput, same jobs (0 if unknown) */
    double goodput;           /* tokens_generated / tokens_computed        */
    int pool_used, pool_free, pool_peak;
    int done;                 /* every job finished                        */
    int running_peak;         /* most sequences admitted at once           */
    int64_t seq_steps;        /* sum over steps of running sequences       */
    double waiting_mean;      /* mean waiting requests per step            */
    double running_mean;      /* mean running sequences per step           */
    int64_t aborted;          /* requests that can never fit the pool      */
    int livelock;             /* 1 when the run stopped because nothing
                                 could move (pf_sim_run's PF_ERR_RANGE)    */
    int64_t tokens_held;      /* tokens the frames in the pool hold now    */
    double kv_util;           /* tokens_held / (pool_used x block_size)    */
    int njobs;                /* jobs in the run                           */
    /* time and latency (issue 9): */
    double step_s_mean;       /* mean step duration, seconds               */
    double request_throughput;/* finished requests per second              */
    pf_sim_latency lat[PF_MET_COUNT]; /* ttft, itl, tpot, e2e, queue       */
    double slo_attainment;    /* requests meeting both objectives, 0..1    */
    double slo_goodput;       /* ... per second (DistServe)                */
    int64_t prefix_queries, prefix_hits; /* tokens, vLLM's counters        */
    double prefix_hit_rate;   /* hits / queries                            */
    int prefix_cached;        /* frames findable by hash now               */
    int64_t frames_saved;     /* frames not allocated thanks to hits       */
    pf_mem_split split;       /* Figure 2: token states / reserved /
                                 internal / external, time average         */
    double watermark;         /* in force now (moves under --watermark auto) */
    int64_t loadctl_raises, loadctl_lowers;
} pf_sim_stats;

/* ---- the simulator ------------------------------------------------------- */

typedef struct pf_sim pf_sim;

/* Create a simulator over a copy of jobs (sorted by arrival). Returns NULL
 * and writes a reason into err on bad parameters or allocation failure. A
 * job larger than the pool is not an error here: the run aborts it
 * (pf_sim_stats.aborted). Memory is proportional to the jobs and to the
 * running sequences' block tables, never jobs x max_seq_len. */
pf_sim *pf_sim_create(const pf_sim_params *p, const pf_jobs *jobs, char *err, size_t errlen);
void pf_sim_destroy(pf_sim *sim); /* stops threads first if running */

/* Run to completion with the engine of the parameters and fill stats.
 * Returns PF_OK when every job finished or was aborted; PF_ERR_RANGE when
 * the run stopped in a livelock (stats.livelock: sequences kept preempting
 * one another and none produced a token, possible under the seed's rules
 * only); other codes on error. */
int pf_sim_run(pf_sim *sim, pf_sim_stats *out);

/* Advance one step on a simulator no engine is running (while the
 * background engine runs it is pf_sim_single_step). Returns 1 when all jobs
 * are done, 0 otherwise, <0 on error; PF_ERR_RANGE in a livelock. */
int pf_sim_step(pf_sim *sim);

/* Live mode: start the engine in the background on a driver thread (and
 * the crew, threaded), one step per tick_us. The run loops: when every job
 * is done (or the run livelocked) and the run is not paused, it starts
 * again on the same jobs (PF_EV_RESET), so a viewer always has something
 * to show. A viewer that wants the end on screen sets hold_end: the driver
 * then pauses on the run's last step instead, with the final figures,
 * however fast it steps, until pf_sim_reset (or pf_sim_set_mode) starts the
 * next run or pf_sim_single_step steps into it. */
int pf_sim_start(pf_sim *sim);
int pf_sim_stop(pf_sim *sim);
int pf_sim_set_hold_end(pf_sim *sim, int on);

/* Consistency check for tests (pf_sched_check, and the simulator's own
 * counters against it). PF_OK or PF_ERR_ARG. Exact between steps. */
int pf_sim_check(pf_sim *sim);

/* A publisher of the prefix cache's block events (net/kvpub): attach(ctx,
 * sc) is called at once with the scheduler of the current run and again
 * with each new one (a reset, a mode change, the next loop of a live run),
 * so it can register its own pf_sched_on_block callback there and read the
 * requests' token ids; step_end(ctx, t_end) is called after every step with
 * its end time (a publisher batches per step). Both run on the engine's
 * thread with the simulator's lock held and must not call back into the
 * simulator. attach NULL detaches (step_end is then not called either). */
struct pf_sched;
typedef void (*pf_sim_attach_fn)(void *ctx, struct pf_sched *sc);
typedef void (*pf_sim_step_fn)(void *ctx, double t_end);
void pf_sim_on_sched(pf_sim *sim, pf_sim_attach_fn attach, pf_sim_step_fn step_end, void *ctx);

/* Every event (the ones snapshots keep the last PF_SIM_EVENTS of), as it
 * happens: on the engine's thread, with the simulator's lock held (the
 * callback must not call back into the simulator). NULL removes. */
struct pf_event;
typedef void (*pf_sim_event_fn)(void *ctx, const struct pf_event *e);
void pf_sim_on_event(pf_sim *sim, pf_sim_event_fn fn, void *ctx);

/* ---- control (live) ------------------------------------------------------ *
 * Each returns PF_OK or PF_ERR_ARG for a bad value. set_workers (the
 * sequence cap, max_num_seqs) also brings the vs-naive baseline up to date
 * for the new cap (a private naive run, on the caller's thread, outside the
 * lock, remembered per cap). */
int pf_sim_set_watermark(pf_sim *sim, double watermark); /* also ends auto */
int pf_sim_set_watermark_auto(pf_sim *sim, int on);
int pf_sim_set_workers(pf_sim *sim, int workers);
int pf_sim_set_threads(pf_sim *sim, int threads); /* threaded engine */
int pf_sim_set_policy(pf_sim *sim, pf_victim_policy policy);
int pf_sim_set_preempt(pf_sim *sim, pf_preempt_mode mode);
int pf_sim_set_mode(pf_sim *sim, pf_sim_mode mode); /* implies reset */
int pf_sim_set_paused(pf_sim *sim, int paused); /* live mode; pf_sim_run ignores it */
int pf_sim_single_step(pf_sim *sim);               /* while paused: one step (with no
                                                       driver, now: the step's error) */
int pf_sim_set_tick_us(pf_sim *sim, int tick_us);  /* speed */
int pf_sim_reset(pf_sim *sim);                      /* same jobs from the start */
void pf_sim_get_params(pf_sim *sim, pf_sim_params *out);
void pf_sim_get_stats(pf_sim *sim, pf_sim_stats *out);
/* The latency accumulators themselves (histograms with vLLM's buckets, for
 * a /metrics writer); *out is about 220 KB: allocate it. */
int pf_sim_get_metrics(pf_sim *sim, pf_metrics *out);

/* ---- snapshots (live) ---------------------------------------------------- */

typedef enum {
    PF_FRAME_FREE = 0,
    PF_FRAME_USED,     /* holds tokens                                    */
    PF_FRAME_RESERVED, /* naive: reserved by a sequence, no token yet     */
    PF_FRAME_SHARED,   /* held by more than one sequence (prefix cache)   */
    PF_FRAME_SWAPPED,  /* being copied to/from host swap                  */
    PF_FRAME_CACHED    /* no sequence holds it; the prefix cache keeps it
                          (counts as free: evicted when a frame is needed) */
} pf_frame_state;

typedef struct {
    int32_t owner; /* sequence id, -1 when free or only cached */
    uint8_t state; /* pf_frame_state */
} pf_frame_view;

typedef enum {
    PF_SEQ_WAITING = 0,
    PF_SEQ_DECODING,
    PF_SEQ_STALLED,
    PF_SEQ_SWAPPED,
    PF_SEQ_RECOMPUTING, /* readmitted after a recompute preemption: its
                           prefill is being computed again            */
    PF_SEQ_DONE,
    PF_SEQ_PREFILLING   /* admitted, its prompt being computed         */
} pf_seq_state;

typedef struct {
    int32_t id;
    uint8_t state; /* pf_seq_state */
    int prompt, output, generated, frames, preemptions;
    double arrival;     /* seconds                                          */
    int64_t admit_step; /* step of its last admission, -1 if never admitted */
    double admit_time;  /* seconds of its first scheduling, -1 if never     */
    double ttft;        /* seconds to its first token, -1 before it         */
    int computed;       /* tokens whose KV its frames hold                  */
    int shared_frames;  /* of its frames, those another sequence holds too  */
    int64_t table_at;   /* its block table is snap->tab_buf[table_at ..
                           table_at + frames) (running sequences of a live
                           snapshot); -1 when not there                   */
} pf_seq_view;

typedef enum {
    PF_EV_ADMIT = 0,
    PF_EV_STALL,
    PF_EV_PREEMPT,
    PF_EV_SWAP_OUT,
    PF_EV_SWAP_IN,
    PF_EV_FINISH,
    PF_EV_PINGPONG,
    PF_EV_RESET,
    PF_EV_ABORT,    /* a request that can never be admitted was dropped */
    PF_EV_WATERMARK,/* the load controller moved the watermark: frames =
                       the new value, seq = the waste of the window that
                       decided it (recomputed / computed tokens), both
                       in thousandths                                  */
    PF_EV_COUNT
} pf_event_kind;

extern const char *const pf_event_names[]; /* [PF_EV_COUNT + 1], NULL-terminated */
const char *pf_event_name(pf_event_kind k); /* "admit", "stall", ..., "?" if out of range */

typedef struct pf_event {
    int64_t step;
    uint8_t kind; /* pf_event_kind */
    int32_t seq;
    int32_t frames;
    double time;  /* seconds */
} pf_event;

#define PF_SIM_EVENTS 64   /* most recent events kept in a snapshot */
#define PF_SIM_FIRSTS 1024 /* most recent first tokens kept in a snapshot */

/* A request's first token: when it came (the step's end, seconds) and its
 * time to first token. */
typedef struct {
    double t;
    float ttft;
} pf_first_token;
#define PF_SIM_HISTORY 256 /* per-step history kept for sparklines  */

typedef struct {
    pf_sim_params params;
    pf_sim_stats stats;
    int paused;
    int nframes;             /* = params.cfg.pool_blocks              */
    pf_frame_view *frames;   /* [nframes], owned by the snapshot      */
    int nseqs;               /* running sequences (decoding, stalled,
                                prefilling) and those swapped out; the
                                waiting queue is only counted         */
    pf_seq_view *seqs;       /* [nseqs], owned by the snapshot        */
    int nevents;             /* oldest first                          */
    pf_event events[PF_SIM_EVENTS];
    int nhistory;            /* oldest first                          */
    float hist_decoding[PF_SIM_HISTORY];
    float hist_stalled[PF_SIM_HISTORY];
    float hist_preempt[PF_SIM_HISTORY]; /* preemptions in that step   */
    float hist_usage[PF_SIM_HISTORY];   /* kv usage 0..1              */
    int frames_cap, seqs_cap; /* allocated lengths of frames / seqs   */
    int64_t hist_step0;       /* step number of the oldest history entry */
    /* per frame, the index in seqs[] of its owner and its logical block in
     * the owner's page table (-1 when free), [nframes], owned */
    int32_t *frame_seq;
    int32_t *frame_block;
    int frame_aux_cap;
    /* per history entry (issue 9): the step's end time, seconds; output
     * tokens in it; requests waiting after it */
    double hist_time[PF_SIM_HISTORY];
    float hist_tokens[PF_SIM_HISTORY];
    float hist_waiting[PF_SIM_HISTORY];
    /* per history entry: requests whose first token came in that step,
     * and the sum of their times to first token (seconds): a window's
     * mean TTFT is a ratio of the two sums */
    float hist_firsts[PF_SIM_HISTORY];
    float hist_ttft_sum[PF_SIM_HISTORY];
    /* the run's most recent first tokens, oldest first: ft[i] is the run's
     * (ft_first + i)-th, so a viewer polling faster than PF_SIM_FIRSTS
     * first tokens come keeps every one (for windowed TTFT quantiles) */
    int64_t ft_first;
    int nft;
    pf_first_token ft[PF_SIM_FIRSTS];
    /* scratch of pf_sim_take_snapshot (the block tables copied under the
     * lock), owned; and the seconds the lock was held for the last one */
    int32_t *tab_buf;
    int64_t tab_cap;
    pf_metrics *met;
    int met_ok;
    double locked_s;
} pf_sim_snapshot;

/* Fill snap (allocating or growing its arrays as needed). The first call
 * takes a zeroed snapshot. The engine is stopped only while the figures,
 * the running sequences and their block tables are copied (O(running
 * sequences + frames they hold), a memcpy per table); the frame grid is
 * built from that copy after the lock is released, so the world does not
 * stop for O(pool) work. Frames no sequence holds are told free or cached
 * from the pool's lock-free reference counts, read just after the lock:
 * such a frame can be a step newer than the rest. */
int pf_sim_take_snapshot(pf_sim *sim, pf_sim_snapshot *snap);
void pf_sim_snapshot_free(pf_sim_snapshot *snap);

/* Block tables of the running sequences, for the GPU pass on the current
 * layout: fills lens[i] and tables[i*max_blocks ...] for up to cap
 * sequences; returns the count. */
int pf_sim_layout(pf_sim *sim, int cap, int max_blocks, int *lens, int *tables);

#endif
