/* tui/simflags.c - the simulator's flag table (see simflags.h). */
#include "tui/simflags.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/workload.h"

void pf_simflags_default(pf_simflags *f, pf_engine engine)
{
    memset(f, 0, sizeof *f);
    pf_sim_params_default(&f->p);
    f->p.engine = engine;
    f->jobs = 512;
    f->step_ms = 20.0; /* a decode iteration of a busy server */
    f->seed = (long long)f->p.seed;
    f->mode = (int)f->p.mode;
    f->policy = (int)f->p.policy;
    f->preempt = (int)f->p.preempt;
    f->engine = (int)engine;
}

int pf_simflags_opts(pf_simflags *f, pf_opt *opts, int with_mode)
{
    pf_sim_params *p = &f->p;
    /* Bounds the simulator also checks (sim/sim.c params_check; workers:
     * PF_SIM_MAX_WORKERS) are copied from it exactly; tests/test_cli.c
     * fails if they drift. The others are the command line's own: --jobs
     * and --arrival-rate keep a generated workload to what one run finishes
     * in seconds; --seed is the largest integer a double (JSON) holds
     * exactly; --stall-limit, --swap-blocks and --pingpong-window stop far
     * above any meaningful value but well inside an int. */
    const pf_opt rows[] = {
        {"jobs", PF_OPT_INT, &f->jobs, 1, 1000000, NULL, "N", "jobs from the seed's length mix", 0},
        {"trace", PF_OPT_STRING, &f->trace, 0, 0, NULL, "FILE",
         "jobs from a trace (read once; a pipe works): arrival,prompt,output CSV or the Azure LLM "
         "trace format", 0},
        {"step-ms", PF_OPT_DOUBLE, &f->step_ms, 0.001, 1e6, NULL, "MS",
         "Azure trace: wall-clock milliseconds per simulated step", 0},
        {"arrival-rate", PF_OPT_DOUBLE, &f->arrival_rate, 0, 1e6, NULL, "R",
         "generated jobs arrive R per step (0: all at step 0, the seed's)", 0},
        {"workers", PF_OPT_INT, &p->workers, 1, 4096, NULL, "N", "concurrent sequence slots", 0},
        {"pool-blocks", PF_OPT_INT, &p->cfg.pool_blocks, 1, 1 << 22, NULL, "N", "frames in the KV pool", 0},
        {"block-size", PF_OPT_INT, &p->cfg.block_size, 1, 65536, NULL, "TOKENS", "tokens per block", 0},
        {"max-len", PF_OPT_INT, &p->cfg.max_seq_len, 2, 1 << 24, NULL, "TOKENS",
         "MAX_SEQ_LEN: naive reservation; longer trace requests are skipped", 0},
        {"watermark", PF_OPT_DOUBLE, &p->watermark, 0, 1, NULL, "F",
         "paged admission keeps this fraction of the pool free", 0},
        {"policy", PF_OPT_CHOICE, &f->policy, 0, 0, pf_victim_names, NULL, "victim of a page fault", 0},
        {"preempt", PF_OPT_CHOICE, &f->preempt, 0, 0, pf_preempt_names, NULL, "preemption mode", 0},
        {"engine", PF_OPT_CHOICE, &f->engine, 0, 0, pf_engine_names, NULL, "simulation engine", 0},
        {"seed", PF_OPT_I64, &f->seed, 0, 9007199254740991.0, NULL, "S", "workload seed", 0},
        {"tick-us", PF_OPT_INT, &p->tick_us, 0, 10000000, NULL, "US",
         "threaded/live: wall time per step (0: as fast as possible)", 0},
        {"stall-limit", PF_OPT_INT, &p->stall_limit, 0, 1000000, NULL, "N",
         "steps a faulting sequence stalls before a victim is preempted", 0},
        {"recompute-cost", PF_OPT_DOUBLE, &p->recompute_cost, 0, 1e6, NULL, "F",
         "steps per recomputed token after a recompute preemption", 0},
        {"swap-cost", PF_OPT_DOUBLE, &p->swap_cost_per_page, 0, 1e6, NULL, "F",
         "steps per page copied to or from host swap", 0},
        {"swap-blocks", PF_OPT_INT, &p->swap_host_blocks, 0, 1 << 30, NULL, "N",
         "host swap capacity in blocks", 0},
        {"pingpong-window", PF_OPT_INT, &p->pingpong_window, 0, 1 << 30, NULL, "K",
         "ping-pong: preempted again within K steps of readmission", 0},
        {"mode", PF_OPT_CHOICE, &f->mode, 0, 0, pf_sim_mode_names, NULL, "allocation mode", 0},
    };
    int n = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (with_mode || strcmp(rows[i].name, "mode") != 0)
            opts[n++] = rows[i];
    return n;
}

int pf_simflags_check(const char *prog, const pf_simflags *f, pf_opt *opts)
{
    if (pf_cli_find(opts, "step-ms")->seen && !f->trace)
        return pf_cli_error(prog, "--step-ms needs --trace");
    if (f->trace && pf_cli_find(opts, "jobs")->seen)
        return pf_cli_error(prog, "--jobs and --trace exclude each other");
    /* a trace carries its own arrival steps; the rate would be ignored */
    if (f->trace && pf_cli_find(opts, "arrival-rate")->seen)
        return pf_cli_error(prog, "--arrival-rate and --trace exclude each other (a trace has its own arrivals)");
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

void pf_simflags_params(const pf_simflags *f, pf_sim_params *out)
{
    *out = f->p;
    out->mode = (pf_sim_mode)f->mode;
    out->policy = (pf_victim_policy)f->policy;
    out->preempt = (pf_preempt_mode)f->preempt;
    out->engine = (pf_engine)f->engine;
    out->seed = (uint64_t)f->seed;
}

int pf_simflags_jobs(const char *prog, const pf_simflags *f, pf_jobs *jobs, int warn)
{
    int max_len = f->p.cfg.max_seq_len;
    if (!f->trace) {
        if (pf_jobs_generate(jobs, (uint64_t)f->seed, f->jobs, pf_mix_seed(), f->arrival_rate,
                             max_len) != PF_OK) {
            fprintf(stderr, "%s: cannot generate %d jobs\n", prog, f->jobs);
            return 2;
        }
        return 0;
    }
    char err[512] = "";
    int rc = f->trace_data ? pf_jobs_parse_trace(jobs, f->trace, f->trace_data, f->trace_len,
                                                 f->step_ms, max_len, err, sizeof err)
                           : pf_jobs_load_trace(jobs, f->trace, f->step_ms, max_len, err, sizeof err);
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
