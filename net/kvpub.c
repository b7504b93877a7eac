/* net/kvpub.c - the scheduler's block events as vLLM's KV-event batches
 * (contract in net/kvpub.h). */
#include "net/kvpub.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"

pf_kvpub_config pf_kvpub_config_default(void)
{
    pf_kvpub_config c = {.zpub = pf_zpub_config_default(), .max_blocks = 4096, .max_tokens = 65536};
    return c;
}

/* The queue is three flat arrays reused from step to step: the events, and
 * pools of hashes and token ids that the events index by offset (pointers are
 * set only at flush, since the pools move when they grow). An event's hashes
 * and tokens are always the last ones in the pools while it is the newest,
 * which is what lets the next block of the same request join it. */
typedef struct {
    uint32_t h0, t0; /* offsets of the event's hashes and token ids */
} qoff;

struct pf_kvpub {
    pf_kvpub_config cfg;
    pf_zpub *zp;
    pf_sched *s;
    int block_size;
    pf_kvev_event *ev;
    uint32_t nev, cap_ev;
    qoff *off;
    uint32_t cap_off;
    pf_kvev_hash *h;
    uint32_t nh, cap_h;
    uint32_t *tok;
    uint32_t nt, cap_t;
    /* the newest event is a BlockStored that the next block may join */
    int can_merge;
    int32_t last_req, last_block;
    uint64_t last_hash;
    int err;          /* first callback error since the last flush */
    uint32_t drop;    /* pf_kvpub_drop_next */
    int stored_since_clear;
    double ts_last;
    pf_kvpub_stats st;
};

int pf_kvpub_open(const pf_kvpub_config *cfg, pf_kvpub **out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = "";
    if (!cfg || !out || cfg->max_blocks < 1 || cfg->max_blocks > pf_kvev_limits_default().max_events ||
        cfg->max_tokens < 1 || cfg->max_tokens > pf_kvev_limits_default().max_tokens) {
        *why = "bad KV-event publisher configuration (batch caps out of range)";
        return PF_ERR_ARG;
    }
    *out = NULL;
    pf_kvpub *k = calloc(1, sizeof *k);
    if (!k)
        return PF_ERR_NOMEM;
    k->cfg = *cfg;
    /* zpub copies what it keeps: do not hold on to the caller's strings */
    k->cfg.zpub.topic = k->cfg.zpub.endpoint = k->cfg.zpub.replay_endpoint = NULL;
    int rc = pf_zpub_open(&cfg->zpub, &k->zp, why);
    if (rc) {
        free(k);
        return rc;
    }
    *out = k;
    return 0;
}

void pf_kvpub_close(pf_kvpub *k)
{
    if (!k)
        return;
    pf_zpub_close(k->zp);
    free(k->ev);
    free(k->off);
    free(k->h);
    free(k->tok);
    free(k);
}

/* Room for `need` elements of size sz in *p (capacity *cap), doubling. */
static int grow(void **p, uint32_t *cap, uint64_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    uint64_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    if (nc > UINT32_MAX)
        return PF_ERR_NOMEM;
    void *np = realloc(*p, (size_t)nc * sz);
    if (!np)
        return PF_ERR_NOMEM;
    *p = np;
    *cap = (uint32_t)nc;
    return 0;
}

static void reset_queue(pf_kvpub *k)
{
    k->nev = k->nh = k->nt = 0;
    k->can_merge = 0;
}

/* Encode and send the queue as one batch; the queue is empty afterwards
 * whatever happens (a batch that failed to send is not retried: it stays in
 * the replay ring when it was encoded, and a subscriber sees a gap). */
