/* tui/cmd_sim.c - `pagefault sim`: the serving simulator, headless.
 *
 * Runs naive and paged on the same jobs (the seed's mix, or --trace FILE)
 * under vLLM's scheduler rules (or the seed's) and prints three tables:
 * the seed's Stage 4 figures (preemptions, decoding mean, queue time,
 * throughput vs naive) with goodput, recomputed tokens, swapped pages,
 * ping-pongs, KV usage and stalls; latency with vLLM's metric names in
 * seconds (TTFT, inter-token latency, e2e, request throughput, SLO
 * attainment and slo_goodput); and KV memory as the PagedAttention paper's
 * Figure 2 splits it, with the prefix cache's hit rate.
 * --sweep NAME=v1,v2,... re-runs for each value of any numeric flag, set
 * through the same flag table (pf_cli_set), so a swept value is checked
 * exactly like a typed one; progress goes to stderr. A naive row is printed
 * only when the swept value changes naive's result (e.g. not for
 * --watermark, which naive ignores). Metric keys in CSV/JSON follow vLLM's
 * names where one exists (num_preemptions, kv_cache_usage, ...); times are
 * simulated seconds from the cost model (sim/cost.h). In CSV the configuration
 * becomes "config.KEY" columns repeated on every row (tui/report.h), and a
 * swept flag's base value is left out of it: its column holds the value
 * each row ran with. A trace is read once (a pipe works) and parsed again
 * for each point of a sweep.
 *
 * Runs go in parallel on --jobs-parallel threads (default: the machine's
 * cores; 1 under the threaded engine, which has threads of its own): one
 * naive run per distinct baseline (points that differ only in what naive
 * ignores, such as the watermark or the victim policy, share one) and every
 * point's paged run, all at once (a single point's naive and paged runs
 * too). Each run is a deterministic simulator of its own, so the rows,
 * printed in order once all are done, are the bytes a serial run prints.
 *
 * A run still going 5 s in gets a line on stderr every 10 s (requests
 * finished, step), where stderr is a terminal (tui/progress.h).
 *
 * Exit status: 0 done; 2 usage error or unreadable/malformed trace (one
 * line on stderr, nothing on stdout); 1 a run stopped in a livelock
 * (sequences kept preempting one another and none produced a token). A
 * request that can never be admitted under the parameters is aborted alone
 * (as vLLM does) and the run goes on: one line on stderr says how many.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/err.h"
#include "core/pool.h"
#include "sim/sim.h"
#include "tui/cli.h"
#include "tui/commands.h"
#include "tui/progress.h"
#include "tui/report.h"
#include "tui/simflags.h"
#include "tui/simpub.h"

#define PROG "pagefault sim"
#define SIM_MAX_SWEEP 64

typedef struct {
    pf_simflags f; /* the simulator's flags, shared with the dashboard */
    int format;
    const char *sweep;
    int jobs_parallel; /* 0: the machine's cores */
    int metrics_port;  /* --metrics-port P: /metrics while the paged run runs */
    const char *metrics_bind;
    double linger;     /* --linger S: keep publishing S seconds after the run */
    pf_simpub *pub;    /* open when publishing (events or /metrics)      */
} sim_args;

static void args_default(sim_args *a)
{
    memset(a, 0, sizeof *a);
    pf_simflags_default(&a->f, PF_ENGINE_DETERMINISTIC);
    a->f.p.tick_us = 0; /* threaded runs go as fast as they can */
    a->format = PF_FMT_TABLE;
}

/* The flag table points into *a; built per call so sweeps can re-point. */
#define SIM_NOPTS (PF_SIMFLAGS_NOPTS + 6)
#define SIM_MAX_PARALLEL 256
/* Returns how many rows are the simulator's (pf_simflags_opts): the ones
 * after them are this command's own, which --sweep cannot vary. */
static int make_opts(pf_opt *o, sim_args *a)
{
    int n = pf_simflags_opts(&a->f, o, 0);
    const int nsim = n;
    o[n++] = (pf_opt){"format", PF_OPT_CHOICE, &a->format, 0, 0, pf_fmt_names, NULL, "output format", 0};
    o[n++] = (pf_opt){"sweep", PF_OPT_STRING, &a->sweep, 0, 0, NULL, "NAME=V1,V2,...",
                      "re-run for each value of a numeric flag, e.g. watermark=0,0.02,0.3", 0};
    /* 0 = one thread per core: sweep points are independent runs */
    o[n++] = (pf_opt){"jobs-parallel", PF_OPT_INT, &a->jobs_parallel, 0, SIM_MAX_PARALLEL, NULL, "N",
                      "sweep points run at once (0: one per core; 1 under --engine threaded)", 0};
    o[n++] = (pf_opt){"metrics-port", PF_OPT_INT, &a->metrics_port, 0, 65535, NULL, "P",
                      "serve the paged run's figures at /metrics with vLLM's names (0: off)", 0};
    o[n++] = (pf_opt){"metrics-bind", PF_OPT_STRING, &a->metrics_bind, 0, 0, NULL, "ADDR",
                      "address for --metrics-port (default 127.0.0.1)", 0};
    /* an hour: far past any scrape interval or replay a subscriber needs */
    o[n++] = (pf_opt){"linger", PF_OPT_DOUBLE, &a->linger, 0, 3600, NULL, "S",
                      "publishing: keep answering replays and /metrics S seconds after the run", 0};
    o[n] = (pf_opt){0};
    return nsim;
}

