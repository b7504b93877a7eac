/* sim/jobs.c - the simulator's jobs: generated from a length mix, or read
 * from a trace file (contract in sim/sim.h).
 *
 * Generated jobs. Each job's total length L comes from pf_workload_lengths
 * (the seed's 50/30/20 mix); a second PRNG stream, seeded from the same
 * seed, splits L into a prompt and an output: the prompt is uniform in
 * [L/10, 3L/10] (mean L/5), the output is the rest. Most of every job is
 * therefore decoded token by token and grows the KV cache a page at a time,
 * which is what makes demand paging and the watermark matter (and is what
 * reproduces the seed's Stage 4 shape; docs/simulator.md shows how other
 * splits move it). The same stream draws a priority 0..3 for the
 * lowest-priority victim policy.
 *
 * Trace files. Two formats, told apart by the header line:
 *   - ours:  "arrival,prompt,output[,priority]", arrival in seconds (a
 *     decimal number, read exactly to the microsecond), used as it is;
 *   - Azure: "TIMESTAMP,ContextTokens,GeneratedTokens" (the public Azure LLM
 *     inference trace), wall-clock arrivals "YYYY-MM-DD HH:MM:SS.fffffff",
 *     also ISO 8601 ("2023-11-16T18:17:03.97Z", "...+00:00", any +-HH:MM
 *     offset, converted to UTC); the arrival is t - t_earliest in seconds:
 *     time 0 is the earliest timestamp in the file, wherever its row is.
 * The file is read whole into memory first (pf_jobs_load_trace) or handed
 * in as bytes (pf_jobs_parse_trace), so a pipe (--trace /dev/stdin) can be
 * read once and parsed again for each point of a sweep. A UTF-8 byte order
 * mark is skipped; rows may come in any order (they are sorted, stable, by
 * arrival, which the engines rely on). Jobs whose prompt + output exceed
 * max_seq_len are dropped and counted in ->rejected (the caller says so, and
 * may raise the maximum). Anything malformed stops the load with
 * "FILE:LINE: what" in err and PF_ERR_IO: a NUL byte, a field that is not a
 * number, a number out of its range (the message gives the range), an
 * impossible date (2023-02-30). Parsing is by hand, not sscanf/strtoll on
 * copies, so a million-line trace loads in a fraction of a second.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/sim.h"

void pf_jobs_free(pf_jobs *jobs)
{
    if (!jobs)
        return;
    free(jobs->jobs);
    jobs->jobs = NULL;
    jobs->njobs = 0;
    jobs->rejected = 0;
}

int pf_jobs_generate(pf_jobs *out, uint64_t seed, int njobs, const pf_mix *mix,
                     double arrival_rate, int max_seq_len)
{
    if (!out)
        return PF_ERR_ARG;
    memset(out, 0, sizeof *out);
    if (njobs < 1 || njobs > PF_JOBS_MAX || !mix || max_seq_len < 2 || !(arrival_rate >= 0.0) ||
        isinf(arrival_rate))
        return PF_ERR_ARG;
    int *len = malloc((size_t)njobs * sizeof *len);
    pf_job *jobs = malloc((size_t)njobs * sizeof *jobs);
    int rc = PF_ERR_NOMEM;
    if (!len || !jobs)
        goto fail;
    rc = pf_workload_lengths(mix, seed, njobs, 1, max_seq_len, len);
    if (rc != PF_OK)
        goto fail;
    pf_rng r;
    /* A stream of its own, so the lengths equal calc's for the same seed. */
    pf_rng_seed(&r, seed ^ 0x9e3779b97f4a7c15ull);
    for (int i = 0; i < njobs; i++) {
        int L = len[i] < 2 ? 2 : len[i];
        int lo = L / 10 < 1 ? 1 : L / 10;
        int hi = (3 * L) / 10;
        if (hi > L - 1)
            hi = L - 1;
        if (hi < lo)
            hi = lo;
        jobs[i].prompt = (int)pf_rng_range(&r, lo, hi);
        jobs[i].output = L - jobs[i].prompt;
        jobs[i].priority = (int)pf_rng_range(&r, 0, 3);
        jobs[i].group = -1;
        jobs[i].shared = 0;
        jobs[i].fork_of = 0;
        jobs[i].sample = 0;
        /* i / rate: one division, the same double on every machine */
        jobs[i].arrival = arrival_rate == 0.0 ? 0.0 : (double)i / arrival_rate;
    }
    free(len);
    out->jobs = jobs;
    out->njobs = njobs;
    return PF_OK;
