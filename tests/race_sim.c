/* tests/race_sim.c - the live simulator under ThreadSanitizer (plain
 * executable, label "race"; CI builds it with -DPF_SANITIZE=thread).
 * The threaded engine runs its workers; a viewer thread takes snapshots and
 * stats as the dashboard does; the main thread turns every control (workers
 * up and down, watermark, policy, preemption, pause, single step, speed,
 * reset, mode). Then the deterministic live driver gets the same treatment.
 * Exit 0 when no frame leaked and every snapshot was self-consistent. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim.h"

static atomic_int stop_viewer;
static atomic_int bad_snapshots;
static atomic_int snapshots;

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
    while (!atomic_load(&stop_viewer)) {
        if (pf_sim_take_snapshot(s, &snap) != PF_OK) {
            atomic_fetch_add(&bad_snapshots, 1);
            continue;
        }
        int used = 0;
        for (int f = 0; f < snap.nframes; f++)
            used += snap.frames[f].state != PF_FRAME_FREE;
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
        (void)pf_sim_layout(s, 64, 32, lens, tables);
        atomic_fetch_add(&snapshots, 1);
        sleep_us(500);
    }
    pf_sim_snapshot_free(&snap);
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
    pthread_t v;
    pthread_create(&v, NULL, viewer, s);
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

int main(void)
{
    int fail = exercise(PF_ENGINE_THREADED);
    fail |= exercise(PF_ENGINE_DETERMINISTIC);
    if (atomic_load(&bad_snapshots) > 0) {
        fprintf(stderr, "race_sim: %d inconsistent snapshots\n", atomic_load(&bad_snapshots));
        fail = 1;
    }
    if (atomic_load(&snapshots) < 10) {
        fprintf(stderr, "race_sim: the viewer got only %d snapshots\n", atomic_load(&snapshots));
        fail = 1;
    }
    printf("race_sim: %d snapshots, %s\n", atomic_load(&snapshots), fail ? "FAILED" : "ok");
    return fail;
}
