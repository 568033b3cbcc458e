/* SPDX-License-Identifier: MIT */
/* The directory holding the probe's Unix sockets: /tmp/probing-<euid>, mode 0700. If it exists it
 * must be a real directory owned by us with no group/other access; otherwise we refuse to serve
 * there (someone else could have prepared it to intercept connections). Sockets left by processes
 * that died without unlinking theirs (SIGKILL) are swept when a probe starts: those whose process
 * (named by the socket) is gone, where nobody listens. */
#include "core.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int core_rundir_path(char *buf, size_t n, struct pb_err *err)
{
    uid_t uid = geteuid();
    snprintf(buf, n, "/tmp/probing-%u", (unsigned)uid);
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return pb_err_set(err, -errno, "mkdir %s: %s", buf, strerror(errno));
    struct stat st;
    if (lstat(buf, &st) < 0)
        return pb_err_set(err, -errno, "stat %s: %s", buf, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
        return pb_err_set(err, -EPERM, "%s is not a private directory of uid %u: remove it", buf,
                          (unsigned)uid);
    return 0;
}

/* <dir>/<pid>-<ns>.sock: the pid as this process sees it and the inode of its PID namespace
 * (/proc/self/ns/pid), so that two processes with the same pid in two PID namespaces that share
 * /tmp never pick the same path. Without /proc (a container that mounts none): <dir>/<pid>.sock,
 * the name probes used before. The CLI computes the same name from outside: /proc/PID/status's
 * last NSpid and stat(/proc/PID/ns/pid). */
void core_rundir_socket_name(char *buf, size_t n, const char *dir, int pid)
{
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0)
        snprintf(buf, n, "%s/%d-%lu.sock", dir, pid, (unsigned long)st.st_ino);
    else
        snprintf(buf, n, "%s/%d.sock", dir, pid);
}

int core_rundir_socket_live(const char *path, pid_t *peer)
{
    struct stat st;
    if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(path) >= sizeof a.sun_path) {
        if (fd >= 0)
            close(fd);
        return 1; /* cannot tell: live, never unlinked */
    }
    strcpy(a.sun_path, path);
    int live = 1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        live = errno != ECONNREFUSED && errno != ENOENT;
    } else if (peer) {
        struct ucred cr;
        socklen_t len = sizeof cr;
        *peer = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 ? cr.pid : 0;
    }
    close(fd);
    return live;
}

/* Whether the socket at path has nobody listening: connect() is refused. A socket bound a moment
 * ago may not listen yet, so only sockets older than 10 s are judged. */
static int socket_is_dead(const char *path, const struct stat *st)
{
    if (!S_ISSOCK(st->st_mode) || st->st_uid != geteuid() || time(NULL) - st->st_mtime < 10)
        return 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        close(fd);
        return 0;
    }
    strcpy(a.sun_path, path);
    int dead = connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno == ECONNREFUSED;
    close(fd);
    return dead;
}

/* Whether the socket named name (<pid>-<ns>.sock) belongs to a process of our PID namespace
 * (inode ns) that still runs: its probe's, or a process that reused a dead one's pid; either way
 * it is left alone without connecting to it (which would wake a live probe for nothing). */
static int owner_runs(const char *name, unsigned long ns)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (ns == 0 || pid <= 0 || *end != '-' || strtoul(end + 1, &end, 10) != ns)
        return 0;
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int core_rundir_sweep(const char *dir, const char *own)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0, seen = 0;
    struct dirent *e;
    char path[512];
    struct stat self_ns;
    unsigned long ns = stat("/proc/self/ns/pid", &self_ns) == 0 ? (unsigned long)self_ns.st_ino : 0;
    while ((e = readdir(d)) != NULL && seen < 100000) {
        seen++;
        size_t n = strspn(e->d_name, "0123456789");
        if (n > 0 && e->d_name[n] == '-') /* <pid>-<ns>.sock */
            n += 1 + strspn(e->d_name + n + 1, "0123456789");
        if (n == 0 || strcmp(e->d_name + n, ".sock") != 0 || owner_runs(e->d_name, ns))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (strcmp(path, own) == 0 || lstat(path, &st) < 0)
            continue;
        if (socket_is_dead(path, &st) && unlink(path) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
