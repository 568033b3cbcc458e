/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim taking the CLI's random sources away, for the TCP token's failure paths (a
 * seccomp filter refusing getrandom, an old kernel without it, a chroot without /dev/urandom).
 * Build: cc -shared -fPIC -o random_fault.so random_fault.c -ldl. Environment:
 *   RANDOM_FAULT_GETRANDOM=E   getrandom() fails with errno E (38: ENOSYS, 1: EPERM).
 *   RANDOM_FAULT_URANDOM=E     opening /dev/urandom fails with errno E (2: ENOENT).
 *   RANDOM_FAULT_LOG=path      append one line per intercepted call: what, and its outcome. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <unistd.h>

static void note(const char *what, int result)
{
    const char *path = getenv("RANDOM_FAULT_LOG");
    if (!path)
        return;
    typedef int (*open_fn)(const char *, int, ...);
    open_fn real = (open_fn)dlsym(RTLD_NEXT, "open");
    int fd = real(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s %d\n", what, result);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        n = 0;
    close(fd);
}

static int fault(const char *var)
{
    const char *v = getenv(var);
    return v && *v ? atoi(v) : 0;
}

ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
    int e = fault("RANDOM_FAULT_GETRANDOM");
    if (e) {
        note("getrandom", -e);
        errno = e;
        return -1;
    }
    typedef ssize_t (*fn)(void *, size_t, unsigned);
    ssize_t r = ((fn)dlsym(RTLD_NEXT, "getrandom"))(buf, len, flags);
    note("getrandom", (int)r);
    return r;
}

static int open_common(const char *sym, int dirfd, const char *path, int flags, mode_t mode)
{
    int urandom = path && strcmp(path, "/dev/urandom") == 0;
    int e = urandom ? fault("RANDOM_FAULT_URANDOM") : 0;
    if (e) {
        note("urandom", -e);
        errno = e;
        return -1;
    }
    int r;
    if (dirfd == -1) {
        typedef int (*fn)(const char *, int, ...);
        r = ((fn)dlsym(RTLD_NEXT, sym))(path, flags, mode);
    } else {
        typedef int (*fn)(int, const char *, int, ...);
        r = ((fn)dlsym(RTLD_NEXT, sym))(dirfd, path, flags, mode);
    }
    if (urandom)
        note("urandom", r < 0 ? -errno : 0);
    return r;
}

#define MODE_ARG(flags, mode)              \
    mode_t mode = 0;                       \
    if ((flags) & (O_CREAT | O_TMPFILE)) { \
        va_list ap;                        \
        va_start(ap, flags);               \
        mode = (mode_t)va_arg(ap, int);    \
        va_end(ap);                        \
    }

int open(const char *path, int flags, ...)
{
    MODE_ARG(flags, mode)
    return open_common("open", -1, path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    MODE_ARG(flags, mode)
    return open_common("open64", -1, path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    MODE_ARG(flags, mode)
    return open_common("openat", dirfd, path, flags, mode);
}
