/* SPDX-License-Identifier: MIT */
/* `probing serve`'s answers for one process (docs/http.md): the same DAP requests the CLI's
 * commands make, probing/dump (debug --dump), probing/query (query), probing/perf (perf --cc),
 * probing/memory (memory), probing/torch and its Chrome trace (perf --torch), the flame graph
 * of flamegraph.c, and the probe loaded through cli_probe_ensure (inject) only for POST
 * .../attach. Nothing here injects otherwise: a process without the probe answers 409 (conn.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "injector/cli/perf/perf.h"
#include "internal.h"

/* The pid a renderer labels its output with: 0 for a remote probe. */
static pid_t local_pid(const struct cli_serve_proc *p)
{
    return p->kind == CLI_SERVE_LOCAL ? p->pid : 0;
}

/* How the API's paths name p: its pid, or HOST:PORT. */
static const char *path_id(const struct cli_serve_proc *p, char *buf, size_t n)
{
    if (p->kind == CLI_SERVE_LOCAL) {
        snprintf(buf, n, "%d", (int)p->pid);
        return buf;
    }
    return cli_serve_proc_name(p, buf, n);
}

/* The last dump (without locals) per process, shared by the clients that poll it: a dump at
 * most STACKS_MAX_AGE_MS old is answered from here, so 50 pages refreshing every second cost
 * the target about two dumps a second, not fifty (tests/bench/bench_serve.py). A slot per
 * (pid, tasks) % STACKS_SLOTS, each with its own lock: pollers of one process wait for the one
 * dump being taken, then share it. A dump with the asyncio tasks (tasks=1, read with the GIL)
 * is kept apart from one without. */
#define STACKS_MAX_AGE_MS 500
#define STACKS_SLOTS 64
static struct stacks_slot {
    pthread_mutex_t lock;
    struct cli_serve_proc proc; /* kind 0: empty */
    int tasks;
    long long taken;
    char *json;
} stacks_cache[STACKS_SLOTS];
static pthread_once_t stacks_once = PTHREAD_ONCE_INIT;

static void stacks_init(void)
{
    for (int i = 0; i < STACKS_SLOTS; i++)
        pthread_mutex_init(&stacks_cache[i].lock, NULL);
}

/* The target's child processes (DataLoader workers...), read from outside by `probing -p PID
 * debug --dump --no-inject --subprocesses --json` run as a child of this server (its reader
 * is not for the server's threads), added to body as the CLI adds them: "children" and
 * "childrenLeftOut". 0, or -1 with the reply set (502 with its error). */
static int add_children(pid_t pid, int locals, cJSON *body, struct cli_serve_reply *r)
{
    char p[] = "-p", d[] = "debug", dd[] = "--dump", ni[] = "--no-inject", sp[] = "--subprocesses",
         js[] = "--json", lo[] = "--locals", pids[24];
    snprintf(pids, sizeof pids, "%d", (int)pid);
    char *argv[12] = {NULL, p, pids, d, dd, ni, sp, js, locals ? lo : NULL, NULL};
    char *out = NULL, *err = NULL;
    int status = cli_serve_run_child(argv, 0, &out, &err);
    cJSON *doc = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && out
                     ? cJSON_Parse(out)
                     : NULL;
    if (!doc) {
        cli_serve_error(r, 502, "child processes: %s",
                        cli_serve_first_line(err, "probing debug --dump --subprocesses failed"));
        free(out);
        free(err);
        return -1;
    }
    cJSON *kids = cJSON_DetachItemFromObjectCaseSensitive(doc, "children");
    cJSON_AddItemToObject(body, "children", kids ? kids : cJSON_CreateArray());
    cJSON *left = cJSON_DetachItemFromObjectCaseSensitive(doc, "childrenLeftOut");
    if (left)
        cJSON_AddItemToObject(body, "childrenLeftOut", left);
    cJSON_Delete(doc);
    free(out);
    free(err);
    return 0;
}

static int same_proc(const struct cli_serve_proc *a, const struct cli_serve_proc *b)
{
    return a->kind == b->kind &&
           (a->kind == CLI_SERVE_REMOTE ? a->index == b->index : a->pid == b->pid);
}

