/* core/pool.c - the frame pool (contract in pool.h).
 *
 * Data: per-frame owner and reference count (C11 atomics, so a viewer reads
 * them without the lock), a LIFO stack of free frame ids, and atomic
 * counters (free, used, peak, frames handed out). Every mutation happens
 * under one pthread mutex; inside it the atomics are written with relaxed
 * stores, because the mutex already orders the writers and a viewer only
 * needs each value to be exact on its own, not a consistent cut.
 *
 * Invariants (checked by pf_pool_check):
 *   - frame f is free  <=>  refcount[f] == 0  <=>  owner[f] == PF_POOL_NO_OWNER
 *   - the free stack holds exactly the free frames, each once
 *   - free + used == N, peak >= used
 *
 * Sharing: a shared frame keeps its first owner; pf_pool_share() adds a
 * reference and only that owner drops references (free, free_owner), one at
 * a time. The frame returns to the free list when its count reaches 0.
 */
#include "core/pool.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/err.h"

#define PF_POOL_MAX_FRAMES (1 << 24)

struct pf_pool {
    int n;
    pthread_mutex_t mu;
    _Atomic int *owner;
    _Atomic int *ref;
    int *stack; /* free frame ids; stack[top - 1] is handed out next */
    int top;    /* guarded by mu; equals free_count */
    _Atomic int free_count;
    _Atomic int used;
    _Atomic int peak;
    _Atomic uint64_t alloc_total;
};

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

/* Under mu: the pool as new. The stack is filled backwards so that frame 0
 * is popped first (initial order 0, 1, 2, ...). */
static void pool_reset_locked(pf_pool *p)
{
    for (int i = 0; i < p->n; i++) {
        STORE(p->owner[i], PF_POOL_NO_OWNER);
        STORE(p->ref[i], 0);
        p->stack[i] = p->n - 1 - i;
    }
    p->top = p->n;
    STORE(p->free_count, p->n);
    STORE(p->used, 0);
    STORE(p->peak, 0);
    STORE(p->alloc_total, (uint64_t)0);
}

pf_pool *pf_pool_create(int nframes)
{
    if (nframes < 1 || nframes > PF_POOL_MAX_FRAMES)
        return NULL;
    pf_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = nframes;
    p->owner = malloc((size_t)nframes * sizeof *p->owner);
    p->ref = malloc((size_t)nframes * sizeof *p->ref);
    p->stack = malloc((size_t)nframes * sizeof *p->stack);
    if (!p->owner || !p->ref || !p->stack || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->owner);
        free(p->ref);
        free(p->stack);
        free(p);
        return NULL;
    }
    pool_reset_locked(p); /* not shared yet: no lock needed */
    return p;
}

void pf_pool_destroy(pf_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_destroy(&pool->mu);
    free(pool->owner);
    free(pool->ref);
    free(pool->stack);
    free(pool);
}

void pf_pool_reset(pf_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool_reset_locked(pool);
    pthread_mutex_unlock(&pool->mu);
}

/* Under mu: pop one frame for owner (the caller checked top > 0). */
static int take_locked(pf_pool *p, int owner)
{
    int f = p->stack[--p->top];
    STORE(p->owner[f], owner);
    STORE(p->ref[f], 1);
    return f;
}

/* Under mu: publish the counters after `taken` frames left the stack. */
static void account_take_locked(pf_pool *p, int taken)
{
    int used = p->n - p->top;
    STORE(p->free_count, p->top);
    STORE(p->used, used);
    if (used > LOAD(p->peak))
        STORE(p->peak, used);
    STORE(p->alloc_total, LOAD(p->alloc_total) + (uint64_t)taken);
}

/* Under mu: the frame's last reference is gone; back on the stack. */
static void release_locked(pf_pool *p, int f)
{
    STORE(p->ref[f], 0);
    STORE(p->owner[f], PF_POOL_NO_OWNER);
    p->stack[p->top++] = f;
    STORE(p->free_count, p->top);
    STORE(p->used, p->n - p->top);
}

