/* tui/report.h - one result, three formats (table, csv, json).
 *
 * A command builds a pf_report of sections: key/value sections and tables.
 * pf_report_print() renders it as aligned text tables, as CSV (a key/value
 * section becomes "section,key,value" rows; each table its own block with a
 * header, blocks separated by a blank line) or as one JSON object
 * ({"section": {"key": value}, "table": [{"col": value}, ...]}). Numbers
 * stay numbers in JSON. Callers: calc, sim, bench.
 */
#ifndef PF_TUI_REPORT_H
#define PF_TUI_REPORT_H

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
/* A free-text note printed under the current section/table (table form only). */
void pf_report_note(pf_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Render. Returns 0, or -1 if the report ran out of memory while built. */
int pf_report_print(const pf_report *r, pf_fmt fmt, FILE *f);

#endif
