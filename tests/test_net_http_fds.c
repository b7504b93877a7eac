/* tests/test_net_http_fds.c - net/metrics_http serves when the process
 * already holds over a thousand descriptors (a dashboard with many
 * streams, a test harness): the server's sockets are then numbered past
 * 1024, where select() cannot watch them (the server polls with epoll
 * since the twentieth session; with select() this test fails).
 *
 * A plain executable, not a Criterion test: it needs a descriptor limit of
 * at least 1200, and where the hard limit is lower and cannot be raised
 * (no CAP_SYS_RESOURCE) it exits 77, which ctest reports as skipped
 * (SKIP_RETURN_CODE); Criterion's skip would report it passed. 0 pass, 1
 * fail. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "net/metrics_http.h"

enum { HELD = 1100, LIMIT = 1200 };

/* Raise the soft limit (and the hard one, where allowed) to LIMIT. 1 when
 * LIMIT descriptors can be held. */
static int fds_allowed(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= LIMIT)
        return 1;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < LIMIT)
        rl.rlim_max = LIMIT; /* root may raise it; others get EPERM */
    rl.rlim_cur = LIMIT;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

int main(void)
{
    if (!fds_allowed()) {
        printf("skipped: cannot hold %d descriptors (ulimit -Hn is below %d)\n", HELD, LIMIT);
        return 77;
    }
    int held[HELD], nheld = 0, status = 1;
    int fd0 = open("/dev/null", O_RDONLY);
    while (fd0 >= 0 && nheld < HELD && (held[nheld] = dup(fd0)) >= 0)
        nheld++;
    pf_prom_registry *r = pf_prom_registry_new(NULL);
    pf_msrv *s = NULL;
    const char *why = "";
    char *body = NULL;
    size_t n = 0;
    if (nheld < HELD || !r) {
        fprintf(stderr, "FAIL: set-up (%d descriptors held)\n", nheld);
        goto out;
    }
    int g = pf_prom_add(r, "vllm:num_requests_running", "Running.", PF_PROM_GAUGE, NULL, 0);
    pf_prom_set(r, g, 3);
    if (pf_msrv_start(NULL, 0, r, &s, &why) != 0) {
        fprintf(stderr, "FAIL: server start: %s\n", why);
        goto out;
    }
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", pf_msrv_port(s));
    if (pf_http_get(url, 2000, 1 << 20, &body, &n, NULL, &why) != 0) {
        fprintf(stderr, "FAIL: GET %s with %d descriptors held: %s\n", url, nheld, why);
        goto out;
    }
    if (!strstr(body, "vllm:num_requests_running 3")) {
        fprintf(stderr, "FAIL: the page lacks the gauge: %.*s\n", (int)n, body);
        goto out;
    }
    printf("ok: served with %d descriptors held\n", nheld);
    status = 0;
out:
    free(body);
    if (s)
        pf_msrv_stop(s);
    pf_prom_registry_free(r);
    for (int i = 0; i < nheld; i++)
        close(held[i]);
    if (fd0 >= 0)
        close(fd0);
    return status;
}
