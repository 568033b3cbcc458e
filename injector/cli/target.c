/* SPDX-License-Identifier: MIT */
/* Reaching the probe: parse the target, find the probe libraries, make sure the probe is loaded
 * (injecting it when needed, a fresh copy into a fork child that inherited the probe without
 * its agent), find its socket through /proc/PID/root (so a target in its own mount namespace
 * with a private /tmp is reached too), and the DAP handshake of a CLI client. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "injector/inject/inj.h"

int cli_target_parse(const char *s, struct cli_target *t, struct pb_err *err)
{
    memset(t, 0, sizeof *t);
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end) {
        if (v <= 0 || v > INT_MAX)
            return pb_err_set(err, PB_EUSAGE, "'%s' is not a process id", s);
        t->pid = (pid_t)v;
        return 0;
    }
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return pb_err_set(err, PB_EUSAGE, "target '%s': expected PID or HOST:PORT", s);
    v = strtol(colon + 1, &end, 10);
    if (*end || v <= 0 || v > 65535)
        return pb_err_set(err, PB_EUSAGE, "target '%s': bad port", s);
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl > 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof t->host)
        return pb_err_set(err, PB_EUSAGE, "target '%s': host too long", s);
    memcpy(t->host, s, hl);
    t->host[hl] = '\0';
    t->port = (int)v;
    return 0;
}

int cli_libdir(char *buf, size_t n)
{
    const char *env = getenv("PROBING_LIBDIR");
    if (env && *env) {
        pb_strlcpy(buf, env, n);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return -errno;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    /* bin/probing looks in ../lib/probing; lib/probing/probing-serve (the CLI with serve) is
     * already there. */
    size_t el = strlen(exe);
    if (el >= 12 && strcmp(exe + el - 12, "/lib/probing") == 0)
        pb_strlcpy(buf, exe, n);
    else
        snprintf(buf, n, "%s/../lib/probing", exe);
    char *real = realpath(buf, NULL);
    if (real) {
        pb_strlcpy(buf, real, n);
        free(real);
    }
    return 0;
}

/* The value after "\nKey:" in a /proc/PID/status text: the first number, or the last one when
 * last is set (NSpid's last value is the pid as the target sees it in its own namespace). */
static long status_value(const char *status, const char *key, int last)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\n%s:", key);
    const char *p = strstr(status, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    long v = -1;
    for (;;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != '\t' && *end != ' ' && *end != '\n' && *end != '\0'))
            break;
        v = x;
        if (!last || *end == '\n')
            break;
        p = end;
    }
    return v;
}

/* The socket path of pid's probe as reachable from here, and the effective uid of pid (the
 * owner its directory and socket must have). */
static int socket_locate(pid_t pid, char *buf, size_t n, uid_t *uid, struct pb_err *err)
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
    long ruid, euid = -1, nspid = status_value(status, "NSpid", 1);
    if (u && sscanf(u + 5, "%ld %ld", &ruid, &euid) != 2)
        euid = -1;
    if (euid < 0)
        return pb_err_set(err, -EINVAL, "cannot read the uid of process %d", (int)pid);
    snprintf(buf, n, "/proc/%d/root/tmp/probing-%ld/%ld.sock", (int)pid, euid,
             nspid > 0 ? nspid : (long)pid);
    if (uid)
        *uid = (uid_t)euid;
    return 0;
}

int cli_socket_path(pid_t pid, char *buf, size_t n, struct pb_err *err)
{
    return socket_locate(pid, buf, n, NULL, err);
}

/* What to say about a socket that is not the probe's: another user may have made its
 * directory before the probe did (the probe then refuses to serve there, and whatever listens
 * at the path is theirs). */
#define NOT_OURS "it is not the probe's: another user may have made it; remove it"

/* Before connecting: the socket's directory must be a real directory (not a symbolic link)
 * owned by uid with no access for others (0700), and the socket a socket owned by uid. Whatever does not exist
 * yet is left to connect() (the agent may be starting). Returns 0 or PB_EAUTH with the check
 * that failed in err. */
