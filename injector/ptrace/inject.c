/* SPDX-License-Identifier: MIT */
/* ptrace_inject: make a live process dlopen a library through ptrace. Order: checks from /proc (pid,
 * stopped, traced, Python), symbols from the target's own libc (through /proc/PID/root), a path
 * the target can see, PTRACE_SEIZE of one thread, a safe point (not in ld.so nor malloc), then
 * dlopen (and dlerror on failure) called on that thread with its stack below the red zone. Every
 * register, the signal mask, the thread's errno and every stack byte written are restored before
 * detaching, on every path. Design notes: docs/architecture.md "Injection". */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif
#ifndef PTRACE_GETSIGMASK
#define PTRACE_GETSIGMASK 0x420a
#define PTRACE_SETSIGMASK 0x420b
#endif

#define SAFE_TRIES 500
#define STACK_SCAN 512 /* bytes above sp searched for return addresses into ld.so/malloc */
#define MAX_RANGES 32
#define MAX_CARRIED 4

struct range {
    unsigned long lo, hi;
};

struct ctx {
    pid_t pid, tid;
    int timeout_ms;
    int memfd;
    int attached, stopped, hijacked;
    int pending_sig; /* asynchronous signal held back during our call */
    struct ptrace_status st;
    struct ptrace_maps maps;
    unsigned long dlopen_fn, dlerror_fn, errno_fn;
    unsigned long errno_addr; /* the hijacked thread's errno, 0 if unknown */
    int saved_errno;
    int dlopen_mode;
    int python_checked;              /* ptrace_opts.python_checked */
    struct range unsafe[MAX_RANGES]; /* ld.so text, malloc family and the malloc.o span */
    int nunsafe;
    struct range libc_text;
    struct ptrace_regs saved;
    struct ptrace_fpregs *fp;
    uint64_t sigmask;
    unsigned long save_lo; /* stack bytes [save_lo, save_lo + save_len) were saved */
    unsigned char *save;
    size_t save_len;
    /* The self-restoring trampoline (arch/x86_64.c): where its code went, the bytes it
     * replaced, the signal it stops on, the stack top of its calls; stub == 0: none, calls
     * return to address 0. */
    unsigned long stub;
    unsigned char stub_saved[128];
    const unsigned char *stub_code;
    size_t stub_len, stub_stop;
    int stub_written, stop_sig, call_mask_set;
    unsigned long top;
    char path[PATH_MAX];     /* the library as the target sees it */
    char copy_dir[PATH_MAX]; /* our view of a copy made in the target's root, or "" */
    char copy_file[PATH_MAX + 256];
    /* Files the library carries beside itself (its NEEDED found in its own directory, loaded
     * through its run path $ORIGIN), copied into copy_dir with it. */
    char carried[MAX_CARRIED][NAME_MAX + 1];
    int ncarried;
    size_t root_len; /* of the "/proc/PID/root" that starts copy_dir */
};

static const char *const malloc_family[] = {
    "malloc",
    "free",
    "calloc",
    "realloc",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "malloc_trim",
    "malloc_usable_size",
    "mallopt",
    "mallinfo",
    "mallinfo2",
    "malloc_stats",
    "malloc_info",
    "reallocarray",
    "__libc_malloc",
    "__libc_free",
    "__libc_calloc",
    "__libc_realloc",
    "__libc_memalign",
};

static int gone(struct ctx *c, struct pb_err *err)
{
    return pb_err_set(err, PB_EGONE, "process %d exited during injection", (int)c->pid);
}

/* After a failed ptrace call or wait: PB_EGONE if the target died, else rc. */
static int fail(struct ctx *c, int rc, const char *what, struct pb_err *err)
{
    if (rc == -ESRCH || rc == -ECHILD || ptrace_proc_gone(c->pid)) {
        c->stopped = 0;
        return gone(c, err);
    }
    if (rc == PB_ETIMEDOUT)
        return pb_err_set(err, rc,
                          "%s in %d timed out after %d ms: the process may be busy in "
                          "the kernel; retry, or raise the timeout",
                          what, (int)c->pid, c->timeout_ms);
    return pb_err_set(err, rc, "%s in %d failed: %s", what, (int)c->pid, pb_strerror(rc));
}

static int checks(struct ctx *c, struct pb_err *err)
{
    int rc = ptrace_status_read(c->pid, &c->st);
    if (rc == -ESRCH)
        return pb_err_set(err, -ESRCH, "no process %d: check the pid", (int)c->pid);
    if (rc < 0)
        return pb_err_set(err, -EACCES,
                          "cannot read /proc/%d/status: %s; run as the process's "
                          "user or root",
                          (int)c->pid, pb_strerror(rc));
    if (c->st.state == 'Z' || c->st.state == 'X')
        return pb_err_set(err, PB_EGONE, "process %d (%s) has exited: check the pid", (int)c->pid,
                          c->st.comm);
    if (c->st.tracer != 0) {
        char comm[64];
        ptrace_comm_read(c->st.tracer, comm, sizeof comm);
        return pb_err_set(err, PB_ETRACED,
                          "process %d is already traced by %d (%s): detach it "
                          "first",
                          (int)c->pid, (int)c->st.tracer, comm);
    }
    if (c->st.state == 'T' || c->st.state == 't')
        return pb_err_set(err, PB_ESTOPPED,
                          "process %d is stopped (SIGSTOP): resume it with "
                          "'kill -CONT %d' and retry",
                          (int)c->pid, (int)c->pid);
    struct ptrace_pyver v;
    if (!c->python_checked && (rc = ptrace_pyver_detect(c->pid, &v, err)) < 0)
        return rc;
    rc = ptrace_maps_read(c->pid, &c->maps);
    if (rc < 0)
        return pb_err_set(err, rc,
                          "cannot read /proc/%d/maps: %s; run as the process's user "
                          "or root",
                          (int)c->pid, pb_strerror(rc));
    return 0;
}