void cli_serve_stacks(const struct cli_serve_proc *p, int locals, int tasks, int children,
                      struct cli_serve_reply *r)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "locals", locals);
    if (tasks)
        cJSON_AddBoolToObject(args, "tasks", 1);
    if (children && p->kind == CLI_SERVE_REMOTE) {
        cJSON_Delete(args);
        cli_serve_error(r, 400,
                        "subprocesses: a remote probe's children cannot be read from "
                        "here: run probing serve on its node");
        return;
    }
    if (locals || children) { /* not cached: the children are asked for each time */
        cJSON *body = cli_serve_call(p, "probing/dump", args, 0, r);
        if (body && children && add_children(p->pid, locals, body, r) < 0) {
            cJSON_Delete(body);
            return;
        }
        if (body)
            cli_serve_json(r, 200, body);
        return;
    }
    if (locals) {
        cJSON *body = cli_serve_call(p, "probing/dump", args, 0, r);
        if (body)
            cli_serve_json(r, 200, body);
        return;
    }
    pthread_once(&stacks_once, stacks_init);
    struct stacks_slot *slot =
        &stacks_cache[((p->kind == CLI_SERVE_REMOTE ? 0x80000000u + (unsigned)p->index
                                                    : (unsigned)p->pid) *
                           2u +
                       (tasks ? 1u : 0u)) %
                      STACKS_SLOTS];
    pthread_mutex_lock(&slot->lock);
    if (!same_proc(&slot->proc, p) || slot->tasks != tasks ||
        cli_now_ms() - slot->taken > STACKS_MAX_AGE_MS) {
        cJSON *body = cli_serve_call(p, "probing/dump", args, 0, r);
        free(slot->json);
        slot->json = NULL;
        slot->proc = (struct cli_serve_proc){0};
        if (body) {
            slot->json = dap_json_print(body, 0);
            slot->proc = *p;
            slot->tasks = tasks;
            slot->taken = cli_now_ms();
            cJSON_Delete(body);
        }
    } else {
        cJSON_Delete(args);
    }
    if (slot->json) {
        r->body = strdup(slot->json);
        r->len = strlen(r->body);
        r->type = "application/json";
        r->status = 200;
    }
    pthread_mutex_unlock(&slot->lock);
}

