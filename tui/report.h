/* tui/report.h - one result, three formats (table, csv, json).
 *
 * A command builds a pf_report of sections: key/value sections and tables.
 * pf_report_print() renders it as
 *   - table: aligned text for people, numbers rounded by each value's printf
 *     format, units and notes shown;
 *   - csv: ONE rectangular table that pandas.read_csv or csv.reader reads
 *     with no options. Its columns are every table's columns (by key; tables
 *     sharing a key share the column), then `table` (which table the row
 *     came from) when the report has more than one table, then one column
 *     per key/value item, named "section.key", repeated on every row (the
 *     configuration travels with each row, so files from several runs can
 *     simply be concatenated). Without table rows it is a single row of the
 *     key/value items. No comment lines, no blank lines, no units or notes;
 *   - json: one object {"section": {"key": value}, "table": [{"col": value},
 *     ...]}.
 * In csv and json numbers are written in full, in the shortest form that
 * reads back as the same double (0.05, not 0.050000000000000003 nor a value
 * rounded to the table's 2 decimals); in json they are bare numbers, and
 * NaN and infinities are null (csv writes nan, inf, -inf, which pandas reads
 * as floats). Callers: calc, sim, bench.
 */
#ifndef PF_TUI_REPORT_H
#define PF_TUI_REPORT_H

#include <stddef.h>
#include <stdio.h>

typedef enum { PF_FMT_TABLE = 0, PF_FMT_CSV = 1, PF_FMT_JSON = 2 } pf_fmt;

extern const char *const pf_fmt_names[]; /* {"table","csv","json",NULL} */

typedef struct pf_report pf_report;

pf_report *pf_report_new(void);
void pf_report_free(pf_report *r);

/* Start a key/value section. name: JSON/CSV key; title: heading in tables. */
void pf_report_section(pf_report *r, const char *name, const char *title);
/* Numeric value printed with printf format fmt (e.g. "%.2f") and an
 * optional unit shown in table form only. */
void pf_report_num(pf_report *r, const char *key, const char *label, double v, const char *fmt,
                   const char *unit);
void pf_report_str(pf_report *r, const char *key, const char *label, const char *v);

/* Start a table with ncols columns: keys (JSON/CSV) and labels (table). */
void pf_report_table(pf_report *r, const char *name, const char *title, int ncols,
                     const char *const *keys, const char *const *labels);
void pf_report_cell_num(pf_report *r, double v, const char *fmt);
void pf_report_cell_str(pf_report *r, const char *s);
/* A number shown as `text` in the table form (e.g. a swept value as the
 * user typed it) and as the number v in csv and json. */
void pf_report_cell_num_text(pf_report *r, double v, const char *text);
/* A free-text note printed under the current section/table (table form only). */
void pf_report_note(pf_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The shortest "%.*g" text of v that strtod reads back as v ("nan",
 * "inf", "-inf" when not finite). buf needs 32 bytes. */
void pf_report_shortest(char *buf, size_t len, double v);

/* Render. Returns 0, or -1 if the report ran out of memory while built. */
int pf_report_print(const pf_report *r, pf_fmt fmt, FILE *f);

#endif
