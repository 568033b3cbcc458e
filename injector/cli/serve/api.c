/* SPDX-License-Identifier: MIT */
/* `probing serve`'s answers (docs/http.md): the Python processes of this user from /proc (with
 * rank and job from the cluster discovery, cluster/find.c), and per process the same DAP
 * requests the CLI's commands make: probing/dump (debug --dump), probing/query (query),
 * probing/perf (perf --cc), probing/memory (memory), probing/torch and its Chrome trace
 * (perf --torch), the flame graph of flamegraph.c, and the probe loaded through
 * cli_probe_ensure (inject) only for POST .../attach. Nothing here injects otherwise: a process
 * without the probe answers 409. Each request opens its own DAP connection. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "injector/cli/cluster/cluster.h"
#include "injector/cli/perf/perf.h"
#include "injector/inject/inj.h"
#include "nvml.h"
#include "serve.h"

#define DAP_TIMEOUT_MS 10000

struct cli_target cli_serve_targets[CLI_SERVE_MAX_TARGETS];
char cli_serve_target_names[CLI_SERVE_MAX_TARGETS][280];
int cli_serve_ntargets;

/* The HTTP status for a failure code from the CLI's layers. */
static int status_of(int code)
{
    switch (code) {
    case -ESRCH: return 404;
    case PB_ENOPROBE: return 409;
    case PB_ENOPYTHON: return 422;
    case -EACCES:
    case -EPERM: return 403;
    default: return 502;
    }
}

/* Whether pid may be served: it exists and belongs to our user (any, for root). */
static int allowed(pid_t pid, struct pb_err *err)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    if (stat(path, &st) < 0)
        return pb_err_set(err, -ESRCH, "no process %d", (int)pid);
    if (geteuid() != 0 && st.st_uid != geteuid())
        return pb_err_set(err, -EACCES, "process %d belongs to another user", (int)pid);
    return 0;
}

/* Connect to pid's probe (never injecting) and handshake; a remote one over TCP with
 * $PROBING_TOKEN. */
static int connect_probe_within(pid_t pid, struct dap_client *dc, int timeout_ms,
                                struct pb_err *err)
{
    if (pid < 0) {
        int i = -1 - (int)pid, rc;
        const char *token = getenv("PROBING_TOKEN");
        if (i >= cli_serve_ntargets)
            return pb_err_set(err, -ESRCH, "no such target");
        dap_client_init(dc, timeout_ms);
        rc = dap_client_connect_tcp(dc, cli_serve_targets[i].host, cli_serve_targets[i].port, err);
        if (rc == 0)
            rc = cli_handshake(dc, token, err);
        if (rc < 0)
            dap_client_close(dc);
        return rc;
    }
    int rc = allowed(pid, err);
    if (rc < 0)
        return rc;
    if (ptrace_maps_find(pid, CLI_PROBE_LIB_PREFIX, NULL, 0) != 1)
        return pb_err_set(err, PB_ENOPROBE,
                          "the probe is not loaded in process %d: attach "
                          "first (POST /api/processes/%d/attach)",
                          (int)pid, (int)pid);
    dap_client_init(dc, timeout_ms);
    rc = cli_connect_pid(pid, 0, dc, err);
    if (rc == 0)
        rc = cli_handshake(dc, NULL, err);
    if (rc < 0) {
        dap_client_close(dc);
        if (rc != -EACCES)
            err->code = PB_ENOPROBE; /* mapped but not answering: a fork child, say */
    }
    return rc;
}

static int connect_probe(pid_t pid, struct dap_client *dc, struct pb_err *err)
{
    return connect_probe_within(pid, dc, DAP_TIMEOUT_MS, err);
}

/* Connect to pid's probe for queries (waiting as long as the probe's query.timeout_ms), or
 * -1 with r filled. */
static int connect_query(pid_t pid, struct dap_client *dc, struct cli_serve_reply *r)
{
    struct pb_err err = {0};
    if (connect_probe(pid, dc, &err) < 0) {
        cli_serve_error(r, status_of(err.code), "%s", err.msg);
        return -1;
    }
    cli_query_wait(dc, DAP_TIMEOUT_MS);
    return 0;
}

/* One request to pid's probe; the body (caller deletes) or NULL with r filled. */
static cJSON *call(pid_t pid, const char *command, cJSON *args, int query_wait,
                   struct cli_serve_reply *r)
{
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON *body = NULL;
    if (connect_probe(pid, &dc, &err) < 0) {
        cJSON_Delete(args);
        cli_serve_error(r, status_of(err.code), "%s", err.msg);
        return NULL;
    }
    if (query_wait)
        cli_query_wait(&dc, DAP_TIMEOUT_MS);
    int rc = dap_client_request(&dc, command, args, &body, &err);
    cli_disconnect(&dc);
    if (rc < 0) {
        /* The probe refused it (a SQLite error, a bad argument): the client's fault. */
        cli_serve_error(r, rc == PB_EREFUSED ? 400 : 502, "%s", err.msg);
        return NULL;
    }
    return body;
}

