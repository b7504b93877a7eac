/* bench/bench_sim.c - how fast the simulator simulates (issue 9, point 8).
 *
 * Prints, each figure the median of --reps runs unless said otherwise:
 *   1. the default `pagefault sim` (512 jobs of the seed's mix, vLLM's
 *      rules, 4096 blocks of 16, max-len 2048): wall time of the naive and
 *      the paged run, and per simulated step;
 *   2. the same paged run on the deterministic engine and on the threaded
 *      one with 1, 2, 4, 8 and 16 threads (counts above the machine's
 *      cores are skipped unless --all-threads: oversubscribed threads only
 *      measure the scheduler of the operating system), per step and as a
 *      ratio to the deterministic engine;
 *   3. --max-num-seqs 128 against 4096 on the same jobs: time per simulated
 *      step and per simulated token (idle sequence slots must cost nothing);
 *   4. an Azure-shaped trace of 19,366 requests (prompts up to 14,050
 *      tokens, one hour; generated here with a fixed seed in the Azure
 *      format): parse time and run time;
 *   5. a 10^6-request trace (our CSV format, generated here) arriving at
 *      --rate requests per second (default 40: a little above the ~33 a
 *      second the default pool serves on this mix, so the server stays busy
 *      to the end): parse time and run time (one run);
 *   6. snapshots of a live run on a 2^20-frame pool with about 4,000
 *      sequences running (max-num-seqs 4096, 10^6 jobs arriving at 3000/s),
 *      taken about 30 times a second for --snap-s seconds, deterministic
 *      engine and threaded on the machine's cores: the time a snapshot
 *      holds the simulator's lock, and that at 30 Hz as a share of the
 *      engine's time (issue 10, point 4: under 1%).
 * Columns: wall time of a run; simulated steps; wall time per step; wall
 * time per computed token (output tokens plus recomputed ones); simulated
 * seconds.
 * Usage: bench_sim [--reps N] [--rate R] [--all-threads] [--quick] [--snap-s S]
 * (--quick: skips parts 5 and 6). Figures only; nothing here is asserted (speed
 * targets are not tests). On a shared machine, compare ratios from one run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Median wall time of reps runs (create, run, destroy timed as `sim` pays
 * them); the last run's stats in *st. -1 on error. */
static double time_runs(const pf_sim_params *p, const pf_jobs *j, int reps, pf_sim_stats *st)
{
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t)
        return -1;
    for (int r = 0; r < reps; r++) {
        char err[256];
        double t0 = now_s();
        pf_sim *s = pf_sim_create(p, j, err, sizeof err);
        if (!s) {
            fprintf(stderr, "bench_sim: %s\n", err);
            free(t);
            return -1;
        }
        int rc = pf_sim_run(s, st);
        pf_sim_destroy(s);
        t[r] = now_s() - t0;
        if (rc != PF_OK) {
            fprintf(stderr, "bench_sim: run failed: %s\n", pf_strerror(rc));
            free(t);
            return -1;
        }
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_d);
    double m = t[reps / 2];
    free(t);
    return m;
}

static void row(const char *label, double t, const pf_sim_stats *st)
{
    printf("  %-34s %9.2f ms  %8lld steps  %7.3f us/step  %8.1f ns/tok  %9.1f s simulated\n", label, t * 1e3,
           (long long)st->step, t / (double)st->step * 1e6, t / (double)st->tokens_computed * 1e9,
           st->time_s);
}

