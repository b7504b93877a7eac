/* sim/snapshot.c - statistics and views of a running simulator, for
 * reports and viewers (contract in sim/sim.h).
 *
 * Everything here reads under the simulator's mutex, between steps, so a
 * snapshot is one consistent instant of the run. A snapshot's cost is
 * O(frames + running sequences + events + history); its arrays are kept
 * and reused by the next call, so a viewer's steady state allocates nothing.
 */
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include "core/clock.h"
#include "core/err.h"
#include "sim/sim_internal.h"

static void stats_scalars_locked(pf_sim *s, pf_sim_stats *o);

/* The latency figures of o from a copy of the scheduler's metrics (no lock
 * needed: m is the caller's). */
static void stats_latency(pf_sim_stats *o, const pf_metrics *m)
{
    pf_metrics_summary sum;
    pf_metrics_summarize(m, o->time_s, &sum);
    memcpy(o->lat, sum.lat, sizeof o->lat);
    o->request_throughput = sum.request_throughput;
    o->slo_attainment = sum.slo_attainment;
    o->slo_goodput = sum.slo_goodput;
    o->wait_mean = sum.lat[PF_MET_QUEUE].mean;
    o->wait_p50 = sum.lat[PF_MET_QUEUE].p50;
    o->wait_p99 = sum.lat[PF_MET_QUEUE].p99;
}

void pf_sim__stats_locked(pf_sim *s, pf_sim_stats *o)
{
    stats_scalars_locked(s, o);
    if (s->met && pf_sched_metrics(s->sc, s->met) == PF_OK)
        stats_latency(o, s->met);
}

/* Everything but the latency figures, under mu. */
static void stats_scalars_locked(pf_sim *s, pf_sim_stats *o)
{
    memset(o, 0, sizeof *o);
    pf_sched *sc = s->sc;
    pf_pool *pool = pf_sched_pool(sc);
    int N = s->p.cfg.pool_blocks;
    int64_t steps = pf_sched_steps(sc);
    double t = pf_sched_now(sc);
    pf_prefix_stats ps;
    pf_sched_prefix_stats(sc, &ps);

    o->step = steps;
    o->time_s = t;
    o->njobs = s->njobs;
    o->waiting = pf_sched_waiting(sc) - s->swapped_out;
    o->running = pf_sched_running(sc);
    o->decoding = s->last_decoding;
    o->stalled = s->last_stalled;
    o->swapped_out = s->swapped_out;
    o->admitted = s->admitted;
    o->finished = s->finished;
    o->aborted = s->aborted;
    o->preemptions = s->preemptions;
    o->recomputed_tokens = s->recomputed;
    o->swapped_pages = s->swapped_pages;
    o->pingpongs = s->pingpongs;
    o->tokens_generated = pf_sched_tokens(sc);
    o->tokens_computed = o->tokens_generated + s->recomputed;
    o->goodput = o->tokens_computed > 0 ? (double)o->tokens_generated / (double)o->tokens_computed
                                        : 1.0;
    if (steps > 0) {
        o->decoding_mean = (double)s->sum_decoding / (double)steps;
        o->stalled_mean = (double)s->sum_stalled / (double)steps;
        o->kv_usage_mean = (double)s->sum_used / (double)steps / N;
        o->running_mean = (double)s->sum_running / (double)steps;
        o->waiting_mean = (double)s->sum_waiting / (double)steps;
        o->step_s_mean = t / (double)steps;
    }
    o->seq_steps = s->sum_running;
    o->running_peak = s->running_peak;
    o->pool_used = pf_sim__frames_used(sc);
    o->pool_free = N - o->pool_used;
    o->pool_peak = pf_pool_peak(pool);
    o->kv_usage = (double)o->pool_used / N;
    o->tokens_held = pf_sched_tokens_held(sc);
    o->kv_util = o->pool_used > 0
                     ? (double)o->tokens_held / ((double)o->pool_used * s->p.cfg.block_size)
                     : 0.0;
    o->throughput = t > 0.0 ? (double)o->tokens_generated / t : 0.0;
    double base = pf_sim__baseline_locked(s);
    o->throughput_vs_naive = base > 0.0 && s->p.mode == PF_SIM_PAGED ? o->throughput / base
                             : s->p.mode == PF_SIM_NAIVE ? 1.0 : 0.0;
    o->done = s->done;
    o->livelock = s->livelock;

    o->prefix_queries = ps.queries;
    o->prefix_hits = ps.hits;
    o->prefix_hit_rate = ps.queries > 0 ? (double)ps.hits / (double)ps.queries : 0.0;
    o->prefix_cached = ps.cached;
    o->frames_saved = ps.hits / s->p.cfg.block_size;
    o->split = s->split;
    o->watermark = s->p.watermark;
    o->loadctl_raises = s->lc_raises;
    o->loadctl_lowers = s->lc_lowers;
}

