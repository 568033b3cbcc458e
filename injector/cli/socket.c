/* SPDX-License-Identifier: MIT */
/* The probe's Unix socket: found through /proc/PID/root (so a target in its own mount
 * namespace with a private /tmp is reached too), checked to be the probe's before connecting
 * (its directory and the socket owned by the target's user, no links) and after (the peer is
 * the target itself), then connected, waiting for an agent that is starting. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

int cli_socket_locate(pid_t pid, char *buf, size_t n, uid_t *uid, struct pb_err *err)
{
    char path[64], status[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    long len = pb_read_file(path, status, sizeof status);
    if (len == -ENOENT)
        return pb_err_set(err, -ESRCH, "no process %d: check the pid", (int)pid);
    if (len < 0)
        return pb_err_set(err, (int)len, "cannot read %s: %s", path, strerror((int)-len));
    /* The socket directory is named after the effective uid: Uid's second value. */
    const char *u = strstr(status, "\nUid:");
    long ruid, euid = -1, nspid = cli_proc_status_value(status, "NSpid", 1);
    if (u && sscanf(u + 5, "%ld %ld", &ruid, &euid) != 2)
        euid = -1;
    if (euid < 0)
        return pb_err_set(err, -EINVAL, "cannot read the uid of process %d", (int)pid);
    /* <pid>-<ns>.sock: the pid as the target sees it and the inode of its PID namespace (two
     * processes with the same pid in two namespaces sharing /tmp get two names,
     * probe/core/rundir.c). A probe loaded before that name, or one without /proc, listens on
     * <pid>.sock: taken when it exists and the new name does not. */
    long tpid = nspid > 0 ? nspid : (long)pid;
    struct stat st;
    char ns[64];
    snprintf(ns, sizeof ns, "/proc/%d/ns/pid", (int)pid);
    if (stat(ns, &st) == 0) {
        snprintf(buf, n, "/proc/%d/root/tmp/probing-%ld/%ld-%lu.sock", (int)pid, euid, tpid,
                 (unsigned long)st.st_ino);
        char old[256];
        snprintf(old, sizeof old, "/proc/%d/root/tmp/probing-%ld/%ld.sock", (int)pid, euid, tpid);
        if (lstat(buf, &st) < 0 && lstat(old, &st) == 0)
            pb_strlcpy(buf, old, n);
    } else {
        snprintf(buf, n, "/proc/%d/root/tmp/probing-%ld/%ld.sock", (int)pid, euid, tpid);
    }
    if (uid)
        *uid = (uid_t)euid;
    return 0;
}

/* What to say about a socket that is not the probe's: another user may have made its
 * directory before the probe did (the probe then refuses to serve there, and whatever listens
 * at the path is theirs). */
#define NOT_OURS "it is not the probe's: another user may have made it; remove it"

/* Before connecting: the socket's directory must be a real directory (not a symbolic link)
 * owned by uid with no access for others (0700), and the socket a socket owned by uid.
 * Whatever does not exist yet is left to connect() (the agent may be starting). */
int cli_socket_check(const char *path, uid_t uid, struct pb_err *err)
{
    char dir[256];
    struct stat st;
    pb_strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (lstat(dir, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return pb_err_set(err, PB_EAUTH,
                              "refusing %s: a symbolic link, not a directory: " NOT_OURS, dir);
        if (!S_ISDIR(st.st_mode))
            return pb_err_set(err, PB_EAUTH, "refusing %s: not a directory: " NOT_OURS, dir);
        if (st.st_uid != uid)
            return pb_err_set(err, PB_EAUTH,
                              "refusing %s: owned by uid %u, not by the target's "
                              "uid %u: " NOT_OURS,
                              dir, (unsigned)st.st_uid, (unsigned)uid);
        if (st.st_mode & 077) /* the probe's own rule (probe/core/rundir.c) */
            return pb_err_set(err, PB_EAUTH,
                              "refusing %s: mode %04o lets other users in, not "
                              "0700: " NOT_OURS,
                              dir, (unsigned)(st.st_mode & 07777));
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return pb_err_set(err, PB_EAUTH, "refusing %s: not a socket: " NOT_OURS, path);
        if (st.st_uid != uid)
            return pb_err_set(err, PB_EAUTH,
                              "refusing %s: owned by uid %u, not by the target's "
                              "uid %u: " NOT_OURS,
                              path, (unsigned)st.st_uid, (unsigned)uid);
    }
    return 0;
}

/* After connecting, before a byte is sent: the peer (SO_PEERCRED: who listens) must be pid
 * itself, as our PID namespace sees it. A peer the kernel cannot name in our namespace (pid 0:
 * a listener in a namespace we do not see) must at least run as the target's uid. */
static int socket_peer_check(int fd, pid_t pid, uid_t uid, const char *path, struct pb_err *err)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return pb_err_set(err, -errno, "refusing %s: cannot read its peer's credentials: %s", path,
                          strerror(errno));
    if (cr.pid == pid || (cr.pid == 0 && cr.uid == uid))
        return 0;
    if (cr.pid == 0)
        return pb_err_set(err, PB_EAUTH,
                          "refusing %s: served by a process of uid %u, not by the "
                          "target's uid %u: " NOT_OURS,
                          path, (unsigned)cr.uid, (unsigned)uid);
    if (cr.uid == uid) /* the same user: not an intruder, another process at the target's name */
        return pb_err_set(err, PB_EAUTH,
                          "refusing %s: served by process %d (uid %u), not by "
                          "%d: another process of the target's own user listens there (one with "
                          "the same pid in another PID namespace sharing /tmp, running an older "
                          "probe?): stop it or give the target a private /tmp",
                          path, (int)cr.pid, (unsigned)cr.uid, (int)pid);
    return pb_err_set(err, PB_EAUTH,
                      "refusing %s: served by process %d (uid %u), not by %d: " NOT_OURS, path,
                      (int)cr.pid, (unsigned)cr.uid, (int)pid);
}

int cli_connect_pid(pid_t pid, int timeout_ms, struct dap_client *c, struct pb_err *err)
{
    char path[256];
    uid_t uid;
    int rc;
    long long deadline = cli_now_ms() + timeout_ms;
    for (;;) {
        /* again each time: the name (new or old, see cli_socket_locate) is the one there now */
        rc = cli_socket_locate(pid, path, sizeof path, &uid, err);
        if (rc < 0)
            return rc;
        rc = cli_socket_check(path, uid, err);
        if (rc < 0)
            return rc;
        rc = dap_client_connect_unix(c, path, err);
        if (rc == 0) {
            rc = socket_peer_check(c->fd, pid, uid, path, err);
            if (rc < 0)
                dap_client_close(c);
            return rc;
        }
        if (rc == -EACCES)
            return pb_err_set(err, rc,
                              "connecting to the probe of %d denied (%s): run as the "
                              "process's user or root",
                              (int)pid, path);
        if (cli_now_ms() >= deadline)
            return pb_err_set(err, rc,
                              "the probe in %d does not answer on %s (%s): see the "
                              "probe's log (set PROBING_LOG in the target)",
                              (int)pid, path, strerror(-rc));
        /* The agent thread is starting: its socket appears within a millisecond or two of
         * the injection's end, so look again soon at first (a first stackTrace is one
         * injection plus a few round trips), then every 5 ms. */
        long waited = (long)(cli_now_ms() - (deadline - timeout_ms));
        struct timespec ts = {0, (waited < 50 ? 1 : 5) * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
