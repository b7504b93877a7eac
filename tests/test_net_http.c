/* tests/test_net_http.c - net/metrics_http: the registry served by
 * libmicrohttpd and read back by libcurl (blocking and stepped), a 100 MB
 * page cut at the cap, bad URLs and refused connections. Real sockets on
 * 127.0.0.1, ports picked by the kernel. */
#include <criterion/criterion.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "net/metrics_http.h"

static void url_of(char *out, size_t cap, int port, const char *path)
{
    snprintf(out, cap, "http://127.0.0.1:%d%s", port, path);
}

Test(net_http, serves_the_registry_and_reads_it_back)
{
    pf_prom_registry *r = pf_prom_registry_new("model_name=\"sim\"");
    int running = pf_prom_add(r, "vllm:num_requests_running", "Running.", PF_PROM_GAUGE, NULL, 0);
    int pre = pf_prom_add(r, "vllm:num_preemptions_total", "Preemptions.", PF_PROM_COUNTER, NULL, 0);
    pf_prom_set(r, running, 12);
    pf_prom_inc(r, pre, 4);
    pf_msrv *s;
    const char *why;
    cr_assert_eq(pf_msrv_start(NULL, 0, r, &s, &why), 0, "%s", why);
    cr_assert_gt(pf_msrv_port(s), 0);
    char url[128];
    url_of(url, sizeof url, pf_msrv_port(s), "/metrics");

    char *body;
    size_t n;
    int trunc;
    cr_assert_eq(pf_http_get(url, 2000, 1 << 20, &body, &n, &trunc, &why), 0, "%s", why);
    cr_expect_eq(trunc, 0);
    pf_prom_page pg;
    cr_assert_eq(pf_prom_parse(body, n, NULL, &pg), 0);
    double v;
    cr_expect_eq(pf_prom_sum(&pg, "vllm:num_requests_running", &v), 1);
    cr_expect_float_eq(v, 12, 1e-12);
    pf_prom_page_free(&pg);
    free(body);

    /* the stepped fetcher sees an update made after the first poll */
    pf_mfetch *f;
    cr_assert_eq(pf_mfetch_open(url, 50, 2000, 1 << 20, &f, &why), 0, "%s", why);
    pf_prom_page page = {0};
    int polls = 0;
    for (int t = 0; t < 400 && polls < 2; t++) {
        int rc = pf_mfetch_step(f, &page, &why);
        cr_assert(rc >= 0, "%s", why);
        if (rc == 1 && ++polls == 1)
            pf_prom_inc(r, pre, 1);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(polls, 2);
    cr_expect_eq(pf_prom_sum(&page, "vllm:num_preemptions_total", &v), 1);
    cr_expect_float_eq(v, 5, 1e-12);
    pf_prom_page_free(&page);
    pf_mfetch_close(f);

    url_of(url, sizeof url, pf_msrv_port(s), "/other");
    cr_expect_eq(pf_http_get(url, 2000, 1 << 20, &body, &n, &trunc, &why), PF_ERR_IO);
    cr_expect(strstr(why, "404") != NULL, "%s", why);
    pf_msrv_stop(s);
    pf_prom_registry_free(r);
}

/* A hostile exporter: 100 MB of metric lines, produced on the fly. */
#define HUGE_BYTES (100ul << 20)
static ssize_t huge_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    if (pos >= HUGE_BYTES)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = max;
    if (pos + n > HUGE_BYTES)
        n = (size_t)(HUGE_BYTES - pos);
    for (size_t i = 0; i < n; i++)
        buf[i] = (pos + i) % 8 == 7 ? '\n' : "junk 1 "[(pos + i) % 8];
    return (ssize_t)n;
}

