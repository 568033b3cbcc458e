/* SPDX-License-Identifier: MIT */
/* The injector: out-of-process half of probing. Finds what a target process is (CPython version,
 * whether the probe is loaded) from /proc, and makes it dlopen the probe library through ptrace.
 * All functions return 0 or a negative code (-errno or PB_E*), with detail in struct pb_err whose
 * msg is one line "what failed: what to do" ready for `probing: error: <msg>`. */
#ifndef INJECTOR_PTRACE_H
#define INJECTOR_PTRACE_H

#include <stddef.h>
#include <sys/types.h>

#include "pb.h"

struct ptrace_pyver {
    int major, minor, micro;
    int free_threaded; /* a free-threaded build (3.13t, 3.14t: Py_GIL_DISABLED) */
    char source
        [4096]; /* the binary or libpython the version was read from (as the target sees it) */
};

/* Detect the CPython version running in pid, from its executable or the libpython it maps.
 * PB_ENOPYTHON for a non-Python process, -ESRCH if it does not exist, -EACCES if /proc denies. */
int ptrace_pyver_detect(pid_t pid, struct ptrace_pyver *v, struct pb_err *err);
/* on: from now on each file's version (a libpython, an executable: told by device, inode and
 * path) is read once in this thread, and in the children it forks after (a command that reads
 * many processes running the same files: cluster's ranks). 0: forget, read every time. */
void ptrace_pyver_memo(int on);
/* The same, and *mapped: whether pid maps a file whose name starts with name_prefix (the probe's
 * library: loaded or not), from the same read of its maps. */
int ptrace_pyver_detect_mapping(pid_t pid, struct ptrace_pyver *v, const char *name_prefix,
                                int *mapped, struct pb_err *err);

/* Runtime addresses in pid of the interpreter's symbols names[0..n-1] (in libpython3.X when
 * the process maps it, else in its executable), 0 for one not found. 0, or a negative code. */
int ptrace_pysyms(pid_t pid, const char *const *names, int n, unsigned long *addrs,
                  struct pb_err *err);

/* The same for the ELF file at path mapped at start with file offset off (a core file's
 * mappings). 0, or -errno. */
int ptrace_file_syms(const char *path, unsigned long start, unsigned long off,
                     const char *const *names, int n, unsigned long *addrs);
/* The load bias of the ELF file at path mapped at start with file offset off. 0, or -errno. */
int ptrace_file_bias(const char *path, unsigned long start, unsigned long off, unsigned long *bias);

/* The first n bytes of the section called name of the ELF file at path: 0, or -ENOENT (none, or
 * shorter than n), or -errno. */
int ptrace_file_section(const char *path, const char *name, void *buf, size_t n);
/* Whether the file at path may hold CPython's _asyncio (its own module, libpython, or a python
 * executable it is built into). */
int ptrace_asyncio_candidate(const char *path);
/* The same (first n bytes of section name) from the first module of pid that may hold _asyncio
 * and has it (its file read through /proc/PID/root). 0; 1 when none has it and no _asyncio
 * module is mapped (asyncio not imported); or a negative code with err. */
int ptrace_asyncio_section(pid_t pid, const char *name, void *buf, size_t n, struct pb_err *err);

/* From hold to release, every read of pid's maps is the first one of the scope (one read of
 * /proc/PID/maps, 60-100 us on a Python process, instead of one per check): for checks that
 * look at the same moment, such as those before an injection. Per thread: one scope in a thread
 * at a time, and only that thread's reads are the scope's. */
void ptrace_maps_hold(pid_t pid);
void ptrace_maps_release(void);
/* on: from now on the first read of each process's maps in this thread is kept, and later reads
 * of the same process (here, or in a child forked after) are that one: for a command that looks
 * at many processes and then works on each in a child of its own (cluster's ranks, read once by
 * the parent to find them), where the moment of the first look is recent enough. 0: forget
 * them, and read afresh. */
void ptrace_maps_keep(int on);
/* Stops using pid's kept maps (later reads of pid are fresh) without freeing them: in a worker
 * forked after they were read, which would write to (and so copy) a page of its parent's for
 * each one it frees. */
void ptrace_maps_keep_forget(pid_t pid);
/* Whether pid maps a file whose basename starts with name_prefix (e.g. "libprobing-").
 * Returns 1 (path copied to path[n] if not NULL), 0, or -errno. */
int ptrace_maps_find(pid_t pid, const char *name_prefix, char *path, size_t n);

struct ptrace_opts {
    int timeout_ms;     /* for each remote call; 0 means the default (10000) */
    int python_checked; /* the caller's ptrace_pyver_detect found CPython in pid: not again (it
                           reads the maps and the interpreter's file: 0.3-0.6 ms of CPU) */
};

/* Make pid dlopen(lib_path, RTLD_NOW) through ptrace. Checks first, each with a clear error: the
 * process exists, is not stopped (SIGSTOP), is not traced by another tracer, may be ptraced by us
 * (Yama ptrace_scope, uid). Hijacks one thread at a safe point, calls dlopen from the target's own
 * libc, reports dlerror() text on failure, restores all registers and memory on every path, and
 * detaches. The path is made visible from the target's mount namespace first (copied under the
 * target's /tmp if needed). Returns 0 once dlopen returned a handle. */
int ptrace_inject(pid_t pid, const char *lib_path, const struct ptrace_opts *o, struct pb_err *err);

/* Access to pid's memory or to attaching was refused (EPERM): sets the one-line error, "WHAT
 * denied" and why: Yama's kernel.yama.ptrace_scope (1 only a parent, 2 only root, 3 nobody until
 * reboot) with what to do, or the uid. what: "ptrace attach to 123", "reading the memory of 123".
 * Returns -EPERM. inject.c. */
int ptrace_access_denied(const char *what, struct pb_err *err);

/* CPython 3.14+ targets may refuse external debuggers' code (PEP 768's opt-outs:
 * PYTHON_DISABLE_REMOTE_DEBUG, -X disable-remote-debug, PyConfig.remote_debug = 0): PB_EAUTH
 * with the one-line error when pid did, else 0 (also when it cannot be told: older versions).
 * remote_debug.c. */
int ptrace_remote_debug_check(pid_t pid, const struct ptrace_pyver *v, struct pb_err *err);

/* Copy the file from to a new file to (O_EXCL, mode 0755) owned by uid:gid (a failing chown
 * counts only when we are root): how a library is put where a target will dlopen it (copy.c).
 * 0 or -errno. */
int ptrace_file_copy(const char *from, const char *to, uid_t uid, gid_t gid);

#endif
