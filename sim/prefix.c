/* sim/prefix.c - the prefix cache (contract in prefix.h). */
#include "sim/prefix.h"

#include <stdlib.h>

#include "core/err.h"

/* ---- hashing -------------------------------------------------------------- */

/* splitmix64's finalizer: a bijection on 64 bits with full avalanche. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#define GOLDEN 0x9e3779b97f4a7c15ULL

uint64_t pf_prefix_hash_block(uint64_t parent, const int32_t *tokens, int n)
{
    /* The length enters first so that blocks of different sizes never share
     * a chain; each token is folded in through the bijective mix. */
    uint64_t h = mix64(parent ^ ((uint64_t)(uint32_t)n * GOLDEN));
    for (int i = 0; i < n; i++)
        h = mix64(h ^ (uint64_t)(uint32_t)tokens[i]);
    return h;
}

/* Domain tags keep the three kinds of token streams apart. */
enum { TAG_GROUP = 0x47, TAG_PROMPT = 0x50, TAG_OUTPUT = 0x4f };

int32_t pf_token_at(const pf_token_src *s, int64_t pos)
{
    uint64_t h;
    if (pos < s->prompt_len && s->group >= 0 && pos < s->shared_tokens) {
        h = mix64(s->seed ^ TAG_GROUP);
        h = mix64(h ^ (uint64_t)(int64_t)s->group);
    } else if (pos < s->prompt_len) {
        h = mix64(s->seed ^ TAG_PROMPT);
        h = mix64(h ^ (uint64_t)s->request_id);
    } else {
        h = mix64(s->seed ^ TAG_OUTPUT);
        h = mix64(h ^ (uint64_t)s->request_id);
        h = mix64(h ^ (uint64_t)(int64_t)s->sample);
    }
    h = mix64(h ^ (uint64_t)pos);
    return (int32_t)(h % PF_TOKEN_VOCAB);
}

/* A synthetic block's tokens are fixed by the streams it covers: up to three
 * runs (group stream, the request's prompt stream, its output stream), each
 * named by its stream key and position range. Hashing those descriptors is
 * O(1) per block, and two blocks hold the same tokens exactly when their
 * descriptors agree (different runs of random ids coincide with probability
 * 2^-17 per token), so this is as good a content identity as hashing the
 * tokens, at 1/16 of the cost or less. */
static uint64_t fold_run(uint64_t h, uint64_t tag, uint64_t k1, uint64_t k2, int64_t lo, int64_t hi)
{
    h = mix64(h ^ tag);
    h = mix64(h ^ k1);
    h = mix64(h ^ k2);
    h = mix64(h ^ (uint64_t)lo);
    return mix64(h ^ (uint64_t)hi);
}

uint64_t pf_prefix_hash_src(const pf_token_src *s, uint64_t parent, int64_t block, int block_size)
{
    int64_t lo = block * block_size, hi = lo + block_size;
    int64_t shared_end = s->group >= 0 ? s->shared_tokens : 0;
    if (shared_end > s->prompt_len)
        shared_end = s->prompt_len;
    if (shared_end < 0)
        shared_end = 0;
    int64_t prompt_end = s->prompt_len > 0 ? s->prompt_len : 0;
    /* Different tag from pf_prefix_hash_block's start: the two hashes name
     * blocks in different ways and are never compared with each other. */
    uint64_t h = mix64(parent ^ ((uint64_t)(uint32_t)block_size * GOLDEN) ^ 0x5352430000000000ULL);
    if (lo < shared_end)
        h = fold_run(h, TAG_GROUP, (uint64_t)(int64_t)s->group, 0, lo,
                     hi < shared_end ? hi : shared_end);
    int64_t a = lo > shared_end ? lo : shared_end, b = hi < prompt_end ? hi : prompt_end;
    if (a < b)
        h = fold_run(h, TAG_PROMPT, (uint64_t)s->request_id, 0, a, b);
    a = lo > prompt_end ? lo : prompt_end;
    if (a < hi)
        h = fold_run(h, TAG_OUTPUT, (uint64_t)s->request_id, (uint64_t)(int64_t)s->sample, a, hi);
    return mix64(h ^ s->seed);
}

