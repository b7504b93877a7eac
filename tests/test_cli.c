/* tests/test_cli.c - the flag parser and the report formats (tui/cli.h,
 * tui/report.h): values land in their targets, every kind of bad value is
 * refused with status 2 and a message naming the flag, and the three report
 * formats carry the same values (CSV one rectangular table, JSON numbers in
 * full). Also the simulator's flag table (tui/simflags.h) walked bound by
 * bound against pf_sim_create, and its help. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/sim.h"
#include "tui/cli.h"
#include "tui/report.h"
#include "tui/simflags.h"

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
/* strtol/strtod would take these as 5, 16 and 8 */
Test(cli, leading_blank) { expect_usage((char *[]){"x", "--seqs", " 5"}, 3, "got ' 5'"); }
Test(cli, plus_sign) { expect_usage((char *[]){"x", "--seqs", "+5"}, 3, "got '+5'"); }
Test(cli, hex_int) { expect_usage((char *[]){"x", "--seqs", "0x10"}, 3, "got '0x10'"); }
Test(cli, hex_double) { expect_usage((char *[]){"x", "--watermark", "0x1p-3"}, 3, "got '0x1p-3'"); }
/* a value's control bytes (a newline, an escape sequence's ESC) are shown
 * as '?': the message stays one line and does not drive the terminal */
Test(cli, newline_in_value) { expect_usage((char *[]){"x", "--seqs", "1\n2"}, 3, "got '1?2'"); }
Test(cli, escape_in_choice) { expect_usage((char *[]){"x", "--color", "\x1b[31mred"}, 3, "got '?[31mred'"); }
Test(cli, delete_in_argument) { expect_usage((char *[]){"x", "stray\x7f"}, 2, "unexpected argument 'stray?'"); }

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

/* A small RFC 4180 reader: the number of fields of every record, or -1
 * for a malformed quote. Blank records count as 1 field of nothing. */
static int csv_records(const char *s, int *fields, int cap)
{
    int nrec = 0, nf = 1, inq = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (inq) {
            if (*s == '"' && s[1] == '"')
                s++;
            else if (*s == '"')
                inq = 0;
        } else if (*s == '"') {
            inq = 1;
        } else if (*s == ',') {
            nf++;
        } else if (*s == '\n') {
            if (nrec < cap)
                fields[nrec] = nf;
            nrec++;
            nf = 1;
        }
    }
    return inq ? -1 : nrec;
}

/* Issue 8 point 11: the CSV is ONE rectangular table (no "section,key,value"
 * block, no blank line, no second header): every record has the header's
 * number of fields; the key/value items are "section.key" columns repeated
 * on every row. */
Test(report, csv_is_one_rectangular_table)
{
    pf_report *r = sample();
    char *t = render(r, PF_FMT_CSV);
    int fields[16];
    int n = csv_records(t, fields, 16);
    cr_assert_eq(n, 3, "header + 2 rows:\n%s", t);
    for (int i = 0; i < n; i++)
        cr_assert_eq(fields[i], fields[0], "record %d has %d fields, header %d:\n%s", i, fields[i],
                     fields[0], t);
    cr_assert_null(strstr(t, "\n\n"), "no blank line: %s", t);
    const char *head = "block,reserved_mb,config.block_size,config.util,config.model\n";
    cr_assert(strncmp(t, head, strlen(head)) == 0, "%s", t);
    cr_assert(strstr(t, "\n1,10.5,16,0.987,\"llama3-70b, \"\"big\"\"\"\n"), "%s", t);
    cr_assert(strstr(t, "\n16,nan,16,0.987,"), "%s", t);
    free(t);
    pf_report_free(r);
}

/* Several tables: one table still, a `table` column names each row's
 * table, tables sharing a key share its column, other cells are empty. */
