/* SPDX-License-Identifier: MIT */
/* `probing -p PID flamegraph [-o FILE] [--format svg|folded|speedscope|chrometrace|pprof] ...`:
 * the profile that `perf --cc` collected (running or stopped), read through probing/query from
 * the perf.samples and perf.stacks tables (docs/tables.md), rendered by flame_*.c (flame.h),
 * or as pprof by the CLI's private library (ext.h: protobuf-c). Stacks are read aggregated per
 * (thread, stack) in pages ordered by that key, so query.max_rows and query.max_bytes never
 * cut the profile: a page they cut is simply followed by the next; chrometrace reads the
 * samples' times too, (thread, time, stack) pages likewise. `record` (record.c) renders
 * through cli_fg_render too. docs/flamegraph.md shows real output. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "injector/render/flame.h"

enum {
    FMT_SVG = CLI_FG_SVG,
    FMT_FOLDED = CLI_FG_FOLDED,
    FMT_SPEEDSCOPE = CLI_FG_SPEEDSCOPE,
    FMT_CHROME = CLI_FG_CHROME,
    FMT_PPROF = CLI_FG_PPROF
};
#define PAGE_ROWS 5000

static void help(void)
{
    printf(
        "usage: probing -p PID flamegraph [-o FILE] [--format FORMAT]\n"
        "                 [--thread TID] [--since SECONDS] [--mode cpu|wall]\n"
        "                 [--title TEXT] [--width PIXELS] [--native=all]\n"
        "                 [--gil] [--idle] [--window FROM:TO]\n"
        "                 [--diff BEFORE.folded | --diff-window FROM:TO]\n"
        "\n"
        "Render the samples 'probing -p PID perf --cc' collected (while it runs or after\n"
        "'perf --stop') as a flame graph. Python frames and native frames are merged in one\n"
        "stack, callers above callees: the native frames of extensions and libraries where\n"
        "they were called, CPython's own frames (eval loop, call machinery, unnamed\n"
        "interpreter frames) and the start-up at the root left out.\n"
        "\n"
        "  -o, --output FILE   write to FILE (default: stdout; an SVG or pprof asked for\n"
        "                      on a terminal goes to flamegraph-PID.svg/.pb.gz instead)\n"
        "  -f, --format F      svg (default; interactive: click to zoom, search box),\n"
        "                      folded ('a;b;c 12' lines, for flamegraph.pl, inferno...),\n"
        "                      speedscope (JSON for https://www.speedscope.app, one profile\n"
        "                      per thread), chrometrace (a per-thread timeline, Chrome trace\n"
        "                      JSON for https://ui.perfetto.dev) or pprof (gzip'd\n"
        "                      profile.proto for go tool pprof, Pyroscope, Parca).\n"
        "                      Default from FILE's extension: .folded/.txt folded,\n"
        "                      .trace.json/.trace chrometrace, .pb.gz/.pprof/.pb pprof,\n"
        "                      .json/.speedscope speedscope, else svg\n"
        "      --thread TID    only thread TID (the native id, as 'debug --dump' shows)\n"
        "      --since S       only the last S seconds of the profile (before its last sample)\n"
        "      --window A:B    only the samples taken A to B seconds after the profile's\n"
        "                      first ('30:' from 30 s on, ':60' the first minute)\n"
        "      --mode cpu|wall only samples taken in that mode\n"
        "      --gil           only samples where the thread held the GIL: what the GIL is\n"
        "                      busy with\n"
        "      --idle          also the samples of threads off the CPU (wall mode: sleeping,\n"
        "                      waiting), left out by default as py-spy does\n"
        "      --title TEXT    the SVG's title (default: \"probing PID: N samples\")\n"
        "      --width PX      the SVG's width in pixels (default 1200)\n"
        "      --native=all    keep every native frame, CPython's own and the start-up too\n"
        "      --diff BEFORE   a differential flame graph: this profile's shape, each frame\n"
        "                      red where its share of the samples grew since BEFORE (folded\n"
        "                      stacks, as '-f folded' wrote them earlier), blue where it\n"
        "                      shrank\n"
        "      --diff-window A:B  a differential flame graph against the samples taken A to\n"
        "                      B seconds after the profile's first, of this same profile:\n"
        "                      what changed since then (this side: --window, else from B\n"
        "                      on), without a restart or a file kept from before\n"
        "\n"
        "Example: probing -p 4242 perf --cc --duration 5 && probing -p 4242 flamegraph -o cpu.svg\n"
        "('probing -p PID record -o FILE' samples, waits and renders in one command.)\n"
        "Example: probing -p 4242 flamegraph --diff-window 0:60 -o changed.svg  (the first\n"
        "minute against everything since)\n");
}

#define fg_opts cli_fg_opts

int cli_fg_format(const char *s)
{
    return strcmp(s, "svg") == 0           ? FMT_SVG
           : strcmp(s, "folded") == 0      ? FMT_FOLDED
           : strcmp(s, "speedscope") == 0  ? FMT_SPEEDSCOPE
           : strcmp(s, "chrometrace") == 0 ? FMT_CHROME
           : strcmp(s, "pprof") == 0       ? FMT_PPROF
                                           : -1;
}
#define parse_format cli_fg_format

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static const cJSON *cell(const cJSON *row, int i)
{
    return cJSON_GetArrayItem(row, i);
}

/* " from A s to B s" (of the profile), or " from A s on", for messages; the length written. */
static size_t window_text(const double w[2], char *buf, size_t n)
{
    int k = isfinite(w[1]) ? snprintf(buf, n, " from %g s to %g s", w[0], w[1])
                           : snprintf(buf, n, " from %g s on", w[0]);
    return k < 0 ? 0 : (size_t)k >= n ? n - 1 : (size_t)k;
}

