/* tests/test_sim_metrics.c - latency metrics (sim/metrics.h): vLLM's names
 * and buckets, one request's figures by hand, quantiles against the exact
 * nearest-rank value of sorted samples, Prometheus bucket counts, SLO
 * attainment and goodput, throughput, merging, bad input, 10^6 requests. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "sim/metrics.h"

static pf_metrics *new_metrics(double ttft, double tpot)
{
    pf_metrics *m = malloc(sizeof *m);
    cr_assert_not_null(m);
    cr_assert_eq(pf_metrics_init(m, ttft, tpot), PF_OK);
    return m;
}

static pf_request_times req(double arrival, double sched, double first, double finish,
                            int64_t prompt, int64_t out)
{
    pf_request_times r = {arrival, sched, first, finish, prompt, out};
    return r;
}

Test(metrics, vllm_names_and_buckets)
{
    cr_assert_str_eq(pf_metric_name(PF_MET_TTFT), "time_to_first_token");
    cr_assert_str_eq(pf_metric_name(PF_MET_ITL), "inter_token_latency");
    cr_assert_str_eq(pf_metric_name(PF_MET_E2E), "e2e_request_latency");
    cr_assert_str_eq(pf_metric_name(PF_MET_QUEUE), "request_queue_time");
    cr_assert_str_eq(pf_metric_prom_name(PF_MET_TTFT), "vllm:time_to_first_token_seconds");
    cr_assert_str_eq(pf_metric_prom_name(PF_MET_ITL), "vllm:inter_token_latency_seconds");
    cr_assert_null(pf_metric_name(PF_MET_COUNT));
    for (int m = 0; m < PF_MET_COUNT; m++) {
        int n = 0;
        const double *b = pf_metric_buckets((pf_metric)m, &n);
        cr_assert_not_null(b);
        cr_assert(n > 0 && n <= PF_METRICS_MAX_BUCKETS);
        for (int i = 1; i < n; i++)
            cr_assert_gt(b[i], b[i - 1], "metric %d bucket %d not ascending", m, i);
    }
    int n;
    const double *t = pf_metric_buckets(PF_MET_TTFT, &n);
    cr_assert_eq(n, 22);
    cr_assert_float_eq(t[0], 0.001, 0);
    cr_assert_float_eq(t[21], 2560.0, 0);
    const double *i = pf_metric_buckets(PF_MET_ITL, &n);
    cr_assert_eq(n, 19);
    cr_assert_float_eq(i[0], 0.01, 0);
    cr_assert_float_eq(i[18], 80.0, 0);
    cr_assert_eq(pf_metric_buckets(PF_MET_TPOT, NULL), i);
    const double *e = pf_metric_buckets(PF_MET_E2E, &n);
    cr_assert_eq(n, 21);
    cr_assert_float_eq(e[0], 0.3, 0);
    cr_assert_float_eq(e[20], 7680.0, 0);
    cr_assert_eq(pf_metric_buckets(PF_MET_QUEUE, NULL), e);
    cr_assert_null(pf_metric_buckets(PF_MET_COUNT, &n));
    cr_assert_eq(n, 0);
}

Test(metrics, one_request_by_hand)
{
    pf_metrics *m = new_metrics(0, 0);
    /* arrives at 10, scheduled at 10.5, first token at 11.25, 101 tokens by 13.25 */
    pf_request_times r = req(10.0, 10.5, 11.25, 13.25, 500, 101);
    cr_assert_eq(pf_metrics_add_request(m, &r), PF_OK);
    pf_metrics_summary s;
    pf_metrics_summarize(m, 0, &s);
    cr_assert_eq(s.lat[PF_MET_TTFT].count, 1);
    cr_assert_float_eq(s.lat[PF_MET_TTFT].p50, 1.25, 0);
    cr_assert_float_eq(s.lat[PF_MET_TTFT].p99, 1.25, 0);
    cr_assert_float_eq(s.lat[PF_MET_QUEUE].mean, 0.5, 0);
    cr_assert_float_eq(s.lat[PF_MET_E2E].p90, 3.25, 0);
    cr_assert_float_eq(s.lat[PF_MET_TPOT].mean, 2.0 / 100, 1e-15);
    cr_assert_eq(s.lat[PF_MET_ITL].count, 0, "ITL is fed per token, not per request");
    cr_assert_float_eq(s.duration_s, 3.25, 0);
    cr_assert_float_eq(s.request_throughput, 1 / 3.25, 1e-15);
    cr_assert_float_eq(s.output_throughput, 101 / 3.25, 1e-12);
    cr_assert_float_eq(s.total_token_throughput, 601 / 3.25, 1e-12);
    cr_assert_float_eq(s.slo_attainment, 1.0, 0, "no objective: always met");
    /* an explicit duration wins */
    pf_metrics_summarize(m, 10.0, &s);
    cr_assert_float_eq(s.request_throughput, 0.1, 1e-15);
    free(m);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Log-uniform samples over seven decades: every quantile within 1/256 of
 * the exact nearest-rank value, the mean exact to rounding. */
