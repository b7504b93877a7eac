/* tests/test_cli.c - the flag parser and the report formats (tui/cli.h,
 * tui/report.h): values land in their targets, every kind of bad value is
 * refused with status 2 and a message naming the flag, and the three report
 * formats carry the same values. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>

#include "tui/cli.h"
#include "tui/report.h"

static const char *const colors[] = {"red", "green", "blue", NULL};

typedef struct {
    int n;
    long long seed;
    double w;
    const char *file;
    int color;
    int verbose;
    pf_opt opts[7];
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->n = 32;
    f->seed = 42;
    f->w = 0.05;
    f->color = 1;
    pf_opt o[] = {
        {"seqs", PF_OPT_INT, &f->n, 1, 1000, NULL, "N", "sequences", 0},
        {"seed", PF_OPT_I64, &f->seed, 0, 1e15, NULL, "S", "seed", 0},
        {"watermark", PF_OPT_DOUBLE, &f->w, 0, 1, NULL, "F", "reserve", 0},
        {"trace", PF_OPT_STRING, &f->file, 0, 0, NULL, "FILE", "trace", 0},
        {"color", PF_OPT_CHOICE, &f->color, 0, 0, colors, NULL, "colour", 0},
        {"verbose", PF_OPT_FLAG, &f->verbose, 0, 0, NULL, NULL, "talk", 0},
        {0},
    };
    memcpy(f->opts, o, sizeof o);
}

static int parse(fixture *f, int argc, char **argv)
{
    return pf_cli_parse("pagefault test", f->opts, argc, argv);
}

Test(cli, values_land_in_targets)
{
    fixture f;
    fixture_init(&f);
    char *argv[] = {"x", "--seqs", "7", "--seed=123456789012", "--watermark", "0.3",
                    "--trace", "a.csv", "--color", "blue", "--verbose"};
    cr_assert_eq(parse(&f, 11, argv), PF_CLI_OK);
    cr_assert_eq(f.n, 7);
    cr_assert_eq(f.seed, 123456789012LL);
    cr_assert_float_eq(f.w, 0.3, 1e-12);
    cr_assert_str_eq(f.file, "a.csv");
    cr_assert_eq(f.color, 2);
    cr_assert_eq(f.verbose, 1);
    cr_assert(pf_cli_find(f.opts, "seqs")->seen);
}

Test(cli, defaults_kept_when_absent)
{
    fixture f;
    fixture_init(&f);
    char *argv[] = {"x"};
    cr_assert_eq(parse(&f, 1, argv), PF_CLI_OK);
    cr_assert_eq(f.n, 32);
    cr_assert_eq(f.color, 1);
    cr_assert_not(pf_cli_find(f.opts, "seqs")->seen);
}

/* Each bad argument list must give PF_CLI_USAGE and name the flag. */
static void expect_usage(char **argv, int argc, const char *needle)
{
    fixture f;
    fixture_init(&f);
    cr_redirect_stderr();
    cr_assert_eq(parse(&f, argc, argv), PF_CLI_USAGE, "for %s", argv[1]);
    fflush(stderr);
    FILE *err = cr_get_redirected_stderr();
    char buf[512] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, err);
    cr_assert(n > 0);
    cr_assert(strstr(buf, needle), "message '%s' lacks '%s'", buf, needle);
    cr_assert_eq(strchr(buf, '\n'), buf + n - 1, "exactly one line: '%s'", buf);
}

Test(cli, out_of_range) { expect_usage((char *[]){"x", "--seqs", "0"}, 3, "--seqs: expected an integer in [1, 1000]"); }
Test(cli, garbage_int) { expect_usage((char *[]){"x", "--seqs", "12abc"}, 3, "got '12abc'"); }
Test(cli, garbage_double) { expect_usage((char *[]){"x", "--watermark", "nan"}, 3, "--watermark"); }
Test(cli, double_range) { expect_usage((char *[]){"x", "--watermark=1.5"}, 2, "[0, 1]"); }
Test(cli, missing_value) { expect_usage((char *[]){"x", "--seqs"}, 2, "--seqs: missing value"); }
Test(cli, bad_choice) { expect_usage((char *[]){"x", "--color", "pink"}, 3, "one of red|green|blue"); }
Test(cli, unknown_flag) { expect_usage((char *[]){"x", "--frobnicate"}, 2, "unknown flag '--frobnicate'"); }
Test(cli, positional) { expect_usage((char *[]){"x", "stray"}, 2, "unexpected argument 'stray'"); }
Test(cli, flag_with_value) { expect_usage((char *[]){"x", "--verbose=1"}, 2, "--verbose takes no value"); }
Test(cli, empty_string) { expect_usage((char *[]){"x", "--trace", ""}, 3, "--trace"); }
Test(cli, overflow) { expect_usage((char *[]){"x", "--seqs", "99999999999999999999999"}, 3, "--seqs"); }

