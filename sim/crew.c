/* sim/crew.c - threads in lockstep (contract in sim/crew.h).
 *
 * The handshake. The driver publishes the job (fn, ctx), sets `left` to the
 * number of helper threads and bumps `gen`; each helper that sees a new gen
 * runs its shard and decrements `left`; the driver runs shard 0 and waits
 * for `left` to reach 0. Both waits spin first, then sleep:
 *
 *   helper:  sleepers++ ; if gen unchanged: wait on go      (under mu)
 *   driver:  gen++      ; if sleepers > 0: broadcast go     (under mu)
 *
 * This is the store-then-load pattern of Dekker's algorithm: with both
 * sides' accesses sequentially consistent, at least one side sees the
 * other's store, so a helper never sleeps through a new generation (if it
 * registered too late for the driver to see it, it sees the new gen
 * itself). The driver's own sleep on `done` mirrors it with
 * `driver_waiting` and `left`.
 */
#include "sim/crew.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/err.h"

/* Spins before sleeping: a few microseconds, about one short step. */
#define CREW_SPINS 4000

struct pf_crew {
    int n;              /* threads in all, the caller included          */
    pthread_t *th;      /* [PF_CREW_MAX]; th[k] for k in [1, n)         */
    int spins;          /* 0 when there are more threads than cores     */
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    _Atomic uint64_t gen;
    _Atomic int left;
    _Atomic int sleepers;
    _Atomic int driver_waiting;
    _Atomic int quit;
    pf_crew_fn fn;      /* written before gen is bumped (release)       */
    void *ctx;
    int nshards;
};

typedef struct {
    pf_crew *c;
    int k;
    uint64_t gen0; /* the generation when it was made: it runs every later one */
} helper_arg;

static uint64_t await_gen(pf_crew *c, uint64_t seen)
{
    for (int i = 0; i < c->spins; i++) {
        uint64_t g = atomic_load(&c->gen);
        if (g != seen || atomic_load(&c->quit))
            return g;
    }
    pthread_mutex_lock(&c->mu);
    atomic_fetch_add(&c->sleepers, 1);
    uint64_t g;
    while ((g = atomic_load(&c->gen)) == seen && !atomic_load(&c->quit))
        pthread_cond_wait(&c->go, &c->mu);
    atomic_fetch_sub(&c->sleepers, 1);
    pthread_mutex_unlock(&c->mu);
    return g;
}

static void *helper_main(void *arg)
{
    helper_arg a = *(helper_arg *)arg;
    free(arg);
    pf_crew *c = a.c;
    /* Not atomic_load(&c->gen) here: a run may already have begun before
     * this thread got to its first line, and that run is ours too. */
    uint64_t seen = a.gen0;
    for (;;) {
        seen = await_gen(c, seen);
        if (atomic_load(&c->quit))
            return NULL;
        c->fn(c->ctx, a.k, c->nshards);
        if (atomic_fetch_sub(&c->left, 1) == 1 && atomic_load(&c->driver_waiting)) {
            pthread_mutex_lock(&c->mu);
            pthread_cond_signal(&c->done);
            pthread_mutex_unlock(&c->mu);
        }
    }
}

/* Stop and join every helper (quit is per crew: all of them go). */
static void stop_helpers(pf_crew *c)
{
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->quit, 1);
    pthread_cond_broadcast(&c->go);
    pthread_mutex_unlock(&c->mu);
    for (int k = 1; k < c->n; k++)
        pthread_join(c->th[k], NULL);
    atomic_store(&c->quit, 0);
}

/* Start helpers 1..n-1. On failure the started ones are stopped again. */
static int start_helpers(pf_crew *c, int n)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->spins = ncpu > 0 && n > ncpu ? 0 : CREW_SPINS;
    c->n = 1;
    for (int k = 1; k < n; k++) {
        helper_arg *a = malloc(sizeof *a);
        if (!a)
            break;
        a->c = c;
        a->k = k;
        a->gen0 = atomic_load(&c->gen);
        pthread_attr_t attr;
        int have_attr = pthread_attr_init(&attr) == 0;
        if (have_attr) /* shards need little stack */
            (void)pthread_attr_setstacksize(&attr, 256 * 1024);
        int rc = pthread_create(&c->th[k], have_attr ? &attr : NULL, helper_main, a);
        if (have_attr)
            pthread_attr_destroy(&attr);
        if (rc != 0) {
            free(a);
            break;
        }
        c->n = k + 1;
    }
    if (c->n == n)
        return PF_OK;
    stop_helpers(c);
    c->n = 1;
    return PF_ERR_NOMEM;
}

pf_crew *pf_crew_create(int n)
{
    if (n < 1 || n > PF_CREW_MAX)
        return NULL;
    pf_crew *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->th = calloc(PF_CREW_MAX, sizeof *c->th);
    pthread_condattr_t ca;
    int ok = c->th && pthread_mutex_init(&c->mu, NULL) == 0;
    int ca_ok = ok && pthread_condattr_init(&ca) == 0;
    if (ca_ok)
        (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int go_ok = ca_ok && pthread_cond_init(&c->go, &ca) == 0;
    int done_ok = go_ok && pthread_cond_init(&c->done, &ca) == 0;
    if (ca_ok)
        pthread_condattr_destroy(&ca);
    if (!done_ok || start_helpers(c, n) != PF_OK) {
        if (go_ok)
            pthread_cond_destroy(&c->go);
        if (done_ok)
            pthread_cond_destroy(&c->done);
        if (ok)
            pthread_mutex_destroy(&c->mu);
        free(c->th);
        free(c);
        return NULL;
    }
    return c;
}

void pf_crew_destroy(pf_crew *c)
{
    if (!c)
        return;
    stop_helpers(c);
    pthread_cond_destroy(&c->go);
    pthread_cond_destroy(&c->done);
    pthread_mutex_destroy(&c->mu);
    free(c->th);
    free(c);
}

void pf_crew_run(pf_crew *c, pf_crew_fn fn, void *ctx)
{
    if (c->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    c->fn = fn;
    c->ctx = ctx;
    c->nshards = c->n;
    atomic_store(&c->left, c->n - 1);
    atomic_fetch_add(&c->gen, 1); /* seq_cst: publishes fn, ctx, left */
    if (atomic_load(&c->sleepers) > 0) {
        pthread_mutex_lock(&c->mu);
        pthread_cond_broadcast(&c->go);
        pthread_mutex_unlock(&c->mu);
    }
    fn(ctx, 0, c->n);
    for (int i = 0; i < c->spins; i++)
        if (atomic_load(&c->left) == 0)
            return;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->driver_waiting, 1);
    while (atomic_load(&c->left) > 0)
        pthread_cond_wait(&c->done, &c->mu);
    atomic_store(&c->driver_waiting, 0);
    pthread_mutex_unlock(&c->mu);
}

int pf_crew_resize(pf_crew *c, int n)
{
    if (!c || n < 1 || n > PF_CREW_MAX)
        return PF_ERR_ARG;
    if (n == c->n)
        return PF_OK;
    int old = c->n;
    stop_helpers(c);
    if (start_helpers(c, n) == PF_OK)
        return PF_OK;
    (void)start_helpers(c, old); /* best effort: back to what it was */
    return PF_ERR_NOMEM;
}

int pf_crew_size(const pf_crew *c)
{
    return c ? c->n : 0;
}
