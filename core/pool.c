/* core/pool.c - the frame pool (contract in pool.h).
 *
 * Layout. Free frames live in two kinds of place: the depot, one LIFO stack
 * under the pool mutex `mu`, and caches (magazines), small LIFO stacks of at
 * most CACHE_MAX frames, one per thread, each under its own spinlock that
 * only its thread takes on the fast path. A thread allocates from and frees
 * into its own cache; it goes to the depot (and takes `mu`) only when its
 * cache is empty (refill CACHE_BATCH frames) or full (flush CACHE_BATCH),
 * so the depot lock is taken about once per CACHE_BATCH operations and two
 * threads touch no common cache line on the fast path. Per-frame owner and
 * reference count are one atomic 64-bit word (owner in the high half), so
 * frees and sharing change them with one compare-and-swap and a viewer reads
 * a consistent pair without a lock.
 *
 * Locks and their order: `mu` before any cache lock. A thread holding a
 * cache lock never waits for `mu` (the fast path releases its cache lock
 * before going slow, then takes `mu`, then the cache lock again), and only a
 * holder of `mu` ever holds two cache locks, so there is no cycle. Holding
 * `mu` and every cache lock at once ("stop the world") is how a slow path
 * sees the whole pool at one instant; it costs O(caches) and happens only on
 * the rare paths below, never in steady alloc/free churn.
 *
 * Exact free count for admission. Frames in a cache are free, so the free
 * count is depot + the sum of every cache's count, and no single counter is
 * updated on the fast path (one shared atomic would cost every operation a
 * contended cache line: it is what makes a one-lock pool stop scaling). The
 * admission decision "at least n + reserve frames are free" is made from a
 * lower bound when that bound already suffices, and from the exact count
 * otherwise:
 *   1. Under `mu` and the caller's own cache lock, depot + own cache is a
 *      lower bound of the free count (the other caches can only hold more).
 *      If it covers n + reserve, admitting is exactly what the full count
 *      would decide; the frames come from the own cache and the depot.
 *   2. Otherwise every other cache is locked too. Now nothing can move: the
 *      sum is the exact free count at this instant, the decision (admit,
 *      PF_ERR_WATERMARK or PF_ERR_NOMEM) is made on it, and the frames are
 *      taken (own cache, depot, then the other caches) before any lock is
 *      released. The decision and the taking are one atomic step.
 * The same two steps serve every allocation (reserve 0), so a taker whose
 * cache and the depot are empty steals from the other caches, and NOMEM is
 * only ever returned on the exact count. The lock-free counters
 * (free_count, can_admit) sum per-cache mirrors without locking: exact when
 * quiescent, and never used for a decision inside the pool.
 *
 * Exact peak with no shared counter on the fast path. The bookkeeping keeps
 *     peak - used == headroom(depot) + sum over caches of headroom(cache)
 * with every headroom >= 0, so used <= peak at all times. Freeing a frame
 * adds one unit of headroom where the frame lands (the own cache, or the
 * depot); taking n frames spends n units: the own cache's, then the depot's,
 * and only if those are short (the pool is at or near its peak) every cache
 * is locked and their headroom spent; what is then still missing means the
 * pool is at a new maximum and raises the peak by exactly the missing
 * amount, so the peak is always a value `used` really reached. Moving
 * units between holders keeps the sum, so a slow take also stocks its cache
 * with up to CACHE_BATCH units (the depot's, and half of each other cache's
 * surplus) for the takes that follow. Churn within what the pool has already
 * held at once spends units its own frees made and never stops the world
 * (pf_pool_stop_count counts the times it does). Sums
 * taken one cache at a time would not do: a cache seen empty of headroom may
 * free (and gain headroom) before the decision, and the peak would then
 * count a maximum that never happened; hence all cache locks at once.
 *
 * free_n. Freeing a list is all-or-nothing. Pass one drops each reference
 * with a compare-and-swap that also checks range, owner and double free, in
 * list order (a frame listed twice needs two references): a count reaching
 * 0 parks the word in LIMBO (free but in no stack, so nobody can take it),
 * a count staying above 0 is PINNED; LIMBO is pinned too, and other unref/
 * share/free calls on a pinned frame wait for the pin to clear, so until
 * pass two no other thread can change any listed frame. On an error the
 * drops are undone in reverse order and the pins cleared: nothing happened.
 * Otherwise pass two clears the pins and moves LIMBO frames to the cache or
 * depot. Cost O(n) (a list naming a frame twice: below).
 *
 * Two lists of one owner at once (the same frames shared, say): a list
 * that meets a pin of its own owner must know whose it is, since its own
 * (a frame it names twice) is to be dropped through, and another list's is
 * to be waited for; if it went through the other's drop, that list's
 * rollback would give a reference back to a frame this one had freed. The
 * word has no room to name the list, so the list looks for the frame among
 * its earlier entries when it meets a pin, and clears each pin once, at the
 * frame's first entry (see unpin). Another list's pin: undo this list's
 * drops, wait for the pin to clear and start over. Undoing before waiting
 * keeps two lists that pin each other's frames from waiting on each other
 * for ever; lists in the same order never meet a pin twice. The looks cost
 * nothing on a list of distinct frames (it meets no pin of its own); one
 * that names a frame twice pays O(n) an entry, O(n^2) in all, and no
 * caller names a frame twice but by mistake.
 *
 * Invariants (checked by pf_pool_check on a quiescent pool):
 *   - frame f free  <=>  ref 0  <=>  owner PF_POOL_NO_OWNER  <=>  f is in
 *     exactly one place: the depot or one cache; no LIMBO or PINNED word
 *   - mirrors equal the stacks' sizes; used == N - free; peak - used ==
 *     total headroom; every headroom >= 0; peak <= N
 *
 * Defaults. CACHE_BATCH 32: the depot lock is paid once per 32 frames moved,
 * so a thread that only allocates (or only frees) spends ~3% of its
 * operations on the shared path; CACHE_MAX 64 = two batches, Bonwick's
 * reason for keeping a full and an empty magazine: a thread alternating
 * alloc and free at a batch boundary does not bounce between refill and
 * flush. Frames parked in caches are at most 64 per thread; they still count
 * as free and are stolen when needed, so parking costs no capacity.
 */