void cli_serve_memory(const struct cli_serve_proc *p, const char *top, struct cli_serve_reply *r)
{
    char *end = NULL;
    long n = top ? strtol(top, &end, 10) : 20;
    if (top && (*end || end == top || n < 1 || n > 1000)) {
        cli_serve_error(r, 400, "top '%s': expected 1 to 1000", top);
        return;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddNumberToObject(args, "top", (double)n);
    cJSON *body = cli_serve_call(p, "probing/memory", args, 0, r);
    if (body)
        cli_serve_json(r, 200, body);
}

/* Whether a POST body's "action" is start, stop or status; answers 400 when not. */
static int good_action(const char *action, struct cli_serve_reply *r)
{
    if (action && (strcmp(action, "start") == 0 || strcmp(action, "stop") == 0 ||
                   strcmp(action, "status") == 0))
        return 1;
    cli_serve_error(r, 400, "action: expected \"start\", \"stop\" or \"status\"");
    return 0;
}

/* POST {action, NUM, STR} (num_key/str_key name optional members, str_key may be NULL) as
 * the probe's command with the same arguments. */
static void post_action(const struct cli_serve_proc *p, const char *body, const char *command,
                        const char *num_key, const char *str_key, struct cli_serve_reply *r)
{
    cJSON *j = cli_serve_body(body, r);
    if (!j)
        return;
    const char *action = cli_json_str(j, "action");
    const char *str = str_key ? cli_json_str(j, str_key) : NULL;
    const cJSON *num = cJSON_GetObjectItemCaseSensitive(j, num_key);
    if (!good_action(action, r)) {
        cJSON_Delete(j);
        return;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "action", action);
    if (str)
        cJSON_AddStringToObject(args, str_key, str);
    if (cJSON_IsNumber(num))
        cJSON_AddNumberToObject(args, num_key, num->valuedouble);
    cJSON_Delete(j);
    cJSON *out = cli_serve_call(p, command, args, 0, r);
    if (out)
        cli_serve_json(r, 200, out);
}

void cli_serve_torch(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r)
{
    post_action(p, body, "probing/torch", "every", NULL, r);
}

void cli_serve_torch_trace(const struct cli_serve_proc *p, const char *steps,
                           struct cli_serve_reply *r)
{
    char *end = NULL, sql[256], name[300], id[300];
    struct pb_err err = {0};
    struct dap_client dc;
    long n = steps ? strtol(steps, &end, 10) : 3;
    if (steps && (*end || end == steps || n < 1 || n > 100))
        cli_serve_error(r, 400, "steps '%s': expected 1 to 100", steps);
    if (r->body || cli_serve_connect_query(p, &dc, r) < 0)
        return;
    /* The last n traced steps, oldest first. */
    snprintf(sql, sizeof sql,
             "SELECT * FROM (SELECT step, start_time, duration, loss FROM "
             "python.torch_steps WHERE traced = 1 ORDER BY step DESC LIMIT %ld) ORDER BY step",
             n);
    cJSON *root = NULL, *body = cli_query(&dc, sql, &err);
    int nevents = 0, rc = body ? 0 : err.code < 0 ? err.code : PB_EUNKNOWN;
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(body, "rows");
    if ((rc == 0 && cJSON_GetArraySize(rows) == 0) ||
        (rc < 0 && strstr(err.msg, "no such table: python.torch_steps")))
        cli_serve_error(r, 404,
                        "no traced step in %s yet: start perf --torch (POST "
                        "/api/processes/%s/torch) and let a step end",
                        cli_serve_proc_name(p, name, sizeof name), path_id(p, id, sizeof id));
    else if (rc < 0 || !(root = cli_torch_trace(&dc, (int)local_pid(p), rows, &nevents, &err)))
        cli_serve_error(r, rc == PB_EREFUSED ? 400 : 502, "%s", err.msg);
    cli_disconnect(&dc);
    cJSON_Delete(body);
    if (root)
        cli_serve_json(r, 200, root);
}

void cli_serve_query(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r)
{
    const char *sql;
    cJSON *j = cli_serve_body_string(body, "sql", &sql, "sql: expected a non-empty string", r);
    if (!j)
        return;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sql", sql);
    cJSON_Delete(j);
    cJSON *out = cli_serve_call(p, "probing/query", args, 1, r);
    if (out)
        cli_serve_json(r, 200, out);
}

void cli_serve_attach(const struct cli_serve_proc *p, struct cli_serve_reply *r)
{
    /* One injection at a time: ptrace from several threads at once gains nothing. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    char version[32] = "";
    char name[300];
    if (p->kind == CLI_SERVE_REMOTE) {
        cli_serve_error(r, 400, "a remote probe (%s) is loaded already: nothing to attach",
                        cli_serve_proc_name(p, name, sizeof name));
        return;
    }
    pid_t pid = p->pid;
    int injected = 0, rc = cli_serve_allowed(pid, &err);
    if (rc == 0) {
        pthread_mutex_lock(&lock);
        rc = cli_probe_ensure(pid, &injected, version, sizeof version, &err);
        pthread_mutex_unlock(&lock);
    }
    if (rc < 0) {
        cli_serve_error(r, cli_serve_status_of(rc), "%s", err.msg);
        return;
    }
    /* Answer once the agent does (it starts a moment after dlopen returned). */
    struct dap_client dc;
    dap_client_init(&dc, SERVE_DAP_TIMEOUT_MS);
    rc = cli_connect_pid(pid, 5000, &dc, &err);
    if (rc == 0)
        rc = cli_handshake(&dc, NULL, &err);
    if (rc == 0)
        cli_disconnect(&dc);
    else
        dap_client_close(&dc);
    if (rc < 0) {
        cli_serve_error(r, 502, "%s", err.msg);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "pid", pid);
    cJSON_AddBoolToObject(o, "injected", injected);
    cJSON_AddStringToObject(o, "probe", version);
    cli_serve_json(r, 200, o);
}

void cli_serve_perf(const struct cli_serve_proc *p, const char *body, struct cli_serve_reply *r)
{
    post_action(p, body, "probing/perf", "rate", "mode", r);
}

void cli_serve_flamegraph(const struct cli_serve_proc *p, const char *format,
                          const struct cli_fg_opts *flt, struct cli_serve_reply *r)
{
    const char *type = strcmp(format, "svg") == 0           ? "image/svg+xml"
                       : strcmp(format, "folded") == 0      ? "text/plain; charset=utf-8"
                       : strcmp(format, "speedscope") == 0  ? "application/json"
                       : strcmp(format, "chrometrace") == 0 ? "application/json"
                       : strcmp(format, "pprof") == 0       ? "application/octet-stream"
                                                            : NULL;
    if (!type) {
        cli_serve_error(r, 400,
                        "format '%s': expected svg, folded, speedscope, chrometrace or "
                        "pprof",
                        format);
        return;
    }
    struct pb_err err = {0};
    struct dap_client dc;
    if (cli_serve_connect_query(p, &dc, r) < 0)
        return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = f ? cli_flamegraph_write(&dc, local_pid(p), format, flt, f, &err) : -1;
    if (f)
        fclose(f);
    cli_disconnect(&dc);
    if (rc < 0) {
        free(buf);
        cli_serve_error(r, err.code == -ENOENT ? 404 : 502, "%s", err.msg);
        return;
    }
    r->status = 200;
    r->type = type;
    r->body = buf;
    r->len = len;
}
