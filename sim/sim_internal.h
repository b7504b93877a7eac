/* sim/sim_internal.h - the simulator's state, shared by its own files only
 * (sim.c: scheduler step and control; snapshot.c: stats and views;
 * engine_thr.c: threads). Not for callers outside sim/.
 *
 * Locking. One mutex, mu, guards every field below except the pool (which
 * has its own lock) and the immutable job list, always, in both engines:
 * whoever runs a step (pf_sim_run's loop, pf_sim_step, the live drivers,
 * the worker threads) holds mu for it, so a viewer on another thread may
 * call any "live" function of sim/sim.h at any time. An uncontended lock
 * costs some tens of nanoseconds, once per step plus twice per frame
 * taken: nothing next to the step itself. A decoding slot releases mu only
 * around its frame allocation, so that worker threads really contend on the
 * pool's own lock, and re-checks its sequence afterwards (epoch).
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
    SQ_DECODING,    /* admitted, decoded in its last step               */
    SQ_STALLED,     /* admitted, page fault, waiting for a frame        */
    SQ_RECOMPUTING, /* readmitted after recompute preemption, rebuilding */
    SQ_SWAPIN,      /* readmitted from host swap, pages copying in      */
    SQ_SWAPPED,     /* on the host, in the swapped queue                */
    SQ_DONE,
    SQ_ABORTED      /* could never fit under the parameters: dropped    */
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
    int decoding, stalled, preempted, busy, admitted, first_admitted, aborted;
} pf_stepcount;

struct pf_sim {
    /* immutable after create */
    int njobs;
    pf_job *jobs;     /* sorted by arrival                               */
    int max_frames;   /* frames one sequence can ever hold               */
    int *frame_store; /* njobs * max_frames                             */
    pf_pool *pool;

    pthread_mutex_t mu;
    atomic_int callers; /* API calls waiting for mu (pf_sim__lock)       */

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
    int *tmp;        /* [max_frames] admission buffer (whoever steps)    */
    pf_victim_cand *cand; /* [PF_SIM_MAX_WORKERS]                        */

    /* clock and totals */
    int64_t step;    /* steps completed                                  */
    int64_t admit_counter;
    int64_t admitted, finished, aborted, preemptions, recomputed, swapped_pages, pingpongs;
    int64_t tokens_gen;
    int64_t sum_decoding, sum_stalled, sum_used, sum_running, sum_waiting;
    int running_peak;
    int *waits;      /* first-admission waits, [njobs]                  */
    int nwaits;
    int waits_sorted_n; /* cache of the percentiles                     */
    double wait_p50, wait_p99;
    pf_stepcount cur;
    int last_waiting, last_running, last_decoding, last_stalled, last_swapped;
    int done;        /* every job finished or aborted                   */
    int livelock;    /* the run stopped: nothing can move (see end_step) */
    int64_t idle_preempts; /* preemptions since a token, a finish, an
                              abort or a first admission              */
    /* the baseline for throughput_vs_naive by worker count (0: not
     * computed yet; -1: naive cannot run): the one in force is that of
     * workers_target, and a viewer toggling the count pays for each value
     * once */
    double naive_memo[PF_SIM_MAX_WORKERS + 1];

    /* recent events and per-step history (rings) */
    pf_event ev[PF_SIM_EVENTS];
    int ev_head, ev_n;
    float h_dec[PF_SIM_HISTORY], h_stall[PF_SIM_HISTORY], h_pre[PF_SIM_HISTORY],
        h_use[PF_SIM_HISTORY];
    int h_head, h_n;

    /* live mode / threaded engine (engine_thr.c) */
    int running;     /* an engine runs: pf_sim_start'ed, or in pf_sim_run */
    int live;        /* loop forever (restart when done); live runs show
                        every step, others skip quiet ones (skip_quiet) */
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

/* Take mu for an API call (every "live" function of sim.h). A mutex is not
 * fair: an engine that steps without sleeping (tick 0, or pf_sim_run)
 * would unlock and relock it at once and starve a viewer. The count lets
 * the engine hand the lock over between steps (pf_sim__let_callers_in).
 * The engine's own threads take mu directly. */
static inline void pf_sim__lock(pf_sim *s)
{
    atomic_fetch_add(&s->callers, 1);
    pthread_mutex_lock(&s->mu);
    atomic_fetch_sub(&s->callers, 1);
}

/* Under mu, at a step boundary: if API calls are waiting, release mu until
 * each of them has taken it; returns with mu held again. */
void pf_sim__let_callers_in(pf_sim *s);

/* sim.c: the step in three parts, all with mu held. */
void pf_sim__begin_step(pf_sim *s);
void pf_sim__slot_step(pf_sim *s, int w);
void pf_sim__end_step(pf_sim *s); /* admission (FCFS), statistics, livelock */
void pf_sim__det_step(pf_sim *s); /* begin, every slot in rotating order, end */
/* After a step in which nothing happened (every sequence busy or stalled,
 * nothing admitted): advance the clock in one jump to the step before the
 * next one in which something can happen, with the statistics those steps
 * would have added. Exact: the result is the same as stepping. Not used in
 * live mode, where a viewer watches every step. Under mu. */
void pf_sim__skip_quiet(pf_sim *s);
void pf_sim__reset_locked(pf_sim *s);
/* The naive baseline for throughput_vs_naive: computed (a private naive
 * run, milliseconds) when missing or when the worker count changed. Takes
 * mu itself; call without it. */
void pf_sim__refresh_baseline(pf_sim *s);
void pf_sim__apply_workers_locked(pf_sim *s, int workers);
void pf_sim__stats_locked(pf_sim *s, pf_sim_stats *o);

/* engine_thr.c */
int pf_sim__thr_start(pf_sim *s, int live);
int pf_sim__thr_wait_done(pf_sim *s);
int pf_sim__thr_stop(pf_sim *s);

#endif