/* 1 and 2: the default `sim`, and the engines on it. */
static int default_sim(int reps, int all_threads)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 42, 512, pf_mix_seed(), 0.0, 2048) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.tick_us = 0;
    pf_sim_stats n, g;
    p.mode = PF_SIM_NAIVE;
    double tn = time_runs(&p, &j, reps, &n);
    p.mode = PF_SIM_PAGED;
    p.naive_throughput = n.throughput; /* as `pagefault sim` does: no second naive run */
    double tp = time_runs(&p, &j, reps, &g);
    if (tn < 0 || tp < 0)
        return 1;
    printf("1. default `pagefault sim`: 512 jobs, vLLM rules, max-num-seqs %d, %d blocks of %d, "
           "deterministic engine (median of %d)\n",
           p.workers, p.cfg.pool_blocks, p.cfg.block_size, reps);
    row("naive", tn, &n);
    row("paged", tp, &g);
    printf("  naive + paged (what `pagefault sim` runs): %.2f ms\n\n", (tn + tp) * 1e3);

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("2. the same paged run, deterministic vs threaded engine (%ld cores online; median of %d)\n", cores,
           reps);
    row("deterministic", tp, &g);
    const int threads[] = {1, 2, 4, 8, 16};
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        if (threads[k] > cores && !all_threads) {
            printf("  threaded, %2d threads: skipped (more than the %ld cores; --all-threads runs it)\n",
                   threads[k], cores);
            continue;
        }
        pf_sim_params q = p;
        q.engine = PF_ENGINE_THREADED;
        q.threads = threads[k];
        pf_sim_stats t;
        double tt = time_runs(&q, &j, reps, &t);
        if (tt < 0)
            return 1;
        char label[64];
        snprintf(label, sizeof label, "threaded, %2d threads", threads[k]);
        row(label, tt, &t);
        printf("  %-34s %.2fx the deterministic engine's time; same figures: %s\n", "", tt / tp,
               t.step == g.step && t.time_s == g.time_s && t.tokens_generated == g.tokens_generated &&
                       t.preemptions == g.preemptions
                   ? "yes"
                   : "NO");
    }
    printf("\n");
    pf_jobs_free(&j);
    return 0;
}

/* 3: idle sequence slots. The same jobs under a cap of 128 and of 4096: a
 * pool that holds them all (so 4096 is mostly idle slots), and the default
 * pool (where the pool, not the cap, limits the batch). */
static int seq_cap(int reps)
{
    printf("3. max-num-seqs 128 vs 4096, deterministic engine, paged (median of %d)\n", reps);
    /* 64 jobs fit under either cap (only idle slots differ); 512 at the
     * default pool; 4096 in a pool that holds them all */
    const int jobs[] = {64, 512, 4096};
    const int blocks[] = {4096, 4096, 131072};
    for (int w = 0; w < 3; w++) {
        pf_jobs j;
        if (pf_jobs_generate(&j, 42, jobs[w], pf_mix_seed(), 0.0, 2048) != PF_OK)
            return 1;
        double per_step[2];
        for (int c = 0; c < 2; c++) {
            pf_sim_params p;
            pf_sim_params_default(&p);
            p.tick_us = 0;
            p.cfg.pool_blocks = blocks[w];
            p.workers = c ? 4096 : 128;
            p.naive_throughput = 1.0; /* the baseline is not timed here */
            pf_sim_stats st;
            double t = time_runs(&p, &j, reps, &st);
            if (t < 0)
                return 1;
            char label[80];
            snprintf(label, sizeof label, "%d jobs, %d blocks, cap %4d", jobs[w], blocks[w], p.workers);
            row(label, t, &st);
            printf("  %-34s running: mean %.1f, peak %d\n", "", st.running_mean, st.running_peak);
            per_step[c] = t / (double)st.step;
        }
        printf("  %-34s cap 4096 / cap 128, time per step: %.2fx\n", "", per_step[1] / per_step[0]);
        pf_jobs_free(&j);
    }
    printf("\n");
    return 0;
}


/* Parse `text` and run it once (paged, defaults but max-len), printing both
 * times. */
static int parse_and_run(const char *label, const char *text, size_t len, int max_len, int reps)
{
    pf_jobs j;
    char err[256];
    double t0 = now_s();
    if (pf_jobs_parse_trace(&j, label, text, len, max_len, err, sizeof err) != PF_OK) {
        fprintf(stderr, "bench_sim: %s\n", err);
        return 1;
    }
    double tparse = now_s() - t0;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.tick_us = 0;
    p.cfg.max_seq_len = max_len;
    p.naive_throughput = 1.0;
    pf_sim_stats st;
    double t = time_runs(&p, &j, reps, &st);
    if (t < 0)
        return 1;
    printf("  %d requests (%d skipped), %.1f MB of text: parse %.1f ms\n", j.njobs, j.rejected,
           (double)len / 1e6, tparse * 1e3);
    row("run (paged)", t, &st);
    printf("  %-34s finished %lld, preemptions %lld, running mean %.1f, waiting mean %.1f\n", "",
           (long long)st.finished, (long long)st.preemptions, st.running_mean, st.waiting_mean);
    pf_jobs_free(&j);
    return 0;
}

