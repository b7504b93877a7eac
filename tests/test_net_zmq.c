/* tests/test_net_zmq.c - net/zpub and net/zsub over real TCP sockets on
 * 127.0.0.1: delivery in order, a gap repaired by replay, garbage counted,
 * a restarted publisher noticed, endpoint arithmetic for data-parallel ranks;
 * hostile peers (seqs at the top of the range, oversized requests, replies
 * of too many frames) and the publisher's queue held within what its own
 * subscriber decodes.
 * The publisher runs a scripted thread; assertions stay on the main thread. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "core/err.h"
#include "net/attach_model.h"
#include "net/zpub.h"
#include "net/zsub.h"

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One BlockStored whose single hash is `h`. */
static int publish_hash(pf_zpub *p, uint64_t h, int flags)
{
    pf_kvev_hash hs = pf_kvev_hash_uint(h);
    pf_kvev_event ev = {.type = PF_KVEV_STORED, .hashes = &hs, .n_hashes = 1, .block_size = 16};
    pf_kvev_batch b = {.ts = 1.0, .events = &ev, .n_events = 1};
    if (!flags)
        return pf_zpub_publish(p, &b);
    char *buf;
    size_t n;
    if (pf_kvev_encode(&b, 0, &buf, &n) != 0)
        return -1;
    int rc = pf_zpub_publish_payload(p, buf, n, flags);
    free(buf);
    return rc;
}

typedef struct {
    pf_zpub *pub;
    atomic_int phase; /* 0 warm up, 1 run the script, 2 stop */
} pub_job;

/* Warm-up batches carry hashes >= 1000; the script's carry 1..10, of which
 * 6, 7, 8 are lost on the wire (kept only for replay), and one garbage
 * payload between 9 and 10. */
static void *pub_main(void *arg)
{
    pub_job *j = arg;
    uint64_t warm = 1000;
    while (atomic_load(&j->phase) == 0) {
        publish_hash(j->pub, warm++, 0);
        pf_zpub_service(j->pub, 5);
    }
    if (atomic_load(&j->phase) == 1) {
        for (uint64_t h = 1; h <= 10; h++) {
            if (h == 10)
                pf_zpub_publish_payload(j->pub, "\xc1garbage", 8, 0);
            publish_hash(j->pub, h, h >= 6 && h <= 8 ? PF_ZPUB_BUFFER_ONLY : 0);
            pf_zpub_service(j->pub, 2);
        }
    }
    while (atomic_load(&j->phase) != 2)
        pf_zpub_service(j->pub, 5);
    return NULL;
}

typedef struct {
    uint64_t hashes[256];
    int n, replayed, restarts;
    uint64_t restart_seq; /* the seq that revealed the last restart */
    int restart_at;       /* s->n then: where the new life's hashes begin */
} seen;

static void on_note(void *ctx, const pf_zsub_note *n)
{
    seen *s = ctx;
    if (n->kind == PF_ZSUB_RESTART) {
        s->restarts++;
        s->restart_seq = n->seq;
        s->restart_at = s->n;
    }
    if (n->kind != PF_ZSUB_BATCH)
        return;
    s->replayed += n->replayed;
    for (uint32_t i = 0; i < n->batch->n_events; i++)
        if (n->batch->events[i].n_hashes && s->n < 256)
            s->hashes[s->n++] = n->batch->events[i].hashes[0].u;
}

/* Poll until the callback has seen a script hash >= want (want 0: any
 * warm-up hash), or about ms milliseconds of polling have passed. */
static int poll_until(pf_zsub *sub, seen *s, uint64_t want, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        pf_zsub_poll(sub, 10, on_note, s);
        for (int i = 0; i < s->n; i++)
            if ((want && s->hashes[i] >= want && s->hashes[i] < 1000) || (want == 0 && s->hashes[i] >= 1000))
                return 1;
    }
    return 0;
}

/* A publisher on 127.0.0.1, ports picked by the kernel; with a ROUTER
 * replay socket when with_replay. */
static pf_zpub *open_pub(int with_replay)
{
    pf_zpub_config pc = pf_zpub_config_default();
    pc.endpoint = "tcp://127.0.0.1:*";
    if (with_replay)
        pc.replay_endpoint = "tcp://127.0.0.1:*";
    pf_zpub *p = NULL;
    const char *why = "";
    cr_assert_eq(pf_zpub_open(&pc, &p, &why), 0, "%s", why);
    return p;
}

/* The defaults, pointed at p's endpoints (its replay socket: NULL without). */
static pf_zsub_config sub_config(const pf_zpub *p)
{
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = pf_zpub_endpoint(p);
    sc.replay_endpoint = pf_zpub_replay_endpoint(p);
    return sc;
}

static pf_zsub *open_sub(const pf_zsub_config *sc)
{
    pf_zsub *sub = NULL;
    const char *why = "";
    cr_assert_eq(pf_zsub_open(sc, &sub, &why), 0, "%s", why);
    return sub;
}

/* The publisher's script on its own thread. */
static pthread_t start_job(void *(*fn)(void *), pub_job *job)
{
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, fn, job), 0);
    return th;
}

/* Stop the publisher's thread, then take the subscriber's counters and
 * close both ends. */
static pf_zsub_stats finish(pub_job *job, pthread_t th, pf_zsub *sub)
{
    atomic_store(&job->phase, 2);
    pthread_join(th, NULL);
    pf_zsub_stats st;
    pf_zsub_stats_get(sub, &st);
    pf_zsub_close(sub);
    pf_zpub_close(job->pub);
    return st;
}

