/* tui/cmd_attach.c - `pagefault attach`: watch a live vLLM server's KV cache.
 *
 *   pagefault attach --kv-events tcp://HOST:5557 [--replay tcp://HOST:5558]
 *                    [--metrics http://HOST:8000/metrics] [--dp-ranks N] [--history]
 *                    [--headless --format jsonl [--ticks N]]
 *
 * Reads vLLM's KV-cache events (net/zsub) and its Prometheus page
 * (net/metrics_http) into the attach model (net/attach_model), and every
 * tick either draws the screen (tui/attach_view through tui/term) or, with
 * --headless, prints one JSON object per line with the counts. One thread:
 * the loop waits on the event sockets (or the keyboard) in short slices, and
 * steps the metrics poll without blocking, so q answers at once.
 *
 * Exit status: 0 after q, SIGINT/SIGTERM or --ticks; 2 usage error (bad
 * flag or endpoint: one line on stderr); 1 the sockets failed.
 */
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/err.h"
#include "net/attach_model.h"
#include "net/metrics_http.h"
#include "net/zsub.h"
#include "tui/attach_view.h"
#include "tui/cli.h"
#include "tui/commands.h"
#include "tui/term.h"

#define PROG "pagefault attach"

static const char *const fmt_names[] = {"jsonl", NULL};

typedef struct {
    const char *events, *replay, *metrics, *topic;
    int dp_ranks, headless, format, ticks, tick_ms, no_color, max_blocks, history;
    double silence_s, metrics_timeout_s;
} attach_args;

static const char summary[] =
    "Watch a live vLLM server: its prefix cache's blocks from the KV-cache events (ZeroMQ), its\n"
    "counters and latency histograms from /metrics. Start vLLM with --kv-events-config\n"
    "'{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\",\n"
    "\"replay_endpoint\": \"tcp://*:5558\"}'. See docs/attach.md.";

static volatile sig_atomic_t stop_flag;
static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

typedef struct {
    pf_attach *m;
    double t0;
} loop_ctx;

static void on_note(void *ctx, const pf_zsub_note *n)
{
    loop_ctx *lc = ctx;
    double t = pf_clock_s() - lc->t0;
    switch (n->kind) {
    case PF_ZSUB_BATCH:
        pf_attach_apply(lc->m, n->rank, n->batch);
        break;
    case PF_ZSUB_RESTART:
        pf_attach_restart(lc->m, n->rank);
        pf_attach_note(lc->m, t, "rank %d: the server restarted (seq went back to %llu): its blocks dropped",
                       n->rank, (unsigned long long)n->seq);
        break;
    case PF_ZSUB_RECONNECT:
        /* silence is normal for an idle server: not a warning line */
        break;
    }
}

/* Copy the transports' counts into the model, with a warning line for
 * each kind that grew since the last tick. */
static void sync_warnings(pf_attach *m, const pf_zsub_stats *z, const pf_mfetch_stats *f, pf_zsub_stats *prev,
                          double t)
{
    pf_attach_counts *c = pf_attach_counts_mut(m);
    if (z) {
        if (z->malformed > prev->malformed)
            pf_attach_note(m, t, "%llu malformed message(s) refused", (unsigned long long)(z->malformed - prev->malformed));
        if (z->gaps > prev->gaps)
            pf_attach_note(m, t, "gap of %llu batch(es): %llu replayed, %llu lost so far",
                           (unsigned long long)(z->missed - prev->missed), (unsigned long long)z->replayed,
                           (unsigned long long)z->lost);
        if (z->unknown_events > prev->unknown_events)
            pf_attach_note(m, t, "%llu event(s) of an unknown kind skipped",
                           (unsigned long long)(z->unknown_events - prev->unknown_events));
        if (z->bad_events > prev->bad_events)
            pf_attach_note(m, t, "%llu malformed event(s) skipped", (unsigned long long)(z->bad_events - prev->bad_events));
        c->w_malformed = z->malformed;
        c->w_bad_events = z->bad_events;
        c->w_unknown_events = z->unknown_events;
        c->w_gaps = z->gaps;
        c->w_missed = z->missed;
        c->w_replays = z->replays;
        c->w_replayed = z->replayed;
        c->w_lost = z->lost;
        c->w_reconnects = z->reconnects;
        c->w_restarts = z->restarts;
        c->history = z->history;
        *prev = *z;
    }
    if (f)
        c->w_metrics_failed = f->failures;
}

