/* SPDX-License-Identifier: MIT */
/* `probing serve`'s distributed jobs (GET /api/jobs, POST /api/jobs/stacks) and the host
 * options' check at start: `probing cluster ... --json` run as a child of this server (it
 * forks a child per rank: a process of its own rather than forked from this threaded server),
 * with the host options serve was given appended. api.c runs a child here too (a process's
 * subprocesses, read from outside). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

char *cli_serve_cluster_args[CLI_SERVE_MAX_CLUSTER_ARGS];
int cli_serve_ncluster_args;

int cli_serve_run_child(char **argv, int cluster, char **out_buf, char **err_buf)
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

const char *cli_serve_first_line(char *s, const char *fallback)
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
    int status = cli_serve_run_child(argv, 1, &out, &err);
    cJSON *doc = status >= 0 && out ? cJSON_Parse(out) : NULL;
    if (doc) {
        cli_serve_json(r, 200, doc);
    } else {
        cli_serve_error(r, status < 0 ? 500 : 502, "%s",
                        cli_serve_first_line(err, "probing cluster failed"));
    }
    free(out);
    free(err);
}

int cli_serve_check_hosts(char *msg, size_t n)
{
    char a1[] = "cluster", a2[] = "hosts";
    char *argv[4 + CLI_SERVE_MAX_CLUSTER_ARGS] = {NULL, a1, a2, NULL};
    char *out = NULL, *err = NULL;
    int status = cli_serve_run_child(argv, 1, &out, &err), rc = 0;
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const char *line = cli_serve_first_line(err, "probing cluster hosts failed");
        snprintf(msg, n, "%s", strncmp(line, "probing: error: ", 16) ? line : line + 16);
        rc = -1;
    }
    free(out);
    free(err);
    return rc;
}

cJSON *cli_serve_body_string(const char *body, const char *key, const char **val, const char *what,
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
    cJSON *j = cli_serve_body_string(body, "job", &job,
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
