/* SPDX-License-Identifier: MIT */
/* Test-only entry point linked with the pyrt objects into pyrt-test-3.X.so (never into the
 * product), so that a stock interpreter (Debian's /usr/bin/python3 has no libpython to embed)
 * can drive pyrt_snapshot through ctypes: see test_ctypes.py. The snapshot is printed as
 * tab-separated lines: "V version", "G holder", "T ident native is_main holds_gil daemon
 * from_threading truncated nframes name", "F func file line", "L name type value". */
#include "pyrt/internal.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

struct job {
    char *buf;
    size_t n;
    int flags;
    int max_frames;
    const char *wait_func; /* poll until a GIL holder's innermost frame is this function */
    int rc;
};

static size_t add(char *buf, size_t n, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t add(char *buf, size_t n, size_t len, const char *fmt, ...)
{
    va_list ap;
    int r;
    if (len >= n)
        return len;
    va_start(ap, fmt);
    r = vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
    return r < 0 ? len : len + (size_t)r;
}

static int held_by(const struct probe_snapshot *s, const char *func)
{
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].holds_gil && s->threads[i].nframes > 0 &&
            strcmp(s->threads[i].frames[0].func, func) == 0)
            return 1;
    return 0;
}

static void run(struct job *j)
{
    struct probe_snapshot s;
    struct pb_err err;
    size_t len = 0;
    for (int tries = 0;; tries++) {
        j->rc = pyrt_snapshot(&s, j->flags, j->max_frames, &err);
        if (j->rc < 0) {
            snprintf(j->buf, j->n, "E\t%d\t%s\n", j->rc, err.msg);
            return;
        }
        if (!j->wait_func || held_by(&s, j->wait_func) || tries >= 1000)
            break;
        pyrt_snapshot_free(&s);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    len = add(j->buf, j->n, len, "V\t%s\nG\t%ld\n", s.version, s.gil_holder_native_id);
    for (int i = 0; i < s.nthreads; i++) {
        struct probe_thread *t = &s.threads[i];
        len = add(j->buf, j->n, len, "T\t%lu\t%ld\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", t->ident,
                  t->native_id, t->is_main, t->holds_gil, t->daemon, t->name_from_threading,
                  t->truncated, t->nframes, t->name);
        for (int k = 0; k < t->nframes; k++) {
            struct probe_frame *f = &t->frames[k];
            len = add(j->buf, j->n, len, "F\t%s\t%s\t%d\n", f->func, f->file, f->line);
            for (int m = 0; m < f->nlocals; m++)
                len = add(j->buf, j->n, len, "L\t%s\t%s\t%s\n", f->locals[m].name,
                          f->locals[m].type, f->locals[m].value);
        }
    }
    if (len >= j->n)
        j->rc = -2; /* buffer too small */
    pyrt_snapshot_free(&s);
}

static void *thread_main(void *arg)
{
    run(arg);
    return NULL;
}

/* Snapshot into buf. new_thread: take it from a fresh native thread (never a Python thread;
 * call through ctypes.CDLL so the caller's GIL is released meanwhile). Returns 0, -2 when buf
 * is too small, or the snapshot's error code. */
/* go: set to 1 on entry (a flag the hog thread polls before taking the GIL for good).
 * wake != 0: afterwards, SIGUSR1 the GIL holder sitting in wait_func until it has left (to free
 * a thread parked in pause() with the GIL; the caller cannot run Python until then). */
EXPORT int pyrt_test_dump(char *buf, size_t n, int flags, int max_frames, int new_thread,
                          const char *wait_func, long wake_tid, int *go);
EXPORT int pyrt_test_dump(char *buf, size_t n, int flags, int max_frames, int new_thread,
                          const char *wait_func, long wake_tid, int *go)
{
    struct job j = {buf, n, flags, max_frames, wait_func, 0};
    struct pb_err err;
    buf[0] = '\0';
    if (go)
        *go = 1; /* set once the caller's GIL is released (called through CDLL) */
    if (pyrt_init(&err) < 0)
        return err.code;
    if (new_thread) {
        pthread_t th;
        if (pthread_create(&th, NULL, thread_main, &j) != 0)
            return -1;
        pthread_join(th, NULL);
    } else {
        run(&j);
    }
    for (int i = 0; wake_tid && wait_func && i < 500; i++) {
        struct probe_snapshot s;
        struct timespec ts = {0, 20 * 1000 * 1000};
        long tid = -1;
        if (pyrt_snapshot(&s, 0, 8, &err) < 0)
            break;
        for (int k = 0; k < s.nthreads; k++)
            if (s.threads[k].holds_gil && s.threads[k].nframes > 0 &&
                strcmp(s.threads[k].frames[0].func, wait_func) == 0)
                tid = s.threads[k].native_id;
        pyrt_snapshot_free(&s);
        if (tid <= 0)
            break;
        syscall(SYS_tgkill, getpid(), (pid_t)tid, SIGUSR1);
        nanosleep(&ts, NULL);
    }
    return j.rc;
}

/* ---- probe/sig/pyrt_sig.h (async-signal-safe reader): see test_sig.py ---- */
#include "sig/pyrt_sig.h"

static struct pyrt_sig_frame sig_frames[64];
static volatile int sig_nframes = -1;

static void sig_handler(int sig)
{
    (void)sig;
    sig_nframes = sig_pyrt_frames_self(sig_frames, 64);
}

/* The calling thread's frames read inside a SIGUSR2 handler it sends itself, described into
 * buf as "F func file line entry" lines. Returns the count, or -1. */
EXPORT int pyrt_sig_test_self(char *buf, size_t n);
EXPORT int pyrt_sig_test_self(char *buf, size_t n)
{
    struct sigaction sa, old;
    size_t len = 0;
    buf[0] = '\0';
    if (sig_pyrt_prepare() < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sig_handler;
    sigemptyset(&sa.sa_mask);
    sig_nframes = -1;
    sigaction(SIGUSR2, &sa, &old);
    syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGUSR2);
    sigaction(SIGUSR2, &old, NULL);
    for (int i = 0; i < sig_nframes; i++) {
        char func[256], file[512];
        int line;
        sig_pyrt_describe(&sig_frames[i], func, sizeof func, file, sizeof file, &line);
        len = add(buf, n, len, "F\t%s\t%s\t%d\t%d\n", func, file, line, sig_frames[i].entry);
    }
    return sig_nframes;
}

/* Calls cb (a ctypes callback): a second eval-loop call on the C stack. */
EXPORT void pyrt_sig_test_call(void (*cb)(void));
EXPORT void pyrt_sig_test_call(void (*cb)(void))
{
    cb();
}

/* Every thread state: "T native_id nframes innermost-func" lines. Returns the count. */
EXPORT int pyrt_sig_test_threads(char *buf, size_t n);
EXPORT int pyrt_sig_test_threads(char *buf, size_t n)
{
    uintptr_t ts[64];
    long ids[64];
    size_t len = 0;
    int cnt;
    buf[0] = '\0';
    if (sig_pyrt_prepare() < 0)
        return -1;
    cnt = sig_pyrt_threads(ts, ids, NULL, 64);
    for (int i = 0; i < cnt; i++) {
        struct pyrt_sig_frame fr[32];
        char func[256] = "", file[512];
        int line, k = sig_pyrt_frames_tstate(ts[i], fr, 32);
        if (k > 0)
            sig_pyrt_describe(&fr[0], func, sizeof func, file, sizeof file, &line);
        len = add(buf, n, len, "T\t%ld\t%d\t%s\n", ids[i], k, func);
    }
    return cnt;
}