/* --window's FROM:TO (seconds after the profile's first sample; either may be left out). */
static int parse_window(const char *cmd, const char *opt, const char *arg, double w[2])
{
    const char *colon = strchr(arg, ':');
    char *end;
    w[0] = 0;
    w[1] = INFINITY;
    if (!colon)
        goto bad;
    if (colon != arg) {
        w[0] = strtod(arg, &end);
        if (end != colon || !(w[0] >= 0) || !isfinite(w[0]))
            goto bad;
    }
    if (colon[1]) {
        w[1] = strtod(colon + 1, &end);
        if (*end || !(w[1] > w[0]) || !isfinite(w[1]))
            goto bad;
    }
    return 0;
bad:
    cli_error("%s: %s '%s': expected FROM:TO, seconds after the profile's first sample "
              "(FROM < TO, either may be left out: '30:', ':60')",
              cmd, opt, arg);
    return CLI_USAGE;
}

/* The filter every query shares, from the options and the profile's last timestamp (samples
 * taken while the pages are read are left out, so the pages agree with each other). */
static void where(const struct fg_opts *o, double first_ts, double last_ts, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "s.ts <= %.17g", last_ts); /* exact: no sample cut */
    if (o->win_set) {
        k += (size_t)snprintf(buf + k, n - k, " AND s.ts >= %.17g", first_ts + o->win[0]);
        if (isfinite(o->win[1]))
            k += (size_t)snprintf(buf + k, n - k, " AND s.ts < %.17g", first_ts + o->win[1]);
    }
    if (o->thread > 0)
        k += (size_t)snprintf(buf + k, n - k, " AND s.thread_id = %lld", o->thread);
    if (o->since > 0)
        k += (size_t)snprintf(buf + k, n - k, " AND s.ts >= %.17g", last_ts - o->since);
    if (o->after > 0)
        k += (size_t)snprintf(buf + k, n - k, " AND s.ts > %.17g", o->after);
    if (o->gil)
        k += (size_t)snprintf(buf + k, n - k, " AND s.gil = 1");
    if (!o->idle)
        k += (size_t)snprintf(buf + k, n - k, " AND s.on_cpu = 1");
    if (o->mode)
        snprintf(buf + k, n - k, " AND s.mode = '%s'", o->mode); /* cpu or wall: checked */
}

/* Read every (thread, stack) with its sample count into t, page by page (a page cut by
 * query.max_rows/max_bytes is followed by the next, keyed on its last row). Returns the number
 * of samples, or -1 with err filled ("flamegraph: ..."). */