static void jnum(FILE *o, const char *k, double v)
{
    if (isnan(v) || isinf(v))
        fprintf(o, ",\"%s\":null", k);
    else
        fprintf(o, ",\"%s\":%.6g", k, v);
}

static void jint(FILE *o, const char *k, unsigned long long v)
{
    fprintf(o, ",\"%s\":%llu", k, v);
}

static void print_jsonl(FILE *o, const pf_attach *m, double t, int tick, const pf_zsub *sub, int ranks)
{
    const pf_attach_counts *c = pf_attach_counts_get(m);
    fprintf(o, "{\"tick\":%d,\"t\":%.3f", tick, t);
    jint(o, "batches", c->batches);
    jint(o, "events_stored", c->events_stored);
    jint(o, "events_removed", c->events_removed);
    jint(o, "events_cleared", c->events_cleared);
    jint(o, "blocks_stored", c->blocks_stored);
    jint(o, "blocks_removed", c->blocks_removed);
    jint(o, "blocks_live", c->blocks_live);
    jint(o, "prefixes_live", c->prefixes_live);
    jint(o, "removed_unknown", c->removed_unknown);
    jint(o, "stored_again", c->stored_again);
    jint(o, "untracked", c->untracked);
    jint(o, "history_batches", c->history);
    jint(o, "metric_polls", c->metric_polls);
    jnum(o, "kv_cache_usage", c->usage);
    jnum(o, "num_requests_running", c->running);
    jnum(o, "num_requests_waiting", c->waiting);
    jnum(o, "num_preemptions", c->preemptions);
    jnum(o, "preemptions_per_s", c->preempt_rate);
    jnum(o, "prefix_cache_hit_rate", c->hit_rate);
    jnum(o, "prefix_cache_hit_rate_recent", c->hit_rate_recent);
    jnum(o, "ttft_p50_s", c->ttft[0]);
    jnum(o, "ttft_p90_s", c->ttft[1]);
    jnum(o, "ttft_p99_s", c->ttft[2]);
    jnum(o, "e2e_p50_s", c->e2e[0]);
    jnum(o, "e2e_p90_s", c->e2e[1]);
    jnum(o, "e2e_p99_s", c->e2e[2]);
    fprintf(o, ",\"ranks_live\":[");
    for (int r = 0; r < ranks; r++)
        fprintf(o, "%s%d", r ? "," : "", sub ? pf_zsub_rank_live(sub, r) : 0);
    fprintf(o, "],\"warnings\":{\"malformed\":%llu", (unsigned long long)c->w_malformed);
    jint(o, "bad_events", c->w_bad_events);
    jint(o, "unknown_events", c->w_unknown_events);
    jint(o, "gaps", c->w_gaps);
    jint(o, "missed", c->w_missed);
    jint(o, "replays", c->w_replays);
    jint(o, "replayed", c->w_replayed);
    jint(o, "lost", c->w_lost);
    jint(o, "reconnects", c->w_reconnects);
    jint(o, "restarts", c->w_restarts);
    jint(o, "metrics_failed", c->w_metrics_failed);
    jint(o, "metrics_bad_lines", c->w_metrics_bad_lines);
    jint(o, "metrics_truncated", c->w_metrics_truncated);
    fprintf(o, "}}\n");
    fflush(o);
}

/* ---- the session: the streams, the model, the screen --------------------- */

typedef struct {
    const attach_args *a;
    pf_zsub *sub;     /* --kv-events, or NULL      */
    pf_mfetch *fetch; /* --metrics, or NULL        */
    pf_attach *m;
    loop_ctx lc;      /* the model and time 0, for the subscriber's notes */
    pf_cells cells;
    pf_prom_page page;
    int term_open, metrics_ok, full;
    pf_zsub_stats zprev; /* the last tick's, for new warnings */
    int live[PF_ZSUB_MAX_RANKS];
} attach_run;

/* Subscribe, open the metrics poller, make the model, take the terminal
 * (or, headless, SIGINT and SIGTERM). Returns -1 when all is open, else
 * the exit status after one line (2 for a bad endpoint or URL). */
