/* bench/bench_core_pool.c - frame-pool throughput under threads (core/pool.h).
 *
 * Prints, in one run, alloc+free pairs per second for T = 1, 2, 4, 8, 16
 * threads sharing one pool of 4096 frames (the simulator's default pool):
 *   ours   - pf_pool_alloc_c + pf_pool_free_c, each thread its own cache
 *   mutex  - a plain LIFO free list under one pthread mutex, built in here
 *            as the baseline (what the pool was before it was sharded)
 * with the ratios ours/mutex and each design's scaling against 1 thread
 * (speedup, and speedup / T as the fraction of linear), then the cost of
 * taking and dropping a 16-frame sequence: alloc_n + free_n (O(its frames))
 * against alloc_n + free_owner (a scan of the whole pool).
 *
 * Each point runs for a fixed time: threads start together on a flag, count
 * the pairs they complete, and stop on a flag; the rate is all pairs over the
 * wall time between the two flags. Speed targets live here, never in tests.
 * On a shared machine compare ratios measured in one run.
 *
 *   bench_core_pool [--seconds S] [--threads LIST] [--frames N] [--help]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/pool.h"

#define MAX_POINTS 16
#define MAX_THREADS 1024

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- the baseline: one mutex over a LIFO stack of frame ids ------------- */

typedef struct {
    pthread_mutex_t mu;
    int *stack, top;
    int *owner;
} mutex_list;

static int ml_init(mutex_list *m, int n)
{
    m->stack = malloc((size_t)n * sizeof *m->stack);
    m->owner = malloc((size_t)n * sizeof *m->owner);
    if (!m->stack || !m->owner || pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m->stack);
        free(m->owner);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        m->stack[i] = n - 1 - i;
        m->owner[i] = -1;
    }
    m->top = n;
    return 0;
}

static void ml_destroy(mutex_list *m)
{
    pthread_mutex_destroy(&m->mu);
    free(m->stack);
    free(m->owner);
}

