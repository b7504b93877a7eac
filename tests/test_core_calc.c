/* tests/test_core_calc.c - `pagefault calc` end to end: runs the built
 * binary (path PF_PAGEFAULT_BIN from CMake) and checks exit codes, that
 * errors print one line on stderr naming the flag and nothing on stdout,
 * and that the seed's numbers appear in table, CSV and JSON form. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PF_PAGEFAULT_BIN
#error "PF_PAGEFAULT_BIN must name the pagefault binary"
#endif

typedef struct {
    int status; /* exit status, or -1 if it did not exit normally */
    char out[65536], err[4096];
} run_result;

/* Read a whole file into buf (NUL-terminated, truncated to cap - 1). */
static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

static void run_argv(run_result *r, char **argv);

/* Run `pagefault calc ARGS...` (NULL-terminated) with stdout and stderr in
 * temporary files. */
static void run_calc(run_result *r, ...)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = PF_PAGEFAULT_BIN;
    argv[argc++] = "calc";
    va_list ap;
    va_start(ap, r);
    for (char *a; (a = va_arg(ap, char *)) != NULL && argc < 63;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    run_argv(r, argv);
}

/* argv[0] is the binary; NULL-terminated. */
static void run_argv(run_result *r, char **argv)
{

    char out_path[] = "/tmp/pf_calc_out_XXXXXX", err_path[] = "/tmp/pf_calc_err_XXXXXX";
    int fo = mkstemp(out_path), fe = mkstemp(err_path);
    cr_assert(fo >= 0 && fe >= 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    close(fo);
    close(fe);
    slurp(out_path, r->out, sizeof r->out);
    slurp(err_path, r->err, sizeof r->err);
    unlink(out_path);
    unlink(err_path);
    cr_assert_neq(r->status, 127, "could not run %s", PF_PAGEFAULT_BIN);
}

static run_result res; /* large: keep it off the stack */

#define HAS(hay, needle) cr_assert(strstr((hay), (needle)) != NULL, "missing '%s' in:\n%s", (needle), (hay))

/* Field `row` (0 = first data row) of column `col` of a CSV text with a
 * header line, into buf; fails the test when there is none. Plain fields
 * only (no quotes) in the columns asked for. */
static void csv_get(const char *csv, const char *col, int row, char *buf, size_t len)
{
    const char *eol = strchr(csv, '\n');
    cr_assert_not_null(eol);
    int idx = -1, k = 0;
    for (const char *p = csv; p < eol; k++) {
        const char *e = memchr(p, ',', (size_t)(eol - p));
        if (!e)
            e = eol;
        if ((size_t)(e - p) == strlen(col) && !strncmp(p, col, (size_t)(e - p)))
            idx = k;
        p = e + 1;
    }
    cr_assert_geq(idx, 0, "no column %s in:\n%s", col, csv);
    const char *line = eol + 1;
    for (int i = 0; i < row; i++) {
        line = strchr(line, '\n');
        cr_assert_not_null(line);
        line++;
    }
    /* walk fields, honouring quotes, to field idx */
    const char *p = line;
    for (int f = 0; f < idx; f++) {
        int inq = 0;
        for (; *p && (inq || (*p != ',' && *p != '\n')); p++)
            if (*p == '"')
                inq = !inq;
        cr_assert_eq(*p, ',', "row %d too short", row);
        p++;
    }
    size_t n = strcspn(p, ",\n");
    cr_assert_lt(n, len);
    memcpy(buf, p, n);
    buf[n] = '\0';
}

#define CSV_IS(csv, col, row, want)                                                                \
    do {                                                                                           \
        char v_[128];                                                                              \
        csv_get((csv), (col), (row), v_, sizeof v_);                                               \
        cr_assert_str_eq(v_, (want), "%s row %d", (col), (row));                                   \
    } while (0)

Test(calc, default_run_prints_every_section)
{
    run_calc(&res, NULL);
    cr_assert_eq(res.status, 0, "stderr: %s", res.err);
    cr_assert_str_empty(res.err);
    HAS(res.out, "Configuration");
    HAS(res.out, "512 B");         /* seed bytes per token */
    HAS(res.out, "33.55 MB");      /* naive reserved: 32 x 2048 x 512 */
    HAS(res.out, "Block-size sweep");
    HAS(res.out, "expected (B-1)/2");
    cr_assert(strstr(res.out, "Model sizing") == NULL, "model section only with --model");
}

Test(calc, worked_example_table)
{
    run_calc(&res, "--lengths", "1,16,17,100", NULL);
    cr_assert_eq(res.status, 0, "stderr: %s", res.err);
    /* "blocks used  ...  11" and "internal fragmentation ... 42 tokens" */
    char *line = strstr(res.out, "blocks used");
    cr_assert_not_null(line);
    cr_assert_eq(strtol(line + strlen("blocks used"), NULL, 10), 11);
    line = strstr(res.out, "internal fragmentation ");
    cr_assert_not_null(line);
    cr_assert_eq(strtol(line + strlen("internal fragmentation "), NULL, 10), 42);
    HAS(res.out, "10.50 tokens"); /* 42 / 4 measured */
    HAS(res.out, "7.50 tokens");  /* (16-1)/2 expected */
}

Test(calc, worked_example_json_and_csv)
{
    run_calc(&res, "--lengths", "1,16,17,100", "--format", "json", NULL);
    cr_assert_eq(res.status, 0);
    HAS(res.out, "\"blocks\": 11");
    HAS(res.out, "\"frag_tokens\": 42");
    HAS(res.out, "\"tokens\": 134");
    HAS(res.out, "\"frag_per_seq\": 10.5,");
    cr_assert_eq(res.out[0], '{');
    run_calc(&res, "--lengths", "1,16,17,100", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0);
    cr_assert(strncmp(res.out, "block_size,blocks,reserved_mb,", 30) == 0, "%s", res.out);
    for (int row = 0; row < 4; row++) {
        CSV_IS(res.out, "utilization.blocks", row, "11");
        CSV_IS(res.out, "utilization.frag_tokens", row, "42");
    }
}

Test(calc, llama3_70b_sizing)
{
    run_calc(&res, "--model", "llama3-70b", "--budget-gb", "80", "--max-len", "8192", "--mean-len",
             "2000", NULL);
    cr_assert_eq(res.status, 0, "stderr: %s", res.err);
    HAS(res.out, "Model sizing");
    HAS(res.out, "327680 B");
    HAS(res.out, "320.00 KiB");
    char *line = strstr(res.out, "sequences reserved at max length");
    cr_assert_not_null(line);
    cr_assert_eq(strtol(line + strlen("sequences reserved at max length"), NULL, 10), 29);
    line = strstr(res.out, "paged sequences at mean length");
    cr_assert_not_null(line);
    cr_assert_eq(strtol(line + strlen("paged sequences at mean length"), NULL, 10), 122);

    run_calc(&res, "--model", "llama3-70b", "--budget-gb", "80", "--max-len", "8192", "--mean-len",
             "2000", "--format", "json", NULL);
    cr_assert_eq(res.status, 0);
    HAS(res.out, "\"bytes_per_token\": 327680");
    HAS(res.out, "\"naive_seqs\": 29");
    HAS(res.out, "\"paged_seqs\": 122");
    HAS(res.out, "\"ratio\": 4.206"); /* 122 / 29, in full */
}

Test(calc, custom_model_and_presets)
{
    run_calc(&res, "--model", "custom", "--layers", "32", "--kv-heads", "8", "--head-dim", "128",
             "--dtype-bytes", "2", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0, "stderr: %s", res.err);
    CSV_IS(res.out, "model.bytes_per_token", 0, "131072");
    run_calc(&res, "--model", "llama2-7b", "--format", "csv", NULL);
    CSV_IS(res.out, "model.bytes_per_token", 0, "524288");
    run_calc(&res, "--model", "seed", "--format", "csv", NULL);
    CSV_IS(res.out, "model.bytes_per_token", 3, "512");
    /* a preset with a shape flag on top: fp8 KV halves the bytes */
    run_calc(&res, "--model", "llama3-70b", "--dtype-bytes", "1", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0);
    CSV_IS(res.out, "model.bytes_per_token", 0, "163840");
    HAS(res.out, "(modified)");
}

Test(calc, same_seed_same_output_other_seed_differs)
{
    static char first[65536];
    run_calc(&res, "--seed", "7", "--seqs", "100", NULL);
    cr_assert_eq(res.status, 0);
    strcpy(first, res.out);
    run_calc(&res, "--seed", "7", "--seqs", "100", NULL);
    cr_assert_str_eq(res.out, first);
    run_calc(&res, "--seed", "8", "--seqs", "100", NULL);
    cr_assert_str_neq(res.out, first);
}

Test(calc, sweep_sizes_flag)
{
    run_calc(&res, "--lengths", "1,16,17,100", "--sweep-sizes", "8,32", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0, "stderr: %s", res.err);
    /* B = 8: blocks 1 + 2 + 3 + 13 = 19; B = 32: 1 + 1 + 1 + 4 = 7 */
    HAS(res.out, "\n8,19,");
    HAS(res.out, "\n32,7,");
    cr_assert(strstr(res.out, "\n256,") == NULL, "only the sizes asked for");
}

Test(calc, help_lists_every_flag)
{
    run_calc(&res, "--help", NULL);
    cr_assert_eq(res.status, 0);
    const char *flags[] = {"--seqs", "--seed", "--model", "--budget-gb", "--max-len", "--mean-len",
                           "--layers", "--kv-heads", "--head-dim", "--dtype-bytes", "--block-size",
                           "--pool-blocks", "--lengths", "--sweep-sizes", "--naive-reserve",
                           "--prompts", "--format", NULL};
    for (int i = 0; flags[i]; i++)
        HAS(res.out, flags[i]);
}

/* Every bad input: status 2, nothing on stdout, one line on stderr that
 * names the flag at fault. */
Test(calc, usage_errors)
{
    struct {
        const char *args[10];
        const char *names;
    } cases[] = {
        {{"--seqs", "0"}, "--seqs"},
        {{"--seqs", "abc"}, "--seqs"},
        {{"--seqs", "12x"}, "--seqs"},
        {{"--seqs"}, "--seqs"},
        {{"--seed", "-1"}, "--seed"},
        {{"--model", "gpt5"}, "--model"},
        {{"--model", "custom", "--layers", "32", "--kv-heads", "8", "--head-dim", "128"},
         "--dtype-bytes"},
        {{"--model", "custom"}, "--layers"},
        {{"--model", "llama3-70b", "--budget-gb", "0"}, "--budget-gb"},
        {{"--model", "llama3-70b", "--budget-gb", "nan"}, "--budget-gb"},
        {{"--budget-gb", "80"}, "--budget-gb"},
        {{"--mean-len", "2000"}, "--mean-len"},
        {{"--kv-heads", "8"}, "--kv-heads"},
        {{"--max-len", "0"}, "--max-len"},
        {{"--model", "llama3-8b", "--mean-len", "-5"}, "--mean-len"},
        {{"--layers", "0", "--model", "custom"}, "--layers"},
        {{"--head-dim", "99999", "--model", "custom"}, "--head-dim"},
        {{"--dtype-bytes", "3.5", "--model", "custom"}, "--dtype-bytes"},
        {{"--block-size", "0"}, "--block-size"},
        {{"--block-size", "100000"}, "--block-size"},
        {{"--pool-blocks", "-1"}, "--pool-blocks"},
        {{"--lengths", "1,16,,17"}, "--lengths"},
        {{"--lengths", "0"}, "--lengths"},
        {{"--lengths", ""}, "--lengths"},
        {{"--lengths", "5", "--seqs", "3"}, "--lengths"},
        {{"--sweep-sizes", "16,abc"}, "--sweep-sizes"},
        {{"--sweep-sizes", "70000"}, "--sweep-sizes"},
        {{"--prompts", "1,2"}, "--prompts"},
        {{"--lengths", "5,6", "--prompts", "1"}, "--prompts"},
        {{"--lengths", "5,6", "--prompts", "1,2,3"}, "--prompts"},
        {{"--lengths", "5,6", "--prompts", "6,2"}, "--prompts"},
        {{"--lengths", "5,6", "--prompts", "0,2"}, "--prompts"},
        {{"--lengths", "5,6", "--prompts", "x"}, "--prompts"},
        {{"--format", "xml"}, "--format"},
        {{"--format"}, "--format"},
        {{"--bogus"}, "--bogus"},
        {{"positional"}, "positional"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *a = cases[i].args;
        run_calc(&res, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], NULL);
        cr_assert_eq(res.status, 2, "case %zu (%s %s): status %d", i, a[0], a[1] ? a[1] : "",
                     res.status);
        cr_assert_str_empty(res.out, "case %zu: stdout not empty: %s", i, res.out);
        HAS(res.err, cases[i].names);
        char *nl = strchr(res.err, '\n');
        cr_assert(nl && nl[1] == '\0', "case %zu: not exactly one line: %s", i, res.err);
        HAS(res.err, "pagefault calc: ");
    }
}

/* Issue 8 point 11: every CSV calc prints is one rectangular table (the
 * header's number of fields on every line, no blank line, no second
 * header), the configuration repeated on each row. */
Test(calc, csv_is_one_rectangular_table)
{
    const char *cases[][8] = {
        {NULL},
        {"--model", "llama3-70b", NULL},
        {"--lengths", "1,16,17,100", "--sweep-sizes", "8", NULL},
        /* issue 9: the Figure 2 rows and the new flag and presets */
        {"--lengths", "1,16,17,100", "--naive-reserve", "pow2", "--model", "mistral-7b", NULL},
        {"--naive-reserve", "oracle", "--model", "qwen2.5-7b", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *const *a = cases[c];
        run_calc(&res, "--format", "csv", a[0], a[1], a[2], a[3], a[4], a[5], NULL);
        cr_assert_eq(res.status, 0, "case %zu: %s", c, res.err);
        int header = -1, lines = 0, nf = 1, inq = 0;
        for (const char *p = res.out; *p; p++) {
            if (*p == '"')
                inq = !inq;
            else if (!inq && *p == ',')
                nf++;
            else if (!inq && *p == '\n') {
                cr_assert_gt(nf + (p > res.out && p[-1] != '\n'), 1, "case %zu: blank line", c);
                if (header < 0)
                    header = nf;
                cr_assert_eq(nf, header, "case %zu line %d: %d fields, header %d\n%s", c, lines + 1,
                             nf, header, res.out);
                lines++;
                nf = 1;
            }
        }
        cr_assert_geq(lines, 2, "case %zu: a header and rows", c);
        cr_assert_null(strstr(res.out, "section,key,value"), "case %zu", c);
        HAS(res.out, ",config.bytes_per_token,");
    }
}

/* The neighbouring double of v (finite) upwards or downwards: nextafter,
 * without libm (this suite links none). */
static double step_double(double v, int up)
{
    if (v == 0)
        return up ? 5e-324 : -5e-324;
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    b += ((v > 0) == (up != 0)) ? 1 : (uint64_t)-1;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* Issue 8 point 15 for calc: every numeric flag's help states
 * "[default; lo..hi]", and the program agrees: each bound runs (exit 0),
 * one step beyond each is refused (exit 2, nothing on stdout, one line
 * naming the flag). Flags are read from --help itself, so a new flag is
 * walked too. Run with --model so that model-only flags are legal. */
Test(calc, help_ranges_are_what_is_accepted)
{
    static char help[65536];
    run_calc(&res, "--help", NULL);
    cr_assert_eq(res.status, 0);
    strcpy(help, res.out);
    int walked = 0;
    for (char *line = strstr(help, "\n  --"); line; line = strstr(line + 1, "\n  --")) {
        char name[64], metavar[64];
        if (sscanf(line + 5, "%63s %63s", name, metavar) != 2)
            continue;
        char *eol = strchr(line + 1, '\n');
        char *open = NULL;
        for (char *q = line + 1; q < eol; q++)
            if (*q == '[')
                open = q;
        char lo[48], hi[48];
        if (!open || sscanf(open, "[%*[^;]; %47[^.]..%47[^]]]", lo, hi) != 2)
            continue; /* not a numeric flag */
        /* integers step by one; real-valued flags (metavar F) by the
         * nearest double */
        int real = !strcmp(metavar, "F");
        for (int upper = 0; upper < 2; upper++) {
            const char *b = upper ? hi : lo;
            double v = strtod(b, NULL);
            char flag[80], beyond[48];
            snprintf(flag, sizeof flag, "--%s", name);
            if (real)
                snprintf(beyond, sizeof beyond, "%.17g", step_double(v, upper));
            else
                snprintf(beyond, sizeof beyond, "%.0f", v + (upper ? 1 : -1));
            run_calc(&res, "--model", "llama3-8b", "--seqs", "4", "--format", "csv", flag, b, NULL);
            if (!strcmp(name, "seqs")) /* --seqs given twice: the last wins */
                run_calc(&res, "--model", "llama3-8b", "--format", "csv", flag, b, NULL);
            cr_assert_eq(res.status, 0, "%s %s is in the help's range but fails: %s", flag, b, res.err);
            run_calc(&res, "--model", "llama3-8b", "--format", "csv", flag, beyond, NULL);
            cr_assert_eq(res.status, 2, "%s %s is outside the help's range but ran", flag, beyond);
            cr_assert_str_empty(res.out);
            HAS(res.err, flag);
            char *nl = strchr(res.err, '\n');
            cr_assert(nl && nl[1] == '\0', "one line: %s", res.err);
            walked++;
        }
    }
    cr_assert_geq(walked, 2 * 10, "numeric flags walked: %d", walked);
}

/* ---- Issue 9 point 3: fair naive baselines and the Figure 2 split -------- */

/* Column `col` of data row `row` as a number (the field must read whole). */
static double csv_num(const char *csv, const char *col, int row)
{
    char buf[128], *end;
    csv_get(csv, col, row, buf, sizeof buf);
    double v = strtod(buf, &end);
    cr_assert(end != buf && *end == '\0', "%s row %d: '%s' is not a number", col, row, buf);
    return v;
}

/* Data rows of a CSV text (lines after the header). */
static int csv_rows(const char *csv)
{
    int lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    return lines - 1;
}

/* Indices of the data rows whose `table` column is `name`, into rows[]
 * (at most cap); returns how many. */
static int csv_table_rows(const char *csv, const char *name, int *rows, int cap)
{
    int n = 0, total = csv_rows(csv);
    for (int i = 0; i < total && n < cap; i++) {
        char t[64];
        csv_get(csv, "table", i, t, sizeof t);
        if (!strcmp(t, name))
            rows[n++] = i;
    }
    return n;
}

/* The row of the fig2 table for (view, layout); fails when absent. */
static int fig2_row(const char *csv, const char *view, const char *layout)
{
    int rows[16];
    int n = csv_table_rows(csv, "fig2", rows, 16);
    for (int i = 0; i < n; i++) {
        char v[32], l[32];
        csv_get(csv, "view", rows[i], v, sizeof v);
        csv_get(csv, "layout", rows[i], l, sizeof l);
        if (!strcmp(v, view) && !strcmp(l, layout))
            return rows[i];
    }
    cr_assert_fail("no fig2 row %s / %s in:\n%s", view, layout, csv);
    return -1;
}

static int close_to(double a, double b)
{
    double d = a > b ? a - b : b - a;
    double m = (a > 0 ? a : -a) > (b > 0 ? b : -b) ? (a > 0 ? a : -a) : (b > 0 ? b : -b);
    return d <= 1e-9 * (m > 1 ? m : 1);
}

Test(calc, naive_reserve_flag_is_validated)
{
    const char *bad[][3] = {
        {"--naive-reserve", "maximum", NULL},
        {"--naive-reserve", "", NULL},
        {"--naive-reserve", "paged", NULL}, /* paged is the other side, not a naive policy */
        {"--naive-reserve", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_calc(&res, bad[i][0], bad[i][1], NULL);
        cr_assert_eq(res.status, 2, "case %zu: status %d", i, res.status);
        cr_assert_str_empty(res.out, "case %zu: stdout: %s", i, res.out);
        HAS(res.err, "pagefault calc: --naive-reserve");
        char *nl = strchr(res.err, '\n');
        cr_assert(nl && nl[1] == '\0', "case %zu: not one line: %s", i, res.err);
    }
    run_calc(&res, "--help", NULL);
    HAS(res.out, "--naive-reserve max|pow2|oracle");
    HAS(res.out, "PagedAttention");
}

/* The worked example, lengths 1, 16, 17, 100 with max-len 2048. By hand:
 * max reserves 4 x 2048 = 8192 tokens; pow2 reserves 1 + 16 + 32 + 128 =
 * 177; oracle reserves the lengths themselves, 134; paged 11 x 16 = 176. */
Test(calc, pow2_and_oracle_reserve_less_than_max)
{
    static const struct {
        const char *policy;
        const char *reserved;
        const char *util; /* 134 / reserved, in full */
    } want[] = {{"max", "8192", "1.6357421875"}, {"pow2", "177", NULL}, {"oracle", "134", "100"}};
    for (int i = 0; i < 3; i++) {
        run_calc(&res, "--lengths", "1,16,17,100", "--naive-reserve", want[i].policy, "--format",
                 "csv", NULL);
        cr_assert_eq(res.status, 0, "%s: %s", want[i].policy, res.err);
        CSV_IS(res.out, "config.naive_reserve", 0, want[i].policy);
        CSV_IS(res.out, "utilization.naive_reserved_tokens", 0, want[i].reserved);
        CSV_IS(res.out, "utilization.paged_reserved_tokens", 0, "176");
        if (want[i].util)
            CSV_IS(res.out, "utilization.util_naive_pct", 0, want[i].util);
        double savings = csv_num(res.out, "utilization.savings", 0);
        cr_assert(close_to(savings, strtod(want[i].reserved, NULL) / 176.0), "%s savings %g",
                  want[i].policy, savings);
    }
    /* the table names the policy it used */
    run_calc(&res, "--lengths", "1,16,17,100", "--naive-reserve", "pow2", NULL);
    HAS(res.out, "Utilization (naive pow2 vs paged)");
    HAS(res.out, "naive capacity under pow2");
}

/* Model sizing follows the policy: Llama-3-70B, 80 GB, max-len 8192, mean
 * 2000. max: 80e9 / (8192 x 327680) = 29.8 -> 29; pow2 reserves 2048:
 * 80e9 / (2048 x 327680) = 119.2 -> 119; oracle reserves 2000: 122.07 ->
 * 122, the same as paged (2000 is a whole number of 16-token blocks). */
Test(calc, model_sizing_follows_the_policy)
{
    static const struct {
        const char *policy, *reserve, *seqs;
    } want[] = {{"max", "8192", "29"}, {"pow2", "2048", "119"}, {"oracle", "2000", "122"}};
    for (int i = 0; i < 3; i++) {
        run_calc(&res, "--model", "llama3-70b", "--budget-gb", "80", "--max-len", "8192",
                 "--mean-len", "2000", "--naive-reserve", want[i].policy, "--format", "csv", NULL);
        cr_assert_eq(res.status, 0, "%s: %s", want[i].policy, res.err);
        CSV_IS(res.out, "model.max_len", 0, want[i].reserve);
        CSV_IS(res.out, "model.naive_seqs", 0, want[i].seqs);
        CSV_IS(res.out, "model.paged_seqs", 0, "122");
    }
}

/* Every row of the Figure 2 table sums to 100%, for each view and layout,
 * on several workloads (one with a length past max-len, which naive counts
 * clamped); 8 rows: {final, lifetime} x {naive max, pow2, oracle, paged}. */
Test(calc, fig2_rows_sum_to_100)
{
    const char *cases[][8] = {
        {NULL},
        {"--lengths", "1,16,17,100", NULL},
        {"--seqs", "500", "--seed", "3", "--block-size", "64", NULL},
        {"--lengths", "5,3000,700", "--max-len", "2048", NULL},
        {"--lengths", "2147483647,1", "--block-size", "1", NULL},
        /* the largest sizes the flags accept: the closed forms must not overflow (UBSan) */
        {"--lengths", "2147483647,16777216", "--prompts", "1,16777216", "--block-size", "65536"},
        {"--lengths", "2147483647,7", "--prompts", "2147483646,3", "--max-len", "16777216"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *const *a = cases[c];
        run_calc(&res, "--format", "csv", a[0], a[1], a[2], a[3], a[4], a[5], NULL);
        cr_assert_eq(res.status, 0, "case %zu: %s", c, res.err);
        int rows[16];
        int n = csv_table_rows(res.out, "fig2", rows, 16);
        cr_assert_eq(n, 8, "case %zu: %d fig2 rows", c, n);
        for (int i = 0; i < n; i++) {
            double sum = 0;
            const char *cols[] = {"token_pct", "reserved_pct", "internal_pct", "external_pct"};
            for (int k = 0; k < 4; k++) {
                double v = csv_num(res.out, cols[k], rows[i]);
                cr_assert(v >= 0 && v <= 100, "case %zu row %d: %s = %g", c, rows[i], cols[k], v);
                sum += v;
            }
            cr_assert(close_to(sum, 100.0), "case %zu row %d sums to %.17g", c, rows[i], sum);
            /* a static set has no external fragmentation */
            cr_assert_eq(csv_num(res.out, "external_pct", rows[i]), 0.0);
        }
        /* final view: nothing is left to produce */
        const char *layouts[] = {"naive max", "naive pow2", "naive oracle", "paged"};
        for (int k = 0; k < 4; k++)
            cr_assert_eq(csv_num(res.out, "reserved_pct", fig2_row(res.out, "final", layouts[k])),
                         0.0, "case %zu %s", c, layouts[k]);
    }
    /* the table and json carry it too */
    run_calc(&res, NULL);
    HAS(res.out, "KV memory split (PagedAttention paper, Figure 2)");
    HAS(res.out, "external is 0 for this static set");
    run_calc(&res, "--format", "json", NULL);
    HAS(res.out, "\"fig2\": [");
    HAS(res.out, "{\"view\": \"lifetime\", \"layout\": \"paged\", \"token_pct\": ");
}

/* The split against a step-by-step count written here independently of
 * calc's closed forms: the worked example at B = 16, max-len 128 (pow2 of
 * 100 is 128), without prompts (every sequence starts at 1 token) and with
 * --prompts 1,10,17,50. Final view: token states = sum L over what each
 * layout reserves. Lifetime view: every sequence steps C = P..L,
 * reservation R(C) (fixed for naive, ceil(C/B)B paged), token C, reserved
 * min(R, L) - C, internal R - min(R, L). */
Test(calc, fig2_matches_a_step_by_step_count)
{
    static const int lens[] = {1, 16, 17, 100};
    static const int prompts[2][4] = {{1, 1, 1, 1}, {1, 10, 17, 50}};
    const int B = 16, max_len = 128;
    for (int with = 0; with < 2; with++) {
        if (with)
            run_calc(&res, "--lengths", "1,16,17,100", "--prompts", "1,10,17,50", "--max-len",
                     "128", "--format", "csv", NULL);
        else
            run_calc(&res, "--lengths", "1,16,17,100", "--max-len", "128", "--format", "csv", NULL);
        cr_assert_eq(res.status, 0, "%s", res.err);
        const char *layouts[] = {"naive max", "naive pow2", "naive oracle", "paged"};
        for (int p = 0; p < 4; p++) {
            double tok = 0, rsv = 0, in = 0, steps = 0, fin_res = 0;
            for (int i = 0; i < 4; i++) {
                int L = lens[i];
                int naive_r = p == 0 ? max_len : p == 2 ? L : 1;
                if (p == 1)
                    while (naive_r < L)
                        naive_r *= 2;
                for (int C = prompts[with][i]; C <= L; C++) {
                    int R = p == 3 ? (C + B - 1) / B * B : naive_r;
                    int used = R < L ? R : L;
                    tok += C;
                    rsv += used - C;
                    in += R - used;
                    steps++;
                }
                fin_res += p == 3 ? (L + B - 1) / B * B : naive_r;
            }
            double total = tok + rsv + in;
            int row = fig2_row(res.out, "lifetime", layouts[p]);
            cr_assert(close_to(csv_num(res.out, "token_pct", row), 100 * tok / total),
                      "%s token (prompts %d)", layouts[p], with);
            cr_assert(close_to(csv_num(res.out, "reserved_pct", row), 100 * rsv / total),
                      "%s reserved (prompts %d)", layouts[p], with);
            cr_assert(close_to(csv_num(res.out, "internal_pct", row), 100 * in / total),
                      "%s internal (prompts %d)", layouts[p], with);
            /* per live sequence: slot-steps over sequence-steps */
            cr_assert(close_to(csv_num(res.out, "reserved_per_seq", row), total / steps),
                      "%s per seq (prompts %d)", layouts[p], with);
            /* the final view does not depend on prompts */
            row = fig2_row(res.out, "final", layouts[p]);
            cr_assert(close_to(csv_num(res.out, "token_pct", row), 100 * 134.0 / fin_res),
                      "%s final", layouts[p]);
            cr_assert(close_to(csv_num(res.out, "reserved_per_seq", row), fin_res / 4),
                      "%s final/seq", layouts[p]);
        }
    }
}

/* --model takes every preset of core/config, the two added for issue 9
 * included: the choices --help lists are each run (custom needs its shape
 * flags), and the new ones size as their published configs say:
 * mistral-7b 2 x 32 x 8 x 128 x 2 = 131072 B, qwen2.5-7b 2 x 28 x 4 x 128 x 2
 * = 57344 B per token. */
Test(calc, every_preset_is_selectable)
{
    run_calc(&res, "--model", "mistral-7b", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CSV_IS(res.out, "model.bytes_per_token", 0, "131072");
    CSV_IS(res.out, "config.model", 0, "mistral-7b");
    run_calc(&res, "--model", "qwen2.5-7b", "--format", "csv", NULL);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CSV_IS(res.out, "model.bytes_per_token", 0, "57344");

    static char help[65536];
    run_calc(&res, "--help", NULL);
    strcpy(help, res.out);
    char *p = strstr(help, "\n  --model ");
    cr_assert_not_null(p);
    p += strlen("\n  --model ");
    char choices[512];
    size_t n = strcspn(p, " \n");
    cr_assert_lt(n, sizeof choices);
    memcpy(choices, p, n);
    choices[n] = '\0';
    HAS(choices, "mistral-7b");
    HAS(choices, "qwen2.5-7b");
    int ran = 0;
    for (char *save = NULL, *name = strtok_r(choices, "|", &save); name;
         name = strtok_r(NULL, "|", &save)) {
        if (!strcmp(name, "custom"))
            continue;
        run_calc(&res, "--model", name, "--format", "csv", NULL);
        cr_assert_eq(res.status, 0, "--model %s: %s", name, res.err);
        CSV_IS(res.out, "config.model", 0, name);
        ran++;
    }
    cr_assert_geq(ran, 6, "presets run: %d", ran);
}
