/* SPDX-License-Identifier: MIT */
/* Making sure the probe is loaded in a local target: find the probe library for its CPython
 * version, inject it (injector/ptrace/) unless it is loaded with its agent answering, one
 * injection per process at a time (a lock in our private directory), and a fresh copy into a
 * fork child that inherited the probe without its agent. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "injector/ptrace/ptrace.h"

/* <exe dir>/../lib/probing, resolved once per process: the executable does not move, and a
 * cluster command's children (one a rank) inherit it instead of each reading /proc/self/exe
 * and resolving the path anew (a readlink and an lstat per component each). */
static char exe_libdir[PATH_MAX];
static int exe_libdir_rc = 1; /* 1: not resolved yet */

static void exe_libdir_resolve(void)
{
    char exe[PATH_MAX - 32];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        exe_libdir_rc = len < 0 ? -errno : -ENOENT;
        return;
    }
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    /* bin/probing looks in ../lib/probing; lib/probing/probing-serve (the CLI with serve) is
     * already there. */
    static const char here[] = "/lib/probing";
    size_t el = strlen(exe), hl = strlen(here);
    if (el >= hl && strcmp(exe + el - hl, here) == 0)
        pb_strlcpy(exe_libdir, exe, sizeof exe_libdir);
    else
        snprintf(exe_libdir, sizeof exe_libdir, "%s/../lib/probing", exe);
    char *real = realpath(exe_libdir, NULL);
    if (real) {
        pb_strlcpy(exe_libdir, real, sizeof exe_libdir);
        free(real);
    }
    exe_libdir_rc = 0;
}

