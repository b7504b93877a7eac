/* net/prom.c - Prometheus text format: parser, registry and writer (see prom.h).
 *
 * The grammar we accept (text format 0.0.4, as written by prometheus_client,
 * which vLLM uses), one line at a time, lines ended by '\n' ('\r\n' too):
 *
 *   line      := ws* ( '#' comment | sample )? ws*
 *   comment   := ws* 'TYPE' ws+ name ws+ type  |  ws* 'HELP' ws+ name (ws text)?  |  text
 *   type      := 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'
 *   sample    := name labels? ws+ value (ws+ timestamp)?
 *   name      := [a-zA-Z_:] [a-zA-Z0-9_:]*
 *   labels    := '{' ws* ( label ( ws* ',' ws* label )* ws* ','? )? ws* '}'
 *   label     := lname ws* '=' ws* '"' ( [^"\\\n] | '\\' ( '\\' | '"' | 'n' ) )* '"'
 *   lname     := [a-zA-Z_] [a-zA-Z0-9_]*
 *   value     := a C float (strtod, all of the token) | '+Inf' | '-Inf' | 'NaN'
 *   timestamp := '-'? [0-9]+                  (milliseconds; ignored)
 *   ws        := ' ' | '\t'
 *
 * A line that does not match is counted (n_bad) and skipped: one broken line
 * from a proxy or a half-written page must not hide the rest. Of the labels,
 * only `le` is kept (histogram bucket bounds); queries sum over the others.
 */
#include "net/prom.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

pf_prom_limits pf_prom_limits_default(void)
{
    pf_prom_limits l = {
        .max_bytes = 4u << 20,
        .max_line = 16u << 10,
        .max_samples = 100000,
        .max_families = 10000,
    };
    return l;
}

/* ---- numbers in the C locale --------------------------------------------
 *
 * The text format's numbers are C numbers ("0.5"), whatever the process's
 * locale: the dashboard sets LC_ALL from the environment for its terminal,
 * and under de_DE or fr_FR printf wrote "0,5" into the /metrics page it
 * serves (a page Prometheus refuses whole) and strtod stopped at the dot of
 * every "0.5" it read. So parsing and rendering switch their own thread to a
 * C locale (uselocale is per thread: the HTTP thread rendering does not
 * disturb the simulator's) and back. Without one (newlocale failed) the
 * process's locale is used as before. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

/* Switch this thread to the C locale; returns what to give c_locale_leave. */
static locale_t c_locale_enter(void)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void c_locale_leave(locale_t old)
{
    if (old)
        uselocale(old);
}

/* ---- parser ------------------------------------------------------------ */

typedef struct {
    const char *p, *end;
} cur;

static int is_ws(char c) { return c == ' ' || c == '\t'; }
static int name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
static int name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

static void skip_ws(cur *c)
{
    while (c->p < c->end && is_ws(*c->p))
        c->p++;
}

/* A metric name (colons allowed) or, with colon 0, a label name, copied
 * into out[cap]. Returns its length, 0 when there is none or it is too long. */
static size_t read_name(cur *c, char *out, size_t cap, int colon)
{
    const char *s = c->p;
    if (s >= c->end || !name_start(*s) || (!colon && *s == ':'))
        return 0;
    while (c->p < c->end && name_char(*c->p) && (colon || *c->p != ':'))
        c->p++;
    size_t n = (size_t)(c->p - s);
    if (n >= cap)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return n;
}

/* A float token (up to whitespace) parsed whole; 0 on success. */
static int read_float(const char *s, size_t n, double *v)
{
    char tmp[64];
    /* a NUL would end strtod's string inside the token: "1\0junk" read as 1 */
    if (n == 0 || n >= sizeof tmp || memchr(s, '\0', n))
        return -1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *e;
    *v = strtod(tmp, &e);
    return *e == '\0' ? 0 : -1;
}

static int add_sample(pf_prom_page *pg, const pf_prom_limits *lim, const char *name, double le, double v)
{
    if (pg->n_samples == pg->cap_samples) {
        if (pg->cap_samples >= lim->max_samples) {
            pg->n_dropped++;
            return 0;
        }
        uint32_t nc = pg->cap_samples ? pg->cap_samples * 2 : 256;
        if (nc > lim->max_samples)
            nc = lim->max_samples;
        pf_prom_sample *ns = realloc(pg->samples, (size_t)nc * sizeof *ns);
        if (!ns)
            return PF_ERR_NOMEM;
        pg->samples = ns;
        pg->cap_samples = nc;
    }
    pf_prom_sample *s = &pg->samples[pg->n_samples++];
    strcpy(s->name, name);
    s->le = le;
    s->value = v;
    return 0;
}

