/* sim/prefix.h - the prefix cache: full KV blocks shared by content, vLLM style.
 *
 * A full block is named by a chained hash of its tokens and of everything
 * before it: h_i = hash(h_(i-1), tokens of block i), h_(-1) =
 * PF_PREFIX_ROOT_HASH. Two requests whose first k blocks hold the same
 * tokens get the same k hashes, so the second can reuse the first's frames
 * instead of computing and storing them again (vLLM's automatic prefix
 * caching, `--enable-prefix-caching`, v1/core/kv_cache_utils.py).
 *
 * The cache maps hashes to frame ids and counts references; it owns no
 * memory of the pool and knows nothing of it. A frame it tracks is in one of
 * three states:
 *   cached, referenced     in use by `ref` requests, findable by its hash
 *   cached, unreferenced   nobody uses it; it keeps its KV and stays findable
 *                          until evicted. It belongs to the cache: the caller
 *                          must not put it in its pool's free list. These
 *                          wait in LRU order (vLLM's free-block queue: the
 *                          block freed earliest is evicted first, and a
 *                          request's blocks are released tail first, so its
 *                          last blocks go before its shared first ones).
 *   detached               in use but no longer findable (after a clear);
 *                          on its last release the caller frees it.
 * A frame the cache does not track (a partial last block, a block whose hash
 * was already cached under another frame) is the caller's own business.
 *
 * Typical use by a scheduler (B = block size):
 *   admit:   n = pf_prefix_match(p, hashes, nblocks, prompt_len, frames);
 *            pf_prefix_acquire(p, frames, n, prompt_len);  // refs + counters
 *            compute from token n x B on, in fresh frames
 *   a block fills:  pf_prefix_insert(p, hash, frame)   (ref 1: the filler's)
 *   fork (n > 1 samples):  pf_prefix_ref(p, frame) for each cached block
 *   finish / preempt:  pf_prefix_release_seq(p, frames, nframes, to_free, &k)
 *            and give the k frames of to_free back to the pool
 *   pool empty:  f = pf_prefix_evict(p): reuse frame f (its old KV is gone)
 * Difference from vLLM, deliberate: vLLM keeps cached and plain free blocks
 * in one queue and may evict a cached block while a newer plain free block
 * waits; here plain free frames go back to the pool, which the caller uses
 * first, so the cache keeps more.
 *
 * Costs: every operation is O(1) expected (an open-addressing table of at
 * least twice the frame count, linear probing, backward-shift deletion; an
 * intrusive LRU list over frame ids), hashing O(B) per block; memory about
 * 45 bytes per frame. Not thread-safe: the scheduler's thread owns it.
 * Hashes are 64-bit and not cryptographic (vLLM offers SHA-256 against
 * crafted collisions between tenants; our tokens are synthetic): two of a
 * million distinct blocks collide with probability about 3e-8.
 */
#ifndef PF_SIM_PREFIX_H
#define PF_SIM_PREFIX_H

#include <stdint.h>

/* ---- hashes and synthetic tokens ------------------------------------------ */

#define PF_PREFIX_ROOT_HASH 0x6a09e667f3bcc908ULL /* the "parent" of block 0 */

/* Hash of a block of n tokens whose predecessor blocks hash to parent. */
uint64_t pf_prefix_hash_block(uint64_t parent, const int32_t *tokens, int n);

/* Where a request's tokens come from. The simulator has no text: token ids
 * are a pure function of these fields and the position, so the prefix
 * cache's hashes and the token_ids a KV-event publisher sends agree, and a
 * run is reproducible. */
typedef struct {
    uint64_t seed;          /* the workload's seed */
    int64_t request_id;
    int32_t group;          /* prefix group (system prompt), -1 for none */
    int32_t shared_tokens;  /* the group's first N prompt tokens are common */
    int64_t prompt_len;     /* positions >= prompt_len are generated tokens */
    int32_t sample;         /* parallel sample index (--n), 0 for the first */
} pf_token_src;

/* Vocabulary the ids are drawn from: Llama 3's 128,256 tokens. */
#define PF_TOKEN_VOCAB 128256

/* Token id at position pos (>= 0), in [0, PF_TOKEN_VOCAB):
 *   pos < shared_tokens (and < prompt_len), group >= 0: f(seed, group, pos),
 *                          the same for every request of the group;
 *   other prompt positions: f(seed, request_id, pos), the same for every
 *                          sample of the request;
 *   generated positions:    f(seed, request_id, sample, pos).
 * f is a 64-bit mix (splitmix64's finalizer), so distinct requests' tokens
 * differ (a 16-token block repeats by chance with probability 2^-272). */
int32_t pf_token_at(const pf_token_src *s, int64_t pos);

/* Chained hash of block `block` (tokens block x B .. block x B + B - 1) of
 * s, given the hash of block - 1 (PF_PREFIX_ROOT_HASH for block 0). O(1):
 * it hashes which token streams and positions the block covers, which fixes
 * its tokens, instead of the tokens themselves; equal for two blocks exactly
 * when their tokens (and histories) are. A different function from
 * pf_prefix_hash_block (for real token arrays): use one or the other in a
 * cache, never both. */
