/* tests/race_sim.c - the live simulator under ThreadSanitizer (plain
 * executable, label "race"; CI builds it with -DPF_SANITIZE=thread).
 * The threaded engine runs live on a crew of 4 threads (prefix caching on,
 * so shared and cached frames are in play); a viewer thread takes
 * snapshots, stats, layouts and the latency accumulators as the dashboard
 * and a /metrics writer do; a hammer thread calls the setters back to back
 * (sequence cap, thread count, watermark and auto watermark, pause and
 * single step, reset); the main thread turns every control in rounds
 * (policy, preemption, speed, mode too). Then the deterministic live
 * driver gets the same treatment. No thread asserts: each counts what it
 * saw wrong, and main decides.
 * Then (issue 8 point 7) pf_sim_run of each engine, run to completion on
 * the main thread, while a viewer and a controller thread call every live
 * function; and (point 9) a threaded engine stopped at random moments.
 * Exit 0 when no frame leaked and every snapshot was self-consistent. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim.h"

static atomic_int stop_viewer;
static atomic_int bad_snapshots;
static atomic_int snapshots;
static atomic_int bad_calls;  /* a live call that refused a valid value */
static atomic_int hammered;   /* setter calls the hammer made */

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&t, NULL);
}

static void *viewer(void *arg)
{
    pf_sim *s = arg;
    pf_sim_snapshot snap;
    memset(&snap, 0, sizeof snap);
    int lens[64], tables[64 * 32];
    pf_metrics *met = malloc(sizeof *met); /* about 220 KB */
    while (!atomic_load(&stop_viewer)) {
        if (pf_sim_take_snapshot(s, &snap) != PF_OK) {
            atomic_fetch_add(&bad_snapshots, 1);
            continue;
        }
        int used = 0;
        for (int f = 0; f < snap.nframes; f++)
            used += snap.frames[f].state != PF_FRAME_FREE && snap.frames[f].state != PF_FRAME_CACHED;
        /* Frames are derived from the sequences' lists under the lock. */
        int held = 0;
        for (int i = 0; i < snap.nseqs; i++)
            if (snap.seqs[i].state != PF_SEQ_WAITING)
                held += snap.seqs[i].frames;
        if (held < used)
            atomic_fetch_add(&bad_snapshots, 1);
        pf_sim_stats st;
        pf_sim_get_stats(s, &st);
        pf_sim_params p;
        pf_sim_get_params(s, &p);
        if (st.pool_used < 0 || st.pool_used > p.cfg.pool_blocks || st.time_s < 0.0)
            atomic_fetch_add(&bad_snapshots, 1);
        int n = pf_sim_layout(s, 64, 32, lens, tables);
        for (int i = 0; i < n; i++)
            if (lens[i] < 1 || tables[i * 32] < 0 || tables[i * 32] >= p.cfg.pool_blocks)
                atomic_fetch_add(&bad_snapshots, 1);
        if (met && pf_sim_get_metrics(s, met) != PF_OK)
            atomic_fetch_add(&bad_snapshots, 1);
        atomic_fetch_add(&snapshots, 1);
        sleep_us(500);
    }
    free(met);
    pf_sim_snapshot_free(&snap);
    return NULL;
}

/* Setters back to back, as a user leaning on the dashboard's keys. Each
 * value is valid: a refusal is counted as an error, and which call was
 * refused is kept (bad_which, one bit a call). One exception: a single
 * step is refused (PF_ERR_ARG) when the run is not paused, and exercise()'s
 * own loop pauses and unpauses the same run, so it can unpause between the
 * hammer's pause and its step (seen once in CI); that refusal is right. */
static atomic_int stop_hammer;
static atomic_int bad_which;

