/* SPDX-License-Identifier: MIT */
/* `probing -p PID top [--rate HZ] [--interval S] [--thread TID] [--sort own|total]`: a live,
 * refreshing view of the functions the target spends its time in, as `py-spy top` shows it,
 * from the probe's sampler (perf --cc, docs/perf.md). It starts the sampler when none runs and
 * stops it on the way out (one that was running is left running). Each refresh asks
 * probing/query for the samples since top started, in the clean view of perf.frames
 * (collapsed = 0: CPython's own frames left out, as flame graphs show): per function its own
 * samples (the innermost frame) and its total (anywhere in the stack), over the last refresh
 * (%Own, %Total) and since the start (OwnTime, TotalTime: samples / rate). On a terminal it
 * draws on the alternate screen and reads keys: q quits, 1-4 sort by a column, t cycles the
 * threads (all, then each); elsewhere it prints one plain table per refresh until SIGINT or
 * SIGTERM. Every name from the target goes through cli_tx. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"

#define TOP_ROWS_MAX 200
#define TOP_THREADS_MAX 64
/* A function: Python "func (file)" (all its lines together), native its name. */
#define TOP_FUNC \
    "CASE WHEN fr.kind = 'python' THEN fr.func || ' (' || fr.file || ')' ELSE fr.name END"

static void help(void)
{
    printf("usage: probing -p PID top [--rate HZ] [--interval S] [--thread TID]\n"
           "                 [--sort own|total|owntime|totaltime] [--gil] [--idle]\n"
           "\n"
           "A live view of the functions the target spends its time in, refreshed every\n"
           "interval, as 'py-spy top' shows it: from the probe's sampler (perf --cc), started\n"
           "here when it is not running and stopped when top ends (a sampler already running\n"
           "is left running). CPython's own frames are left out, as in flame graphs.\n"
           "\n"
           "  %%Own, %%Total        share of the last interval's samples where the function\n"
           "                      is the innermost frame / anywhere in the stack\n"
           "  OwnTime, TotalTime  seconds since top started (samples / rate)\n"
           "\n"
           "  --rate HZ           the sampler's rate when top starts it (default 100)\n"
           "  --interval S        refresh every S seconds, 0.2 to 60 (default 1)\n"
           "  --thread TID        only thread TID (the native id, as 'debug --dump' shows)\n"
           "  --sort COLUMN       own (default), total, owntime or totaltime\n"
           "  --gil               only samples where the thread held the GIL\n"
           "  --idle              also off-CPU samples (a sampler in wall mode)\n"
           "\n"
           "Keys on a terminal: q quit, 1 %%Own, 2 %%Total, 3 OwnTime, 4 TotalTime (sort),\n"
           "t next thread (all, then each in turn). Elsewhere (a pipe, a file) it prints one\n"
           "table per interval until SIGINT or SIGTERM.\n");
}

enum { SORT_OWN, SORT_TOTAL, SORT_OWNTIME, SORT_TOTALTIME };
static const char *const sort_names[] = {"own", "total", "owntime", "totaltime"};
static const char *const sort_cols[] = {"r_own", "r_tot", "a_own", "a_tot"};

struct top_opts {
    int rate, sort, gil, idle;
    double interval;
    long long thread;
};

static volatile sig_atomic_t stop_now;

static void on_signal(int sig)
{
    (void)sig;
    stop_now = 1;
}

