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

#include "core/err.h"
#include "tui/cmdq.h"

static const char *const mode_names[] = {"naive", "paged"};
static const char *const policy_names[] = {"faulting", "newest", "fewest-generated", "most-frames",
                                           "lowest-priority"};
static const char *const preempt_names[] = {"recompute", "swap"};

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
    int back, mid, front;
    int fresh;                 /* mid holds a snapshot the UI has not taken */
    char status[128];          /* last command's outcome                    */
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

/* Run one command against the simulator; called on the control thread. */
static void ctl_exec(control *c, int cmd)
{
    pf_sim_params p;
    pf_sim_get_params(c->sim, &p);
    int rc = 0;
    switch (cmd) {
    case PF_DASH_CMD_WATERMARK_DOWN:
    case PF_DASH_CMD_WATERMARK_UP: {
        double w = pf_dash_watermark_step(p.watermark, cmd == PF_DASH_CMD_WATERMARK_UP);
        rc = pf_sim_set_watermark(c->sim, w);
        if (!rc)
            ctl_status(c, "watermark %.1f%%", 100.0 * w);
        break;
    }
    case PF_DASH_CMD_WORKERS_DOWN:
    case PF_DASH_CMD_WORKERS_UP: {
        /* The simulator applies a worker count at its next step boundary,
         * so while paused p.workers still shows the old one: step from our
         * last request, or a second press would repeat the first. */
        int base = c->workers_req > 0 ? c->workers_req : p.workers;
        int n = pf_dash_workers_step(base, cmd == PF_DASH_CMD_WORKERS_UP);
        rc = pf_sim_set_workers(c->sim, n);
        if (!rc) {
            c->workers_req = n;
            ctl_status(c, "workers %d%s", n, c->paused ? " (at the next step)" : "");
        }
        break;
    }
    case PF_DASH_CMD_POLICY_NEXT: {
        int v = ((int)p.policy + 1) % PF_VICTIM_COUNT;
        rc = pf_sim_set_policy(c->sim, (pf_victim_policy)v);
        if (!rc)
            ctl_status(c, "victim %s", policy_names[v]);
        break;
    }
    case PF_DASH_CMD_PREEMPT_NEXT: {
        int m = ((int)p.preempt + 1) % PF_PREEMPT_COUNT;
        rc = pf_sim_set_preempt(c->sim, (pf_preempt_mode)m);
        if (!rc)
            ctl_status(c, "preempt %s", preempt_names[m]);
        break;
    }
    case PF_DASH_CMD_MODE_TOGGLE: {
        pf_sim_mode m = p.mode == PF_SIM_NAIVE ? PF_SIM_PAGED : PF_SIM_NAIVE;
        rc = pf_sim_set_mode(c->sim, m);
        if (!rc)
            ctl_status(c, "mode %s (restarted)", mode_names[m]);
        break;
    }
    case PF_DASH_CMD_PAUSE_TOGGLE:
        rc = pf_sim_set_paused(c->sim, !c->paused);
        if (!rc) {
            c->paused = !c->paused;
            ctl_status(c, "%s", c->paused ? "paused" : "running");
        }
        break;
    case PF_DASH_CMD_STEP:
        if (!c->paused) {
            rc = pf_sim_set_paused(c->sim, 1);
            if (rc)
                break;
            c->paused = 1;
        }
        rc = pf_sim_single_step(c->sim);
        if (rc >= 0) {
            rc = 0;
            ctl_status(c, "stepped");
        }
        break;
    case PF_DASH_CMD_SLOWER:
    case PF_DASH_CMD_FASTER: {
        long t = p.tick_us > 0 ? p.tick_us : 1000;
        t = cmd == PF_DASH_CMD_FASTER ? t / 2 : t * 2;
        if (t < 1)
            t = 1;
        if (t > 2000000)
            t = 2000000;
        rc = pf_sim_set_tick_us(c->sim, (int)t);
        if (!rc)
            ctl_status(c, "tick %ld us", t);
        break;
    }
    case PF_DASH_CMD_RESET:
        rc = pf_sim_reset(c->sim);
        if (!rc)
            ctl_status(c, "reset");
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
        long period_ns = c->paused ? 100000000L : 30000000L;
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
        int rc = pf_sim_take_snapshot(c->sim, &c->snaps[c->back]);

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

void pf_dash_bridge_stop(pf_dash_bridge *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = 1;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->th, NULL);
    for (int i = 0; i < 3; i++)
        pf_sim_snapshot_free(&c->snaps[i]);
    pf_cmdq_free(&c->cmds);
    pf_cmdq_free(&c->local);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
