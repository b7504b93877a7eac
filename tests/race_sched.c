/* tests/race_sched.c - the scheduler's land phase on real threads, under
 * ThreadSanitizer: shards landed concurrently (they share only the pool)
 * must give exactly what one thread gives. A plain executable (Criterion
 * does not run under TSan); exit 0 on success. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/sched.h"

enum { N = 2000, THREADS = 4 };

typedef struct {
    pf_sched *s;
    int k;
    pthread_barrier_t *go, *done;
    volatile int *quit;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (;;) {
        pthread_barrier_wait(w->go);
        if (*w->quit)
            return NULL;
        pf_sched_land(w->s, w->k);
        pthread_barrier_wait(w->done);
    }
}

static int run(const pf_req *j, int threads, int prefix, double *t_done)
{
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.prefix_caching = prefix;
    p.max_num_batched_tokens = 2048;
    p.max_num_seqs = 256;
    p.watermark = 0.01;
    char err[200];
    pf_sched *s = pf_sched_create(&p, j, N, 1500, NULL, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "race_sched: %s\n", err);
        return 1;
    }
    int rc = pf_sched_set_shards(s, threads);
    pthread_barrier_t go, done;
    pthread_barrier_init(&go, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
    volatile int quit = 0;
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int k = 0; k < threads; k++) {
        w[k] = (worker){s, k, &go, &done, &quit};
        pthread_create(&th[k], NULL, work, &w[k]);
    }
    while (rc == PF_OK && (rc = pf_sched_plan(s)) == 0) {
        pthread_barrier_wait(&go);  /* every shard lands at once */
        pthread_barrier_wait(&done);
        rc = pf_sched_commit(s); /* 0: go on, 1: every request ended */
        if (rc != 0)
            break;
    }
    quit = 1;
    pthread_barrier_wait(&go);
    for (int k = 0; k < threads; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&go);
    pthread_barrier_destroy(&done);
    /* at the end only idle cached blocks may hold frames */
    pf_prefix_stats st;
    pf_sched_prefix_stats(s, &st);
    int bad = rc != 1 || pf_sched_check(s) != PF_OK ||
              pf_pool_used_count(pf_sched_pool(s)) != st.evictable;
    for (int i = 0; i < N; i++)
        t_done[i] = pf_sched_req(s, i)->t_done;
    pf_sched_destroy(s);
    return bad;
}

int main(void)
{
    static pf_req j[N];
    pf_rng g;
    pf_rng_seed(&g, 3);
    double t = 0;
    for (int i = 0; i < N; i++) {
        memset(&j[i], 0, sizeof j[i]);
        t += pf_rng_unit(&g) * 0.2;
        j[i].arrival = t;
        j[i].prompt = (int)pf_rng_range(&g, 1, 600);
        j[i].output = (int)pf_rng_range(&g, 1, 600);
        j[i].group = (int)pf_rng_range(&g, -1, 4);
        j[i].shared_tokens = 64;
    }
    static double one[N], many[N];
    for (int prefix = 0; prefix <= 1; prefix++) {
        if (run(j, 1, prefix, one) || run(j, THREADS, prefix, many)) {
            fprintf(stderr, "race_sched: a run failed (prefix caching %d)\n", prefix);
            return 1;
        }
        for (int i = 0; i < N; i++)
            if (one[i] != many[i]) {
                fprintf(stderr, "race_sched: request %d done at %g with 1 thread, %g with %d\n", i,
                        one[i], many[i], THREADS);
                return 1;
            }
    }
    printf("race_sched: %d requests, 1 and %d landing threads agree, with and without prefix "
           "caching\n", N, THREADS);
    return 0;
}