static enum MHD_Result huge_page(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                 const char *version, const char *up, size_t *up_n, void **st)
{
    (void)cls, (void)url, (void)method, (void)version, (void)up, (void)up_n, (void)st;
    struct MHD_Response *r = MHD_create_response_from_callback(HUGE_BYTES, 65536, huge_reader, NULL, NULL);
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

Test(net_http, a_100_mb_page_is_cut_at_the_cap)
{
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, huge_page, NULL,
                                            MHD_OPTION_END);
    cr_assert(d);
    const union MHD_DaemonInfo *inf = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char url[128];
    url_of(url, sizeof url, inf->port, "/metrics");
    char *body;
    size_t n;
    int trunc;
    const char *why;
    cr_assert_eq(pf_http_get(url, 5000, 4u << 20, &body, &n, &trunc, &why), 0, "%s", why);
    cr_expect_eq(trunc, 1);
    cr_expect_eq(n, 4u << 20);
    free(body);

    pf_mfetch *f;
    cr_assert_eq(pf_mfetch_open(url, 10, 5000, 4u << 20, &f, &why), 0);
    pf_prom_page page = {0};
    int rc = 0;
    for (int t = 0; t < 1000 && rc == 0; t++) {
        rc = pf_mfetch_step(f, &page, &why);
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(rc, 1, "%s", why);
    cr_expect_eq(page.truncated, 1);
    /* 524,288 lines "junk 1 " in the first 4 MiB: the sample cap holds */
    cr_expect_eq(page.n_samples, pf_prom_limits_default().max_samples);
    cr_expect_gt(page.n_dropped, 0);
    pf_mfetch_stats st;
    pf_mfetch_stats_get(f, &st);
    cr_expect_eq(st.truncated, 1);
    pf_prom_page_free(&page);
    pf_mfetch_close(f);
    MHD_stop_daemon(d);
}

Test(net_http, bad_urls_and_refused_connections)
{
    char *body;
    size_t n;
    const char *why;
    pf_mfetch *f;
    cr_expect_eq(pf_http_get("ftp://x/metrics", 100, 10, &body, &n, NULL, &why), PF_ERR_ARG);
    cr_expect_eq(pf_mfetch_open("localhost:8000/metrics", 10, 10, 10, &f, &why), PF_ERR_ARG);
    cr_expect_eq(pf_mfetch_open("http://a b/", 10, 10, 10, &f, &why), PF_ERR_ARG);
    /* port 1 on loopback: nobody listens there */
    cr_expect_eq(pf_http_get("http://127.0.0.1:1/metrics", 2000, 10, &body, &n, NULL, &why), PF_ERR_IO);
    pf_msrv *s;
    cr_expect_eq(pf_msrv_start("localhost", 0, (pf_prom_registry *)1, &s, &why), PF_ERR_ARG);
    cr_expect_eq(pf_msrv_start(NULL, 70000, (pf_prom_registry *)1, &s, &why), PF_ERR_ARG);
}

/* A fixed answer: status and body from cls (a struct fixed_answer). */
typedef struct {
    unsigned status;
    const char *body;
    const char *location; /* NULL: no Location header */
} fixed_answer;

static enum MHD_Result fixed_page(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *up, size_t *up_n, void **st)
{
    const fixed_answer *a = cls;
    (void)url, (void)method, (void)version, (void)up, (void)up_n, (void)st;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(a->body), (void *)a->body, MHD_RESPMEM_PERSISTENT);
    if (a->location)
        MHD_add_response_header(r, "Location", a->location);
    enum MHD_Result ret = MHD_queue_response(c, a->status, r);
    MHD_destroy_response(r);
    return ret;
}

static struct MHD_Daemon *fixed_server(const fixed_answer *a, char *url, size_t cap)
{
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, fixed_page,
                                            (void *)a, MHD_OPTION_END);
    cr_assert(d);
    const union MHD_DaemonInfo *inf = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    url_of(url, cap, inf->port, "/metrics");
    return d;
}

