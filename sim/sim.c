/* sim/sim.c - the scheduler step, the deterministic engine and the control
 * API (contract in sim/sim.h; state in sim/sim_internal.h).
 *
 * The model. Time is counted in steps; one step is one decode iteration.
 * There are `workers` slots; each slot serves one sequence at a time, as
 * each of the seed's 128 worker threads did. A step has three parts:
 *
 *   begin     arrivals join the tail of the waiting queue.
 *   slots     every slot holding a sequence takes exactly one action,
 *             decided by the functions in sim/policy.h:
 *     busy      a readmitted sequence is rebuilding its KV (recompute costs
 *               recompute_cost steps per token of prompt + generated) or
 *               copying its pages back from the host (swap costs
 *               swap_cost_per_page steps per page, out and in). No token.
 *     running   decode one token. If the last frame is full, first take one
 *               more frame (demand paging). No free frame = page fault: the
 *               sequence stalls (holds its frames, decodes nothing); once it
 *               has stalled more than stall_limit steps in a row a victim is
 *               preempted (victim policy), by swap if the host pool has
 *               room, else by recompute, and the faulting sequence tries
 *               again. The output's last token frees every frame and the
 *               slot.
 *   end       admission, first come first served, into the idle slots: the
 *             swapped-out queue first (vLLM's order), then the waiting
 *             queue (FIFO; recompute-preempted sequences go back to its
 *             front), each head in turn until one does not fit; nothing
 *             overtakes a blocked head. A new request takes its prompt's
 *             frames (paged: ceil(tokens/B); naive: ceil(max_seq_len/B))
 *             only if watermark x pool frames stay free afterwards (the
 *             pool's pf_pool_alloc_admit, reserve from pf_pool_reserve_for);
 *             a returning sequence (recompute or swap-in) needs only its
 *             frames to fit, with room for its next token
 *             (pf_policy_readmit_frames), no watermark. A new
 *             request that can never be admitted (pf_policy_never_fits) is
 *             aborted and the next one considered. Admitted sequences
 *             decode from the next step. Then the statistics.
 *
 * Running sequences may use every frame (the watermark only gates
 * admission), as in vLLM. The deterministic engine runs the slots one after
 * another in a fixed rotating order (slot (step + i) mod n), so every slot
 * gets to go first equally often, like threads racing, but reproducibly.
 * The threaded engine (engine_thr.c) runs the same slot action for each
 * slot on its own thread; the order within a step is then whatever the
 * pool's lock decides. Begin and end run on one thread in both engines.
 */
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim_internal.h"

/* ---- names and defaults ------------------------------------------------- */

/* The name tables and pf_*_name() live in sim/names.c. */

void pf_sim_params_default(pf_sim_params *p)
{
    memset(p, 0, sizeof *p);
    pf_config_default(&p->cfg);
    p->mode = PF_SIM_PAGED;
    p->engine = PF_ENGINE_DETERMINISTIC;
    p->watermark = 0.05;
    p->workers = 128;
    p->policy = PF_VICTIM_FAULTING;
    p->preempt = PF_PREEMPT_RECOMPUTE;
    p->swap_host_blocks = 4096;
    p->swap_cost_per_page = 0.05;
    p->recompute_cost = 0.25;
    p->tick_us = 10000;
    p->pingpong_window = 50;
    p->seed = 42;
    p->stall_limit = 4;
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
    if (!(p->watermark >= 0.0 && p->watermark <= 1.0))
        BAD("watermark must be in [0, 1], got %g", p->watermark);
    if (p->workers < 1 || p->workers > PF_SIM_MAX_WORKERS)
        BAD("workers must be in [1, %d], got %d", PF_SIM_MAX_WORKERS, p->workers);
    if ((unsigned)p->policy >= PF_VICTIM_COUNT)
        BAD("unknown victim policy %d", (int)p->policy);
    if ((unsigned)p->preempt >= PF_PREEMPT_COUNT)
        BAD("unknown preemption mode %d", (int)p->preempt);
    if (p->swap_host_blocks < 0)
        BAD("swap host blocks must be >= 0, got %d", p->swap_host_blocks);
    if (!(p->swap_cost_per_page >= 0.0 && p->swap_cost_per_page <= 1e6))
        BAD("swap cost per page must be in [0, 1e6] steps, got %g", p->swap_cost_per_page);
    if (!(p->recompute_cost >= 0.0 && p->recompute_cost <= 1e6))
        BAD("recompute cost must be in [0, 1e6] steps per token, got %g", p->recompute_cost);
    if (p->tick_us < 0 || p->tick_us > 10000000)
        BAD("tick must be in [0, 10000000] us, got %d", p->tick_us);
    if (p->pingpong_window < 0)
        BAD("ping-pong window must be >= 0, got %d", p->pingpong_window);
    if (p->stall_limit < 0)
        BAD("stall limit must be >= 0, got %d", p->stall_limit);
    if (!(p->naive_throughput >= 0.0))
        BAD("naive throughput must be >= 0, got %g", p->naive_throughput);
#undef BAD
    return PF_OK;
}