static int add_family(pf_prom_page *pg, const pf_prom_limits *lim, const char *name, pf_prom_type t)
{
    if (pg->n_families == pg->cap_families) {
        if (pg->cap_families >= lim->max_families) {
            pg->n_dropped++;
            return 0;
        }
        uint32_t nc = pg->cap_families ? pg->cap_families * 2 : 64;
        if (nc > lim->max_families)
            nc = lim->max_families;
        pf_prom_family *nf = realloc(pg->families, (size_t)nc * sizeof *nf);
        if (!nf)
            return PF_ERR_NOMEM;
        pg->families = nf;
        pg->cap_families = nc;
    }
    pf_prom_family *f = &pg->families[pg->n_families++];
    strcpy(f->name, name);
    f->type = t;
    return 0;
}

static int word_is(cur *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
        return 0;
    if (c->p + n < c->end && !is_ws(c->p[n]))
        return 0;
    c->p += n;
    return 1;
}

/* Returns 1 parsed, 0 broken, or a negative pf_err. */
static int parse_comment(cur *c, pf_prom_page *pg, const pf_prom_limits *lim)
{
    char name[PF_PROM_NAME_MAX];
    c->p++; /* '#' */
    skip_ws(c);
    if (word_is(c, "HELP")) {
        skip_ws(c);
        return read_name(c, name, sizeof name, 1) ? 1 : 0;
    }
    if (!word_is(c, "TYPE"))
        return 1; /* a plain comment */
    skip_ws(c);
    if (!read_name(c, name, sizeof name, 1))
        return 0;
    skip_ws(c);
    static const struct {
        const char *w;
        pf_prom_type t;
    } types[] = {{"counter", PF_PROM_COUNTER}, {"gauge", PF_PROM_GAUGE}, {"histogram", PF_PROM_HISTOGRAM},
                 {"summary", PF_PROM_SUMMARY}, {"untyped", PF_PROM_UNTYPED}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (word_is(c, types[i].w)) {
            skip_ws(c);
            if (c->p != c->end)
                return 0;
            int rc = add_family(pg, lim, name, types[i].t);
            return rc ? rc : 1;
        }
    }
    return 0;
}

static int parse_labels(cur *c, double *le)
{
    char lname[PF_PROM_NAME_MAX];
    char val[64];
    c->p++; /* '{' */
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 1;
        }
        if (!read_name(c, lname, sizeof lname, 0))
            return 0;
        skip_ws(c);
        if (c->p >= c->end || *c->p != '=')
            return 0;
        c->p++;
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"')
            return 0;
        c->p++;
        size_t vn = 0;
        int keep = strcmp(lname, "le") == 0;
        for (;;) {
            if (c->p >= c->end)
                return 0;
            char ch = *c->p++;
            if (ch == '"')
                break;
            if (ch == '\\') {
                if (c->p >= c->end)
                    return 0;
                ch = *c->p++;
                if (ch == 'n')
                    ch = '\n';
                else if (ch != '\\' && ch != '"')
                    return 0;
            }
            if (keep) {
                if (vn + 1 >= sizeof val)
                    return 0;
                val[vn++] = ch;
            }
        }
        if (keep && read_float(val, vn, le) != 0)
            return 0;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 1;
        }
        return 0;
    }
}

static int parse_sample(cur *c, pf_prom_page *pg, const pf_prom_limits *lim)
{
    char name[PF_PROM_NAME_MAX];
    double le = NAN, v;
    if (!read_name(c, name, sizeof name, 1))
        return 0;
    if (c->p < c->end && *c->p == '{' && !parse_labels(c, &le))
        return 0;
    if (c->p >= c->end || !is_ws(*c->p))
        return 0;
    skip_ws(c);
    const char *s = c->p;
    while (c->p < c->end && !is_ws(*c->p))
        c->p++;
    if (read_float(s, (size_t)(c->p - s), &v) != 0)
        return 0;
    skip_ws(c);
    if (c->p < c->end) { /* timestamp */
        if (*c->p == '-')
            c->p++;
        const char *d = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
            c->p++;
        if (c->p == d)
            return 0;
        skip_ws(c);
        if (c->p != c->end)
            return 0;
    }
    int rc = add_sample(pg, lim, name, le, v);
    return rc ? rc : 1;
}

