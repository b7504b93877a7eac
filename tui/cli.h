/* tui/cli.h - command-line flags for every subcommand, from one table.
 *
 * Each subcommand declares an array of pf_opt (name, kind, target, range,
 * help). pf_cli_parse() accepts "--flag value" and "--flag=value", checks
 * every value (range, garbage, missing) and on error prints ONE line to
 * stderr naming the flag and what it accepts, e.g.
 *     pagefault calc: --seqs: expected an integer in [1, 1000000], got 'x'
 * and returns PF_CLI_USAGE; the caller exits with status 2 having printed
 * nothing on stdout. --help prints the table and returns PF_CLI_HELP.
 * pf_cli_set() assigns one option by name from a string; `sim --sweep`
 * uses it to sweep any numeric flag. Callers: tui/main.c and the commands.
 */
#ifndef PF_TUI_CLI_H
#define PF_TUI_CLI_H

#include <stdio.h>

typedef enum {
    PF_OPT_INT,    /* int*,    range [lo, hi]                      */
    PF_OPT_I64,    /* long long*, range [lo, hi] (seeds)           */
    PF_OPT_DOUBLE, /* double*, range [lo, hi]; with choices, the one
                      word choices[0] is accepted too and sets NaN
                      (--watermark auto)                          */
    PF_OPT_STRING, /* const char** (points into argv)              */
    PF_OPT_CHOICE, /* int*, index into choices (NULL-terminated)   */
    PF_OPT_FLAG    /* int*, set to 1, takes no value               */
} pf_opt_kind;

typedef struct {
    const char *name;  /* without the leading "--"                  */
    pf_opt_kind kind;
    void *target;
    double lo, hi;     /* numeric range                              */
    const char *const *choices;
    const char *metavar; /* "N", "F", "FILE"...                    */
    const char *help;
    int seen;          /* set by the parser                          */
} pf_opt;

enum { PF_CLI_OK = 0, PF_CLI_HELP = 1, PF_CLI_USAGE = 2 };

/* prog: "pagefault calc" (used in messages). opts ends with {0}.
 * Positional arguments are errors. */
int pf_cli_parse(const char *prog, pf_opt *opts, int argc, char **argv);

/* The usual start of a command: pf_cli_parse, and on --help the help on
 * stdout. Returns PF_CLI_GO to carry on, else the exit status to return at
 * once: 0 after --help, 2 after a usage error (its line is on stderr). */
#define PF_CLI_GO (-1)
int pf_cli_start(const char *prog, const char *summary, pf_opt *opts, int argc, char **argv);

/* Set option `name` from text `value` with the same checks and messages.
 * Returns PF_CLI_OK or PF_CLI_USAGE. */
int pf_cli_set(const char *prog, pf_opt *opts, const char *name, const char *value);

/* Find an option by name, NULL if none. */
pf_opt *pf_cli_find(pf_opt *opts, const char *name);

/* Print "usage" line + one line per option to f. */
void pf_cli_help(FILE *f, const char *prog, const char *summary, const pf_opt *opts);

/* One-line usage error: "prog: message" on stderr. Returns PF_CLI_USAGE. */
int pf_cli_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
