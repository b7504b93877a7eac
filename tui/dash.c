/* tui/dash.c - the dashboard: `pagefault` with no subcommand.
 *
 * Threads (the UI thread never waits on the simulator or the GPU):
 *  - UI thread (this one): the only thread that calls curses. Every
 *    iteration it picks up the newest snapshot if one is ready, renders it
 *    into the cell buffer, copies that to the terminal, and waits for a key
 *    with a timeout (33 ms running, 250 ms paused: little CPU when idle).
 *    Keys become commands posted to the control thread's queue.
 *  - control thread (tui/bridge.c): owns every call into the simulator's
 *    control API and takes the snapshots. It executes queued commands in order (so quick
 *    repeated presses are never lost: each step is computed from the
 *    simulator's current value), then snapshots into a back buffer and
 *    swaps it with the middle buffer under a mutex. The UI swaps middle
 *    and front when "fresh" is set: a triple buffer, so neither side ever
 *    waits for the other's work, only for a pointer swap.
 *  - GPU thread (on g): takes the live block tables (pf_sim_layout), runs
 *    pf_gpu_run_layout at both head shapes and posts the results into the
 *    GPU panel under a mutex.
 *  - the simulator's own worker threads (threaded engine).
 * SIGINT/SIGTERM/SIGWINCH are blocked in every thread but the UI thread, so
 * they interrupt the UI's getch and are seen at once.
 *
 * Headless mode (--headless) steps the deterministic engine on this thread,
 * prints the rendered buffer every K ticks and a final summary.
 */
#include "tui/dash.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/workload.h"
#include "gpu/gpu.h"
#include "tui/cli.h"
#include "tui/commands.h"
#include "tui/look.h"
#include "tui/bridge.h"
#include "tui/render.h"
#include "tui/record.h"
#include "tui/simpub.h"
#include "tui/simflags.h"
#include "tui/sweep.h"
#include "tui/term.h"

/* ---- options ----------------------------------------------------------------- */

typedef struct {
    pf_simflags sf;  /* the simulator's flags, shared with `pagefault sim` */
    pf_sim_params p; /* what they say, after parsing                      */
    pf_dash_look look;    /* --ascii, --no-color, --coloring, --charts, --window */
    int headless, ticks, dump_every, width, height, gpu;
    int format;           /* 0 text, 1 jsonl (headless)                  */
    int loop;
    const char *record;   /* --record FILE, or NULL                      */
    int metrics_port;     /* --metrics-port P, 0: none                   */
    const char *metrics_bind; /* --metrics-bind ADDR, NULL: 127.0.0.1    */
    FILE *rec;            /* open while recording                        */
    int rec_failed;       /* a write failed: said once at the end        */
} dash_opts;

static const char dash_summary[] =
    "The live dashboard of the KV block pool: the pool as a grid coloured by owning sequence,\n"
    "state or age, counters, charts in simulated seconds, events and GPU passes on the live\n"
    "layout. Keys: ? in the dashboard.\n"
    "--headless prints the same screen as text every --dump-every ticks and a final summary.";

/* ---- the GPU thread ------------------------------------------------------------ */

typedef struct {
    pf_sim *sim;
    pthread_mutex_t mu;
    pf_gpu_panel panel; /* guarded by mu                  */
    pthread_t th;
    int joinable;
} gpu_ctl;

static void gpu_post(gpu_ctl *g, const pf_gpu_panel *p)
{
    pthread_mutex_lock(&g->mu);
    g->panel = *p;
    pthread_mutex_unlock(&g->mu);
}

static void *gpu_main(void *arg)
{
    gpu_ctl *g = arg;
    pf_gpu_panel p;
    memset(&p, 0, sizeof p);
    int *lens = NULL, *tables = NULL;
    char why[200] = "";
    if (!pf_gpu_available(why, sizeof why)) {
        p.state = PF_GPU_PANEL_UNAVAILABLE;
        snprintf(p.msg, sizeof p.msg, "%s", why[0] ? why : "no reason given");
        goto out;
    }
    pf_sim_params prm;
    pf_sim_stats st;
    pf_sim_get_params(g->sim, &prm);
    pf_sim_get_stats(g->sim, &st);
    int bs = prm.cfg.block_size > 0 ? prm.cfg.block_size : 16;
    int maxb = (prm.cfg.max_seq_len + bs - 1) / bs;
    int cap = prm.cfg.pool_blocks < 4096 ? prm.cfg.pool_blocks : 4096;
    if (maxb < 1 || cap < 1) {
        p.state = PF_GPU_PANEL_ERROR;
        snprintf(p.msg, sizeof p.msg, "bad pool shape");
        goto out;
    }
    lens = calloc((size_t)cap, sizeof *lens);
    tables = calloc((size_t)cap * (size_t)maxb, sizeof *tables);
    if (!lens || !tables) {
        p.state = PF_GPU_PANEL_ERROR;
        snprintf(p.msg, sizeof p.msg, "out of host memory for the block tables");
        goto out;
    }
    int n = pf_sim_layout(g->sim, cap, maxb, lens, tables);
    if (n <= 0) {
        p.state = PF_GPU_PANEL_ERROR;
        snprintf(p.msg, sizeof p.msg, "%s", n < 0 ? pf_strerror(n) : "no live sequences in the pool right now");
        goto out;
    }
    int frames = 0;
    for (int i = 0; i < n; i++)
        frames += (lens[i] + bs - 1) / bs;
    p.state = PF_GPU_PANEL_RUNNING;
    p.step = st.step;
    p.nseqs = n;
    p.nframes = frames;
    gpu_post(g, &p);
    pf_gpu_layout lay = {n, lens, tables, maxb, prm.cfg.pool_blocks, bs};
    for (int k = 0; k < PF_GPU_PANEL_SHAPES; k++) {
        char err[120] = "";
        int rc = pf_gpu_run_layout(&lay, &pf_gpu_panel_shapes[k].hs, &p.res[k], err, sizeof err);
        p.ok[k] = rc == PF_OK;
        if (rc != PF_OK)
            snprintf(p.err[k], sizeof p.err[k], "%s", err[0] ? err : pf_strerror(rc));
    }
    p.state = PF_GPU_PANEL_DONE;
out:
    free(lens);
    free(tables);
    gpu_post(g, &p);
    return NULL;
}