fail:
    free(len);
    free(jobs);
    return rc;
}

/* ---- trace files ---------------------------------------------------------- */

typedef enum { FMT_OURS, FMT_AZURE } trace_fmt;

/* Token counts are bounded so that prompt + output cannot overflow an int;
 * longer requests than max_seq_len are counted as rejected, not errors. */
#define TOK_MAX (INT_MAX / 2)
#define PRIO_MAX 1000000

/* One field of a line: [p, p + n), blanks and one pair of quotes removed. */
typedef struct {
    const char *p;
    size_t n;
} field;

static field trim(const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') {
        p++;
        n -= 2;
    }
    field f = {p, n};
    return f;
}

/* Split a line on commas into at most cap fields. Returns the count, or
 * cap + 1 if there are more. */
static int split(const char *s, size_t n, field *f, int cap)
{
    int nf = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == ',') {
            if (nf == cap)
                return cap + 1;
            f[nf++] = trim(s + start, i - start);
            start = i + 1;
        }
    return nf;
}

enum { INT_OK = 0, INT_BAD = -1, INT_RANGE = -2 };

/* A decimal integer field in [lo, hi]: INT_BAD when it is not a whole
 * number (a sign other than a leading '-', other characters, empty),
 * INT_RANGE when it is one but outside the range. */
static int parse_int(field f, long long lo, long long hi, long long *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < f.n && (f.p[i] == '-' || f.p[i] == '+'))
        neg = f.p[i++] == '-';
    if (i == f.n)
        return INT_BAD;
    long long v = 0;
    int big = 0;
    for (; i < f.n; i++) {
        if (f.p[i] < '0' || f.p[i] > '9')
            return INT_BAD;
        if (v > (LLONG_MAX - 9) / 10)
            big = 1; /* keep scanning: "9999...x" is still malformed */
        else
            v = v * 10 + (f.p[i] - '0');
    }
    long long val = neg ? -v : v;
    if (big || val < lo || val > hi)
        return INT_RANGE;
    *out = val;
    return INT_OK;
}

static int is_leap(long long y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(long long y, int m)
{
    static const int d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : d[m - 1];
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil): exact integers, no time zone. */
static long long days_from_civil(long long y, int m, int d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* n decimal digits at *s (advanced past them); -1 if any is not a digit. */
static int digits(const char **s, const char *end, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*s)++) {
        if (*s >= end || **s < '0' || **s > '9')
            return -1;
        v = v * 10 + (**s - '0');
    }
    return v;
}

/* "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" (a 'T' may replace the
 * space) -> microseconds since 1970-01-01 UTC. Fractions beyond
 * microseconds are truncated. Returns 0, -1 when the text is not a
 * timestamp of that shape, or -2 when it is but names no real moment
 * (month 13, February 30, hour 24...), with what in why. */