static int send_queue(pf_kvpub *k, double ts)
{
    for (uint32_t i = 0; i < k->nev; i++) {
        k->ev[i].hashes = k->ev[i].n_hashes ? k->h + k->off[i].h0 : NULL;
        k->ev[i].token_ids = k->ev[i].n_tokens ? k->tok + k->off[i].t0 : NULL;
    }
    pf_kvev_batch b = {.ts = ts, .events = k->ev, .n_events = k->nev};
    if (k->cfg.zpub.dp_rank > 0) { /* vLLM stamps the rank when it has one */
        b.has_dp_rank = 1;
        b.dp_rank = k->cfg.zpub.dp_rank;
    }
    char *buf = NULL;
    size_t len = 0;
    int rc = pf_kvev_encode(&b, k->cfg.zpub.array_like, &buf, &len);
    if (rc == 0) {
        int flags = 0;
        if (k->drop) {
            k->drop--;
            k->st.dropped++;
            flags = PF_ZPUB_BUFFER_ONLY;
        }
        rc = pf_zpub_publish_payload(k->zp, buf, len, flags);
        k->st.batches++;
    }
    free(buf);
    reset_queue(k);
    k->ts_last = ts;
    return rc;
}

static void fail(pf_kvpub *k, int rc)
{
    k->st.errors++;
    if (!k->err)
        k->err = rc;
}

/* The clock for an early batch: the scheduler's, else the last one sent. */
static double now(const pf_kvpub *k)
{
    return k->s ? pf_sched_now(k->s) : k->ts_last;
}

/* Room for one more event of nh hashes and nt tokens: an early batch first
 * when the queue would pass a cap (a lone event over max_tokens, a block
 * larger than the cap, still goes out alone), then the arrays. Returns 1
 * when the queue was flushed (the newest event is gone), 0, or a pf_err. */
static int reserve(pf_kvpub *k, uint32_t nh, uint32_t nt)
{
    int flushed = 0;
    if (k->nev && (k->nh + nh > k->cfg.max_blocks || (uint64_t)k->nt + nt > k->cfg.max_tokens)) {
        k->st.early_flushes++;
        int rc = send_queue(k, now(k));
        if (rc)
            return rc;
        flushed = 1;
    }
    if (grow((void **)&k->ev, &k->cap_ev, (uint64_t)k->nev + 1, sizeof *k->ev) ||
        grow((void **)&k->off, &k->cap_off, (uint64_t)k->nev + 1, sizeof *k->off) ||
        grow((void **)&k->h, &k->cap_h, (uint64_t)k->nh + nh, sizeof *k->h) ||
        grow((void **)&k->tok, &k->cap_t, (uint64_t)k->nt + nt, sizeof *k->tok))
        return PF_ERR_NOMEM;
    return flushed;
}

/* A new event at the end of the queue (its arrays start at the pools' ends). */
static pf_kvev_event *push_event(pf_kvpub *k, pf_kvev_type type)
{
    pf_kvev_event *e = &k->ev[k->nev];
    memset(e, 0, sizeof *e);
    e->type = type;
    strcpy(e->medium, "GPU");
    k->off[k->nev].h0 = k->nh;
    k->off[k->nev].t0 = k->nt;
    k->nev++;
    return e;
}

/* The B token ids of block `block` of request req, appended to the pool. */
static void put_tokens(pf_kvpub *k, int32_t req, int32_t block)
{
    pf_token_src src;
    int B = k->block_size;
    if (!k->s || pf_sched_token_src(k->s, req, &src) != PF_OK) {
        memset(k->tok + k->nt, 0, (size_t)B * sizeof *k->tok); /* unreachable with a valid event */
    } else {
        for (int i = 0; i < B; i++)
            k->tok[k->nt + (uint32_t)i] = (uint32_t)pf_token_at(&src, (int64_t)block * B + i);
    }
    k->nt += (uint32_t)B;
}

static int on_stored(pf_kvpub *k, const pf_sched_block_event *e)
{
    uint32_t B = (uint32_t)k->block_size;
    /* the next block of the request whose blocks the newest event carries */
    int join = k->can_merge && e->req == k->last_req && e->block == k->last_block + 1 &&
               e->parent == k->last_hash;
    int rc = reserve(k, 1, B);
    if (rc < 0)
        return rc;
    if (rc == 1)
        join = 0;
    pf_kvev_event *ev = join ? &k->ev[k->nev - 1] : push_event(k, PF_KVEV_STORED);
    if (!join) {
        ev->block_size = (int32_t)B;
        if (e->parent != PF_PREFIX_ROOT_HASH)
            ev->parent = pf_kvev_hash_uint(e->parent);
        k->st.events_stored++;
    }
    k->h[k->nh++] = pf_kvev_hash_uint(e->hash);
    ev->n_hashes++;
    put_tokens(k, e->req, e->block);
    ev->n_tokens += B;
    k->can_merge = 1;
    k->last_req = e->req;
    k->last_block = e->block;
    k->last_hash = e->hash;
    k->st.blocks_stored++;
    k->stored_since_clear = 1;
    return 0;
}

