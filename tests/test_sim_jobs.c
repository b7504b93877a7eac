/* tests/test_sim_jobs.c - jobs from the mix and from trace files
 * (sim/sim.h): both formats, arrivals, rejections, and every kind of
 * malformed line answered with "FILE:LINE: what". */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/workload.h"
#include "sim/sim.h"

static char path[64];

static const char *write_tmp(const char *text)
{
    snprintf(path, sizeof path, "/tmp/pf_test_trace_%d.csv", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

Test(sim_jobs, generated_split_the_mix_lengths)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 42, 300, pf_mix_seed(), 0.0, 2048), PF_OK);
    int len[300];
    cr_assert_eq(pf_workload_lengths(pf_mix_seed(), 42, 300, 1, 2048, len), PF_OK);
    for (int i = 0; i < 300; i++) {
        const pf_job *x = &j.jobs[i];
        cr_assert_eq(x->prompt + x->output, len[i]);
        cr_assert_geq(x->prompt, len[i] / 10 > 0 ? len[i] / 10 : 1);
        cr_assert_leq(x->prompt, (3 * len[i]) / 10 + 1);
        cr_assert_geq(x->output, 1);
        cr_assert_eq(x->arrival, 0);
        cr_assert(x->priority >= 0 && x->priority <= 3);
    }
    pf_jobs k;
    cr_assert_eq(pf_jobs_generate(&k, 42, 300, pf_mix_seed(), 0.0, 2048), PF_OK);
    cr_assert_eq(memcmp(j.jobs, k.jobs, 300 * sizeof *j.jobs), 0);
    pf_jobs_free(&k);
    cr_assert_eq(pf_jobs_generate(&k, 42, 300, pf_mix_seed(), 4.0, 2048), PF_OK);
    cr_assert_eq(k.jobs[3].arrival, 0);
    cr_assert_eq(k.jobs[4].arrival, 1);
    cr_assert_eq(k.jobs[299].arrival, 74);
    pf_jobs_free(&k);
    pf_jobs_free(&j);
    cr_assert_eq(pf_jobs_generate(&j, 1, 0, pf_mix_seed(), 0.0, 2048), PF_ERR_ARG);
}

Test(sim_jobs, our_csv_sorted_and_rejected)
{
    const char *p = write_tmp("arrival,prompt,output\n5,10,20\n0,100,3,2\n\n3,2000,100\r\n0,1,1\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 1.0, 2048, err, sizeof err), PF_OK, "%s", err);
    cr_assert_eq(j.njobs, 3);
    cr_assert_eq(j.rejected, 1);
    cr_assert_eq(j.jobs[0].arrival, 0);
    cr_assert_eq(j.jobs[0].prompt, 100); /* stable: file order among equal arrivals */
    cr_assert_eq(j.jobs[0].priority, 2);
    cr_assert_eq(j.jobs[1].prompt, 1);
    cr_assert_eq(j.jobs[2].arrival, 5);
    pf_jobs_free(&j);
    cr_assert_eq(pf_jobs_load_trace(&j, p, 1.0, 4096, err, sizeof err), PF_OK);
    cr_assert_eq(j.njobs, 4);
    cr_assert_eq(j.rejected, 0);
    pf_jobs_free(&j);
    unlink(p);
}

Test(sim_jobs, azure_format_maps_wall_clock_to_steps)
{
    const char *p = write_tmp("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                              "2023-11-16 23:59:59.9900000,100,10\n"
                              "2023-11-17 00:00:00.0300000,200,0\n"
                              "2023-11-17 00:00:01.0000000,7000,20\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 20.0, 2048, err, sizeof err), PF_OK, "%s", err);
    cr_assert_eq(j.njobs, 2);
    cr_assert_eq(j.rejected, 1);
    cr_assert_eq(j.jobs[0].arrival, 0);
    cr_assert_eq(j.jobs[1].arrival, 2, "40 ms across midnight at 20 ms per step");
    cr_assert_eq(j.jobs[1].output, 1, "zero generated tokens still takes one step");
    pf_jobs_free(&j);
    unlink(p);
}

static void expect_error(const char *text, int line, const char *what)
{
    const char *p = write_tmp(text);
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 1.0, 2048, err, sizeof err), PF_ERR_IO, "accepted: %s", text);
    char want[96];
    snprintf(want, sizeof want, "%s:%d: ", p, line);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "'%s' should start with '%s'", err, want);
    cr_assert(strstr(err, what) != NULL, "'%s' should mention '%s'", err, what);
    cr_assert_null(j.jobs);
    unlink(p);
}

Test(sim_jobs, malformed_lines_name_file_and_line)
{
    expect_error("arrival,prompt,output\n0,1,1\n0,x,1\n", 3, "prompt");
    expect_error("arrival,prompt,output\n0,1\n", 2, "fields");
    expect_error("arrival,prompt,output\n0,1,1,1,1\n", 2, "fields");
    expect_error("arrival,prompt,output\n-1,1,1\n", 2, "arrival");
    expect_error("arrival,prompt,output\n0,0,1\n", 2, "prompt");
    expect_error("arrival,prompt,output\n0,1,-4\n", 2, "output");
    expect_error("arrival,prompt,output\n0,1,99999999999999999999\n", 2, "output");
    expect_error("hello\n0,1,1\n", 1, "header");
    expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:17:03.97,1,1\n", 2, "timestamp");
    expect_error("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,1\n", 2, "fields");
    expect_error("", 1, "empty");
}

Test(sim_jobs, missing_file)
{
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, "/nonexistent/trace.csv", 1.0, 2048, err, sizeof err), PF_ERR_IO);
    cr_assert(strstr(err, "/nonexistent/trace.csv") != NULL, "%s", err);
}

/* Audit regression: a header with no jobs said "no job fits (rejected 0
 * longer than max_seq_len)", blaming a limit that rejected nothing. */
Test(sim_jobs, header_only_says_no_jobs)
{
    const char *p = write_tmp("arrival,prompt,output\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 1.0, 2048, err, sizeof err), PF_ERR_IO);
    cr_assert(strstr(err, p) != NULL, "%s", err);
    cr_assert(strstr(err, "no jobs") != NULL, "%s", err);
    cr_assert_null(strstr(err, "max_seq_len"), "%s", err);
    cr_assert_null(j.jobs);
    unlink(p);
}
