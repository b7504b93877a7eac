/* tui/simflags.c - the simulator's flag table (see simflags.h). */
#include "tui/simflags.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/workload.h"
#include "sim/crew.h"
#include "sim/sched.h" /* PF_SCHED_STALL_LIMIT_MAX */

/* Choice tables of the presets' names, filled once from core/config and
 * sim/cost (their lists are static, so the names outlive every use). */
#define MAX_PRESETS 32
static const char *model_names[MAX_PRESETS + 1];
static const char *gpu_names[MAX_PRESETS + 1];

static void fill_names(void)
{
    if (model_names[0])
        return;
    const pf_model *const *m = pf_model_list();
    for (int i = 0; m[i] && i < MAX_PRESETS; i++)
        model_names[i] = m[i]->name;
    const pf_gpu *const *g = pf_gpu_list();
    for (int i = 0; g[i] && i < MAX_PRESETS; i++)
        gpu_names[i] = g[i]->name;
}

static int name_index(const char *const *names, const char *want)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], want))
            return i;
    return 0;
}

static const char *const watermark_words[] = {"auto", NULL};

void pf_simflags_default(pf_simflags *f, pf_engine engine)
{
    memset(f, 0, sizeof *f);
    fill_names();
    pf_sim_params_default(&f->p);
    f->p.engine = engine;
    f->jobs = 512;
    f->seed = (long long)f->p.seed;
    f->mode = (int)f->p.mode;
    f->policy = (int)f->p.policy;
    f->preempt = (int)f->p.preempt;
    f->engine = (int)engine;
    f->scheduler = (int)f->p.scheduler;
    f->reserve = (int)f->p.naive_reserve;
    f->model = name_index(model_names, f->p.cost.model.name);
    f->gpu = name_index(gpu_names, f->p.cost.gpu.name);
    f->n = 1;
    f->prefix_groups = 1; /* one system prompt for all, when there is one */
}