static int parse_timestamp(field f, long long *us_out, char *why, size_t whylen)
{
    const char *s = f.p, *end = f.p + f.n;
    int y = digits(&s, end, 4);
    if (y < 0 || s >= end || *s++ != '-')
        return -1;
    int mo = digits(&s, end, 2);
    if (mo < 0 || s >= end || *s++ != '-')
        return -1;
    int d = digits(&s, end, 2);
    if (d < 0 || s >= end || (*s != ' ' && *s != 'T' && *s != 't'))
        return -1;
    s++;
    int h = digits(&s, end, 2);
    if (h < 0 || s >= end || *s++ != ':')
        return -1;
    int mi = digits(&s, end, 2);
    if (mi < 0 || s >= end || *s++ != ':')
        return -1;
    int sec = digits(&s, end, 2);
    if (sec < 0)
        return -1;
    long long frac_us = 0;
    if (s < end && *s == '.') {
        s++;
        if (s >= end || *s < '0' || *s > '9')
            return -1;
        long long scale = 100000;
        for (; s < end && *s >= '0' && *s <= '9'; s++) {
            frac_us += (*s - '0') * scale;
            scale /= 10;
        }
    }
    long long offset_s = 0; /* local time minus UTC */
    if (s < end && (*s == 'Z' || *s == 'z'))
        s++;
    else if (s < end && (*s == '+' || *s == '-')) {
        int sign = *s++ == '-' ? -1 : 1;
        int oh = digits(&s, end, 2), om = 0;
        if (oh < 0)
            return -1;
        if (s < end && *s == ':')
            s++;
        if (s < end && (om = digits(&s, end, 2)) < 0)
            return -1;
        if (oh > 23 || om > 59) {
            snprintf(why, whylen, "UTC offset out of range");
            return -2;
        }
        offset_s = sign * (oh * 3600LL + om * 60LL);
    }
    if (s != end)
        return -1;
    if (y < 1) {
        snprintf(why, whylen, "no year 0000");
        return -2;
    }
    if (mo < 1 || mo > 12) {
        snprintf(why, whylen, "no month %02d", mo);
        return -2;
    }
    if (d < 1 || d > days_in_month(y, mo)) {
        snprintf(why, whylen, "%04d-%02d has %d days", y, mo, days_in_month(y, mo));
        return -2;
    }
    /* second 60: a leap second, as UTC allows */
    if (h > 23 || mi > 59 || sec > 60) {
        snprintf(why, whylen, "no time %02d:%02d:%02d", h, mi, sec);
        return -2;
    }
    long long days = days_from_civil(y, mo, d);
    *us_out = (((days * 24 + h) * 60 + mi) * 60LL + sec - offset_s) * 1000000LL + frac_us;
    return 0;
}

typedef struct {
    pf_job job;
    long long t;  /* microseconds: ours from 0, Azure since 1970 */
    int index;    /* file order, for a stable sort */
} job_ix;

