/* tests/test_core_pool_race.c - many threads on one frame pool.
 *
 * Each worker (owner id = its index) loops: take 1..8 frames (alloc,
 * alloc_n or alloc_admit), claim each in a side array with an atomic
 * exchange (a frame already claimed means the pool handed it out twice),
 * check the pool names it as owner, then give frames back (free one by one,
 * or free_owner), unclaiming each BEFORE the pool gets it back. Errors are
 * counted in atomics and judged on the main thread (an assert in a worker
 * would end a Criterion test without a verdict). A viewer thread reads the
 * lock-free counters meanwhile: each value must be in range and the peak
 * must never go down.
 *
 * Built twice: into the Criterion suite test_core_pool (PF_STRESS_LIB set,
 * no main) and as the plain executable test_core_pool_race that CI runs
 * under ThreadSanitizer (ctest -L race).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/pool.h"
#include "core/rng.h"

int pf_test_pool_stress(int nthreads, int nframes, int iters, char *msg, size_t msglen);

typedef struct {
    pf_pool *pool;
    _Atomic int *claim; /* 0 = not held, else holder id + 1 */
    _Atomic int errors;
    _Atomic int taken;  /* frames handed to workers, all of them */
    _Atomic int done;
    int iters;
    int nframes;
} shared;

typedef struct {
    shared *sh;
    int id;
    pthread_t th;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    pf_rng r;
    pf_rng_seed(&r, 1000 + (uint64_t)w->id);
    int held[64], nheld = 0;
    for (int it = 0; it < sh->iters; it++) {
        int frames[8];
        int n = (int)pf_rng_range(&r, 1, 8), rc;
        int how = (int)pf_rng_range(&r, 0, 2);
        if (nheld + n > 64)
            n = 64 - nheld;
        if (n == 0)
            rc = PF_ERR_NOMEM;
        else if (how == 0) {
            n = 1;
            rc = pf_pool_alloc(sh->pool, w->id, frames);
        } else if (how == 1) {
            rc = pf_pool_alloc_n(sh->pool, w->id, n, frames);
        } else {
            rc = pf_pool_alloc_admit(sh->pool, w->id, n, 0.05, frames);
        }
        if (rc == PF_OK) {
            atomic_fetch_add(&sh->taken, n);
            for (int i = 0; i < n; i++) {
                int f = frames[i];
                if (f < 0 || f >= sh->nframes || atomic_exchange(&sh->claim[f], w->id + 1) != 0 ||
                    pf_pool_owner(sh->pool, f) != w->id)
                    atomic_fetch_add(&sh->errors, 1);
                else
                    held[nheld++] = f;
            }
        } else if (rc != PF_ERR_NOMEM && rc != PF_ERR_WATERMARK) {
            atomic_fetch_add(&sh->errors, 1);
        }
        /* give back: usually a few frames from the end, sometimes all at once */
        int mode = (int)pf_rng_range(&r, 0, 9);
        if (mode == 0 || it == sh->iters - 1) {
            for (int i = 0; i < nheld; i++)
                if (atomic_exchange(&sh->claim[held[i]], 0) != w->id + 1)
                    atomic_fetch_add(&sh->errors, 1);
            int freed = -1;
            if (pf_pool_free_owner(sh->pool, w->id, &freed) != PF_OK || freed != nheld)
                atomic_fetch_add(&sh->errors, 1);
            nheld = 0;
        } else if (nheld > 0) {
            int k = (int)pf_rng_range(&r, 0, nheld < 6 ? nheld : 6);
            for (; k > 0; k--) {
                int f = held[--nheld];
                if (atomic_exchange(&sh->claim[f], 0) != w->id + 1)
                    atomic_fetch_add(&sh->errors, 1);
                if (pf_pool_free(sh->pool, w->id, f) != PF_OK)
                    atomic_fetch_add(&sh->errors, 1);
            }
        }
    }
    return NULL;
}

typedef struct {
    shared *sh;
    int reads, errors;
} viewer;

static void *viewer_main(void *arg)
{
    viewer *v = arg;
    int last_peak = 0;
    while (!atomic_load(&v->sh->done)) {
        int fr = pf_pool_free_count(v->sh->pool), used = pf_pool_used_count(v->sh->pool);
        int peak = pf_pool_peak(v->sh->pool);
        int f = v->reads % v->sh->nframes;
        int owner = pf_pool_owner(v->sh->pool, f), ref = pf_pool_refcount(v->sh->pool, f);
        if (fr < 0 || fr > v->sh->nframes || used < 0 || used > v->sh->nframes ||
            peak < last_peak || peak > v->sh->nframes || owner < PF_POOL_NO_OWNER || ref < 0)
            v->errors++;
        last_peak = peak;
        v->reads++;
    }
    return NULL;
}

int pf_test_pool_stress(int nthreads, int nframes, int iters, char *msg, size_t msglen)
{
    int rc = 1;
    shared sh = {0};
    worker *ws = calloc((size_t)nthreads, sizeof *ws);
    sh.pool = pf_pool_create(nframes);
    sh.claim = calloc((size_t)nframes, sizeof *sh.claim);
    sh.iters = iters;
    sh.nframes = nframes;
    viewer v = {&sh, 0, 0};
    pthread_t vt;
    int started = 0, viewer_started = 0;
    if (!ws || !sh.pool || !sh.claim) {
        snprintf(msg, msglen, "setup failed");
        goto out;
    }
    viewer_started = pthread_create(&vt, NULL, viewer_main, &v) == 0;
    for (; started < nthreads; started++) {
        ws[started].sh = &sh;
        ws[started].id = started;
        if (pthread_create(&ws[started].th, NULL, worker_main, &ws[started]) != 0)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(ws[i].th, NULL);
    atomic_store(&sh.done, 1);
    if (viewer_started)
        pthread_join(vt, NULL);

    int held = 0;
    for (int f = 0; f < nframes; f++)
        held += atomic_load(&sh.claim[f]) != 0;
    if (started != nthreads || !viewer_started)
        snprintf(msg, msglen, "could not start threads (%d of %d)", started, nthreads);
    else if (atomic_load(&sh.errors) != 0)
        snprintf(msg, msglen, "%d errors (frame handed out twice, wrong owner or bad code)",
                 atomic_load(&sh.errors));
    else if (v.errors != 0)
        snprintf(msg, msglen, "viewer saw %d impossible counter values", v.errors);
    else if (held != 0 || pf_pool_free_count(sh.pool) != nframes)
        snprintf(msg, msglen, "not all returned: %d claimed, %d free of %d", held,
                 pf_pool_free_count(sh.pool), nframes);
    else if (pf_pool_check(sh.pool) != PF_OK)
        snprintf(msg, msglen, "pf_pool_check failed after the run");
    else if (pf_pool_alloc_total(sh.pool) != (uint64_t)atomic_load(&sh.taken))
        snprintf(msg, msglen, "alloc_total %llu != frames taken %d",
                 (unsigned long long)pf_pool_alloc_total(sh.pool), atomic_load(&sh.taken));
    else {
        snprintf(msg, msglen, "ok: %d frames taken, peak %d, %d viewer reads",
                 atomic_load(&sh.taken), pf_pool_peak(sh.pool), v.reads);
        rc = 0;
    }
out:
    pf_pool_destroy(sh.pool);
    free(sh.claim);
    free(ws);
    return rc;
}

#ifndef PF_STRESS_LIB
int main(void)
{
    char msg[256] = "";
    int rc = pf_test_pool_stress(8, 128, 20000, msg, sizeof msg);
    printf("pool stress, 8 threads: %s\n", msg);
    return rc;
}
#endif