static int azure(int reps)
{
    size_t len;
    char *text = pf_jobs_azure_like(19366, 14050, 2023, &len);
    if (!text)
        return 1;
    printf("4. Azure-shaped trace: 19,366 requests over an hour, prompts up to 14,050 tokens, max-len 16384 "
           "(median of %d)\n",
           reps);
    int rc = parse_and_run("azure-shaped", text, len, 16384, reps);
    free(text);
    printf("\n");
    return rc;
}

/* 10^6 requests of the seed's mix in our CSV format, `rate` per second. */
static int million(double rate)
{
    const int n = 1000000;
    pf_jobs g;
    if (pf_jobs_generate(&g, 7, n, pf_mix_seed(), rate, 2048) != PF_OK)
        return 1;
    size_t cap = (size_t)n * 40 + 64, k = 0;
    char *text = malloc(cap);
    if (!text) {
        pf_jobs_free(&g);
        return 1;
    }
    k += (size_t)snprintf(text, cap, "arrival,prompt,output\n");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(text + k, cap - k, "%.6f,%d,%d\n", g.jobs[i].arrival, g.jobs[i].prompt,
                              g.jobs[i].output);
    pf_jobs_free(&g);
    printf("5. 10^6-request trace (seed mix, %.0f requests/s, our CSV format; one run)\n", rate);
    int rc = parse_and_run("million", text, k, 2048, 1);
    free(text);
    printf("\n");
    return rc;
}

/* Part 6: one live run, snapshotted for secs seconds. */
static int snap_run(int threads, double secs)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 42, 1000000, pf_mix_seed(), 3000.0, 2048) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.pool_blocks = 1 << 20;
    p.workers = 4096;
    p.tick_us = 0;
    p.naive_throughput = 1.0; /* no baseline run */
    if (threads > 0) {
        p.engine = PF_ENGINE_THREADED;
        p.threads = threads;
    }
    char err[256];
    pf_sim *s = pf_sim_create(&p, &j, err, sizeof err);
    pf_sim_snapshot *snap = calloc(1, sizeof *snap);
    int rc = 1;
    if (!s || !snap || pf_sim_start(s) != PF_OK)
        goto out;
    double locked = 0, t0 = now_s(), running = 0;
    int n = 0;
    while (now_s() - t0 < secs) {
        if (pf_sim_take_snapshot(s, snap) != PF_OK)
            goto out;
        locked += snap->locked_s;
        running += snap->stats.running;
        n++;
        struct timespec ts = {0, 33 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    pf_sim_stop(s);
    if (n > 0)
        printf("  %-22s %4d snapshots, %6.0f running on average: lock held %6.3f ms a snapshot, "
               "%5.2f%% of the engine's time at 30 Hz\n",
               threads > 0 ? "threaded" : "deterministic", n, running / n, locked / n * 1e3,
               locked / n * 30 * 100);
    rc = 0;
out:
    if (!s)
        fprintf(stderr, "bench_sim: %s\n", err);
    pf_sim_snapshot_free(snap);
    free(snap);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
    return rc;
}

static int snapshots(double secs)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("6. snapshots of a live 2^20-frame pool, about 4,000 sequences running, %g s each "
           "(threaded: %ld threads)\n", secs, cores);
    return snap_run(0, secs) || snap_run(cores > 1 ? (int)cores : 2, secs);
}

int main(int argc, char **argv)
{
    int reps = 5, all_threads = 0, quick = 0;
    double rate = 40.0, snap_s = 6.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = atof(argv[++i]);
        else if (!strcmp(argv[i], "--all-threads"))
            all_threads = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--snap-s") && i + 1 < argc)
            snap_s = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_sim [--reps N] [--rate R] [--all-threads] [--quick] [--snap-s S]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000) {
        fprintf(stderr, "bench_sim: --reps must be in [1, 1000]\n");
        return 2;
    }
    if (!(rate > 0.0 && rate <= 1e6)) {
        fprintf(stderr, "bench_sim: --rate must be in (0, 1000000] requests per second\n");
        return 2;
    }
    if (default_sim(reps, all_threads) || seq_cap(reps) || azure(reps))
        return 1;
    if (!(snap_s > 0.0 && snap_s <= 600.0)) {
        fprintf(stderr, "bench_sim: --snap-s must be in (0, 600] seconds\n");
        return 2;
    }
    if (!quick && (million(rate) || snapshots(snap_s)))
        return 1;
    return 0;
}