#include "core/pool.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

#define PF_POOL_MAX_FRAMES (1 << 24)
#define CACHE_MAX 64
#define CACHE_BATCH 32
#define NEED_ALL 1 /* take_locked: the decision needs every cache locked */

/* The per-frame word: owner in the high 32 bits (as int32), the reference
 * count in bits 0..29, the pin (a free_n in progress) in bit 30. */
#define REF_MASK 0x3fffffffu
#define REF_MAX ((int)REF_MASK)
#define PIN_BIT 0x40000000u
#define ST(o, r) (((uint64_t)(uint32_t)(o) << 32) | (uint64_t)(uint32_t)(r))
#define ST_OWNER(s) ((int)(int32_t)(uint32_t)((s) >> 32))
#define ST_REF(s) ((int)((uint32_t)(s)&REF_MASK))
#define ST_PINNED(s) (((uint32_t)(s)&PIN_BIT) != 0)
#define OWNER_LIMBO (-2)
#define ST_FREE ST(PF_POOL_NO_OWNER, 0)
#define ST_LIMBO (ST(OWNER_LIMBO, 0) | PIN_BIT)

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)

struct pf_pool_cache {
    _Alignas(64) _Atomic int lock; /* 0 free, 1 held; own cache line */
    int n;                         /* frames parked: frames[0..n), top last */
    int headroom;                  /* peak bookkeeping, see above */
    int in_use;                    /* under pool->mu */
    pf_pool *pool;
    _Atomic int n_view;          /* == n, for lock-free readers */
    _Atomic uint64_t allocs;     /* frames handed out through this cache */
    int frames[CACHE_MAX];
};

struct pf_pool {
    int n;
    _Atomic uint64_t *state; /* per frame: owner | ref */
    pthread_mutex_t mu;
    int *depot; /* free frame ids; depot[depot_n - 1] is handed out next */
    int depot_n;
    int headroom; /* under mu */
    int ncaches;  /* caches in use, under mu */
    int nslots;   /* slots ever allocated, under mu; slots live until destroy */
    _Atomic(pf_pool_cache *) *slots;
    _Atomic int nslots_view;
    _Atomic int depot_view; /* == depot_n */
    _Atomic int peak;       /* written under mu */
    _Atomic uint64_t depot_allocs;
    _Atomic uint64_t stops; /* slow paths that locked every cache */
};

/* ---- small helpers ------------------------------------------------------- */

/* Test-and-test-and-set; yields after a while, because on an oversubscribed
 * machine (256 threads on 2 cores in the stress test) the holder may be
 * descheduled. Held only for a handful of instructions, or O(caches) by a
 * stop-the-world slow path. */
static void spin_lock(_Atomic int *l)
{
    if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
        return;
    for (unsigned spins = 0;; spins++) {
        if (!atomic_load_explicit(l, memory_order_relaxed) &&
            !atomic_exchange_explicit(l, 1, memory_order_acquire))
            return;
        if (spins >= 64)
            sched_yield();
    }
}

