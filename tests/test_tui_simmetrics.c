/* tests/test_tui_simmetrics.c - the simulator's statistics as vLLM's
 * Prometheus metrics (tui/simmetrics.h): names and types as vLLM's, gauges
 * follow the stats, counters only grow (also across a run's restart), and
 * the page served at /metrics reads back through our own parser; the
 * latency histograms read back with exactly the bucket counts, count and sum
 * of the sketches they came from (sim/metrics.h), their quantiles in the
 * bucket of the sketch's own, and the prefix-cache counters as given. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "net/attach_model.h"
#include "net/metrics_http.h"
#include "sim/sched.h"
#include "tui/simmetrics.h"

static double value(pf_prom_registry *reg, const char *name, pf_prom_type want)
{
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(pf_prom_render(reg, &text, &len), PF_OK);
    pf_prom_page page;
    cr_assert_eq(pf_prom_parse(text, len, NULL, &page), PF_OK);
    cr_assert_eq(page.n_bad, 0, "our own page parses cleanly:\n%s", text);
    double v = -1;
    cr_assert_eq(pf_prom_sum(&page, name, &v), 1, "%s once in:\n%s", name, text);
    cr_assert_eq(pf_prom_type_of(&page, name), want, "%s's TYPE", name);
    pf_prom_page_free(&page);
    free(text);
    return v;
}

static pf_sim_stats stats(int running, int waiting, double kv, int64_t pre, int64_t tok, int64_t fin)
{
    pf_sim_stats st;
    memset(&st, 0, sizeof st);
    st.running = running;
    st.waiting = waiting;
    st.kv_usage = kv;
    st.preemptions = pre;
    st.tokens_generated = tok;
    st.finished = fin;
    return st;
}

Test(tui_simmetrics, gauges_follow_counters_only_grow)
{
    pf_simmetrics *m = pf_simmetrics_new("model_name=\"pagefault-sim\"");
    cr_assert_not_null(m);
    pf_prom_registry *r = pf_simmetrics_registry(m);
    pf_sim_stats st = stats(3, 5, 0.25, 7, 100, 2);
    cr_assert_eq(pf_simmetrics_update(m, &st), PF_OK);
    cr_assert_float_eq(value(r, "vllm:num_requests_running", PF_PROM_GAUGE), 3, 1e-12);
    cr_assert_float_eq(value(r, "vllm:num_requests_waiting", PF_PROM_GAUGE), 5, 1e-12);
    cr_assert_float_eq(value(r, "vllm:kv_cache_usage_perc", PF_PROM_GAUGE), 0.25, 1e-12);
    cr_assert_float_eq(value(r, "vllm:num_preemptions_total", PF_PROM_COUNTER), 7, 1e-12);
    cr_assert_float_eq(value(r, "vllm:generation_tokens_total", PF_PROM_COUNTER), 100, 1e-12);
    cr_assert_float_eq(value(r, "vllm:request_success_total", PF_PROM_COUNTER), 2, 1e-12);
    /* later in the run: counters move by what the totals grew */
    st = stats(1, 0, 0.5, 9, 150, 4);
    cr_assert_eq(pf_simmetrics_update(m, &st), PF_OK);
    cr_assert_float_eq(value(r, "vllm:num_preemptions_total", PF_PROM_COUNTER), 9, 1e-12);
    cr_assert_float_eq(value(r, "vllm:generation_tokens_total", PF_PROM_COUNTER), 150, 1e-12);
    cr_assert_float_eq(value(r, "vllm:num_requests_running", PF_PROM_GAUGE), 1, 1e-12);
    /* the run starts again (its totals fall): a counter never goes back */
    st = stats(2, 1, 0.1, 1, 20, 0);
    cr_assert_eq(pf_simmetrics_update(m, &st), PF_OK);
    cr_assert_float_eq(value(r, "vllm:num_preemptions_total", PF_PROM_COUNTER), 10, 1e-12);
    cr_assert_float_eq(value(r, "vllm:generation_tokens_total", PF_PROM_COUNTER), 170, 1e-12);
    cr_assert_float_eq(value(r, "vllm:request_success_total", PF_PROM_COUNTER), 4, 1e-12);
    cr_assert_float_eq(value(r, "vllm:kv_cache_usage_perc", PF_PROM_GAUGE), 0.1, 1e-12);
    cr_assert_eq(pf_simmetrics_update(NULL, &st), PF_ERR_ARG);
    pf_simmetrics_free(m);
}

