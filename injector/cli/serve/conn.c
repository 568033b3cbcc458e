/* SPDX-License-Identifier: MIT */
/* `probing serve`: reaching the probe of the process a path names, a local one through its
 * socket (never injecting: a process without the probe answers 409) or a remote one
 * (--target) over TCP with $PROBING_TOKEN, and one DAP request to it. Each request opens its
 * own connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "injector/ptrace/ptrace.h"
#include "internal.h"

struct cli_serve_target cli_serve_targets[CLI_SERVE_MAX_TARGETS];
int cli_serve_ntargets;

int cli_serve_status_of(int code)
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

int cli_serve_allowed(pid_t pid, struct pb_err *err)
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

const char *cli_serve_proc_name(const struct cli_serve_proc *p, char *buf, size_t n)
{
    if (p->kind == CLI_SERVE_REMOTE)
        snprintf(buf, n, "%s",
                 p->index >= 0 && p->index < cli_serve_ntargets ? cli_serve_targets[p->index].name
                                                                : "?");
    else
        snprintf(buf, n, "process %d", (int)p->pid);
    return buf;
}

static int connect_remote(int i, struct dap_client *dc, int timeout_ms, struct pb_err *err)
{
    const char *token = getenv("PROBING_TOKEN");
    if (i < 0 || i >= cli_serve_ntargets)
        return pb_err_set(err, -ESRCH, "no such target");
    dap_client_init(dc, timeout_ms);
    int rc = dap_client_connect_tcp(dc, cli_serve_targets[i].target.host,
                                    cli_serve_targets[i].target.port, err);
    if (rc == 0)
        rc = cli_handshake(dc, token, err);
    if (rc < 0)
        dap_client_close(dc);
    return rc;
}

int cli_serve_connect(const struct cli_serve_proc *p, struct dap_client *dc, int timeout_ms,
                      struct pb_err *err)
{
    if (p->kind == CLI_SERVE_REMOTE)
        return connect_remote(p->index, dc, timeout_ms, err);
    pid_t pid = p->pid;
    int rc = cli_serve_allowed(pid, err);
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

int cli_serve_connect_query(const struct cli_serve_proc *p, struct dap_client *dc,
                            struct cli_serve_reply *r)
{
    struct pb_err err = {0};
    if (cli_serve_connect(p, dc, SERVE_DAP_TIMEOUT_MS, &err) < 0) {
        cli_serve_error(r, cli_serve_status_of(err.code), "%s", err.msg);
        return -1;
    }
    cli_query_wait(dc, SERVE_DAP_TIMEOUT_MS);
    return 0;
}

cJSON *cli_serve_call(const struct cli_serve_proc *p, const char *command, cJSON *args,
                      int query_wait, struct cli_serve_reply *r)
{
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON *body = NULL;
    if (cli_serve_connect(p, &dc, SERVE_DAP_TIMEOUT_MS, &err) < 0) {
        cJSON_Delete(args);
        cli_serve_error(r, cli_serve_status_of(err.code), "%s", err.msg);
        return NULL;
    }
    if (query_wait)
        cli_query_wait(&dc, SERVE_DAP_TIMEOUT_MS);
    int rc = dap_client_request(&dc, command, args, &body, &err);
    cli_disconnect(&dc);
    if (rc < 0) {
        /* The probe refused it (a SQLite error, a bad argument): the client's fault. */
        cli_serve_error(r, rc == PB_EREFUSED ? 400 : 502, "%s", err.msg);
        return NULL;
    }
    return body;
}