/* ---- events, queues -------------------------------------------------------- */

static void event(pf_sim *s, pf_event_kind k, int seq, int frames)
{
    int i = (s->ev_head + s->ev_n) % PF_SIM_EVENTS;
    if (s->ev_n == PF_SIM_EVENTS) {
        i = s->ev_head;
        s->ev_head = (s->ev_head + 1) % PF_SIM_EVENTS;
    } else {
        s->ev_n++;
    }
    s->ev[i].step = s->step;
    s->ev[i].kind = (uint8_t)k;
    s->ev[i].seq = seq;
    s->ev[i].frames = frames;
}

static void q_push_back(int *q, int cap, int *head, int *len, int v)
{
    q[(*head + *len) % cap] = v;
    (*len)++;
}

static void q_push_front(int *q, int cap, int *head, int *len, int v)
{
    *head = (*head + cap - 1) % cap;
    q[*head] = v;
    (*len)++;
}

static int q_pop_front(int *q, int cap, int *head, int *len)
{
    int v = q[*head];
    *head = (*head + 1) % cap;
    (*len)--;
    return v;
}

/* ---- create / destroy ------------------------------------------------------ */

pf_sim *pf_sim_create(const pf_sim_params *p, const pf_jobs *jobs, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!p || !jobs || !jobs->jobs || jobs->njobs < 1) {
        snprintf(err, errlen, "no jobs");
        return NULL;
    }
    if (params_check(p, err, errlen) != PF_OK)
        return NULL;
    const pf_config *c = &p->cfg;
    int B = c->block_size;
    int naive_frames = (c->max_seq_len + B - 1) / B;
    if (naive_frames > c->pool_blocks && p->mode == PF_SIM_NAIVE) {
        snprintf(err, errlen, "naive mode: one sequence's reservation (%d blocks) exceeds the pool (%d)",
                 naive_frames, c->pool_blocks);
        return NULL;
    }
    /* Frames one sequence can ever hold: its whole length, but never more
     * than the pool (a longer request is aborted, not run). */
    int max_frames = naive_frames;
    for (int i = 0; i < jobs->njobs; i++) {
        const pf_job *j = &jobs->jobs[i];
        if (j->prompt < 1 || j->output < 1 || j->arrival < 0 ||
            (int64_t)j->prompt + j->output > c->max_seq_len) {
            snprintf(err, errlen, "job %d: prompt %d + output %d must be >= 1 each and fit max_seq_len %d",
                     i, j->prompt, j->output, c->max_seq_len);
            return NULL;
        }
        if (i > 0 && j->arrival < jobs->jobs[i - 1].arrival) {
            snprintf(err, errlen, "jobs must be sorted by arrival (job %d)", i);
            return NULL;
        }
        int need = (j->prompt + j->output + B - 1) / B;
        if (need > max_frames)
            max_frames = need;
    }
    if (max_frames > c->pool_blocks)
        max_frames = c->pool_blocks;
    pf_sim *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    atomic_init(&s->callers, 0);
    int n = jobs->njobs;
    s->njobs = n;
    s->max_frames = max_frames;
    s->p = *p;
    s->jobs = malloc((size_t)n * sizeof *s->jobs);
    s->frame_store = malloc((size_t)n * (size_t)max_frames * sizeof(int));
    s->seq = calloc((size_t)n, sizeof *s->seq);
    s->q = malloc((size_t)n * sizeof(int));
    s->sq = malloc((size_t)n * sizeof(int));
    s->waits = malloc((size_t)n * sizeof(int));
    s->tmp = malloc((size_t)max_frames * sizeof(int));
    s->cand = malloc(PF_SIM_MAX_WORKERS * sizeof *s->cand);
    s->pool = pf_pool_create(c->pool_blocks);
    /* The driver's timed wait (pace) measures the tick on the monotonic
     * clock: a wall-clock step (NTP, a user setting the date) must neither
     * stretch nor cut a tick. */
    pthread_condattr_t ca;
    int ca_ok = pthread_condattr_init(&ca) == 0;
    int clock_ok = ca_ok && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0;
    int mu_ok = pthread_mutex_init(&s->mu, NULL) == 0;
    int cv_ok = mu_ok && pthread_cond_init(&s->go_cv, NULL) == 0;
    int cv2_ok = cv_ok && pthread_cond_init(&s->done_cv, NULL) == 0;
    int cv3_ok = cv2_ok && clock_ok && pthread_cond_init(&s->ctl_cv, &ca) == 0;
    if (ca_ok)
        pthread_condattr_destroy(&ca);
    if (!s->jobs || !s->frame_store || !s->seq || !s->q || !s->sq || !s->waits || !s->tmp ||
        !s->cand || !s->pool || !cv3_ok) {
        if (cv3_ok)
            pthread_cond_destroy(&s->ctl_cv);
        if (cv2_ok)
            pthread_cond_destroy(&s->done_cv);
        if (cv_ok)
            pthread_cond_destroy(&s->go_cv);
        if (mu_ok)
            pthread_mutex_destroy(&s->mu);
        pf_pool_destroy(s->pool);
        free(s->jobs);
        free(s->frame_store);
        free(s->seq);
        free(s->q);
        free(s->sq);
        free(s->waits);
        free(s->tmp);
        free(s->cand);
        free(s);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(s->jobs, jobs->jobs, (size_t)n * sizeof *s->jobs);
    for (int i = 0; i < n; i++)
        s->seq[i].frames = s->frame_store + (size_t)i * (size_t)max_frames;
    s->workers_target = p->workers;
    if (p->naive_throughput > 0.0) { /* the caller's baseline, for these workers */
        s->naive_memo[p->workers] = p->naive_throughput;
    }
    pf_sim__reset_locked(s); /* no other thread knows s yet */
    return s;
}