/* The load controller's decisions of one run (--watermark auto). */
typedef struct {
    pf_event *ev;
    int n, cap, lost;
    double start; /* the watermark the controller started from */
} decisions;

static void keep_decision(void *ctx, const pf_event *e)
{
    decisions *d = ctx;
    if (e->kind != PF_EV_WATERMARK)
        return;
    if (d->n == d->cap) {
        int c = d->cap ? d->cap * 2 : 64;
        pf_event *v = c <= 1 << 20 ? realloc(d->ev, (size_t)c * sizeof *v) : NULL;
        if (!v) {
            d->lost++;
            return;
        }
        d->ev = v;
        d->cap = c;
    }
    d->ev[d->n++] = *e;
}

/* The paged run when publishing: stepped here, one step per --tick-us of
 * wall time (0: as fast as it goes), the block events flushed by the
 * engine at every step's end, /metrics refreshed every 50 ms of wall time
 * and at the end; then --linger. Returns what pf_sim_run would. */
static int run_published(const sim_args *a, pf_sim *s, pf_sim_stats *st)
{
    pf_simpub_attach(a->pub, s);
    int rc;
    double last = 0.0;
    for (;;) {
        rc = pf_sim_step(s);
        double now = pf_clock_s();
        if (rc != 0 || now - last >= 0.05) {
            if (pf_simpub_update(a->pub, s) != PF_OK)
                fprintf(stderr, "%s: /metrics not updated: out of memory\n", PROG);
            last = now;
        }
        if (rc != 0)
            break;
        if (a->f.p.tick_us > 0) {
            struct timespec ts = {a->f.p.tick_us / 1000000, (long)(a->f.p.tick_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    int perr = pf_simpub_error(a->pub);
    if (perr)
        fprintf(stderr, "%s: --kv-events-publish: %s (events may be missing)\n", PROG,
                pf_strerror(perr));
    pf_simpub_linger(a->pub, a->linger);
    pf_sim_get_stats(s, st);
    return rc == 1 ? PF_OK : rc;
}

/* One run, shown by `prog` (may be NULL) as `label`, in place `order` of
 * its line, while it goes. */
static int run_one(const sim_args *a, const pf_jobs *jobs, pf_sim_mode mode, double naive_tput,
                   pf_sim_stats *st, decisions *dec, pf_progress *prog, int order, const char *label)
{
    pf_sim_params p;
    if (pf_simflags_params(PROG, &a->f, &p) != 0)
        return 2;
    p.mode = mode;
    p.naive_throughput = naive_tput; /* known: no second naive run inside */
    char err[256];
    pf_sim *s = pf_sim_create(&p, jobs, err, sizeof err);
    if (!s) {
        fprintf(stderr, "%s: %s\n", PROG, err);
        return 2;
    }
    if (dec && p.watermark_auto) {
        dec->start = p.watermark;
        pf_sim_on_event(s, keep_decision, dec);
    }
    int slot = pf_progress_add(prog, s, order, label);
    int rc;
    if (mode == PF_SIM_PAGED && a->pub)
        rc = run_published(a, s, st);
    else
        rc = pf_sim_run(s, st);
    pf_progress_remove(prog, slot);
    pf_sim_destroy(s);
    if (rc == PF_ERR_RANGE) {
        fprintf(stderr,
                "%s: %s run stopped at step %lld: livelock (sequences kept preempting one another and none "
                "produced a token; %lld of %lld requests finished)\n",
                PROG, pf_sim_mode_name(mode), (long long)st->step, (long long)st->finished,
                (long long)jobs->njobs);
        return 1;
    }
    if (rc != PF_OK) {
        fprintf(stderr, "%s: %s run failed: %s\n", PROG, pf_sim_mode_name(mode), pf_strerror(rc));
        return 1;
    }
    if (st->aborted > 0)
        fprintf(stderr,
                "%s: %s run: %lld of %d requests aborted: they can never be admitted (a prompt larger than "
                "the pool less the watermark's reserve of %d blocks, or a request larger than the pool)\n",
                PROG, pf_sim_mode_name(mode), (long long)st->aborted, jobs->njobs,
                pf_pool_reserve_for(a->f.p.cfg.pool_blocks, mode == PF_SIM_PAGED ? a->f.p.watermark : 0.0));
    return 0;
}

/* Three tables, one row per run in each. */
enum { T_SERVE, T_LAT, T_KV, NTABLES };
static const char *const table_names[NTABLES] = {"results", "latency", "kv_memory"};
static const char *const table_titles[NTABLES] = {
    "Naive vs paged", "Latency (seconds; vLLM's metric names)",
    "KV memory (the PagedAttention paper's Figure 2, time average)"};
static const char *const serve_keys[] = {
    "mode", "num_preemptions", "decoding_mean", "request_queue_time_mean",
    "output_throughput", "throughput_vs_naive", "goodput", "num_recomputed_tokens",
    "num_swapped_pages", "num_pingpongs", "kv_cache_usage_mean", "stalled_mean", "num_steps",
    "duration", "generation_tokens", "num_requests_running_mean", "num_requests_waiting_mean"};
static const char *const serve_labels[] = {
    "mode", "preemptions", "decoding (mean)", "queue time (mean, s)", "tokens/s",
    "throughput vs naive", "goodput", "recomputed tokens", "swapped pages", "ping-pongs",
    "KV usage (mean)", "stalled (mean)", "steps", "time (s)", "tokens", "running (mean)",
    "waiting (mean)"};
/* vLLM's four request latencies, each as mean, p50, p90 and p99 (the
 * queue time's mean is in the results table), then the request rate and
 * the SLO figures */
static const pf_metric lat_metrics[4] = {PF_MET_TTFT, PF_MET_ITL, PF_MET_E2E, PF_MET_QUEUE};
static const char *const lat_keys[] = {
    "mode",
    "time_to_first_token_mean", "time_to_first_token_p50", "time_to_first_token_p90",
    "time_to_first_token_p99",
    "inter_token_latency_mean", "inter_token_latency_p50", "inter_token_latency_p90",
    "inter_token_latency_p99",
    "e2e_request_latency_mean", "e2e_request_latency_p50", "e2e_request_latency_p90",
    "e2e_request_latency_p99",
    "request_queue_time_mean", "request_queue_time_p50", "request_queue_time_p90",
    "request_queue_time_p99",
    "request_throughput", "slo_attainment", "slo_goodput"};
static const char *const lat_labels[] = {
    "mode", "TTFT mean", "TTFT p50", "TTFT p90", "TTFT p99", "ITL mean", "ITL p50", "ITL p90",
    "ITL p99", "e2e mean", "e2e p50", "e2e p90", "e2e p99", "queue mean", "queue p50", "queue p90",
    "queue p99", "requests/s", "SLO met", "slo_goodput (req/s)"};
static const char *const kv_keys[] = {
    "mode", "token_states", "reserved", "internal_fragmentation", "external_fragmentation",
    "prefix_cache_hit_rate", "prefix_cache_hits", "frames_saved"};
static const char *const kv_labels[] = {
    "mode", "token states", "reserved", "internal frag.", "external frag.",
    "prefix hit rate", "hit tokens", "frames saved"};
#define NSERVE (int)(sizeof serve_keys / sizeof serve_keys[0])
#define NLAT (int)(sizeof lat_keys / sizeof lat_keys[0])
#define NKV (int)(sizeof kv_keys / sizeof kv_keys[0])

/* The swept value as typed. A keyword (watermark=auto) is no number: NaN
 * (JSON null), not the 0 strtod gives, which read as a swept watermark
 * of 0 beside the real one. */
static void sweep_cell(pf_report *r, const char *sweep_val)
{
    char *end;
    double v = strtod(sweep_val, &end);
    pf_report_cell_num_text(r, end != sweep_val && !*end ? v : NAN, sweep_val);
}

static void cell_lead(pf_report *r, const char *sweep_val, const char *mode)
{
    if (sweep_val)
        sweep_cell(r, sweep_val);
    pf_report_cell_str(r, mode);
}

/* Table t's row. sweep_val: the swept flag's value as typed (NULL without
 * a sweep); a number in CSV and JSON, the typed text in the table. */
static void row(pf_report *r, int t, const char *sweep_val, const char *mode,
                const pf_sim_stats *st)
{
    cell_lead(r, sweep_val, mode);
    if (t == T_LAT) {
        for (int m = 0; m < 4; m++) {
            const pf_sim_latency *l = &st->lat[lat_metrics[m]];
            /* inter-token gaps are milliseconds: one more digit */
            const char *f = lat_metrics[m] == PF_MET_ITL ? "%.4f" : "%.3f";
            pf_report_cell_num(r, l->mean, f);
            pf_report_cell_num(r, l->p50, f);
            pf_report_cell_num(r, l->p90, f);
            pf_report_cell_num(r, l->p99, f);
        }
        pf_report_cell_num(r, st->request_throughput, "%.2f");
        pf_report_cell_num(r, st->slo_attainment, "%.3f");
        pf_report_cell_num(r, st->slo_goodput, "%.2f");
        return;
    }
    if (t == T_KV) {
        pf_report_cell_num(r, st->split.token_share, "%.3f");
        pf_report_cell_num(r, st->split.reserved_share, "%.3f");
        pf_report_cell_num(r, st->split.internal_share, "%.3f");
        pf_report_cell_num(r, st->split.external_share, "%.3f");
        pf_report_cell_num(r, st->prefix_hit_rate, "%.3f");
        pf_report_cell_num(r, (double)st->prefix_hits, "%.0f");
        pf_report_cell_num(r, (double)st->frames_saved, "%.0f");
        return;
    }
    pf_report_cell_num(r, (double)st->preemptions, "%.0f");
    pf_report_cell_num(r, st->decoding_mean, "%.1f");
    pf_report_cell_num(r, st->wait_mean, "%.3f");
    pf_report_cell_num(r, st->throughput, "%.0f");
    pf_report_cell_num(r, st->throughput_vs_naive, "%.2f");
    pf_report_cell_num(r, st->goodput, "%.3f");
    pf_report_cell_num(r, (double)st->recomputed_tokens, "%.0f");
    pf_report_cell_num(r, (double)st->swapped_pages, "%.0f");
    pf_report_cell_num(r, (double)st->pingpongs, "%.0f");
    pf_report_cell_num(r, st->kv_usage_mean, "%.3f");
    pf_report_cell_num(r, st->stalled_mean, "%.1f");
    pf_report_cell_num(r, (double)st->step, "%.0f");
    pf_report_cell_num(r, st->time_s, "%.2f");
    pf_report_cell_num(r, (double)st->tokens_generated, "%.0f");
    pf_report_cell_num(r, st->running_mean, "%.1f");
    pf_report_cell_num(r, st->waiting_mean, "%.1f");
}

static int same_stats(const pf_sim_stats *a, const pf_sim_stats *b)
{
    return a->step == b->step && a->tokens_generated == b->tokens_generated &&
           a->preemptions == b->preemptions && a->wait_mean == b->wait_mean &&
           a->decoding_mean == b->decoding_mean;
}

/* A configuration entry for flag `flag`, left out when that flag is swept
 * (the sweep column says what each row ran with). */
static void cfg_num(pf_report *r, const char *sweep_name, const char *flag, const char *key,
                    const char *label, double v, const char *fmt, const char *unit)
{
    if (!flag || strcmp(flag, sweep_name) != 0)
        pf_report_num(r, key, label, v, fmt, unit);
}

/* ---- a sweep's points, run in parallel ----------------------------------- */

typedef struct {
    sim_args cur;        /* the point's flags                                */
    const char *val;     /* swept value as typed, NULL without a sweep       */
    int naive_of;        /* the point whose naive run is this one's baseline */
    pf_sim_stats naive, paged;
    decisions dec;       /* the paged run's load-controller decisions       */
    int status, status_naive; /* 0, or run_one's / pf_simflags_jobs' status  */
} sweep_point;

/* Do two points have the same naive baseline? A naive reservation never
 * faults, so naive ignores the watermark, the victim and preemption
 * choices, the stall limit, the swap space and prefix caching (which the
 * baseline runs without); everything that shapes the jobs, the pool, the
 * caps, the rules or the clock counts. */
static int same_baseline(const pf_simflags *x, const pf_simflags *y)
{
    return memcmp(&x->p.cfg, &y->p.cfg, sizeof x->p.cfg) == 0 && x->p.workers == y->p.workers &&
           x->p.max_num_batched_tokens == y->p.max_num_batched_tokens &&
           x->p.slo_ttft_s == y->p.slo_ttft_s && x->p.slo_tpot_s == y->p.slo_tpot_s &&
           x->scheduler == y->scheduler && x->reserve == y->reserve && x->model == y->model &&
           x->gpu == y->gpu && x->gpu_profile == y->gpu_profile &&
           x->p.engine == y->p.engine && x->engine == y->engine &&
           x->p.pingpong_window == y->p.pingpong_window && x->jobs == y->jobs &&
           x->trace == y->trace && x->arrival_rate == y->arrival_rate && x->seed == y->seed &&
           x->shared_prefix == y->shared_prefix && x->prefix_groups == y->prefix_groups &&
           x->n == y->n;
}

typedef struct {
    sweep_point *pt;
    int n;
    _Atomic int next;
    const char *sweep_name;
    pf_progress *prog; /* NULL: no progress lines */
} sweep_work;

/* Task 2k runs point k's naive baseline (if it is its own), task 2k + 1
 * its paged run. The paged run does not wait for the baseline: the ratio
 * between them is taken when the rows are printed. */
static void task_run(sweep_work *w, int task)
{
    int k = task / 2;
    sweep_point *p = &w->pt[k];
    int naive = task % 2 == 0;
    if (naive && p->naive_of != k)
        return;
    if (!naive && w->sweep_name)
        fprintf(stderr, "%s: %s=%s (%d/%d)\n", PROG, w->sweep_name, p->val, k + 1, w->n);
    pf_jobs jobs = {0};
    int st = pf_simflags_jobs(PROG, &p->cur.f, &jobs, 0);
    char label[96]; /* the run in a progress line: "paged", "paged watermark=0.05" */
    const char *mode = naive ? "naive" : "paged";
    if (w->sweep_name)
        snprintf(label, sizeof label, "%s %s=%s", mode, w->sweep_name, p->val);
    else
        snprintf(label, sizeof label, "%s", mode);
    /* the baseline passed in only stops pf_sim_run from running its own */
    if (!st)
        st = run_one(&p->cur, &jobs, naive ? PF_SIM_NAIVE : PF_SIM_PAGED, 1.0,
                     naive ? &p->naive : &p->paged, naive ? NULL : &p->dec, w->prog, task, label);
    pf_jobs_free(&jobs);
    if (naive)
        p->status_naive = st;
    else
        p->status = st;
}

static void *sweep_worker(void *arg)
{
    sweep_work *w = arg;
    int t;
    while ((t = atomic_fetch_add(&w->next, 1)) < 2 * w->n)
        task_run(w, t);
    return NULL;
}

/* Every run on `threads` threads (the caller is one of them). Returns the
 * status of the first failing point in point order, else 0. */
static int run_sweep(sweep_point *pt, int n, int threads, const char *sweep_name)
{
    if (threads < 1)
        threads = 1;
    if (threads > 2 * n)
        threads = 2 * n;
    int runs = 0;
    for (int k = 0; k < n; k++)
        runs += 1 + (pt[k].naive_of == k);
    pf_progress *prog = isatty(STDERR_FILENO) ? pf_progress_start(stderr, PROG, runs, PF_PROGRESS_FIRST_S,
                                                                   PF_PROGRESS_EVERY_S)
                                              : NULL;
    sweep_work w = {pt, n, 0, sweep_name, prog};
    pthread_t th[SIM_MAX_PARALLEL];
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&th[t], NULL, sweep_worker, &w) != 0)
            break; /* fewer threads: the rest runs here */
        started++;
    }
    sweep_worker(&w);
    for (int t = 1; t <= started; t++)
        pthread_join(th[t], NULL);
    pf_progress_stop(w.prog);
    for (int k = 0; k < n; k++) {
        if (pt[k].status_naive)
            return pt[k].status_naive;
        if (pt[k].status)
            return pt[k].status;
    }
    return 0;
}

/* ---- the command ----------------------------------------------------------- */

/* --sweep NAME=V1,V2,...: the flag and its values. */
typedef struct {
    char name[64];             /* "" without a sweep                 */
    char *buf;                 /* the values' text, split in place   */
    char *vals[SIM_MAX_SWEEP]; /* into buf                            */
    int n;
} sweep_spec;

/* Parse --sweep. Every value is set through the flag table and checked as a
 * typed value is (its range, the combinations, a naive reservation), so a
 * bad one is refused before anything runs and prints nothing on stdout.
 * Only the simulator's flags sweep: sim's own (the first nsim_opts rows of
 * opts are the simulator's) shape how sim runs, not the simulation.
 * Returns 0, or 2 after one line; sp->buf is the caller's to free either way. */
static int parse_sweep(sim_args *a, pf_opt *opts, int nsim_opts, sweep_spec *sp)
{
    memset(sp, 0, sizeof *sp);
    if (!a->sweep)
        return 0;
    const char *eq = strchr(a->sweep, '=');
    size_t nl = eq ? (size_t)(eq - a->sweep) : 0;
    if (!eq || nl == 0 || nl >= sizeof sp->name || !eq[1])
        return pf_cli_error(PROG, "--sweep: expected NAME=V1,V2,... (e.g. watermark=0,0.02,0.3), got '%s'",
                            a->sweep);
    memcpy(sp->name, a->sweep, nl);
    sp->name[nl] = '\0';
    pf_opt *o = pf_cli_find(opts, sp->name);
    if (!o || (o->kind != PF_OPT_INT && o->kind != PF_OPT_I64 && o->kind != PF_OPT_DOUBLE))
        return pf_cli_error(PROG, "--sweep: '%s' is not a numeric flag of sim (see --help)", sp->name);
    /* --jobs-parallel, --metrics-port and --linger: swept, they printed
     * identical rows (and a swept --metrics-port published nothing, where
     * the typed flag is refused beside --sweep) */
    if (o - opts >= nsim_opts)
        return pf_cli_error(PROG, "--sweep: '%s' is not a simulator flag (a sweep varies the "
                                  "simulation; see --help)", sp->name);
    sp->buf = strdup(eq + 1);
    if (!sp->buf)
        return pf_cli_error(PROG, "out of memory");
    const sim_args saved = *a;
    int rc = 0;
    /* Split by hand, not with strtok: strtok would skip an empty value
     * ("0,,1") that --lengths and --sweep-sizes reject. */
    for (char *tok = sp->buf, *next; tok && rc == 0; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!tok[0])
            rc = pf_cli_error(PROG, "--sweep: empty value in '%s' (expected NAME=V1,V2,...)", a->sweep);
        else if (sp->n == SIM_MAX_SWEEP)
            rc = pf_cli_error(PROG, "--sweep: at most %d values", SIM_MAX_SWEEP);
        /* the checks a typed value passes (say --shared-prefix-tokens
         * against --max-len, which the jobs would otherwise drop silently),
         * and a naive reservation that fits */
        else if (pf_cli_set(PROG, opts, sp->name, tok) != PF_CLI_OK ||
                 pf_simflags_check(PROG, &a->f, opts) != PF_CLI_OK ||
                 pf_simflags_check_naive(PROG, &a->f) != PF_CLI_OK)
            rc = 2;
        else
            sp->vals[sp->n++] = tok;
    }
    *a = saved; /* opts point into a: restoring the struct restores the flag */
    if (rc)
        return rc;
    if (sp->n == 0)
        return pf_cli_error(PROG, "--sweep: no values given");
    /* The swept flag now counts as given: a sweep of a flag the other flags
     * make meaningless (jobs with --trace, step-ms without it) is refused
     * like the typed flag, not run as identical rows. */
    return pf_simflags_check(PROG, &a->f, opts) != PF_CLI_OK ? 2 : 0;
}