int pf_prom_parse(const char *text, size_t len, const pf_prom_limits *lim, pf_prom_page *pg)
{
    pf_prom_limits def = pf_prom_limits_default();
    if (!pg)
        return PF_ERR_ARG;
    memset(pg, 0, sizeof *pg);
    if (!text && len)
        return PF_ERR_ARG;
    if (!lim)
        lim = &def;
    if (len > lim->max_bytes) {
        len = lim->max_bytes;
        pg->truncated = 1;
    }
    locale_t old = c_locale_enter();
    int rc = 0;
    size_t pos = 0;
    while (pos < len && rc >= 0) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        if (!nl && pg->truncated)
            break; /* a line cut by the size cap is not a line */
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        pg->n_lines++;
        if (n > lim->max_line) {
            pg->n_long++;
            continue;
        }
        if (n && s[n - 1] == '\r')
            n--;
        cur c = {s, s + n};
        skip_ws(&c);
        if (c.p == c.end)
            continue;
        rc = *c.p == '#' ? parse_comment(&c, pg, lim) : parse_sample(&c, pg, lim);
        if (rc == 0)
            pg->n_bad++;
    }
    c_locale_leave(old);
    return rc < 0 ? rc : 0;
}

void pf_prom_page_free(pf_prom_page *pg)
{
    if (!pg)
        return;
    free(pg->samples);
    free(pg->families);
    memset(pg, 0, sizeof *pg);
}

int pf_prom_sum(const pf_prom_page *pg, const char *name, double *sum)
{
    int n = 0;
    double s = 0;
    for (uint32_t i = 0; i < pg->n_samples; i++) {
        if (strcmp(pg->samples[i].name, name) == 0) {
            s += pg->samples[i].value;
            n++;
        }
    }
    if (n)
        *sum = s;
    return n;
}

pf_prom_type pf_prom_type_of(const pf_prom_page *pg, const char *name)
{
    for (uint32_t i = 0; i < pg->n_families; i++)
        if (strcmp(pg->families[i].name, name) == 0)
            return pg->families[i].type;
    return PF_PROM_UNTYPED;
}

int pf_prom_histogram(const pf_prom_page *pg, const char *base, pf_prom_hist *h)
{
    char nm[PF_PROM_NAME_MAX + 16];
    int rc = 0;
    memset(h, 0, sizeof *h);
    snprintf(nm, sizeof nm, "%s_bucket", base);
    for (uint32_t i = 0; i < pg->n_samples; i++) {
        const pf_prom_sample *s = &pg->samples[i];
        if (isnan(s->le) || strcmp(s->name, nm) != 0)
            continue;
        /* insertion into the sorted bounds; same bound: add (sum by le) */
        int k = 0;
        while (k < h->n && h->le[k] < s->le)
            k++;
        if (k < h->n && h->le[k] == s->le) {
            h->count[k] += s->value;
            continue;
        }
        if (h->n == PF_PROM_BUCKETS_MAX) {
            rc = PF_ERR_RANGE;
            continue;
        }
        memmove(&h->le[k + 1], &h->le[k], (size_t)(h->n - k) * sizeof h->le[0]);
        memmove(&h->count[k + 1], &h->count[k], (size_t)(h->n - k) * sizeof h->count[0]);
        h->le[k] = s->le;
        h->count[k] = s->value;
        h->n++;
    }
    snprintf(nm, sizeof nm, "%s_sum", base);
    pf_prom_sum(pg, nm, &h->sum);
    snprintf(nm, sizeof nm, "%s_count", base);
    pf_prom_sum(pg, nm, &h->total);
    return rc ? rc : h->n;
}

double pf_prom_quantile(const pf_prom_hist *h, double q)
{
    if (isnan(q))
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    int n = h->n;
    if (n < 2 || !isinf(h->le[n - 1]) || h->le[n - 1] < 0)
        return NAN;
    /* Cumulative counts should not fall; scrapes racing observations can
     * make them, so, as Prometheus does, take the running maximum. */
    double cnt[PF_PROM_BUCKETS_MAX];
    double mx = 0;
    for (int i = 0; i < n; i++) {
        mx = h->count[i] > mx ? h->count[i] : mx;
        cnt[i] = mx;
    }
    double total = cnt[n - 1];
    if (!(total > 0))
        return NAN;
    double rank = q * total;
    int b = 0;
    while (b < n - 1 && cnt[b] < rank)
        b++;
    if (b == n - 1)
        return h->le[n - 2];
    if (b == 0 && h->le[0] <= 0)
        return h->le[0];
    double start = 0, end = h->le[b], count = cnt[b];
    if (b > 0) {
        start = h->le[b - 1];
        count -= cnt[b - 1];
        rank -= cnt[b - 1];
    }
    if (!(count > 0))
        return end;
    return start + (end - start) * (rank / count);
}

