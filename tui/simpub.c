/* tui/simpub.c - the simulator on vLLM's wire (contract in simpub.h). */
#include "tui/simpub.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "net/kvpub.h"
#include "net/metrics_http.h"
#include "tui/simmetrics.h"

struct pf_simpub {
    pf_kvpub *kv;
    /* first publisher error since pf_simpub_error: written on the engine's
     * thread, read on the viewer's */
    atomic_int kv_err;
    double t_end;         /* the last step's end (simulated seconds)      */
    pf_simmetrics *metrics;
    pf_msrv *msrv;
    pf_metrics *met;      /* scratch for pf_sim_get_metrics (220 KB) */
};

int pf_simpub_open(const char *kv_endpoint, const char *kv_replay, const char *metrics_bind,
                   int metrics_port, pf_simpub **out, char *err, size_t errlen)
{
    *out = NULL;
    pf_simpub *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return PF_ERR_NOMEM;
    }
    int rc = PF_OK;
    const char *why = "out of memory";
    if (kv_endpoint) {
        pf_kvpub_config cfg = pf_kvpub_config_default();
        cfg.zpub.endpoint = kv_endpoint;
        cfg.zpub.replay_endpoint = kv_replay;
        rc = pf_kvpub_open(&cfg, &p->kv, &why);
        if (rc != PF_OK) {
            snprintf(err, errlen, "--kv-events-publish %s: %s", kv_endpoint, why);
            goto fail;
        }
    }
    if (metrics_port) {
        p->metrics = pf_simmetrics_new("model_name=\"pagefault-sim\"");
        p->met = malloc(sizeof *p->met);
        if (!p->metrics || !p->met) {
            rc = PF_ERR_NOMEM;
            snprintf(err, errlen, "--metrics-port: out of memory");
            goto fail;
        }
        rc = pf_msrv_start(metrics_bind, metrics_port, pf_simmetrics_registry(p->metrics),
                           &p->msrv, &why);
        if (rc != PF_OK) {
            snprintf(err, errlen, "--metrics-port %d: cannot serve /metrics on %s: %s",
                     metrics_port, metrics_bind ? metrics_bind : "127.0.0.1", why);
            goto fail;
        }
    }
    *out = p;
    return PF_OK;
fail:
    pf_simpub_close(p, NULL);
    return rc;
}

/* pf_sim_on_sched's two calls, on the engine's thread. */
static void kv_attach(void *ctx, struct pf_sched *sc)
{
    pf_simpub *p = ctx;
    pf_kvpub_attach(p->kv, sc);
}

static void kv_step_end(void *ctx, double t_end)
{
    pf_simpub *p = ctx;
    p->t_end = t_end;
    int rc = pf_kvpub_flush(p->kv, t_end);
    if (rc == PF_OK)
        rc = pf_kvpub_service(p->kv, 0) < 0 ? PF_ERR_IO : PF_OK;
    int none = 0;
    if (rc != PF_OK)
        (void)atomic_compare_exchange_strong(&p->kv_err, &none, rc);
}

void pf_simpub_attach(pf_simpub *p, pf_sim *sim)
{
    if (p && p->kv && sim)
        pf_sim_on_sched(sim, kv_attach, kv_step_end, p);
}

static int update_from(pf_simpub *p, const pf_sim_stats *st, const pf_metrics *met)
{
    if (!p || !p->metrics)
        return PF_OK;
    pf_prefix_stats ps;
    memset(&ps, 0, sizeof ps);
    ps.queries = st->prefix_queries;
    ps.hits = st->prefix_hits;
    ps.cached = st->prefix_cached;
    int rc = pf_simmetrics_update(p->metrics, st);
    if (rc == PF_OK)
        rc = pf_simmetrics_update_serving(p->metrics, met, &ps);
    return rc;
}

int pf_simpub_update(pf_simpub *p, pf_sim *sim)
{
    if (!p || !p->metrics)
        return PF_OK;
    pf_sim_stats st;
    pf_sim_get_stats(sim, &st);
    int rc = pf_sim_get_metrics(sim, p->met);
    return update_from(p, &st, rc == PF_OK ? p->met : NULL);
}

int pf_simpub_update_snapshot(pf_simpub *p, const pf_sim_snapshot *snap)
{
    if (!p || !p->metrics)
        return PF_OK;
    return update_from(p, &snap->stats, snap->met_ok ? snap->met : NULL);
}

void pf_simpub_linger(pf_simpub *p, double seconds)
{
    if (!p || seconds <= 0)
        return;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double next_beat = 0.0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (el >= seconds)
            break;
        if (p->kv) {
            /* a heartbeat now and then: a subscriber that lost the run's
             * last batches learns of the gap from the next seq and asks
             * for them; without one after the end it never would */
            if (el >= next_beat) {
                (void)pf_kvpub_heartbeat(p->kv, p->t_end);
                next_beat = el + 0.5;
            }
            (void)pf_kvpub_service(p->kv, 50); /* waits up to 50 ms for a request */
        } else {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

int pf_simpub_error(pf_simpub *p)
{
    if (!p)
        return PF_OK;
    return atomic_exchange(&p->kv_err, 0);
}

void pf_simpub_close(pf_simpub *p, pf_sim *sim)
{
    if (!p)
        return;
    if (sim && p->kv)
        pf_sim_on_sched(sim, NULL, NULL, NULL);
    pf_msrv_stop(p->msrv);
    pf_simmetrics_free(p->metrics);
    pf_kvpub_close(p->kv);
    free(p->met);
    free(p);
}
