/* net/zpub.c - KV-event publisher over libzmq (see zpub.h). */
#include "net/zpub.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "core/err.h"
#include "net/zsub.h"

pf_zpub_config pf_zpub_config_default(void)
{
    pf_zpub_config c = {
        .endpoint = "tcp://*:5557",
        .replay_endpoint = NULL,
        .dp_rank = 0,
        .topic = "",
        .array_like = 0,
        .buffer_steps = 10000,
        .buffer_bytes = 256u << 20,
    };
    return c;
}

typedef struct {
    uint64_t seq;
    char *payload;
    size_t len;
} entry;

/* Replays in progress. A request asks for every buffered batch from a seq
 * on: up to buffer_bytes (256 MiB by default) for a few bytes asked. Sent
 * all at once, it sat in the peer's pipe until the peer read it, and a peer
 * that never reads kept it there: eight such requests took the publisher
 * from 206 MB to 1.8 GB, and the sends stalled the simulator's thread for
 * seconds (twenty-seventh session's review). So a replay goes out as the
 * peer takes it: its pipe holds at most ZPUB_REPLAY_HWM messages, each
 * service call sends what fits (never blocking: ZMQ_ROUTER_MANDATORY makes
 * a full pipe an EAGAIN rather than a silent drop) and goes on from there
 * at the next call; at most ZPUB_REPLAYS run at once (a request past them
 * is not answered, and its subscriber's timeout pauses its replays), and
 * one that has moved nothing for ZPUB_REPLAY_IDLE_S is dropped. What a
 * replay can hold in memory is then ZPUB_REPLAYS x ZPUB_REPLAY_HWM
 * payloads, each within the decoder's max_bytes. */
#define ZPUB_REPLAYS 8
#define ZPUB_REPLAY_HWM 16
#define ZPUB_REPLAY_IDLE_S 10.0
/* A service call pumps its replays for up to 2 ms while they move: once a
 * step, 16 replies a call held a replay of 10,000 batches to 625 steps,
 * past the subscriber's 30 s at a 48 ms tick. A peer's pipe empties into
 * its socket in microseconds when it reads, so a pass that moved nothing
 * is tried again after 20 us, five times at most: a peer that reads
 * nothing costs a call about 0.1 ms. */
#define ZPUB_PUMP_BUDGET_S 0.002
#define ZPUB_PUMP_IDLE_PASSES 5
#define ZPUB_ID_MAX 255 /* libzmq's routing ids are 1..255 bytes */

typedef struct {
    int active;
    uint8_t id[ZPUB_ID_MAX];
    size_t idn;
    uint64_t next;      /* the next seq to send; past the newest: the end marker */
    double moved;       /* monotonic time of the last message sent */
} zpub_replay;

struct pf_zpub {
    pf_zpub_config cfg;
    char topic[128];
    void *ctx, *pub, *router;
    char ep[PF_ZSUB_ENDPOINT_MAX], rep[PF_ZSUB_ENDPOINT_MAX];
    uint64_t seq;
    entry *ring; /* buffer_steps slots; oldest at head */
    uint32_t head, count;
    size_t bytes;
    /* events queued by pf_zpub_stored/removed/cleared, owned */
    pf_kvev_event *q;
    uint32_t nq, capq;
    uint64_t qhashes; /* block hashes in the queue                      */
    size_t qbytes;    /* an upper bound on their encoding (see ev_bytes) */
    double last_ts;   /* the last batch's ts: an early flush's, too     */
    zpub_replay rp[ZPUB_REPLAYS]; /* replays in progress */
};

/* Inbound messages are untrusted too: the sockets bind every interface by
 * default, and without a cap libzmq takes in a frame of whatever size a peer
 * announces. What a publisher receives is small: subscriptions (a flag and a
 * topic prefix, under 128 bytes from net/zsub) and replay requests
 * ([b"", 8 bytes]). A peer sending more is disconnected by libzmq. */
#define ZPUB_INBOUND_MAX 4096

