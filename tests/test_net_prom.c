/* tests/test_net_prom.c - net/prom: the Prometheus text parser on a vLLM-like
 * page, broken and oversized input, quantiles as histogram_quantile computes
 * them, and the registry's writer read back by the parser, also under a
 * locale whose decimal point is a comma. */
#include <criterion/criterion.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "net/prom.h"

/* Two engines (data-parallel ranks) of one vLLM server, as its /metrics
 * page prints them (trimmed). */
static const char *page_vllm =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4.0\n"
    "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n"
    "# TYPE vllm:num_preemptions_total counter\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 7.0\n"
    "vllm:num_preemptions_total{engine=\"1\",model_name=\"m\"} 5.0 1733150000000\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 10.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 30.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 40.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 40.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 10.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.5\",model_name=\"m\"} 10.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1.0\",model_name=\"m\"} 50.0\n"
    "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 60.0\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 12.5\n"
    "vllm:time_to_first_token_seconds_sum{engine=\"1\",model_name=\"m\"} 50.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 40.0\n"
    "vllm:time_to_first_token_seconds_count{engine=\"1\",model_name=\"m\"} 60.0\n"
    "weird_label{a=\"x\\\"y\\\\z\\n\", b = \"2\" ,} 1e3\r\n"
    "   \n";

Test(net_prom, parses_a_vllm_page)
{
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(page_vllm, strlen(page_vllm), NULL, &pg), 0);
    cr_expect_eq(pg.n_bad, 0);
    cr_expect_eq(pg.n_samples, 17);
    double v = 0;
    cr_expect_eq(pf_prom_sum(&pg, "vllm:num_requests_running", &v), 2);
    cr_expect_float_eq(v, 7.0, 1e-12);
    cr_expect_eq(pf_prom_sum(&pg, "vllm:num_preemptions_total", &v), 2);
    cr_expect_float_eq(v, 12.0, 1e-12);
    cr_expect_eq(pf_prom_sum(&pg, "weird_label", &v), 1);
    cr_expect_float_eq(v, 1000.0, 1e-12);
    cr_expect_eq(pf_prom_sum(&pg, "absent", &v), 0);
    cr_expect_eq(pf_prom_type_of(&pg, "vllm:num_preemptions_total"), PF_PROM_COUNTER);
    cr_expect_eq(pf_prom_type_of(&pg, "vllm:time_to_first_token_seconds"), PF_PROM_HISTOGRAM);

    pf_prom_hist h;
    cr_assert_eq(pf_prom_histogram(&pg, "vllm:time_to_first_token_seconds", &h), 4);
    cr_expect_float_eq(h.le[0], 0.1, 1e-12);
    cr_expect(isinf(h.le[3]));
    cr_expect_float_eq(h.count[0], 20.0, 1e-12); /* summed by le */
    cr_expect_float_eq(h.count[1], 40.0, 1e-12);
    cr_expect_float_eq(h.count[2], 90.0, 1e-12);
    cr_expect_float_eq(h.count[3], 100.0, 1e-12);
    cr_expect_float_eq(h.total, 100.0, 1e-12);
    cr_expect_float_eq(h.sum, 62.5, 1e-12);
    /* rank 50 falls in (0.5, 1.0] holding 50 of which 10 below: 0.5 + 0.5 * 10/50 */
    cr_expect_float_eq(pf_prom_quantile(&h, 0.5), 0.6, 1e-12);
    /* rank 10 in the first bucket (0, 0.1] of 20: 0.05 */
    cr_expect_float_eq(pf_prom_quantile(&h, 0.1), 0.05, 1e-12);
    /* rank 99 falls in +Inf: the highest finite bound */
    cr_expect_float_eq(pf_prom_quantile(&h, 0.99), 1.0, 1e-12);
    pf_prom_page_free(&pg);
}

