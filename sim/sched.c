/* sim/sched.c - the scheduler core (contract in sim/sched.h).
 *
 * State. Requests live in one array, in arrival order. The waiting queue is
 * a ring of request ids: arrivals join its tail, preempted requests its head
 * (they were admitted before everything still waiting, so FCFS puts them
 * first, as vLLM's waiting.prepend_request does). A running request sits in
 * a slot (the engines shard the slots among threads) and on two doubly
 * linked lists in admission order: every running request (so "the newest"
 * is the tail and a finished request leaves in O(1)), and the prefilling
 * ones (running but asking for more than one token).
 *
 * A step, in the order vLLM's Scheduler.schedule() takes it:
 *
 *   1. Arrivals whose time has come join the waiting queue.
 *   2. Running requests, oldest first, each ask for the tokens they have not
 *      computed: one for a decoding request, the rest of its prompt (and of
 *      its regenerated output, after a recompute preemption) for a
 *      prefilling one, capped by what is left of the token budget (vLLM
 *      rules; the seed's have no budget). The frames those tokens need must
 *      be free. When the pool is short:
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
 *   5. Every scheduled request's tokens land at the step's end: its frames
 *      are taken, and a request whose computed tokens caught up with its
 *      length samples one token (the last chunk of a prefill samples too, as
 *      in vLLM); one that has all its output finishes and frees its frames.
 *
 * The fast plan. Step 2 is a walk of every running request, the one part of
 * a step that is serial by nature. But in the common case its outcome is
 * known without the walk: when the decoding requests (one token each) plus
 * what the prefilling ones ask for fit the budget, and the frames all of
 * them need fit the free frames, every running request simply gets what it
 * asks for, in any order. The counts that test needs (decoding requests,
 * their context, those whose next token opens a frame) are summed by step 5
 * of the previous step, shard by shard. Then step 2 costs O(prefilling
 * requests), the decoding ones are scheduled implicitly, and step 5 does
 * their work in parallel. Otherwise (the budget or the frames bind) the walk
 * runs as described, in admission order, and the outcome is the same as
 * vLLM's.
 *
 * Frames are promised in steps 2 and 3 (a count against the exact free
 * count: nothing else allocates during planning) and taken in step 5, where
 * the engines' threads contend on the pool for them.
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
#include "sim/policy.h"


#define PF_SCHED_MAX_SHARDS 4096

/* Request flags set by land for commit. */
enum { F_FIRST = 1, F_DONE = 2, F_TO_DECODE = 4, F_BLOCKS = 8 };

/* A run of n equal inter-token gaps. */
typedef struct {
    double gap;
    uint64_t n;
} itl_run;

/* What one shard's landing leaves for commit. */
typedef struct {
    int ndec;          /* running requests now decoding               */
    int nbound;        /* ... whose next token needs a new frame      */
    int64_t ctx;       /* ... sum of their computed tokens            */
    int64_t tokens;    /* output tokens sampled                       */
    int nstalled;      /* running requests stalled in this step       */
    int64_t held, resv, waste; /* Figure 2 split of the running
                                  requests' frames (pf_sched_kv_split)  */
    int64_t own;       /* tokens held, a shared block counted once    */
    int err;           /* a table could not grow (host memory)        */
    int nnote, cap;    /* requests with something for commit          */
    int32_t *note;     /* their ids, in slot order                    */
    int lost;          /* note could not grow (host memory): commit
                          finds them by their flags in the shard's
                          slots instead                               */
    itl_run *runs;     /* inter-token gaps landed here, in slot order,
                          as runs of equal gaps (itl_note)            */
    int nruns, runcap;
    pf_pool_cache *cache; /* the landing thread's frames (core/pool.h) */
} shard_out;

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
    pf_sched_block_fn bev;
    void *bev_ctx;

    double now, t_end; /* t_end: the planned step's end                 */
    int64_t step, fast_steps;
    int next_arrival;
    int ended; /* done + aborted */

    int *wq; /* waiting ring, capacity n */
    int wq_head, wq_len;
    int run_head, run_tail, nrun;
    int pre_head, pre_tail; /* prefilling requests, admission order     */
    int64_t admit_counter;
    int host_used;

    /* slots: slot_req[0, nslots) with free ones on a stack */
    int32_t *slot_req;
    int nslots, slot_cap;
    int32_t *slot_free;
    int nfree_slots;

    /* totals landed by the last step (exact at plan time) */
    int ndec, nbound;
    int64_t dec_ctx;
    int64_t tokens;
    int nstalled;
    int64_t kv_held, kv_resv, kv_waste, kv_own;

    /* the planned step */
    int implicit;     /* decoding requests scheduled without a walk      */
    int pending;      /* frames promised, not taken yet                  */
    int *sched;       /* explicitly scheduled ids, [n]                   */
    int nsched;
    int step_preempted;
    int *order;       /* running ids at step start (the walk), [n]      */
    pf_victim_cand *cand;
    int cand_cap;
    pf_sched_batch batch;

    shard_out *shard;
    int nshards;
    pf_metrics metrics; /* finished requests (commit)                  */

    pf_prefix *pc;    /* the prefix cache, NULL when caching is off      */
    uint64_t *hbuf;   /* admission scratch: block hashes, frames         */
    int32_t *fbuf;
    int hcap;
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