static int by_arrival(const void *a, const void *b)
{
    const job_ix *x = a, *y = b;
    if (x->job.arrival != y->job.arrival)
        return x->job.arrival < y->job.arrival ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The one place that turns a row's time into an arrival in seconds: ours
 * are seconds already; Azure's wall clock counts from the earliest
 * timestamp. Both are held in whole microseconds until here. */
static double arrival_of(trace_fmt fmt, long long t, long long t0)
{
    return (double)(fmt == FMT_OURS ? t : t - t0) / 1e6;
}

/* Our arrival: seconds, a decimal number ("12", "0.25", "3.000001"), into
 * whole microseconds (digits past the sixth decimal are cut). 0 on
 * success, -1 when it is not such a number, -2 above PF_TRACE_MAX_S. */
#define PF_TRACE_MAX_S 1000000000LL /* 31 years: any real trace */
static int parse_seconds(field f, long long *us)
{
    const char *s = f.p, *e = f.p + f.n;
    long long whole = 0, frac = 0;
    int nd = 0, nf = 0;
    for (; s < e && isdigit((unsigned char)*s); s++, nd++) {
        if (whole > PF_TRACE_MAX_S)
            return -2;
        whole = whole * 10 + (*s - '0');
    }
    if (s < e && *s == '.') {
        for (s++; s < e && isdigit((unsigned char)*s); s++, nf++)
            if (nf < 6)
                frac = frac * 10 + (*s - '0');
    }
    if (s != e || nd + nf == 0)
        return -1;
    if (whole > PF_TRACE_MAX_S)
        return -2;
    for (int k = nf; k < 6; k++)
        frac *= 10;
    *us = whole * 1000000LL + frac;
    return 0;
}

/* The header line decides the format; -1 when it is neither. */
static int parse_header(const char *s, size_t n, trace_fmt *fmt)
{
    field f[5];
    int nf = split(s, n, f, 4);
    char h0[16] = "";
    if (nf >= 1 && f[0].n < sizeof h0)
        for (size_t i = 0; i < f[0].n; i++)
            h0[i] = (char)tolower((unsigned char)f[0].p[i]);
    if (nf == 3 && !strcmp(h0, "timestamp"))
        *fmt = FMT_AZURE;
    else if ((nf == 3 || nf == 4) && !strcmp(h0, "arrival"))
        *fmt = FMT_OURS;
    else
        return -1;
    return 0;
}

/* A field as a message quotes it: its first 40 bytes at most, made
 * visible (pf_err_visible: a file's control bytes do not reach the
 * terminal; a NUL byte ends the reading before a field is parsed). */
enum { QUOTE_MAX = 40 };
static const char *field_quote(field f, char q[QUOTE_MAX + 1])
{
    const size_t n = f.n < QUOTE_MAX ? f.n : QUOTE_MAX;
    memcpy(q, f.p, n);
    q[n] = '\0';
    return pf_err_visible(q);
}

/* An integer field of a row in [lo, hi], named what in the message: 0, or
 * -1 with "NAME:LINE: what must be a whole number" or "... out of range"
 * in err. */
static int row_int(field f, long long lo, long long hi, const char *what, const char *name,
                   long lineno, long long *out, char *err, size_t errlen)
{
    const int r = parse_int(f, lo, hi, out);
    char q[QUOTE_MAX + 1];
    if (r == INT_BAD)
        snprintf(err, errlen, "%s:%ld: %s must be a whole number, got '%s'", name, lineno, what,
                 field_quote(f, q));
    else if (r == INT_RANGE)
        snprintf(err, errlen, "%s:%ld: %s %s out of range [%lld, %lld]", name, lineno, what,
                 field_quote(f, q), lo, hi);
    return r == INT_OK ? 0 : -1;
}

/* One data row (s, ln: trimmed, not empty) in the header's format: its
 * arrival (*t, on the format's clock), prompt and output tokens and
 * priority, each checked. 0, or -1 with a message naming name:lineno and
 * the field in err. */
static int parse_row(trace_fmt fmt, const char *s, size_t ln, const char *name, long lineno,
                     long long *t, long long *prompt, long long *output, long long *prio,
                     char *err, size_t errlen)
{
#define ROW_FAIL(...)                                                                              \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -1;                                                                                 \
    } while (0)
    field fld[5];
    const int nf = split(s, ln, fld, 4);
    char q[QUOTE_MAX + 1];
    int r;
    *prio = 0;
    if (fmt == FMT_AZURE) {
        if (nf != 3)
            ROW_FAIL("%s:%ld: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got %d%s",
                     name, lineno, nf > 4 ? 5 : nf, nf > 4 ? " or more" : "");
        char why[64] = "";
        r = parse_timestamp(fld[0], t, why, sizeof why);
        if (r == -1)
            ROW_FAIL("%s:%ld: bad timestamp '%s' (expected YYYY-MM-DD HH:MM:SS[.fraction], "
                     "optionally with T, Z or +HH:MM)",
                     name, lineno, field_quote(fld[0], q));
        if (r == -2)
            ROW_FAIL("%s:%ld: impossible timestamp '%s': %s", name, lineno, field_quote(fld[0], q),
                     why);
    } else {
        if (nf != 3 && nf != 4)
            ROW_FAIL("%s:%ld: expected 3 or 4 fields (arrival,prompt,output[,priority]), got %d%s",
                     name, lineno, nf > 4 ? 5 : nf, nf > 4 ? " or more" : "");
        r = parse_seconds(fld[0], t);
        if (r == -1)
            ROW_FAIL("%s:%ld: arrival must be a time in seconds (like 12 or 0.25), got '%s'",
                     name, lineno, field_quote(fld[0], q));
        if (r == -2)
            ROW_FAIL("%s:%ld: arrival %s out of range [0, %lld] seconds", name, lineno,
                     field_quote(fld[0], q), PF_TRACE_MAX_S);
        if (nf == 4 &&
            row_int(fld[3], 0, PRIO_MAX, "priority", name, lineno, prio, err, errlen) != 0)
            return -1;
    }
    if (row_int(fld[1], 1, TOK_MAX, "prompt tokens", name, lineno, prompt, err, errlen) != 0 ||
        row_int(fld[2], 0, TOK_MAX, "output tokens", name, lineno, output, err, errlen) != 0)
        return -1;
    return 0;
#undef ROW_FAIL
}
#undef FIELD_ARGS

/* A trace is parsed in one pass over its lines into a row array sized
 * once (trace_rows_alloc), then finished (trace_rows_finish): arrivals
 * counted from the earliest row, sorted when the file was not, and the
 * rows compacted in place into the pf_job array the caller owns. */
