/* sim/sim_internal.h - the simulator's state, shared by its own files only
 * (sim.c: scheduler step and control; snapshot.c: stats and views;
 * engine_thr.c: threads). Not for callers outside sim/.
 *
 * Locking. One mutex, mu, guards every field below except the pool (which
 * has its own lock) and the immutable job list. `locking` is 0 while the
 * deterministic engine runs on the caller's thread with nobody else
 * looking (pf_sim_run); then the LOCK/UNLOCK macros are no-ops and the
 * step costs no atomic operations. Whenever another thread may look (live
 * mode, the threaded engine), locking is 1. The scheduler step releases mu
 * only around frame allocations, so that worker threads really contend on
 * the pool's own lock, and re-checks its sequence afterwards (epoch).
 */
#ifndef PF_SIM_INTERNAL_H
#define PF_SIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/pool.h"
#include "sim/policy.h"
#include "sim/sim.h"

#define PF_SIM_MAX_WORKERS 4096

/* Internal sequence states (finer than pf_seq_state). */
typedef enum {
    SQ_PENDING = 0, /* not arrived yet                                 */
    SQ_QUEUED,      /* in the waiting queue                             */
    SQ_BOUND,       /* taken by a worker slot, waiting for admission    */
    SQ_DECODING,    /* admitted, decoded in its last step               */
    SQ_STALLED,     /* admitted, page fault, waiting for a frame        */
    SQ_RECOMPUTING, /* readmitted after recompute preemption, rebuilding */
    SQ_SWAPIN,      /* readmitted from host swap, pages copying in      */
    SQ_SWAPPED,     /* on the host, in the swapped queue                */
    SQ_DONE
} sq_state;

typedef struct {
    uint8_t st;         /* sq_state                                     */
    uint8_t recompute;  /* next admission rebuilds prompt + generated    */
    int slot;           /* worker slot, -1 if none                       */
    int generated;      /* output tokens generated (kept across preemption) */
    int nframes;        /* frames held in the pool                       */
    int *frames;        /* [max_frames] this sequence's frames, in order */
    int host_frames;    /* frames held in host swap                      */
    int preemptions;
    int busy;           /* steps left recomputing or swapping in         */
    int stalled;        /* consecutive steps stalled                     */
    int64_t admit_step; /* step of the last admission                    */
    int64_t admit_order;/* admission counter at the last admission       */
    uint32_t epoch;     /* bumped at every preemption                    */
} pf_seqrec;

/* Per-step counters filled by the slot actions, folded in at step end. */
typedef struct {
    int decoding, stalled, preempted, busy, admitted;
} pf_stepcount;

struct pf_sim {
    /* immutable after create */
    int njobs;
    pf_job *jobs;     /* sorted by arrival                               */
    int max_frames;   /* frames one sequence can ever hold               */
    int *frame_store; /* njobs * max_frames                             */
    pf_pool *pool;

    pthread_mutex_t mu;
    int locking;

    pf_sim_params p; /* live parameters                                  */
    pf_seqrec *seq;  /* [njobs]                                          */
    int *q;          /* waiting queue ring [njobs]                       */
    int qhead, qlen;
    int *sq;         /* swapped queue ring [njobs]                       */
    int sqhead, sqlen;
    int next_arrival;
    int slot_seq[PF_SIM_MAX_WORKERS];   /* sequence in each slot, -1 idle */
    uint8_t slot_retire[PF_SIM_MAX_WORKERS]; /* slot >= workers: drain   */
    int slot_hi;     /* slots [0, slot_hi) may be busy                   */
    int host_used;
    int *tmp;        /* [max_frames] allocation buffer (caller's thread) */
    pf_victim_cand *cand; /* [PF_SIM_MAX_WORKERS]                        */

    /* clock and totals */
    int64_t step;    /* steps completed                                  */
    int64_t admit_counter;
    int64_t admitted, finished, preemptions, recomputed, swapped_pages, pingpongs;
    int64_t tokens_gen;
    int64_t sum_decoding, sum_stalled, sum_used, sum_running, sum_waiting;
    int peak_used;
    int running_peak;
    int *waits;      /* first-admission waits, [njobs]                  */
    int nwaits;
    int waits_sorted_n; /* cache of the percentiles                     */
    double wait_p50, wait_p99;
    pf_stepcount cur;
    int last_waiting, last_running, last_decoding, last_stalled, last_swapped;
    int done;
    int stuck;       /* no sequence running and the queue head can never fit */
    double naive_tput; /* baseline for throughput_vs_naive, 0 unknown    */

    /* recent events and per-step history (rings) */
    pf_event ev[PF_SIM_EVENTS];
    int ev_head, ev_n;
    float h_dec[PF_SIM_HISTORY], h_stall[PF_SIM_HISTORY], h_pre[PF_SIM_HISTORY],
        h_use[PF_SIM_HISTORY];
    int h_head, h_n;

    /* live mode / threaded engine (engine_thr.c) */
    int running;     /* pf_sim_start'ed or pf_sim_run threaded           */
    int live;        /* loop forever (restart when done)                 */
    int paused;
    int single_req;  /* one step requested while paused                  */
    int reset_req;
    int quit;
    int workers_target;
    uint64_t gen;    /* step generation for worker threads               */
    int pending;     /* worker threads yet to finish this step           */
    int nthreads;    /* worker threads alive                             */
    pthread_cond_t go_cv, done_cv, ctl_cv;
    pthread_t driver;
    int driver_started;
    int driver_exited;
    pthread_t th[PF_SIM_MAX_WORKERS];
    uint8_t th_alive[PF_SIM_MAX_WORKERS];
    uint8_t th_exit[PF_SIM_MAX_WORKERS];
};

#define SIM_LOCK(s)                                                                                \
    do {                                                                                           \
        if ((s)->locking)                                                                          \
            pthread_mutex_lock(&(s)->mu);                                                          \
    } while (0)
#define SIM_UNLOCK(s)                                                                              \
    do {                                                                                           \
        if ((s)->locking)                                                                          \
            pthread_mutex_unlock(&(s)->mu);                                                        \
    } while (0)

/* sim.c: the step in three parts (all with mu held when locking). */
void pf_sim__begin_step(pf_sim *s);
void pf_sim__slot_step(pf_sim *s, int w, int *tmp);
void pf_sim__end_step(pf_sim *s);
void pf_sim__det_step(pf_sim *s); /* begin, every slot in rotating order, end */
void pf_sim__reset_locked(pf_sim *s);
void pf_sim__ensure_baseline(pf_sim *s); /* naive throughput for a paged run */
void pf_sim__apply_workers_locked(pf_sim *s, int workers);
void pf_sim__stats_locked(pf_sim *s, pf_sim_stats *o);

/* engine_thr.c */
int pf_sim__thr_start(pf_sim *s, int live);
int pf_sim__thr_wait_done(pf_sim *s);
int pf_sim__thr_stop(pf_sim *s);

#endif
