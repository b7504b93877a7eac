/* sim/sim.c - the simulator's lifecycle and its step: the scheduler core
 * (sim/sched.h) driven step by step, its steps timed by the cost model
 * (sim/cost.h), its events and totals kept for viewers and reports.
 *
 * One step is the scheduler's plan, land and commit. The deterministic
 * engine lands the one shard on the calling thread; the threaded engine
 * lands one shard per crew thread at once (sim/crew.h), so the frames of a
 * big batch are taken and its tokens sampled in parallel, while every
 * decision stays in plan and commit, on one thread, in a fixed order: both
 * engines give the same figures.
 *
 * After the step, accounting: the scheduler's events (admissions,
 * preemptions, finishes...) arrived through a callback during plan and
 * commit and were counted and logged; now the per-step sums that the means
 * come from, the history ring viewers draw, the load controller's window,
 * and a livelock guard. The scheduler may have covered many steps in one
 * call (a jump to the next arrival when idle, or over identical stall
 * steps under the seed's rules): sums are weighted by the steps covered, so
 * the means are those of stepping one by one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "sim/policy.h"
#include "sim/sim_internal.h"

void pf_sim_params_default(pf_sim_params *p)
{
    memset(p, 0, sizeof *p);
    pf_config_default(&p->cfg);
    pf_sched_params sp;
    pf_sched_params_default(&sp);
    p->mode = PF_SIM_PAGED;
    p->engine = PF_ENGINE_DETERMINISTIC;
    p->scheduler = sp.rules;
    p->watermark = sp.watermark;
    p->workers = sp.max_num_seqs;
    p->max_num_batched_tokens = sp.max_num_batched_tokens;
    p->policy = sp.victim;
    p->preempt = sp.preempt;
    p->naive_reserve = PF_RESERVE_MAX;
    p->swap_host_blocks = sp.swap_host_blocks;
    p->stall_limit = sp.stall_limit;
    p->pingpong_window = sp.pingpong_window;
    /* Llama 3 8B on an H200: the model and card the anchors are measured on
     * (../shared/anchors.md); both are flags. */
    (void)pf_cost_init(&p->cost, pf_model_find("llama3-8b"), pf_gpu_find("h200"),
                       PF_COST_OVERHEAD_S);
    p->tick_us = 10000;
    p->seed = 42;
}