static pf_seq_state view_state(const pf_req *q)
{
    switch (q->state) {
    case PF_REQ_RUNNING:
        if (q->decode)
            return PF_SEQ_DECODING;
        return q->computed_max > q->computed ? PF_SEQ_RECOMPUTING : PF_SEQ_PREFILLING;
    case PF_REQ_STALLED:
        return PF_SEQ_STALLED;
    case PF_REQ_SWAPPED:
        return PF_SEQ_SWAPPED;
    case PF_REQ_DONE:
    case PF_REQ_ABORTED:
        return PF_SEQ_DONE;
    default:
        return PF_SEQ_WAITING;
    }
}

static void seq_view(const pf_req *q, int id, pf_seq_view *v, int shared)
{
    v->id = id;
    v->state = (uint8_t)view_state(q);
    v->prompt = q->prompt;
    v->output = q->output;
    v->generated = q->generated;
    v->frames = q->nframes ? q->nframes : q->host_frames;
    v->preemptions = q->preemptions;
    v->arrival = q->arrival;
    v->admit_step = q->state == PF_REQ_RUNNING || q->state == PF_REQ_STALLED ||
                            q->state == PF_REQ_SWAPPED
                        ? q->admit_step
                        : -1;
    v->admit_time = q->t_first_sched;
    v->ttft = q->t_first_token >= 0.0 ? q->t_first_token - q->arrival : -1.0;
    v->computed = q->computed;
    v->shared_frames = shared;
    v->table_at = -1;
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

/* Sequences a snapshot lists: the running ones and the swapped-out ones;
 * frames the running ones hold. */
static int listed(const pf_sim *s)
{
    return pf_sched_running(s->sc) + s->swapped_out;
}

static int64_t held_frames(const pf_sim *s)
{
    int64_t n = 0;
    int nslots = pf_sched_nslots(s->sc);
    for (int w = 0; w < nslots; w++) {
        int id = pf_sched_slot_req(s->sc, w);
        if (id >= 0)
            n += pf_sched_req(s->sc, id)->nframes;
    }
    return n;
}

/* The running requests of slots [lo, hi) into snap->seqs from *ns and
 * their tables into snap->tab_buf from *at. The requests sit anywhere in a
 * large array: fetch a few slots ahead (both cache lines of a pf_req, and
 * its table), so the misses overlap instead of coming one after another.
 * Returns 1 when the tables outgrow the buffer. */
static int copy_running(pf_sim_snapshot *snap, const int32_t *slots, int lo, int hi,
                        const pf_req *reqs, int *ns, int64_t *at)
{
    enum { AHEAD = 8 };
    for (int w = lo; w < hi; w++) {
        if (w + AHEAD < hi && slots[w + AHEAD] >= 0) {
            const pf_req *qa = &reqs[slots[w + AHEAD]];
            __builtin_prefetch(qa);
            __builtin_prefetch((const char *)qa + 64);
            __builtin_prefetch(qa->table);
        }
        int id = slots[w];
        if (id < 0)
            continue;
        const pf_req *q = &reqs[id];
        if (*at + q->nframes > snap->tab_cap)
            return 1;
        seq_view(q, id, &snap->seqs[*ns], 0);
        snap->seqs[(*ns)++].table_at = *at;
        memcpy(snap->tab_buf + *at, q->table, (size_t)q->nframes * sizeof *q->table);
        *at += q->nframes;
    }
    return 0;
}

/* The same on the crew: pass 0 counts each shard's running requests and
 * frames, the prefix sums place each shard's part, pass 1 copies. The
 * result is the serial copy's, byte for byte (slot order is kept). */
typedef struct {
    pf_sim_snapshot *snap;
    const int32_t *slots;
    const pf_req *reqs;
    int nslots, pass;
    int cnt[PF_CREW_MAX], base[PF_CREW_MAX];
    int64_t frames[PF_CREW_MAX], fbase[PF_CREW_MAX];
} snap_job;

static void snap_shard(void *ctx, int k, int n)
{
    snap_job *j = ctx;
    int lo = (int)((int64_t)j->nslots * k / n), hi = (int)((int64_t)j->nslots * (k + 1) / n);
    if (j->pass == 0) {
        int c = 0;
        int64_t f = 0;
        for (int w = lo; w < hi; w++)
            if (j->slots[w] >= 0) {
                c++;
                f += j->reqs[j->slots[w]].nframes;
            }
        j->cnt[k] = c;
        j->frames[k] = f;
        return;
    }
    int ns = j->base[k];
    int64_t at = j->fbase[k];
    (void)copy_running(j->snap, j->slots, lo, hi, j->reqs, &ns, &at); /* room checked */
}

static int copy_running_on_crew(pf_sim *sim, pf_sim_snapshot *snap, const int32_t *slots,
                                int nslots, const pf_req *reqs, int *ns, int64_t *at)
{
    static _Thread_local snap_job j; /* 24 KB: not on the stack; one per caller thread */
    int n = pf_crew_size(sim->crew);
    j.snap = snap;
    j.slots = slots;
    j.reqs = reqs;
    j.nslots = nslots;
    j.pass = 0;
    pf_crew_run(sim->crew, snap_shard, &j);
    int total = 0;
    int64_t frames = 0;
    for (int k = 0; k < n; k++) {
        j.base[k] = total;
        j.fbase[k] = frames;
        total += j.cnt[k];
        frames += j.frames[k];
    }
    if (total > snap->seqs_cap || frames > snap->tab_cap)
        return 1;
    j.pass = 1;
    pf_crew_run(sim->crew, snap_shard, &j);
    *ns = total;
    *at = frames;
    return 0;
}

/* Under the lock: everything but the frame grid, and each running
 * sequence's block table appended to snap->tab_buf (seqs[i].frames
 * entries each, in seqs order). Returns 0, or 1 when the buffers turned
 * out too small (the caller grows them and tries again). */
static int copy_locked(pf_sim *sim, pf_sim_snapshot *snap)
{
    pf_sched *sc = sim->sc;
    if (listed(sim) > snap->seqs_cap)
        return 1;
    /* the figures; the latency summary is computed after the lock, from
     * a copy of the metrics (the summary's quantile walks are the slow part) */
    stats_scalars_locked(sim, &snap->stats);
    snap->met_ok = pf_sched_metrics_copy(sc, snap->met) == PF_OK;
    snap->params = sim->p;
    snap->paused = sim->paused;
    int nslots;
    const int32_t *slots = pf_sched_slots(sc, &nslots);
    const pf_req *reqs = pf_sched_reqs(sc);
    int ns = 0;
    int64_t at = 0;
    if (sim->crew && pf_sched_running(sc) >= PF_SIM_PARALLEL_MIN) {
        /* the threaded engine's crew is idle while we hold mu: it copies
         * the running sequences shard by shard, so the engine stops for a
         * sixteenth of the copy on sixteen threads */
        int rc = copy_running_on_crew(sim, snap, slots, nslots, reqs, &ns, &at);
        if (rc != 0)
            return rc;
    } else if (copy_running(snap, slots, 0, nslots, reqs, &ns, &at) != 0) {
        return 1; /* the tables outgrew the buffer: grow, again */
    }
    for (int k = 0, found = 0; found < sim->swapped_out && ns < snap->seqs_cap; k++) {
        int id = pf_sched_waiting_at(sc, k);
        if (id < 0)
            break;
        if (pf_sched_req(sc, id)->state == PF_REQ_SWAPPED) {
            seq_view(pf_sched_req(sc, id), id, &snap->seqs[ns++], 0); /* frames: on the host */
            found++;
        }
    }
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
        snap->hist_time[i] = sim->h_time[h];
        snap->hist_tokens[i] = sim->h_tok[h];
        snap->hist_waiting[i] = sim->h_wait[h];
        snap->hist_firsts[i] = sim->h_first[h];
        snap->hist_ttft_sum[i] = sim->h_ttft[h];
    }
    snap->hist_step0 = sim->h_n ? sim->h_step[sim->h_head] : pf_sched_steps(sc);
    int64_t f0 = sim->ft_total > PF_SIM_FIRSTS ? sim->ft_total - PF_SIM_FIRSTS : 0;
    snap->ft_first = f0;
    snap->nft = (int)(sim->ft_total - f0);
    for (int i = 0; i < snap->nft; i++)
        snap->ft[i] = sim->ft[(f0 + i) % PF_SIM_FIRSTS];
    return 0;
}