static int parse_args(int argc, char **argv, struct top_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        char *end;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            help();
            return -1;
        }
        if (strcmp(a, "--gil") == 0 || strcmp(a, "--idle") == 0) {
            *(a[2] == 'g' ? &o->gil : &o->idle) = 1;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
        static const char *const opts[] = {"--rate", "--interval", "--thread", "--sort"};
        int k = -1;
        for (int j = 0; j < 4; j++)
            if (strlen(opts[j]) == kl && strncmp(a, opts[j], kl) == 0)
                k = j;
        if (k < 0) {
            cli_error("top: unknown option '%s': see 'probing top --help'", a);
            return CLI_USAGE;
        }
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            cli_error("top: %s needs a value: see 'probing top --help'", opts[k]);
            return CLI_USAGE;
        }
        errno = 0;
        if (k == 0) {
            long r = strtol(v, &end, 10);
            if (*end || !*v || r < 1 || r > 1000) {
                cli_error("top: --rate '%s': expected 1 to 1000 samples per second", v);
                return CLI_USAGE;
            }
            o->rate = (int)r;
        } else if (k == 1) {
            double s = strtod(v, &end);
            if (*end || !*v || !(s >= 0.2 && s <= 60)) {
                cli_error("top: --interval '%s': expected 0.2 to 60 seconds", v);
                return CLI_USAGE;
            }
            o->interval = s;
        } else if (k == 2) {
            long long t = strtoll(v, &end, 10);
            if (*end || !*v || t <= 0) {
                cli_error("top: --thread '%s': expected a native thread id", v);
                return CLI_USAGE;
            }
            o->thread = t;
        } else {
            int s = -1;
            for (int j = 0; j < 4; j++)
                if (strcmp(v, sort_names[j]) == 0)
                    s = j;
            if (s < 0) {
                cli_error("top: --sort '%s': expected own, total, owntime or totaltime", v);
                return CLI_USAGE;
            }
            o->sort = s;
        }
    }
    return 0;
}

static double now_epoch(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const cJSON *cell(const cJSON *row, int i)
{
    return cJSON_GetArrayItem(row, i);
}

static double num(const cJSON *row, int i)
{
    const cJSON *c = cell(row, i);
    return cJSON_IsNumber(c) ? c->valuedouble : 0;
}

/* The threads sampled since t0: ids into tids (at most TOP_THREADS_MAX), their count. */
static int thread_list(struct dap_client *dc, double t0, long long *tids, struct pb_err *err)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT thread_id FROM perf.samples WHERE ts >= %.6f "
             "ORDER BY thread_id LIMIT %d",
             t0, TOP_THREADS_MAX);
    cJSON *body = cli_query(dc, sql, err), *row;
    int n = 0;
    if (!body)
        return -1;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(body, "rows")) tids[n++] =
        (long long)num(row, 0);
    cJSON_Delete(body);
    return n;
}

struct view {
    int tty, rows, cols, sort, gil, idle;
    long long thread;
    double rate, t0, last;
    const char *mode;
};

/* One refresh: queries and draws. Returns 0, 1 when stdout can no longer be written, or -1
 * with err filled. */
