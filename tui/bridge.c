/* tui/bridge.c - the dashboard's control thread (see bridge.h).
 *
 * The triple buffer: the control thread snapshots into `back`, then, under
 * the mutex, swaps back and `mid` and sets `fresh`. The UI, under the same
 * mutex, swaps mid and `front` when fresh is set and reads front at
 * leisure. Each side holds the lock only for an index swap, and each
 * snapshot struct owns its arrays, so swapping indices moves them too.
 */
#include "tui/bridge.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/err.h"
#include "tui/cmdq.h"

/* names come from sim/'s one table (pf_victim_name and friends) */

struct pf_dash_bridge {
    pf_sim *sim;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pf_cmdq cmds;              /* queued by the UI, unbounded         */
    pf_cmdq local;             /* the control thread's batch          */
    int stop;
    int paused;                /* control thread's view of the pause state */
    int workers_req;           /* last worker count we asked for, 0: none   */
    pf_sim_snapshot snaps[3];  /* triple buffer                             */
    pf_sim_snapshot snaps2[3]; /* split view: the naive side, same indices  */
    int has2[3];               /* snaps2[i] belongs with snaps[i]           */
    const pf_jobs *jobs;       /* for the split view, the caller's          */
    pf_sim *split[2];          /* control thread: naive, paged; NULL: off   */
    int split_paused;          /* control thread: the lockstep is paused    */
    int split_step;            /* control thread: one step asked (s)        */
    int main_was_paused;       /* control thread: to restore on leaving     */
    double split_t;            /* control thread: time of the last advance  */
    int back, mid, front;
    int fresh;                 /* mid holds a snapshot the UI has not taken */
    char status[128];          /* last command's outcome                    */
    pf_dash_run run;           /* the run's end, guarded by mu              */
    int loop;                  /* restart by itself at the end (--loop)     */
    double restart_at;         /* loop: monotonic time of the next restart  */
    unsigned status_seq;
    pthread_t th;
};

typedef struct pf_dash_bridge control;

static void ctl_status(control *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ctl_status(control *c, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->mu);
    memcpy(c->status, buf, sizeof buf);
    c->status_seq++;
    pthread_mutex_unlock(&c->mu);
}

/* The next run: the same jobs from step 0, running unless `paused` is
 * asked (s after the end: the next run's first step, then held). The
 * simulator resets at once (under its lock), so the next look at it sees
 * the new run. */
