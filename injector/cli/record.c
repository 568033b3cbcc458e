/* SPDX-License-Identifier: MIT */
/* `probing -p PID record [-o FILE] [--duration S] [--rate HZ] [--format F] ...`: py-spy's
 * `record` in one command: start `perf --cc` (probing/perf), wait (a progress line with the
 * sample count on a terminal), stop the sampler it started, render what it collected through
 * the flamegraph renderer (cli_fg_render, flamegraph.c). Ctrl-C ends the wait early and still
 * writes the file; a second Ctrl-C kills the command. A sampler the user had started already
 * is left running: the recording is its samples taken during the wait. docs/flamegraph.md. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "injector/cli/perf/perf.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
    signal(SIGINT, SIG_DFL); /* a second Ctrl-C ends the command at once */
}

static void help(void)
{
    printf("usage: probing -p PID record [-o FILE] [-d, --duration S] [-r, --rate HZ]\n"
           "                 [-f, --format FORMAT] [--mode cpu|wall] [--thread TID]\n"
           "                 [--title TEXT] [--width PIXELS] [--diff BEFORE.folded]\n"
           "                 [--native=all] [--gil] [--idle]\n"
           "\n"
           "Sample every thread of the target (native and Python frames, as 'perf --cc'),\n"
           "wait, then write the profile to FILE and stop sampling: one command, as\n"
           "'py-spy record'. Ctrl-C ends early and still writes the file. A sampler already\n"
           "running (started with 'perf --cc') is used as it is, and left running.\n"
           "\n"
           "  -o, --output FILE   where to write (default: profile-PID.svg, or stdout for the\n"
           "                      text formats when stdout is not a terminal)\n"
           "  -d, --duration S    how long to record, 0.1 to 86400 s (default: until Ctrl-C)\n"
           "  -r, --rate HZ       samples per second per thread, 1 to 1000 (default 100)\n"
           "  -f, --format F      svg, folded, speedscope, chrometrace (a per-thread timeline\n"
           "                      for https://ui.perfetto.dev) or pprof (go tool pprof,\n"
           "                      Pyroscope, Parca). Default from FILE's extension, as\n"
           "                      'probing flamegraph --help' says, else svg\n"
           "      --mode cpu|wall cpu (default): threads by their CPU time; wall: every\n"
           "                      Python thread, sleeping ones too\n"
           "      --thread TID    only thread TID in the output\n"
           "      --title TEXT, --width PX   the SVG's title and width\n"
           "      --diff BEFORE   a differential flame graph against BEFORE (folded stacks):\n"
           "                      red grew, blue shrank\n"
           "      --native=all    keep every native frame: by default CPython's own frames\n"
           "                      and the start-up at the root are left out\n"
           "      --gil           only samples where the thread held the GIL\n"
           "      --idle          also off-CPU samples (wall mode), left out by default\n"
           "\n"
           "Examples:\n"
           "  probing -p 4242 record -o profile.svg --duration 30\n"
           "  probing -p 4242 record -o trace.trace.json -d 5       # Perfetto timeline\n"
           "  probing -p 4242 record -o cpu.pb.gz -d 60             # pprof\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits duration seconds (0: until Ctrl-C), a progress line on a terminal. base: the sampler's
 * sample count when the recording began. 0, or -1 with err filled (the target went away). */
static int wait_recording(struct dap_client *dc, pid_t pid, double duration, double base,
                          struct pb_err *err)
{
    int tty = isatty(STDERR_FILENO);
    double t0 = now_s();
    while (!interrupted) {
        double el = now_s() - t0;
        if (duration > 0 && el >= duration)
            break;
        double step = duration > 0 && duration - el < 0.25 ? duration - el : 0.25;
        struct timespec ts = {0, (long)(step * 1e9)};
        nanosleep(&ts, NULL); /* Ctrl-C cuts it short */
        cJSON *st = cli_perf_cc_request(dc, "status", 0, NULL, err);
        if (!st)
            return -1;
        if (tty) {
            double el2 = now_s() - t0;
            if (duration > 0)
                fprintf(stderr,
                        "\rrecording process %d: %.1f/%.1f s, %.0f samples (Ctrl-C "
                        "ends early) ",
                        (int)pid, el2 < duration ? el2 : duration, duration,
                        cli_json_num(st, "samples", 0) - base);
            else
                fprintf(stderr,
                        "\rrecording process %d: %.1f s, %.0f samples (Ctrl-C to stop "
                        "and write) ",
                        (int)pid, el2, cli_json_num(st, "samples", 0) - base);
            fflush(stderr);
        }
        cJSON_Delete(st);
    }
    if (tty)
        fprintf(stderr, "\r%78s\r", "");
    return 0;
}

static int parse_args(int argc, char **argv, struct cli_fg_opts *o, double *duration, int *rate)
{
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"format", required_argument, 0, 'f'},
                                             {"duration", required_argument, 0, 'd'},
                                             {"rate", required_argument, 0, 'r'},
                                             {"thread", required_argument, 0, 'T'},
                                             {"mode", required_argument, 0, 'm'},
                                             {"title", required_argument, 0, 't'},
                                             {"width", required_argument, 0, 'w'},
                                             {"diff", required_argument, 0, 'D'},
                                             {"help", no_argument, 0, 'h'},
                                             {"gil", no_argument, 0, 'G'},
                                             {"idle", no_argument, 0, 'I'},
                                             {"native", optional_argument, 0, 'n'},
                                             {0, 0, 0, 0}};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "o:f:d:r:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return -1;
        }
        if (c == 'd') {
            *duration = strtod(optarg, &end);
            if (*end || !(*duration >= 0.1 && *duration <= 86400)) {
                cli_error("record: --duration '%s': expected seconds from 0.1 to 86400", optarg);
                return CLI_USAGE;
            }
            continue;
        }
        if (c == 'r') {
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1000) {
                cli_error("record: --rate '%s': expected an integer from 1 to 1000 (samples per "
                          "second)",
                          optarg);
                return CLI_USAGE;
            }
            *rate = (int)v;
            continue;
        }
        int r = cli_fg_option(o, c, optarg);
        if (r == 1)
            return cli_bad_option("record", argv);
        if (r)
            return r;
    }
    if (optind < argc) {
        cli_error("record: unexpected argument '%s': see 'probing record --help'", argv[optind]);
        return CLI_USAGE;
    }
    cli_fg_format_guess(o);
    return 0;
}