typedef struct {
    job_ix *v;
    int n, cap;      /* rows kept; the array's size (the line count, or PF_JOBS_MAX) */
    int rejected;    /* rows longer than max_seq_len */
    long long t0;    /* the earliest row's time, kept or not */
} trace_rows;

/* The line of the first NUL byte (a binary file is refused before
 * anything else, with its line), or 0 when there is none. */
static long trace_nul_line(const char *data, size_t len)
{
    const char *nul = len ? memchr(data, '\0', len) : NULL;
    if (!nul)
        return 0;
    long at = 1;
    for (const char *q = data; q < nul; q++)
        at += *q == '\n';
    return at;
}

/* One row per line at most: size the array once instead of growing it
 * (a million-row trace would otherwise be copied some 10 times). */
static int trace_rows_alloc(trace_rows *r, const char *p, const char *end)
{
    size_t lines = 1;
    for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        lines++;
    r->cap = lines < PF_JOBS_MAX ? (int)lines : PF_JOBS_MAX;
    r->v = malloc((size_t)r->cap * sizeof *r->v);
    return r->v ? 0 : -1;
}

/* The next line from *p, blanks and a CR trimmed at both ends, into *s
 * and *ln (possibly empty); *p moves past it. 0 at the end of the data. */
static int trace_next_line(const char **p, const char *end, const char **s, size_t *ln)
{
    if (*p >= end)
        return 0;
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *le = nl ? nl : end;
    const char *b = *p;
    *p = nl ? nl + 1 : end;
    while (le > b && (le[-1] == '\r' || le[-1] == ' ' || le[-1] == '\t'))
        le--;
    while (b < le && (*b == ' ' || *b == '\t'))
        b++;
    *s = b;
    *ln = (size_t)(le - b);
    return 1;
}

/* Keeps one parsed row. Every row's time counts for time 0, kept or not,
 * so arrivals do not move when --max-len changes. A request that
 * generates nothing still needs one decode step to be answered; the
 * simulator models it as one token. 0, or -1 when the array is full. */
static int trace_rows_add(trace_rows *r, long long t, long long prompt, long long output,
                          long long prio, int max_seq_len)
{
    r->t0 = t < r->t0 ? t : r->t0;
    if (output < 1)
        output = 1;
    if (prompt + output > max_seq_len) {
        r->rejected++;
        return 0;
    }
    if (r->n == r->cap) /* cap is the line count, or PF_JOBS_MAX */
        return -1;
    job_ix *x = &r->v[r->n];
    memset(&x->job, 0, sizeof x->job);
    x->job.group = -1;
    x->job.prompt = (int)prompt;
    x->job.output = (int)output;
    x->job.priority = (int)prio;
    x->t = t;
    x->index = r->n;
    r->n++;
    return 0;
}

/* Arrivals from t0, sorted by arrival (stable: file order breaks ties),
 * and the rows handed to out as its jobs; r's array is out's now. */
static void trace_rows_finish(trace_rows *r, trace_fmt fmt, pf_jobs *out)
{
    job_ix *v = r->v;
    const int n = r->n;
    for (int i = 0; i < n; i++)
        v[i].job.arrival = arrival_of(fmt, v[i].t, r->t0);
    /* Most traces come sorted: check in one pass before paying for qsort. */
    int sorted = 1;
    for (int i = 1; i < n && sorted; i++)
        sorted = v[i].job.arrival >= v[i - 1].job.arrival;
    if (!sorted)
        qsort(v, (size_t)n, sizeof *v, by_arrival);
    /* Compact the jobs to the front of the same block (each moves to an
     * address at or below its own, so a forward copy is safe) and give
     * back the rest: no second array of a million rows. */
    pf_job *jobs = (pf_job *)(void *)v;
    for (int i = 0; i < n; i++) {
        pf_job jb = v[i].job;
        jobs[i] = jb;
    }
    pf_job *shrunk = realloc(jobs, (size_t)n * sizeof *jobs);
    out->jobs = shrunk ? shrunk : jobs;
    out->njobs = n;
    out->rejected = r->rejected;
    r->v = NULL;
}

