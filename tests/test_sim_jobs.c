/* tests/test_sim_jobs.c - jobs from the mix and from trace files
 * (sim/sim.h): both formats, arrivals in seconds, rejections, every kind
 * of malformed line answered with "FILE:LINE: what"; shared system prompts
 * (pf_jobs_add_prefix) and parallel samples (pf_jobs_fork). */
#include <criterion/criterion.h>
#include <limits.h>
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
        cr_assert(x->arrival == 0.0);
        cr_assert(x->priority >= 0 && x->priority <= 3);
        cr_assert_eq(x->group, -1);
        cr_assert_eq(x->shared, 0);
        cr_assert_eq(x->fork_of, 0);
    }
    pf_jobs k;
    cr_assert_eq(pf_jobs_generate(&k, 42, 300, pf_mix_seed(), 0.0, 2048), PF_OK);
    cr_assert_eq(memcmp(j.jobs, k.jobs, 300 * sizeof *j.jobs), 0);
    pf_jobs_free(&k);
    cr_assert_eq(pf_jobs_generate(&k, 42, 300, pf_mix_seed(), 4.0, 2048), PF_OK);
    /* request i at i / rate seconds */
    cr_assert_float_eq(k.jobs[3].arrival, 0.75, 1e-12);
    cr_assert_float_eq(k.jobs[4].arrival, 1.0, 1e-12);
    cr_assert_float_eq(k.jobs[299].arrival, 74.75, 1e-12);
    pf_jobs_free(&k);
    pf_jobs_free(&j);
    cr_assert_eq(pf_jobs_generate(&j, 1, 0, pf_mix_seed(), 0.0, 2048), PF_ERR_ARG);
}

Test(sim_jobs, our_csv_sorted_and_rejected)
{
    const char *p = write_tmp("arrival,prompt,output\n5,10,20\n0,100,3,2\n\n3,2000,100\r\n0,1,1\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 2048, err, sizeof err), PF_OK, "%s", err);
    cr_assert_eq(j.njobs, 3);
    cr_assert_eq(j.rejected, 1);
    cr_assert(j.jobs[0].arrival == 0.0);
    cr_assert_eq(j.jobs[0].prompt, 100); /* stable: file order among equal arrivals */
    cr_assert_eq(j.jobs[0].priority, 2);
    cr_assert_eq(j.jobs[1].prompt, 1);
    cr_assert(j.jobs[2].arrival == 5.0);
    pf_jobs_free(&j);
    cr_assert_eq(pf_jobs_load_trace(&j, p, 4096, err, sizeof err), PF_OK);
    cr_assert_eq(j.njobs, 4);
    cr_assert_eq(j.rejected, 0);
    pf_jobs_free(&j);
    unlink(p);
}

Test(sim_jobs, azure_format_maps_wall_clock_to_seconds)
{
    const char *p = write_tmp("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                              "2023-11-16 23:59:59.9900000,100,10\n"
                              "2023-11-17 00:00:00.0300000,200,0\n"
                              "2023-11-17 00:00:01.0000000,7000,20\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 2048, err, sizeof err), PF_OK, "%s", err);
    cr_assert_eq(j.njobs, 2);
    cr_assert_eq(j.rejected, 1);
    cr_assert(j.jobs[0].arrival == 0.0);
    cr_assert_float_eq(j.jobs[1].arrival, 0.04, 1e-9, "40 ms across midnight: %.9f", j.jobs[1].arrival);
    cr_assert_eq(j.jobs[1].output, 1, "zero generated tokens still takes one step");
    pf_jobs_free(&j);
    unlink(p);
}

static void expect_error(const char *text, int line, const char *what)
{
    const char *p = write_tmp(text);
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 2048, err, sizeof err), PF_ERR_IO, "accepted: %s", text);
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
    /* a field's control bytes are quoted as '?' (a trace's ESC sequence
     * drove the terminal the message was printed on) */
    expect_error("arrival,prompt,output\n0,\x1b[2J7,1\n", 2, "got '?[2J7'");
    expect_error("arrival,prompt,output\n\v\v1,1,1\n", 2, "got '??1'");
}

Test(sim_jobs, missing_file)
{
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, "/nonexistent/trace.csv", 2048, err, sizeof err), PF_ERR_IO);
    cr_assert(strstr(err, "/nonexistent/trace.csv") != NULL, "%s", err);
}

