/* sim/sim_internal.h - the simulator's state, shared by its own files only:
 *   sim.c      create, destroy, one step (plan, land, commit) and its
 *              accounting, pf_sim_run, the naive baseline;
 *   control.c  the live setters and getters;
 *   snapshot.c statistics and views for viewers;
 *   live.c     the background driver thread of pf_sim_start.
 * Not for callers outside sim/.
 *
 * Locking. One mutex, mu, guards every field below but the immutable ones
 * (the requests as given, the cost model): whoever runs a step (pf_sim_run,
 * pf_sim_step, the live driver) holds mu for it, so a viewer on another
 * thread may call any "live" function of sim/sim.h at any time. Inside a
 * step, the crew's threads land their shards while the driver waits in
 * pf_crew_run: they touch only the scheduler's per-shard state and the
 * pool (sim/sched.h's land contract), never these fields.
 */
#ifndef PF_SIM_INTERNAL_H
#define PF_SIM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "sim/crew.h"
#include "sim/loadctl.h"
#include "sim/sched.h"
#include "sim/sim.h"

struct pf_sim {
    /* immutable after create */
    int njobs;
    pf_req *jobs;      /* the requests as created, sorted by arrival      */
    pf_sim_params p0;  /* the parameters as created (the cost model and
                          block size every run is timed with) */

    pthread_mutex_t mu;
    atomic_int callers; /* API calls waiting for mu (pf_sim__lock)        */
    /* The life of sc (and its pool): a snapshot reads the pool's atomic
     * reference counts after releasing mu, under a read lock of this; a
     * reset, which destroys the old scheduler, takes it for writing (while
     * holding mu: the order is always mu, then life). */
    pthread_rwlock_t life;

    pf_sim_params p;   /* live parameters                                 */
    pf_sched *sc;      /* the scheduler of the current run                */
    pf_crew *crew;     /* threaded engine: the landing threads, or NULL   */
    int nshards;       /* shards the scheduler lands in (crew size, or 1) */

    /* totals of the current run (the scheduler keeps the rest) */
    int64_t steps_seen;    /* pf_sched_steps at the last accounting       */
    int64_t admitted, finished, aborted, preemptions, swapped_pages, pingpongs;
    int64_t recomputed;
    int64_t sum_decoding, sum_stalled, sum_used, sum_running, sum_waiting;
    int running_peak;
    int swapped_out;
    pf_mem_split split;    /* Figure 2, summed over steps                 */
    int64_t idle_preempts; /* preemptions since a token, a finish, an
                              abort or a first admission                 */
    int livelock;
    int done;
    /* the step being accounted (filled by the event callback) */
    int cur_preempted, cur_first_admits;
    int cur_firsts;          /* requests whose first token came this step */
    double cur_ttft_sum;     /* ... and the sum of their TTFTs, seconds   */
    int last_decoding, last_stalled;

    /* the load controller (--watermark auto) */
    pf_loadctl lc;
    double lc_w0;      /* the watermark it starts every run from: the one
                          created with, or in force when auto was turned on */
    int64_t lc_raises, lc_lowers;

    /* every event, to a caller (pf_sim_on_event) */
    pf_sim_event_fn event_fn;
    void *event_ctx;

    /* a publisher of the block events (pf_sim_on_sched) */
    pf_sim_attach_fn attach_fn;
    pf_sim_step_fn step_fn;
    void *pub_ctx;

    pf_metrics *met;   /* scratch for the statistics (about 220 KB)       */

    /* naive baseline by sequence cap: output tokens/s, 0 not computed, -1
     * cannot run; [PF_SIM_MAX_SEQS + 1], allocated on first use */
    double *naive_memo;

    /* recent events and per-step history (rings) */
    pf_event ev[PF_SIM_EVENTS];
    int ev_head, ev_n;
    float h_dec[PF_SIM_HISTORY], h_stall[PF_SIM_HISTORY], h_pre[PF_SIM_HISTORY],
        h_use[PF_SIM_HISTORY], h_tok[PF_SIM_HISTORY], h_wait[PF_SIM_HISTORY],
        h_first[PF_SIM_HISTORY], h_ttft[PF_SIM_HISTORY];
    double h_time[PF_SIM_HISTORY];
    /* the run's first tokens, a ring: the (ft_total - 1)-th is the newest */
    pf_first_token ft[PF_SIM_FIRSTS];
    int64_t ft_total;
    int64_t h_step[PF_SIM_HISTORY];
    int h_head, h_n;

    /* live mode (live.c) */
    int running;      /* an engine runs (pf_sim_start'ed)                 */
    int paused;
    int single_req;   /* one step requested while paused                  */
    int hold_end;     /* pause at the run's end instead of starting again */
    int reset_req;
    int quit;
    int workers_target;
    int threads_target;
    pthread_cond_t ctl_cv;
    pthread_t driver;
    int driver_started;
};

/* A step lands in parallel only when it has enough requests to split:
 * landing one costs some 15 ns, waking the crew and waiting for its last
 * thread a few microseconds on an idle machine (tens when the cores are
 * shared), so below about a thousand running requests the driver lands
 * every shard itself, in the same order. The figures are the same either
 * way (sim/sched.h: results do not depend on who lands a shard). A
 * snapshot of that many running requests is copied on the crew too. */
#define PF_SIM_PARALLEL_MIN 1024

/* Take mu for an API call (every "live" function of sim.h). A mutex is not
 * fair: an engine that steps without sleeping would unlock and relock it at
 * once and starve a viewer. The count lets the engine hand the lock over
 * between steps (pf_sim__let_callers_in). */
static inline void pf_sim__lock(pf_sim *s)
{
    atomic_fetch_add(&s->callers, 1);
    pthread_mutex_lock(&s->mu);
    atomic_fetch_sub(&s->callers, 1);
}

/* Under mu, at a step boundary: if API calls are waiting, release mu until
 * each of them has taken it; returns with mu held again. */
void pf_sim__let_callers_in(pf_sim *s);

/* Frames held now (the pool's used frames less the prefix cache's idle
 * ones, which count as free, as vLLM's kv_cache_usage counts them). */
int pf_sim__frames_used(const pf_sched *sc);

/* The load controller (re)started at time t; under --watermark auto from
 * lc_w0 (a reset repeats the run), else from the watermark in force. */
void pf_sim__loadctl_start(pf_sim *s, double t);

/* sim.c, all under mu */
int pf_sim__step_locked(pf_sim *s);      /* 1 done, 0 more, <0 error      */
int pf_sim__reset_locked(pf_sim *s);     /* a new scheduler, totals zeroed */
int pf_sim__apply_threads_locked(pf_sim *s, int threads); /* crew and shards */
int pf_sim__threads_of(int threads); /* 0 -> the machine's cores */
void pf_sim__event(pf_sim *s, pf_event_kind k, int seq, int frames);
/* The naive baseline for the current cap: computed when missing (a private
 * naive run). Takes mu itself; call without it. */
void pf_sim__refresh_baseline(pf_sim *s);
double pf_sim__baseline_locked(const pf_sim *s);

/* snapshot.c */
void pf_sim__stats_locked(pf_sim *s, pf_sim_stats *o);

#endif