Test(net_zmq, gap_is_replayed_and_garbage_counted)
{
    pub_job job = {.pub = open_pub(1)};
    pf_zsub_config sc = sub_config(job.pub);
    pf_zsub *sub = open_sub(&sc);
    pthread_t th = start_job(pub_main, &job);
    seen s = {0};
    int warmed = poll_until(sub, &s, 0, 5000); /* the subscription is live */
    atomic_store(&job.phase, 1);
    int done = warmed && poll_until(sub, &s, 10, 5000);
    pf_zsub_stats st = finish(&job, th, sub);

    cr_assert(warmed, "no warm-up batch arrived");
    cr_assert(done, "the script's last batch never arrived");
    /* the script's hashes, in order, none missing: 6..8 came by replay */
    uint64_t want = 1;
    for (int i = 0; i < s.n; i++)
        if (s.hashes[i] < 1000)
            cr_expect_eq(s.hashes[i], want++, "position %d", i);
    cr_expect_eq(want, 11);
    cr_expect_eq(s.replayed, 3);
    cr_expect_eq(st.gaps, 1);
    cr_expect_eq(st.missed, 3);
    cr_expect_eq(st.replays, 1);
    cr_expect_eq(st.replayed, 3);
    cr_expect_eq(st.lost, 0);
    cr_expect_eq(st.malformed, 1);
    cr_expect_eq(st.restarts, 0);
}

typedef struct {
    const char *ep, *replay_ep; /* replay_ep: NULL for none */
    atomic_int stop;
    uint64_t first_hash;
} restart_job;

static void *pub_again(void *arg)
{
    restart_job *j = arg;
    pf_zpub_config pc = pf_zpub_config_default();
    pc.endpoint = j->ep;
    pc.replay_endpoint = j->replay_ep;
    pf_zpub *p = NULL;
    for (int tries = 0; tries < 100 && pf_zpub_open(&pc, &p, NULL) != 0; tries++)
        sleep_ms(20);
    uint64_t h = j->first_hash;
    while (p && !atomic_load(&j->stop)) {
        publish_hash(p, h++, 0);
        if (j->replay_ep)
            pf_zpub_service(p, 5); /* answers replays meanwhile */
        else
            sleep_ms(5);
    }
    pf_zpub_close(p);
    return NULL;
}

/* 20 batches, hashes h0 .. h0 + 19, and any replay request answered */
static void burst(pf_zpub *p, uint64_t h0)
{
    for (uint64_t k = 0; k < 20; k++)
        publish_hash(p, h0 + k, 0);
    pf_zpub_service(p, 0);
}

/* A publisher's two lives on one port, seen by one subscriber (with the
 * replay sockets when with_replay): the first runs until the subscriber has
 * seen it and then long enough that the second life's counter (from 0)
 * stays below its last seq; the second publishes hashes from 5000 until the
 * subscriber has noticed the restart. The hashes the callback saw are
 * those after the first life's end (s->n is reset there). */
static pf_zsub_stats two_lives(int with_replay, seen *s)
{
    pf_zpub *p = open_pub(with_replay);
    char ep[PF_ZSUB_ENDPOINT_MAX], rep_ep[PF_ZSUB_ENDPOINT_MAX]; /* outlive p */
    snprintf(ep, sizeof ep, "%s", pf_zpub_endpoint(p));
    snprintf(rep_ep, sizeof rep_ep, "%s", with_replay ? pf_zpub_replay_endpoint(p) : "");
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = ep;
    sc.replay_endpoint = with_replay ? rep_ep : NULL;
    pf_zsub *sub = open_sub(&sc);
    int got = 0;
    for (int t = 0; t < 500 && !got; t++) {
        burst(p, 1000 + (uint64_t)t * 20);
        pf_zsub_poll(sub, 10, on_note, s);
        got = s->n > 0;
    }
    for (int t = 0; t < 100 && got; t++) {
        burst(p, 100000 + (uint64_t)t * 20);
        pf_zsub_poll(sub, 1, on_note, s);
    }
    pf_zpub_close(p);
    cr_assert(got, "nothing arrived from the first publisher");
    s->n = 0; /* room for the second life's hashes */

    restart_job j = {.ep = ep, .replay_ep = with_replay ? rep_ep : NULL, .first_hash = 5000};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, pub_again, &j), 0);
    for (int t = 0; t < 1000 && !s->restarts; t++)
        pf_zsub_poll(sub, 10, on_note, s);
    atomic_store(&j.stop, 1);
    pthread_join(th, NULL);
    pf_zsub_stats st;
    pf_zsub_stats_get(sub, &st);
    pf_zsub_close(sub);
    cr_assert(s->restarts, "the restart was not noticed");
    return st;
}

Test(net_zmq, restarted_publisher_is_noticed)
{
    seen s = {0};
    const pf_zsub_stats st = two_lives(0, &s);
    cr_expect_eq(st.restarts, 1);
    /* the new life's batches before the first one seen (a SUB socket
     * reconnects some 100 ms after the server is back) were lost: no
     * replay socket here */
    cr_expect_eq(st.lost, s.restart_seq, "lost %llu, the new life first seen at seq %llu",
                 (unsigned long long)st.lost, (unsigned long long)s.restart_seq);
    cr_expect_eq(st.missed, s.restart_seq);
    cr_expect_eq(st.gaps, s.restart_seq > 0);
}

/* The same with replay sockets: the batches of the new life that went by
 * before the subscriber reconnected come back from the new server's replay
 * buffer, after the restart note and before the batch that revealed it, so
 * the view has the new life whole: its hashes from the first one on, in
 * order, none lost. */
Test(net_zmq, restarted_publishers_first_batches_are_replayed)
{
    seen s = {0};
    const pf_zsub_stats st = two_lives(1, &s);
    cr_assert_eq(st.restarts, 1);
    cr_assert_gt(s.restart_seq, 0, "the test needs the first batches of the new life missed");
    cr_expect_eq(st.missed, s.restart_seq);
    cr_expect_eq(st.replayed, s.restart_seq);
    cr_expect_eq(st.lost, 0);
    /* from the restart note on: 5000, 5001, ... with no hole */
    cr_assert_gt(s.n, s.restart_at);
    for (int i = s.restart_at; i < s.n; i++)
        cr_expect_eq(s.hashes[i], 5000 + (uint64_t)(i - s.restart_at), "position %d", i);
}

