/* sim/sched.c - the scheduler core (contract in sim/sched.h).
 *
 * State. Requests live in one array, in arrival order. The waiting queue is
 * a ring of request ids: arrivals join its tail, preempted requests its head
 * (they were admitted before everything still waiting, so FCFS puts them
 * first, as vLLM's waiting.prepend_request does). The running requests form
 * a doubly linked list in admission order, so "the newest" is its tail and a
 * finished request leaves it in O(1).
 *
 * A step, in the order vLLM's Scheduler.schedule() takes it:
 *
 *   1. Arrivals whose time has come join the waiting queue.
 *   2. Running requests, oldest first, each ask for the tokens they have not
 *      computed: one for a decoding request, the rest of its prompt (and of
 *      its regenerated output, after a recompute preemption) for a
 *      prefilling one, capped by what is left of the token budget (vLLM
 *      rules; the seed's have no budget). The frames those tokens need are
 *      taken from the pool. When the pool is short:
 *        vLLM rules: preempt a victim (the newest running request by
 *          default) and try again, until the frames fit or the request has
 *          preempted itself;
 *        seed rules: stall (hold the frames, compute nothing) for up to
 *          stall_limit steps in a row, then preempt one victim and try once
 *          more.
 *      A victim that had already been scheduled in this step is taken out of
 *      the batch and its tokens go back to the budget.
 *   3. Waiting requests, head first, while the budget and the running cap
 *      allow and (vLLM rules) no preemption happened in this step: a new
 *      request is admitted only if watermark x pool frames stay free after
 *      its first chunk's frames; a preempted one only needs its frames to fit
 *      (the reserve exists to let running requests grow; applying it to a
 *      returning request, as vLLM V0's can_allocate did, can lock one out for
 *      ever once it grew past N - reserve). The head blocks the queue: FCFS.
 *      A head that can never be admitted, even into an empty pool, is
 *      aborted alone and counted (vLLM's "ignored" requests).
 *   4. The batch's work (decode tokens, prefill tokens, KV read) goes to the
 *      cost function; the clock advances by its answer.
 *   5. Every scheduled request's tokens land at the step's end. A request
 *      whose computed tokens caught up with its length samples one token
 *      (the last chunk of a prefill samples too, as in vLLM); one that has
 *      all its output finishes and frees its frames.
 *
 * Nothing to run and nothing admissible means nothing can change until the
 * next arrival: the clock jumps there in the same call. Under the seed's
 * rules a step in which every running request only stalls is repeated
 * identically until the first stall limit expires: those steps are taken in
 * one jump too (each charged the cost of an empty step).
 */
#include "sim/sched.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/paging.h"
#include "sim/policy.h"

const char *const pf_sched_rules_names[] = {"vllm", "seed", NULL};
const char *const pf_naive_reserve_names[] = {"max", "pow2", "oracle", NULL};

struct pf_sched {
    pf_sched_params p;
    int n;
    pf_req *r;
    pf_pool *pool;
    int pool_frames;
    pf_sched_cost_fn cost;
    void *cost_ctx;
    pf_sched_event_fn ev;
    void *ev_ctx;

    double now;
    int64_t step;
    int next_arrival;
    int ended; /* done + aborted */

    int *wq; /* waiting ring, capacity n */
    int wq_head, wq_len;
    int run_head, run_tail, nrun;
    int64_t admit_counter;
    int host_used;

    int *order;   /* running ids in admission order at step start, [n] */
    int *sched;   /* ids scheduled this step, in schedule order, [n]    */
    int nsched;
    int *tmp;     /* frame ids from one allocation                      */
    int tmp_cap;
    pf_victim_cand *cand;
    int cand_cap;
    int step_preempted; /* preemptions in the current step */
    pf_sched_batch batch;
};

void pf_sched_params_default(pf_sched_params *p)
{
    memset(p, 0, sizeof *p);
    p->rules = PF_SCHED_VLLM;
    p->paged = 1;
    p->reserve = PF_RESERVE_MAX;
    p->block_size = 16;
    p->max_seq_len = 2048;
    p->max_num_seqs = 1024;
    p->max_num_batched_tokens = 8192;
    p->watermark = 0.01;
    p->victim = PF_VICTIM_NEWEST;
    p->preempt = PF_PREEMPT_RECOMPUTE;
    p->swap_host_blocks = 4096;
    p->stall_limit = 4;
    p->pingpong_window = 50;
}

