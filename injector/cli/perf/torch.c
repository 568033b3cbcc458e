/* SPDX-License-Identifier: MIT */
/* `probing -p PID perf --torch [--every N] [--trace FILE [--steps N] [--timeout S]]` and
 * `perf --torch --stop`: per-module PyTorch timing and memory through probing/torch. Tracing
 * goes on in the target after the command exits; with --trace the command also waits for the
 * next N traced steps, reads their rows from python.torch_trace / python.torch_steps with
 * probing/query, and writes them here as Chrome trace-event JSON (Perfetto). See docs/torch.md. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

#define PAGE_ROWS 5000

static void help(void)
{
    printf(
        "usage: probing -p PID perf --torch [--every N] [--trace FILE [--steps N] [--timeout S]]\n"
        "                                [--json]\n"
        "       probing -p PID perf --torch --stop\n"
        "\n"
        "Time every torch.nn.Module call of a running PyTorch job, forward and backward, with\n"
        "its memory, through global module hooks: training and inference alike, no code\n"
        "change. Steps end at each optimizer step (torch 2.x optimizer step hooks; torch 1.13:\n"
        "Optimizer._optimizer_step_code), or without an optimizer at each top-level module\n"
        "call. Tracing goes on after this command exits, until 'perf --stop'. Results:\n"
        "  python.torch_trace   one row per module event of each traced step\n"
        "  python.torch_steps   one row per step (duration, loss when a loss module runs)\n"
        "e.g. probing -p PID query \"SELECT module, stage, AVG(duration) FROM python.torch_trace\n"
        "     WHERE stage LIKE '%%_post' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10\"\n"
        "\n"
        "  --every N       trace one step in N (default 10; 1 traces every step); the others\n"
        "                  run without module hooks (optimizer jobs) or with two cheap ones\n"
        "  --trace FILE    then wait for the next N traced steps and write them to FILE as\n"
        "                  Chrome trace-event JSON (open it in https://ui.perfetto.dev)\n"
        "    --steps N     how many traced steps to write (default 3)\n"
        "    --timeout S   give up waiting after S seconds (default 60), writing what came\n"
        "  --no-comm       do not start the collectives recorder with it ('perf --comm')\n"
        "  --stop          remove every hook and patch, the recorder's too (the tables stay)\n"
        "  --json          print the probing/torch answer as JSON\n");
}

static int parse_num(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* One probing/torch request on a connected client. Returns the body or NULL with err. */
static cJSON *torch_request(struct dap_client *dc, const char *action, long every,
                            struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", action);
    if (every > 0)
        cJSON_AddNumberToObject(args, "every", (double)every);
    if (dap_client_request(dc, "probing/torch", args, &body, err) < 0)
        return NULL;
    return body;
}

int cli_perf_torch_stop(struct dap_client *dc, int *stopped, struct pb_err *err)
{
    cJSON *body = torch_request(dc, "stop", 0, err);
    if (!body)
        return err->code < 0 ? err->code : PB_EUNKNOWN;
    if (cli_json_true(body, "stopped")) {
        printf("perf --torch: stopped after %.0f steps (%.0f traced); every hook and patch "
               "removed\n",
               cli_json_num(body, "step", 0), cli_json_num(body, "tracedSteps", 0));
        *stopped = 1;
    }
    cJSON_Delete(body);
    return 0;
}

/* A SQL query on a connected client: the rows array of the answer (detached, caller deletes),
 * or NULL with err. */
static cJSON *query_rows(struct dap_client *dc, const char *sql, struct pb_err *err)
{
    cJSON *body = cli_query(dc, sql, err);
    if (!body)
        return NULL;
    cJSON *rows = cJSON_DetachItemFromObjectCaseSensitive(body, "rows");
    cJSON_Delete(body);
    if (!cJSON_IsArray(rows)) {
        cJSON_Delete(rows);
        pb_err_set(err, PB_EPROTO, "probing/query: no rows in the answer");
        return NULL;
    }
    return rows;
}

static double num_at(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str_at(const cJSON *row, int i)
{
    const cJSON *v = cJSON_GetArrayItem(row, i);
    return cJSON_IsString(v) ? v->valuestring : "?";
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void add_meta(cJSON *events, int pid, double tid, const char *what, const char *name)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "ph", "M");
    cJSON_AddStringToObject(e, "name", what);
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", tid);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(e, "args"), "name", name);
    cJSON_AddItemToArray(events, e);
}