static int attach_open(attach_run *r, const attach_args *a)
{
    memset(r, 0, sizeof *r);
    r->a = a;
    r->full = 1;
    const char *why = "";
    int rc;
    if (a->events) {
        pf_zsub_config zc = pf_zsub_config_default();
        zc.endpoint = a->events;
        zc.replay_endpoint = a->replay;
        zc.dp_ranks = a->dp_ranks;
        zc.topic = a->topic;
        /* 0 is "never"; any other value at least 1 ms (0.0001 s truncated
         * to 0 and meant the opposite of what was asked) */
        zc.silence_ms = a->silence_s > 0 && a->silence_s < 0.001 ? 1 : (int)(a->silence_s * 1000.0);
        zc.replay_history = a->history;
        rc = pf_zsub_open(&zc, &r->sub, &why);
        if (rc == PF_ERR_ARG)
            return pf_cli_error(PROG, "--kv-events/--replay: %s", why);
        if (rc) {
            fprintf(stderr, "%s: cannot subscribe to %s: %s\n", PROG, a->events, why);
            return 1;
        }
    }
    if (a->metrics) {
        rc = pf_mfetch_open(a->metrics, a->tick_ms < 1000 ? a->tick_ms : 1000,
                            (int)(a->metrics_timeout_s * 1000.0), pf_prom_limits_default().max_bytes,
                            &r->fetch, &why);
        if (rc == PF_ERR_ARG)
            return pf_cli_error(PROG, "--metrics: %s, got '%s'", why, a->metrics);
        if (rc) {
            fprintf(stderr, "%s: %s\n", PROG, pf_strerror(rc));
            return 1;
        }
    }
    r->m = pf_attach_new((uint32_t)a->max_blocks);
    if (!r->m) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        return 1;
    }
    if (a->headless) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    } else {
        char err[256];
        /* the terminal's character set for the grid's blocks; numbers stay
         * in the C locale (the metrics parser relies on it) */
        setlocale(LC_CTYPE, "");
        if (pf_term_open(a->no_color, err, sizeof err) != 0)
            return pf_cli_error(PROG, "%s", err);
        r->term_open = 1;
    }
    r->lc = (loop_ctx){r->m, pf_clock_s()};
    return -1;
}

/* The time between two ticks, in slices of at most 20 ms: the events, the
 * metrics poll, the keys. Returns 1 when the user or a signal asks to quit. */