static int params_check(const pf_sim_params *p, char *err, size_t errlen)
{
    const pf_config *c = &p->cfg;
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return PF_ERR_ARG;                                                                         \
    } while (0)
    if (c->block_size < 1 || c->block_size > 65536)
        BAD("block size must be in [1, 65536], got %d", c->block_size);
    if (c->max_seq_len < 2 || c->max_seq_len > (1 << 24))
        BAD("max sequence length must be in [2, 16777216], got %d", c->max_seq_len);
    if (c->pool_blocks < 1 || c->pool_blocks > (1 << 22))
        BAD("pool blocks must be in [1, 4194304], got %d", c->pool_blocks);
    if ((unsigned)p->mode > PF_SIM_PAGED)
        BAD("unknown mode %d", (int)p->mode);
    if ((unsigned)p->engine > PF_ENGINE_THREADED)
        BAD("unknown engine %d", (int)p->engine);
    if ((unsigned)p->scheduler >= PF_SCHED_COUNT)
        BAD("unknown scheduler %d", (int)p->scheduler);
    if ((unsigned)p->naive_reserve > PF_RESERVE_ORACLE)
        BAD("unknown naive reservation %d", (int)p->naive_reserve);
    if (!(p->watermark >= 0.0 && p->watermark <= 1.0))
        BAD("watermark must be in [0, 1], got %g", p->watermark);
    if (p->workers < 1 || p->workers > PF_SIM_MAX_SEQS)
        BAD("max-num-seqs must be in [1, %d], got %d", PF_SIM_MAX_SEQS, p->workers);
    if (p->max_num_batched_tokens < 1)
        BAD("max-num-batched-tokens must be >= 1, got %d", p->max_num_batched_tokens);
    if ((unsigned)p->policy >= PF_VICTIM_COUNT)
        BAD("unknown victim policy %d", (int)p->policy);
    if ((unsigned)p->preempt >= PF_PREEMPT_COUNT)
        BAD("unknown preemption mode %d", (int)p->preempt);
    if (p->swap_host_blocks < 0)
        BAD("swap host blocks must be >= 0, got %d", p->swap_host_blocks);
    if (p->threads < 0 || p->threads > PF_CREW_MAX)
        BAD("threads must be in [0, %d], got %d", PF_CREW_MAX, p->threads);
    if (p->tick_us < 0 || p->tick_us > 10000000)
        BAD("tick must be in [0, 10000000] us, got %d", p->tick_us);
    if (p->pingpong_window < 0)
        BAD("ping-pong window must be >= 0, got %d", p->pingpong_window);
    if (p->stall_limit < 0 || p->stall_limit > PF_SCHED_STALL_LIMIT_MAX)
        BAD("stall limit must be in [0, %d], got %d", PF_SCHED_STALL_LIMIT_MAX, p->stall_limit);
    if (!(p->slo_ttft_s >= 0.0) || !(p->slo_tpot_s >= 0.0) || isinf(p->slo_ttft_s) ||
        isinf(p->slo_tpot_s))
        BAD("SLO targets must be finite and >= 0 seconds");
    if (!(p->naive_throughput >= 0.0) || isinf(p->naive_throughput))
        BAD("naive throughput must be finite and >= 0, got %g", p->naive_throughput);
    if (p->cost.model.num_layers < 1 || !(p->cost.mem_bps > 0.0) || !(p->cost.flops > 0.0))
        BAD("the cost model is not set up (pf_cost_init)");
#undef BAD
    return PF_OK;
}

/* The scheduler's parameters from ours. */
static void sched_params(const pf_sim_params *p, pf_sched_params *sp)
{
    pf_sched_params_default(sp);
    sp->rules = p->scheduler;
    sp->paged = p->mode == PF_SIM_PAGED;
    sp->reserve = p->naive_reserve;
    sp->block_size = p->cfg.block_size;
    sp->max_seq_len = p->cfg.max_seq_len;
    sp->max_num_seqs = p->workers;
    sp->max_num_batched_tokens = p->max_num_batched_tokens;
    sp->watermark = p->watermark;
    sp->victim = p->policy;
    sp->preempt = p->preempt;
    sp->swap_host_blocks = p->swap_host_blocks;
    sp->stall_limit = p->stall_limit;
    sp->pingpong_window = p->pingpong_window;
    sp->slo_ttft_s = p->slo_ttft_s;
    sp->slo_tpot_s = p->slo_tpot_s;
    sp->prefix_caching = p->prefix_caching;
    sp->token_seed = p->seed;
}

/* A step's seconds: the roofline of its forward pass, plus the swap
 * traffic over the host link (swap-out and swap-in of whole frames). ctx is
 * a pf_sim_params (its cost model and block size). */
static double step_cost(void *ctx, const pf_sched_batch *b)
{
    const pf_sim_params *p = ctx;
    double t = pf_cost_step_s(&p->cost, &b->work);
    int64_t frames = b->swap_out_frames + b->swap_in_frames;
    if (frames > 0)
        t += pf_cost_swap_s(&p->cost, frames * (int64_t)p->cfg.block_size);
    return t;
}

/* ---- events -------------------------------------------------------------------- */

void pf_sim__event(pf_sim *s, pf_event_kind k, int seq, int frames)
{
    int i = (s->ev_head + s->ev_n) % PF_SIM_EVENTS;
    if (s->ev_n == PF_SIM_EVENTS)
        s->ev_head = (s->ev_head + 1) % PF_SIM_EVENTS;
    else
        s->ev_n++;
    s->ev[i] = (pf_event){s->sc ? pf_sched_steps(s->sc) : 0, (uint8_t)k, seq, frames,
                          s->sc ? pf_sched_now(s->sc) : 0.0};
    if (s->event_fn)
        s->event_fn(s->event_ctx, &s->ev[i]);
}