Test(metrics, quantiles_within_the_stated_error)
{
    enum { N = 100000 };
    double *x = malloc(N * sizeof *x);
    cr_assert_not_null(x);
    pf_metrics *m = new_metrics(0, 0);
    pf_rng rng;
    pf_rng_seed(&rng, 7);
    double sum = 0;
    for (int i = 0; i < N; i++) {
        x[i] = 1e-4 * pow(10.0, 7.0 * pf_rng_unit(&rng));
        sum += x[i];
        cr_assert_eq(pf_metrics_add_itl(m, x[i], 1), PF_OK);
    }
    qsort(x, N, sizeof *x, cmp_double);
    const pf_latency *l = &m->lat[PF_MET_ITL];
    const double qs[] = {0.0, 0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0};
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        long k = (long)ceil(qs[i] * N);
        if (k < 1)
            k = 1;
        double exact = x[k - 1], got = pf_latency_quantile(l, qs[i]);
        cr_assert_leq(fabs(got - exact), exact / 256.0, "q %g: %.9g vs exact %.9g", qs[i], got,
                      exact);
    }
    cr_assert_float_eq(pf_latency_quantile(l, 0), x[0], 0, "min is exact");
    cr_assert_float_eq(pf_latency_quantile(l, 1), x[N - 1], 0, "max is exact");
    pf_latency_summary s;
    pf_latency_summarize(l, &s);
    cr_assert_float_eq(s.mean, sum / N, 1e-12 * sum / N);
    cr_assert_eq(s.count, N);
    free(x);
    free(m);
}

Test(metrics, out_of_range_samples)
{
    pf_metrics *m = new_metrics(0, 0);
    cr_assert_eq(pf_metrics_add_itl(m, 0.0, 3), PF_OK);     /* below 2^-20 s */
    cr_assert_eq(pf_metrics_add_itl(m, 2.0e7, 1), PF_OK);   /* above 2^23 s */
    const pf_latency *l = &m->lat[PF_MET_ITL];
    cr_assert_eq(l->under, 3);
    cr_assert_eq(l->over, 1);
    cr_assert_float_eq(pf_latency_quantile(l, 0.5), 0.0, 0);
    cr_assert_float_eq(pf_latency_quantile(l, 1.0), 2.0e7, 0);
    cr_assert_eq(pf_metrics_add_itl(m, -1e-3, 1), PF_ERR_ARG);
    cr_assert_eq(pf_metrics_add_itl(m, NAN, 1), PF_ERR_ARG);
    cr_assert_eq(l->count, 4);
    free(m);
}

/* le semantics: a sample equal to a bound counts in that bucket. */
Test(metrics, prometheus_bucket_counts)
{
    pf_metrics *m = new_metrics(0, 0);
    cr_assert_eq(pf_metrics_add_itl(m, 0.01, 1), PF_OK);  /* bucket 0 (le 0.01) */
    cr_assert_eq(pf_metrics_add_itl(m, 0.0100001, 2), PF_OK); /* bucket 1 (le 0.025) */
    cr_assert_eq(pf_metrics_add_itl(m, 0.02, 5), PF_OK);  /* bucket 1 */
    cr_assert_eq(pf_metrics_add_itl(m, 80.0, 1), PF_OK);  /* bucket 18 (le 80) */
    cr_assert_eq(pf_metrics_add_itl(m, 81.0, 4), PF_OK);  /* +Inf */
    const pf_latency *l = &m->lat[PF_MET_ITL];
    cr_assert_eq(l->buckets[0], 1);
    cr_assert_eq(l->buckets[1], 7);
    cr_assert_eq(l->buckets[18], 1);
    cr_assert_eq(l->buckets[PF_VLLM_ITL_BUCKETS], 4);
    uint64_t total = 0;
    for (int i = 0; i <= PF_VLLM_ITL_BUCKETS; i++)
        total += l->buckets[i];
    cr_assert_eq(total, l->count);
    cr_assert_float_eq(l->sum, 0.01 + 2 * 0.0100001 + 5 * 0.02 + 80 + 4 * 81, 1e-9);

    /* TTFT, queue and e2e use their own lists */
    pf_request_times r = req(0, 0.4, 0.75, 1.25, 10, 2);
    cr_assert_eq(pf_metrics_add_request(m, &r), PF_OK);
    cr_assert_eq(m->lat[PF_MET_TTFT].buckets[10], 1); /* 0.75 <= 0.75 */
    cr_assert_eq(m->lat[PF_MET_QUEUE].buckets[1], 1); /* 0.4 <= 0.5 */
    cr_assert_eq(m->lat[PF_MET_E2E].buckets[4], 1);   /* 1.25 <= 1.5 */
    cr_assert_eq(m->lat[PF_MET_TPOT].buckets[9], 1);  /* 0.5 <= 0.5 */
    free(m);
}

