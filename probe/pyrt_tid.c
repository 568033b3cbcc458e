/* SPDX-License-Identifier: MIT */
/* pthread_t -> kernel tid, for CPython 3.8-3.10 whose thread states only hold the pthread_t
 * (tstate->thread_id; native_thread_id arrived in 3.11). In glibc a pthread_t is the address
 * of the thread's struct pthread, which holds the kernel tid at a fixed offset that differs
 * between glibc builds. probe_tid_calibrate() finds it with threads whose pthread_self() and
 * gettid() we know: the offset must hold the right tid in two different threads.
 * No GIL needed. */
#include "pyrt_internal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    size_t got = probe_mem_read_upto((const void *)(uintptr_t)self, buf, sizeof buf);
    for (size_t off = 0; off + sizeof(int) <= got; off += sizeof(int)) {
        int v;
        memcpy(&v, buf + off, sizeof v);
        if (v != (int)tid)
            hits[off / sizeof(int)] = 0;
    }
    for (size_t off = got; off < SCAN_BYTES; off += sizeof(int))
        hits[off / sizeof(int)] = 0;
}

/* Safe to call again (no-op once calibrated); callers serialise calls (init runs once). */
int probe_tid_calibrate(struct pb_err *err)
{
    unsigned char hits[SCAN_BYTES / sizeof(int)];
    struct helper h;
    pthread_t th;
    int rc;

    if (tid_offset >= 0)
        return 0;
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
    scan(pthread_self(), (long)syscall(SYS_gettid), hits);
    scan(h.self, h.tid, hits); /* helper is parked on the condvar: its struct is stable */

    pthread_mutex_lock(&h.lock);
    h.done = 1;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.lock);
    pthread_join(th, NULL);

    rc = pb_err_set(err, PB_EUNKNOWN, "tid calibration: no offset holds the tid in two threads");
    for (size_t i = 0; i < sizeof hits; i++) {
        if (hits[i]) {
            tid_offset = (long)(i * sizeof(int));
            pb_err_clear(err);
            rc = 0;
            break;
        }
    }
out:
    pthread_cond_destroy(&h.cond);
    pthread_mutex_destroy(&h.lock);
    return rc;
}

long probe_tid_from_pthread(unsigned long pthread_ident)
{
    int tid;
    if (tid_offset < 0 || !probe_ptr_ok((const void *)(uintptr_t)pthread_ident, 8))
        return -1;
    if (probe_mem_read((const char *)(uintptr_t)pthread_ident + tid_offset, &tid, sizeof tid) != 0)
        return -1;
    return tid > 0 ? (long)tid : -1; /* the kernel zeroes it when the thread exits */
}