/* Step the fetcher until a poll finishes (1) or fails (< 0). */
static int step_until_done(pf_mfetch *f, pf_prom_page *page, const char **why)
{
    int rc = 0;
    for (int t = 0; t < 1000 && rc == 0; t++) {
        rc = pf_mfetch_step(f, page, why);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return rc;
}

/* Older vLLM mounts its metrics app so that /metrics answers 307 to
 * /metrics/ (empty body). Redirects are not followed, so that is a failed
 * poll with the reason, not an empty page that wipes the last good one. */
Test(net_http, a_redirect_is_a_failure_not_an_empty_page)
{
    fixed_answer good = {MHD_HTTP_OK, "vllm:num_requests_running 7\n", NULL};
    fixed_answer redirect = {307, "", "/metrics/"};
    char url_good[128], url_redir[128];
    struct MHD_Daemon *dg = fixed_server(&good, url_good, sizeof url_good);
    struct MHD_Daemon *dr = fixed_server(&redirect, url_redir, sizeof url_redir);
    char *body = NULL;
    size_t n;
    int trunc;
    const char *why = "";
    int rc = pf_http_get(url_redir, 2000, 1 << 20, &body, &n, &trunc, &why);
    if (rc == 0)
        free(body);
    cr_expect_eq(rc, PF_ERR_IO);
    cr_expect(strstr(why, "307") != NULL, "%s", why);

    pf_mfetch *f;
    pf_prom_page page = {0};
    double v = 0;
    cr_assert_eq(pf_mfetch_open(url_good, 1, 2000, 1 << 20, &f, &why), 0);
    cr_assert_eq(step_until_done(f, &page, &why), 1, "%s", why);
    pf_mfetch_close(f);
    cr_assert_eq(pf_prom_sum(&page, "vllm:num_requests_running", &v), 1);

    cr_assert_eq(pf_mfetch_open(url_redir, 1, 2000, 1 << 20, &f, &why), 0);
    cr_expect_eq(step_until_done(f, &page, &why), PF_ERR_IO);
    cr_expect(strstr(why, "307") != NULL, "%s", why);
    /* the last good page is still there */
    cr_expect_eq(pf_prom_sum(&page, "vllm:num_requests_running", &v), 1);
    cr_expect_float_eq(v, 7, 1e-12);
    pf_mfetch_stats st;
    pf_mfetch_stats_get(f, &st);
    cr_expect_eq(st.failures, 1);
    pf_mfetch_close(f);
    pf_prom_page_free(&page);
    MHD_stop_daemon(dr);
    MHD_stop_daemon(dg);
}

/* The cap falls inside a line: "...waiting 12345" arrives as "...waiting 12",
 * which would parse as a (wrong) value. Only whole lines count. */
Test(net_http, a_line_cut_by_the_cap_is_not_read)
{
    static const char page_text[] = "vllm:num_requests_running 3\n"
                                    "vllm:num_requests_waiting 12345\n"
                                    "vllm:num_preemptions_total 9\n";
    fixed_answer a = {MHD_HTTP_OK, page_text, NULL};
    char url[128];
    struct MHD_Daemon *d = fixed_server(&a, url, sizeof url);
    /* the cap ends right after "...waiting 12" */
    size_t cap = strlen("vllm:num_requests_running 3\nvllm:num_requests_waiting 12");
    pf_mfetch *f;
    const char *why = "";
    cr_assert_eq(pf_mfetch_open(url, 1, 2000, cap, &f, &why), 0);
    pf_prom_page page = {0};
    cr_assert_eq(step_until_done(f, &page, &why), 1, "%s", why);
    double v = 0;
    cr_expect_eq(page.truncated, 1);
    cr_expect_eq(pf_prom_sum(&page, "vllm:num_requests_running", &v), 1);
    cr_expect_float_eq(v, 3, 1e-12);
    cr_expect_eq(pf_prom_sum(&page, "vllm:num_requests_waiting", &v), 0, "a cut line read as %g", v);
    cr_expect_eq(page.n_bad, 0);
    pf_prom_page_free(&page);
    pf_mfetch_close(f);
    MHD_stop_daemon(d);
}
