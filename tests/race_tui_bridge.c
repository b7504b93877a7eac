/* tests/race_tui_bridge.c - the dashboard's control thread (tui/bridge.c)
 * under ThreadSanitizer (plain executable, label "race"; CI builds it with
 * -DPF_SANITIZE=thread).
 *
 * The threaded simulator runs; the main thread plays the UI: it posts every
 * command the keys can send, in bursts, and takes snapshots as fast as it
 * can, checking each one it gets. Asserts (on the main thread, at the end):
 * snapshots arrived and were well formed, the status line followed the
 * commands, queued presses were not lost (five W from 0 give 5%), pause
 * holds the step, a run's end is caught on its last step (r and --loop start
 * the next), and everything stops and frees cleanly (ASan/LSan builds
 * check the frees). Prints the slowest UI-side call, for information only.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/err.h"
#include "sim/sim.h"
#include "tui/bridge.h"
#include "tui/sweep.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* How long a check waits for the bridge to show a command's effect. The
 * commands run in order on the bridge's thread, and the churn below queues
 * about thirty resets (r, and m twice, each cycle), each of which rebuilds
 * a scheduler of 20000 requests. Under ThreadSanitizer on the 2-core CI
 * machine the longest wait took 5.1 s alone and 11-21 s with four copies
 * running (which missed the 10 s this used to allow). A wait ends as soon
 * as its effect shows, so only a failure costs the whole of it. */
#define WAIT_S 120.0
static double longest_wait; /* for the summary line */

static int failures;
#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            failures++;                                                                        \
            fprintf(stderr, "race_tui_bridge: FAIL %s:%d: ", __FILE__, __LINE__);              \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

/* Take snapshots until pred holds or the deadline passes; returns the last. */
static const pf_sim_snapshot *wait_snap(pf_dash_bridge *b, double secs,
                                        int (*pred)(const pf_sim_snapshot *, double), double arg,
                                        double *slowest)
{
    const pf_sim_snapshot *last = NULL;
    double end = now_s() + secs;
    while (now_s() < end) {
        double t0 = now_s();
        const pf_sim_snapshot *s = pf_dash_bridge_take(b);
        double dt = now_s() - t0;
        if (dt > *slowest)
            *slowest = dt;
        if (s) {
            last = s;
            if (pred(s, arg))
                break;
        }
        sleep_ms(2);
    }
    if (now_s() - (end - secs) > longest_wait)
        longest_wait = now_s() - (end - secs);
    return last;
}

static int watermark_is(const pf_sim_snapshot *s, double w)
{
    return s->params.watermark > w - 1e-9 && s->params.watermark < w + 1e-9;
}
static int is_paused(const pf_sim_snapshot *s, double unused)
{
    (void)unused;
    return s->paused;
}
static int is_running(const pf_sim_snapshot *s, double unused)
{
    (void)unused;
    return !s->paused;
}
static int workers_are(const pf_sim_snapshot *s, double n) { return s->params.workers == (int)n; }
static int auto_is(const pf_sim_snapshot *s, double on) { return s->params.watermark_auto == (int)on; }

static int well_formed(const pf_sim_snapshot *s, int pool)
{
    if (s->nframes != pool || !s->frames)
        return 0;
    for (int f = 0; f < s->nframes; f++)
        if (s->frames[f].state > PF_FRAME_SWAPPED || s->frames[f].owner < -1)
            return 0;
    return s->nevents >= 0 && s->nevents <= PF_SIM_EVENTS && s->nhistory >= 0 &&
           s->nhistory <= PF_SIM_HISTORY;
}

static int run_is(pf_dash_bridge *b, int run, int ended, double secs)
{
    double end = now_s() + secs;
    pf_dash_run r;
    do {
        pf_dash_bridge_take(b); /* the UI keeps taking snapshots meanwhile */
        pf_dash_bridge_run(b, &r);
        if (r.run == run && r.ended == ended)
            return 1;
        sleep_ms(2);
    } while (now_s() < end);
    return 0;
}

/* Take snapshots (as the UI would) until the status line holds `want` or
 * `or` (NULL: none) or WAIT_S passes; the last status in status[128]. */