static int refresh(struct dap_client *dc, struct view *v, double now, struct pb_err *err)
{
    char thr[96] = "", sql[2048];
    size_t k = 0;
    if (v->thread > 0)
        k += (size_t)snprintf(thr + k, sizeof thr - k, " AND thread_id = %lld", v->thread);
    if (v->gil)
        k += (size_t)snprintf(thr + k, sizeof thr - k, " AND gil = 1");
    if (!v->idle)
        snprintf(thr + k, sizeof thr - k, " AND on_cpu = 1");
    /* No MATERIALIZED hint (SQLite 3.35; the release's probe links Debian 11's 3.34): from
     * 3.35 a CTE used more than once is materialized anyway (c, f); 3.34 computes f per use.
     * samples since the start (a_) and since the last refresh (r_), per stack, then per
     * function over the clean view's frames: own = the innermost kept frame */
    snprintf(sql, sizeof sql,
             "WITH c AS (SELECT stack_id, COUNT(*) AS a, SUM(ts > %.6f) AS r FROM "
             "perf.samples WHERE ts >= %.6f AND ts <= %.6f%s GROUP BY stack_id), "
             "f AS (SELECT c.stack_id AS sid, c.a AS a, c.r AS r, fr.depth AS d, " TOP_FUNC
             " AS fn FROM c JOIN perf.frames fr ON fr.stack_id = c.stack_id AND "
             "fr.collapsed = 0), "
             "leaf AS (SELECT sid, MIN(d) AS d FROM f GROUP BY sid), "
             "own AS (SELECT f.fn AS fn, SUM(f.a) AS a, SUM(f.r) AS r FROM f JOIN leaf ON "
             "leaf.sid = f.sid AND leaf.d = f.d GROUP BY f.fn), "
             "tot AS (SELECT fn, SUM(a) AS a, SUM(r) AS r FROM (SELECT DISTINCT sid, fn, a, r "
             "FROM f) GROUP BY fn) "
             "SELECT tot.fn, COALESCE(own.r, 0) AS r_own, tot.r AS r_tot, COALESCE(own.a, 0) "
             "AS a_own, tot.a AS a_tot, (SELECT SUM(r) FROM c), (SELECT SUM(a) FROM c) FROM tot "
             "LEFT JOIN own ON own.fn = tot.fn ORDER BY %s DESC, a_tot DESC, tot.fn LIMIT %d",
             v->last, v->t0, now, thr, sort_cols[v->sort], TOP_ROWS_MAX);
    cJSON *body = cli_query(dc, sql, err);
    if (!body)
        return -1;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows"), *row;
    const cJSON *first = cJSON_GetArrayItem(rows, 0);
    double recent = first ? num(first, 5) : 0, all = first ? num(first, 6) : 0;
    char head[512], who[64];
    if (v->thread > 0)
        snprintf(who, sizeof who, "thread %lld%s", v->thread, v->gil ? " holding the GIL" : "");
    else
        snprintf(who, sizeof who, "all threads%s", v->gil ? " holding the GIL" : "");
    int hn = snprintf(head, sizeof head,
                      "probing top: %s, %.0f samples in the last %.1f s, %.0f in %.0f s "
                      "(%.0f Hz, %s mode); sorted by %s",
                      who, recent, now - v->last, all, now - v->t0, v->rate,
                      v->mode ? v->mode : "cpu", sort_names[v->sort]);
    /* The frame is written with one write (stdout to a terminal flushes at each line: a
     * terminal, or a test reading its screen, saw frames half drawn) */
    char *frame = NULL;
    size_t flen = 0;
    FILE *out = open_memstream(&frame, &flen);
    if (!out) {
        cJSON_Delete(body);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    if (v->tty)
        fputs("\033[H\033[2J", out);
    fprintf(out, "%.*s\n", v->tty && v->cols > 0 && v->cols < hn ? v->cols : hn, head);
    fprintf(out, "%s\n", v->tty ? "keys: q quit, 1-4 sort, t next thread" : "");
    fprintf(out, "%7s %7s %9s %9s  %s\n", "%Own", "%Total", "OwnTime", "TotalTime",
            "Function (file)");
    int max = v->tty && v->rows > 6 ? v->rows - 6 : TOP_ROWS_MAX, shown = 0;
    cJSON_ArrayForEach(row, rows)
    {
        if (shown >= max)
            break;
        const char *fn = cJSON_IsString(cell(row, 0)) ? cell(row, 0)->valuestring : "?";
        char line[64];
        int n = snprintf(line, sizeof line, "%6.1f%% %6.1f%% %8.2fs %8.2fs  ",
                         recent > 0 ? 100 * num(row, 1) / recent : 0,
                         recent > 0 ? 100 * num(row, 2) / recent : 0,
                         v->rate > 0 ? num(row, 3) / v->rate : 0,
                         v->rate > 0 ? num(row, 4) / v->rate : 0);
        const char *t = cli_tx(fn);
        int room = v->tty && v->cols > n ? v->cols - n : (int)strlen(t);
        fprintf(out, "%s%.*s\n", line, room, t);
        shown++;
    }
    if (!shown)
        fprintf(out, "(no samples yet)\n");
    cJSON_Delete(body);
    int bad = fclose(out) != 0 || fflush(stdout) != 0;
    for (size_t off = 0; !bad && off < flen;) {
        ssize_t w = write(STDOUT_FILENO, frame + off, flen - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bad = 1;
        else
            off += (size_t)w;
    }
    free(frame);
    return bad; /* 1: the reader went away (top | head): top ends */
}

static struct termios saved_tio;
static int tio_saved;

static void term_restore(void)
{
    if (tio_saved)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
    fputs("\033[?25h\033[?1049l", stdout);
    fflush(stdout);
    tio_saved = 0;
}

static void term_size(struct view *v)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) {
        v->rows = ws.ws_row;
        v->cols = ws.ws_col;
    } else {
        v->rows = 24;
        v->cols = 80;
    }
}