/* A device or pipe that never ends is refused at its first NUL byte, not
 * read until memory runs out (a fuzzer's /dev/zero grew to gigabytes before
 * the parser saw the NUL); /dev/urandom has one in its first chunk. */
Test(sim_jobs, endless_binary_input_refused_at_its_first_nul)
{
    const char *dev[] = {"/dev/zero", "/dev/urandom"};
    for (int i = 0; i < 2; i++) {
        pf_jobs j;
        char err[256];
        cr_assert_eq(pf_jobs_load_trace(&j, dev[i], 2048, err, sizeof err), PF_ERR_IO);
        cr_assert(strstr(err, dev[i]) == err && strstr(err, "NUL byte") != NULL, "%s", err);
        cr_assert_null(j.jobs);
    }
}

/* Audit regression: a header with no jobs said "no job fits (rejected 0
 * longer than max_seq_len)", blaming a limit that rejected nothing. */
Test(sim_jobs, header_only_says_no_jobs)
{
    const char *p = write_tmp("arrival,prompt,output\n");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, 2048, err, sizeof err), PF_ERR_IO);
    cr_assert(strstr(err, p) != NULL, "%s", err);
    cr_assert(strstr(err, "no jobs") != NULL, "%s", err);
    cr_assert_null(strstr(err, "max_seq_len"), "%s", err);
    cr_assert_null(j.jobs);
    unlink(p);
}

/* ---- issue 8 point 14: what real trace files look like ------------------ */

static pf_jobs load_ok(const char *text, int max_len)
{
    const char *p = write_tmp(text);
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, p, max_len, err, sizeof err), PF_OK, "%s\n%s", err,
                 text);
    unlink(p);
    return j;
}

/* A spreadsheet's UTF-8 byte order mark before the header. */
Test(sim_jobs, utf8_bom_accepted)
{
    pf_jobs j = load_ok("\xEF\xBB\xBF" "arrival,prompt,output\n0,10,5\n", 2048);
    cr_assert_eq(j.njobs, 1);
    cr_assert_eq(j.jobs[0].prompt, 10);
    pf_jobs_free(&j);
    j = load_ok("\xEF\xBB\xBF" "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10,5\n",
                2048);
    cr_assert_eq(j.njobs, 1);
    pf_jobs_free(&j);
}

/* Rows in any order: sorted by arrival, and time 0 is the earliest
 * timestamp wherever it is in the file (not the first row's). */
Test(sim_jobs, unsorted_azure_rows_time_zero_is_earliest)
{
    pf_jobs j = load_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16 18:00:01.000,300,1\n"
                        "2023-11-16 18:00:00.500,200,1\n"
                        "2023-11-16 18:00:00.000,100,1\n"
                        "2023-11-16 18:00:00.500,250,1\n",
                        2048);
    cr_assert_eq(j.njobs, 4);
    cr_assert_eq(j.jobs[0].prompt, 100);
    cr_assert(j.jobs[0].arrival == 0.0);
    cr_assert_eq(j.jobs[1].prompt, 200, "equal times keep file order");
    cr_assert_float_eq(j.jobs[1].arrival, 0.5, 1e-9);
    cr_assert_eq(j.jobs[2].prompt, 250);
    cr_assert_eq(j.jobs[3].prompt, 300);
    cr_assert_float_eq(j.jobs[3].arrival, 1.0, 1e-9);
    pf_jobs_free(&j);
    /* the earliest row may be one too long to keep: time 0 stays its own,
     * so arrivals do not move when --max-len changes */
    j = load_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                "2023-11-16 18:00:01.000,300,1\n"
                "2023-11-16 18:00:00.000,5000,1\n",
                2048);
    cr_assert_eq(j.njobs, 1);
    cr_assert_eq(j.rejected, 1);
    cr_assert_float_eq(j.jobs[0].arrival, 1.0, 1e-9);
    pf_jobs_free(&j);
    /* ours: unsorted seconds sorted */
    j = load_ok("arrival,prompt,output\n7,1,1\n2,2,1\n", 2048);
    cr_assert(j.jobs[0].arrival == 2.0);
    cr_assert(j.jobs[1].arrival == 7.0);
    pf_jobs_free(&j);
}