static int ctl_next_run(control *c, int paused)
{
    int rc = pf_sim_reset(c->sim);
    if (!rc) { /* always: at the end the simulator paused itself, unasked */
        rc = pf_sim_set_paused(c->sim, paused);
        if (!rc)
            c->paused = paused;
    }
    pthread_mutex_lock(&c->mu);
    c->run.run++;
    c->run.ended = 0;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static int ctl_loop(control *c)
{
    pthread_mutex_lock(&c->mu);
    int loop = c->loop;
    pthread_mutex_unlock(&c->mu);
    return loop;
}

/* Record the end of the run on screen (st: its final figures). */
static void ctl_ended(control *c, const pf_sim_stats *st)
{
    pthread_mutex_lock(&c->mu);
    c->run.ended = 1;
    c->run.final = *st;
    int run = c->run.run;
    pthread_mutex_unlock(&c->mu);
    c->restart_at = pf_clock_s() + PF_DASH_LOOP_HOLD_S;
    ctl_status(c, "run %d %s%s", run, st->livelock ? "stopped in a livelock" : "complete",
               ctl_loop(c) ? "; the next starts in 3 s" : "; r: run again");
}

/* Watch for the end. The simulator holds at its run's end (hold_end, set
 * when the bridge starts): it pauses itself on the last step instead of
 * starting the jobs again, so the end waits for the bridge to look, with
 * the final figures, however fast the run steps. Called with mu NOT held,
 * on the control thread. */
static void ctl_watch_end(control *c)
{
    if (c->run.ended) { /* read without mu: only this thread writes it */
        if (ctl_loop(c) && pf_clock_s() >= c->restart_at)
            ctl_next_run(c, 0);
        return;
    }
    pf_sim_stats st;
    pf_sim_get_stats(c->sim, &st);
    if (st.done || st.livelock) {
        c->paused = 1; /* the simulator paused itself */
        ctl_ended(c, &st);
    }
}

static void split_off(control *c)
{
    for (int k = 0; k < 2; k++) {
        pf_sim_destroy(c->split[k]);
        c->split[k] = NULL;
    }
}

/* Key 2: into the split view (two deterministic simulators over the jobs,
 * the live one paused) or back out of it. */
static void ctl_split_toggle(control *c)
{
    if (c->split[0]) {
        split_off(c);
        if (!c->main_was_paused)
            pf_sim_set_paused(c->sim, 0);
        c->paused = c->main_was_paused;
        ctl_status(c, "split view closed");
        return;
    }
    pthread_mutex_lock(&c->mu);
    const pf_jobs *jobs = c->jobs;
    pthread_mutex_unlock(&c->mu);
    if (!jobs) {
        ctl_status(c, "refused: the split view needs the jobs");
        return;
    }
    pf_sim_params p;
    pf_sim_get_params(c->sim, &p);
    p.engine = PF_ENGINE_DETERMINISTIC;
    char err[160] = "";
    for (int k = 0; k < 2 && !err[0]; k++) {
        p.mode = k == 0 ? PF_SIM_NAIVE : PF_SIM_PAGED;
        c->split[k] = pf_sim_create(&p, jobs, err, sizeof err);
        if (!c->split[k] && !err[0])
            snprintf(err, sizeof err, "out of memory");
    }
    if (err[0]) {
        split_off(c);
        ctl_status(c, "refused: split view: %s", err);
        return;
    }
    c->main_was_paused = c->paused;
    if (!c->paused)
        pf_sim_set_paused(c->sim, 1);
    c->paused = 1;
    c->split_paused = 0;
    ctl_status(c, "split view: naive | paged, the same jobs in lockstep (2 leaves)");
}

/* The split view's steps, at the tick's pace (period_us of wall time since
 * the last call), until each side is done. Lockstep is in simulated time:
 * the cost model gives naive's steps (small batches) and paged's (large
 * ones) different lengths, so equal step counts would show the two sides
 * at different moments; instead each step goes to the side that is behind
 * (the naive side on a tie), and both sides' clocks stay within one step of
 * each other. A side that is done, or whose step fails, stops holding the
 * other back. */
static void split_advance(control *c, long period_us)
{
    pf_sim_params p;
    pf_sim_get_params(c->split[1], &p);
    long k = p.tick_us > 0 ? period_us / p.tick_us : 64;
    if (k < 1)
        k = 1;
    if (k > 64) /* a frame's worth: the split view is for watching */
        k = 64;
    if (c->split_paused)
        k = c->split_step ? 1 : 0;
    c->split_step = 0;
    for (long i = 0; i < 2 * k; i++) { /* k steps a side, about */
        pf_sim_stats a, b;
        pf_sim_get_stats(c->split[0], &a);
        pf_sim_get_stats(c->split[1], &b);
        if (a.done && b.done)
            break;
        int s = a.done ? 1 : b.done ? 0 : a.time_s <= b.time_s ? 0 : 1;
        if (pf_sim_step(c->split[s]) < 0 && !(s ? a.done : b.done))
            pf_sim_step(c->split[!s]); /* stuck: the other goes on */
    }
}

/* The split view's own keys (pause, step, reset); its parameters are
 * fixed. */
static void ctl_split_cmd(control *c, int cmd)
{
    if (cmd == PF_DASH_CMD_PAUSE_TOGGLE) {
        c->split_paused = !c->split_paused;
        ctl_status(c, "split view %s", c->split_paused ? "paused" : "running");
    } else if (cmd == PF_DASH_CMD_STEP) {
        c->split_paused = 1;
        c->split_step = 1;
        ctl_status(c, "split view: stepped");
    } else if (cmd == PF_DASH_CMD_RESET) {
        pf_sim_reset(c->split[0]);
        pf_sim_reset(c->split[1]);
        ctl_status(c, "split view: both from the start");
    } else {
        ctl_status(c, "refused: parameters are fixed in the split view (2 leaves it)");
    }
}

/* w / W: the watermark a step down or up. Under the load controller the
 * step is from the value in force (the controller's), not the one it
 * started from; setting a value by hand ends the controller
 * (pf_sim_set_watermark). */
static int ctl_watermark(control *c, const pf_sim_params *p, int up)
{
    double from = p->watermark;
    if (p->watermark_auto) {
        pf_sim_stats st;
        pf_sim_get_stats(c->sim, &st);
        from = st.watermark;
    }
    const double w = pf_dash_watermark_step(from, up);
    const int rc = pf_sim_set_watermark(c->sim, w);
    if (!rc)
        ctl_status(c, "watermark %.1f%%%s", 100.0 * w,
                   p->watermark_auto ? " (load controller off)" : "");
    return rc;
}

/* The worker count (max seqs) a step down or up. The simulator applies a
 * worker count at its next step boundary, so while paused p->workers still
 * shows the old one: step from our last request, or a second press would
 * repeat the first. */
static int ctl_workers(control *c, const pf_sim_params *p, int up)
{
    const int base = c->workers_req > 0 ? c->workers_req : p->workers;
    const int n = pf_dash_workers_step(base, up);
    const int rc = pf_sim_set_workers(c->sim, n);
    if (!rc) {
        c->workers_req = n;
        ctl_status(c, "max seqs %d%s", n, c->paused ? " (at the next step)" : "");
    }
    return rc;
}

/* space: pause or run; after the run's end, the next run. */
static int ctl_pause(control *c)
{
    int rc;
    if (c->run.ended) {
        rc = ctl_next_run(c, 0);
        if (!rc)
            ctl_status(c, "run %d started", c->run.run);
        return rc;
    }
    rc = pf_sim_set_paused(c->sim, !c->paused);
    if (!rc) {
        c->paused = !c->paused;
        ctl_status(c, "%s", c->paused ? "paused" : "running");
    }
    return rc;
}

/* One step, paused after it; after the run's end, the next run's first
 * step. */
static int ctl_step(control *c)
{
    int rc;
    if (c->run.ended) {
        rc = ctl_next_run(c, 1);
        if (rc)
            return rc;
    }
    if (!c->paused) {
        rc = pf_sim_set_paused(c->sim, 1);
        if (rc)
            return rc;
        c->paused = 1;
    }
    rc = pf_sim_single_step(c->sim);
    if (rc < 0)
        return rc;
    ctl_status(c, "stepped");
    return 0;
}

/* The wait between steps halved or doubled, in 1 us .. 2 s; 0 (no wait)
 * is as fast as it goes, and slower from 0 is 1 us. */
static int ctl_tick(control *c, const pf_sim_params *p, int faster)
{
    if (p->tick_us == 0 && faster) {
        ctl_status(c, "tick 0 us: as fast as it goes");
        return 0;
    }
    long t = p->tick_us > 0 ? p->tick_us : 1;
    t = faster ? t / 2 : p->tick_us > 0 ? t * 2 : t;
    if (t < 1)
        t = 1;
    if (t > 2000000)
        t = 2000000;
    const int rc = pf_sim_set_tick_us(c->sim, (int)t);
    if (!rc)
        ctl_status(c, "tick %ld us", t);
    return rc;
}

/* Run one command against the simulator; called on the control thread. */
static void ctl_exec(control *c, int cmd)
{
    if (cmd == PF_DASH_CMD_SPLIT) {
        ctl_split_toggle(c);
        return;
    }
    if (c->split[0]) {
        ctl_split_cmd(c, cmd);
        return;
    }
    pf_sim_params p;
    pf_sim_get_params(c->sim, &p);
    int rc = 0;
    switch (cmd) {
    case PF_DASH_CMD_WATERMARK_DOWN:
    case PF_DASH_CMD_WATERMARK_UP:
        rc = ctl_watermark(c, &p, cmd == PF_DASH_CMD_WATERMARK_UP);
        break;
    case PF_DASH_CMD_WATERMARK_AUTO: /* a: the load controller on / off */
        rc = pf_sim_set_watermark_auto(c->sim, !p.watermark_auto);
        if (!rc)
            ctl_status(c, "%s", !p.watermark_auto
                                    ? "load controller on: it moves the watermark (events, curve)"
                                    : "load controller off: the watermark stays where it is");
        break;
    case PF_DASH_CMD_WORKERS_DOWN:
    case PF_DASH_CMD_WORKERS_UP:
        rc = ctl_workers(c, &p, cmd == PF_DASH_CMD_WORKERS_UP);
        break;
    case PF_DASH_CMD_POLICY_NEXT: {
        const int v = ((int)p.policy + 1) % PF_VICTIM_COUNT;
        rc = pf_sim_set_policy(c->sim, (pf_victim_policy)v);
        if (!rc)
            ctl_status(c, "victim %s", pf_victim_name((pf_victim_policy)v));
        break;
    }
    case PF_DASH_CMD_PREEMPT_NEXT: {
        const int m = ((int)p.preempt + 1) % PF_PREEMPT_COUNT;
        rc = pf_sim_set_preempt(c->sim, (pf_preempt_mode)m);
        if (!rc)
            ctl_status(c, "preempt %s", pf_preempt_name((pf_preempt_mode)m));
        break;
    }
    case PF_DASH_CMD_MODE_TOGGLE: {
        const pf_sim_mode m = p.mode == PF_SIM_NAIVE ? PF_SIM_PAGED : PF_SIM_NAIVE;
        rc = pf_sim_set_mode(c->sim, m); /* a reset: the next run, in the other mode */
        if (!rc)
            rc = ctl_next_run(c, 0);
        if (!rc)
            ctl_status(c, "mode %s (restarted: run %d)", pf_sim_mode_name(m), c->run.run);
        break;
    }
    case PF_DASH_CMD_PAUSE_TOGGLE:
        rc = ctl_pause(c);
        break;
    case PF_DASH_CMD_STEP:
        rc = ctl_step(c);
        break;
    case PF_DASH_CMD_SLOWER:
    case PF_DASH_CMD_FASTER:
        rc = ctl_tick(c, &p, cmd == PF_DASH_CMD_FASTER);
        break;
    case PF_DASH_CMD_RESET: /* r: the run again (after its end: the next run) */
        rc = ctl_next_run(c, 0);
        if (!rc)
            ctl_status(c, "run %d started", c->run.run);
        break;
    default:
        break;
    }
    if (rc < 0)
        ctl_status(c, "refused: %s", pf_strerror(rc));
}

static void *ctl_main(void *arg)
{
    control *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        /* wait for a command or the next snapshot period */
        struct timespec until; /* the cv runs on CLOCK_MONOTONIC */
        clock_gettime(CLOCK_MONOTONIC, &until);
        /* 30 ms running (about the UI's 30 fps), 100 ms paused */
        long period_ns = c->paused && !c->split[0] ? 100000000L : 30000000L;
        until.tv_nsec += period_ns;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!c->stop && c->cmds.n == 0)
            if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
                break;
        if (c->stop)
            break;
        int n = pf_cmdq_take(&c->cmds, &c->local);
        pthread_mutex_unlock(&c->mu);

        for (int i = 0; i < n; i++)
            ctl_exec(c, c->local.v[i]);
        int rc, split = c->split[0] != NULL;
        if (split) {
            double t = pf_clock_s();
            split_advance(c, c->split_t > 0 ? (long)((t - c->split_t) * 1e6) : 30000);
            c->split_t = t;
            rc = pf_sim_take_snapshot(c->split[1], &c->snaps[c->back]);
            if (rc == 0)
                rc = pf_sim_take_snapshot(c->split[0], &c->snaps2[c->back]);
        } else {
            c->split_t = 0;
            ctl_watch_end(c);
            rc = pf_sim_take_snapshot(c->sim, &c->snaps[c->back]);
        }
        c->has2[c->back] = split;

        pthread_mutex_lock(&c->mu);
        if (rc == 0) {
            int t = c->back;
            c->back = c->mid;
            c->mid = t;
            c->fresh = 1;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int pf_dash_bridge_post(pf_dash_bridge *c, pf_dash_cmd cmd)
{
    pthread_mutex_lock(&c->mu);
    int rc = pf_cmdq_push(&c->cmds, (int)cmd);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

const pf_sim_snapshot *pf_dash_bridge_take(pf_dash_bridge *c)
{
    const pf_sim_snapshot *s = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->fresh) {
        int t = c->front;
        c->front = c->mid;
        c->mid = t;
        c->fresh = 0;
        s = &c->snaps[c->front];
    }
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* Block the terminal's signals around thread creation so the new thread
 * inherits a mask without them; they then always reach the UI thread. */
void pf_dash_block_ui_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &s, old);
}

void pf_dash_restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

pf_dash_bridge *pf_dash_bridge_start(pf_sim *sim, char *err, size_t errlen)
{
    pf_dash_bridge *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->sim = sim;
    c->run.run = 1;
    pf_sim_set_hold_end(sim, 1); /* the end waits on screen (ctl_watch_end) */
    c->back = 0;
    c->mid = 1;
    c->front = 2;
    pthread_mutex_init(&c->mu, NULL);
    /* timed waits measure an interval: the monotonic clock, so a change of
     * the wall clock (NTP, the user) neither stalls nor speeds the loop */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t old;
    pf_dash_block_ui_signals(&old);
    int rc = pthread_create(&c->th, NULL, ctl_main, c);
    pf_dash_restore_signals(&old);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the control thread");
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return NULL;
    }
    return c;
}