int cli_cmd_top(const struct cli_opts *co, int argc, char **argv)
{
    struct top_opts o = {.sort = SORT_OWN, .interval = 1.0};
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return CLI_OK;
    if (rc)
        return rc;
    struct dap_client dc;
    if (cli_open(co, &dc) < 0)
        return CLI_FAIL;
    cli_query_wait(&dc, co->timeout_ms);
    struct pb_err err = {0};
    struct view v = {0};
    int started = 0, keys = 0;
    cJSON *st = cli_perf_cc_request(&dc, "status", 0, NULL, &err);
    if (!st) {
        cli_error("top: %s", err.msg);
        cli_disconnect(&dc);
        return CLI_FAIL;
    }
    if (!cli_json_true(st, "running")) {
        cJSON_Delete(st);
        if (!(st = cli_perf_cc_request(&dc, "start", o.rate, NULL, &err))) {
            cli_error("top: starting the sampler: %s", err.msg);
            cli_disconnect(&dc);
            return CLI_FAIL;
        }
        started = 1;
    }
    v.rate = cli_json_num(st, "rate", 100);
    v.mode =
        cli_json_str(st, "mode") && strcmp(cli_json_str(st, "mode"), "wall") == 0 ? "wall" : "cpu";
    cJSON_Delete(st);
    v.sort = o.sort;
    v.gil = o.gil;
    v.idle = o.idle;
    v.thread = o.thread;
    v.t0 = v.last = now_epoch();
    v.tty = isatty(STDOUT_FILENO);
    keys = v.tty && isatty(STDIN_FILENO);

    struct sigaction sa, old_int, old_term, old_hup;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    /* A reader that went away (top | head) ends top like q, the sampler it started stopped */
    struct sigaction ign, old_pipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);
    if (v.tty) {
        fputs("\033[?1049h\033[?25l", stdout);
        if (keys && tcgetattr(STDIN_FILENO, &saved_tio) == 0) {
            struct termios raw = saved_tio;
            raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            tio_saved = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
    }
    rc = CLI_OK;
    double next = v.t0 + o.interval;
    long long tids[TOP_THREADS_MAX];
    int ti = -1; /* -1: all threads, else an index into tids */
    int redraw = 0;
    while (!stop_now) {
        double now = now_epoch();
        if (now >= next || redraw) {
            if (v.tty)
                term_size(&v);
            int fr = refresh(&dc, &v, now, &err);
            if (fr < 0) {
                rc = CLI_FAIL;
                break;
            }
            if (fr > 0)
                break;
            if (!redraw) {
                v.last = now;
                next = now + o.interval;
            }
            redraw = 0;
            if (!v.tty)
                printf("\n");
            if (fflush(stdout) != 0 || ferror(stdout))
                break;
            continue;
        }
        int wait_ms = (int)((next - now) * 1000) + 1;
        struct pollfd p = {keys ? STDIN_FILENO : -1, POLLIN, 0};
        int pr = poll(&p, 1, wait_ms);
        if (pr <= 0 || !(p.revents & POLLIN))
            continue;
        char ch;
        if (read(STDIN_FILENO, &ch, 1) != 1)
            continue;
        if (ch == 'q' || ch == 'Q')
            break;
        if (ch >= '1' && ch <= '4') {
            v.sort = ch - '1';
            redraw = 1;
        } else if (ch == 't' || ch == 'T') {
            int n = thread_list(&dc, v.t0, tids, &err);
            if (n < 0) {
                rc = CLI_FAIL;
                break;
            }
            ti = ti + 1 < n ? ti + 1 : -1;
            v.thread = ti >= 0 ? tids[ti] : 0;
            redraw = 1;
        }
    }
    if (v.tty)
        term_restore();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    if (rc != CLI_OK)
        cli_error("top: %s", err.msg);
    if (started) {
        struct pb_err serr = {0};
        cJSON *b = cli_perf_cc_request(&dc, "stop", 0, NULL, &serr);
        if (!b) {
            cli_error("top: stopping the sampler it started: %s: run 'probing -p PID perf "
                      "--stop'",
                      serr.msg);
            rc = CLI_FAIL;
        }
        cJSON_Delete(b);
    }
    cli_disconnect(&dc);
    return rc;
}