uint64_t pf_prefix_hash_src(const pf_token_src *s, uint64_t parent, int64_t block, int block_size);

/* Hashes of s's first nblocks full blocks into out[0..nblocks). */
void pf_prefix_hash_blocks(const pf_token_src *s, int block_size, int nblocks, uint64_t *out);

/* ---- the cache ------------------------------------------------------------ */

typedef struct pf_prefix pf_prefix;

/* A cache for frames 0..num_frames-1 of blocks of block_size tokens.
 * PF_ERR_ARG for sizes < 1 or above 2^30 frames, PF_ERR_NOMEM. */
int pf_prefix_create(pf_prefix **out, int32_t num_frames, int block_size);
void pf_prefix_destroy(pf_prefix *p);

/* Frame cached under hash, or -1. Changes nothing. */
int32_t pf_prefix_find(const pf_prefix *p, uint64_t hash);

/* Longest cached prefix of a request: the number k of leading hashes[i]
 * that are cached, frames[0..k) their frames. As in vLLM, the last prompt
 * token is always computed (its logits give the first output token), so at
 * most (prompt_tokens - 1) / B blocks match. Changes nothing (the scheduler
 * may still decide not to admit). */
int pf_prefix_match(const pf_prefix *p, const uint64_t *hashes, int nblocks, int64_t prompt_tokens,
                    int32_t *frames);

/* The request uses frames[0..n) found by pf_prefix_match: each gains a
 * reference (leaving the LRU queue if it was unreferenced), and the counters
 * record a query of prompt_tokens tokens of which n x B hit (vLLM's
 * prefix_cache_queries and prefix_cache_hits, counted in tokens).
 * PF_ERR_ARG if a frame is not cached (nothing changes then). */
int pf_prefix_acquire(pf_prefix *p, const int32_t *frames, int n, int64_t prompt_tokens);

/* Register a freshly filled block: frame is now cached under hash with one
 * reference (its filler's). Returns 1 when inserted, 0 when hash is already
 * cached under another frame (nothing changes: the caller's frame stays its
 * own, as vLLM keeps the first block), PF_ERR_RANGE for a frame out of range,
 * PF_ERR_ARG for a frame the cache already tracks. */
int pf_prefix_insert(pf_prefix *p, uint64_t hash, int32_t frame);

/* One more holder of a tracked frame (a forked sample sharing the prompt's
 * blocks). PF_ERR_ARG if the frame is not tracked, PF_ERR_RANGE if out of range. */
int pf_prefix_ref(pf_prefix *p, int32_t frame);

/* What pf_prefix_unref left behind. */
enum {
    PF_PREFIX_HELD = 0,   /* other holders remain */
    PF_PREFIX_CACHED = 1, /* unreferenced, kept for reuse: do not free it */
    PF_PREFIX_FREE = 2    /* unreferenced and not cached: free it to the pool */
};

/* Drop one reference to a tracked frame. Returns one of the above, or
 * PF_ERR_ARG (not tracked, or already unreferenced: a double release),
 * PF_ERR_RANGE. */
int pf_prefix_unref(pf_prefix *p, int32_t frame);

/* Release a sequence's whole block table, last block first (vLLM's order).
 * Tracked frames lose a reference; the frames the caller must now give back
 * to its pool (untracked ones, and detached ones whose last reference went)
 * are written to to_free (room for n), their number to *n_free. Stops at the
 * first error (a double release), returning it. */
int pf_prefix_release_seq(pf_prefix *p, const int32_t *frames, int n, int32_t *to_free,
                          int *n_free);

/* Evict the least recently released unreferenced block: it leaves the cache
 * and its frame is returned to the caller to reuse. PF_ERR_NOMEM when no
 * block is unreferenced. */
int32_t pf_prefix_evict(pf_prefix *p);

/* The same, and *hash (may be NULL) gets the evicted block's hash, for a
 * BlockRemoved event. */
int32_t pf_prefix_evict_hash(pf_prefix *p, uint64_t *hash);

/* Forget every hash (vLLM's reset_prefix_cache, which in vLLM fails while
 * blocks are in use; here it always succeeds): unreferenced frames are
 * written to to_free (room for num_frames) for the caller's pool; referenced
 * ones become detached, freed on their last release. Counters stay. */
void pf_prefix_clear(pf_prefix *p, int32_t *to_free, int *n_free);

/* Reference count of a frame (0 if untracked or unreferenced), and whether
 * it is findable by hash. */
int32_t pf_prefix_refcount(const pf_prefix *p, int32_t frame);
int pf_prefix_is_cached(const pf_prefix *p, int32_t frame);

typedef struct {
    int64_t queries, hits;     /* tokens (vLLM's prefix_cache_queries/_hits) */
    int64_t requests;          /* pf_prefix_acquire calls */
    int64_t inserts, evictions;
    int32_t cached;            /* frames findable by hash */
    int32_t evictable;         /* of which unreferenced */
    int32_t detached;
} pf_prefix_stats;

void pf_prefix_get_stats(const pf_prefix *p, pf_prefix_stats *out);

#endif