int pf_sched_naive_tokens(pf_naive_reserve r, int tokens, int max_seq_len)
{
    switch (r) {
    case PF_RESERVE_ORACLE:
        return tokens;
    case PF_RESERVE_POW2: {
        long long t = 1;
        while (t < tokens)
            t <<= 1;
        return t > max_seq_len ? max_seq_len : (int)t;
    }
    default:
        return max_seq_len;
    }
}

static int emit(pf_sched *s, pf_sched_ev e, int id, int a)
{
    if (s->ev)
        s->ev(s->ev_ctx, e, id, a);
    return 0;
}

/* ---- create / destroy ------------------------------------------------------ */

static int params_ok(const pf_sched_params *p, int pool_frames, char *err, size_t errlen)
{
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return 0;                                                                                  \
    } while (0)
    if ((unsigned)p->rules >= PF_SCHED_COUNT)
        BAD("unknown scheduler %d", (int)p->rules);
    if ((unsigned)p->reserve >= PF_RESERVE_COUNT)
        BAD("unknown naive reservation %d", (int)p->reserve);
    if (p->block_size < 1 || p->block_size > 65536)
        BAD("block size must be in [1, 65536], got %d", p->block_size);
    if (p->max_seq_len < 2)
        BAD("max sequence length must be >= 2, got %d", p->max_seq_len);
    if (p->max_num_seqs < 1)
        BAD("max-num-seqs must be >= 1, got %d", p->max_num_seqs);
    if (p->max_num_batched_tokens < 1)
        BAD("max-num-batched-tokens must be >= 1, got %d", p->max_num_batched_tokens);
    if (!(p->watermark >= 0.0 && p->watermark <= 1.0))
        BAD("watermark must be in [0, 1], got %g", p->watermark);
    if ((unsigned)p->victim >= PF_VICTIM_COUNT)
        BAD("unknown victim policy %d", (int)p->victim);
    if ((unsigned)p->preempt >= PF_PREEMPT_COUNT)
        BAD("unknown preemption mode %d", (int)p->preempt);
    if (p->swap_host_blocks < 0 || p->stall_limit < 0)
        BAD("swap blocks and stall limit must be >= 0");
    if (pool_frames < 1)
        BAD("the pool needs at least one frame, got %d", pool_frames);
#undef BAD
    return 1;
}

pf_sched *pf_sched_create(const pf_sched_params *p, const pf_req *jobs, int n, int pool_frames,
                          pf_sched_cost_fn cost, void *cost_ctx, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!p || !jobs || n < 1) {
        snprintf(err, errlen, "no requests");
        return NULL;
    }
    if (!params_ok(p, pool_frames, err, errlen))
        return NULL;
    for (int i = 0; i < n; i++) {
        const pf_req *j = &jobs[i];
        if (j->prompt < 1 || j->output < 1 || !(j->arrival >= 0.0) || isinf(j->arrival) ||
            (int64_t)j->prompt + j->output > p->max_seq_len) {
            snprintf(err, errlen, "request %d: prompt %d + output %d must be >= 1 each and fit %d tokens, "
                     "arriving at a finite time >= 0", i, j->prompt, j->output, p->max_seq_len);
            return NULL;
        }
        if (i > 0 && j->arrival < jobs[i - 1].arrival) {
            snprintf(err, errlen, "requests must be sorted by arrival (request %d)", i);
            return NULL;
        }
    }
    pf_sched *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->p = *p;
    s->n = n;
    s->pool_frames = pool_frames;
    s->cost = cost;
    s->cost_ctx = cost_ctx;
    s->r = calloc((size_t)n, sizeof *s->r);
    s->wq = malloc((size_t)n * sizeof *s->wq);
    s->order = malloc((size_t)n * sizeof *s->order);
    s->sched = malloc((size_t)n * sizeof *s->sched);
    s->pool = pf_pool_create(pool_frames);
    if (!s->r || !s->wq || !s->order || !s->sched || !s->pool)
        goto oom;
    for (int i = 0; i < n; i++) {
        pf_req *q = &s->r[i];
        q->arrival = jobs[i].arrival;
        q->prompt = jobs[i].prompt;
        q->output = jobs[i].output;
        q->priority = jobs[i].priority;
        q->state = PF_REQ_PENDING;
        q->prev = q->next = -1;
        q->t_first_sched = q->t_first_token = q->t_last_token = q->t_done = -1.0;
    }
    s->run_head = s->run_tail = -1;
    return s;
