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
 *   - ours:  "arrival,prompt,output[,priority]" with integer steps;
 *   - Azure: "TIMESTAMP,ContextTokens,GeneratedTokens" (the public Azure LLM
 *     inference trace), wall-clock arrivals "YYYY-MM-DD HH:MM:SS.fffffff"
 *     mapped onto steps as floor((t - t_first) / step_ms).
 * Jobs whose prompt + output exceed max_seq_len are dropped and counted in
 * ->rejected (the caller says so, and may raise the maximum). Any malformed
 * line stops the load with "FILE:LINE: what" in err and PF_ERR_IO. Jobs are
 * returned sorted by arrival (stable), which the engines rely on.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/sim.h"

#define PF_JOBS_MAX 10000000

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
        /* floor(i / rate) in exact integer arithmetic where the rate is
         * whole, so arrivals never depend on rounding. */
        if (arrival_rate == 0.0)
            jobs[i].arrival = 0;
        else {
            double a = floor((double)i / arrival_rate);
            jobs[i].arrival = a > INT_MAX ? INT_MAX : (int)a;
        }
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

/* Strip the line end (\n, \r\n) in place; returns the length. */
static size_t chomp(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return n;
}

static int blank(const char *s)
{
    for (; *s; s++)
        if (!isspace((unsigned char)*s))
            return 0;
    return 1;
}

/* Split s on commas into at most cap fields (in place). Returns the count,
 * or cap + 1 if there are more. */
static int split(char *s, char **f, int cap)
{
    int n = 0;
    for (;;) {
        if (n == cap)
            return cap + 1;
        f[n++] = s;
        char *c = strchr(s, ',');
        if (!c)
            return n;
        *c = '\0';
        s = c + 1;
    }
}

/* A non-negative decimal integer field (surrounding blanks allowed). */
static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    if (*end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
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

/* "YYYY-MM-DD HH:MM:SS[.fraction]" -> microseconds since 1970. */
static int parse_timestamp(const char *s, long long *us_out)
{
    while (isspace((unsigned char)*s))
        s++;
    int y, mo, d, h, mi, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0)
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970 ||
        h < 0 || mi < 0 || sec < 0)
        return -1;
    s += n;
    long long frac_us = 0;
    if (*s == '.') {
        s++;
        int digits = 0;
        long long scale = 100000;
        if (!isdigit((unsigned char)*s))
            return -1;
        while (isdigit((unsigned char)*s)) {
            if (digits < 6) {
                frac_us += (*s - '0') * scale;
                scale /= 10;
            }
            digits++;
            s++;
        }
    }
    while (isspace((unsigned char)*s))
        s++;
    if (*s)
        return -1;
    long long days = days_from_civil(y, mo, d);
    *us_out = ((days * 24 + h) * 60 + mi) * 60LL * 1000000LL + sec * 1000000LL + frac_us;
    return 0;
}

typedef struct {
    pf_job job;
    int index; /* file order, for a stable sort */
} job_ix;