Test(net_zmq, rank_endpoints_follow_vllm)
{
    char out[PF_ZSUB_ENDPOINT_MAX];
    cr_assert_eq(pf_zsub_rank_endpoint("tcp://10.0.0.1:5557", 3, out, sizeof out), 0);
    cr_expect_str_eq(out, "tcp://10.0.0.1:5560");
    cr_assert_eq(pf_zsub_rank_endpoint("tcp://[::1]:5557", 0, out, sizeof out), 0);
    cr_expect_str_eq(out, "tcp://[::1]:5557");
    cr_assert_eq(pf_zsub_rank_endpoint("ipc:///tmp/kv", 2, out, sizeof out), 0);
    cr_expect_str_eq(out, "ipc:///tmp/kv_dp2");
    cr_expect_eq(pf_zsub_rank_endpoint("tcp://host:65535", 1, out, sizeof out), PF_ERR_ARG);
    cr_expect_eq(pf_zsub_rank_endpoint("tcp://host", 0, out, sizeof out), PF_ERR_ARG);
    cr_expect_eq(pf_zsub_rank_endpoint("tcp://host:55x", 0, out, sizeof out), PF_ERR_ARG);
    cr_expect_eq(pf_zsub_rank_endpoint("http://host:1", 0, out, sizeof out), PF_ERR_ARG);
    pf_zsub_config sc = pf_zsub_config_default();
    sc.dp_ranks = 65;
    pf_zsub *sub;
    const char *why;
    cr_expect_eq(pf_zsub_open(&sc, &sub, &why), PF_ERR_ARG);
    cr_expect(strstr(why, "ranks") != NULL);
}

typedef struct {
    pf_attach *m;
    int batches;
} model_ctx;

static void to_model(void *ctx, const pf_zsub_note *n)
{
    model_ctx *mc = ctx;
    if (n->kind == PF_ZSUB_BATCH) {
        pf_attach_apply(mc->m, n->rank, n->batch);
        mc->batches++;
    }
}

/* The simulator's calls (stored / removed / cleared, flushed per step) seen
 * by a subscriber feeding the attach model: the counts must match. */
Test(net_zmq, builder_calls_reach_the_attach_model)
{
    pf_zpub *p = open_pub(0);
    pf_zsub_config sc = sub_config(p);
    pf_zsub *sub = open_sub(&sc);
    model_ctx mc = {pf_attach_new(0), 0};
    /* warm up with empty-but-valid batches until the subscription is live */
    for (int t = 0; t < 500 && mc.batches == 0; t++) {
        pf_zpub_cleared(p);
        cr_assert_eq(pf_zpub_flush(p, t), 0);
        pf_zsub_poll(sub, 10, to_model, &mc);
    }
    cr_assert_gt(mc.batches, 0);
    const uint64_t a[] = {10, 11, 12}, parent = 12, b[] = {13};
    const uint32_t tok[4] = {1, 2, 3, 4};
    cr_expect_eq(pf_zpub_stored(p, a, 3, NULL, NULL, 0, 16), 0);
    cr_expect_eq(pf_zpub_stored(p, b, 1, &parent, tok, 4, 4), 0);
    cr_expect_eq(pf_zpub_removed(p, a, 1), 0);
    cr_expect_eq(pf_zpub_pending(p), 3);
    cr_expect_eq(pf_zpub_stored(p, a, 1, NULL, NULL, 0, 0), PF_ERR_ARG);
    cr_expect_eq(pf_zpub_flush(p, 1.0), 0);
    cr_expect_eq(pf_zpub_pending(p), 0);
    int before = mc.batches;
    for (int t = 0; t < 300 && mc.batches == before; t++)
        pf_zsub_poll(sub, 10, to_model, &mc);
    const pf_attach_counts *c = pf_attach_counts_get(mc.m);
    cr_expect_eq(mc.batches, before + 1);
    cr_expect_eq(c->blocks_live, 3);
    cr_expect_eq(c->prefixes_live, 1);
    cr_expect_eq(c->blocks_removed, 1);
    pf_attach_free(mc.m);
    pf_zsub_close(sub);
    pf_zpub_close(p);
}

/* --history: batches published before the subscriber existed come back by
 * replay on its first message, in order, before it. */
static void *pub_history(void *arg)
{
    pub_job *j = arg;
    uint64_t warm = 1000;
    while (atomic_load(&j->phase) != 2) {
        publish_hash(j->pub, warm++, 0);
        pf_zpub_service(j->pub, 5);
    }
    return NULL;
}

Test(net_zmq, history_is_replayed_on_the_first_message)
{
    pub_job job = {.pub = open_pub(1)};
    for (uint64_t h = 1; h <= 5; h++) /* nobody listens yet */
        publish_hash(job.pub, h, 0);
    pf_zsub_config sc = sub_config(job.pub);
    sc.replay_history = 1;
    pf_zsub *sub = open_sub(&sc);
    pthread_t th = start_job(pub_history, &job);
    seen s = {0};
    int got = poll_until(sub, &s, 0, 5000);
    pf_zsub_stats st = finish(&job, th, sub);
    cr_assert(got);
    cr_assert_geq(s.n, 6);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(s.hashes[i], (uint64_t)(i + 1), "position %d", i);
    cr_expect_geq(st.history, 5);
    cr_expect_eq(st.gaps, 0);
    cr_expect_eq(st.lost, 0);
}

/* An oversized message (past the subscriber's payload cap) is never taken
 * in: libzmq drops the connection, the subscriber reconnects, counts the hole
 * as a gap, and keeps receiving what follows. */