int pf_simflags_opts(pf_simflags *f, pf_opt *opts, int with_mode)
{
    pf_sim_params *p = &f->p;
    /* Bounds the simulator also checks (sim/sim.c params_check) are copied
     * from it exactly; tests/test_cli.c fails if they drift. The others are
     * the command line's own: --jobs keeps a generated workload to what one
     * run finishes in seconds; --arrival-rate and the SLOs stop at a million
     * (per second, seconds) far past any real server; --seed is the largest
     * integer a double (JSON) holds exactly; --stall-limit, --swap-blocks,
     * --pingpong-window and --max-num-batched-tokens stop far above any
     * meaningful value but well inside an int; --n at 64 (vLLM allows any
     * n; beam-search-sized fan-outs are far below). */
    const pf_opt rows[] = {
        {"jobs", PF_OPT_INT, &f->jobs, 1, 1000000, NULL, "N", "jobs from the seed's length mix", 0},
        {"trace", PF_OPT_STRING, &f->trace, 0, 0, NULL, "FILE",
         "jobs from a trace (read once; a pipe works): arrival,prompt,output CSV (arrival in "
         "seconds) or the Azure LLM trace format", 0},
        {"arrival-rate", PF_OPT_DOUBLE, &f->arrival_rate, 0, 1e6, NULL, "R",
         "generated jobs arrive R per second (0: all at time 0, the seed's)", 0},
        {"scheduler", PF_OPT_CHOICE, &f->scheduler, 0, 0, pf_sched_rules_names, NULL,
         "rules: vllm (token budget, newest preempted at once) or seed (stall, then a victim)", 0},
        {"max-num-seqs", PF_OPT_INT, &p->workers, 1, PF_SIM_MAX_SEQS, NULL, "N",
         "running sequences at most (vLLM's flag; the design card's workers)", 0},
        {"workers", PF_OPT_INT, &p->workers, 1, PF_SIM_MAX_SEQS, NULL, "N",
         "the same as --max-num-seqs", 0},
        {"max-num-batched-tokens", PF_OPT_INT, &p->max_num_batched_tokens, 1, 1 << 24, NULL, "N",
         "token budget of a step (vllm rules)", 0},
        {"pool-blocks", PF_OPT_INT, &p->cfg.pool_blocks, 1, 1 << 22, NULL, "N", "frames in the KV pool", 0},
        {"block-size", PF_OPT_INT, &p->cfg.block_size, 1, 65536, NULL, "TOKENS", "tokens per block", 0},
        {"max-len", PF_OPT_INT, &p->cfg.max_seq_len, 2, 1 << 24, NULL, "TOKENS",
         "max model length: naive max reservation; longer trace requests are skipped", 0},
        {"watermark", PF_OPT_DOUBLE, &p->watermark, 0, 1, watermark_words, "F",
         "a new request is admitted only if this fraction of the pool stays free; auto: the "
         "load controller sets it", 0},
        {"naive-reserve", PF_OPT_CHOICE, &f->reserve, 0, 0, pf_naive_reserve_names, NULL,
         "naive baseline's reservation: max-len, next power of two, exact final length", 0},
        {"enable-prefix-caching", PF_OPT_FLAG, &p->prefix_caching, 0, 0, NULL, NULL,
         "reuse cached full blocks by hash (vLLM's flag)", 0},
        {"shared-prefix-tokens", PF_OPT_INT, &f->shared_prefix, 0, 1 << 24, NULL, "N",
         "a system prompt of N tokens heads every prompt of its prefix group (generated or trace jobs)", 0},
        {"prefix-groups", PF_OPT_INT, &f->prefix_groups, 1, 1000000, NULL, "G",
         "number of distinct system prompts (jobs take them in turn)", 0},
        {"n", PF_OPT_INT, &f->n, 1, 64, NULL, "K", "parallel samples per request (fork)", 0},
        {"policy", PF_OPT_CHOICE, &f->policy, 0, 0, pf_victim_names, NULL, "victim of a page fault", 0},
        {"preempt", PF_OPT_CHOICE, &f->preempt, 0, 0, pf_preempt_names, NULL, "preemption mode", 0},
        {"stall-limit", PF_OPT_INT, &p->stall_limit, 0, PF_SCHED_STALL_LIMIT_MAX, NULL, "N",
         "seed rules: steps a faulting sequence stalls before a victim is preempted", 0},
        {"swap-blocks", PF_OPT_INT, &p->swap_host_blocks, 0, 1 << 30, NULL, "N",
         "host swap capacity in blocks", 0},
        {"pingpong-window", PF_OPT_INT, &p->pingpong_window, 0, 1 << 30, NULL, "K",
         "ping-pong: preempted again within K steps of readmission", 0},
        {"model", PF_OPT_CHOICE, &f->model, 0, 0, model_names, NULL, "model timed by the cost model", 0},
        {"gpu", PF_OPT_CHOICE, &f->gpu, 0, 0, gpu_names, NULL, "GPU timed by the cost model", 0},
        {"gpu-profile", PF_OPT_STRING, &f->gpu_profile, 0, 0, NULL, "FILE",
         "measured bandwidths from `pagefault bench --profile-out FILE`", 0},
        {"slo-ttft", PF_OPT_DOUBLE, &p->slo_ttft_s, 0, 1e6, NULL, "S",
         "time-to-first-token objective, seconds (0: none)", 0},
        {"slo-tpot", PF_OPT_DOUBLE, &p->slo_tpot_s, 0, 1e6, NULL, "S",
         "time-per-output-token objective, seconds (0: none)", 0},
        {"engine", PF_OPT_CHOICE, &f->engine, 0, 0, pf_engine_names, NULL, "simulation engine", 0},
        {"threads", PF_OPT_INT, &p->threads, 0, PF_CREW_MAX, NULL, "N",
         "threaded engine: OS threads (0: one per core)", 0},
        {"seed", PF_OPT_I64, &f->seed, 0, 9007199254740991.0, NULL, "S", "workload seed", 0},
        {"tick-us", PF_OPT_INT, &p->tick_us, 0, 10000000, NULL, "US",
         "live, or publishing: wall time per step (0: as fast as possible)", 0},
        {"kv-events-publish", PF_OPT_STRING, &f->kv_publish, 0, 0, NULL, "ENDPOINT",
         "publish the prefix cache's block events as vLLM does (ZeroMQ PUB, e.g. tcp://*:5557)", 0},
        {"kv-events-replay", PF_OPT_STRING, &f->kv_replay, 0, 0, NULL, "ENDPOINT",
         "with --kv-events-publish: answer replay requests here (ROUTER, e.g. tcp://*:5558)", 0},
        {"mode", PF_OPT_CHOICE, &f->mode, 0, 0, pf_sim_mode_names, NULL, "allocation mode", 0},
    };
    _Static_assert(sizeof rows / sizeof rows[0] <= PF_SIMFLAGS_NOPTS, "PF_SIMFLAGS_NOPTS");
    int n = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (with_mode || strcmp(rows[i].name, "mode") != 0)
            opts[n++] = rows[i];
    return n;
}

