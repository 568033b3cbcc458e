/* SPDX-License-Identifier: MIT */
/* `probing -p PID perf --cc [--rate HZ] [--duration S] [--mode cpu|wall] [--clock C] [--stop]`:
 * native and
 * Python sampling of every thread (the probe's sampler, docs/perf.md) through probing/perf.
 * Without --duration it starts sampling and returns (sampling goes on in the target until
 * `perf --stop`); with it, it waits S seconds (a progress line on a terminal only), then
 * prints a summary: samples, threads, missed, lost, the sampler's CPU time, and the top
 * functions by self and total share, from perf.samples / perf.frames (probing/query).
 * `--stop` stops sampling and prints the same summary of what was collected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define TOP 10
/* The summary reads the clean view (perf.frames.collapsed = 0), as flame graphs and top do: a
 * stack's own function is its innermost kept frame. A function's name in the summary: Python "func (file)" (all its lines together), native
 * the symbol or module+0xOFFSET. */
#define FUNC "CASE WHEN f.kind = 'python' THEN f.func || ' (' || f.file || ')' ELSE f.name END"

static void help(void)
{
    printf("usage: probing -p PID perf --cc [--rate HZ] [--duration S] [--mode cpu|wall]\n"
           "                                [--clock auto|events|timers]\n"
           "       probing -p PID perf --cc --stop\n"
           "\n"
           "Sample every thread of the target: its native stack and its Python frames,\n"
           "merged into one stack (each interpreter eval-loop frame replaced by the Python\n"
           "frames it ran). Sampling goes on in the target until 'perf --stop'; the\n"
           "samples are SQL tables (perf.samples, perf.stacks, perf.frames) and\n"
           "'probing -p PID flamegraph' draws them. Starting again clears the last profile.\n"
           "\n"
           "  --rate HZ          samples per second per thread, 1 to 1000 (default 100)\n"
           "  --duration S       wait S seconds (0.1 to 86400), then print a summary:\n"
           "                     samples, threads, missed, top functions (sampling goes on)\n"
           "  --mode cpu|wall    cpu (default): each thread is sampled by its own CPU time;\n"
           "                     wall: every Python thread at the rate, sleeping ones too\n"
           "                     (on_cpu = 0), native frames only for running ones\n"
           "  --clock C          cpu mode: what interrupts each thread by its CPU time;\n"
           "                     events: a perf event per thread (exact periods at any rate);\n"
           "                     timers: POSIX CPU timers, which the kernel checks at its\n"
           "                     tick (often 250 Hz: faster rates merge, counted as missed);\n"
           "                     auto (default): timers at rates up to half the kernel's\n"
           "                     tick (the default 100 Hz on a 250 Hz kernel), where they\n"
           "                     signal a thread on its way back to its code (x86-64, Linux\n"
           "                     5.9+), else events where the kernel allows them\n"
           "  --stop             stop sampling and print the summary of what was collected\n"
           "\n"
           "Examples:\n"
           "  probing -p 4242 perf --cc --duration 10\n"
           "  probing -p 4242 query \"SELECT thread_name, COUNT(*) FROM perf.samples GROUP BY 1\"\n"
           "  probing -p 4242 perf --stop\n");
}

/* probing/perf with the arguments given (rate 0, mode and clock NULL: left out). */
static cJSON *perf_request(struct dap_client *dc, const char *action, int rate, const char *mode,
                           const char *clock, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", action);
    if (rate > 0)
        cJSON_AddNumberToObject(args, "rate", rate);
    if (mode)
        cJSON_AddStringToObject(args, "mode", mode);
    if (clock)
        cJSON_AddStringToObject(args, "clock", clock);
    if (dap_client_request(dc, "probing/perf", args, &body, err) < 0)
        return NULL;
    return body;
}

cJSON *cli_perf_cc_request(struct dap_client *dc, const char *action, int rate, const char *mode,
                           struct pb_err *err)
{
    return perf_request(dc, action, rate, mode, NULL, err);
}

/* The clock a cpu-mode status names, in words ("" in wall mode or before a start). */
static const char *clock_words(const cJSON *st)
{
    const char *c = cli_json_str(st, "clock");
    if (!c)
        return "";
    if (strcmp(c, "events") == 0)
        return cli_json_true(st, "clockUserOnly") ? ", perf-event clock, user time only"
                                                  : ", perf-event clock";
    return ", CPU-timer clock";
}

/* Auto fell back to timers: why, and what it costs (stdout, after the start's line). */
static void clock_note(const cJSON *st)
{
    const char *why = cli_json_str(st, "clockWhy");
    if (why)
        printf("clock: CPU timers, not perf events (%s): the kernel checks CPU timers at its "
               "tick, so a busy thread is sampled at most once per tick (often 250 a second) "
               "and faster rates count as missed\n",
               why);
}