/* The scheduler's events, on the stepping thread, under mu. */
static void on_sched_event(void *ctx, pf_sched_ev ev, int req, int a)
{
    pf_sim *s = ctx;
    switch (ev) {
    case PF_SCHED_EV_ADMIT:
        s->admitted++;
        if (pf_sched_req(s->sc, req)->preemptions == 0)
            s->cur_first_admits++;
        pf_sim__event(s, PF_EV_ADMIT, req, a);
        break;
    case PF_SCHED_EV_PREEMPT:
        s->preemptions++;
        s->cur_preempted++;
        pf_sim__event(s, PF_EV_PREEMPT, req, a);
        break;
    case PF_SCHED_EV_SWAP_OUT:
        s->preemptions++;
        s->cur_preempted++;
        s->swapped_pages += a;
        s->swapped_out++;
        pf_sim__event(s, PF_EV_SWAP_OUT, req, a);
        break;
    case PF_SCHED_EV_SWAP_IN:
        s->admitted++;
        s->swapped_pages += a;
        s->swapped_out--;
        pf_sim__event(s, PF_EV_SWAP_IN, req, a);
        break;
    case PF_SCHED_EV_STALL:
        pf_sim__event(s, PF_EV_STALL, req, a);
        break;
    case PF_SCHED_EV_FIRST_TOKEN: {
        const pf_req *q = pf_sched_req(s->sc, req);
        s->cur_firsts++;
        s->cur_ttft_sum += q->t_first_token - q->arrival;
        s->ft[s->ft_total % PF_SIM_FIRSTS] =
            (pf_first_token){q->t_first_token, (float)(q->t_first_token - q->arrival)};
        s->ft_total++;
        break;
    }
    case PF_SCHED_EV_FINISH:
        s->finished++;
        s->idle_preempts = 0;
        pf_sim__event(s, PF_EV_FINISH, req, a);
        break;
    case PF_SCHED_EV_ABORT:
        s->aborted++;
        s->idle_preempts = 0;
        pf_sim__event(s, PF_EV_ABORT, req, a);
        break;
    case PF_SCHED_EV_PINGPONG:
        s->pingpongs++;
        pf_sim__event(s, PF_EV_PINGPONG, req, a);
        break;
    default:
        break;
    }
}

/* ---- create / reset / destroy ------------------------------------------------------- */

/* Run totals back to zero (the scheduler is made anew by the caller). */
static void zero_totals(pf_sim *s)
{
    s->steps_seen = 0;
    s->admitted = s->finished = s->aborted = s->preemptions = s->swapped_pages = 0;
    s->pingpongs = s->recomputed = 0;
    s->sum_decoding = s->sum_stalled = s->sum_used = s->sum_running = s->sum_waiting = 0;
    s->running_peak = s->swapped_out = 0;
    memset(&s->split, 0, sizeof s->split);
    s->idle_preempts = 0;
    s->livelock = s->done = 0;
    s->cur_preempted = s->cur_first_admits = 0;
    s->cur_firsts = 0;
    s->cur_ttft_sum = 0.0;
    s->last_decoding = s->last_stalled = 0;
    s->lc_raises = s->lc_lowers = 0;
    s->h_head = s->h_n = 0;
    s->ft_total = 0;
}

/* A new scheduler over the same requests. On failure the old run stays,
 * and err (when given) says why: a parameter only the scheduler checks, or
 * memory. */
