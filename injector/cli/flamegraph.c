/* SPDX-License-Identifier: MIT */
/* `probing -p PID flamegraph [-o FILE] [--format svg|folded|speedscope] ...`: the profile that
 * `perf --cc` collected (running or stopped), read through probing/query from the perf.samples
 * and perf.stacks tables (docs/tables.md), rendered by flame_*.c (flame.h). Stacks are read
 * aggregated per (thread, stack) in pages ordered by that key, so query.max_rows and
 * query.max_bytes never cut the profile: a page they cut is simply followed by the next.
 * docs/flamegraph.md shows real output. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "injector/render/flame.h"

enum { FMT_SVG, FMT_FOLDED, FMT_SPEEDSCOPE };
#define PAGE_ROWS 5000

static void help(void)
{
    printf("usage: probing -p PID flamegraph [-o FILE] [--format svg|folded|speedscope]\n"
           "                 [--thread TID] [--since SECONDS] [--mode cpu|wall]\n"
           "                 [--title TEXT] [--width PIXELS] [--native=all]\n"
           "\n"
           "Render the samples 'probing -p PID perf --cc' collected (while it runs or after\n"
           "'perf --stop') as a flame graph. Python frames and native frames are merged in one\n"
           "stack, callers above callees: the native frames of extensions and libraries where\n"
           "they were called, CPython's own frames (eval loop, call machinery, unnamed\n"
           "interpreter frames) and the start-up at the root left out.\n"
           "\n"
           "  -o, --output FILE   write to FILE (default: stdout; an SVG asked for on a\n"
           "                      terminal goes to flamegraph-PID.svg instead)\n"
           "  -f, --format F      svg (default; interactive: click to zoom, search box),\n"
           "                      folded ('a;b;c 12' lines, for flamegraph.pl, inferno...) or\n"
           "                      speedscope (JSON for https://www.speedscope.app, one profile\n"
           "                      per thread). Default from FILE's extension: .folded/.txt,\n"
           "                      .json/.speedscope, else svg\n"
           "      --thread TID    only thread TID (the native id, as 'debug --dump' shows)\n"
           "      --since S       only the last S seconds of the profile (before its last sample)\n"
           "      --mode cpu|wall only samples taken in that mode\n"
           "      --title TEXT    the SVG's title (default: \"probing PID: N samples\")\n"
           "      --width PX      the SVG's width in pixels (default 1200)\n"
           "      --native=all    keep every native frame, CPython's own and the start-up too\n"
           "\n"
           "Example: probing -p 4242 perf --cc --duration 5 && probing -p 4242 flamegraph -o cpu.svg\n");
}

struct fg_opts {
    const char *out, *title, *mode;
    int fmt, fmt_set, width, all;
    long long thread;
    double since;
};

static int parse_format(const char *s)
{
    return strcmp(s, "svg") == 0 ? FMT_SVG : strcmp(s, "folded") == 0 ? FMT_FOLDED
           : strcmp(s, "speedscope") == 0 ? FMT_SPEEDSCOPE : -1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const cJSON *cell(const cJSON *row, int i)
{
    return cJSON_GetArrayItem(row, i);
}

/* The filter every query shares, from the options and the profile's last timestamp (samples
 * taken while the pages are read are left out, so the pages agree with each other). */
static void where(const struct fg_opts *o, double last_ts, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "s.ts <= %.17g", last_ts); /* exact: no sample cut */
    if (o->thread > 0)
        k += (size_t)snprintf(buf + k, n - k, " AND s.thread_id = %lld", o->thread);
    if (o->since > 0)
        k += (size_t)snprintf(buf + k, n - k, " AND s.ts >= %.17g", last_ts - o->since);
    if (o->mode)
        snprintf(buf + k, n - k, " AND s.mode = '%s'", o->mode); /* cpu or wall: checked */
}

/* Read every (thread, stack) with its sample count into t, page by page (a page cut by
 * query.max_rows/max_bytes is followed by the next, keyed on its last row). Returns the number
 * of samples, or -1 with err filled ("flamegraph: ..."). */
