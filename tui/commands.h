/* tui/commands.h - the subcommands of `pagefault`, dispatched by main.c.
 *
 * Each takes the arguments after its name (argv[0] is the subcommand name)
 * and returns the process exit status: 0 success, 2 usage error, other
 * values as each command documents (bench: 3 = no GPU, 1 = a check failed).
 */
#ifndef PF_TUI_COMMANDS_H
#define PF_TUI_COMMANDS_H

int pf_cmd_calc(int argc, char **argv);
int pf_cmd_sim(int argc, char **argv);
int pf_cmd_bench(int argc, char **argv);
/* `pagefault attach`: a live vLLM server's KV-cache events and metrics. */
int pf_cmd_attach(int argc, char **argv);
/* The dashboard: `pagefault` with no subcommand (or only flags). */
int pf_cmd_dash(int argc, char **argv);

#endif
