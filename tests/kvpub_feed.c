/* tests/kvpub_feed.c - a stand-in for `sim --kv-events-publish` until the
 * command is wired: runs a prefix-caching scheduler to the end publishing
 * its block events through net/kvpub on tcp://127.0.0.1 (kernel-chosen
 * ports, with a replay socket), prints one line
 *     <endpoint> <replay endpoint> <blocks stored> <removed> <cached>
 * (the scheduler's own counts), then keeps the publisher up for `seconds`
 * (default 30) sending a heartbeat every 50 ms and answering replays, so a
 * subscriber started afterwards (`pagefault attach --history`) recovers the
 * whole run from the replay ring. Exit 0, or 1 with a line on stderr.
 * Used by tests/test_net_kvpub_attach.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/rng.h"
#include "net/kvpub.h"

enum { NREQ = 150, FRAMES = 64 };

typedef struct {
    pf_kvpub *pub;
    long stored, removed;
} counts;

static void count(void *ctx, const pf_sched_block_event *e)
{
    counts *c = ctx;
    if (e->kind == PF_SCHED_BLOCK_STORED)
        c->stored++;
    else
        c->removed++;
    pf_kvpub_on_block(c->pub, e);
}

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 30;
    if (seconds < 1 || seconds > 600) {
        fprintf(stderr, "kvpub_feed: seconds must be 1..600\n");
        return 2;
    }
    static pf_req j[NREQ];
    pf_rng g;
    pf_rng_seed(&g, 5);
    double t = 0;
    for (int i = 0; i < NREQ; i++) {
        memset(&j[i], 0, sizeof j[i]);
        t += pf_rng_unit(&g) * 0.2;
        j[i].arrival = t;
        j[i].prompt = (int)pf_rng_range(&g, 40, 300);
        j[i].output = (int)pf_rng_range(&g, 1, 100);
        j[i].group = (int)pf_rng_range(&g, -1, 3);
        j[i].shared_tokens = (int)pf_rng_range(&g, 16, 128);
    }
    pf_sched_params p;
    pf_sched_params_default(&p);
    p.prefix_caching = 1;
    p.max_num_batched_tokens = 512;
    p.max_seq_len = 400;
    char err[200];
    pf_sched *s = pf_sched_create(&p, j, NREQ, FRAMES, NULL, NULL, err, sizeof err);
    if (!s) {
        fprintf(stderr, "kvpub_feed: %s\n", err);
        return 1;
    }
    pf_kvpub_config kc = pf_kvpub_config_default();
    kc.zpub.endpoint = "tcp://127.0.0.1:*";
    kc.zpub.replay_endpoint = "tcp://127.0.0.1:*";
    counts c = {0};
    const char *why = "";
    int rc = pf_kvpub_open(&kc, &c.pub, &why);
    if (rc) {
        fprintf(stderr, "kvpub_feed: cannot publish: %s\n", why);
        pf_sched_destroy(s);
        return 1;
    }
    pf_kvpub_attach(c.pub, s);
    pf_sched_on_block(s, count, &c);
    while ((rc = pf_sched_step(s)) == 0)
        if ((rc = pf_kvpub_flush(c.pub, pf_sched_now(s))) != 0)
            break;
    if (rc == 1)
        rc = pf_kvpub_flush(c.pub, pf_sched_now(s));
    pf_prefix_stats ps;
    pf_sched_prefix_stats(s, &ps);
    double now = pf_sched_now(s);
    pf_kvpub_attach(c.pub, NULL);
    pf_sched_destroy(s);
    if (rc != 0 || c.stored != ps.inserts || c.removed != ps.evictions) {
        fprintf(stderr, "kvpub_feed: the run failed (%s)\n", rc ? pf_strerror(rc) : "counts disagree");
        pf_kvpub_close(c.pub);
        return 1;
    }
    printf("%s %s %ld %ld %d\n", pf_kvpub_endpoint(c.pub), pf_kvpub_replay_endpoint(c.pub), c.stored, c.removed,
           ps.cached);
    fflush(stdout);
    for (int i = 0; i < seconds * 20; i++) {
        pf_kvpub_heartbeat(c.pub, now);
        pf_kvpub_service(c.pub, 50);
    }
    pf_kvpub_close(c.pub);
    return 0;
}