oom:
    pf_sched_destroy(s);
    snprintf(err, errlen, "out of memory");
    return NULL;
}

void pf_sched_destroy(pf_sched *s)
{
    if (!s)
        return;
    if (s->r)
        for (int i = 0; i < s->n; i++)
            free(s->r[i].table);
    free(s->r);
    free(s->wq);
    free(s->order);
    free(s->sched);
    free(s->tmp);
    free(s->cand);
    pf_pool_destroy(s->pool);
    free(s);
}

void pf_sched_on_event(pf_sched *s, pf_sched_event_fn fn, void *ctx)
{
    if (!s)
        return;
    s->ev = fn;
    s->ev_ctx = ctx;
}

/* ---- queues and lists --------------------------------------------------------- */

static void wq_push_back(pf_sched *s, int id)
{
    s->wq[(s->wq_head + s->wq_len) % s->n] = id;
    s->wq_len++;
}

static void wq_push_front(pf_sched *s, int id)
{
    s->wq_head = (s->wq_head + s->n - 1) % s->n;
    s->wq[s->wq_head] = id;
    s->wq_len++;
}

static int wq_pop_front(pf_sched *s)
{
    int id = s->wq[s->wq_head];
    s->wq_head = (s->wq_head + 1) % s->n;
    s->wq_len--;
    return id;
}

static void run_append(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    q->prev = s->run_tail;
    q->next = -1;
    if (s->run_tail >= 0)
        s->r[s->run_tail].next = id;
    else
        s->run_head = id;
    s->run_tail = id;
    s->nrun++;
}

static void run_remove(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    if (q->prev >= 0)
        s->r[q->prev].next = q->next;
    else
        s->run_head = q->next;
    if (q->next >= 0)
        s->r[q->next].prev = q->prev;
    else
        s->run_tail = q->prev;
    q->prev = q->next = -1;
    s->nrun--;
}

/* ---- frames ------------------------------------------------------------------- */

static int blocks_for(const pf_sched *s, int64_t tokens)
{
    int64_t b = (tokens + s->p.block_size - 1) / s->p.block_size;
    return b > INT_MAX ? INT_MAX : (int)b;
}

int pf_sched_free_frames(const pf_sched *s)
{
    return pf_pool_free_count(s->pool);
}

static int ensure_cap(int32_t **a, int32_t *cap, int need)
{
    if (need <= *cap)
        return PF_OK;
    int c = *cap ? *cap : 4;
    while (c < need)
        c = c > INT_MAX / 2 ? need : c * 2;
    int32_t *t = realloc(*a, (size_t)c * sizeof **a);
    if (!t)
        return PF_ERR_NOMEM;
    *a = t;
    *cap = c;
    return PF_OK;
}

/* Append k new frames to request id's table. PF_ERR_NOMEM when the pool
 * (or host memory for the table) is short; nothing is taken then. */
static int take_frames(pf_sched *s, int id, int k)
{
    if (k <= 0)
        return PF_OK;
    pf_req *q = &s->r[id];
    if (ensure_cap(&q->table, &q->cap, q->nframes + k) != PF_OK)
        return PF_ERR_NOMEM;
    int rc = pf_pool_alloc_n(s->pool, id, k, q->table + q->nframes);
    if (rc != PF_OK)
        return rc;
    q->nframes += k;
    return PF_OK;
}

/* Every frame of id back to the pool; the table's memory too (a request
 * holds a table only while it holds frames). */
static int drop_frames(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    int n = q->nframes;
    for (int k = 0; k < n; k++)
        (void)pf_pool_free(s->pool, id, q->table[k]);
    free(q->table);
    q->table = NULL;
    q->nframes = q->cap = 0;
    return n;
}