static int reset_err(pf_sim *s, char *err, size_t errlen)
{
    pf_sched_params sp;
    sched_params(&s->p, &sp);
    char buf[160];
    if (!err || errlen == 0) {
        err = buf;
        errlen = sizeof buf;
    }
    pf_sched *sc = pf_sched_create(&sp, s->jobs, s->njobs, s->p.cfg.pool_blocks, step_cost,
                                   &s->p0, err, errlen);
    if (!sc)
        return strstr(err, "out of memory") ? PF_ERR_NOMEM : PF_ERR_ARG;
    if (pf_sched_set_shards(sc, s->nshards) != PF_OK) {
        pf_sched_destroy(sc);
        /* the caller's err says why (pf_sim_create hands it back as is) */
        snprintf(err, errlen, "out of memory");
        return PF_ERR_NOMEM;
    }
    pthread_rwlock_wrlock(&s->life);
    pf_sched_destroy(s->sc);
    s->sc = sc;
    pthread_rwlock_unlock(&s->life);
    pf_sched_on_event(sc, on_sched_event, s);
    if (s->attach_fn)
        s->attach_fn(s->pub_ctx, sc);
    zero_totals(s);
    pf_sim__loadctl_start(s, 0.0);
    return PF_OK;
}

int pf_sim__reset_locked(pf_sim *s)
{
    return reset_err(s, NULL, 0);
}

/* qsort is not stable, and libcs break ties differently: the same jobs must
 * give the same run anywhere, so requests arriving together keep the
 * caller's order, the index breaking the tie. */
typedef struct {
    double arrival;
    int index;
} arrival_ix;