static void gpu_start(gpu_ctl *g, char *status, size_t len)
{
    pthread_mutex_lock(&g->mu);
    int busy = g->panel.state == PF_GPU_PANEL_RUNNING;
    if (!busy) {
        memset(&g->panel, 0, sizeof g->panel);
        g->panel.state = PF_GPU_PANEL_RUNNING;
    }
    pthread_mutex_unlock(&g->mu);
    if (busy) {
        snprintf(status, len, "a GPU pass is already running");
        return;
    }
    if (g->joinable) { /* the previous one has posted its result: exits now */
        pthread_join(g->th, NULL);
        g->joinable = 0;
    }
    sigset_t old;
    pf_dash_block_ui_signals(&old);
    int rc = pthread_create(&g->th, NULL, gpu_main, g);
    pf_dash_restore_signals(&old);
    if (rc != 0) {
        pf_gpu_panel p;
        memset(&p, 0, sizeof p);
        p.state = PF_GPU_PANEL_ERROR;
        snprintf(p.msg, sizeof p.msg, "cannot start the GPU thread");
        gpu_post(g, &p);
        return;
    }
    g->joinable = 1;
    snprintf(status, len, "GPU pass started");
}

/* ---- setup shared by both modes -------------------------------------------- */

static pf_sim *make_sim(dash_opts *o, pf_jobs *jobs, int *status)
{
    char err[256] = "";
    *status = pf_simflags_jobs("pagefault", &o->sf, jobs, 1);
    if (*status)
        return NULL;
    pf_sim *sim = pf_sim_create(&o->p, jobs, err, sizeof err);
    if (!sim) {
        fprintf(stderr, "pagefault: %s\n", err[0] ? err : "cannot create the simulator");
        *status = 2;
    }
    return sim;
}

static void print_summary(FILE *f, pf_sim *sim, int ticks)
{
    pf_sim_stats st;
    pf_sim_get_stats(sim, &st);
    fprintf(f, "summary after %d ticks (step %lld, %.3f s simulated)%s\n", ticks, (long long)st.step, st.time_s,
            !st.done ? "" : st.aborted > 0 ? ", every job finished or aborted" : ", every job finished");
    if (st.aborted > 0)
        fprintf(f, "  aborted %lld (they can never be admitted under these parameters)\n",
                (long long)st.aborted);
    fprintf(f, "  admitted %lld, finished %lld, waiting %d, running %d\n", (long long)st.admitted,
            (long long)st.finished, st.waiting, st.running);
    fprintf(f, "  preemptions %lld, recomputed tokens %lld, swapped pages %lld, ping-pongs %lld\n",
            (long long)st.preemptions, (long long)st.recomputed_tokens,
            (long long)st.swapped_pages, (long long)st.pingpongs);
    fprintf(f, "  decoding mean %.2f, stalled mean %.2f, queue time mean %.3f p50 %.3f p99 %.3f s\n",
            st.decoding_mean, st.stalled_mean, st.wait_mean, st.wait_p50, st.wait_p99);
    fprintf(f, "  TTFT p50 %.3f p99 %.3f s, e2e p99 %.3f s\n", st.lat[PF_MET_TTFT].p50,
            st.lat[PF_MET_TTFT].p99, st.lat[PF_MET_E2E].p99);
    fprintf(f, "  kv usage mean %.1f%%, peak %d frames, throughput %.1f tok/s", 100.0 * st.kv_usage_mean,
            st.pool_peak, st.throughput);
    if (st.throughput_vs_naive > 0)
        fprintf(f, " (%.2fx naive)", st.throughput_vs_naive);
    fprintf(f, ", goodput %.1f%%\n", 100.0 * st.goodput);
}

/* ---- headless --------------------------------------------------------------- */

/* Naive's output tokens per second on the same jobs: a deterministic naive
 * run to the end (milliseconds for the default 512 jobs). 0 when it cannot
 * be had (no memory, or a naive run that cannot finish). */
static double naive_baseline(const pf_sim_params *p, const pf_jobs *jobs)
{
    pf_sim_params np = *p;
    np.mode = PF_SIM_NAIVE;
    np.engine = PF_ENGINE_DETERMINISTIC;
    np.watermark_auto = 0;
    np.naive_throughput = 0;
    pf_sim *n = pf_sim_create(&np, jobs, NULL, 0);
    if (!n)
        return 0;
    pf_sim_stats st;
    memset(&st, 0, sizeof st);
    int rc = pf_sim_run(n, &st);
    pf_sim_destroy(n);
    return rc == PF_OK && st.throughput > 0 ? st.throughput : 0;
}

/* A double as JSON: non-finite values are null, the rest at full precision. */
static void json_num(FILE *f, const char *key, double x)
{
    if (x != x || x > 1e308 || x < -1e308)
        fprintf(f, ",\"%s\":null", key);
    else
        fprintf(f, ",\"%s\":%.17g", key, x);
}

/* One line of --format jsonl: the frame's step and time, the counters, the
 * frames per state and per owner state. "time" is in simulated seconds
 * ("time_unit": "s"; version 1 had steps there, so "v" is 2). */
static void dump_jsonl(FILE *f, const pf_sim_snapshot *s, int tick, int final)
{
    const pf_sim_stats *st = &s->stats;
    long fr[6] = {0, 0, 0, 0, 0, 0};       /* pf_frame_state           */
    long by_state[7] = {0, 0, 0, 0, 0, 0, 0}; /* pf_seq_state of the owner */
    for (int i = 0; i < s->nframes; i++) {
        unsigned k = s->frames[i].state;
        fr[k < 6 ? k : PF_FRAME_USED]++;
        int q = s->frame_seq ? s->frame_seq[i] : -1;
        if (q >= 0 && q < s->nseqs && s->seqs[q].state < 7)
            by_state[s->seqs[q].state]++;
    }
    fprintf(f, "{\"v\":2,\"tick\":%d,\"step\":%lld", tick, (long long)st->step);
    json_num(f, "time", st->time_s);
    fprintf(f, ",\"time_unit\":\"s\",\"final\":%s", final ? "true" : "false");
    fprintf(f, ",\"mode\":\"%s\",\"done\":%s", s->params.mode == PF_SIM_NAIVE ? "naive" : "paged",
            st->done ? "true" : "false");
    fprintf(f, ",\"waiting\":%d,\"running\":%d,\"decoding\":%d,\"stalled\":%d,\"swapped_out\":%d",
            st->waiting, st->running, st->decoding, st->stalled, st->swapped_out);
    fprintf(f, ",\"admitted\":%lld,\"finished\":%lld,\"preemptions\":%lld,\"recomputed_tokens\":%lld"
               ",\"swapped_pages\":%lld,\"pingpongs\":%lld,\"tokens_generated\":%lld,\"tokens_held\":%lld",
            (long long)st->admitted, (long long)st->finished, (long long)st->preemptions,
            (long long)st->recomputed_tokens, (long long)st->swapped_pages, (long long)st->pingpongs,
            (long long)st->tokens_generated, (long long)st->tokens_held);
    fprintf(f, ",\"pool_used\":%d,\"pool_free\":%d,\"pool_peak\":%d", st->pool_used, st->pool_free,
            st->pool_peak);
    json_num(f, "kv_usage", st->kv_usage);
    json_num(f, "kv_util", st->kv_util);
    json_num(f, "throughput", st->throughput);
    if (st->throughput_vs_naive > 0)
        json_num(f, "throughput_vs_naive", st->throughput_vs_naive);
    else
        fprintf(f, ",\"throughput_vs_naive\":null");
    json_num(f, "goodput", st->goodput);
    json_num(f, "ttft_p99", st->lat[PF_MET_TTFT].p99);
    json_num(f, "queue_time_mean", st->wait_mean);
    json_num(f, "watermark", st->watermark);
    fprintf(f, ",\"frames\":{\"free\":%ld,\"used\":%ld,\"reserved\":%ld,\"shared\":%ld,\"swapped\":%ld"
               ",\"cached\":%ld}",
            fr[PF_FRAME_FREE], fr[PF_FRAME_USED], fr[PF_FRAME_RESERVED], fr[PF_FRAME_SHARED],
            fr[PF_FRAME_SWAPPED], fr[PF_FRAME_CACHED]);
    fprintf(f, ",\"frames_by_owner_state\":{\"running\":%ld,\"stalled\":%ld,\"prefilling\":%ld"
               ",\"recomputing\":%ld,\"swapping\":%ld,\"waiting\":%ld}}\n",
            by_state[PF_SEQ_DECODING], by_state[PF_SEQ_STALLED], by_state[PF_SEQ_PREFILLING],
            by_state[PF_SEQ_RECOMPUTING], by_state[PF_SEQ_SWAPPED], by_state[PF_SEQ_WAITING]);
}

