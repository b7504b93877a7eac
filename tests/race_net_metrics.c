/* tests/race_net_metrics.c - the metrics registry updated by two threads
 * while libmicrohttpd's thread renders it for HTTP clients (a plain
 * executable for ThreadSanitizer; label race). Each page read must parse
 * cleanly and its counter must never go backwards. */
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
    pthread_t th[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer, (void *)(i + 1));
    int bad = 0;
    double last = -1;
    for (int i = 0; i < 50; i++) {
        char *body;
        size_t n;
        if (pf_http_get(url, 5000, 1 << 20, &body, &n, NULL, &why) != 0) {
            fprintf(stderr, "race_net_metrics: GET failed: %s\n", why);
            bad = 1;
            break;
        }
        pf_prom_page pg;
        double v = -1;
        if (pf_prom_parse(body, n, NULL, &pg) != 0 || pg.n_bad != 0 ||
            pf_prom_sum(&pg, "vllm:num_preemptions_total", &v) != 1 || v < last) {
            fprintf(stderr, "race_net_metrics: bad page %d (counter %g after %g)\n", i, v, last);
            bad = 1;
        }
        last = v;
        pf_prom_page_free(&pg);
        free(body);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pf_msrv_stop(s);
    pf_prom_registry_free(reg);
    printf("race_net_metrics: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