static void add_unsafe(struct ctx *c, unsigned long lo, unsigned long hi)
{
    if (c->nunsafe < MAX_RANGES && lo < hi) {
        c->unsafe[c->nunsafe].lo = lo;
        c->unsafe[c->nunsafe].hi = hi;
        c->nunsafe++;
    }
}

/* The signal the trampoline stops on: one the target ignores (its SIG_IGN set: CPython ignores
 * SIGPIPE and SIGXFSZ), else one whose default is to be ignored and that it does not catch.
 * While traced, the kernel stops the thread on it even so; untraced, it is dropped. 0: none. */
static int pick_stop_sig(const struct ptrace_status *st)
{
    static const int ign[] = {SIGPIPE, SIGXFSZ, SIGURG,  SIGWINCH,  SIGUSR2, SIGUSR1,
                              SIGHUP,  SIGALRM, SIGPROF, SIGVTALRM, SIGIO,   SIGPWR};
    static const int dfl_ignored[] = {SIGURG, SIGWINCH, SIGCHLD};
    for (size_t i = 0; i < sizeof ign / sizeof ign[0]; i++)
        if (st->sigign & (1ULL << (ign[i] - 1)))
            return ign[i];
    for (size_t i = 0; i < sizeof dfl_ignored / sizeof dfl_ignored[0]; i++)
        if (!(st->sigcgt & (1ULL << (dfl_ignored[i] - 1))))
            return dfl_ignored[i];
    return 0;
}

/* A home for the trampoline's code: the padding after the executable segment of a module (libc
 * first), up to the end of its last page, which no code or data uses. Written through
 * /proc/PID/mem, the page becomes the process's private copy. 0 if none was found. */
static unsigned long stub_home(struct ctx *c, const struct ptrace_map *first,
                               const struct ptrace_module *first_mod, size_t len)
{
    int tries = 0;
    for (size_t i = (size_t)-1; i == (size_t)-1 || i < c->maps.n; i++) {
        const struct ptrace_map *mp = i == (size_t)-1 ? first : &c->maps.v[i];
        if (!mp || mp->perms[2] != 'x' || mp->perms[3] != 'p' || mp->path[0] != '/' ||
            (i != (size_t)-1 && mp == first))
            continue;
        if (++tries > 8)
            break;
        struct ptrace_module mod;
        uint64_t end;
        int rc = 0;
        if (mp == first && first_mod) /* already open (libc's, from resolve) */
            mod = *first_mod;
        else if (ptrace_module_open(c->pid, &c->maps, mp, &mod) < 0)
            continue;
        rc = ptrace_elf_exec_end(&mod.elf, mp->offset, &end);
        unsigned long bias = (unsigned long)mod.bias;
        if (mp != first || !first_mod)
            ptrace_module_close(&mod);
        if (rc < 0)
            continue;
        unsigned long at = ((unsigned long)end + bias + 15) & ~15UL;
        if (at >= mp->start && at < mp->end && mp->end - at >= len)
            return at;
    }
    return 0;
}

/* dlopen/dlerror in the target's own libc (libdl.so.2 or __libc_dlopen_mode before glibc
 * 2.34), plus the address ranges where the thread must not be hijacked. */