/* VmRSS (bytes) and Threads of pid from /proc/PID/status; -1 when unknown. */
static void proc_status(pid_t pid, double *rss, double *threads)
{
    char path[64], buf[8192];
    *rss = *threads = -1;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return;
    const char *p = strstr(buf, "\nVmRSS:");
    if (p)
        *rss = strtod(p + 7, NULL) * 1024;
    p = strstr(buf, "\nThreads:");
    if (p)
        *threads = strtod(p + 9, NULL);
}

/* A remote probe's entry, from its probing/info: {id: "HOST:PORT", key, pid (its own), ...}
 * or with "error" when it does not answer. */
static cJSON *remote_process(int i)
{
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON *p = cJSON_CreateObject(), *info = NULL;
    cJSON_AddStringToObject(p, "id", cli_serve_target_names[i]);
    cJSON_AddNumberToObject(p, "key", -1 - i);
    cJSON_AddStringToObject(p, "target", cli_serve_target_names[i]);
    int rc = connect_probe((pid_t)(-1 - i), &dc, &err);
    if (rc == 0) {
        rc = dap_client_request(&dc, "probing/info", NULL, &info, &err);
        cli_disconnect(&dc);
    }
    char cmd[4096] = "";
    const cJSON *a;
    size_t k = 0;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(info, "argv"))
    {
        if (cJSON_IsString(a) && k < sizeof cmd)
            k += (size_t)snprintf(cmd + k, sizeof cmd - k, "%s%s", k ? " " : "", a->valuestring);
    }
    cJSON_AddNumberToObject(p, "pid", cli_json_num(info, "pid", 0));
    cJSON_AddStringToObject(p, "command", cmd);
    cJSON_AddStringToObject(p, "python",
                            cli_json_str(info, "python") ? cli_json_str(info, "python") : "?");
    cJSON_AddBoolToObject(p, "probe", rc == 0);
    cJSON_AddNumberToObject(p, "rss", -1);
    cJSON_AddNumberToObject(p, "threads", -1);
    cJSON_AddNullToObject(p, "rank");
    cJSON_AddNullToObject(p, "job");
    cJSON_AddNullToObject(p, "world_size");
    if (rc < 0)
        cJSON_AddStringToObject(p, "error", err.msg);
    cJSON_Delete(info);
    return p;
}

/* Every Python process of this user (every user's, for root): an array of {pid, command,
 * python, probe, rss, threads, rank, job, ...}. Nothing is injected. */
static cJSON *python_processes(void)
{
    cJSON *all = cJSON_CreateArray(), *ranks = cli_cluster_find_ranks();
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        struct pb_err err;
        struct ptrace_pyver pv;
        if (pid == getpid() || allowed(pid, &err) < 0 || ptrace_pyver_detect(pid, &pv, &err) < 0)
            continue;
        char v[32], cmd[4096];
        double rss, threads;
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "id", pid);
        cJSON_AddNumberToObject(p, "key", pid);
        cJSON_AddNumberToObject(p, "pid", pid);
        cli_proc_cmdline(pid, cmd, sizeof cmd);
        cJSON_AddStringToObject(p, "command", cmd);
        snprintf(v, sizeof v, "%d.%d.%d", pv.major, pv.minor, pv.micro);
        cJSON_AddStringToObject(p, "python", v);
        cJSON_AddBoolToObject(p, "probe",
                              ptrace_maps_find(pid, CLI_PROBE_LIB_PREFIX, NULL, 0) == 1);
        proc_status(pid, &rss, &threads);
        cJSON_AddNumberToObject(p, "rss", rss);
        cJSON_AddNumberToObject(p, "threads", threads);
        const cJSON *rk, *found = NULL;
        cJSON_ArrayForEach(rk, ranks)
        {
            if ((pid_t)cli_json_num(rk, "pid", 0) == pid)
                found = rk;
        }
        if (found) {
            cJSON_AddNumberToObject(p, "rank", cli_json_num(found, "rank", -1));
            cJSON_AddStringToObject(p, "job", cli_json_str(found, "job"));
            cJSON_AddNumberToObject(p, "world_size", cli_json_num(found, "world_size", -1));
        } else {
            cJSON_AddNullToObject(p, "rank");
            cJSON_AddNullToObject(p, "job");
            cJSON_AddNullToObject(p, "world_size");
        }
        cJSON_AddItemToArray(all, p);
    }
    if (d)
        closedir(d);
    cJSON_Delete(ranks);
    for (int i = 0; i < cli_serve_ntargets; i++)
        cJSON_AddItemToArray(all, remote_process(i));
    return all;
}

