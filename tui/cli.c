/* tui/cli.c - the flag-table parser behind every subcommand (see cli.h).
 *
 * Values are checked strictly: a number must be the whole argument (no
 * trailing garbage), finite and inside the option's range; a choice must be
 * one of its names. Every failure is one line on stderr that names the flag
 * and what it accepts, and PF_CLI_USAGE (2) for the caller to exit with.
 */
#include "tui/cli.h"

#include "core/err.h"
#include "tui/report.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int pf_cli_error(const char *prog, const char *fmt, ...)
{
    /* The message quotes what the user gave (a flag's value, an argument),
     * so it is made visible (pf_err_visible). A message longer than the
     * buffer is cut. */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", prog, pf_err_visible(msg));
    return PF_CLI_USAGE;
}

pf_opt *pf_cli_find(pf_opt *opts, const char *name)
{
    for (pf_opt *o = opts; o->name; o++)
        if (!strcmp(o->name, name))
            return o;
    return NULL;
}

/* "a|b|c" for messages and help. */
static void choices_text(const pf_opt *o, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; o->choices && o->choices[i]; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? "|" : "", o->choices[i]);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}

/* "lo..hi" or "[lo, hi]" with the bounds exact (never rounded by %g, so
 * the text names the very values the parser compares with). */
static void range_text(const pf_opt *o, char *buf, size_t len, const char *fmt)
{
    char lo[40], hi[40];
    pf_report_shortest(lo, sizeof lo, o->lo);
    pf_report_shortest(hi, sizeof hi, o->hi);
    snprintf(buf, len, fmt, lo, hi);
}

/* What the option accepts, e.g. "an integer in [1, 4096]". */
static void accepts_text(const pf_opt *o, char *buf, size_t len)
{
    char ch[256];
    switch (o->kind) {
    case PF_OPT_INT:
    case PF_OPT_I64:
        range_text(o, buf, len, "an integer in [%s, %s]");
        break;
    case PF_OPT_DOUBLE:
        range_text(o, buf, len, "a number in [%s, %s]");
        if (o->choices && o->choices[0]) {
            size_t n = strlen(buf);
            snprintf(buf + n, len - n, " or %s", o->choices[0]);
        }
        break;
    case PF_OPT_CHOICE:
        choices_text(o, ch, sizeof ch);
        snprintf(buf, len, "one of %s", ch);
        break;
    case PF_OPT_STRING:
        snprintf(buf, len, "%s", o->metavar ? o->metavar : "a value");
        break;
    case PF_OPT_FLAG:
        snprintf(buf, len, "no value");
        break;
    }
}

static int bad_value(const char *prog, const pf_opt *o, const char *value)
{
    char acc[320];
    accepts_text(o, acc, sizeof acc);
    return pf_cli_error(prog, "--%s: expected %s, got '%s'", o->name, acc, value);
}

static int set_value(const char *prog, pf_opt *o, const char *value)
{
    char *end = NULL;
    if (o->kind == PF_OPT_FLAG)
        return pf_cli_error(prog, "--%s takes no value", o->name);
    if (o->kind == PF_OPT_STRING) {
        if (!value[0])
            return bad_value(prog, o, value);
        *(const char **)o->target = value;
        o->seen = 1;
        return PF_CLI_OK;
    }
    if (o->kind == PF_OPT_CHOICE) {
        for (int i = 0; o->choices[i]; i++)
            if (!strcmp(o->choices[i], value)) {
                *(int *)o->target = i;
                o->seen = 1;
                return PF_CLI_OK;
            }
        return bad_value(prog, o, value);
    }
    errno = 0;
    if (o->kind == PF_OPT_DOUBLE && o->choices && o->choices[0] && !strcmp(value, o->choices[0])) {
        *(double *)o->target = NAN; /* the keyword: the caller reads isnan */
        o->seen = 1;
        return PF_CLI_OK;
    }
    /* strtod and strtoll also take leading blanks, a plus sign and
     * hexadecimal ("0x1p3" is 8): a number on our command line is written
     * out plainly, as the help and the reports print it */
    if (isspace((unsigned char)value[0]) || value[0] == '+' || strpbrk(value, "xX"))
        return bad_value(prog, o, value);
    if (o->kind == PF_OPT_DOUBLE) {
        double v = strtod(value, &end);
        if (end == value || *end || errno || !isfinite(v) || v < o->lo || v > o->hi)
            return bad_value(prog, o, value);
        *(double *)o->target = v;
    } else {
        long long v = strtoll(value, &end, 10);
        if (end == value || *end || errno || (double)v < o->lo || (double)v > o->hi)
            return bad_value(prog, o, value);
        if (o->kind == PF_OPT_INT)
            *(int *)o->target = (int)v;
        else
            *(long long *)o->target = v;
    }
    o->seen = 1;
    return PF_CLI_OK;
}

