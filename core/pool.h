/* core/pool.h - the frame pool: PageFault's physical memory allocator.
 *
 * The pool has N frames (physical pages), each holding block_size tokens of
 * KV. A frame is free or owned by one sequence id (>= 0) with a reference
 * count (> 1 when a prefix is shared). Free frames sit on a LIFO free list,
 * so after churn the frames a sequence gets are scattered, as in a real pool.
 *
 * Contract:
 *  - Every mutating call is safe from many threads (one mutex for now).
 *  - Errors are returned, never aborted on: freeing a free frame is
 *    PF_ERR_DOUBLE_FREE, freeing another sequence's frame PF_ERR_NOT_OWNER.
 *  - alloc_n is all-or-nothing: on failure nothing was taken.
 *  - The counters and the per-frame owner/refcount are atomics: a viewer
 *    (the dashboard, a snapshot) reads them without taking the lock and
 *    without stopping the allocator. Such reads are individually exact but
 *    not a consistent cut across frames.
 *
 * Callers: the simulator (threaded and deterministic), calc, the tests, the
 * GPU API (to lay out block tables).
 */
#ifndef PF_CORE_POOL_H
#define PF_CORE_POOL_H

#include <stdint.h>

#define PF_POOL_NO_OWNER (-1)

typedef struct pf_pool pf_pool;

/* Create a pool of nframes (1 .. 1<<24) frames, all free. NULL on bad size
 * or allocation failure. Initial free order is 0,1,2,... (frame 0 first). */
pf_pool *pf_pool_create(int nframes);
void pf_pool_destroy(pf_pool *pool);

/* Free every frame and reset peak (the pool becomes as new). */
void pf_pool_reset(pf_pool *pool);

/* Take one free frame for owner. PF_ERR_NOMEM if none is free. */
int pf_pool_alloc(pf_pool *pool, int owner, int *frame_out);

/* Take n frames for owner, all or nothing. */
int pf_pool_alloc_n(pf_pool *pool, int owner, int n, int *frames_out);

/* Admission: take n frames only if at least ceil(watermark * N) frames stay
 * free afterwards (checked and taken under one lock, so no other thread
 * can slip in between). PF_ERR_WATERMARK if the reserve would be touched,
 * PF_ERR_NOMEM if fewer than n are free at all. watermark in [0, 1]. */
int pf_pool_alloc_admit(pf_pool *pool, int owner, int n, double watermark, int *frames_out);

/* The admission predicate alone (racy by nature; for display and planning). */
int pf_pool_can_admit(const pf_pool *pool, int n, double watermark);

/* Frames that admission keeps in reserve for a watermark: ceil(w * N). */
int pf_pool_reserve_frames(const pf_pool *pool, double watermark);

/* The same figure without a pool: ceil(watermark * nframes) with the pool's
 * one tolerance (a relative 1e-9, so 0.07 x 100 is 7 frames, not 8); 0 for a
 * watermark outside [0, 1] or nframes < 0. Every caller that shows or uses
 * the reserve (simulator, renderer, reports) computes it here. */
int pf_pool_reserve_for(int nframes, double watermark);

/* Drop owner's reference to frame; the frame returns to the free list when
 * its count reaches 0. */
int pf_pool_free(pf_pool *pool, int owner, int frame);

/* Free every frame whose owner is `owner`; *freed_out (may be NULL) gets the
 * number of frames dropped. Cost O(N). */
int pf_pool_free_owner(pf_pool *pool, int owner, int *freed_out);

/* Add a reference to a used frame (prefix sharing). The frame keeps its
 * first owner, and only that owner drops references (one per free call,
 * one per frame in free_owner, whose count is of frames actually returned
 * to the free list). PF_ERR_ARG for a free frame, PF_ERR_RANGE for a bad id. */
int pf_pool_share(pf_pool *pool, int frame);

/* Lock-free reads. */
int pf_pool_capacity(const pf_pool *pool);
int pf_pool_free_count(const pf_pool *pool);
int pf_pool_used_count(const pf_pool *pool);
int pf_pool_peak(const pf_pool *pool);
int pf_pool_owner(const pf_pool *pool, int frame);    /* PF_POOL_NO_OWNER if free */
int pf_pool_refcount(const pf_pool *pool, int frame); /* 0 if free */
uint64_t pf_pool_alloc_total(const pf_pool *pool);    /* frames handed out, ever */
void pf_pool_reset_peak(pf_pool *pool);

/* Full consistency check under the lock (free list, owners, counts agree).
 * Returns PF_OK, PF_ERR_ARG when an invariant is broken, or PF_ERR_NOMEM if
 * its scratch bitmap could not be allocated; for tests and debug builds. */
int pf_pool_check(pf_pool *pool);

#endif