static long long load(struct dap_client *dc, const struct fg_opts *o, double last_ts,
                      struct flame_tree *t, struct pb_err *err)
{
    char filt[256], sql[1024];
    where(o, last_ts, filt, sizeof filt);
    long long last_tid = 0, last_sid = 0, samples = 0;
    int first = 1;
    for (;;) {
        char key[160] = "";
        if (!first)
            snprintf(key, sizeof key, " AND (s.thread_id > %lld OR (s.thread_id = %lld AND "
                     "s.stack_id > %lld))", last_tid, last_tid, last_sid);
        snprintf(sql, sizeof sql,
                 "SELECT s.thread_id, MAX(s.thread_name), s.stack_id, MAX(st.%s), COUNT(*) "
                 "FROM perf.samples s JOIN perf.stacks st ON st.stack_id = s.stack_id "
                 "WHERE %s%s GROUP BY s.thread_id, s.stack_id "
                 "ORDER BY s.thread_id, s.stack_id LIMIT %d",
                 o->all ? "folded_all" : "folded", filt, key, PAGE_ROWS);
        struct pb_err qerr = {0};
        cJSON *body = cli_query(dc, sql, &qerr);
        if (!body) {
            pb_err_set(err, qerr.code, "flamegraph: %s", qerr.msg);
            return -1;
        }
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows"), *row;
        int nrows = cJSON_GetArraySize(rows);
        int cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "truncated"));
        cJSON_ArrayForEach(row, rows)
        {
            const cJSON *folded = cell(row, 3), *name = cell(row, 1);
            last_tid = cJSON_IsNumber(cell(row, 0)) ? (long long)cell(row, 0)->valuedouble : 0;
            last_sid = cJSON_IsNumber(cell(row, 2)) ? (long long)cell(row, 2)->valuedouble : 0;
            unsigned long long n =
                cJSON_IsNumber(cell(row, 4)) ? (unsigned long long)cell(row, 4)->valuedouble : 0;
            if (!cJSON_IsString(folded))
                continue; /* a sample whose stack is gone: nothing to draw */
            /* C++ names the target could not demangle (no libstdc++ of its own loaded) */
            char *dem = cli_demangle_folded(folded->valuestring);
            int added = flame_tree_add(t, last_tid, cJSON_IsString(name) ? name->valuestring
                                                                          : NULL,
                                       dem ? dem : folded->valuestring, n);
            free(dem);
            if (added < 0) {
                cJSON_Delete(body);
                pb_err_set(err, -ENOMEM, "flamegraph: out of memory");
                return -1;
            }
            samples += (long long)n;
        }
        cJSON_Delete(body);
        if (cut) {
            if (nrows == 0) {
                pb_err_set(err, PB_EUNKNOWN, "flamegraph: one stack is larger than "
                           "query.max_bytes: raise it with 'probing -p PID config "
                           "query.max_bytes=N'");
                return -1;
            }
        } else if (nrows < PAGE_ROWS) {
            return samples;
        }
        first = 0;
    }
}

/* Samples the sampler recorded but could not keep (probing/perf status "lost"), 0 when it
 * cannot tell. */
static long long sampler_lost(struct dap_client *dc)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", "status");
    if (dap_client_request(dc, "probing/perf", args, &body, &err) < 0)
        return 0;
    long long lost = (long long)cli_json_num(body, "lost", 0);
    cJSON_Delete(body);
    return lost;
}

static int render(const struct flame_tree *t, const struct fg_opts *o, const char *title,
                  const char *subtitle, FILE *f)
{
    if (o->fmt == FMT_FOLDED)
        return flame_write_folded(t, f);
    if (o->fmt == FMT_SPEEDSCOPE)
        return flame_write_speedscope(t, title, f);
    struct flame_svg_opts so = {title, subtitle, o->width, -1};
    return flame_write_svg(t, &so, f);
}

static int parse_args(int argc, char **argv, struct fg_opts *o)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"format", required_argument, 0, 'f'},
        {"thread", required_argument, 0, 'T'}, {"since", required_argument, 0, 's'},
        {"mode", required_argument, 0, 'm'},   {"title", required_argument, 0, 't'},
        {"width", required_argument, 0, 'w'},  {"help", no_argument, 0, 'h'},
        {"native", optional_argument, 0, 'n'}, {0, 0, 0, 0}};
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "o:f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case 'f':
            if ((o->fmt = parse_format(optarg)) < 0) {
                cli_error("flamegraph: --format '%s': expected svg, folded or speedscope", optarg);
                return CLI_USAGE;
            }
            o->fmt_set = 1;
            break;
        case 'T':
            o->thread = strtoll(optarg, &end, 10);
            if (*end || o->thread <= 0) {
                cli_error("flamegraph: --thread '%s': expected a native thread id", optarg);
                return CLI_USAGE;
            }
            break;
        case 's':
            o->since = strtod(optarg, &end);
            if (*end || !(o->since > 0)) {
                cli_error("flamegraph: --since '%s': expected a number of seconds > 0", optarg);
                return CLI_USAGE;
            }
            break;
        case 'm':
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "wall") != 0) {
                cli_error("flamegraph: --mode '%s': expected cpu or wall", optarg);
                return CLI_USAGE;
            }
            o->mode = optarg;
            break;
        case 't': o->title = optarg; break;
        case 'n':
            if (optarg && strcmp(optarg, "all") != 0) {
                cli_error("flamegraph: --native=%s: expected --native=all (every native frame) "
                          "or --native (the default)", optarg);
                return CLI_USAGE;
            }
            o->all = optarg != NULL;
            break;
        case 'w':
            o->width = (int)strtol(optarg, &end, 10);
            if (*end || o->width < 200 || o->width > 100000) {
                cli_error("flamegraph: --width '%s': expected 200 to 100000 pixels", optarg);
                return CLI_USAGE;
            }
            break;
        case 'h': help(); return -1;
        default: return cli_bad_option("flamegraph", argv);
        }
    }
    if (optind < argc) {
        cli_error("flamegraph: unexpected argument '%s': see 'probing flamegraph --help'",
                  argv[optind]);
        return CLI_USAGE;
    }
    if (!o->fmt_set && o->out) {
        if (ends_with(o->out, ".folded") || ends_with(o->out, ".txt"))
            o->fmt = FMT_FOLDED;
        else if (ends_with(o->out, ".json") || ends_with(o->out, ".speedscope"))
            o->fmt = FMT_SPEEDSCOPE;
    }
    return 0;
}

