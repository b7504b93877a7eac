/* tests/race_tui_simmetrics.c - the simulator's thread folding its latency
 * sketches and prefix-cache counters into the /metrics registry
 * (pf_simmetrics_update_serving) while another thread renders the page, as
 * the HTTP server's thread does under --metrics-port. Every page rendered
 * meanwhile must be whole (each histogram's buckets cumulative, its +Inf
 * bucket equal to its count, counts never going back between pages), and
 * the last one equal to the sketches. A plain executable (label race) for
 * TSan; exit 0, or 1 with a line per failure. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "net/prom.h"
#include "tui/simmetrics.h"

enum { ROUNDS = 2000 };

typedef struct {
    pf_simmetrics *m;
    pf_metrics *met;
    atomic_int done;
    atomic_int pages; /* rendered so far: the updater starts after the first */
    int failed;
} job;

static void *updater(void *arg)
{
    job *j = arg;
    pf_prefix_stats pc = {0};
    while (atomic_load(&j->pages) == 0)
        sched_yield();
    for (int r = 0; r < ROUNDS; r++) {
        pf_request_times t = {0};
        t.arrival_s = r;
        t.scheduled_s = r + 0.001 * (r % 17);
        t.first_token_s = t.scheduled_s + 0.01 * (1 + r % 29);
        t.output_tokens = 1 + r % 50;
        t.finish_s = t.first_token_s + 0.02 * (double)(t.output_tokens - 1);
        if (pf_metrics_add_request(j->met, &t) != PF_OK || pf_metrics_add_itl(j->met, 0.002 * (1 + r % 41), 3))
            j->failed = 1;
        pc.queries += 100;
        pc.hits += 40;
        if (pf_simmetrics_update_serving(j->m, j->met, &pc) != PF_OK)
            j->failed = 1;
    }
    atomic_store(&j->done, 1);
    return NULL;
}

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "race_tui_simmetrics: %s\n", what);
        failures++;
    }
}

/* One rendered page: whole histograms; *ttft gets the TTFT count. */
static void check_page(pf_simmetrics *m, double *ttft, double *hits)
{
    char *text = NULL;
    size_t len = 0;
    pf_prom_page page;
    if (pf_prom_render(pf_simmetrics_registry(m), &text, &len) != PF_OK) {
        check(0, "render failed");
        return;
    }
    check(pf_prom_parse(text, len, NULL, &page) == PF_OK && page.n_bad == 0, "the page does not parse cleanly");
    const char *names[] = {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                           "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds"};
    for (int i = 0; i < 4; i++) {
        pf_prom_hist h;
        if (pf_prom_histogram(&page, names[i], &h) < 2) {
            check(0, "a histogram is missing");
            continue;
        }
        for (int k = 1; k < h.n; k++)
            check(h.count[k] >= h.count[k - 1], "buckets not cumulative: a torn histogram");
        check(isinf(h.le[h.n - 1]) && h.count[h.n - 1] == h.total, "+Inf bucket differs from the count");
        if (i == 0) {
            check(h.total >= *ttft, "the TTFT count went back");
            *ttft = h.total;
        }
    }
    double v = 0;
    if (pf_prom_sum(&page, "vllm:prefix_cache_hits_total", &v) == 1) {
        check(v >= *hits, "the hits counter went back");
        *hits = v;
    }
    pf_prom_page_free(&page);
    free(text);
}

int main(void)
{
    job j = {.m = pf_simmetrics_new("model_name=\"pagefault-sim\""), .met = malloc(sizeof(pf_metrics))};
    if (!j.m || !j.met || pf_metrics_init(j.met, 0, 0) != PF_OK) {
        fprintf(stderr, "race_tui_simmetrics: setup failed\n");
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, updater, &j) != 0) {
        fprintf(stderr, "race_tui_simmetrics: no thread\n");
        return 1;
    }
    double ttft = 0, hits = 0;
    int pages = 0;
    while (!atomic_load(&j.done) || pages < 3) {
        check_page(j.m, &ttft, &hits);
        atomic_store(&j.pages, ++pages);
    }
    pthread_join(th, NULL);
    check(!j.failed, "an update failed");
    check_page(j.m, &ttft, &hits);
    check(ttft == (double)j.met->lat[PF_MET_TTFT].count && ttft == ROUNDS, "the last page misses requests");
    check(hits == 40.0 * ROUNDS, "the last page misses prefix hits");
    printf("race_tui_simmetrics: %d pages rendered during %d updates\n", pages, ROUNDS);
    free(j.met);
    pf_simmetrics_free(j.m);
    return failures ? 1 : 0;
}