/* ---- preemption ---------------------------------------------------------------- */

/* The victim among the running requests (the faulting one is `faulting`). */
static int pick_victim(pf_sched *s, int faulting)
{
    if (s->p.victim == PF_VICTIM_NEWEST)
        return s->run_tail;
    if (s->p.victim == PF_VICTIM_FAULTING)
        return faulting >= 0 ? faulting : s->run_tail;
    if (s->cand_cap < s->nrun) {
        pf_victim_cand *c = realloc(s->cand, (size_t)s->nrun * sizeof *c);
        if (!c)
            return s->run_tail; /* degrade to vLLM's choice rather than fail */
        s->cand = c;
        s->cand_cap = s->nrun;
    }
    int m = 0, fidx = -1;
    for (int id = s->run_head; id >= 0; id = s->r[id].next) {
        const pf_req *q = &s->r[id];
        if (id == faulting)
            fidx = m;
        s->cand[m++] = (pf_victim_cand){id, q->generated, q->nframes, q->priority, q->admit_order};
    }
    int k = pf_policy_pick_victim(s->p.victim, s->cand, m, fidx);
    return k >= 0 ? s->cand[k].id : s->run_tail;
}

/* Preempt running request v: swap its KV to the host when the mode and the
 * host pool allow, else drop it to be recomputed. Either way it leaves the
 * running list for the head of the waiting queue. Its tokens scheduled in
 * this step, if any, go back to *budget. */
static void preempt(pf_sched *s, int v, int *budget)
{
    pf_req *q = &s->r[v];
    if (q->sched_tokens > 0) {
        /* out of this step's batch: its tokens go back to the budget */
        *budget += q->sched_tokens;
        q->sched_tokens = 0;
        for (int i = 0; i < s->nsched; i++)
            if (s->sched[i] == v) {
                s->sched[i] = s->sched[--s->nsched];
                break;
            }
    }
    /* ping-pong: preempted again soon after a readmission */
    if (q->preemptions > 0 && s->step - q->admit_step <= s->p.pingpong_window)
        emit(s, PF_SCHED_EV_PINGPONG, v, 0);
    q->preemptions++;
    s->step_preempted++;
    run_remove(s, v);
    int frames = q->nframes;
    pf_preempt_mode how = pf_policy_preempt_how(s->p.preempt, s->p.swap_host_blocks - s->host_used,
                                                frames);
    if (how == PF_PREEMPT_SWAP) {
        s->host_used += frames;
        q->host_frames = frames;
        drop_frames(s, v);
        q->state = PF_REQ_SWAPPED;
        s->batch.swap_out_frames += frames;
        emit(s, PF_SCHED_EV_SWAP_OUT, v, frames);
    } else {
        drop_frames(s, v);
        q->computed = 0;
        q->state = PF_REQ_WAITING;
        emit(s, PF_SCHED_EV_PREEMPT, v, frames);
    }
    q->stalled = 0;
    wq_push_front(s, v);
}

/* ---- the step ------------------------------------------------------------------- */

static int64_t req_tokens(const pf_req *q)
{
    return (int64_t)q->prompt + q->generated;
}

/* A request arrives: to the waiting queue, or aborted if even an empty pool
 * could never hold it whole. */
static void arrive(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    int64_t final = (int64_t)q->prompt + q->output;
    int need = s->p.paged ? blocks_for(s, final)
                          : blocks_for(s, pf_sched_naive_tokens(s->p.reserve, (int)final,
                                                                s->p.max_seq_len));
    if (need > s->pool_frames) {
        q->state = PF_REQ_ABORTED;
        s->ended++;
        emit(s, PF_SCHED_EV_ABORT, id, need);
        return;
    }
    q->state = PF_REQ_WAITING;
    wq_push_back(s, id);
}

static void arrivals(pf_sched *s)
{
    while (s->next_arrival < s->n && s->r[s->next_arrival].arrival <= s->now)
        arrive(s, s->next_arrival++);
}

/* Tokens request q asks for in this step, before the budget. */
static int want_tokens(const pf_req *q)
{
    int64_t w = req_tokens(q) - q->computed;
    return w < 1 ? 1 : w > INT_MAX ? INT_MAX : (int)w;
}