/* What a headless run draws with: the screen buffer, the snapshot it is
 * drawn from, the charts' history, and the view over them. */
typedef struct {
    pf_cells buf;
    pf_sim_snapshot snap;
    pf_hist hist;
    pf_dash_view v;
} headless;

/* After step t: look at the simulator when a frame is due (dump) or the
 * charts' history needs it (the simulator keeps 256 steps, so look at least
 * every 128), and print the frame (or the JSON line) when due. */
static void headless_look(dash_opts *o, pf_sim *sim, headless *h, int t, int dump, int *last_dump)
{
    if (!(dump || t % 128 == 0) || pf_sim_take_snapshot(sim, &h->snap) != 0)
        return;
    pf_hist_update(&h->hist, &h->snap);
    if (dump && o->rec && pf_record_put(o->rec, &h->snap, t, 0) != 0)
        o->rec_failed = 1;
    if (dump && o->format == 1) {
        dump_jsonl(stdout, &h->snap, t, 0);
        *last_dump = t;
    } else if (dump) {
        pf_render_screen(&h->buf, &h->v, NULL);
        printf("--- tick %d ---\n", t);
        pf_dash_dump(stdout, &h->buf);
        *last_dump = t;
    }
}

/* The steps, up to --ticks or until every job finishes: 0, or 1 after a
 * message (a failed step, or a livelock without --ticks). *t: the steps
 * taken; *last_dump: the last one printed. */
static int headless_steps(dash_opts *o, pf_sim *sim, headless *h, int *t, int *last_dump)
{
    for (;;) {
        if (o->ticks && *t >= o->ticks)
            return 0;
        int rc = pf_sim_step(sim);
        if (rc == PF_ERR_RANGE) {
            /* a livelock: with --ticks the frames still show it; without,
             * the loop "until every job finishes" would never end */
            if (!o->ticks) {
                fprintf(stderr, "pagefault: the run stopped in a livelock (sequences kept preempting "
                                "one another and none produced a token); use --ticks N to watch it\n");
                return 1;
            }
            rc = 0;
        }
        if (rc < 0) {
            fprintf(stderr, "pagefault: simulator step failed: %s\n", pf_strerror(rc));
            return 1;
        }
        ++*t;
        int dump = o->dump_every && *t % o->dump_every == 0;
        if (o->format == 1 && ((o->ticks && *t >= o->ticks) || rc == 1))
            dump = 0; /* the final line carries this step */
        headless_look(o, sim, h, *t, dump, last_dump);
        if (rc == 1)
            return 0;
    }
}

/* The final frame (or JSON line, always: scripts read the last line) of a
 * run that ended well, unless the last step's frame was printed already;
 * with --gpu the passes' panel shows in it. */
static void headless_final(dash_opts *o, pf_sim *sim, headless *h, int t, int last_dump)
{
    const int jsonl = o->format == 1;
    if ((!jsonl && last_dump == t && !o->gpu) || pf_sim_take_snapshot(sim, &h->snap) != 0)
        return;
    if (o->rec && pf_record_put(o->rec, &h->snap, t, 1) != 0)
        o->rec_failed = 1;
    if (jsonl) {
        dump_jsonl(stdout, &h->snap, t, 1);
    } else {
        pf_hist_update(&h->hist, &h->snap);
        pf_render_screen(&h->buf, &h->v, NULL);
        printf("--- tick %d (final) ---\n", t);
        pf_dash_dump(stdout, &h->buf);
    }
}

static int run_headless(dash_opts *o, pf_sim *sim)
{
    headless h;
    memset(&h, 0, sizeof h);
    if (pf_cells_resize(&h.buf, o->width, o->height) != 0) {
        fprintf(stderr, "pagefault: out of memory for a %dx%d screen\n", o->width, o->height);
        return 1;
    }
    h.v.snap = &h.snap;
    pf_look_view(&o->look, &h.v);
    h.v.hist = &h.hist;
    int t = 0, last_dump = -1;
    int status = headless_steps(o, sim, &h, &t, &last_dump);
    /* --gpu: the GPU passes on the final layout, shown in the final frame */
    gpu_ctl g;
    memset(&g, 0, sizeof g);
    if (status == 0 && o->gpu) {
        g.sim = sim;
        pthread_mutex_init(&g.mu, NULL);
        gpu_main(&g); /* blocking is fine here: there is no UI to keep alive */
        pthread_mutex_destroy(&g.mu);
        h.v.gpu = &g.panel;
    }
    if (status == 0)
        headless_final(o, sim, &h, t, last_dump);
    if (status == 0 && o->format != 1)
        print_summary(stdout, sim, t);
    /* --gpu without a usable GPU: the frame says why, and so does stderr
     * with bench's words and status (3: no GPU), so a script notices */
    if (status == 0 && o->gpu && g.panel.state == PF_GPU_PANEL_UNAVAILABLE) {
        fprintf(stderr, "pagefault: no GPU: %s\n", g.panel.msg);
        status = 3;
    }
    pf_sim_snapshot_free(&h.snap);
    pf_hist_free(&h.hist);
    pf_cells_free(&h.buf);
    return status;
}