static void *pub_oversize(void *arg)
{
    pub_job *j = arg;
    uint64_t warm = 1000, h = 1;
    while (atomic_load(&j->phase) == 0) {
        publish_hash(j->pub, warm++, 0);
        pf_zpub_service(j->pub, 5);
    }
    static char big[100000];
    memset(big, 0x90, sizeof big);
    pf_zpub_publish_payload(j->pub, big, sizeof big, 0);
    while (atomic_load(&j->phase) != 2) {
        publish_hash(j->pub, h++, 0);
        pf_zpub_service(j->pub, 10);
    }
    return NULL;
}

Test(net_zmq, oversized_messages_are_refused_and_the_stream_goes_on)
{
    pub_job job = {.pub = open_pub(1)};
    pf_zsub_config sc = sub_config(job.pub);
    sc.limits.max_bytes = 4096;
    sc.replay_timeout_ms = 500;
    sc.silence_ms = 0; /* the monitor alone must bring the stream back */
    pf_zsub *sub = open_sub(&sc);
    pthread_t th = start_job(pub_oversize, &job);
    seen s = {0};
    int warmed = poll_until(sub, &s, 0, 5000);
    atomic_store(&job.phase, 1);
    int after = warmed && poll_until(sub, &s, 30, 10000);
    pf_zsub_stats st = finish(&job, th, sub);
    cr_assert(warmed, "no warm-up batch arrived");
    cr_expect(after, "nothing arrived after the oversized message");
    cr_expect_geq(st.gaps, 1);
    cr_expect_geq(st.lost, 1);
    cr_expect_geq(st.reconnects, 1);
}

/* ---- hostile publishers: a raw PUB socket where the test picks every seq ---- */

typedef struct {
    void *ctx, *sock;
    char ep[PF_ZSUB_ENDPOINT_MAX];
} raw_sock;

static void raw_open(raw_sock *r, int type)
{
    r->ctx = zmq_ctx_new();
    cr_assert(r->ctx);
    r->sock = zmq_socket(r->ctx, type);
    cr_assert(r->sock);
    int linger = 0;
    zmq_setsockopt(r->sock, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_bind(r->sock, "tcp://127.0.0.1:*"), 0);
    size_t n = sizeof r->ep;
    cr_assert_eq(zmq_getsockopt(r->sock, ZMQ_LAST_ENDPOINT, r->ep, &n), 0);
}

static void raw_close(raw_sock *r)
{
    zmq_close(r->sock);
    zmq_ctx_term(r->ctx);
}

/* seq as 8 bytes big-endian, as vLLM frames it */
static void put_seq(uint8_t sb[8], uint64_t seq)
{
    for (int i = 0; i < 8; i++)
        sb[i] = (uint8_t)(seq >> (56 - 8 * i));
}

/* [topic "", seq, a batch storing `hash`] */
static void raw_send(raw_sock *r, uint64_t seq, uint64_t hash)
{
    pf_kvev_hash hs = pf_kvev_hash_uint(hash);
    pf_kvev_event ev = {.type = PF_KVEV_STORED, .hashes = &hs, .n_hashes = 1, .block_size = 16};
    pf_kvev_batch b = {.ts = 1.0, .events = &ev, .n_events = 1};
    char *buf;
    size_t n;
    cr_assert_eq(pf_kvev_encode(&b, 0, &buf, &n), 0);
    uint8_t sb[8];
    put_seq(sb, seq);
    zmq_send(r->sock, "", 0, ZMQ_SNDMORE);
    zmq_send(r->sock, sb, 8, ZMQ_SNDMORE);
    zmq_send(r->sock, buf, n, 0);
    free(buf);
}

/* Send `seq` (hash 1000) until the subscriber has taken one: the
 * subscription is live; the repeats are dropped as duplicates. */
static int raw_warm_up(raw_sock *r, uint64_t seq, pf_zsub *sub, seen *s)
{
    for (int t = 0; t < 500 && s->n == 0; t++) {
        raw_send(r, seq, 1000);
        pf_zsub_poll(sub, 10, on_note, s);
    }
    return s->n > 0;
}

static int poll_for_hash(pf_zsub *sub, seen *s, uint64_t h, int ms)
{
    for (int t = 0; t < ms; t += 10) {
        pf_zsub_poll(sub, 10, on_note, s);
        for (int i = 0; i < s->n; i++)
            if (s->hashes[i] == h)
                return 1;
    }
    return 0;
}

static void *serve_replays(void *arg)
{
    pub_job *j = arg;
    while (atomic_load(&j->phase) != 2)
        pf_zpub_service(j->pub, 5);
    return NULL;
}

/* A peer jumps seq from 0 to 2^63 - 1: the gap is the whole seq space. The
 * replay's reply budget ("what we asked for plus 64") overflowed a signed
 * 64-bit counter there (UBSan: signed overflow; without it the budget went
 * negative and the replay gave up before its first reply). The replay
 * socket holds seqs 1..3: they must still be asked for and delivered. */
Test(net_zmq, a_seq_jump_to_the_top_still_replays)
{
    raw_sock rp;
    raw_open(&rp, ZMQ_PUB);
    pub_job job = {.pub = open_pub(1)};
    for (uint64_t h = 100; h <= 103; h++) /* replay ring: seq 0..3 = hashes 100..103 */
        cr_assert_eq(publish_hash(job.pub, h, PF_ZPUB_BUFFER_ONLY), 0);
    pthread_t th = start_job(serve_replays, &job);

    pf_zsub_config sc = sub_config(job.pub);
    sc.endpoint = rp.ep; /* the events from the raw socket, replays from job.pub */
    sc.replay_timeout_ms = 2000;
    pf_zsub *sub = open_sub(&sc);
    seen s = {0};
    int warmed = raw_warm_up(&rp, 0, sub, &s);
    raw_send(&rp, (uint64_t)INT64_MAX, 7);
    int got = warmed && poll_for_hash(sub, &s, 7, 5000);
    pf_zsub_stats st = finish(&job, th, sub);
    raw_close(&rp);

    cr_assert(warmed, "the subscription never went live");
    cr_assert(got, "the batch after the jump never arrived");
    cr_expect_eq(st.gaps, 1);
    cr_expect_eq(st.replays, 1);
    cr_expect_eq(st.replayed, 3);
    cr_expect_eq(s.replayed, 3);
    cr_expect_eq(st.missed, (uint64_t)INT64_MAX - 1);
    cr_expect_eq(st.lost, (uint64_t)INT64_MAX - 1 - 3);
    /* delivered in order: the replayed 101..103, then the jump */
    cr_assert_eq(s.n, 5);
    cr_expect_eq(s.hashes[1], 101);
    cr_expect_eq(s.hashes[3], 103);
    cr_expect_eq(s.hashes[4], 7);
}