/* Same checks the pool makes: owner recorded on alloc, checked on free. */
static int ml_alloc(mutex_list *m, int owner, int *f)
{
    int rc = PF_ERR_NOMEM;
    pthread_mutex_lock(&m->mu);
    if (m->top > 0) {
        *f = m->stack[--m->top];
        m->owner[*f] = owner;
        rc = PF_OK;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int ml_free(mutex_list *m, int owner, int f)
{
    int rc = PF_OK;
    pthread_mutex_lock(&m->mu);
    if (m->owner[f] != owner)
        rc = m->owner[f] < 0 ? PF_ERR_DOUBLE_FREE : PF_ERR_NOT_OWNER;
    else {
        m->owner[f] = -1;
        m->stack[m->top++] = f;
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* ---- timed runs ---------------------------------------------------------- */

typedef struct {
    _Atomic int go, stop;
    pf_pool *pool;
    mutex_list *ml;
} run_ctl;

typedef struct {
    run_ctl *ctl;
    pf_pool_cache *cache; /* NULL: the mutex list */
    int id;
    long pairs, failures;
    pthread_t th;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    run_ctl *ctl = w->ctl;
    while (!atomic_load_explicit(&ctl->go, memory_order_acquire))
        ;
    long pairs = 0, fails = 0;
    while (!atomic_load_explicit(&ctl->stop, memory_order_relaxed)) {
        for (int i = 0; i < 256; i++) {
            int f;
            if (w->cache) {
                if (pf_pool_alloc_c(w->cache, w->id, &f) != PF_OK ||
                    pf_pool_free_c(w->cache, w->id, f) != PF_OK)
                    fails++;
            } else if (ml_alloc(w->ctl->ml, w->id, &f) != PF_OK ||
                       ml_free(w->ctl->ml, w->id, f) != PF_OK) {
                fails++;
            }
        }
        pairs += 256;
    }
    w->pairs = pairs;
    w->failures = fails;
    return NULL;
}

/* Pairs per second with `threads` threads on the pool (ours) or the list.
 * Returns a negative value if threads or caches could not be made or any
 * operation failed. */
static double run_point(int threads, int ours, int nframes, double seconds, uint64_t *stops)
{
    static worker ws[MAX_THREADS];
    run_ctl ctl = {0};
    mutex_list ml;
    double rate = -1.0;
    int started = 0;
    if (ours) {
        ctl.pool = pf_pool_create(nframes);
        if (!ctl.pool)
            return -1.0;
    } else {
        if (ml_init(&ml, nframes) != 0)
            return -1.0;
        ctl.ml = &ml;
    }
    for (; started < threads; started++) {
        worker *w = &ws[started];
        memset(w, 0, sizeof *w);
        w->ctl = &ctl;
        w->id = started;
        if (ours && !(w->cache = pf_pool_cache_new(ctl.pool)))
            break;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0)
            break;
    }
    double t0 = now_s();
    atomic_store_explicit(&ctl.go, 1, memory_order_release);
    struct timespec d = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
    atomic_store_explicit(&ctl.stop, 1, memory_order_relaxed);
    long pairs = 0, fails = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(ws[i].th, NULL);
        pairs += ws[i].pairs;
        fails += ws[i].failures;
    }
    double dt = now_s() - t0;
    if (started == threads && fails == 0)
        rate = (double)pairs / dt;
    if (ours) {
        for (int i = 0; i < started; i++)
            pf_pool_cache_free(ws[i].cache);
        if (pf_pool_check(ctl.pool) != PF_OK || pf_pool_used_count(ctl.pool) != 0)
            rate = -1.0;
        *stops = pf_pool_stop_count(ctl.pool);
        pf_pool_destroy(ctl.pool);
    } else {
        ml_destroy(&ml);
    }
    return rate;
}

/* ns per 16-frame sequence taken and dropped, one thread. */
static double seq_ns(int nframes, int use_free_n, double seconds)
{
    pf_pool *p = pf_pool_create(nframes);
    pf_pool_cache *c = p ? pf_pool_cache_new(p) : NULL;
    if (!c) {
        pf_pool_destroy(p);
        return -1.0;
    }
    int frames[16], freed, bad = 0;
    long seqs = 0;
    double t0 = now_s(), t1 = t0;
    while (t1 - t0 < seconds) {
        for (int i = 0; i < 64; i++) {
            bad |= pf_pool_alloc_n_c(c, 1, 16, frames) != PF_OK;
            if (use_free_n)
                bad |= pf_pool_free_n_c(c, 1, frames, 16) != PF_OK;
            else
                bad |= pf_pool_free_owner(p, 1, &freed) != PF_OK || freed != 16;
        }
        seqs += 64;
        t1 = now_s();
    }
    pf_pool_cache_free(c);
    bad |= pf_pool_check(p) != PF_OK;
    pf_pool_destroy(p);
    return bad ? -1.0 : (t1 - t0) * 1e9 / (double)seqs;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: bench_core_pool [--seconds S] [--threads LIST] [--frames N] [--help]\n"
            "  alloc+free pairs/s of the frame pool (each thread its own cache) against a\n"
            "  plain mutex free list, at each thread count, with ratios.\n"
            "  --seconds S     time per point, 0.05 .. 60 (default 0.5)\n"
            "  --threads LIST  comma-separated thread counts, each 1 .. %d (default 1,2,4,8,16)\n"
            "  --frames N      pool size, 64 .. 16777216 (default 4096, the simulator's pool)\n",
            MAX_THREADS);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

typedef struct {
    double seconds;
    int nframes;
    int threads[MAX_POINTS], npoints;
} pool_args;

/* --threads T1,T2,...: 0, or 2 after a message. */
static int parse_threads(const char *v, pool_args *a)
{
    char buf[256];
    if (strlen(v) >= sizeof buf) {
        fprintf(stderr, "bench_core_pool: --threads list too long\n");
        return 2;
    }
    strcpy(buf, v);
    a->npoints = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long t;
        if (a->npoints == MAX_POINTS || parse_long(tok, 1, MAX_THREADS, &t) != 0) {
            fprintf(stderr, "bench_core_pool: --threads takes up to %d counts of 1 .. %d, got '%s'\n",
                    MAX_POINTS, MAX_THREADS, v);
            return 2;
        }
        a->threads[a->npoints++] = (int)t;
    }
    if (a->npoints == 0) {
        fprintf(stderr, "bench_core_pool: --threads list is empty\n");
        return 2;
    }
    return 0;
}

/* The flags into *a: 0, 1 after --help, or 2 after a message. */
static int parse_args(int argc, char **argv, pool_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 1;
        }
        if (strcmp(f, "--seconds") && strcmp(f, "--frames") && strcmp(f, "--threads")) {
            fprintf(stderr, "bench_core_pool: unknown flag: %s (see --help)\n", f);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_core_pool: %s needs a value\n", f);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(f, "--seconds")) {
            char *end;
            a->seconds = strtod(v, &end);
            if (end == v || *end || !(a->seconds >= 0.05 && a->seconds <= 60.0)) {
                fprintf(stderr, "bench_core_pool: --seconds must be 0.05 .. 60, got '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(f, "--frames")) {
            long n;
            if (parse_long(v, 64, 1 << 24, &n) != 0) {
                fprintf(stderr, "bench_core_pool: --frames must be 64 .. 16777216, got '%s'\n", v);
                return 2;
            }
            a->nframes = (int)n;
        } else if (parse_threads(v, a) != 0) {
            return 2;
        }
    }
    return 0;
}

/* The scaling table: ours and the mutex baseline at each thread count.
 * 0, or 1 when a point failed (the others are still printed). */
static int scaling_table(const pool_args *a)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_core_pool: alloc+free pairs per second, one pool of %d frames shared by T "
           "threads, %.2f s per point\n",
           a->nframes, a->seconds);
    printf("machine: %ld online cores\n", cores);
    printf("ours  = pf_pool_alloc_c + pf_pool_free_c, each thread its own cache\n");
    printf("mutex = LIFO free list under one pthread mutex (the baseline)\n\n");
    printf("%7s %12s %12s %11s %15s %15s %11s\n", "threads", "ours M/s", "mutex M/s",
           "ours/mutex", "ours vs 1 thr", "mutex vs 1 thr", "ours stops");
    double ours1 = 0, mutex1 = 0;
    int failed = 0;
    for (int i = 0; i < a->npoints; i++) {
        int t = a->threads[i];
        uint64_t stops = 0;
        double o = run_point(t, 1, a->nframes, a->seconds, &stops);
        double m = run_point(t, 0, a->nframes, a->seconds, &stops);
        if (o < 0 || m < 0) {
            fprintf(stderr, "bench_core_pool: the %d-thread point failed (threads, caches, or a "
                            "pool error)\n", t);
            failed = 1;
            continue;
        }
        if (t == 1) {
            ours1 = o;
            mutex1 = m;
        }
        printf("%7d %12.1f %12.1f %10.1fx", t, o / 1e6, m / 1e6, o / m);
        if (ours1 > 0)
            printf(" %7.2fx (%3.0f%%) %7.2fx (%3.0f%%)", o / ours1, 100.0 * o / ours1 / t,
                   m / mutex1, 100.0 * m / mutex1 / t);
        printf(" %11llu\n", (unsigned long long)stops);
    }
    printf("  (vs 1 thr: speedup over this design's 1-thread rate, and that speedup / T as the "
           "fraction of linear;\n   ours stops: takes that locked every cache, pf_pool_stop_count)"
           "\n\n");
    return failed;
}

int main(int argc, char **argv)
{
    pool_args a = {.seconds = 0.5, .nframes = 4096, .threads = {1, 2, 4, 8, 16}, .npoints = 5};
    int rc = parse_args(argc, argv, &a);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    int failed = scaling_table(&a);
    double ns_c = seq_ns(a.nframes, 1, a.seconds), ns_owner = seq_ns(a.nframes, 0, a.seconds);
    if (ns_c < 0 || ns_owner < 0) {
        fprintf(stderr, "bench_core_pool: the sequence point failed\n");
        return 1;
    }
    printf("a 16-frame sequence, one thread: alloc_n_c + free_n_c %.0f ns, alloc_n_c + "
           "free_owner (scans %d frames) %.0f ns (%.1fx)\n",
           ns_c, a.nframes, ns_owner, ns_owner / ns_c);
    return failed;
}
