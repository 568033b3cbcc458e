/* SPDX-License-Identifier: MIT */
/* Low-level reading of our own process for the no-GIL walk: fault-proof memory reads, and the
 * pthread_t -> kernel tid mapping of CPython 3.8-3.10.
 * Reads: process_vm_readv(2) on getpid() copies memory the way the kernel reads a user buffer,
 * so an unmapped address gives EFAULT instead of SIGSEGV. Where that syscall is refused
 * (seccomp profiles, old kernels) a pipe does the same job: write(2) from the suspect address
 * fails with EFAULT, then read(2) the bytes back.
 * Tids: thread states before 3.11 hold only the pthread_t (tstate->thread_id). In glibc that is
 * the address of the thread's struct pthread, which holds the kernel tid at an offset that
 * differs between glibc builds; pyrt_tid_calibrate() finds it with two threads of our own whose
 * pthread_self() and gettid() are known: the one that loaded the probe scans itself at load
 * (pyrt_tid_seed), the agent thread scans itself later; a helper thread of its own only when
 * that leaves no answer. pyrt_init (pyrt.h) sets up both. No GIL needed;
 * thread-safe; never crashes. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

enum { MEM_UNSET, MEM_VM, MEM_PIPE, MEM_NONE };

static int mem_method = MEM_UNSET;
static int pipe_fd[2] = {-1, -1};
static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;

/* The remote range is cut at page boundaries: the kernel never splits one iovec element on a
 * partial transfer, so one element per page makes "copy up to the first bad page" work. */
static size_t read_vm(const void *addr, void *dst, size_t n)
{
    enum { PAGE = 4096, MAXV = 64 };
    struct iovec remote[MAXV];
    size_t total = 0;
    while (total < n) {
        int cnt = 0;
        size_t batch = 0;
        uintptr_t a = (uintptr_t)addr + total;
        while (cnt < MAXV && total + batch < n) {
            size_t in_page = PAGE - ((a + batch) & (PAGE - 1));
            size_t len = n - total - batch < in_page ? n - total - batch : in_page;
            remote[cnt].iov_base = (void *)(a + batch);
            remote[cnt].iov_len = len;
            batch += len;
            cnt++;
        }
        struct iovec local = {(char *)dst + total, batch};
        ssize_t r;
        do {
            r = process_vm_readv(pyrt_self_pid(), &local, 1, remote, (unsigned long)cnt, 0);
        } while (r < 0 && errno == EINTR);
        if (r <= 0)
            break;
        total += (size_t)r;
        if ((size_t)r < batch)
            break;
    }
    return total;
}

/* One pipe shared by all readers, so the write/read pair is done under a lock. Chunks of at
 * most a page stay below the pipe's capacity, so write(2) never blocks. */
static size_t read_pipe(const void *addr, void *dst, size_t n)
{
    size_t done = 0;
    pthread_mutex_lock(&pipe_lock);
    while (done < n) {
        /* Never across a page boundary: write(2) fails whole on a fault, not partially. */
        size_t in_page = 4096 - (((uintptr_t)addr + done) & 4095);
        size_t chunk = n - done < in_page ? n - done : in_page;
        ssize_t w = write(pipe_fd[1], (const char *)addr + done, chunk);
        if (w <= 0)
            break;
        ssize_t got = 0;
        while (got < w) {
            ssize_t r = read(pipe_fd[0], (char *)dst + done + got, (size_t)(w - got));
            if (r <= 0)
                break;
            got += r;
        }
        done += (size_t)got;
        if (got < w || (size_t)w < chunk)
            break;
    }
    pthread_mutex_unlock(&pipe_lock);
    return done;
}