/* Frames request q must add to compute `n` more tokens. Naive reservations
 * cover the whole request at admission, so they never add any. */
static int frames_needed(const pf_sched *s, const pf_req *q, int n)
{
    int need = blocks_for(s, (int64_t)q->computed + n) - q->nframes;
    return need > 0 ? need : 0;
}

static void schedule(pf_sched *s, int id, int n, int *budget)
{
    pf_req *q = &s->r[id];
    q->sched_tokens = n;
    *budget -= n;
    s->sched[s->nsched++] = id;
    if (q->t_first_sched < 0)
        q->t_first_sched = s->now;
}

/* Step 2 for one running request. Returns 0 to go on with the next, 1 when
 * the running pass must stop (vLLM: the request preempted itself). */
static int schedule_running(pf_sched *s, int id, int *budget)
{
    pf_req *q = &s->r[id];
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int n = want_tokens(q);
    if (vllm && n > *budget)
        n = *budget;
    if (n <= 0)
        return 0;
    int need = frames_needed(s, q, n);
    if (vllm) {
        while (need > pf_sched_free_frames(s)) {
            int v = pick_victim(s, id);
            preempt(s, v, budget);
            if (v == id)
                return 1;
        }
    } else if (need > pf_sched_free_frames(s)) {
        q->stalled++;
        if (pf_policy_on_fault(q->stalled, s->p.stall_limit, 0) == PF_FAULT_PREEMPT) {
            int v = pick_victim(s, id);
            preempt(s, v, budget);
            if (v == id)
                return 0;
        }
        if (need > pf_sched_free_frames(s)) {
            if (q->state != PF_REQ_STALLED)
                emit(s, PF_SCHED_EV_STALL, id, q->nframes);
            q->state = PF_REQ_STALLED;
            return 0;
        }
    }
    if (take_frames(s, id, need) != PF_OK)
        return 0; /* host memory for the table: try again next step */
    q->state = PF_REQ_RUNNING;
    q->stalled = 0;
    schedule(s, id, n, budget);
    return 0;
}

/* Step 3 for the head of the queue. Returns 1 if it was admitted (or
 * aborted), 0 if it must wait (and blocks the queue). */
static int admit_head(pf_sched *s, int *budget)
{
    int id = s->wq[s->wq_head];
    pf_req *q = &s->r[id];
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int swapped = q->state == PF_REQ_SWAPPED;
    int returning = swapped || q->preemptions > 0;
    int n = want_tokens(q);
    if (vllm && n > *budget)
        n = *budget;
    int need;
    if (!s->p.paged) {
        int64_t final = (int64_t)q->prompt + q->output;
        need = blocks_for(s, pf_sched_naive_tokens(s->p.reserve, (int)final, s->p.max_seq_len));
    } else {
        /* a swapped request brings its frames back, then grows as usual */
        int had = swapped ? q->host_frames : 0;
        need = blocks_for(s, (int64_t)q->computed + n);
        if (need < had)
            need = had;
    }
    int reserve = returning || !s->p.paged ? 0 : pf_pool_reserve_for(s->pool_frames, s->p.watermark);
    if (need > s->pool_frames - reserve) {
        /* even an empty pool could not take it under this reserve */
        wq_pop_front(s);
        q->state = PF_REQ_ABORTED;
        s->ended++;
        emit(s, PF_SCHED_EV_ABORT, id, need);
        return 1;
    }
    if (pf_sched_free_frames(s) - need < reserve)
        return 0;
    if (take_frames(s, id, need) != PF_OK)
        return 0;
    wq_pop_front(s);
    if (swapped) {
        s->host_used -= q->host_frames;
        s->batch.swap_in_frames += q->host_frames;
        emit(s, PF_SCHED_EV_SWAP_IN, id, q->host_frames);
        q->host_frames = 0;
    } else {
        emit(s, PF_SCHED_EV_ADMIT, id, need);
    }
    q->state = PF_REQ_RUNNING;
    q->admit_order = s->admit_counter++;
    q->admit_step = s->step;
    run_append(s, id);
    schedule(s, id, n, budget);
    return 1;
}

