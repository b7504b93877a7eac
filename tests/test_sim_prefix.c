/* tests/test_sim_prefix.c - the prefix cache (sim/prefix.h): synthetic
 * tokens and chained hashes, hits and vLLM's token counters, the
 * last-token rule, LRU eviction order (earliest released first, tail blocks
 * first), reference counts, a partly cached prefix, clear-all, and the hash
 * table under churn against a plain reference model. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/prefix.h"

static pf_token_src src(int64_t id, int32_t group, int32_t shared, int64_t prompt, int32_t sample)
{
    pf_token_src s = {42, id, group, shared, prompt, sample};
    return s;
}

static pf_prefix *new_cache(int32_t frames)
{
    pf_prefix *p = NULL;
    cr_assert_eq(pf_prefix_create(&p, frames, 16), PF_OK);
    cr_assert_not_null(p);
    return p;
}

Test(prefix_tokens, shared_within_a_group_distinct_otherwise)
{
    pf_token_src a = src(1, 7, 40, 100, 0), b = src(2, 7, 40, 120, 0), c = src(3, 8, 40, 100, 0),
                 d = src(4, -1, 40, 100, 0);
    int same_ab = 0, same_ac = 0, same_ad = 0;
    for (int64_t i = 0; i < 100; i++) {
        int32_t ta = pf_token_at(&a, i);
        cr_assert(ta >= 0 && ta < PF_TOKEN_VOCAB);
        cr_assert_eq(ta, pf_token_at(&a, i), "pure");
        if (i < 40)
            cr_assert_eq(ta, pf_token_at(&b, i), "position %ld of the shared prefix", (long)i);
        else
            same_ab += ta == pf_token_at(&b, i);
        same_ac += ta == pf_token_at(&c, i);
        same_ad += ta == pf_token_at(&d, i);
    }
    /* Chance agreements of random ids in a 128k vocabulary: none expected. */
    cr_assert_eq(same_ab, 0);
    cr_assert_eq(same_ac, 0, "another group shares nothing");
    cr_assert_eq(same_ad, 0, "no group shares nothing");
    /* Parallel samples: the same prompt, different outputs. */
    pf_token_src s0 = src(9, -1, 0, 50, 0), s1 = src(9, -1, 0, 50, 1);
    for (int64_t i = 0; i < 50; i++)
        cr_assert_eq(pf_token_at(&s0, i), pf_token_at(&s1, i));
    int same_out = 0;
    for (int64_t i = 50; i < 150; i++)
        same_out += pf_token_at(&s0, i) == pf_token_at(&s1, i);
    cr_assert_eq(same_out, 0);
    /* The seed matters. */
    pf_token_src other = a;
    other.seed = 43;
    int same_seed = 0;
    for (int64_t i = 0; i < 100; i++)
        same_seed += pf_token_at(&a, i) == pf_token_at(&other, i);
    cr_assert_eq(same_seed, 0);
}

Test(prefix_tokens, chained_hashes_follow_the_shared_prefix)
{
    pf_token_src a = src(1, 3, 64, 200, 0);
    int32_t toks[16];
    for (int i = 0; i < 16; i++)
        toks[i] = pf_token_at(&a, i);
    /* 64 shared tokens = 4 whole blocks: 4 equal hashes, then different */
    pf_token_src b = src(2, 3, 64, 200, 0);
    uint64_t ha[8], hb[8];
    pf_prefix_hash_blocks(&a, 16, 8, ha);
    pf_prefix_hash_blocks(&b, 16, 8, hb);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(ha[i] == hb[i], i < 4, "block %d", i);
    /* 40 shared tokens: block 2 is half shared, so it and all after differ */
    pf_token_src c = src(3, 4, 40, 200, 0), d = src(4, 4, 40, 200, 0);
    pf_prefix_hash_blocks(&c, 16, 8, ha);
    pf_prefix_hash_blocks(&d, 16, 8, hb);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(ha[i] == hb[i], i < 2, "block %d", i);
    /* The same tokens after a different history hash differently. */
    cr_assert_neq(pf_prefix_hash_block(1, toks, 16), pf_prefix_hash_block(2, toks, 16));
    cr_assert_neq(pf_prefix_hash_block(1, toks, 16), pf_prefix_hash_block(1, toks, 15));
}

/* Block hashes name content: over many pairs of sources (small ranges, so
 * that groups, shared lengths, prompts and samples coincide often), block b
 * of two sources hashes equal exactly when blocks 0..b hold equal tokens. */
