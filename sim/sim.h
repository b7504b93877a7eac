/* sim/sim.h - the serving simulator: jobs, scheduler, two engines, the
 * control API and snapshots for viewers.
 *
 * A job has an arrival step, a prompt and an output length. Admitted jobs
 * become running sequences that decode one token per step; under paged mode
 * a sequence takes a new frame only when its last one is full (demand
 * paging); under naive mode it reserves MAX_SEQ_LEN tokens of frames up
 * front. A page fault with no free frame stalls the sequence or preempts a
 * victim (recompute or swap), chosen by a victim policy. Admission is first
 * come, first served: swapped-out sequences first, then the waiting queue,
 * in order, none overtaking a blocked one; a new request is admitted when,
 * after its prompt's frames, watermark x pool frames stay free; a returning
 * (preempted) sequence needs only its frames to fit. A request that can
 * never be admitted under the parameters is aborted alone (counted in
 * pf_sim_stats.aborted), as vLLM does, and the run goes on.
 *
 * Two engines run the same policy functions (sim/policy.h):
 *  - deterministic: virtual time, one thread; same inputs -> same bytes.
 *  - threaded: one pthread per worker slot, real contention on the pool,
 *    paced by a tick length; workers can be added and removed while it runs.
 *
 * Threads. Functions marked "live" below are safe to call from any thread
 * at any time, also while an engine runs on another thread (pf_sim_start's
 * background engine, or pf_sim_run of either engine): every one of them
 * takes the simulator's one mutex, which every step holds too; none is ever
 * switched off. pf_sim_take_snapshot copies state out and holds the lock
 * only for a short copy. The lifecycle functions (create, destroy, run,
 * step, start, stop) are for one controlling thread.
 * Callers: tui/ (the `sim` subcommand and the dashboard), tests.
 */
#ifndef PF_SIM_SIM_H
#define PF_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/workload.h"

/* ---- jobs ------------------------------------------------------------ */

typedef struct {
    int arrival;  /* step at which the job arrives            */
    int prompt;   /* prompt tokens (>= 1)                     */
    int output;   /* tokens to generate (>= 1)                */
    int priority; /* larger = more important (lowest-priority victim policy) */
} pf_job;

typedef struct {
    pf_job *jobs; /* owned; pf_jobs_free releases it */
    int njobs;
    int rejected; /* trace jobs dropped because prompt+output > max_seq_len */
} pf_jobs;

/* Jobs from the seed's mix: total length from pf_workload_lengths, split
 * into prompt and output from the same seed; arrivals spread by
 * arrival_rate jobs per step (0 = all arrive at step 0, as in the seed). */
int pf_jobs_generate(pf_jobs *out, uint64_t seed, int njobs, const pf_mix *mix,
                     double arrival_rate, int max_seq_len);

/* Trace file: either our CSV ("arrival,prompt,output" with a header line)
 * or the Azure public format ("TIMESTAMP,ContextTokens,GeneratedTokens",
 * wall-clock arrivals mapped onto steps with step_ms milliseconds per step).
 * Jobs longer than max_seq_len are dropped and counted in ->rejected.
 * On a malformed line returns PF_ERR_IO and writes "FILE:LINE: what" into
 * err. Never crashes on any input. */
int pf_jobs_load_trace(pf_jobs *out, const char *path, double step_ms, int max_seq_len,
                       char *err, size_t errlen);

/* The same from bytes already in memory (name is used in messages), so a
 * trace read once (pf_jobs_read_file: a pipe too) can be parsed again for
 * each point of a sweep. Accepts a UTF-8 BOM, rows in any order (sorted;
 * Azure time 0 is the earliest timestamp), ISO timestamps with T and Z or
 * +HH:MM; refuses NUL bytes, impossible dates and numbers out of range,
 * each with "NAME:LINE: what". */
int pf_jobs_parse_trace(pf_jobs *out, const char *name, const char *data, size_t len,
                        double step_ms, int max_seq_len, char *err, size_t errlen);