void pf_prefix_hash_blocks(const pf_token_src *s, int block_size, int nblocks, uint64_t *out)
{
    uint64_t parent = PF_PREFIX_ROOT_HASH;
    for (int b = 0; b < nblocks; b++)
        parent = out[b] = pf_prefix_hash_src(s, parent, b, block_size);
}

/* ---- the cache ------------------------------------------------------------ */

enum { ST_NONE = 0, ST_CACHED, ST_DETACHED };

typedef struct {
    uint64_t hash;
    int32_t frame; /* -1: empty slot */
} slot;

struct pf_prefix {
    int32_t nframes;
    int block_size;
    /* per frame */
    uint64_t *hash;
    int32_t *ref;
    int32_t *prev, *next; /* LRU links, -1 at the ends */
    uint8_t *state;
    /* LRU of cached, unreferenced frames: head evicted first */
    int32_t lru_head, lru_tail;
    /* hash -> frame */
    slot *table;
    uint64_t mask;
    int shift; /* 64 - log2(table size), for Fibonacci hashing */
    pf_prefix_stats st;
};

int pf_prefix_create(pf_prefix **out, int32_t num_frames, int block_size)
{
    if (!out)
        return PF_ERR_ARG;
    *out = NULL;
    if (num_frames < 1 || num_frames > (1 << 30) || block_size < 1)
        return PF_ERR_ARG;
    pf_prefix *p = calloc(1, sizeof *p);
    if (!p)
        return PF_ERR_NOMEM;
    /* Load factor at most 1/2: linear probing then expects about 1.5 probes
     * for a hit and 2.5 for a miss. */
    uint64_t size = 2;
    int bits = 1;
    while (size < (uint64_t)num_frames * 2)
        size <<= 1, bits++;
    p->nframes = num_frames;
    p->block_size = block_size;
    p->mask = size - 1;
    p->shift = 64 - bits;
    p->hash = calloc((size_t)num_frames, sizeof *p->hash);
    p->ref = calloc((size_t)num_frames, sizeof *p->ref);
    p->prev = malloc((size_t)num_frames * sizeof *p->prev);
    p->next = malloc((size_t)num_frames * sizeof *p->next);
    p->state = calloc((size_t)num_frames, sizeof *p->state);
    p->table = malloc((size_t)size * sizeof *p->table);
    if (!p->hash || !p->ref || !p->prev || !p->next || !p->state || !p->table) {
        pf_prefix_destroy(p);
        return PF_ERR_NOMEM;
    }
    for (uint64_t i = 0; i < size; i++)
        p->table[i].frame = -1;
    for (int32_t f = 0; f < num_frames; f++)
        p->prev[f] = p->next[f] = -1;
    p->lru_head = p->lru_tail = -1;
    *out = p;
    return PF_OK;
}

void pf_prefix_destroy(pf_prefix *p)
{
    if (!p)
        return;
    free(p->hash);
    free(p->ref);
    free(p->prev);
    free(p->next);
    free(p->state);
    free(p->table);
    free(p);
}

/* Home slot: Fibonacci hashing, so even hashes that are not well mixed
 * (a caller's own numbering) spread over the table. */
static uint64_t home(const pf_prefix *p, uint64_t h)
{
    return (h * GOLDEN) >> p->shift;
}

/* Slot holding h, or -1. */
static int64_t table_lookup(const pf_prefix *p, uint64_t h)
{
    for (uint64_t i = home(p, h);; i = (i + 1) & p->mask) {
        if (p->table[i].frame < 0)
            return -1;
        if (p->table[i].hash == h)
            return (int64_t)i;
    }
}