int cli_cmd_record(const struct cli_opts *co, int argc, char **argv)
{
    struct cli_fg_opts o = {0};
    o.cmd = "record";
    o.fmt = CLI_FG_SVG;
    double duration = 0;
    int rate = 0;
    int rc = parse_args(argc, argv, &o, &duration, &rate);
    if (rc < 0)
        return CLI_OK; /* --help */
    if (rc)
        return rc;
    if ((rc = cli_fg_preload(&o)) != 0)
        return rc; /* before the target is touched */
    pid_t pid = co->target.pid;
    char defname[64];
    static const char *const ext[] = {"svg", "folded", "speedscope.json", "trace.json", "pb.gz"};
    if (!o.out && (isatty(STDOUT_FILENO) || o.fmt == CLI_FG_SVG || o.fmt == CLI_FG_PPROF)) {
        snprintf(defname, sizeof defname, "profile-%d.%s", (int)pid, ext[o.fmt]);
        o.out = defname;
    }

    struct dap_client dc;
    if (cli_open(co, &dc) < 0) {
        cli_fg_close(&o);
        return CLI_FAIL;
    }
    cli_query_wait(&dc, co->timeout_ms);
    struct pb_err err = {0};
    rc = CLI_FAIL;
    int started = 0;
    cJSON *st = cli_perf_cc_request(&dc, "status", 0, NULL, &err);
    if (!st) {
        cli_error("record: %s", err.msg);
        goto out;
    }
    double base = 0;
    if (cli_json_true(st, "running")) {
        /* The user's sampler: record what it takes from now on, and leave it running. */
        const char *mode = cli_json_str(st, "mode");
        fprintf(stderr,
                "probing: note: sampling was already running in process %d (%s mode, "
                "%.0f Hz): recording from it, and leaving it running%s\n",
                (int)pid, mode ? mode : "?", cli_json_num(st, "rate", 0),
                rate || o.mode ? " (--rate and --mode apply to a sampler record starts)" : "");
        base = cli_json_num(st, "samples", 0);
        cJSON *q = cli_query(&dc, "SELECT MAX(ts) FROM perf.samples", &err);
        if (!q) {
            cJSON_Delete(st);
            cli_error("record: %s", err.msg);
            goto out;
        }
        const cJSON *v = cJSON_GetArrayItem(
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(q, "rows"), 0), 0);
        o.after = cJSON_IsNumber(v) ? v->valuedouble : 1; /* 1: no sample yet, all count */
        cJSON_Delete(q);
    }
    cJSON_Delete(st);
    if (o.after <= 0) {
        st = cli_perf_cc_request(&dc, "start", rate, o.mode, &err);
        if (!st) {
            cli_error("record: cannot start sampling: %s", err.msg);
            goto out;
        }
        started = 1;
        cJSON_Delete(st);
    }

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, &old);
    int w = wait_recording(&dc, pid, duration, base, &err);
    sigaction(SIGINT, &old, NULL);
    if (w < 0) {
        cli_error("record: process %d went away while recording (%s): its samples went with "
                  "it; record for a shorter --duration",
                  (int)pid, err.msg);
        goto out;
    }
    if (started) {
        st = cli_perf_cc_request(&dc, "stop", 0, NULL, &err);
        if (!st) {
            cli_error("record: stopping the sampler failed: %s: stop it with 'probing -p %d "
                      "perf --stop'",
                      err.msg, (int)pid);
            goto out;
        }
        cJSON_Delete(st);
        started = 0;
    }
    rc = cli_fg_render(&dc, pid, &o);
out:
    if (started) { /* an error after the start: leave nothing running */
        st = cli_perf_cc_request(&dc, "stop", 0, NULL, &err);
        cJSON_Delete(st);
    }
    cli_disconnect(&dc);
    cli_fg_close(&o);
    return rc;
}