int pf_jobs_parse_trace(pf_jobs *out, const char *name, const char *data, size_t len,
                        int max_seq_len, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!name)
        name = "trace";
    if (!out || (!data && len)) {
        snprintf(err, errlen, "%s: no trace given", name);
        return PF_ERR_ARG;
    }
    memset(out, 0, sizeof *out);
    if (!data)
        data = ""; /* len is 0: no pointer arithmetic on NULL below */
    if (max_seq_len < 2) {
        snprintf(err, errlen, "%s: bad maximum sequence length", name);
        return PF_ERR_ARG;
    }
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        goto done;                                                                                 \
    } while (0)
    int rc = PF_ERR_IO;
    trace_rows r = {.t0 = LLONG_MAX};
    trace_fmt fmt = FMT_OURS;
    long lineno = 0;
    int header_seen = 0;
    const char *p = data, *end = data + len, *s;
    size_t ln;
    const long nul_at = trace_nul_line(data, len);
    if (nul_at)
        FAIL("%s:%ld: NUL byte (not a text file?)", name, nul_at);
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
        p += 3; /* UTF-8 byte order mark, as spreadsheets write */
    if (trace_rows_alloc(&r, p, end) != 0) {
        rc = PF_ERR_NOMEM;
        FAIL("%s: out of memory", name);
    }
    while (trace_next_line(&p, end, &s, &ln)) {
        lineno++;
        if (!ln)
            continue;
        if (!header_seen) {
            header_seen = 1;
            if (parse_header(s, ln, &fmt) != 0)
                FAIL("%s:%ld: expected a header 'arrival,prompt,output' or "
                     "'TIMESTAMP,ContextTokens,GeneratedTokens'",
                     name, lineno);
            continue;
        }
        long long t = 0, prompt = 0, output = 0, prio = 0;
        if (parse_row(fmt, s, ln, name, lineno, &t, &prompt, &output, &prio, err, errlen) != 0)
            goto done;
        if (trace_rows_add(&r, t, prompt, output, prio, max_seq_len) != 0)
            FAIL("%s:%ld: more than %d jobs", name, lineno, PF_JOBS_MAX);
    }
    if (!header_seen)
        FAIL("%s:1: empty file (expected a header line)", name);
    if (r.n == 0 && r.rejected == 0)
        FAIL("%s: no jobs after the header line", name);
    if (r.n == 0)
        FAIL("%s: no job fits (rejected %d longer than max_seq_len %d)", name, r.rejected,
             max_seq_len);
    trace_rows_finish(&r, fmt, out);
    rc = PF_OK;
done:
#undef FAIL
    free(r.v);
    return rc;
}