static void table_put(pf_prefix *p, uint64_t h, int32_t frame)
{
    uint64_t i = home(p, h);
    while (p->table[i].frame >= 0)
        i = (i + 1) & p->mask;
    p->table[i].hash = h;
    p->table[i].frame = frame;
}

/* Backward-shift deletion (Knuth, TAOCP 6.4, Algorithm R): instead of a
 * tombstone, move later members of the probe run back into the hole when
 * their home slot allows it, so lookups stay short however many deletions
 * happen. An entry at j with home k may move to hole i if k is not
 * cyclically within (i, j]. */
static void table_remove_slot(pf_prefix *p, uint64_t i)
{
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & p->mask;
        if (p->table[j].frame < 0)
            break;
        uint64_t k = home(p, p->table[j].hash);
        int stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            p->table[i] = p->table[j];
            i = j;
        }
    }
    p->table[i].frame = -1;
}

static void lru_unlink(pf_prefix *p, int32_t f)
{
    int32_t a = p->prev[f], b = p->next[f];
    if (a >= 0)
        p->next[a] = b;
    else
        p->lru_head = b;
    if (b >= 0)
        p->prev[b] = a;
    else
        p->lru_tail = a;
    p->prev[f] = p->next[f] = -1;
    p->st.evictable--;
}

static void lru_push_tail(pf_prefix *p, int32_t f)
{
    p->prev[f] = p->lru_tail;
    p->next[f] = -1;
    if (p->lru_tail >= 0)
        p->next[p->lru_tail] = f;
    else
        p->lru_head = f;
    p->lru_tail = f;
    p->st.evictable++;
}

static int frame_ok(const pf_prefix *p, int32_t f)
{
    return f >= 0 && f < p->nframes;
}

int32_t pf_prefix_find(const pf_prefix *p, uint64_t hash)
{
    if (!p)
        return -1;
    int64_t i = table_lookup(p, hash);
    return i < 0 ? -1 : p->table[i].frame;
}

int pf_prefix_match(const pf_prefix *p, const uint64_t *hashes, int nblocks, int64_t prompt_tokens,
                    int32_t *frames)
{
    if (!p || !hashes || nblocks <= 0 || prompt_tokens < 1)
        return 0;
    int64_t limit = (prompt_tokens - 1) / p->block_size;
    int n = 0;
    while (n < nblocks && n < limit) {
        int32_t f = pf_prefix_find(p, hashes[n]);
        if (f < 0)
            break;
        if (frames)
            frames[n] = f;
        n++;
    }
    return n;
}

int pf_prefix_acquire(pf_prefix *p, const int32_t *frames, int n, int64_t prompt_tokens)
{
    if (!p || n < 0 || (n > 0 && !frames) || prompt_tokens < 0)
        return PF_ERR_ARG;
    for (int i = 0; i < n; i++)
        if (!frame_ok(p, frames[i]) || p->state[frames[i]] != ST_CACHED)
            return PF_ERR_ARG;
    for (int i = 0; i < n; i++) {
        int32_t f = frames[i];
        if (p->ref[f]++ == 0)
            lru_unlink(p, f);
    }
    p->st.requests++;
    p->st.queries += prompt_tokens;
    p->st.hits += (int64_t)n * p->block_size;
    return PF_OK;
}

int pf_prefix_insert(pf_prefix *p, uint64_t hash, int32_t frame)
{
    if (!p)
        return PF_ERR_ARG;
    if (!frame_ok(p, frame))
        return PF_ERR_RANGE;
    if (p->state[frame] != ST_NONE)
        return PF_ERR_ARG;
    if (table_lookup(p, hash) >= 0)
        return 0;
    table_put(p, hash, frame);
    p->hash[frame] = hash;
    p->ref[frame] = 1;
    p->state[frame] = ST_CACHED;
    p->st.cached++;
    p->st.inserts++;
    return 1;
}

