/* SPDX-License-Identifier: MIT */
/* One-shot native stacks of other threads (stack_sig.h). The requests live in one anonymous
 * mapping made at the first use and kept for the life of the process: a handler that runs late
 * (a thread that unblocked SIGPROF after the asker gave up) must still find valid memory.
 * A request moves IDLE -> PENDING (asker) -> BUSY -> DONE (handler, on the asked thread only)
 * -> IDLE (asker, once copied); an asker that gives up moves PENDING -> IDLE, so a late handler
 * finds nothing to do. The handler wakes the asker with FUTEX_WAKE on the state word.
 * A thread is asked by a one-shot perf event on its task clock that counts user time only
 * (exclude_kernel): the kernel raises its overflow only from a timer interrupt that found the
 * thread running its own code, and the signal is taken on that interrupt's return, so it can
 * never land in a system call (a nanosleep or epoll_wait it is entering returns EINTR to a
 * handler whatever SA_RESTART says). Where the kernel refuses the event (perf_event_paranoid
 * 3, a container's seccomp profile), by a one-shot timer on its CPU clock, whose expiry the
 * kernel handles as the thread returns to its own code (task work); where that too is refused,
 * by a queued signal, sent right after the caller's last look at the thread. */
#include "stack_sig.h"
#include "prof_sig.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { REQ_IDLE, REQ_PENDING, REQ_BUSY, REQ_DONE };

struct stack_req {
    _Atomic int state;
    int tid;
    _Atomic int ev1;   /* the request's perf event, its descriptor + 1; 0: none open */
    _Atomic int last1; /* the last event's descriptor + 1, kept after it is closed: a late
                        * signal of it is recognised as ours (stale) */
    timer_t timer;     /* the asker's: the request's CPU-time timer, when timer_on */
    int timer_on;
    struct stack_sig_result res;
    struct unwind_cache cache; /* the unwinder's rules and stack window, this request's own */
};

static struct stack_req *_Atomic reqs; /* STACK_SIG_BATCH of them */
/* Held (never in a handler) from opening a request's event to recording it in the request, and
 * from taking it out to closing it; and by a fork's prepare handler, so that a fork child
 * finds every event of ours it holds named in a request (sig_stack_fork_child closes them). */
static _Atomic int ev_mu; /* 1: held (a spin lock: this object calls no pthread_mutex_*) */

