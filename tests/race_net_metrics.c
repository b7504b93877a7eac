/* tests/race_net_metrics.c - the metrics registry updated by two threads
 * while libmicrohttpd's thread renders it for HTTP clients, read by two
 * client threads at once from their first GET (libcurl's global set-up
 * must run once, not race); a plain executable for ThreadSanitizer, label
 * race. Each page read must parse cleanly and its counter must never go
 * backwards for the thread that reads it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "net/metrics_http.h"

static pf_prom_registry *reg;
static int ctr, gauge, hist;
static atomic_int stop;

static void *writer(void *arg)
{
    long k = (long)arg;
    while (!atomic_load(&stop)) {
        pf_prom_inc(reg, ctr, 1);
        pf_prom_set(reg, gauge, (double)k);
        pf_prom_observe(reg, hist, 0.01 * (double)(k % 7));
    }
    return NULL;
}

typedef struct {
    const char *url;
    int bad; /* read on the main thread after the join */
} reader_job;

/* 25 GETs, each page parsed and its counter checked against the last. */
static void *reader(void *arg)
{
    reader_job *j = arg;
    double last = -1;
    for (int i = 0; i < 25; i++) {
        char *body;
        size_t n;
        const char *why;
        if (pf_http_get(j->url, 5000, 1 << 20, &body, &n, NULL, &why) != 0) {
            fprintf(stderr, "race_net_metrics: GET failed: %s\n", why);
            j->bad = 1;
            return NULL;
        }
        pf_prom_page pg;
        double v = -1;
        if (pf_prom_parse(body, n, NULL, &pg) != 0 || pg.n_bad != 0 ||
            pf_prom_sum(&pg, "vllm:num_preemptions_total", &v) != 1 || v < last) {
            fprintf(stderr, "race_net_metrics: bad page %d (counter %g after %g)\n", i, v, last);
            j->bad = 1;
        }
        last = v;
        pf_prom_page_free(&pg);
        free(body);
    }
    return NULL;
}

int main(void)
{
    static const double bounds[] = {0.01, 0.05, 0.1};
    reg = pf_prom_registry_new("model_name=\"race\"");
    if (!reg)
        return 1;
    ctr = pf_prom_add(reg, "vllm:num_preemptions_total", "p", PF_PROM_COUNTER, NULL, 0);
    gauge = pf_prom_add(reg, "vllm:num_requests_running", "r", PF_PROM_GAUGE, NULL, 0);
    hist = pf_prom_add(reg, "vllm:e2e_request_latency_seconds", "e", PF_PROM_HISTOGRAM, bounds, 3);
    pf_msrv *s;
    const char *why;
    if (pf_msrv_start(NULL, 0, reg, &s, &why) != 0) {
        fprintf(stderr, "race_net_metrics: %s\n", why);
        return 1;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", pf_msrv_port(s));
    pthread_t th[2], rd[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer, (void *)(i + 1));
    reader_job jobs[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (reader_job){url, 0};
        pthread_create(&rd[i], NULL, reader, &jobs[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(rd[i], NULL);
    int bad = jobs[0].bad || jobs[1].bad;
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pf_msrv_stop(s);
    pf_prom_registry_free(reg);
    printf("race_net_metrics: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
