/* sim/snapshot.c - statistics, snapshots and block-table layouts for
 * viewers (contract in sim/sim.h).
 *
 * Everything here runs with mu held and only copies: a
 * snapshot of the default pool copies 4096 frame views and at most a few
 * hundred sequence views, a few microseconds, so a viewer calling it 30
 * times a second never holds the workers up for long. Frame states are
 * derived from the sequences' own frame lists, not from a scan of the pool:
 * frame k of a sequence holding t tokens is "used" if k < ceil(t / B),
 * "reserved" beyond (naive's unused reservation), "swapped" while the
 * sequence copies its pages in, and "shared" if the pool counts more than
 * one reference.
 */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "sim/sim_internal.h"

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const int *v, int n, double p)
{
    if (n <= 0)
        return 0.0;
    int k = (int)((p / 100.0) * n + 0.999999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1];
}

/* The waits are few (one per job), so the percentiles are recomputed by
 * sorting a copy, and only when a new wait was recorded. */
static void wait_percentiles(pf_sim *s)
{
    if (s->waits_sorted_n == s->nwaits)
        return;
    int n = s->nwaits;
    int *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return;
    memcpy(v, s->waits, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    s->wait_p50 = pct(v, n, 50.0);
    s->wait_p99 = pct(v, n, 99.0);
    s->waits_sorted_n = n;
    free(v);
}

void pf_sim__stats_locked(pf_sim *s, pf_sim_stats *o)
{
    memset(o, 0, sizeof *o);
    o->step = s->step;
    o->waiting = s->last_waiting;
    o->running = s->last_running;
    o->decoding = s->last_decoding;
    o->stalled = s->last_stalled;
    o->swapped_out = s->last_swapped;
    o->admitted = s->admitted;
    o->finished = s->finished;
    o->preemptions = s->preemptions;
    o->recomputed_tokens = s->recomputed;
    o->swapped_pages = s->swapped_pages;
    o->pingpongs = s->pingpongs;
    o->tokens_generated = s->tokens_gen;
    o->tokens_computed = s->tokens_gen + s->recomputed;
    double steps = s->step > 0 ? (double)s->step : 1.0;
    o->decoding_mean = (double)s->sum_decoding / steps;
    o->stalled_mean = (double)s->sum_stalled / steps;
    int64_t wsum = 0;
    for (int i = 0; i < s->nwaits; i++)
        wsum += s->waits[i];
    o->wait_mean = s->nwaits > 0 ? (double)wsum / s->nwaits : 0.0;
    wait_percentiles(s);
    o->wait_p50 = s->wait_p50;
    o->wait_p99 = s->wait_p99;
    int N = s->p.cfg.pool_blocks;
    o->pool_used = pf_pool_used_count(s->pool);
    o->pool_free = pf_pool_free_count(s->pool);
    o->pool_peak = pf_pool_peak(s->pool); /* exact, not a per-step sample */
    o->kv_usage = (double)o->pool_used / N;
    o->kv_usage_mean = (double)s->sum_used / steps / N;
    o->throughput = s->step > 0 ? (double)s->tokens_gen / (double)s->step : 0.0;
    double base = s->naive_memo[s->workers_target]; /* <= 0: unknown */
    if (s->p.mode == PF_SIM_NAIVE)
        o->throughput_vs_naive = s->step > 0 ? 1.0 : 0.0;
    else
        o->throughput_vs_naive = base > 0.0 ? o->throughput / base : 0.0;
    o->goodput = o->tokens_computed > 0 ? (double)o->tokens_generated / (double)o->tokens_computed : 1.0;
    o->done = s->done;
    o->running_peak = s->running_peak;
    o->seq_steps = s->sum_running;
    o->waiting_mean = (double)s->sum_waiting / steps;
    o->running_mean = (double)s->sum_running / steps;
    o->aborted = s->aborted;
    o->livelock = s->livelock;
    /* Tokens held: every sequence with frames in the pool holds its prompt
     * and generated tokens, at most what its frames can store (a sequence
     * being rebuilt may hold fewer; this is the upper bound). */
    int B = s->p.cfg.block_size;
    int64_t held = 0;
    for (int w = 0; w < s->slot_hi; w++) {
        int id = s->slot_seq[w];
        if (id < 0 || s->seq[id].nframes <= 0)
            continue;
        int64_t t = (int64_t)s->jobs[id].prompt + s->seq[id].generated;
        int64_t cap = (int64_t)s->seq[id].nframes * B;
        held += t < cap ? t : cap;
    }
    o->tokens_held = held;
    o->njobs = s->njobs;
    o->kv_util = o->pool_used > 0 ? (double)held / ((double)o->pool_used * B) : 0.0;
}

static pf_seq_state view_state(uint8_t st)
{
    switch (st) {
    case SQ_DECODING:
        return PF_SEQ_DECODING;
    case SQ_STALLED:
        return PF_SEQ_STALLED;
    case SQ_RECOMPUTING:
        return PF_SEQ_RECOMPUTING;
    case SQ_SWAPIN:
    case SQ_SWAPPED:
        return PF_SEQ_SWAPPED;
    case SQ_DONE:
    case SQ_ABORTED:
        return PF_SEQ_DONE;
    default:
        return PF_SEQ_WAITING;
    }
}

static void seq_view(const pf_sim *s, int id, pf_seq_view *v)
{
    const pf_seqrec *q = &s->seq[id];
    v->id = id;
    v->state = (uint8_t)view_state(q->st);
    v->prompt = s->jobs[id].prompt;
    v->output = s->jobs[id].output;
    v->generated = q->generated;
    v->frames = q->nframes ? q->nframes : q->host_frames;
    v->preemptions = q->preemptions;
    v->arrival = s->jobs[id].arrival;
    v->admit_step = q->st == SQ_PENDING || q->st == SQ_ABORTED || (q->st == SQ_QUEUED && q->preemptions == 0)
                        ? -1
                        : q->admit_step;
}

/* Make *arr hold at least want elements (it keeps what it had when large
 * enough, so a viewer's steady-state snapshots allocate nothing). */
static int grow(void **arr, int *cap, int want, size_t elt)
{
    if (*arr && *cap >= want)
        return PF_OK;
    void *p = realloc(*arr, (size_t)want * elt);
    if (!p)
        return PF_ERR_NOMEM;
    *arr = p;
    *cap = want;
    return PF_OK;
}

int pf_sim_take_snapshot(pf_sim *sim, pf_sim_snapshot *snap)
{
    if (!sim || !snap)
        return PF_ERR_ARG;
    int N = sim->p.cfg.pool_blocks; /* immutable */
    if (grow((void **)&snap->frames, &snap->frames_cap, N, sizeof *snap->frames) != PF_OK)
        return PF_ERR_NOMEM;
    int aux_cap = snap->frame_aux_cap;
    if (grow((void **)&snap->frame_seq, &aux_cap, N, sizeof *snap->frame_seq) != PF_OK)
        return PF_ERR_NOMEM;
    aux_cap = snap->frame_aux_cap;
    if (grow((void **)&snap->frame_block, &aux_cap, N, sizeof *snap->frame_block) != PF_OK)
        return PF_ERR_NOMEM;
    snap->frame_aux_cap = aux_cap;
    /* Sequences shown: those in a worker slot plus those swapped out; at
     * most workers-in-use + njobs, bounded by the slots and the swap queue. */
    pf_sim__lock(sim);
    int want = sim->slot_hi + sim->sqlen;
    pthread_mutex_unlock(&sim->mu);
    for (;;) {
        if (grow((void **)&snap->seqs, &snap->seqs_cap, want > 16 ? want : 16,
                 sizeof *snap->seqs) != PF_OK)
            return PF_ERR_NOMEM;
        pf_sim__lock(sim);
        want = sim->slot_hi + sim->sqlen;
        if (want <= snap->seqs_cap)
            break; /* keep the lock */
        pthread_mutex_unlock(&sim->mu);
    }
    pf_sim__stats_locked(sim, &snap->stats);
    snap->params = sim->p;
    snap->params.workers = sim->workers_target; /* as set (pf_sim_get_params) */
    snap->paused = sim->paused;
    snap->nframes = N;
    for (int i = 0; i < N; i++) {
        snap->frames[i].owner = -1;
        snap->frames[i].state = PF_FRAME_FREE;
        snap->frame_seq[i] = -1;
        snap->frame_block[i] = -1;
    }
    int B = sim->p.cfg.block_size;
    int ns = 0;
    for (int w = 0; w < sim->slot_hi; w++) {
        int id = sim->slot_seq[w];
        if (id < 0)
            continue;
        const pf_seqrec *q = &sim->seq[id];
        int tokens = sim->jobs[id].prompt + q->generated;
        int used = (tokens + B - 1) / B;
        for (int k = 0; k < q->nframes; k++) {
            int f = q->frames[k];
            uint8_t st = k < used ? PF_FRAME_USED : PF_FRAME_RESERVED;
            if (q->st == SQ_SWAPIN)
                st = PF_FRAME_SWAPPED;
            else if (pf_pool_refcount(sim->pool, f) > 1)
                st = PF_FRAME_SHARED;
            snap->frames[f].owner = id;
            snap->frames[f].state = st;
            snap->frame_seq[f] = ns;
            snap->frame_block[f] = k;
        }
        seq_view(sim, id, &snap->seqs[ns++]);
    }
    for (int i = 0; i < sim->sqlen; i++)
        seq_view(sim, sim->sq[(sim->sqhead + i) % sim->njobs], &snap->seqs[ns++]);
    snap->nseqs = ns;
    snap->nevents = sim->ev_n;
    for (int i = 0; i < sim->ev_n; i++)
        snap->events[i] = sim->ev[(sim->ev_head + i) % PF_SIM_EVENTS];
    snap->nhistory = sim->h_n;
    for (int i = 0; i < sim->h_n; i++) {
        int h = (sim->h_head + i) % PF_SIM_HISTORY;
        snap->hist_decoding[i] = sim->h_dec[h];
        snap->hist_stalled[i] = sim->h_stall[h];
        snap->hist_preempt[i] = sim->h_pre[h];
        snap->hist_usage[i] = sim->h_use[h];
    }
    snap->hist_step0 = sim->step - sim->h_n;
    pthread_mutex_unlock(&sim->mu);
    return PF_OK;
}

void pf_sim_snapshot_free(pf_sim_snapshot *snap)
{
    if (!snap)
        return;
    free(snap->frames);
    free(snap->seqs);
    free(snap->frame_seq);
    free(snap->frame_block);
    snap->frames = NULL;
    snap->seqs = NULL;
    snap->frame_seq = snap->frame_block = NULL;
    snap->frames_cap = snap->seqs_cap = snap->frame_aux_cap = 0;
    snap->nframes = snap->nseqs = 0;
}

int pf_sim_layout(pf_sim *sim, int cap, int max_blocks, int *lens, int *tables)
{
    if (!sim || cap < 0 || max_blocks < 1 || (cap > 0 && (!lens || !tables)))
        return PF_ERR_ARG;
    pf_sim__lock(sim);
    int B = sim->p.cfg.block_size;
    int n = 0;
    for (int w = 0; w < sim->slot_hi && n < cap; w++) {
        int id = sim->slot_seq[w];
        if (id < 0)
            continue;
        const pf_seqrec *q = &sim->seq[id];
        if (q->nframes == 0 || q->st == SQ_SWAPIN)
            continue;
        int tokens = sim->jobs[id].prompt + q->generated;
        int used = (tokens + B - 1) / B;
        if (used > q->nframes)
            used = q->nframes;
        if (used > max_blocks) {
            used = max_blocks;
            tokens = max_blocks * B;
        }
        lens[n] = tokens;
        for (int k = 0; k < max_blocks; k++)
            tables[(size_t)n * max_blocks + k] = k < used ? q->frames[k] : -1;
        n++;
    }
    pthread_mutex_unlock(&sim->mu);
    return n;
}