Test(tui_simmetrics, served_at_metrics_on_loopback)
{
    pf_simmetrics *m = pf_simmetrics_new(NULL);
    cr_assert_not_null(m);
    pf_sim_stats st = stats(4, 2, 0.75, 3, 42, 1);
    cr_assert_eq(pf_simmetrics_update(m, &st), PF_OK);
    pf_msrv *srv = NULL;
    const char *why = NULL;
    cr_assert_eq(pf_msrv_start(NULL, 0, pf_simmetrics_registry(m), &srv, &why), PF_OK, "%s",
                 why ? why : "");
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", pf_msrv_port(srv));
    char *body = NULL;
    size_t len = 0;
    int truncated = 0;
    cr_assert_eq(pf_http_get(url, 5000, 1 << 20, &body, &len, &truncated, &why), PF_OK, "%s",
                 why ? why : "");
    pf_prom_page page;
    cr_assert_eq(pf_prom_parse(body, len, NULL, &page), PF_OK);
    double v = 0;
    cr_assert_eq(pf_prom_sum(&page, "vllm:generation_tokens_total", &v), 1);
    cr_assert_float_eq(v, 42, 1e-12);
    cr_assert_eq(pf_prom_sum(&page, "vllm:kv_cache_usage_perc", &v), 1);
    cr_assert_float_eq(v, 0.75, 1e-12);
    pf_prom_page_free(&page);
    free(body);
    pf_msrv_stop(srv);
    pf_simmetrics_free(m);
}

/* ---- latency histograms and prefix-cache counters ----------------------- */

/* The page as the server would render it, parsed back (no broken lines). */
static void page_of(pf_simmetrics *m, pf_prom_page *page)
{
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(pf_prom_render(pf_simmetrics_registry(m), &text, &len), PF_OK);
    cr_assert_eq(pf_prom_parse(text, len, NULL, page), PF_OK);
    cr_assert_eq(page->n_bad, 0, "our own page parses cleanly:\n%s", text);
    free(text);
}

/* Log-uniform in [lo, hi): latencies spread over many buckets. */
static double logu(pf_rng *g, double lo, double hi)
{
    return lo * pow(hi / lo, pf_rng_unit(g));
}

/* n requests and 4n inter-token gaps, log-uniformly spread. */
static void fill(pf_metrics *met, uint64_t seed, int n)
{
    pf_rng g;
    pf_rng_seed(&g, seed);
    for (int i = 0; i < n; i++) {
        pf_request_times r = {0};
        r.arrival_s = 10.0 * i;
        r.scheduled_s = r.arrival_s + logu(&g, 1e-4, 30);
        r.first_token_s = r.scheduled_s + logu(&g, 1e-3, 60);
        r.output_tokens = 1 + (int64_t)pf_rng_range(&g, 0, 300);
        r.finish_s = r.first_token_s + (double)(r.output_tokens - 1) * logu(&g, 5e-3, 0.5);
        r.prompt_tokens = 100;
        cr_assert_eq(pf_metrics_add_request(met, &r), PF_OK);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(pf_metrics_add_itl(met, logu(&g, 1e-3, 200), 1), PF_OK);
    }
}

/* Names in the registry's order, and the sketch each reads. */
static const struct {
    const char *name;
    pf_metric src;
} hists[] = {
    {"vllm:time_to_first_token_seconds", PF_MET_TTFT},
    {"vllm:inter_token_latency_seconds", PF_MET_ITL},
    {"vllm:request_time_per_output_token_seconds", PF_MET_TPOT},
    {"vllm:e2e_request_latency_seconds", PF_MET_E2E},
    {"vllm:request_queue_time_seconds", PF_MET_QUEUE},
    {"vllm:time_per_output_token_seconds", PF_MET_ITL}, /* vLLM < 0.11's name */
};

/* Every histogram on the page holds met's sketch plus base's (base may be
 * NULL): the cumulative bucket counts exactly, the count and the sum. */