/* The snapshot's per-frame arrays for the pool's N frames and its metrics
 * block, grown (never shrunk) before any lock is taken. */
static int snap_reserve(pf_sim_snapshot *snap, int N)
{
    if (grow((void **)&snap->frames, &snap->frames_cap, N, sizeof *snap->frames) != PF_OK)
        return PF_ERR_NOMEM;
    int aux_cap = snap->frame_aux_cap;
    if (grow((void **)&snap->frame_seq, &aux_cap, N, sizeof *snap->frame_seq) != PF_OK)
        return PF_ERR_NOMEM;
    aux_cap = snap->frame_aux_cap;
    if (grow((void **)&snap->frame_block, &aux_cap, N, sizeof *snap->frame_block) != PF_OK)
        return PF_ERR_NOMEM;
    snap->frame_aux_cap = aux_cap;
    if (!snap->met && !(snap->met = calloc(1, sizeof *snap->met))) /* zeroed: pf_metrics_copy */
        return PF_ERR_NOMEM;
    return PF_OK;
}

/* The sequences and their tables, copied under mu. Grow outside the lock,
 * then copy under it; the counts may have moved in between: then grow
 * again. A frame is held at most by every running request, but in practice
 * once: start from the pool's size. On PF_OK the caller holds sim->life
 * for reading (the pool may be read after mu is released: a reset, which
 * destroys it, waits for this read lock) and releases it. */
