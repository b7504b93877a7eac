/* tests/test_tui_simmetrics.c - the simulator's statistics as vLLM's
 * Prometheus metrics (tui/simmetrics.h): names and types as vLLM's, gauges
 * follow the stats, counters only grow (also across a run's restart), and
 * the page served at /metrics reads back through our own parser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "net/metrics_http.h"
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
