/* SPDX-License-Identifier: MIT */
/* One-shot native stacks of other threads (stack_sig.h). The requests live in one anonymous
 * mapping made at the first use and kept for the life of the process: a handler that runs late
 * (a thread that unblocked SIGPROF after the asker gave up) must still find valid memory.
 * A request moves IDLE -> PENDING (asker) -> BUSY -> DONE (handler, on the asked thread only)
 * -> IDLE (asker, once copied); an asker that gives up moves PENDING -> IDLE, so a late handler
 * finds nothing to do. The handler wakes the asker with FUTEX_WAKE on the state word. */
#include "stack_sig.h"
#include "unwind.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { REQ_IDLE, REQ_PENDING, REQ_BUSY, REQ_DONE };

struct stack_req {
    _Atomic int state;
    int tid;
    struct stack_sig_result res;
    struct unwind_cache cache; /* the unwinder's rules and stack window, this request's own */
};

static struct stack_req *_Atomic reqs; /* STACK_SIG_BATCH of them */

static long futex(_Atomic int *addr, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, (int *)addr, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

int sig_stack_take(const siginfo_t *si, ucontext_t *uc)
{
    struct stack_req *base = atomic_load(&reqs);
    uintptr_t p, b = (uintptr_t)base;
    int expect = REQ_PENDING;
    if (!base || !si || si->si_code != SI_QUEUE)
        return 0;
    p = (uintptr_t)si->si_value.sival_ptr;
    if (p < b || p >= b + STACK_SIG_BATCH * sizeof *base || (p - b) % sizeof *base != 0)
        return 0;
    struct stack_req *r = (struct stack_req *)p;
    if (r->tid != (int)syscall(SYS_gettid) ||
        !atomic_compare_exchange_strong(&r->state, &expect, REQ_BUSY))
        return 1; /* stale: the asker gave up, or the slot asks another thread now */
    r->res.nnative = sig_unwind_native(uc, r->res.native, STACK_SIG_NATIVE, NULL, NULL, &r->cache);
    r->res.npy = sig_pyrt_frames_thread(r->tid, sig_pyrt_tstate_self(), r->res.py, STACK_SIG_PY);
    atomic_store(&r->state, REQ_DONE);
    futex(&r->state, FUTEX_WAKE, 1, NULL);
    return 1;
}

int sig_stack_queue(int tid, void *value)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGPROF;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = value;
    return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGPROF, &si);
}

static struct stack_req *reqs_get(void)
{
    struct stack_req *r = atomic_load(&reqs);
    if (r)
        return r;
    r = mmap(NULL, STACK_SIG_BATCH * sizeof *r, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    atomic_store(&reqs, r);
    return r;
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Waits until r is no longer PENDING or BUSY, or the deadline. Returns its state. */
static int wait_req(struct stack_req *r, long long deadline)
{
    int st;
    while ((st = atomic_load(&r->state)) == REQ_PENDING || st == REQ_BUSY) {
        long long left = deadline - mono_ns();
        if (left <= 0)
            break;
        struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
        futex(&r->state, FUTEX_WAIT, st, &ts);
    }
    return st;
}

int sig_stack_collect(const int *tids, int n, struct stack_sig_result *out, int timeout_ms)
{
    struct stack_req *rq = reqs_get();
    long long deadline = mono_ns() + (long long)timeout_ms * 1000000LL;
    int answered = 0;
    if (!rq)
        return -ENOMEM;
    if (n > STACK_SIG_BATCH)
        n = STACK_SIG_BATCH;
    for (int i = 0; i < n; i++) {
        struct stack_req *r = &rq[i];
        memset(&out[i], 0, sizeof out[i]);
        out[i].tid = tids[i];
        /* A handler still busy from an earlier ask ends in microseconds: wait for it. */
        if (wait_req(r, mono_ns() + 50000000LL) == REQ_BUSY)
            continue;
        r->tid = tids[i];
        r->res.nnative = r->res.npy = 0;
        atomic_store(&r->state, REQ_PENDING);
        if (sig_stack_queue(tids[i], r) != 0)
            atomic_store(&r->state, REQ_IDLE); /* the thread is gone */
    }
    for (int i = 0; i < n; i++) {
        struct stack_req *r = &rq[i];
        if (r->tid != tids[i])
            continue;
        int st = wait_req(r, deadline);
        int expect = REQ_PENDING;
        if (st == REQ_PENDING && atomic_compare_exchange_strong(&r->state, &expect, REQ_IDLE))
            continue; /* no answer in time: a late handler will find it idle */
        if (wait_req(r, mono_ns() + 50000000LL) != REQ_DONE)
            continue;
        out[i].answered = 1;
        out[i].nnative = r->res.nnative;
        out[i].npy = r->res.npy;
        memcpy(out[i].native, r->res.native, (size_t)r->res.nnative * sizeof out[i].native[0]);
        memcpy(out[i].py, r->res.py, (size_t)r->res.npy * sizeof out[i].py[0]);
        atomic_store(&r->state, REQ_IDLE);
        answered++;
    }
    return answered;
}
