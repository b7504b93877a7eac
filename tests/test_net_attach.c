/* tests/test_net_attach.c - net/attach_model: blocks keyed by hash, prefix
 * chains, slots, clears and restarts, the bound, counters from /metrics,
 * and the hash map's deletion checked against a brute-force reference. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "net/attach_model.h"
#include "net/kvev.h"

/* A batch of one event: hashes h[0..n) (ints), parent p (0 = none). */
static void apply(pf_attach *m, int rank, pf_kvev_type t, const uint64_t *h, int n, uint64_t p)
{
    pf_kvev_hash hs[64];
    for (int i = 0; i < n; i++)
        hs[i] = pf_kvev_hash_uint(h[i]);
    pf_kvev_event e = {.type = t, .hashes = hs, .n_hashes = (uint32_t)n, .block_size = 16};
    if (p)
        e.parent = pf_kvev_hash_uint(p);
    pf_kvev_batch b = {.events = &e, .n_events = 1};
    pf_attach_apply(m, rank, &b);
}

static uint64_t prefix_of_slot(pf_attach *m, uint32_t s)
{
    const pf_attach_block *b = pf_attach_slot(m, s);
    cr_assert(b, "slot %u empty", s);
    return b->prefix;
}

Test(net_attach, chains_share_a_prefix_and_slots_are_reused)
{
    pf_attach *m = pf_attach_new(0);
    const uint64_t a[] = {11, 12, 13}, a2[] = {14}, b[] = {21, 22};
    apply(m, 0, PF_KVEV_STORED, a, 3, 0);
    apply(m, 0, PF_KVEV_STORED, a2, 1, 13); /* continues chain a */
    apply(m, 0, PF_KVEV_STORED, b, 2, 999); /* parent unknown: a new prefix */
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_expect_eq(c->blocks_live, 6);
    cr_expect_eq(c->prefixes_live, 2);
    cr_expect_eq(pf_attach_slot_count(m), 6);
    cr_expect_eq(prefix_of_slot(m, 0), prefix_of_slot(m, 3));
    cr_expect_neq(prefix_of_slot(m, 0), prefix_of_slot(m, 4));
    cr_expect_eq(prefix_of_slot(m, 4), prefix_of_slot(m, 5));

    const uint64_t rm[] = {12, 77};
    apply(m, 0, PF_KVEV_REMOVED, rm, 2, 0);
    cr_expect_eq(c->blocks_live, 5);
    cr_expect_eq(c->removed_unknown, 1);
    cr_expect_null(pf_attach_slot(m, 1));
    const uint64_t d[] = {31};
    apply(m, 0, PF_KVEV_STORED, d, 1, 0);
    cr_expect_not_null(pf_attach_slot(m, 1)); /* the freed slot is taken again */
    cr_expect_eq(pf_attach_slot_count(m), 6);
    cr_expect_eq(c->prefixes_live, 3);
    apply(m, 0, PF_KVEV_STORED, d, 1, 0);
    cr_expect_eq(c->stored_again, 1);
    cr_expect_eq(c->blocks_stored, 8);
    cr_expect_eq(c->blocks_removed, 2);

    /* a whole chain removed: its prefix is gone */
    const uint64_t rb[] = {21, 22};
    apply(m, 0, PF_KVEV_REMOVED, rb, 2, 0);
    cr_expect_eq(c->prefixes_live, 2);
    apply(m, 0, PF_KVEV_CLEARED, NULL, 0, 0);
    cr_expect_eq(c->blocks_live, 0);
    cr_expect_eq(c->prefixes_live, 0);
    cr_expect_eq(c->events_cleared, 1);
    cr_expect_eq(pf_attach_slot_count(m), 0);
    pf_attach_free(m);
}

Test(net_attach, ranks_are_kept_apart)
{
    pf_attach *m = pf_attach_new(0);
    const uint64_t h[] = {1, 2};
    apply(m, 0, PF_KVEV_STORED, h, 2, 0);
    apply(m, 1, PF_KVEV_STORED, h, 2, 0); /* same hashes, another engine */
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_expect_eq(c->blocks_live, 4);
    pf_attach_restart(m, 1);
    cr_expect_eq(c->blocks_live, 2);
    cr_expect_eq(c->restarts, 1);
    apply(m, 0, PF_KVEV_REMOVED, h, 2, 0);
    cr_expect_eq(c->blocks_live, 0);
    cr_expect_eq(c->removed_unknown, 0);
    pf_attach_free(m);
}

