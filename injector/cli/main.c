/* SPDX-License-Identifier: MIT */
/* `probing`: the command line. Parses the global options (-p/--pid, -t/--target, --timeout),
 * then hands the rest to one command from the table. Every command is a thin DAP client of the
 * probe in the target. Usage errors exit 2, failures 1. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifdef CLI_SERVE_EXEC
/* This `probing` links no HTTP server: libmicrohttpd brings GnuTLS and a dozen libraries whose
 * start-up (random seeding, configuration files) every command would pay, and which writes to
 * stderr where no random source is allowed. `serve` runs the full CLI, installed beside the
 * probes as lib/probing/probing-serve, with the same arguments. */
static char **saved_argv;

static int cli_serve_exec(const struct cli_opts *o, int argc, char **argv)
{
    (void)o, (void)argc, (void)argv;
    char self[4096], path[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cli_error("serve: cannot find this program (/proc/self/exe): %s", strerror(errno));
        return CLI_FAIL;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(path, sizeof path, "%s/../lib/probing/probing-serve", self);
    execv(path, saved_argv);
    cli_error("serve: cannot run %s: %s: reinstall probing ('make install')", path,
              strerror(errno));
    return CLI_FAIL;
}
#define CLI_SERVE_FN cli_serve_exec
#else
#define CLI_SERVE_FN cli_cmd_serve
#endif

static const struct {
    const char *name;
    cli_cmd_fn *fn;
    int needs_target;
    const char *summary;
} commands[] = {
    {"inject", cli_cmd_inject, 1, "load the probe into a running Python process"},
    {"debug", cli_cmd_debug, 1, "dump every thread's Python stack (--dump)"},
    {"list", cli_cmd_list, 0, "list processes that have the probe loaded"},
    {"dump", cli_cmd_dump, 0, "every thread's Python stack from a core file (--core)"},
    {"cluster", cli_cmd_cluster, 0, "every rank of a distributed job: list, stacks, query, dump"},
    {"query", cli_cmd_query, 1, "run a read-only SQL query over live state and history"},
    {"tables", cli_cmd_tables, 1, "list the tables 'query' can read, with their columns"},
    {"config", cli_cmd_config, 1, "show or change the probe's runtime settings"},
    {"eval", cli_cmd_eval, 1, "run Python code in the target and print the result"},
    {"repl", cli_cmd_repl, 1, "an interactive Python prompt inside the target"},
    {"backtrace", cli_cmd_backtrace, 1, "a thread's stack with local variables"},
    {"memory", cli_cmd_memory, 1, "process and Python memory (objects, gc, tracemalloc, CUDA)"},
    {"perf", cli_cmd_perf, 1, "profile: native+Python sampling (--cc), PyTorch modules (--torch)"},
    {"flamegraph", cli_cmd_flamegraph, 1,
     "perf --cc samples as svg, folded, speedscope, chrometrace, pprof"},
    {"record", cli_cmd_record, 1,
     "sample, wait, write the profile, stop: one command (py-spy record)"},
    {"top", cli_cmd_top, 1, "a live view of the hottest functions (as py-spy top)"},
    {"serve", CLI_SERVE_FN, 0, "a web UI and HTTP API (and /metrics) for this user's processes"},
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: probing [-p PID | -t PID|HOST:PORT | PID | HOST:PORT] [--timeout MS] COMMAND "
            "[ARGS]\n"
            "\n"
            "Attach to a live Python process, with no restart and no code change.\n"
            "\n"
            "Options:\n"
            "  -p, --pid PID          the target process (injects the probe if needed)\n"
            "  -t, --target T         PID, or HOST:PORT of a probe listening on TCP\n"
            "                         (the token comes from $PROBING_TOKEN)\n"
            "      --timeout MS       how long to wait for the probe (default 10000)\n"
            "  -h, --help             this help; 'probing COMMAND --help' for a command\n"
            "  -V, --version          print the version\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nThe original Probing's short names work too: d/dbg, p/performance, q, e, "
               "bt/b, r,\ntbl, ls/l, mem, cfg/c, flame/fg (docs/migrating.md).\n");
    fprintf(f, "\nEnvironment: PROBING_TOKEN (TCP token), PROBING_LIBDIR (probe libraries),\n"
               "PROBING_LOG (log file of the CLI and of probes started by it).\n");
}