/* Read a whole file (or pipe) into *data (malloc'd, caller frees), *len
 * bytes. PF_OK, or PF_ERR_IO / PF_ERR_NOMEM with "PATH: why" in err. */
int pf_jobs_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);

void pf_jobs_free(pf_jobs *jobs);

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

/* NULL-terminated name tables indexed by the enums: the one spelling of
 * every name, for command-line choices, reports and the dashboard alike
 * (pf_event_names, for the event kinds, is below them). */
extern const char *const pf_sim_mode_names[];
extern const char *const pf_victim_names[];
extern const char *const pf_preempt_names[];
extern const char *const pf_engine_names[];

const char *pf_sim_mode_name(pf_sim_mode m);
const char *pf_victim_name(pf_victim_policy p);   /* "faulting", "newest", "fewest-generated", "most-frames", "lowest-priority" */
const char *pf_preempt_name(pf_preempt_mode m);   /* "recompute", "swap" */
const char *pf_engine_name(pf_engine e);          /* "deterministic", "threaded" */

typedef struct {
    pf_config cfg;            /* block size, max_seq_len, pool blocks      */
    pf_sim_mode mode;
    pf_engine engine;
    double watermark;         /* 0..1 fraction of the pool kept free at admission */
    int workers;              /* concurrent sequence slots (1..4096)       */
    pf_victim_policy policy;
    pf_preempt_mode preempt;
    int swap_host_blocks;     /* capacity of the host swap pool (frames)   */
    double swap_cost_per_page;/* steps per swapped page (out or in)        */
    double recompute_cost;    /* steps per recomputed token (prefill rate) */
    int tick_us;              /* threaded engine: wall time per step       */
    int pingpong_window;      /* K: preempted again within K steps of readmission */
    uint64_t seed;
    /* added after the first contract: */
    int stall_limit;          /* a faulting sequence stalls up to this many
                                 steps in a row before a victim is preempted
                                 (0 = preempt at once, as vLLM does)        */
    double naive_throughput;  /* baseline for throughput_vs_naive when the
                                 caller already has it (tokens/step); 0 =
                                 pf_sim_run/start compute it with a naive
                                 deterministic run of the same jobs        */
} pf_sim_params;

void pf_sim_params_default(pf_sim_params *p);

/* ---- statistics ---------------------------------------------------------- */

typedef struct {
    int64_t step;             /* virtual step                              */
    int waiting, running, decoding, stalled, swapped_out;
    int64_t admitted, finished;
    int64_t preemptions, recomputed_tokens, swapped_pages, pingpongs;
    int64_t tokens_generated; /* useful output tokens                      */
    int64_t tokens_computed;  /* generated + recomputed                    */
    double decoding_mean;     /* mean decoding sequences per step          */
    double stalled_mean;
    double wait_mean, wait_p50, wait_p99; /* admission wait, steps        */
    double kv_usage;          /* used frames / pool, now, 0..1             */
    double kv_usage_mean;     /* mean over steps                           */
    double throughput;        /* tokens generated per step                 */
    double throughput_vs_naive; /* throughput / naive throughput, same jobs (0 if unknown) */
    double goodput;           /* tokens_generated / tokens_computed        */
    int pool_used, pool_free, pool_peak;
    int done;                 /* every job finished                        */
    /* added after the first contract: */
    int running_peak;         /* most sequences admitted at once           */
    int64_t seq_steps;        /* sum over steps of admitted sequences (the
                                 work the engine simulated)                */
    double waiting_mean;      /* mean waiting requests per step            */
    double running_mean;      /* mean admitted sequences per step          */
    /* added by the correctness pass (issue 8): */
    int64_t aborted;          /* requests dropped because they can never be
                                 admitted under the parameters (a prompt
                                 larger than pool - watermark reserve, or a
                                 request larger than the pool), as vLLM
                                 ignores a prompt its block manager can never
                                 hold                                      */
    int livelock;             /* 1 when the run stopped because nothing
                                 could move (pf_sim_run's PF_ERR_RANGE)    */
    /* added for the dashboard (issue 8, point 16): */
    int64_t tokens_held;      /* tokens the frames in the pool hold now    */
    double kv_util;           /* tokens_held / (pool_used x block_size):
                                 how full the held frames are, 0..1; naive's
                                 reserved-but-empty frames count as held    */
    int njobs;                /* jobs in the run (a viewer sees the end come) */
} pf_sim_stats;