void cli_serve_processes(struct cli_serve_reply *r)
{
    cli_serve_json(r, 200, python_processes());
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
    pid_t pid;
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

static int run_child(char **argv, int cluster, char **out_buf, char **err_buf);
static const char *first_line(char *s, const char *fallback);

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
    int status = run_child(argv, 0, &out, &err);
    cJSON *doc = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && out
                     ? cJSON_Parse(out)
                     : NULL;
    if (!doc) {
        cli_serve_error(r, 502, "child processes: %s",
                        first_line(err, "probing debug --dump --subprocesses failed"));
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

void cli_serve_stacks(pid_t pid, int locals, int tasks, int children, struct cli_serve_reply *r)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddBoolToObject(args, "locals", locals);
    if (tasks)
        cJSON_AddBoolToObject(args, "tasks", 1);
    if (children && pid < 0) {
        cJSON_Delete(args);
        cli_serve_error(r, 400,
                        "subprocesses: a remote probe's children cannot be read from "
                        "here: run probing serve on its node");
        return;
    }
    if (locals || children) { /* not cached: the children are asked for each time */
        cJSON *body = call(pid, "probing/dump", args, 0, r);
        if (body && children && add_children(pid, locals, body, r) < 0) {
            cJSON_Delete(body);
            return;
        }
        if (body)
            cli_serve_json(r, 200, body);
        return;
    }
    if (locals) {
        cJSON *body = call(pid, "probing/dump", args, 0, r);
        if (body)
            cli_serve_json(r, 200, body);
        return;
    }
    pthread_once(&stacks_once, stacks_init);
    struct stacks_slot *slot =
        &stacks_cache[((unsigned)pid * 2u + (tasks ? 1u : 0u)) % STACKS_SLOTS];
    pthread_mutex_lock(&slot->lock);
    if (slot->pid != pid || slot->tasks != tasks ||
        cli_now_ms() - slot->taken > STACKS_MAX_AGE_MS) {
        cJSON *body = call(pid, "probing/dump", args, 0, r);
        free(slot->json);
        slot->json = NULL;
        slot->pid = 0;
        if (body) {
            slot->json = cJSON_PrintUnformatted(body);
            slot->pid = pid;
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

void cli_serve_memory(pid_t pid, const char *top, struct cli_serve_reply *r)
{
    char *end = NULL;
    long n = top ? strtol(top, &end, 10) : 20;
    if (top && (*end || end == top || n < 1 || n > 1000)) {
        cli_serve_error(r, 400, "top '%s': expected 1 to 1000", top);
        return;
    }
    cJSON *args = cJSON_CreateObject();
    cJSON_AddNumberToObject(args, "top", (double)n);
    cJSON *body = call(pid, "probing/memory", args, 0, r);
    if (body)
        cli_serve_json(r, 200, body);
}

extern char **environ;

/* Runs this binary with argv (argv[0] is replaced) and gives its stdout as JSON in r, or its
 * stderr's line as a 502. `probing cluster` forks a child per rank: run in a process of its
 * own rather than forked from this threaded server. */
char *cli_serve_cluster_args[CLI_SERVE_MAX_CLUSTER_ARGS];
int cli_serve_ncluster_args;

/* Runs this binary with argv (argv[0] is set here) and the host options appended (argv has
 * room for them after its NULL-terminated words); its stdout and stderr in *out and *err
 * (malloc'd, NUL-terminated; the caller frees both). Returns its wait status, or -1 with
 * *err set when it could not run. */
static int run_child(char **argv, int cluster, char **out_buf, char **err_buf)
{
    int out[2] = {-1, -1}, err[2] = {-1, -1}, status = -1;
    posix_spawn_file_actions_t fa;
    pid_t child;
    char self[] = "/proc/self/exe";
    char *buf[2] = {NULL, NULL};
    size_t len[2] = {0, 0}, n = 0;
    argv[0] = self;
    while (argv[n])
        n++;
    for (int i = 0; cluster && i < cli_serve_ncluster_args; i++)
        argv[n++] = cli_serve_cluster_args[i];
    argv[n] = NULL;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        if (asprintf(&buf[1], "pipe: %s", strerror(errno)) < 0)
            buf[1] = NULL;
        goto close;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    /* The server blocks SIGINT and SIGTERM in every thread and ignores SIGPIPE (serve.c): the
     * child, and the ssh and ranks' commands it runs, start with no signal blocked and those
     * three at their defaults, so that a Ctrl-C, a kill or a closed pipe ends them. */
    posix_spawnattr_t sa;
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGPIPE);
    posix_spawnattr_init(&sa);
    posix_spawnattr_setsigmask(&sa, &none);
    posix_spawnattr_setsigdefault(&sa, &dflt);
    posix_spawnattr_setflags(&sa, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(&child, "/proc/self/exe", &fa, &sa, argv, environ);
    posix_spawnattr_destroy(&sa);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;
    if (rc != 0) {
        if (asprintf(&buf[1], "cannot run probing: %s", strerror(rc)) < 0)
            buf[1] = NULL;
        goto close;
    }
    FILE *mem[2] = {open_memstream(&buf[0], &len[0]), open_memstream(&buf[1], &len[1])};
    struct pollfd pf[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0 && poll(pf, 2, -1) >= 0) {
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !pf[i].revents)
                continue;
            char chunk[65536];
            ssize_t got = read(pf[i].fd, chunk, sizeof chunk);
            if (got > 0) {
                fwrite(chunk, 1, (size_t)got, mem[i]);
            } else if (got == 0 || errno != EINTR) {
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
    fclose(mem[0]);
    fclose(mem[1]);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
close:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    *out_buf = buf[0];
    *err_buf = buf[1];
    return status;
}

/* The first line of a child's stderr (cut there), or fallback when it wrote nothing. */
static const char *first_line(char *s, const char *fallback)
{
    if (!s || !*s)
        return fallback;
    char *nl = strchr(s, '\n');
    if (nl)
        *nl = '\0';
    return s;
}

/* A `probing cluster ... --json` child's document as the reply: 200, or 502 with its error. */
static void run_self(char **argv, struct cli_serve_reply *r)
{
    char *out = NULL, *err = NULL;
    int status = run_child(argv, 1, &out, &err);
    cJSON *doc = status >= 0 && out ? cJSON_Parse(out) : NULL;
    if (doc) {
        cli_serve_json(r, 200, doc);
    } else {
        cli_serve_error(r, status < 0 ? 500 : 502, "%s", first_line(err, "probing cluster failed"));
    }
    free(out);
    free(err);
}

int cli_serve_check_hosts(char *msg, size_t n)
{
    char a1[] = "cluster", a2[] = "hosts";
    char *argv[4 + CLI_SERVE_MAX_CLUSTER_ARGS] = {NULL, a1, a2, NULL};
    char *out = NULL, *err = NULL;
    int status = run_child(argv, 1, &out, &err), rc = 0;
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *line = first_line(err, "probing cluster hosts failed");
        snprintf(msg, n, "%s", strncmp(line, "probing: error: ", 16) ? line : line + 16);
        rc = -1;
    }
    free(out);
    free(err);
    return rc;
}

/* The request body (a JSON object the caller deletes) with its member key, a non-empty
 * string, in *val; or NULL with r filled (400: what) when either is missing. */
static cJSON *body_string(const char *body, const char *key, const char **val, const char *what,
                          struct cli_serve_reply *r)
{
    cJSON *j = cli_serve_body(body, r);
    *val = cli_json_str(j, key);
    if (j && (!*val || !**val)) {
        cJSON_Delete(j);
        cli_serve_error(r, 400, "%s", what);
        return NULL;
    }
    return j;
}

void cli_serve_jobs(struct cli_serve_reply *r)
{
    char a1[] = "cluster", a2[] = "list", a3[] = "--json";
    char *argv[5 + CLI_SERVE_MAX_CLUSTER_ARGS] = {NULL, a1, a2, a3, NULL};
    run_self(argv, r);
}

void cli_serve_job_stacks(const char *body, struct cli_serve_reply *r)
{
    const char *job;
    cJSON *j = body_string(body, "job", &job,
                           "job: expected the job's name (GET /api/jobs lists them)", r);
    if (!j)
        return;
    char a1[] = "cluster", a2[] = "stacks", a3[] = "--json", a4[] = "--job", *a5 = strdup(job);
    char *argv[7 + CLI_SERVE_MAX_CLUSTER_ARGS] = {NULL, a1, a2, a3, a4, a5, NULL};
    cJSON_Delete(j);
    if (!a5) {
        cli_serve_error(r, 500, "out of memory");
        return;
    }
    run_self(argv, r);
    free(a5);
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
static void post_action(pid_t pid, const char *body, const char *command, const char *num_key,
                        const char *str_key, struct cli_serve_reply *r)
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
    cJSON *out = call(pid, command, args, 0, r);
    if (out)
        cli_serve_json(r, 200, out);
}

void cli_serve_torch(pid_t pid, const char *body, struct cli_serve_reply *r)
{
    post_action(pid, body, "probing/torch", "every", NULL, r);
}

void cli_serve_torch_trace(pid_t pid, const char *steps, struct cli_serve_reply *r)
{
    char *end = NULL, sql[256];
    struct pb_err err = {0};
    struct dap_client dc;
    long n = steps ? strtol(steps, &end, 10) : 3;
    if (steps && (*end || end == steps || n < 1 || n > 100))
        cli_serve_error(r, 400, "steps '%s': expected 1 to 100", steps);
    if (r->body || connect_query(pid, &dc, r) < 0)
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
                        "no traced step in process %d yet: start perf --torch (POST "
                        "/api/processes/%d/torch) and let a step end",
                        (int)pid, (int)pid);
    else if (rc < 0 || !(root = cli_torch_trace(&dc, (int)pid, rows, &nevents, &err)))
        cli_serve_error(r, rc == PB_EREFUSED ? 400 : 502, "%s", err.msg);
    cli_disconnect(&dc);
    cJSON_Delete(body);
    if (root)
        cli_serve_json(r, 200, root);
}

void cli_serve_query(pid_t pid, const char *body, struct cli_serve_reply *r)
{
    const char *sql;
    cJSON *j = body_string(body, "sql", &sql, "sql: expected a non-empty string", r);
    if (!j)
        return;
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sql", sql);
    cJSON_Delete(j);
    cJSON *out = call(pid, "probing/query", args, 1, r);
    if (out)
        cli_serve_json(r, 200, out);
}

void cli_serve_attach(pid_t pid, struct cli_serve_reply *r)
{
    /* One injection at a time: ptrace from several threads at once gains nothing. */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    char version[32] = "";
    if (pid < 0) {
        cli_serve_error(r, 400, "a remote probe (%s) is loaded already: nothing to attach",
                        -1 - (int)pid < cli_serve_ntargets ? cli_serve_target_names[-1 - pid]
                                                           : "?");
        return;
    }
    int injected = 0, rc = allowed(pid, &err);
    if (rc == 0) {
        pthread_mutex_lock(&lock);
        rc = cli_probe_ensure(pid, &injected, version, sizeof version, &err);
        pthread_mutex_unlock(&lock);
    }
    if (rc < 0) {
        cli_serve_error(r, status_of(rc), "%s", err.msg);
        return;
    }
    /* Answer once the agent does (it starts a moment after dlopen returned). */
    struct dap_client dc;
    dap_client_init(&dc, DAP_TIMEOUT_MS);
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

void cli_serve_perf(pid_t pid, const char *body, struct cli_serve_reply *r)
{
    post_action(pid, body, "probing/perf", "rate", "mode", r);
}

void cli_serve_flamegraph(pid_t pid, const char *format, const struct cli_fg_opts *flt,
                          struct cli_serve_reply *r)
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
    if (connect_query(pid, &dc, r) < 0)
        return;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = f ? cli_flamegraph_write(&dc, pid, format, flt, f, &err) : -1;
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

/* A Prometheus label value: backslash, quote and newline escaped (text format 0.0.4). */
static void label(FILE *f, const char *k, const char *v, int first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", k);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fputc('\\', f);
        if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

/* {pid, rank, job} and up to two more labels (k1/v1, k2/v2 may be NULL). */
static void labels_with(FILE *f, const cJSON *p, const char *k1, const char *v1, const char *k2,
                        const char *v2)
{
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)cli_json_num(p, "pid", 0));
    fputc('{', f);
    label(f, "pid", pid, 1);
    if (cli_json_str(p, "job")) {
        char rank[16];
        snprintf(rank, sizeof rank, "%d", (int)cli_json_num(p, "rank", 0));
        label(f, "rank", rank, 0);
        label(f, "job", cli_json_str(p, "job"), 0);
    }
    if (cli_json_str(p, "target"))
        label(f, "target", cli_json_str(p, "target"), 0);
    if (k1)
        label(f, k1, v1, 0);
    if (k2)
        label(f, k2, v2, 0);
    fputc('}', f);
}

static void labels(FILE *f, const cJSON *p)
{
    labels_with(f, p, NULL, NULL, NULL, NULL);
}

/* perf --torch's step times (a histogram) and per-module means, when it has run in pid:
 * p gains "torchSteps" (the row count, sum, bucket counts) and "torchModules" (rows module,
 * stage, mean seconds). */
static const double step_buckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
#define N_STEP_BUCKETS (sizeof step_buckets / sizeof step_buckets[0])

static void torch_metrics(struct dap_client *dc, cJSON *p)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", "status");
    int ran = dap_client_request(dc, "probing/torch", args, &body, &err) == 0 &&
              cli_json_num(body, "step", 0) > 0;
    cJSON_Delete(body);
    if (!ran)
        return;
    char sql[1024];
    size_t k = (size_t)snprintf(sql, sizeof sql, "SELECT COUNT(*), TOTAL(duration)");
    for (size_t i = 0; i < N_STEP_BUCKETS; i++)
        k += (size_t)snprintf(sql + k, sizeof sql - k, ", TOTAL(duration <= %g)", step_buckets[i]);
    snprintf(sql + k, sizeof sql - k, " FROM python.torch_steps");
    if ((body = cli_query(dc, sql, &err)) != NULL)
        cJSON_AddItemToObject(
            p, "torchSteps",
            cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(body, "rows"), 0));
    cJSON_Delete(body);
    if ((body = cli_query(dc,
                          "SELECT module, stage, AVG(duration) FROM python.torch_trace "
                          "WHERE stage IN ('forward_post', 'backward_post') GROUP BY 1, 2 "
                          "ORDER BY 1, 2",
                          &err)) != NULL)
        cJSON_AddItemToObject(p, "torchModules",
                              cJSON_DetachItemFromObjectCaseSensitive(body, "rows"));
    cJSON_Delete(body);
}

static void write_torch_metrics(FILE *f, const cJSON *procs)
{
    const cJSON *p;
    fputs("# HELP probing_torch_step_seconds Step times perf --torch saw (python.torch_steps).\n"
          "# TYPE probing_torch_step_seconds histogram\n",
          f);
    cJSON_ArrayForEach(p, procs)
    {
        const cJSON *row = cJSON_GetObjectItemCaseSensitive(p, "torchSteps");
        if (cJSON_GetArraySize(row) != (int)N_STEP_BUCKETS + 2)
            continue;
        for (size_t i = 0; i < N_STEP_BUCKETS; i++) {
            char le[32];
            snprintf(le, sizeof le, "%g", step_buckets[i]);
            fputs("probing_torch_step_seconds_bucket", f);
            labels_with(f, p, "le", le, NULL, NULL);
            fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, (int)i + 2)->valuedouble);
        }
        fputs("probing_torch_step_seconds_bucket", f);
        labels_with(f, p, "le", "+Inf", NULL, NULL);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 0)->valuedouble);
        fputs("probing_torch_step_seconds_sum", f);
        labels(f, p);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 1)->valuedouble);
        fputs("probing_torch_step_seconds_count", f);
        labels(f, p);
        fprintf(f, " %.17g\n", cJSON_GetArrayItem(row, 0)->valuedouble);
    }
    fputs("# HELP probing_torch_module_seconds Mean time of a module's forward or backward call "
          "(perf --torch, python.torch_trace).\n"
          "# TYPE probing_torch_module_seconds gauge\n",
          f);
    cJSON_ArrayForEach(p, procs)
    {
        const cJSON *row;
        cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(p, "torchModules"))
        {
            const cJSON *mod = cJSON_GetArrayItem(row, 0), *stage = cJSON_GetArrayItem(row, 1);
            const cJSON *mean = cJSON_GetArrayItem(row, 2);
            if (!cJSON_IsString(mod) || !cJSON_IsString(stage) || !cJSON_IsNumber(mean))
                continue;
            fputs("probing_torch_module_seconds", f);
            labels_with(f, p, "module", mod->valuestring, "stage",
                        strncmp(stage->valuestring, "forward", 7) == 0 ? "forward" : "backward");
            fprintf(f, " %.17g\n", mean->valuedouble);
        }
    }
}