int pf_pool_alloc(pf_pool *pool, int owner, int *frame_out)
{
    if (!pool || owner < 0 || !frame_out)
        return PF_ERR_ARG;
    int rc = PF_OK;
    pthread_mutex_lock(&pool->mu);
    if (pool->top == 0) {
        rc = PF_ERR_NOMEM;
        goto out;
    }
    *frame_out = take_locked(pool, owner);
    account_take_locked(pool, 1);
out:
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

/* Under mu: take n frames if at least n + reserve are free. */
static int take_n_locked(pf_pool *p, int owner, int n, int reserve, int *frames_out)
{
    if (n > p->top)
        return PF_ERR_NOMEM;
    if (p->top - n < reserve)
        return PF_ERR_WATERMARK;
    for (int i = 0; i < n; i++)
        frames_out[i] = take_locked(p, owner);
    if (n > 0)
        account_take_locked(p, n);
    return PF_OK;
}

int pf_pool_alloc_n(pf_pool *pool, int owner, int n, int *frames_out)
{
    if (!pool || owner < 0 || n < 0 || (n > 0 && !frames_out))
        return PF_ERR_ARG;
    if (n > pool->n)
        return PF_ERR_NOMEM;
    pthread_mutex_lock(&pool->mu);
    int rc = take_n_locked(pool, owner, n, 0, frames_out);
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

static int watermark_valid(double w)
{
    return w >= 0.0 && w <= 1.0; /* false for NaN too */
}

/* ceil(w * N), with a relative tolerance of 1e-9 so that a product like
 * 0.07 * 100 = 7.000000000000001 counts as the 7 frames meant, not 8.
 * The one place the reserve is computed (pool, simulator, renderer, reports). */
int pf_pool_reserve_for(int n, double w)
{
    if (n < 0 || !watermark_valid(w))
        return 0;
    double x = w * n;
    int r = (int)ceil(x - 1e-9 * (x > 1.0 ? x : 1.0));
    if (r < 0)
        r = 0;
    if (r > n)
        r = n;
    return r;
}

int pf_pool_reserve_frames(const pf_pool *pool, double watermark)
{
    if (!pool || !watermark_valid(watermark))
        return PF_ERR_ARG;
    return pf_pool_reserve_for(pool->n, watermark);
}

int pf_pool_alloc_admit(pf_pool *pool, int owner, int n, double watermark, int *frames_out)
{
    if (!pool || owner < 0 || n < 0 || (n > 0 && !frames_out) || !watermark_valid(watermark))
        return PF_ERR_ARG;
    if (n > pool->n)
        return PF_ERR_NOMEM;
    int reserve = pf_pool_reserve_for(pool->n, watermark);
    pthread_mutex_lock(&pool->mu);
    int rc = take_n_locked(pool, owner, n, reserve, frames_out);
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

int pf_pool_can_admit(const pf_pool *pool, int n, double watermark)
{
    if (!pool || n < 0 || !watermark_valid(watermark))
        return 0;
    int free_now = LOAD(((pf_pool *)pool)->free_count);
    return n <= free_now && free_now - n >= pf_pool_reserve_for(pool->n, watermark);
}

int pf_pool_free(pf_pool *pool, int owner, int frame)
{
    if (!pool || owner < 0)
        return PF_ERR_ARG;
    if (frame < 0 || frame >= pool->n)
        return PF_ERR_RANGE;
    int rc = PF_OK;
    pthread_mutex_lock(&pool->mu);
    int ref = LOAD(pool->ref[frame]);
    if (ref == 0) {
        rc = PF_ERR_DOUBLE_FREE;
    } else if (LOAD(pool->owner[frame]) != owner) {
        rc = PF_ERR_NOT_OWNER;
    } else if (ref > 1) {
        STORE(pool->ref[frame], ref - 1);
    } else {
        release_locked(pool, frame);
    }
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

int pf_pool_free_owner(pf_pool *pool, int owner, int *freed_out)
{
    if (!pool || owner < 0)
        return PF_ERR_ARG;
    int freed = 0;
    pthread_mutex_lock(&pool->mu);
    for (int f = 0; f < pool->n; f++) {
        if (LOAD(pool->owner[f]) != owner)
            continue;
        int ref = LOAD(pool->ref[f]);
        if (ref > 1) {
            STORE(pool->ref[f], ref - 1);
        } else {
            release_locked(pool, f);
            freed++;
        }
    }
    pthread_mutex_unlock(&pool->mu);
    if (freed_out)
        *freed_out = freed;
    return PF_OK;
}

int pf_pool_share(pf_pool *pool, int frame)
{
    if (!pool)
        return PF_ERR_ARG;
    if (frame < 0 || frame >= pool->n)
        return PF_ERR_RANGE;
    int rc = PF_OK;
    pthread_mutex_lock(&pool->mu);
    int ref = LOAD(pool->ref[frame]);
    if (ref == 0)
        rc = PF_ERR_ARG; /* sharing a free frame: nothing to share */
    else if (ref == INT_MAX)
        rc = PF_ERR_RANGE;
    else
        STORE(pool->ref[frame], ref + 1);
    pthread_mutex_unlock(&pool->mu);
    return rc;
}

/* The viewers below take no lock. The casts drop const only because C11's
 * atomic_load takes a non-const pointer in some libcs; nothing is written. */
int pf_pool_capacity(const pf_pool *pool)
{
    return pool ? pool->n : 0;
}

int pf_pool_free_count(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->free_count) : 0;
}

int pf_pool_used_count(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->used) : 0;
}

int pf_pool_peak(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->peak) : 0;
}

int pf_pool_owner(const pf_pool *pool, int frame)
{
    if (!pool || frame < 0 || frame >= pool->n)
        return PF_POOL_NO_OWNER;
    return LOAD(((pf_pool *)pool)->owner[frame]);
}

int pf_pool_refcount(const pf_pool *pool, int frame)
{
    if (!pool || frame < 0 || frame >= pool->n)
        return 0;
    return LOAD(((pf_pool *)pool)->ref[frame]);
}

uint64_t pf_pool_alloc_total(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->alloc_total) : 0;
}

