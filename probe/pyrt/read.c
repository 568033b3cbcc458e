/* SPDX-License-Identifier: MIT */
/* The reader's lowest layer (read.h): the async-signal-safe fault-proof read, the pointer
 * test and UTF-8 output. The pipe fallback for hosts that refuse process_vm_readv lives one
 * layer up (safe.c): it takes a mutex, which a signal handler must not. */
#include "read.h"

#include <errno.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>

static volatile int vm_state; /* 0 untested, 1 works, -1 refused */
#ifndef PYRT_REMOTE
/* Our pid, once pyrt_read_prepare ran (getpid is a system call of its own at every read
 * otherwise); a fork child takes its own (pthread_atfork), 0 means ask. */
static volatile pid_t self_pid;
static int atfork_done;

static void on_fork_child(void)
{
    self_pid = 0;
}

/* Registers the fork handler (once) and keeps our pid. */
static void keep_pid(void)
{
    if (!atfork_done && pthread_atfork(NULL, NULL, on_fork_child) == 0)
        atfork_done = 1;
    self_pid = atfork_done ? getpid() : 0;
}

void pyrt_self_pid_keep(void)
{
    keep_pid();
}

pid_t pyrt_self_pid(void)
{
    pid_t pid = self_pid;
    if (pid > 0)
        return pid;
    pid = getpid();
    if (atfork_done) /* a fork child: its own, from now on */
        self_pid = pid;
    return pid;
}
#endif
#ifdef PYRT_REMOTE
/* The out-of-process reader (probe/reader/): the CLI's read of the target (a live process or a
 * core file). */
static pyrt_read_fn pyrt_remote_read;

void pyrt_read_remote_set(pyrt_read_fn rd)
{
    pyrt_remote_read = rd;
}
#endif

int pyrt_read(uintptr_t addr, void *dst, size_t n)
{
    if (n == 0)
        return 0;
    if (!pyrt_ptr_ok((const void *)addr, 1) || vm_state < 0)
        return -1;
#ifdef PYRT_REMOTE
    return pyrt_remote_read(addr, dst, n);
#else
    struct iovec local = {dst, n};
    struct iovec remote = {(void *)addr, n};
    int saved = errno;
    pid_t pid = pyrt_self_pid();
    ssize_t r;
    /* One element: a page-crossing range either copies whole or comes back short. */
    do {
        r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == ENOSYS || errno == EPERM))
        vm_state = -1;
    errno = saved;
    return r == (ssize_t)n ? 0 : -1;
#endif
}

__attribute__((no_sanitize("address", "undefined"))) void pyrt_own_copy(void *dst, uintptr_t addr,
                                                                        size_t n)
{
    const volatile unsigned char *from = (const volatile unsigned char *)addr;
    unsigned char *to = dst;
    for (size_t i = 0; i < n; i++)
        to[i] = from[i];
}

int pyrt_iov_pages(uintptr_t at, uintptr_t end, struct iovec *out, int max, uintptr_t *reach)
{
    int k = 0;
    while (at < end && k < max) {
        uintptr_t next = (at | 4095) + 1;
        if (next > end)
            next = end;
        out[k].iov_base = (void *)at;
        out[k].iov_len = next - at;
        k++;
        at = next;
    }
    *reach = at;
    return k;
}

long pyrt_read_pair(uintptr_t a, void *da, size_t na, uintptr_t b, void *db, size_t nb)
{
#ifdef PYRT_REMOTE
    if (pyrt_read(a, da, na) != 0)
        return -1;
    return nb && pyrt_read(b, db, nb) == 0 ? (long)nb : 0;
#else
    struct iovec local[2] = {{da, na}, {db, nb}};
    struct iovec remote[1 + 4];
    uintptr_t at = b, end = b + nb;
    int k = 1, saved = errno;
    pid_t pid;
    ssize_t r;
    if (na == 0 || !pyrt_ptr_ok((const void *)a, 1) || vm_state < 0)
        return -1;
    remote[0].iov_base = (void *)a;
    remote[0].iov_len = na;
    if (nb && !pyrt_ptr_ok((const void *)b, 1))
        end = at; /* no second range */
    k += pyrt_iov_pages(at, end, remote + 1, (int)(sizeof remote / sizeof remote[0]) - 1, &at);
    local[1].iov_len = at - b;
    pid = pyrt_self_pid();
    do {
        r = process_vm_readv(pid, local, k > 1 ? 2 : 1, remote, (unsigned long)k, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == ENOSYS || errno == EPERM))
        vm_state = -1;
    errno = saved;
    if (r < (ssize_t)na)
        return -1;
    return (long)(r - (ssize_t)na);
#endif
}

int pyrt_read_prepare(void)
{
    static const char marker[8] = "pyrt-sg";
    char buf[8];
    vm_state = 0;
#ifndef PYRT_REMOTE
    keep_pid();
#endif
    if (pyrt_read((uintptr_t)marker, buf, sizeof buf) != 0 || memcmp(buf, marker, 8) != 0) {
        vm_state = -1;
        return -1;
    }
    vm_state = 1;
    return 0;
}

int pyrt_ptr_ok(const void *p, size_t align)
{
    uintptr_t v = (uintptr_t)p;
    if (v < 4096)
        return 0;
#if UINTPTR_MAX > 0xffffffffu
    if (v >= ((uintptr_t)1 << 56)) /* beyond any user-space address (x86-64, aarch64, LA57) */
        return 0;
#endif
    return align <= 1 || (v & (align - 1)) == 0;
}

size_t pyrt_utf8_put(char *out, size_t len, size_t cap, uint32_t c)
{
    unsigned char b[4];
    size_t n;
    if (c >= 0xD800 && c <= 0xDFFF)
        c = 0xFFFD;
    if (c < 0x80) {
        b[0] = (unsigned char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (unsigned char)(0xC0 | (c >> 6));
        b[1] = (unsigned char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (c >> 12));
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (c & 0x3F));
        n = 3;
    } else if (c <= 0x10FFFF) {
        b[0] = (unsigned char)(0xF0 | (c >> 18));
        b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (c & 0x3F));
        n = 4;
    } else {
        return pyrt_utf8_put(out, len, cap, 0xFFFD);
    }
    if (len + n > cap)
        return len;
    memcpy(out + len, b, n);
    return len + n;
}