static int resolve(struct ctx *c, struct pb_err *err)
{
    struct ptrace_module libc, dl;
    const struct ptrace_map *mp = ptrace_maps_lookup(&c->maps, "libc.so", ".");
    if (!mp)
        mp = ptrace_maps_lookup(&c->maps, "libc-", "0123456789");
    if (!mp)
        return pb_err_set(err, PB_EUNKNOWN,
                          "process %d maps no glibc (libc.so.6): only glibc "
                          "targets can be injected",
                          (int)c->pid);
    int rc = ptrace_module_open(c->pid, &c->maps, mp, &libc);
    if (rc < 0)
        return pb_err_set(err, rc,
                          "cannot read the C library of %d (%s, through /proc/%d): "
                          "%s; run as the process's user or root",
                          (int)c->pid, mp->path, (int)c->pid, pb_strerror(rc));
    c->libc_text.lo = libc.lo;
    c->libc_text.hi = libc.hi;
    c->dlopen_mode = 2; /* RTLD_NOW */
    c->dlopen_fn = ptrace_module_sym(&libc, "dlopen", NULL);
    c->dlerror_fn = ptrace_module_sym(&libc, "dlerror", NULL);
    c->errno_fn = ptrace_module_sym(&libc, "__errno_location", NULL);
    if (!c->dlopen_fn && (mp = ptrace_maps_lookup(&c->maps, "libdl.so", ".")) != NULL &&
        ptrace_module_open(c->pid, &c->maps, mp, &dl) == 0) {
        c->dlopen_fn = ptrace_module_sym(&dl, "dlopen", NULL);
        c->dlerror_fn = ptrace_module_sym(&dl, "dlerror", NULL);
        ptrace_module_close(&dl);
    }
    if (!c->dlopen_fn) {
        c->dlopen_fn = ptrace_module_sym(&libc, "__libc_dlopen_mode", NULL);
        c->dlerror_fn = 0;
        c->dlopen_mode = (int)(2 | 0x80000000u); /* RTLD_NOW | __RTLD_DLOPEN */
    }
    /* The malloc family, and the span from the end of the function before it to its end: glibc
     * builds malloc.c as one unit, so its static helpers (_int_malloc, sysmalloc, ...) that
     * .dynsym does not name sit inside that span. */
    unsigned long lo = (unsigned long)-1, hi = 0;
    for (size_t i = 0; i < sizeof malloc_family / sizeof malloc_family[0]; i++) {
        unsigned long size = 0, a = ptrace_module_sym(&libc, malloc_family[i], &size);
        if (!a)
            continue;
        add_unsafe(c, a, a + (size ? size : 1));
        if (a < lo)
            lo = a;
        if (a + size > hi)
            hi = a + size;
    }
    if (hi) {
        uint64_t below = ptrace_elf_func_end_below(&libc.elf, lo - libc.bias);
        unsigned long span_lo = below ? (unsigned long)(below + libc.bias) : lo;
        if (lo - span_lo > 256 * 1024)
            span_lo = lo;
        if (hi - span_lo <= 512 * 1024)
            add_unsafe(c, span_lo, hi);
    }
    if (ptrace_tramp_code(&c->stub_code, &c->stub_len, &c->stub_stop) == 0 &&
        (c->stop_sig = pick_stop_sig(&c->st)) != 0) {
        const struct ptrace_map *x = NULL;
        for (size_t i = 0; i < c->maps.n && !x; i++)
            if (strcmp(c->maps.v[i].path, libc.path) == 0 && c->maps.v[i].perms[2] == 'x')
                x = &c->maps.v[i];
        c->stub = stub_home(c, x, &libc, c->stub_len);
    }
    ptrace_module_close(&libc);
    PB_LOG(PB_LOG_DEBUG, "pid %d: trampoline at %#lx, stop signal %d", (int)c->pid, c->stub,
           c->stop_sig);
    if (!c->dlopen_fn)
        return pb_err_set(err, PB_EUNKNOWN,
                          "no dlopen found in the libc of process %d: "
                          "its glibc is not supported",
                          (int)c->pid);
    /* The dynamic loader's code (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-2.31.so). */
    const struct ptrace_map *ld = ptrace_maps_lookup(&c->maps, "ld-linux", "-.");
    if (!ld)
        ld = ptrace_maps_lookup(&c->maps, "ld-", "0123456789");
    for (size_t i = 0; ld && i < c->maps.n; i++)
        if (strcmp(c->maps.v[i].path, ld->path) == 0 && c->maps.v[i].perms[2] == 'x')
            add_unsafe(c, c->maps.v[i].start, c->maps.v[i].end);
    PB_LOG(PB_LOG_DEBUG, "pid %d: dlopen %#lx dlerror %#lx, %d unsafe ranges", (int)c->pid,
           c->dlopen_fn, c->dlerror_fn, c->nunsafe);
    return 0;
}

/* Copies into copy_dir the files the library at abs carries: each NEEDED name that is a file in
 * its own directory (the probe's cJSON, found through its run path $ORIGIN). */
static int copy_carried(struct ctx *c, const char *abs)
{
    struct ptrace_elf e;
    int rc = ptrace_elf_open(abs, &e);
    if (rc < 0)
        return rc;
    const char *n;
    for (int i = 0; rc == 0 && (n = ptrace_elf_needed(&e, i)) != NULL; i++) {
        char from[PATH_MAX + NAME_MAX + 2], to[sizeof c->copy_dir + NAME_MAX + 2];
        struct stat st;
        size_t dir = (size_t)(ptrace_path_base(abs) - abs);
        snprintf(from, sizeof from, "%.*s%s", (int)dir, abs, n);
        if (strchr(n, '/') || strlen(n) > NAME_MAX || stat(from, &st) < 0 || !S_ISREG(st.st_mode))
            continue;
        if (c->ncarried == MAX_CARRIED) {
            rc = -E2BIG;
            break;
        }
        snprintf(to, sizeof to, "%s/%s", c->copy_dir, n);
        if ((rc = ptrace_file_copy(from, to, c->st.uid, c->st.gid)) == 0)
            pb_strlcpy(c->carried[c->ncarried++], n, sizeof c->carried[0]);
    }
    ptrace_elf_close(&e);
    return rc;
}

/* A fresh 0700 directory for the copies in the target's root: under its /tmp, else under the
 * first of /var/tmp and /dev/shm that is writable and lets files be mapped executable (a
 * hardened container mounts /tmp noexec, where dlopen fails: "failed to map segment from shared
 * object"). 0, or the error of /tmp (-EACCES: mounted noexec). */