/* ---- interactive ------------------------------------------------------------ */

/* ---- the start: the naive baseline, with progress, cancellable ------------------
 *
 * A paged run's `vs naive` needs naive's throughput on the same jobs, which
 * the simulator gets from a deterministic naive run at start: milliseconds
 * for the default 512 jobs, but tens of seconds for a million. The dashboard
 * runs that baseline itself, step by step on a thread of its own, while the
 * UI shows how far it got and answers q at once (the thread stops at its
 * next step); the live simulator is then made with the figure
 * (params.naive_throughput) and starts at once.
 *
 * The one thing a step-by-step run cannot cancel is pf_sim_create itself,
 * which for a million jobs takes seconds. So the thread works on its own
 * copy of the jobs in a control block it shares with the UI, and when the
 * user quits before it is done the UI leaves it behind (detached) rather
 * than wait: whichever of the two lets go of the block last frees it (the
 * `orphan` handshake), and a thread still inside pf_sim_create when the
 * process exits simply ends with it. */

typedef struct {
    pf_sim_params p;
    pf_jobs jobs;          /* the thread's own copy                     */
    atomic_int cancel;     /* UI -> thread                              */
    atomic_int done;       /* thread -> UI: 1 finished, -1 failed       */
    atomic_int orphan;     /* 1: the UI left (the thread frees all);
                              2: the thread is through with the block   */
    atomic_llong finished; /* naive jobs finished so far (progress)     */
    double tput;           /* the result; read after the join           */
} base_ctl;

static void base_free(base_ctl *b)
{
    pf_jobs_free(&b->jobs);
    free(b);
}

static void *base_main(void *arg)
{
    base_ctl *b = arg;
    pf_sim_params np = b->p;
    np.mode = PF_SIM_NAIVE;
    np.engine = PF_ENGINE_DETERMINISTIC;
    np.watermark_auto = 0;
    np.naive_throughput = 0;
    pf_sim *n = pf_sim_create(&np, &b->jobs, NULL, 0);
    int ok = n != NULL;
    for (long i = 0; ok && !atomic_load(&b->cancel); i++) {
        int rc = pf_sim_step(n);
        if (rc == 1 || rc < 0) { /* done, or stuck/failed: no baseline */
            pf_sim_stats st;
            pf_sim_get_stats(n, &st);
            b->tput = rc == 1 ? st.throughput : 0;
            break;
        }
        if (i % 256 == 0) {
            pf_sim_stats st;
            pf_sim_get_stats(n, &st);
            atomic_store(&b->finished, (long long)st.finished);
        }
    }
    pf_sim_destroy(n);
    atomic_store(&b->done, ok ? 1 : -1);
    if (atomic_exchange(&b->orphan, 2) == 1) /* the UI has gone: ours to free */
        base_free(b);
    return NULL;
}

/* The baseline's thread started on its own copy of the parameters and
 * jobs (it may outlive the UI: see orphan), with the UI's signals blocked
 * in it. Its control block, or NULL when it could not start. */
static base_ctl *base_start(const pf_sim_params *p, const pf_jobs *jobs, pthread_t *th)
{
    base_ctl *bp = calloc(1, sizeof *bp);
    if (!bp)
        return NULL;
    bp->p = *p;
    bp->jobs.njobs = jobs->njobs;
    bp->jobs.jobs = malloc((size_t)(jobs->njobs > 0 ? jobs->njobs : 1) * sizeof *jobs->jobs);
    if (!bp->jobs.jobs) {
        free(bp);
        return NULL;
    }
    memcpy(bp->jobs.jobs, jobs->jobs, (size_t)jobs->njobs * sizeof *jobs->jobs);
    atomic_init(&bp->cancel, 0);
    atomic_init(&bp->done, 0);
    atomic_init(&bp->orphan, 0);
    atomic_init(&bp->finished, 0);
    sigset_t old;
    pf_dash_block_ui_signals(&old);
    int rc = pthread_create(th, NULL, base_main, bp);
    pf_dash_restore_signals(&old);
    if (rc != 0) {
        base_free(bp);
        return NULL;
    }
    return bp;
}

/* The start screen: how far the baseline has come. */
static void start_progress(pf_cells *buf, int ascii, long long finished, int njobs)
{
    char msg[160];
    snprintf(msg, sizeof msg, "starting: naive baseline for 'vs naive', %lld of %d jobs (%.0f%%); q quits",
             finished, njobs, 100.0 * (double)finished / (njobs > 0 ? njobs : 1));
    pf_dash_view v;
    memset(&v, 0, sizeof v);
    v.ascii = ascii;
    v.starting = msg;
    pf_render_screen(buf, &v, NULL);
    pf_term_draw(buf, 0);
}

/* Run the baseline under a progress screen. Returns 0 with o->p's
 * naive_throughput set, 1 when the user quit (status in *quit_status), -1
 * when the thread could not start. */
static int start_phase(dash_opts *o, const pf_jobs *jobs, pf_cells *buf, int *quit_status)
{
    if (o->p.mode != PF_SIM_PAGED || o->p.naive_throughput > 0)
        return 0;
    pthread_t th;
    base_ctl *const bb = base_start(&o->p, jobs, &th);
    if (!bb)
        return -1;
    int quit = 0;
    double t0 = pf_clock_s();
    while (!atomic_load(&bb->done)) {
        int sig = pf_term_quit_requested();
        if (sig) {
            *quit_status = 128 + sig;
            quit = 1;
            break;
        }
        if (pf_clock_s() - t0 > 0.15) /* only a start that takes a while shows it */
            start_progress(buf, o->look.ascii, atomic_load(&bb->finished), jobs->njobs);
        int key = pf_term_getkey(50);
        if (key == PF_TERM_KEY_RESIZE) {
            int w, h;
            pf_term_size(&w, &h);
            if (w > 0 && h > 0)
                pf_cells_resize(buf, w, h);
        } else if (pf_dash_key(key) == PF_DASH_CMD_QUIT) {
            *quit_status = 0;
            quit = 1;
            break;
        }
    }
    atomic_store(&bb->cancel, 1); /* at most one more step, once created */
    if (quit) {
        /* q at once: a thread still building its simulator is left to
         * finish (or to end with the process) on its own copy */
        for (int i = 0; i < 20 && !atomic_load(&bb->done); i++)
            pf_term_getkey(10);
        if (atomic_exchange(&bb->orphan, 1) == 0) {
            pthread_detach(th);
            return 1;
        }
        pthread_join(th, NULL); /* it was through: ours to free */
        base_free(bb);
        return 1;
    }
    pthread_join(th, NULL);
    /* no baseline (the naive run cannot finish, a rare setting): 0 leaves
     * it to the simulator's own start, as before */
    o->p.naive_throughput = bb->tput > 0 ? bb->tput : 0;
    base_free(bb);
    return 0;
}