Test(net_attach, the_block_bound_holds)
{
    pf_attach *m = pf_attach_new(4);
    uint64_t h[10];
    for (int i = 0; i < 10; i++)
        h[i] = 100 + (uint64_t)i;
    apply(m, 0, PF_KVEV_STORED, h, 10, 0);
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_expect_eq(c->blocks_live, 4);
    cr_expect_eq(c->untracked, 6);
    cr_expect_eq(pf_attach_slot_count(m), 4);
    pf_attach_free(m);
}

Test(net_attach, counters_from_metrics)
{
    pf_attach *m = pf_attach_new(0);
    const char *p1 =
        "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.25\n"
        "vllm:num_requests_running 8\nvllm:num_requests_waiting 2\nvllm:num_preemptions_total 10\n"
        "vllm:prefix_cache_queries_total 1000\nvllm:prefix_cache_hits_total 250\nbroken line here\n";
    const char *p2 = "vllm:num_preemptions_total 16\nvllm:prefix_cache_queries_total 1400\n"
                     "vllm:prefix_cache_hits_total 550\n";
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(p1, strlen(p1), NULL, &pg), 0);
    pf_attach_metrics(m, &pg, 10.0);
    pf_prom_page_free(&pg);
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_expect_float_eq(c->usage, 0.375, 1e-12);
    cr_expect_float_eq(c->running, 8, 1e-12);
    cr_expect_float_eq(c->hit_rate, 0.25, 1e-12);
    cr_expect(isnan(c->preempt_rate));
    cr_expect_eq(c->w_metrics_bad_lines, 1);
    cr_assert_eq(pf_prom_parse(p2, strlen(p2), NULL, &pg), 0);
    pf_attach_metrics(m, &pg, 12.0);
    pf_prom_page_free(&pg);
    cr_expect_float_eq(c->preempt_rate, 3.0, 1e-12);        /* 6 in 2 s */
    cr_expect_float_eq(c->hit_rate, 550.0 / 1400, 1e-12);
    cr_expect_float_eq(c->hit_rate_recent, 0.75, 1e-12);    /* 300 of 400 */
    pf_attach_sample(m, 12.0);
    cr_assert_eq(pf_attach_history_len(m), 1);
    cr_expect_float_eq(pf_attach_history_at(m, 0)->preempt_rate, 3.0, 1e-12);
    for (int i = 0; i < PF_ATTACH_HISTORY + 5; i++)
        pf_attach_sample(m, 13.0 + i);
    cr_expect_eq(pf_attach_history_len(m), PF_ATTACH_HISTORY);
    cr_expect_float_eq(pf_attach_history_at(m, 0)->t, 18.0, 1e-12);
    for (int i = 0; i < 20; i++)
        pf_attach_note(m, i, "warning %d", i);
    cr_expect_eq(pf_attach_note_count(m), PF_ATTACH_NOTES);
    cr_expect_str_eq(pf_attach_note_get(m, 0, NULL), "warning 19");
    pf_attach_free(m);
}

/* Many stores and removals of keys drawn from a small space (so probe runs
 * collide and wrap): the model's live set must equal a brute-force one. */
Test(net_attach, live_set_matches_a_reference)
{
    enum { SPACE = 3000 };
    static unsigned char ref[SPACE];
    memset(ref, 0, sizeof ref);
    pf_attach *m = pf_attach_new(0);
    pf_rng r;
    pf_rng_seed(&r, 7);
    uint64_t live = 0;
    for (int it = 0; it < 200000; it++) {
        uint64_t h = (uint64_t)pf_rng_range(&r, 1, SPACE - 1);
        int store = pf_rng_range(&r, 0, 2) != 0;
        apply(m, 0, store ? PF_KVEV_STORED : PF_KVEV_REMOVED, &h, 1, 0);
        if (store && !ref[h]) {
            ref[h] = 1;
            live++;
        } else if (!store && ref[h]) {
            ref[h] = 0;
            live--;
        }
        if (it % 20000 == 0)
            cr_assert_eq(pf_attach_counts_get(m)->blocks_live, live, "iteration %d", it);
    }
    cr_expect_eq(pf_attach_counts_get(m)->blocks_live, live);
    uint64_t seen = 0;
    for (uint32_t s = 0; s < pf_attach_slot_count(m); s++)
        seen += pf_attach_slot(m, s) != NULL;
    cr_expect_eq(seen, live);
    /* every reference key removes exactly one block */
    for (uint64_t h = 1; h < SPACE; h++)
        if (ref[h])
            apply(m, 0, PF_KVEV_REMOVED, &h, 1, 0);
    cr_expect_eq(pf_attach_counts_get(m)->blocks_live, 0);
    pf_attach_free(m);
}

