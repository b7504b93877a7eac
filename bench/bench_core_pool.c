/* bench/bench_core_pool.c - frame-pool throughput (core/pool.h): single
 * thread alloc/free pairs, alloc_n + free_owner of a 16-frame sequence, and
 * 1..8 threads contending on the one mutex. Prints figures; asserts nothing
 * (speed targets live here, never in tests).
 *
 *   build/bench/bench_core_pool [ops_per_thread]   (default 2000000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/err.h"
#include "core/pool.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    pf_pool *pool;
    int id;
    long ops;
    long failures;
} job;

/* alloc one, free it: one pair per iteration */
static void *pairs(void *arg)
{
    job *j = arg;
    for (long i = 0; i < j->ops; i++) {
        int f;
        if (pf_pool_alloc(j->pool, j->id, &f) != PF_OK || pf_pool_free(j->pool, j->id, f) != PF_OK)
            j->failures++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? strtol(argv[1], NULL, 10) : 2000000;
    if (ops < 1) {
        fprintf(stderr, "bench_core_pool: ops must be a positive integer\n");
        return 2;
    }
    pf_pool *pool = pf_pool_create(4096);
    if (!pool)
        return 1;

    printf("frame pool (4096 frames, one mutex), %ld ops per thread\n", ops);
    for (int threads = 1; threads <= 8; threads *= 2) {
        job jobs[8];
        pthread_t th[8];
        double t0 = now_s();
        for (int i = 0; i < threads; i++) {
            jobs[i] = (job){pool, i, ops, 0};
            pthread_create(&th[i], NULL, pairs, &jobs[i]);
        }
        long fails = 0;
        for (int i = 0; i < threads; i++) {
            pthread_join(th[i], NULL);
            fails += jobs[i].failures;
        }
        double dt = now_s() - t0;
        /* wall time per pair across all threads: lower is better, flat means no scaling */
        double pairs_total = (double)ops * threads;
        printf("  alloc+free pairs, %d thread(s): %7.1f ns/pair (wall), %6.2f M pairs/s%s\n", threads,
               dt * 1e9 / pairs_total, pairs_total / dt / 1e6, fails ? " (FAILURES)" : "");
    }

    /* a 16-frame sequence taken and dropped as a whole */
    long seqs = ops / 16 > 0 ? ops / 16 : 1;
    int frames[16], freed;
    double t0 = now_s();
    for (long i = 0; i < seqs; i++) {
        pf_pool_alloc_n(pool, 1, 16, frames);
        pf_pool_free_owner(pool, 1, &freed);
    }
    double dt = now_s() - t0;
    printf("  alloc_n(16) + free_owner (O(N) scan of 4096 frames): %.1f ns/sequence\n",
           dt * 1e9 / (double)seqs);
    printf("  pool check after the run: %s\n", pf_strerror(pf_pool_check(pool)));
    pf_pool_destroy(pool);
    return 0;
}