Test(net_prom, quantile_edge_cases)
{
    pf_prom_hist h = {0};
    cr_expect(isnan(pf_prom_quantile(&h, 0.5)));
    h.n = 2;
    h.le[0] = 1;
    h.le[1] = INFINITY;
    cr_expect(isnan(pf_prom_quantile(&h, 0.5))); /* no observations */
    h.count[0] = 4;
    h.count[1] = 4;
    cr_expect_float_eq(pf_prom_quantile(&h, 0.5), 0.5, 1e-12);
    cr_expect(isinf(pf_prom_quantile(&h, 2)));
    h.le[1] = 2; /* no +Inf bucket */
    cr_expect(isnan(pf_prom_quantile(&h, 0.5)));
}

Test(net_prom, broken_lines_are_counted_not_fatal)
{
    const char *txt =
        "good 1\n"
        "nospace1\n"
        "bad{le=\"x\"} 1\n"
        "bad{unterminated=\"x} 1\n"
        "9starts_with_digit 1\n"
        "val notanumber\n"
        "trailing 1 2 3\n"
        "# TYPE t bogus\n"
        "# TYPE\n"
        "# just a comment\n"
        "good 2 -17\n"
        "tail_without_newline 5";
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, strlen(txt), NULL, &pg), 0);
    cr_expect_eq(pg.n_bad, 8);
    double v;
    cr_expect_eq(pf_prom_sum(&pg, "good", &v), 2);
    cr_expect_float_eq(v, 3.0, 1e-12);
    cr_expect_eq(pf_prom_sum(&pg, "tail_without_newline", &v), 1);
    pf_prom_page_free(&pg);
}

Test(net_prom, size_line_and_sample_caps)
{
    pf_prom_limits lim = pf_prom_limits_default();
    lim.max_line = 20;
    lim.max_samples = 3;
    lim.max_bytes = 60;
    const char *txt = "a 1\nb 2\nthis_line_is_much_longer_than_twenty 3\nc 3\nd 4\ne 5\nf 6\ng 7\nh 8\n";
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, strlen(txt), &lim, &pg), 0);
    cr_expect_eq(pg.n_long, 1);
    cr_expect_eq(pg.n_samples, 3);
    cr_expect_gt(pg.n_dropped, 0);
    cr_expect_eq(pg.truncated, 1);
    pf_prom_page_free(&pg);
}

Test(net_prom, registry_renders_what_the_parser_reads_back)
{
    static const double ttft[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                  0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
    pf_prom_registry *r = pf_prom_registry_new("model_name=\"sim\"");
    cr_assert(r);
    int c = pf_prom_add(r, "vllm:num_preemptions_total", "Cumulative preemptions.", PF_PROM_COUNTER, NULL, 0);
    int g = pf_prom_add(r, "vllm:kv_cache_usage_perc", "KV-cache usage.\nOne line.", PF_PROM_GAUGE, NULL, 0);
    int h = pf_prom_add(r, "vllm:time_to_first_token_seconds", "TTFT.", PF_PROM_HISTOGRAM, ttft,
                        (int)(sizeof ttft / sizeof ttft[0]));
    cr_assert(c >= 0 && g >= 0 && h >= 0);
    cr_expect_eq(pf_prom_add(r, "bad name", "", PF_PROM_GAUGE, NULL, 0), PF_ERR_ARG);
    cr_expect_eq(pf_prom_inc(r, c, -1), PF_ERR_ARG);
    cr_expect_eq(pf_prom_set(r, c, 1), PF_ERR_ARG);
    cr_expect_eq(pf_prom_observe(r, g, 1), PF_ERR_ARG);
    cr_expect_eq(pf_prom_inc(r, 99, 1), PF_ERR_ARG);
    pf_prom_inc(r, c, 3);
    pf_prom_inc(r, c, 2);
    pf_prom_set(r, g, 0.375);
    /* 100 observations, uniform in (0.1, 0.25]: the median interpolates to
     * the middle of that bucket */
    for (int i = 0; i < 100; i++)
        pf_prom_observe(r, h, 0.1 + 0.15 * (i + 0.5) / 100.0);
    char *txt;
    size_t n;
    cr_assert_eq(pf_prom_render(r, &txt, &n), 0);
    cr_expect(strstr(txt, "# TYPE vllm:time_to_first_token_seconds histogram\n") != NULL);
    cr_expect(strstr(txt, "vllm:time_to_first_token_seconds_bucket{model_name=\"sim\",le=\"0.25\"} 100\n") != NULL,
              "%s", txt);
    /* whole bounds as prometheus_client writes them: le="1.0", not le="1" */
    cr_expect(strstr(txt, "le=\"1.0\"} ") != NULL && strstr(txt, "le=\"2560.0\"} ") != NULL &&
                  strstr(txt, "le=\"1\"}") == NULL && strstr(txt, "le=\"+Inf\"} 100\n") != NULL,
              "%s", txt);
    cr_expect(strstr(txt, "# HELP vllm:kv_cache_usage_perc KV-cache usage.\\nOne line.\n") != NULL);
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, n, NULL, &pg), 0);
    cr_expect_eq(pg.n_bad, 0);
    double v;
    cr_expect_eq(pf_prom_sum(&pg, "vllm:num_preemptions_total", &v), 1);
    cr_expect_float_eq(v, 5.0, 1e-12);
    cr_expect_eq(pf_prom_sum(&pg, "vllm:kv_cache_usage_perc", &v), 1);
    cr_expect_float_eq(v, 0.375, 1e-12);
    pf_prom_hist hh;
    cr_assert_eq(pf_prom_histogram(&pg, "vllm:time_to_first_token_seconds", &hh), 23);
    cr_expect_float_eq(hh.total, 100, 1e-12);
    cr_expect_float_eq(pf_prom_quantile(&hh, 0.5), 0.175, 1e-9);
    cr_expect_eq(pf_prom_type_of(&pg, "vllm:kv_cache_usage_perc"), PF_PROM_GAUGE);
    pf_prom_page_free(&pg);
    free(txt);
    pf_prom_registry_free(r);
}

