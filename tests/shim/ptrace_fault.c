/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim that makes ptrace misbehave on request, for the injector's failure paths.
 * Build: cc -shared -fPIC -o ptrace_fault.so ptrace_fault.c -ldl; preload into the process that
 * injects (the CLI, or the unit-test helper). Driven by environment variables:
 *   PTRACE_FAULT_SEIZE_ERRNO=E   PTRACE_SEIZE fails with errno E (e.g. 1 for EPERM).
 *   PTRACE_FAULT_KILL_AT_SETREGS=N   at the Nth PTRACE_SETREGS / PTRACE_SETREGSET call, SIGKILL
 *                                the target's process first: "the process exits mid-injection".
 *   PTRACE_FAULT_VM_READ_ERRNO=E process_vm_readv fails with errno E (1: EPERM, as Yama's
 *                                ptrace_scope makes it for a process we may not attach to).
 *   PTRACE_FAULT_LOG=path        append one line per intercepted call (request, pid, count). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

typedef long (*ptrace_fn)(int, pid_t, void *, void *);

static int setregs_calls;

static void note(const char *what, int req, pid_t pid)
{
    const char *path = getenv("PTRACE_FAULT_LOG");
    if (!path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s req=%#x pid=%d setregs=%d\n", what, req, (int)pid,
                     setregs_calls);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        n = 0;
    close(fd);
}

long ptrace(enum __ptrace_request request, ...)
{
    va_list ap;
    va_start(ap, request);
    pid_t pid = va_arg(ap, pid_t);
    void *addr = va_arg(ap, void *);
    void *data = va_arg(ap, void *);
    va_end(ap);
    static ptrace_fn real;
    if (!real)
        real = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
    const char *e = getenv("PTRACE_FAULT_SEIZE_ERRNO");
    if ((int)request == PTRACE_SEIZE && e && atoi(e) > 0) {
        note("seize-fail", (int)request, pid);
        errno = atoi(e);
        return -1;
    }
    if ((int)request == PTRACE_SETREGS || (int)request == PTRACE_SETREGSET) {
        setregs_calls++;
        const char *n = getenv("PTRACE_FAULT_KILL_AT_SETREGS");
        if (n && atoi(n) == setregs_calls) {
            note("kill", (int)request, pid);
            kill(pid, SIGKILL);
            /* Let the kill land before the call goes through, as a real exit would. */
            usleep(20000);
        }
    }
    return real((int)request, pid, addr, data);
}

typedef ssize_t (*vm_read_fn)(pid_t, const struct iovec *, unsigned long, const struct iovec *,
                              unsigned long, unsigned long);

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                         const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
    static vm_read_fn real;
    const char *e = getenv("PTRACE_FAULT_VM_READ_ERRNO");
    if (e && atoi(e) > 0) {
        errno = atoi(e);
        return -1;
    }
    if (!real)
        real = (vm_read_fn)dlsym(RTLD_NEXT, "process_vm_readv");
    return real(pid, local, liovcnt, remote, riovcnt, flags);
}