/* Objectives TTFT 0.5 s and TPOT 50 ms over four requests in 4 s. */
Test(metrics, slo_attainment_and_goodput)
{
    pf_metrics *m = new_metrics(0.5, 0.05);
    pf_request_times rs[] = {
        req(0.0, 0.0, 0.2, 0.2 + 10 * 0.04, 100, 11), /* both met */
        req(1.0, 1.5, 1.6, 1.6 + 10 * 0.01, 100, 11), /* TTFT 0.6: TPOT only */
        req(2.0, 2.0, 2.1, 2.1 + 10 * 0.10, 100, 11), /* TPOT 0.1: TTFT only */
        req(3.0, 3.0, 3.3, 3.3, 100, 1),              /* one token: both */
    };
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pf_metrics_add_request(m, &rs[i]), PF_OK);
    pf_metrics_summary s;
    pf_metrics_summarize(m, 4.0, &s);
    cr_assert_float_eq(s.slo_ttft_attainment, 0.75, 0);
    cr_assert_float_eq(s.slo_tpot_attainment, 0.75, 0);
    cr_assert_float_eq(s.slo_attainment, 0.5, 0);
    cr_assert_float_eq(s.slo_goodput, 2.0 / 4.0, 0);
    cr_assert_float_eq(s.request_throughput, 1.0, 0);
    cr_assert_eq(s.lat[PF_MET_TPOT].count, 3, "the one-token request has no TPOT");
    /* a TTFT exactly at the objective meets it */
    pf_request_times edge = req(5.0, 5.0, 5.5, 5.5, 1, 1);
    cr_assert_eq(pf_metrics_add_request(m, &edge), PF_OK);
    cr_assert_eq(m->met_both, 3);
    free(m);
}