/* GET /api/gpus: {"gpus": [...], "processes": [...]} from NVML (common/nvml.c), or
 * {"gpus": [], "processes": [], "error": "no NVIDIA GPU or driver..."} (200 either way). */
void cli_serve_gpus(struct cli_serve_reply *r)
{
    static struct pb_gpu g[PB_GPU_MAX];
    static struct pb_gpu_proc gp[PB_GPU_PROC_MAX];
    static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    int np = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON *ga = cJSON_AddArrayToObject(o, "gpus"), *pa = cJSON_AddArrayToObject(o, "processes");
    pthread_mutex_lock(&gmu);
    int n = pb_nvml_read(g, gp, &np, &err);
    if (n < 0)
        cJSON_AddStringToObject(o, "error", err.msg);
    for (int i = 0; i < n; i++) {
        cJSON *d = cJSON_CreateObject();
        char thr[160];
        pb_nvml_throttle_names(g[i].throttle, thr, sizeof thr);
        cJSON_AddNumberToObject(d, "gpu", g[i].index);
        cJSON_AddStringToObject(d, "name", g[i].name);
        cJSON_AddStringToObject(d, "uuid", g[i].uuid);
        const struct {
            const char *k;
            double v;
        } f[] = {{"utilGpu", g[i].util_gpu},
                 {"utilMem", g[i].util_mem},
                 {"memUsed", (double)g[i].mem_used},
                 {"memTotal", (double)g[i].mem_total},
                 {"temperatureC", g[i].temp_c},
                 {"powerW", g[i].power_w},
                 {"powerLimitW", g[i].power_limit_w},
                 {"clockSmMhz", g[i].clock_sm_mhz},
                 {"clockMemMhz", g[i].clock_mem_mhz},
                 {"eccCorrected", (double)g[i].ecc_corrected},
                 {"eccUncorrected", (double)g[i].ecc_uncorrected},
                 {"xidCount", (double)g[i].xid_count},
                 {"lastXid", (double)g[i].last_xid}};
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
            if (f[k].v < 0)
                cJSON_AddNullToObject(d, f[k].k);
            else
                cJSON_AddNumberToObject(d, f[k].k, f[k].v);
        }
        if (g[i].throttle < 0)
            cJSON_AddNullToObject(d, "throttle");
        else
            cJSON_AddStringToObject(d, "throttle", thr);
        cJSON_AddItemToArray(ga, d);
    }
    for (int i = 0; i < np; i++) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddNumberToObject(d, "gpu", gp[i].gpu);
        cJSON_AddNumberToObject(d, "pid", (double)gp[i].pid);
        if (gp[i].used < 0)
            cJSON_AddNullToObject(d, "usedMemory");
        else
            cJSON_AddNumberToObject(d, "usedMemory", (double)gp[i].used);
        cJSON_AddItemToArray(pa, d);
    }
    pthread_mutex_unlock(&gmu);
    cli_serve_json(r, 200, o);
}