static void *hammer(void *arg)
{
    pf_sim *s = arg;
    for (unsigned k = 0; !atomic_load(&stop_hammer); k++) {
        int bad = 0;
        bad |= (pf_sim_set_workers(s, 1 + (int)(k * 7 % 24)) != PF_OK) << 0;
        bad |= (pf_sim_set_threads(s, 1 + (int)(k % 4)) != PF_OK) << 1;
        if (k % 5 == 0)
            bad |= (pf_sim_set_watermark_auto(s, 1) != PF_OK) << 2;
        else
            bad |= (pf_sim_set_watermark(s, (double)(k % 4) * 0.02) != PF_OK) << 3;
        if (k % 3 == 0) {
            bad |= (pf_sim_set_paused(s, 1) != PF_OK) << 4;
            const int rc = pf_sim_single_step(s);
            bad |= (rc != PF_OK && rc != PF_ERR_ARG) << 5; /* see above */
            bad |= (pf_sim_set_paused(s, 0) != PF_OK) << 6;
        }
        if (k % 17 == 16)
            bad |= (pf_sim_reset(s) != PF_OK) << 7;
        if (bad) {
            atomic_fetch_add(&bad_calls, 1);
            atomic_fetch_or(&bad_which, bad);
        }
        atomic_fetch_add(&hammered, 1);
        sleep_us(200);
    }
    return NULL;
}

static int exercise(pf_engine engine)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 21, 96, pf_mix_seed(), 0.0, 512) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.engine = engine;
    p.cfg.max_seq_len = 512;
    p.cfg.pool_blocks = 256;
    p.workers = 12;
    p.watermark = 0.0;
    p.tick_us = 100;
    p.swap_host_blocks = 40;
    p.threads = 4;
    p.prefix_caching = engine == PF_ENGINE_THREADED;
    char err[256];
    pf_sim *s = pf_sim_create(&p, &j, err, sizeof err);
    if (!s) {
        fprintf(stderr, "race_sim: %s\n", err);
        return 1;
    }
    int fail = 0;
    atomic_store(&stop_viewer, 0);
    if (pf_sim_start(s) != PF_OK)
        fail = 1;
    atomic_store(&stop_hammer, 0);
    pthread_t v, h;
    pthread_create(&v, NULL, viewer, s);
    pthread_create(&h, NULL, hammer, s);
    for (int round = 0; round < 6 && !fail; round++) {
        pf_sim_set_workers(s, round % 2 ? 3 : 20);
        pf_sim_set_watermark(s, round % 3 ? 0.0 : 0.05);
        pf_sim_set_policy(s, (pf_victim_policy)(round % PF_VICTIM_COUNT));
        pf_sim_set_preempt(s, round % 2 ? PF_PREEMPT_SWAP : PF_PREEMPT_RECOMPUTE);
        pf_sim_set_tick_us(s, round % 2 ? 0 : 50);
        sleep_us(30000);
        pf_sim_set_paused(s, 1);
        pf_sim_single_step(s);
        pf_sim_single_step(s);
        sleep_us(2000);
        pf_sim_set_paused(s, 0);
        if (round == 3)
            pf_sim_reset(s);
        if (round == 4)
            pf_sim_set_mode(s, PF_SIM_NAIVE);
        if (round == 5)
            pf_sim_set_mode(s, PF_SIM_PAGED);
        sleep_us(20000);
    }
    atomic_store(&stop_hammer, 1);
    pthread_join(h, NULL);
    atomic_store(&stop_viewer, 1);
    pthread_join(v, NULL);
    if (pf_sim_stop(s) != PF_OK)
        fail = 1;
    if (pf_sim_check(s) != PF_OK) {
        fprintf(stderr, "race_sim: %s: pool and sequences disagree after stop\n", pf_engine_name(engine));
        fail = 1;
    }
    pf_sim_stats st;
    if (pf_sim_run(s, &st) != PF_OK || st.pool_used != 0 || pf_sim_check(s) != PF_OK) {
        fprintf(stderr, "race_sim: %s: run after live mode leaked\n", pf_engine_name(engine));
        fail = 1;
    }
    pf_sim_destroy(s);
    pf_jobs_free(&j);
    return fail;
}

