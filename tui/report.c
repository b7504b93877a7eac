/* tui/report.c - one result rendered as a text table, CSV or JSON.
 *
 * The report is a list of blocks. A block is either a key/value section or
 * a table; both hold their values as text already formatted with the
 * caller's printf format, plus a flag saying whether the text is a number
 * (JSON then writes it bare, or null when it is not finite). Rendering only
 * walks the blocks, so the three formats cannot disagree on a value.
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
    char *text;  /* formatted value                  */
    char *unit;
    int is_num;
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

static pf_block *new_block(pf_report *r, const char *name, const char *title)
{
    if (r->broken)
        return NULL;
    if (r->nblocks == r->cap) {
        int cap = r->cap ? r->cap * 2 : 8;
        pf_block *nb = realloc(r->blocks, (size_t)cap * sizeof *nb);
        if (!nb) {
            r->broken = 1;
            return NULL;
        }
        r->blocks = nb;
        r->cap = cap;
    }
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
    if (b->nitems == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        pf_item *ni = realloc(b->items, (size_t)cap * sizeof *ni);
        if (!ni) {
            r->broken = 1;
            return NULL;
        }
        b->items = ni;
        b->cap = cap;
    }
    pf_item *it = &b->items[b->nitems++];
    memset(it, 0, sizeof *it);
    return it;
}

static void format_num(char *buf, size_t len, double v, const char *fmt, int *is_num)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"));
        *is_num = 0;
        return;
    }
    /* Integer formats want an integer argument; everything else a double. */
    const char *f = fmt ? fmt : "%g";
    size_t fl = strlen(f);
    if (fl && (f[fl - 1] == 'd' || f[fl - 1] == 'i'))
        snprintf(buf, len, "%lld", (long long)llround(v));
    else
        snprintf(buf, len, f, v);
    *is_num = 1;
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
    it->text = dup_str(r, buf);
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

/* CSV field: quoted when it holds a comma, quote or newline. */
static void csv_field(FILE *f, const char *s)
{
    s = s0(s);
    if (!strpbrk(s, ",\"\n")) {
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

static void json_value(FILE *f, const pf_item *it)
{
    if (it->is_num)
        fputs(s0(it->text), f);
    else
        json_string(f, it->text);
}

int pf_report_print(const pf_report *r, pf_fmt fmt, FILE *f)
{
    if (!r || r->broken)
        return -1;
    if (fmt == PF_FMT_JSON)
        fputs("{\n", f);
    for (int bi = 0; bi < r->nblocks; bi++) {
        const pf_block *b = &r->blocks[bi];
        switch (fmt) {
        case PF_FMT_TABLE:
            if (bi)
                fputc('\n', f);
            if (b->is_table)
                print_table_block(b, f);
            else
                print_kv_block(b, f);
            for (int i = 0; i < b->nnotes; i++)
                fprintf(f, "  %s\n", b->notes[i]);
            break;
        case PF_FMT_CSV:
            if (bi)
                fputc('\n', f);
            if (b->is_table) {
                for (int c = 0; c < b->ncols; c++) {
                    if (c)
                        fputc(',', f);
                    csv_field(f, b->keys[c]);
                }
                fputc('\n', f);
                for (int i = 0; i < b->nitems; i++) {
                    csv_field(f, b->items[i].text);
                    fputc((i + 1) % b->ncols ? ',' : '\n', f);
                }
            } else {
                fputs("section,key,value\n", f);
                for (int i = 0; i < b->nitems; i++) {
                    csv_field(f, b->name);
                    fputc(',', f);
                    csv_field(f, b->items[i].key);
                    fputc(',', f);
                    csv_field(f, b->items[i].text);
                    fputc('\n', f);
                }
            }
            break;
        case PF_FMT_JSON:
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
            break;
        }
    }
    if (fmt == PF_FMT_JSON)
        fputs("}\n", f);
    return 0;
}