static void choose(void)
{
    static const char probe_bytes[8] = "pyrt-ok";
    char buf[8];
    /* PROBING_PYRT_READ=pipe forces the fallback (tests, and hosts where the syscall is
     * filtered in a way the check below cannot see). */
    const char *force = getenv("PROBING_PYRT_READ");
    pyrt_self_pid_keep();
    mem_method = MEM_VM;
    if (!(force && strcmp(force, "pipe") == 0) &&
        read_vm(probe_bytes, buf, sizeof buf) == sizeof buf && memcmp(buf, probe_bytes, 8) == 0)
        return;
    if (pipe2(pipe_fd, O_CLOEXEC | O_NONBLOCK) == 0) {
        mem_method = MEM_PIPE;
        if (read_pipe(probe_bytes, buf, sizeof buf) == sizeof buf &&
            memcmp(buf, probe_bytes, 8) == 0)
            return;
        close(pipe_fd[0]);
        close(pipe_fd[1]);
        pipe_fd[0] = pipe_fd[1] = -1;
    }
    mem_method = MEM_NONE;
}

/* Returns 0, or -ENOSYS when neither method works (then every read fails cleanly). */
int pyrt_mem_init(void)
{
    pthread_once(&mem_once, choose);
    return mem_method == MEM_NONE ? -ENOSYS : 0;
}

size_t pyrt_mem_read_upto(const void *addr, void *dst, size_t n)
{
    if (n == 0 || !addr)
        return 0;
    if (mem_method == MEM_UNSET)
        pyrt_mem_init();
    switch (mem_method) {
    case MEM_VM: return read_vm(addr, dst, n);
    case MEM_PIPE: return read_pipe(addr, dst, n);
    default: return 0;
    }
}

int pyrt_mem_read(const void *addr, void *dst, size_t n)
{
    if (!pyrt_ptr_ok(addr, 1))
        return -EFAULT;
    return pyrt_mem_read_upto(addr, dst, n) == n ? 0 : -EFAULT;
}

int pyrt_mem_read_at(uintptr_t addr, void *dst, size_t n)
{
    return pyrt_mem_read((const void *)addr, dst, n) == 0 ? 0 : -1;
}

/* ---- pthread_t -> tid ---- */

#define SCAN_BYTES 4096 /* struct pthread is ~2.3 KiB on x86-64 glibc 2.36 */

static long tid_offset = -1;

struct helper {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t self;
    long tid;
    int ready;
    int done;
};

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    pthread_mutex_lock(&h->lock);
    h->self = pthread_self();
    h->tid = (long)syscall(SYS_gettid);
    h->ready = 1;
    pthread_cond_broadcast(&h->cond);
    while (!h->done)
        pthread_cond_wait(&h->cond, &h->lock);
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* Marks in hits[] every 4-byte-aligned offset of the struct pthread at self holding tid. */
static void scan(pthread_t self, long tid, unsigned char *hits)
{
    unsigned char buf[SCAN_BYTES];
    size_t got = pyrt_mem_read_upto((const void *)(uintptr_t)self, buf, sizeof buf);
    for (size_t off = 0; off + sizeof(int) <= got; off += sizeof(int)) {
        int v;
        memcpy(&v, buf + off, sizeof v);
        if (v != (int)tid)
            hits[off / sizeof(int)] = 0;
    }
    for (size_t off = got; off < SCAN_BYTES; off += sizeof(int))
        hits[off / sizeof(int)] = 0;
}

/* The offset of the first hit left in hits[], or -1. */
static long first_hit(const unsigned char *hits)
{
    for (size_t i = 0; i < SCAN_BYTES / sizeof(int); i++)
        if (hits[i])
            return (long)(i * sizeof(int));
    return -1;
}

/* One thread's own scan, kept by pyrt_tid_seed() for the first calibration from another. */
static unsigned char seed_hits[SCAN_BYTES / sizeof(int)];
static long seed_tid = -1;
static pthread_mutex_t calib_lock = PTHREAD_MUTEX_INITIALIZER;

void pyrt_tid_seed(void)
{
#if PY_VERSION_HEX < 0x030B0000
    /* PROBING_TEST_NO_TID_SEED=1: no seed, so that the tests reach the helper thread's way
     * (tests/e2e/test_dump.py). Unset in production. */
    if (getenv("PROBING_TEST_NO_TID_SEED"))
        return;
    long tid = (long)syscall(SYS_gettid);
    pthread_mutex_lock(&calib_lock);
    memset(seed_hits, 1, sizeof seed_hits);
    scan(pthread_self(), tid, seed_hits);
    seed_tid = tid;
    pthread_mutex_unlock(&calib_lock);
#endif
}

