/* net/zsub.c - KV-event subscriber over libzmq (see zsub.h). */
#include "net/zsub.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "core/clock.h"
#include "core/err.h"

pf_zsub_config pf_zsub_config_default(void)
{
    pf_zsub_config c = {
        .endpoint = "tcp://127.0.0.1:5557",
        .replay_endpoint = NULL,
        .dp_ranks = 1,
        .topic = "",
        .silence_ms = 10000,
        .replay_timeout_ms = 2000,
        .limits = pf_kvev_limits_default(),
    };
    return c;
}

typedef struct {
    char ep[PF_ZSUB_ENDPOINT_MAX];
    char replay_ep[PF_ZSUB_ENDPOINT_MAX];
    void *sub;
    int64_t last_seq; /* -1: none yet */
    double last_msg;  /* monotonic seconds of the last message (or connect) */
    int heard;        /* a message arrived since the last (re)connect */
    void *mon;        /* PAIR socket reading the SUB socket's monitor, or NULL */
    int connected;    /* the monitor's word: a TCP connection is up */
    int dropped;      /* the monitor saw the connection drop: reopen now */
    double replay_pause_until; /* monotonic s: no replay asked before then (the last went unanswered) */
} rank_state;

struct pf_zsub {
    pf_zsub_config cfg;
    unsigned mon_gen; /* makes each monitor's inproc address unique */
    char topic[128];
    void *ctx;
    rank_state r[PF_ZSUB_MAX_RANKS];
    pf_zsub_stats st;
};

int pf_zsub_rank_endpoint(const char *ep, int r, char *out, size_t cap)
{
    if (!ep || !out || r < 0 || r >= PF_ZSUB_MAX_RANKS)
        return PF_ERR_ARG;
    size_t n = strlen(ep);
    if (n == 0 || n >= cap || n >= PF_ZSUB_ENDPOINT_MAX - 8)
        return PF_ERR_ARG;
    if (!strncmp(ep, "ipc://", 6) || !strncmp(ep, "inproc://", 9)) {
        if (r == 0)
            snprintf(out, cap, "%s", ep);
        else
            snprintf(out, cap, "%s_dp%d", ep, r);
        return 0;
    }
    if (strncmp(ep, "tcp://", 6) != 0)
        return PF_ERR_ARG;
    const char *colon = strrchr(ep + 6, ':');
    if (!colon || colon == ep + 6 || colon[1] == '\0')
        return PF_ERR_ARG;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (*end || errno || port < 1 || port + r > 65535)
        return PF_ERR_ARG;
    snprintf(out, cap, "%.*s:%ld", (int)(colon - ep), ep, port + r);
    return 0;
}

static void rank_close(rank_state *rs)
{
    if (rs->mon) {
        zmq_socket_monitor(rs->sub, NULL, 0);
        zmq_close(rs->mon);
        rs->mon = NULL;
    }
    if (rs->sub)
        zmq_close(rs->sub);
    rs->sub = NULL;
}