Test(report, csv_several_tables_get_a_table_column)
{
    pf_report *r = pf_report_new();
    pf_report_section(r, "config", "Configuration");
    pf_report_num(r, "seed", "seed", 42, "%.0f", NULL);
    const char *k1[] = {"block_size", "blocks"};
    pf_report_table(r, "sweep", "Sweep", 2, k1, NULL);
    pf_report_cell_num(r, 16, "%.0f");
    pf_report_cell_num(r, 11, "%.0f");
    const char *k2[] = {"block_size", "ms"};
    pf_report_table(r, "timing", "Timing", 2, k2, NULL);
    pf_report_cell_num(r, 32, "%.0f");
    pf_report_cell_num(r, 0.25, "%.2f");
    char *t = render(r, PF_FMT_CSV);
    cr_assert_str_eq(t, "block_size,blocks,ms,table,config.seed\n"
                        "16,11,,sweep,42\n"
                        "32,,0.25,timing,42\n");
    free(t);
    pf_report_free(r);
    /* no table at all: one row of the key/value items */
    r = pf_report_new();
    pf_report_section(r, "device", "Device");
    pf_report_str(r, "name", "GPU", "none");
    pf_report_num(r, "sms", "SMs", 132, "%.0f", NULL);
    t = render(r, PF_FMT_CSV);
    cr_assert_str_eq(t, "device.name,device.sms\nnone,132\n");
    free(t);
    pf_report_free(r);
}

/* Issue 8 point 12: machine formats carry every digit (the table keeps its
 * rounding), numbers are bare, non-finite values are null. */
Test(report, machine_formats_full_precision)
{
    pf_report *r = pf_report_new();
    pf_report_section(r, "s", "S");
    pf_report_num(r, "third", "third", 1.0 / 3.0, "%.2f", NULL);
    pf_report_num(r, "sum", "sum", 0.1 + 0.2, "%.1f", NULL);
    pf_report_num(r, "big", "big", 123456789.0, "%.3g", NULL);
    pf_report_num(r, "inf", "inf", 1.0 / 0.0, "%.1f", NULL);
    const char *k[] = {"watermark", "x"};
    pf_report_table(r, "t", "T", 2, k, NULL);
    pf_report_cell_num_text(r, 0.05, "0.050");
    pf_report_cell_num(r, 0.0 / 0.0, "%.1f");
    char *j = render(r, PF_FMT_JSON);
    cr_assert(strstr(j, "\"third\": 0.3333333333333333,"), "%s", j);
    cr_assert(strstr(j, "\"sum\": 0.30000000000000004,"), "%s", j);
    cr_assert(strstr(j, "\"big\": 123456789,"), "%s", j);
    cr_assert(strstr(j, "\"inf\": null"), "%s", j);
    cr_assert(strstr(j, "{\"watermark\": 0.05, \"x\": null}"), "%s", j);
    char *c = render(r, PF_FMT_CSV);
    cr_assert(strstr(c, "\n0.05,nan,0.3333333333333333,0.30000000000000004,123456789,inf\n"), "%s", c);
    char *tb = render(r, PF_FMT_TABLE);
    cr_assert(strstr(tb, "third  0.33\n"), "people keep the rounding: %s", tb);
    cr_assert(strstr(tb, "1.23e+08"), "%s", tb);
    cr_assert(strstr(tb, "0.050"), "the typed text: %s", tb);
    free(j);
    free(c);
    free(tb);
    pf_report_free(r);
}

Test(report, shortest_reads_back)
{
    const double v[] = {0.05, 0.1 + 0.2, 100, -0.5, 1e300, 5e-324, 9007199254740991.0, 1e17,
                        2.0 / 3.0, 123.456};
    const char *want[] = {"0.05", "0.30000000000000004", "100", "-0.5", "1e+300", "5e-324",
                          "9007199254740991", "1e+17", "0.6666666666666666", "123.456"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char buf[40];
        pf_report_shortest(buf, sizeof buf, v[i]);
        cr_assert_str_eq(buf, want[i]);
        cr_assert_eq(strtod(buf, NULL), v[i]);
    }
}