/* Safe to call again and from several threads (no-op once calibrated). */
int pyrt_tid_calibrate(struct pb_err *err)
{
    unsigned char hits[SCAN_BYTES / sizeof(int)];
    struct helper h;
    pthread_t th;
    int rc;

    pthread_mutex_lock(&calib_lock);
    if (tid_offset >= 0) {
        pthread_mutex_unlock(&calib_lock);
        return 0;
    }
    long self_tid = (long)syscall(SYS_gettid);
    if (seed_tid > 0 && seed_tid != self_tid) {
        /* Another thread scanned itself (the loader's, at load): one scan of ours is enough,
         * and no thread has to start and be scheduled first. */
        memcpy(hits, seed_hits, sizeof hits);
        scan(pthread_self(), self_tid, hits);
        if ((tid_offset = first_hit(hits)) >= 0) {
            pthread_mutex_unlock(&calib_lock);
            PB_LOG(PB_LOG_DEBUG, "pthread tid at offset %ld (the loading thread's scan and ours)",
                   tid_offset);
            return 0;
        }
    }
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.lock, NULL);
    pthread_cond_init(&h.cond, NULL);
    rc = pthread_create(&th, NULL, helper_main, &h);
    if (rc != 0) {
        rc = pb_err_set(err, -rc, "tid calibration: pthread_create: %s", strerror(rc));
        goto out;
    }
    pthread_mutex_lock(&h.lock);
    while (!h.ready)
        pthread_cond_wait(&h.cond, &h.lock);
    pthread_mutex_unlock(&h.lock);

    memset(hits, 1, sizeof hits);
    scan(pthread_self(), self_tid, hits);
    scan(h.self, h.tid, hits); /* helper is parked on the condvar: its struct is stable */

    pthread_mutex_lock(&h.lock);
    h.done = 1;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    pthread_join(th, NULL);

    rc = 0;
    if ((tid_offset = first_hit(hits)) < 0)
        rc =
            pb_err_set(err, PB_EUNKNOWN, "tid calibration: no offset holds the tid in two threads");
    else
        PB_LOG(PB_LOG_DEBUG, "pthread tid at offset %ld (a helper thread's scan and ours)",
               tid_offset);
out:
    pthread_cond_destroy(&h.cond);
    pthread_mutex_destroy(&h.lock);
    pthread_mutex_unlock(&calib_lock);
    return rc;
}

long pyrt_tid_from_pthread(unsigned long pthread_ident)
{
    int tid;
    if (tid_offset < 0 || !pyrt_ptr_ok((const void *)(uintptr_t)pthread_ident, 8))
        return -1;
    if (pyrt_mem_read((const char *)(uintptr_t)pthread_ident + tid_offset, &tid, sizeof tid) != 0)
        return -1;
    return tid > 0 ? (long)tid : -1; /* the kernel zeroes it when the thread exits */
}

/* ---- set-up ---- */

static int initialised;

/* Requires nothing; may be called again. */
int pyrt_init(struct pb_err *err)
{
    int rc = pyrt_mem_init();
    if (rc < 0)
        return pb_err_set(err, rc, "no fault-proof read available (process_vm_readv and pipe)");
#if PY_VERSION_HEX < 0x030B0000
    /* Without a tid offset native ids are -1; not fatal for the rest of the probe. */
    if (pyrt_tid_calibrate(err) < 0)
        PB_LOG(PB_LOG_WARN, "pyrt: %s; native thread ids unknown", err ? err->msg : "");
    pb_err_clear(err);
#endif
    rc = pyrt_layout_check(err);
    if (rc < 0)
        return rc;
    initialised = 1;
    return 0;
}

int pyrt_ready(void)
{
    return initialised;
}