/* Remove hashes hs[0..n) on rank 0, in one event. */
static void remove_hashes(pf_attach *m, pf_kvev_hash *hs, int n)
{
    pf_kvev_event rm = {.type = PF_KVEV_REMOVED, .hashes = hs, .n_hashes = (uint32_t)n};
    pf_kvev_batch rb = {.events = &rm, .n_events = 1};
    pf_attach_apply(m, 0, &rb);
}

/* Store hashes hs[0..n) on rank 0, chunk a batch, one chain each. */
static void store_chunks(pf_attach *m, pf_kvev_hash *hs, int n, int chunk)
{
    for (int i = 0; i < n; i += chunk) {
        pf_kvev_event e = {.type = PF_KVEV_STORED, .hashes = hs + i, .n_hashes = (uint32_t)chunk,
                           .block_size = 16};
        pf_kvev_batch b = {.events = &e, .n_events = 1};
        pf_attach_apply(m, 0, &b);
    }
}

/* One payload may hold ~100,000 events. A publisher (any socket: a batch's
 * data_parallel_rank picks the rank) alternating a one-block store and an
 * AllBlocksCleared on rank 1, while rank 0 holds many blocks, made every
 * clear walk every slot: 20,000 clears over 200,000 slots is 4e9 steps, a
 * frozen screen for seconds per batch. Clearing a rank must cost that
 * rank's blocks, not everyone's. */
