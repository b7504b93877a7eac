/* net/metrics_http.h - /metrics over HTTP: poll with libcurl, serve with
 * libmicrohttpd.
 *
 * What it is: the fetcher polls a vLLM server's Prometheus page without ever
 * blocking its caller (libcurl's multi interface, advanced one step per call
 * from the attach loop), reads at most max_bytes of it (a longer page is cut
 * there and marked truncated: a 100 MB page costs 4 MiB, not 100 MB) and
 * gives up after timeout_ms; redirects are not followed, only http and https
 * are spoken. The server renders a pf_prom_registry on GET /metrics from its
 * own thread (libmicrohttpd's internal polling thread), bound to 127.0.0.1
 * unless the caller names another address: metrics describe a workload and
 * are not for the whole network by default.
 *
 * Contract: the fetcher is single-threaded; the server is safe to run while
 * the registry is updated (the registry locks). Errors are returned with a
 * one-line reason, never fatal. Callers: tui/cmd_attach.c, the simulator
 * (`--metrics-port`, later), tests.
 */
#ifndef PF_NET_METRICS_HTTP_H
#define PF_NET_METRICS_HTTP_H

#include <stddef.h>

#include "net/prom.h"

typedef struct pf_mfetch pf_mfetch;

/* url: http(s)://HOST[:PORT]/PATH. interval_ms: time between the start of
 * two polls (vLLM's own Grafana board scrapes every 1 s+; the default the
 * attach command passes is 1000). timeout_ms: per poll. max_bytes: page cap
 * (pf_prom_limits_default().max_bytes). Returns 0, PF_ERR_ARG (bad URL or
 * value: *why) or PF_ERR_NOMEM. */
int pf_mfetch_open(const char *url, int interval_ms, int timeout_ms, size_t max_bytes, pf_mfetch **out,
                   const char **why);

/* Advance: start a poll when one is due, move a running one on. When a poll
 * has just finished, parse it into *page (freed and refilled) and return 1;
 * a failed poll returns PF_ERR_IO with *why (connection refused, HTTP 404,
 * a redirect, any answer but 2xx, timeout...) and leaves *page as it was,
 * no memory PF_ERR_NOMEM (with *why too); otherwise 0. A page cut at
 * max_bytes is parsed up to its last whole line. */
int pf_mfetch_step(pf_mfetch *f, pf_prom_page *page, const char **why);

/* Polls done, failed, cut at max_bytes. */
typedef struct {
    unsigned long polls, failures, truncated;
    size_t last_bytes;
} pf_mfetch_stats;
void pf_mfetch_stats_get(const pf_mfetch *f, pf_mfetch_stats *st);

void pf_mfetch_close(pf_mfetch *f);

/* One blocking GET (tests, one-shot use): body capped at max_bytes (cut
 * anywhere, *truncated says so); an answer other than 2xx is PF_ERR_IO. */
int pf_http_get(const char *url, int timeout_ms, size_t max_bytes, char **body, size_t *len, int *truncated,
                const char **why);

typedef struct pf_msrv pf_msrv;

/* Serve reg at http://ADDR:PORT/metrics. addr NULL means 127.0.0.1; port 0
 * picks a free port (see pf_msrv_port). The registry must outlive the
 * server. Returns 0, PF_ERR_ARG (bad address or port) or PF_ERR_IO (bind
 * failed: *why). */
int pf_msrv_start(const char *addr, int port, pf_prom_registry *reg, pf_msrv **out, const char **why);
int pf_msrv_port(const pf_msrv *s);
void pf_msrv_stop(pf_msrv *s);

#endif