#define TRACE_COLS                                                          \
    "seq, module, module_type, stage, duration, allocated, max_allocated, " \
    "cached, max_cached, rss, time_offset, thread_id"

/* Append one traced step's events: its span, a complete event per module call (post rows),
 * and a memory counter per event. origin: epoch seconds of ts 0. Returns the number of module
 * events, or -1 with err. */
static int add_step(struct dap_client *dc, cJSON *events, int pid, const cJSON *step, double origin,
                    double *tids, int *ntids, struct pb_err *err)
{
    long long n = (long long)num_at(step, 0), last = 0;
    double start = num_at(step, 1), dur = num_at(step, 2);
    int count = 0;
    double step_tid = -1;
    for (;;) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT " TRACE_COLS " FROM python.torch_trace WHERE step = %lld "
                 "AND seq > %lld ORDER BY seq LIMIT %d",
                 n, last, PAGE_ROWS);
        cJSON *rows = query_rows(dc, sql, err), *r;
        if (!rows)
            return -1;
        int got = cJSON_GetArraySize(rows);
        cJSON_ArrayForEach(r, rows)
        {
            last = (long long)num_at(r, 0);
            double tid = num_at(r, 11), off = num_at(r, 10), d = num_at(r, 4);
            const char *stage = str_at(r, 3);
            if (step_tid < 0)
                step_tid = tid;
            int known = 0;
            for (int i = 0; i < *ntids; i++)
                known |= tids[i] == tid;
            if (!known && *ntids < 256) {
                char name[64];
                snprintf(name, sizeof name, "python thread %.0f", tid);
                add_meta(events, pid, tid, "thread_name", name);
                tids[(*ntids)++] = tid;
            }
            double at = (start + off - origin) * 1e6;
            if (strstr(stage, "_post") && cJSON_IsNumber(cJSON_GetArrayItem(r, 4))) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "ph", "X");
                cJSON_AddStringToObject(e, "name", str_at(r, 1));
                cJSON_AddStringToObject(e, "cat",
                                        strncmp(stage, "forward", 7) == 0 ? "forward" : "backward");
                cJSON_AddNumberToObject(e, "pid", pid);
                cJSON_AddNumberToObject(e, "tid", tid);
                cJSON_AddNumberToObject(e, "ts", at - d * 1e6);
                cJSON_AddNumberToObject(e, "dur", d * 1e6);
                cJSON *a = cJSON_AddObjectToObject(e, "args");
                cJSON_AddStringToObject(a, "type", str_at(r, 2));
                cJSON_AddNumberToObject(a, "step", (double)n);
                cJSON_AddNumberToObject(a, "allocated", num_at(r, 5));
                cJSON_AddNumberToObject(a, "max_allocated", num_at(r, 6));
                cJSON_AddNumberToObject(a, "cached", num_at(r, 7));
                cJSON_AddNumberToObject(a, "max_cached", num_at(r, 8));
                cJSON_AddNumberToObject(a, "rss", num_at(r, 9));
                cJSON_AddItemToArray(events, e);
                count++;
            }
            cJSON *c = cJSON_CreateObject();
            cJSON_AddStringToObject(c, "ph", "C");
            cJSON_AddStringToObject(c, "name", "memory");
            cJSON_AddNumberToObject(c, "pid", pid);
            cJSON_AddNumberToObject(c, "ts", at);
            cJSON *a = cJSON_AddObjectToObject(c, "args");
            cJSON_AddNumberToObject(a, "rss", num_at(r, 9));
            if (num_at(r, 5) > 0 || num_at(r, 7) > 0) {
                cJSON_AddNumberToObject(a, "cuda_allocated", num_at(r, 5));
                cJSON_AddNumberToObject(a, "cuda_cached", num_at(r, 7));
            }
            cJSON_AddItemToArray(events, c);
        }
        cJSON_Delete(rows);
        if (got < PAGE_ROWS)
            break;
    }
    cJSON *e = cJSON_CreateObject();
    char name[48];
    snprintf(name, sizeof name, "step %lld", n);
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "cat", "step");
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", step_tid < 0 ? 0 : step_tid);
    cJSON_AddNumberToObject(e, "ts", (start - origin) * 1e6);
    cJSON_AddNumberToObject(e, "dur", dur * 1e6);
    cJSON *a = cJSON_AddObjectToObject(e, "args");
    cJSON_AddNumberToObject(a, "step", (double)n);
    const cJSON *loss = cJSON_GetArrayItem(step, 3);
    if (cJSON_IsNumber(loss))
        cJSON_AddNumberToObject(a, "loss", loss->valuedouble);
    cJSON_AddItemToArray(events, e);
    return count;
}