static int on_removed(pf_kvpub *k, const pf_sched_block_event *e)
{
    int rc = reserve(k, 1, 0);
    if (rc < 0)
        return rc;
    pf_kvev_event *ev = push_event(k, PF_KVEV_REMOVED);
    k->h[k->nh++] = pf_kvev_hash_uint(e->hash);
    ev->n_hashes = 1;
    k->can_merge = 0;
    k->st.events_removed++;
    k->st.blocks_removed++;
    return 0;
}

void pf_kvpub_on_block(void *ctx, const pf_sched_block_event *e)
{
    pf_kvpub *k = ctx;
    if (!k || !e)
        return;
    int rc;
    if (e->kind == PF_SCHED_BLOCK_STORED)
        rc = k->block_size > 0 ? on_stored(k, e) : PF_ERR_ARG;
    else
        rc = on_removed(k, e);
    if (rc < 0)
        fail(k, rc);
}

int pf_kvpub_cleared(pf_kvpub *k)
{
    if (!k)
        return PF_ERR_ARG;
    int rc = reserve(k, 0, 0);
    if (rc < 0)
        return rc;
    pf_kvev_event *ev = push_event(k, PF_KVEV_CLEARED);
    ev->medium[0] = '\0'; /* AllBlocksCleared carries no medium */
    k->can_merge = 0;
    k->stored_since_clear = 0;
    k->st.events_cleared++;
    return 0;
}

void pf_kvpub_attach(pf_kvpub *k, pf_sched *s)
{
    if (!k)
        return;
    if (!s && k->s) /* detach: the scheduler still exists (see kvpub.h) */
        pf_sched_on_block(k->s, NULL, NULL);
    if (s != k->s) {
        /* The old scheduler may be destroyed already: forget it before the
         * clear, which can send the queue early (a lone block over
         * max_tokens still queued) and would read the time from it. */
        k->s = NULL;
        if (s && k->stored_since_clear) {
            int rc = pf_kvpub_cleared(k);
            if (rc)
                fail(k, rc);
        }
    }
    k->s = s;
    k->can_merge = 0;
    if (s) {
        k->block_size = pf_sched_get_params(s)->block_size;
        pf_sched_on_block(s, pf_kvpub_on_block, k);
    }
}

int pf_kvpub_flush(pf_kvpub *k, double ts)
{
    if (!k)
        return PF_ERR_ARG;
    int rc = k->nev ? send_queue(k, ts) : 0;
    if (k->err) {
        rc = k->err;
        k->err = 0;
    }
    return rc;
}

int pf_kvpub_heartbeat(pf_kvpub *k, double ts)
{
    if (!k)
        return PF_ERR_ARG;
    if (k->nev)
        return pf_kvpub_flush(k, ts);
    return send_queue(k, ts);
}

int pf_kvpub_service(pf_kvpub *k, int timeout_ms)
{
    return k ? pf_zpub_service(k->zp, timeout_ms) : PF_ERR_ARG;
}

void pf_kvpub_drop_next(pf_kvpub *k, uint32_t n)
{
    if (k)
        k->drop = n;
}

void pf_kvpub_stats_get(const pf_kvpub *k, pf_kvpub_stats *st)
{
    if (k && st)
        *st = k->st;
}

const char *pf_kvpub_endpoint(const pf_kvpub *k) { return k ? pf_zpub_endpoint(k->zp) : NULL; }
const char *pf_kvpub_replay_endpoint(const pf_kvpub *k) { return k ? pf_zpub_replay_endpoint(k->zp) : NULL; }
uint64_t pf_kvpub_next_seq(const pf_kvpub *k) { return k ? pf_zpub_next_seq(k->zp) : 0; }