/* The flags that shape how sim runs rather than the simulation, against
 * the rest: publishing is one run (no sweep); --linger and --metrics-bind
 * need something published; a step's wall time paces the threaded
 * engine's crew or a published run, which a batch run of the deterministic
 * engine would ignore. Returns 0, or 2 after one line. */
static int check_how_it_runs(const sim_args *a, pf_opt *opts, const sweep_spec *sp)
{
    const int publishing = a->f.kv_publish || a->metrics_port;
    if (publishing && sp->n)
        return pf_cli_error(PROG, "--sweep runs many simulations at once: it cannot be combined with "
                                  "--kv-events-publish or --metrics-port");
    if (!publishing && (a->linger > 0 || a->metrics_bind))
        return pf_cli_error(PROG, "--linger and --metrics-bind need --kv-events-publish or --metrics-port");
    if (pf_cli_find(opts, "tick-us")->seen && !publishing && a->f.engine != PF_ENGINE_THREADED)
        return pf_cli_error(PROG, "--tick-us paces the threaded engine or a publishing run; the "
                                  "deterministic engine runs as fast as it can");
    return 0;
}

/* The configuration section: the base flags, the swept one left to its
 * column (cfg_num). Returns 0, or 2 when the flags make no parameters. */
static int report_config(pf_report *r, const sim_args *a, const sweep_spec *sp, const pf_jobs *jobs)
{
    const char *sw = sp->name;
    pf_report_section(r, "config", "Configuration");
    pf_report_str(r, "jobs_source", "workload", a->f.trace ? a->f.trace : "seed mix");
    if (!sp->n || (strcmp(sw, "jobs") && strcmp(sw, "max-len")))
        pf_report_num(r, "num_jobs", "jobs", jobs->njobs, "%.0f", NULL);
    if (a->f.trace) {
        cfg_num(r, sw, "max-len", "num_rejected", "rejected (longer than max-len)", jobs->rejected,
                "%.0f", NULL);
    } else {
        cfg_num(r, sw, "arrival-rate", "arrival_rate", "arrival rate", a->f.arrival_rate, "%g",
                "requests/s (0: all at time 0)");
        cfg_num(r, sw, "shared-prefix-tokens", "shared_prefix_tokens", "shared prefix",
                a->f.shared_prefix, "%.0f", "tokens");
        if (a->f.shared_prefix)
            cfg_num(r, sw, "prefix-groups", "prefix_groups", "prefix groups", a->f.prefix_groups,
                    "%.0f", NULL);
    }
    cfg_num(r, sw, "n", "n", "samples per request", a->f.n, "%.0f", NULL);
    pf_report_str(r, "scheduler", "scheduler", pf_sched_rules_names[a->f.scheduler]);
    cfg_num(r, sw, "max-num-seqs", "max_num_seqs", "max sequences", a->f.p.workers, "%.0f", NULL);
    cfg_num(r, sw, "max-num-batched-tokens", "max_num_batched_tokens", "token budget",
            a->f.p.max_num_batched_tokens, "%.0f", a->f.scheduler == PF_SCHED_VLLM ? "tokens/step"
                                                                                  : "(seed rules: none)");
    cfg_num(r, sw, "pool-blocks", "num_gpu_blocks", "pool blocks", a->f.p.cfg.pool_blocks, "%.0f", NULL);
    cfg_num(r, sw, "block-size", "block_size", "block size", a->f.p.cfg.block_size, "%.0f", "tokens");
    cfg_num(r, sw, "max-len", "max_model_len", "max sequence length", a->f.p.cfg.max_seq_len, "%.0f",
            "tokens");
    pf_report_str(r, "naive_reserve", "naive reservation", pf_naive_reserve_names[a->f.reserve]);
    pf_report_str(r, "enable_prefix_caching", "prefix caching", a->f.p.prefix_caching ? "on" : "off");
    pf_report_str(r, "preemption_victim", "victim policy", pf_victim_names[a->f.policy]);
    pf_report_str(r, "preemption_mode", "preemption", pf_preempt_names[a->f.preempt]);
    pf_report_str(r, "engine", "engine", pf_engine_names[a->f.engine]);
    cfg_num(r, sw, "seed", "seed", "seed", (double)a->f.seed, "%.0f", NULL);
    cfg_num(r, sw, "stall-limit", "stall_limit", "stall limit", a->f.p.stall_limit, "%.0f", "steps");
    cfg_num(r, sw, "swap-blocks", "swap_space_blocks", "host swap", a->f.p.swap_host_blocks, "%.0f",
            "blocks");
    pf_sim_params p;
    if (pf_simflags_params(PROG, &a->f, &p) != 0)
        return 2;
    /* a number either way (a CSV column keeps one type): auto gives its
     * start; admission_control says which */
    if (p.watermark_auto)
        pf_report_num(r, "watermark", "watermark", p.watermark, "%.3g", "(start)");
    else
        cfg_num(r, sw, "watermark", "watermark", "watermark", p.watermark, "%.3g", NULL);
    pf_report_str(r, "admission_control", "admission control",
                  p.watermark_auto ? "load controller (--watermark auto)" : "fixed watermark");
    pf_report_str(r, "model", "model", p.cost.model.name);
    pf_report_str(r, "gpu", "GPU", p.cost.profiled && p.cost.profile_device[0]
                                       ? p.cost.profile_device
                                       : p.cost.gpu.long_name);
    if (a->f.gpu_profile)
        pf_report_str(r, "gpu_profile", "GPU profile", a->f.gpu_profile);
    if (a->f.p.slo_ttft_s > 0)
        cfg_num(r, sw, "slo-ttft", "slo_ttft", "SLO TTFT", a->f.p.slo_ttft_s, "%g", "s");
    if (a->f.p.slo_tpot_s > 0)
        cfg_num(r, sw, "slo-tpot", "slo_tpot", "SLO TPOT", a->f.p.slo_tpot_s, "%g", "s");
    return 0;
}

