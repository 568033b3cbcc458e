/* SPDX-License-Identifier: MIT */
/* Child processes with deadlines, for `probing cluster`: one per node across nodes (the remote
 * command; this node's ranks are served by pool.c's workers). Each child's stdout and stderr are
 * read through pipes with poll(); a child past its deadline is killed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"

extern char **environ;

/* c->argv with stdin /dev/null and stdout, stderr on the pipes' write ends (o, e), in a process
 * group of its own when c->group: the child's pid, or -errno (exec failures included). */
static pid_t spawn(const struct cli_cluster_child *c, int o, int e)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid = -1;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return -rc;
    if ((rc = posix_spawnattr_init(&at)) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return -rc;
    }
    if (!(rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, o, 1)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, e, 2)) &&
        !(rc = posix_spawnattr_setflags(&at, c->group ? POSIX_SPAWN_SETPGROUP : 0)) &&
        !(rc = posix_spawnattr_setpgroup(&at, 0)))
        rc = posix_spawnp(&pid, c->argv[0], &fa, &at, c->argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc ? -rc : pid;
}

long long cli_cluster_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_cluster_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 4096;
        while (nc < *len + n + 1)
            nc *= 2;
        char *b = realloc(*buf, nc);
        if (!b)
            return; /* keep what we have: the parse fails and says so */
        *buf = b;
        *cap = nc;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
}

int cli_cluster_poll_add(struct pollfd *pfd, int *who, int np, int out, int err, int i)
{
    if (out >= 0) {
        pfd[np] = (struct pollfd){.fd = out, .events = POLLIN};
        who[np++] = i;
    }
    if (err >= 0) {
        pfd[np] = (struct pollfd){.fd = err, .events = POLLIN};
        who[np++] = -i - 1;
    }
    return np;
}

void cli_cluster_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int start_one(struct cli_cluster_child *c)
{
    int o[2], e[2];
    if (pipe2(o, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(e, O_CLOEXEC) < 0) {
        int rc = -errno;
        close(o[0]);
        close(o[1]);
        return rc;
    }
    pid_t pid = spawn(c, o[1], e[1]);
    if (pid < 0) {
        close(o[0]), close(o[1]), close(e[0]), close(e[1]);
        return pid;
    }
    close(o[1]);
    close(e[1]);
    c->pid = pid;
    c->out = o[0];
    c->err = e[0];
    c->state = CLUSTER_CHILD_RUNNING;
    return 0;
}

/* Reap c if it has exited (both pipes at EOF first). */
static void reap(struct cli_cluster_child *c)
{
    if (c->out >= 0 || c->err >= 0)
        return;
    if (waitpid(c->pid, &c->status, 0) == c->pid)
        c->state = CLUSTER_CHILD_DONE;
    else
        c->state = CLUSTER_CHILD_FAILED;
}

static void expire(struct cli_cluster_child *c)
{
    kill(c->group ? -c->pid : c->pid, SIGKILL);
    cli_cluster_close_fd(&c->out);
    cli_cluster_close_fd(&c->err);
    waitpid(c->pid, &c->status, 0);
    c->state = CLUSTER_CHILD_TIMEDOUT;
}

void cli_cluster_run(struct cli_cluster_child *c, int n, int parallel, int timeout_ms)
{
    struct pollfd *pfd = calloc((size_t)n * 2 + 1, sizeof *pfd);
    int *who = calloc((size_t)n * 2 + 1, sizeof *who);
    if (!pfd || !who) {
        free(pfd);
        free(who);
        for (int i = 0; i < n; i++)
            c[i].state = CLUSTER_CHILD_FAILED;
        return;
    }
    int next = 0, running = 0;
    for (;;) {
        while (next < n && running < parallel) {
            struct cli_cluster_child *x = &c[next];
            x->out = x->err = -1;
            int rc = x->argv ? start_one(x) : -ENOMEM;
            if (rc < 0) {
                x->state = CLUSTER_CHILD_FAILED;
                x->start_errno = -rc;
            } else {
                x->deadline = cli_cluster_now_ms() + timeout_ms;
                running++;
            }
            next++;
        }
        if (running == 0 && next >= n)
            break;
        int np = 0;
        long long now = cli_cluster_now_ms(), wait = 1000;
        for (int i = 0; i < n; i++) {
            struct cli_cluster_child *x = &c[i];
            if (x->state != CLUSTER_CHILD_RUNNING)
                continue;
            if (x->deadline - now < wait)
                wait = x->deadline - now;
            np = cli_cluster_poll_add(pfd, who, np, x->out, x->err, i);
        }
        int rc = poll(pfd, (nfds_t)np, wait < 0 ? 0 : (int)wait);
        if (rc < 0 && errno != EINTR)
            break;
        for (int k = 0; rc > 0 && k < np; k++) {
            if (!pfd[k].revents)
                continue;
            int i = who[k] >= 0 ? who[k] : -who[k] - 1;
            struct cli_cluster_child *x = &c[i];
            char buf[65536];
            int *fd = who[k] >= 0 ? &x->out : &x->err;
            ssize_t got = read(*fd, buf, sizeof buf);
            if (got > 0) {
                if (who[k] >= 0 && x->olen + (size_t)got > CLI_CLUSTER_MAX_OUTPUT) {
                    x->cut = 1; /* a node that floods: what came is dropped by the caller */
                    cli_cluster_close_fd(fd);
                    kill(x->group ? -x->pid : x->pid, SIGKILL);
                } else if (who[k] >= 0)
                    cli_cluster_append(&x->obuf, &x->olen, &x->ocap, buf, (size_t)got);
                else if (x->elen < 65536)
                    cli_cluster_append(&x->ebuf, &x->elen, &x->ecap, buf, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                cli_cluster_close_fd(fd);
            }
        }
        now = cli_cluster_now_ms();
        for (int i = 0; i < n; i++) {
            struct cli_cluster_child *x = &c[i];
            if (x->state != CLUSTER_CHILD_RUNNING)
                continue;
            if (x->out < 0 && x->err < 0)
                reap(x);
            else if (now >= x->deadline)
                expire(x);
            if (x->state != CLUSTER_CHILD_RUNNING)
                running--;
        }
    }
    free(pfd);
    free(who);
}

void cli_cluster_child_free(struct cli_cluster_child *c)
{
    if (!c)
        return;
    cli_cluster_close_fd(&c->out);
    cli_cluster_close_fd(&c->err);
    free(c->obuf);
    free(c->ebuf);
    c->obuf = c->ebuf = NULL;
}