Test(prefix_tokens, block_hash_equal_iff_tokens_equal)
{
    pf_rng rng;
    pf_rng_seed(&rng, 21);
    const int32_t shared[] = {0, 16, 24, 40, 64};
    const int64_t prompt[] = {16, 30, 48, 64, 100};
    int equal_pairs = 0, diff_pairs = 0;
    for (int t = 0; t < 3000; t++) {
        pf_token_src s[2];
        for (int k = 0; k < 2; k++)
            s[k] = src(pf_rng_range(&rng, 1, 2), (int32_t)pf_rng_range(&rng, -1, 1),
                       shared[pf_rng_range(&rng, 0, 4)], prompt[pf_rng_range(&rng, 0, 4)],
                       (int32_t)pf_rng_range(&rng, 0, 1));
        uint64_t h[2][8];
        for (int k = 0; k < 2; k++)
            pf_prefix_hash_blocks(&s[k], 16, 8, h[k]);
        int same_so_far = 1;
        for (int b = 0; b < 8; b++) {
            for (int i = b * 16; i < b * 16 + 16; i++)
                same_so_far &= pf_token_at(&s[0], i) == pf_token_at(&s[1], i);
            cr_assert_eq(h[0][b] == h[1][b], same_so_far, "pair %d block %d", t, b);
            equal_pairs += same_so_far;
            diff_pairs += !same_so_far;
        }
    }
    cr_assert_gt(equal_pairs, 1000, "the test must see many equal blocks");
    cr_assert_gt(diff_pairs, 1000);
}

Test(prefix_cache, bad_arguments)
{
    pf_prefix *p = NULL;
    cr_assert_eq(pf_prefix_create(&p, 0, 16), PF_ERR_ARG);
    cr_assert_eq(pf_prefix_create(&p, 16, 0), PF_ERR_ARG);
    cr_assert_eq(pf_prefix_create(NULL, 16, 16), PF_ERR_ARG);
    cr_assert_null(p);
    p = new_cache(8);
    cr_assert_eq(pf_prefix_insert(p, 1, 8), PF_ERR_RANGE);
    cr_assert_eq(pf_prefix_insert(p, 1, -1), PF_ERR_RANGE);
    cr_assert_eq(pf_prefix_ref(p, 3), PF_ERR_ARG, "untracked");
    cr_assert_eq(pf_prefix_unref(p, 3), PF_ERR_ARG, "untracked");
    cr_assert_eq(pf_prefix_evict(p), PF_ERR_NOMEM, "nothing to evict");
    int32_t bogus = 5;
    cr_assert_eq(pf_prefix_acquire(p, &bogus, 1, 10), PF_ERR_ARG, "not cached");
    pf_prefix_destroy(p);
    pf_prefix_destroy(NULL);
}

/* Request A fills four blocks; request B of the same group reuses them. */
Test(prefix_cache, hits_and_token_counters)
{
    pf_prefix *p = new_cache(32);
    pf_token_src a = src(1, 0, 64, 64, 0), b = src(2, 0, 64, 100, 0);
    uint64_t ha[4], hb[6];
    pf_prefix_hash_blocks(&a, 16, 4, ha);
    pf_prefix_hash_blocks(&b, 16, 6, hb);
    int32_t fa[4] = {10, 11, 12, 13};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pf_prefix_insert(p, ha[i], fa[i]), 1);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pf_prefix_find(p, ha[i]), fa[i]);
        cr_assert_eq(pf_prefix_refcount(p, fa[i]), 1);
    }
    int32_t got[6];
    int n = pf_prefix_match(p, hb, 6, 100, got);
    cr_assert_eq(n, 4);
    cr_assert_eq(memcmp(got, fa, sizeof fa), 0);
    cr_assert_eq(pf_prefix_acquire(p, got, n, 100), PF_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pf_prefix_refcount(p, fa[i]), 2);
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.queries, 100);
    cr_assert_eq(st.hits, 64);
    cr_assert_eq(st.requests, 1);
    cr_assert_eq(st.cached, 4);
    cr_assert_eq(st.evictable, 0);
    /* A request of another group misses and still counts as a query. */
    pf_token_src c = src(3, 1, 64, 80, 0);
    uint64_t hc[5];
    pf_prefix_hash_blocks(&c, 16, 5, hc);
    cr_assert_eq(pf_prefix_match(p, hc, 5, 80, got), 0);
    cr_assert_eq(pf_prefix_acquire(p, got, 0, 80), PF_OK);
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.queries, 180);
    cr_assert_eq(st.hits, 64);
    pf_prefix_destroy(p);
}