int pf_cli_set(const char *prog, pf_opt *opts, const char *name, const char *value)
{
    pf_opt *o = pf_cli_find(opts, name);
    if (!o)
        return pf_cli_error(prog, "unknown flag '--%s' (see --help)", name);
    return set_value(prog, o, value);
}

int pf_cli_parse(const char *prog, pf_opt *opts, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return PF_CLI_HELP;
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return pf_cli_error(prog, "unexpected argument '%s' (flags start with --; see --help)", arg);

        /* --name=value or --name value */
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t nlen = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
        if (nlen >= sizeof name)
            return pf_cli_error(prog, "unknown flag '%s' (see --help)", arg);
        memcpy(name, arg + 2, nlen);
        name[nlen] = '\0';

        pf_opt *o = pf_cli_find(opts, name);
        if (!o)
            return pf_cli_error(prog, "unknown flag '--%s' (see --help)", name);
        if (o->kind == PF_OPT_FLAG) {
            if (eq)
                return pf_cli_error(prog, "--%s takes no value", name);
            *(int *)o->target = 1;
            o->seen = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 >= argc) {
                char acc[320];
                accepts_text(o, acc, sizeof acc);
                return pf_cli_error(prog, "--%s: missing value (expected %s)", name, acc);
            }
            value = argv[++i];
        }
        int rc = set_value(prog, o, value);
        if (rc != PF_CLI_OK)
            return rc;
    }
    return PF_CLI_OK;
}

int pf_cli_start(const char *prog, const char *summary, pf_opt *opts, int argc, char **argv)
{
    int rc = pf_cli_parse(prog, opts, argc, argv);
    if (rc == PF_CLI_HELP) {
        pf_cli_help(stdout, prog, summary, opts);
        return 0;
    }
    return rc == PF_CLI_OK ? PF_CLI_GO : 2;
}

void pf_cli_help(FILE *f, const char *prog, const char *summary, const pf_opt *opts)
{
    fprintf(f, "usage: %s [FLAGS]\n\n%s\n\nflags:\n", prog, summary);
    for (const pf_opt *o = opts; o->name; o++) {
        char lhs[400], acc[320];
        if (o->kind == PF_OPT_FLAG)
            snprintf(lhs, sizeof lhs, "--%s", o->name);
        else if (o->kind == PF_OPT_CHOICE) {
            choices_text(o, acc, sizeof acc);
            snprintf(lhs, sizeof lhs, "--%s %s", o->name, acc);
        } else
            snprintf(lhs, sizeof lhs, "--%s %s", o->name, o->metavar ? o->metavar : "V");
        fprintf(f, "  %-34s %s", lhs, o->help ? o->help : "");
        /* The target still holds the default when help is asked for;
         * numeric flags show "[default; lo..hi]", the range the parser
         * accepts, bounds included. */
        char range[96], def[40];
        switch (o->kind) {
        case PF_OPT_INT:
            range_text(o, range, sizeof range, "%s..%s");
            fprintf(f, " [%d; %s]", *(int *)o->target, range);
            break;
        case PF_OPT_I64:
            range_text(o, range, sizeof range, "%s..%s");
            fprintf(f, " [%lld; %s]", *(long long *)o->target, range);
            break;
        case PF_OPT_DOUBLE:
            range_text(o, range, sizeof range, "%s..%s");
            pf_report_shortest(def, sizeof def, *(double *)o->target);
            fprintf(f, " [%s; %s%s%s]", def, range, o->choices && o->choices[0] ? " or " : "",
                    o->choices && o->choices[0] ? o->choices[0] : "");
            break;
        case PF_OPT_CHOICE:
            fprintf(f, " [%s]", o->choices[*(int *)o->target]);
            break;
        default:
            break;
        }
        fputc('\n', f);
    }
    fprintf(f, "  %-34s %s\n", "--help", "this text");
}