Test(report, json_numbers_bare_strings_quoted)
{
    pf_report *r = sample();
    char *t = render(r, PF_FMT_JSON);
    cr_assert(strstr(t, "\"block_size\": 16"), "%s", t);
    cr_assert(strstr(t, "\"util\": 0.987"), "%s", t);
    cr_assert(strstr(t, "\"model\": \"llama3-70b, \\\"big\\\"\""), "%s", t);
    cr_assert(strstr(t, "{\"block\": 1, \"reserved_mb\": 10.5}"), "%s", t);
    cr_assert(strstr(t, "\"reserved_mb\": null"), "non-finite is null: %s", t);
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

/* ---- the simulator's flag table against the simulator ------------------ */

/* pf_cli_set with stderr captured into msg (one message at most). */
static int set_captured(pf_opt *opts, const char *name, const char *value, char *msg, size_t len)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    cr_assert(saved >= 0 && tmp);
    dup2(fileno(tmp), 2);
    int rc = pf_cli_set("pagefault sim", opts, name, value);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(msg, 1, len - 1, tmp);
    msg[n] = '\0';
    fclose(tmp);
    return rc;
}

/* pf_sim_create on one tiny job with the flags' parameters (paged).
 * Returns 1 if the simulator accepts them, else 0 with its reason. */
static int sim_accepts(const pf_simflags *f, char *err, size_t len)
{
    pf_sim_params p;
    if (pf_simflags_params(NULL, f, &p) != 0) {
        snprintf(err, len, "pf_simflags_params refused the flags");
        return 0;
    }
    p.mode = PF_SIM_PAGED;
    pf_job job = {.arrival = 0.0, .prompt = 1, .output = 1, .group = -1};
    pf_jobs jobs = {&job, 1, 0};
    pf_sim *s = pf_sim_create(&p, &jobs, err, len);
    if (!s)
        return 0;
    pf_sim_destroy(s);
    return 1;
}

/* Flag bounds that are the command line's own (the simulator has none
 * there); each is defended in tui/simflags.c. Everything else must be the
 * simulator's bound exactly: the value one step beyond is refused by
 * pf_sim_create too. */
static int cli_only_bound(const char *name, int upper)
{
    static const char *const both[] = {"jobs",   "arrival-rate", "seed", "shared-prefix-tokens",
                                       "prefix-groups", "n", NULL};
    static const char *const up[] = {"stall-limit", "swap-blocks", "pingpong-window",
                                     "max-num-batched-tokens", "slo-ttft", "slo-tpot", NULL};
    for (int i = 0; both[i]; i++)
        if (!strcmp(name, both[i]))
            return 1;
    for (int i = 0; upper && up[i]; i++)
        if (!strcmp(name, up[i]))
            return 1;
    return 0;
}

/* Issue 8 point 15: help and validation agree. For every numeric flag of
 * `sim` and the dashboard: each bound is accepted by the parser AND by the
 * simulator; one step beyond each bound is refused at parse time with a
 * message naming the flag and the range; and where the simulator has the
 * bound, it refuses that value as well (so the two ranges are equal). */