int cli_libdir(char *buf, size_t n)
{
    const char *env = getenv("PROBING_LIBDIR");
    if (env && *env) {
        pb_strlcpy(buf, env, n);
        return 0;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, exe_libdir_resolve);
    if (exe_libdir_rc < 0)
        return exe_libdir_rc;
    pb_strlcpy(buf, exe_libdir, n);
    return 0;
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
        if (strncmp(strrchr(file, '/') + 1, CLI_PROBE_LIB_PREFIX, strlen(CLI_PROBE_LIB_PREFIX)) !=
            0)
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
    if (cli_socket_locate(pid, sock, sizeof sock, &uid, &e) < 0)
        return 0;
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    long long deadline = cli_now_ms() + grace_ms;
    for (;;) {
        struct dap_client c;
        dap_client_init(&c, 1000);
        if (cli_socket_check(sock, uid, &e) < 0)
            return 0; /* not the probe's socket: the caller's connect says so */
        int rc = dap_client_connect_unix(&c, sock, &e);
        dap_client_close(&c);
        if (rc != -ENOENT && rc != -ECONNREFUSED)
            return 0; /* it answers, or refuses us (the caller's connect says why) */
        long tracer = pb_read_file(path, status, sizeof status) > 0
                          ? cli_proc_status_value(status, "TracerPid", 0)
                          : -1;
        if (tracer == 0 && cli_now_ms() >= deadline)
            return 1;
        if (tracer != 0 && cli_now_ms() >= deadline + 10000)
            return 0; /* still being injected (or gone): the caller's connect says why */
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Loads a fresh copy of lib into pid, whose probe has no agent. dlopen of the same file would
 * return the inherited handle without running its constructor, so the copy is a new file
 * (under our /tmp, owned by the target's user; ptrace_inject copies it again into the target's
 * own /tmp when it does not see ours). Holding a lock on lib, so that two commands at once
 * load one copy: the second finds the new agent answering. Returns 0 once loaded, 1 if
 * another command loaded it meanwhile, or a negative code. */
static int inject_fresh(pid_t pid, const char *lib, struct pb_err *err)
{
    char dir[] = "/tmp/probing-XXXXXX", copy[PATH_MAX + 32], proc[64];
    struct stat owner;
    int rc, lock = open(lib, O_RDONLY | O_CLOEXEC);
    if (lock < 0)
        return pb_err_set(err, -errno, "cannot open %s: %s", lib, strerror(errno));
    long long deadline = cli_now_ms() + 30000;
    while ((rc = flock(lock, LOCK_EX | LOCK_NB)) < 0 && cli_now_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (rc < 0 || !probe_orphaned(pid, 0)) {
        close(lock);
        return 1; /* another command loaded it meanwhile (or is still at it) */
    }
    if (probe_copies(pid) >= MAX_PROBE_COPIES) {
        close(lock);
        return pb_err_set(err, PB_ENOPROBE,
                          "the probe in %d does not start (%d copies loaded "
                          "already): see the probe's log (set PROBING_LOG in the target)",
                          (int)pid, MAX_PROBE_COPIES);
    }
    snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
    if (stat(proc, &owner) < 0 || !mkdtemp(dir)) {
        rc = pb_err_set(err, -errno, "cannot copy the probe for %d: %s", (int)pid, strerror(errno));
        close(lock);
        return rc;
    }
    snprintf(copy, sizeof copy, "%s/%s", dir, strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib);
    rc = chown(dir, owner.st_uid, owner.st_gid) < 0 && geteuid() == 0 ? -errno : 0;
    if (rc == 0)
        rc = ptrace_file_copy(lib, copy, owner.st_uid, owner.st_gid);
    if (rc < 0) {
        pb_err_set(err, rc, "cannot copy %s to %s: %s", lib, copy, strerror(-rc));
    } else {
        struct ptrace_opts io = {0};
        rc = ptrace_inject(pid, copy, &io, err);
    }
    /* Removed in any case: loaded, the target maps it (its name is no longer needed, and
     * nothing of ours is left in its /tmp); not loaded, it is of no use. */
    unlink(copy);
    rmdir(dir);
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
static int inject_lock(pid_t pid, char *path, size_t n, int *waited, struct pb_err *err)
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
    long long deadline = cli_now_ms() + INJECT_LOCK_WAIT_MS;
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return -1;
        int rc;
        while ((rc = flock(fd, LOCK_EX | LOCK_NB)) < 0 && cli_now_ms() < deadline) {
            *waited = 1;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (rc < 0) {
            close(fd);
            return pb_err_set(err, PB_ETIMEDOUT,
                              "another probing command has been injecting "
                              "into %d for %d s: retry when it is done",
                              (int)pid, INJECT_LOCK_WAIT_MS / 1000);
        }
        if (fstat(fd, &held) == 0 && lstat(path, &st) == 0 && held.st_dev == st.st_dev &&
            held.st_ino == st.st_ino)
            return fd;
        close(fd); /* its holder removed it: the lock is the file now at path */
        *waited = 1;
    }
}

/* Lock files of processes that are gone, left by a CLI killed while it held one (SIGKILL):
 * removed when no command holds them (at most 4096 entries looked at). */
static void inject_lock_sweep(const char *path)
{
    char dir[96];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    for (int seen = 0; seen < 4096 && (de = readdir(d)); seen++) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (pid <= 0 || strcmp(end, ".inject.lock") != 0 ||
            !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
            continue;
        int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dirfd(d), de->d_name, 0);
        close(fd);
    }
    closedir(d);
}

/* Set by cli_inject_lock_sweep_once: the sweep is done for this command and the children it
 * forks (cluster's: 64 of them read the directory 64 times over otherwise). */
static int swept_once;

void cli_inject_lock_sweep_once(void)
{
    char path[96];
    snprintf(path, sizeof path, "/tmp/probing-%u/.sweep", (unsigned)geteuid());
    inject_lock_sweep(path);
    swept_once = 1;
}

static void inject_unlock(int fd, const char *path)
{
    if (fd < 0)
        return;
    unlink(path);
    close(fd);
    if (!swept_once)
        inject_lock_sweep(path);
}

/* While the lock is held, SIGINT/SIGTERM/SIGHUP/SIGQUIT (held by ptrace_inject until the target
 * is restored, then taken) remove the lock file before they end the CLI as they would have:
 * only where the CLI had left them at their default action. */
static const int held_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static char locked_path[96];
static struct sigaction held_old[sizeof held_sigs / sizeof *held_sigs];
static int held_set[sizeof held_sigs / sizeof *held_sigs];

static void on_held_signal(int sig)
{
    unlink(locked_path); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void lock_signals(const char *path)
{
    snprintf(locked_path, sizeof locked_path, "%s", path);
    for (size_t i = 0; i < sizeof held_sigs / sizeof *held_sigs; i++) {
        struct sigaction sa = {.sa_handler = on_held_signal};
        sigemptyset(&sa.sa_mask);
        held_set[i] = sigaction(held_sigs[i], NULL, &held_old[i]) == 0 &&
                      held_old[i].sa_handler == SIG_DFL && sigaction(held_sigs[i], &sa, NULL) == 0;
    }
}

static void unlock_signals(void)
{
    for (size_t i = 0; i < sizeof held_sigs / sizeof *held_sigs; i++)
        if (held_set[i])
            sigaction(held_sigs[i], &held_old[i], NULL);
}

/* Whether the probe is loaded in pid with its agent answering (or about to): its version from
 * the library's name into version. *orphaned: it is mapped but has no agent (probe_orphaned,
 * after grace_ms). */
static int probe_loaded(pid_t pid, int grace_ms, int *orphaned, char *version, size_t vn)
{
    char lib[PATH_MAX];
    static const char so[] = ".so";
    int rc = ptrace_maps_find(pid, CLI_PROBE_LIB_PREFIX, lib, sizeof lib);
    *orphaned = rc == 1 && probe_orphaned(pid, grace_ms);
    if (rc != 1 || *orphaned)
        return 0;
    /* libprobing-3.12.so: the version between the prefix and ".so" */
    const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
    const char *v = base + strlen(CLI_PROBE_LIB_PREFIX);
    size_t l = strlen(v);
    if (l > strlen(so) && strcmp(v + l - strlen(so), so) == 0)
        l -= strlen(so);
    if (version)
        snprintf(version, vn, "%.*s", (int)l, v);
    return 1;
}

static int probe_ensure_locked(pid_t pid, int *injected, char *version, size_t vn,
                               struct pb_err *err);

static int probe_ensure(pid_t pid, int look_first, int *injected, char *version, size_t vn,
                        struct pb_err *err);

int cli_probe_ensure(pid_t pid, int *injected, char *version, size_t vn, struct pb_err *err)
{
    return probe_ensure(pid, 1, injected, version, vn, err);
}

int cli_probe_ensure_unloaded(pid_t pid, int *injected, char *version, size_t vn,
                              struct pb_err *err)
{
    return probe_ensure(pid, 0, injected, version, vn, err);
}

/* Whether a probe answers on pid's socket. */
static int probe_answers(pid_t pid)
{
    char sock[256];
    struct pb_err e;
    struct dap_client c;
    uid_t uid;
    if (cli_socket_locate(pid, sock, sizeof sock, &uid, &e) < 0 ||
        cli_socket_check(sock, uid, &e) < 0)
        return 0;
    dap_client_init(&c, 1000);
    int rc = dap_client_connect_unix(&c, sock, &e);
    dap_client_close(&c);
    return rc == 0;
}

/* look_first: whether the probe is loaded is read before taking the lock (the usual case: a
 * loaded probe needs no lock); 0 where the caller has just read that it is not: its maps, read
 * then, may be what the checks under the lock see (ptrace_maps_keep), so a probe that another
 * command loaded since is found by its socket. */
static int probe_ensure(pid_t pid, int look_first, int *injected, char *version, size_t vn,
                        struct pb_err *err)
{
    int orphaned = 0, waited = 0, rc = 0;
    *injected = 0;
    /* The look before the lock, the checks under it and the injection's first look at the
     * target (before it stops it) see the same moment: one read of its maps for all of them,
     * read again only where time passed in between (a wait for another command's injection, the
     * grace given to an orphaned probe, a probe that answers: loaded by another command since
     * that read). */
    ptrace_maps_hold(pid);
    if (look_first && probe_loaded(pid, 1000, &orphaned, version, vn)) {
        ptrace_maps_release();
        return 0;
    }
    /* One injection per process at a time: a second command waits for the first and then
     * finds the probe it loaded. */
    char path[96];
    int fd = inject_lock(pid, path, sizeof path, &waited, err);
    if (fd == PB_ETIMEDOUT) {
        ptrace_maps_release();
        return fd;
    }
    if (fd >= 0)
        lock_signals(path);
    if (waited || orphaned || probe_answers(pid)) {
        ptrace_maps_keep_forget(pid); /* read afresh, not as the caller found it */
        ptrace_maps_release();
        ptrace_maps_hold(pid);
    }
    rc = probe_ensure_locked(pid, injected, version, vn, err);
    ptrace_maps_release();
    inject_unlock(fd, path);
    if (fd >= 0)
        unlock_signals();
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
    struct ptrace_pyver pv;
    rc = ptrace_pyver_detect(pid, &pv, err);
    if (rc < 0 || (rc = ptrace_remote_debug_check(pid, &pv, err)) < 0)
        return rc;
    if (version)
        snprintf(version, vn, "%d.%d.%d", pv.major, pv.minor, pv.micro);
    if (pv.free_threaded)
        return pb_err_set(err, PB_ENOBUILD,
                          "process %d runs a free-threaded CPython %d.%d (%s): not supported yet; "
                          "run the program on a default (GIL) build of CPython",
                          (int)pid, pv.major, pv.minor, pv.source);
    char dir[PATH_MAX - 64];
    cli_libdir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/" CLI_PROBE_LIB_PREFIX "%d.%d.so", dir, pv.major, pv.minor);
    if (access(lib, R_OK) < 0) {
        if (pv.major != 3 || pv.minor < 8 || pv.minor > 15)
            return pb_err_set(err, PB_ENOBUILD,
                              "no probe build for CPython %d.%d (process %d): probing supports "
                              "CPython 3.8 to 3.15",
                              pv.major, pv.minor, (int)pid);
        return pb_err_set(err, PB_ENOBUILD,
                          "no probe build for CPython %d.%d (process %d) in %s: build it with "
                          "'make PYTHONS=%d.%d' (needs that version's headers), or set "
                          "PROBING_LIBDIR",
                          pv.major, pv.minor, (int)pid, dir, pv.major, pv.minor);
    }
    if (orphaned) {
        ptrace_maps_keep_forget(pid); /* it may wait for another command's injection */
        ptrace_maps_release();
        rc = inject_fresh(pid, lib, err);
    } else {
        struct ptrace_opts io = {.python_checked = 1};
        rc = ptrace_inject(pid, lib, &io, err);
    }
    if (rc < 0)
        return rc;
    *injected = rc == 0;
    return 0;
}