static int snap_copy(pf_sim *sim, pf_sim_snapshot *snap, int N)
{
    pf_sim__lock(sim);
    int want = listed(sim); /* O(1) */
    pthread_mutex_unlock(&sim->mu);
    int64_t want_tab = N;
    for (;;) {
        if (grow((void **)&snap->seqs, &snap->seqs_cap, want > 16 ? want + want / 4 : 16,
                 sizeof *snap->seqs) != PF_OK)
            return PF_ERR_NOMEM;
        if (!snap->tab_buf || snap->tab_cap < want_tab) {
            int64_t c = want_tab > N ? want_tab + want_tab / 4 : N;
            int32_t *t = realloc(snap->tab_buf, (size_t)c * sizeof *t);
            if (!t)
                return PF_ERR_NOMEM;
            snap->tab_buf = t;
            snap->tab_cap = c;
        }
        pf_sim__lock(sim);
        double t0 = pf_clock_s();
        if (!copy_locked(sim, snap)) {
            snap->locked_s = pf_clock_s() - t0;
            pthread_rwlock_rdlock(&sim->life);
            pthread_mutex_unlock(&sim->mu);
            return PF_OK;
        }
        want = listed(sim);
        want_tab = held_frames(sim);
        pthread_mutex_unlock(&sim->mu);
    }
}