int pf_prefix_ref(pf_prefix *p, int32_t frame)
{
    if (!p)
        return PF_ERR_ARG;
    if (!frame_ok(p, frame))
        return PF_ERR_RANGE;
    if (p->state[frame] == ST_NONE)
        return PF_ERR_ARG;
    if (p->ref[frame]++ == 0)
        lru_unlink(p, frame); /* only cached frames can sit at 0 */
    return PF_OK;
}

int pf_prefix_unref(pf_prefix *p, int32_t frame)
{
    if (!p)
        return PF_ERR_ARG;
    if (!frame_ok(p, frame))
        return PF_ERR_RANGE;
    if (p->state[frame] == ST_NONE || p->ref[frame] == 0)
        return PF_ERR_ARG;
    if (--p->ref[frame] > 0)
        return PF_PREFIX_HELD;
    if (p->state[frame] == ST_DETACHED) {
        p->state[frame] = ST_NONE;
        p->st.detached--;
        return PF_PREFIX_FREE;
    }
    lru_push_tail(p, frame);
    return PF_PREFIX_CACHED;
}

int pf_prefix_release_seq(pf_prefix *p, const int32_t *frames, int n, int32_t *to_free, int *n_free)
{
    if (!p || n < 0 || (n > 0 && (!frames || !to_free)) || !n_free)
        return PF_ERR_ARG;
    *n_free = 0;
    for (int i = n - 1; i >= 0; i--) {
        int32_t f = frames[i];
        if (!frame_ok(p, f))
            return PF_ERR_RANGE;
        if (p->state[f] == ST_NONE) {
            to_free[(*n_free)++] = f;
            continue;
        }
        int rc = pf_prefix_unref(p, f);
        if (rc < 0)
            return rc;
        if (rc == PF_PREFIX_FREE)
            to_free[(*n_free)++] = f;
    }
    return PF_OK;
}

int32_t pf_prefix_evict(pf_prefix *p)
{
    return pf_prefix_evict_hash(p, NULL);
}

int32_t pf_prefix_evict_hash(pf_prefix *p, uint64_t *hash)
{
    if (!p || p->lru_head < 0)
        return PF_ERR_NOMEM;
    int32_t f = p->lru_head;
    if (hash)
        *hash = p->hash[f];
    lru_unlink(p, f);
    int64_t i = table_lookup(p, p->hash[f]);
    if (i >= 0) /* always: a cached frame is in the table */
        table_remove_slot(p, (uint64_t)i);
    p->state[f] = ST_NONE;
    p->st.cached--;
    p->st.evictions++;
    return f;
}

void pf_prefix_clear(pf_prefix *p, int32_t *to_free, int *n_free)
{
    int n = 0;
    if (!p) {
        if (n_free)
            *n_free = 0;
        return;
    }
    for (int32_t f = 0; f < p->nframes; f++) {
        if (p->state[f] != ST_CACHED)
            continue;
        if (p->ref[f] == 0) {
            lru_unlink(p, f);
            p->state[f] = ST_NONE;
            if (to_free)
                to_free[n++] = f;
        } else {
            p->state[f] = ST_DETACHED;
            p->st.detached++;
        }
        p->st.cached--;
    }
    for (uint64_t i = 0; i <= p->mask; i++)
        p->table[i].frame = -1;
    if (n_free)
        *n_free = n;
}

int32_t pf_prefix_refcount(const pf_prefix *p, int32_t frame)
{
    return (p && frame_ok(p, frame) && p->state[frame] != ST_NONE) ? p->ref[frame] : 0;
}

int pf_prefix_is_cached(const pf_prefix *p, int32_t frame)
{
    return p && frame_ok(p, frame) && p->state[frame] == ST_CACHED;
}

void pf_prefix_get_stats(const pf_prefix *p, pf_prefix_stats *out)
{
    *out = p->st;
}