/* The sweep's points: each the base flags with its value set, and the
 * first earlier point with the same naive baseline, which runs it for
 * both. Returns 0 or 2. */
static int make_points(sweep_point *pts, int npoints, const sim_args *a, const sweep_spec *sp)
{
    for (int k = 0; k < npoints; k++) {
        pts[k].cur = *a;
        pts[k].val = sp->n ? sp->vals[k] : NULL;
        if (sp->n) {
            pf_opt copts[SIM_NOPTS + 1];
            make_opts(copts, &pts[k].cur);
            if (pf_cli_set(PROG, copts, sp->name, sp->vals[k]) != PF_CLI_OK)
                return 2;
        }
        pts[k].naive_of = k;
        for (int i = 0; i < k; i++)
            if (same_baseline(&pts[i].cur.f, &pts[k].cur.f)) {
                pts[k].naive_of = i;
                break;
            }
    }
    return 0;
}

/* A table's columns: the swept flag's first (with a sweep), then n of
 * its own. Returns how many. */
static int table_columns(const sweep_spec *sp, const char *const *k, const char *const *l, int n,
                         const char **keys, const char **labels)
{
    int nc = 0;
    if (sp->n) {
        keys[nc] = sp->name;
        labels[nc] = sp->name;
        nc++;
    }
    for (int i = 0; i < n; i++, nc++) {
        keys[nc] = k[i];
        labels[nc] = l[i];
    }
    return nc;
}

