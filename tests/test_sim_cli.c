/* tests/test_sim_cli.c - `pagefault sim` (tui/cmd_sim.c): a malformed trace
 * is one line naming file and line with exit 2 and nothing on stdout; bad
 * flags, removed flags and sweeps exit 2; the same flags print the same
 * bytes twice; three tables (results, latency, kv_memory), one row per run
 * in each; a sweep prints one paged row per value and naive only when it
 * changes; the flags of issue 9 reach the simulator. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/commands.h"

static char out_path[64], err_path[64];

/* Run pf_cmd_sim with stdout and stderr sent to files (each Criterion test
 * is its own process, so the redirection needs no undoing). */
static int run(const char *const *args, int n)
{
    snprintf(out_path, sizeof out_path, "/tmp/pf_sim_out_%d", (int)getpid());
    snprintf(err_path, sizeof err_path, "/tmp/pf_sim_err_%d", (int)getpid());
    fflush(stdout);
    fflush(stderr);
    cr_assert_not_null(freopen(out_path, "w", stdout));
    cr_assert_not_null(freopen(err_path, "w", stderr));
    char *argv[32];
    argv[0] = "sim";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    int rc = pf_cmd_sim(n + 1, argv);
    fflush(stdout);
    fflush(stderr);
    return rc;
}

/* Rows of a CSV output whose mode is `mode` in table `table` (the rows
 * carry ",<mode>," and ",<table>,"; no other field holds those words). */