/* Step 5 for one scheduled request at the step's end t. */
static void land(pf_sched *s, int id, double t)
{
    pf_req *q = &s->r[id];
    q->computed += q->sched_tokens;
    q->sched_tokens = 0;
    if (q->computed > q->computed_max)
        q->computed_max = q->computed;
    if (q->computed < req_tokens(q))
        return; /* a prefill chunk: more to come */
    q->generated++;
    if (q->t_first_token < 0) {
        q->t_first_token = t;
        emit(s, PF_SCHED_EV_FIRST_TOKEN, id, 0);
    }
    q->t_last_token = t;
    if (q->generated < q->output)
        return;
    run_remove(s, id);
    int freed = drop_frames(s, id);
    q->state = PF_REQ_DONE;
    q->t_done = t;
    s->ended++;
    emit(s, PF_SCHED_EV_FINISH, id, freed);
}

/* The batch's work, from the scheduled requests before they land. */
static void measure(pf_sched *s)
{
    pf_sched_batch *b = &s->batch;
    for (int i = 0; i < s->nsched; i++) {
        const pf_req *q = &s->r[s->sched[i]];
        int n = q->sched_tokens;
        if (n <= 0 || q->state != PF_REQ_RUNNING)
            continue;
        int64_t tokens = req_tokens(q);
        if (n == 1 && q->computed == tokens - 1)
            b->decode_tokens++;
        else {
            b->prefill_tokens += n;
            /* positions computed before a recompute preemption are computed
             * again: that part of the prefill is wasted work */
            int64_t lo = q->computed, hi = (int64_t)q->computed + n;
            if (lo < q->computed_max)
                b->recompute_tokens += (hi < q->computed_max ? hi : q->computed_max) - lo;
        }
        b->kv_read_tokens += (int64_t)q->computed + n;
        b->attn_pairs += (double)n * ((double)q->computed + (n + 1) / 2.0);
        b->scheduled++;
    }
}

static double step_cost(pf_sched *s, const pf_sched_batch *b)
{
    if (!s->cost)
        return 1.0;
    double c = s->cost(s->cost_ctx, b);
    return c >= 0.0 && isfinite(c) ? c : 0.0;
}

/* Seed rules, a step in which every running request stalled and nothing
 * else happened: the next stall_limit - stalled - 1 steps would be the same,
 * so take them at once. */
static void skip_stalls(pf_sched *s)
{
    int64_t k = INT64_MAX;
    for (int id = s->run_head; id >= 0; id = s->r[id].next) {
        const pf_req *q = &s->r[id];
        if (q->state != PF_REQ_STALLED)
            return;
        int64_t left = (int64_t)s->p.stall_limit - q->stalled; /* steps until > limit */
        if (left < k)
            k = left;
    }
    if (k <= 0 || k == INT64_MAX)
        return;
    /* arrivals in between would change the picture: stop short of them */
    pf_sched_batch empty = {0};
    double dt = step_cost(s, &empty);
    if (s->next_arrival < s->n && dt > 0.0) {
        double until = s->r[s->next_arrival].arrival - s->now;
        int64_t fit = (int64_t)floor(until / dt);
        if (fit < k)
            k = fit;
    }
    if (k <= 0)
        return;
    for (int id = s->run_head; id >= 0; id = s->r[id].next)
        s->r[id].stalled += (int32_t)k;
    s->step += k;
    s->now += dt * (double)k;
}