static void spin_unlock(_Atomic int *l)
{
    atomic_store_explicit(l, 0, memory_order_release);
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static pf_pool_cache *slot(const pf_pool *p, int i)
{
    return atomic_load_explicit(&((pf_pool *)p)->slots[i], memory_order_acquire);
}

static void add_u64(_Atomic uint64_t *x, int k) /* single writer (under a lock) */
{
    atomic_store_explicit(x, atomic_load_explicit(x, memory_order_relaxed) + (uint64_t)k,
                          memory_order_relaxed);
}

/* Under mu: lock (or unlock) every cache in use except `except`. */
static void lock_others(pf_pool *p, const pf_pool_cache *except)
{
    for (int i = 0; i < p->nslots; i++) {
        pf_pool_cache *c = slot(p, i);
        if (c != except && c->in_use)
            spin_lock(&c->lock);
    }
}

static void unlock_others(pf_pool *p, const pf_pool_cache *except)
{
    for (int i = 0; i < p->nslots; i++) {
        pf_pool_cache *c = slot(p, i);
        if (c != except && c->in_use)
            spin_unlock(&c->lock);
    }
}

/* Wait while a free_n holds the frame pinned; returns the current word. */
static uint64_t load_unpinned(pf_pool *p, int f)
{
    uint64_t s = atomic_load_explicit(&p->state[f], memory_order_acquire);
    for (unsigned spins = 0; ST_PINNED(s); spins++) {
        if (spins >= 64)
            sched_yield();
        s = atomic_load_explicit(&p->state[f], memory_order_acquire);
    }
    return s;
}

/* ---- create, destroy, reset ---------------------------------------------- */

/* Under mu with every cache locked (or before the pool is shared): as new.
 * The depot is filled backwards so that frame 0 is handed out first. */
static void reset_all_locked(pf_pool *p)
{
    for (int i = 0; i < p->n; i++) {
        atomic_store_explicit(&p->state[i], ST_FREE, memory_order_relaxed);
        p->depot[i] = p->n - 1 - i;
    }
    p->depot_n = p->n;
    p->headroom = 0;
    for (int i = 0; i < p->nslots; i++) {
        pf_pool_cache *c = slot(p, i);
        c->n = 0;
        c->headroom = 0;
        STORE(c->n_view, 0);
        STORE(c->allocs, (uint64_t)0);
    }
    STORE(p->depot_view, p->n);
    STORE(p->peak, 0);
    STORE(p->depot_allocs, (uint64_t)0);
    STORE(p->stops, (uint64_t)0);
}

pf_pool *pf_pool_create(int nframes)
{
    if (nframes < 1 || nframes > PF_POOL_MAX_FRAMES)
        return NULL;
    pf_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = nframes;
    p->state = malloc((size_t)nframes * sizeof *p->state);
    p->depot = malloc((size_t)nframes * sizeof *p->depot);
    p->slots = calloc(PF_POOL_CACHE_MAX, sizeof *p->slots);
    if (!p->state || !p->depot || !p->slots || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->state);
        free(p->depot);
        free(p->slots);
        free(p);
        return NULL;
    }
    reset_all_locked(p); /* not shared yet: no lock needed */
    return p;
}

void pf_pool_destroy(pf_pool *pool)
{
    if (!pool)
        return;
    for (int i = 0; i < pool->nslots; i++)
        free(slot(pool, i));
    pthread_mutex_destroy(&pool->mu);
    free(pool->state);
    free(pool->depot);
    free(pool->slots);
    free(pool);
}

void pf_pool_reset(pf_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    lock_others(pool, NULL);
    reset_all_locked(pool);
    unlock_others(pool, NULL);
    pthread_mutex_unlock(&pool->mu);
}

/* ---- caches -------------------------------------------------------------- */

pf_pool_cache *pf_pool_cache_new(pf_pool *pool)
{
    if (!pool)
        return NULL;
    pf_pool_cache *c = NULL;
    pthread_mutex_lock(&pool->mu);
    for (int i = 0; i < pool->nslots && !c; i++)
        if (!slot(pool, i)->in_use)
            c = slot(pool, i); /* a detached slot: empty, headroom 0 */
    if (!c && pool->nslots < PF_POOL_CACHE_MAX) {
        c = aligned_alloc(_Alignof(pf_pool_cache), sizeof *c);
        if (c) {
            memset(c, 0, sizeof *c);
            c->pool = pool;
            atomic_store_explicit(&pool->slots[pool->nslots], c, memory_order_release);
            pool->nslots++;
            atomic_store_explicit(&pool->nslots_view, pool->nslots, memory_order_release);
        }
    }
    if (c) {
        c->in_use = 1;
        pool->ncaches++;
    }
    pthread_mutex_unlock(&pool->mu);
    return c;
}

void pf_pool_cache_free(pf_pool_cache *c)
{
    if (!c)
        return;
    pf_pool *p = c->pool;
    pthread_mutex_lock(&p->mu);
    if (!c->in_use) { /* freed twice: the slot is already detached */
        pthread_mutex_unlock(&p->mu);
        return;
    }
    spin_lock(&c->lock);
    for (int i = 0; i < c->n; i++)
        p->depot[p->depot_n++] = c->frames[i];
    p->headroom += c->headroom;
    c->headroom = 0;
    c->n = 0;
    c->in_use = 0;
    p->ncaches--;
    STORE(c->n_view, 0);
    STORE(p->depot_view, p->depot_n);
    spin_unlock(&c->lock);
    pthread_mutex_unlock(&p->mu);
}

int pf_pool_cache_count(const pf_pool_cache *cache)
{
    return cache ? LOAD(((pf_pool_cache *)cache)->n_view) : 0;
}

/* ---- taking frames ------------------------------------------------------- */

/* The caller popped f from a free stack under that stack's lock: f is ours. */
static void hand_out(pf_pool *p, int f, int owner)
{
    atomic_store_explicit(&p->state[f], ST(owner, 1), memory_order_release);
}