static int rank_connect(pf_zsub *s, rank_state *rs, const char **why)
{
    rs->sub = zmq_socket(s->ctx, ZMQ_SUB);
    if (!rs->sub) {
        *why = zmq_strerror(zmq_errno());
        return PF_ERR_IO;
    }
    int linger = 0, hwm = PF_ZSUB_RCVHWM;
    /* Bound one inbound message: a hostile or broken peer sending more is
     * disconnected by libzmq before it can make us buffer it. The frame cap
     * is the payload cap plus room for topic and seq frames. */
    int64_t maxmsg = (int64_t)s->cfg.limits.max_bytes + 4096;
    zmq_setsockopt(rs->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(rs->sub, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(rs->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(rs->sub, ZMQ_SUBSCRIBE, s->topic, strlen(s->topic));
    rs->heard = 0;
    rs->connected = 0;
    rs->dropped = 0;
    /* A monitor tells us when the connection comes up and when it drops.
     * libzmq reconnects by itself after a server goes away, but not after it
     * refused a message past ZMQ_MAXMSGSIZE (checked with libzmq 4.3.4):
     * without the monitor only the silence timer would bring the rank back.
     * Without a monitor (it failed to start) the silence timer still works.
     * It is attached and read before connecting: events sent before our
     * PAIR socket is connected would be lost. */
    char addr[96];
    snprintf(addr, sizeof addr, "inproc://pf-zsub-mon-%p-%u", (void *)s, s->mon_gen++);
    if (zmq_socket_monitor(rs->sub, addr, ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0) {
        rs->mon = zmq_socket(s->ctx, ZMQ_PAIR);
        if (rs->mon) {
            zmq_setsockopt(rs->mon, ZMQ_LINGER, &linger, sizeof linger);
            if (zmq_connect(rs->mon, addr) != 0) {
                zmq_close(rs->mon);
                rs->mon = NULL;
            }
        }
        if (!rs->mon)
            zmq_socket_monitor(rs->sub, NULL, 0);
    }
    if (zmq_connect(rs->sub, rs->ep) != 0) {
        *why = zmq_strerror(zmq_errno());
        rank_close(rs);
        return PF_ERR_IO;
    }
    rs->last_msg = pf_clock_s();
    return 0;
}

/* Read the monitor's events: [event (u16) + value (u32), endpoint]. */
static void rank_monitor(rank_state *rs)
{
    if (!rs->mon)
        return;
    for (int k = 0; k < 64; k++) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, rs->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        int more = zmq_msg_more(&m);
        if (zmq_msg_size(&m) >= 2) {
            uint16_t ev;
            memcpy(&ev, zmq_msg_data(&m), sizeof ev);
            if (ev == ZMQ_EVENT_CONNECTED)
                rs->connected = 1;
            else if (ev == ZMQ_EVENT_DISCONNECTED) {
                rs->connected = 0;
                rs->dropped = 1;
            }
        }
        zmq_msg_close(&m);
        while (more) { /* the endpoint frame */
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, rs->mon, 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            more = zmq_msg_more(&m);
            zmq_msg_close(&m);
        }
    }
}

int pf_zsub_open(const pf_zsub_config *cfg, pf_zsub **out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    *why = "";
    if (!cfg || !out)
        return PF_ERR_ARG;
    *out = NULL;
    if (cfg->dp_ranks < 1 || cfg->dp_ranks > PF_ZSUB_MAX_RANKS) {
        *why = "data-parallel ranks must be in [1, 64]";
        return PF_ERR_ARG;
    }
    if (cfg->topic && strlen(cfg->topic) >= 128) {
        *why = "topic longer than 127 bytes";
        return PF_ERR_ARG;
    }
    pf_zsub *s = calloc(1, sizeof *s);
    if (!s)
        return PF_ERR_NOMEM;
    s->cfg = *cfg;
    snprintf(s->topic, sizeof s->topic, "%s", cfg->topic ? cfg->topic : "");
    for (int r = 0; r < cfg->dp_ranks; r++) {
        s->r[r].last_seq = -1;
        if (pf_zsub_rank_endpoint(cfg->endpoint, r, s->r[r].ep, sizeof s->r[r].ep) != 0) {
            *why = "bad event endpoint (expected tcp://HOST:PORT with PORT + ranks - 1 <= 65535)";
            free(s);
            return PF_ERR_ARG;
        }
        if (cfg->replay_endpoint &&
            pf_zsub_rank_endpoint(cfg->replay_endpoint, r, s->r[r].replay_ep, sizeof s->r[r].replay_ep) != 0) {
            *why = "bad replay endpoint (expected tcp://HOST:PORT with PORT + ranks - 1 <= 65535)";
            free(s);
            return PF_ERR_ARG;
        }
    }
    s->ctx = zmq_ctx_new();
    if (!s->ctx) {
        free(s);
        *why = "cannot create a ZeroMQ context";
        return PF_ERR_IO;
    }
    for (int r = 0; r < cfg->dp_ranks; r++) {
        int rc = rank_connect(s, &s->r[r], why);
        if (rc) {
            pf_zsub_close(s);
            return rc;
        }
    }
    *out = s;
    return 0;
}

void pf_zsub_close(pf_zsub *s)
{
    if (!s)
        return;
    for (int r = 0; r < PF_ZSUB_MAX_RANKS; r++)
        rank_close(&s->r[r]);
    if (s->ctx)
        zmq_ctx_term(s->ctx);
    free(s);
}

void pf_zsub_stats_get(const pf_zsub *s, pf_zsub_stats *st)
{
    *st = s->st;
}

int pf_zsub_rank_live(const pf_zsub *s, int r)
{
    if (!s || r < 0 || r >= s->cfg.dp_ranks)
        return 0;
    const rank_state *rs = &s->r[r];
    /* connected, as the monitor says (an idle server is live too), or heard
     * from lately (the word of the messages themselves) */
    if (rs->connected)
        return 1;
    return rs->heard && (s->cfg.silence_ms <= 0 || (pf_clock_s() - rs->last_msg) * 1000.0 < s->cfg.silence_ms);
}

/* Receive one multipart message of up to 3 frames (more are drained and make
 * it malformed). Returns the frame count, 0 when nothing was waiting, -1 on
 * a malformed message. */
static int recv_frames(void *sock, zmq_msg_t fr[3], int flags)
{
    int n = 0, bad = 0;
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, sock, n == 0 ? flags : 0) < 0) {
            zmq_msg_close(&m);
            if (n == 0)
                return 0;
            bad = 1;
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
    if (bad) {
        for (int i = 0; i < n; i++)
            zmq_msg_close(&fr[i]);
        return -1;
    }
    return n;
}

static void close_frames(zmq_msg_t *fr, int n)
{
    for (int i = 0; i < n; i++)
        zmq_msg_close(&fr[i]);
}

static int seq_of(zmq_msg_t *m, int64_t *seq)
{
    if (zmq_msg_size(m) != 8)
        return -1;
    const uint8_t *p = zmq_msg_data(m);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    *seq = (int64_t)v;
    return 0;
}

static int deliver(pf_zsub *s, int rank, int64_t seq, const void *payload, size_t len, int replayed,
                   pf_zsub_fn fn, void *ctx)
{
    pf_kvev_batch b;
    const char *why;
    int rc = pf_kvev_decode(payload, len, &s->cfg.limits, &b, &why);
    if (rc == 0) {
        s->st.batches++;
        s->st.bad_events += b.n_malformed;
        s->st.unknown_events += b.n_unknown;
        pf_zsub_note n = {PF_ZSUB_BATCH, rank, (uint64_t)seq, replayed, &b};
        if (fn)
            fn(ctx, &n);
    } else {
        s->st.malformed++;
    }
    pf_kvev_batch_free(&b);
    return rc == 0;
}

/* A DEALER socket to a replay endpoint (no linger; messages capped at the
 * decoder's limit plus framing), with the request sent: an empty frame,
 * then `from` as 8 bytes big-endian, as vLLM's replay socket reads it.
 * NULL when the socket cannot be made, connected or sent on. A replay is
 * counted (st.replays) once its socket exists. */
static void *replay_ask(pf_zsub *s, const char *endpoint, int64_t from)
{
    void *d = zmq_socket(s->ctx, ZMQ_DEALER);
    if (!d)
        return NULL;
    s->st.replays++;
    int linger = 0;
    int64_t maxmsg = (int64_t)s->cfg.limits.max_bytes + 4096;
    int hwm = PF_ZSUB_RCVHWM;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(d, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(d, ZMQ_RCVHWM, &hwm, sizeof hwm);
    uint8_t start[8];
    for (int i = 0; i < 8; i++)
        start[i] = (uint8_t)((uint64_t)from >> (56 - 8 * i));
    if (zmq_connect(d, endpoint) != 0 || zmq_send(d, "", 0, ZMQ_SNDMORE) < 0 ||
        zmq_send(d, start, 8, 0) < 0) {
        zmq_close(d);
        return NULL;
    }
    return d;
}

/* Ask rank's replay socket for [from, upto) and deliver what comes back in
 * order. Returns the number of batches delivered. */
static int replay(pf_zsub *s, int rank, int64_t from, int64_t upto, pf_zsub_fn fn, void *ctx)
{
    rank_state *rs = &s->r[rank];
    int got = 0;
    void *d = replay_ask(s, rs->replay_ep, from);
    if (!d)
        return 0;
    /* Three bounds, so neither a dead nor a hostile replay socket can hold
     * us: silence (replay_timeout_ms since the last batch delivered: stray
     * replies do not count, or a peer could keep us waiting with them), 30 s
     * in all, and the number of replies (what we asked for, plus some slack
     * for stray ones). */
    double start_t = pf_clock_s(), deadline = start_t + s->cfg.replay_timeout_ms / 1000.0;
    int64_t next = from;
    /* Unsigned: the gap is whatever seq the peer sent (up to 2^63 - 1), and
     * "the gap plus 64" must not overflow a signed counter. */
    uint64_t budget = (uint64_t)(upto - from) + 64;
    int finished = 0; /* the end marker came, or everything asked for */
    for (;;) {
        double t = pf_clock_s();
        int left_ms = (int)((deadline - t) * 1000.0);
        if (left_ms <= 0 || t - start_t > 30.0 || budget == 0)
            break;
        budget--;
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, left_ms) <= 0)
            break;
        zmq_msg_t fr[3];
        int n = recv_frames(d, fr, ZMQ_DONTWAIT);
        if (n == 0)
            continue;
        int64_t seq;
        s->st.messages++; /* a malformed one (n < 0) too, as pf_zsub_poll counts */
        if (n != 3 || zmq_msg_size(&fr[0]) != 0 || seq_of(&fr[1], &seq) != 0) {
            s->st.malformed++;
            if (n > 0)
                close_frames(fr, n);
            continue;
        }
        if (seq == -1) { /* end of replay */
            close_frames(fr, n);
            finished = 1;
            break;
        }
        /* Deliver only what we are missing, in order: the buffer starts at
         * from or later (older batches fell out of the ring). */
        if (seq >= next && seq < upto) {
            got += deliver(s, rank, seq, zmq_msg_data(&fr[2]), zmq_msg_size(&fr[2]), 1, fn, ctx);
            next = seq + 1;
            deadline = pf_clock_s() + s->cfg.replay_timeout_ms / 1000.0;
        }
        close_frames(fr, n);
        if (next >= upto) {
            finished = 1;
            break;
        }
    }
    zmq_close(d);
    /* A replay socket that is dead, wrong or stalling costs up to its
     * timeout (or 30 s) on the caller's thread for every gap: without a
     * pause, a stream with frequent gaps would hold pf_zsub_poll (and the
     * screen) for seconds at a time, and the backlog it builds meanwhile
     * makes more gaps. A replay that ended short of the gap is as bad: an
     * honest publisher's ring holds the gap's newest batches (it drops the
     * oldest), so its replay reaches upto; one that ends early with stray
     * replies before its end marker could otherwise hold every poll for
     * replay_timeout_ms a gap, gap after gap. */
    if (!finished || next < upto)
        rs->replay_pause_until = pf_clock_s() + PF_ZSUB_REPLAY_PAUSE * (s->cfg.replay_timeout_ms / 1000.0);
    return got;
}

/* Whether rank's gaps may be asked for now (a replay socket, not paused). */
static int replay_ok(const rank_state *rs)
{
    return rs->replay_ep[0] && pf_clock_s() >= rs->replay_pause_until;
}

static int handle(pf_zsub *s, int rank, zmq_msg_t fr[3], int n, pf_zsub_fn fn, void *ctx)
{
    rank_state *rs = &s->r[rank];
    int64_t seq;
    s->st.messages++;
    if (n != 3 || seq_of(&fr[1], &seq) != 0 || seq < 0) {
        s->st.malformed++;
        return 0;
    }
    rs->last_msg = pf_clock_s();
    rs->heard = 1;
    int got = 0;
    if (rs->last_seq < 0 && seq > 0 && s->cfg.replay_history && replay_ok(rs)) {
        int r = replay(s, rank, 0, seq, fn, ctx);
        s->st.history += (uint64_t)r;
        got += r;
    }
    if (rs->last_seq >= 0) {
        if (seq == rs->last_seq) {
            s->st.duplicates++;
            return 0;
        }
        /* A restart's new counter began at 0: batches 0 .. seq - 1 of the
         * new life went by before this one (a SUB socket reconnects some
         * 100 ms after the server is back), a gap like any other, asked of
         * the new server's replay buffer after the restart is reported.
         * last_seq may be 2^63 - 1 (any seq a peer sends): "+ 1" only where
         * seq is larger, or it overflows. */
        int64_t from = 0;
        if (seq > rs->last_seq) {
            from = rs->last_seq + 1;
        } else {
            s->st.restarts++;
            pf_zsub_note nt = {PF_ZSUB_RESTART, rank, (uint64_t)seq, 0, NULL};
            if (fn)
                fn(ctx, &nt);
        }
        if (seq > from) {
            int64_t missing = seq - from;
            s->st.gaps++;
            s->st.missed += (uint64_t)missing;
            int r = replay_ok(rs) ? replay(s, rank, from, seq, fn, ctx) : 0;
            s->st.replayed += (uint64_t)r;
            got += r;
            s->st.lost += (uint64_t)(missing - r);
        }
    }
    rs->last_seq = seq;
    got += deliver(s, rank, seq, zmq_msg_data(&fr[2]), zmq_msg_size(&fr[2]), 0, fn, ctx);
    return got;
}

int pf_zsub_poll(pf_zsub *s, int timeout_ms, pf_zsub_fn fn, void *ctx)
{
    if (!s)
        return PF_ERR_ARG;
    int nr = s->cfg.dp_ranks;
    zmq_pollitem_t it[PF_ZSUB_MAX_RANKS];
    for (int r = 0; r < nr; r++) {
        const char *why;
        if (!s->r[r].sub && rank_connect(s, &s->r[r], &why) != 0)
            return PF_ERR_IO; /* a reconnect that failed last time */
        it[r].socket = s->r[r].sub;
        it[r].fd = 0;
        it[r].events = ZMQ_POLLIN;
        it[r].revents = 0;
    }
    if (zmq_poll(it, nr, timeout_ms < 0 ? 0 : timeout_ms) < 0 && zmq_errno() != EINTR)
        return PF_ERR_IO;
    int got = 0;
    for (int r = 0; r < nr; r++) {
        /* Drain what is waiting, but bounded per call so one busy rank
         * cannot starve the caller's screen. */
        for (int k = 0; k < 1024; k++) {
            zmq_msg_t fr[3];
            int n = recv_frames(s->r[r].sub, fr, ZMQ_DONTWAIT);
            if (n == 0)
                break;
            if (n < 0) {
                s->st.messages++;
                s->st.malformed++;
                continue;
            }
            got += handle(s, r, fr, n, fn, ctx);
            close_frames(fr, n);
        }
    }
    double t = pf_clock_s();
    for (int r = 0; r < nr; r++) {
        rank_state *rs = &s->r[r];
        rank_monitor(rs);
        int silent = s->cfg.silence_ms > 0 && (t - rs->last_msg) * 1000.0 >= s->cfg.silence_ms;
        if (!silent && !rs->dropped)
            continue;
        const char *why;
        rank_close(rs);
        s->st.reconnects++;
        if (rank_connect(s, rs, &why) != 0)
            return PF_ERR_IO;
        pf_zsub_note nt = {PF_ZSUB_RECONNECT, r, 0, 0, NULL};
        if (fn)
            fn(ctx, &nt);
    }
    return got;
}