/* ---- the live loop ---------------------------------------------------------------
 *
 * The UI thread's state while the dashboard runs: the threads it started
 * (simulator, control bridge, GPU pass, sweep, publishers), what the screen
 * shows and how (the view's settings, which only keys change), and the
 * frame clock. One iteration of run_live: take what the other threads have
 * published (live_poll), draw if anything changed (live_draw), wait for a
 * key no longer than the next frame (live_wait_key), act on it. */

typedef struct {
    dash_opts *o;
    const pf_jobs *jobs;
    /* what it runs */
    pf_sim *sim;
    int sim_running;
    pf_dash_bridge *ctl;
    pf_simpub *pub; /* --metrics-port, --kv-events-publish */
    gpu_ctl gpu;
    pf_sweep sweep;
    /* what the screen shows */
    pf_cells buf;
    pf_marks marks;
    pf_hist hist;
    const pf_sim_snapshot *snap, *split_naive;
    pf_gpu_panel panel;
    pf_dash_run run;
    pf_sweep_view sweep_v;
    pf_grid_info gi;
    int too_small; /* the last frame was the too-small message: no key line */
    char status_msg[128];
    unsigned status_seen;
    /* the view's settings, changed by keys */
    int help, coloring, charts, show_sweep, cursor;
    int32_t inspect;
    double window;
    /* redrawing */
    int dirty, full, quick; /* quick: short waits left after a key */
    double marks_live_until, rec_last;
    /* frames drawn per second and the last render time, on the key line */
    double fps, render_ms, win_start;
    int win_frames;
    double next_frame; /* the next frame's deadline */
} dash_live;

/* --record's file, truncated, with its header. 0, or -1 with a line in
 * err. */
static int dash_record_open(dash_opts *o, char *err, size_t errlen)
{
    o->rec = fopen(o->record, "wb");
    if (o->rec && pf_record_begin(o->rec) == 0)
        return 0;
    snprintf(err, errlen, "--record: cannot write '%s'", o->record);
    if (o->rec)
        fclose(o->rec);
    o->rec = NULL;
    return -1;
}

/* Start everything: the publishers (bound before the terminal is taken, so
 * that a bind failure is one clear line), the terminal, the naive baseline
 * (start_phase), the simulator and the control bridge. Returns -1 when all
 * runs, else the exit status, with the terminal closed again and the
 * reason printed. */
static int live_open(dash_live *l, dash_opts *o, const pf_jobs *jobs)
{
    char err[256];
    memset(l, 0, sizeof *l);
    l->o = o;
    l->jobs = jobs;
    pthread_mutex_init(&l->gpu.mu, NULL);
    l->coloring = o->look.coloring;
    l->charts = o->look.charts;
    l->window = o->look.window;
    l->cursor = l->inspect = -1;
    l->dirty = l->full = 1;
    l->run.run = 1;
    if (o->metrics_port || o->sf.kv_publish) {
        if (pf_simpub_open(o->sf.kv_publish, o->sf.kv_replay, o->metrics_bind, o->metrics_port, &l->pub,
                           err, sizeof err) != 0) {
            fprintf(stderr, "pagefault: %s\n", err);
            return 2;
        }
    }
    if (pf_term_open(o->look.no_color, err, sizeof err) != 0) {
        fprintf(stderr, "pagefault: %s\n", err);
        return 2;
    }
    if (o->record && dash_record_open(o, err, sizeof err) != 0) {
        pf_term_close();
        fprintf(stderr, "pagefault: %s\n", err);
        return 2;
    }
    int w = 0, h = 0, qs = 0;
    pf_term_size(&w, &h);
    int rc = pf_cells_resize(&l->buf, w > 0 ? w : 1, h > 0 ? h : 1) == 0
                 ? start_phase(o, jobs, &l->buf, &qs) : -1;
    if (rc != 0) {
        pf_term_close();
        if (rc < 0)
            fprintf(stderr, "pagefault: cannot start the baseline thread\n");
        return rc < 0 ? 1 : qs;
    }
    l->sim = pf_sim_create(&o->p, jobs, err, sizeof err);
    if (!l->sim) {
        pf_term_close();
        fprintf(stderr, "pagefault: %s\n", err[0] ? err : "cannot create the simulator");
        return 1;
    }
    l->gpu.sim = l->sim;
    pf_simpub_attach(l->pub, l->sim); /* before the engine starts: every step is published */
    /* the bridge before the engine: it has the simulator hold the run's end,
     * which a tiny run could otherwise reach before the bridge is up */
    l->ctl = pf_dash_bridge_start(l->sim, err, sizeof err);
    if (!l->ctl) {
        pf_term_close();
        fprintf(stderr, "pagefault: %s\n", err);
        return 1;
    }
    sigset_t old;
    pf_dash_block_ui_signals(&old);
    rc = pf_sim_start(l->sim);
    pf_dash_restore_signals(&old);
    if (rc != 0) {
        pf_term_close();
        fprintf(stderr, "pagefault: cannot start the simulator: %s\n", pf_strerror(rc));
        return 1;
    }
    l->sim_running = 1;
    pf_dash_bridge_set_loop(l->ctl, o->loop);
    pf_dash_bridge_set_jobs(l->ctl, jobs);
    /* the start screen may have seen a resize */
    pf_term_size(&w, &h);
    if (pf_cells_resize(&l->buf, w > 0 ? w : 1, h > 0 ? h : 1) != 0) {
        pf_term_close();
        fprintf(stderr, "pagefault: out of memory for the screen buffer\n");
        return 1;
    }
    l->win_start = l->next_frame = pf_clock_s();
    return -1;
}

/* A new snapshot: flashes, charts, --record and the publishers follow it. */
static void live_snapshot(dash_live *l, const pf_sim_snapshot *s, double now)
{
    l->snap = s;
    const pf_sim_snapshot *sn = pf_dash_bridge_split(l->ctl);
    if ((sn != NULL) != (l->split_naive != NULL)) { /* another simulator: no flashes */
        l->marks.step = -1;
        pf_hist_clear(&l->hist);
    }
    l->split_naive = sn;
    l->dirty = 1;
    int64_t before = l->marks.preempted + l->marks.admitted;
    if (pf_marks_update(&l->marks, s, now) != 0)
        snprintf(l->status_msg, sizeof l->status_msg, "flashes off: out of memory");
    /* --record: about 10 snapshots a second are plenty to watch */
    if (l->o->rec && now - l->rec_last >= 0.1) {
        l->rec_last = now;
        if (pf_record_put(l->o->rec, s, (int)s->stats.step, 0) != 0)
            l->o->rec_failed = 1;
    }
    if (pf_hist_update(&l->hist, s) != 0)
        snprintf(l->status_msg, sizeof l->status_msg, "charts off: out of memory");
    if (l->pub && pf_simpub_update_snapshot(l->pub, s) != 0)
        snprintf(l->status_msg, sizeof l->status_msg, "/metrics not updated: out of memory");
    if (l->pub && pf_simpub_error(l->pub) != 0)
        snprintf(l->status_msg, sizeof l->status_msg, "KV events: a batch could not be sent");
    if (l->marks.preempted + l->marks.admitted != before)
        l->marks_live_until = now + PF_MARK_SECONDS + 0.05;
}

