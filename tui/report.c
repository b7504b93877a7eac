/* tui/report.c - one result rendered as a text table, CSV or JSON.
 *
 * The report is a list of blocks. A block is either a key/value section or
 * a table. A numeric value is kept twice: as the double itself, and as text
 * formatted with the caller's printf format for people. The text table
 * prints the rounded text; CSV and JSON print the double in its shortest
 * form that reads back to the same double (so 0.05 stays "0.05" and nothing
 * is rounded away), non-finite values as JSON null. Rendering only walks
 * the blocks, so the three formats cannot disagree on a value.
 *
 * CSV is one rectangular table (see report.h for its shape): every row has
 * the header's number of fields, so pandas.read_csv and csv.reader read it
 * with no options.
 *
 * Memory: every string is copied into the report; pf_report_free releases
 * all. An allocation failure marks the report broken and later calls do
 * nothing; pf_report_print then returns -1.
 */
#include "tui/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const pf_fmt_names[] = {"table", "csv", "json", NULL};

typedef struct {
    char *key;   /* kv: key; table: unused           */
    char *label; /* kv: label; table: unused         */
    char *text;  /* formatted value, for people      */
    char *unit;
    int is_num;  /* a number: `num` holds it         */
    double num;
} pf_item;

typedef struct {
    int is_table;
    char *name, *title;
    int ncols;
    char **keys, **labels; /* table columns */
    pf_item *items;        /* kv items, or table cells row-major */
    int nitems, cap;
    char **notes;
    int nnotes;
} pf_block;

struct pf_report {
    pf_block *blocks;
    int nblocks, cap;
    int broken;
};

static char *dup_str(pf_report *r, const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        r->broken = 1;
    return d;
}

pf_report *pf_report_new(void)
{
    return calloc(1, sizeof(pf_report));
}

void pf_report_free(pf_report *r)
{
    if (!r)
        return;
    for (int b = 0; b < r->nblocks; b++) {
        pf_block *bl = &r->blocks[b];
        free(bl->name);
        free(bl->title);
        for (int c = 0; c < bl->ncols; c++) {
            free(bl->keys[c]);
            free(bl->labels[c]);
        }
        free(bl->keys);
        free(bl->labels);
        for (int i = 0; i < bl->nitems; i++) {
            free(bl->items[i].key);
            free(bl->items[i].label);
            free(bl->items[i].text);
            free(bl->items[i].unit);
        }
        free(bl->items);
        for (int i = 0; i < bl->nnotes; i++)
            free(bl->notes[i]);
        free(bl->notes);
    }
    free(r->blocks);
    free(r);
}

/* Room for one more element in *arr (n held, *cap allocated, `size`
 * bytes each; doubling from `first`): 0, or -1 with the report marked
 * broken and *arr as it was. */
static int grow(pf_report *r, void **arr, int n, int *cap, size_t size, int first)
{
    if (n < *cap)
        return 0;
    int c = *cap ? *cap * 2 : first;
    void *na = realloc(*arr, (size_t)c * size);
    if (!na) {
        r->broken = 1;
        return -1;
    }
    *arr = na;
    *cap = c;
    return 0;
}

static pf_block *new_block(pf_report *r, const char *name, const char *title)
{
    void *arr = r->blocks;
    if (r->broken || grow(r, &arr, r->nblocks, &r->cap, sizeof *r->blocks, 8) != 0)
        return NULL;
    r->blocks = arr;
    pf_block *b = &r->blocks[r->nblocks++];
    memset(b, 0, sizeof *b);
    b->name = dup_str(r, name);
    b->title = dup_str(r, title ? title : name);
    return b;
}

static pf_block *cur(pf_report *r)
{
    return (r->broken || !r->nblocks) ? NULL : &r->blocks[r->nblocks - 1];
}

static pf_item *new_item(pf_report *r)
{
    pf_block *b = cur(r);
    if (!b)
        return NULL;
    void *arr = b->items;
    if (grow(r, &arr, b->nitems, &b->cap, sizeof *b->items, 16) != 0)
        return NULL;
    b->items = arr;
    pf_item *it = &b->items[b->nitems++];
    memset(it, 0, sizeof *it);
    return it;
}