int pf_simflags_check(const char *prog, const pf_simflags *f, pf_opt *opts)
{
    if (f->trace && pf_cli_find(opts, "jobs")->seen)
        return pf_cli_error(prog, "--jobs and --trace exclude each other");
    /* a trace carries its own arrival times; the rate would be ignored */
    if (f->trace && pf_cli_find(opts, "arrival-rate")->seen)
        return pf_cli_error(prog, "--arrival-rate and --trace exclude each other (a trace has its own arrivals)");
    if (f->kv_replay && !f->kv_publish)
        return pf_cli_error(prog, "--kv-events-replay needs --kv-events-publish");
    if (f->kv_publish && !f->p.prefix_caching)
        return pf_cli_error(prog, "--kv-events-publish: the block events are the prefix cache's: "
                                  "add --enable-prefix-caching");
    if (pf_cli_find(opts, "prefix-groups")->seen && !f->shared_prefix)
        return pf_cli_error(prog, "--prefix-groups needs --shared-prefix-tokens");
    /* the deterministic engine runs on the calling thread: a thread count
     * would be ignored (and a sweep of it print identical rows) */
    if (pf_cli_find(opts, "threads")->seen && f->engine != PF_ENGINE_THREADED)
        return pf_cli_error(prog, "--threads: only the threaded engine has a crew of threads "
                                  "(add --engine threaded)");
    if (f->shared_prefix && f->shared_prefix + 2 > f->p.cfg.max_seq_len)
        return pf_cli_error(prog, "--shared-prefix-tokens %d leaves no room in --max-len %d",
                            f->shared_prefix, f->p.cfg.max_seq_len);
    return PF_CLI_OK;
}

int pf_simflags_load(const char *prog, pf_simflags *f)
{
    if (!f->trace || f->trace_data)
        return 0;
    char err[512] = "";
    if (pf_jobs_read_file(f->trace, &f->trace_data, &f->trace_len, err, sizeof err) != PF_OK) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 2;
    }
    return 0;
}

void pf_simflags_release(pf_simflags *f)
{
    free(f->trace_data);
    f->trace_data = NULL;
    f->trace_len = 0;
}

int pf_simflags_check_naive(const char *prog, const pf_simflags *f)
{
    long long B = f->p.cfg.block_size;
    long long need = (f->p.cfg.max_seq_len + B - 1) / B;
    if (need > f->p.cfg.pool_blocks)
        return pf_cli_error(prog,
                            "--pool-blocks %d cannot hold one naive reservation: --max-len %d needs "
                            "%lld blocks of %lld tokens (raise --pool-blocks or lower --max-len)",
                            f->p.cfg.pool_blocks, f->p.cfg.max_seq_len, need, B);
    return PF_CLI_OK;
}