/* The replay socket accepts the request and never answers (a wrong port
 * given to --replay, a stalled server). Each gap used to cost a full
 * replay_timeout_ms inside pf_zsub_poll, one gap after another; after one
 * unanswered replay the rank's replays pause and later gaps are counted
 * lost at once: one replay asked, not five (the count is the behaviour; a
 * time bound would only restate it, less reliably). */
Test(net_zmq, an_unanswered_replay_pauses_replays)
{
    raw_sock rp, dead;
    raw_open(&rp, ZMQ_PUB);
    raw_open(&dead, ZMQ_ROUTER); /* bound, never read */
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = rp.ep;
    sc.replay_endpoint = dead.ep;
    sc.replay_timeout_ms = 200;
    pf_zsub *sub = open_sub(&sc);
    seen s = {0};
    int warmed = raw_warm_up(&rp, 0, sub, &s);
    for (uint64_t q = 2; q <= 10; q += 2) /* five gaps: 1, 3, 5, 7, 9 missing */
        raw_send(&rp, q, q);
    int got = warmed && poll_for_hash(sub, &s, 10, 10000);
    pf_zsub_stats st;
    pf_zsub_stats_get(sub, &st);
    pf_zsub_close(sub);
    raw_close(&dead);
    raw_close(&rp);

    cr_assert(warmed, "the subscription never went live");
    cr_assert(got, "the last batch never arrived");
    cr_expect_eq(st.gaps, 5);
    cr_expect_eq(st.missed, 5);
    cr_expect_eq(st.replays, 1, "%llu replays asked of a socket that never answers",
                 (unsigned long long)st.replays);
    cr_expect_eq(st.lost, 5); /* the later four at once, not a timeout each */
}

/* ---- zsub: the message after seq 2^63 - 1 ---------------------------------- */

/* A peer sends seq 2^63 - 1 (a valid, non-negative seq), then any other seq:
 * handle() computed "last_seq + 1" before comparing, a signed overflow
 * (UBSan aborts: the build uses -fno-sanitize-recover). The second message is
 * a restart (seq went back) and must be delivered as one. */
Test(net_zmq, the_message_after_the_top_seq_is_a_restart)
{
    raw_sock rp;
    raw_open(&rp, ZMQ_PUB);
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = rp.ep;
    pf_zsub *sub = NULL;
    cr_assert_eq(pf_zsub_open(&sc, &sub, NULL), 0);
    seen s = {0};
    cr_assert(raw_warm_up(&rp, (uint64_t)INT64_MAX, sub, &s), "the subscription never went live");
    raw_send(&rp, 0, 7);
    int got = poll_for_hash(sub, &s, 7, 5000);
    pf_zsub_stats st;
    pf_zsub_stats_get(sub, &st);
    pf_zsub_close(sub);
    raw_close(&rp);
    cr_assert(got, "the batch after the top seq never arrived");
    cr_expect_eq(st.restarts, 1);
    cr_expect_eq(s.restarts, 1);
    cr_expect_eq(st.gaps, 0);
}

/* ---- zpub: the queue must stay decodable by a subscriber with default limits */

/* Ask p's replay socket for everything and decode what comes back with the
 * decoder's default limits. Returns the number of payloads; *bad those that
 * did not decode, *hashes and *tokens what the good ones held. */
static int replay_all(pf_zpub *p, int *bad, uint64_t *hashes, uint64_t *tokens, double *min_ts)
{
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_connect(d, pf_zpub_replay_endpoint(p)), 0);
    uint8_t start[8] = {0};
    zmq_send(d, "", 0, ZMQ_SNDMORE);
    zmq_send(d, start, 8, 0);
    for (int t = 0; t < 500 && pf_zpub_service(p, 10) == 0; t++)
        ;
    int n = 0;
    *bad = 0;
    *hashes = *tokens = 0;
    for (;;) {
        /* the publisher sends a replay as the peer takes it: service it
         * while waiting (5 s at most) */
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        for (int t = 0; t < 1000 && zmq_poll(&it, 1, 0) == 0; t++)
            pf_zpub_service(p, 5);
        zmq_msg_t fr[3];
        for (int i = 0; i < 3; i++) {
            zmq_msg_init(&fr[i]);
            cr_assert_geq(zmq_msg_recv(&fr[i], d, ZMQ_DONTWAIT), 0, "no replay reply");
        }
        int64_t seq = 0;
        memcpy(&seq, zmq_msg_data(&fr[1]), 8);
        int end = seq == -1;
        if (!end) {
            pf_kvev_batch b;
            if (pf_kvev_decode(zmq_msg_data(&fr[2]), zmq_msg_size(&fr[2]), NULL, &b, NULL) == 0) {
                for (uint32_t i = 0; i < b.n_events; i++) {
                    *hashes += b.events[i].n_hashes;
                    *tokens += b.events[i].n_tokens;
                }
                if (min_ts && (n == 0 || b.ts < *min_ts))
                    *min_ts = b.ts;
            } else {
                (*bad)++;
            }
            pf_kvev_batch_free(&b);
            n++;
        }
        for (int i = 0; i < 3; i++)
            zmq_msg_close(&fr[i]);
        if (end)
            break;
    }
    zmq_close(d);
    zmq_ctx_term(ctx);
    return n;
}