static void ev_lock(void)
{
    while (atomic_exchange(&ev_mu, 1)) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static void ev_unlock(void)
{
    atomic_store(&ev_mu, 0);
}
static int how[STACK_SIG_BATCH]; /* the asker's: SIG_STACK_EVENT/SIGNAL, or 0 */

/* The period of the one-shot event: the kernel's shortest for a software clock (10 us of the
 * thread's CPU time; a running thread answers within it). */
#define EV_PERIOD_NS 10000
#define WAIT_LOOKS 4 /* looks, 1 ms apart, that must see a thread asked wait before it is read */

static long futex(_Atomic int *addr, int op, int val, const struct timespec *ts)
{
    return syscall(SYS_futex, (int *)addr, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/* The stacks of the calling thread, interrupted at uc, into r; then r is DONE and its asker
 * woken. r is BUSY (the caller moved it there). */
static void take(struct stack_req *r, ucontext_t *uc)
{
    r->res.nnative = sig_unwind_native(uc, r->res.native, STACK_SIG_NATIVE, NULL, NULL, &r->cache);
    r->res.npy = sig_pyrt_frames_thread(r->tid, sig_pyrt_tstate_self(), r->res.py, STACK_SIG_PY);
    atomic_store(&r->state, REQ_DONE);
    futex(&r->state, FUTEX_WAKE, 1, NULL);
}

static int is_event_signal(const siginfo_t *si)
{
    return si && si->si_code >= POLL_IN && si->si_code <= POLL_HUP && si->si_fd >= 0;
}

int sig_stack_take(const siginfo_t *si, ucontext_t *uc, int me)
{
    struct stack_req *base = atomic_load(&reqs);
    uintptr_t p, b = (uintptr_t)base;
    int expect = REQ_PENDING;
    if (!base || !si)
        return 0;
    if (is_event_signal(si)) {
        /* An event open now has a descriptor no other event shares: the request whose it is */
        for (int i = 0; i < STACK_SIG_BATCH; i++) {
            struct stack_req *r = &base[i];
            if (atomic_load(&r->ev1) != si->si_fd + 1 || r->tid != me)
                continue;
            if (atomic_compare_exchange_strong(&r->state, &expect, REQ_BUSY))
                take(r, uc);
            return 1; /* ours either way: answered now, or the asker gave up */
        }
        return 0;
    }
    if (si->si_code != SI_QUEUE && si->si_code != SI_TIMER)
        return 0;
    p = (uintptr_t)si->si_value.sival_ptr;
    if (p < b || p >= b + STACK_SIG_BATCH * sizeof *base || (p - b) % sizeof *base != 0)
        return 0;
    struct stack_req *r = (struct stack_req *)p;
    if (r->tid != me || !atomic_compare_exchange_strong(&r->state, &expect, REQ_BUSY))
        return 1; /* stale: the asker gave up, or the slot asks another thread now */
    take(r, uc);
    return 1;
}

int sig_stack_stale(const siginfo_t *si)
{
    struct stack_req *base = atomic_load(&reqs);
    if (!base || !is_event_signal(si))
        return 0;
    for (int i = 0; i < STACK_SIG_BATCH; i++)
        if (atomic_load(&base[i].last1) == si->si_fd + 1)
            return 1;
    return 0;
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

/* The one-shot event of thread tid, disabled (sig_prof_event_open), counting its user time
 * only: the point, an overflow only where the thread runs its own code. */
static int ev_open(int tid)
{
    return sig_prof_event_open(tid, EV_PERIOD_NS, 1);
}

/* Closes request r's event, if any (the request is no longer PENDING: a late signal of it is
 * stale). */
static void ev_close(struct stack_req *r)
{
    ev_lock();
    int fd1 = atomic_exchange(&r->ev1, 0);
    if (fd1 > 0) {
        ioctl(fd1 - 1, PERF_EVENT_IOC_DISABLE, 0);
        close(fd1 - 1);
    }
    ev_unlock();
}

/* How many times the calling thread left its CPU so far (voluntarily or not); -1 unknown. */
static long own_switches(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return -1;
    return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* Request r's one-shot timer on thread tid's CPU clock, 1 ns: it expires at the next tick that
 * finds tid running (POSIX CPU timers are checked at the tick) and signals tid with si_value
 * r. Where the kernel runs CPU timers from task work (x86-64 since Linux 5.11), the signal is
 * raised as the thread returns to its own code, never into a wait it is entering. 0, or -1. */
static int timer_arm(struct stack_req *r, int tid)
{
    struct sigevent sev;
    struct itimerspec its;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev.sigev_value.sival_ptr = r;
    sev._sigev_un._tid = tid;
    if (timer_create(sig_thread_cpu_clock(tid), &sev, &r->timer) != 0)
        return -1;
    memset(&its, 0, sizeof its);
    its.it_value.tv_nsec = 1;
    if (timer_settime(r->timer, 0, &its, NULL) != 0) {
        timer_delete(r->timer);
        return -1;
    }
    r->timer_on = 1;
    return 0;
}

/* Closes request r's event and deletes its timer, if any (the request is no longer PENDING: a
 * late signal of either is stale). */
static void disarm(struct stack_req *r)
{
    ev_close(r);
    if (r->timer_on) {
        timer_delete(r->timer);
        r->timer_on = 0;
    }
}

int sig_stack_ask(int i, int tid, int (*blocked)(int tid), int no_signal)
{
    struct stack_req *rq = reqs_get(), *r;
    if (!rq)
        return -1;
    if (i < 0 || i >= STACK_SIG_BATCH)
        return -1;
    r = &rq[i];
    how[i] = 0;
    /* A handler still busy from an earlier ask ends in microseconds: wait for it. */
    if (wait_req(r, mono_ns() + 50000000LL) == REQ_BUSY)
        return -1;
    disarm(r);
    r->tid = tid;
    r->res.nnative = r->res.npy = 0;
    ev_lock(); /* a fork sees the event recorded in the request, or none */
    int fd = ev_open(tid);
    if (fd >= 0) {
        atomic_store(&r->last1, fd + 1);
        atomic_store(&r->ev1, fd + 1);
    }
    ev_unlock();
    if (fd >= 0) {
        atomic_store(&r->state, REQ_PENDING);
        /* one overflow, then the kernel disables the event */
        if (ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) == 0)
            return how[i] = SIG_STACK_EVENT;
        int expect = REQ_PENDING;
        atomic_compare_exchange_strong(&r->state, &expect, REQ_IDLE);
        ev_close(r);
    }
    atomic_store(&r->state, REQ_PENDING);
    if (timer_arm(r, tid) == 0)
        return how[i] = SIG_STACK_TIMER;
    atomic_store(&r->state, REQ_IDLE);
    if (no_signal)
        return -1;
    /* The signal goes right after a look that says the thread runs: the window left is from
     * that look to the signal's delivery, in which a thread that enters an interruptible wait
     * is woken from it. A look that this thread was taken off its CPU around (a preemption on
     * a busy machine: milliseconds) is taken again, three times at most. */
    for (int tries = 0; blocked && tries < 3; tries++) {
        long sw = own_switches();
        if (blocked(tid) > 0)
            return SIG_STACK_BLOCKED; /* entered a wait since the caller looked: no signal */
        if (own_switches() == sw)
            break;
    }
    atomic_store(&r->state, REQ_PENDING);
    if (sig_stack_queue(tid, r) != 0) {
        atomic_store(&r->state, REQ_IDLE); /* the thread is gone */
        return -1;
    }
    return how[i] = SIG_STACK_SIGNAL;
}

void sig_stack_fork_prepare(void)
{
    ev_lock();
}

void sig_stack_fork_parent(void)
{
    ev_unlock();
}

void sig_stack_fork_child(void)
{
    ev_unlock(); /* taken by the prepare handler, in the parent */
    struct stack_req *rq = atomic_load(&reqs);
    for (int i = 0; rq && i < STACK_SIG_BATCH; i++) {
        int fd1 = atomic_exchange(&rq[i].ev1, 0);
        if (fd1 > 0)
            close(fd1 - 1); /* the child's copy only: never disabled, the parent's event */
        rq[i].timer_on = 0; /* POSIX timers are not inherited */
        atomic_store(&rq[i].state, REQ_IDLE);
        how[i] = 0;
    }
}

int sig_stack_wait(int n, struct stack_sig_result *out, int timeout_ms, int (*blocked)(int tid))
{
    struct stack_req *rq = atomic_load(&reqs);
    long long now = mono_ns(), deadline = now + (long long)timeout_ms * 1000000LL;
    long long look = now + 1000000LL; /* next look at threads asked by event or timer */
    int answered = 0, waits[STACK_SIG_BATCH] = {0}; /* looks in a row that saw it wait */
    if (n > STACK_SIG_BATCH)
        n = STACK_SIG_BATCH;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].tid = rq && how[i] ? rq[i].tid : 0;
    }
    if (!rq)
        return 0;
    for (;;) {
        struct stack_req *wait_on = NULL;
        for (int i = 0; i < n && !wait_on; i++)
            if (how[i] && atomic_load(&rq[i].state) == REQ_PENDING)
                wait_on = &rq[i];
        now = mono_ns();
        if (!wait_on || now >= deadline)
            break;
        if (now >= look && blocked) {
            /* A thread asked by event or timer never answers while it waits in a system call:
             * one seen waiting at WAIT_LOOKS looks in a row is taken back, to be read where it
             * waits (the caller), never signalled. One that waits only a moment between runs
             * answers in one of them. */
            for (int i = 0; i < n; i++) {
                int expect = REQ_PENDING;
                if ((how[i] != SIG_STACK_EVENT && how[i] != SIG_STACK_TIMER) ||
                    atomic_load(&rq[i].state) != REQ_PENDING)
                    continue;
                waits[i] = blocked(rq[i].tid) > 0 ? waits[i] + 1 : 0;
                if (waits[i] < WAIT_LOOKS ||
                    !atomic_compare_exchange_strong(&rq[i].state, &expect, REQ_IDLE))
                    continue;
                disarm(&rq[i]);
                out[i].blocked = 1;
                how[i] = 0;
            }
            look = mono_ns() + 1000000LL;
            continue;
        }
        long long until = blocked && look < deadline ? look : deadline;
        long long left = until - now;
        struct timespec ts = {left / 1000000000LL, left % 1000000000LL};
        futex(&wait_on->state, FUTEX_WAIT, REQ_PENDING, &ts);
    }
    for (int i = 0; i < n; i++) {
        struct stack_req *r = &rq[i];
        if (!how[i])
            continue;
        int st = atomic_load(&r->state);
        int expect = REQ_PENDING;
        if (st == REQ_PENDING && atomic_compare_exchange_strong(&r->state, &expect, REQ_IDLE)) {
            disarm(r);
            continue; /* no answer in time: a late handler will find it idle */
        }
        st = wait_req(r, mono_ns() + 50000000LL);
        disarm(r);
        if (st != REQ_DONE)
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