/* The machine's NVIDIA GPUs, read here by probing serve itself (common/nvml.c: NVML by dlopen
 * at the first scrape), and the GPU memory of each process, labelled as the process's other
 * figures when it is one of procs. Without a GPU or driver, one comment line says so. */
static void write_gpu_metrics(FILE *f, const cJSON *procs)
{
    static struct pb_gpu g[PB_GPU_MAX];
    static struct pb_gpu_proc gp[PB_GPU_PROC_MAX];
    static pthread_mutex_t gmu = PTHREAD_MUTEX_INITIALIZER;
    struct pb_err err = {0};
    int np = 0;
    pthread_mutex_lock(&gmu);
    int n = pb_nvml_read(g, gp, &np, &err);
    if (n < 0) {
        fprintf(f, "# probing: %s\n", err.msg);
        pthread_mutex_unlock(&gmu);
        return;
    }
    static const struct {
        const char *name, *type, *help;
        int field;
    } m[] = {
        {"probing_gpu_utilization_percent", "gauge",
         "Percent of the last sample period a kernel ran on the GPU (NVML)", 0},
        {"probing_gpu_memory_utilization_percent", "gauge",
         "Percent of the last sample period device memory was read or written", 1},
        {"probing_gpu_memory_used_bytes", "gauge", "Device memory used (every process)", 2},
        {"probing_gpu_memory_total_bytes", "gauge", "Device memory", 3},
        {"probing_gpu_temperature_celsius", "gauge", "GPU temperature", 4},
        {"probing_gpu_power_watts", "gauge", "Power draw", 5},
        {"probing_gpu_power_limit_watts", "gauge", "Enforced power limit", 6},
        {"probing_gpu_sm_clock_hertz", "gauge", "SM clock", 7},
        {"probing_gpu_memory_clock_hertz", "gauge", "Memory clock", 8},
        {"probing_gpu_throttle_reasons", "gauge",
         "Clock throttle reasons, NVML's bit mask (0 none, 1 idle)", 9},
        {"probing_gpu_ecc_corrected_errors_total", "counter",
         "Corrected ECC errors since the driver loaded", 10},
        {"probing_gpu_ecc_uncorrected_errors_total", "counter",
         "Uncorrected ECC errors since the driver loaded", 11},
        {"probing_gpu_xid_errors_total", "counter",
         "Critical XID events NVML reported since probing serve began to read GPUs", 12},
    };
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        fprintf(f, "# HELP %s %s.\n# TYPE %s %s\n", m[k].name, m[k].help, m[k].name, m[k].type);
        for (int i = 0; i < n; i++) {
            const double v[] = {g[i].util_gpu,
                                g[i].util_mem,
                                (double)g[i].mem_used,
                                (double)g[i].mem_total,
                                g[i].temp_c,
                                g[i].power_w,
                                g[i].power_limit_w,
                                g[i].clock_sm_mhz < 0 ? -1 : g[i].clock_sm_mhz * 1e6,
                                g[i].clock_mem_mhz < 0 ? -1 : g[i].clock_mem_mhz * 1e6,
                                (double)g[i].throttle,
                                (double)g[i].ecc_corrected,
                                (double)g[i].ecc_uncorrected,
                                (double)g[i].xid_count};
            if (v[m[k].field] < 0)
                continue;
            char idx[16];
            snprintf(idx, sizeof idx, "%d", g[i].index);
            fprintf(f, "%s{", m[k].name);
            label(f, "gpu", idx, 1);
            label(f, "uuid", g[i].uuid, 0);
            label(f, "name", g[i].name, 0);
            fprintf(f, "} %.17g\n", v[m[k].field]);
        }
    }
    fputs("# HELP probing_gpu_process_memory_bytes Device memory a process holds on a GPU (NVML).\n"
          "# TYPE probing_gpu_process_memory_bytes gauge\n",
          f);
    for (int i = 0; i < np; i++) {
        if (gp[i].used < 0)
            continue;
        char idx[16], pid[24];
        snprintf(idx, sizeof idx, "%d", gp[i].gpu);
        snprintf(pid, sizeof pid, "%ld", gp[i].pid);
        const cJSON *p, *match = NULL;
        cJSON_ArrayForEach(p, procs)
        {
            if ((long)cli_json_num(p, "pid", 0) == gp[i].pid)
                match = p;
        }
        fputs("probing_gpu_process_memory_bytes", f);
        if (match) {
            labels_with(f, match, "gpu", idx, NULL, NULL);
        } else {
            fputc('{', f);
            label(f, "pid", pid, 1);
            label(f, "gpu", idx, 0);
            fputc('}', f);
        }
        fprintf(f, " %lld\n", gp[i].used);
    }
    pthread_mutex_unlock(&gmu);
}

