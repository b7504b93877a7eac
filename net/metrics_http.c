/* net/metrics_http.c - poll /metrics with libcurl, serve it with
 * libmicrohttpd (see metrics_http.h). */
#include "net/metrics_http.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/clock.h"
#include "core/err.h"

/* ---- fetching ------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap, max;
    int truncated;
} body;

/* libcurl hands us the page piece by piece: keep up to max bytes, then
 * answer "short write", which makes libcurl stop reading at once. */
static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    body *b = ud;
    size_t n = size * nmemb;
    size_t room = b->max - b->n;
    size_t take = n < room ? n : room;
    if (b->n + take + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 16384;
        while (nc < b->n + take + 1)
            nc *= 2;
        if (nc > b->max + 1)
            nc = b->max + 1;
        char *np = realloc(b->p, nc);
        if (!np)
            return 0;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, ptr, take);
    b->n += take;
    b->p[b->n] = '\0';
    if (take < n) {
        b->truncated = 1;
        return 0;
    }
    return n;
}

static int url_ok(const char *url)
{
    return url && (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) && strlen(url) < 2048 &&
           !strpbrk(url, " \t\r\n");
}

/* Whether a finished transfer brought a page: curl's transfer succeeded
 * (or stopped at our size cap: a cut page is still read) and the answer is
 * 2xx. FAILONERROR turns 4xx/5xx into transfer errors, but a 3xx is a
 * "success" whose body (often empty) is no metrics: we never follow
 * redirects (they may lead to another host), and taking the redirect's body
 * would replace the last good page with an empty one and say nothing. On
 * no, a refused status's reason goes into errbuf (a transfer error's is
 * curl's own, there already or from curl_easy_strerror). */
static int page_ok(CURL *c, CURLcode rc, int truncated, char *errbuf)
{
    if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && truncated))
        return 0;
    long code = 0;
    if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
        code = 0;
    if (code >= 200 && code <= 299)
        return 1;
    if (code >= 300 && code <= 399)
        snprintf(errbuf, CURL_ERROR_SIZE, "HTTP %ld: a redirect (not followed: give the final URL)", code);
    else
        snprintf(errbuf, CURL_ERROR_SIZE, "HTTP %ld: not a page of metrics", code);
    return 0;
}

/* libcurl's global set-up, once per process whichever thread asks first:
 * two fetchers opened at once on two threads must not both run it (nor
 * read a half-written flag). */
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static CURL *easy_new(const char *url, int timeout_ms, body *b, char *errbuf)
{
    pthread_once(&curl_once, curl_init_once);
    CURL *c = curl_easy_init();
    if (!c)
        return NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "pagefault-attach");
    return c;
}

int pf_http_get(const char *url, int timeout_ms, size_t max_bytes, char **out, size_t *len, int *truncated,
                const char **why)
{
    static _Thread_local char errbuf[CURL_ERROR_SIZE];
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!url_ok(url) || timeout_ms < 1 || max_bytes < 1 || !out || !len) {
        *why = "bad URL (expected http://HOST:PORT/PATH)";
        return PF_ERR_ARG;
    }
    body b = {.max = max_bytes};
    errbuf[0] = '\0';
    CURL *c = easy_new(url, timeout_ms, &b, errbuf);
    if (!c)
        return PF_ERR_NOMEM;
    CURLcode rc = curl_easy_perform(c);
    int ok = page_ok(c, rc, b.truncated, errbuf);
    curl_easy_cleanup(c);
    if (!ok) {
        free(b.p);
        *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
        return PF_ERR_IO;
    }
    if (!b.p)
        b.p = calloc(1, 1);
    if (!b.p)
        return PF_ERR_NOMEM;
    *out = b.p;
    *len = b.n;
    if (truncated)
        *truncated = b.truncated;
    return 0;
}

struct pf_mfetch {
    char *url;
    int interval_ms, timeout_ms;
    size_t max_bytes;
    CURLM *multi;
    CURL *easy; /* in flight, or NULL */
    body b;
    char errbuf[CURL_ERROR_SIZE];
    double next_start;
    pf_mfetch_stats st;
};

int pf_mfetch_open(const char *url, int interval_ms, int timeout_ms, size_t max_bytes, pf_mfetch **out,
                   const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!out)
        return PF_ERR_ARG;
    *out = NULL;
    if (!url_ok(url)) {
        *why = "bad metrics URL (expected http://HOST:PORT/metrics)";
        return PF_ERR_ARG;
    }
    if (interval_ms < 1 || timeout_ms < 1 || max_bytes < 1) {
        *why = "metrics interval, timeout and size cap must be positive";
        return PF_ERR_ARG;
    }
    pf_mfetch *f = calloc(1, sizeof *f);
    if (!f)
        return PF_ERR_NOMEM;
    f->url = strdup(url);
    f->interval_ms = interval_ms;
    f->timeout_ms = timeout_ms;
    f->max_bytes = max_bytes;
    f->multi = curl_multi_init();
    if (!f->url || !f->multi) {
        pf_mfetch_close(f);
        return PF_ERR_NOMEM;
    }
    *out = f;
    return 0;
}

static void finish_easy(pf_mfetch *f)
{
    if (!f->easy)
        return;
    curl_multi_remove_handle(f->multi, f->easy);
    curl_easy_cleanup(f->easy);
    f->easy = NULL;
}