void pf_sim_destroy(pf_sim *sim)
{
    if (!sim)
        return;
    pf_sim_stop(sim);
    pthread_cond_destroy(&sim->ctl_cv);
    pthread_cond_destroy(&sim->done_cv);
    pthread_cond_destroy(&sim->go_cv);
    pthread_mutex_destroy(&sim->mu);
    pf_pool_destroy(sim->pool);
    free(sim->jobs);
    free(sim->frame_store);
    free(sim->seq);
    free(sim->q);
    free(sim->sq);
    free(sim->waits);
    free(sim->tmp);
    free(sim->cand);
    free(sim);
}

/* Everything back to step 0 on the same jobs: every frame returns to the
 * pool (reset, which also zeroes its peak), every job to "not arrived". */
void pf_sim__reset_locked(pf_sim *s)
{
    pf_pool_reset(s->pool);
    for (int i = 0; i < s->njobs; i++) {
        pf_seqrec *q = &s->seq[i];
        int *fr = q->frames;
        memset(q, 0, sizeof *q);
        q->frames = fr;
        q->st = SQ_PENDING;
        q->slot = -1;
    }
    for (int w = 0; w < PF_SIM_MAX_WORKERS; w++) {
        s->slot_seq[w] = -1;
        s->slot_retire[w] = w >= s->p.workers;
    }
    s->slot_hi = s->p.workers;
    s->qhead = s->qlen = s->sqhead = s->sqlen = 0;
    s->next_arrival = 0;
    s->host_used = 0;
    s->step = 0;
    s->admit_counter = 0;
    s->admitted = s->finished = s->aborted = 0;
    s->preemptions = s->recomputed = s->swapped_pages = s->pingpongs = 0;
    s->tokens_gen = 0;
    s->sum_decoding = s->sum_stalled = s->sum_used = s->sum_running = s->sum_waiting = 0;
    s->running_peak = 0;
    s->nwaits = 0;
    s->waits_sorted_n = 0;
    s->wait_p50 = s->wait_p99 = 0;
    memset(&s->cur, 0, sizeof s->cur);
    s->last_waiting = s->last_running = s->last_decoding = s->last_stalled = s->last_swapped = 0;
    s->done = 0;
    s->livelock = 0;
    s->idle_preempts = 0;
    s->ev_head = s->ev_n = 0;
    s->h_head = s->h_n = 0;
    event(s, PF_EV_RESET, -1, 0);
}

/* Change the number of worker slots at a step boundary. Slots beyond the
 * new count drain: they finish the sequence they run and take no more. */
void pf_sim__apply_workers_locked(pf_sim *s, int workers)
{
    s->p.workers = workers;
    for (int w = 0; w < PF_SIM_MAX_WORKERS; w++)
        s->slot_retire[w] = w >= workers;
    int hi = workers;
    for (int w = workers; w < s->slot_hi; w++)
        if (s->slot_seq[w] >= 0)
            hi = w + 1;
    s->slot_hi = hi;
}

/* ---- the step ------------------------------------------------------------- */

/* Arrivals join the tail of the waiting queue; per-step counters reset. */
void pf_sim__begin_step(pf_sim *s)
{
    while (s->next_arrival < s->njobs && s->jobs[s->next_arrival].arrival <= s->step) {
        int id = s->next_arrival++;
        s->seq[id].st = SQ_QUEUED;
        q_push_back(s->q, s->njobs, &s->qhead, &s->qlen, id);
    }
    memset(&s->cur, 0, sizeof s->cur);
}