static int make_copy_dir(struct ctx *c)
{
    static const char *const dirs[] = {"/tmp", "/var/tmp", "/dev/shm"};
    int rc = 0;
    c->root_len = (size_t)snprintf(c->copy_dir, sizeof c->copy_dir, "/proc/%d/root", (int)c->pid);
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        struct statvfs sv;
        int e = 0;
        snprintf(c->copy_dir + c->root_len, sizeof c->copy_dir - c->root_len, "%s", dirs[i]);
        if (statvfs(c->copy_dir, &sv) < 0)
            e = -errno;
        else if (sv.f_flag & ST_RDONLY)
            e = -EROFS;
        else if (sv.f_flag & ST_NOEXEC)
            e = -EACCES;
        snprintf(c->copy_dir + c->root_len, sizeof c->copy_dir - c->root_len, "%s/probing-XXXXXX",
                 dirs[i]);
        if (e == 0 && !mkdtemp(c->copy_dir))
            e = -errno;
        if (e == 0)
            return 0;
        if (i == 0)
            rc = e;
    }
    c->copy_dir[0] = '\0';
    return rc;
}

/* Removes the copies: after a failed dlopen, and after a successful one too, since the target
 * then maps the files and a name in its /tmp is no longer needed (nothing of ours is left). */
static void remove_copies(struct ctx *c)
{
    char f[sizeof c->copy_dir + NAME_MAX + 2];
    if (!c->copy_dir[0])
        return;
    if (c->copy_file[0])
        unlink(c->copy_file);
    for (int i = 0; i < c->ncarried; i++) {
        snprintf(f, sizeof f, "%s/%s", c->copy_dir, c->carried[i]);
        unlink(f);
    }
    rmdir(c->copy_dir);
}

/* The path to pass to dlopen: ours if the target sees the same file there, else a copy in a
 * fresh 0700 directory in the target's root (its /tmp, else make_copy_dir's other places),
 * owned by the target's user, with the files the library carries. A path that does not exist here is passed unchanged, so the target's dlopen
 * says why it cannot load it. */
