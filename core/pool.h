/* core/pool.h - the frame pool: PageFault's physical memory allocator.
 *
 * The pool has N frames (physical pages), each holding block_size tokens of
 * KV. A frame is free or used; a used frame has an owner (the sequence id
 * that allocated it, >= 0) and a reference count (> 1 when a prefix is
 * shared). Free frames sit in a shared depot (a LIFO stack, so after churn
 * the frames a sequence gets are scattered, as in a real pool) and in
 * per-thread caches (magazines, as in jemalloc, mimalloc and Bonwick's slab
 * allocator), from which a thread takes and returns frames without touching
 * anything another thread touches.
 *
 * Contract:
 *  - Every call is safe from many threads. Calls without a cache work on the
 *    depot under one mutex and keep the pool's original semantics exactly
 *    (same frames in the same LIFO order when no cache exists). Calls ending
 *    in _c take a pf_pool_cache: one per thread; a cache is safe to share but
 *    fast only when one thread uses it.
 *  - Frames parked in caches are free: they count in free_count, admission
 *    counts them (see pf_pool_alloc_admit), and a taker whose own cache and
 *    the depot are short takes them from the other caches, so a caller never
 *    gets PF_ERR_NOMEM while a frame is free anywhere.
 *  - Errors are returned, never aborted on: freeing a free frame is
 *    PF_ERR_DOUBLE_FREE, freeing another sequence's frame PF_ERR_NOT_OWNER.
 *    alloc_n, alloc_admit and free_n are all-or-nothing: on failure nothing
 *    was taken or freed.
 *  - Owner and reference count of a frame are one atomic word: read without a
 *    lock, each read is exact and the pair is consistent. The counters
 *    (free, used, peak, alloc_total) are read without a lock too; free, used
 *    and alloc_total sum per-cache counters, so they are exact whenever no
 *    call is in flight and within the in-flight calls' frames otherwise.
 *    The peak is the exact maximum of used frames, also under threads.
 *  - pf_pool_check, pf_pool_reset and pf_pool_reset_peak stop every cache
 *    for a moment; check and reset are meant for quiescent pools.
 *
 * Sharing (prefix caching): pf_pool_share adds a reference; pf_pool_unref
 * drops one whatever the caller, so any holder drops its own reference; the
 * frame returns to the free frames when the count reaches 0. The owner field
 * keeps naming the first allocator while the frame is used (informational,
 * for viewers); pf_pool_free, free_n and free_owner keep their owner check.
 *
 * Callers: the simulator (threaded and deterministic), calc, the tests, the
 * GPU API (to lay out block tables), bench/bench_core_pool.
 */
#ifndef PF_CORE_POOL_H
#define PF_CORE_POOL_H

#include <stdint.h>

#define PF_POOL_NO_OWNER (-1)

typedef struct pf_pool pf_pool;
typedef struct pf_pool_cache pf_pool_cache;

/* Create a pool of nframes (1 .. 1<<24) frames, all free. NULL on bad size
 * or allocation failure. Initial free order is 0,1,2,... (frame 0 first). */
pf_pool *pf_pool_create(int nframes);
/* Frees the pool and every cache still attached to it. */
void pf_pool_destroy(pf_pool *pool);

/* Free every frame, empty every cache, and reset peak and alloc_total (the
 * pool becomes as new). Call when no other call is in flight. */
void pf_pool_reset(pf_pool *pool);

/* ---- per-thread caches --------------------------------------------------- */

/* A cache of free frames for one thread (at most PF_POOL_CACHE_MAX caches
 * per pool at a time). NULL if the pool has that many or allocation failed. */
#define PF_POOL_CACHE_MAX 1024
pf_pool_cache *pf_pool_cache_new(pf_pool *pool);
/* Return the cache's frames to the depot and detach it (NULL, or a cache
 * already detached: no-op). The handle may be handed out again by a later
 * pf_pool_cache_new; the pool frees it in pf_pool_destroy. */
void pf_pool_cache_free(pf_pool_cache *cache);
/* Frames parked in the cache now (free frames; for tests and viewers). */
int pf_pool_cache_count(const pf_pool_cache *cache);

/* ---- taking frames ------------------------------------------------------- */

/* Take one free frame for owner. PF_ERR_NOMEM if none is free. */
int pf_pool_alloc(pf_pool *pool, int owner, int *frame_out);
int pf_pool_alloc_c(pf_pool_cache *cache, int owner, int *frame_out);

/* Take n frames for owner, all or nothing. */
int pf_pool_alloc_n(pf_pool *pool, int owner, int n, int *frames_out);
int pf_pool_alloc_n_c(pf_pool_cache *cache, int owner, int n, int *frames_out);