/* Fast path: n frames from the own cache, with no other lock, when the cache
 * alone proves the admission (its count is a lower bound of the free count)
 * and holds the headroom. Returns 1 if it took them. */
static int fast_take(pf_pool_cache *c, int owner, int n, int reserve, int *out)
{
    pf_pool *p = c->pool;
    spin_lock(&c->lock);
    if (c->n < n || c->n - n < reserve || c->headroom < n) {
        spin_unlock(&c->lock);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        int f = c->frames[--c->n];
        hand_out(p, f, owner);
        out[i] = f;
    }
    c->headroom -= n;
    STORE(c->n_view, c->n);
    add_u64(&c->allocs, n);
    spin_unlock(&c->lock);
    return 1;
}

/* Spend n units of headroom (n frames are becoming used): c's, the depot's,
 * then with `all` the other caches' (surplus beyond one unit first, so a
 * thread keeps the unit its next churn needs); the rest raises the peak. */
static void headroom_take(pf_pool *p, pf_pool_cache *c, int n, int all)
{
    int t;
    if (c) {
        t = imin(c->headroom, n);
        c->headroom -= t;
        n -= t;
    }
    t = imin(p->headroom, n);
    p->headroom -= t;
    n -= t;
    for (int pass = 0; all && pass < 2 && n > 0; pass++) {
        for (int i = 0; i < p->nslots && n > 0; i++) {
            pf_pool_cache *o = slot(p, i);
            if (o == c || !o->in_use)
                continue;
            t = imin(o->headroom - (pass == 0), n);
            if (t > 0) {
                o->headroom -= t;
                n -= t;
            }
        }
    }
    if (n > 0)
        STORE(p->peak, LOAD(p->peak) + n);
    /* Stock the own cache for its next takes, up to CACHE_BATCH units: from
     * the depot's headroom, and (all) half of each other cache's surplus
     * beyond one unit, so a thread that allocates more than it frees does
     * not stop the world on every take. Moving headroom between holders
     * keeps the sum, so the peak stays exact. */
    if (!c)
        return;
    t = imin(p->headroom, CACHE_BATCH - c->headroom);
    if (t > 0) {
        p->headroom -= t;
        c->headroom += t;
    }
    for (int i = 0; all && i < p->nslots && c->headroom < CACHE_BATCH; i++) {
        pf_pool_cache *o = slot(p, i);
        if (o == c || !o->in_use)
            continue;
        t = imin((o->headroom - 1) / 2, CACHE_BATCH - c->headroom);
        if (t > 0) {
            o->headroom -= t;
            c->headroom += t;
        }
    }
}

/* Under mu with c (if any) locked, and every other cache locked when `all`.
 * Decides and takes n frames (see "Exact free count" above). Returns PF_OK,
 * PF_ERR_NOMEM, PF_ERR_WATERMARK, or NEED_ALL when the locks held do not
 * prove the decision or do not hold the headroom. */
static int take_locked(pf_pool *p, pf_pool_cache *c, int owner, int n, int reserve, int *out,
                       int all)
{
    int exact = all || p->ncaches - (c != NULL) == 0;
    long known = p->depot_n + (c ? c->n : 0);
    long head = p->headroom + (c ? c->headroom : 0);
    for (int i = 0; all && i < p->nslots; i++) {
        pf_pool_cache *o = slot(p, i);
        if (o != c && o->in_use) {
            known += o->n;
            head += o->headroom;
        }
    }
    if (n > known || known - n < reserve) {
        if (!exact)
            return NEED_ALL;
        return n > known ? PF_ERR_NOMEM : PF_ERR_WATERMARK;
    }
    if (head < n && !exact)
        return NEED_ALL;
    headroom_take(p, c, n, all);

    int k = 0;
    while (c && k < n && c->n > 0)
        out[k++] = c->frames[--c->n];
    while (k < n && p->depot_n > 0)
        out[k++] = p->depot[--p->depot_n];
    for (int i = 0; all && i < p->nslots && k < n; i++) {
        pf_pool_cache *o = slot(p, i);
        if (o == c || !o->in_use)
            continue;
        while (k < n && o->n > 0)
            out[k++] = o->frames[--o->n];
        STORE(o->n_view, o->n);
    }
    /* k == n: `known` counted exactly the frames these loops can reach */
    for (int i = 0; i < n; i++)
        hand_out(p, out[i], owner);
    if (c) {
        /* Refill an emptied cache from the depot: the frames stay free
         * (no count changes), the next CACHE_BATCH takes stay fast. */
        if (c->n == 0) {
            int m = imin(CACHE_BATCH, p->depot_n);
            for (int i = m - 1; i >= 0; i--)
                c->frames[i] = p->depot[--p->depot_n];
            c->n = m;
        }
        STORE(c->n_view, c->n);
        add_u64(&c->allocs, n);
    } else {
        add_u64(&p->depot_allocs, n);
    }
    STORE(p->depot_view, p->depot_n);
    return PF_OK;
}