static int attach_wait(attach_run *r, double next_tick)
{
    const char *why = "";
    for (;;) {
        double left = next_tick - pf_clock_s();
        if (left <= 0)
            return 0;
        int slice = (int)(left * 1000.0) + 1;
        if (slice > 20)
            slice = 20;
        if (r->sub && pf_zsub_poll(r->sub, r->term_open ? 0 : slice, on_note, &r->lc) < 0)
            pf_attach_note(r->m, pf_clock_s() - r->lc.t0, "event sockets failed");
        if (r->fetch) {
            int fr = pf_mfetch_step(r->fetch, &r->page, &why);
            if (fr == 1) {
                pf_attach_metrics(r->m, &r->page, pf_clock_s() - r->lc.t0);
                r->metrics_ok = 1;
            } else if (fr < 0) {
                if (r->metrics_ok || !pf_attach_note_count(r->m))
                    pf_attach_note(r->m, pf_clock_s() - r->lc.t0, "metrics: %s", why);
                r->metrics_ok = 0;
            }
        }
        if (r->term_open) {
            int k = pf_term_getkey(slice);
            if (k == 'q' || k == 'Q' || pf_term_quit_requested())
                return 1;
            if (k == PF_TERM_KEY_RESIZE)
                r->full = 1;
        } else if (!r->sub) {
            struct timespec ts = {0, (long)slice * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (stop_flag)
            return 1;
    }
}

/* A tick: the streams' counters become warnings, the model takes its
 * sample, and the screen is drawn (or, headless, one jsonl line printed). */
static void attach_tick(attach_run *r, int tick)
{
    const attach_args *a = r->a;
    double t = pf_clock_s() - r->lc.t0;
    pf_zsub_stats zs;
    pf_mfetch_stats fs;
    if (r->sub)
        pf_zsub_stats_get(r->sub, &zs);
    if (r->fetch)
        pf_mfetch_stats_get(r->fetch, &fs);
    sync_warnings(r->m, r->sub ? &zs : NULL, r->fetch ? &fs : NULL, &r->zprev, t);
    pf_attach_sample(r->m, t);
    if (a->headless) {
        print_jsonl(stdout, r->m, t, tick, r->sub, a->dp_ranks);
        return;
    }
    int w, h;
    pf_term_size(&w, &h);
    if ((w != r->cells.w || h != r->cells.h) &&
        pf_cells_resize(&r->cells, w < 1 ? 1 : w, h < 1 ? 1 : h) == 0)
        r->full = 1;
    for (int k = 0; k < a->dp_ranks; k++)
        r->live[k] = r->sub ? pf_zsub_rank_live(r->sub, k) : 0;
    pf_attach_view_info vi = {a->events, a->metrics, a->dp_ranks, r->live, r->metrics_ok, t};
    pf_attach_view_render(&r->cells, r->m, &vi);
    pf_term_draw(&r->cells, r->full);
    r->full = 0;
}

static void attach_close(attach_run *r)
{
    if (r->term_open)
        pf_term_close();
    pf_cells_free(&r->cells);
    pf_prom_page_free(&r->page);
    pf_attach_free(r->m);
    pf_mfetch_close(r->fetch);
    pf_zsub_close(r->sub);
}

int pf_cmd_attach(int argc, char **argv)
{
    attach_args a = {
        .topic = "", .dp_ranks = 1, .tick_ms = 1000, .silence_s = 10.0, .metrics_timeout_s = 2.0,
        .max_blocks = 1 << 20,
    };
    pf_opt opts[] = {
        {"kv-events", PF_OPT_STRING, &a.events, 0, 0, NULL, "tcp://HOST:PORT",
         "vLLM's KV-event PUB endpoint (its 'endpoint', e.g. tcp://HOST:5557)", 0},
        {"replay", PF_OPT_STRING, &a.replay, 0, 0, NULL, "tcp://HOST:PORT",
         "vLLM's replay ROUTER endpoint ('replay_endpoint'): gaps are repaired from it", 0},
        {"metrics", PF_OPT_STRING, &a.metrics, 0, 0, NULL, "URL", "vLLM's Prometheus page, e.g. http://HOST:8000/metrics", 0},
        {"history", PF_OPT_FLAG, &a.history, 0, 0, NULL, NULL,
         "on attaching, replay what the server still buffers (needs --replay): the blocks stored before", 0},
        {"dp-ranks", PF_OPT_INT, &a.dp_ranks, 1, PF_ZSUB_MAX_RANKS, NULL, "N",
         "data-parallel ranks: rank r publishes on PORT + r", 0},
        {"topic", PF_OPT_STRING, &a.topic, 0, 0, NULL, "T", "subscribe to this topic prefix (vLLM's default is \"\")", 0},
        {"tick-ms", PF_OPT_INT, &a.tick_ms, 10, 60000, NULL, "MS", "screen refresh and jsonl line interval", 0},
        {"silence-s", PF_OPT_DOUBLE, &a.silence_s, 0, 86400, NULL, "S",
         "reconnect a rank silent this long (0: never)", 0},
        {"metrics-timeout-s", PF_OPT_DOUBLE, &a.metrics_timeout_s, 0.01, 600, NULL, "S",
         "give up on one /metrics poll after this long", 0},
        {"max-blocks", PF_OPT_INT, &a.max_blocks, 1, 1 << 26, NULL, "N",
         "track at most this many cached blocks", 0},
        {"headless", PF_OPT_FLAG, &a.headless, 0, 0, NULL, NULL, "no screen: print --format lines on stdout", 0},
        {"format", PF_OPT_CHOICE, &a.format, 0, 0, fmt_names, NULL, "headless output: one JSON object per tick", 0},
        {"ticks", PF_OPT_INT, &a.ticks, 0, 1 << 30, NULL, "N", "stop after N ticks (0: until q or a signal)", 0},
        {"no-color", PF_OPT_FLAG, &a.no_color, 0, 0, NULL, NULL, "attributes only, no colours", 0},
        {0},
    };
    int rc = pf_cli_start(PROG, summary, opts, argc, argv);
    if (rc != PF_CLI_GO)
        return rc;
    if (a.replay && !a.events)
        return pf_cli_error(PROG, "--replay needs --kv-events");
    if (a.history && !a.replay)
        return pf_cli_error(PROG, "--history needs --replay (the history comes from the replay socket)");
    if (!a.events && !a.metrics)
        return pf_cli_error(PROG, "give --kv-events tcp://HOST:5557 and/or --metrics http://HOST:8000/metrics");

    attach_run run;
    int status = attach_open(&run, &a);
    if (status < 0) {
        double next_tick = run.lc.t0 + a.tick_ms / 1000.0;
        for (int tick = 1;; tick++) {
            int quit = attach_wait(&run, next_tick);
            attach_tick(&run, tick);
            next_tick += a.tick_ms / 1000.0;
            if (next_tick < pf_clock_s()) /* a slow terminal: skip, do not spin to catch up */
                next_tick = pf_clock_s() + a.tick_ms / 1000.0;
            if (quit || (a.ticks && tick >= a.ticks))
                break;
        }
        status = 0;
    }
    attach_close(&run);
    return status;
}