static void expect_hists(const pf_prom_page *page, const pf_metrics *met, const pf_metrics *base)
{
    for (size_t i = 0; i < sizeof hists / sizeof hists[0]; i++) {
        const pf_latency *l = &met->lat[hists[i].src];
        const pf_latency *b = base ? &base->lat[hists[i].src] : NULL;
        int nb = 0;
        const double *bounds = pf_metric_buckets(hists[i].src, &nb);
        pf_prom_hist h;
        cr_assert_eq(pf_prom_histogram(page, hists[i].name, &h), nb + 1, "%s", hists[i].name);
        cr_expect_eq(pf_prom_type_of(page, hists[i].name), PF_PROM_HISTOGRAM);
        uint64_t cum = 0;
        for (int k = 0; k <= nb; k++) {
            cum += l->buckets[k] + (b ? b->buckets[k] : 0);
            cr_expect_float_eq(h.count[k], (double)cum, 0.5, "%s bucket %d", hists[i].name, k);
            if (k < nb)
                cr_expect_float_eq(h.le[k], bounds[k], 1e-12 * bounds[k], "%s le %d", hists[i].name, k);
        }
        cr_expect(isinf(h.le[nb]), "%s ends with +Inf", hists[i].name);
        double count = (double)(l->count + (b ? b->count : 0)), sum = l->sum + (b ? b->sum : 0);
        cr_expect_float_eq(h.total, count, 0.5, "%s count", hists[i].name);
        cr_expect_float_eq(h.sum, sum, 1e-9 * sum, "%s sum", hists[i].name);
    }
}

Test(tui_simmetrics, latency_histograms_as_the_sketches)
{
    pf_simmetrics *m = pf_simmetrics_new("model_name=\"pagefault-sim\"");
    pf_metrics *met = malloc(sizeof *met);
    cr_assert(m && met);
    cr_assert_eq(pf_metrics_init(met, 0, 0), PF_OK);
    fill(met, 7, 500);
    pf_prefix_stats pc = {.queries = 1000, .hits = 250};
    cr_assert_eq(pf_simmetrics_update_serving(m, met, &pc), PF_OK);
    pf_prom_page page;
    page_of(m, &page);
    expect_hists(&page, met, NULL);

    /* a quantile estimated from the page (histogram_quantile) falls in the
     * bucket that holds the sketch's own quantile of the same samples */
    for (size_t i = 0; i < 5; i++) {
        const pf_latency *l = &met->lat[hists[i].src];
        pf_prom_hist h;
        cr_assert_gt(pf_prom_histogram(&page, hists[i].name, &h), 1);
        const double qs[] = {0.5, 0.9, 0.99};
        for (int j = 0; j < 3; j++) {
            double est = pf_prom_quantile(&h, qs[j]), x = pf_latency_quantile(l, qs[j]);
            int k = 0;
            while (k < h.n - 1 && h.count[k] < qs[j] * h.total)
                k++;
            double lo = k ? h.le[k - 1] : 0, hi = isinf(h.le[k]) ? h.le[k - 1] : h.le[k];
            cr_expect(est >= lo && est <= hi, "%s q%.2f: estimate %g outside [%g, %g]", hists[i].name, qs[j],
                      est, lo, hi);
            /* the sketch is within 1/256 of the exact sample, which lies in
             * that bucket (or past the last finite bound) */
            cr_expect(x >= lo * (1 - 1.0 / 256) && (isinf(h.le[k]) || x <= hi * (1 + 1.0 / 256)),
                      "%s q%.2f: sketch %g outside [%g, %g]", hists[i].name, qs[j], x, lo, hi);
        }
    }
    double v = 0;
    cr_expect_eq(pf_prom_sum(&page, "vllm:prefix_cache_queries_total", &v), 1);
    cr_expect_float_eq(v, 1000, 1e-12);
    cr_expect_eq(pf_prom_sum(&page, "vllm:prefix_cache_hits_total", &v), 1);
    cr_expect_float_eq(v, 250, 1e-12);
    cr_expect_eq(pf_prom_type_of(&page, "vllm:prefix_cache_hits_total"), PF_PROM_COUNTER);
    pf_prom_page_free(&page);
    cr_expect_eq(pf_simmetrics_update_serving(NULL, met, &pc), PF_ERR_ARG);
    free(met);
    pf_simmetrics_free(m);
}

/* Updates move the histograms by what the sketches grew; a new run (the
 * sketches start again) is added on top: the series never go back. */