/* /metrics asks the probes in parallel: a round (one per scrape) of jobs (one per probe), each
 * on a detached thread; the scrape waits until all answered or its deadline passed, and the
 * last one out of the scrape and the threads frees the round. */
#define METRICS_DEADLINE_MS 5000
struct metrics_round;
struct metrics_job {
    struct metrics_round *round;
    pid_t pid;
    cJSON *res; /* the figures, moved into the process's object when done in time */
    int done;
};
struct metrics_round {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC, as cli_now_ms */
    long long deadline;
    int refs, pending, n;
    struct metrics_job jobs[];
};

static void metrics_round_free(struct metrics_round *round)
{
    for (int i = 0; i < round->n; i++)
        cJSON_Delete(round->jobs[i].res);
    pthread_mutex_destroy(&round->mu);
    pthread_cond_destroy(&round->cv);
    free(round);
}

static void metrics_done(struct metrics_job *j)
{
    struct metrics_round *round = j->round;
    pthread_mutex_lock(&round->mu);
    j->done = 1;
    round->pending--;
    pthread_cond_broadcast(&round->cv);
    int last = --round->refs == 0;
    pthread_mutex_unlock(&round->mu);
    if (last)
        metrics_round_free(round);
}

/* Before each request: the time left to the round's deadline (at least 1 ms). */
static int metrics_left(const struct metrics_job *j)
{
    long long left = j->round->deadline - cli_now_ms();
    return left < 1 ? 1 : (int)left;
}