static void wait_status(pf_dash_bridge *b, const char *want, const char *or, char *status)
{
    unsigned seen = 0;
    status[0] = '\0';
    double until = now_s() + WAIT_S;
    while (now_s() < until && !strstr(status, want) && !(or && strstr(status, or))) {
        pf_dash_bridge_take(b);
        pf_dash_bridge_status(b, &seen, status, 128);
        sleep_ms(2);
    }
}

/* Stop and free what a live test started (any of them NULL). */
static void live_close(pf_dash_bridge *b, pf_sim *sim, pf_jobs *jobs)
{
    pf_dash_bridge_stop(b);
    if (sim)
        pf_sim_stop(sim);
    pf_sim_destroy(sim);
    pf_jobs_free(jobs);
}

/* The simulator's restarts (PF_EV_RESET), counted on its engine thread. */
static void count_resets(void *ctx, const pf_event *e)
{
    if (e->kind == PF_EV_RESET)
        atomic_fetch_add((_Atomic int *)ctx, 1);
}

/* 4. a run has an end: the live simulator holds on the last step (its own
 * figures, the step holds, no restart behind the bridge's back), r starts
 * run 2, --loop run 3. At a tick of 0 a run of 40 jobs takes about as
 * long as the bridge's 30 ms between looks (the whole headless command,
 * naive baseline and frames included, 52 ms): before the simulator held
 * its end, the bridge caught it only when a look fell in the last 16
 * jobs, and the run otherwise started again unseen. */
static void test_run_end(int tick_us)
{
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.engine = PF_ENGINE_THREADED;
    p.workers = 8;
    p.tick_us = tick_us;
    p.cfg.pool_blocks = 512;
    p.cfg.max_seq_len = 512;
    pf_jobs jobs;
    memset(&jobs, 0, sizeof jobs);
    char err[256] = "";
    const int njobs = 40;
    if (pf_jobs_generate(&jobs, 11, njobs, pf_mix_seed(), 0, p.cfg.max_seq_len) != PF_OK) {
        CHECK(0, "cannot generate jobs");
        return;
    }
    _Atomic int resets = 0;
    pf_sim *sim = pf_sim_create(&p, &jobs, err, sizeof err);
    pf_dash_bridge *b = NULL;
    if (sim)
        pf_sim_on_event(sim, count_resets, &resets);
    /* the bridge first: it has the simulator hold the end before it runs */
    if (!sim || !(b = pf_dash_bridge_start(sim, err, sizeof err)) || pf_sim_start(sim) != PF_OK) {
        CHECK(0, "cannot start: %s", err);
        goto out;
    }
    CHECK(run_is(b, 1, 1, 60), "tick %d: run 1 did not end", tick_us);
    pf_dash_run r;
    pf_dash_bridge_run(b, &r);
    CHECK(r.final.done, "tick %d: the end's figures are not the end's (done %d)", tick_us,
          r.final.done);
    CHECK(atomic_load(&resets) == 0, "tick %d: the run started again %d times before its end was seen",
          tick_us, atomic_load(&resets));
    CHECK(r.final.finished == njobs, "final: %lld of %d jobs finished", (long long)r.final.finished, njobs);
    pf_sim_stats st;
    pf_sim_get_stats(sim, &st);
    CHECK(st.step == r.final.step && st.done, "the simulator left the last step: %lld vs %lld",
          (long long)st.step, (long long)r.final.step);
    sleep_ms(200);
    pf_sim_get_stats(sim, &st);
    CHECK(st.step == r.final.step, "the end did not hold: %lld -> %lld", (long long)r.final.step,
          (long long)st.step);
    /* r: run 2, from step 0, to its own end (at a tick of 0 it may end
     * before the bridge shows it running) */
    pf_dash_bridge_post(b, PF_DASH_CMD_RESET);
    CHECK(tick_us == 0 || run_is(b, 2, 0, WAIT_S), "r did not start run 2");
    CHECK(run_is(b, 2, 1, 60), "run 2 did not end");
    pf_dash_bridge_run(b, &r);
    CHECK(r.final.done && r.final.finished == njobs, "run 2's end: done %d, finished %lld",
          r.final.done, (long long)r.final.finished);
    /* --loop: run 3 starts by itself after the hold */
    pf_dash_bridge_set_loop(b, 1);
    CHECK(tick_us == 0 || run_is(b, 3, 0, PF_DASH_LOOP_HOLD_S + WAIT_S),
          "--loop did not start run 3");
    CHECK(run_is(b, 3, 1, PF_DASH_LOOP_HOLD_S + 60), "run 3 did not end");
    CHECK(atomic_load(&resets) == 2, "tick %d: %d restarts for runs 2 and 3", tick_us,
          atomic_load(&resets));
    if (tick_us == 0) { /* F at a tick of 0 keeps it (it used to set 500 us) */
        pf_dash_bridge_post(b, PF_DASH_CMD_FASTER);
        char status[128];
        wait_status(b, "as fast as it goes", NULL, status);
        pf_sim_params got;
        pf_sim_get_params(sim, &got);
        CHECK(strstr(status, "as fast as it goes") && got.tick_us == 0,
              "F at tick 0: tick %d us, status \"%s\"", got.tick_us, status);
    }
out:
    live_close(b, sim, &jobs);
}