/* Return every frame of sequence id to the pool. */
static void release_frames(pf_sim *s, int id)
{
    pf_seqrec *q = &s->seq[id];
    for (int k = 0; k < q->nframes; k++)
        (void)pf_pool_free(s->pool, id, q->frames[k]);
    q->nframes = 0;
}

static void unbind(pf_sim *s, int id)
{
    pf_seqrec *q = &s->seq[id];
    if (q->slot >= 0 && s->slot_seq[q->slot] == id)
        s->slot_seq[q->slot] = -1;
    q->slot = -1;
}

/* Preempt running sequence v: swap it to the host if the mode and the host
 * pool allow, else recompute (free all, back to the front of the queue). */
static void preempt(pf_sim *s, int v)
{
    pf_seqrec *q = &s->seq[v];
    int n = q->nframes;
    pf_preempt_mode how = pf_policy_preempt_how(s->p.preempt, s->p.swap_host_blocks - s->host_used, n);
    /* ping-pong: this admission was itself a readmission after a
     * preemption, and it lasted no more than K steps. */
    if (q->preemptions > 0 && s->step - q->admit_step <= s->p.pingpong_window) {
        s->pingpongs++;
        event(s, PF_EV_PINGPONG, v, n);
    }
    release_frames(s, v);
    q->epoch++;
    q->busy = 0;
    q->stalled = 0;
    unbind(s, v);
    s->preemptions++;
    q->preemptions++;
    s->cur.preempted++;
    if (how == PF_PREEMPT_SWAP) {
        s->host_used += n;
        q->host_frames = n;
        s->swapped_pages += n;
        q->st = SQ_SWAPPED;
        q_push_back(s->sq, s->njobs, &s->sqhead, &s->sqlen, v);
        event(s, PF_EV_SWAP_OUT, v, n);
    } else {
        q->recompute = 1;
        q->st = SQ_QUEUED;
        q_push_front(s->q, s->njobs, &s->qhead, &s->qlen, v);
        event(s, PF_EV_PREEMPT, v, n);
    }
}

/* The victim among the running sequences (decoding or stalled, holding
 * frames), chosen by the policy; `self` is the faulting one. */
static int choose_victim(pf_sim *s, int self)
{
    int n = 0, me = -1;
    for (int w = 0; w < s->slot_hi; w++) {
        int id = s->slot_seq[w];
        if (id < 0)
            continue;
        const pf_seqrec *q = &s->seq[id];
        if ((q->st != SQ_DECODING && q->st != SQ_STALLED) || q->nframes == 0)
            continue;
        if (id == self)
            me = n;
        pf_victim_cand *c = &s->cand[n++];
        c->id = id;
        c->generated = q->generated;
        c->frames = q->nframes;
        c->priority = s->jobs[id].priority;
        c->admit_order = q->admit_order;
    }
    int k = pf_policy_pick_victim(s->p.policy, s->cand, n, me);
    return k < 0 ? self : s->cand[k].id;
}

static void finish(pf_sim *s, int id)
{
    pf_seqrec *q = &s->seq[id];
    int n = q->nframes;
    release_frames(s, id);
    unbind(s, id);
    q->st = SQ_DONE;
    s->finished++;
    event(s, PF_EV_FINISH, id, n);
}

/* Admission, first come first served, into the idle slots below the worker
 * count (see the model at the top). Runs on the one thread that ends the
 * step, so the pool sees no other allocation meanwhile. */
static void admit_fcfs(pf_sim *s)
{
    int w = 0;
    for (;;) {
        while (w < s->p.workers && s->slot_seq[w] >= 0)
            w++;
        if (w >= s->p.workers)
            return;
        int swapped = s->sqlen > 0;
        if (!swapped && s->qlen == 0)
            return;
        int id = swapped ? s->sq[s->sqhead] : s->q[s->qhead];
        pf_seqrec *q = &s->seq[id];
        const pf_job *j = &s->jobs[id];
        int tokens = j->prompt + q->generated;
        int returning = swapped || q->recompute;
        int need = returning ? pf_policy_readmit_frames(&s->p, tokens) : pf_policy_admit_frames(&s->p, tokens);
        if (!returning && pf_policy_never_fits(&s->p, j)) {
            (void)q_pop_front(s->q, s->njobs, &s->qhead, &s->qlen);
            q->st = SQ_ABORTED;
            s->aborted++;
            s->cur.aborted++;
            event(s, PF_EV_ABORT, id, need);
            continue;
        }
        double wm = pf_policy_admit_watermark(&s->p, returning);
        if (pf_pool_alloc_admit(s->pool, id, need, wm, s->tmp) != PF_OK)
            return;
        if (swapped)
            (void)q_pop_front(s->sq, s->njobs, &s->sqhead, &s->sqlen);
        else
            (void)q_pop_front(s->q, s->njobs, &s->qhead, &s->qlen);
        memcpy(q->frames, s->tmp, (size_t)need * sizeof(int));
        q->nframes = need;
        q->slot = w;
        s->slot_seq[w] = id;
        q->admit_step = s->step;
        q->admit_order = s->admit_counter++;
        q->stalled = 0;
        s->cur.admitted++;
        if (swapped) {
            s->host_used -= q->host_frames;
            q->busy = pf_policy_cost_steps(2.0 * q->host_frames, s->p.swap_cost_per_page);
            q->host_frames = 0;
            q->st = q->busy > 0 ? SQ_SWAPIN : SQ_DECODING;
            event(s, PF_EV_SWAP_IN, id, need);
        } else if (q->recompute) {
            s->recomputed += tokens;
            q->recompute = 0;
            q->busy = pf_policy_cost_steps(tokens, s->p.recompute_cost);
            q->st = q->busy > 0 ? SQ_RECOMPUTING : SQ_DECODING;
            event(s, PF_EV_ADMIT, id, need);
        } else {
            int64_t wait = s->step - j->arrival;
            s->waits[s->nwaits++] = wait > 0x7fffffff ? 0x7fffffff : (int)wait;
            s->admitted++;
            s->cur.first_admitted++;
            q->st = SQ_DECODING;
            event(s, PF_EV_ADMIT, id, need);
        }
    }
}