int pf_sched_step(pf_sched *s)
{
    if (!s)
        return PF_ERR_ARG;
    if (s->ended == s->n)
        return 1;
    arrivals(s);
    if (s->nrun == 0 && s->wq_len == 0) {
        /* idle: nothing can happen before the next arrival */
        if (s->next_arrival >= s->n)
            return s->ended == s->n ? 1 : PF_ERR_ARG;
        s->now = s->r[s->next_arrival].arrival;
        arrivals(s);
    }
    memset(&s->batch, 0, sizeof s->batch);
    s->nsched = 0;
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int budget = vllm ? s->p.max_num_batched_tokens : INT_MAX;
    s->step_preempted = 0;

    /* 2. running, oldest first (a snapshot of the order: victims leave the
     * list while we walk it) */
    int m = 0;
    for (int id = s->run_head; id >= 0; id = s->r[id].next)
        s->order[m++] = id;
    for (int i = 0; i < m && budget > 0; i++) {
        int id = s->order[i];
        if (s->r[id].state != PF_REQ_RUNNING && s->r[id].state != PF_REQ_STALLED)
            continue; /* preempted earlier in this step */
        if (schedule_running(s, id, &budget))
            break;
    }
    int preempted = s->step_preempted > 0;

    /* 3. waiting, FCFS */
    if (!(vllm && preempted)) {
        while (s->wq_len > 0 && budget > 0 && s->nrun < s->p.max_num_seqs)
            if (!admit_head(s, &budget))
                break;
    }

    /* 4. time */
    measure(s);
    if (s->nsched == 0 && !preempted && s->nrun > 0 && !vllm)
        skip_stalls(s);
    double dt = step_cost(s, &s->batch);
    double t = s->now + dt;

    /* 5. tokens land */
    for (int i = 0; i < s->nsched; i++) {
        int id = s->sched[i];
        if (s->r[id].state == PF_REQ_RUNNING && s->r[id].sched_tokens > 0)
            land(s, id, t);
    }
    s->now = t;
    s->step++;
    if (s->ended == s->n)
        return 1;
    return 0;
}

int pf_sched_run(pf_sched *s)
{
    int rc;
    while ((rc = pf_sched_step(s)) == 0)
        ;
    return rc == 1 ? PF_OK : rc;
}

/* ---- control and reads -------------------------------------------------------- */

int pf_sched_set_watermark(pf_sched *s, double w)
{
    if (!s || !(w >= 0.0 && w <= 1.0))
        return PF_ERR_ARG;
    s->p.watermark = w;
    return PF_OK;
}

int pf_sched_set_max_num_seqs(pf_sched *s, int n)
{
    if (!s || n < 1)
        return PF_ERR_ARG;
    s->p.max_num_seqs = n;
    return PF_OK;
}

int pf_sched_set_victim(pf_sched *s, pf_victim_policy v)
{
    if (!s || (unsigned)v >= PF_VICTIM_COUNT)
        return PF_ERR_ARG;
    s->p.victim = v;
    return PF_OK;
}

double pf_sched_now(const pf_sched *s)
{
    return s->now;
}

int64_t pf_sched_steps(const pf_sched *s)
{
    return s->step;
}

int pf_sched_nreqs(const pf_sched *s)
{
    return s->n;
}

const pf_req *pf_sched_req(const pf_sched *s, int i)
{
    return i >= 0 && i < s->n ? &s->r[i] : NULL;
}

int pf_sched_running(const pf_sched *s)
{
    return s->nrun;
}

int pf_sched_waiting(const pf_sched *s)
{
    return s->wq_len;
}

const pf_sched_batch *pf_sched_last_batch(const pf_sched *s)
{
    return &s->batch;
}

pf_pool *pf_sched_pool(pf_sched *s)
{
    return s->pool;
}

const pf_sched_params *pf_sched_get_params(const pf_sched *s)
{
    return &s->p;
}

int pf_sched_check(pf_sched *s)
{
    int held = 0, nrun = 0;
    for (int i = 0; i < s->n; i++) {
        const pf_req *q = &s->r[i];
        held += q->nframes;
        for (int k = 0; k < q->nframes; k++)
            if (pf_pool_owner(s->pool, q->table[k]) != i)
                return PF_ERR_ARG;
        int running = q->state == PF_REQ_RUNNING || q->state == PF_REQ_STALLED;
        if (running)
            nrun++;
        if (!running && q->nframes != 0)
            return PF_ERR_ARG;
    }
    if (nrun != s->nrun || pf_pool_used_count(s->pool) != held || pf_pool_check(s->pool) != PF_OK)
        return PF_ERR_ARG;
    int host = 0;
    for (int k = 0; k < s->wq_len; k++) {
        const pf_req *q = &s->r[s->wq[(s->wq_head + k) % s->n]];
        if (q->state != PF_REQ_WAITING && q->state != PF_REQ_SWAPPED)
            return PF_ERR_ARG;
        host += q->host_frames;
    }
    return host == s->host_used ? PF_OK : PF_ERR_ARG;
}