/* vLLM computes the last prompt token even when everything is cached. */
Test(prefix_cache, last_prompt_token_is_always_computed)
{
    pf_prefix *p = new_cache(8);
    pf_token_src a = src(1, -1, 0, 64, 0);
    uint64_t h[4];
    pf_prefix_hash_blocks(&a, 16, 4, h);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pf_prefix_insert(p, h[i], i), 1);
    int32_t got[4];
    cr_assert_eq(pf_prefix_match(p, h, 4, 64, got), 3, "64 tokens: (64 - 1) / 16 blocks");
    cr_assert_eq(pf_prefix_match(p, h, 4, 65, got), 4);
    cr_assert_eq(pf_prefix_match(p, h, 4, 1, got), 0);
    cr_assert_eq(pf_prefix_match(p, h, 2, 1000, got), 2, "no more than the hashes given");
    pf_prefix_destroy(p);
}

/* Blocks 0-2 cached, block 3 not, block 4 cached: the match stops at 3. */
Test(prefix_cache, partly_cached_prefix)
{
    pf_prefix *p = new_cache(16);
    pf_token_src a = src(5, -1, 0, 200, 0);
    uint64_t h[8];
    pf_prefix_hash_blocks(&a, 16, 8, h);
    cr_assert_eq(pf_prefix_insert(p, h[0], 4), 1);
    cr_assert_eq(pf_prefix_insert(p, h[1], 9), 1);
    cr_assert_eq(pf_prefix_insert(p, h[2], 2), 1);
    cr_assert_eq(pf_prefix_insert(p, h[4], 7), 1);
    int32_t got[8];
    cr_assert_eq(pf_prefix_match(p, h, 8, 200, got), 3);
    cr_assert_eq(got[0], 4);
    cr_assert_eq(got[1], 9);
    cr_assert_eq(got[2], 2);
    cr_assert_eq(pf_prefix_acquire(p, got, 3, 200), PF_OK);
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.hits, 48);
    pf_prefix_destroy(p);
}

/* vLLM's free-queue order: the earliest released goes first, and within a
 * request the tail blocks go before the head blocks. */
Test(prefix_cache, eviction_order_is_lru_tail_first)
{
    pf_prefix *p = new_cache(16);
    int32_t fa[3] = {0, 1, 2}, fb[2] = {3, 4}, to_free[8];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(pf_prefix_insert(p, 100 + i, fa[i]), 1);
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pf_prefix_insert(p, 200 + i, fb[i]), 1);
    int nf = -1;
    cr_assert_eq(pf_prefix_release_seq(p, fa, 3, to_free, &nf), PF_OK);
    cr_assert_eq(nf, 0, "cached frames stay with the cache");
    cr_assert_eq(pf_prefix_release_seq(p, fb, 2, to_free, &nf), PF_OK);
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.evictable, 5);
    const int32_t want[5] = {2, 1, 0, 4, 3};
    for (int i = 0; i < 5; i++) {
        int32_t f = pf_prefix_evict(p);
        cr_assert_eq(f, want[i], "eviction %d: frame %d", i, f);
        cr_assert_not(pf_prefix_is_cached(p, f));
    }
    cr_assert_eq(pf_prefix_evict(p), PF_ERR_NOMEM);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(pf_prefix_find(p, 100 + i), -1);
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.evictions, 5);
    cr_assert_eq(st.cached, 0);
    pf_prefix_destroy(p);
}

/* A hit takes an unreferenced block off the LRU queue: it cannot be evicted
 * while in use, and rejoins the queue at the tail when released again. */
Test(prefix_cache, reuse_protects_and_refreshes)
{
    pf_prefix *p = new_cache(16);
    int32_t fa[3] = {0, 1, 2}, to_free[4];
    uint64_t h[3] = {11, 12, 13};
    for (int i = 0; i < 3; i++)
        cr_assert_eq(pf_prefix_insert(p, h[i], fa[i]), 1);
    int nf;
    cr_assert_eq(pf_prefix_release_seq(p, fa, 3, to_free, &nf), PF_OK); /* LRU: 2 1 0 */
    int32_t got[3];
    cr_assert_eq(pf_prefix_match(p, h, 3, 40, got), 2);                 /* frames 0, 1 */
    cr_assert_eq(pf_prefix_acquire(p, got, 2, 40), PF_OK);               /* LRU: 2 */
    cr_assert_eq(pf_prefix_evict(p), 2);
    cr_assert_eq(pf_prefix_evict(p), PF_ERR_NOMEM, "0 and 1 are in use");
    cr_assert_eq(pf_prefix_release_seq(p, got, 2, to_free, &nf), PF_OK); /* LRU: 1 0 */
    cr_assert_eq(pf_prefix_evict(p), 1);
    cr_assert_eq(pf_prefix_evict(p), 0);
    pf_prefix_destroy(p);
}