/* ---- the simulator ------------------------------------------------------- */

typedef struct pf_sim pf_sim;

/* Create a simulator over a copy of jobs. Returns NULL and writes a reason
 * into err on bad parameters or allocation failure. A job larger than the
 * pool is not an error here: the run aborts it (pf_sim_stats.aborted). */
pf_sim *pf_sim_create(const pf_sim_params *p, const pf_jobs *jobs, char *err, size_t errlen);
void pf_sim_destroy(pf_sim *sim); /* stops threads first if running */

/* Run to completion on the calling thread's engine choice and fill stats.
 * Deterministic engine: virtual time, no threads. Threaded engine: starts
 * the workers, waits for every job, stops them. Steps in which nothing can
 * happen (every sequence busy rebuilding or stalled, nothing admissible)
 * are skipped in one jump to the next step in which something can; the
 * figures are those of stepping through them. Returns PF_OK when every job
 * finished or was aborted; PF_ERR_RANGE when the run stopped in a livelock
 * (stats.livelock: sequences kept preempting one another and none produced
 * a token); other codes on error. */
int pf_sim_run(pf_sim *sim, pf_sim_stats *out);

/* Advance one step (or, as pf_sim_run does, a jump over steps in which
 * nothing can happen) on a simulator no engine is running. While the
 * background engine runs it is pf_sim_single_step. Returns 1 when all jobs
 * are done, 0 otherwise, <0 on error; PF_ERR_RANGE in a livelock (as
 * pf_sim_run). */
int pf_sim_step(pf_sim *sim);

/* Live mode: start the engine in the background (threaded: worker threads;
 * deterministic: one driver thread stepping at the tick pace). The run
 * loops forever: when every job is done it starts again on the same jobs
 * so a viewer always has something to show. */
int pf_sim_start(pf_sim *sim);
int pf_sim_stop(pf_sim *sim);

/* Consistency check for tests (added after the first contract): the pool
 * passes pf_pool_check, every frame a sequence lists is owned by it in the
 * pool, and the pool's used count equals the frames the sequences hold (so
 * after a finished run: none). PF_OK or PF_ERR_ARG. Exact when no step is
 * in progress (stopped, or not started); while the threaded engine runs a
 * worker may hold a frame it has not recorded yet. */
int pf_sim_check(pf_sim *sim);

/* ---- control (live) ------------------------------------------------------ *
 * Each returns PF_OK or PF_ERR_ARG for a bad value. set_workers also brings
 * the vs-naive baseline up to date for the new count (a private naive run
 * of a few milliseconds, on the caller's thread, outside the lock). */
int pf_sim_set_watermark(pf_sim *sim, double watermark);
int pf_sim_set_workers(pf_sim *sim, int workers);
int pf_sim_set_policy(pf_sim *sim, pf_victim_policy policy);
int pf_sim_set_preempt(pf_sim *sim, pf_preempt_mode mode);
int pf_sim_set_mode(pf_sim *sim, pf_sim_mode mode); /* implies reset */
int pf_sim_set_paused(pf_sim *sim, int paused); /* live mode; pf_sim_run ignores it */
int pf_sim_single_step(pf_sim *sim);               /* while paused: one step */
int pf_sim_set_tick_us(pf_sim *sim, int tick_us);  /* speed */
int pf_sim_reset(pf_sim *sim);                      /* same jobs from step 0 */
/* The parameters as set: workers is the count last set, which a running
 * engine applies at its next step boundary (snapshots say the same). */
void pf_sim_get_params(pf_sim *sim, pf_sim_params *out);
void pf_sim_get_stats(pf_sim *sim, pf_sim_stats *out);