static int by_arrival(const void *a, const void *b)
{
    const arrival_ix *x = a, *y = b;
    if (x->arrival != y->arrival)
        return x->arrival < y->arrival ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Reorder jobs[0..n) by arrival, stably. PF_ERR_NOMEM leaves them as they were. */
static int sort_by_arrival(pf_req *jobs, int n)
{
    arrival_ix *ix = malloc((size_t)n * sizeof *ix);
    pf_req *tmp = malloc((size_t)n * sizeof *tmp);
    int rc = PF_ERR_NOMEM;
    if (!ix || !tmp)
        goto out;
    for (int i = 0; i < n; i++)
        ix[i] = (arrival_ix){jobs[i].arrival, i};
    qsort(ix, (size_t)n, sizeof *ix, by_arrival);
    for (int i = 0; i < n; i++)
        tmp[i] = jobs[ix[i].index];
    memcpy(jobs, tmp, (size_t)n * sizeof *jobs);
    rc = PF_OK;
out:
    free(tmp);
    free(ix);
    return rc;
}

/* Every job fits: a prompt and an output of at least one token within
 * max-len, a finite arrival >= 0, and a fork after the job it forks. */
static int jobs_check(const pf_sim_params *p, const pf_jobs *jobs, char *err, size_t errlen)
{
    for (int i = 0; i < jobs->njobs; i++) {
        const pf_job *j = &jobs->jobs[i];
        if (j->prompt < 1 || j->output < 1 || (int64_t)j->prompt + j->output > p->cfg.max_seq_len ||
            !(j->arrival >= 0.0) || isinf(j->arrival) || j->fork_of < 0 || j->fork_of > i) {
            snprintf(err, errlen,
                     "job %d: prompt %d and output %d must be >= 1 and fit max-len %d, arriving "
                     "at a finite time >= 0",
                     i, j->prompt, j->output, p->cfg.max_seq_len);
            return PF_ERR_ARG;
        }
    }
    return PF_OK;
}

/* The run's lock, its lifetime lock and its control condition, whose
 * waits (the tick's) are on the monotonic clock: a wall-clock change must
 * not stall or hurry a live run. */
static void sim_sync_init(pf_sim *s)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_rwlock_init(&s->life, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->ctl_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* The caller's jobs as the run's requests (q: jobs->njobs of them). */
static void jobs_copy(pf_req *q, const pf_jobs *jobs)
{
    for (int i = 0; i < jobs->njobs; i++, q++) {
        const pf_job *j = &jobs->jobs[i];
        q->arrival = j->arrival;
        q->prompt = j->prompt;
        q->output = j->output;
        q->priority = j->priority;
        q->group = j->shared > 0 ? j->group : -1;
        q->shared_tokens = j->shared > 0 ? j->shared : 0;
        q->fork_of = j->fork_of;
        q->sample = j->sample;
    }
}

/* Jobs from a trace or the generator are sorted already; a caller's may
 * not be. A fork must stay behind its parent: sort only when needed, and
 * refuse forks then (their indices would move). PF_OK, PF_ERR_ARG (err
 * says why) or PF_ERR_NOMEM. */
static int jobs_order(pf_req *q, int n, char *err, size_t errlen)
{
    int sorted = 1;
    for (int i = 1; i < n; i++)
        sorted &= q[i].arrival >= q[i - 1].arrival;
    if (sorted)
        return PF_OK;
    for (int i = 0; i < n; i++)
        if (q[i].fork_of) {
            snprintf(err, errlen, "forked jobs (--n) must be given sorted by arrival");
            return PF_ERR_ARG;
        }
    return sort_by_arrival(q, n);
}

pf_sim *pf_sim_create(const pf_sim_params *p, const pf_jobs *jobs, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!p || !jobs || jobs->njobs < 1 || !jobs->jobs) {
        snprintf(err, errlen, "no jobs");
        return NULL;
    }
    if (params_check(p, err, errlen) != PF_OK || jobs_check(p, jobs, err, errlen) != PF_OK)
        return NULL;
    pf_sim *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->p = *p;
    s->p0 = *p;
    s->lc_w0 = p->watermark;
    s->njobs = jobs->njobs;
    s->nshards = 1;
    s->workers_target = p->workers;
    s->threads_target = pf_sim__threads_of(p->threads);
    sim_sync_init(s);
    s->jobs = calloc((size_t)s->njobs, sizeof *s->jobs);
    s->met = malloc(sizeof *s->met);
    if (!s->jobs || !s->met)
        goto oom;
    jobs_copy(s->jobs, jobs);
    const int rc = jobs_order(s->jobs, s->njobs, err, errlen);
    if (rc == PF_ERR_ARG) {
        pf_sim_destroy(s);
        return NULL; /* err says why */
    }
    if (rc != PF_OK)
        goto oom;
    if (p->engine == PF_ENGINE_THREADED && pf_sim__apply_threads_locked(s, p->threads) != PF_OK)
        goto oom;
    if (reset_err(s, err, errlen) != PF_OK) {
        pf_sim_destroy(s);
        return NULL; /* err says why */
    }
    return s;
oom:
    pf_sim_destroy(s);
    snprintf(err, errlen, "out of memory");
    return NULL;
}

void pf_sim_destroy(pf_sim *sim)
{
    if (!sim)
        return;
    (void)pf_sim_stop(sim);
    pf_sched_destroy(sim->sc);
    pf_crew_destroy(sim->crew);
    free(sim->jobs);
    free(sim->naive_memo);
    free(sim->met);
    pthread_mutex_destroy(&sim->mu);
    pthread_rwlock_destroy(&sim->life);
    pthread_cond_destroy(&sim->ctl_cv);
    free(sim);
}

/* The crew for `threads` (0 = the machine's cores), and as many landing
 * shards. One thread means no crew: land on the caller. */
int pf_sim__threads_of(int threads)
{
    if (threads > 0)
        return threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* a file read: not per step */
    return n < 1 ? 1 : n > PF_CREW_MAX ? PF_CREW_MAX : (int)n;
}

/* The crew at n threads (none for 1). On failure it is at its old size
 * or, when even that could not be restarted, at 1 (pf_crew_resize). */
static int crew_to(pf_sim *s, int n)
{
    if (n <= 1) {
        pf_crew_destroy(s->crew);
        s->crew = NULL;
        return PF_OK;
    }
    if (!s->crew) {
        s->crew = pf_crew_create(n);
        return s->crew ? PF_OK : PF_ERR_NOMEM;
    }
    return pf_crew_resize(s->crew, n);
}

/* The crew, s->nshards and the scheduler's shards change together: a step
 * lands shards 0 .. crew size - 1 (or 0 .. s->nshards - 1 serially) of the
 * scheduler's plan, so the three must always agree, or a shard's tokens
 * are never landed (fewer threads than shards) or a thread lands a shard
 * the scheduler does not have (more). The step that can fail first: the
 * scheduler's new shards are allocated before any thread is started, and
 * a crew that fails to grow or shrink takes the scheduler's shards to the
 * size it is left at (shrinking them frees, it cannot fail). */
int pf_sim__apply_threads_locked(pf_sim *s, int threads)
{
    const int n = pf_sim__threads_of(threads);
    if (s->sc && n > s->nshards) {
        const int rc = pf_sched_set_shards(s->sc, n);
        if (rc != PF_OK)
            return rc; /* nothing changed */
    }
    const int rc = crew_to(s, n);
    s->nshards = s->crew ? pf_crew_size(s->crew) : 1; /* n, or where the failure left it */
    if (s->sc)
        (void)pf_sched_set_shards(s->sc, s->nshards); /* no larger than it is: cannot fail */
    return rc;
}

void pf_sim_on_sched(pf_sim *sim, pf_sim_attach_fn attach, pf_sim_step_fn step_end, void *ctx)
{
    if (!sim)
        return;
    pf_sim__lock(sim);
    if (!attach && sim->attach_fn)
        pf_sched_on_block(sim->sc, NULL, NULL); /* the publisher's callback goes */
    sim->attach_fn = attach;
    sim->step_fn = attach ? step_end : NULL;
    sim->pub_ctx = ctx;
    if (attach)
        attach(ctx, sim->sc);
    pthread_mutex_unlock(&sim->mu);
}

void pf_sim_on_event(pf_sim *sim, pf_sim_event_fn fn, void *ctx)
{
    if (!sim)
        return;
    pf_sim__lock(sim);
    sim->event_fn = fn;
    sim->event_ctx = ctx;
    pthread_mutex_unlock(&sim->mu);
}

/* ---- one step ---------------------------------------------------------------------- */


static void land_shard(void *ctx, int shard, int nshards)
{
    (void)nshards;
    pf_sched_land(ctx, shard);
}

int pf_sim__frames_used(const pf_sched *sc)
{
    pf_prefix_stats ps;
    pf_sched_prefix_stats(sc, &ps);
    return pf_pool_used_count(pf_sched_pool((pf_sched *)sc)) - ps.evictable;
}

void pf_sim__loadctl_start(pf_sim *s, double t)
{
    if (s->p.watermark_auto)
        s->p.watermark = s->lc_w0; /* not where the last run left it */
    pf_loadctl_params lp;
    pf_loadctl_params_default(&lp);
    (void)pf_loadctl_init(&s->lc, &lp, s->p.watermark, t);
    if (s->p.watermark_auto) {
        s->p.watermark = s->lc.w; /* clamped into the controller's bounds */
        (void)pf_sched_set_watermark(s->sc, s->lc.w);
    }
}

/* The step's entry in the charts' ring (PF_SIM_HISTORY steps, the oldest
 * overwritten). */
static void account_history(pf_sim *s, int64_t step, int64_t tokens, int decoding, int stalled,
                            int used, int waiting)
{
    int i = (s->h_head + s->h_n) % PF_SIM_HISTORY;
    if (s->h_n == PF_SIM_HISTORY)
        s->h_head = (s->h_head + 1) % PF_SIM_HISTORY;
    else
        s->h_n++;
    s->h_dec[i] = (float)decoding;
    s->h_stall[i] = (float)stalled;
    s->h_pre[i] = (float)s->cur_preempted;
    s->h_use[i] = (float)used / (float)s->p.cfg.pool_blocks;
    s->h_wait[i] = (float)waiting;
    s->h_time[i] = pf_sched_now(s->sc);
    s->h_step[i] = step;
    s->h_tok[i] = (float)tokens;
    s->h_first[i] = (float)s->cur_firsts;
    s->h_ttft[i] = (float)s->cur_ttft_sum;
}

/* The load controller's step: a watermark it moves goes to the scheduler
 * and the event log (the recompute waste and the new watermark, in
 * thousandths). */
static void account_load(pf_sim *s, int64_t tokens, int64_t recomputed, int waiting)
{
    pf_loadctl_action a = pf_loadctl_step(&s->lc, pf_sched_now(s->sc), tokens, recomputed, waiting);
    if (a == PF_LOADCTL_HOLD)
        return;
    (void)pf_sched_set_watermark(s->sc, s->lc.w);
    s->p.watermark = s->lc.w;
    if (a == PF_LOADCTL_RAISE)
        s->lc_raises++;
    else
        s->lc_lowers++;
    pf_sim__event(s, PF_EV_WATERMARK, (int)lround(s->lc.last_waste * 1000.0),
                  (int)lround(s->lc.w * 1000.0));
}

/* The step's sums, history entry, load control and livelock guard. */
static void account(pf_sim *s, int64_t tokens)
{
    pf_sched *sc = s->sc;
    const pf_sched_batch *b = pf_sched_last_batch(sc);
    int64_t steps = pf_sched_steps(sc);
    int64_t k = steps - s->steps_seen; /* steps this call covered (>= 1) */
    s->steps_seen = steps;
    if (k < 1)
        k = 1;
    int running = pf_sched_running(sc), waiting = pf_sched_waiting(sc);
    int stalled = pf_sched_stalled(sc);
    int decoding = (int)b->work.decode_tokens;
    int used = pf_sim__frames_used(sc);
    s->sum_decoding += decoding; /* the covered steps but the last decoded nothing */
    s->sum_stalled += (int64_t)stalled * k;
    s->sum_used += (int64_t)used * k;
    s->sum_running += (int64_t)running * k;
    s->sum_waiting += (int64_t)waiting * k;
    if (running > s->running_peak)
        s->running_peak = running;
    s->recomputed += b->recompute_tokens;
    s->last_decoding = decoding;
    s->last_stalled = stalled;

    pf_mem_split one;
    memset(&one, 0, sizeof one);
    pf_sched_kv_split(sc, &one.token_tokens, &one.reserved_tokens, &one.internal_tokens);
    one.token_tokens *= k;
    one.reserved_tokens *= k;
    one.internal_tokens *= k;
    pf_mem_split_accumulate(&s->split, &one);

    account_history(s, steps - 1, tokens, decoding, stalled, used, waiting);

    /* livelock: preemptions keep coming and nothing moves forward (the
     * seed's faulting victim can make two sequences evict each other for
     * ever; vLLM's newest victim cannot: the oldest always runs) */
    if (tokens > 0 || s->cur_first_admits > 0)
        s->idle_preempts = 0;
    s->idle_preempts += s->cur_preempted;
    if (pf_policy_livelocked(s->idle_preempts, running + waiting))
        s->livelock = 1;

    if (s->p.watermark_auto)
        account_load(s, tokens, b->recompute_tokens, waiting);
    s->cur_preempted = s->cur_first_admits = 0;
    s->cur_firsts = 0;
    s->cur_ttft_sum = 0.0;
    if (s->step_fn)
        s->step_fn(s->pub_ctx, pf_sched_now(sc));
}

int pf_sim__step_locked(pf_sim *s)
{
    if (s->done)
        return 1;
    if (s->livelock)
        return PF_ERR_RANGE;
    int64_t tokens0 = pf_sched_tokens(s->sc);
    int rc = pf_sched_plan(s->sc);
    if (rc < 0)
        return rc;
    if (rc == 1) {
        s->done = 1;
        return 1;
    }
    if (s->crew && pf_sched_running(s->sc) >= PF_SIM_PARALLEL_MIN)
        pf_crew_run(s->crew, land_shard, s->sc);
    else
        for (int k = 0; k < s->nshards; k++)
            pf_sched_land(s->sc, k);
    rc = pf_sched_commit(s->sc);
    /* commit ends the step even when a landing failed (the step count and
     * the clock move on, what landed stays landed; the request that could
     * not take its frames lands next step), so the step is accounted before
     * its error is returned: else it has no history entry and no step_end,
     * and the next step's sums stand for both */
    account(s, pf_sched_tokens(s->sc) - tokens0);
    if (rc < 0)
        return rc;
    if (rc == 1)
        s->done = 1;
    if (s->livelock)
        return PF_ERR_RANGE;
    return s->done;
}

void pf_sim__let_callers_in(pf_sim *s)
{
    while (atomic_load(&s->callers) > 0) {
        pthread_mutex_unlock(&s->mu);
        sched_yield();
        pthread_mutex_lock(&s->mu);
    }
}

int pf_sim_step(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int rc = sim->running ? PF_ERR_ARG : pf_sim__step_locked(sim);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

/* ---- the naive baseline ------------------------------------------------------------- */

/* Output tokens per second of a naive deterministic run of the same jobs
 * under the same rules and cap; -1 when it cannot run. */
static double naive_throughput_of(const pf_sim *s, const pf_sim_params *p)
{
    pf_sched_params sp;
    sched_params(p, &sp);
    sp.paged = 0;
    sp.prefix_caching = 0;
    char err[160];
    pf_sched *sc = pf_sched_create(&sp, s->jobs, s->njobs, p->cfg.pool_blocks, step_cost,
                                   (void *)&s->p0, err, sizeof err);
    if (!sc)
        return -1.0;
    int rc = pf_sched_run(sc);
    double t = pf_sched_now(sc);
    double tokens = (double)pf_sched_tokens(sc);
    pf_sched_destroy(sc);
    return rc == PF_OK && t > 0.0 ? tokens / t : -1.0;
}

double pf_sim__baseline_locked(const pf_sim *s)
{
    if (s->p.naive_throughput > 0.0)
        return s->p.naive_throughput;
    if (!s->naive_memo)
        return 0.0;
    double v = s->naive_memo[s->p.workers];
    return v > 0.0 ? v : 0.0;
}

void pf_sim__refresh_baseline(pf_sim *s)
{
    pf_sim__lock(s);
    pf_sim_params p = s->p;
    p.workers = s->workers_target;
    int need = p.naive_throughput <= 0.0 && p.mode == PF_SIM_PAGED &&
               (!s->naive_memo || s->naive_memo[p.workers] == 0.0);
    if (need && !s->naive_memo)
        s->naive_memo = calloc(PF_SIM_MAX_SEQS + 1, sizeof *s->naive_memo);
    need = need && s->naive_memo;
    pthread_mutex_unlock(&s->mu);
    if (!need)
        return;
    /* jobs are immutable: the run needs no lock, and a viewer stays live */
    double v = naive_throughput_of(s, &p);
    pf_sim__lock(s);
    s->naive_memo[p.workers] = v;
    pthread_mutex_unlock(&s->mu);
}

/* ---- run to the end ---------------------------------------------------------------- */

int pf_sim_run(pf_sim *sim, pf_sim_stats *out)
{
    if (!sim)
        return PF_ERR_ARG;
    if (sim->running)
        return PF_ERR_ARG;
    pf_sim__refresh_baseline(sim);
    pf_sim__lock(sim);
    int rc;
    for (;;) {
        rc = pf_sim__step_locked(sim);
        if (rc != 0)
            break;
        if (atomic_load(&sim->callers) > 0)
            pf_sim__let_callers_in(sim);
    }
    if (out)
        pf_sim__stats_locked(sim, out);
    pthread_mutex_unlock(&sim->mu);
    return rc == 1 ? PF_OK : rc;
}

int pf_sim_check(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int rc = pf_sched_check(sim->sc);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}