/* Take what the other threads have published since the last frame: a
 * snapshot, a status line, the run's state, the sweep's points, the GPU
 * panel. Anything new makes the frame dirty. */
static void live_poll(dash_live *l, double now)
{
    const pf_sim_snapshot *s = pf_dash_bridge_take(l->ctl);
    if (s)
        live_snapshot(l, s, now);
    if (now < l->marks_live_until) /* flashes fade even while paused */
        l->dirty = 1;
    if (pf_dash_bridge_status(l->ctl, &l->status_seen, l->status_msg, sizeof l->status_msg))
        l->dirty = 1;
    pf_dash_run r2;
    pf_dash_bridge_run(l->ctl, &r2);
    if (r2.run != l->run.run || r2.ended != l->run.ended) {
        l->run = r2;
        l->dirty = 1;
    }
    if (l->show_sweep) {
        pf_sweep_view sv;
        if (pf_sweep_get(&l->sweep, &sv) && memcmp(&sv, &l->sweep_v, sizeof sv) != 0) {
            l->sweep_v = sv;
            l->dirty = 1;
        }
    }
    pthread_mutex_lock(&l->gpu.mu);
    if (memcmp(&l->panel, &l->gpu.panel, sizeof l->panel) != 0) {
        l->panel = l->gpu.panel;
        l->dirty = 1;
    }
    pthread_mutex_unlock(&l->gpu.mu);
}

/* Render into the cell buffer and copy it to the terminal if the frame is
 * dirty; count frames a second. */
static void live_draw(dash_live *l, double now)
{
    if (l->dirty) {
        const dash_opts *o = l->o;
        pf_dash_view v = {.snap = l->snap, .gpu = &l->panel, .ascii = o->look.ascii, .help = l->help,
                          .status = l->status_msg, .fps = l->fps, .render_ms = l->render_ms,
                          .coloring = l->coloring, .marks = &l->marks, .now = now,
                          .cursor = l->cursor + 1, .inspect = l->inspect + 1, .hist = &l->hist,
                          .window_s = l->window, .charts = l->charts, .run_no = l->run.run,
                          .no_color = o->look.no_color,
                          .run_ended = l->run.ended, .final = &l->run.final,
                          .loop = o->loop,
                          .split_naive = l->split_naive,
                          .sweep = l->show_sweep ? &l->sweep_v : NULL};
        double t0 = pf_clock_s();
        l->too_small = pf_render_screen(&l->buf, &v, &l->gi) == 1;
        l->render_ms = (pf_clock_s() - t0) * 1e3;
        /* a resize may leave fewer cells than the cursor's index: back to
         * the last one, drawn again at once (the grid's geometry is known
         * only once drawn; none drawn, too small, keeps the cursor) */
        if (l->gi.cells > 0 && l->cursor >= l->gi.cells) {
            l->cursor = l->gi.cells - 1;
            v.cursor = l->cursor + 1;
            pf_render_screen(&l->buf, &v, &l->gi);
        }
        pf_term_draw(&l->buf, l->full);
        l->dirty = l->full = 0;
        l->win_frames++;
    }
    double t = pf_clock_s();
    if (t - l->win_start >= 1.0) {
        l->fps = l->win_frames / (t - l->win_start);
        l->win_frames = 0;
        l->win_start = t;
    }
}

/* Wait for a key until the next frame is due: frames every 1/30 s, the
 * wait shortened by the time the last frame took (a fixed 33 ms wait after
 * each frame would make 26-27 fps of 30); 250 ms while paused, for little
 * CPU, except for a few short waits right after a key so that its effect
 * (a single step, say) shows at once, and while flashes fade. */
static int live_wait_key(dash_live *l)
{
    double t = pf_clock_s();
    int paused = l->snap ? l->snap->paused : 0;
    l->next_frame += 1.0 / 30.0;
    if (l->next_frame < t || l->next_frame > t + 1.0 / 30.0)
        l->next_frame = t + 1.0 / 30.0; /* behind (a slow frame) or a clock jump */
    int wait_ms = (int)((l->next_frame - t) * 1000.0 + 0.5);
    int key = pf_term_getkey(paused && l->quick <= 0 && t >= l->marks_live_until ? 250
                             : wait_ms < 1                                       ? 1
                                                                                 : wait_ms);
    if (l->quick > 0)
        l->quick--;
    return key;
}

/* The mouse: a click on the key line is the key drawn there (returned);
 * on the grid it selects the cell and sequence (0: nothing more to do). */
static int live_mouse(dash_live *l)
{
    int mx, my;
    pf_term_mouse(&mx, &my);
    if (l->too_small) /* nothing drawn to click on, the key line neither */
        return 0;
    if (my == l->buf.h - 1)
        return pf_render_keybar_key(l->buf.w, mx);
    int c = pf_render_grid_hit(&l->gi, mx, my);
    if (c >= 0 && !l->help) {
        l->cursor = c;
        int32_t own = pf_render_cell_owner(l->snap, &l->gi, c);
        l->inspect = own >= 0 ? own : l->inspect;
    }
    return 0;
}

/* The sweep panel (x) on or off; on, a fresh sweep of the live parameters. */
static void live_toggle_sweep(dash_live *l)
{
    l->show_sweep = !l->show_sweep;
    if (!l->show_sweep) {
        pf_sweep_stop(&l->sweep);
        return;
    }
    if (!l->snap)
        return;
    sigset_t so;
    pf_dash_block_ui_signals(&so);
    int src = pf_sweep_start(&l->sweep, &l->snap->params, l->jobs);
    pf_dash_restore_signals(&so);
    snprintf(l->status_msg, sizeof l->status_msg, "%s",
             src == 0 ? "watermark sweep started (all cores)" : "cannot start the sweep threads");
    memset(&l->sweep_v, 0, sizeof l->sweep_v);
    pf_sweep_get(&l->sweep, &l->sweep_v);
}

/* A command from a key. The help screen takes keys first: pages turn with
 * Tab or the arrows, any other key closes it (q also quits). What the view
 * does not handle itself goes to the control thread's queue. Returns 1 to
 * quit. */