/* One frame for running sequence id (slot w), outside mu so that worker
 * threads contend on the pool. Returns the frame, -1 if none was free, or
 * -2 if the sequence was preempted by another worker meanwhile (then it
 * is no longer ours to touch). */
static int grab_frame(pf_sim *s, int w, int id)
{
    if (pf_pool_free_count(s->pool) == 0)
        return -1;
    uint32_t ep = s->seq[id].epoch;
    int f;
    pthread_mutex_unlock(&s->mu);
    int rc = pf_pool_alloc(s->pool, id, &f);
    pthread_mutex_lock(&s->mu);
    if (s->seq[id].epoch != ep || s->slot_seq[w] != id) {
        if (rc == PF_OK)
            (void)pf_pool_free(s->pool, id, f);
        return -2;
    }
    return rc == PF_OK ? f : -1;
}

static void decode(pf_sim *s, int w, int id)
{
    pf_seqrec *q = &s->seq[id];
    const pf_job *j = &s->jobs[id];
    int B = s->p.cfg.block_size;
    int tokens = j->prompt + q->generated;
    if (tokens + 1 > q->nframes * B) {
        /* Demand paging: the last frame is full. */
        int f = grab_frame(s, w, id);
        if (f == -2)
            return;
        if (f < 0) {
            q->stalled++;
            if (pf_policy_on_fault(q->stalled, s->p.stall_limit) == PF_FAULT_PREEMPT) {
                int v = choose_victim(s, id);
                preempt(s, v);
                if (v == id)
                    return;
                f = grab_frame(s, w, id);
                if (f == -2)
                    return;
            }
            if (f < 0) {
                if (q->st != SQ_STALLED)
                    event(s, PF_EV_STALL, id, q->nframes);
                q->st = SQ_STALLED;
                s->cur.stalled++;
                return;
            }
        }
        q->frames[q->nframes++] = f;
    }
    q->generated++;
    q->stalled = 0;
    q->st = SQ_DECODING;
    s->tokens_gen++;
    s->cur.decoding++;
    if (q->generated >= j->output)
        finish(s, id);
}

void pf_sim__slot_step(pf_sim *s, int w)
{
    int id = s->slot_seq[w];
    if (id < 0)
        return;
    pf_seqrec *q = &s->seq[id];
    switch (q->st) {
    case SQ_RECOMPUTING:
    case SQ_SWAPIN:
        s->cur.busy++;
        if (--q->busy <= 0) {
            q->busy = 0;
            q->st = SQ_DECODING;
        }
        return;
    case SQ_DECODING:
    case SQ_STALLED:
        decode(s, w, id);
        return;
    default:
        return;
    }
}

/* Requests in flight: admitted (in a slot), swapped out, or queued after a
 * recompute preemption. */
static int in_flight(const pf_sim *s, int running)
{
    return running + s->sqlen + s->qlen;
}

/* Admission, then fold the step's counters into the totals and the
 * history, then the livelock check.
 *
 * Livelock. A run can stop making progress only through preemptions that
 * undo one another: every other state moves on its own (a busy sequence
 * counts down, a stalled one reaches its stall limit and preempts, an
 * empty pool admits the queue's head, a request that never fits is
 * aborted). So the check counts preemptions since the last progress (a
 * token, a finish, an abort, a first admission) and asks
 * pf_policy_livelocked; the run then stops rather than spin. The static case (nothing running,
 * busy or arriving, yet the run not done) cannot arise under the
 * admission rules; it is checked anyway, so no loop can be endless. */
