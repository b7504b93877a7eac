/* tui/simflags.h - the simulator's flags, one table for every front end.
 *
 * `pagefault sim` and the dashboard take the same simulator flags (workload,
 * pool, scheduler, watermark, sequences, policy, engine, seed, trace, model
 * and GPU...). This
 * module owns their names, ranges, defaults and help, the checks between
 * them, and turning them into jobs, so the two commands cannot drift apart.
 *
 * Use: pf_simflags_default(); pf_simflags_opts() writes the rows into the
 * caller's pf_opt array (followed by the command's own rows and a {0});
 * after pf_cli_parse, pf_simflags_check() checks combinations,
 * pf_simflags_load() reads --trace once, pf_simflags_params() gives the
 * parameters and pf_simflags_jobs() the jobs (as often as needed: a sweep
 * of --max-len parses the bytes again, never the file);
 * pf_simflags_release() at the end. Callers: tui/cmd_sim.c, tui/dash.c.
 *
 * Ranges: each numeric row's [lo, hi] is exactly what pf_sim_create
 * accepts (sim/sim.c params_check) where the simulator has a bound; the
 * rest are the command line's own, each defended beside its row. --help
 * prints them, and tests/test_cli.c walks the table against the simulator.
 */
#ifndef PF_TUI_SIMFLAGS_H
#define PF_TUI_SIMFLAGS_H

#include "sim/sim.h"
#include "tui/cli.h"

typedef struct {
    pf_sim_params p;  /* numeric flags write here directly */
    int jobs;         /* --jobs: generated from the seed's mix            */
    const char *trace;/* --trace FILE                                     */
    double arrival_rate; /* --arrival-rate, requests per second           */
    long long seed;
    int mode, policy, preempt, engine, scheduler, reserve, model, gpu; /* choice indices */
    const char *gpu_profile; /* --gpu-profile FILE                        */
    int shared_prefix, prefix_groups; /* --shared-prefix-tokens, --prefix-groups */
    int n;            /* --n: parallel samples per request                */
    const char *kv_publish, *kv_replay; /* --kv-events-publish, --kv-events-replay */
    /* The --trace file's bytes, read once by pf_simflags_load (owned by
     * the struct it was loaded into; a copy of the struct may read them but
     * only the original is released). NULL: not loaded. */
    char *trace_data;
    size_t trace_len;
} pf_simflags;

/* Rows written by pf_simflags_opts (with and without --mode). */
#define PF_SIMFLAGS_NOPTS 34

/* Defaults: pf_sim_params_default, 512 jobs, the given engine. */
void pf_simflags_default(pf_simflags *f, pf_engine engine);

/* Write the rows into opts[0..] and return how many (--mode only when
 * with_mode: `sim` always runs both modes). */
int pf_simflags_opts(pf_simflags *f, pf_opt *opts, int with_mode);

/* After parsing: --jobs and --arrival-rate each exclude --trace,
 * --prefix-groups needs --shared-prefix-tokens, which must leave room in
 * --max-len. PF_CLI_OK or PF_CLI_USAGE (message printed). */
int pf_simflags_check(const char *prog, const pf_simflags *f, pf_opt *opts);

/* For commands that run naive mode (`sim` always does): one sequence's
 * naive reservation, ceil(--max-len / --block-size) blocks, must fit
 * --pool-blocks. PF_CLI_OK, or PF_CLI_USAGE after one line naming the
 * flags. */
int pf_simflags_check_naive(const char *prog, const pf_simflags *f);

/* Read the --trace file (or pipe) into f once; nothing to do without
 * --trace. Returns 0, or 2 after a one-line error on stderr. */
int pf_simflags_load(const char *prog, pf_simflags *f);

/* Free what pf_simflags_load read. Safe to call twice. */
void pf_simflags_release(pf_simflags *f);

/* The simulator parameters the flags say (choices, seed, --watermark auto,
 * the cost model of --model/--gpu and --gpu-profile applied). Returns 0, or
 * 2 after a one-line error naming the flag (when prog is not NULL) for a
 * model that cannot be timed or a profile that cannot be read. */
int pf_simflags_params(const char *prog, const pf_simflags *f, pf_sim_params *out);

/* Jobs from --trace (the bytes pf_simflags_load read, or the file itself
 * when not loaded) or the seed's mix. Trace requests longer than
 * --max-len are skipped with one warning line (when warn). Returns 0, or 2
 * after a one-line error ("FILE:LINE: what" for a malformed trace). */
int pf_simflags_jobs(const char *prog, const pf_simflags *f, pf_jobs *jobs, int warn);

#endif