Test(net_attach, clearing_a_rank_costs_its_own_blocks)
{
    enum { HELD = 200000, PAIRS = 20000, CHUNK = 10000 };
    pf_attach *m = pf_attach_new(0);
    pf_kvev_hash *hs = malloc(HELD * sizeof *hs);
    pf_kvev_event *ev = calloc(2 * PAIRS, sizeof *ev);
    cr_assert(hs && ev);
    for (int i = 0; i < HELD; i++)
        hs[i] = pf_kvev_hash_uint(1000000u + (uint64_t)i);
    store_chunks(m, hs, HELD, CHUNK); /* rank 0: the server's real blocks */
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_assert_eq(c->blocks_live, HELD);
    for (int i = 0; i < PAIRS; i++) {
        ev[2 * i] = (pf_kvev_event){.type = PF_KVEV_STORED, .hashes = hs + i, .n_hashes = 1, .block_size = 16};
        ev[2 * i + 1] = (pf_kvev_event){.type = PF_KVEV_CLEARED};
    }
    pf_kvev_batch b = {.events = ev, .n_events = 2 * PAIRS, .has_dp_rank = 1, .dp_rank = 1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pf_attach_apply(m, 0, &b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    cr_expect_eq(c->events_cleared, PAIRS);
    cr_expect_eq(c->blocks_live, HELD, "rank 0's blocks must survive rank 1's clears");
    cr_expect_eq(pf_attach_slot_count(m), HELD + 1);
    cr_expect_lt(secs, 1.0, "%d clears of a one-block rank took %.2f s", PAIRS, secs);
    /* rank 0's blocks are all still found by hash */
    remove_hashes(m, hs, HELD);
    cr_expect_eq(c->blocks_live, 0);
    cr_expect_eq(c->removed_unknown, 0);
    free(ev);
    free(hs);
    pf_attach_free(m);
}

/* AllBlocksCleared on a model that is already empty: the maps keep the
 * size they grew to, and each clear used to wipe them whole. After 262,144
 * blocks, 65,536 clears (one payload's worth) took 6 s, after a million 45
 * s, on the UI thread (the twenty-seventh session's review). An empty map
 * is not wiped again: the clears cost what they remove. */
Test(net_attach, clears_of_an_empty_model_cost_nothing)
{
    enum { HELD = 262144, CLEARS = 65536, CHUNK = 16384 };
    pf_attach *m = pf_attach_new(0);
    pf_kvev_hash *hs = malloc(HELD * sizeof *hs);
    pf_kvev_event *ev = calloc(CLEARS, sizeof *ev);
    cr_assert(hs && ev);
    for (int i = 0; i < HELD; i++)
        hs[i] = pf_kvev_hash_uint(5000000u + (uint64_t)i);
    store_chunks(m, hs, HELD, CHUNK);
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_assert_eq(c->blocks_live, HELD);
    for (int i = 0; i < CLEARS; i++)
        ev[i] = (pf_kvev_event){.type = PF_KVEV_CLEARED};
    pf_kvev_batch b = {.events = ev, .n_events = CLEARS};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pf_attach_apply(m, 0, &b);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    cr_expect_eq(c->events_cleared, CLEARS);
    cr_expect_eq(c->blocks_live, 0);
    cr_expect_eq(pf_attach_slot_count(m), 0);
    cr_expect_lt(secs, 1.0, "%d clears (the first of %d blocks) took %.2f s", CLEARS, HELD, secs);
    /* the emptied model takes stores again, found by hash */
    pf_kvev_event e = {.type = PF_KVEV_STORED, .hashes = hs, .n_hashes = 3, .block_size = 16};
    pf_kvev_batch sb = {.events = &e, .n_events = 1};
    pf_attach_apply(m, 0, &sb);
    cr_expect_eq(c->blocks_live, 3);
    remove_hashes(m, hs, 3);
    cr_expect_eq(c->blocks_live, 0);
    cr_expect_eq(c->removed_unknown, 0);
    free(ev);
    free(hs);
    pf_attach_free(m);
}

/* Stores, removals and per-rank clears over three ranks at random: the live
 * set must equal a brute-force one (the per-rank lists stay consistent). */
Test(net_attach, per_rank_clears_match_a_reference)
{
    enum { SPACE = 500, RANKS = 3 };
    static unsigned char ref[RANKS][SPACE];
    memset(ref, 0, sizeof ref);
    pf_attach *m = pf_attach_new(0);
    pf_rng r;
    pf_rng_seed(&r, 11);
    for (int it = 0; it < 100000; it++) {
        int rank = (int)pf_rng_range(&r, 0, RANKS - 1);
        uint64_t h = (uint64_t)pf_rng_range(&r, 1, SPACE - 1);
        int op = (int)pf_rng_range(&r, 0, 99);
        if (op < 60) {
            apply(m, rank, PF_KVEV_STORED, &h, 1, 0);
            ref[rank][h] = 1;
        } else if (op < 98) {
            apply(m, rank, PF_KVEV_REMOVED, &h, 1, 0);
            ref[rank][h] = 0;
        } else {
            apply(m, rank, PF_KVEV_CLEARED, NULL, 0, 0);
            memset(ref[rank], 0, sizeof ref[rank]);
        }
        if (it % 5000 == 0 || op >= 98) {
            uint64_t live = 0;
            for (int k = 0; k < RANKS; k++)
                for (int j = 0; j < SPACE; j++)
                    live += ref[k][j];
            cr_assert_eq(pf_attach_counts_get(m)->blocks_live, live, "iteration %d", it);
        }
    }
    for (int k = 0; k < RANKS; k++)
        apply(m, k, PF_KVEV_CLEARED, NULL, 0, 0);
    cr_expect_eq(pf_attach_counts_get(m)->blocks_live, 0);
    cr_expect_eq(pf_attach_counts_get(m)->prefixes_live, 0);
    cr_expect_eq(pf_attach_slot_count(m), 0);
    pf_attach_free(m);
}

/* ---- attach model: a restart of a rank whose batches name another rank ----- */

/* Attached to rank 3's port alone (--endpoint tcp://HOST:5560, one socket:
 * socket rank 0), every batch says data_parallel_rank 3, and the model keys
 * the blocks by 3. The subscriber reports a restart of socket rank 0: the
 * blocks that socket delivered must go, not stay live for ever. */
Test(net_attach, a_restart_clears_the_rank_its_batches_named)
{
    pf_attach *m = pf_attach_new(0);
    pf_kvev_hash hs[3] = {pf_kvev_hash_uint(1), pf_kvev_hash_uint(2), pf_kvev_hash_uint(3)};
    pf_kvev_event e = {.type = PF_KVEV_STORED, .hashes = hs, .n_hashes = 3, .block_size = 16};
    pf_kvev_batch b = {.events = &e, .n_events = 1, .has_dp_rank = 1, .dp_rank = 3};
    pf_attach_apply(m, 0, &b);
    /* another socket's own blocks, which must stay */
    pf_kvev_batch b1 = {.events = &e, .n_events = 1};
    pf_attach_apply(m, 1, &b1);
    const pf_attach_counts *c = pf_attach_counts_get(m);
    cr_assert_eq(c->blocks_live, 6);
    pf_attach_restart(m, 0);
    cr_expect_eq(c->blocks_live, 3, "socket 0's blocks (keyed by rank 3) survived its restart");
    /* the new life stores the same hashes: new blocks, not "stored again" */
    pf_attach_apply(m, 0, &b);
    cr_expect_eq(c->stored_again, 0);
    cr_expect_eq(c->blocks_live, 6);
    pf_attach_free(m);
}