void pf_sim__end_step(pf_sim *s)
{
    admit_fcfs(s);
    int running = 0, swapped = s->sqlen, hi = 0;
    for (int w = 0; w < s->slot_hi; w++) {
        if (s->slot_seq[w] < 0)
            continue;
        hi = w + 1;
        running++;
    }
    if (hi < s->p.workers)
        hi = s->p.workers;
    s->slot_hi = hi;
    s->last_waiting = s->qlen;
    s->last_running = running;
    if (running > s->running_peak)
        s->running_peak = running;
    s->last_decoding = s->cur.decoding;
    s->last_stalled = s->cur.stalled;
    s->last_swapped = swapped;
    s->sum_decoding += s->cur.decoding;
    s->sum_running += running;
    s->sum_waiting += s->last_waiting;
    s->sum_stalled += s->cur.stalled;
    int used = pf_pool_used_count(s->pool);
    s->sum_used += used;
    int h = (s->h_head + s->h_n) % PF_SIM_HISTORY;
    if (s->h_n == PF_SIM_HISTORY)
        s->h_head = (s->h_head + 1) % PF_SIM_HISTORY;
    else
        s->h_n++;
    s->h_dec[h] = (float)s->cur.decoding;
    s->h_stall[h] = (float)s->cur.stalled;
    s->h_pre[h] = (float)s->cur.preempted;
    s->h_use[h] = (float)used / (float)s->p.cfg.pool_blocks;
    s->step++;
    if (s->finished + s->aborted == s->njobs)
        s->done = 1;
    if (s->cur.decoding > 0 || s->cur.aborted > 0 || s->cur.first_admitted > 0)
        s->idle_preempts = 0;
    else
        s->idle_preempts += s->cur.preempted;
    int stuck = !s->done && running == 0 && s->cur.admitted == 0 && s->cur.preempted == 0 &&
                s->next_arrival == s->njobs;
    if (!s->done && (stuck || pf_policy_livelocked(s->idle_preempts, in_flight(s, running))))
        s->livelock = 1;
}

/* See sim_internal.h. A step was quiet when nobody decoded, nothing was
 * admitted, preempted or aborted: every sequence in a slot is busy or
 * stalled, and the queue heads did not fit. The next steps repeat it
 * exactly (no frame moves, so no admission can succeed) until the first
 * of: an arrival, a busy sequence reaching 0 (it decodes in the step
 * after), a stalled one passing its stall limit (it preempts). Skip to the
 * step before that one, adding what the skipped steps would have. */
void pf_sim__skip_quiet(pf_sim *s)
{
    const pf_stepcount *c = &s->cur;
    if (s->done || s->livelock || c->decoding || c->admitted || c->preempted || c->aborted)
        return;
    int64_t k = INT64_MAX; /* steps that can be skipped */
    if (s->next_arrival < s->njobs)
        k = (int64_t)s->jobs[s->next_arrival].arrival - s->step;
    for (int w = 0; w < s->slot_hi; w++) {
        int id = s->slot_seq[w];
        if (id < 0)
            continue;
        const pf_seqrec *q = &s->seq[id];
        int64_t room;
        if (q->st == SQ_RECOMPUTING || q->st == SQ_SWAPIN)
            room = (int64_t)q->busy - 1;
        else if (q->st == SQ_STALLED)
            room = (int64_t)s->p.stall_limit - q->stalled;
        else
            room = 0; /* a sequence that will decode: nothing to skip */
        if (room < k)
            k = room;
    }
    if (k <= 0 || k == INT64_MAX)
        return;
    for (int w = 0; w < s->slot_hi; w++) {
        int id = s->slot_seq[w];
        if (id < 0)
            continue;
        pf_seqrec *q = &s->seq[id];
        if (q->st == SQ_STALLED)
            q->stalled += (int)k;
        else
            q->busy -= (int)k;
    }
    s->sum_running += k * s->last_running;
    s->sum_waiting += k * s->last_waiting;
    s->sum_stalled += k * c->stalled;
    int used = pf_pool_used_count(s->pool);
    s->sum_used += k * used;
    int64_t nh = k < PF_SIM_HISTORY ? k : PF_SIM_HISTORY;
    for (int64_t i = 0; i < nh; i++) {
        int h = (s->h_head + s->h_n) % PF_SIM_HISTORY;
        if (s->h_n == PF_SIM_HISTORY)
            s->h_head = (s->h_head + 1) % PF_SIM_HISTORY;
        else
            s->h_n++;
        s->h_dec[h] = 0.0f;
        s->h_stall[h] = (float)c->stalled;
        s->h_pre[h] = 0.0f;
        s->h_use[h] = (float)used / (float)s->p.cfg.pool_blocks;
    }
    s->step += k;
}

/* ---- the deterministic engine ------------------------------------------- */