static int slow_take(pf_pool *p, pf_pool_cache *c, int owner, int n, int reserve, int *out)
{
    pthread_mutex_lock(&p->mu);
    if (c)
        spin_lock(&c->lock);
    int rc = take_locked(p, c, owner, n, reserve, out, 0);
    if (rc == NEED_ALL) {
        add_u64(&p->stops, 1);
        lock_others(p, c);
        rc = take_locked(p, c, owner, n, reserve, out, 1);
        unlock_others(p, c);
    }
    if (c)
        spin_unlock(&c->lock);
    pthread_mutex_unlock(&p->mu);
    return rc;
}

static int take(pf_pool *p, pf_pool_cache *c, int owner, int n, int reserve, int *out)
{
    if (n > p->n)
        return PF_ERR_NOMEM;
    if (c && fast_take(c, owner, n, reserve, out))
        return PF_OK;
    return slow_take(p, c, owner, n, reserve, out);
}

int pf_pool_alloc(pf_pool *pool, int owner, int *frame_out)
{
    if (!pool || owner < 0 || !frame_out)
        return PF_ERR_ARG;
    return take(pool, NULL, owner, 1, 0, frame_out);
}

int pf_pool_alloc_c(pf_pool_cache *cache, int owner, int *frame_out)
{
    if (!cache || owner < 0 || !frame_out)
        return PF_ERR_ARG;
    return take(cache->pool, cache, owner, 1, 0, frame_out);
}

int pf_pool_alloc_n(pf_pool *pool, int owner, int n, int *frames_out)
{
    if (!pool || owner < 0 || n < 0 || (n > 0 && !frames_out))
        return PF_ERR_ARG;
    return take(pool, NULL, owner, n, 0, frames_out);
}

int pf_pool_alloc_n_c(pf_pool_cache *cache, int owner, int n, int *frames_out)
{
    if (!cache || owner < 0 || n < 0 || (n > 0 && !frames_out))
        return PF_ERR_ARG;
    return take(cache->pool, cache, owner, n, 0, frames_out);
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
    return take(pool, NULL, owner, n, pf_pool_reserve_for(pool->n, watermark), frames_out);
}

int pf_pool_alloc_admit_c(pf_pool_cache *cache, int owner, int n, double watermark,
                          int *frames_out)
{
    if (!cache || owner < 0 || n < 0 || (n > 0 && !frames_out) || !watermark_valid(watermark))
        return PF_ERR_ARG;
    pf_pool *p = cache->pool;
    return take(p, cache, owner, n, pf_pool_reserve_for(p->n, watermark), frames_out);
}

int pf_pool_can_admit(const pf_pool *pool, int n, double watermark)
{
    if (!pool || n < 0 || !watermark_valid(watermark))
        return 0;
    int free_now = pf_pool_free_count(pool);
    return n <= free_now && free_now - n >= pf_pool_reserve_for(pool->n, watermark);
}

/* ---- giving frames back -------------------------------------------------- */

/* Return k frames whose words are already ST_FREE to cache c (NULL: the
 * depot). Each is a frame becoming free: one unit of headroom each, kept by
 * the cache (or depot) that receives it. A full cache flushes its oldest
 * frames to the depot, CACHE_BATCH at least. */
static void put_back(pf_pool *p, pf_pool_cache *c, const int *fr, int k)
{
    if (c) {
        spin_lock(&c->lock);
        if (c->n + k <= CACHE_MAX) {
            for (int i = 0; i < k; i++)
                c->frames[c->n++] = fr[i];
            c->headroom += k;
            STORE(c->n_view, c->n);
            spin_unlock(&c->lock);
            return;
        }
        spin_unlock(&c->lock); /* mu comes first in the lock order */
    }
    pthread_mutex_lock(&p->mu);
    if (c) {
        spin_lock(&c->lock);
        int over = c->n + k - CACHE_MAX;
        if (over > 0) {
            int m = imin(c->n, over > CACHE_BATCH ? over : CACHE_BATCH);
            for (int i = 0; i < m; i++)
                p->depot[p->depot_n++] = c->frames[i];
            memmove(c->frames, c->frames + m, (size_t)(c->n - m) * sizeof c->frames[0]);
            c->n -= m;
        }
        int fit = imin(k, CACHE_MAX - c->n);
        for (int i = 0; i < fit; i++)
            c->frames[c->n++] = fr[i];
        for (int i = fit; i < k; i++)
            p->depot[p->depot_n++] = fr[i];
        c->headroom += k;
        STORE(c->n_view, c->n);
        spin_unlock(&c->lock);
    } else {
        for (int i = 0; i < k; i++)
            p->depot[p->depot_n++] = fr[i];
        p->headroom += k;
    }
    STORE(p->depot_view, p->depot_n);
    pthread_mutex_unlock(&p->mu);
}

/* Drop one reference to frame f; with check_owner, only if owner owns it.
 * *released = 1 when the count reached 0 (the word is then ST_FREE). */