/* 4b. s pressed the moment a run ends, at a slow tick (100 ms): the next
 * run's first step, held there. The driver used to pause for the end only
 * after its tick's wait, so a look in that wait saw the end with the
 * simulator still running: the bridge took it for paused, s was refused
 * ("invalid argument") and the next run ran on at full pace. */
static void test_step_at_the_end(void)
{
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.engine = PF_ENGINE_THREADED;
    p.tick_us = 100000;
    p.cfg.pool_blocks = 64;
    p.cfg.max_seq_len = 64;
    pf_jobs jobs = {0};
    jobs.njobs = 2;
    jobs.jobs = calloc(2, sizeof *jobs.jobs);
    if (!jobs.jobs) {
        CHECK(0, "step at the end: no memory");
        return;
    }
    for (int i = 0; i < 2; i++)
        jobs.jobs[i] = (pf_job){.arrival = 0.0, .prompt = 4, .output = 6, .group = -1};
    char err[256] = "";
    pf_sim *sim = pf_sim_create(&p, &jobs, err, sizeof err);
    pf_dash_bridge *b = NULL;
    if (!sim || !(b = pf_dash_bridge_start(sim, err, sizeof err)) || pf_sim_start(sim) != PF_OK) {
        CHECK(0, "step at the end: cannot start: %s", err);
        goto out;
    }
    CHECK(run_is(b, 1, 1, WAIT_S), "step at the end: run 1 did not end");
    pf_dash_bridge_post(b, PF_DASH_CMD_STEP);
    char status[128];
    wait_status(b, "stepped", "refused", status);
    CHECK(strstr(status, "stepped") != NULL, "step at the end: the status reads \"%s\"", status);
    sleep_ms(500); /* five ticks: a running simulator would move on */
    pf_sim_stats st;
    pf_sim_get_stats(sim, &st);
    pf_dash_run r;
    pf_dash_bridge_run(b, &r);
    CHECK(r.run == 2 && !r.ended && st.step == 1,
          "step at the end: run %d (ended %d) at step %lld, want run 2 held at step 1", r.run,
          r.ended, (long long)st.step);
out:
    live_close(b, sim, &jobs);
}

/* 6. the watermark sweep: points on several threads, read while they run,
 * cancelled midway, then run to the end */