/* Prints "  NN.N%  name" for each row (name, count) of sql, shares of total. */
static int print_top(struct dap_client *dc, const char *title, const char *sql, double total,
                     struct pb_err *err)
{
    cJSON *body = cli_query(dc, sql, err), *row;
    if (!body)
        return -1;
    printf("%s\n", title);
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(body, "rows"))
    {
        const cJSON *name = cJSON_GetArrayItem(row, 0), *n = cJSON_GetArrayItem(row, 1);
        printf("  %5.1f%%  %s\n",
               total > 0 ? 100.0 * (cJSON_IsNumber(n) ? n->valuedouble : 0) / total : 0.0,
               cJSON_IsString(name) ? name->valuestring : "?");
    }
    cJSON_Delete(body);
    return 0;
}

/* Microseconds of the status counter key per sample (0 without samples). */
static double per_sample(const cJSON *st, const char *key, double samples)
{
    return samples > 0 ? cli_json_num(st, key, 0) * 1e6 / samples : 0;
}

static int summary(struct dap_client *dc, const cJSON *st, struct pb_err *err)
{
    double samples = cli_json_num(st, "samples", 0);
    double started = cli_json_num(st, "started", 0), stopped = cli_json_num(st, "stopped", 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now); /* started/stopped are fractional epoch seconds */
    double span = (stopped > 0 ? stopped : (double)now.tv_sec + now.tv_nsec / 1e9) - started;
    const char *mode = cli_json_str(st, "mode");
    printf("perf --cc: %.0f samples of %.0f threads in %.1f s (%s mode, %.0f Hz%s); %.0f missed, "
           "%.0f lost; sampler CPU %.3f s (handler %.0f us, drain %.0f us per sample)\n",
           samples, cli_json_num(st, "threads", 0), span > 0 ? span : 0, mode ? mode : "?",
           cli_json_num(st, "rate", 0), clock_words(st), cli_json_num(st, "missed", 0),
           cli_json_num(st, "lost", 0), cli_json_num(st, "probeCpuSeconds", 0),
           per_sample(st, "handlerCpuSeconds", samples),
           per_sample(st, "drainCpuSeconds", samples));
    if (samples <= 0)
        return 0;
    char sql[768];
    /* No MATERIALIZED hint (SQLite 3.35): the release's probe links Debian 11's SQLite 3.34.
     * An aggregate or DISTINCT CTE joined by an aggregate query is never flattened into it, so
     * every version computes c and t once, as the hint asked; f, read twice, may be computed
     * twice before 3.35 (once per summary: a few ms). */
    snprintf(sql, sizeof sql,
             "WITH c AS (SELECT stack_id, COUNT(*) AS n FROM perf.samples GROUP BY "
             "stack_id), f AS (SELECT c.stack_id AS sid, c.n AS n, f.depth AS d, " FUNC
             " AS fn FROM c JOIN perf.frames f ON f.stack_id = c.stack_id AND "
             "f.collapsed = 0), leaf AS (SELECT sid, MIN(d) AS d FROM f GROUP BY sid) "
             "SELECT f.fn, SUM(f.n) AS n FROM f JOIN leaf ON leaf.sid = f.sid AND leaf.d = f.d "
             "GROUP BY f.fn ORDER BY n DESC, f.fn LIMIT %d",
             TOP);
    if (print_top(dc, "top functions (self):", sql, samples, err) < 0)
        return -1;
    snprintf(sql, sizeof sql,
             "WITH c AS (SELECT stack_id, COUNT(*) AS n FROM perf.samples GROUP BY "
             "stack_id), t AS (SELECT DISTINCT c.stack_id, " FUNC " AS fn, c.n FROM c "
             "JOIN perf.frames f ON f.stack_id = c.stack_id AND f.collapsed = 0) "
             "SELECT fn, SUM(n) AS n FROM t GROUP BY fn ORDER BY n DESC, fn LIMIT %d",
             TOP);
    return print_top(dc, "top functions (total):", sql, samples, err);
}

int cli_perf_cc_stop(struct dap_client *dc, int *stopped, struct pb_err *err)
{
    cJSON *body = cli_perf_cc_request(dc, "stop", 0, NULL, err);
    int rc = 0;
    if (!body)
        return -1;
    if (cli_json_true(body, "wasRunning")) {
        *stopped = 1;
        printf("perf --cc stopped\n");
        rc = summary(dc, body, err);
    }
    cJSON_Delete(body);
    return rc;
}

int cli_perf_cc_start(struct dap_client *dc, struct pb_err *err)
{
    cJSON *body = cli_perf_cc_request(dc, "start", 0, NULL, err);
    if (!body)
        return -1;
    printf("sampling every thread at %.0f Hz (%s mode%s)\n", cli_json_num(body, "rate", 0),
           cli_json_str(body, "mode") ? cli_json_str(body, "mode") : "?", clock_words(body));
    clock_note(body);
    cJSON_Delete(body);
    return 0;
}