static int drop_ref(pf_pool *p, int f, int owner, int check_owner, int *released)
{
    uint64_t s = load_unpinned(p, f);
    for (;;) {
        int ref = ST_REF(s);
        if (ref == 0)
            return PF_ERR_DOUBLE_FREE;
        if (check_owner && ST_OWNER(s) != owner)
            return PF_ERR_NOT_OWNER;
        uint64_t ns = ref == 1 ? ST_FREE : s - 1;
        if (atomic_compare_exchange_weak_explicit(&p->state[f], &s, ns, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            *released = ref == 1;
            return PF_OK;
        }
        if (ST_PINNED(s))
            s = load_unpinned(p, f);
    }
}

static int free_one(pf_pool *p, pf_pool_cache *c, int owner, int check_owner, int frame)
{
    if (frame < 0 || frame >= p->n)
        return PF_ERR_RANGE;
    int released = 0;
    int rc = drop_ref(p, frame, owner, check_owner, &released);
    if (rc == PF_OK && released)
        put_back(p, c, &frame, 1);
    return rc;
}

int pf_pool_free(pf_pool *pool, int owner, int frame)
{
    if (!pool || owner < 0)
        return PF_ERR_ARG;
    return free_one(pool, NULL, owner, 1, frame);
}

int pf_pool_free_c(pf_pool_cache *cache, int owner, int frame)
{
    if (!cache || owner < 0)
        return PF_ERR_ARG;
    return free_one(cache->pool, cache, owner, 1, frame);
}

int pf_pool_unref(pf_pool *pool, int frame)
{
    if (!pool)
        return PF_ERR_ARG;
    return free_one(pool, NULL, 0, 0, frame);
}

int pf_pool_unref_c(pf_pool_cache *cache, int frame)
{
    if (!cache)
        return PF_ERR_ARG;
    return free_one(cache->pool, cache, 0, 0, frame);
}

/* drop_pinned met another list's pin (not an error code: free_n_impl
 * waits and starts over). */
#define PIN_BUSY 1

/* Whether frames[0..i) names f: a frame this list pinned already. */
static int listed_before(const int *frames, int i, int f)
{
    for (int j = 0; j < i; j++)
        if (frames[j] == f)
            return 1;
    return 0;
}

/* Pass one of free_n for entry i of frames: drop owner's reference, leaving
 * the word LIMBO (count 0) or PINNED (count > 0). A pinned word that is
 * owner's or LIMBO was pinned by this list if it names the frame earlier
 * (*dup is set: pass two must then go the duplicates' way), else by another
 * list of the same owner: PIN_BUSY. Another owner's word fails at once, pin
 * or not (its owner cannot change while it is pinned). */
static int drop_pinned(pf_pool *p, const int *frames, int i, int owner, int *dup)
{
    const int f = frames[i];
    uint64_t s = atomic_load_explicit(&p->state[f], memory_order_acquire);
    for (;;) {
        if (ST_OWNER(s) != owner && s != ST_LIMBO)
            return ST_REF(s) == 0 ? PF_ERR_DOUBLE_FREE : PF_ERR_NOT_OWNER;
        if (ST_PINNED(s)) {
            if (!listed_before(frames, i, f))
                return PIN_BUSY;
            *dup = 1;
        }
        int ref = ST_REF(s);
        if (ref == 0)
            return PF_ERR_DOUBLE_FREE; /* our own LIMBO: named once too often */
        uint64_t ns = ref == 1 ? ST_LIMBO : ((s - 1) | PIN_BIT);
        if (atomic_compare_exchange_weak_explicit(&p->state[f], &s, ns, memory_order_acq_rel,
                                                  memory_order_acquire))
            return PF_OK;
    }
}

/* Clear f's pin if owner's. The word does not say which list pinned it:
 * a list clears each frame's pin once, at the frame's first entry (the
 * callers skip the others when the list names a frame twice). A second
 * clear could meet the pin of another list of the same owner, which took
 * the frame the moment the first clear let it go (the twenty-seventh
 * session's review found the pool corrupted that way). */
static void unpin(pf_pool *p, int f, int owner)
{
    uint64_t s = atomic_load_explicit(&p->state[f], memory_order_acquire);
    while (ST_PINNED(s) && ST_OWNER(s) == owner &&
           !atomic_compare_exchange_weak_explicit(&p->state[f], &s, s & ~(uint64_t)PIN_BIT,
                                                  memory_order_acq_rel, memory_order_acquire))
        ;
}

/* Undo a list's drops, entries [0, i), newest first: each finds the word
 * exactly as its own drop left it (nobody else changes a LIMBO or PINNED
 * word, and nothing was returned yet), and gives the reference back, still
 * pinned; then the pins go. */
static void free_n_undo(pf_pool *p, int owner, const int *frames, int i, int dup)
{
    for (int j = i - 1; j >= 0; j--) {
        int f = frames[j];
        uint64_t s = atomic_load_explicit(&p->state[f], memory_order_acquire);
        uint64_t back = s == ST_LIMBO ? (ST(owner, 1) | PIN_BIT) : s + 1;
        atomic_store_explicit(&p->state[f], back, memory_order_release);
    }
    for (int j = 0; j < i; j++)
        if (!dup || !listed_before(frames, j, frames[j]))
            unpin(p, frames[j], owner);
}

/* Pass two of a list that names a frame twice, finished under mu straight
 * into the depot, where no one can take a returned frame before the list
 * is done (else a later entry could meet it reallocated). Newest entry
 * first: the first LIMBO meeting is a frame's last occurrence, where n
 * sequential frees would have returned it. They are written above the
 * depot's top in that reverse order, and the segment is then reversed:
 * the depot ends as sequential frees leave it (same LIFO order). */
static void free_n_finish_dup(pf_pool *p, int owner, const int *frames, int n)
{
    pthread_mutex_lock(&p->mu);
    int base = p->depot_n;
    for (int i = n - 1; i >= 0; i--) {
        int f = frames[i];
        uint64_t limbo = ST_LIMBO;
        if (atomic_compare_exchange_strong_explicit(&p->state[f], &limbo, ST_FREE,
                                                    memory_order_acq_rel, memory_order_acquire))
            p->depot[p->depot_n++] = f;
        else if (!listed_before(frames, i, f)) /* its first entry: see unpin */
            unpin(p, f, owner);
    }
    for (int a = base, b = p->depot_n - 1; a < b; a++, b--) {
        int t = p->depot[a];
        p->depot[a] = p->depot[b];
        p->depot[b] = t;
    }
    p->headroom += p->depot_n - base;
    STORE(p->depot_view, p->depot_n);
    pthread_mutex_unlock(&p->mu);
}

/* Pass two without duplicates: each frame is met once, so a frame
 * returned here is never looked at again and may be taken at once: LIMBO
 * frames go back to the cache in batches, survivors are unpinned. */
static void free_n_finish(pf_pool *p, pf_pool_cache *c, int owner, const int *frames, int n)
{
    int buf[CACHE_BATCH], k = 0;
    for (int i = 0; i < n; i++) {
        int f = frames[i];
        uint64_t limbo = ST_LIMBO;
        if (atomic_compare_exchange_strong_explicit(&p->state[f], &limbo, ST_FREE,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            buf[k++] = f;
            if (k == CACHE_BATCH) {
                put_back(p, c, buf, k);
                k = 0;
            }
        } else {
            unpin(p, f, owner);
        }
    }
    if (k > 0)
        put_back(p, c, buf, k);
}

/* Pass one drops a reference of every entry, pinned (drop_pinned); a bad
 * frame or a double free undoes the list, a frame pinned by another list
 * waits for it and starts again. Pass two returns the frames left in
 * LIMBO and unpins the others. */
static int free_n_impl(pf_pool *p, pf_pool_cache *c, int owner, const int *frames, int n)
{
    int i, rc, dup;
again:
    rc = PF_OK;
    dup = 0;
    for (i = 0; i < n; i++) {
        int f = frames[i];
        if (f < 0 || f >= p->n) {
            rc = PF_ERR_RANGE;
            break;
        }
        rc = drop_pinned(p, frames, i, owner, &dup);
        if (rc != PF_OK)
            break;
    }
    if (rc != PF_OK) {
        free_n_undo(p, owner, frames, i, dup);
        if (rc == PIN_BUSY) {
            (void)load_unpinned(p, frames[i]);
            goto again;
        }
        return rc;
    }
    if (dup)
        free_n_finish_dup(p, owner, frames, n);
    else
        free_n_finish(p, c, owner, frames, n);
    return PF_OK;
}

int pf_pool_free_n(pf_pool *pool, int owner, const int *frames, int n)
{
    if (!pool || owner < 0 || n < 0 || (n > 0 && !frames))
        return PF_ERR_ARG;
    return free_n_impl(pool, NULL, owner, frames, n);
}

int pf_pool_free_n_c(pf_pool_cache *cache, int owner, const int *frames, int n)
{
    if (!cache || owner < 0 || n < 0 || (n > 0 && !frames))
        return PF_ERR_ARG;
    return free_n_impl(cache->pool, cache, owner, frames, n);
}

int pf_pool_free_owner(pf_pool *pool, int owner, int *freed_out)
{
    if (!pool || owner < 0)
        return PF_ERR_ARG;
    int freed = 0, buf[CACHE_BATCH], k = 0;
    for (int f = 0; f < pool->n; f++) {
        uint64_t s = atomic_load_explicit(&pool->state[f], memory_order_relaxed);
        if (ST_REF(s) == 0 || ST_OWNER(s) != owner)
            continue;
        int released = 0;
        if (drop_ref(pool, f, owner, 1, &released) != PF_OK || !released)
            continue;
        freed++;
        buf[k++] = f;
        if (k == CACHE_BATCH) {
            put_back(pool, NULL, buf, k);
            k = 0;
        }
    }
    if (k > 0)
        put_back(pool, NULL, buf, k);
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
    uint64_t s = load_unpinned(pool, frame);
    for (;;) {
        int ref = ST_REF(s);
        if (ref == 0)
            return PF_ERR_ARG; /* sharing a free frame: nothing to share */
        if (ref == REF_MAX)
            return PF_ERR_RANGE;
        if (atomic_compare_exchange_weak_explicit(&pool->state[frame], &s, s + 1,
                                                  memory_order_acq_rel, memory_order_acquire))
            return PF_OK;
        if (ST_PINNED(s))
            s = load_unpinned(pool, frame);
    }
}

/* ---- lock-free reads ----------------------------------------------------- */

/* The casts drop const only because C11's atomic_load takes a non-const
 * pointer; nothing is written. */
int pf_pool_capacity(const pf_pool *pool)
{
    return pool ? pool->n : 0;
}

int pf_pool_free_count(const pf_pool *pool)
{
    if (!pool)
        return 0;
    pf_pool *p = (pf_pool *)pool;
    long sum = LOAD(p->depot_view);
    int ns = atomic_load_explicit(&p->nslots_view, memory_order_acquire);
    for (int i = 0; i < ns; i++)
        sum += LOAD(slot(p, i)->n_view);
    /* Mirrors move one after the other: clamp a momentary over/undershoot. */
    return sum < 0 ? 0 : sum > p->n ? p->n : (int)sum;
}

int pf_pool_used_count(const pf_pool *pool)
{
    return pool ? pool->n - pf_pool_free_count(pool) : 0;
}

int pf_pool_peak(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->peak) : 0;
}

int pf_pool_owner(const pf_pool *pool, int frame)
{
    if (!pool || frame < 0 || frame >= pool->n)
        return PF_POOL_NO_OWNER;
    uint64_t s = LOAD(((pf_pool *)pool)->state[frame]);
    return ST_REF(s) == 0 ? PF_POOL_NO_OWNER : ST_OWNER(s);
}

int pf_pool_refcount(const pf_pool *pool, int frame)
{
    if (!pool || frame < 0 || frame >= pool->n)
        return 0;
    return ST_REF(LOAD(((pf_pool *)pool)->state[frame]));
}

uint64_t pf_pool_stop_count(const pf_pool *pool)
{
    return pool ? LOAD(((pf_pool *)pool)->stops) : 0;
}

uint64_t pf_pool_alloc_total(const pf_pool *pool)
{
    if (!pool)
        return 0;
    pf_pool *p = (pf_pool *)pool;
    uint64_t sum = LOAD(p->depot_allocs);
    int ns = atomic_load_explicit(&p->nslots_view, memory_order_acquire);
    for (int i = 0; i < ns; i++)
        sum += LOAD(slot(p, i)->allocs);
    return sum;
}

/* Stop the world: used is exact at this instant; all headroom is spent. */
void pf_pool_reset_peak(pf_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    lock_others(pool, NULL);
    int free_now = pool->depot_n;
    for (int i = 0; i < pool->nslots; i++) {
        pf_pool_cache *c = slot(pool, i);
        free_now += c->n;
        c->headroom = 0;
    }
    pool->headroom = 0;
    STORE(pool->peak, pool->n - free_now);
    unlock_others(pool, NULL);
    pthread_mutex_unlock(&pool->mu);
}

int pf_pool_check(pf_pool *pool)
{
    if (!pool)
        return PF_ERR_ARG;
    unsigned char *seen = calloc((size_t)pool->n, 1);
    if (!seen)
        return PF_ERR_NOMEM;
    int rc = PF_ERR_ARG; /* until every invariant below has held */
    pthread_mutex_lock(&pool->mu);
    lock_others(pool, NULL);
    long nfree = 0, head = pool->headroom, in_use = 0;
    if (pool->depot_n < 0 || pool->depot_n > pool->n || head < 0 ||
        LOAD(pool->depot_view) != pool->depot_n)
        goto out;
    for (int i = 0; i < pool->depot_n; i++) {
        int f = pool->depot[i];
        if (f < 0 || f >= pool->n || seen[f])
            goto out;
        seen[f] = 1;
    }
    nfree = pool->depot_n;
    for (int s = 0; s < pool->nslots; s++) {
        pf_pool_cache *c = slot(pool, s);
        if (c->n < 0 || c->n > CACHE_MAX || c->headroom < 0 || LOAD(c->n_view) != c->n ||
            (!c->in_use && (c->n != 0 || c->headroom != 0)))
            goto out;
        in_use += c->in_use;
        for (int i = 0; i < c->n; i++) {
            int f = c->frames[i];
            if (f < 0 || f >= pool->n || seen[f])
                goto out;
            seen[f] = 1;
        }
        nfree += c->n;
        head += c->headroom;
    }
    if (in_use != pool->ncaches)
        goto out;
    long used = 0;
    for (int f = 0; f < pool->n; f++) {
        uint64_t s = LOAD(pool->state[f]);
        if (ST_PINNED(s))
            goto out;
        if (ST_REF(s) == 0 && (s != ST_FREE || !seen[f]))
            goto out;
        if (ST_REF(s) > 0 && (ST_OWNER(s) < 0 || seen[f]))
            goto out;
        used += ST_REF(s) > 0;
    }
    int peak = LOAD(pool->peak);
    if (used != pool->n - nfree || peak > pool->n || peak - used != head)
        goto out;
    rc = PF_OK;
out:
    unlock_others(pool, NULL);
    pthread_mutex_unlock(&pool->mu);
    free(seen);
    return rc;
}