/* Five events of 65,536 hashes each (each within the per-event cap) made
 * one batch of 327,680 hashes: past the decoder's max_batch_hashes
 * (262,144), so every subscriber refused the whole batch. The batch that
 * goes out early, mid-step, carries the last batch's time (it carried 0,
 * 1970, and time went back for a consumer reading ts). */
Test(net_zmq, queued_hashes_stay_within_a_batch)
{
    enum { N = 65536, EVENTS = 5 };
    pf_zpub *p = open_pub(1);
    uint64_t *h = malloc(N * sizeof *h);
    cr_assert(h);
    for (uint32_t i = 0; i < N; i++)
        h[i] = i;
    const uint64_t first = 1u << 30;
    cr_assert_eq(pf_zpub_stored(p, &first, 1, NULL, NULL, 0, 16), 0);
    cr_assert_eq(pf_zpub_flush(p, 5.0), 0); /* the step before */
    for (int k = 0; k < EVENTS; k++)
        cr_assert_eq(pf_zpub_stored(p, h, N, NULL, NULL, 0, 16), 0);
    cr_assert_eq(pf_zpub_flush(p, 6.0), 0);
    free(h);
    int bad;
    uint64_t hashes, tokens;
    double min_ts = 0;
    int n = replay_all(p, &bad, &hashes, &tokens, &min_ts);
    pf_zpub_close(p);
    cr_expect_geq(n, 3, "one batch of %d x %d hashes", EVENTS, N);
    cr_expect_eq(bad, 0, "%d of %d batches refused by the decoder", bad, n);
    cr_expect_eq(hashes, (uint64_t)EVENTS * N + 1);
    cr_expect_eq(min_ts, 5.0, "a batch stamped %g, before the step it follows", min_ts);
}

/* n token ids, each v (malloc'd) */
static uint32_t *token_ids(uint32_t n, uint32_t v)
{
    uint32_t *t = malloc(n * sizeof *t);
    cr_assert(t);
    for (uint32_t i = 0; i < n; i++)
        t[i] = v;
    return t;
}

/* Two events of 600,000 token ids (3 msgpack bytes each, 1.8 MB) made one
 * payload of 3.6 MB: past the decoder's 2 MiB max_bytes. */
Test(net_zmq, queued_tokens_stay_within_a_payload)
{
    enum { T = 600000 };
    pf_zpub *p = open_pub(1);
    uint32_t *tok = token_ids(T, 1000);
    const uint64_t a = 1, b = 2;
    cr_assert_eq(pf_zpub_stored(p, &a, 1, NULL, tok, T, 16), 0);
    cr_assert_eq(pf_zpub_stored(p, &b, 1, &a, tok, T, 16), 0);
    cr_assert_eq(pf_zpub_flush(p, 1.0), 0);
    free(tok);
    int bad;
    uint64_t hashes, tokens;
    int n = replay_all(p, &bad, &hashes, &tokens, NULL);
    pf_zpub_close(p);
    cr_expect_eq(bad, 0, "%d of %d batches refused by the decoder", bad, n);
    cr_expect_eq(tokens, 2 * (uint64_t)T);
}

/* A lone event that no payload can carry (1,000,000 ids of 5 bytes: 5 MB)
 * is refused when queued, not published for every subscriber to refuse. */
Test(net_zmq, an_event_too_large_for_any_payload_is_refused)
{
    enum { T = 1000000 };
    pf_zpub *p = open_pub(1);
    uint32_t *tok = token_ids(T, 100000);
    const uint64_t a = 1;
    cr_expect_eq(pf_zpub_stored(p, &a, 1, NULL, tok, T, 16), PF_ERR_ARG);
    cr_expect_eq(pf_zpub_pending(p), 0);
    free(tok);
    pf_zpub_close(p);
}

/* ---- zpub: an oversized replay request ------------------------------------ */

/* The ROUTER replay socket took inbound messages of any size: a peer (the
 * sockets bind every interface by default) could make the publisher buffer
 * a frame as large as it cared to send. A request is [b"", 8 bytes]; one
 * whose frame is 8 MiB must be refused by libzmq (ZMQ_MAXMSGSIZE), never
 * reach pf_zpub_service. */
Test(net_zmq, an_oversized_replay_request_is_not_taken_in)
{
    pf_zpub *p = open_pub(1);
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_connect(d, pf_zpub_replay_endpoint(p)), 0);
    size_t big = 8u << 20;
    char *junk = calloc(1, big);
    cr_assert(junk);
    uint8_t start[8] = {0};
    zmq_send(d, junk, big, ZMQ_SNDMORE);
    zmq_send(d, start, 8, 0);
    free(junk);
    int answered = 0;
    for (int t = 0; t < 100; t++)
        answered += pf_zpub_service(p, 10);
    /* a proper request is still answered (on a fresh connection) */
    void *d2 = zmq_socket(ctx, ZMQ_DEALER);
    zmq_setsockopt(d2, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_connect(d2, pf_zpub_replay_endpoint(p)), 0);
    zmq_send(d2, "", 0, ZMQ_SNDMORE);
    zmq_send(d2, start, 8, 0);
    int good = 0;
    for (int t = 0; t < 300 && !good; t++)
        good = pf_zpub_service(p, 10);
    zmq_close(d);
    zmq_close(d2);
    zmq_ctx_term(ctx);
    pf_zpub_close(p);
    cr_expect_eq(answered, 0, "an 8 MiB replay request was read and answered");
    cr_expect_eq(good, 1);
}

/* ---- zsub: a replay reply of more than three frames ------------------------ */