static int socket_files_check(const char *path, uid_t uid, struct pb_err *err)
{
    char dir[256];
    struct stat st;
    pb_strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (lstat(dir, &st) == 0) {
        if (S_ISLNK(st.st_mode))
            return pb_err_set(err, PB_EAUTH, "refusing %s: a symbolic link, not a directory: "
                              NOT_OURS, dir);
        if (!S_ISDIR(st.st_mode))
            return pb_err_set(err, PB_EAUTH, "refusing %s: not a directory: " NOT_OURS, dir);
        if (st.st_uid != uid)
            return pb_err_set(err, PB_EAUTH, "refusing %s: owned by uid %u, not by the target's "
                              "uid %u: " NOT_OURS, dir, (unsigned)st.st_uid, (unsigned)uid);
        if (st.st_mode & 077) /* the probe's own rule (probe/core/rundir.c) */
            return pb_err_set(err, PB_EAUTH, "refusing %s: mode %04o lets other users in, not "
                              "0700: " NOT_OURS, dir, (unsigned)(st.st_mode & 07777));
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return pb_err_set(err, PB_EAUTH, "refusing %s: not a socket: " NOT_OURS, path);
        if (st.st_uid != uid)
            return pb_err_set(err, PB_EAUTH, "refusing %s: owned by uid %u, not by the target's "
                              "uid %u: " NOT_OURS, path, (unsigned)st.st_uid, (unsigned)uid);
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
        return pb_err_set(err, -errno, "refusing %s: cannot read its peer's credentials: %s",
                          path, strerror(errno));
    if (cr.pid == pid || (cr.pid == 0 && cr.uid == uid))
        return 0;
    if (cr.pid == 0)
        return pb_err_set(err, PB_EAUTH, "refusing %s: served by a process of uid %u, not by the "
                          "target's uid %u: " NOT_OURS, path, (unsigned)cr.uid, (unsigned)uid);
    return pb_err_set(err, PB_EAUTH, "refusing %s: served by process %d (uid %u), not by %d: "
                      NOT_OURS, path, (int)cr.pid, (unsigned)cr.uid, (int)pid);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cli_connect_pid(pid_t pid, int timeout_ms, struct dap_client *c, struct pb_err *err)
{
    char path[256];
    uid_t uid;
    int rc = socket_locate(pid, path, sizeof path, &uid, err);
    if (rc < 0)
        return rc;
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        rc = socket_files_check(path, uid, err);
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
            return pb_err_set(err, rc, "connecting to the probe of %d denied (%s): run as the "
                              "process's user or root", (int)pid, path);
        if (now_ms() >= deadline)
            return pb_err_set(err, rc, "the probe in %d does not answer on %s (%s): see the "
                              "probe's log (set PROBING_LOG in the target)", (int)pid, path,
                              strerror(-rc));
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL); /* the agent thread is starting: its socket appears shortly */
    }
}

/* Copies of the probe a process may hold: the one it inherited from a fork and fresh ones for
 * the agents started since (a fork child of a fork child...). A bound, so that a probe that
 * cannot start (see its log) is not loaded again on every command. */
#define MAX_PROBE_COPIES 4

/* How many distinct libprobing files pid maps (at most MAX_PROBE_COPIES + 1), or -errno. */
static int probe_copies(pid_t pid)
{
    char path[64], line[PATH_MAX + 128], seen[MAX_PROBE_COPIES + 1][PATH_MAX];
    int n = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    while (n <= MAX_PROBE_COPIES && fgets(line, sizeof line, f)) {
        char *file = strchr(line, '/');
        if (!file)
            continue;
        file[strcspn(file, "\n")] = '\0';
        if (strncmp(strrchr(file, '/') + 1, "libprobing-", 11) != 0)
            continue;
        int i = 0;
        while (i < n && strcmp(seen[i], file) != 0)
            i++;
        if (i == n)
            pb_strlcpy(seen[n++], file, sizeof seen[0]);
    }
    fclose(f);
    return n;
}

/* Whether the probe mapped in pid has no agent: nothing answers on its socket and nobody is
 * injecting (TracerPid 0), for grace_ms (a probe being loaded binds its socket in its
 * constructor, before dlopen returns). A fork() child is in this state: it inherits the
 * parent's mappings, but the agent's threads and sockets do not survive the fork. */