/* ---- registry and writer ------------------------------------------------ */

typedef struct {
    char *name, *help;
    pf_prom_type type;
    double value;     /* counter, gauge */
    double *bounds;   /* histogram: n_bounds finite upper bounds */
    uint64_t *counts; /* histogram: per bucket, n_bounds + 1 (+Inf), not cumulative */
    int n_bounds;
    double sum;
    uint64_t count;
} metric;

struct pf_prom_registry {
    pthread_mutex_t mu;
    char *labels;
    metric *m;
    int n, cap;
};

pf_prom_registry *pf_prom_registry_new(const char *labels)
{
    pf_prom_registry *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->labels = strdup(labels ? labels : "");
    if (!r->labels || pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r->labels);
        free(r);
        return NULL;
    }
    return r;
}

void pf_prom_registry_free(pf_prom_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        free(r->m[i].name);
        free(r->m[i].help);
        free(r->m[i].bounds);
        free(r->m[i].counts);
    }
    free(r->m);
    free(r->labels);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static int valid_name(const char *s)
{
    if (!s || !name_start(*s))
        return 0;
    for (; *s; s++)
        if (!name_char(*s))
            return 0;
    return 1;
}

int pf_prom_add(pf_prom_registry *r, const char *name, const char *help, pf_prom_type type,
                const double *bounds, int n_bounds)
{
    if (!r || !valid_name(name) || strlen(name) >= PF_PROM_NAME_MAX - 8 ||
        (type != PF_PROM_COUNTER && type != PF_PROM_GAUGE && type != PF_PROM_HISTOGRAM))
        return PF_ERR_ARG;
    if (type == PF_PROM_HISTOGRAM) {
        if (n_bounds < 1 || n_bounds >= PF_PROM_BUCKETS_MAX || !bounds)
            return PF_ERR_ARG;
        for (int i = 0; i < n_bounds; i++)
            if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
                return PF_ERR_ARG;
    }
    metric m = {0};
    m.type = type;
    m.name = strdup(name);
    m.help = strdup(help ? help : "");
    if (type == PF_PROM_HISTOGRAM) {
        m.n_bounds = n_bounds;
        m.bounds = malloc((size_t)n_bounds * sizeof *m.bounds);
        m.counts = calloc((size_t)n_bounds + 1, sizeof *m.counts);
        if (m.bounds)
            memcpy(m.bounds, bounds, (size_t)n_bounds * sizeof *m.bounds);
    }
    int rc = PF_ERR_NOMEM;
    pthread_mutex_lock(&r->mu);
    if (m.name && m.help && (type != PF_PROM_HISTOGRAM || (m.bounds && m.counts))) {
        if (r->n == r->cap) {
            int nc = r->cap ? r->cap * 2 : 16;
            metric *nm = realloc(r->m, (size_t)nc * sizeof *nm);
            if (nm) {
                r->m = nm;
                r->cap = nc;
            }
        }
        if (r->n < r->cap) {
            r->m[r->n] = m;
            rc = r->n++;
        }
    }
    pthread_mutex_unlock(&r->mu);
    if (rc < 0) {
        free(m.name);
        free(m.help);
        free(m.bounds);
        free(m.counts);
    }
    return rc;
}