typedef struct bad_replayer bad_replayer;
struct bad_replayer {
    raw_sock router;
    atomic_int stop;
    void (*answer)(bad_replayer *b, const zmq_msg_t *id); /* one request's replies */
};

/* A replay server of the tests' own: takes each request in whole and has
 * b->answer reply to it, until stop. */
static void *serve_own_replays(void *arg)
{
    bad_replayer *b = arg;
    int to = 50;
    zmq_setsockopt(b->router.sock, ZMQ_RCVTIMEO, &to, sizeof to);
    while (!atomic_load(&b->stop)) {
        zmq_msg_t id;
        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, b->router.sock, 0) < 0) {
            zmq_msg_close(&id);
            continue;
        }
        while (zmq_msg_more(&id)) { /* the rest of the request */
            zmq_msg_t m;
            zmq_msg_init(&m);
            zmq_msg_recv(&m, b->router.sock, 0);
            int more = zmq_msg_more(&m);
            zmq_msg_close(&m);
            if (!more)
                break;
        }
        b->answer(b, &id);
        zmq_msg_close(&id);
    }
    return NULL;
}

/* [id, "", seq, payload] to the peer that sent id; seq -1 is the end
 * marker. */
static void reply(bad_replayer *b, const zmq_msg_t *id, int64_t seq, const char *payload)
{
    uint8_t sb[8];
    put_seq(sb, (uint64_t)seq);
    zmq_send(b->router.sock, zmq_msg_data((zmq_msg_t *)id), zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE);
    zmq_send(b->router.sock, "", 0, ZMQ_SNDMORE);
    zmq_send(b->router.sock, sb, 8, ZMQ_SNDMORE);
    zmq_send(b->router.sock, payload, strlen(payload), 0);
}

/* A 4-frame reply (malformed), then the end marker. */
static void answer_malformed(bad_replayer *b, const zmq_msg_t *id)
{
    uint8_t sb[8];
    put_seq(sb, 1);
    zmq_send(b->router.sock, zmq_msg_data((zmq_msg_t *)id), zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE);
    zmq_send(b->router.sock, "", 0, ZMQ_SNDMORE);
    zmq_send(b->router.sock, sb, 8, ZMQ_SNDMORE);
    zmq_send(b->router.sock, "x", 1, ZMQ_SNDMORE);
    zmq_send(b->router.sock, "extra", 5, 0);
    reply(b, id, -1, "");
}

/* Three well-formed replies for a seq far past any gap, 100 ms apart, then
 * the end marker. */
static void answer_stray(bad_replayer *b, const zmq_msg_t *id)
{
    for (int k = 0; k < 4 && !atomic_load(&b->stop); k++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        reply(b, id, k < 3 ? 1000000 : -1, "");
    }
}

/* A live PUB and a replay server answering with `answer`, and a subscriber
 * on both (replay_timeout_ms 0: the default), warmed up. */
typedef struct {
    raw_sock rp;
    bad_replayer br;
    pthread_t th;
    pf_zsub *sub;
    seen s;
    int warmed;
} replay_rig;

static void rig_open(replay_rig *r, void (*answer)(bad_replayer *, const zmq_msg_t *),
                     int replay_timeout_ms)
{
    memset(r, 0, sizeof *r);
    raw_open(&r->rp, ZMQ_PUB);
    raw_open(&r->br.router, ZMQ_ROUTER);
    r->br.answer = answer;
    cr_assert_eq(pthread_create(&r->th, NULL, serve_own_replays, &r->br), 0);
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = r->rp.ep;
    sc.replay_endpoint = r->br.router.ep;
    if (replay_timeout_ms)
        sc.replay_timeout_ms = replay_timeout_ms;
    r->sub = open_sub(&sc);
    r->warmed = raw_warm_up(&r->rp, 0, r->sub, &r->s);
}

/* Close the rig, the subscriber's stats in *st. */
static void rig_close(replay_rig *r, pf_zsub_stats *st)
{
    pf_zsub_stats_get(r->sub, st);
    pf_zsub_close(r->sub);
    atomic_store(&r->br.stop, 1);
    pthread_join(r->th, NULL);
    raw_close(&r->br.router);
    raw_close(&r->rp);
}

/* Every malformed message is a message: the live path counts both, the
 * replay path counted only the malformed one, so malformed could pass
 * messages. */
Test(net_zmq, a_malformed_replay_reply_is_counted_as_a_message)
{
    replay_rig r;
    rig_open(&r, answer_malformed, 0);
    cr_assert(r.warmed, "the subscription never went live");
    raw_send(&r.rp, 2, 7); /* seq 1 missing: a replay */
    int got = poll_for_hash(r.sub, &r.s, 7, 5000);
    pf_zsub_stats st;
    rig_close(&r, &st);
    cr_assert(got);
    cr_expect_eq(st.replays, 1);
    cr_expect_eq(st.malformed, 1);
    /* warm-up messages (>= 1), the 4-frame reply, the end marker, seq 2 */
    cr_expect_eq(st.messages, st.batches + st.duplicates + st.malformed + 1,
                 "messages %llu, batches %llu, duplicates %llu, malformed %llu",
                 (unsigned long long)st.messages, (unsigned long long)st.batches,
                 (unsigned long long)st.duplicates, (unsigned long long)st.malformed);
}

/* ---- zsub: a replay server that stalls with stray replies ------------------- */

/* Stray replies kept each replay alive (each reset the silence timer) and
 * the end marker then counted it finished, so the rank never paused: every
 * gap held pf_zsub_poll for the whole act, gap after gap. A reply that
 * delivers nothing no longer resets the timer, and a replay that ends
 * short of its gap pauses the rank's replays: one replay for five gaps. */