static int by_arrival(const void *a, const void *b)
{
    const job_ix *x = a, *y = b;
    if (x->job.arrival != y->job.arrival)
        return x->job.arrival < y->job.arrival ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int pf_jobs_load_trace(pf_jobs *out, const char *path, double step_ms, int max_seq_len,
                       char *err, size_t errlen)
{
    char dummy[1];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    err[0] = '\0';
    if (!out || !path) {
        snprintf(err, errlen, "no trace file given");
        return PF_ERR_ARG;
    }
    memset(out, 0, sizeof *out);
    if (!(step_ms > 0.0) || isinf(step_ms) || max_seq_len < 2) {
        snprintf(err, errlen, "%s: bad step length or maximum sequence length", path);
        return PF_ERR_ARG;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return PF_ERR_IO;
    }
    int rc = PF_ERR_IO;
    job_ix *v = NULL;
    int n = 0, cap = 0, rejected = 0;
    long long t0 = 0;
    int have_t0 = 0;
    trace_fmt fmt = FMT_OURS;
    char line[4096];
    long lineno = 0;
    int header_seen = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, errlen, "%s:%ld: line too long", path, lineno);
            goto done;
        }
        chomp(line);
        if (blank(line))
            continue;
        char *fld[5];
        if (!header_seen) {
            header_seen = 1;
            int nf = split(line, fld, 4);
            char h0[32];
            snprintf(h0, sizeof h0, "%s", fld[0]);
            for (char *c = h0; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            if (nf == 3 && !strcmp(h0, "timestamp"))
                fmt = FMT_AZURE;
            else if ((nf == 3 || nf == 4) && !strcmp(h0, "arrival"))
                fmt = FMT_OURS;
            else {
                snprintf(err, errlen,
                         "%s:%ld: expected a header 'arrival,prompt,output' or "
                         "'TIMESTAMP,ContextTokens,GeneratedTokens'",
                         path, lineno);
                goto done;
            }
            continue;
        }
        int nf = split(line, fld, 4);
        long long arrival = 0, prompt, output, prio = 0;
        if (fmt == FMT_AZURE) {
            if (nf != 3) {
                snprintf(err, errlen, "%s:%ld: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got %d",
                         path, lineno, nf > 4 ? 5 : nf);
                goto done;
            }
            long long us;
            if (parse_timestamp(fld[0], &us) != 0) {
                snprintf(err, errlen, "%s:%ld: bad timestamp '%.40s'", path, lineno, fld[0]);
                goto done;
            }
            if (!have_t0) {
                t0 = us;
                have_t0 = 1;
            }
            double steps = floor((double)(us - t0) / 1000.0 / step_ms);
            if (steps < 0) {
                snprintf(err, errlen, "%s:%ld: timestamp earlier than the first request", path, lineno);
                goto done;
            }
            if (steps > INT_MAX) {
                snprintf(err, errlen, "%s:%ld: arrival too far in the future at %.3g ms per step", path,
                         lineno, step_ms);
                goto done;
            }
            arrival = (long long)steps;
        } else {
            if (nf != 3 && nf != 4) {
                snprintf(err, errlen, "%s:%ld: expected 3 or 4 fields (arrival,prompt,output[,priority]), got %d",
                         path, lineno, nf > 4 ? 5 : nf);
                goto done;
            }
            if (parse_int(fld[0], 0, INT_MAX, &arrival) != 0) {
                snprintf(err, errlen, "%s:%ld: arrival must be an integer step >= 0, got '%.40s'", path,
                         lineno, fld[0]);
                goto done;
            }
            if (nf == 4 && parse_int(fld[3], 0, 1000000, &prio) != 0) {
                snprintf(err, errlen, "%s:%ld: priority must be an integer in [0, 1000000], got '%.40s'",
                         path, lineno, fld[3]);
                goto done;
            }
        }
        if (parse_int(fld[1], 1, INT_MAX / 2, &prompt) != 0) {
            snprintf(err, errlen, "%s:%ld: prompt tokens must be an integer >= 1, got '%.40s'", path,
                     lineno, fld[1]);
            goto done;
        }
        if (parse_int(fld[2], 0, INT_MAX / 2, &output) != 0) {
            snprintf(err, errlen, "%s:%ld: output tokens must be an integer >= 0, got '%.40s'", path,
                     lineno, fld[2]);
            goto done;
        }
        /* A request that generates nothing still needs one decode step to
         * be answered; the simulator models it as one token. */
        if (output < 1)
            output = 1;
        if (prompt + output > max_seq_len) {
            rejected++;
            continue;
        }
        if (n == PF_JOBS_MAX) {
            snprintf(err, errlen, "%s:%ld: more than %d jobs", path, lineno, PF_JOBS_MAX);
            goto done;
        }
        if (n == cap) {
            int ncap = cap ? cap * 2 : 1024;
            job_ix *nv = realloc(v, (size_t)ncap * sizeof *nv);
            if (!nv) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = PF_ERR_NOMEM;
                goto done;
            }
            v = nv;
            cap = ncap;
        }
        v[n].job.arrival = (int)arrival;
        v[n].job.prompt = (int)prompt;
        v[n].job.output = (int)output;
        v[n].job.priority = (int)prio;
        v[n].index = n;
        n++;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        goto done;
    }
    if (!header_seen) {
        snprintf(err, errlen, "%s:1: empty file (expected a header line)", path);
        goto done;
    }
    if (n == 0 && rejected == 0) {
        snprintf(err, errlen, "%s: no jobs after the header line", path);
        goto done;
    }
    if (n == 0) {
        snprintf(err, errlen, "%s: no job fits (rejected %d longer than max_seq_len %d)", path, rejected,
                 max_seq_len);
        goto done;
    }
    qsort(v, (size_t)n, sizeof *v, by_arrival);
    out->jobs = malloc((size_t)n * sizeof *out->jobs);
    if (!out->jobs) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = PF_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i < n; i++)
        out->jobs[i] = v[i].job;
    out->njobs = n;
    out->rejected = rejected;
    rc = PF_OK;
done:
    free(v);
    fclose(f);
    return rc;
}