int pf_mfetch_step(pf_mfetch *f, pf_prom_page *page, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!f || !page)
        return PF_ERR_ARG;
    double t = pf_clock_s();
    if (!f->easy) {
        if (t < f->next_start)
            return 0;
        f->next_start = t + f->interval_ms / 1000.0;
        free(f->b.p);
        memset(&f->b, 0, sizeof f->b);
        f->b.max = f->max_bytes;
        f->errbuf[0] = '\0';
        f->easy = easy_new(f->url, f->timeout_ms, &f->b, f->errbuf);
        if (!f->easy) {
            *why = pf_strerror(PF_ERR_NOMEM);
            return PF_ERR_NOMEM;
        }
        curl_multi_add_handle(f->multi, f->easy);
    }
    int running = 0;
    curl_multi_perform(f->multi, &running);
    if (running)
        return 0;
    CURLcode rc = CURLE_OK;
    int left;
    CURLMsg *m;
    while ((m = curl_multi_info_read(f->multi, &left)))
        if (m->msg == CURLMSG_DONE)
            rc = m->data.result;
    int ok = page_ok(f->easy, rc, f->b.truncated, f->errbuf);
    finish_easy(f);
    f->st.polls++;
    if (!ok) {
        f->st.failures++;
        *why = f->errbuf[0] ? f->errbuf : curl_easy_strerror(rc);
        return PF_ERR_IO;
    }
    f->st.truncated += f->b.truncated != 0;
    f->st.last_bytes = f->b.n;
    /* A page cut at max_bytes ends inside a line: "x 12345" cut to "x 12"
     * still parses, as a wrong value. Only whole lines are read, as
     * pf_prom_parse does with a page past its own cap. */
    size_t n = f->b.n;
    if (f->b.truncated)
        while (n && f->b.p[n - 1] != '\n')
            n--;
    pf_prom_limits lim = pf_prom_limits_default();
    if (f->max_bytes > lim.max_bytes)
        lim.max_bytes = f->max_bytes;
    pf_prom_page_free(page);
    int prc = pf_prom_parse(f->b.p ? f->b.p : "", n, &lim, page);
    if (prc == 0 && f->b.truncated)
        page->truncated = 1;
    free(f->b.p);
    memset(&f->b, 0, sizeof f->b);
    if (prc) /* no memory for the page: every failure names its reason */
        *why = pf_strerror(prc);
    return prc ? prc : 1;
}

void pf_mfetch_stats_get(const pf_mfetch *f, pf_mfetch_stats *st)
{
    *st = f->st;
}

void pf_mfetch_close(pf_mfetch *f)
{
    if (!f)
        return;
    finish_easy(f);
    if (f->multi)
        curl_multi_cleanup(f->multi);
    free(f->b.p);
    free(f->url);
    free(f);
}

/* ---- serving ------------------------------------------------------------- */

struct pf_msrv {
    struct MHD_Daemon *d;
    pf_prom_registry *reg;
    int port;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **state)
{
    pf_msrv *s = cls;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)state;
    struct MHD_Response *r;
    unsigned status;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char msg[] = "only GET\n";
        r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else if (strcmp(url, "/metrics") != 0) {
        static const char msg[] = "not found: try /metrics\n";
        r = MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_NOT_FOUND;
    } else {
        char *txt;
        size_t n;
        if (pf_prom_render(s->reg, &txt, &n) != 0)
            return MHD_NO; /* out of memory: drop the connection */
        r = MHD_create_response_from_buffer(n, txt, MHD_RESPMEM_MUST_FREE);
        if (!r) {
            free(txt);
            return MHD_NO;
        }
        /* the version of the text format prometheus_client announces */
        MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        status = MHD_HTTP_OK;
    }
    if (!r)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

int pf_msrv_start(const char *addr, int port, pf_prom_registry *reg, pf_msrv **out, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!out || !reg || port < 0 || port > 65535) {
        *why = "metrics port must be in [0, 65535]";
        return PF_ERR_ARG;
    }
    *out = NULL;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, addr ? addr : "127.0.0.1", &sa.sin_addr) != 1) {
        *why = "metrics bind address must be an IPv4 address such as 127.0.0.1 or 0.0.0.0";
        return PF_ERR_ARG;
    }
    pf_msrv *s = calloc(1, sizeof *s);
    if (!s)
        return PF_ERR_NOMEM;
    s->reg = reg;
    /* One polling thread, epoll where the system has it (MHD_USE_AUTO):
     * select() would refuse any socket numbered 1024 or more, and a
     * dashboard with many attached streams can own that many descriptors.
     * A scraper holds one keep-alive connection; 64 of them, each dropped
     * after 10 s of silence, leave room for several scrapers and curl. */
    s->d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, (uint16_t)port, NULL, NULL,
                            on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!s->d) {
        free(s);
        *why = "cannot serve /metrics there (port in use or address not local)";
        return PF_ERR_IO;
    }
    const union MHD_DaemonInfo *inf = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = inf ? inf->port : port;
    *out = s;
    return 0;
}

int pf_msrv_port(const pf_msrv *s) { return s ? s->port : 0; }

void pf_msrv_stop(pf_msrv *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    free(s);
}
