/* tui/simflags.h - the simulator's flags, one table for every front end.
 *
 * `pagefault sim` and the dashboard take the same simulator flags (workload,
 * pool, watermark, workers, policy, engine, seed, trace, costs...). This
 * module owns their names, ranges, defaults and help, the checks between
 * them, and turning them into jobs, so the two commands cannot drift apart.
 *
 * Use: pf_simflags_default(); pf_simflags_opts() writes the rows into the
 * caller's pf_opt array (followed by the command's own rows and a {0});
 * after pf_cli_parse, pf_simflags_check() checks combinations,
 * pf_simflags_params() gives the parameters and pf_simflags_jobs() the jobs. Callers: tui/cmd_sim.c,
 * tui/dash.c.
 */
#ifndef PF_TUI_SIMFLAGS_H
#define PF_TUI_SIMFLAGS_H

#include "sim/sim.h"
#include "tui/cli.h"

typedef struct {
    pf_sim_params p;  /* numeric flags write here directly */
    int jobs;         /* --jobs: generated from the seed's mix            */
    const char *trace;/* --trace FILE                                     */
    double step_ms;   /* --step-ms: Azure trace ms per step               */
    double arrival_rate;
    long long seed;
    int mode, policy, preempt, engine; /* choice indices                  */
} pf_simflags;

/* Rows written by pf_simflags_opts (with and without --mode). */
#define PF_SIMFLAGS_NOPTS 21

/* Defaults: pf_sim_params_default, 512 jobs, 20 ms per trace step, the
 * given engine. */
void pf_simflags_default(pf_simflags *f, pf_engine engine);

/* Write the rows into opts[0..] and return how many (--mode only when
 * with_mode: `sim` always runs both modes). */
int pf_simflags_opts(pf_simflags *f, pf_opt *opts, int with_mode);

/* After parsing: --step-ms needs --trace, --jobs and --arrival-rate each
 * exclude --trace. PF_CLI_OK or PF_CLI_USAGE (message printed). */
int pf_simflags_check(const char *prog, const pf_simflags *f, pf_opt *opts);

/* The simulator parameters the flags say (choices and seed applied). */
void pf_simflags_params(const pf_simflags *f, pf_sim_params *out);

/* Jobs from --trace or the seed's mix. Trace requests longer than
 * --max-len are skipped with one warning line (when warn). Returns 0, or 2
 * after a one-line error ("FILE:LINE: what" for a malformed trace). */
int pf_simflags_jobs(const char *prog, const pf_simflags *f, pf_jobs *jobs, int warn);

#endif