Test(tui_simmetrics, histograms_only_grow_across_updates_and_restarts)
{
    pf_simmetrics *m = pf_simmetrics_new(NULL);
    pf_metrics *met = malloc(sizeof *met), *run2 = malloc(sizeof *run2);
    cr_assert(m && met && run2);
    cr_assert_eq(pf_metrics_init(met, 0, 0), PF_OK);
    fill(met, 1, 100);
    cr_assert_eq(pf_simmetrics_update_serving(m, met, NULL), PF_OK);
    fill(met, 2, 150); /* the same run goes on */
    cr_assert_eq(pf_simmetrics_update_serving(m, met, NULL), PF_OK);
    cr_assert_eq(pf_simmetrics_update_serving(m, met, NULL), PF_OK); /* no growth: no change */
    pf_prom_page page;
    page_of(m, &page);
    expect_hists(&page, met, NULL);
    pf_prom_page_free(&page);
    /* a new run with fewer samples: added whole, on top of the first */
    cr_assert_eq(pf_metrics_init(run2, 0, 0), PF_OK);
    fill(run2, 3, 40);
    cr_assert_eq(pf_simmetrics_update_serving(m, run2, NULL), PF_OK);
    page_of(m, &page);
    expect_hists(&page, run2, met);
    pf_prom_page_free(&page);
    free(met);
    free(run2);
    pf_simmetrics_free(m);
}

/* From the scheduler core itself: a prefix-caching run's metrics and cache
 * counters, served: the hit rate a board (or `attach`) computes from the
 * page is the scheduler's, and every finished request is in the TTFT
 * histogram. */
Test(tui_simmetrics, a_scheduler_run_served_as_vllm)
{
    static pf_req j[60];
    for (int i = 0; i < 60; i++) {
        memset(&j[i], 0, sizeof j[i]);
        j[i].arrival = i * 0.5;
        j[i].prompt = 80 + (i % 5) * 10;
        j[i].output = 20 + (i % 7) * 9;
        j[i].group = i % 3;
        j[i].shared_tokens = 48;
    }
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.prefix_caching = 1;
    p.max_num_batched_tokens = 256;
    char err[200];
    pf_sched *s = pf_sched_create(&p, j, 60, 64, NULL, NULL, err, sizeof err);
    cr_assert_not_null(s, "%s", err);
    cr_assert_eq(pf_sched_run(s), PF_OK);
    pf_metrics *met = malloc(sizeof *met);
    cr_assert(met);
    cr_assert_eq(pf_sched_metrics(s, met), PF_OK);
    pf_prefix_stats ps;
    pf_sched_prefix_stats(s, &ps);
    cr_assert_gt(ps.hits, 0, "the groups share prefixes");
    pf_simmetrics *m = pf_simmetrics_new(NULL);
    cr_assert(m);
    cr_assert_eq(pf_simmetrics_update_serving(m, met, &ps), PF_OK);
    pf_prom_page page;
    page_of(m, &page);
    expect_hists(&page, met, NULL);
    double q = 0, h = 0;
    cr_assert_eq(pf_prom_sum(&page, "vllm:prefix_cache_queries_total", &q), 1);
    cr_assert_eq(pf_prom_sum(&page, "vllm:prefix_cache_hits_total", &h), 1);
    cr_expect_float_eq(h / q, (double)ps.hits / (double)ps.queries, 1e-12);
    pf_prom_hist th;
    cr_assert_gt(pf_prom_histogram(&page, "vllm:time_to_first_token_seconds", &th), 1);
    cr_expect_float_eq(th.total, (double)met->requests, 0.5);
    cr_expect_eq(met->requests, 60);
    /* and `pagefault attach` reading this page shows the scheduler's hit
     * rate and the quantiles the page's histograms give */
    pf_attach *a = pf_attach_new(0);
    cr_assert(a);
    pf_attach_metrics(a, &page, 1.0);
    const pf_attach_counts *c = pf_attach_counts_get(a);
    cr_expect_float_eq(c->hit_rate, (double)ps.hits / (double)ps.queries, 1e-12);
    cr_expect_float_eq(c->ttft[0], pf_prom_quantile(&th, 0.5), 1e-12);
    cr_expect_float_eq(c->ttft[2], pf_prom_quantile(&th, 0.99), 1e-12);
    pf_prom_hist eh;
    cr_assert_gt(pf_prom_histogram(&page, "vllm:e2e_request_latency_seconds", &eh), 1);
    cr_expect_float_eq(c->e2e[1], pf_prom_quantile(&eh, 0.9), 1e-12);
    cr_expect(!isnan(c->ttft[0]) && !isnan(c->e2e[1]));
    pf_attach_free(a);
    pf_prom_page_free(&page);
    free(met);
    pf_simmetrics_free(m);
    pf_sched_destroy(s);
}