void pf_pool_reset_peak(pf_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    STORE(pool->peak, pool->n - pool->top);
    pthread_mutex_unlock(&pool->mu);
}

int pf_pool_check(pf_pool *pool)
{
    if (!pool)
        return PF_ERR_ARG;
    unsigned char *on_stack = calloc((size_t)pool->n, 1);
    if (!on_stack)
        return PF_ERR_NOMEM;
    int rc = PF_ERR_ARG; /* until every invariant below has held */
    pthread_mutex_lock(&pool->mu);
    if (pool->top < 0 || pool->top > pool->n)
        goto out;
    for (int i = 0; i < pool->top; i++) {
        int f = pool->stack[i];
        if (f < 0 || f >= pool->n || on_stack[f])
            goto out;
        on_stack[f] = 1;
    }
    int used = 0;
    for (int f = 0; f < pool->n; f++) {
        int ref = LOAD(pool->ref[f]), owner = LOAD(pool->owner[f]);
        if (ref < 0)
            goto out;
        if (ref == 0 && (owner != PF_POOL_NO_OWNER || !on_stack[f]))
            goto out;
        if (ref > 0 && (owner < 0 || on_stack[f]))
            goto out;
        used += ref > 0;
    }
    if (used != pool->n - pool->top || LOAD(pool->used) != used ||
        LOAD(pool->free_count) != pool->top || LOAD(pool->peak) < used ||
        LOAD(pool->peak) > pool->n)
        goto out;
    rc = PF_OK;
out:
    pthread_mutex_unlock(&pool->mu);
    free(on_stack);
    return rc;
}