/* Title, subtitle, destination, rendering, and the "wrote" line. Returns 0, or -1 after
 * printing the error. */
static int write_output(const struct flame_tree *t, const struct fg_opts *o, pid_t pid,
                        long long n, double first_ts, double last_ts, const char *modes)
{
    char defname[64], title[512], subtitle[512], ta[32], tb[32];
    if (pid > 0)
        snprintf(title, sizeof title, "probing %d: %lld samples", (int)pid, n);
    else
        snprintf(title, sizeof title, "probing: %lld samples", n);
    double span = o->since > 0 && o->since < last_ts - first_ts ? o->since : last_ts - first_ts;
    time_t a = (time_t)(last_ts - span), b = (time_t)last_ts;
    struct tm tm;
    strftime(ta, sizeof ta, "%Y-%m-%d %H:%M:%S", localtime_r(&a, &tm));
    strftime(tb, sizeof tb, "%H:%M:%S", localtime_r(&b, &tm));
    snprintf(subtitle, sizeof subtitle, "%s mode, %zu thread%s, %s to %s",
             o->mode ? o->mode : modes[0] ? modes : "?", t->nthreads,
             t->nthreads == 1 ? "" : "s", ta, tb);

    const char *path = o->out;
    if (!path && o->fmt == FMT_SVG && isatty(STDOUT_FILENO)) {
        if (pid > 0)
            snprintf(defname, sizeof defname, "flamegraph-%d.svg", (int)pid);
        else
            snprintf(defname, sizeof defname, "flamegraph.svg");
        path = defname;
    }
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        cli_error("flamegraph: cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int wr = render(t, o, o->title ? o->title : title, subtitle, f);
    if (path ? fclose(f) != 0 : fflush(f) != 0)
        wr = -1;
    if (wr < 0) {
        cli_error("flamegraph: writing %s failed: %s", path ? path : "stdout", strerror(errno));
        return -1;
    }
    if (path)
        printf("wrote %s: %lld samples, %zu stacks, %zu thread%s\n", path, n, t->nstacks,
               t->nthreads, t->nthreads == 1 ? "" : "s");
    return 0;
}

int cli_cmd_flamegraph(const struct cli_opts *co, int argc, char **argv)
{
    struct fg_opts o = {0};
    o.fmt = FMT_SVG;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return CLI_OK; /* --help */
    if (rc)
        return rc;
    pid_t pid = co->target.pid;

    struct dap_client dc;
    if (cli_open(co, &dc) < 0)
        return CLI_FAIL;
    /* Wait as long as the probe may take on a query (it interrupts at query.timeout_ms). */
    struct pb_err err = {0};
    cli_query_wait(&dc, co->timeout_ms);
    cJSON *body;

    struct flame_tree t;
    flame_tree_init(&t);
    rc = CLI_FAIL;
    body = cli_query(&dc, "SELECT COUNT(*), MIN(ts), MAX(ts), GROUP_CONCAT(DISTINCT mode), "
                      "(SELECT GROUP_CONCAT(thread_id, ', ') FROM (SELECT DISTINCT thread_id "
                      "FROM perf.samples ORDER BY thread_id LIMIT 20)) FROM perf.samples", &err);
    if (!body) {
        if (strstr(err.msg, "no such table"))
            cli_error("flamegraph: this probe has no perf tables (%s): update probing", err.msg);
        else
            cli_error("flamegraph: %s", err.msg);
        goto out;
    }
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "rows"), 0);
    double total = cJSON_IsNumber(cell(row, 0)) ? cell(row, 0)->valuedouble : 0;
    double first_ts = cJSON_IsNumber(cell(row, 1)) ? cell(row, 1)->valuedouble : 0;
    double last_ts = cJSON_IsNumber(cell(row, 2)) ? cell(row, 2)->valuedouble : 0;
    char modes[32] = "", threads[256] = "";
    if (cJSON_IsString(cell(row, 3)))
        snprintf(modes, sizeof modes, "%s", cell(row, 3)->valuestring);
    if (cJSON_IsString(cell(row, 4)))
        snprintf(threads, sizeof threads, "%s", cell(row, 4)->valuestring);
    cJSON_Delete(body);
    if (total <= 0) {
        if (pid > 0)
            cli_error("flamegraph: no samples in process %d: run 'probing -p %d perf --cc' "
                      "first", (int)pid, (int)pid);
        else
            cli_error("flamegraph: no samples: run 'probing perf --cc' on the target first");
        goto out;
    }
    long long n = load(&dc, &o, last_ts, &t, &err);
    if (n < 0) {
        cli_error("%s", err.msg);
        goto out;
    }
    if (n == 0) {
        char what[160] = "";
        size_t k = 0;
        if (o.thread > 0)
            k += (size_t)snprintf(what + k, sizeof what - k, " for thread %lld", o.thread);
        if (o.mode)
            k += (size_t)snprintf(what + k, sizeof what - k, " in mode %s", o.mode);
        if (o.since > 0)
            snprintf(what + k, sizeof what - k, " in the last %g s", o.since);
        cli_error("flamegraph: no samples%s: the profile has %.0f %s sample%s over %.1f s, of "
                  "thread%s %s", what, total, modes[0] ? modes : "?", total == 1 ? "" : "s",
                  last_ts - first_ts, strchr(threads, ',') ? "s" : "", threads);
        goto out;
    }
    flame_tree_sort(&t);
    long long lost = sampler_lost(&dc);

    if (write_output(&t, &o, pid, n, first_ts, last_ts, modes) < 0)
        goto out;
    if (lost > 0)
        fprintf(stderr, "probing: note: the sampler dropped %lld samples (perf.max_samples "
                "reached, or its buffers were full): the profile holds the %.0f it kept\n",
                lost, total);
    rc = CLI_OK;