static void *metrics_ask(void *arg)
{
    struct metrics_job *j = arg;
    cJSON *p = j->res;
    struct pb_err err = {0};
    struct dap_client dc;
    /* The dump for threads and GIL (read without the GIL, no locals), perf status for the
     * sampler, torch's figures. */
    if (connect_probe_within(j->pid, &dc, metrics_left(j), &err) == 0) {
        cJSON *args = cJSON_CreateObject(), *body = NULL;
        cJSON_AddBoolToObject(args, "locals", 0);
        dc.timeout_ms = metrics_left(j);
        if (dap_client_request(&dc, "probing/dump", args, &body, &err) == 0) {
            const cJSON *gil = cJSON_GetObjectItemCaseSensitive(body, "gil");
            cJSON_AddNumberToObject(
                p, "pythreads",
                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(body, "threads")));
            cJSON_AddNumberToObject(
                p, "gil", cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(gil, "holder")));
        }
        cJSON_Delete(body);
        body = NULL;
        args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "action", "status");
        dc.timeout_ms = metrics_left(j);
        if (dap_client_request(&dc, "probing/perf", args, &body, &err) == 0) {
            cJSON_AddNumberToObject(p, "running", cli_json_true(body, "running"));
            cJSON_AddNumberToObject(p, "samples", cli_json_num(body, "samples", 0));
            cJSON_AddNumberToObject(p, "missed", cli_json_num(body, "missed", 0));
            cJSON_AddNumberToObject(p, "lost", cli_json_num(body, "lost", 0));
        }
        cJSON_Delete(body);
        dc.timeout_ms = metrics_left(j);
        torch_metrics(&dc, p);
        cli_disconnect(&dc);
    }
    metrics_done(j);
    return NULL;
}