Test(metrics, bad_requests_are_refused_and_not_recorded)
{
    pf_metrics *m = new_metrics(0, 0);
    pf_request_times bad[] = {
        req(1.0, 0.5, 1.5, 2.0, 1, 1),  /* scheduled before arrival */
        req(0.0, 0.5, 0.4, 2.0, 1, 1),  /* first token before scheduling */
        req(0.0, 0.5, 1.0, 0.9, 1, 1),  /* finish before first token */
        req(0.0, 0.0, 0.0, 0.0, 1, 0),  /* no output */
        req(0.0, 0.0, 0.0, 0.0, -1, 1), /* negative prompt */
        req(NAN, 0.0, 0.0, 0.0, 1, 1),
        req(0.0, 0.0, 0.0, INFINITY, 1, 1),
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(pf_metrics_add_request(m, &bad[i]), PF_ERR_ARG, "case %zu", i);
    cr_assert_eq(m->requests, 0);
    for (int i = 0; i < PF_MET_COUNT; i++)
        cr_assert_eq(m->lat[i].count, 0);
    pf_metrics_summary s;
    pf_metrics_summarize(m, 0, &s);
    cr_assert_eq(s.request_throughput, 0.0);
    cr_assert_eq(s.slo_attainment, 0.0);
    pf_metrics x;
    cr_assert_eq(pf_metrics_init(&x, -1, 0), PF_ERR_ARG);
    cr_assert_eq(pf_metrics_init(&x, 0, NAN), PF_ERR_ARG);
    free(m);
}

/* Two halves merged are the whole, sample for sample. */
Test(metrics, merge_equals_one_pass)
{
    pf_metrics *all = new_metrics(1.0, 0.1), *a = new_metrics(1.0, 0.1), *b = new_metrics(1.0, 0.1);
    pf_rng rng;
    pf_rng_seed(&rng, 3);
    for (int i = 0; i < 2000; i++) {
        double arr = i * 0.01, q = pf_rng_unit(&rng), f = q + 0.5 * pf_rng_unit(&rng);
        pf_request_times r = req(arr, arr + q, arr + f, arr + f + pf_rng_unit(&rng), 64,
                                 1 + (int64_t)pf_rng_range(&rng, 0, 50));
        cr_assert_eq(pf_metrics_add_request(all, &r), PF_OK);
        cr_assert_eq(pf_metrics_add_request(i % 2 ? a : b, &r), PF_OK);
        double gap = 0.001 + pf_rng_unit(&rng) * 0.1;
        cr_assert_eq(pf_metrics_add_itl(all, gap, 3), PF_OK);
        cr_assert_eq(pf_metrics_add_itl(i % 3 ? a : b, gap, 3), PF_OK);
    }
    cr_assert_eq(pf_metrics_merge(a, b), PF_OK);
    pf_metrics_summary sa, sb;
    pf_metrics_summarize(all, 0, &sa);
    pf_metrics_summarize(a, 0, &sb);
    for (int i = 0; i < PF_MET_COUNT; i++) {
        cr_assert_eq(memcmp(all->lat[i].bins, a->lat[i].bins, sizeof a->lat[i].bins), 0);
        cr_assert_eq(memcmp(all->lat[i].buckets, a->lat[i].buckets, sizeof a->lat[i].buckets), 0);
        cr_assert_float_eq(sa.lat[i].p99, sb.lat[i].p99, 0);
        cr_assert_float_eq(sa.lat[i].mean, sb.lat[i].mean, 1e-12);
    }
    cr_assert_eq(sa.requests, sb.requests);
    cr_assert_float_eq(sa.duration_s, sb.duration_s, 0);
    cr_assert_float_eq(sa.slo_goodput, sb.slo_goodput, 0);
    pf_metrics *other = new_metrics(2.0, 0.1);
    cr_assert_eq(pf_metrics_merge(a, other), PF_ERR_ARG, "different objectives");
    free(all);
    free(a);
    free(b);
    free(other);
}

/* 10^6 requests fold into the same fixed-size structure. */
Test(metrics, a_million_requests_in_fixed_memory)
{
    cr_assert_lt(sizeof(pf_metrics), 300u * 1024, "the whole state is %zu bytes",
                 sizeof(pf_metrics));
    pf_metrics *m = new_metrics(2.0, 0.05);
    for (int i = 0; i < 1000000; i++) {
        double arr = i * 1e-3;
        double ttft = 0.1 + (i % 1000) * 1e-3;
        pf_request_times r = req(arr, arr + 0.01, arr + ttft, arr + 5.0, 200, 100);
        cr_assert_eq(pf_metrics_add_request(m, &r), PF_OK);
    }
    pf_metrics_summary s;
    pf_metrics_summarize(m, 0, &s);
    cr_assert_eq(s.requests, 1000000);
    cr_assert_eq(s.output_tokens, 100000000);
    /* TTFT is uniform on 0.1 .. 1.099 s in steps of 1 ms: p50 = 0.599 */
    cr_assert_leq(fabs(s.lat[PF_MET_TTFT].p50 - 0.599), 0.599 / 256);
    cr_assert_leq(fabs(s.lat[PF_MET_TTFT].p99 - 1.089), 1.089 / 256);
    cr_assert_float_eq(s.duration_s, 999.999 + 5.0, 1e-9);
    free(m);
}

/* pf_metrics_copy moves only the bins in use, into a buffer that held
 * another copy before (a wider range): the copy's figures are the source's
 * exactly, and the bins outside the new range are cleared. */
Test(metrics, copy_through_the_bins_in_use)
{
    pf_metrics *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *dst = calloc(1, sizeof *dst);
    cr_assert(a && b && dst);
    cr_assert_eq(pf_metrics_init(a, 0, 0), PF_OK);
    cr_assert_eq(pf_metrics_init(b, 0, 0), PF_OK);
    for (int i = 1; i <= 200; i++) {
        pf_request_times r = {0.0, 0.001 * i, 0.01 * i, 0.05 * i, 10, 5};
        cr_assert_eq(pf_metrics_add_request(a, &r), PF_OK);
        cr_assert_eq(pf_metrics_add_itl(a, 1e-5 * i, 3), PF_OK); /* a wide range */
    }
    for (int i = 1; i <= 50; i++)
        cr_assert_eq(pf_metrics_add_itl(b, 0.004 + 1e-5 * i, 1), PF_OK); /* a narrow one */
    pf_metrics_copy(dst, a);
    pf_metrics_copy(dst, b); /* over the wider copy */
    cr_assert_eq(memcmp(dst->lat[PF_MET_ITL].bins, b->lat[PF_MET_ITL].bins, sizeof b->lat[0].bins), 0,
                 "stale bins of the earlier copy cleared");
    pf_metrics_summary s1, s2;
    pf_metrics_summarize(dst, 10.0, &s1);
    pf_metrics_summarize(b, 10.0, &s2);
    cr_assert_eq(memcmp(&s1, &s2, sizeof s1), 0);
    pf_metrics_copy(dst, a);
    pf_metrics_summarize(dst, 10.0, &s1);
    pf_metrics_summarize(a, 10.0, &s2);
    cr_assert_eq(memcmp(&s1, &s2, sizeof s1), 0);
    free(a);
    free(b);
    free(dst);
}
