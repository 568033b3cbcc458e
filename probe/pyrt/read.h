/* SPDX-License-Identifier: MIT */
/* The lowest layer of the interpreter reader (probe-internal): the async-signal-safe,
 * fault-proof read of our own memory (process_vm_readv(2) on our own pid: a bad pointer gives
 * EFAULT, never SIGSEGV), the plausible-pointer test, and UTF-8 output of code points. No
 * CPython header, no allocation, no lock: the signal handlers (sig/) and every other file of
 * pyrt/ build on it. make check-exports holds read.o to the signal handlers' deny list. */
#ifndef PROBE_PYRT_READ_H
#define PROBE_PYRT_READ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/* A fault-proof read: copies n bytes at addr into dst, 0, or -1 when any is unreadable. */
typedef int (*pyrt_read_fn)(uintptr_t addr, void *dst, size_t n);

/* Fault-proof copy of n bytes at addr into dst (process_vm_readv on ourselves). Returns 0 or
 * -1. Async-signal-safe. */
int pyrt_read(uintptr_t addr, void *dst, size_t n);
/* Two fault-proof reads in one system call: na bytes at a into da, then up to nb bytes at b
 * into db (page by page: the pages after an unreadable one are left). Returns the bytes read
 * at b (0 when nb is 0), or -1 when the range at a was not read whole. Async-signal-safe. */
long pyrt_read_pair(uintptr_t a, void *da, size_t na, uintptr_t b, void *db, size_t nb);
/* Outside any handler: tests that pyrt_read works here (seccomp may refuse the syscall;
 * then every later read fails cleanly). Returns 0, or -1. */
int pyrt_read_prepare(void);
#ifndef PYRT_REMOTE
/* Our pid without a system call once pyrt_self_pid_keep (or pyrt_read_prepare) registered the
 * fork handler that forgets it (a fork child then keeps its own). Async-signal-safe. */
pid_t pyrt_self_pid(void);
/* Outside any handler: registers that fork handler and keeps the pid. */
void pyrt_self_pid_keep(void);
#endif
#ifdef PYRT_REMOTE
/* The out-of-process reader (probe/reader/): every read goes through rd, the CLI's read of the
 * target. Set before each walk. */
void pyrt_read_remote_set(pyrt_read_fn rd);
#endif

/* n bytes at addr copied directly, for memory the caller knows is mapped (the calling thread's
 * own stack, a live object): byte by byte through volatile loads, outside the sanitizers' view
 * (other functions' stack frames hold their redzones; CPython's memory is not ours).
 * Async-signal-safe. */
void pyrt_own_copy(void *dst, uintptr_t addr, size_t n);
/* [at, end) as remote iovecs cut at page boundaries (so that an unreadable page only shortens
 * a process_vm_readv), at most max. Returns the count; the iovecs end at the returned *reach. */
int pyrt_iov_pages(uintptr_t at, uintptr_t end, struct iovec *out, int max, uintptr_t *reach);
/* A plausible heap/data pointer (non-NULL, aligned to align, in user space). Async-signal-safe. */
int pyrt_ptr_ok(const void *p, size_t align);

/* Appends code point c as UTF-8 at out[len], within cap bytes (surrogates and values past
 * U+10FFFF become U+FFFD). Returns the new length, or len when it does not fit.
 * Async-signal-safe. */
size_t pyrt_utf8_put(char *out, size_t len, size_t cap, uint32_t c);

/* The i-th code point of a compact str's character data of this kind (1, 2 or 4 bytes). */
static inline uint32_t pyrt_ucs_at(const unsigned char *data, unsigned kind, size_t i)
{
    if (kind == 1)
        return data[i];
    if (kind == 2) {
        uint16_t v;
        memcpy(&v, data + 2 * i, 2);
        return v;
    }
    uint32_t c;
    memcpy(&c, data + 4 * i, 4);
    return c;
}

#endif