/* The frame grid, outside mu (sim->life held), from the copied tables: a
 * frame's first holder in slot order owns it (used up to the computed
 * tokens, reserved past them), a second makes it shared; a frame with a
 * reference and no holder is the prefix cache's. */
static void snap_frame_grid(pf_sim *sim, pf_sim_snapshot *snap, int N)
{
    snap->nframes = N;
    for (int i = 0; i < N; i++) {
        snap->frames[i].owner = -1;
        snap->frames[i].state = PF_FRAME_FREE;
        snap->frame_seq[i] = -1;
        snap->frame_block[i] = -1;
    }
    int B = sim->p0.cfg.block_size;
    int64_t at = 0;
    for (int i = 0; i < snap->nseqs; i++) {
        pf_seq_view *v = &snap->seqs[i];
        if (v->state == PF_SEQ_SWAPPED)
            continue;
        int used = (v->computed + B - 1) / B;
        for (int k = 0; k < v->frames; k++) {
            int f = snap->tab_buf[at + k];
            if (f < 0 || f >= N)
                continue;
            if (snap->frame_seq[f] >= 0) {
                /* a second holder: shared; the first (in slot order) shows */
                if (snap->frames[f].state != PF_FRAME_SHARED) {
                    snap->frames[f].state = PF_FRAME_SHARED;
                    snap->seqs[snap->frame_seq[f]].shared_frames++;
                }
                v->shared_frames++;
                continue;
            }
            snap->frames[f].owner = v->id;
            snap->frames[f].state = k < used ? PF_FRAME_USED : PF_FRAME_RESERVED;
            snap->frame_seq[f] = i;
            snap->frame_block[f] = k;
        }
        at += v->frames;
    }
    /* the pool's counts are atomics, read while the engine runs on */
    const pf_pool *pool = pf_sched_pool(sim->sc);
    for (int f = 0; sim->p0.prefix_caching && f < N; f++)
        if (snap->frame_seq[f] < 0 && pf_pool_refcount(pool, f) > 0)
            snap->frames[f].state = PF_FRAME_CACHED;
}

int pf_sim_take_snapshot(pf_sim *sim, pf_sim_snapshot *snap)
{
    if (!sim || !snap)
        return PF_ERR_ARG;
    int N = sim->p.cfg.pool_blocks; /* immutable */
    int rc = snap_reserve(snap, N);
    if (rc == PF_OK)
        rc = snap_copy(sim, snap, N);
    if (rc != PF_OK)
        return rc;
    if (snap->met_ok)
        stats_latency(&snap->stats, snap->met);
    snap_frame_grid(sim, snap, N);
    pthread_rwlock_unlock(&sim->life);
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
    free(snap->tab_buf);
    free(snap->met);
    snap->met = NULL;
    snap->tab_buf = NULL;
    snap->tab_cap = 0;
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
    pf_sched *sc = sim->sc;
    int B = sim->p.cfg.block_size;
    int n = 0;
    int nslots = pf_sched_nslots(sc);
    for (int w = 0; w < nslots && n < cap; w++) {
        int id = pf_sched_slot_req(sc, w);
        if (id < 0)
            continue;
        const pf_req *q = pf_sched_req(sc, id);
        int tokens = q->computed;
        if (q->nframes == 0 || tokens == 0)
            continue;
        int used = (tokens + B - 1) / B;
        if (used > q->nframes)
            used = q->nframes;
        if (used > max_blocks) {
            used = max_blocks;
            tokens = max_blocks * B;
        }
        lens[n] = tokens;
        for (int k = 0; k < max_blocks; k++)
            tables[(size_t)n * max_blocks + k] = k < used ? q->table[k] : -1;
        n++;
    }
    pthread_mutex_unlock(&sim->mu);
    return n;
}