/* pf_prom_hist_add: bucket counts from elsewhere land in the right buckets,
 * add up over calls, and bad shapes are refused without a change. */
Test(net_prom, histogram_counts_added_from_a_sketch)
{
    static const double b[] = {0.5, 1.0, 2.0};
    pf_prom_registry *r = pf_prom_registry_new(NULL);
    cr_assert(r);
    int h = pf_prom_add(r, "vllm:e2e_request_latency_seconds", "e2e.", PF_PROM_HISTOGRAM, b, 3);
    int g = pf_prom_add(r, "vllm:num_requests_running", "running.", PF_PROM_GAUGE, NULL, 0);
    cr_assert(h >= 0 && g >= 0);
    const uint64_t c1[4] = {1, 2, 0, 1}, c2[4] = {0, 1, 3, 0};
    cr_expect_eq(pf_prom_hist_add(r, h, c1, 4, 5.5, 4), 0);
    cr_expect_eq(pf_prom_hist_add(r, h, c2, 4, 4.5, 4), 0);
    cr_expect_eq(pf_prom_hist_add(r, h, c2, 3, 1, 4), PF_ERR_ARG);  /* +Inf missing */
    cr_expect_eq(pf_prom_hist_add(r, h, c2, 4, 1, 3), PF_ERR_ARG);  /* count != sum of counts */
    cr_expect_eq(pf_prom_hist_add(r, h, c2, 4, -1, 4), PF_ERR_ARG); /* negative sum */
    cr_expect_eq(pf_prom_hist_add(r, g, c2, 4, 1, 4), PF_ERR_ARG);  /* not a histogram */
    char *txt;
    size_t n;
    cr_assert_eq(pf_prom_render(r, &txt, &n), 0);
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, n, NULL, &pg), 0);
    pf_prom_hist hh;
    cr_assert_eq(pf_prom_histogram(&pg, "vllm:e2e_request_latency_seconds", &hh), 4);
    const double cum[4] = {1, 4, 7, 8};
    for (int k = 0; k < 4; k++)
        cr_expect_float_eq(hh.count[k], cum[k], 1e-12, "bucket %d", k);
    cr_expect_float_eq(hh.total, 8, 1e-12);
    cr_expect_float_eq(hh.sum, 10.0, 1e-12);
    pf_prom_page_free(&pg);
    free(txt);
    pf_prom_registry_free(r);
}

/* A NUL inside a value or an `le` ends strtod's string inside the token:
 * "1\0junk" was read as 1 and "2\0x" as the bound 2. Such lines break the
 * format: counted and skipped like any other. */