static int make_visible(struct ctx *c, const char *lib, struct pb_err *err)
{
    char abs[PATH_MAX], there[PATH_MAX + 64];
    struct stat a, b;
    if (!realpath(lib, abs) || stat(abs, &a) < 0) {
        pb_strlcpy(c->path, lib, sizeof c->path);
        return 0;
    }
    snprintf(there, sizeof there, "/proc/%d/root%s", (int)c->pid, abs);
    if (stat(there, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        pb_strlcpy(c->path, abs, sizeof c->path);
        return 0;
    }
    int rc = make_copy_dir(c);
    if (rc < 0)
        return pb_err_set(err, rc,
                          "cannot copy %s into the root of %d: none of its /tmp, "
                          "/var/tmp, /dev/shm is writable and allows executing code (its /tmp: "
                          "%s); put the library on a path the process can see",
                          lib, (int)c->pid, rc == -EACCES ? "mounted noexec" : pb_strerror(rc));
    if (chmod(c->copy_dir, 0700) < 0 ||
        (chown(c->copy_dir, c->st.uid, c->st.gid) < 0 && geteuid() == 0))
        rc = -errno;
    snprintf(c->copy_file, sizeof c->copy_file, "%s/%s", c->copy_dir, ptrace_path_base(abs));
    if (rc == 0)
        rc = ptrace_file_copy(abs, c->copy_file, c->st.uid, c->st.gid);
    if (rc == 0)
        rc = copy_carried(c, abs);
    if (rc < 0)
        return pb_err_set(err, rc,
                          "cannot copy %s to %s: %s; put the library on a path the "
                          "process can see",
                          lib, c->copy_file, pb_strerror(rc));
    /* The target's view: strip our "/proc/PID/root" prefix. */
    pb_strlcpy(c->path, c->copy_file + c->root_len, sizeof c->path);
    PB_LOG(PB_LOG_INFO, "copied %s to %s for pid %d", abs, c->copy_file, (int)c->pid);
    return 0;
}

/* PTRACE_SEIZE or process_vm_readv refused: one line saying why and what to do. Where the
 * kernel has Yama (/proc/sys/kernel/yama/ptrace_scope; Ubuntu's default is 1), its scope names
 * the rule that refused: 1 only a parent attaches, 2 only root (CAP_SYS_PTRACE), 3 nobody until
 * reboot. A target started with PROBING=1 has the probe loaded already and needs neither
 * (docs/security.md). */
int ptrace_access_denied(const char *what, struct pb_err *err)
{
    char buf[16];
    long n = pb_read_file("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf);
    int scope = n > 0 ? atoi(buf) : 0;
    if (scope >= 3)
        return pb_err_set(err, -EPERM,
                          "%s denied by Yama: kernel.yama.ptrace_scope=%d forbids "
                          "it, even as root, until reboot: start the target with PROBING=1 (the "
                          "probe loaded at start-up needs no attach)",
                          what, scope);
    if (scope == 2)
        return pb_err_set(err, -EPERM,
                          "%s denied by Yama: kernel.yama.ptrace_scope=2 lets only "
                          "root attach: run probing as root (sudo), or start the target with "
                          "PROBING=1 (no attach needed)",
                          what);
    if (scope == 1)
        return pb_err_set(err, -EPERM,
                          "%s denied by Yama: kernel.yama.ptrace_scope=1 lets only a "
                          "parent process attach: run probing as root (sudo), set 'sudo sysctl "
                          "kernel.yama.ptrace_scope=0', or start the target with PROBING=1",
                          what);
    return pb_err_set(err, -EPERM, "%s denied: run as the same user or root", what);
}

static int attach(struct ctx *c, struct pb_err *err)
{
    c->tid = c->pid; /* the main thread; other threads keep running */
    int rc = ptrace_seize(c->tid);
    if (rc == -EPERM || rc == -EACCES) {
        char what[48];
        snprintf(what, sizeof what, "ptrace attach to %d", (int)c->pid);
        return ptrace_access_denied(what, err);
    }
    if (rc == -ESRCH && ptrace_proc_gone(c->pid))
        return gone(c, err);
    if (rc < 0)
        return pb_err_set(err, rc, "ptrace attach to %d failed: %s", (int)c->pid, pb_strerror(rc));
    c->attached = 1;
    char mem[64];
    snprintf(mem, sizeof mem, "/proc/%d/mem", (int)c->pid);
    c->memfd = open(mem, O_RDWR | O_CLOEXEC);
    if (c->memfd < 0)
        return fail(c, -errno, "opening /proc/PID/mem", err);
    return 0;
}

/* Wait for the PTRACE_INTERRUPT stop, passing through any signal delivered meanwhile. */
static int wait_interrupt(struct ctx *c, struct pb_err *err)
{
    for (int i = 0; i < 64; i++) {
        int status;
        int rc = ptrace_wait(c->tid, c->timeout_ms, &status);
        if (rc < 0)
            return fail(c, rc, "stopping a thread", err);
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return gone(c, err);
        if (!WIFSTOPPED(status))
            continue;
        if (status >> 16 == PTRACE_EVENT_STOP) {
            c->stopped = 1;
            int sig = WSTOPSIG(status);
            if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
                return pb_err_set(err, PB_ESTOPPED,
                                  "process %d was stopped (signal %d) during "
                                  "injection: resume it with 'kill -CONT %d' and retry",
                                  (int)c->pid, sig, (int)c->pid);
            return 0;
        }
        /* A signal for the thread: deliver it as if we were not here. */
        rc = ptrace_cont(c->tid, WSTOPSIG(status));
        if (rc < 0)
            return fail(c, rc, "resuming a thread", err);
    }
    return pb_err_set(err, PB_ETIMEDOUT, "cannot stop process %d: signals keep arriving; retry",
                      (int)c->pid);
}

static int in_unsafe(const struct ctx *c, unsigned long a)
{
    for (int i = 0; i < c->nunsafe; i++)
        if (a >= c->unsafe[i].lo && a < c->unsafe[i].hi)
            return 1;
    return 0;
}

/* Syscalls that malloc (and lock waits) make through libc's wrappers; the loader makes its own
 * inline, so a thread stopped in one of these inside libc may be deep in malloc. */
static int malloc_syscall(long nr)
{
    return nr == SYS_futex || nr == SYS_mmap || nr == SYS_munmap || nr == SYS_mprotect ||
           nr == SYS_brk || nr == SYS_madvise || nr == SYS_mremap;
}

/* Not in the loader nor in malloc, and (when stopped inside libc running code or in a syscall
 * malloc makes, e.g. a lock wait) not called from them either: a return address into them near
 * the top of the stack means the loader's or an arena's lock may be held. A thread blocked in
 * any other syscall (sleep, read, poll...) is at a safe point: stale return addresses left in
 * its stack frames must not count. Stack words are a heuristic, without unwind info: a false
 * "unsafe" only costs a retry. */
static int safe(struct ctx *c, const struct ptrace_regs *r)
{
    unsigned long pc = ptrace_regs_pc(r);
    if (in_unsafe(c, pc))
        return 0;
    if (pc < c->libc_text.lo || pc >= c->libc_text.hi)
        return 1;
    long nr = ptrace_regs_syscall(r, c->memfd);
    if (nr >= 0 && !malloc_syscall(nr))
        return 1;
    if (ptrace_regs_lr(r) && in_unsafe(c, ptrace_regs_lr(r)))
        return 0;
    unsigned long words[STACK_SCAN / sizeof(unsigned long)];
    ssize_t n = pread(c->memfd, words, sizeof words, (off_t)ptrace_regs_sp(r));
    for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof words[0]; i++)
        if (in_unsafe(c, words[i]))
            return 0;
    return 1;
}

static int find_safe_point(struct ctx *c, struct pb_err *err)
{
    for (int tries = 0; tries < SAFE_TRIES; tries++) {
        if (tries) {
            int rc = ptrace_cont(c->tid, 0);
            if (rc < 0)
                return fail(c, rc, "resuming a thread", err);
            c->stopped = 0;
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
        int rc = ptrace_interrupt(c->tid);
        if (rc < 0)
            return fail(c, rc, "interrupting a thread", err);
        if ((rc = wait_interrupt(c, err)) < 0)
            return rc;
        if ((rc = ptrace_regs_get(c->tid, &c->saved)) < 0)
            return fail(c, rc, "reading registers", err);
        if (safe(c, &c->saved)) {
            PB_LOG(PB_LOG_DEBUG, "pid %d: safe point pc %#lx after %d tries", (int)c->pid,
                   ptrace_regs_pc(&c->saved), tries + 1);
            return 0;
        }
    }
    return pb_err_set(err, PB_ETIMEDOUT,
                      "process %d stayed inside malloc or the dynamic loader "
                      "for %d tries: retry when it is less busy",
                      (int)c->pid, SAFE_TRIES);
}

static int mem_write(struct ctx *c, unsigned long addr, const void *buf, size_t n)
{
    ssize_t w = pwrite(c->memfd, buf, n, (off_t)addr);
    if (w < 0)
        return -errno;
    return (size_t)w == n ? 0 : -EIO;
}

/* Save registers, FP state, signal mask and the stack bytes we will use; write the path and,
 * with a trampoline, its code, its parameter block and the frame that restores the thread.
 * Stack layout, upwards from top (16-aligned): the parameter block, the rt_sigreturn frame, the
 * FP area (64-aligned), the path, the red zone, the thread's own stack. */
static int hijack(struct ctx *c, unsigned long *path_addr, unsigned long *top, struct pb_err *err)
{
    size_t len = strlen(c->path) + 1;
    int rc = ptrace_fpregs_get(c->tid, c->fp);
    if (rc < 0)
        return fail(c, rc, "reading FP registers", err);
    if (ptrace(PTRACE_GETSIGMASK, c->tid, (void *)sizeof c->sigmask, &c->sigmask) < 0)
        return fail(c, -errno, "reading the signal mask", err);
    size_t fpcap = c->stub ? sizeof c->fp->buf + 64 : 0, fplen = 0, frame = 0;
    unsigned char *fpimg = fpcap ? malloc(fpcap) : NULL;
    int xstate = 0;
    if (c->stub && fpimg)
        fplen = ptrace_tramp_fpstate(c->fp, fpimg, fpcap, &xstate);
    if (!fplen) { /* no room for the FP area: plain calls */
        c->stub = 0;
    } else {
        frame = ptrace_tramp_frame_size();
    }
    unsigned long sp = ptrace_regs_sp(&c->saved) - INJ_REDZONE;
    unsigned long str = (sp - len) & ~15UL;
    unsigned long fp_at = (str - fplen) & ~63UL;
    unsigned long t = c->stub ? (fp_at - frame - 8) & ~15UL : str - 16;
    if (c->stub)
        t -= INJ_TRAMP_PARAMS - 8; /* the frame starts at top + INJ_TRAMP_PARAMS - 8 */
    t &= ~15UL;
    c->save_lo = t - 64; /* room for the return address slot */
    c->save_len = sp - c->save_lo;
    c->save = malloc(c->save_len);
    if (!c->save) {
        free(fpimg);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    if (len > PATH_MAX) {
        free(fpimg);
        return pb_err_set(err, -ENAMETOOLONG, "library path too long: %s", c->path);
    }
    ssize_t n = pread(c->memfd, c->save, c->save_len, (off_t)c->save_lo);
    if (n != (ssize_t)c->save_len) {
        free(fpimg);
        return fail(c, n < 0 ? -errno : -EIO, "reading the stack", err);
    }
    c->hijacked = 1; /* from here on, restore() puts everything back */
    if ((rc = mem_write(c, str, c->path, len)) < 0) {
        free(fpimg);
        return fail(c, rc, "writing the stack", err);
    }
    if (c->stub) {
        unsigned char fr[1024];
        if (frame > sizeof fr || ptrace_tramp_frame(fr, &c->saved, c->sigmask, fp_at, xstate) < 0)
            rc = -EINVAL;
        if (rc == 0)
            rc = mem_write(c, fp_at, fpimg, fplen);
        if (rc == 0)
            rc = mem_write(c, t + INJ_TRAMP_PARAMS - 8, fr, frame);
        if (rc == 0 && c->stub_len <= sizeof c->stub_saved &&
            pread(c->memfd, c->stub_saved, c->stub_len, (off_t)c->stub) == (ssize_t)c->stub_len) {
            c->stub_written = 1;
            rc = mem_write(c, c->stub, c->stub_code, c->stub_len);
        } else if (rc == 0) {
            rc = -EIO;
        }
        if (rc < 0) {
            PB_LOG(PB_LOG_INFO, "pid %d: no trampoline (%s): plain calls", (int)c->pid,
                   pb_strerror(rc));
            c->stub = 0;
            rc = 0;
        }
    }
    free(fpimg);
    c->top = t;
    *path_addr = str;
    *top = t;
    return 0;
}

/* Call fn(args) on the hijacked thread; *ret gets its return value. */
static int call(struct ctx *c, const char *what, unsigned long fn, const unsigned long *args,
                int nargs, unsigned long top, unsigned long *ret, struct pb_err *err)
{
    struct ptrace_regs r = c->saved;
    unsigned long slot = 0, zero = 0;
    int rc;
    if (c->stub) {
        /* The parameter block, then the registers, then (once) the call's signal mask: if we
         * die after any step, the thread either has not moved yet or runs the trampoline,
         * which restores it. */
        uint64_t params[INJ_TRAMP_PARAMS / 8] = {0};
        params[0] = fn;
        params[1] = fn == c->errno_fn ? 0 : c->errno_addr;
        params[2] = (uint64_t)(uint32_t)c->saved_errno;
        params[5] = (uint64_t)c->stop_sig;
        rc = mem_write(c, top, params, sizeof params - 8); /* not the pretcode slot */
        if (rc == 0)
            rc = ptrace_tramp_setup(&r, c->stub, args, nargs, top);
    } else {
        rc = ptrace_remote_setup(&r, fn, args, nargs, top, &slot);
        if (rc == 0 && slot)
            rc = mem_write(c, slot, &zero, sizeof zero);
    }
    if (rc < 0)
        return fail(c, rc, "writing the stack", err);
    if ((rc = ptrace_regs_set(c->tid, &r)) < 0)
        return fail(c, rc, "setting registers", err);
    if (c->stub && !c->call_mask_set) {
        /* During the call only the stop signal and the synchronous ones reach the thread:
         * others wait for the thread's own mask (put back at restore) or go to other threads. */
        uint64_t mask = ~0ULL;
        static const int open_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
        for (size_t i = 0; i < sizeof open_sigs / sizeof open_sigs[0]; i++)
            mask &= ~(1ULL << (open_sigs[i] - 1));
        mask &= ~(1ULL << (c->stop_sig - 1));
        if (ptrace(PTRACE_SETSIGMASK, c->tid, (void *)sizeof mask, &mask) < 0)
            return fail(c, -errno, "setting the signal mask", err);
        c->call_mask_set = 1;
    }
    if ((rc = ptrace_cont(c->tid, 0)) < 0)
        return fail(c, rc, "resuming a thread", err);
    c->stopped = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long spent = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
        int status;
        rc = ptrace_wait(c->tid, c->timeout_ms - (int)spent, &status);
        if (rc == PB_ETIMEDOUT) {
            /* Abandon the call: stop the thread so that restore() can put it back. */
            if (ptrace_interrupt(c->tid) == 0 && wait_interrupt(c, NULL) == 0)
                c->stopped = 1;
            return pb_err_set(err, PB_ETIMEDOUT,
                              "%s did not return within %d ms in %d: the "
                              "thread was restored, but the library may be half loaded",
                              what, c->timeout_ms, (int)c->pid);
        }
        if (rc < 0)
            return fail(c, rc, what, err);
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return gone(c, err);
        if (!WIFSTOPPED(status))
            continue;
        int sig = WSTOPSIG(status);
        c->stopped = 1;
        if (status >> 16 == PTRACE_EVENT_STOP) {
            /* Group stop (SIGSTOP to the process): finish our call, stop again at detach. */
            if (sig != SIGTRAP)
                c->pending_sig = sig;
        } else {
            struct ptrace_regs now;
            if ((rc = ptrace_regs_get(c->tid, &now)) < 0)
                return fail(c, rc, "reading registers", err);
            if (c->stub && sig == c->stop_sig && ptrace_regs_pc(&now) == c->stub + c->stub_stop) {
                /* Our stop: the thread stays in this signal-delivery stop; the next call or
                 * restore() resumes it with the signal cancelled. */
                uint64_t v = 0;
                if (pread(c->memfd, &v, sizeof v, (off_t)(top + 48)) != (ssize_t)sizeof v)
                    return fail(c, -EIO, "reading the result", err);
                *ret = (unsigned long)v;
                return 0;
            }
            if (!c->stub && sig == SIGSEGV && ptrace_regs_pc(&now) == 0) {
                *ret = ptrace_regs_ret(&now);
                return 0;
            }
            if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP)
                return pb_err_set(err, PB_EDLOPEN,
                                  "%s crashed in %d (signal %d at %#lx): the "
                                  "thread was restored; the library is broken",
                                  what, (int)c->pid, sig, ptrace_regs_pc(&now));
            /* Hold one asynchronous signal until the thread is restored; pass others on. */
            if (!c->pending_sig) {
                c->pending_sig = sig;
                sig = 0;
            }
        }
        if (status >> 16 == PTRACE_EVENT_STOP)
            sig = 0;
        if ((rc = ptrace_cont(c->tid, sig)) < 0)
            return fail(c, rc, what, err);
        c->stopped = 0;
    }
}

/* Put back stack bytes, FP state, signal mask and registers (last, so that an interrupted
 * syscall restarts), then detach. Keeps the first error in err. Never leaves a stopped thread. */
static int restore(struct ctx *c, int rc, struct pb_err *err)
{
    if (c->attached && !c->stopped && !ptrace_proc_gone(c->pid)) {
        if (ptrace_interrupt(c->tid) == 0 && wait_interrupt(c, NULL) == 0)
            c->stopped = 1;
    }
    if (c->hijacked && c->stopped) {
        /* The thread's context first, its registers last of it (if we die before, the
         * trampoline restores the thread; after, the thread is back where it was), then the
         * memory we wrote, which nothing but us reads any more. */
        int r2 = ptrace_fpregs_set(c->tid, c->fp);
        int r3 = ptrace(PTRACE_SETSIGMASK, c->tid, (void *)sizeof c->sigmask, &c->sigmask) < 0
                     ? -errno
                     : 0;
        int r4 = ptrace_regs_set(c->tid, &c->saved);
        int r0 =
            c->errno_addr ? mem_write(c, c->errno_addr, &c->saved_errno, sizeof c->saved_errno) : 0;
        int r1 = mem_write(c, c->save_lo, c->save, c->save_len);
        if (r4 == 0 && c->stub_written && mem_write(c, c->stub, c->stub_saved, c->stub_len) == 0)
            c->stub_written = 0;
        int bad = r2 < 0 ? r2 : r3 < 0 ? r3 : r4 < 0 ? r4 : r0 < 0 ? r0 : r1;
        if (bad < 0 && rc == 0)
            rc = fail(c, bad, "restoring the thread", err);
        else if (bad < 0 && ptrace_proc_gone(c->pid) && rc != PB_EGONE)
            rc = gone(c, err);
    }
    if (c->attached) {
        int r = ptrace_detach(c->tid, c->pending_sig);
        if (r < 0 && rc == 0)
            rc = fail(c, r, "detaching", err);
        /* Collect the exit of a tracee that died under us, so it is not left half-reaped. */
        if (ptrace_proc_gone(c->pid)) {
            int status;
            waitpid(c->tid, &status, WNOHANG | __WALL);
            if (rc == 0 || rc == PB_ETIMEDOUT)
                rc = gone(c, err);
        }
    }
    return rc;
}

static int read_string(struct ctx *c, unsigned long addr, char *buf, size_t n)
{
    ssize_t r = pread(c->memfd, buf, n - 1, (off_t)addr);
    if (r <= 0) {
        buf[0] = '\0';
        return -EIO;
    }
    buf[r] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

int ptrace_inject(pid_t pid, const char *lib_path, const struct ptrace_opts *o, struct pb_err *err)
{
    /* Hold our catchable signals (Ctrl-C, SIGTERM from timeout or systemd, a closed terminal...)
     * until the target is restored and detached: they take effect when we return. SIGCHLD is
     * left to ptrace_wait, the synchronous ones to the kernel. */
    sigset_t hold, held;
    sigfillset(&hold);
    sigdelset(&hold, SIGCHLD);
    sigdelset(&hold, SIGSEGV);
    sigdelset(&hold, SIGBUS);
    sigdelset(&hold, SIGILL);
    sigdelset(&hold, SIGFPE);
    sigdelset(&hold, SIGTRAP);
    sigdelset(&hold, SIGSYS);
    sigdelset(&hold, SIGABRT);
    pthread_sigmask(SIG_BLOCK, &hold, &held);
    struct ctx *c = calloc(1, sizeof *c);
    struct ptrace_fpregs *fp = malloc(sizeof *fp);
    int rc = 0;
    if (!c || !fp) {
        rc = pb_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    if (pid <= 0 || !lib_path || !*lib_path) {
        rc = pb_err_set(err, PB_EBADARG, "ptrace_inject: bad pid or library path");
        goto out;
    }
    pb_err_clear(err);
    c->pid = pid;
    c->memfd = -1;
    c->fp = fp;
    c->timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : 10000;
    c->python_checked = o && o->python_checked;
    if ((rc = checks(c, err)) < 0 || (rc = resolve(c, err)) < 0 ||
        (rc = make_visible(c, lib_path, err)) < 0 || (rc = attach(c, err)) < 0 ||
        (rc = find_safe_point(c, err)) < 0)
        goto out;
    unsigned long str = 0, top = 0, handle = 0, msg = 0;
    if ((rc = hijack(c, &str, &top, err)) < 0)
        goto out;
    /* dlopen, the library's constructors and dlerror set errno in the thread they run on, which
     * the code we interrupted may be about to read: keep its value, put back in restore(). */
    unsigned long eloc = 0;
    if (c->errno_fn) {
        if ((rc = call(c, "__errno_location", c->errno_fn, NULL, 0, top, &eloc, err)) < 0)
            goto out;
        if (eloc && pread(c->memfd, &c->saved_errno, sizeof c->saved_errno, (off_t)eloc) ==
                        (ssize_t)sizeof c->saved_errno)
            c->errno_addr = eloc;
    }
    if (!c->errno_addr)
        PB_LOG(PB_LOG_INFO, "pid %d: the hijacked thread's errno is unknown: it may change",
               (int)pid);
    unsigned long args[2] = {str, (unsigned long)(unsigned)c->dlopen_mode};
    if ((rc = call(c, "dlopen", c->dlopen_fn, args, 2, top, &handle, err)) < 0)
        goto out;
    if (!handle) {
        char text[200] = "";
        if (c->dlerror_fn && call(c, "dlerror", c->dlerror_fn, NULL, 0, top, &msg, NULL) == 0 &&
            msg)
            read_string(c, msg, text, sizeof text);
        rc = pb_err_set(err, PB_EDLOPEN, "dlopen of %s failed in %d: %s", c->path, (int)pid,
                        text[0] ? text : "no reason given (dlerror unavailable)");
        goto out;
    }
    PB_LOG(PB_LOG_INFO, "pid %d: dlopen(%s) = %#lx", (int)pid, c->path, handle);
out:
    if (c) {
        rc = restore(c, rc, err);
        if (c->memfd >= 0)
            close(c->memfd);
        remove_copies(c);
        ptrace_maps_free(&c->maps);
    }
    if (c)
        free(c->save);
    free(fp);
    free(c);
    pthread_sigmask(SIG_SETMASK, &held, NULL);
    return rc;
}