static int probe_orphaned(pid_t pid, int grace_ms)
{
    char sock[256], path[64], status[8192];
    struct pb_err e;
    uid_t uid;
    if (socket_locate(pid, sock, sizeof sock, &uid, &e) < 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    long long deadline = now_ms() + grace_ms;
    for (;;) {
        struct dap_client c;
        dap_client_init(&c, 1000);
        if (socket_files_check(sock, uid, &e) < 0)
            return 0; /* not the probe's socket: the caller's connect says so */
        int rc = dap_client_connect_unix(&c, sock, &e);
        dap_client_close(&c);
        if (rc != -ENOENT && rc != -ECONNREFUSED)
            return 0; /* it answers, or refuses us (the caller's connect says why) */
        long tracer = pb_read_file(path, status, sizeof status) > 0
                          ? status_value(status, "TracerPid", 0) : -1;
        if (tracer == 0 && now_ms() >= deadline)
            return 1;
        if (tracer != 0 && now_ms() >= deadline + 10000)
            return 0; /* still being injected (or gone): the caller's connect says why */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int copy_lib(const char *from, const char *to, uid_t uid, gid_t gid)
{
    char buf[65536];
    int rc = 0, in = open(from, O_RDONLY | O_CLOEXEC), out = -1;
    if (in < 0)
        return -errno;
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (out < 0)
        rc = -errno;
    for (ssize_t n; rc == 0 && (n = read(in, buf, sizeof buf)) != 0;) {
        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n > 0 && write(out, buf, (size_t)n) != n)
            rc = -EIO;
    }
    if (rc == 0 && fchown(out, uid, gid) < 0 && geteuid() == 0)
        rc = -errno;
    if (out >= 0 && close(out) < 0 && rc == 0)
        rc = -errno;
    close(in);
    return rc;
}

/* Loads a fresh copy of lib into pid, whose probe has no agent. dlopen of the same file would
 * return the inherited handle without running its constructor, so the copy is a new file
 * (under our /tmp, owned by the target's user; inj_inject copies it again into the target's
 * own /tmp when it does not see ours). Holding a lock on lib, so that two commands at once
 * load one copy: the second finds the new agent answering. Returns 0 once loaded, 1 if
 * another command loaded it meanwhile, or a negative code. */
static int inject_fresh(pid_t pid, const char *lib, struct pb_err *err)
{
    char dir[] = "/tmp/probing-XXXXXX", copy[PATH_MAX + 32], there[PATH_MAX + 96], proc[64];
    struct stat owner, a, b;
    int rc, lock = open(lib, O_RDONLY | O_CLOEXEC);
    if (lock < 0)
        return pb_err_set(err, -errno, "cannot open %s: %s", lib, strerror(errno));
    long long deadline = now_ms() + 30000;
    while ((rc = flock(lock, LOCK_EX | LOCK_NB)) < 0 && now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (rc < 0 || !probe_orphaned(pid, 0)) {
        close(lock);
        return 1; /* another command loaded it meanwhile (or is still at it) */
    }
    if (probe_copies(pid) >= MAX_PROBE_COPIES) {
        close(lock);
        return pb_err_set(err, PB_ENOPROBE, "the probe in %d does not start (%d copies loaded "
                          "already): see the probe's log (set PROBING_LOG in the target)",
                          (int)pid, MAX_PROBE_COPIES);
    }
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    if (stat(proc, &owner) < 0 || !mkdtemp(dir)) {
        rc = pb_err_set(err, -errno, "cannot copy the probe for %d: %s", (int)pid,
                        strerror(errno));
        close(lock);
        return rc;
    }
    snprintf(copy, sizeof copy, "%s/%s", dir, strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
    rc = chown(dir, owner.st_uid, owner.st_gid) < 0 && geteuid() == 0 ? -errno : 0;
    if (rc == 0)
        rc = copy_lib(lib, copy, owner.st_uid, owner.st_gid);
    if (rc < 0) {
        pb_err_set(err, rc, "cannot copy %s to %s: %s", lib, copy, strerror(-rc));
    } else {
        struct inj_opts io = {0};
        rc = inj_inject(pid, copy, &io, err);
    }
    /* Keep the copy only where the target maps it (the same file seen through its root). */
    snprintf(there, sizeof there, "/proc/%d/root%s", (int)pid, copy);
    if (rc < 0 || stat(copy, &a) < 0 || stat(there, &b) < 0 || a.st_dev != b.st_dev ||
        a.st_ino != b.st_ino) {
        unlink(copy);
        rmdir(dir);
    }
    close(lock);
    return rc;
}

/* How long a command waits for another one injecting into the same process. */
#define INJECT_LOCK_WAIT_MS 60000

/* Takes the lock on injecting into pid: flock on <pid>.inject.lock in the CLI's own private
 * directory /tmp/probing-<euid> (0700, ours; never under the target's root, where the file would
 * be left behind), waiting up to INJECT_LOCK_WAIT_MS for a command holding it. The file is
 * unlinked by the holder before it lets go, so a waiter that got the lock on a file no longer
 * at that path tries again. Returns the descriptor to pass to inject_unlock, -1 when the
 * directory cannot be ours (no lock: injecting goes on as before), or PB_ETIMEDOUT. */
static int inject_lock(pid_t pid, char *path, size_t n, struct pb_err *err)
{
    char dir[64];
    struct stat st, held;
    uid_t uid = geteuid();
    snprintf(dir, sizeof dir, "/tmp/probing-%u", (unsigned)uid);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
        return -1; /* not a private directory of ours: someone else could hold any lock there */
    snprintf(path, n, "%s/%d.inject.lock", dir, (int)pid);
    long long deadline = now_ms() + INJECT_LOCK_WAIT_MS;
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return -1;
        int rc;
        while ((rc = flock(fd, LOCK_EX | LOCK_NB)) < 0 && now_ms() < deadline) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (rc < 0) {
            close(fd);
            return pb_err_set(err, PB_ETIMEDOUT, "another probing command has been injecting "
                              "into %d for %d s: retry when it is done", (int)pid,
                              INJECT_LOCK_WAIT_MS / 1000);
        }
        if (fstat(fd, &held) == 0 && lstat(path, &st) == 0 && held.st_dev == st.st_dev &&
            held.st_ino == st.st_ino)
            return fd;
        close(fd); /* its holder removed it: the lock is the file now at path */
    }
}

static void inject_unlock(int fd, const char *path)
{
    if (fd < 0)
        return;
    unlink(path);
    close(fd);
}

/* Whether the probe is loaded in pid with its agent answering (or about to): its version from
 * the library's name into version. *orphaned: it is mapped but has no agent (probe_orphaned,
 * after grace_ms). */
static int probe_loaded(pid_t pid, int grace_ms, int *orphaned, char *version, size_t vn)
{
    char lib[PATH_MAX];
    int rc = inj_maps_find(pid, "libprobing-", lib, sizeof lib);
    *orphaned = rc == 1 && probe_orphaned(pid, grace_ms);
    if (rc != 1 || *orphaned)
        return 0;
    const char *v = strrchr(lib, '/') ? strrchr(lib, '/') + 12 : lib + 11;
    size_t l = strlen(v);
    if (l > 3 && strcmp(v + l - 3, ".so") == 0)
        l -= 3;
    if (version)
        snprintf(version, vn, "%.*s", (int)l, v);
    return 1;
}

static int probe_ensure_locked(pid_t pid, int *injected, char *version, size_t vn,
                               struct pb_err *err);

int cli_probe_ensure(pid_t pid, int *injected, char *version, size_t vn, struct pb_err *err)
{
    int orphaned;
    *injected = 0;
    if (probe_loaded(pid, 1000, &orphaned, version, vn))
        return 0;
    /* One injection per process at a time: a second command waits for the first and then
     * finds the probe it loaded. */
    char path[96];
    int fd = inject_lock(pid, path, sizeof path, err);
    if (fd == PB_ETIMEDOUT)
        return fd;
    int rc = probe_ensure_locked(pid, injected, version, vn, err);
    inject_unlock(fd, path);
    return rc;
}

/* cli_probe_ensure once the lock on injecting into pid is ours (or cannot be had at all). */
static int probe_ensure_locked(pid_t pid, int *injected, char *version, size_t vn,
                               struct pb_err *err)
{
    char lib[PATH_MAX];
    int orphaned, rc;
    if (probe_loaded(pid, 0, &orphaned, version, vn)) /* a command before us loaded it */
        return 0;
    struct inj_pyver pv;
    rc = inj_pyver_detect(pid, &pv, err);
    if (rc < 0)
        return rc;
    if (version)
        snprintf(version, vn, "%d.%d.%d", pv.major, pv.minor, pv.micro);
    char dir[PATH_MAX - 64];
    cli_libdir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/libprobing-%d.%d.so", dir, pv.major, pv.minor);
    if (access(lib, R_OK) < 0) {
        if (pv.major != 3 || pv.minor < 8 || pv.minor > 13)
            return pb_err_set(err, PB_ENOBUILD,
                              "no probe build for CPython %d.%d (process %d): probing supports "
                              "CPython 3.8 to 3.13",
                              pv.major, pv.minor, (int)pid);
        return pb_err_set(err, PB_ENOBUILD,
                          "no probe build for CPython %d.%d (process %d) in %s: build it with "
                          "'make PYTHONS=%d.%d' (needs that version's headers), or set "
                          "PROBING_LIBDIR",
                          pv.major, pv.minor, (int)pid, dir, pv.major, pv.minor);
    }
    if (orphaned) {
        rc = inject_fresh(pid, lib, err);
    } else {
        struct inj_opts io = {0};
        rc = inj_inject(pid, lib, &io, err);
    }
    if (rc < 0)
        return rc;
    *injected = rc == 0;
    return 0;
}

int cli_handshake(struct dap_client *c, const char *token, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "clientID", "probing-cli");
    cJSON_AddStringToObject(args, "adapterID", "probing");
    cJSON_AddBoolToObject(args, "linesStartAt1", 1);
    int rc = dap_client_request(c, "initialize", args, NULL, err);
    if (rc < 0)
        return rc;
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "probingClient", "cli");
    if (token)
        cJSON_AddStringToObject(args, "token", token);
    return dap_client_request(c, "attach", args, NULL, err);
}

int cli_connect(const struct cli_opts *o, struct dap_client *c, struct pb_err *err)
{
    const char *token = NULL;
    int rc;
    dap_client_init(c, o->timeout_ms);
    if (o->target.pid > 0) {
        int injected;
        rc = cli_probe_ensure(o->target.pid, &injected, NULL, 0, err);
        if (rc == 0)
            rc = cli_connect_pid(o->target.pid, 5000, c, err);
    } else {
        token = getenv("PROBING_TOKEN");
        if (!token || !*token)
            return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN is not set: export the token "
                              "printed by 'probing -p PID inject --listen %s:%d'",
                              o->target.host, o->target.port);
        if (cli_token_check(token, err) < 0)
            return err->code;
        rc = dap_client_connect_tcp(c, o->target.host, o->target.port, err);
    }
    if (rc == 0)
        rc = cli_handshake(c, token, err);
    if (rc < 0)
        dap_client_close(c);
    return rc;
}

int cli_open(const struct cli_opts *o, struct dap_client *c)
{
    struct pb_err err = {0};
    if (cli_connect(o, c, &err) < 0) {
        cli_error("%s", err.msg);
        return -1;
    }
    return 0;
}

void cli_disconnect(struct dap_client *c)
{
    struct pb_err err;
    dap_client_request(c, "disconnect", cJSON_CreateObject(), NULL, &err);
    dap_client_close(c);
}

cJSON *cli_call(const struct cli_opts *o, const char *what, const char *command, cJSON *args)
{
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON *body = NULL;
    int rc = cli_connect(o, &dc, &err);
    if (rc < 0) {
        cJSON_Delete(args);
        cli_error("%s", err.msg);
        return NULL;
    }
    rc = dap_client_request(&dc, command, args, &body, &err);
    cli_disconnect(&dc);
    if (rc < 0) {
        if (what)
            cli_error("%s: %s", what, err.msg);
        else
            cli_error("%s", err.msg);
        return NULL;
    }
    return body;
}