/* The results, latency and KV tables: naive and paged rows a point (a
 * naive row only where it differs from the one before), a column for the
 * swept value first. */
static void report_tables(pf_report *r, const sweep_point *pts, int npoints, const sweep_spec *sp)
{
    static const char *const *const tkeys[NTABLES] = {serve_keys, lat_keys, kv_keys};
    static const char *const *const tlabels[NTABLES] = {serve_labels, lat_labels, kv_labels};
    static const int tcols[NTABLES] = {NSERVE, NLAT, NKV};
    for (int t = 0; t < NTABLES; t++) {
        const char *keys[32], *labels[32];
        int nc = table_columns(sp, tkeys[t], tlabels[t], tcols[t], keys, labels);
        pf_report_table(r, table_names[t], table_titles[t], nc, keys, labels);
        pf_sim_stats last_naive = {0};
        int have_naive = 0;
        for (int k = 0; k < npoints; k++) {
            pf_sim_stats naive = pts[pts[k].naive_of].naive, paged = pts[k].paged;
            /* Same engine on both sides: the ratio of their own throughputs. */
            naive.throughput_vs_naive = 1.0;
            paged.throughput_vs_naive =
                naive.throughput > 0 ? paged.throughput / naive.throughput : 0.0;
            if (!have_naive || !same_stats(&naive, &last_naive))
                row(r, t, pts[k].val, "naive", &naive);
            last_naive = naive;
            have_naive = 1;
            row(r, t, pts[k].val, "paged", &paged);
        }
        if (t == T_SERVE)
            pf_report_note(r, "decoding = sequences that produced a token in a step; goodput = "
                              "generated / (generated + recomputed) tokens");
        if (t == T_KV)
            pf_report_note(r, "shares of the frames running sequences hold; external "
                              "fragmentation is 0 in a pool of equal frames");
    }
}