static long long load(struct dap_client *dc, const struct fg_opts *o, double first_ts,
                      double last_ts, struct flame_tree *t, struct pb_err *err)
{
    char filt[384], sql[1152];
    where(o, first_ts, last_ts, filt, sizeof filt);
    long long last_tid = 0, last_sid = 0, samples = 0;
    int first = 1;
    for (;;) {
        char key[160] = "";
        if (!first)
            snprintf(key, sizeof key,
                     " AND (s.thread_id > %lld OR (s.thread_id = %lld AND "
                     "s.stack_id > %lld))",
                     last_tid, last_tid, last_sid);
        snprintf(sql, sizeof sql,
                 "SELECT s.thread_id, MAX(s.thread_name), s.stack_id, MAX(st.%s), COUNT(*) "
                 "FROM perf.samples s JOIN perf.stacks st ON st.stack_id = s.stack_id "
                 "WHERE %s%s GROUP BY s.thread_id, s.stack_id "
                 "ORDER BY s.thread_id, s.stack_id LIMIT %d",
                 o->all ? "folded_all" : "folded", filt, key, PAGE_ROWS);
        struct pb_err qerr = {0};
        cJSON *body = cli_query(dc, sql, &qerr);
        if (!body) {
            pb_err_set(err, qerr.code, "%s: %s", o->cmd, qerr.msg);
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
            int added =
                flame_tree_add_id(t, last_tid, cJSON_IsString(name) ? name->valuestring : NULL,
                                  last_sid, dem ? dem : folded->valuestring, n);
            free(dem);
            if (added < 0) {
                cJSON_Delete(body);
                pb_err_set(err, -ENOMEM, "%s: out of memory", o->cmd);
                return -1;
            }
            samples += (long long)n;
        }
        cJSON_Delete(body);
        if (cut) {
            if (nrows == 0) {
                pb_err_set(err, PB_EUNKNOWN,
                           "%s: one stack is larger than "
                           "query.max_bytes: raise it with 'probing -p PID config "
                           "query.max_bytes=N'",
                           o->cmd);
                return -1;
            }
        } else if (nrows < PAGE_ROWS) {
            return samples;
        }
        first = 0;
    }
}

/* Every sample's (thread, time, stack) in the filter, in (thread, time) order, as ticks into
 * t's stacks (which load() filled, ordered by thread and stack id), paged like load(). Returns
 * the number of ticks, or -1 with err filled. */
static long long load_ticks(struct dap_client *dc, const struct fg_opts *o, double first_ts,
                            double last_ts, const struct flame_tree *t, struct flame_tick **out,
                            struct pb_err *err)
{
    char filt[384], sql[1152];
    where(o, first_ts, last_ts, filt, sizeof filt);
    long long last_tid = 0, last_sid = 0;
    double last_at = 0;
    size_t n = 0, cap = 0;
    struct flame_tick *v = NULL;
    int first = 1;
    for (;;) {
        char key[256] = "";
        if (!first)
            snprintf(key, sizeof key,
                     " AND (s.thread_id > %lld OR (s.thread_id = %lld AND "
                     "(s.ts > %.17g OR (s.ts = %.17g AND s.stack_id > %lld))))",
                     last_tid, last_tid, last_at, last_at, last_sid);
        snprintf(sql, sizeof sql,
                 "SELECT s.thread_id, s.ts, s.stack_id FROM perf.samples s WHERE %s%s "
                 "GROUP BY s.thread_id, s.ts, s.stack_id ORDER BY s.thread_id, s.ts, s.stack_id "
                 "LIMIT %d",
                 filt, key, PAGE_ROWS);
        struct pb_err qerr = {0};
        cJSON *body = cli_query(dc, sql, &qerr);
        if (!body) {
            pb_err_set(err, qerr.code, "%s: %s", o->cmd, qerr.msg);
            free(v);
            return -1;
        }
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows"), *row;
        int nrows = cJSON_GetArraySize(rows);
        int cut = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "truncated"));
        cJSON_ArrayForEach(row, rows)
        {
            last_tid = cJSON_IsNumber(cell(row, 0)) ? (long long)cell(row, 0)->valuedouble : 0;
            last_at = cJSON_IsNumber(cell(row, 1)) ? cell(row, 1)->valuedouble : 0;
            last_sid = cJSON_IsNumber(cell(row, 2)) ? (long long)cell(row, 2)->valuedouble : 0;
            long k = flame_tree_find(t, last_tid, last_sid);
            if (k < 0)
                continue; /* a stack load() left out (gone, or empty) */
            if (n == cap) {
                cap = cap ? cap * 2 : 4096;
                struct flame_tick *w = realloc(v, cap * sizeof *w);
                if (!w) {
                    cJSON_Delete(body);
                    free(v);
                    pb_err_set(err, -ENOMEM, "%s: out of memory", o->cmd);
                    return -1;
                }
                v = w;
            }
            v[n++] = (struct flame_tick){(size_t)k, last_at};
        }
        cJSON_Delete(body);
        if ((!cut && nrows < PAGE_ROWS) || nrows == 0)
            break;
        first = 0;
    }
    *out = v;
    return (long long)n;
}

