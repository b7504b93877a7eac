/* tui/main.c - `pagefault`: one binary, subcommands like git or perf.
 *
 *   pagefault [dashboard flags]   the live dashboard (default)
 *   pagefault calc ...            memory accounting and model sizing
 *   pagefault sim ...             headless serving simulation
 *   pagefault bench ...           GPU naive vs paged decode attention
 *   pagefault attach ...          a live vLLM server's KV cache and metrics
 *   pagefault replay FILE         a recorded dashboard session played back
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tui/commands.h"
#include "tui/replay.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pagefault [COMMAND] [FLAGS]\n"
            "\n"
            "A paged KV-cache, seen and measured.\n"
            "\n"
            "commands:\n"
            "  (none)    the live dashboard of the block pool (pagefault --help-dash for flags)\n"
            "  calc      memory accounting, block-size sweep, model sizing\n"
            "  sim       serving simulation: naive vs paged, watermark, preemption\n"
            "  bench     GPU naive vs paged decode attention\n"
            "  attach    watch a live vLLM server: KV-cache events and /metrics\n"
            "  replay    play back a dashboard session recorded with --record FILE\n"
            "\n"
            "`pagefault COMMAND --help` lists a command's flags.\n");
}

/* A result that did not reach stdout (disk full, closed pipe) is an
 * error, not a silent exit 0: flush here, where every command ends. */
static int finish(int rc)
{
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "pagefault: cannot write the output: %s\n", errno ? strerror(errno) : "write error");
        return rc ? rc : 1;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
            usage(stdout);
            return 0;
        }
        if (argc >= 2 && !strcmp(argv[1], "--help-dash"))
            argv[1] = "--help";
        /* flags only: they belong to the dashboard; argv[0] stands as its name */
        return pf_cmd_dash(argc, argv);
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "calc"))
        return pf_cmd_calc(argc - 1, argv + 1);
    if (!strcmp(cmd, "sim"))
        return pf_cmd_sim(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return pf_cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "attach"))
        return pf_cmd_attach(argc - 1, argv + 1);
    if (!strcmp(cmd, "replay"))
        return pf_cmd_replay(argc - 1, argv + 1);
    if (!strcmp(cmd, "dash") || !strcmp(cmd, "dashboard"))
        return pf_cmd_dash(argc - 1, argv + 1);
    if (!strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "pagefault: unknown command '%s' (try: calc, sim, bench, attach, replay, or no command for the dashboard)\n", cmd);
    return 2;
}

int main(int argc, char **argv)
{
    return finish(run(argc, argv));
}