static int live_command(dash_live *l, pf_dash_cmd cmd)
{
    if (l->help) {
        if (cmd == PF_DASH_CMD_HELP_NEXT || cmd == PF_DASH_CMD_CURSOR_RIGHT) {
            l->help = l->help % PF_HELP_PAGES + 1;
            return 0;
        }
        if (cmd == PF_DASH_CMD_CURSOR_LEFT) {
            l->help = l->help > 1 ? l->help - 1 : PF_HELP_PAGES;
            return 0;
        }
        l->help = 0;
        if (cmd != PF_DASH_CMD_QUIT)
            return 0;
    }
    switch (cmd) {
    case PF_DASH_CMD_QUIT:
        return 1;
    case PF_DASH_CMD_HELP:
        l->help = 1;
        break;
    case PF_DASH_CMD_GPU:
        gpu_start(&l->gpu, l->status_msg, sizeof l->status_msg);
        break;
    case PF_DASH_CMD_COLORING:
        l->coloring = (l->coloring + 1) % PF_COLORING_COUNT;
        snprintf(l->status_msg, sizeof l->status_msg, "colour by %s", pf_coloring_names[l->coloring]);
        break;
    case PF_DASH_CMD_CLOSE:
        l->cursor = l->inspect = -1;
        break;
    case PF_DASH_CMD_SWEEP:
        live_toggle_sweep(l);
        break;
    case PF_DASH_CMD_CHARTS:
        l->charts = !l->charts;
        l->cursor = l->inspect = -1; /* the grid is not shown to point at */
        break;
    case PF_DASH_CMD_ZOOM_IN:
    case PF_DASH_CMD_ZOOM_OUT:
        l->window = pf_render_window_zoom(l->window, cmd == PF_DASH_CMD_ZOOM_OUT);
        snprintf(l->status_msg, sizeof l->status_msg, "chart window %g s of simulated time", l->window);
        break;
    case PF_DASH_CMD_INSPECT:
    case PF_DASH_CMD_CURSOR_UP:
    case PF_DASH_CMD_CURSOR_DOWN:
    case PF_DASH_CMD_CURSOR_LEFT:
    case PF_DASH_CMD_CURSOR_RIGHT: {
        l->cursor = pf_dash_cursor_move(cmd == PF_DASH_CMD_INSPECT ? -1 : l->cursor, cmd, l->gi.cells,
                                        l->gi.w);
        int32_t own = pf_render_cell_owner(l->snap, &l->gi, l->cursor);
        if (own >= 0)
            l->inspect = own;
        break;
    }
    case PF_DASH_CMD_NONE:
    case PF_DASH_CMD_HELP_NEXT:
        break;
    default:
        if (pf_dash_bridge_post(l->ctl, cmd) != 0)
            snprintf(l->status_msg, sizeof l->status_msg, "key dropped: out of memory for the queue");
        break;
    }
    return 0;
}

/* Stop and free everything live_open started, in order: a GPU pass in
 * flight ends on its own (bounded work); then the sweep (its points stop
 * at their next step), the control thread (before the simulator: it calls
 * into it), the simulator (pf_sim_stop is safe mid-step, the simulator's
 * contract, so no pause-and-wait is needed), and the publishers after the
 * simulator that published through them. The terminal is closed already. */
static void live_close(dash_live *l)
{
    if (l->gpu.joinable)
        pthread_join(l->gpu.th, NULL);
    pf_sweep_free(&l->sweep);
    pf_dash_bridge_stop(l->ctl);
    if (l->sim_running)
        pf_sim_stop(l->sim);
    pf_sim_destroy(l->sim);
    pf_cells_free(&l->buf);
    pf_marks_free(&l->marks);
    pf_hist_free(&l->hist);
    pf_simpub_close(l->pub, NULL);
    pthread_mutex_destroy(&l->gpu.mu);
}

static int run_live(dash_opts *o, const pf_jobs *jobs)
{
    dash_live l;
    int status = live_open(&l, o, jobs);
    if (status >= 0) {
        live_close(&l);
        return status;
    }
    status = 0;
    for (;;) {
        int sig = pf_term_quit_requested();
        if (sig) { /* as shells expect: 128 + the signal (130 for SIGINT) */
            status = 128 + sig;
            break;
        }
        double now = pf_clock_s();
        live_poll(&l, now);
        live_draw(&l, now);
        int key = live_wait_key(&l);
        if (key == PF_TERM_KEY_NONE)
            continue;
        l.dirty = 1;
        l.quick = 8;
        if (key == PF_TERM_KEY_RESIZE) {
            int w, h;
            pf_term_size(&w, &h);
            if (w > 0 && h > 0)
                pf_cells_resize(&l.buf, w, h);
            l.full = 1;
            continue;
        }
        if (key == PF_TERM_KEY_MOUSE && !(key = live_mouse(&l)))
            continue;
        if (live_command(&l, pf_dash_key(key)))
            break;
    }
    pf_term_close(); /* the terminal first, so q feels instant; then the threads */
    live_close(&l);
    return status;
}

/* ---- the command --------------------------------------------------------------- */

/* The flags taken together: what one mode would silently ignore is
 * refused, naming the flag. Then the simulator's parameters in o->p.
 * PF_CLI_OK, or 2 after one line. */
static int dash_check(const char *prog, dash_opts *o, pf_opt *opts)
{
    if (pf_simflags_check(prog, &o->sf, opts) != PF_CLI_OK)
        return 2;
    /* --mode naive runs naive from the start: a pool that cannot hold one
     * reservation would abort every job and show an idle pool (exit 0), a
     * setting `sim` refuses with the same line */
    if (o->sf.mode == PF_SIM_NAIVE && pf_simflags_check_naive(prog, &o->sf) != PF_CLI_OK)
        return 2;
    static const char *const headless_only[] = {"ticks", "dump-every", "width", "height", "gpu-pass", "format"};
    if (o->headless && pf_cli_find(opts, "loop")->seen)
        return pf_cli_error(prog, "--loop: --headless runs once (it ends with the summary)");
    if (o->headless && o->metrics_port)
        return pf_cli_error(prog, "--metrics-port: the live dashboard serves /metrics, not --headless");
    if (o->headless && o->sf.kv_publish)
        return pf_cli_error(prog, "--kv-events-publish: the live dashboard publishes, not --headless "
                                  "(`pagefault sim --kv-events-publish` publishes a batch run)");
    if (o->metrics_bind && !o->metrics_port)
        return pf_cli_error(prog, "--metrics-bind needs --metrics-port");
    for (size_t i = 0; i < sizeof headless_only / sizeof headless_only[0]; i++)
        if (pf_cli_find(opts, headless_only[i])->seen && !o->headless)
            return pf_cli_error(prog, "--%s needs --headless", headless_only[i]);
    /* Headless steps the deterministic engine on this thread (reproducible
     * dumps); an explicit --engine threaded would be silently ignored, so
     * it is refused instead. */
    if (o->headless && pf_cli_find(opts, "engine")->seen && o->sf.engine == PF_ENGINE_THREADED)
        return pf_cli_error(prog, "--engine threaded: --headless runs the deterministic engine "
                                  "(drop --engine, or --engine deterministic)");
    /* so would a thread count or a step's wall time: headless steps as
     * fast as it can */
    static const char *const live_only[] = {"threads", "tick-us"};
    for (size_t i = 0; o->headless && i < sizeof live_only / sizeof live_only[0]; i++)
        if (pf_cli_find(opts, live_only[i])->seen)
            return pf_cli_error(prog, "--%s: --headless steps the deterministic engine on this "
                                      "thread, as fast as it can", live_only[i]);
    if (o->headless)
        o->sf.engine = PF_ENGINE_DETERMINISTIC; /* reproducible dumps; steps on this thread */
    if (pf_simflags_params(prog, &o->sf, &o->p) != 0)
        return 2;
    return PF_CLI_OK;
}