/* The sampler's status: samples it could not keep ("lost", 0 when it cannot tell) and its
 * rate (0 when unknown). */
static void sampler_status(struct dap_client *dc, long long *lost, double *rate)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", "status");
    *lost = 0;
    *rate = 0;
    if (dap_client_request(dc, "probing/perf", args, &body, &err) < 0)
        return;
    *lost = (long long)cli_json_num(body, "lost", 0);
    *rate = cli_json_num(body, "rate", 0);
    cJSON_Delete(body);
}

/* What one rendering needs besides the tree. */
struct fg_render {
    const char *title, *subtitle, *modes;
    const struct flame_tick *ticks;
    size_t nticks;
    double first_ts, last_ts, period;
    pid_t pid;
};

static int render(const struct flame_tree *t, const struct fg_opts *o, const struct fg_render *r,
                  FILE *f, struct pb_err *err)
{
    int rc;
    if (o->fmt == FMT_FOLDED)
        rc = flame_write_folded(t, f);
    else if (o->fmt == FMT_SPEEDSCOPE)
        rc = flame_write_speedscope(t, r->title, f);
    else if (o->fmt == FMT_CHROME)
        rc = flame_write_chrometrace(t, r->ticks, r->nticks, r->period, r->pid, r->title, f);
    else if (o->fmt == FMT_PPROF) {
        const struct cli_ext *ext = cli_ext_load(err);
        if (!ext)
            return -1;
        struct cli_pprof_info pi = {r->first_ts, r->last_ts - r->first_ts, r->period,
                                    o->mode ? o->mode : r->modes, r->title};
        return ext->pprof(t, &pi, f, err);
    } else {
        struct flame_svg_opts so = {.title = r->title,
                                    .subtitle = r->subtitle,
                                    .width = o->width,
                                    .minwidth = -1,
                                    .before = o->before};
        rc = flame_write_svg(t, &so, f);
    }
    if (rc < 0)
        pb_err_set(err, -EIO, "writing failed: %s", strerror(errno));
    return rc;
}

void cli_fg_format_guess(struct fg_opts *o)
{
    if (o->fmt_set || !o->out)
        return;
    if (ends_with(o->out, ".folded") || ends_with(o->out, ".txt"))
        o->fmt = FMT_FOLDED;
    else if (ends_with(o->out, ".trace.json") || ends_with(o->out, ".trace"))
        o->fmt = FMT_CHROME;
    else if (ends_with(o->out, ".pb.gz") || ends_with(o->out, ".pprof") || ends_with(o->out, ".pb"))
        o->fmt = FMT_PPROF;
    else if (ends_with(o->out, ".json") || ends_with(o->out, ".speedscope"))
        o->fmt = FMT_SPEEDSCOPE;
}

static int parse_args(int argc, char **argv, struct fg_opts *o)
{
    static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                             {"format", required_argument, 0, 'f'},
                                             {"thread", required_argument, 0, 'T'},
                                             {"since", required_argument, 0, 's'},
                                             {"mode", required_argument, 0, 'm'},
                                             {"title", required_argument, 0, 't'},
                                             {"width", required_argument, 0, 'w'},
                                             {"help", no_argument, 0, 'h'},
                                             {"diff", required_argument, 0, 'D'},
                                             {"native", optional_argument, 0, 'n'},
                                             {"gil", no_argument, 0, 'G'},
                                             {"idle", no_argument, 0, 'I'},
                                             {"window", required_argument, 0, 'W'},
                                             {"diff-window", required_argument, 0, 'X'},
                                             {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "o:f:h", longopts, NULL)) != -1) {
        if (c == 'h') {
            help();
            return -1;
        }
        int r = cli_fg_option(o, c, optarg);
        if (r == 1)
            return cli_bad_option("flamegraph", argv);
        if (r)
            return r;
    }
    if (optind < argc) {
        cli_error("flamegraph: unexpected argument '%s': see 'probing flamegraph --help'",
                  argv[optind]);
        return CLI_USAGE;
    }
    cli_fg_format_guess(o);
    return 0;
}