void pf_report_shortest(char *buf, size_t len, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        return;
    }
    /* Whole numbers as integers ("100", not "1e+02"): every integer below
     * 2^53 is exact in a double. Otherwise the fewest significant digits
     * that strtod reads back exactly; 17 always do for an IEEE double. */
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void format_num(char *buf, size_t len, double v, const char *fmt, int *is_num)
{
    *is_num = 1;
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        return;
    }
    /* Integer formats want an integer argument; everything else a double. */
    const char *f = fmt ? fmt : "%g";
    size_t fl = strlen(f);
    if (fl && (f[fl - 1] == 'd' || f[fl - 1] == 'i'))
        snprintf(buf, len, "%lld", (long long)llround(v));
    else
        snprintf(buf, len, f, v);
}

void pf_report_section(pf_report *r, const char *name, const char *title)
{
    new_block(r, name, title);
}

void pf_report_num(pf_report *r, const char *key, const char *label, double v, const char *fmt,
                   const char *unit)
{
    char buf[64];
    pf_item *it = new_item(r);
    if (!it)
        return;
    format_num(buf, sizeof buf, v, fmt, &it->is_num);
    it->num = v;
    it->key = dup_str(r, key);
    it->label = dup_str(r, label ? label : key);
    it->text = dup_str(r, buf);
    it->unit = dup_str(r, unit);
}

void pf_report_str(pf_report *r, const char *key, const char *label, const char *v)
{
    pf_item *it = new_item(r);
    if (!it)
        return;
    it->key = dup_str(r, key);
    it->label = dup_str(r, label ? label : key);
    it->text = dup_str(r, v ? v : "");
}

void pf_report_table(pf_report *r, const char *name, const char *title, int ncols,
                     const char *const *keys, const char *const *labels)
{
    pf_block *b = new_block(r, name, title);
    if (!b)
        return;
    b->is_table = 1;
    b->keys = calloc((size_t)ncols, sizeof(char *));
    b->labels = calloc((size_t)ncols, sizeof(char *));
    if (!b->keys || !b->labels) {
        r->broken = 1;
        return;
    }
    b->ncols = ncols;
    for (int c = 0; c < ncols; c++) {
        b->keys[c] = dup_str(r, keys[c]);
        b->labels[c] = dup_str(r, labels ? labels[c] : keys[c]);
    }
}

void pf_report_cell_num(pf_report *r, double v, const char *fmt)
{
    char buf[64];
    pf_item *it = new_item(r);
    if (!it)
        return;
    format_num(buf, sizeof buf, v, fmt, &it->is_num);
    it->num = v;
    it->text = dup_str(r, buf);
}

void pf_report_cell_num_text(pf_report *r, double v, const char *text)
{
    pf_item *it = new_item(r);
    if (!it)
        return;
    it->is_num = 1;
    it->num = v;
    it->text = dup_str(r, text ? text : "");
}

void pf_report_cell_str(pf_report *r, const char *s)
{
    pf_item *it = new_item(r);
    if (it)
        it->text = dup_str(r, s ? s : "");
}

void pf_report_note(pf_report *r, const char *fmt, ...)
{
    pf_block *b = cur(r);
    char buf[512];
    va_list ap;
    if (!b)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **nn = realloc(b->notes, (size_t)(b->nnotes + 1) * sizeof *nn);
    if (!nn) {
        r->broken = 1;
        return;
    }
    b->notes = nn;
    b->notes[b->nnotes++] = dup_str(r, buf);
}

/* ---- rendering ------------------------------------------------------- */

static const char *s0(const char *s)
{
    return s ? s : "";
}

static void print_table_block(const pf_block *b, FILE *f)
{
    int nrows = b->ncols ? b->nitems / b->ncols : 0;
    int w[64];
    int nc = b->ncols < 64 ? b->ncols : 64;
    for (int c = 0; c < nc; c++) {
        w[c] = (int)strlen(s0(b->labels[c]));
        for (int row = 0; row < nrows; row++) {
            int l = (int)strlen(s0(b->items[row * b->ncols + c].text));
            if (l > w[c])
                w[c] = l;
        }
    }
    fprintf(f, "%s\n", s0(b->title));
    for (int c = 0; c < nc; c++)
        fprintf(f, "%s%*s", c ? "  " : "  ", w[c], s0(b->labels[c]));
    fputc('\n', f);
    for (int c = 0; c < nc; c++) {
        fputs("  ", f);
        for (int i = 0; i < w[c]; i++)
            fputc('-', f);
    }
    fputc('\n', f);
    for (int row = 0; row < nrows; row++) {
        for (int c = 0; c < nc; c++)
            fprintf(f, "  %*s", w[c], s0(b->items[row * b->ncols + c].text));
        fputc('\n', f);
    }
}