static int bind_sock(void *ctx, int type, const char *ep, int rank, void **sock, char *bound, const char **why)
{
    int64_t maxmsg = ZPUB_INBOUND_MAX;
    char e[PF_ZSUB_ENDPOINT_MAX];
    /* a "*" port has nothing to offset: bind as given */
    if (strstr(ep, ":*") || strstr(ep, "://*:*"))
        snprintf(e, sizeof e, "%s", ep);
    else if (pf_zsub_rank_endpoint(ep, rank, e, sizeof e) != 0) {
        *why = "bad publish endpoint (expected tcp://HOST:PORT)";
        return PF_ERR_ARG;
    }
    *sock = zmq_socket(ctx, type);
    if (!*sock) {
        *why = zmq_strerror(zmq_errno());
        return PF_ERR_IO;
    }
    int linger = 0;
    zmq_setsockopt(*sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(*sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (type == ZMQ_ROUTER) { /* see zpub_replay; before the bind, whose
                               * connections take the options it had */
        int hwm = ZPUB_REPLAY_HWM, mandatory = 1;
        zmq_setsockopt(*sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
        zmq_setsockopt(*sock, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
    }
    if (zmq_bind(*sock, e) != 0) {
        *why = zmq_strerror(zmq_errno());
        return PF_ERR_IO;
    }
    size_t n = PF_ZSUB_ENDPOINT_MAX;
    if (zmq_getsockopt(*sock, ZMQ_LAST_ENDPOINT, bound, &n) != 0)
        snprintf(bound, PF_ZSUB_ENDPOINT_MAX, "%s", e);
    return 0;
}

int pf_zpub_open(const pf_zpub_config *cfg, pf_zpub **out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = "";
    if (!cfg || !out || !cfg->endpoint || cfg->dp_rank < 0 || cfg->dp_rank >= PF_ZSUB_MAX_RANKS ||
        cfg->buffer_steps < 1 || (cfg->topic && strlen(cfg->topic) >= 128)) {
        *why = "bad publisher configuration";
        return PF_ERR_ARG;
    }
    *out = NULL;
    pf_zpub *p = calloc(1, sizeof *p);
    if (!p)
        return PF_ERR_NOMEM;
    p->cfg = *cfg;
    snprintf(p->topic, sizeof p->topic, "%s", cfg->topic ? cfg->topic : "");
    p->ring = calloc(cfg->buffer_steps, sizeof *p->ring);
    p->ctx = zmq_ctx_new();
    int rc;
    if (!p->ring) {
        *why = "out of memory for the replay buffer";
        rc = PF_ERR_NOMEM;
    } else if (!p->ctx) {
        *why = "cannot create a ZeroMQ context";
        rc = PF_ERR_IO; /* as pf_zsub_open says it */
    } else {
        rc = bind_sock(p->ctx, ZMQ_PUB, cfg->endpoint, cfg->dp_rank, &p->pub, p->ep, why);
        if (rc == 0 && cfg->replay_endpoint)
            rc = bind_sock(p->ctx, ZMQ_ROUTER, cfg->replay_endpoint, cfg->dp_rank, &p->router, p->rep, why);
    }
    if (rc) {
        pf_zpub_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

void pf_zpub_close(pf_zpub *p)
{
    if (!p)
        return;
    if (p->pub)
        zmq_close(p->pub);
    if (p->router)
        zmq_close(p->router);
    if (p->ctx)
        zmq_ctx_term(p->ctx);
    if (p->ring)
        for (uint32_t i = 0; i < p->count; i++)
            free(p->ring[(p->head + i) % p->cfg.buffer_steps].payload);
    free(p->ring);
    for (uint32_t i = 0; i < p->nq; i++) {
        free(p->q[i].hashes);
        free(p->q[i].token_ids);
    }
    free(p->q);
    free(p);
}

static void put_seq(uint8_t b[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void drop_oldest(pf_zpub *p)
{
    entry *e = &p->ring[p->head];
    p->bytes -= e->len;
    free(e->payload);
    e->payload = NULL;
    p->head = (p->head + 1) % p->cfg.buffer_steps;
    p->count--;
}

int pf_zpub_publish_payload(pf_zpub *p, const void *payload, size_t len, int flags)
{
    if (!p || (!payload && len))
        return PF_ERR_ARG;
    uint64_t seq = p->seq++;
    int rc = 0;
    if (!(flags & PF_ZPUB_BUFFER_ONLY)) {
        uint8_t sb[8];
        put_seq(sb, seq);
        /* PUB never blocks: past its high-water mark libzmq drops, which a
         * subscriber sees as a gap and repairs by replay. */
        if (zmq_send(p->pub, p->topic, strlen(p->topic), ZMQ_SNDMORE) < 0 ||
            zmq_send(p->pub, sb, 8, ZMQ_SNDMORE) < 0 || zmq_send(p->pub, payload, len, 0) < 0)
            rc = PF_ERR_IO;
    }
    if (!p->router || len > p->cfg.buffer_bytes)
        return rc;
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return PF_ERR_NOMEM;
    memcpy(copy, payload, len);
    while (p->count && (p->count == p->cfg.buffer_steps || p->bytes + len > p->cfg.buffer_bytes))
        drop_oldest(p);
    entry *e = &p->ring[(p->head + p->count) % p->cfg.buffer_steps];
    e->seq = seq;
    e->payload = copy;
    e->len = len;
    p->count++;
    p->bytes += len;
    return rc;
}

int pf_zpub_publish(pf_zpub *p, const pf_kvev_batch *b)
{
    char *buf;
    size_t n;
    if (!p)
        return PF_ERR_ARG;
    int rc = pf_kvev_encode(b, p->cfg.array_like, &buf, &n);
    if (rc)
        return rc;
    rc = pf_zpub_publish_payload(p, buf, n, 0);
    free(buf);
    return rc;
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One reply [id, "", seq, payload] to r's peer without waiting. 0 sent, 1
 * the peer's pipe is full (try later), -1 the peer is gone. The parts of a
 * message go together: once the first is taken the rest are. */
static int replay_send(pf_zpub *p, const zpub_replay *r, uint64_t seq, const void *payload, size_t len)
{
    uint8_t sb[8];
    put_seq(sb, seq);
    if (zmq_send(p->router, r->id, r->idn, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return zmq_errno() == EAGAIN ? 1 : -1;
    zmq_send(p->router, "", 0, ZMQ_SNDMORE);
    zmq_send(p->router, sb, 8, ZMQ_SNDMORE);
    zmq_send(p->router, payload, len, 0);
    return 0;
}

/* The ring's first entry (0 oldest .. count) with a seq of at least seq:
 * the seqs rise from the oldest to the newest (with holes where a batch
 * was not kept), so a binary search. A pump starts there, not at the
 * oldest: a service call makes many passes, each would walk every batch
 * already sent (or older than asked, which the ring dropped). */
static uint32_t ring_find(const pf_zpub *p, uint64_t seq)
{
    uint32_t lo = 0, hi = p->count;
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (p->ring[(p->head + mid) % p->cfg.buffer_steps].seq < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Send r's next batches, as many as its peer's pipe takes, then the end
 * marker (seq -1); the replay ends there, or when the peer is gone or has
 * taken nothing for ZPUB_REPLAY_IDLE_S. Returns the messages sent. */
static int replay_pump(pf_zpub *p, zpub_replay *r, double now)
{
    int rc = 0, sent = 0;
    for (uint32_t i = ring_find(p, r->next); i < p->count && rc == 0; i++) {
        const entry *e = &p->ring[(p->head + i) % p->cfg.buffer_steps];
        rc = replay_send(p, r, e->seq, e->payload, e->len);
        if (rc == 0) {
            r->next = e->seq + 1;
            r->moved = now;
            sent++;
        }
    }
    if (rc == 0) {
        rc = replay_send(p, r, UINT64_MAX, "", 0); /* -1: end of replay */
        if (rc == 0) {
            r->active = 0;
            sent++;
        }
    }
    if (rc < 0 || (rc > 0 && now - r->moved > ZPUB_REPLAY_IDLE_S))
        r->active = 0;
    return sent;
}

/* Pump every replay in progress, pass after pass while they move (see
 * ZPUB_PUMP_BUDGET_S). Returns how many are still in progress. */
static int replays_pump(pf_zpub *p)
{
    const double until = mono_s() + ZPUB_PUMP_BUDGET_S;
    int idle = 0;
    for (;;) {
        const double now = mono_s();
        int pending = 0, sent = 0;
        for (int i = 0; i < ZPUB_REPLAYS; i++)
            if (p->rp[i].active) {
                sent += replay_pump(p, &p->rp[i], now);
                pending += p->rp[i].active;
            }
        idle = sent ? 0 : idle + 1;
        if (!pending || now >= until || idle >= ZPUB_PUMP_IDLE_PASSES)
            return pending;
        if (!sent) {
            struct timespec ts = {0, 20 * 1000};
            nanosleep(&ts, NULL);
            /* a pipe the peer drained says so by a command to this socket,
             * which libzmq reads at a send only once a millisecond or so:
             * asking for the socket's events reads it now */
            int ev = 0;
            size_t evn = sizeof ev;
            (void)zmq_getsockopt(p->router, ZMQ_EVENTS, &ev, &evn);
        }
    }
}

/* A request [identity, "", start_seq(8)] taken in: a replay from start_seq
 * (the same peer asking again starts over). 1 taken, 0 dropped. */
static int replay_take(pf_zpub *p, const void *id, size_t idn, uint64_t start, double now)
{
    if (idn == 0 || idn > ZPUB_ID_MAX)
        return 0;
    zpub_replay *r = NULL;
    for (int i = 0; i < ZPUB_REPLAYS && !r; i++)
        if (p->rp[i].active && p->rp[i].idn == idn && memcmp(p->rp[i].id, id, idn) == 0)
            r = &p->rp[i];
    for (int i = 0; i < ZPUB_REPLAYS && !r; i++)
        if (!p->rp[i].active)
            r = &p->rp[i];
    if (!r)
        return 0; /* too many at once: the subscriber's timeout pauses it */
    memcpy(r->id, id, idn);
    r->idn = idn;
    r->next = start;
    r->moved = now;
    r->active = 1;
    return 1;
}

int pf_zpub_service(pf_zpub *p, int timeout_ms)
{
    if (!p)
        return PF_ERR_ARG;
    if (!p->router)
        return 0;
    int answered = 0;
    const int pending = replays_pump(p);
    /* with replays waiting on their peers, come back soon to go on */
    zmq_pollitem_t it = {p->router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, pending && timeout_ms > 5 ? 5 : timeout_ms) <= 0)
        return 0;
    for (int k = 0; k < 64; k++) {
        /* [identity, "", start_seq(8)]; anything else is dropped, as vLLM does */
        zmq_msg_t fr[3];
        int n = 0, bad = 0;
        for (;;) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, p->router, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            int more = zmq_msg_more(&m);
            if (n < 3)
                fr[n++] = m;
            else {
                zmq_msg_close(&m);
                bad = 1;
            }
            if (!more)
                break;
        }
        if (n == 0)
            break;
        if (!bad && n == 3 && zmq_msg_size(&fr[1]) == 0 && zmq_msg_size(&fr[2]) == 8) {
            const uint8_t *s = zmq_msg_data(&fr[2]);
            uint64_t start = 0;
            for (int i = 0; i < 8; i++)
                start = (start << 8) | s[i];
            answered += replay_take(p, zmq_msg_data(&fr[0]), zmq_msg_size(&fr[0]), start, mono_s());
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&fr[i]);
    }
    if (answered)
        (void)replays_pump(p); /* the new ones get their first budget now */
    return answered;
}

const char *pf_zpub_endpoint(const pf_zpub *p) { return p->ep; }
const char *pf_zpub_replay_endpoint(const pf_zpub *p) { return p->router ? p->rep : NULL; }
uint64_t pf_zpub_next_seq(const pf_zpub *p) { return p->seq; }

/* ---- the event queue -------------------------------------------------------- */

static void queue_reset(pf_zpub *p)
{
    for (uint32_t i = 0; i < p->nq; i++) {
        free(p->q[i].hashes);
        free(p->q[i].token_ids);
    }
    p->nq = 0;
    p->qhashes = 0;
    p->qbytes = 0;
}

int pf_zpub_flush(pf_zpub *p, double ts)
{
    if (!p)
        return PF_ERR_ARG;
    if (!p->nq)
        return 0;
    pf_kvev_batch b = {.ts = ts, .events = p->q, .n_events = p->nq};
    p->last_ts = ts;
    if (p->cfg.dp_rank > 0) { /* vLLM stamps the rank when it has one */
        b.has_dp_rank = 1;
        b.dp_rank = p->cfg.dp_rank;
    }
    int rc = pf_zpub_publish(p, &b);
    queue_reset(p);
    return rc;
}

uint32_t pf_zpub_pending(const pf_zpub *p) { return p ? p->nq : 0; }

/* The bytes msgpack takes for the unsigned integer v. */
static size_t mp_uint_bytes(uint64_t v)
{
    return v < 128 ? 1 : v <= UINT8_MAX ? 2 : v <= UINT16_MAX ? 3 : v <= UINT32_MAX ? 5 : 9;
}

/* An upper bound on the bytes of one event and of a batch's own fields (ts,
 * the events array's header, data_parallel_rank), in either encoding: an
 * event's keys, tag, headers, parent, block size and medium take about 125
 * bytes in a map, fewer in an array. */
#define ZPUB_EVENT_BYTES 160
#define ZPUB_CLEARED_BYTES 32 /* {"type": "AllBlocksCleared"}: 23 */
#define ZPUB_BATCH_BYTES 64

static size_t ev_bytes(const uint64_t *hashes, uint32_t n, const uint32_t *token_ids, uint32_t n_tokens)
{
    size_t b = ZPUB_EVENT_BYTES;
    for (uint32_t i = 0; i < n; i++)
        b += mp_uint_bytes(hashes[i]);
    for (uint32_t i = 0; i < n_tokens; i++)
        b += mp_uint_bytes(token_ids[i]);
    return b;
}

/* Room in the queue for an event of nh hashes encoded in at most `bytes`.
 * The batch must stay one that a subscriber with the decoder's default
 * limits accepts (events, hashes per batch, payload size): past any of them
 * the queue is flushed first; an event that no payload can hold is refused
 * (PF_ERR_ARG), not published for every subscriber to refuse. Returns 0 with
 * *out set, or a negative pf_err. */
static int queue_push(pf_zpub *p, uint32_t nh, size_t bytes, pf_kvev_event **out)
{
    pf_kvev_limits lim = pf_kvev_limits_default();
    if (bytes > lim.max_bytes - ZPUB_BATCH_BYTES)
        return PF_ERR_ARG;
    if (p->nq && (p->nq >= lim.max_events || p->qhashes + nh > lim.max_batch_hashes ||
                  p->qbytes + bytes > lim.max_bytes - ZPUB_BATCH_BYTES)) {
        /* mid-step: the step's end is not known yet, and a consumer reading
         * ts must not see time go back (0 is 1970): the last batch's */
        int rc = pf_zpub_flush(p, p->last_ts);
        if (rc)
            return rc;
    }
    if (p->nq == p->capq) {
        uint32_t nc = p->capq ? p->capq * 2 : 64;
        pf_kvev_event *nq = realloc(p->q, (size_t)nc * sizeof *nq);
        if (!nq)
            return PF_ERR_NOMEM;
        p->q = nq;
        p->capq = nc;
    }
    pf_kvev_event *e = &p->q[p->nq];
    memset(e, 0, sizeof *e);
    *out = e;
    return 0;
}

/* The event queue_push gave is complete: count it. */
static void queue_commit(pf_zpub *p, uint32_t nh, size_t bytes)
{
    p->nq++;
    p->qhashes += nh;
    p->qbytes += bytes;
}

static int copy_hashes(pf_kvev_event *e, const uint64_t *h, uint32_t n)
{
    if (!n)
        return 0;
    e->hashes = malloc((size_t)n * sizeof *e->hashes);
    if (!e->hashes)
        return PF_ERR_NOMEM;
    for (uint32_t i = 0; i < n; i++)
        e->hashes[i] = pf_kvev_hash_uint(h[i]);
    e->n_hashes = n;
    return 0;
}

int pf_zpub_stored(pf_zpub *p, const uint64_t *hashes, uint32_t n, const uint64_t *parent,
                   const uint32_t *token_ids, uint32_t n_tokens, int block_size)
{
    pf_kvev_limits lim = pf_kvev_limits_default();
    if (!p || (n && !hashes) || (n_tokens && !token_ids) || n > lim.max_hashes || n_tokens > lim.max_tokens ||
        block_size < 1 || block_size > 65536)
        return PF_ERR_ARG;
    size_t bytes = ev_bytes(hashes, n, token_ids, n_tokens);
    pf_kvev_event *e;
    int rc = queue_push(p, n, bytes, &e);
    if (rc)
        return rc;
    e->type = PF_KVEV_STORED;
    e->block_size = block_size;
    strcpy(e->medium, "GPU");
    if (parent)
        e->parent = pf_kvev_hash_uint(*parent);
    if (copy_hashes(e, hashes, n) != 0)
        return PF_ERR_NOMEM;
    if (n_tokens) {
        e->token_ids = malloc((size_t)n_tokens * sizeof *e->token_ids);
        if (!e->token_ids) {
            free(e->hashes);
            return PF_ERR_NOMEM;
        }
        memcpy(e->token_ids, token_ids, (size_t)n_tokens * sizeof *e->token_ids);
        e->n_tokens = n_tokens;
    }
    queue_commit(p, n, bytes);
    return 0;
}

int pf_zpub_removed(pf_zpub *p, const uint64_t *hashes, uint32_t n)
{
    if (!p || (n && !hashes) || n > pf_kvev_limits_default().max_hashes)
        return PF_ERR_ARG;
    size_t bytes = ev_bytes(hashes, n, NULL, 0);
    pf_kvev_event *e;
    int rc = queue_push(p, n, bytes, &e);
    if (rc)
        return rc;
    e->type = PF_KVEV_REMOVED;
    strcpy(e->medium, "GPU");
    if (copy_hashes(e, hashes, n) != 0)
        return PF_ERR_NOMEM;
    queue_commit(p, n, bytes);
    return 0;
}

int pf_zpub_cleared(pf_zpub *p)
{
    if (!p)
        return PF_ERR_ARG;
    pf_kvev_event *e;
    int rc = queue_push(p, 0, ZPUB_CLEARED_BYTES, &e);
    if (rc)
        return rc;
    e->type = PF_KVEV_CLEARED;
    queue_commit(p, 0, ZPUB_CLEARED_BYTES);
    return 0;
}