int cli_fg_option(struct fg_opts *o, int c, const char *arg)
{
    char *end;
    switch (c) {
    case 'o': o->out = arg; break;
    case 'f':
        if ((o->fmt = parse_format(arg)) < 0) {
            cli_error("%s: --format '%s': expected svg, folded, speedscope, chrometrace or pprof",
                      o->cmd, arg);
            return CLI_USAGE;
        }
        o->fmt_set = 1;
        break;
    case 'T':
        o->thread = strtoll(arg, &end, 10);
        if (*end || o->thread <= 0) {
            cli_error("%s: --thread '%s': expected a native thread id", o->cmd, arg);
            return CLI_USAGE;
        }
        break;
    case 's':
        o->since = strtod(arg, &end);
        if (*end || !(o->since > 0)) {
            cli_error("%s: --since '%s': expected a number of seconds > 0", o->cmd, arg);
            return CLI_USAGE;
        }
        break;
    case 'm':
        if (strcmp(arg, "cpu") != 0 && strcmp(arg, "wall") != 0) {
            cli_error("%s: --mode '%s': expected cpu or wall", o->cmd, arg);
            return CLI_USAGE;
        }
        o->mode = arg;
        break;
    case 't': o->title = arg; break;
    case 'D': o->diff = arg; break;
    case 'W':
        if (parse_window(o->cmd, "--window", arg, o->win))
            return CLI_USAGE;
        o->win_set = 1;
        break;
    case 'X':
        if (parse_window(o->cmd, "--diff-window", arg, o->dwin))
            return CLI_USAGE;
        o->dwin_set = 1;
        break;
    case 'G': o->gil = 1; break;
    case 'I': o->idle = 1; break;
    case 'n':
        if (arg && strcmp(arg, "all") != 0) {
            cli_error("%s: --native=%s: expected --native=all (every native frame) or --native "
                      "(the default)",
                      o->cmd, arg);
            return CLI_USAGE;
        }
        o->all = arg != NULL;
        break;
    case 'w':
        o->width = (int)strtol(arg, &end, 10);
        if (*end || o->width < 200 || o->width > 100000) {
            cli_error("%s: --width '%s': expected 200 to 100000 pixels", o->cmd, arg);
            return CLI_USAGE;
        }
        break;
    default: return 1;
    }
    return 0;
}

/* Title, subtitle, destination, rendering, and the "wrote" line. Returns 0, or -1 after
 * printing the error. */
static int write_output(const struct flame_tree *t, const struct fg_opts *o, struct fg_render *r,
                        long long n)
{
    char defname[64], title[512], subtitle[512], ta[32], tb[32];
    pid_t pid = r->pid;
    if (pid > 0)
        snprintf(title, sizeof title, "probing %d: %lld samples", (int)pid, n);
    else
        snprintf(title, sizeof title, "probing: %lld samples", n);
    double span =
        o->since > 0 && o->since < r->last_ts - r->first_ts ? o->since : r->last_ts - r->first_ts;
    time_t a = (time_t)(r->last_ts - span), b = (time_t)r->last_ts;
    struct tm tm;
    strftime(ta, sizeof ta, "%Y-%m-%d %H:%M:%S", localtime_r(&a, &tm));
    strftime(tb, sizeof tb, "%H:%M:%S", localtime_r(&b, &tm));
    if (o->before && o->dwin_set) {
        char wa[96], wb[96];
        window_text(o->win, wa, sizeof wa);
        window_text(o->dwin, wb, sizeof wb);
        snprintf(subtitle, sizeof subtitle,
                 "differential: the samples%s against those%s "
                 "(%llu samples): red grew, blue shrank (share of all samples)",
                 wa, wb, o->before->root.total);
    } else if (o->before)
        snprintf(subtitle, sizeof subtitle,
                 "differential against %.200s (%llu samples): red "
                 "grew, blue shrank (share of all samples)",
                 o->diff, o->before->root.total);
    else
        snprintf(subtitle, sizeof subtitle, "%s mode, %zu thread%s, %s to %s",
                 o->mode       ? o->mode
                 : r->modes[0] ? r->modes
                               : "?",
                 t->nthreads, t->nthreads == 1 ? "" : "s", ta, tb);
    r->title = o->title ? o->title : title;
    r->subtitle = subtitle;

    static const char *const ext[] = {"svg", "folded", "speedscope.json", "trace.json", "pb.gz"};
    const char *path = o->out;
    /* An SVG or a pprof file is no text for a terminal: to a file named after the process. */
    if (!path && (o->fmt == FMT_SVG || o->fmt == FMT_PPROF) && isatty(STDOUT_FILENO)) {
        const char *stem = strcmp(o->cmd, "record") == 0 ? "profile" : "flamegraph";
        if (pid > 0)
            snprintf(defname, sizeof defname, "%s-%d.%s", stem, (int)pid, ext[o->fmt]);
        else
            snprintf(defname, sizeof defname, "%s.%s", stem, ext[o->fmt]);
        path = defname;
    }
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        cli_error("%s: cannot write %s: %s", o->cmd, path, strerror(errno));
        return -1;
    }
    struct pb_err err = {0};
    int wr = render(t, o, r, f, &err);
    if ((path ? fclose(f) != 0 : fflush(f) != 0) && wr == 0) {
        wr = -1;
        pb_err_set(&err, -errno, "%s", strerror(errno));
    }
    if (wr < 0) {
        cli_error("%s: writing %s failed: %s", o->cmd, path ? path : "stdout", err.msg);
        return -1;
    }
    if (path)
        printf("wrote %s: %lld samples, %zu stacks, %zu thread%s\n", path, n, t->nstacks,
               t->nthreads, t->nthreads == 1 ? "" : "s");
    return 0;
}