/* A controller calling every live control while pf_sim_run works. */
static atomic_int stop_ctl;

static void *controller(void *arg)
{
    pf_sim *s = arg;
    for (int k = 0; !atomic_load(&stop_ctl); k++) {
        pf_sim_set_workers(s, k % 2 ? 6 : 14);
        pf_sim_set_watermark(s, k % 3 ? 0.0 : 0.04);
        pf_sim_set_policy(s, (pf_victim_policy)(k % PF_VICTIM_COUNT));
        pf_sim_set_preempt(s, k % 2 ? PF_PREEMPT_SWAP : PF_PREEMPT_RECOMPUTE);
        pf_sim_set_tick_us(s, 0);
        pf_sim_set_threads(s, 1 + k % 4);
        pf_sim_set_paused(s, k % 2);
        (void)pf_sim_single_step(s); /* refused while pf_sim_run steps: never interleaved */
        if (k == 3)
            pf_sim_reset(s);
        pf_sim_params p;
        pf_sim_get_params(s, &p);
        sleep_us(300);
    }
    pf_sim_set_paused(s, 0);
    return NULL;
}

static int run_watched(pf_engine engine)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 23, 64, pf_mix_seed(), 0.0, 512) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.engine = engine;
    p.cfg.max_seq_len = 512;
    p.cfg.pool_blocks = 192;
    p.workers = 10;
    p.watermark = 0.0;
    p.tick_us = 0;
    p.swap_host_blocks = 40;
    p.threads = 4;
    pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
    if (!s)
        return 1;
    int fail = 0;
    atomic_store(&stop_viewer, 0);
    atomic_store(&stop_ctl, 0);
    pthread_t v, c;
    pthread_create(&v, NULL, viewer, s);
    pthread_create(&c, NULL, controller, s);
    pf_sim_stats st;
    for (int r = 0; r < 3 && !fail; r++) {
        int rc = pf_sim_run(s, &st);
        if (rc != PF_OK || !st.done || st.pool_used != 0) {
            fprintf(stderr, "race_sim: pf_sim_run (%s) under live calls: rc %d, done %d, used %d\n",
                    pf_engine_name(engine), rc, st.done, st.pool_used);
            fail = 1;
        }
    }
    atomic_store(&stop_ctl, 1);
    atomic_store(&stop_viewer, 1);
    pthread_join(c, NULL);
    pthread_join(v, NULL);
    if (pf_sim_check(s) != PF_OK)
        fail = 1;
    pf_sim_destroy(s);
    pf_jobs_free(&j);
    return fail;
}

/* Stop a threaded engine at random moments, controls in flight; it must
 * return every time (a hang shows as the test's timeout). */
static int random_stops(void)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 29, 64, pf_mix_seed(), 0.0, 512) != PF_OK)
        return 1;
    uint64_t x = 99;
    int fail = 0;
    for (int it = 0; it < 40 && !fail; it++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned r = (unsigned)(x >> 33);
        pf_sim_params p;
        pf_sim_params_default(&p);
        p.engine = PF_ENGINE_THREADED;
        p.threads = 1 + (int)(r % 4);
        p.cfg.max_seq_len = 512;
        p.cfg.pool_blocks = 192;
        p.workers = 1 + (int)(r % 24);
        p.watermark = 0.0;
        p.tick_us = (int)(r % 3) * 100;
        pf_sim *s = pf_sim_create(&p, &j, NULL, 0);
        if (!s || pf_sim_start(s) != PF_OK) {
            pf_sim_destroy(s);
            fail = 1;
            break;
        }
        if (r % 5 == 0)
            pf_sim_set_workers(s, 1 + (int)(r % 31));
        if (r % 7 == 0)
            pf_sim_set_paused(s, 1);
        sleep_us((long)(r % 4000));
        if (pf_sim_stop(s) != PF_OK || pf_sim_check(s) != PF_OK) {
            fprintf(stderr, "race_sim: stop at a random moment (iteration %d) failed\n", it);
            fail = 1;
        }
        pf_sim_destroy(s);
    }
    pf_jobs_free(&j);
    return fail;
}