static void test_sweep(void)
{
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.pool_blocks = 512;
    p.cfg.max_seq_len = 512;
    p.workers = 16;
    pf_jobs jobs;
    memset(&jobs, 0, sizeof jobs);
    if (pf_jobs_generate(&jobs, 5, 200, pf_mix_seed(), 0, p.cfg.max_seq_len) != PF_OK) {
        CHECK(0, "sweep: cannot generate jobs");
        return;
    }
    pf_sweep sw;
    memset(&sw, 0, sizeof sw);
    CHECK(pf_sweep_start(&sw, &p, &jobs) == 0, "sweep: cannot start");
    pf_sweep_view v;
    pf_sweep_get(&sw, &v); /* while running */
    pf_sweep_stop(&sw);    /* cancel midway */
    CHECK(pf_sweep_start(&sw, &p, &jobs) == 0, "sweep: cannot start again");
    double until = now_s() + 60;
    int done = 0;
    while (now_s() < until && done < PF_SWEEP_POINTS) {
        pf_sweep_get(&sw, &v);
        done = 0;
        for (int i = 0; i < v.n; i++)
            done += v.state[i] == PF_SWEEP_DONE || v.state[i] == PF_SWEEP_FAILED;
        sleep_ms(5);
    }
    CHECK(done == PF_SWEEP_POINTS, "sweep: %d of %d points", done, PF_SWEEP_POINTS);
    CHECK(v.state[0] == PF_SWEEP_DONE && v.tput[0] > 0, "sweep: no throughput at watermark 0");
    pf_sweep_free(&sw);
    pf_jobs_free(&jobs);

    /* x pressed twice over a large job set: the stop must not wait for the
     * points, each deep in pf_sim_create of 100000 jobs (which no cancel
     * flag reaches): right after it the cancelled sweep is still retiring,
     * and the UI has no sweep to show; pf_sweep_free then waits for it.
     * (Before, stop joined: the dashboard froze for 2.4 s at 1M jobs.) */
    if (pf_jobs_generate(&jobs, 5, 100000, pf_mix_seed(), 0, p.cfg.max_seq_len) != PF_OK) {
        CHECK(0, "sweep: cannot generate 100000 jobs");
        return;
    }
    CHECK(pf_sweep_start(&sw, &p, &jobs) == 0, "sweep: cannot start over 100000 jobs");
    pf_sweep_stop(&sw);
    CHECK(sw.cur == NULL && sw.retired != NULL,
          "sweep: stop waited for its points (%s)", sw.retired ? "" : "none left retiring");
    CHECK(pf_sweep_get(&sw, &v) == 0, "sweep: a stopped sweep is still shown");
    pf_sweep_free(&sw);
    CHECK(sw.cur == NULL && sw.retired == NULL, "sweep: free left a sweep behind");
    pf_jobs_free(&jobs);
}

/* The UI side of the test: the bridge, and what the phases below count. */
typedef struct {
    pf_dash_bridge *b;
    int pool;            /* the simulator's frames                         */
    double slowest;      /* the slowest UI-side call                       */
    int posted, got, statuses;
    unsigned seen;       /* pf_dash_bridge_status's change counter         */
    char status[128];
} ui;

/* 1. churn: every command, in bursts, with snapshots taken throughout */
static void check_churn(ui *u)
{
    static const pf_dash_cmd cycle[] = {
        PF_DASH_CMD_WATERMARK_UP, PF_DASH_CMD_WORKERS_UP,   PF_DASH_CMD_POLICY_NEXT,
        PF_DASH_CMD_PREEMPT_NEXT, PF_DASH_CMD_PAUSE_TOGGLE, PF_DASH_CMD_STEP,
        PF_DASH_CMD_STEP,         PF_DASH_CMD_PAUSE_TOGGLE, PF_DASH_CMD_FASTER,
        PF_DASH_CMD_SLOWER,       PF_DASH_CMD_WORKERS_DOWN, PF_DASH_CMD_WATERMARK_DOWN,
        PF_DASH_CMD_RESET,        PF_DASH_CMD_MODE_TOGGLE,  PF_DASH_CMD_MODE_TOGGLE,
        PF_DASH_CMD_WATERMARK_AUTO, PF_DASH_CMD_STEP,       PF_DASH_CMD_WATERMARK_AUTO,
    };
    const int ncycle = (int)(sizeof cycle / sizeof cycle[0]);
    double end = now_s() + 1.0;
    int bad = 0;
    while (now_s() < end) {
        double t0 = now_s();
        if (pf_dash_bridge_post(u->b, cycle[u->posted % ncycle]) == 0)
            u->posted++;
        const pf_sim_snapshot *s = pf_dash_bridge_take(u->b);
        u->statuses += pf_dash_bridge_status(u->b, &u->seen, u->status, sizeof u->status);
        double dt = now_s() - t0;
        if (dt > u->slowest)
            u->slowest = dt;
        if (s) {
            u->got++;
            bad += !well_formed(s, u->pool);
        }
        sleep_ms(u->posted % 4 == 0 ? 20 : 1);
    }
    CHECK(u->got > 0, "no snapshot in 1 s");
    CHECK(bad == 0, "%d of %d snapshots malformed", bad, u->got);
    CHECK(u->statuses > 0, "the status line never changed over %d commands", u->posted);
}