Test(prefix_cache, reference_counts)
{
    pf_prefix *p = new_cache(8);
    cr_assert_eq(pf_prefix_insert(p, 77, 3), 1);
    cr_assert_eq(pf_prefix_insert(p, 77, 4), 0, "hash already cached: frame 4 stays private");
    cr_assert_not(pf_prefix_is_cached(p, 4));
    cr_assert_eq(pf_prefix_find(p, 77), 3);
    cr_assert_eq(pf_prefix_insert(p, 78, 3), PF_ERR_ARG, "frame already tracked");
    cr_assert_eq(pf_prefix_ref(p, 3), PF_OK); /* a forked sample */
    cr_assert_eq(pf_prefix_refcount(p, 3), 2);
    cr_assert_eq(pf_prefix_unref(p, 3), PF_PREFIX_HELD);
    cr_assert_eq(pf_prefix_unref(p, 3), PF_PREFIX_CACHED);
    cr_assert_eq(pf_prefix_refcount(p, 3), 0);
    cr_assert(pf_prefix_is_cached(p, 3));
    cr_assert_eq(pf_prefix_unref(p, 3), PF_ERR_ARG, "double release");
    cr_assert_eq(pf_prefix_ref(p, 3), PF_OK, "a cached block can be picked up again");
    cr_assert_eq(pf_prefix_evict(p), PF_ERR_NOMEM);

    /* A block table mixing cached and private frames: the private ones come
     * back to the caller, tail first. */
    cr_assert_eq(pf_prefix_insert(p, 90, 0), 1);
    int32_t table[4] = {0, 3, 5, 6}, to_free[4];
    int nf;
    cr_assert_eq(pf_prefix_release_seq(p, table, 4, to_free, &nf), PF_OK);
    cr_assert_eq(nf, 2);
    cr_assert_eq(to_free[0], 6);
    cr_assert_eq(to_free[1], 5);
    cr_assert_eq(pf_prefix_evict(p), 3, "released first: it is later in the table");
    cr_assert_eq(pf_prefix_evict(p), 0);
    /* Evicted frames are untracked: released again, they come back as private. */
    cr_assert_eq(pf_prefix_release_seq(p, table, 2, to_free, &nf), PF_OK);
    cr_assert_eq(nf, 2);
    pf_prefix_destroy(p);
}

Test(prefix_cache, double_release_is_reported)
{
    pf_prefix *p = new_cache(8);
    cr_assert_eq(pf_prefix_insert(p, 5, 1), 1);
    int32_t table[2] = {1, 2}, to_free[2];
    int nf;
    cr_assert_eq(pf_prefix_release_seq(p, table, 2, to_free, &nf), PF_OK);
    cr_assert_eq(pf_prefix_release_seq(p, table, 2, to_free, &nf), PF_ERR_ARG);
    pf_prefix_destroy(p);
}

Test(prefix_cache, clear_all)
{
    pf_prefix *p = new_cache(8);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(pf_prefix_insert(p, 1000 + i, i), 1);
    int32_t rel[3] = {0, 1, 2}, to_free[8];
    int nf;
    cr_assert_eq(pf_prefix_release_seq(p, rel, 3, to_free, &nf), PF_OK); /* 3, 4 in use */
    pf_prefix_clear(p, to_free, &nf);
    cr_assert_eq(nf, 3);
    int seen[8] = {0};
    for (int i = 0; i < nf; i++)
        seen[to_free[i]]++;
    cr_assert(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(pf_prefix_find(p, 1000 + i), -1);
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.cached, 0);
    cr_assert_eq(st.evictable, 0);
    cr_assert_eq(st.detached, 2);
    cr_assert_eq(pf_prefix_evict(p), PF_ERR_NOMEM);
    /* In-use frames keep their holders and are freed on the last release. */
    cr_assert_eq(pf_prefix_refcount(p, 3), 1);
    cr_assert_eq(pf_prefix_ref(p, 3), PF_OK);
    cr_assert_eq(pf_prefix_unref(p, 3), PF_PREFIX_HELD);
    cr_assert_eq(pf_prefix_unref(p, 3), PF_PREFIX_FREE);
    int32_t t4 = 4;
    cr_assert_eq(pf_prefix_release_seq(p, &t4, 1, to_free, &nf), PF_OK);
    cr_assert_eq(nf, 1);
    cr_assert_eq(to_free[0], 4);
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.detached, 0);
    /* The cache works as new afterwards, the same hashes included. */
    cr_assert_eq(pf_prefix_insert(p, 1000, 4), 1);
    cr_assert_eq(pf_prefix_find(p, 1000), 4);
    pf_prefix_destroy(p);
}

