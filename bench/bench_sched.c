/* bench/bench_sched.c - how fast the scheduler core runs, and how its land
 * phase scales over threads.
 *
 * One workload (the seed's length mix, split 1:4 prompt:output like the
 * simulator's jobs, every request arriving at t = 0), run by:
 *   - the plain step (plan, land one shard, commit: one thread);
 *   - the same with the land phase on T threads (T = 1, 2, 4, ... up to the
 *     core count): a crew (sim/crew.h) woken once per step, O(threads) per
 *     step whatever the number of running requests.
 * Prints wall time, simulated tokens per second, the share of steps planned
 * without a walk (the fast plan), the speed-up over the plain step, and a
 * checksum of every request's finish time: the same in every row, or the
 * row says MISMATCH.
 * Usage: bench_sched [--jobs N] [--max-num-seqs N] [--pool-blocks N]
 *                    [--budget N] [--threads T1,T2,...] [--always-walk]
 * Figures only; nothing is asserted (speed targets are not tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/workload.h"
#include "core/rng.h"
#include "sim/crew.h"
#include "sim/sched.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- T landing threads: the crew (sim/crew.h) ------------------------------ */

static void land_shard(void *ctx, int k, int n)
{
    (void)n;
    pf_sched_land(ctx, k);
}

/* Run to the end with T landing threads (0: the plain step). */
static int run(pf_sched *s, int threads)
{
    if (threads == 0)
        return pf_sched_run(s);
    pf_crew *c = pf_crew_create(threads);
    if (!c || pf_sched_set_shards(s, threads) != PF_OK) {
        pf_crew_destroy(c);
        return PF_ERR_NOMEM;
    }
    int rc;
    while ((rc = pf_sched_plan(s)) == 0) {
        pf_crew_run(c, land_shard, s);
        if ((rc = pf_sched_commit(s)) != 0)
            break;
    }
    pf_crew_destroy(c);
    return rc == 1 ? PF_OK : rc;
}

typedef struct {
    int jobs, seqs, pool, budget, always_walk;
    int tv[64], nt; /* the rows: land threads, 0 the plain step */
} bench_args;

/* The rows' thread counts: 0 (the plain step), then tlist's, or 1, 2, 4,
 * ... up to the core count. 0, or 2 after a message. */