void pf_sim__det_step(pf_sim *s)
{
    pf_sim__begin_step(s);
    int n = s->slot_hi;
    int start = (int)(s->step % n);
    for (int i = 0; i < n; i++) {
        int w = start + i;
        if (w >= n)
            w -= n;
        pf_sim__slot_step(s, w);
    }
    pf_sim__end_step(s);
}

void pf_sim__let_callers_in(pf_sim *s)
{
    if (atomic_load(&s->callers) == 0)
        return;
    pthread_mutex_unlock(&s->mu);
    while (atomic_load(&s->callers) > 0)
        sched_yield();
    pthread_mutex_lock(&s->mu);
}

/* Requests made by control calls while pf_sim_run's deterministic loop or
 * pf_sim_step runs apply at a step boundary, as the drivers apply them. */
static void apply_requests_locked(pf_sim *s)
{
    if (s->reset_req) {
        s->reset_req = 0;
        pf_sim__reset_locked(s);
    }
    if (s->workers_target != s->p.workers)
        pf_sim__apply_workers_locked(s, s->workers_target);
}

int pf_sim_step(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int running = sim->running, background = sim->driver_started;
    pthread_mutex_unlock(&sim->mu);
    if (running)
        return background && pf_sim_single_step(sim) == PF_OK ? 0 : PF_ERR_ARG;
    pf_sim__refresh_baseline(sim);
    pf_sim__lock(sim);
    apply_requests_locked(sim);
    if (!sim->done && !sim->livelock) {
        pf_sim__det_step(sim);
        pf_sim__skip_quiet(sim);
    }
    int r = sim->done ? 1 : sim->livelock ? PF_ERR_RANGE : 0;
    pthread_mutex_unlock(&sim->mu);
    return r;
}

/* The same jobs and parameters under naive mode, deterministic engine:
 * the baseline for throughput_vs_naive. */
static double naive_throughput_of(const pf_sim_params *p, const pf_job *jobs, int njobs)
{
    pf_sim_params np = *p;
    np.mode = PF_SIM_NAIVE;
    np.engine = PF_ENGINE_DETERMINISTIC;
    np.naive_throughput = 0.0;
    pf_jobs j = {(pf_job *)jobs, njobs, 0};
    pf_sim *n = pf_sim_create(&np, &j, NULL, 0);
    if (!n)
        return 0.0;
    pf_sim_stats st;
    double t = pf_sim_run(n, &st) == PF_OK && st.step > 0 ? st.throughput : 0.0;
    pf_sim_destroy(n);
    return t;
}

/* See sim_internal.h. The baseline depends on the jobs and the pool (fixed
 * for the simulator's life) and on the worker count; the watermark, victim
 * and preemption settings do not change a naive run. Each count is run once
 * (outside the lock: it takes milliseconds) and remembered; until the
 * current count's run is known the ratio reads 0 (unknown), never the
 * ratio of another count. */
void pf_sim__refresh_baseline(pf_sim *s)
{
    pf_sim__lock(s);
    pf_sim_params p = s->p;
    p.workers = s->workers_target;
    int known = s->naive_memo[p.workers] != 0.0;
    pthread_mutex_unlock(&s->mu);
    if (known || p.mode != PF_SIM_PAGED)
        return;
    double base = naive_throughput_of(&p, s->jobs, s->njobs);
    pf_sim__lock(s);
    s->naive_memo[p.workers] = base > 0.0 ? base : -1.0;
    pthread_mutex_unlock(&s->mu);
}

int pf_sim_run(pf_sim *sim, pf_sim_stats *out)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    if (sim->running) {
        pthread_mutex_unlock(&sim->mu);
        return PF_ERR_ARG;
    }
    pthread_mutex_unlock(&sim->mu);
    pf_sim__refresh_baseline(sim);
    int rc = PF_OK;
    if (sim->p.engine == PF_ENGINE_THREADED) {
        pf_sim__lock(sim);
        apply_requests_locked(sim);
        if (sim->done || sim->step > 0)
            pf_sim__reset_locked(sim);
        pthread_mutex_unlock(&sim->mu);
        rc = pf_sim__thr_start(sim, 0);
        if (rc == PF_OK)
            rc = pf_sim__thr_wait_done(sim);
        int rc2 = pf_sim__thr_stop(sim);
        if (rc == PF_OK)
            rc = rc2;
    } else {
        /* One step per lock hold, so that a viewer on another thread gets in
         * between steps; `running` makes a concurrent pf_sim_step refuse
         * rather than interleave its steps with these. */
        pf_sim__lock(sim);
        apply_requests_locked(sim);
        if (sim->done || sim->step > 0)
            pf_sim__reset_locked(sim);
        sim->running = 1;
        sim->live = 0;
        while (!sim->done && !sim->livelock) {
            pf_sim__det_step(sim);
            pf_sim__skip_quiet(sim);
            pthread_mutex_unlock(&sim->mu);
            pf_sim__lock(sim);
            apply_requests_locked(sim);
        }
        sim->running = 0;
        pthread_mutex_unlock(&sim->mu);
    }
    pf_sim__lock(sim);
    if (rc == PF_OK && sim->livelock)
        rc = PF_ERR_RANGE;
    if (out)
        pf_sim__stats_locked(sim, out);
    pthread_mutex_unlock(&sim->mu);
    return rc;
}