Test(net_zmq, stray_replay_replies_do_not_hold_the_subscriber)
{
    replay_rig r;
    rig_open(&r, answer_stray, 200);
    const int warmed = r.warmed;
    for (uint64_t q = 2; q <= 10; q += 2) /* five gaps: 1, 3, 5, 7, 9 missing */
        raw_send(&r.rp, q, q);
    int got = warmed && poll_for_hash(r.sub, &r.s, 10, 10000);
    pf_zsub_stats st;
    rig_close(&r, &st);
    cr_assert(warmed, "the subscription never went live");
    cr_assert(got, "the last batch never arrived");
    cr_expect_eq(st.gaps, 5);
    cr_expect_eq(st.replays, 1, "%llu replays asked of a server that stalls with stray replies",
                 (unsigned long long)st.replays);
}

/* ---- zpub: replays go out as the peer takes them --------------------------- */

/* The process's resident set, in MB (Linux). */
static double rss_mb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

/* Four peers ask for a buffer of 100 one-MiB batches and never read. The
 * publisher sent every reply at once, into the peers' pipes: 400 MB held
 * for peers that take nothing (eight peers took a publisher from 206 MB to
 * 1.8 GB). Now each peer's pipe holds ZPUB_REPLAY_HWM (16) messages and the
 * rest waits in the ring, which holds the batches anyway. A peer that does
 * read still gets all 100 and the end marker, servicing as it goes. */
Test(net_zmq, a_peer_that_never_reads_holds_no_replay)
{
    enum { BATCHES = 100, SILENT = 4 };
    pf_zpub *p = open_pub(1);
    const size_t len = 1u << 20;
    char *payload = malloc(len);
    cr_assert(payload);
    memset(payload, 0x5a, len);
    for (int i = 0; i < BATCHES; i++)
        cr_assert_eq(pf_zpub_publish_payload(p, payload, len, PF_ZPUB_BUFFER_ONLY), 0);
    free(payload);
    void *ctx = zmq_ctx_new();
    void *silent[SILENT];
    int linger = 0, rcvhwm = 1; /* each silent peer takes at most one message in */
    const uint8_t start[8] = {0};
    for (int k = 0; k < SILENT; k++) {
        silent[k] = zmq_socket(ctx, ZMQ_DEALER);
        zmq_setsockopt(silent[k], ZMQ_LINGER, &linger, sizeof linger);
        zmq_setsockopt(silent[k], ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm);
        cr_assert_eq(zmq_connect(silent[k], pf_zpub_replay_endpoint(p)), 0);
        zmq_send(silent[k], "", 0, ZMQ_SNDMORE);
        zmq_send(silent[k], start, 8, 0);
    }
    double before = rss_mb();
    int taken = 0;
    for (int t = 0; t < 400 && taken < SILENT; t++)
        taken += pf_zpub_service(p, 5);
    for (int t = 0; t < 100; t++) /* let the pipes fill as far as they will */
        pf_zpub_service(p, 2);
    double grew = rss_mb() - before;
    cr_expect_eq(taken, SILENT, "requests taken: %d", taken);
    cr_expect_lt(grew, 150.0, "%d peers that read nothing grew the publisher by %.0f MB", SILENT, grew);
    int bad;
    uint64_t hashes, tokens;
    int n = replay_all(p, &bad, &hashes, &tokens, NULL);
    cr_expect_eq(n, BATCHES, "a reading peer got %d of %d batches", n, BATCHES);
    for (int k = 0; k < SILENT; k++)
        zmq_close(silent[k]);
    zmq_ctx_term(ctx);
    pf_zpub_close(p);
}

/* A peer that reads gets its replay at the pace it reads, not 16 replies
 * a service call: the publisher calls pf_zpub_service once a step, and a
 * replay of 10,000 batches took 625 steps (past the subscriber's 30 s at a
 * 48 ms tick). Here 4000 batches, one call between reads: each call pumps
 * for up to 2 ms while the replay moves (ZPUB_PUMP_BUDGET_S). 16 a call
 * would need 251 calls; a loaded machine still moves well over 32. */
Test(net_zmq, a_reading_peer_gets_its_replay_in_few_service_calls)
{
    enum { BATCHES = 4000 };
    pf_zpub *p = open_pub(1);
    char payload[64];
    memset(payload, 1, sizeof payload);
    for (int i = 0; i < BATCHES; i++)
        cr_assert_eq(pf_zpub_publish_payload(p, payload, sizeof payload, PF_ZPUB_BUFFER_ONLY), 0);
    void *ctx = zmq_ctx_new();
    void *d = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
    cr_assert_eq(zmq_connect(d, pf_zpub_replay_endpoint(p)), 0);
    const uint8_t start[8] = {0};
    zmq_send(d, "", 0, ZMQ_SNDMORE);
    zmq_send(d, start, 8, 0);
    int got = 0, calls = 0, done = 0;
    for (int t = 0; t < 5000 && !done; t++) {
        calls += pf_zpub_service(p, 5) > 0 || got > 0; /* calls from the one that took it */
        /* read what has come, up to 5 ms of quiet */
        zmq_pollitem_t it = {d, 0, ZMQ_POLLIN, 0};
        while (!done && zmq_poll(&it, 1, 5) > 0) {
            zmq_msg_t fr[3];
            for (int i = 0; i < 3; i++) {
                zmq_msg_init(&fr[i]);
                cr_assert_geq(zmq_msg_recv(&fr[i], d, 0), 0);
            }
            const uint8_t *sb = zmq_msg_data(&fr[1]);
            if (sb[0] == 0xff && sb[7] == 0xff)
                done = 1;
            else
                got++;
            for (int i = 0; i < 3; i++)
                zmq_msg_close(&fr[i]);
        }
    }
    zmq_close(d);
    zmq_ctx_term(ctx);
    pf_zpub_close(p);
    cr_assert(done, "no end marker after %d batches", got);
    cr_expect_eq(got, BATCHES);
    cr_expect_leq(calls, BATCHES / 32, "%d service calls for %d batches", calls, BATCHES);
}