static int count_rows(const char *csv, const char *mode, const char *table)
{
    char m[32], t[32];
    snprintf(m, sizeof m, ",%s,", mode);
    snprintf(t, sizeof t, ",%s,", table);
    int n = 0;
    for (const char *line = csv; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4096];
        if (len < sizeof buf - 2) {
            buf[0] = ',';
            memcpy(buf + 1, line, len);
            buf[len + 1] = ',';
            buf[len + 2] = '\0';
            n += strstr(buf, m) != NULL && strstr(buf, t) != NULL;
        }
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* The value of column `key` in the first row of table `table` and mode
 * `mode` of a CSV output, as a double (NAN when absent). */
static double csv_value(const char *csv, const char *key, const char *mode, const char *table)
{
    const char *nl = strchr(csv, '\n');
    cr_assert_not_null(nl);
    int col = -1, mcol = -1, tcol = -1, k = 0;
    for (const char *p = csv; p < nl; k++) {
        const char *e = p;
        while (e < nl && *e != ',')
            e++;
        size_t n = (size_t)(e - p);
        if (n == strlen(key) && !strncmp(p, key, n))
            col = k;
        if (n == 4 && !strncmp(p, "mode", 4))
            mcol = k;
        if (n == 5 && !strncmp(p, "table", 5))
            tcol = k;
        p = e + 1;
    }
    cr_assert(col >= 0 && mcol >= 0 && tcol >= 0, "no column %s", key);
    for (const char *line = nl + 1; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        char f[64][64];
        int nf = 0;
        for (const char *p = line; p <= end && nf < 64; nf++) {
            const char *e = p;
            while (e < end && *e != ',')
                e++;
            size_t n = (size_t)(e - p) < 63 ? (size_t)(e - p) : 63;
            memcpy(f[nf], p, n);
            f[nf][n] = '\0';
            p = e + 1;
        }
        if (nf > col && nf > mcol && nf > tcol && !strcmp(f[mcol], mode) && !strcmp(f[tcol], table))
            return f[col][0] ? strtod(f[col], NULL) : NAN;
        line = *end ? end + 1 : end;
    }
    return NAN;
}

static char *slurp(const char *p)
{
    FILE *f = fopen(p, "r");
    cr_assert_not_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    char *c = malloc(n + 1);
    memcpy(c, buf, n + 1);
    return c;
}

Test(sim_cli, malformed_trace_names_file_and_line_exit_2)
{
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/pf_sim_bad_%d.csv", (int)getpid());
    FILE *f = fopen(trace, "w");
    fputs("arrival,prompt,output\n0,10,10\n1,10,ten\n", f);
    fclose(f);
    const char *a[] = {"--trace", trace};
    int rc = run(a, 2);
    char *o = slurp(out_path), *e = slurp(err_path);
    unlink(trace);
    cr_assert_eq(rc, 2);
    cr_assert_str_empty(o);
    char want[96];
    snprintf(want, sizeof want, "%s:3: ", trace);
    cr_assert(strstr(e, want) != NULL, "stderr: %s", e);
    cr_assert(strchr(e, '\n') == e + strlen(e) - 1, "one line: %s", e);
    free(o);
    free(e);
}

Test(sim_cli, bad_flags_exit_2)
{
    const char *a[] = {"--watermark", "2"};
    cr_assert_eq(run(a, 2), 2);
    const char *b[] = {"--sweep", "policy=1,2"};
    cr_assert_eq(run(b, 2), 2);
    const char *c[] = {"--sweep", "watermark=0,abc"};
    cr_assert_eq(run(c, 2), 2);
    char *o = slurp(out_path);
    cr_assert_str_empty(o);
    free(o);
    const char *d[] = {"--policy", "oldest"};
    cr_assert_eq(run(d, 2), 2);
    const char *e[] = {"--trace", "/nonexistent.csv"};
    cr_assert_eq(run(e, 2), 2);
}

Test(sim_cli, same_flags_same_bytes)
{
    const char *a[] = {"--jobs", "96", "--workers", "32", "--pool-blocks", "1024", "--format", "json"};
    cr_assert_eq(run(a, 8), 0);
    char *first = slurp(out_path);
    cr_assert_eq(run(a, 8), 0);
    char *second = slurp(out_path);
    cr_assert_str_eq(first, second);
    cr_assert(strstr(first, "\"num_preemptions\"") != NULL, "%s", first);
    cr_assert(strstr(first, "\"kv_cache_usage_mean\"") != NULL);
    free(first);
    free(second);
}

Test(sim_cli, sweep_rows)
{
    const char *a[] = {"--jobs", "64", "--workers", "16", "--pool-blocks", "512", "--format", "csv",
                       "--sweep", "watermark=0,0.1,0.5"};
    cr_assert_eq(run(a, 10), 0);
    char *o = slurp(out_path), *e = slurp(err_path);
    for (int t = 0; t < 3; t++) {
        const char *table = t == 0 ? "results" : t == 1 ? "latency" : "kv_memory";
        cr_assert_eq(count_rows(o, "naive", table), 1, "naive ignores the watermark: one %s row\n%s", table, o);
        cr_assert_eq(count_rows(o, "paged", table), 3, "%s", table);
    }
    cr_assert(strstr(e, "(3/3)") != NULL, "progress on stderr: %s", e);
    free(o);
    free(e);
    /* naive holds 4 reservations here: 2 workers change it, 16 would not */
    const char *b[] = {"--jobs", "64", "--pool-blocks", "512", "--format", "csv", "--sweep",
                       "workers=2,16"};
    cr_assert_eq(run(b, 8), 0);
    o = slurp(out_path);
    cr_assert_eq(count_rows(o, "naive", "results"), 2, "workers changes naive too\n%s", o);
    free(o);
}

/* Expect exit 2, nothing on stdout, one stderr line containing `what`. */
static void expect_usage(const char *const *args, int n, const char *what)
{
    int rc = run(args, n);
    char *o = slurp(out_path), *e = slurp(err_path);
    cr_assert_eq(rc, 2, "%s: exit %d", args[n - 1], rc);
    cr_assert_str_empty(o, "%s: printed on stdout", args[n - 1]);
    cr_assert(strstr(e, what) != NULL, "stderr should name '%s': %s", what, e);
    cr_assert(strchr(e, '\n') == e + strlen(e) - 1, "one line: %s", e);
    free(o);
    free(e);
}

/* Audit regressions: an empty sweep value was skipped silently, a swept flag
 * that the other flags make meaningless (jobs or arrival-rate with --trace)
 * ran identical rows, --arrival-rate was ignored with --trace. Issue 9
 * removed --step-ms (a trace's arrivals are seconds): refused as unknown,
 * also in a sweep. */
Test(sim_cli, sweep_and_combination_errors)
{
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/pf_sim_ok_%d.csv", (int)getpid());
    FILE *f = fopen(trace, "w");
    cr_assert_not_null(f);
    fputs("arrival,prompt,output\n0,10,10\n1,20,5\n", f);
    fclose(f);
    const char *a[] = {"--jobs", "8", "--sweep", "watermark=0,,0.1"};
    expect_usage(a, 4, "empty value");
    const char *b[] = {"--jobs", "8", "--sweep", "watermark=0.1,"};
    expect_usage(b, 4, "empty value");
    const char *c[] = {"--trace", trace, "--sweep", "jobs=5,6"};
    expect_usage(c, 4, "--jobs");
    const char *d[] = {"--sweep", "step-ms=1,2"};
    expect_usage(d, 2, "step-ms");
    const char *d2[] = {"--trace", trace, "--step-ms", "20"};
    expect_usage(d2, 4, "--step-ms");
    const char *e[] = {"--trace", trace, "--arrival-rate", "2"};
    expect_usage(e, 4, "--arrival-rate");
    const char *e2[] = {"--trace", trace, "--sweep", "arrival-rate=1,2"};
    expect_usage(e2, 4, "--arrival-rate");
    const char *e3[] = {"--jobs", "8", "--sweep", "prefix-groups=1,2"};
    expect_usage(e3, 4, "--shared-prefix-tokens");
    const char *g[] = {"--trace", trace, "--sweep", "max-num-seqs=1,2", "--format", "csv"};
    int rc = run(g, 6);
    unlink(trace);
    cr_assert_eq(rc, 0, "max-num-seqs sweeps a trace");
    char *o = slurp(out_path);
    cr_assert_eq(count_rows(o, "paged", "results"), 2, "%s", o);
    free(o);
}

/* A swept value passes the checks a typed one does: a system prompt that
 * leaves no room in --max-len (typed: exit 2) ran as rows labelled with it
 * whose jobs had silently dropped the prefix; and sim's own flags
 * (--metrics-port, --jobs-parallel, --linger) are not the simulation's:
 * swept, they printed identical rows and a swept --metrics-port published
 * nothing where the typed one is refused beside --sweep. */
Test(sim_cli, swept_value_checked_like_a_typed_one)
{
    const char *a[] = {"--jobs", "8", "--sweep", "shared-prefix-tokens=0,100000"};
    expect_usage(a, 4, "--shared-prefix-tokens 100000 leaves no room in --max-len 2048");
    const char *b[] = {"--jobs", "8", "--shared-prefix-tokens", "100", "--sweep", "max-len=50,2048"};
    expect_usage(b, 6, "--max-len 50");
    const char *c[] = {"--jobs", "8", "--sweep", "metrics-port=9100,9101"};
    expect_usage(c, 4, "'metrics-port' is not a simulator flag");
    const char *d[] = {"--jobs", "8", "--sweep", "jobs-parallel=1,2"};
    expect_usage(d, 4, "'jobs-parallel' is not a simulator flag");
    const char *e[] = {"--jobs", "8", "--sweep", "linger=0,1"};
    expect_usage(e, 4, "'linger' is not a simulator flag");
    /* values that fit still sweep */
    const char *g[] = {"--jobs", "8", "--sweep", "shared-prefix-tokens=0,100", "--format", "csv"};
    cr_assert_eq(run(g, 6), 0);
    char *o = slurp(out_path);
    cr_assert_eq(count_rows(o, "paged", "results"), 2, "%s", o);
    free(o);
}

/* Flags the deterministic engine would ignore: --threads (it has no crew)
 * and --tick-us (a batch run goes as fast as it can), typed or swept; they
 * ran identical rows. With the threaded engine both are taken. And a
 * fan-out (--n) past what a run holds is named as such. */
Test(sim_cli, flags_the_engine_ignores_are_refused_and_the_fan_out_is_named)
{
    const char *a[] = {"--jobs", "8", "--threads", "4"};
    expect_usage(a, 4, "--threads: only the threaded engine");
    const char *b[] = {"--jobs", "8", "--sweep", "threads=1,2"};
    expect_usage(b, 4, "--threads: only the threaded engine");
    const char *c[] = {"--jobs", "8", "--tick-us", "5"};
    expect_usage(c, 4, "--tick-us paces the threaded engine");
    const char *d[] = {"--jobs", "8", "--sweep", "tick-us=1,2"};
    expect_usage(d, 4, "--tick-us paces the threaded engine");
    const char *e[] = {"--jobs", "8", "--engine", "threaded", "--threads", "2", "--tick-us", "1",
                       "--format", "csv"};
    cr_assert_eq(run(e, 10), 0, "the threaded engine takes both");
    char *o = slurp(out_path);
    cr_assert_eq(count_rows(o, "paged", "results"), 1, "%s", o);
    free(o);
    /* more samples than a run holds names the fan-out (it said "cannot
     * generate 1000000 jobs", not why) */
    const char *f[] = {"--jobs", "1000000", "--n", "64"};
    expect_usage(f, 4, "--jobs 1000000 x --n 64 is 64000000 samples");
}

Test(sim_cli, one_worker_finishes)
{
    const char *a[] = {"--jobs", "8", "--workers", "1", "--format", "csv"};
    for (int e = 0; e < 2; e++) {
        const char *b[] = {"--jobs", "8", "--workers", "1", "--engine", "threaded", "--format", "csv"};
        int rc = e ? run(b, 8) : run(a, 6);
        char *o = slurp(out_path), *err = slurp(err_path);
        cr_assert_eq(rc, 0, "stderr: %s", err);
        cr_assert(strstr(o, "\npaged,") != NULL, "%s", o);
        free(o);
        free(err);
    }
}

static void write_trace(char *path, size_t n, const char *name, const char *body)
{
    snprintf(path, n, "/tmp/pf_sim_%s_%d.csv", name, (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(body, f);
    fclose(f);
}

/* Issue 8 point 1, the issue's example: exited 1 ("a waiting job can never
 * be admitted") for every victim and preemption mode; it finishes. */
Test(sim_cli, issue_example_finishes)
{
    char trace[64];
    write_trace(trace, sizeof trace, "issue8", "arrival,prompt,output\n0,100,3000\n1900,100,1200\n");
    const char *victims[] = {"faulting", "most-frames"}, *modes[] = {"recompute", "swap"};
    for (int v = 0; v < 2; v++)
        for (int m = 0; m < 2; m++) {
            const char *a[] = {"--trace", trace, "--pool-blocks", "200", "--max-len", "3200", "--workers", "2",
                               "--watermark", "0.3", "--policy", victims[v], "--preempt", modes[m],
                               "--format", "csv"};
            int rc = run(a, 16);
            char *o = slurp(out_path), *e = slurp(err_path);
            cr_assert_eq(rc, 0, "%s/%s: %s", victims[v], modes[m], e);
            cr_assert(strstr(o, "\npaged,") != NULL, "%s", o);
            free(o);
            free(e);
        }
    unlink(trace);
}

/* A request that can never be admitted is aborted alone: the run goes on,
 * exit 0, and one line on stderr says so. */
Test(sim_cli, never_admissible_request_reported)
{
    char trace[64];
    /* pool 64, watermark 0.5: a prompt may take 32 frames (512 tokens) */
    write_trace(trace, sizeof trace, "abort", "arrival,prompt,output\n0,100,20\n1,600,10\n2,50,50\n");
    const char *a[] = {"--trace", trace, "--pool-blocks", "64", "--max-len", "1024", "--workers", "4",
                       "--watermark", "0.5", "--format", "csv"};
    int rc = run(a, 12);
    char *o = slurp(out_path), *e = slurp(err_path);
    unlink(trace);
    cr_assert_eq(rc, 0, "%s", e);
    cr_assert(strstr(e, "paged run: 1 of 3 requests aborted") != NULL, "%s", e);
    cr_assert(strstr(e, "naive") == NULL, "naive admits it: %s", e);
    cr_assert(strchr(e, '\n') == e + strlen(e) - 1, "one line: %s", e);
    cr_assert(strstr(o, "\npaged,") != NULL);
    free(o);
    free(e);
}

/* Issue 8 point 2: a million-step stall limit used to spin for minutes
 * (every step simulated); identical stall steps are now covered in one
 * jump (the seed's rules: vLLM's never stall). The timeout only guards
 * against a hang. Issue 9 removed the step costs (--recompute-cost,
 * --swap-cost): a recompute is a prefill timed by the cost model, a swap
 * its bytes over the host link; the old flags are refused. */
Test(sim_cli, huge_stall_limit_finishes_step_costs_refused, .timeout = 120)
{
    const char *a[] = {"--jobs", "128", "--pool-blocks", "1024", "--watermark", "0", "--format", "csv",
                       "--scheduler", "seed", "--stall-limit", "1000000"};
    cr_assert_eq(run(a, 12), 0);
    char *o = slurp(out_path);
    cr_assert(strstr(o, "\npaged,") != NULL, "%s", o);
    cr_assert_gt(csv_value(o, "num_steps", "paged", "results"), 1000000.0,
                 "the stalled steps still count: %s", o);
    free(o);
    const char *b[] = {"--jobs", "8", "--recompute-cost", "1e6"};
    expect_usage(b, 4, "--recompute-cost");
    const char *c[] = {"--jobs", "8", "--swap-cost", "1", "--preempt", "swap"};
    expect_usage(c, 6, "--swap-cost");
}

/* Sweep points run in parallel print the bytes a serial sweep prints, and
 * the naive baseline runs once per distinct baseline: a watermark sweep
 * (naive ignores the watermark) shows one naive row, a workers sweep one
 * per value. */
Test(sim_cli, parallel_sweep_prints_what_a_serial_one_does)
{
    const char *serial[] = {"--jobs", "96", "--sweep", "watermark=0,0.02,0.1,0.3", "--jobs-parallel", "1",
                            "--format", "csv"};
    const char *par[] = {"--jobs", "96", "--sweep", "watermark=0,0.02,0.1,0.3", "--jobs-parallel", "4",
                         "--format", "csv"};
    cr_assert_eq(run(serial, 8), 0);
    char *a = slurp(out_path);
    cr_assert_eq(run(par, 8), 0);
    char *b = slurp(out_path);
    cr_assert_str_eq(a, b);
    cr_assert_eq(count_rows(a, "naive", "results"), 1, "one baseline for a watermark sweep");
    cr_assert_eq(count_rows(a, "paged", "results"), 4);
    const char *w[] = {"--jobs", "96", "--sweep", "workers=8,32", "--jobs-parallel", "2", "--format", "csv"};
    cr_assert_eq(run(w, 8), 0);
    char *c = slurp(out_path);
    cr_assert_eq(count_rows(c, "naive", "results"), 2, "workers change naive: one baseline each");
    free(a);
    free(b);
    free(c);
}

/* ---- issue 9: the simulator on the scheduler core ------------------------ */

/* Runs `sim` with args and --format csv; returns the output (caller frees). */
static char *run_csv(const char *const *args, int n)
{
    const char *a[30];
    cr_assert_leq(n, 28);
    for (int i = 0; i < n; i++)
        a[i] = args[i];
    a[n] = "--format";
    a[n + 1] = "csv";
    int rc = run(a, n + 2);
    char *e = slurp(err_path);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e);
    free(e);
    return slurp(out_path);
}

/* Three tables, one row per mode in each; the latency table's figures are
 * seconds, ordered as they must be (a request's first token comes after
 * its queue time, its end after its first token). */
Test(sim_cli, three_tables_one_row_per_run)
{
    const char *a[] = {"--jobs", "48", "--arrival-rate", "20"};
    char *o = run_csv(a, 4);
    const char *tables[] = {"results", "latency", "kv_memory"};
    for (int t = 0; t < 3; t++) {
        cr_assert_eq(count_rows(o, "naive", tables[t]), 1, "%s", tables[t]);
        cr_assert_eq(count_rows(o, "paged", tables[t]), 1, "%s", tables[t]);
    }
    for (int m = 0; m < 2; m++) {
        const char *mode = m ? "paged" : "naive";
        double q = csv_value(o, "request_queue_time_p99", mode, "latency");
        double f50 = csv_value(o, "time_to_first_token_p50", mode, "latency");
        double f99 = csv_value(o, "time_to_first_token_p99", mode, "latency");
        double e99 = csv_value(o, "e2e_request_latency_p99", mode, "latency");
        double dur = csv_value(o, "duration", mode, "results");
        cr_assert(q >= 0.0 && f50 > 0.0 && f50 <= f99 && f99 <= e99 && e99 <= dur, "%s: %g %g %g %g %g",
                  mode, q, f50, f99, e99, dur);
        /* the last request arrives at 47 / 20 s: the run lasts longer */
        cr_assert_gt(dur, 47.0 / 20.0);
        double sum = 0;
        const char *k[] = {"token_states", "reserved", "internal_fragmentation", "external_fragmentation"};
        for (int i = 0; i < 4; i++)
            sum += csv_value(o, k[i], mode, "kv_memory");
        cr_assert_float_eq(sum, 1.0, 1e-9, "%s: the Figure 2 split sums to %.12f", mode, sum);
    }
    free(o);
}

/* --n K: K samples per request, K times the requests and output tokens. */
Test(sim_cli, n_samples_multiply_the_requests)
{
    const char *a[] = {"--jobs", "16"};
    const char *b[] = {"--jobs", "16", "--n", "4"};
    char *o1 = run_csv(a, 2), *o4 = run_csv(b, 4);
    cr_assert_float_eq(csv_value(o4, "generation_tokens", "paged", "results"),
                       4 * csv_value(o1, "generation_tokens", "paged", "results"), 0.5);
    cr_assert_float_eq(csv_value(o4, "config.num_jobs", "paged", "results"), 64, 0.5);
    free(o1);
    free(o4);
    const char *c[] = {"--jobs", "16", "--n", "0"};
    expect_usage(c, 4, "--n");
}

/* Shared system prompts hit the prefix cache only when it is enabled. */
Test(sim_cli, prefix_caching_hits_only_when_enabled)
{
    const char *on[] = {"--jobs", "64", "--shared-prefix-tokens", "256", "--prefix-groups", "2",
                        "--enable-prefix-caching"};
    const char *off[] = {"--jobs", "64", "--shared-prefix-tokens", "256", "--prefix-groups", "2"};
    char *a = run_csv(on, 7), *b = run_csv(off, 6);
    cr_assert_gt(csv_value(a, "prefix_cache_hit_rate", "paged", "kv_memory"), 0.0);
    cr_assert_gt(csv_value(a, "frames_saved", "paged", "kv_memory"), 0.0);
    cr_assert_eq(csv_value(b, "prefix_cache_hit_rate", "paged", "kv_memory"), 0.0);
    cr_assert_eq(csv_value(b, "frames_saved", "paged", "kv_memory"), 0.0);
    /* the naive baseline never caches */
    cr_assert_eq(csv_value(a, "prefix_cache_hits", "naive", "kv_memory"), 0.0);
    free(a);
    free(b);
}

/* The threaded engine prints the deterministic engine's figures: every
 * row equal but for the config.engine column. */
Test(sim_cli, threaded_engine_prints_the_same_figures)
{
    const char *d[] = {"--jobs", "96", "--pool-blocks", "1024", "--watermark", "0"};
    const char *t[] = {"--jobs", "96", "--pool-blocks", "1024", "--watermark", "0", "--engine", "threaded",
                       "--threads", "3"};
    char *a = run_csv(d, 6), *b = run_csv(t, 10);
    cr_assert_gt(csv_value(a, "num_preemptions", "paged", "results"), 0.0, "the run preempts");
    cr_assert_eq(count_rows(b, "threaded", "results"), 2);
    const char *keys[] = {"num_preemptions", "num_steps", "duration", "generation_tokens",
                          "num_recomputed_tokens", "decoding_mean", "kv_cache_usage_mean"};
    for (int m = 0; m < 2; m++)
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const char *mode = m ? "paged" : "naive";
            cr_assert_eq(csv_value(a, keys[k], mode, "results"), csv_value(b, keys[k], mode, "results"),
                         "%s %s", mode, keys[k]);
        }
    const char *lk[] = {"time_to_first_token_p50", "time_to_first_token_p99", "inter_token_latency_p99",
                        "e2e_request_latency_p99", "request_queue_time_p99"};
    for (size_t k = 0; k < sizeof lk / sizeof lk[0]; k++)
        cr_assert_eq(csv_value(a, lk[k], "paged", "latency"), csv_value(b, lk[k], "paged", "latency"), "%s",
                     lk[k]);
    free(a);
    free(b);
}

/* The cost model's flags reach the run: a 70B model is slower than an 8B
 * one on the same GPU and jobs; a tight TTFT objective is missed by some. */
Test(sim_cli, model_gpu_and_slo_flags_change_the_figures)
{
    const char *s8[] = {"--jobs", "32", "--arrival-rate", "4", "--model", "llama3-8b"};
    const char *s70[] = {"--jobs", "32", "--arrival-rate", "4", "--model", "llama3-70b"};
    const char *a100[] = {"--jobs", "32", "--arrival-rate", "4", "--gpu", "a100"};
    char *a = run_csv(s8, 6), *b = run_csv(s70, 6), *c = run_csv(a100, 6);
    /* an objective between the run's TTFT p50 and p99: met by at least
     * half the requests, missed by at least one */
    double p50 = csv_value(a, "time_to_first_token_p50", "paged", "latency");
    double p99 = csv_value(a, "time_to_first_token_p99", "paged", "latency");
    cr_assert_lt(p50, p99);
    char obj[32];
    snprintf(obj, sizeof obj, "%.9f", (p50 + p99) / 2);
    const char *slo[] = {"--jobs", "32", "--arrival-rate", "4", "--slo-ttft", obj, "--slo-tpot", "1"};
    char *d = run_csv(slo, 8);
    double d8 = csv_value(a, "duration", "paged", "results");
    cr_assert_gt(csv_value(b, "duration", "paged", "results"), d8);
    cr_assert_gt(csv_value(c, "duration", "paged", "results"), d8, "an A100 is slower than an H200");
    cr_assert_eq(csv_value(a, "slo_attainment", "paged", "latency"), 1.0, "no objective: all met");
    double att = csv_value(d, "slo_attainment", "paged", "latency");
    cr_assert(att >= 0.5 && att < 1.0, "TTFT objective %s s (p50 %g, p99 %g): attainment %g", obj, p50, p99,
              att);
    cr_assert_lt(csv_value(d, "slo_goodput", "paged", "latency"),
                 csv_value(d, "request_throughput", "paged", "latency"));
    free(a);
    free(b);
    free(c);
    free(d);
    const char *bad[] = {"--jobs", "8", "--model", "gpt-9"};
    expect_usage(bad, 4, "--model");
    const char *bad2[] = {"--jobs", "8", "--slo-ttft", "-1"};
    expect_usage(bad2, 4, "--slo-ttft");
}

/* --scheduler seed and --watermark auto run; auto reports the watermark it
 * ends at in the configuration, inside [0, 1]. */
Test(sim_cli, seed_scheduler_and_auto_watermark_run)
{
    const char *a[] = {"--jobs", "128", "--pool-blocks", "1024", "--scheduler", "seed"};
    const char *v[] = {"--jobs", "128", "--pool-blocks", "1024"};
    char *o = run_csv(a, 6), *ov = run_csv(v, 4);
    cr_assert_eq(count_rows(o, "seed", "results"), 2, "config.scheduler says seed: %s", o);
    cr_assert_neq(csv_value(o, "duration", "paged", "results"), csv_value(ov, "duration", "paged", "results"),
                  "the rules differ");
    free(o);
    free(ov);
    const char *w[] = {"--jobs", "128", "--pool-blocks", "1024", "--watermark", "auto"};
    o = run_csv(w, 6);
    cr_assert_eq(count_rows(o, "paged", "results"), 1);
    free(o);
    const char *bad[] = {"--jobs", "8", "--scheduler", "orca"};
    expect_usage(bad, 4, "--scheduler");
    const char *bad2[] = {"--jobs", "8", "--watermark", "automatic"};
    expect_usage(bad2, 4, "--watermark");
}

/* --shared-prefix-tokens heads a trace's prompts too (the trace gives each
 * prompt's length, the flag its shared head): with prefix caching the
 * trace's requests hit one another's system prompt; without the flag they
 * share nothing. */
Test(sim_cli, shared_prefix_applies_to_a_trace)
{
    char trace[64];
    write_trace(trace, sizeof trace, "prefix",
                "arrival,prompt,output\n0,100,20\n1,60,10\n2,80,10\n3,90,10\n");
    const char *a[] = {"--trace", trace, "--shared-prefix-tokens", "48", "--enable-prefix-caching",
                       "--format", "csv"};
    cr_assert_eq(run(a, 7), 0);
    char *with = slurp(out_path);
    const char *b[] = {"--trace", trace, "--enable-prefix-caching", "--format", "csv"};
    cr_assert_eq(run(b, 5), 0);
    char *without = slurp(out_path);
    unlink(trace);
    double hits_with = csv_value(with, "prefix_cache_hits", "paged", "kv_memory");
    double hits_without = csv_value(without, "prefix_cache_hits", "paged", "kv_memory");
    cr_assert_gt(hits_with, 0, "the trace's requests share the 48-token head:\n%s", with);
    cr_assert_eq(hits_without, 0, "without the flag they share nothing:\n%s", without);
    free(with);
    free(without);
}

/* Regression (found while adapting these tests to issue 9): with
 * --watermark auto, `sim` wrote config.watermark as the words "auto (load
 * controller)", in JSON a string where every other run has a number, in CSV
 * a column pandas could no longer read as numbers. It is a number (the
 * watermark the run starts from), the controller said in a column of its
 * own. */
Test(sim_cli, auto_watermark_config_is_a_number)
{
    const char *a[] = {"--jobs", "8", "--watermark", "auto", "--format", "json"};
    cr_assert_eq(run(a, 6), 0);
    char *o = slurp(out_path);
    const char *k = strstr(o, "\"watermark\": ");
    cr_assert_not_null(k, "%s", o);
    k += strlen("\"watermark\": ");
    cr_assert((*k >= '0' && *k <= '9') || *k == '-', "config.watermark is not a number: %.40s", k);
    free(o);
}

/* Issue 9 point 5: each of vLLM's four request latencies in seconds as
 * mean, p50, p90 and p99, the quantiles in order, in both runs. */
Test(sim_cli, latency_mean_and_three_quantiles)
{
    const char *a[] = {"--jobs", "64", "--format", "csv"};
    cr_assert_eq(run(a, 4), 0);
    char *o = slurp(out_path);
    const char *names[] = {"time_to_first_token", "inter_token_latency", "e2e_request_latency",
                           "request_queue_time"};
    const char *modes[] = {"naive", "paged"};
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 4; k++) {
            char key[64];
            double q[3];
            const char *qs[] = {"p50", "p90", "p99"};
            for (int i = 0; i < 3; i++) {
                snprintf(key, sizeof key, "%s_%s", names[k], qs[i]);
                q[i] = csv_value(o, key, modes[m], "latency");
                cr_assert(!isnan(q[i]) && q[i] >= 0, "%s %s: %g", modes[m], key, q[i]);
            }
            snprintf(key, sizeof key, "%s_mean", names[k]);
            double mean = csv_value(o, key, modes[m], "latency");
            cr_assert(!isnan(mean) && mean >= 0, "%s %s", modes[m], key);
            cr_assert(q[0] <= q[1] && q[1] <= q[2], "%s %s: p50 %g p90 %g p99 %g", modes[m], names[k],
                      q[0], q[1], q[2]);
        }
    free(o);
}
