/* bench/bench_sim.c - how fast the simulator simulates.
 *
 * Prints, for the default workload (512 jobs of the seed's mix, 128
 * workers, 4096 blocks of 16, MAX_SEQ_LEN 2048) and a larger one:
 *   - the wall time of one run (median of --reps), naive and paged, on the
 *     deterministic engine; "pagefault sim" runs exactly these two;
 *   - simulated sequence-steps per second (one admitted sequence for one
 *     step = one sequence-step: the unit of work of the engine);
 *   - one threaded-engine run of the default workload (tick 0), for scale.
 * Usage: bench_sim [--reps N] [--no-threaded]
 * Figures only; nothing here is asserted (speed targets are not tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median wall time of reps runs; the last run's stats in *st. */
static double time_runs(const pf_sim_params *p, const pf_jobs *j, int reps, pf_sim_stats *st)
{
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return -1;
    for (int r = 0; r < reps; r++) {
        pf_sim *s = pf_sim_create(p, j, NULL, 0);
        if (!s) {
            free(t);
            return -1;
        }
        double t0 = now_s();
        int rc = pf_sim_run(s, st);
        t[r] = now_s() - t0;
        pf_sim_destroy(s);
        if (rc != PF_OK) {
            free(t);
            return -1;
        }
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    double m = t[reps / 2];
    free(t);
    return m;
}

static int workload(const char *name, int njobs, int workers, int blocks, int reps)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 42, njobs, pf_mix_seed(), 0.0, 2048) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.workers = workers;
    p.cfg.pool_blocks = blocks;
    p.tick_us = 0;
    pf_sim_stats n, g;
    p.mode = PF_SIM_NAIVE;
    double tn = time_runs(&p, &j, reps, &n);
    p.mode = PF_SIM_PAGED;
    p.naive_throughput = n.throughput; /* as `pagefault sim` does: no second naive run */
    double tp = time_runs(&p, &j, reps, &g);
    pf_jobs_free(&j);
    if (tn < 0 || tp < 0)
        return 1;
    printf("%s: %d jobs, %d workers, %d blocks (median of %d runs, deterministic engine)\n", name, njobs,
           workers, blocks, reps);
    printf("  naive : %8.2f ms  %7lld steps  %9lld sequence-steps  %6.2f M sequence-steps/s\n", tn * 1e3,
           (long long)n.step, (long long)n.seq_steps, (double)n.seq_steps / tn / 1e6);
    printf("  paged : %8.2f ms  %7lld steps  %9lld sequence-steps  %6.2f M sequence-steps/s  (watermark %.2f, %lld preemptions)\n",
           tp * 1e3, (long long)g.step, (long long)g.seq_steps, (double)g.seq_steps / tp / 1e6, p.watermark,
           (long long)g.preemptions);
    printf("  naive + paged (what `pagefault sim` runs): %.2f ms\n", (tn + tp) * 1e3);
    return 0;
}

int main(int argc, char **argv)
{
    int reps = 21, threaded = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-threaded"))
            threaded = 0;
        else {
            fprintf(stderr, "usage: bench_sim [--reps N] [--no-threaded]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_sim: --reps must be in [1, 1000]\n");
        return 2;
    }
    if (workload("default", 512, 128, 4096, reps))
        return 1;
    if (workload("large", 8192, 1024, 32768, reps > 5 ? 5 : reps))
        return 1;
    if (threaded) {
        pf_jobs j;
        if (pf_jobs_generate(&j, 42, 512, pf_mix_seed(), 0.0, 2048) != PF_OK)
            return 1;
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.tick_us = 0;
        p.engine = PF_ENGINE_THREADED;
        p.naive_throughput = 1.0; /* not needed here */
        pf_sim_stats st;
        double t = time_runs(&p, &j, 1, &st);
        pf_jobs_free(&j);
        if (t < 0)
            return 1;
        printf("threaded engine, default workload, paged, tick 0: %.0f ms for %lld steps (%.1f us per step, "
               "barrier over 128 threads)\n",
               t * 1e3, (long long)st.step, t / (double)st.step * 1e6);
    }
    return 0;
}
