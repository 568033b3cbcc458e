/* SPDX-License-Identifier: MIT */
/* `probing -p PID perf ...`: the profilers. `--cc` is native+Python CPU sampling (cc.c),
 * `--torch` per-module PyTorch timing (torch.c), `--comm` the torch.distributed recorder
 * (comm.c; --torch starts it too); `--stop` alone stops whatever of them runs in the target. This file decides which one a command line is for, and does the stopping. */
#include <stdio.h>
#include <string.h>

#include "perf.h"

static void help(void)
{
    printf(
        "usage: probing -p PID perf --cc [--rate HZ] [--duration S] [--mode cpu|wall]\n"
        "       probing -p PID perf --torch [--every N] [--trace FILE] [--no-comm]\n"
        "       probing -p PID perf --comm [--ddp]\n"
        "       probing -p PID perf [--cc | --torch | --comm] --stop\n"
        "\n"
        "Profile a running process. Collection goes on in the target after the command\n"
        "exits, until 'perf --stop'; results are SQL tables (probing -p PID tables perf,\n"
        "tables python) and 'probing -p PID flamegraph'.\n"
        "\n"
        "  --cc                 sample every thread's native and Python stack\n"
        "    --rate HZ          samples per second per thread (default 100)\n"
        "    --duration S       wait S seconds, then print a summary (and keep sampling)\n"
        "    --mode cpu|wall    CPU time of each thread (default) or wall-clock time\n"
        "  --torch              time every torch.nn.Module call, forward and backward\n"
        "    --every N          trace one training step in N (see 'perf --torch --help')\n"
        "    --trace FILE       write the traced steps as Chrome trace-event JSON\n"
        "    --no-comm          do not start the collectives recorder (--comm) with it\n"
        "  --comm               record every torch.distributed collective and send/recv\n"
        "  --stop               stop sampling and tracing, removing every hook\n"
        "\n"
        "'probing perf --cc --help', 'perf --torch --help' and 'perf --comm --help' say more.\n");
}

static int has(int argc, char **argv, const char *opt)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], opt) == 0)
            return 1;
    return 0;
}

/* Stops perf --cc (cc), perf --torch (torch), perf --comm (comm) or all in the target, saying
 * what was stopped, or that nothing was running. perf --torch --stop stops the recorder it
 * started too. */
static int stop(const struct cli_opts *o, int cc, int torch, int comm)
{
    const char *what = cc && torch ? "perf --stop"
                       : cc        ? "perf --cc --stop"
                       : torch     ? "perf --torch --stop"
                                   : "perf --comm --stop";
    struct dap_client dc;
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    struct pb_err err = {0};
    int stopped = 0, rc = CLI_OK;
    if ((cc && cli_perf_cc_stop(&dc, &stopped, &err) < 0) ||
        (torch && cli_perf_torch_stop(&dc, &stopped, &err) < 0) ||
        (comm && cli_perf_comm_stop(&dc, &stopped, &err) < 0)) {
        cli_error("%s: %s", what, err.msg);
        rc = CLI_FAIL;
    } else if (!stopped && cc && torch) {
        printf("nothing to stop: neither 'perf --cc' nor 'perf --torch' nor 'perf --comm' was "
               "running\n");
    } else if (!stopped && cc) {
        printf("perf --cc was not running\n");
    } else if (!stopped && !torch) {
        printf("perf --comm: nothing to stop: it was not running in process %d\n",
               (int)o->target.pid);
    } else if (!stopped) {
        printf("perf --torch: nothing to stop: it was not running in process %d\n",
               (int)o->target.pid);
    }
    cli_disconnect(&dc);
    return rc;
}

int cli_cmd_perf(const struct cli_opts *o, int argc, char **argv)
{
    int cc = has(argc, argv, "--cc"), torch = has(argc, argv, "--torch");
    int comm = has(argc, argv, "--comm");
    if (cc + torch + comm > 1) {
        cli_error("perf: --cc and --torch are separate commands (--comm too, which --torch "
                  "starts): run one, then the other");
        return CLI_USAGE;
    }
    if (cc || torch || comm) {
        int rc = cc      ? cli_perf_cc(o, argc, argv)
                 : torch ? cli_perf_torch(o, argc, argv)
                         : cli_perf_comm(o, argc, argv);
        return rc == CLI_PERF_STOP ? stop(o, cc, torch, torch || comm) : rc;
    }
    if (has(argc, argv, "-h") || has(argc, argv, "--help")) {
        help();
        return CLI_OK;
    }
    if (argc == 2 && strcmp(argv[1], "--stop") == 0)
        return stop(o, 1, 1, 1);
    if (argc == 1)
        cli_error("perf: say what to profile: --cc (native and Python CPU sampling) or --torch "
                  "(PyTorch modules); see 'probing perf --help'");
    else
        cli_error("perf: unknown option '%s': see 'probing perf --help'", argv[1]);
    return CLI_USAGE;
}