/* Admission: take n frames only if at least pf_pool_reserve_for(N, watermark)
 * frames stay free afterwards, counting the frames parked in every cache.
 * The count and the taking are one atomic step (no other call can slip in
 * between). PF_ERR_WATERMARK if the reserve would be touched, PF_ERR_NOMEM if
 * fewer than n are free at all. watermark in [0, 1]. */
int pf_pool_alloc_admit(pf_pool *pool, int owner, int n, double watermark, int *frames_out);
int pf_pool_alloc_admit_c(pf_pool_cache *cache, int owner, int n, double watermark,
                          int *frames_out);

/* The admission predicate alone, on the lock-free counters (racy by nature;
 * for display and planning). */
int pf_pool_can_admit(const pf_pool *pool, int n, double watermark);

/* Frames that admission keeps in reserve for a watermark: ceil(w * N). */
int pf_pool_reserve_frames(const pf_pool *pool, double watermark);

/* The same figure without a pool: ceil(watermark * nframes) with the pool's
 * one tolerance (a relative 1e-9, so 0.07 x 100 is 7 frames, not 8); 0 for a
 * watermark outside [0, 1] or nframes < 0. Every caller that shows or uses
 * the reserve (pool, simulator, renderer, reports) computes it here. */
int pf_pool_reserve_for(int nframes, double watermark);

/* ---- giving frames back -------------------------------------------------- */

/* Drop owner's reference to frame; the frame is free again when its count
 * reaches 0 (the _c variant parks it in the cache). PF_ERR_RANGE for a bad
 * id, PF_ERR_DOUBLE_FREE for a free frame, PF_ERR_NOT_OWNER when owner is not
 * the frame's owner. */
int pf_pool_free(pf_pool *pool, int owner, int frame);
int pf_pool_free_c(pf_pool_cache *cache, int owner, int frame);

/* Drop owner's reference to each of frames[0..n), in O(n). All or nothing:
 * the list is checked as n pf_pool_free calls in order would be (a frame
 * listed twice needs two references) and on the first error nothing is freed
 * and that error is returned. */
int pf_pool_free_n(pf_pool *pool, int owner, const int *frames, int n);
int pf_pool_free_n_c(pf_pool_cache *cache, int owner, const int *frames, int n);

/* Free every frame whose owner is `owner` (one reference each); *freed_out
 * (may be NULL) gets the number of frames that became free. Cost O(N): a
 * caller that knows its frames uses free_n. */
int pf_pool_free_owner(pf_pool *pool, int owner, int *freed_out);

/* Add a reference to a used frame (prefix sharing). PF_ERR_ARG for a free
 * frame, PF_ERR_RANGE for a bad id or a count already at 2^30 - 1 (the
 * count shares its word with the owner and a flag). */
int pf_pool_share(pf_pool *pool, int frame);

/* Drop one reference to a used frame, whoever holds it (a sharer dropping
 * its own reference); the frame is free at 0. PF_ERR_DOUBLE_FREE for a free
 * frame, PF_ERR_RANGE for a bad id. */
int pf_pool_unref(pf_pool *pool, int frame);
int pf_pool_unref_c(pf_pool_cache *cache, int frame);

/* ---- lock-free reads ----------------------------------------------------- */

int pf_pool_capacity(const pf_pool *pool);
int pf_pool_free_count(const pf_pool *pool);
int pf_pool_used_count(const pf_pool *pool);
int pf_pool_peak(const pf_pool *pool);
int pf_pool_owner(const pf_pool *pool, int frame);    /* PF_POOL_NO_OWNER if free */
int pf_pool_refcount(const pf_pool *pool, int frame); /* 0 if free */
uint64_t pf_pool_alloc_total(const pf_pool *pool);    /* frames handed out, ever */
/* Takes that had to lock every cache at once (to count parked frames for a
 * decision, steal them, or find headroom at a new peak); steady churn
 * through caches adds none. For tests and benchmarks; reset clears it. */
uint64_t pf_pool_stop_count(const pf_pool *pool);

/* Set the peak to the frames used now. */
void pf_pool_reset_peak(pf_pool *pool);

/* Full consistency check of a quiescent pool (depot and caches hold exactly
 * the free frames, once each; owners, counts, peak and the peak bookkeeping
 * agree). Returns PF_OK, PF_ERR_ARG when an invariant is broken, or
 * PF_ERR_NOMEM if its scratch bitmap could not be allocated; for tests and
 * debug builds. */
int pf_pool_check(pf_pool *pool);

#endif