/* A profile read for rendering: the tree, the timeline's ticks (chrometrace), what the
 * messages and titles say. fg_close frees it. */
struct fg_profile {
    struct flame_tree t;
    struct flame_tick *ticks;
    size_t nticks;
    long long n, lost; /* samples rendered; samples the sampler dropped */
    double total;      /* samples in the profile (or record's window) */
    double first_ts, last_ts, rate;
    char modes[32];
};

static void fg_close(struct fg_profile *p)
{
    free(p->ticks);
    flame_tree_close(&p->t);
}

/* Reads the profile o asks for. 0, or -1 with err filled with one line ("flamegraph: ...";
 * code -ENOENT when there is no sample). */
static int fg_load(struct dap_client *dc, pid_t pid, const struct fg_opts *o, struct fg_profile *p,
                   struct pb_err *err)
{
    memset(p, 0, sizeof *p);
    flame_tree_init(&p->t);
    char filt[256], sql[1024];
    /* The whole profile for the messages, or what follows o->after (record's window). */
    filt[0] = '\0';
    if (o->after > 0)
        snprintf(filt, sizeof filt, "WHERE ts > %.17g", o->after);
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*), MIN(ts), MAX(ts), GROUP_CONCAT(DISTINCT mode), "
             "(SELECT GROUP_CONCAT(thread_id, ', ') FROM (SELECT DISTINCT thread_id "
             "FROM perf.samples %s ORDER BY thread_id LIMIT 20)) FROM perf.samples %s",
             filt, filt);
    struct pb_err qerr = {0};
    cJSON *body = cli_query(dc, sql, &qerr);
    if (!body) {
        if (strstr(qerr.msg, "no such table"))
            return pb_err_set(err, qerr.code,
                              "%s: this probe has no perf tables (%s): update "
                              "probing",
                              o->cmd, qerr.msg);
        return pb_err_set(err, qerr.code, "%s: %s", o->cmd, qerr.msg);
    }
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "rows"), 0);
    p->total = cJSON_IsNumber(cell(row, 0)) ? cell(row, 0)->valuedouble : 0;
    p->first_ts = cJSON_IsNumber(cell(row, 1)) ? cell(row, 1)->valuedouble : 0;
    p->last_ts = cJSON_IsNumber(cell(row, 2)) ? cell(row, 2)->valuedouble : 0;
    char threads[256] = "";
    if (cJSON_IsString(cell(row, 3)))
        snprintf(p->modes, sizeof p->modes, "%s", cell(row, 3)->valuestring);
    if (cJSON_IsString(cell(row, 4)))
        snprintf(threads, sizeof threads, "%s", cell(row, 4)->valuestring);
    cJSON_Delete(body);
    if (p->total <= 0) {
        if (o->after > 0 || strcmp(o->cmd, "record") == 0)
            return pb_err_set(err, -ENOENT,
                              "%s: no samples: no thread of process %d ran while "
                              "recording (cpu mode samples threads using CPU; --mode wall "
                              "samples sleeping ones too)",
                              o->cmd, (int)pid);
        if (pid > 0)
            return pb_err_set(err, -ENOENT,
                              "%s: no samples in process %d: run 'probing -p %d "
                              "perf --cc' first",
                              o->cmd, (int)pid, (int)pid);
        return pb_err_set(err, -ENOENT,
                          "%s: no samples: run 'probing perf --cc' on the target "
                          "first",
                          o->cmd);
    }
    p->n = load(dc, o, p->first_ts, p->last_ts, &p->t, err);
    if (p->n < 0)
        return -1;
    if (p->n == 0) {
        char what[160] = "";
        size_t k = 0;
        if (o->thread > 0)
            k += (size_t)snprintf(what + k, sizeof what - k, " for thread %lld", o->thread);
        if (o->mode)
            k += (size_t)snprintf(what + k, sizeof what - k, " in mode %s", o->mode);
        if (o->since > 0)
            k += (size_t)snprintf(what + k, sizeof what - k, " in the last %g s", o->since);
        if (o->win_set)
            k += window_text(o->win, what + k, sizeof what - k);
        if (o->gil)
            k += (size_t)snprintf(what + k, sizeof what - k, " holding the GIL");
        if (!o->idle && strstr(p->modes, "wall"))
            snprintf(what + k, sizeof what - k, " on CPU (--idle adds the off-CPU ones)");
        return pb_err_set(err, -ENOENT,
                          "%s: no samples%s: the profile has %.0f %s sample%s "
                          "over %.1f s, of thread%s %s",
                          o->cmd, what, p->total, p->modes[0] ? p->modes : "?",
                          p->total == 1 ? "" : "s", p->last_ts - p->first_ts,
                          strchr(threads, ',') ? "s" : "", threads);
    }
    flame_tree_sort(&p->t);
    sampler_status(dc, &p->lost, &p->rate);
    if (o->fmt == FMT_CHROME) {
        long long nt = load_ticks(dc, o, p->first_ts, p->last_ts, &p->t, &p->ticks, err);
        if (nt < 0)
            return -1;
        p->nticks = (size_t)nt;
    }
    return 0;
}