/* --watermark auto: what the controller did, decision by decision. */
static void report_decisions(pf_report *r, const sweep_point *pts, int npoints, const sweep_spec *sp)
{
    static const char *const dk[] = {"time", "watermark", "waste", "decision"};
    static const char *const dl[] = {"time (s)", "watermark", "waste (window)", "decision"};
    const char *keys[8], *labels[8];
    int nc = table_columns(sp, dk, dl, 4, keys, labels);
    pf_report_table(r, "load_controller", "Load controller (--watermark auto), paged run", nc, keys,
                    labels);
    for (int k = 0; k < npoints; k++) {
        double w = pts[k].dec.start;
        for (int i = 0; i < pts[k].dec.n; i++) {
            const pf_event *e = &pts[k].dec.ev[i];
            double nw = e->frames / 1000.0;
            if (sp->n)
                sweep_cell(r, pts[k].val);
            pf_report_cell_num(r, e->time, "%.2f");
            pf_report_cell_num(r, nw, "%.3f");
            pf_report_cell_num(r, e->seq / 1000.0, "%.3f");
            pf_report_cell_str(r, nw > w ? "raise" : "lower");
            w = nw;
        }
        pf_report_note(r, "%s%s%s%d decisions: %lld raises, %lld lowers; final watermark %.3f%s",
                       sp->n ? sp->name : "", sp->n ? "=" : "", sp->n ? pts[k].val : "",
                       pts[k].dec.n, (long long)pts[k].paged.loadctl_raises,
                       (long long)pts[k].paged.loadctl_lowers, pts[k].paged.watermark,
                       pts[k].dec.lost ? " (some decisions not kept: out of memory)" : "");
    }
    pf_report_note(r, "every 0.5 s of simulated time: raise when more than 5%% of the computed "
                      "tokens were recomputes, lower by 0.005 below 1%% while requests wait "
                      "(sim/loadctl.c)");
}

