/* tests/test_sim_trace.c - traces end to end: a trace file loads and
 * replays to the end without a leak, in both formats.
 *
 * Part 1 runs from a clean clone alone: it writes its own trace of 3,000
 * requests in the Azure format (wall-clock timestamps with 7 fractional
 * digits, rows out of order, some requests longer than MAX_SEQ_LEN) and
 * the same requests in our format (arrival seconds with six decimals,
 * computed here in integer microseconds), checks that both load to the
 * same jobs, in the same order, with the counts computed here, and replays
 * them through the paged simulator: every request finishes, none starts
 * before it arrives (each request's queue time and TTFT are >= 0: the
 * metrics refuse a timeline out of order, so the counts would fall short).
 * Part 2, only in addition, does the same with the public Azure LLM
 * inference trace (code service) when it is present (PF_TRACE_DIR, by
 * default ../shared/traces); without it that part says so and is skipped.
 * A plain executable (exit 0 pass, 1 fail). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "sim/sim.h"

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "test_sim_trace: " __VA_ARGS__);                                           \
        fputc('\n', stderr);                                                                       \
        return 1;                                                                                  \
    } while (0)

/* Replay jobs through the paged simulator to the end. */
static int replay(const pf_jobs *jobs, int max_len, int pool, const char *what)
{
    char err[256];
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.max_seq_len = max_len;
    p.cfg.pool_blocks = pool;
    p.watermark = 0.02;
    p.policy = PF_VICTIM_NEWEST;
    pf_sim *s = pf_sim_create(&p, jobs, err, sizeof err);
    if (!s)
        FAIL("%s: create: %s", what, err);
    pf_sim_stats st;
    int rc = pf_sim_run(s, &st);
    int ok = rc == PF_OK && st.done && st.pool_used == 0 && pf_sim_check(s) == PF_OK;
    printf("test_sim_trace: %s: replayed %d requests: %lld steps, %.3f s simulated, %lld tokens, "
           "%lld preemptions\n",
           what, jobs->njobs, (long long)st.step, st.time_s, (long long)st.tokens_generated,
           (long long)st.preemptions);
    pf_sim_destroy(s);
    if (!ok)
        FAIL("%s: replay: rc %d done %d used %d", what, rc, st.done, st.pool_used);
    if (st.finished + st.aborted != jobs->njobs || st.finished < 1)
        FAIL("%s: finished %lld aborted %lld of %d", what, (long long)st.finished,
             (long long)st.aborted, jobs->njobs);
    /* every finished request's timeline was in order (else not counted) */
    const pf_sim_latency *q = &st.lat[PF_MET_QUEUE], *f = &st.lat[PF_MET_TTFT];
    if ((int64_t)q->count != st.finished || (int64_t)f->count != st.finished)
        FAIL("%s: %llu queue times and %llu TTFTs for %lld finished requests", what,
             (unsigned long long)q->count, (unsigned long long)f->count, (long long)st.finished);
    if (q->min < 0.0 || f->min < 0.0 || f->min < q->min)
        FAIL("%s: a request started before it arrived: queue min %g s, TTFT min %g s", what,
             q->min, f->min);
    /* the clock ran at least to the last arrival */
    if (st.time_s < jobs->jobs[jobs->njobs - 1].arrival)
        FAIL("%s: the run ended at %.6f s, before the last arrival %.6f s", what, st.time_s,
             jobs->jobs[jobs->njobs - 1].arrival);
    return 0;
}