/* Random inserts, hits, releases and evictions on a small cache, checked
 * after every operation against a plain array model: every hash the model
 * holds is found at its frame, every evicted one is gone, eviction follows
 * the model's LRU order. Hashes are small integers so that home slots
 * collide and wrap around, exercising backward-shift deletion. */
Test(prefix_cache, churn_matches_a_reference_model)
{
    enum { F = 64, KEYS = 400, OPS = 20000 };
    pf_prefix *p = new_cache(F);
    uint64_t model_hash[F];
    int model_state[F]; /* 0 free, 1 cached in use, 2 cached unreferenced */
    int model_ref[F];
    int32_t lru[F];
    int nlru = 0;
    memset(model_state, 0, sizeof model_state);
    memset(model_ref, 0, sizeof model_ref);
    pf_rng rng;
    pf_rng_seed(&rng, 11);
    for (int op = 0; op < OPS; op++) {
        int kind = (int)pf_rng_range(&rng, 0, 3);
        if (kind == 0) { /* insert a key into a free frame */
            int32_t f = (int32_t)pf_rng_range(&rng, 0, F - 1);
            uint64_t h = (uint64_t)pf_rng_range(&rng, 0, KEYS - 1);
            int present = 0;
            for (int i = 0; i < F; i++)
                present |= model_state[i] && model_hash[i] == h;
            int rc = pf_prefix_insert(p, h, f);
            if (model_state[f])
                cr_assert_eq(rc, PF_ERR_ARG);
            else if (present)
                cr_assert_eq(rc, 0);
            else {
                cr_assert_eq(rc, 1);
                model_state[f] = 1, model_ref[f] = 1, model_hash[f] = h;
            }
        } else if (kind == 1) { /* release or re-reference a frame */
            int32_t f = (int32_t)pf_rng_range(&rng, 0, F - 1);
            if (model_state[f] == 1) {
                int rc = pf_prefix_unref(p, f);
                if (--model_ref[f] == 0) {
                    cr_assert_eq(rc, PF_PREFIX_CACHED);
                    model_state[f] = 2;
                    lru[nlru++] = f;
                } else {
                    cr_assert_eq(rc, PF_PREFIX_HELD);
                }
            } else if (model_state[f] == 2) {
                cr_assert_eq(pf_prefix_ref(p, f), PF_OK);
                model_state[f] = 1, model_ref[f] = 1;
                int j = 0;
                while (lru[j] != f)
                    j++;
                memmove(lru + j, lru + j + 1, (size_t)(nlru - j - 1) * sizeof *lru);
                nlru--;
            }
        } else if (kind == 2) { /* evict */
            int32_t f = pf_prefix_evict(p);
            if (nlru == 0) {
                cr_assert_eq(f, PF_ERR_NOMEM);
            } else {
                cr_assert_eq(f, lru[0], "op %d", op);
                memmove(lru, lru + 1, (size_t)(nlru - 1) * sizeof *lru);
                nlru--;
                model_state[f] = 0;
            }
        } else { /* share a cached frame once more */
            int32_t f = (int32_t)pf_rng_range(&rng, 0, F - 1);
            if (model_state[f] == 1) {
                cr_assert_eq(pf_prefix_ref(p, f), PF_OK);
                model_ref[f]++;
            }
        }
        for (int32_t f = 0; f < F; f++) {
            if (model_state[f])
                cr_assert_eq(pf_prefix_find(p, model_hash[f]), f, "op %d frame %d", op, f);
            cr_assert_eq(pf_prefix_is_cached(p, f), model_state[f] != 0);
        }
    }
    for (uint64_t h = 0; h < KEYS; h++) {
        int32_t want = -1;
        for (int f = 0; f < F; f++)
            if (model_state[f] && model_hash[f] == h)
                want = f;
        cr_assert_eq(pf_prefix_find(p, h), want);
    }
    pf_prefix_destroy(p);
}