/* ISO 8601 as exporters write it: T, Z, +00:00, other offsets (to UTC). */
Test(sim_jobs, iso_timestamps)
{
    pf_jobs j = load_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                        "2023-11-16T18:00:00Z,1,1\n"
                        "2023-11-16T18:00:00.25+00:00,2,1\n"
                        "2023-11-16 20:00:01+02:00,3,1\n"
                        "2023-11-16T13:00:02-05:00,4,1\n"
                        "2023-11-16 18:00:03.000000000,5,1\n",
                        2048);
    cr_assert_eq(j.njobs, 5);
    const double want[] = {0.0, 0.25, 1.0, 2.0, 3.0};
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(j.jobs[i].prompt, i + 1);
        cr_assert_float_eq(j.jobs[i].arrival, want[i], 1e-9, "row %d: arrival %.9f", i, j.jobs[i].arrival);
    }
    pf_jobs_free(&j);
    /* leap day of a leap year is a real date */
    j = load_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-02-28 23:59:59,1,1\n2024-02-29 00:00:01,1,1\n",
                2048);
    cr_assert_float_eq(j.jobs[1].arrival, 2.0, 1e-9);
    pf_jobs_free(&j);
}

#define AZ "TIMESTAMP,ContextTokens,GeneratedTokens\n"

Test(sim_jobs, impossible_dates_refused)
{
    expect_error(AZ "2023-02-30 10:00:00,1,1\n", 2, "2023-02 has 28 days");
    expect_error(AZ "2023-02-29 10:00:00,1,1\n", 2, "impossible");
    expect_error(AZ "2023-04-31 10:00:00,1,1\n", 2, "30 days");
    expect_error(AZ "2023-11-16 24:00:00,1,1\n", 2, "impossible");
    expect_error(AZ "2023-11-16 23:60:00,1,1\n", 2, "impossible");
    expect_error(AZ "2023-00-10 10:00:00,1,1\n", 2, "month");
    expect_error(AZ "2023-11-16 10:00:00+25:00,1,1\n", 2, "offset");
    expect_error(AZ "2023-11-16 10:00:00 junk,1,1\n", 2, "bad timestamp");
    expect_error(AZ "2023-11-16,1,1\n", 2, "bad timestamp");
}

/* A NUL byte is refused as such, on its line, not read as the end of a
 * shorter line. */
Test(sim_jobs, nul_byte_refused)
{
    const char text[] = "arrival,prompt,output\n0,1,1\n0,1\0,1\n";
    snprintf(path, sizeof path, "/tmp/pf_test_trace_%d.csv", (int)getpid());
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_load_trace(&j, path, 2048, err, sizeof err), PF_ERR_IO);
    char want[96];
    snprintf(want, sizeof want, "%s:3: NUL byte", path);
    cr_assert(strstr(err, want), "'%s' should say '%s'", err, want);
    unlink(path);
}

/* Numbers out of range say so, with the range (not "must be >= 1"). */
Test(sim_jobs, out_of_range_numbers_say_so)
{
    expect_error("arrival,prompt,output\n0,2000000000,1\n", 2, "prompt tokens 2000000000 out of range [1, 1073741823]");
    expect_error("arrival,prompt,output\n0,1,99999999999999999999\n", 2, "output tokens 99999999999999999999 out of range");
    expect_error("arrival,prompt,output\n3000000000,1,1\n", 2, "arrival 3000000000 out of range");
    expect_error("arrival,prompt,output,priority\n0,1,1,2000000\n", 2, "priority 2000000 out of range [0, 1000000]");
    expect_error("arrival,prompt,output\n0,0,1\n", 2, "prompt tokens 0 out of range [1,");
    expect_error("arrival,prompt,output\n0,1.5,1\n", 2, "prompt tokens must be a whole number, got '1.5'");
    expect_error(AZ "2023-11-16 10:00:00,abc,1\n", 2, "prompt tokens must be a whole number");
}

/* Bytes in memory parse exactly like the file they came from (the sweep
 * path parses one read many times); quoted fields and CRLF are fine. */
