/* tests/test_sim_trace.c - the public Azure LLM inference trace (code
 * service) loads as it is published and replays to the end without a leak.
 * The file lives outside the repository (PF_TRACE_DIR, by default
 * ../shared/traces); without it this test exits 77, which ctest reports as
 * skipped. A plain executable, so the skip is a real skip. */
#include <stdio.h>
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

int main(void)
{
    const char *path = PF_TRACE_DIR "/AzureLLMInferenceTrace_code.csv";
    if (access(path, R_OK) != 0) {
        printf("test_sim_trace: %s not found, skipped\n", path);
        return 77;
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
    if (pf_jobs_load_trace(&j, path, 20.0, 2048, err, sizeof err) != PF_OK)
        FAIL("load at 2048: %s", err);
    int kept = j.njobs, rejected = j.rejected;
    pf_jobs_free(&j);
    if (requests < 8000 || kept + rejected != requests || rejected < 1000 || kept < 1000)
        FAIL("2048: kept %d rejected %d of %d requests (expected many over 2048)", kept, rejected, requests);
    /* Raised to 8192 every request fits (the longest prompt is 7,437). */
    if (pf_jobs_load_trace(&j, path, 1.0, 8192 + 2048, err, sizeof err) != PF_OK)
        FAIL("load at 10240: %s", err);
    if (j.njobs != requests || j.rejected != 0)
        FAIL("10240: kept %d rejected %d", j.njobs, j.rejected);
    for (int i = 1; i < j.njobs; i++)
        if (j.jobs[i].arrival < j.jobs[i - 1].arrival)
            FAIL("arrivals not sorted at %d", i);
    /* One hour at 1 ms per step. */
    int last = j.jobs[j.njobs - 1].arrival;
    if (last < 3000000 || last > 3700000)
        FAIL("last arrival %d steps, expected about one hour at 1 ms", last);
    pf_jobs_free(&j);
    /* Replay a prefix of the trace through the paged simulator, 20 ms per
     * step (a decode iteration of a mid-size model). */
    if (pf_jobs_load_trace(&j, path, 20.0, 8192 + 2048, err, sizeof err) != PF_OK)
        FAIL("load at 20 ms: %s", err);
    pf_jobs head = {j.jobs, 1500, 0};
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.max_seq_len = 8192 + 2048;
    p.cfg.pool_blocks = 8192;
    p.watermark = 0.02;
    p.policy = PF_VICTIM_NEWEST;
    pf_sim *s = pf_sim_create(&p, &head, err, sizeof err);
    if (!s)
        FAIL("create: %s", err);
    pf_sim_stats st;
    int rc = pf_sim_run(s, &st);
    if (rc != PF_OK || !st.done || st.pool_used != 0 || pf_sim_check(s) != PF_OK)
        FAIL("replay: rc %d done %d used %d", rc, st.done, st.pool_used);
    printf("test_sim_trace: %d requests (%d over 2048), replayed 1500: %lld steps, %lld tokens, "
           "%lld preemptions\n",
           kept + rejected, rejected, (long long)st.step, (long long)st.tokens_generated,
           (long long)st.preemptions);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
    return 0;
}