/* The original Probing's spellings (docs/migrating.md): its command aliases, and one line
 * naming what to use for its commands that have no equivalent to run here. Returns the
 * command's name, or NULL after printing that line. */
static const char *cli_compat_command(int argc, char **argv, int at)
{
    static const char *const alias[][2] = {
        {"d", "debug"},      {"dbg", "debug"},  {"p", "perf"},       {"performance", "perf"},
        {"q", "query"},      {"e", "eval"},     {"bt", "backtrace"}, {"b", "backtrace"},
        {"r", "repl"},       {"tbl", "tables"}, {"ls", "list"},      {"l", "list"},
        {"mem", "memory"},   {"cfg", "config"}, {"c", "config"},     {"flame", "flamegraph"},
        {"fg", "flamegraph"}};
    static const char *const answer[][2] = {
        {"launch", "start the program with the probe from the start: PROBING=1 python "
                   "train.py"},
        {"skill", "probing has no skills: the tables of 'probing -p PID tables' and 'probing "
                  "-p PID query SQL' are what they read"},
        {"rdma", "probing does not read RDMA counters"},
    };
    const char *name = argv[at];
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (strcmp(name, alias[i][0]) == 0)
            return alias[i][1];
    for (size_t i = 0; i < sizeof answer / sizeof answer[0]; i++)
        if (strcmp(name, answer[i][0]) == 0) {
            cli_error("'%s' is the original Probing's command: %s", name, answer[i][1]);
            return NULL;
        }
    if (strcmp(name, "cluster") == 0 && at + 1 < argc && strcmp(argv[at + 1], "attach") == 0) {
        cli_error("cluster attach: probing has no cluster daemon to attach to: 'probing "
                  "cluster list' finds a job's ranks from their launcher's environment and "
                  "'probing cluster stacks' reads them all (docs/cluster.md)");
        return NULL;
    }
    return name;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"pid", required_argument, 0, 'p'},     {"target", required_argument, 0, 't'},
        {"timeout", required_argument, 0, 'T'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},       {0, 0, 0, 0},
    };
    struct cli_opts o = {.timeout_ms = 10000};
    struct pb_err err = {0};
#ifdef CLI_SERVE_EXEC
    saved_argv = argv;
#endif
    pb_log_init("cli");
    int c;
    opterr = 0;
    /* "+": stop at the command name; the command parses the rest. */
    while ((c = getopt_long(argc, argv, "+p:t:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
        case 't':
            if (cli_target_parse(optarg, &o.target, &err) < 0 || (c == 'p' && o.target.pid <= 0)) {
                cli_error("%s", err.msg[0] ? err.msg : "-p takes a process id");
                return CLI_USAGE;
            }
            o.have_target = 1;
            break;
        case 'T':
            o.timeout_ms = atoi(optarg);
            if (o.timeout_ms <= 0) {
                cli_error("--timeout takes a positive number of milliseconds");
                return CLI_USAGE;
            }
            break;
        case 'h': usage(stdout); return CLI_OK;
        case 'V': printf("probing %s\n", PROBING_VERSION); return CLI_OK;
        default: return cli_bad_option("probing", argv);
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    /* A bare first argument may be the target: `probing 4242 eval ...`, `probing host:9922 query`. */
    if (!o.have_target && optind + 1 < argc) {
        struct cli_target t;
        if (cli_target_parse(argv[optind], &t, &err) == 0) {
            o.target = t;
            o.have_target = 1;
            optind++;
        }
    }
    const char *name = cli_compat_command(argc, argv, optind);
    if (!name)
        return CLI_USAGE;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name) != 0)
            continue;
        int help = 0;
        for (int a = optind + 1; a < argc; a++)
            if (strcmp(argv[a], "-h") == 0 || strcmp(argv[a], "--help") == 0)
                help = 1;
        if (commands[i].needs_target && !o.have_target && !help) {
            cli_error("'%s' needs a target: probing -p PID %s ...", name, name);
            return CLI_USAGE;
        }
        int first = optind;
        optind = 0; /* glibc: re-initialise getopt for the command's own options */
        opterr = 0;
        return commands[i].fn(&o, argc - first, argv + first);
    }
    cli_error("unknown command '%s': see 'probing --help'", name);
    return CLI_USAGE;
}