static void fg_render_init(struct fg_render *r, const struct fg_profile *p, pid_t pid)
{
    memset(r, 0, sizeof *r);
    r->modes = p->modes;
    r->first_ts = p->first_ts;
    r->last_ts = p->last_ts;
    r->period = p->rate > 0 ? 1.0 / p->rate : 0.01;
    r->pid = pid;
    r->ticks = p->ticks;
    r->nticks = p->nticks;
}

/* --diff-window: the earlier window of the same profile, with the same filters, into
 * before; o then covers --window, else what follows the earlier window. */
static int fg_load_before(struct dap_client *dc, pid_t pid, struct fg_opts *o,
                          struct fg_profile *before, struct pb_err *err)
{
    struct fg_opts bo = *o;
    bo.win[0] = o->dwin[0];
    bo.win[1] = o->dwin[1];
    bo.win_set = 1;
    bo.dwin_set = 0;
    bo.fmt = FMT_FOLDED; /* no timeline needed */
    if (fg_load(dc, pid, &bo, before, err) < 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        const char *rest = strncmp(msg, o->cmd, strlen(o->cmd)) == 0 && msg[strlen(o->cmd)] == ':'
                               ? msg + strlen(o->cmd) + 2
                               : msg;
        return pb_err_set(err, err->code, "%s: --diff-window: %s", o->cmd, rest);
    }
    if (!o->win_set) { /* cli_fg_preload refused an open-ended one */
        o->win[0] = o->dwin[1];
        o->win[1] = INFINITY;
        o->win_set = 1;
    }
    o->before = &before->t;
    return 0;
}

int cli_fg_render(struct dap_client *dc, pid_t pid, const struct fg_opts *opts)
{
    struct pb_err err = {0};
    struct fg_profile p, before;
    struct fg_opts oo = *opts, *o = &oo;
    int rc = CLI_FAIL;
    memset(&p, 0, sizeof p);
    memset(&before, 0, sizeof before);
    flame_tree_init(&p.t);
    flame_tree_init(&before.t);
    if (o->dwin_set && fg_load_before(dc, pid, o, &before, &err) < 0) {
        cli_error("%s", err.msg);
        goto out;
    }
    if (fg_load(dc, pid, o, &p, &err) < 0) {
        cli_error("%s", err.msg);
        goto out;
    }
    struct fg_render r;
    fg_render_init(&r, &p, pid);
    if (write_output(&p.t, o, &r, p.n) < 0)
        goto out;
    if (p.lost > 0)
        fprintf(stderr,
                "probing: note: the sampler dropped %lld samples (perf.max_samples "
                "reached, or its buffers were full): the profile holds the %.0f it kept\n",
                p.lost, p.total);
    rc = CLI_OK;
out:
    fg_close(&p);
    fg_close(&before);
    return rc;
}