/* 2. presses are not lost: from watermark 0, five W give 5%; two + give
 * two steps even while paused (workers apply at the next step) */
static void check_presses(ui *u)
{
    pf_dash_bridge_post(u->b, PF_DASH_CMD_RESET); /* r: the next run, running (whatever the churn left) */
    const pf_sim_snapshot *s = wait_snap(u->b, WAIT_S, is_running, 0, &u->slowest);
    CHECK(s && !s->paused, "could not resume");
    /* bring the watermark to 0 first: twenty w presses floor at 0 */
    for (int i = 0; i < 20; i++)
        pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_DOWN);
    s = wait_snap(u->b, WAIT_S, watermark_is, 0.0, &u->slowest);
    CHECK(s && watermark_is(s, 0.0), "watermark did not come down to 0 (%g)",
          s ? s->params.watermark : -1.0);
    for (int i = 0; i < 5; i++)
        pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_UP);
    s = wait_snap(u->b, WAIT_S, watermark_is, 0.05, &u->slowest);
    CHECK(s && watermark_is(s, 0.05), "five W from 0 gave %g, want 0.05",
          s ? s->params.watermark : -1.0);
    /* a: the load controller on, and a watermark set by hand ends it
     * (pf_sim_set_watermark), whatever the controller moved it to */
    pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_AUTO);
    s = wait_snap(u->b, WAIT_S, auto_is, 1, &u->slowest);
    CHECK(s && s->params.watermark_auto == 1, "a did not turn the load controller on");
    pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_UP);
    s = wait_snap(u->b, WAIT_S, auto_is, 0, &u->slowest);
    CHECK(s && s->params.watermark_auto == 0, "W did not end the load controller");
    for (int i = 0; i < 40; i++) /* back to 5% from wherever it went */
        pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_DOWN);
    for (int i = 0; i < 5; i++)
        pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_UP);
    s = wait_snap(u->b, WAIT_S, watermark_is, 0.05, &u->slowest);
    CHECK(s && watermark_is(s, 0.05), "W after the controller: %g, want 0.05", s ? s->params.watermark : -1.0);
    int w0 = s ? s->params.workers : 0;
    int w2 = pf_dash_workers_step(pf_dash_workers_step(w0, 1), 1);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_PAUSE_TOGGLE);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_WORKERS_UP);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_WORKERS_UP);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_PAUSE_TOGGLE);
    s = wait_snap(u->b, WAIT_S, workers_are, w2, &u->slowest);
    CHECK(s && s->params.workers == w2, "two + from %d gave %d, want %d", w0,
          s ? s->params.workers : -1, w2);
}

/* 3. pause holds the step (a step in flight may still land) */
static void check_pause(ui *u)
{
    const pf_sim_snapshot *s = wait_snap(u->b, WAIT_S, is_running, 0, &u->slowest);
    CHECK(s && !s->paused, "not running before the pause check");
    pf_dash_bridge_post(u->b, PF_DASH_CMD_PAUSE_TOGGLE);
    s = wait_snap(u->b, WAIT_S, is_paused, 0, &u->slowest);
    CHECK(s && s->paused, "pause did not show in the snapshot");
    sleep_ms(200);
    s = wait_snap(u->b, 0.3, is_paused, 0, &u->slowest);
    int64_t step1 = s ? s->stats.step : -1;
    sleep_ms(300);
    s = wait_snap(u->b, 0.3, is_paused, 0, &u->slowest);
    CHECK(s && s->stats.step == step1, "step moved while paused: %lld -> %lld", (long long)step1,
          s ? (long long)s->stats.step : -1LL);
}

/* 5. the split view: two simulators stepped in lockstep by the bridge;
 * parameter keys refused there; 2 again leaves it */