static int update(pf_prom_registry *r, int id, pf_prom_type want, int op, double v)
{
    if (!r || isnan(v))
        return PF_ERR_ARG;
    int rc = PF_ERR_ARG;
    pthread_mutex_lock(&r->mu);
    if (id >= 0 && id < r->n) {
        metric *m = &r->m[id];
        if (op == 0 && m->type == PF_PROM_COUNTER && v >= 0) { /* inc */
            m->value += v;
            rc = 0;
        } else if (op == 0 && m->type == PF_PROM_GAUGE) {
            m->value += v;
            rc = 0;
        } else if (op == 1 && m->type == PF_PROM_GAUGE) { /* set */
            m->value = v;
            rc = 0;
        } else if (op == 2 && m->type == want) { /* observe */
            int b = 0;
            while (b < m->n_bounds && v > m->bounds[b])
                b++;
            m->counts[b]++;
            m->sum += v;
            m->count++;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

int pf_prom_inc(pf_prom_registry *r, int id, double v) { return update(r, id, PF_PROM_COUNTER, 0, v); }
int pf_prom_set(pf_prom_registry *r, int id, double v) { return update(r, id, PF_PROM_GAUGE, 1, v); }
int pf_prom_observe(pf_prom_registry *r, int id, double x) { return update(r, id, PF_PROM_HISTOGRAM, 2, x); }

int pf_prom_hist_add(pf_prom_registry *r, int id, const uint64_t *counts, int n, double sum, uint64_t count)
{
    if (!r || !counts || !(sum >= 0))
        return PF_ERR_ARG;
    uint64_t total = 0;
    for (int k = 0; k < n; k++)
        total += counts[k];
    if (total != count)
        return PF_ERR_ARG;
    int rc = PF_ERR_ARG;
    pthread_mutex_lock(&r->mu);
    if (id >= 0 && id < r->n && r->m[id].type == PF_PROM_HISTOGRAM && n == r->m[id].n_bounds + 1) {
        metric *m = &r->m[id];
        for (int k = 0; k < n; k++)
            m->counts[k] += counts[k];
        m->sum += sum;
        m->count += count;
        rc = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

typedef struct {
    char *p;
    size_t n, cap;
    int failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->failed = 1;
            return;
        }
        if (b->p && (size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + (size_t)k + 1)
            nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

/* The shortest decimal that reads back as the same double. */
static void fmt_num(char out[40], double v)
{
    if (isinf(v)) {
        strcpy(out, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        strcpy(out, "NaN");
        return;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(out, 40, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* A bucket's bound as prometheus_client writes it (Go's float format): a
 * whole number with ".0", so that le="1.0" selects the same series on our
 * page as on vLLM's (Prometheus 2 compares label values as strings). */
static void fmt_le(char out[40], double v)
{
    fmt_num(out, v);
    if (!strpbrk(out, ".eEIN"))
        strcat(out, ".0");
}

static void sb_help(sbuf *b, const char *help)
{
    for (const char *s = help; *s; s++) {
        if (*s == '\\')
            sb_printf(b, "\\\\");
        else if (*s == '\n')
            sb_printf(b, "\\n");
        else
            sb_printf(b, "%c", *s);
    }
}

int pf_prom_render(pf_prom_registry *r, char **out, size_t *len)
{
    static const char *tname[] = {"untyped", "counter", "gauge", "histogram", "summary"};
    if (!r || !out || !len)
        return PF_ERR_ARG;
    sbuf b = {0};
    char num[40], le[40];
    locale_t old = c_locale_enter();
    pthread_mutex_lock(&r->mu);
    const char *lb = r->labels;
    const char *sep = lb[0] ? "," : "";
    for (int i = 0; i < r->n; i++) {
        const metric *m = &r->m[i];
        sb_printf(&b, "# HELP %s ", m->name);
        sb_help(&b, m->help);
        sb_printf(&b, "\n# TYPE %s %s\n", m->name, tname[m->type]);
        if (m->type != PF_PROM_HISTOGRAM) {
            fmt_num(num, m->value);
            if (lb[0])
                sb_printf(&b, "%s{%s} %s\n", m->name, lb, num);
            else
                sb_printf(&b, "%s %s\n", m->name, num);
            continue;
        }
        uint64_t cum = 0;
        for (int k = 0; k <= m->n_bounds; k++) {
            cum += m->counts[k];
            fmt_le(le, k < m->n_bounds ? m->bounds[k] : INFINITY);
            sb_printf(&b, "%s_bucket{%s%sle=\"%s\"} %llu\n", m->name, lb, sep, le, (unsigned long long)cum);
        }
        fmt_num(num, m->sum);
        if (lb[0]) {
            sb_printf(&b, "%s_sum{%s} %s\n", m->name, lb, num);
            sb_printf(&b, "%s_count{%s} %llu\n", m->name, lb, (unsigned long long)m->count);
        } else {
            sb_printf(&b, "%s_sum %s\n", m->name, num);
            sb_printf(&b, "%s_count %llu\n", m->name, (unsigned long long)m->count);
        }
    }
    pthread_mutex_unlock(&r->mu);
    c_locale_leave(old);
    if (!b.p)
        sb_printf(&b, "%s", "");
    if (b.failed) {
        free(b.p);
        return PF_ERR_NOMEM;
    }
    *out = b.p;
    *len = b.n;
    return 0;
}