int cli_fg_preload(struct cli_fg_opts *o)
{
    struct pb_err err = {0};
    if (o->fmt == FMT_PPROF && !cli_ext_load(&err)) {
        cli_error("%s --format pprof: %s", o->cmd, err.msg);
        return CLI_FAIL;
    }
    if (o->diff && o->dwin_set) {
        cli_error("%s: --diff and --diff-window both name the profile to compare with: give one",
                  o->cmd);
        return CLI_USAGE;
    }
    if (!o->diff && !o->dwin_set)
        return 0;
    if (o->fmt != FMT_SVG) {
        cli_error("%s: %s draws an SVG: leave out --format (or give svg, or an -o ending in "
                  ".svg)",
                  o->cmd, o->diff ? "--diff" : "--diff-window");
        return CLI_USAGE;
    }
    if (o->dwin_set && !o->win_set && !isfinite(o->dwin[1])) {
        cli_error("%s: --diff-window %g: reaches the end of the profile: give it an end "
                  "(FROM:TO) or give --window too",
                  o->cmd, o->dwin[0]);
        return CLI_USAGE;
    }
    if (!o->diff)
        return 0; /* the earlier window is read from the target (cli_fg_render) */
    FILE *in = fopen(o->diff, "r");
    if (!in) {
        cli_error("%s: --diff %s: %s", o->cmd, o->diff, strerror(errno));
        return CLI_FAIL;
    }
    o->before = malloc(sizeof *o->before);
    if (!o->before) {
        fclose(in);
        cli_error("%s: out of memory", o->cmd);
        return CLI_FAIL;
    }
    flame_tree_init(o->before);
    int n = flame_tree_parse(o->before, in);
    fclose(in);
    if (n <= 0 || !o->before->root.total) {
        cli_error(
            "%s: --diff %s: %s", o->cmd, o->diff,
            n < 0 ? "out of memory"
                  : "no folded stacks in it ('a;b;c 12' lines, as 'flamegraph -f folded' writes)");
        cli_fg_close(o);
        return CLI_FAIL;
    }
    flame_tree_sort(o->before);
    return 0;
}

void cli_fg_close(struct cli_fg_opts *o)
{
    if (o->before) {
        flame_tree_close(o->before);
        free(o->before);
        o->before = NULL;
    }
}

int cli_cmd_flamegraph(const struct cli_opts *co, int argc, char **argv)
{
    struct fg_opts o = {0};
    o.cmd = "flamegraph";
    o.fmt = FMT_SVG;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return CLI_OK; /* --help */
    if (rc)
        return rc;
    if ((rc = cli_fg_preload(&o)) != 0)
        return rc;
    struct dap_client dc;
    if (cli_open(co, &dc) < 0) {
        cli_fg_close(&o);
        return CLI_FAIL;
    }
    /* Wait as long as the probe may take on a query (it interrupts at query.timeout_ms). */
    cli_query_wait(&dc, co->timeout_ms);
    rc = cli_fg_render(&dc, co->target.pid, &o);
    cli_disconnect(&dc);
    cli_fg_close(&o);
    return rc;
}

int cli_flamegraph_write(struct dap_client *dc, pid_t pid, const char *format,
                         const struct cli_fg_opts *flt, FILE *f, struct pb_err *err)
{
    struct fg_opts o = {0};
    if (flt) {
        o.thread = flt->thread;
        o.since = flt->since;
        o.gil = flt->gil;
        o.idle = flt->idle;
        o.all = flt->all;
    }
    o.cmd = "flamegraph";
    if ((o.fmt = parse_format(format)) < 0)
        return pb_err_set(err, PB_EUSAGE,
                          "format '%s': expected svg, folded, speedscope, "
                          "chrometrace or pprof",
                          format);
    struct fg_profile p;
    int rc = fg_load(dc, pid, &o, &p, err);
    if (rc < 0 && err->code == -ENOENT && p.total <= 0) /* the web UI's words, not the CLI's */
        pb_err_set(err, -ENOENT, "no samples in process %d: start perf first", (int)pid);
    if (rc == 0) {
        char title[128], subtitle[128];
        snprintf(title, sizeof title, "probing %d: %lld samples", (int)pid, p.n);
        snprintf(subtitle, sizeof subtitle, "%s mode, %zu thread%s, %.1f s",
                 p.modes[0] ? p.modes : "?", p.t.nthreads, p.t.nthreads == 1 ? "" : "s",
                 p.last_ts - p.first_ts);
        struct fg_render r;
        fg_render_init(&r, &p, pid);
        r.title = title;
        r.subtitle = subtitle;
        rc = render(&p.t, &o, &r, f, err);
    }
    fg_close(&p);
    return rc;
}