Test(simflags, every_bound_accepted_one_step_beyond_refused)
{
    pf_simflags f0;
    pf_simflags_default(&f0, PF_ENGINE_DETERMINISTIC);
    pf_opt rows[PF_SIMFLAGS_NOPTS + 1];
    int n = pf_simflags_opts(&f0, rows, 1);
    cr_assert(n > 0 && n <= PF_SIMFLAGS_NOPTS);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].kind != PF_OPT_INT && rows[i].kind != PF_OPT_I64 && rows[i].kind != PF_OPT_DOUBLE)
            continue;
        const char *name = rows[i].name;
        for (int upper = 0; upper < 2; upper++) {
            double bound = upper ? rows[i].hi : rows[i].lo;
            double beyond = rows[i].kind == PF_OPT_DOUBLE
                                ? nextafter(bound, upper ? INFINITY : -INFINITY)
                                : bound + (upper ? 1 : -1);
            char text[48], msg[512], err[256];
            /* the bound itself: parser and simulator accept it */
            pf_simflags f;
            pf_simflags_default(&f, PF_ENGINE_DETERMINISTIC);
            pf_opt opts[PF_SIMFLAGS_NOPTS + 1];
            pf_simflags_opts(&f, opts, 1);
            opts[n] = (pf_opt){0};
            pf_report_shortest(text, sizeof text, bound);
            cr_assert_eq(set_captured(opts, name, text, msg, sizeof msg), PF_CLI_OK,
                         "--%s %s refused: %s", name, text, msg);
            cr_assert(sim_accepts(&f, err, sizeof err), "--%s %s passes the parser but the simulator "
                      "refuses it: %s", name, text, err);
            /* one step beyond: refused at parse time, naming the flag */
            pf_report_shortest(text, sizeof text, beyond);
            cr_assert_eq(set_captured(opts, name, text, msg, sizeof msg), PF_CLI_USAGE,
                         "--%s %s accepted", name, text);
            char want[64];
            snprintf(want, sizeof want, "--%s: expected", name);
            cr_assert(strstr(msg, want), "message names the flag: %s", msg);
            char lo[40], hi[40], range[96];
            pf_report_shortest(lo, sizeof lo, rows[i].lo);
            pf_report_shortest(hi, sizeof hi, rows[i].hi);
            snprintf(range, sizeof range, "[%s, %s]", lo, hi);
            cr_assert(strstr(msg, range), "message gives the range %s: %s", range, msg);
            /* the simulator's own bound is the same value */
            if (!cli_only_bound(name, upper)) {
                uintptr_t t = (uintptr_t)opts[i].target, p0 = (uintptr_t)&f.p;
                cr_assert(t >= p0 && t < p0 + sizeof f.p, "--%s is not a simulator parameter: "
                          "list its bound in cli_only_bound", name);
                if (rows[i].kind == PF_OPT_DOUBLE)
                    *(double *)opts[i].target = beyond;
                else
                    *(int *)opts[i].target = (int)beyond;
                cr_assert_not(sim_accepts(&f, err, sizeof err),
                              "the simulator accepts --%s %s: the flag's range is narrower than "
                              "the simulator's", name, text);
            }
            checked++;
        }
    }
    cr_assert_geq(checked, 2 * 14, "every numeric flag walked (%d bounds)", checked);
}

/* --help states that very range for every numeric flag, seeds included. */
Test(simflags, help_states_each_range)
{
    pf_simflags f;
    pf_simflags_default(&f, PF_ENGINE_DETERMINISTIC);
    pf_opt opts[PF_SIMFLAGS_NOPTS + 1];
    int n = pf_simflags_opts(&f, opts, 1);
    opts[n] = (pf_opt){0};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    pf_cli_help(m, "pagefault sim", "summary", opts);
    fclose(m);
    for (int i = 0; i < n; i++) {
        if (opts[i].kind != PF_OPT_INT && opts[i].kind != PF_OPT_I64 && opts[i].kind != PF_OPT_DOUBLE)
            continue;
        char flag[64], lo[40], hi[40], range[96];
        snprintf(flag, sizeof flag, "  --%s ", opts[i].name);
        char *line = strstr(buf, flag);
        cr_assert_not_null(line, "help lists --%s", opts[i].name);
        char *eol = strchr(line, '\n');
        pf_report_shortest(lo, sizeof lo, opts[i].lo);
        pf_report_shortest(hi, sizeof hi, opts[i].hi);
        /* a row that also takes words ends "; lo..hi or WORD]" */
        if (opts[i].choices && opts[i].choices[0])
            snprintf(range, sizeof range, "; %s..%s or %s]\n", lo, hi, opts[i].choices[0]);
        else
            snprintf(range, sizeof range, "; %s..%s]\n", lo, hi);
        cr_assert(eol && (size_t)(eol - line) + 1 >= strlen(range) &&
                      !strncmp(eol + 1 - strlen(range), range, strlen(range)),
                  "--%s help ends with '%s': %.*s", opts[i].name, range, (int)(eol - line), line);
    }
    free(buf);
}