int pf_simflags_params(const char *prog, const pf_simflags *f, pf_sim_params *out)
{
    *out = f->p;
    out->mode = (pf_sim_mode)f->mode;
    out->policy = (pf_victim_policy)f->policy;
    out->preempt = (pf_preempt_mode)f->preempt;
    out->engine = (pf_engine)f->engine;
    out->scheduler = (pf_sched_rules)f->scheduler;
    out->naive_reserve = (pf_naive_reserve)f->reserve;
    out->seed = (uint64_t)f->seed;
    /* --watermark auto: the load controller, from the default (vLLM's) */
    if (isnan(out->watermark)) {
        pf_sim_params d;
        pf_sim_params_default(&d);
        out->watermark_auto = 1;
        out->watermark = d.watermark;
    }
    const pf_model *m = pf_model_find(model_names[f->model]);
    const pf_gpu *g = pf_gpu_find(gpu_names[f->gpu]);
    if (!m || !g || pf_cost_init(&out->cost, m, g, PF_COST_OVERHEAD_S) != PF_OK) {
        if (prog)
            fprintf(stderr, "%s: --model %s cannot be timed (no layers or heads)\n", prog,
                    model_names[f->model]);
        return 2;
    }
    if (f->gpu_profile) {
        char err[512];
        if (pf_cost_load_profile(&out->cost, f->gpu_profile, err, sizeof err) != PF_OK) {
            if (prog)
                fprintf(stderr, "%s: --gpu-profile: %s\n", prog, err);
            return 2;
        }
    }
    return 0;
}

/* --n K fans every job out into K samples: all of them must fit a run. */
static int fork_fits(const char *prog, const char *jobs_are, long long njobs, int n)
{
    if (njobs * n <= PF_JOBS_MAX)
        return 1;
    fprintf(stderr, "%s: %s x --n %d is %lld samples, more than a run holds (%d)\n", prog, jobs_are,
            n, njobs * n, PF_JOBS_MAX);
    return 0;
}

int pf_simflags_jobs(const char *prog, const pf_simflags *f, pf_jobs *jobs, int warn)
{
    int max_len = f->p.cfg.max_seq_len;
    if (!f->trace) {
        char what[64];
        snprintf(what, sizeof what, "--jobs %d", f->jobs);
        if (!fork_fits(prog, what, f->jobs, f->n))
            return 2;
        if (pf_jobs_generate(jobs, (uint64_t)f->seed, f->jobs, pf_mix_seed(), f->arrival_rate,
                             max_len) != PF_OK ||
            pf_jobs_add_prefix(jobs, f->shared_prefix, f->prefix_groups, max_len) != PF_OK ||
            pf_jobs_fork(jobs, f->n) != PF_OK) {
            fprintf(stderr, "%s: cannot generate %d jobs\n", prog, f->jobs);
            pf_jobs_free(jobs);
            return 2;
        }
        return 0;
    }
    char err[512] = "";
    int rc = f->trace_data ? pf_jobs_parse_trace(jobs, f->trace, f->trace_data, f->trace_len,
                                                 max_len, err, sizeof err)
                           : pf_jobs_load_trace(jobs, f->trace, max_len, err, sizeof err);
    if (rc == PF_OK) {
        char what[64];
        snprintf(what, sizeof what, "the trace's %d requests", jobs->njobs);
        if (!fork_fits(prog, what, jobs->njobs, f->n)) {
            pf_jobs_free(jobs);
            return 2;
        }
    }
    /* a trace's requests get the shared system prompts too: the trace says
     * how long each prompt is, the flags what its head is */
    if (rc == PF_OK &&
        (pf_jobs_add_prefix(jobs, f->shared_prefix, f->prefix_groups, max_len) != PF_OK ||
         pf_jobs_fork(jobs, f->n) != PF_OK)) {
        pf_jobs_free(jobs);
        rc = PF_ERR_NOMEM;
    }
    if (rc != PF_OK) {
        fprintf(stderr, "%s: %s\n", prog, err[0] ? err : pf_strerror(rc));
        return 2;
    }
    if (jobs->njobs < 1) {
        fprintf(stderr, "%s: %s: no request fits --max-len %d (%d skipped)\n", prog, f->trace,
                max_len, jobs->rejected);
        pf_jobs_free(jobs);
        return 2;
    }
    if (warn && jobs->rejected > 0)
        fprintf(stderr, "%s: %s: skipped %d requests longer than --max-len %d (raise --max-len to keep them)\n",
                prog, f->trace, jobs->rejected, max_len);
    return 0;
}