/* ---- snapshots (live) ---------------------------------------------------- */

typedef enum {
    PF_FRAME_FREE = 0,
    PF_FRAME_USED,     /* holds tokens                                    */
    PF_FRAME_RESERVED, /* naive: reserved by a sequence, no token yet     */
    PF_FRAME_SHARED,   /* refcount > 1                                    */
    PF_FRAME_SWAPPED   /* being copied to/from host swap                  */
} pf_frame_state;

typedef struct {
    int32_t owner; /* sequence id, -1 when free */
    uint8_t state; /* pf_frame_state */
} pf_frame_view;

typedef enum {
    PF_SEQ_WAITING = 0,
    PF_SEQ_DECODING,
    PF_SEQ_STALLED,
    PF_SEQ_SWAPPED,
    PF_SEQ_RECOMPUTING,
    PF_SEQ_DONE
} pf_seq_state;

typedef struct {
    int32_t id;
    uint8_t state; /* pf_seq_state */
    int prompt, output, generated, frames, preemptions;
    /* added for the dashboard's inspector and age colouring (issue 12): */
    int64_t arrival;    /* step the job arrived                             */
    int64_t admit_step; /* step of its last admission, -1 if never admitted */
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
    PF_EV_ABORT, /* a request that can never be admitted was dropped */
    PF_EV_COUNT
} pf_event_kind;

extern const char *const pf_event_names[]; /* [PF_EV_COUNT + 1], NULL-terminated */
const char *pf_event_name(pf_event_kind k); /* "admit", "stall", ..., "?" if out of range */

typedef struct {
    int64_t step;
    uint8_t kind; /* pf_event_kind */
    int32_t seq;
    int32_t frames;
} pf_event;

#define PF_SIM_EVENTS 64   /* most recent events kept in a snapshot */
#define PF_SIM_HISTORY 256 /* per-step history kept for sparklines  */

typedef struct {
    pf_sim_params params;
    pf_sim_stats stats;
    int paused;
    int nframes;             /* = params.cfg.pool_blocks              */
    pf_frame_view *frames;   /* [nframes], owned by the snapshot      */
    int nseqs;               /* sequences in a worker slot (admitted:
                                decoding, stalled or rebuilding) and
                                those swapped out to the host; the
                                waiting queue is only counted
                                (stats.waiting)                      */
    pf_seq_view *seqs;       /* [nseqs], owned by the snapshot        */
    int nevents;             /* oldest first                          */
    pf_event events[PF_SIM_EVENTS];
    int nhistory;            /* oldest first                          */
    float hist_decoding[PF_SIM_HISTORY];
    float hist_stalled[PF_SIM_HISTORY];
    float hist_preempt[PF_SIM_HISTORY]; /* preemptions in that step   */
    float hist_usage[PF_SIM_HISTORY];   /* kv usage 0..1              */
    /* added after the first contract: */
    int frames_cap, seqs_cap; /* allocated lengths of frames / seqs   */
    int64_t hist_step0;       /* step number of the oldest history entry */
    /* added for the dashboard (issue 12): per frame, the index in seqs[] of
     * its owner and its logical block in the owner's page table (-1 when
     * free), so a viewer can colour by state and show a page table without
     * searching; both [nframes], owned, allocated lengths in frame_aux_cap */
    int32_t *frame_seq;
    int32_t *frame_block;
    int frame_aux_cap;
} pf_sim_snapshot;

/* Fill snap (allocating or growing its arrays as needed). The first call
 * takes a zeroed snapshot. */
int pf_sim_take_snapshot(pf_sim *sim, pf_sim_snapshot *snap);
void pf_sim_snapshot_free(pf_sim_snapshot *snap);

/* Block tables of the live sequences, for the GPU pass on the current
 * layout: fills lens[i] and tables[i*max_blocks ...] for up to cap
 * sequences; returns the count. */
int pf_sim_layout(pf_sim *sim, int cap, int max_blocks, int *lens, int *tables);

#endif
