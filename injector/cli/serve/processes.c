/* SPDX-License-Identifier: MIT */
/* `probing serve`'s process list (GET /api/processes, and what /metrics reports on): the Python
 * processes of this user from /proc, with rank and job from the cluster discovery
 * (cluster/find.c), and the remote probes (--target) from their probing/info. Nothing is
 * injected. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "injector/cli/cluster/cluster.h"
#include "injector/ptrace/ptrace.h"
#include "internal.h"

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
    struct cli_serve_proc rp = {.kind = CLI_SERVE_REMOTE, .index = i};
    cJSON *p = cJSON_CreateObject(), *info = NULL;
    cJSON_AddStringToObject(p, "id", cli_serve_targets[i].name);
    cJSON_AddNumberToObject(p, "key", -1 - i); /* the page's key: unique, not a pid */
    cJSON_AddStringToObject(p, "target", cli_serve_targets[i].name);
    int rc = cli_serve_connect(&rp, &dc, SERVE_DAP_TIMEOUT_MS, &err);
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

cJSON *cli_serve_python_processes(void)
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
        if (pid == getpid() || cli_serve_allowed(pid, &err) < 0 ||
            ptrace_pyver_detect(pid, &pv, &err) < 0)
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
    cli_serve_json(r, 200, cli_serve_python_processes());
}

struct cli_serve_proc cli_serve_proc_of(const cJSON *entry)
{
    const char *target = cli_json_str(entry, "target");
    for (int i = 0; target && i < cli_serve_ntargets; i++)
        if (strcmp(target, cli_serve_targets[i].name) == 0)
            return (struct cli_serve_proc){.kind = CLI_SERVE_REMOTE, .index = i};
    if (target) /* not one of ours: reaches nothing */
        return (struct cli_serve_proc){.kind = CLI_SERVE_REMOTE, .index = -1};
    return (struct cli_serve_proc){.kind = CLI_SERVE_LOCAL,
                                   .pid = (pid_t)cli_json_num(entry, "pid", 0)};
}