/* The cache as a scheduler drives it, over a toy pool: 40 requests of four
 * prefix groups (48 shared tokens, 80-token prompts, 20 outputs) served one
 * after another on 64 frames of 16 tokens. A frame is always in exactly one
 * place (the pool's free list, the cache's evictable queue, or the running
 * request's table); every request after its group's first hits the 3 shared
 * blocks; after a clear each group misses once more. */
typedef struct {
    int32_t free[64];
    int nfree;
} toy_pool;

static int32_t take_frame(toy_pool *pool, pf_prefix *p)
{
    if (pool->nfree > 0)
        return pool->free[--pool->nfree];
    int32_t f = pf_prefix_evict(p);
    cr_assert_geq(f, 0, "the pool and the cache are both empty");
    return f;
}

static void check_frames(const toy_pool *pool, const pf_prefix *p, const int32_t *held, int nheld)
{
    int seen[64] = {0};
    for (int i = 0; i < pool->nfree; i++)
        seen[pool->free[i]]++;
    for (int i = 0; i < nheld; i++)
        seen[held[i]]++;
    int evictable = 0;
    for (int32_t f = 0; f < 64; f++) {
        int idle_cached = pf_prefix_is_cached(p, f) && pf_prefix_refcount(p, f) == 0;
        evictable += idle_cached;
        cr_assert_eq(seen[f] + idle_cached, 1, "frame %d is in %d places", f,
                     seen[f] + idle_cached);
    }
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.evictable, evictable);
}

static void serve(pf_prefix *p, toy_pool *pool, int64_t id, int group, int64_t *hit_tokens)
{
    enum { B = 16, PROMPT = 80, OUT = 20 };
    pf_token_src s = src(id, group, 48, PROMPT, 0);
    uint64_t h[7];
    pf_prefix_hash_blocks(&s, B, 7, h);
    int32_t table[7];
    int n = pf_prefix_match(p, h, PROMPT / B, PROMPT, table);
    cr_assert_eq(pf_prefix_acquire(p, table, n, PROMPT), PF_OK);
    *hit_tokens = (int64_t)n * B;
    int nblocks = n;
    /* Prefill from the first missed block, then decode; each block that
     * fills is registered. The last (partial) block stays private. */
    for (int64_t pos = (int64_t)n * B; pos < PROMPT + OUT; pos++) {
        if (pos % B == 0)
            table[nblocks++] = take_frame(pool, p);
        if (pos % B == B - 1)
            cr_assert_geq(pf_prefix_insert(p, h[pos / B], table[pos / B]), 0);
        check_frames(pool, p, table, nblocks);
    }
    int32_t to_free[7];
    int nf;
    cr_assert_eq(pf_prefix_release_seq(p, table, nblocks, to_free, &nf), PF_OK);
    cr_assert_eq(nf, 1, "only the partial last block goes back to the pool");
    for (int i = 0; i < nf; i++)
        pool->free[pool->nfree++] = to_free[i];
    check_frames(pool, p, NULL, 0);
}

Test(prefix_cache, scheduler_round_trip_over_a_toy_pool)
{
    pf_prefix *p = new_cache(64);
    toy_pool pool = {.nfree = 64};
    for (int i = 0; i < 64; i++)
        pool.free[i] = 63 - i;
    int64_t hits = 0, hit;
    for (int64_t r = 0; r < 40; r++) {
        serve(p, &pool, r, (int)(r % 4), &hit);
        cr_assert_eq(hit, r < 4 ? 0 : 48, "request %ld", (long)r);
        hits += hit;
    }
    pf_prefix_stats st;
    pf_prefix_get_stats(p, &st);
    cr_assert_eq(st.queries, 40 * 80);
    cr_assert_eq(st.hits, 36 * 48);
    cr_assert_eq(st.hits, hits);
    cr_assert_gt(st.evictions, 0, "the cache filled the pool and had to give frames back");

    int32_t to_free[64];
    int nf;
    pf_prefix_clear(p, to_free, &nf);
    for (int i = 0; i < nf; i++)
        pool.free[pool.nfree++] = to_free[i];
    check_frames(&pool, p, NULL, 0);
    cr_assert_eq(pool.nfree, 64);
    for (int64_t r = 40; r < 48; r++) {
        serve(p, &pool, r, (int)(r % 4), &hit);
        cr_assert_eq(hit, r < 44 ? 0 : 48, "request %ld", (long)r);
    }
    pf_prefix_destroy(p);
}