int pf_dash_bridge_status(pf_dash_bridge *c, unsigned *seen, char *out, size_t len)
{
    int changed = 0;
    pthread_mutex_lock(&c->mu);
    if (c->status_seq != *seen) {
        *seen = c->status_seq;
        snprintf(out, len, "%s", c->status);
        changed = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return changed;
}

void pf_dash_bridge_set_jobs(pf_dash_bridge *c, const pf_jobs *jobs)
{
    pthread_mutex_lock(&c->mu);
    c->jobs = jobs;
    pthread_mutex_unlock(&c->mu);
}

const pf_sim_snapshot *pf_dash_bridge_split(pf_dash_bridge *c)
{
    /* front is the UI's own index (only _take moves it, on this thread) */
    pthread_mutex_lock(&c->mu);
    const pf_sim_snapshot *s = c->has2[c->front] ? &c->snaps2[c->front] : NULL;
    pthread_mutex_unlock(&c->mu);
    return s;
}

void pf_dash_bridge_run(pf_dash_bridge *c, pf_dash_run *out)
{
    pthread_mutex_lock(&c->mu);
    *out = c->run;
    pthread_mutex_unlock(&c->mu);
}

void pf_dash_bridge_set_loop(pf_dash_bridge *c, int loop)
{
    pthread_mutex_lock(&c->mu);
    c->loop = loop;
    pthread_mutex_unlock(&c->mu);
}

void pf_dash_bridge_stop(pf_dash_bridge *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    pf_sim_set_hold_end(c->sim, 0); /* the simulator loops again, as it did */
    split_off(c);
    for (int i = 0; i < 3; i++) {
        pf_sim_snapshot_free(&c->snaps[i]);
        pf_sim_snapshot_free(&c->snaps2[i]);
    }
    pf_cmdq_free(&c->cmds);
    pf_cmdq_free(&c->local);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