int pf_cmd_sim(int argc, char **argv)
{
    sim_args a;
    args_default(&a);
    pf_opt opts[SIM_NOPTS + 1];
    const int nsim_opts = make_opts(opts, &a);
    int rc = pf_cli_start(PROG,
                          "Serving simulation: naive (a reservation per sequence) vs paged (demand paging\n"
                          "with an admission watermark, preemption by recompute or swap) on the same jobs,\n"
                          "under vLLM's scheduler rules by default. Times are simulated seconds from a\n"
                          "roofline of the model and the GPU (--model, --gpu, --gpu-profile).",
                          opts, argc, argv);
    if (rc != PF_CLI_GO)
        return rc;
    if (pf_simflags_check(PROG, &a.f, opts) != PF_CLI_OK ||
        (!a.sweep && pf_simflags_check_naive(PROG, &a.f) != PF_CLI_OK))
        return 2;
    sweep_spec sp;
    int status = parse_sweep(&a, opts, nsim_opts, &sp);
    if (!status)
        status = check_how_it_runs(&a, opts, &sp);
    if (status) {
        free(sp.buf);
        return status;
    }
    const int publishing = a.f.kv_publish || a.metrics_port;
    int npoints = sp.n ? sp.n : 1;
    sweep_point *pts = calloc((size_t)npoints, sizeof *pts);
    pf_report *r = pf_report_new();
    pf_jobs jobs = {0};
    if (!r || !pts) {
        status = pf_cli_error(PROG, "out of memory");
        goto out;
    }
    /* The trace is read here, once: every point below parses these bytes,
     * so --trace /dev/stdin and --trace <(...) work with sweeps. */
    status = pf_simflags_load(PROG, &a.f);
    if (!status)
        status = pf_simflags_jobs(PROG, &a.f, &jobs, 1);
    if (!status)
        status = report_config(r, &a, &sp, &jobs);
    pf_jobs_free(&jobs);
    if (!status)
        status = make_points(pts, npoints, &a, &sp);
    if (status)
        goto out;
    if (publishing) {
        char err[256];
        if (pf_simpub_open(a.f.kv_publish, a.f.kv_replay, a.metrics_bind, a.metrics_port, &a.pub, err,
                           sizeof err) != PF_OK) {
            fprintf(stderr, "%s: %s\n", PROG, err);
            status = 2;
            goto out;
        }
        pts[0].cur.pub = a.pub;
    }
    int threads = a.jobs_parallel;
    if (threads == 0)
        threads = a.f.engine == PF_ENGINE_THREADED ? 1 : (int)sysconf(_SC_NPROCESSORS_ONLN);
    status = run_sweep(pts, npoints, threads, sp.n ? sp.name : NULL);
    if (status)
        goto out;
    report_tables(r, pts, npoints, &sp);
    if (isnan(a.f.p.watermark))
        report_decisions(r, pts, npoints, &sp);
    if (pf_report_print(r, (pf_fmt)a.format, stdout) != 0) {
        fprintf(stderr, "%s: out of memory while printing\n", PROG);
        status = 1;
    }
out:
    pf_simpub_close(a.pub, NULL); /* its simulator is gone */
    for (int k = 0; pts && k < npoints; k++)
        free(pts[k].dec.ev);
    free(pts);
    pf_jobs_free(&jobs);
    pf_simflags_release(&a.f);
    pf_report_free(r);
    free(sp.buf);
    return status;
}