Test(net_prom, a_nul_inside_a_number_breaks_the_line)
{
    static const char txt[] = "a 1\0junk\nb_bucket{le=\"2\0x\"} 3\nc 4\n";
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, sizeof txt - 1, NULL, &pg), 0);
    double v = 0;
    cr_expect_eq(pg.n_bad, 2);
    cr_expect_eq(pf_prom_sum(&pg, "a", &v), 0, "a value read as %g", v);
    cr_expect_eq(pf_prom_sum(&pg, "b_bucket", &v), 0);
    cr_expect_eq(pf_prom_sum(&pg, "c", &v), 1);
    cr_expect_float_eq(v, 4.0, 1e-12);
    pf_prom_page_free(&pg);
}

/* LC_ALL set to a locale whose decimal point is a comma (the dashboard sets
 * LC_ALL from the environment): an installed one, else one built with
 * localedef into a temporary LOCPATH (removed at once: setlocale has it
 * mapped). Returns 1 when such a locale is now in force. */
static int set_comma_locale(void)
{
    static const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "de_DE", "fr_FR"};
    int ok = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !ok; i++)
        ok = setlocale(LC_ALL, names[i]) != NULL;
    if (!ok) {
        char dir[] = "/tmp/pf_prom_locale_XXXXXX", cmd[160];
        if (!mkdtemp(dir))
            return 0;
        snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
        if (system(cmd) != -1 && setenv("LOCPATH", dir, 1) == 0)
            ok = setlocale(LC_ALL, "de_DE.UTF-8") != NULL;
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            ok = 0;
    }
    return ok && strcmp(localeconv()->decimal_point, ",") == 0;
}

/* Under such a locale the registry wrote "0,375" (a page Prometheus refuses
 * whole) and the parser stopped at the dot of every "0.25". Numbers on the
 * wire are C numbers whatever the locale. */
Test(net_prom, numbers_are_c_numbers_under_a_decimal_comma_locale)
{
    /* scripts/setup.sh installs Debian's locales (localedef's de_DE source),
     * so a missing one is a broken set-up, reported as such: Criterion's
     * skip would be counted as a pass */
    cr_assert(set_comma_locale(), "no locale with a decimal comma here, and localedef could not "
                                  "build de_DE.UTF-8 (Debian: apt-get install locales)");
    static const double b[] = {0.5, 2.5};
    pf_prom_registry *r = pf_prom_registry_new(NULL);
    cr_assert(r);
    int g = pf_prom_add(r, "vllm:kv_cache_usage_perc", "usage.", PF_PROM_GAUGE, NULL, 0);
    int h = pf_prom_add(r, "vllm:e2e_request_latency_seconds", "e2e.", PF_PROM_HISTOGRAM, b, 2);
    cr_assert(g >= 0 && h >= 0);
    pf_prom_set(r, g, 0.375);
    pf_prom_observe(r, h, 0.25);
    char *txt;
    size_t n;
    cr_assert_eq(pf_prom_render(r, &txt, &n), 0);
    cr_expect(strstr(txt, "\nvllm:kv_cache_usage_perc 0.375\n") != NULL, "%s", txt);
    cr_expect(strstr(txt, "vllm:e2e_request_latency_seconds_bucket{le=\"0.5\"} 1\n") != NULL, "%s", txt);
    cr_expect(strstr(txt, "vllm:e2e_request_latency_seconds_sum 0.25\n") != NULL, "%s", txt);
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(txt, n, NULL, &pg), 0);
    double v = 0;
    cr_expect_eq(pg.n_bad, 0);
    cr_expect_eq(pf_prom_sum(&pg, "vllm:kv_cache_usage_perc", &v), 1);
    cr_expect_float_eq(v, 0.375, 1e-12);
    pf_prom_hist hh;
    cr_expect_eq(pf_prom_histogram(&pg, "vllm:e2e_request_latency_seconds", &hh), 3);
    cr_expect_float_eq(hh.le[1], 2.5, 1e-12);
    pf_prom_page_free(&pg);
    free(txt);
    pf_prom_registry_free(r);
    /* the caller's locale is left as it was */
    cr_expect_str_eq(localeconv()->decimal_point, ",");
}