int pf_jobs_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!path || !data || !len) {
        snprintf(err, errlen, "no trace file given");
        return PF_ERR_ARG;
    }
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return PF_ERR_IO;
    }
    /* Read to the end in growing chunks: a pipe has no size to ask for (a
     * regular file's size is the first chunk, so it is read in one). */
    int rc = PF_OK;
    char *buf = NULL;
    size_t used = 0, cap = 0;
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        (unsigned long long)sb.st_size < SIZE_MAX / 2) {
        cap = (size_t)sb.st_size + 65536 + 1;
        buf = malloc(cap);
        if (!buf)
            cap = 0;
    }
    for (;;) {
        if (cap - used < 65536) {
            size_t ncap = cap ? cap * 2 : 1 << 20;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = PF_ERR_NOMEM;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        /* A NUL byte ends the reading: the parser refuses the file at its
         * line, and a device or pipe that never ends (/dev/zero, or
         * /dev/urandom, which has one within its first chunk) is refused
         * now instead of read until memory runs out. */
        const int nul = got && memchr(buf + used, '\0', got) != NULL;
        used += got;
        if (nul)
            break;
        if (got == 0) {
            if (ferror(f)) {
                snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
                rc = PF_ERR_IO;
            }
            break;
        }
    }
    fclose(f);
    if (rc != PF_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = used;
    return PF_OK;
}

int pf_jobs_load_trace(pf_jobs *out, const char *path, int max_seq_len, char *err,
                       size_t errlen)
{
    char *data;
    size_t len;
    if (out)
        memset(out, 0, sizeof *out);
    if (!out) {
        if (err && errlen)
            snprintf(err, errlen, "no output given");
        return PF_ERR_ARG;
    }
    int rc = pf_jobs_read_file(path, &data, &len, err, errlen);
    if (rc != PF_OK)
        return rc;
    rc = pf_jobs_parse_trace(out, path, data, len, max_seq_len, err, errlen);
    free(data);
    return rc;
}

/* ---- shared prefixes and parallel samples -------------------------------- */

int pf_jobs_add_prefix(pf_jobs *jobs, int shared_tokens, int groups, int max_seq_len)
{
    if (!jobs || shared_tokens < 0 || groups < 0 || max_seq_len < 2)
        return PF_ERR_ARG;
    for (int i = 0; i < jobs->njobs; i++) {
        pf_job *j = &jobs->jobs[i];
        j->group = -1;
        j->shared = 0;
        /* 64 bits: shared_tokens + 2 must not wrap for a large count */
        if (shared_tokens == 0 || groups == 0 || (int64_t)shared_tokens + 2 > max_seq_len)
            continue;
        /* the system prompt comes before the user's: the prompt grows to
         * hold it and one token of its own, the output shrinks if the job
         * would no longer fit */
        if (j->prompt < shared_tokens + 1)
            j->prompt = shared_tokens + 1;
        if ((int64_t)j->prompt + j->output > max_seq_len)
            j->output = max_seq_len - j->prompt;
        if (j->output < 1) {
            j->prompt = max_seq_len - 1;
            j->output = 1;
        }
        j->group = i % groups;
        j->shared = shared_tokens;
    }
    return PF_OK;
}

int pf_jobs_fork(pf_jobs *jobs, int n)
{
    if (!jobs || n < 1 || (int64_t)jobs->njobs * n > PF_JOBS_MAX)
        return PF_ERR_ARG;
    if (n == 1)
        return PF_OK;
    int m = jobs->njobs * n;
    pf_job *v = malloc((size_t)m * sizeof *v);
    if (!v)
        return PF_ERR_NOMEM;
    for (int i = 0; i < jobs->njobs; i++)
        for (int k = 0; k < n; k++) {
            pf_job *j = &v[i * n + k];
            *j = jobs->jobs[i];
            j->fork_of = k == 0 ? 0 : i * n + 1; /* 1 + the first sample's index */
            j->sample = k;
        }
    free(jobs->jobs);
    jobs->jobs = v;
    jobs->njobs = m;
    return PF_OK;
}

/* ---- a synthetic trace of Azure's shape ---------------------------------- */

/* A uniform draw in (0, 1) from the top 53 bits. */
static double unit(pf_rng *r)
{
    return ((double)(pf_rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

char *pf_jobs_azure_like(int n, int max_prompt, uint64_t seed, size_t *len)
{
    if (n < 1 || n > PF_JOBS_MAX || max_prompt < 101 || !len)
        return NULL;
    size_t cap = (size_t)n * 48 + 64;
    char *t = malloc(cap);
    if (!t)
        return NULL;
    size_t k = (size_t)snprintf(t, cap, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
    pf_rng r;
    pf_rng_seed(&r, seed);
    double at = 0.0, mean_gap = 3600.0 / n;
    for (int i = 0; i < n; i++) {
        at += -mean_gap * log(unit(&r)); /* Poisson arrivals over an hour */
        /* prompts 100 + exponential (mean 1,000), outputs 1 + exponential
         * (mean 210), both capped: about the means of Azure's conversation
         * trace (1,155 and 211 tokens) */
        double pr = 100.0 - 1000.0 * log(unit(&r));
        int prompt = i == n - 1 || pr > max_prompt ? max_prompt : (int)pr;
        double out = 1.0 - 210.0 * log(unit(&r));
        int output = out > 2000.0 ? 2000 : (int)out;
        long long us = (long long)(at * 1e6);
        long long s = us / 1000000;
        k += (size_t)snprintf(t + k, cap - k, "2023-11-16 %02lld:%02lld:%02lld.%06lld0,%d,%d\n",
                              10 + s / 3600, s / 60 % 60, s % 60, us % 1000000, prompt, output);
    }
    *len = k;
    return t;
}