/* Part 1: our own files. */
#define N 3000
static int own_files(void)
{
    static long long t_ms[N]; /* ms since 18:00:00 */
    static long long t_us[N]; /* the row's time in us since 18:00:00, sub-ms digits included */
    static int prompt[N], output[N];
    char az[64], ours[64];
    snprintf(az, sizeof az, "/tmp/pf_trace_az_%d.csv", (int)getpid());
    snprintf(ours, sizeof ours, "/tmp/pf_trace_ours_%d.csv", (int)getpid());
    /* requests every 0..39 ms, written in blocks of 10 in reverse order
     * (so the file is unsorted and the earliest row is not the first) */
    unsigned long long x = 88172645463325252ull;
    long long t = 0, tmin = -1, tmax = 0;
    int over = 0;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        t += (long long)(x % 40);
        t_ms[i] = t;
        prompt[i] = 1 + (int)((x >> 8) % 3000);
        output[i] = (int)((x >> 20) % 200); /* 0 happens: counts as 1 */
        over += prompt[i] + (output[i] < 1 ? 1 : output[i]) > 2048;
    }
    FILE *fa = fopen(az, "w"), *fo = fopen(ours, "w");
    if (!fa || !fo)
        FAIL("cannot write %s or %s", az, ours);
    fputs("TIMESTAMP,ContextTokens,GeneratedTokens\n", fa);
    fputs("arrival,prompt,output\n", fo);
    for (int b = 0; b < N; b += 10)
        for (int i = b + 9; i >= b; i--) {
            long long ms = t_ms[i];
            /* 7 fractional digits, as the public file has: the reader
             * keeps 6 (whole us), so the row's time is ms and i mod 1000
             * us (distinct from any row within the same ms); the 7th digit
             * is cut */
            fprintf(fa, "2023-11-16 %02lld:%02lld:%02lld.%03lld%03d%d,%d,%d\n", 18 + ms / 3600000,
                    ms / 60000 % 60, ms / 1000 % 60, ms % 1000, i % 1000, i % 10, prompt[i],
                    output[i]);
            t_us[i] = ms * 1000 + i % 1000;
            if (tmin < 0 || ms < tmin)
                tmin = ms;
            tmax = ms > tmax ? ms : tmax;
        }
    /* ours: seconds since the earliest row, the same microseconds */
    for (int i = 0; i < N; i++) {
        long long us = t_us[i] - t_us[0];
        fprintf(fo, "%lld.%06lld,%d,%d\n", us / 1000000, us % 1000000, prompt[i], output[i]);
    }
    fclose(fa);
    fclose(fo);
    if (tmin != t_ms[0] || t_us[0] != t_ms[0] * 1000)
        FAIL("test setup: earliest time should be the first request's");

    pf_jobs a, o;
    char err[512];
    int rc = pf_jobs_load_trace(&a, az, 2048, err, sizeof err);
    if (rc != PF_OK)
        FAIL("own Azure file: %s", err);
    rc = pf_jobs_load_trace(&o, ours, 2048, err, sizeof err);
    if (rc != PF_OK)
        FAIL("own file in our format: %s", err);
    unlink(az);
    unlink(ours);
    if (a.njobs != N - over || a.rejected != over)
        FAIL("own Azure file: kept %d rejected %d, expected %d and %d", a.njobs, a.rejected, N - over,
             over);
    if (a.jobs[a.njobs - 1].arrival > (double)(tmax - tmin + 1) / 1e3)
        FAIL("own Azure file: last arrival %.6f s beyond %.3f s", a.jobs[a.njobs - 1].arrival,
             (double)(tmax - tmin + 1) / 1e3);
    /* Same requests in the same order: every row's time is distinct (its
     * sub-ms digits are its index), so sorting by arrival orders both files
     * alike, though Azure's is reversed in blocks of 10. */
    if (o.njobs != a.njobs || o.rejected != a.rejected)
        FAIL("our format: kept %d rejected %d, Azure %d and %d", o.njobs, o.rejected, a.njobs,
             a.rejected);
    long long sa = 0, so = 0;
    for (int i = 0; i < a.njobs; i++) {
        if (i && (a.jobs[i].arrival < a.jobs[i - 1].arrival || o.jobs[i].arrival < o.jobs[i - 1].arrival))
            FAIL("arrivals not sorted at %d", i);
        if (a.jobs[i].arrival != o.jobs[i].arrival || a.jobs[i].prompt != o.jobs[i].prompt ||
            a.jobs[i].output != o.jobs[i].output)
            FAIL("job %d: Azure %.6f s %d+%d, ours %.6f s %d+%d", i, a.jobs[i].arrival,
                 a.jobs[i].prompt, a.jobs[i].output, o.jobs[i].arrival, o.jobs[i].prompt,
                 o.jobs[i].output);
        sa += (long long)a.jobs[i].prompt * 7919 + a.jobs[i].output;
        so += (long long)o.jobs[i].prompt * 7919 + o.jobs[i].output;
    }
    if (sa != so)
        FAIL("the two formats hold different requests");
    int bad = replay(&a, 2048, 1024, "own Azure file") || replay(&o, 2048, 1024, "own file, our format");
    pf_jobs_free(&a);
    pf_jobs_free(&o);
    return bad;
}

/* Part 2: the published trace, when present. */
static int real_trace(void)
{
    const char *path = PF_TRACE_DIR "/AzureLLMInferenceTrace_code.csv";
    if (access(path, R_OK) != 0) {
        printf("test_sim_trace: %s not found: the real-trace part is skipped\n", path);
        return 0;
    }
    /* Count the requests independently: every non-empty line after the
     * header. (The README says 8,818; the file as stored holds 8,819.) */
    FILE *f = fopen(path, "r");
    if (!f)
        FAIL("cannot open %s", path);
    int lines = 0, c, prev = '\n';
    while ((c = fgetc(f)) != EOF) {
        if (c == '\n' && prev != '\n')
            lines++;
        prev = c;
    }
    if (prev != '\n')
        lines++;
    fclose(f);
    int requests = lines - 1;
    pf_jobs j;
    char err[512];
    /* At the seed's MAX_SEQ_LEN most prompts are too long: rejected with a count. */
    if (pf_jobs_load_trace(&j, path, 2048, err, sizeof err) != PF_OK)
        FAIL("load at 2048: %s", err);
    int kept = j.njobs, rejected = j.rejected;
    pf_jobs_free(&j);
    if (requests < 8000 || kept + rejected != requests || rejected < 1000 || kept < 1000)
        FAIL("2048: kept %d rejected %d of %d requests (expected many over 2048)", kept, rejected, requests);
    /* Raised to 8192 every request fits (the longest prompt is 7,437). */
    if (pf_jobs_load_trace(&j, path, 8192 + 2048, err, sizeof err) != PF_OK)
        FAIL("load at 10240: %s", err);
    if (j.njobs != requests || j.rejected != 0)
        FAIL("10240: kept %d rejected %d", j.njobs, j.rejected);
    for (int i = 1; i < j.njobs; i++)
        if (j.jobs[i].arrival < j.jobs[i - 1].arrival)
            FAIL("arrivals not sorted at %d", i);
    /* One hour, in seconds since the earliest row. */
    double last = j.jobs[j.njobs - 1].arrival;
    if (j.jobs[0].arrival != 0.0 || last < 3000.0 || last > 3700.0)
        FAIL("arrivals %.6f .. %.6f s, expected 0 .. about one hour", j.jobs[0].arrival, last);
    printf("test_sim_trace: %d requests in the public trace (%d over 2048)\n", kept + rejected,
           rejected);
    pf_jobs head = {j.jobs, 1500, 0};
    int bad = replay(&head, 8192 + 2048, 8192, "public trace, first 1500");
    pf_jobs_free(&j);
    return bad;
}

int main(void)
{
    if (own_files())
        return 1;
    return real_trace();
}