static void check_split(ui *u, pf_jobs *jobs)
{
    pf_dash_bridge_set_jobs(u->b, jobs);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_SPLIT);
    const pf_sim_snapshot *nv = NULL;
    int lockstep = 0, looks = 0;
    double until = now_s() + WAIT_S;
    while (now_s() < until && lockstep < 5) {
        const pf_sim_snapshot *pg = pf_dash_bridge_take(u->b);
        if (pg && (nv = pf_dash_bridge_split(u->b)) != NULL) {
            looks++;
            CHECK(nv->params.mode == PF_SIM_NAIVE && pg->params.mode == PF_SIM_PAGED,
                  "split: wrong modes %d %d", nv->params.mode, pg->params.mode);
            /* lockstep in simulated time: the side behind takes the next
             * step, so the side ahead got there with its last step, and
             * the clocks differ by at most that step's length */
            const pf_sim_snapshot *lead = nv->stats.time_s > pg->stats.time_s ? nv : pg;
            int nh = lead->nhistory;
            double last = nh >= 2 ? lead->hist_time[nh - 1] - lead->hist_time[nh - 2]
                        : nh == 1 ? lead->hist_time[0] : 0;
            double gap = fabs(nv->stats.time_s - pg->stats.time_s);
            if (!nv->stats.done && !pg->stats.done)
                CHECK(gap <= last + 1e-9, "split: not in lockstep: %.6f s vs %.6f s (last step %.6f s)",
                      nv->stats.time_s, pg->stats.time_s, last);
            lockstep += nv->stats.step > 0 && pg->stats.step > 0;
        }
        sleep_ms(5);
    }
    CHECK(lockstep >= 5, "split view: %d lockstep snapshots of %d", lockstep, looks);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_WATERMARK_UP);
    until = now_s() + WAIT_S;
    int refused = 0;
    while (now_s() < until && !refused) {
        pf_dash_bridge_take(u->b);
        if (pf_dash_bridge_status(u->b, &u->seen, u->status, sizeof u->status))
            refused = strstr(u->status, "refused: parameters are fixed") != NULL;
        sleep_ms(2);
    }
    CHECK(refused, "a parameter key in the split view was not refused (%s)", u->status);
    pf_dash_bridge_post(u->b, PF_DASH_CMD_SPLIT);
    until = now_s() + WAIT_S;
    int left = 0;
    while (now_s() < until && !left) {
        if (pf_dash_bridge_take(u->b))
            left = pf_dash_bridge_split(u->b) == NULL;
        sleep_ms(2);
    }
    CHECK(left, "2 did not leave the split view");
}

int main(void)
{
    const int pool = 512;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.engine = PF_ENGINE_THREADED;
    p.workers = 16;
    p.tick_us = 200;
    p.watermark = 0;
    p.cfg.pool_blocks = pool;
    p.cfg.max_seq_len = 512;
    pf_jobs jobs;
    memset(&jobs, 0, sizeof jobs);
    char err[256] = "";
    /* enough jobs that the run cannot end during the test (the end has a
     * test of its own below), and a given baseline so the start is quick */
    p.naive_throughput = 1.0;
    if (pf_jobs_generate(&jobs, 7, 20000, pf_mix_seed(), 0, p.cfg.max_seq_len) != PF_OK) {
        fprintf(stderr, "race_tui_bridge: cannot generate jobs\n");
        return 1;
    }
    pf_sim *sim = pf_sim_create(&p, &jobs, err, sizeof err);
    if (!sim || pf_sim_start(sim) != PF_OK) {
        fprintf(stderr, "race_tui_bridge: cannot start the simulator: %s\n", err);
        pf_sim_destroy(sim);
        pf_jobs_free(&jobs);
        return 1;
    }
    pf_dash_bridge *b = pf_dash_bridge_start(sim, err, sizeof err);
    if (!b) {
        fprintf(stderr, "race_tui_bridge: %s\n", err);
        pf_sim_destroy(sim);
        pf_jobs_free(&jobs);
        return 1;
    }
    ui u = {.b = b, .pool = pool};
    check_churn(&u);
    check_presses(&u);
    check_pause(&u);
    check_split(&u, &jobs);
    pf_dash_bridge_stop(b);
    pf_sim_stop(sim);
    pf_sim_destroy(sim);
    pf_jobs_free(&jobs);
    test_run_end(300);
    test_run_end(0);
    test_step_at_the_end();
    test_sweep();
    printf("race_tui_bridge: %d commands, %d snapshots, %d status changes; slowest UI-side call "
           "%.3f ms; longest wait for a command's effect %.1f s\n",
           u.posted, u.got, u.statuses, u.slowest * 1e3, longest_wait);
    if (failures)
        return 1;
    printf("race_tui_bridge: PASS\n");
    return 0;
}