/* ---- control ----------------------------------------------------------------- */

int pf_sim_set_watermark(pf_sim *sim, double watermark)
{
    if (!sim || !(watermark >= 0.0 && watermark <= 1.0))
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.watermark = watermark;
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_set_workers(pf_sim *sim, int workers)
{
    if (!sim || workers < 1 || workers > PF_SIM_MAX_WORKERS)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->workers_target = workers;
    /* A running engine applies it at the next step boundary (the threaded
     * driver owns the threads); otherwise nothing runs a step right now. */
    if (!sim->running)
        pf_sim__apply_workers_locked(sim, workers);
    pthread_mutex_unlock(&sim->mu);
    pf_sim__refresh_baseline(sim);
    return PF_OK;
}

int pf_sim_set_policy(pf_sim *sim, pf_victim_policy policy)
{
    if (!sim || (unsigned)policy >= PF_VICTIM_COUNT)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.policy = policy;
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_set_preempt(pf_sim *sim, pf_preempt_mode mode)
{
    if (!sim || (unsigned)mode >= PF_PREEMPT_COUNT)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.preempt = mode;
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_set_mode(pf_sim *sim, pf_sim_mode mode)
{
    if (!sim || (unsigned)mode > PF_SIM_PAGED)
        return PF_ERR_ARG;
    int B = sim->p.cfg.block_size; /* cfg never changes */
    if (mode == PF_SIM_NAIVE && (sim->p.cfg.max_seq_len + B - 1) / B > sim->p.cfg.pool_blocks)
        return PF_ERR_RANGE;
    pf_sim__lock(sim);
    sim->p.mode = mode;
    pthread_mutex_unlock(&sim->mu);
    pf_sim__refresh_baseline(sim);
    return pf_sim_reset(sim);
}

int pf_sim_set_paused(pf_sim *sim, int paused)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->paused = paused ? 1 : 0;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_single_step(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int running = sim->running;
    int ok = running && sim->driver_started && sim->paused;
    if (ok) {
        sim->single_req = 1;
        pthread_cond_broadcast(&sim->ctl_cv);
    }
    pthread_mutex_unlock(&sim->mu);
    if (!running) {
        int r = pf_sim_step(sim); /* a step that ends in a livelock still stepped */
        return r < 0 && r != PF_ERR_RANGE ? PF_ERR_ARG : PF_OK;
    }
    return ok ? PF_OK : PF_ERR_ARG;
}

int pf_sim_set_tick_us(pf_sim *sim, int tick_us)
{
    if (!sim || tick_us < 0 || tick_us > 10000000)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    sim->p.tick_us = tick_us;
    pthread_cond_broadcast(&sim->ctl_cv);
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

int pf_sim_reset(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    if (sim->running) {
        sim->reset_req = 1; /* the engine resets at the next step boundary */
        pthread_cond_broadcast(&sim->ctl_cv);
    } else {
        pf_sim__reset_locked(sim);
    }
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

void pf_sim_get_params(pf_sim *sim, pf_sim_params *out)
{
    if (!sim || !out)
        return;
    pf_sim__lock(sim);
    *out = sim->p;
    /* the worker count as set: a running engine applies it at its next
     * step boundary, and a caller stepping it again must start from it */
    out->workers = sim->workers_target;
    pthread_mutex_unlock(&sim->mu);
}

void pf_sim_get_stats(pf_sim *sim, pf_sim_stats *out)
{
    if (!sim || !out)
        return;
    pf_sim__lock(sim);
    pf_sim__stats_locked(sim, out);
    pthread_mutex_unlock(&sim->mu);
}

int pf_sim_check(pf_sim *sim)
{
    if (!sim)
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int held = 0, rc = PF_OK;
    for (int i = 0; i < sim->njobs; i++) {
        const pf_seqrec *q = &sim->seq[i];
        held += q->nframes;
        for (int k = 0; k < q->nframes; k++)
            if (pf_pool_owner(sim->pool, q->frames[k]) != i)
                rc = PF_ERR_ARG;
    }
    if (pf_pool_check(sim->pool) != PF_OK || pf_pool_used_count(sim->pool) != held)
        rc = PF_ERR_ARG;
    if (sim->host_used < 0 || sim->host_used > sim->p.swap_host_blocks)
        rc = PF_ERR_ARG;
    pthread_mutex_unlock(&sim->mu);
    return rc;
}