/* The simulator the run starts from (NULL with *status set when it cannot
 * be made), --record's file opened, and headless, naive's throughput for
 * `vs naive`. */
static pf_sim *dash_prepare(dash_opts *o, pf_jobs *jobs, int *status)
{
    pf_sim *sim = make_sim(o, jobs, status); /* checks every parameter before a terminal opens */
    /* live, the file is opened once the terminal is taken (live_open):
     * "wb" truncates, and a start that fails there left an earlier
     * recording cut to a bare header */
    if (sim && o->record && o->headless) {
        char err[320];
        if (dash_record_open(o, err, sizeof err) != 0) {
            fprintf(stderr, "pagefault: %s\n", err);
            pf_sim_destroy(sim);
            sim = NULL;
            *status = 2;
        }
    }
    if (sim && o->headless && o->p.mode == PF_SIM_PAGED && o->p.naive_throughput <= 0) {
        /* `vs naive` headless, as live (start_phase): naive's throughput on
         * the same jobs from a deterministic naive run (pf_sim_step, unlike
         * pf_sim_run, does not make one), then the paged simulator anew
         * with it. No baseline (a naive run that cannot finish): n/a. */
        double nt = naive_baseline(&o->p, jobs);
        if (nt > 0) {
            char err[256] = "";
            pf_sim_destroy(sim);
            o->p.naive_throughput = nt;
            sim = pf_sim_create(&o->p, jobs, err, sizeof err);
            if (!sim) {
                fprintf(stderr, "pagefault: %s\n", err[0] ? err : "cannot create the simulator");
                *status = 2;
            }
        }
    }
    return sim;
}

int pf_cmd_dash(int argc, char **argv)
{
    const char *prog = "pagefault";
    dash_opts o;
    memset(&o, 0, sizeof o);
    pf_simflags_default(&o.sf, PF_ENGINE_THREADED); /* the live view shows real threads */
    o.width = 120;
    o.height = 40;

    static const char *const formats[] = {"text", "jsonl", NULL};
    pf_look_default(&o.look);
    const pf_opt own[] = {
        {"headless", PF_OPT_FLAG, &o.headless, 0, 0, NULL, NULL,
         "no terminal: print the screen as text, then a summary", 0},
        {"ticks", PF_OPT_INT, &o.ticks, 0, 100000000, NULL, "N",
         "headless: steps to run (0: until every job finishes)", 0},
        {"dump-every", PF_OPT_INT, &o.dump_every, 0, 100000000, NULL, "K",
         "headless: print the screen every K steps (0: only the final one)", 0},
        {"width", PF_OPT_INT, &o.width, PF_DASH_MIN_W, 1000, NULL, "COLS", "headless: screen width", 0},
        {"height", PF_OPT_INT, &o.height, PF_DASH_MIN_H, 1000, NULL, "ROWS", "headless: screen height", 0},
        {"gpu-pass", PF_OPT_FLAG, &o.gpu, 0, 0, NULL, NULL,
         "headless: run the GPU passes on the final layout and show them (as g does)", 0},
        {"record", PF_OPT_STRING, &o.record, 0, 0, NULL, "FILE",
         "write the session (the snapshots shown) to FILE for `pagefault replay FILE`", 0},
        {"loop", PF_OPT_FLAG, &o.loop, 0, 0, NULL, NULL,
         "when the jobs are done, show the figures, then start the next run by itself", 0},
        {"format", PF_OPT_CHOICE, &o.format, 0, 0, formats, "F",
         "headless: text (the screen) or jsonl (one JSON object per dumped frame)", 0},
        {"metrics-port", PF_OPT_INT, &o.metrics_port, 1, 65535, NULL, "P",
         "serve the live figures at http://ADDR:P/metrics under vLLM's metric names", 0},
        {"metrics-bind", PF_OPT_STRING, &o.metrics_bind, 0, 0, NULL, "ADDR",
         "address --metrics-port listens on (default 127.0.0.1, this machine only)", 0},
        {0},
    };
    /* the simulator's rows, ours, the look's, then own's {0} to end the
     * table: sized from all three */
    const size_t nown = sizeof own / sizeof own[0] - 1;
    pf_opt opts[PF_SIMFLAGS_NOPTS + sizeof own / sizeof own[0] + PF_LOOK_NOPTS];
    int nsim = pf_simflags_opts(&o.sf, opts, 1);
    memcpy(opts + nsim, own, nown * sizeof own[0]);
    pf_look_opts(&o.look, opts + nsim + nown);
    opts[nsim + nown + PF_LOOK_NOPTS] = own[nown];
    int rc = pf_cli_start(prog, dash_summary, opts, argc, argv);
    if (rc != PF_CLI_GO)
        return rc;
    if (dash_check(prog, &o, opts) != PF_CLI_OK)
        return 2;
    pf_look_settle(&o.look);

    pf_jobs jobs;
    memset(&jobs, 0, sizeof jobs);
    int status = 0;
    pf_sim *sim = dash_prepare(&o, &jobs, &status);
    if (sim && o.headless) {
        status = run_headless(&o, sim);
        pf_sim_destroy(sim);
    } else if (sim) {
        pf_sim_destroy(sim); /* the live one is made after the baseline, see run_live */
        status = run_live(&o, &jobs);
    }
    if (o.rec && (fclose(o.rec) != 0 || o.rec_failed)) {
        fprintf(stderr, "pagefault: --record: writing '%s' failed; the recording is incomplete\n", o.record);
        if (status == 0)
            status = 1;
    }
    pf_jobs_free(&jobs);
    return status;
}