static int thread_list(bench_args *a, const char *tlist, int ncpu)
{
    a->nt = 0;
    a->tv[a->nt++] = 0;
    if (!tlist) {
        for (int t = 1; t < ncpu && a->nt < 63; t *= 2)
            a->tv[a->nt++] = t;
        a->tv[a->nt++] = ncpu;
        return 0;
    }
    for (const char *p = tlist; *p && a->nt < 64;) {
        int t = atoi(p);
        if (t < 1 || t > 256) {
            fprintf(stderr, "bench_sched: --threads values must be in [1, 256]\n");
            return 2;
        }
        a->tv[a->nt++] = t;
        const char *c = strchr(p, ',');
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

/* The flags into *a: 0, 1 after --help, or 2 after a message. */
static int parse_args(int argc, char **argv, bench_args *a, int ncpu)
{
    const char *tlist = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help")) {
            printf("usage: bench_sched [--jobs N] [--max-num-seqs N] [--pool-blocks N] [--budget N]\n"
                   "                   [--threads T1,T2,...] [--always-walk]\n"
                   "Times the scheduler core on the seed's mix (all arrivals at 0): the plain step,\n"
                   "then the land phase on T threads (default 1, 2, 4, ... up to the core count).\n");
            return 1;
        }
        int *dst = !strcmp(argv[i], "--jobs") ? &a->jobs
                   : !strcmp(argv[i], "--max-num-seqs") ? &a->seqs
                   : !strcmp(argv[i], "--pool-blocks") ? &a->pool
                   : !strcmp(argv[i], "--budget") ? &a->budget
                                                  : NULL;
        if (dst && i + 1 < argc) {
            *dst = atoi(argv[++i]);
            if (*dst < 1) {
                fprintf(stderr, "bench_sched: %s must be >= 1\n", argv[i - 1]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            tlist = argv[++i];
        } else if (!strcmp(argv[i], "--always-walk")) {
            a->always_walk = 1;
        } else {
            fprintf(stderr, "bench_sched: unknown or incomplete flag '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    return thread_list(a, tlist, ncpu);
}

/* The jobs: the seed's length mix, each split into a prompt of 10-30% and
 * the rest as output, all arriving at 0. NULL when out of memory. */
static pf_req *make_jobs(int jobs)
{
    int *len = malloc((size_t)jobs * sizeof *len);
    pf_req *j = calloc((size_t)jobs, sizeof *j);
    if (!len || !j) {
        free(len);
        free(j);
        return NULL;
    }
    pf_workload_lengths(pf_mix_seed(), 42, jobs, 1, 2048, len);
    pf_rng g;
    pf_rng_seed(&g, 43);
    for (int i = 0; i < jobs; i++) {
        int L = len[i] < 2 ? 2 : len[i];
        int prompt = (int)pf_rng_range(&g, L / 10 > 1 ? L / 10 : 1, 3 * L / 10 > 1 ? 3 * L / 10 : 1);
        j[i].prompt = prompt;
        j[i].output = L - prompt > 0 ? L - prompt : 1;
    }
    free(len);
    return j;
}

/* The first row's wall time and checksum of finish times, which the other
 * rows are compared with. */
typedef struct {
    int set;
    double dt, sum;
} row_base;

/* One row: the jobs run to the end with `threads` land threads, timed, and
 * printed beside *base (the first row sets it). 0, or 1 after a message. */
static int time_row(const pf_sched_params *p, const bench_args *a, const pf_req *j, int threads,
                    row_base *base)
{
    char err[200];
    pf_sched *s = pf_sched_create(p, j, a->jobs, a->pool, NULL, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "bench_sched: %s\n", err);
        return 1;
    }
    double t0 = now_s();
    int rc = run(s, threads);
    const double dt = now_s() - t0;
    if (rc != PF_OK) {
        fprintf(stderr, "bench_sched: run failed: %s\n", pf_strerror(rc));
        pf_sched_destroy(s);
        return 1;
    }
    int64_t tokens = 0;
    double sum = 0;
    for (int i = 0; i < a->jobs; i++) {
        tokens += pf_sched_req(s, i)->generated;
        sum += pf_sched_req(s, i)->t_done * (double)((i % 97) + 1);
    }
    if (!base->set)
        *base = (row_base){1, dt, sum};
    char name[32];
    if (threads == 0)
        snprintf(name, sizeof name, "plain step");
    else
        snprintf(name, sizeof name, "%d", threads);
    printf("%-14s %10.3f %10lld %12.3g %10.1f %7.1f%% %7.2fx %s\n", name, dt,
           (long long)pf_sched_steps(s), (double)tokens / dt, dt * 1e9 / (double)tokens,
           100.0 * (double)pf_sched_fast_steps(s) / (double)pf_sched_steps(s), base->dt / dt,
           sum == base->sum ? "same" : "MISMATCH");
    pf_sched_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    bench_args a = {.jobs = 512000, .seqs = 4096, .pool = 262144, .budget = 8192};
    int rc = parse_args(argc, argv, &a, ncpu);
    if (rc != 0)
        return rc == 1 ? 0 : 2;
    pf_req *j = make_jobs(a.jobs);
    if (!j) {
        fprintf(stderr, "bench_sched: out of memory\n");
        return 1;
    }
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.max_num_seqs = a.seqs;
    p.max_num_batched_tokens = a.budget;
    p.max_seq_len = 4096;
    p.always_walk = a.always_walk;
    printf("bench_sched: %d requests (seed mix, all at t=0), max-num-seqs %d, budget %d, pool %d frames, "
           "%d cores%s\n",
           a.jobs, a.seqs, a.budget, a.pool, ncpu, a.always_walk ? ", always walk" : "");
    printf("%-14s %10s %10s %12s %10s %8s %8s %s\n", "land threads", "wall s", "steps", "tokens/s",
           "ns/token", "fast", "speedup", "check");
    int status = 0;
    row_base base = {0};
    for (int k = 0; k < a.nt && status == 0; k++)
        status = time_row(&p, &a, j, a.tv[k], &base);
    free(j);
    return status;
}