Test(sim_jobs, parse_from_memory_equals_file)
{
    const char *text = AZ "\"2023-11-16 18:00:00.10\",\"10\",\"3\"\r\n2023-11-16 18:00:00.00,20,4\r\n";
    pf_jobs a = load_ok(text, 2048), b;
    char err[256];
    cr_assert_eq(pf_jobs_parse_trace(&b, "mem", text, strlen(text), 2048, err, sizeof err), PF_OK,
                 "%s", err);
    cr_assert_eq(a.njobs, 2);
    cr_assert_eq(b.njobs, a.njobs);
    cr_assert_eq(memcmp(a.jobs, b.jobs, (size_t)a.njobs * sizeof *a.jobs), 0);
    cr_assert_float_eq(b.jobs[1].arrival, 0.1, 1e-9);
    pf_jobs_free(&a);
    pf_jobs_free(&b);
    /* errors name the given name */
    cr_assert_eq(pf_jobs_parse_trace(&b, "mem", "arrival,prompt,output\n0,x,1\n", 28, 2048, err,
                                     sizeof err),
                 PF_ERR_IO);
    cr_assert(strncmp(err, "mem:2: ", 7) == 0, "%s", err);
    cr_assert_null(b.jobs);
}

/* Our CSV's arrival is seconds as written, decimals included (whole
 * microseconds), with no scale to pick; anything else is refused. */
Test(sim_jobs, our_arrivals_are_decimal_seconds)
{
    pf_jobs j = load_ok("arrival,prompt,output\n0.25,1,1\n3.000001,2,1\n12,3,1\n12.5,4,1\n", 2048);
    cr_assert_eq(j.njobs, 4);
    const double want[] = {0.25, 3.000001, 12.0, 12.5};
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(j.jobs[i].arrival, want[i], 1e-9, "row %d: %.9f", i, j.jobs[i].arrival);
    pf_jobs_free(&j);
    expect_error("arrival,prompt,output\n1e3,1,1\n", 2, "arrival must be a time in seconds");
    expect_error("arrival,prompt,output\n.,1,1\n", 2, "arrival must be a time in seconds");
    expect_error("arrival,prompt,output\n0:01,1,1\n", 2, "arrival must be a time in seconds");
}

/* --shared-prefix-tokens N --prefix-groups G: job i joins group i mod G;
 * its prompt holds the N shared tokens and one of its own; it still fits
 * max-len; N = 0 or G = 0 removes every group. */
Test(sim_jobs, add_prefix_groups)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 42, 200, pf_mix_seed(), 0.0, 2048), PF_OK);
    cr_assert_eq(pf_jobs_add_prefix(&j, 512, 3, 2048), PF_OK);
    int lengthened = 0;
    for (int i = 0; i < j.njobs; i++) {
        const pf_job *x = &j.jobs[i];
        cr_assert_eq(x->group, i % 3);
        cr_assert_eq(x->shared, 512);
        cr_assert_geq(x->prompt, 513);
        cr_assert_geq(x->output, 1);
        cr_assert_leq(x->prompt + x->output, 2048);
        lengthened += x->prompt == 513;
    }
    cr_assert_gt(lengthened, 0, "short prompts grew to hold the system prompt");
    cr_assert_eq(pf_jobs_add_prefix(&j, 0, 3, 2048), PF_OK);
    for (int i = 0; i < j.njobs; i++) {
        cr_assert_eq(j.jobs[i].group, -1);
        cr_assert_eq(j.jobs[i].shared, 0);
    }
    cr_assert_eq(pf_jobs_add_prefix(&j, -1, 3, 2048), PF_ERR_ARG);
    cr_assert_eq(pf_jobs_add_prefix(&j, 16, -1, 2048), PF_ERR_ARG);
    /* a system prompt as long as max-len leaves no room: no group */
    cr_assert_eq(pf_jobs_add_prefix(&j, 2047, 2, 2048), PF_OK);
    cr_assert_eq(j.jobs[0].group, -1);
    pf_jobs_free(&j);
}

/* Audit regression: a system prompt of INT_MAX tokens wrapped the room
 * check (shared + 2 overflowed), so every job joined a group with a
 * prompt of INT_MIN tokens. It cannot fit: no job changes. */