void cli_serve_metrics(struct cli_serve_reply *r)
{
    static const struct {
        const char *name, *type, *help, *key;
    } m[] = {
        {"probing_process_resident_memory_bytes", "gauge", "Resident memory (VmRSS)", "rss"},
        {"probing_process_threads", "gauge", "Threads of the process (all, native)", "threads"},
        {"probing_probe_loaded", "gauge", "1 when the probe is loaded", "probe"},
        {"probing_python_threads", "gauge", "Python threads (probe loaded)", "pythreads"},
        {"probing_gil_held", "gauge", "1 when a thread held the GIL when asked", "gil"},
        {"probing_perf_running", "gauge", "1 while perf --cc samples", "running"},
        {"probing_perf_samples_total", "counter", "Samples perf --cc kept", "samples"},
        {"probing_perf_missed_total", "counter", "Samples perf --cc missed", "missed"},
        {"probing_perf_lost_total", "counter", "Samples perf --cc could not keep", "lost"},
    };
    cJSON *procs = python_processes(), *p;
    int n = 0;
    cJSON_ArrayForEach(p, procs)
    {
        cJSON_ReplaceItemInObjectCaseSensitive(p, "probe",
                                               cJSON_CreateNumber(cli_json_true(p, "probe")));
        n += cli_json_num(p, "probe", 0) != 0;
    }
    /* Every probe at once, all under one deadline: a process posing as a probe that never
     * answers costs one METRICS_DEADLINE_MS per scrape, not a timeout per process. */
    struct metrics_round *round = calloc(1, sizeof *round + (size_t)n * sizeof round->jobs[0]);
    if (round) {
        pthread_mutex_init(&round->mu, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&round->cv, &ca);
        pthread_condattr_destroy(&ca);
        round->deadline = cli_now_ms() + METRICS_DEADLINE_MS;
        round->refs = 1;
        round->n = n;
        int i = 0;
        cJSON_ArrayForEach(p, procs)
        {
            if (!cli_json_num(p, "probe", 0) || i >= n)
                continue;
            struct metrics_job *j = &round->jobs[i++];
            j->round = round;
            j->pid = (pid_t)cli_json_num(p, "key", 0);
            j->res = cJSON_CreateObject();
            pthread_t th;
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
            pthread_mutex_lock(&round->mu);
            round->refs++;
            round->pending++;
            pthread_mutex_unlock(&round->mu);
            if (!j->res || pthread_create(&th, &at, metrics_ask, j) != 0)
                metrics_done(j);
            pthread_attr_destroy(&at);
        }
        pthread_mutex_lock(&round->mu);
        struct timespec until = {(time_t)(round->deadline / 1000),
                                 (long)(round->deadline % 1000) * 1000000L};
        while (round->pending > 0 &&
               pthread_cond_timedwait(&round->cv, &round->mu, &until) != ETIMEDOUT)
            ;
        /* What the probes that answered in time said; the others' threads finish alone. */
        i = 0;
        cJSON_ArrayForEach(p, procs)
        {
            if (!cli_json_num(p, "probe", 0) || i >= n)
                continue;
            struct metrics_job *j = &round->jobs[i++];
            if (!j->done || !j->res)
                continue;
            cJSON *item;
            while ((item = j->res->child) != NULL) {
                cJSON_DetachItemViaPointer(j->res, item);
                cJSON_AddItemToObject(p, item->string, item);
            }
        }
        int last = --round->refs == 0;
        pthread_mutex_unlock(&round->mu);
        if (last)
            metrics_round_free(round);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        cJSON_Delete(procs);
        cli_serve_error(r, 500, "out of memory");
        return;
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        fprintf(f, "# HELP %s %s.\n# TYPE %s %s\n", m[i].name, m[i].help, m[i].name, m[i].type);
        cJSON_ArrayForEach(p, procs)
        {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, m[i].key);
            if (!cJSON_IsNumber(v) || v->valuedouble < 0)
                continue;
            fputs(m[i].name, f);
            labels(f, p);
            fprintf(f, " %.17g\n", v->valuedouble);
        }
    }
    write_torch_metrics(f, procs);
    write_gpu_metrics(f, procs);
    fclose(f);
    cJSON_Delete(procs);
    r->status = 200;
    r->type = "text/plain; version=0.0.4; charset=utf-8";
    r->body = buf;
    r->len = len;
}
