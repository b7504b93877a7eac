/* tests/test_sim_cli.c - `pagefault sim` (tui/cmd_sim.c): a malformed trace
 * is one line naming file and line with exit 2 and nothing on stdout; bad
 * flags and sweeps exit 2; the same flags print the same bytes twice; a
 * sweep prints one paged row per value and naive only when it changes. */
#include <criterion/criterion.h>
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
    int naive = 0, paged = 0;
    for (char *p = o; (p = strstr(p, ",naive,")); p++)
        naive++;
    for (char *p = o; (p = strstr(p, ",paged,")); p++)
        paged++;
    cr_assert_eq(naive, 1, "naive ignores the watermark: one row\n%s", o);
    cr_assert_eq(paged, 3);
    cr_assert(strstr(e, "(3/3)") != NULL, "progress on stderr: %s", e);
    free(o);
    free(e);
    /* naive holds 4 reservations here: 2 workers change it, 16 would not */
    const char *b[] = {"--jobs", "64", "--pool-blocks", "512", "--format", "csv", "--sweep",
                       "workers=2,16"};
    cr_assert_eq(run(b, 8), 0);
    o = slurp(out_path);
    naive = 0;
    for (char *p = o; (p = strstr(p, ",naive,")); p++)
        naive++;
    cr_assert_eq(naive, 2, "workers changes naive too\n%s", o);
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
 * that the other flags make meaningless (jobs with --trace, step-ms without
 * it) ran identical rows, --arrival-rate was ignored with --trace, and one
 * worker could not finish ("a waiting job can never be admitted"). */
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
    expect_usage(d, 2, "--step-ms");
    const char *e[] = {"--trace", trace, "--arrival-rate", "2"};
    expect_usage(e, 4, "--arrival-rate");
    const char *g[] = {"--trace", trace, "--sweep", "step-ms=1,2", "--format", "csv"};
    int rc = run(g, 6);
    unlink(trace);
    cr_assert_eq(rc, 0, "step-ms sweeps a trace");
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

/* Issue 8 point 2: a million-step stall limit and huge costs used to spin
 * for minutes (every step simulated); quiet steps are now skipped. The
 * timeout only guards against a hang. */
Test(sim_cli, huge_stall_limit_and_costs_finish, .timeout = 120)
{
    /* 128 jobs in 1024 blocks: each of these runs preempts about 20 times */
    const char *a[] = {"--jobs", "128", "--pool-blocks", "1024", "--watermark", "0", "--format", "csv",
                       "--stall-limit", "1000000"};
    const char *b[] = {"--jobs", "128", "--pool-blocks", "1024", "--watermark", "0", "--format", "csv",
                       "--recompute-cost", "1e6"};
    const char *c[] = {"--jobs",   "128", "--pool-blocks", "1024", "--watermark", "0", "--format",
                       "csv",      "--swap-cost", "1e6", "--preempt", "swap"};
    cr_assert_eq(run(a, 10), 0);
    cr_assert_eq(run(b, 10), 0);
    cr_assert_eq(run(c, 12), 0);
    char *o = slurp(out_path);
    cr_assert(strstr(o, "\npaged,") != NULL, "%s", o);
    free(o);
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
    int naive_rows = 0;
    for (const char *p = a; (p = strstr(p, ",naive,")) != NULL; p++)
        naive_rows++;
    cr_assert_eq(naive_rows, 1, "one baseline for a watermark sweep");
    const char *w[] = {"--jobs", "96", "--sweep", "workers=8,32", "--jobs-parallel", "2", "--format", "csv"};
    cr_assert_eq(run(w, 8), 0);
    char *c = slurp(out_path);
    naive_rows = 0;
    for (const char *p = c; (p = strstr(p, ",naive,")) != NULL; p++)
        naive_rows++;
    cr_assert_eq(naive_rows, 2, "workers change naive: one baseline each");
    free(a);
    free(b);
    free(c);
}