Test(sim_jobs, add_prefix_huge_shared_count_keeps_the_jobs)
{
    pf_jobs j, before;
    cr_assert_eq(pf_jobs_generate(&j, 42, 50, pf_mix_seed(), 0.0, 2048), PF_OK);
    cr_assert_eq(pf_jobs_generate(&before, 42, 50, pf_mix_seed(), 0.0, 2048), PF_OK);
    const int huge[] = {INT_MAX, INT_MAX - 1, 2047};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(pf_jobs_add_prefix(&j, huge[k], 2, 2048), PF_OK);
        for (int i = 0; i < j.njobs; i++) {
            cr_assert_eq(j.jobs[i].group, -1, "shared %d, job %d", huge[k], i);
            cr_assert_eq(j.jobs[i].shared, 0);
            cr_assert_eq(j.jobs[i].prompt, before.jobs[i].prompt, "shared %d, job %d", huge[k], i);
            cr_assert_eq(j.jobs[i].output, before.jobs[i].output);
        }
    }
    pf_jobs_free(&j);
    pf_jobs_free(&before);
}

/* --n K: every job becomes K samples arriving together, the first an
 * original, the others pointing at it (fork_of = 1 + its index). */
Test(sim_jobs, fork_into_samples)
{
    pf_jobs j;
    cr_assert_eq(pf_jobs_generate(&j, 7, 50, pf_mix_seed(), 2.0, 2048), PF_OK);
    pf_jobs orig;
    cr_assert_eq(pf_jobs_generate(&orig, 7, 50, pf_mix_seed(), 2.0, 2048), PF_OK);
    cr_assert_eq(pf_jobs_fork(&j, 1), PF_OK);
    cr_assert_eq(j.njobs, 50);
    cr_assert_eq(pf_jobs_fork(&j, 4), PF_OK);
    cr_assert_eq(j.njobs, 200);
    for (int i = 0; i < 50; i++)
        for (int k = 0; k < 4; k++) {
            const pf_job *x = &j.jobs[i * 4 + k];
            cr_assert_eq(x->sample, k);
            cr_assert_eq(x->fork_of, k == 0 ? 0 : i * 4 + 1);
            cr_assert_eq(x->prompt, orig.jobs[i].prompt);
            cr_assert_eq(x->output, orig.jobs[i].output);
            cr_assert(x->arrival == orig.jobs[i].arrival);
        }
    cr_assert_eq(pf_jobs_fork(&j, 0), PF_ERR_ARG);
    cr_assert_eq(pf_jobs_fork(&j, 100000000), PF_ERR_ARG, "above PF_JOBS_MAX");
    cr_assert_eq(j.njobs, 200, "a refused fork changes nothing");
    pf_jobs_free(&j);
    pf_jobs_free(&orig);
}

/* The synthetic Azure-shaped trace: parses, has the asked size and prompt
 * cap (the last request exactly at it), the same bytes for the same seed,
 * other bytes for another, and refuses bad arguments. */
Test(sim_jobs, azure_like_trace)
{
    size_t n1, n2, n3;
    char *a = pf_jobs_azure_like(500, 3000, 7, &n1), *b = pf_jobs_azure_like(500, 3000, 7, &n2);
    char *c = pf_jobs_azure_like(500, 3000, 8, &n3);
    cr_assert(a && b && c);
    cr_assert(n1 == n2 && memcmp(a, b, n1) == 0, "same seed, same bytes");
    cr_assert(n1 != n3 || memcmp(a, c, n1) != 0, "another seed, other bytes");
    pf_jobs j;
    char err[256];
    cr_assert_eq(pf_jobs_parse_trace(&j, "azure-like", a, n1, 8192, err, sizeof err), PF_OK, "%s", err);
    cr_assert_eq(j.njobs, 500);
    int maxp = 0;
    for (int i = 0; i < j.njobs; i++) {
        cr_assert(j.jobs[i].prompt >= 100 && j.jobs[i].prompt <= 3000);
        cr_assert(j.jobs[i].output >= 1 && j.jobs[i].output <= 2000);
        cr_assert(j.jobs[i].arrival >= 0.0 && j.jobs[i].arrival < 3600.0 * 2);
        if (j.jobs[i].prompt > maxp)
            maxp = j.jobs[i].prompt;
    }
    cr_assert_eq(maxp, 3000, "the cap is reached");
    pf_jobs_free(&j);
    free(a);
    free(b);
    free(c);
    size_t len;
    cr_assert_null(pf_jobs_azure_like(0, 3000, 1, &len));
    cr_assert_null(pf_jobs_azure_like(10, 100, 1, &len));
}