out:
    flame_tree_close(&t);
    cli_disconnect(&dc);
    return rc;
}

int cli_flamegraph_write(struct dap_client *dc, pid_t pid, const char *format, FILE *f,
                         struct pb_err *err)
{
    struct fg_opts o = {0};
    if ((o.fmt = parse_format(format)) < 0)
        return pb_err_set(err, PB_EUSAGE, "format '%s': expected svg, folded or speedscope",
                          format);
    cJSON *body = cli_query(dc, "SELECT COUNT(*), MIN(ts), MAX(ts), GROUP_CONCAT(DISTINCT mode) "
                            "FROM perf.samples", err);
    if (!body)
        return -1;
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "rows"), 0);
    double total = cJSON_IsNumber(cell(row, 0)) ? cell(row, 0)->valuedouble : 0;
    double first_ts = cJSON_IsNumber(cell(row, 1)) ? cell(row, 1)->valuedouble : 0;
    double last_ts = cJSON_IsNumber(cell(row, 2)) ? cell(row, 2)->valuedouble : 0;
    char modes[32] = "?", title[128], subtitle[128];
    if (cJSON_IsString(cell(row, 3)))
        snprintf(modes, sizeof modes, "%s", cell(row, 3)->valuestring);
    cJSON_Delete(body);
    if (total <= 0)
        return pb_err_set(err, -ENOENT, "no samples in process %d: start perf first",
                          (int)pid);
    struct flame_tree t;
    flame_tree_init(&t);
    long long n = load(dc, &o, last_ts, &t, err);
    int rc = -1;
    if (n >= 0) {
        flame_tree_sort(&t);
        snprintf(title, sizeof title, "probing %d: %lld samples", (int)pid, n);
        snprintf(subtitle, sizeof subtitle, "%s mode, %zu thread%s, %.1f s", modes, t.nthreads,
                 t.nthreads == 1 ? "" : "s", last_ts - first_ts);
        rc = render(&t, &o, title, subtitle, f);
        if (rc < 0)
            pb_err_set(err, -EIO, "flamegraph: writing failed");
    }
    flame_tree_close(&t);
    return rc;
}