cJSON *cli_torch_trace(struct dap_client *dc, int pid, const cJSON *steps, int *nevents,
                       struct pb_err *err)
{
    double origin = num_at(cJSON_GetArrayItem(steps, 0), 1);
    cJSON *root = cJSON_CreateObject();
    cJSON *events = cJSON_AddArrayToObject(root, "traceEvents");
    cJSON_AddStringToObject(root, "displayTimeUnit", "ms");
    cJSON *other = cJSON_AddObjectToObject(root, "otherData");
    cJSON_AddStringToObject(other, "producer", "probing perf --torch");
    cJSON_AddNumberToObject(other, "pid", pid);
    cJSON_AddNumberToObject(other, "originEpochSeconds", origin);
    char pname[64];
    snprintf(pname, sizeof pname, "python %d", pid);
    add_meta(events, pid, 0, "process_name", pname);
    double tids[256];
    int ntids = 0;
    const cJSON *st;
    *nevents = 0;
    cJSON_ArrayForEach(st, steps)
    {
        int n = add_step(dc, events, pid, st, origin, tids, &ntids, err);
        if (n < 0) {
            cJSON_Delete(root);
            return NULL;
        }
        *nevents += n;
    }
    return root;
}

/* Wait for up to want traced steps after step `after`, then write them to path. */
static int write_trace(struct dap_client *dc, int pid, long long after, long want, long timeout_s,
                       const char *path)
{
    struct pb_err err = {0};
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT step, start_time, duration, loss FROM python.torch_steps "
             "WHERE traced = 1 AND step > %lld ORDER BY step LIMIT %ld",
             after, want);
    double deadline = now_s() + (double)timeout_s;
    cJSON *steps = NULL;
    fprintf(stderr, "perf --torch: waiting for %ld traced step%s (at most %ld s)...\n", want,
            want == 1 ? "" : "s", timeout_s);
    for (;;) {
        cJSON_Delete(steps);
        if (!(steps = query_rows(dc, sql, &err))) {
            cli_error("perf --torch --trace: %s", err.msg);
            return CLI_FAIL;
        }
        if (cJSON_GetArraySize(steps) >= want || now_s() >= deadline)
            break;
        sleep_ms(200);
    }
    int nsteps = cJSON_GetArraySize(steps);
    if (nsteps == 0) {
        cJSON_Delete(steps);
        cli_error("perf --torch --trace: no traced step ended within %ld s (is the job running "
                  "steps? with --every N one step in N is traced); tracing goes on: query "
                  "python.torch_steps, or stop it with 'probing -p %d perf --stop'",
                  timeout_s, pid);
        return CLI_FAIL;
    }
    int nevents = 0;
    cJSON *root = cli_torch_trace(dc, pid, steps, &nevents, &err);
    if (!root) {
        cli_error("perf --torch --trace: %s", err.msg);
        cJSON_Delete(steps);
        return CLI_FAIL;
    }
    long long first = (long long)num_at(cJSON_GetArrayItem(steps, 0), 0);
    long long lastn = (long long)num_at(cJSON_GetArrayItem(steps, nsteps - 1), 0);
    cJSON_Delete(steps);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int bad = !f || fputs(text, f) < 0 || fputc('\n', f) < 0;
    if (f && fclose(f) != 0)
        bad = 1;
    free(text);
    if (bad) {
        cli_error("perf --torch --trace: cannot write %s: %s", path, strerror(errno));
        return CLI_FAIL;
    }
    printf("wrote %s: %d traced step%s (%lld to %lld), %d module calls; open it in "
           "https://ui.perfetto.dev\n",
           path, nsteps, nsteps == 1 ? "" : "s", first, lastn, nevents);
    if (nsteps < want)
        fprintf(stderr, "perf --torch: only %d of %ld traced steps ended within %ld s\n", nsteps,
                want, timeout_s);
    return CLI_OK;
}