static void progress(double done, double total, double samples)
{
    fprintf(stderr, "\rsampling: %.1f/%.1f s, %.0f samples ", done, total, samples);
    fflush(stderr);
}

static int wait_duration(struct dap_client *dc, double duration, struct pb_err *err)
{
    struct timespec t0, now;
    int tty = isatty(STDERR_FILENO);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
        if (el >= duration)
            break;
        double step = duration - el < 0.5 ? duration - el : 0.5;
        struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
        nanosleep(&ts, NULL);
        if (tty) {
            cJSON *st = cli_perf_cc_request(dc, "status", 0, NULL, err);
            if (!st)
                return -1;
            progress(el + step, duration, cli_json_num(st, "samples", 0));
            cJSON_Delete(st);
        }
    }
    if (tty)
        fprintf(stderr, "\r%60s\r", "");
    return 0;
}

int cli_perf_cc(const struct cli_opts *o, int argc, char **argv)
{
    int rate = 0, stop = 0;
    double duration = 0;
    const char *mode = NULL, *clock = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char *end;
        if (strcmp(a, "--cc") == 0)
            continue;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return CLI_OK;
        }
        if (strcmp(a, "--stop") == 0) {
            stop = 1;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
        int is_rate = kl == 6 && strncmp(a, "--rate", 6) == 0;
        int is_dur = kl == 10 && strncmp(a, "--duration", 10) == 0;
        int is_mode = kl == 6 && strncmp(a, "--mode", 6) == 0;
        int is_clock = kl == 7 && strncmp(a, "--clock", 7) == 0;
        if (!is_rate && !is_dur && !is_mode && !is_clock) {
            cli_error("perf --cc: unknown option '%s': see 'probing perf --cc --help'", a);
            return CLI_USAGE;
        }
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        if (!val || !*val) {
            cli_error("perf --cc: %.*s needs a value: see 'probing perf --cc --help'", (int)kl, a);
            return CLI_USAGE;
        }
        if (is_rate) {
            long v = strtol(val, &end, 10);
            if (*end || v < 1 || v > 1000) {
                cli_error("perf --cc: --rate '%s': expected an integer from 1 to 1000 (samples "
                          "per second)",
                          val);
                return CLI_USAGE;
            }
            rate = (int)v;
        } else if (is_dur) {
            double v = strtod(val, &end);
            if (*end || !(v >= 0.1 && v <= 86400)) {
                cli_error("perf --cc: --duration '%s': expected seconds from 0.1 to 86400", val);
                return CLI_USAGE;
            }
            duration = v;
        } else if (is_clock) {
            if (strcmp(val, "auto") != 0 && strcmp(val, "events") != 0 &&
                strcmp(val, "timers") != 0) {
                cli_error("perf --cc: --clock '%s': expected auto, events or timers", val);
                return CLI_USAGE;
            }
            clock = val;
        } else {
            if (strcmp(val, "cpu") != 0 && strcmp(val, "wall") != 0) {
                cli_error("perf --cc: --mode '%s': expected cpu or wall", val);
                return CLI_USAGE;
            }
            mode = val;
        }
    }
    if (clock && mode && strcmp(mode, "wall") == 0) {
        cli_error("perf --cc: --clock is for cpu mode only (wall mode is paced by the sampler's "
                  "own thread)");
        return CLI_USAGE;
    }
    if (stop && (rate || duration > 0 || mode || clock)) {
        cli_error("perf --cc: --stop takes no other option");
        return CLI_USAGE;
    }
    if (stop)
        return CLI_PERF_STOP;
    struct dap_client dc;
    struct pb_err err = {0};
    int rc = CLI_OK;
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    cJSON *st = perf_request(&dc, "start", rate, mode, clock, &err);
    if (!st) {
        cli_error("perf --cc: %s", err.msg);
        cli_disconnect(&dc);
        return CLI_FAIL;
    }
    if (duration <= 0) {
        printf("sampling every thread at %.0f Hz (%s mode%s); stop with 'probing -p %d perf "
               "--stop'; see the samples with 'probing -p %d flamegraph' or the perf.* tables\n",
               cli_json_num(st, "rate", 0),
               cli_json_str(st, "mode") ? cli_json_str(st, "mode") : "?", clock_words(st),
               (int)o->target.pid, (int)o->target.pid);
        clock_note(st);
        cJSON_Delete(st);
        cli_disconnect(&dc);
        return CLI_OK;
    }
    clock_note(st);
    cJSON_Delete(st);
    st = NULL;
    if (wait_duration(&dc, duration, &err) < 0 ||
        !(st = cli_perf_cc_request(&dc, "status", 0, NULL, &err)) || summary(&dc, st, &err) < 0) {
        cli_error("perf --cc: %s", err.msg);
        rc = CLI_FAIL;
    } else {
        printf("sampling goes on: 'probing -p %d perf --stop' ends it\n", (int)o->target.pid);
    }
    cJSON_Delete(st);
    cli_disconnect(&dc);
    return rc;
}
