/* tests/test_net_kvpub.c - net/kvpub: the scheduler's block events as vLLM's
 * KV-event batches, read back over a real socket on 127.0.0.1 by net/zsub:
 * the fields vLLM sends (parent none for a first block, the block's token
 * ids, block size, lora_id null, medium "GPU"), a request's consecutive
 * blocks merged into one BlockStored, the per-batch caps splitting a step's
 * events without losing or reordering any, a new run announced by
 * AllBlocksCleared (also after the old run's scheduler is gone), and bad
 * configurations refused. Publisher and subscriber
 * share the test's thread (no replay here: tests/race_net_kvpub.c repairs a
 * gap with a publisher thread). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "net/kvpub.h"
#include "net/zsub.h"

static pf_req G(double arrival, int prompt, int output, int group, int shared)
{
    pf_req r = {0};
    r.arrival = arrival;
    r.prompt = prompt;
    r.output = output;
    r.group = group;
    r.shared_tokens = shared;
    return r;
}

/* 40 requests in three prefix groups sharing 48 prompt tokens, on a
 * 40-frame pool with a 64-token step budget: prefills store up to four
 * blocks a step, and the small pool evicts. */
static pf_sched *mk_sched(void)
{
    static pf_req j[40];
    for (int i = 0; i < 40; i++)
        j[i] = G(i * 0.5, 80 + (i % 5) * 10, 20 + (i % 7) * 9, i % 3, 48);
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.block_size = 16;
    p.max_num_batched_tokens = 64;
    p.watermark = 0;
    p.prefix_caching = 1;
    char err[200];
    pf_sched *s = pf_sched_create(&p, j, 40, 40, NULL, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    return s;
}

/* What the scheduler emitted, by hash: the filling request and block. */
typedef struct {
    pf_kvpub *pub;
    pf_sched *s;
    uint64_t hash[4096];
    int32_t req[4096], block[4096];
    int n, stored, removed;
    int last_stored; /* the newest event was a store */
} emitted;

static void record(void *ctx, const pf_sched_block_event *e)
{
    emitted *m = ctx;
    m->last_stored = e->kind == PF_SCHED_BLOCK_STORED;
    if (e->kind == PF_SCHED_BLOCK_STORED) {
        m->stored++;
        if (m->n < 4096) {
            m->hash[m->n] = e->hash;
            m->req[m->n] = e->req;
            m->block[m->n++] = e->block;
        }
    } else {
        m->removed++;
    }
    pf_kvpub_on_block(m->pub, e);
}

/* What the subscriber saw, checked event by event against `emitted`. */
typedef struct {
    const emitted *em;
    uint32_t max_hashes, max_tokens; /* most hashes, token ids in one batch */
    uint64_t last_seq;
    int array_like; /* 1 when every non-empty batch came as arrays */
    int batches, nonempty, stored_events, merged_events, blocks_stored, blocks_removed, cleared;
    int bad_fields, bad_tokens, bad_parent, unknown_hash;
    uint64_t first_cleared_at; /* event index of the first AllBlocksCleared, 0: none */
    uint64_t events;
} seen;

static int find(const emitted *m, uint64_t h)
{
    for (int i = 0; i < m->n; i++)
        if (m->hash[i] == h)
            return i;
    return -1;
}

static void on_note(void *ctx, const pf_zsub_note *n)
{
    seen *v = ctx;
    if (n->kind != PF_ZSUB_BATCH)
        return;
    const pf_kvev_batch *b = n->batch;
    v->batches++;
    v->last_seq = n->seq;
    if (b->n_events > 0)
        v->array_like = (v->nonempty ? v->array_like : 1) && b->array_like;
    v->nonempty += b->n_events > 0;
    uint32_t nh = 0, nt = 0;
    for (uint32_t i = 0; i < b->n_events; i++) {
        const pf_kvev_event *e = &b->events[i];
        v->events++;
        nh += e->n_hashes;
        nt += e->n_tokens;
        if (e->type == PF_KVEV_CLEARED) {
            v->cleared++;
            if (!v->first_cleared_at)
                v->first_cleared_at = v->events;
            continue;
        }
        if (strcmp(e->medium, "GPU") != 0 || e->has_lora)
            v->bad_fields++;
        if (e->type == PF_KVEV_REMOVED) {
            v->blocks_removed += (int)e->n_hashes;
            continue;
        }
        v->stored_events++;
        v->merged_events += e->n_hashes > 1;
        v->blocks_stored += (int)e->n_hashes;
        if (e->block_size != 16 || e->n_tokens != 16 * e->n_hashes)
            v->bad_fields++;
        for (uint32_t k = 0; k < e->n_hashes; k++) {
            int at = find(v->em, e->hashes[k].u);
            if (at < 0 || e->hashes[k].kind != PF_KVEV_HASH_UINT) {
                v->unknown_hash++;
                continue;
            }
            /* the parent: none for a first block, else the chain's previous hash */
            if (k == 0 && v->em->block[at] == 0 && e->parent.kind != PF_KVEV_HASH_NONE)
                v->bad_parent++;
            if (k == 0 && v->em->block[at] > 0 && e->parent.kind != PF_KVEV_HASH_UINT)
                v->bad_parent++;
            int prev = k > 0 ? find(v->em, e->hashes[k - 1].u) : at;
            if (prev < 0 || v->em->req[prev] != v->em->req[at] ||
                (k > 0 && v->em->block[prev] + 1 != v->em->block[at]))
                v->bad_parent++; /* merged blocks: one request's, consecutive */
            pf_token_src src;
            cr_assert_eq(pf_sched_token_src(v->em->s, v->em->req[at], &src), PF_OK);
            for (int t = 0; t < 16; t++)
                if (e->token_ids[k * 16 + (uint32_t)t] !=
                    (uint32_t)pf_token_at(&src, (int64_t)v->em->block[at] * 16 + t))
                    v->bad_tokens++;
        }
    }
    if (nh > v->max_hashes)
        v->max_hashes = nh;
    if (nt > v->max_tokens)
        v->max_tokens = nt;
}

static pf_zsub *connect_to(pf_kvpub *pub, seen *v)
{
    pf_zsub_config sc = pf_zsub_config_default();
    sc.endpoint = pf_kvpub_endpoint(pub);
    pf_zsub *sub;
    const char *why;
    cr_assert_eq(pf_zsub_open(&sc, &sub, &why), 0, "%s", why);
    /* heartbeats (empty batches) until the subscription is live */
    for (int t = 0; t < 500 && v->batches == 0; t++) {
        cr_assert_eq(pf_kvpub_heartbeat(pub, 0), 0);
        pf_zsub_poll(sub, 10, on_note, v);
    }
    cr_assert_gt(v->batches, 0, "the subscription never went live");
    return sub;
}

static pf_kvpub *open_pub_enc(uint32_t max_blocks, uint32_t max_tokens, int array_like)
{
    pf_kvpub_config c = pf_kvpub_config_default();
    c.zpub.array_like = array_like;
    c.zpub.endpoint = "tcp://127.0.0.1:*";
    c.max_blocks = max_blocks;
    c.max_tokens = max_tokens;
    pf_kvpub *pub;
    const char *why;
    cr_assert_eq(pf_kvpub_open(&c, &pub, &why), 0, "%s", why);
    return pub;
}

/* Every round trip's set-up: em and v cleared, a publisher with these caps
 * and encoding (0 maps, 1 arrays), and a subscriber already live. */
static pf_zsub *start(pf_kvpub **pub, emitted *em, seen *v, uint32_t max_blocks, uint32_t max_tokens,
                      int array_like)
{
    memset(em, 0, sizeof *em);
    memset(v, 0, sizeof *v);
    v->em = em;
    *pub = open_pub_enc(max_blocks, max_tokens, array_like);
    return connect_to(*pub, v);
}

/* ... and its tear-down: the subscriber, the publisher, then the scheduler. */
static void stop(pf_zsub *sub, pf_kvpub *pub, pf_sched *s)
{
    pf_zsub_close(sub);
    pf_kvpub_close(pub);
    pf_sched_destroy(s);
}

/* Run s to the end, one flush per step, draining the subscriber as it goes
 * (libzmq's high-water mark would drop what waits too long), then until
 * every batch sent has arrived. */
static void run_and_drain(pf_sched *s, pf_kvpub *pub, pf_zsub *sub, seen *v)
{
    int rc;
    while ((rc = pf_sched_step(s)) == 0) {
        cr_assert_eq(pf_kvpub_flush(pub, pf_sched_now(s)), 0);
        pf_zsub_poll(sub, 0, on_note, v);
    }
    cr_assert_eq(rc, 1);
    cr_assert_eq(pf_kvpub_flush(pub, pf_sched_now(s)), 0);
    /* until the last seq arrived (heartbeats sent before the subscription
     * was live never arrive: count from the first one that did) */
    for (int t = 0; t < 500 && v->last_seq + 1 < pf_kvpub_next_seq(pub); t++)
        pf_zsub_poll(sub, 10, on_note, v);
}

/* A scheduler run published and read back: a new scheduler attached to
 * pub (its block events recorded into em first, then published), stepped
 * to the end, its batches drained into v. Returns the scheduler. */
static pf_sched *publish_run(pf_kvpub *pub, pf_zsub *sub, emitted *em, seen *v)
{
    pf_sched *s = mk_sched();
    em->pub = pub;
    em->s = s;
    em->n = 0;
    pf_kvpub_attach(pub, s);
    pf_sched_on_block(s, record, em); /* chain: record, then the publisher */
    run_and_drain(s, pub, sub, v);
    return s;
}

/* What every exact round trip must show: the events the scheduler emitted,
 * and no malformed field, token, parent or hash at the subscriber. */
static void expect_exact(const seen *v, const emitted *em)
{
    cr_expect_eq(v->blocks_stored, em->stored);
    cr_expect_eq(v->blocks_removed, em->removed);
    cr_expect_eq(v->bad_tokens, 0);
    cr_expect_eq(v->bad_parent, 0);
    cr_expect_eq(v->unknown_hash, 0);
}

Test(net_kvpub, fields_tokens_and_merging_as_vllm)
{
    static emitted em;
    seen v;
    pf_kvpub *pub;
    pf_zsub *sub = start(&pub, &em, &v, 4096, 65536, 0);
    int warm = v.batches;
    uint64_t first_run_seq = pf_kvpub_next_seq(pub);
    pf_sched *s = publish_run(pub, sub, &em, &v);
    pf_kvpub_stats st;
    pf_kvpub_stats_get(pub, &st);
    pf_prefix_stats ps;
    pf_sched_prefix_stats(s, &ps);

    cr_expect_eq(v.last_seq + 1, pf_kvpub_next_seq(pub), "the last batch arrived");
    cr_expect_eq((uint64_t)(v.batches - warm), pf_kvpub_next_seq(pub) - first_run_seq, "and every one before it");
    cr_expect_gt(em.stored, 0);
    cr_expect_gt(em.removed, 0, "the 40-frame pool evicts");
    cr_expect_eq(em.stored, ps.inserts);
    cr_expect_eq(em.removed, ps.evictions);
    expect_exact(&v, &em);
    cr_expect_eq((uint64_t)v.blocks_stored, st.blocks_stored);
    cr_expect_eq((uint64_t)v.stored_events, st.events_stored);
    cr_expect_gt(v.merged_events, 0, "a prefill chunk's blocks travel in one BlockStored");
    cr_expect_eq(v.array_like, 0, "maps, as current vLLM");
    cr_expect_lt(v.stored_events, v.blocks_stored);
    cr_expect_eq(v.bad_fields, 0);
    cr_expect_eq(v.cleared, 0);
    cr_expect_eq(st.early_flushes, 0);
    cr_expect_eq(st.errors, 0);
    stop(sub, pub, s);
}

/* Older vLLM's array_like encoding: the same events arrive. */
Test(net_kvpub, array_like_encoding_reads_the_same)
{
    static emitted em;
    seen v;
    pf_kvpub *pub;
    pf_zsub *sub = start(&pub, &em, &v, 4096, 65536, 1);
    pf_sched *s = publish_run(pub, sub, &em, &v);
    cr_expect_eq(v.last_seq + 1, pf_kvpub_next_seq(pub));
    cr_expect_eq(v.array_like, 1, "the batches came as arrays");
    expect_exact(&v, &em);
    cr_expect_gt(v.merged_events, 0);
    cr_expect_eq(v.bad_fields, 0);
    stop(sub, pub, s);
}

/* Caps of 3 blocks and 40 tokens (two 16-token blocks) per batch: steps
 * that store four blocks are split into early batches; nothing is lost. */
Test(net_kvpub, caps_split_batches_without_loss)
{
    static emitted em;
    seen v;
    pf_kvpub *pub;
    pf_zsub *sub = start(&pub, &em, &v, 3, 40, 0);
    pf_sched *s = publish_run(pub, sub, &em, &v);
    pf_kvpub_stats st;
    pf_kvpub_stats_get(pub, &st);
    cr_expect_eq(v.last_seq + 1, pf_kvpub_next_seq(pub));
    cr_expect_gt(st.early_flushes, 0);
    cr_expect_leq(v.max_hashes, 3);
    cr_expect_leq(v.max_tokens, 32, "40 tokens hold two 16-token blocks");
    expect_exact(&v, &em);
    stop(sub, pub, s);
}

/* A second run on the same publisher starts with AllBlocksCleared: a
 * consumer drops the first run's blocks before the new ones arrive. */
Test(net_kvpub, new_run_is_announced_by_all_blocks_cleared)
{
    static emitted em;
    seen v;
    pf_kvpub *pub;
    pf_zsub *sub = start(&pub, &em, &v, 4096, 65536, 0);
    pf_sched *s = publish_run(pub, sub, &em, &v);
    cr_expect_eq(v.cleared, 0);
    uint64_t events_first = v.events;
    pf_sched *s2 = publish_run(pub, sub, &em, &v);
    cr_expect_eq(v.cleared, 1);
    cr_expect_eq(v.first_cleared_at, events_first + 1, "the clear comes before the second run's events");
    cr_expect_eq(v.bad_tokens, 0);
    pf_kvpub_attach(pub, NULL); /* detach while s2 exists */
    stop(sub, pub, s);
    pf_sched_destroy(s2);
}

/* kvpub.h: attaching a new run never touches the old scheduler, which may
 * be destroyed already. Under a 8-token cap every 16-token block travels
 * alone, so a step that stores last leaves its block queued, over the cap;
 * attaching the next run queues an AllBlocksCleared, which sends that block
 * early, stamped with the time read from the old, freed scheduler (a heap
 * use-after-free: ASan aborts here). The block and the clear must still
 * arrive, in that order, nothing lost. */
Test(net_kvpub, attaching_a_new_run_never_reads_the_old_scheduler)
{
    static emitted em;
    seen v;
    pf_kvpub *pub;
    pf_zsub *sub = start(&pub, &em, &v, 4096, 8, 0);
    pf_sched *s = mk_sched();
    em.pub = pub;
    em.s = s;
    pf_kvpub_attach(pub, s);
    pf_sched_on_block(s, record, &em);
    int rc;
    while ((rc = pf_sched_step(s)) == 0 && !em.last_stored) {
        cr_assert_eq(pf_kvpub_flush(pub, pf_sched_now(s)), 0);
        pf_zsub_poll(sub, 0, on_note, &v);
    }
    cr_assert_eq(rc, 0, "the run ended before a step that stored last");
    pf_sched_destroy(s); /* not detached: kvpub.h allows it */
    pf_sched *s2 = mk_sched();
    em.s = s2; /* the same workload: the token ids on_note checks are the same */
    pf_kvpub_attach(pub, s2);
    cr_assert_eq(pf_kvpub_flush(pub, 1.0), 0);
    for (int t = 0; t < 500 && v.last_seq + 1 < pf_kvpub_next_seq(pub); t++)
        pf_zsub_poll(sub, 10, on_note, &v);
    pf_kvpub_stats st;
    pf_kvpub_stats_get(pub, &st);
    cr_expect_eq(v.last_seq + 1, pf_kvpub_next_seq(pub), "the last batch arrived");
    cr_expect_gt(em.stored, 0);
    expect_exact(&v, &em); /* the queued block too */
    cr_expect_eq(v.cleared, 1);
    cr_expect_eq(v.first_cleared_at, v.events, "the clear comes after the old run's last block");
    cr_expect_gt(st.early_flushes, 0);
    cr_expect_eq(st.errors, 0);
    pf_kvpub_attach(pub, NULL);
    stop(sub, pub, s2);
}

Test(net_kvpub, bad_configuration_is_refused)
{
    pf_kvpub_config c = pf_kvpub_config_default();
    pf_kvpub *pub = NULL;
    const char *why = NULL;
    c.zpub.endpoint = "tcp://127.0.0.1:*";
    c.max_blocks = 0;
    cr_expect_eq(pf_kvpub_open(&c, &pub, &why), PF_ERR_ARG);
    cr_expect_str_not_empty(why);
    c.max_blocks = 4096;
    c.max_tokens = 0;
    cr_expect_eq(pf_kvpub_open(&c, &pub, &why), PF_ERR_ARG);
    c.max_tokens = 65536;
    c.zpub.endpoint = "not-an-endpoint";
    cr_expect_neq(pf_kvpub_open(&c, &pub, &why), 0);
    cr_expect_null(pub);
    cr_expect_eq(pf_kvpub_flush(NULL, 0), PF_ERR_ARG);
    pf_kvpub_on_block(NULL, NULL); /* harmless */
}