static void print_kv_block(const pf_block *b, FILE *f)
{
    int w = 0;
    for (int i = 0; i < b->nitems; i++) {
        int l = (int)strlen(s0(b->items[i].label));
        if (l > w)
            w = l;
    }
    fprintf(f, "%s\n", s0(b->title));
    for (int i = 0; i < b->nitems; i++) {
        const pf_item *it = &b->items[i];
        fprintf(f, "  %-*s  %s%s%s\n", w, s0(it->label), s0(it->text), it->unit ? " " : "",
                s0(it->unit));
    }
}

/* CSV field (RFC 4180): quoted when it holds a comma, a quote, a line
 * break or leading/trailing blanks, quotes doubled. */
static void csv_field(FILE *f, const char *s)
{
    s = s0(s);
    size_t n = strlen(s);
    if (!strpbrk(s, ",\"\r\n") && !(n && (s[0] == ' ' || s[n - 1] == ' '))) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A value as machines read it: numbers in full (shortest round-trip form),
 * strings as they are. */
static void machine_text(const pf_item *it, char *buf, size_t len, const char **out)
{
    if (it->is_num) {
        pf_report_shortest(buf, len, it->num);
        *out = buf;
    } else {
        *out = s0(it->text);
    }
}

static void csv_item(FILE *f, const pf_item *it)
{
    char buf[40];
    const char *t;
    machine_text(it, buf, sizeof buf, &t);
    csv_field(f, t);
}

/* The CSV table. Columns: the union of every table's columns (by key, in
 * order of first appearance), then "table" when there are several tables,
 * then one column per key/value item named "section.key". Rows: every
 * table row, its own cells in its columns (empty elsewhere), the context
 * items repeated on each. A report with no table rows prints one row of
 * context. Returns -1 when out of memory.
 *
 * csv_layout: the data columns (cols, ncols); colmap[m] is the data column
 * of the m-th table column, every table's columns counted in turn. */
typedef struct {
    const char **cols;
    int *colmap;
    int ncols, ntables, nrows;
} csv_layout;

static void csv_layout_free(csv_layout *L)
{
    free(L->cols);
    free(L->colmap);
}

static int csv_layout_make(const pf_report *r, csv_layout *L)
{
    int cap = 0;
    *L = (csv_layout){0};
    for (int bi = 0; bi < r->nblocks; bi++)
        if (r->blocks[bi].is_table) {
            L->ntables++;
            cap += r->blocks[bi].ncols;
            L->nrows += r->blocks[bi].ncols ? r->blocks[bi].nitems / r->blocks[bi].ncols : 0;
        }
    L->cols = malloc((size_t)(cap ? cap : 1) * sizeof *L->cols);
    L->colmap = malloc((size_t)(cap ? cap : 1) * sizeof *L->colmap);
    if (!L->cols || !L->colmap) {
        csv_layout_free(L);
        return -1;
    }
    for (int bi = 0, m = 0; bi < r->nblocks; bi++) {
        const pf_block *b = &r->blocks[bi];
        if (!b->is_table)
            continue;
        for (int c = 0; c < b->ncols; c++, m++) {
            int k = 0;
            while (k < L->ncols && strcmp(L->cols[k], s0(b->keys[c])))
                k++;
            if (k == L->ncols)
                L->cols[L->ncols++] = s0(b->keys[c]);
            L->colmap[m] = k;
        }
    }
    return 0;
}

/* The header: the data columns, "table" where there are several tables,
 * then each context item as block.key. */
static void csv_header(const pf_report *r, const csv_layout *L, FILE *f)
{
    int first = 1;
    for (int k = 0; k < L->ncols; k++, first = 0) {
        if (!first)
            fputc(',', f);
        csv_field(f, L->cols[k]);
    }
    if (L->ntables > 1) {
        fputs(first ? "table" : ",table", f);
        first = 0;
    }
    for (int bi = 0; bi < r->nblocks; bi++) {
        const pf_block *b = &r->blocks[bi];
        if (b->is_table)
            continue;
        for (int i = 0; i < b->nitems; i++, first = 0) {
            char name[256];
            snprintf(name, sizeof name, "%s.%s", s0(b->name), s0(b->items[i].key));
            if (!first)
                fputc(',', f);
            csv_field(f, name);
        }
    }
    fputc('\n', f);
}

/* One row: row `row` of table b (whose first column is table column m), or
 * with b NULL no table's cells, then the context items. cells: ncols
 * scratch slots. */
static void csv_row(const pf_report *r, const csv_layout *L, const pf_block *b, int m, int row,
                    const pf_item **cells, FILE *f)
{
    memset(cells, 0, (size_t)(L->ncols ? L->ncols : 1) * sizeof *cells);
    for (int c = 0; b && c < b->ncols; c++)
        cells[L->colmap[m + c]] = &b->items[row * b->ncols + c];
    int first = 1;
    for (int k = 0; k < L->ncols; k++, first = 0) {
        if (!first)
            fputc(',', f);
        if (cells[k])
            csv_item(f, cells[k]);
    }
    if (L->ntables > 1) {
        if (!first)
            fputc(',', f);
        csv_field(f, b ? b->name : "");
        first = 0;
    }
    for (int ci = 0; ci < r->nblocks; ci++) {
        const pf_block *cb = &r->blocks[ci];
        if (cb->is_table)
            continue;
        for (int i = 0; i < cb->nitems; i++, first = 0) {
            if (!first)
                fputc(',', f);
            csv_item(f, &cb->items[i]);
        }
    }
    fputc('\n', f);
}

static int print_csv(const pf_report *r, FILE *f)
{
    csv_layout L;
    if (csv_layout_make(r, &L) != 0)
        return -1;
    const pf_item **cells = calloc((size_t)(L.ncols ? L.ncols : 1), sizeof *cells);
    if (!cells) {
        csv_layout_free(&L);
        return -1;
    }
    csv_header(r, &L, f);
    for (int bi = 0, m = 0; bi < r->nblocks; bi++) {
        const pf_block *b = &r->blocks[bi];
        if (!b->is_table)
            continue;
        for (int row = 0; b->ncols && row < b->nitems / b->ncols; row++)
            csv_row(r, &L, b, m, row, cells, f);
        m += b->ncols;
    }
    if (L.nrows == 0)
        csv_row(r, &L, NULL, 0, 0, cells, f);
    free(cells);
    csv_layout_free(&L);
    return 0;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (s = s0(s); *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", f);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* Numbers bare and in full; non-finite numbers are null (JSON has no NaN). */
static void json_value(FILE *f, const pf_item *it)
{
    char buf[40];
    const char *t;
    if (it->is_num && !isfinite(it->num)) {
        fputs("null", f);
        return;
    }
    machine_text(it, buf, sizeof buf, &t);
    if (it->is_num)
        fputs(t, f);
    else
        json_string(f, t);
}

int pf_report_print(const pf_report *r, pf_fmt fmt, FILE *f)
{
    if (!r || r->broken)
        return -1;
    if (fmt == PF_FMT_CSV)
        return print_csv(r, f);
    if (fmt == PF_FMT_JSON)
        fputs("{\n", f);
    for (int bi = 0; bi < r->nblocks; bi++) {
        const pf_block *b = &r->blocks[bi];
        if (fmt == PF_FMT_TABLE) {
            if (bi)
                fputc('\n', f);
            if (b->is_table)
                print_table_block(b, f);
            else
                print_kv_block(b, f);
            for (int i = 0; i < b->nnotes; i++)
                fprintf(f, "  %s\n", b->notes[i]);
            continue;
        }
        fputs("  ", f);
        json_string(f, b->name);
        if (b->is_table) {
            fputs(": [", f);
            int nrows = b->ncols ? b->nitems / b->ncols : 0;
            for (int row = 0; row < nrows; row++) {
                fputs(row ? ",\n    {" : "\n    {", f);
                for (int c = 0; c < b->ncols; c++) {
                    if (c)
                        fputs(", ", f);
                    json_string(f, b->keys[c]);
                    fputs(": ", f);
                    json_value(f, &b->items[row * b->ncols + c]);
                }
                fputc('}', f);
            }
            fputs(nrows ? "\n  ]" : "]", f);
        } else {
            fputs(": {", f);
            for (int i = 0; i < b->nitems; i++) {
                fputs(i ? ",\n    " : "\n    ", f);
                json_string(f, b->items[i].key);
                fputs(": ", f);
                json_value(f, &b->items[i]);
            }
            fputs(b->nitems ? "\n  }" : "}", f);
        }
        fputs(bi + 1 < r->nblocks ? ",\n" : "\n", f);
    }
    if (fmt == PF_FMT_JSON)
        fputs("}\n", f);
    return 0;
}