static void emit(pf_sched *s, pf_sched_ev e, int id, int a)
{
    if (s->ev)
        s->ev(s->ev_ctx, e, id, a);
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
    if ((unsigned)p->reserve > PF_RESERVE_ORACLE)
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
    if (p->swap_host_blocks < 0 || p->stall_limit < 0 || p->pingpong_window < 0)
        BAD("swap blocks, stall limit and ping-pong window must be >= 0");
    if (p->stall_limit > PF_SCHED_STALL_LIMIT_MAX)
        BAD("stall limit must be at most %d, got %d", PF_SCHED_STALL_LIMIT_MAX, p->stall_limit);
    if (pool_frames < 1)
        BAD("the pool needs at least one frame, got %d", pool_frames);
    if (!(p->slo_ttft_s >= 0.0 && p->slo_tpot_s >= 0.0) || isinf(p->slo_ttft_s) ||
        isinf(p->slo_tpot_s))
        BAD("SLO targets must be finite and >= 0");
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
            snprintf(err, errlen,
                     "request %d: prompt %d + output %d must be >= 1 each and fit %d tokens, "
                     "arriving at a finite time >= 0",
                     i, j->prompt, j->output, p->max_seq_len);
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
    if (!s->r || !s->wq || !s->order || !s->sched || !s->pool ||
        pf_sched_set_shards(s, 1) != PF_OK)
        goto oom;
    if (pf_metrics_init(&s->metrics, p->slo_ttft_s, p->slo_tpot_s) != PF_OK) {
        pf_sched_destroy(s);
        snprintf(err, errlen, "SLO targets must be finite and >= 0");
        return NULL;
    }
    if (p->prefix_caching && p->paged && pf_prefix_create(&s->pc, pool_frames, p->block_size) != PF_OK)
        goto oom;
    for (int i = 0; i < n; i++) {
        pf_req *q = &s->r[i];
        q->arrival = jobs[i].arrival;
        q->prompt = jobs[i].prompt;
        q->output = jobs[i].output;
        q->priority = jobs[i].priority;
        q->group = jobs[i].group;
        q->shared_tokens = jobs[i].shared_tokens;
        q->fork_of = jobs[i].fork_of > 0 && jobs[i].fork_of <= i ? jobs[i].fork_of : 0;
        q->sample = jobs[i].sample;
        q->last_hash = PF_PREFIX_ROOT_HASH;
        q->state = PF_REQ_PENDING;
        q->slot = q->prev = q->next = q->pprev = q->pnext = -1;
        q->t_first_sched = q->t_first_token = q->t_last_token = q->t_done = -1.0;
    }
    s->run_head = s->run_tail = s->pre_head = s->pre_tail = -1;
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
    for (int k = 0; k < s->nshards; k++) {
        free(s->shard[k].note);
        free(s->shard[k].runs);
        pf_pool_cache_free(s->shard[k].cache);
    }
    free(s->shard);
    pf_prefix_destroy(s->pc);
    free(s->hbuf);
    free(s->fbuf);
    free(s->r);
    free(s->wq);
    free(s->order);
    free(s->sched);
    free(s->slot_req);
    free(s->slot_free);
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

void pf_sched_on_block(pf_sched *s, pf_sched_block_fn fn, void *ctx)
{
    if (!s)
        return;
    s->bev = fn;
    s->bev_ctx = ctx;
}

int pf_sched_set_shards(pf_sched *s, int nshards)
{
    if (!s || nshards < 1 || nshards > PF_SCHED_MAX_SHARDS)
        return PF_ERR_ARG;
    if (nshards > s->nshards) {
        shard_out *t = realloc(s->shard, (size_t)nshards * sizeof *t);
        if (!t)
            return PF_ERR_NOMEM;
        memset(t + s->nshards, 0, (size_t)(nshards - s->nshards) * sizeof *t);
        s->shard = t;
        for (int k = s->nshards; k < nshards; k++) {
            t[k].cache = pf_pool_cache_new(s->pool);
            if (!t[k].cache) {
                for (int j = s->nshards; j < k; j++) {
                    pf_pool_cache_free(t[j].cache);
                    t[j].cache = NULL;
                }
                return PF_ERR_NOMEM;
            }
        }
    } else {
        /* (commit folded every shard's gaps in already) */
        for (int k = nshards; k < s->nshards; k++) {
            free(s->shard[k].runs);
            free(s->shard[k].note);
            pf_pool_cache_free(s->shard[k].cache); /* its frames to the depot */
            memset(&s->shard[k], 0, sizeof s->shard[k]);
        }
    }
    s->nshards = nshards;
    return PF_OK;
}

int pf_sched_shards(const pf_sched *s)
{
    return s ? s->nshards : 0;
}

/* ---- queues, lists, slots ----------------------------------------------------- */

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

/* The two admission-ordered lists share one pair of helpers: `pre` picks
 * the prefilling list's links and ends. */
static void list_append(pf_sched *s, int id, int pre)
{
    pf_req *q = &s->r[id];
    int *head = pre ? &s->pre_head : &s->run_head, *tail = pre ? &s->pre_tail : &s->run_tail;
    int32_t *prev = pre ? &q->pprev : &q->prev, *next = pre ? &q->pnext : &q->next;
    *prev = *tail;
    *next = -1;
    if (*tail >= 0) {
        if (pre)
            s->r[*tail].pnext = id;
        else
            s->r[*tail].next = id;
    } else {
        *head = id;
    }
    *tail = id;
}

static void list_remove(pf_sched *s, int id, int pre)
{
    pf_req *q = &s->r[id];
    int *head = pre ? &s->pre_head : &s->run_head, *tail = pre ? &s->pre_tail : &s->run_tail;
    int32_t *prev = pre ? &q->pprev : &q->prev, *next = pre ? &q->pnext : &q->next;
    if (*prev >= 0) {
        if (pre)
            s->r[*prev].pnext = *next;
        else
            s->r[*prev].next = *next;
    } else {
        *head = *next;
    }
    if (*next >= 0) {
        if (pre)
            s->r[*next].pprev = *prev;
        else
            s->r[*next].prev = *prev;
    } else {
        *tail = *prev;
    }
    *prev = *next = -1;
}

/* A slot for a newly running request: the most recently freed one, else a
 * new one past the end (deterministic either way). */
static int slot_take(pf_sched *s, int id)
{
    int k;
    if (s->nfree_slots > 0) {
        k = s->slot_free[--s->nfree_slots];
    } else {
        if (s->nslots == s->slot_cap) {
            int c = s->slot_cap ? s->slot_cap * 2 : 64;
            int32_t *a = realloc(s->slot_req, (size_t)c * sizeof *a);
            if (!a)
                return PF_ERR_NOMEM;
            s->slot_req = a;
            int32_t *f = realloc(s->slot_free, (size_t)c * sizeof *f);
            if (!f)
                return PF_ERR_NOMEM;
            s->slot_free = f;
            s->slot_cap = c;
        }
        k = s->nslots++;
    }
    s->slot_req[k] = id;
    s->r[id].slot = k;
    return k;
}

static void slot_release(pf_sched *s, int id)
{
    int k = s->r[id].slot;
    if (k < 0)
        return;
    s->slot_req[k] = -1;
    s->slot_free[s->nfree_slots++] = k;
    s->r[id].slot = -1;
}

/* ---- frames ------------------------------------------------------------------- */

static int blocks_for(const pf_sched *s, int64_t tokens)
{
    int64_t b = (tokens + s->p.block_size - 1) / s->p.block_size;
    return b > INT_MAX ? INT_MAX : (int)b;
}

/* Frames a decision may count on: free in the pool and not promised yet,
 * plus cached blocks nobody references (evicted when they are needed). */
static int evictable(const pf_sched *s)
{
    if (!s->pc)
        return 0;
    pf_prefix_stats st;
    pf_prefix_get_stats(s->pc, &st);
    return st.evictable;
}

int pf_sched_free_frames(const pf_sched *s)
{
    return pf_pool_free_count(s->pool) - s->pending + evictable(s);
}

static pf_token_src token_src(const pf_sched *s, int id)
{
    const pf_req *q = &s->r[id];
    pf_token_src t = {s->p.token_seed, q->fork_of ? q->fork_of - 1 : id, q->group, q->shared_tokens, q->prompt,
                      q->sample};
    return t;
}

static int64_t req_tokens(const pf_req *q)
{
    return (int64_t)q->prompt + q->generated;
}

/* Tokens request q asks for in this step, before the budget. */
static int want_tokens(const pf_req *q)
{
    int64_t w = req_tokens(q) - q->computed;
    return w < 1 ? 1 : w > INT_MAX ? INT_MAX : (int)w;
}

/* Frames request q must add to compute n more tokens. A request admitted
 * and not yet landed has a hold (its naive reservation, its swapped-in
 * frames): it takes all of it at its first landing, so its need is at
 * least what the hold lacks. The hold lasts until a landing takes it, so
 * a landing that fails leaves the request asking for the same frames at
 * the next step; after that naive reservations cover the whole request
 * and never add any. */
static int frames_needed(const pf_sched *s, const pf_req *q, int n)
{
    int held = q->hold - q->nframes; /* < 0 when no hold is pending */
    int64_t tokens = (int64_t)q->computed + n;
    if (tokens <= (int64_t)q->nframes * s->p.block_size)
        return held > 0 ? held : 0; /* the common case, a decode inside its last frame */
    int need = blocks_for(s, tokens) - q->nframes;
    if (held > need)
        need = held;
    return need > 0 ? need : 0;
}

/* Room for `need` entries in q's block table. 1 on success. */
static int table_grow(pf_req *q, int need)
{
    if (need <= q->cap)
        return 1;
    int c = q->cap ? q->cap : 4;
    while (c < need)
        c = c > INT_MAX / 2 ? need : c * 2;
    int32_t *t = realloc(q->table, (size_t)c * sizeof *t);
    if (!t)
        return 0;
    q->table = t;
    q->cap = c;
    return 1;
}

/* Every frame of id released, and the table's memory (a request holds a
 * table only while it holds frames). Without prefix caching its frames go
 * back to the pool at once, through the caller's cache. With it, each
 * frame the prefix cache tracks loses this request's reference, last block
 * first (vLLM's order, so a request's tail is evicted before its shared
 * head): still held by others, or kept cached (the cache takes over the
 * pool reference), or freed; a frame only this request knew is freed. */
static int drop_frames(pf_sched *s, int id, pf_pool_cache *cache)
{
    pf_req *q = &s->r[id];
    int n = q->nframes;
    if (!s->pc) {
        (void)pf_pool_free_n_c(cache, id, q->table, n);
    } else {
        for (int k = n - 1; k >= 0; k--) {
            int32_t f = q->table[k];
            int r = pf_prefix_refcount(s->pc, f) > 0 ? pf_prefix_unref(s->pc, f) : PF_PREFIX_FREE;
            if (r != PF_PREFIX_CACHED)
                (void)pf_pool_unref_c(cache, f);
        }
    }
    free(q->table);
    q->table = NULL;
    q->nframes = q->cap = 0;
    q->hit_blocks = 0;
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

/* A running request leaves: lists, slot, and the landed totals it was
 * counted in (the walk keeps those exact for the fast plan of the next
 * step only through land, so here only the running count changes). */
static void leave_running(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    list_remove(s, id, 0);
    if (!q->decode)
        list_remove(s, id, 1);
    slot_release(s, id);
    s->nrun--;
}

/* Preempt running request v: swap its KV to the host when the mode and the
 * host pool allow, else drop it to be recomputed. Either way it leaves the
 * running list for the head of the waiting queue. What it was promised in
 * this step goes back (tokens to the budget, frames to the free count). */
static void preempt(pf_sched *s, int v, int64_t *budget)
{
    pf_req *q = &s->r[v];
    if (q->sched_tokens > 0) {
        *budget += q->sched_tokens;
        s->pending -= frames_needed(s, q, q->sched_tokens);
        q->sched_tokens = 0;
        q->hold = 0;
        for (int i = 0; i < s->nsched; i++)
            if (s->sched[i] == v) {
                s->sched[i] = s->sched[--s->nsched];
                break;
            }
    }
    if (q->preemptions > 0 && s->step - q->admit_step <= s->p.pingpong_window)
        emit(s, PF_SCHED_EV_PINGPONG, v, 0);
    q->preemptions++;
    s->step_preempted++;
    leave_running(s, v);
    int frames = q->nframes;
    pf_preempt_mode how = pf_policy_preempt_how(s->p.preempt, s->p.swap_host_blocks - s->host_used,
                                                frames);
    drop_frames(s, v, s->shard[0].cache);
    if (how == PF_PREEMPT_SWAP) {
        s->host_used += frames;
        q->host_frames = frames;
        q->state = PF_REQ_SWAPPED;
        s->batch.swap_out_frames += frames;
        emit(s, PF_SCHED_EV_SWAP_OUT, v, frames);
    } else {
        q->computed = 0;
        q->state = PF_REQ_WAITING;
        emit(s, PF_SCHED_EV_PREEMPT, v, frames);
    }
    q->decode = 0;
    q->stalled = 0;
    wq_push_front(s, v);
}

/* ---- plan ------------------------------------------------------------------------ */

/* A request arrives: to the waiting queue, or aborted if even an empty pool
 * could never hold it whole. */
static void arrive(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    int64_t final = (int64_t)q->prompt + q->output;
    /* Paged, the KV a request ever holds is final - 1 tokens: its last
     * output token is sampled, never computed (land_one ends it there), so
     * a request whose prompt + output - 1 tokens fill the pool exactly
     * still fits it. A naive reservation is its policy's size. */
    int need = s->p.paged ? blocks_for(s, final - 1)
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

/* Schedule n tokens of running request id explicitly; its frames promised. */
static void schedule(pf_sched *s, int id, int n, int64_t *budget)
{
    pf_req *q = &s->r[id];
    s->pending += frames_needed(s, q, n);
    q->sched_tokens = n;
    *budget -= n;
    s->sched[s->nsched++] = id;
    if (q->t_first_sched < 0)
        q->t_first_sched = s->now;
}

/* Step 2 for one running request, walking. Returns 1 when the walk must
 * stop (vLLM: the request preempted itself), else 0. */
static int walk_one(pf_sched *s, int id, int64_t *budget)
{
    pf_req *q = &s->r[id];
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int n = want_tokens(q);
    if (vllm && n > *budget)
        n = (int)*budget;
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
        if (pf_policy_on_fault(q->stalled, s->p.stall_limit) == PF_FAULT_PREEMPT) {
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
    q->state = PF_REQ_RUNNING;
    q->stalled = 0;
    schedule(s, id, n, budget);
    return 0;
}

/* The fast plan (see the top of the file): returns 1 if it applied. */
static int plan_fast(pf_sched *s, int64_t *budget)
{
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int64_t want = s->ndec;
    int64_t frames = s->nbound;
    for (int id = s->pre_head; id >= 0; id = s->r[id].pnext) {
        const pf_req *q = &s->r[id];
        int w = want_tokens(q);
        want += w;
        frames += frames_needed(s, q, w);
    }
    if ((vllm && want > *budget) || frames > pf_sched_free_frames(s))
        return 0;
    for (int id = s->pre_head; id >= 0; id = s->r[id].pnext) {
        pf_req *q = &s->r[id];
        q->state = PF_REQ_RUNNING;
        q->stalled = 0;
        schedule(s, id, want_tokens(q), budget);
    }
    *budget -= s->ndec;
    s->pending += s->nbound;
    s->implicit = 1;
    s->fast_steps++;
    return 1;
}

/* The longest cached prefix of request id's tokens: its frames into
 * s->fbuf, their hashes into s->hbuf; *idle gets how many of them nobody
 * references (they stop counting as free once taken). The chain is hashed
 * block by block and the walk stops at the first miss, so a head that
 * waits many steps costs O(hits) a step, not O(its length). As in vLLM the
 * last token is always computed: at most (tokens - 1) / B blocks match. */
static int prefix_lookup(pf_sched *s, int id, int *idle)
{
    const pf_req *q = &s->r[id];
    int B = s->p.block_size;
    int64_t max = (req_tokens(q) - 1) / B;
    pf_token_src src = token_src(s, id);
    uint64_t h = PF_PREFIX_ROOT_HASH;
    int k = 0;
    *idle = 0;
    for (; k < max; k++) {
        h = pf_prefix_hash_src(&src, h, k, B);
        int32_t f = pf_prefix_find(s->pc, h);
        if (f < 0)
            break;
        if (k == s->hcap) {
            int c = s->hcap ? s->hcap * 2 : 64;
            uint64_t *hb = realloc(s->hbuf, (size_t)c * sizeof *hb);
            if (!hb)
                break;
            s->hbuf = hb;
            int32_t *fb = realloc(s->fbuf, (size_t)c * sizeof *fb);
            if (!fb)
                break;
            s->fbuf = fb;
            s->hcap = c;
        }
        s->hbuf[k] = h;
        s->fbuf[k] = f;
        *idle += pf_prefix_refcount(s->pc, f) == 0;
    }
    return k;
}

/* Evict `shortfall` idle cached blocks (least recently released first) so
 * that their frames are back in the pool. */
static void evict_for(pf_sched *s, int shortfall)
{
    for (; shortfall > 0; shortfall--) {
        uint64_t h = 0;
        int32_t f = pf_prefix_evict_hash(s->pc, &h);
        if (f < 0)
            break;
        (void)pf_pool_unref_c(s->shard[0].cache, f);
        if (s->bev) {
            pf_sched_block_event e = {PF_SCHED_BLOCK_REMOVED, h, 0, f, -1, -1};
            s->bev(s->bev_ctx, &e);
        }
    }
}

static int take_frames(pf_sched *s, int id, int k, pf_pool_cache *cache);
static void offer_blocks(pf_sched *s, int id, int64_t tokens);

/* An admitted request's frames, taken at once (in plan, not land) and the
 * full blocks this step fills offered to the prefix cache now: vLLM V1
 * caches a request's full blocks when it allocates them
 * (KVCacheManager.allocate_slots -> cache_blocks), so a request admitted
 * later in the same step - a sample of --n, a request of the same system
 * prompt - finds them and shares them. Only with prefix caching: without
 * it nothing can hit, and land takes the frames on the shards' threads. */
static void admit_now(pf_sched *s, int id, int n)
{
    pf_req *q = &s->r[id];
    int k = q->hold - q->nframes;
    if (k > 0) {
        int short_by = k - pf_pool_free_count(s->pool);
        if (short_by > 0)
            evict_for(s, short_by);
        if (take_frames(s, id, k, s->shard[0].cache) != PF_OK)
            return; /* land takes them (and offers the blocks at commit) */
        s->pending -= k;
    }
    offer_blocks(s, id, (int64_t)q->computed + n);
}

/* The frames an admitted request holds: naive, its whole reservation;
 * paged, the blocks of its `tokens` (its cached prefix or computed tokens
 * and its first chunk), and a swapped request at least the frames it
 * brings back from the host. */
static int admit_need(const pf_sched *s, const pf_req *q, int64_t tokens, int swapped)
{
    if (!s->p.paged) {
        int64_t final = (int64_t)q->prompt + q->output;
        return blocks_for(s, pf_sched_naive_tokens(s->p.reserve, (int)final, s->p.max_seq_len));
    }
    int need = blocks_for(s, tokens);
    return swapped && need < q->host_frames ? q->host_frames : need;
}

/* A request's first `hits` blocks found in the prefix cache (their frames
 * in s->fbuf, hashes in s->hbuf) become its table's head: each hit frame
 * gains this request as a holder, a pool reference more, except for an
 * idle cached block, whose reference (the cache's) this request takes
 * over. Its computed tokens start after them. */
static void admit_hits(pf_sched *s, pf_req *q, int hits)
{
    for (int k = 0; k < hits; k++)
        if (pf_prefix_refcount(s->pc, s->fbuf[k]) > 0)
            (void)pf_pool_share(s->pool, s->fbuf[k]);
    (void)pf_prefix_acquire(s->pc, s->fbuf, hits, req_tokens(q));
    memcpy(q->table, s->fbuf, (size_t)hits * sizeof *q->table);
    q->nframes = hits;
    q->computed = (int32_t)((int64_t)hits * s->p.block_size);
    q->hashed = hits;
    q->hit_blocks = hits;
    q->last_hash = s->hbuf[hits - 1];
}

/* Step 3 for the head of the queue. Returns 1 if it was admitted (or
 * aborted), 0 if it must wait (and blocks the queue). */
static int admit_head(pf_sched *s, int64_t *budget)
{
    int id = s->wq[s->wq_head];
    pf_req *q = &s->r[id];
    int vllm = s->p.rules == PF_SCHED_VLLM;
    int swapped = q->state == PF_REQ_SWAPPED;
    int returning = swapped || q->preemptions > 0;
    /* cached blocks are taken, not computed: the first chunk starts after */
    int hits = 0, idle = 0;
    if (s->pc && !swapped && q->computed == 0)
        hits = prefix_lookup(s, id, &idle);
    int64_t base = (int64_t)hits * s->p.block_size;
    int64_t left = req_tokens(q) - (hits ? base : q->computed);
    int n = left > INT_MAX ? INT_MAX : (int)left;
    if (vllm && n > *budget)
        n = (int)*budget;
    const int need = admit_need(s, q, (hits ? base : q->computed) + n, swapped);
    int reserve = returning || !s->p.paged ? 0 : pf_pool_reserve_for(s->pool_frames, s->p.watermark);
    if (need > s->pool_frames - reserve) {
        /* even an empty pool could not take it under this reserve */
        wq_pop_front(s);
        q->state = PF_REQ_ABORTED;
        s->ended++;
        emit(s, PF_SCHED_EV_ABORT, id, need);
        return 1;
    }
    if (pf_sched_free_frames(s) - idle - (need - hits) < reserve)
        return 0;
    if (hits > 0 && !table_grow(q, hits))
        return 0; /* host memory: try again next step */
    if (slot_take(s, id) < 0)
        return 0;
    wq_pop_front(s);
    if (hits > 0)
        admit_hits(s, q, hits);
    else if (s->pc && !swapped && q->computed == 0) {
        (void)pf_prefix_acquire(s->pc, NULL, 0, req_tokens(q)); /* a query that missed */
        q->hashed = 0;
        q->last_hash = PF_PREFIX_ROOT_HASH;
    }
    if (swapped) {
        s->host_used -= q->host_frames;
        s->batch.swap_in_frames += q->host_frames;
        emit(s, PF_SCHED_EV_SWAP_IN, id, q->host_frames);
        q->host_frames = 0;
    } else {
        emit(s, PF_SCHED_EV_ADMIT, id, need);
    }
    q->state = PF_REQ_RUNNING;
    q->decode = 0;
    q->admit_order = s->admit_counter++;
    q->admit_step = s->step;
    list_append(s, id, 0);
    list_append(s, id, 1);
    s->nrun++;
    /* a naive reservation or swapped-in frames can exceed what the first
     * chunk needs: promise all of `need` but the hits it holds already */
    s->pending += need - hits;
    q->hold = need;
    q->sched_tokens = n;
    if (s->pc && !swapped)
        admit_now(s, id, n);
    *budget -= n;
    s->sched[s->nsched++] = id;
    if (q->t_first_sched < 0)
        q->t_first_sched = s->now;
    return 1;
}

/* The batch's work, from what was scheduled (before it lands). */
static void measure(pf_sched *s)
{
    pf_sched_batch *b = &s->batch;
    pf_cost_batch *w = &b->work;
    if (s->implicit && s->ndec > 0) {
        /* pf_cost_batch_add_decode for each decoding request, summed */
        w->seqs += s->ndec;
        w->decode_tokens += s->ndec;
        w->logit_tokens += s->ndec;
        w->kv_read_tokens += s->dec_ctx + s->ndec;
        w->kv_write_tokens += s->ndec;
        w->attn_pairs += (double)(s->dec_ctx + s->ndec);
    }
    for (int i = 0; i < s->nsched; i++) {
        const pf_req *q = &s->r[s->sched[i]];
        int n = q->sched_tokens;
        if (n <= 0)
            continue;
        int64_t tokens = req_tokens(q);
        if (n == 1 && q->computed == tokens - 1) {
            pf_cost_batch_add_decode(w, q->computed);
            continue;
        }
        pf_cost_batch_add_prefill(w, q->computed, n, q->computed + n >= tokens);
        /* positions computed before a recompute preemption are computed
         * again: that part of the prefill is wasted work */
        int64_t lo = q->computed, hi = (int64_t)q->computed + n;
        if (lo < q->computed_max)
            b->recompute_tokens += (hi < q->computed_max ? hi : q->computed_max) - lo;
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
 * else happened: the next stall_limit - stalled steps would be the same, so
 * take them at once, stopping short of the next arrival: the step that
 * takes the arrival in must not be one of them, so at most ceil(q) - 1 for
 * q = (arrival - now) / dt (floor(q) skipped one step too many when q was
 * whole, and the arrival came a step late: the review of the twenty-
 * seventh session). q is compared as a double first: an arrival 1e300 s
 * away overflowed the conversion to int64_t. */
static void skip_stalls(pf_sched *s)
{
    int64_t k = INT64_MAX;
    for (int id = s->run_head; id >= 0; id = s->r[id].next) {
        const pf_req *q = &s->r[id];
        if (q->state != PF_REQ_STALLED)
            return;
        int64_t left = (int64_t)s->p.stall_limit - q->stalled;
        if (left < k)
            k = left;
    }
    if (k <= 0 || k == INT64_MAX)
        return;
    pf_sched_batch empty;
    memset(&empty, 0, sizeof empty);
    double dt = step_cost(s, &empty);
    if (s->next_arrival < s->n && dt > 0.0) {
        double q = (s->r[s->next_arrival].arrival - s->now) / dt;
        if (q < (double)k)
            k = (int64_t)ceil(q) - 1;
    }
    if (k <= 0)
        return;
    for (int id = s->run_head; id >= 0; id = s->r[id].next)
        s->r[id].stalled += (int32_t)k;
    s->step += k;
    s->now += dt * (double)k;
}

int pf_sched_plan(pf_sched *s)
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
        if (s->ended == s->n)
            return 1;
    }
    memset(&s->batch, 0, sizeof s->batch);
    s->nsched = 0;
    s->implicit = 0;
    s->pending = 0;
    s->step_preempted = 0;
    int vllm = s->p.rules == PF_SCHED_VLLM;
    /* The seed's rules have no budget: 64 bits, so that no step's prompts
     * (up to pool x block size tokens, past 2^31 on a large pool of large
     * blocks) ever exhaust it */
    int64_t budget = vllm ? s->p.max_num_batched_tokens : INT64_MAX;

    /* 2. running requests: the fast plan, else the walk in admission order
     * (a copy of the order: victims leave the list during the walk) */
    if (s->p.always_walk || !plan_fast(s, &budget)) {
        int m = 0;
        for (int id = s->run_head; id >= 0; id = s->r[id].next)
            s->order[m++] = id;
        for (int i = 0; i < m && budget > 0; i++) {
            int id = s->order[i];
            if (s->r[id].slot < 0)
                continue; /* preempted earlier in this walk */
            if (walk_one(s, id, &budget))
                break;
        }
    }

    /* 3. waiting requests, FCFS */
    if (!(vllm && s->step_preempted > 0))
        while (s->wq_len > 0 && budget > 0 && s->nrun < s->p.max_num_seqs)
            if (!admit_head(s, &budget))
                break;

    /* frames promised beyond the pool's free ones come from idle cached
     * blocks, least recently released first: evict them now, so that
     * landing (on any thread) finds the frames in the pool */
    if (s->pc)
        evict_for(s, s->pending - pf_pool_free_count(s->pool));

    /* 4. time */
    measure(s);
    if (s->nsched == 0 && !s->implicit && s->step_preempted == 0 && s->nrun > 0 && !vllm)
        skip_stalls(s);
    s->t_end = s->now + step_cost(s, &s->batch);
    return 0;
}

/* ---- land ------------------------------------------------------------------------ */

int pf_sched_nslots(const pf_sched *s)
{
    return s->nslots;
}

static int note(shard_out *o, int id)
{
    if (o->nnote == o->cap) {
        int c = o->cap ? o->cap * 2 : 64;
        int32_t *t = realloc(o->note, (size_t)c * sizeof *t);
        if (!t)
            return PF_ERR_NOMEM;
        o->note = t;
        o->cap = c;
    }
    o->note[o->nnote++] = id;
    return PF_OK;
}

/* Take k frames for request id through the landing thread's cache
 * (promised in plan, so the pool has them). */
static int take_frames(pf_sched *s, int id, int k, pf_pool_cache *cache)
{
    pf_req *q = &s->r[id];
    if (k <= 0)
        return PF_OK;
    if (!table_grow(q, q->nframes + k))
        return PF_ERR_NOMEM;
    int rc = pf_pool_alloc_n_c(cache, id, k, q->table + q->nframes);
    if (rc != PF_OK)
        return rc;
    q->nframes += k;
    return PF_OK;
}

/* Inter-token gaps, by runs. The requests that decoded in the previous
 * step too all see the same gap (the step's duration), so a shard keeps
 * runs of equal gaps in slot order, and commit folds every shard's runs
 * into the metrics in shard order, joining a run that crosses a shard
 * boundary: the metrics get the same (gap, count) additions, in the same
 * order, whatever the number of shards, so even the floating-point sum of
 * the gaps is the same to the bit; and a step of a thousand decodes costs
 * one histogram update, not a thousand. */
static void itl_note(shard_out *o, double gap)
{
    if (o->nruns > 0 && o->runs[o->nruns - 1].gap == gap) {
        o->runs[o->nruns - 1].n++;
        return;
    }
    if (o->nruns == o->runcap) {
        int c = o->runcap ? o->runcap * 2 : 16;
        itl_run *r = realloc(o->runs, (size_t)c * sizeof *r);
        if (!r) {
            o->err = PF_ERR_NOMEM;
            return;
        }
        o->runs = r;
        o->runcap = c;
    }
    o->runs[o->nruns++] = (itl_run){gap, 1};
}

/* Commit: every shard's runs into the metrics (see itl_note). */
static void itl_fold(pf_sched *s)
{
    itl_run cur = {0.0, 0};
    for (int k = 0; k < s->nshards; k++) {
        shard_out *o = &s->shard[k];
        for (int i = 0; i < o->nruns; i++) {
            if (cur.n > 0 && o->runs[i].gap == cur.gap) {
                cur.n += o->runs[i].n;
                continue;
            }
            if (cur.n > 0)
                (void)pf_metrics_add_itl(&s->metrics, cur.gap, cur.n);
            cur = o->runs[i];
        }
        o->nruns = 0;
    }
    if (cur.n > 0)
        (void)pf_metrics_add_itl(&s->metrics, cur.gap, cur.n);
}

/* One running request's tokens land at t; o gets its totals. */
static void land_one(pf_sched *s, int id, shard_out *o, double t)
{
    pf_req *q = &s->r[id];
    int n = q->sched_tokens;
    if (n == 0 && s->implicit && q->decode)
        n = 1;
    q->sched_tokens = 0;
    if (n > 0) {
        if (take_frames(s, id, frames_needed(s, q, n), o->cache) != PF_OK) {
            /* nothing landed: the request stays as it was, its hold too
             * (the next landing takes it), and so must the totals the next
             * fast plan trusts (a decoding request left out of them would
             * be landed without its token or its frame promised) */
            o->err = PF_ERR_NOMEM;
            goto totals;
        }
        q->hold = 0;
        int was_decode = q->decode;
        q->state = PF_REQ_RUNNING; /* it ran: no longer stalled */
        q->stalled = 0;
        q->computed += n;
        if (q->computed > q->computed_max)
            q->computed_max = q->computed;
        if (s->pc && q->computed / s->p.block_size > q->hashed)
            q->flags |= F_BLOCKS; /* commit offers them to the prefix cache */
        if (q->computed >= req_tokens(q)) {
            q->generated++;
            o->tokens++;
            if (q->t_first_token < 0) {
                q->t_first_token = t;
                q->flags |= F_FIRST;
            } else {
                itl_note(o, t - q->t_last_token);
            }
            q->t_last_token = t;
            if (q->generated >= q->output) {
                if (!s->pc) /* with a prefix cache, commit releases them */
                    drop_frames(s, id, o->cache);
                q->flags |= F_DONE;
                q->t_done = t;
                if (note(o, id) != PF_OK)
                    o->lost = 1;
                return;
            }
        }
        q->decode = req_tokens(q) - q->computed == 1;
        if (q->decode && !was_decode)
            q->flags |= F_TO_DECODE;
        if (q->flags & (F_FIRST | F_TO_DECODE | F_BLOCKS))
            if (note(o, id) != PF_OK)
                o->lost = 1;
    }
totals:
    if (q->decode) {
        o->ndec++;
        o->ctx += q->computed;
        o->nbound += q->computed + 1 > (int64_t)q->nframes * s->p.block_size;
    }
}

/* Figure 2 of the PagedAttention paper for one running request after its
 * tokens landed (core/memory.h): of the R = frames x B slots it holds, C
 * hold tokens, min(R, F) - C will hold tokens it has yet to produce (F its
 * final length) and the rest never will. A naive reservation and a paged
 * table are both whole frames, so one formula serves both modes. */
static void split_add(const pf_sched *s, const pf_req *q, shard_out *o)
{
    if (q->flags & F_DONE)
        return; /* finished: its frames are being released */
    if (q->state == PF_REQ_STALLED)
        o->nstalled++;
    int64_t c = q->computed, f = (int64_t)q->prompt + q->output;
    int64_t r = (int64_t)q->nframes * s->p.block_size;
    if (c > r) /* swapped back in, its frames not landed yet (a landing
                * failed): its KV is on the host, none of it in the pool */
        c = r;
    int64_t m = r < f ? r : f;
    o->held += c;
    o->resv += m - c;
    o->waste += r - m;
    /* blocks it found in the prefix cache are counted by their filler */
    o->own += c - (int64_t)q->hit_blocks * s->p.block_size;
}

int64_t pf_sched_tokens_held(const pf_sched *s)
{
    return s->kv_own;
}

void pf_sched_kv_split(const pf_sched *s, int64_t *held, int64_t *reserved, int64_t *internal)
{
    *held = s->kv_held;
    *reserved = s->kv_resv;
    *internal = s->kv_waste;
}

int pf_sched_stalled(const pf_sched *s)
{
    return s->nstalled;
}

void pf_sched_prefix_stats(const pf_sched *s, pf_prefix_stats *out)
{
    memset(out, 0, sizeof *out);
    if (s && s->pc)
        pf_prefix_get_stats(s->pc, out);
}

int pf_sched_token_src(const pf_sched *s, int i, pf_token_src *out)
{
    if (!s || !out || i < 0 || i >= s->n)
        return PF_ERR_ARG;
    *out = token_src(s, i);
    return PF_OK;
}

/* Shard k's slots, [*lo, *hi): land walks them, and commit again when the
 * shard's note list fell short. */
static void shard_slots(const pf_sched *s, int k, int64_t *lo, int64_t *hi)
{
    *lo = (int64_t)s->nslots * k / s->nshards;
    *hi = (int64_t)s->nslots * (k + 1) / s->nshards;
}

void pf_sched_land(pf_sched *s, int shard)
{
    if (!s || shard < 0 || shard >= s->nshards)
        return;
    /* The totals are summed in a local copy and written back once: the
     * shards' records sit side by side, and counters bumped in place by
     * every thread would bounce their cache lines between cores. */
    shard_out *dst = &s->shard[shard];
    shard_out o = *dst;
    o.ndec = o.nbound = o.nstalled = 0;
    o.ctx = o.tokens = o.held = o.resv = o.waste = o.own = 0;
    o.nnote = 0;
    o.nruns = 0;
    o.err = PF_OK;
    o.lost = 0;
    int64_t lo, hi;
    shard_slots(s, shard, &lo, &hi);
    double t = s->t_end;
    for (int64_t k = lo; k < hi; k++) {
        int id = s->slot_req[k];
        if (id >= 0) {
            land_one(s, id, &o, t);
            split_add(s, &s->r[id], &o);
        }
    }
    *dst = o;
}

/* ---- commit ---------------------------------------------------------------------- */

/* Offer request id's newly filled blocks to the prefix cache, in order.
 * A hash already cached under another frame leaves this one the request's
 * own (vLLM keeps the first copy). */
static void offer_blocks(pf_sched *s, int id, int64_t tokens)
{
    pf_req *q = &s->r[id];
    int64_t f64 = tokens / s->p.block_size;
    int full = f64 > INT_MAX ? INT_MAX : (int)f64;
    if (full > q->nframes)
        full = q->nframes;
    pf_token_src src = token_src(s, id);
    for (int b = q->hashed; b < full; b++) {
        uint64_t h = pf_prefix_hash_src(&src, q->last_hash, b, s->p.block_size);
        if (pf_prefix_insert(s->pc, h, q->table[b]) == 1 && s->bev) {
            pf_sched_block_event e = {PF_SCHED_BLOCK_STORED, h, q->last_hash, q->table[b], id, b};
            s->bev(s->bev_ctx, &e);
        }
        q->last_hash = h;
    }
    q->hashed = full;
}

/* What land left for commit about request id (its flags), done. */
static void commit_one(pf_sched *s, int id)
{
    pf_req *q = &s->r[id];
    if (q->flags & F_BLOCKS)
        offer_blocks(s, id, q->computed);
    if (q->flags & F_TO_DECODE)
        list_remove(s, id, 1);
    if (q->flags & F_FIRST)
        emit(s, PF_SCHED_EV_FIRST_TOKEN, id, 0);
    if (q->flags & F_DONE) {
        int was_decode = q->decode || (q->flags & F_TO_DECODE);
        list_remove(s, id, 0);
        if (!was_decode)
            list_remove(s, id, 1);
        if (s->pc)
            drop_frames(s, id, s->shard[0].cache);
        slot_release(s, id);
        s->nrun--;
        q->state = PF_REQ_DONE;
        q->decode = 0;
        s->ended++;
        pf_request_times rt = {q->arrival, q->t_first_sched, q->t_first_token, q->t_done,
                               q->prompt, q->output};
        (void)pf_metrics_add_request(&s->metrics, &rt);
        emit(s, PF_SCHED_EV_FINISH, id, 0);
    }
    q->flags = 0;
}

int pf_sched_commit(pf_sched *s)
{
    if (!s)
        return PF_ERR_ARG;
    int err = PF_OK;
    s->ndec = s->nbound = s->nstalled = 0;
    s->dec_ctx = s->kv_held = s->kv_resv = s->kv_waste = s->kv_own = 0;
    itl_fold(s);
    for (int k = 0; k < s->nshards; k++) {
        shard_out *o = &s->shard[k];
        s->nstalled += o->nstalled;
        s->kv_held += o->held;
        s->kv_resv += o->resv;
        s->kv_waste += o->waste;
        s->kv_own += o->own;
        s->ndec += o->ndec;
        s->nbound += o->nbound;
        s->dec_ctx += o->ctx;
        s->tokens += o->tokens;
        if (o->err)
            err = o->err;
        if (o->lost) {
            /* the note list is short of some (it could not grow): every
             * request land flagged is in the shard's slots, in the same
             * (slot) order, so nothing is lost, a finish least of all (a
             * finished request left running would be landed again: a
             * token past its output, frames never promised) */
            int64_t lo, hi;
            shard_slots(s, k, &lo, &hi);
            for (int64_t w = lo; w < hi; w++) {
                int id = s->slot_req[w];
                if (id >= 0 && s->r[id].flags)
                    commit_one(s, id);
            }
            o->lost = 0;
        } else {
            for (int i = 0; i < o->nnote; i++)
                commit_one(s, o->note[i]);
        }
        o->nnote = 0;
    }
    s->pending = 0;
    s->now = s->t_end;
    s->step++;
    if (err)
        return err;
    return s->ended == s->n ? 1 : 0;
}

int pf_sched_step(pf_sched *s)
{
    int rc = pf_sched_plan(s);
    if (rc != 0)
        return rc;
    for (int k = 0; k < s->nshards; k++)
        pf_sched_land(s, k);
    return pf_sched_commit(s);
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

int pf_sched_set_preempt(pf_sched *s, pf_preempt_mode m)
{
    if (!s || (unsigned)m >= PF_PREEMPT_COUNT)
        return PF_ERR_ARG;
    s->p.preempt = m;
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

int64_t pf_sched_fast_steps(const pf_sched *s)
{
    return s->fast_steps;
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

const int32_t *pf_sched_slots(const pf_sched *s, int *n)
{
    *n = s->nslots;
    return s->slot_req;
}

const pf_req *pf_sched_reqs(const pf_sched *s)
{
    return s->r;
}

int pf_sched_slot_req(const pf_sched *s, int slot)
{
    return slot >= 0 && slot < s->nslots ? s->slot_req[slot] : -1;
}

int pf_sched_waiting_at(const pf_sched *s, int k)
{
    return k >= 0 && k < s->wq_len ? s->wq[(s->wq_head + k) % s->n] : -1;
}

int pf_sched_waiting(const pf_sched *s)
{
    return s->wq_len;
}

const pf_sched_batch *pf_sched_last_batch(const pf_sched *s)
{
    return &s->batch;
}

int64_t pf_sched_tokens(const pf_sched *s)
{
    return s->tokens;
}

int pf_sched_metrics(const pf_sched *s, pf_metrics *out)
{
    if (!s || !out)
        return PF_ERR_ARG;
    *out = s->metrics;
    return PF_OK;
}

int pf_sched_metrics_copy(const pf_sched *s, pf_metrics *out)
{
    if (!s || !out)
        return PF_ERR_ARG;
    pf_metrics_copy(out, &s->metrics);
    return PF_OK;
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
    int nrun = 0, npre = 0, ndec = 0, nbound = 0, rc = PF_OK;
    int64_t ctx = 0;
    /* holders of every frame, from the block tables */
    int32_t *holders = calloc((size_t)s->pool_frames, sizeof *holders);
    if (!holders)
        return PF_ERR_NOMEM;
#define FAIL()                                                                                     \
    do {                                                                                           \
        rc = PF_ERR_ARG;                                                                           \
        goto out;                                                                                  \
    } while (0)
    for (int i = 0; i < s->n; i++) {
        const pf_req *q = &s->r[i];
        for (int k = 0; k < q->nframes; k++) {
            int32_t f = q->table[k];
            if (f < 0 || f >= s->pool_frames)
                FAIL();
            /* a frame is the request's own, or a block the prefix cache shares */
            if (pf_pool_owner(s->pool, f) != i && !(s->pc && pf_prefix_refcount(s->pc, f) > 0))
                FAIL();
            holders[f]++;
        }
        int running = q->state == PF_REQ_RUNNING || q->state == PF_REQ_STALLED;
        if (running != (q->slot >= 0))
            FAIL();
        if (running) {
            nrun++;
            if (s->slot_req[q->slot] != i)
                FAIL();
            if (q->decode) {
                ndec++;
                ctx += q->computed;
                nbound += q->computed + 1 > (int64_t)q->nframes * s->p.block_size;
            } else {
                npre++;
            }
        } else if (q->nframes != 0 || q->decode) {
            FAIL();
        }
    }
    /* the pool's reference counts mirror the holders; an idle cached block
     * is held by the cache alone */
    int used = 0;
    for (int f = 0; f < s->pool_frames; f++) {
        int idle = s->pc && pf_prefix_is_cached(s->pc, f) && pf_prefix_refcount(s->pc, f) == 0;
        int want = holders[f] + idle;
        if (idle && holders[f] != 0)
            FAIL();
        if (pf_pool_refcount(s->pool, f) != want)
            FAIL();
        used += want > 0;
    }
    int listed = 0, plisted = 0;
    for (int id = s->run_head; id >= 0; id = s->r[id].next)
        listed++;
    for (int id = s->pre_head; id >= 0; id = s->r[id].pnext) {
        if (s->r[id].decode)
            FAIL();
        plisted++;
    }
    if (nrun != s->nrun || listed != nrun || plisted != npre)
        FAIL();
    if (ndec != s->ndec || ctx != s->dec_ctx || nbound != s->nbound)
        FAIL();
    if (pf_pool_used_count(s->pool) != used || pf_pool_check(s->pool) != PF_OK)
        FAIL();
    int host = 0;
    for (int k = 0; k < s->wq_len; k++) {
        const pf_req *q = &s->r[s->wq[(s->wq_head + k) % s->n]];
        if (q->state != PF_REQ_WAITING && q->state != PF_REQ_SWAPPED)
            FAIL();
        host += q->host_frames;
    }
    if (host != s->host_used)
        FAIL();
#undef FAIL
out:
    free(holders);
    return rc;
}