/* Issue 10 point 4: with more than a thousand requests running, the
 * threaded engine's crew copies each snapshot (sim/snapshot.c); a viewer
 * snapshots the live engine while it steps. Counts how many snapshots saw
 * that many running (the crew's path), and that the pool checks after. */
static int big_snapshots(void)
{
    pf_jobs j;
    if (pf_jobs_generate(&j, 29, 4000, pf_mix_seed(), 0.0, 512) != PF_OK)
        return 1;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.max_seq_len = 512;
    p.cfg.pool_blocks = 1 << 16;
    p.workers = 2048;
    p.engine = PF_ENGINE_THREADED;
    p.threads = 4;
    p.tick_us = 0;
    p.naive_throughput = 1.0;
    char err[256];
    pf_sim *s = pf_sim_create(&p, &j, err, sizeof err);
    if (!s) {
        fprintf(stderr, "race_sim: %s\n", err);
        pf_jobs_free(&j);
        return 1;
    }
    int fail = pf_sim_start(s) != PF_OK;
    pf_sim_snapshot snap;
    memset(&snap, 0, sizeof snap);
    int big = 0;
    for (int k = 0; k < 400 && big < 20 && !fail; k++) {
        if (pf_sim_take_snapshot(s, &snap) != PF_OK) {
            fail = 1;
            break;
        }
        if (snap.stats.running >= 1024) {
            big++;
            /* the copied tables agree with the grid: each running
             * sequence's first frame is shown as its own or shared */
            for (int i = 0; i < snap.nseqs; i++) {
                const pf_seq_view *q = &snap.seqs[i];
                if (q->table_at < 0 || q->frames < 1)
                    continue;
                int f = snap.tab_buf[q->table_at];
                if (f < 0 || f >= snap.nframes || snap.frames[f].state == PF_FRAME_FREE)
                    atomic_fetch_add(&bad_snapshots, 1);
            }
        }
        atomic_fetch_add(&snapshots, 1);
        sleep_us(1000);
    }
    fail |= pf_sim_stop(s) != PF_OK;
    fail |= pf_sim_check(s) != PF_OK;
    if (big < 1) {
        fprintf(stderr, "race_sim: no snapshot saw a thousand requests running\n");
        fail = 1;
    }
    pf_sim_snapshot_free(&snap);
    pf_sim_destroy(s);
    pf_jobs_free(&j);
    return fail;
}

int main(void)
{
    int fail = big_snapshots();
    fail |= exercise(PF_ENGINE_THREADED);
    fail |= exercise(PF_ENGINE_DETERMINISTIC);
    fail |= run_watched(PF_ENGINE_DETERMINISTIC);
    fail |= run_watched(PF_ENGINE_THREADED);
    fail |= random_stops();
    if (atomic_load(&bad_snapshots) > 0) {
        fprintf(stderr, "race_sim: %d inconsistent snapshots\n", atomic_load(&bad_snapshots));
        fail = 1;
    }
    if (atomic_load(&bad_calls) > 0) {
        fprintf(stderr,
                "race_sim: %d hammer rounds had a valid value refused (calls, bit per call: "
                "workers threads auto watermark pause step unpause reset = %#x)\n",
                atomic_load(&bad_calls), atomic_load(&bad_which));
        fail = 1;
    }
    if (atomic_load(&hammered) < 10) {
        fprintf(stderr, "race_sim: the hammer made only %d rounds\n", atomic_load(&hammered));
        fail = 1;
    }
    if (atomic_load(&snapshots) < 10) {
        fprintf(stderr, "race_sim: the viewer got only %d snapshots\n", atomic_load(&snapshots));
        fail = 1;
    }
    printf("race_sim: %d snapshots, %d hammer rounds, %s\n", atomic_load(&snapshots), atomic_load(&hammered),
           fail ? "FAILED" : "ok");
    return fail;
}