Test(cli, help_is_reported)
{
    fixture f;
    fixture_init(&f);
    char *argv[] = {"x", "--seqs", "3", "--help"};
    cr_assert_eq(parse(&f, 4, argv), PF_CLI_HELP);
}

Test(cli, set_by_name_for_sweeps)
{
    fixture f;
    fixture_init(&f);
    cr_redirect_stderr();
    cr_assert_eq(pf_cli_set("p", f.opts, "watermark", "0.25"), PF_CLI_OK);
    cr_assert_float_eq(f.w, 0.25, 1e-12);
    cr_assert_eq(pf_cli_set("p", f.opts, "watermark", "2"), PF_CLI_USAGE);
    cr_assert_float_eq(f.w, 0.25, 1e-12, "a refused value leaves the old one");
    cr_assert_eq(pf_cli_set("p", f.opts, "nope", "1"), PF_CLI_USAGE);
}

/* ---- report ------------------------------------------------------------ */

static char *render(const pf_report *r, pf_fmt fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert_not_null(m);
    cr_assert_eq(pf_report_print(r, fmt, m), 0);
    fclose(m);
    return buf;
}

static pf_report *sample(void)
{
    pf_report *r = pf_report_new();
    pf_report_section(r, "config", "Configuration");
    pf_report_num(r, "block_size", "block size", 16, "%d", "tokens");
    pf_report_num(r, "util", "utilization", 0.987, "%.3f", NULL);
    pf_report_str(r, "model", "model", "llama3-70b, \"big\"");
    const char *keys[] = {"block", "reserved_mb"};
    const char *labels[] = {"Block", "Reserved (MB)"};
    pf_report_table(r, "sweep", "Block-size sweep", 2, keys, labels);
    pf_report_cell_num(r, 1, "%d");
    pf_report_cell_num(r, 10.5, "%.2f");
    pf_report_cell_num(r, 16, "%d");
    pf_report_cell_num(r, 0.0 / 0.0, "%.2f");
    return r;
}

Test(report, table_has_labels_and_values)
{
    pf_report *r = sample();
    char *t = render(r, PF_FMT_TABLE);
    cr_assert(strstr(t, "block size   16 tokens"), "%s", t);
    cr_assert(strstr(t, "\n\nBlock-size sweep\n"), "blank line between blocks: %s", t);
    cr_assert(strstr(t, "Reserved (MB)"));
    cr_assert(strstr(t, "10.50"));
    free(t);
    pf_report_free(r);
}

Test(report, csv_quotes_and_blocks)
{
    pf_report *r = sample();
    char *t = render(r, PF_FMT_CSV);
    cr_assert(strstr(t, "config,block_size,16\n"), "%s", t);
    cr_assert(strstr(t, "config,model,\"llama3-70b, \"\"big\"\"\"\n"), "%s", t);
    cr_assert(strstr(t, "\n\nblock,reserved_mb\n1,10.50\n16,nan\n"), "%s", t);
    free(t);
    pf_report_free(r);
}

Test(report, json_numbers_bare_strings_quoted)
{
    pf_report *r = sample();
    char *t = render(r, PF_FMT_JSON);
    cr_assert(strstr(t, "\"block_size\": 16"), "%s", t);
    cr_assert(strstr(t, "\"util\": 0.987"), "%s", t);
    cr_assert(strstr(t, "\"model\": \"llama3-70b, \\\"big\\\"\""), "%s", t);
    cr_assert(strstr(t, "{\"block\": 1, \"reserved_mb\": 10.50}"), "%s", t);
    cr_assert(strstr(t, "\"reserved_mb\": \"nan\""), "non-finite is not a bare number: %s", t);
    cr_assert_eq(t[0], '{');
    cr_assert(strstr(t, "}\n") && t[strlen(t) - 2] == '}');
    free(t);
    pf_report_free(r);
}

Test(cli, start_gives_exit_status_or_go)
{
    fixture f;
    fixture_init(&f);
    cr_redirect_stdout();
    cr_redirect_stderr();
    cr_assert_eq(pf_cli_start("p", "sum", f.opts, 3, (char *[]){"x", "--seqs", "5"}), PF_CLI_GO);
    cr_assert_eq(f.n, 5);
    cr_assert_eq(pf_cli_start("p", "sum", f.opts, 2, (char *[]){"x", "--seqs"}), 2);
    cr_assert_eq(pf_cli_start("p", "the summary", f.opts, 2, (char *[]){"x", "--help"}), 0);
    fflush(stdout);
    char buf[2048] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stdout());
    cr_assert(n > 0 && strstr(buf, "the summary") && strstr(buf, "--seqs N"), "help on stdout: %s", buf);
}