static void print_started(const cJSON *b, int pid)
{
    if (cli_json_true(b, "started"))
        printf(
            "perf --torch: tracing torch.nn modules in process %d (torch %s): one step in %.0f\n",
            pid, cli_json_str(b, "torch") ? cli_json_str(b, "torch") : "?",
            cli_json_num(b, "every", 0));
    else
        printf("perf --torch: already tracing process %d (step %.0f, %.0f traced): now one step "
               "in %.0f\n",
               pid, cli_json_num(b, "step", 0), cli_json_num(b, "tracedSteps", 0),
               cli_json_num(b, "every", 0));
    printf("  steps: %s\n",
           cli_json_str(b, "stepDetection") ? cli_json_str(b, "stepDetection") : "?");
    const char *mem = cli_json_str(b, "memory");
    printf("  memory: %s\n", !mem ? "?"
                             : strcmp(mem, "cuda") == 0
                                 ? "CUDA (torch.cuda memory counters) and process RSS"
                                 : "process RSS (CUDA columns are 0: CUDA is not in use)");
    const cJSON *notes = cJSON_GetObjectItemCaseSensitive(b, "notes"), *n;
    cJSON_ArrayForEach(n, notes) if (cJSON_IsString(n)) printf("  note: %s\n", n->valuestring);
}

int cli_perf_torch(const struct cli_opts *o, int argc, char **argv)
{
    /* --torch itself is in argv (perf.c dispatched on it) */
    static const struct option longopts[] = {
        {"torch", no_argument, 0, 'T'},       {"stop", no_argument, 0, 's'},
        {"json", no_argument, 0, 'j'},        {"help", no_argument, 0, 'h'},
        {"every", required_argument, 0, 'e'}, {"trace", required_argument, 0, 't'},
        {"steps", required_argument, 0, 'n'}, {"timeout", required_argument, 0, 'w'},
        {"no-comm", no_argument, 0, 'N'},     {0, 0, 0, 0}};
    long every = 0, steps = 0, timeout_s = 0;
    const char *trace = NULL;
    int stop = 0, json = 0, nocomm = 0, c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'T': break;
        case 'N': nocomm = 1; break;
        case 'e':
            if (parse_num(optarg, 1, 1000000, &every) < 0) {
                cli_error("perf --torch: --every takes a number from 1 to 1000000");
                return CLI_USAGE;
            }
            break;
        case 'n':
            if (parse_num(optarg, 1, 1000, &steps) < 0) {
                cli_error("perf --torch: --steps takes a number from 1 to 1000");
                return CLI_USAGE;
            }
            break;
        case 'w':
            if (parse_num(optarg, 1, 86400, &timeout_s) < 0) {
                cli_error("perf --torch: --timeout takes seconds from 1 to 86400");
                return CLI_USAGE;
            }
            break;
        case 't': trace = optarg; break;
        case 's': stop = 1; break;
        case 'j': json = 1; break;
        case 'h': help(); return CLI_OK;
        default: return cli_bad_option("perf --torch", argv);
        }
    }
    if (optind < argc)
        return cli_unexpected_arg("perf --torch", argv);
    if (stop && (every || trace || steps || timeout_s || nocomm)) {
        cli_error("perf --torch: --stop takes no other option");
        return CLI_USAGE;
    }
    if (!trace && (steps || timeout_s)) {
        cli_error("perf --torch: --steps and --timeout go with --trace FILE");
        return CLI_USAGE;
    }
    if (stop)
        return CLI_PERF_STOP;
    int pid = o->target.pid;
    struct dap_client dc;
    struct pb_err err = {0};
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    int rc = CLI_OK;
    cJSON *body = torch_request(&dc, "start", every, &err);
    if (!body) {
        cli_error("perf --torch: %s", err.msg);
        cli_disconnect(&dc);
        return CLI_FAIL;
    }
    long long after = (long long)cli_json_num(body, "step", 0);
    /* The collectives recorder goes with it (cheap: docs/benchmarks.md); a job without
     * torch.distributed gets a note, not a failure. */
    struct pb_err cerr = {0};
    cJSON *comm = nocomm ? NULL : cli_perf_comm_request(&dc, "start", 0, &cerr);
    if (json) {
        if (comm)
            cJSON_AddItemToObject(body, "comm", comm);
        else if (!nocomm)
            cJSON_AddStringToObject(body, "commError", cerr.msg);
        cli_print_json(body);
    } else {
        print_started(body, pid);
        if (comm)
            cli_perf_comm_print(comm, pid);
        else if (!nocomm)
            printf("perf --comm: not started: %s\n", cerr.msg);
        printf("results: probing -p %d query \"SELECT module, stage, AVG(duration) FROM "
               "python.torch_trace GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10\"\n",
               pid);
        printf("stop with: probing -p %d perf --stop\n", pid);
        cJSON_Delete(comm);
    }
    cJSON_Delete(body);
    fflush(stdout);
    if (trace)
        rc = write_trace(&dc, pid, after, steps ? steps : 3, timeout_s ? timeout_s : 60, trace);
    cli_disconnect(&dc);
    return rc;
}
