/* SPDX-License-Identifier: MIT */
/* The sampler's signal side (prof/prof.h): one slot per sampled thread, its ring of preallocated
 * records, the clock that interrupts it by its own CPU time (so no thread is ever stopped by
 * another), and the SIGPROF handler. Two clocks (sig_prof_clock_choose, once per start):
 *  - events: a perf event counting the thread's task clock (perf_event_open, one per thread),
 *    which the kernel runs on a high-resolution timer: each period of the thread's CPU time
 *    ends in an overflow that sends SIGPROF to that thread (F_SETSIG, F_SETOWN_EX), and the
 *    event runs on (enabled once, never touched by the handler). Periods are exact at any rate
 *    the sampler allows;
 *  - timers: a POSIX timer on the thread's CPU clock (timer_create with SIGEV_THREAD_ID), when
 *    perf events are refused (kernel.perf_event_paranoid, a seccomp filter) or asked for, and
 *    by default at rates up to half the tick rate (auto_timers), where they cost
 *    nothing between samples (an event's timer is reprogrammed at each context switch). The
 *    kernel checks CPU timers at its tick only (CONFIG_HZ, often 250): a thread is sampled at
 *    most once per tick it runs in, and above that rate expirations merge (counted as missed).
 * The handler is async-signal-safe: it recognises our signals by si_value pointing at a live
 * slot of the calling thread, or by si_fd naming a slot's event (anything else goes to the
 * previous SIGPROF handler), then
 * records the native stack (unwind.h: our own CFI unwinder over the module table the drain
 * thread publishes, with the slot's own rule cache; it never calls the dynamic loader, whose
 * lock an interrupted dlopen/dlclose may hold), the thread's Python frames (pyrt_sig.h) and the
 * time into the next ring record. No allocation, no lock, no library call that could take one,
 * no symbolisation; errno is saved; a full ring drops the record and counts it.
 * Producer/consumer: the handler (only ever on the slot's own thread) advances head, the drain
 * thread advances tail. */
#include "prof_sig.h"
#include "stack_sig.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define SLOT_MAGIC 0x70726f66736c6f74ULL
#define MAPS_BYTES (1 << 20) /* /proc/self/maps read to learn a stack (longer: cut) */

enum { SLOT_FREE, SLOT_LIVE, SLOT_RETIRED };
/* Wall mode's pokes: a one-shot overflow of the slot's user-time event, a one-shot timer on
 * the thread's CPU clock (both raise SIGPROF where the thread runs its own code, never in a
 * system call it is entering), else a queued signal. */
enum { POKE_SIGNAL, POKE_EVENT, POKE_TIMER };
#define POKE_PERIOD_NS 10000 /* a poked thread answers within 10 us of its own code's time */

/* One mapping per slot: the copy of the thread's Python frame memory its handler reads frames
 * from, the unwind cache (zeroed: no entry matches; its small fields first), then the ring.
 * The pages a thread's first sample writes (the window, the cache's head, the first record)
 * are touched when the slot is made, so that sample takes no page fault: a fault costs a few
 * microseconds, and a short profile of many threads is mostly first samples. */
#define WIN_BYTES ((sizeof(struct pyrt_window) + 63) & ~(size_t)63)
#define CACHE_BYTES ((sizeof(struct unwind_cache) + 63) & ~(size_t)63)
#define RING_BYTES (PROF_RING * sizeof(struct prof_raw))
#define SLOT_BYTES (WIN_BYTES + CACHE_BYTES + RING_BYTES)
#define SLOT_HOT_BYTES (WIN_BYTES + offsetof(struct unwind_cache, e))

struct prof_slot {
    _Atomic int state;
    int tid;
    uint64_t magic;
    timer_t timer;
    int has_timer;
    /* The thread's task-clock event (events clock; -1: none). Its number stays after the slot
     * is retired and the event closed (pfd_open 0), so that a late signal still names a slot
     * and is dropped. */
    int pfd, pfd_open;
    uint64_t ev_id;         /* the event's id (PERF_EVENT_IOC_ID): still ours before it is closed */
    int counting;           /* a timer or an event counts the thread's CPU time (missed samples) */
    int poke;               /* wall mode: how a poke reaches the thread (POKE_*) */
    _Atomic int poke_armed; /* wall mode, event or timer: poked, its handler not run yet */
    struct pyrt_window *win;    /* its Python frames' copy: the start of the slot's mapping */
    struct unwind_cache *cache; /* the thread's unwind rules, mapped after the window */
    struct prof_raw *ring;      /* PROF_RING records, mapped after the cache */
    _Atomic unsigned head, tail;
    _Atomic long long delivered;
    _Atomic long long overrun; /* expirations the kernel merged into a delivered one */
    _Atomic long long lost;
    _Atomic long long self_ns;
    long long cpu_at_arm_ns;       /* the thread's CPU time when its timer was armed */
    long long period_ns;           /* its timer's period (0: none) */
    _Atomic long long cpu_last_ns; /* the thread's CPU time at its last signal (handler) */
    long long missed_seen;
    /* Events counting user time only: a period that ends in the kernel's part of the thread's
     * time is skipped by the kernel, by design, so missed samples are reckoned against the
     * thread's user time. Its handler reads it (getrusage(RUSAGE_THREAD): the kernel's split
     * of the exact CPU time by where its ticks found the thread) at each sample: at the first
     * and the latest, with the samples delivered before each and the CPU time (user_first_ns
     * is published last; -1: none yet). A thread never signalled: its user time from
     * /proc/self/task/TID/stat (clock ticks) since the event was armed. */
    int user_only;
    _Atomic long long user_first_ns, user_last_ns, cpu_first_ns, deliv_first, deliv_last;
    long long utime_at_arm_ns;
    /* The thread's stack, learnt by the drain thread from a record's sp and /proc/self/maps:
     * [stack_lo, stack_hi) is the mapping that held sp while pthread_self() was stack_self.
     * stack_self is published last (0: not known). */
    uintptr_t stack_lo, stack_hi;
    _Atomic uintptr_t stack_self;
};

static struct prof_slot slots[PROF_MAX_SLOTS];
static _Atomic int slots_hi;   /* slots in use are below (loops stop there) */
static _Atomic int drain_word; /* 1: work for the drain thread (futex) */
static _Atomic int running;
static _Atomic int in_handler;
static struct sigaction old_action;
static int installed;
static int clock_kind = PROF_CLOCK_TIMERS; /* this run's (sig_prof_clock_choose) */
static int ev_exclude_kernel;              /* events count user time only (always) */
/* Events open now, and the most this run may hold: each is a descriptor of the host's process,
 * out of its open-file limit (and the numbers under 1024 that select() can watch), so at most
 * an eighth of the soft limit, 256 at most; more threads get CPU timers. */
static int ev_count, ev_cap;
/* The drain thread's (and the stopping thread's, after it): mappings of freed slots kept for
 * the next threads (no munmap, whose TLB shootdown interrupts every core, no new page faults;
 * at most the peak of threads sampled at once, unmapped at stop), and /proc/self/maps kept
 * open for PROCMAP_QUERY (-1: not open). */
static char *spare[PROF_MAX_SLOTS];
static int nspare;
static int maps_fd = -1, maps_query = 1;
/* Totals of slots already freed. */
static long long gone_missed, gone_lost, gone_self_ns;
/* The most missed samples reported this run: the total never goes down (a counter to its
 * readers, probing_perf_missed_total), though estimates from user time may. */
static _Atomic long long missed_hi;

static long long now_ns(clockid_t c)
{
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return 0;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
    if (old_action.sa_flags & SA_SIGINFO) {
        if (old_action.sa_sigaction)
            old_action.sa_sigaction(sig, si, uc);
    } else if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN &&
               old_action.sa_handler) {
        old_action.sa_handler(sig);
    }
    /* SIG_DFL (terminate) is not re-raised: a stray SIGPROF must not kill the host while the
     * sampler owns the signal; SIG_IGN ignores. */
}

static struct prof_slot *slot_of(const siginfo_t *si)
{
    uintptr_t p, base = (uintptr_t)slots;
    if (!si || (si->si_code != SI_TIMER && si->si_code != SI_QUEUE))
        return NULL;
    p = (uintptr_t)si->si_value.sival_ptr;
    if (p < base || p >= base + sizeof slots || (p - base) % sizeof slots[0] != 0)
        return NULL;
    return (struct prof_slot *)p;
}

/* The slot whose event sent this signal (F_SETSIG: si_code is a POLL_* reason, si_fd the
 * event), live or retired; NULL for anything else. A retired slot keeps its closed event's
 * number, which a new thread's event may have been given meanwhile: the calling thread's own
 * slot first (the signal goes to the event's thread), a retired one only for a late signal. */
static struct prof_slot *slot_of_event(const siginfo_t *si, int me)
{
    struct prof_slot *any = NULL;
    if (!si || si->si_code < POLL_IN || si->si_code > POLL_HUP || si->si_fd < 0)
        return NULL;
    int hi = atomic_load(&slots_hi);
    for (int i = 0; i < hi; i++) {
        if (atomic_load(&slots[i].state) == SLOT_FREE || slots[i].pfd != si->si_fd)
            continue;
        if (slots[i].tid == me)
            return &slots[i];
        if (!any)
            any = &slots[i];
    }
    return any;
}

static uintptr_t uc_sp(const ucontext_t *uc)
{
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    return 0;
#endif
}

static void record(struct prof_slot *s, siginfo_t *si, ucontext_t *uc)
{
    unsigned h = atomic_load_explicit(&s->head, memory_order_relaxed);
    unsigned t = atomic_load_explicit(&s->tail, memory_order_acquire);
    struct prof_raw *r;
    struct timespec ts;
    atomic_fetch_add_explicit(&s->delivered, 1, memory_order_relaxed);
    if (si->si_code == SI_TIMER && si->si_overrun > 0)
        atomic_fetch_add_explicit(&s->overrun, si->si_overrun, memory_order_relaxed);
    if (h - t >= PROF_RING || !s->ring) {
        atomic_fetch_add_explicit(&s->lost, 1, memory_order_relaxed);
        return;
    }
    r = &s->ring[h % PROF_RING];
    clock_gettime(CLOCK_REALTIME, &ts);
    r->ts = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    r->tid = s->tid;
    r->on_cpu = 1;
    r->sp = uc_sp(uc);
    r->self = (uintptr_t)pthread_self();
    /* The thread's own stack from sp up, read directly when the drain thread has learnt which
     * mapping holds it (the same thread: pthread_self; sp still in it: not on another stack,
     * e.g. a sigaltstack or a coroutine's). A running thread's stack stays mapped. */
    s->cache->stack_lo = s->cache->stack_hi = 0;
    if (r->self && atomic_load_explicit(&s->stack_self, memory_order_acquire) == r->self &&
        r->sp >= s->stack_lo && r->sp < s->stack_hi) {
        s->cache->stack_lo = r->sp;
        s->cache->stack_hi = s->stack_hi;
    }
    r->nnative = sig_unwind_native(uc, r->native, PROF_MAX_NATIVE, NULL, NULL, s->cache);
    uintptr_t self = sig_pyrt_tstate_self();
    r->gil = sig_pyrt_holds_gil(self);
    r->npy = sig_pyrt_frames_own(self, s->win, s->cache->stack_lo, s->cache->stack_hi, r->py,
                                 PROF_MAX_PY);
    /* In a subinterpreter: the frames of the call that runs it, in the thread's other states */
    r->npy = sig_pyrt_frames_outer(self, s->tid, r->py, r->npy, PROF_MAX_PY);
    atomic_store_explicit(&s->head, h + 1, memory_order_release);
    if (h + 1 - t == PROF_RING / 2)
        sig_prof_wake(); /* half full: the drain thread comes now */
}

void sig_prof_wake(void)
{
    /* async-signal-safe: an atomic store and a raw futex call */
    if (atomic_exchange(&drain_word, 1) == 0)
        syscall(SYS_futex, (int *)&drain_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void sig_prof_wait(long long ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    if (atomic_exchange(&drain_word, 0) == 0) {
        syscall(SYS_futex, (int *)&drain_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
        atomic_store(&drain_word, 0);
    }
}

/* The handler's reading of its own thread's user time (struct prof_slot, user_only). */
static void user_reading(struct prof_slot *s, long long cpu)
{
    struct rusage ru;
    if (syscall(SYS_getrusage, RUSAGE_THREAD, &ru) != 0)
        return;
    long long u = (long long)ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL;
    long long n = atomic_load_explicit(&s->delivered, memory_order_relaxed);
    if (atomic_load_explicit(&s->user_first_ns, memory_order_relaxed) < 0) {
        atomic_store_explicit(&s->cpu_first_ns, cpu, memory_order_relaxed);
        atomic_store_explicit(&s->deliv_first, n, memory_order_relaxed);
        atomic_store_explicit(&s->user_last_ns, u, memory_order_relaxed);
        atomic_store_explicit(&s->deliv_last, n, memory_order_relaxed);
        atomic_store_explicit(&s->user_first_ns, u, memory_order_release);
        return;
    }
    atomic_store_explicit(&s->user_last_ns, u, memory_order_relaxed);
    atomic_store_explicit(&s->deliv_last, n, memory_order_relaxed);
}

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct prof_slot *s = slot_of(si);
    int me = (int)syscall(SYS_gettid); /* once: a system call of its own */
    atomic_fetch_add(&in_handler, 1);
    /* A one-shot stack request (debug --dump --native; stack_sig.h) before the sampler's
     * events: a request's open event shares its descriptor with no live slot, while a retired
     * slot keeps the number of its closed one. */
    if (!s && sig_stack_take(si, uc, me)) {
    } else if ((s || (s = slot_of_event(si, me)) != NULL) && s->magic == SLOT_MAGIC) {
        /* Ours (possibly late, after a stop or for a retired slot: dropped). */
        if (atomic_load(&running) && atomic_load(&s->state) == SLOT_LIVE && s->tid == me) {
            /* The thread's CPU time at entry (missed-sample counting) and at exit: the
             * handler's own cost. Not monotonic time: with more runnable threads than cores a
             * handler is often preempted, and the wait counted as its cost (64 threads on 2
             * cores: three to five times its CPU time). */
            long long t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            atomic_store_explicit(&s->poke_armed, 0, memory_order_relaxed);
            atomic_store_explicit(&s->cpu_last_ns, t0, memory_order_relaxed);
            if (s->user_only)
                user_reading(s, t0);
            record(s, si, uc);
            atomic_fetch_add_explicit(&s->self_ns, now_ns(CLOCK_THREAD_CPUTIME_ID) - t0,
                                      memory_order_relaxed);
        }
    } else if (!sig_stack_stale(si)) { /* a late signal of a closed request's event: dropped */
        chain(sig, si, uc);
    }
    atomic_fetch_sub(&in_handler, 1);
    errno = saved;
}

int sig_prof_install(struct pb_err *err)
{
    struct sigaction sa;
    if (installed)
        return 0;
    /* The module table before the first signal. */
    if (sig_unwind_table_refresh() < 0)
        return pb_err_set(err, -ENOMEM, "the sampler's module table: out of memory");
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, NULL, &old_action) != 0 || sigaction(SIGPROF, &sa, NULL) != 0)
        return pb_err_set(err, -errno, "sigaction(SIGPROF): %s", strerror(errno));
    installed = 1;
    return 0;
}

void sig_prof_uninstall(void)
{
    struct sigaction cur, ign;
    if (!installed)
        return;
    /* Wait out handlers in flight, then flush SIGPROFs still pending in any thread (a thread
     * that blocks the signal keeps one until it unblocks it): setting SIG_IGN discards them,
     * so a late one can never reach a SIG_DFL disposition. Then the old disposition. */
    for (int i = 0; i < 1000 && atomic_load(&in_handler) > 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (sigaction(SIGPROF, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_sigprof) {
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPROF, &ign, NULL);
        sigaction(SIGPROF, &old_action, NULL);
    } /* else the host replaced our handler meanwhile: its choice stays */
    installed = 0;
    if (atomic_load(&in_handler) == 0)
        sig_unwind_table_reclaim(NULL); /* no handler of ours can run any more */
}

int sig_prof_installed(void)
{
    return installed;
}

int sig_prof_quiet(void)
{
    return atomic_load(&in_handler) == 0;
}

void sig_prof_set_running(int on)
{
    atomic_store(&running, on);
}

void sig_prof_fork_child(void)
{
    /* The child has no timers (POSIX timers are not inherited) and no drain thread. */
    atomic_store(&running, 0);
    if (installed) {
        sigaction(SIGPROF, &old_action, NULL);
        installed = 0;
    }
    /* The parent's slots name the parent's threads and timers: forget them (their rings stay
     * mapped; munmap is safe here but a parent's record may be half read by nobody). Their
     * events are the parent's too: the child's copies of the descriptors are closed (never
     * disabled: that would stop the parent's), so no child keeps an event of the parent's
     * alive after the parent's stop. */
    for (int i = 0; i < PROF_MAX_SLOTS; i++) {
        uint64_t id = 0;
        if (atomic_load(&slots[i].state) != SLOT_FREE && slots[i].pfd_open &&
            ioctl(slots[i].pfd, PERF_EVENT_IOC_ID, &id) == 0 && id == slots[i].ev_id)
            close(slots[i].pfd); /* still ours (slot_disarm) */
        ev_count = 0;
        slots[i].pfd = -1;
        slots[i].pfd_open = 0;
        slots[i].counting = 0;
        slots[i].has_timer = 0;
        slots[i].ring = NULL;
        slots[i].cache = NULL;
        slots[i].win = NULL;
        slots[i].magic = 0;
        atomic_store(&slots[i].state, SLOT_FREE);
    }
    atomic_store(&in_handler, 0);
    /* The spare mappings are the child's own copies; the maps file open is the parent's. */
    sig_prof_slots_release();
}

struct prof_slot *sig_prof_slot_new(int tid)
{
    for (int i = 0; i < PROF_MAX_SLOTS; i++) {
        struct prof_slot *s = &slots[i];
        if (atomic_load(&s->state) != SLOT_FREE)
            continue;
        char *m = nspare > 0 ? spare[--nspare]
                             : mmap(NULL, SLOT_BYTES, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        s->win = (struct pyrt_window *)m;
        s->cache = (struct unwind_cache *)(m + WIN_BYTES);
        s->ring = (struct prof_raw *)(m + WIN_BYTES + CACHE_BYTES);
        /* The first sample's pages made resident now (zero, as mapped; no handler sees the
         * slot before it is live). A reused mapping keeps the rest: its rules and FDEs are
         * keyed by pc and table generation, true for any thread; ring records are written
         * before they are read. */
        memset(m, 0, SLOT_HOT_BYTES);
        memset(s->ring, 0, sizeof *s->ring);
        s->tid = tid;
        s->magic = SLOT_MAGIC;
        s->has_timer = 0;
        s->pfd = -1;
        s->pfd_open = 0;
        s->counting = 0;
        s->poke = POKE_SIGNAL;
        atomic_store(&s->poke_armed, 0);
        atomic_store(&s->stack_self, 0);
        s->stack_lo = s->stack_hi = 0;
        atomic_store(&s->head, 0);
        atomic_store(&s->tail, 0);
        atomic_store(&s->delivered, 0);
        atomic_store(&s->overrun, 0);
        atomic_store(&s->lost, 0);
        atomic_store(&s->self_ns, 0);
        s->cpu_at_arm_ns = now_ns(sig_thread_cpu_clock(tid));
        s->period_ns = 0;
        atomic_store(&s->cpu_last_ns, 0);
        s->missed_seen = 0;
        s->user_only = 0;
        atomic_store(&s->user_first_ns, -1);
        if (i >= atomic_load(&slots_hi))
            atomic_store(&slots_hi, i + 1);
        atomic_store(&s->state, SLOT_LIVE);
        return s;
    }
    return NULL;
}

/* Thread tid's user time from /proc/self/task/TID/stat (field 14, clock ticks), in ns; -1:
 * not known (the thread is gone). Not in signal context, but this object may not call stdio. */
static long long thread_utime_ns(int tid)
{
    char path[48] = "/proc/self/task/", num[16], buf[512];
    int n = 0, len = (int)strlen(path);
    do
        num[n++] = (char)('0' + tid % 10);
    while ((tid /= 10) > 0);
    while (n > 0)
        path[len++] = num[--n];
    memcpy(path + len, "/stat", 6);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return -1;
    char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    if (!p)
        return -1;
    /* After ")": state is field 3, utime field 14. */
    for (int field = 2; field < 14; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    long long ticks = strtoll(p + 1, NULL, 10), hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? ticks * (1000000000LL / hz) : -1;
}

/* Slot s's missed samples on a clock counting user time only (struct prof_slot, user_only),
 * signed: the kernel's split of CPU time is itself sampled at its tick, so one thread's
 * figure may be a few samples under or over, and only the sum over threads is clamped. From
 * its first sample to its latest, the periods of user time against the samples delivered;
 * after its latest, the CPU time since at the user share seen, less one period (a sample may
 * be on its way); a thread never signalled: its user time since the event was armed. */
static void slot_missed_user(struct prof_slot *s, long long cpu, long long last)
{
    long long u0 = atomic_load_explicit(&s->user_first_ns, memory_order_acquire);
    if (u0 < 0) {
        long long u = thread_utime_ns(s->tid);
        if (u >= 0 && s->utime_at_arm_ns >= 0) {
            long long d = (u - s->utime_at_arm_ns) / s->period_ns - 1;
            s->missed_seen = d > 0 ? d : 0;
        }
        return;
    }
    long long u1 = atomic_load_explicit(&s->user_last_ns, memory_order_relaxed);
    long long n0 = atomic_load_explicit(&s->deliv_first, memory_order_relaxed);
    long long n1 = atomic_load_explicit(&s->deliv_last, memory_order_relaxed);
    long long c0 = atomic_load_explicit(&s->cpu_first_ns, memory_order_relaxed);
    long long d = (u1 - u0) / s->period_ns - (n1 - n0);
    double share = last > c0 ? (double)(u1 - u0) / (double)(last - c0) : 1.0;
    long long tail =
        (long long)((double)(cpu - last) * (share < 1.0 ? share : 1.0)) / s->period_ns - 1;
    s->missed_seen = d + (tail > 0 ? tail : 0);
}

/* Missed expirations of slot s so far (into s->missed_seen): those the kernel merged into a
 * delivered signal (si_overrun), plus those the thread's CPU time called for that never came
 * (a thread that blocks SIGPROF); one may be on its way. */
static void slot_missed_update(struct prof_slot *s)
{
    long long cpu = s->counting && s->period_ns > 0 ? now_ns(sig_thread_cpu_clock(s->tid)) : 0;
    long long last = atomic_load_explicit(&s->cpu_last_ns, memory_order_relaxed);
    if (cpu < last) /* the thread is gone: its CPU time at its last signal */
        cpu = last;
    if (s->user_only && s->period_ns > 0) {
        slot_missed_user(s, cpu, last > 0 ? last : cpu);
        return;
    }
    if (cpu <= 0 || s->period_ns <= 0)
        return;
    long long expected = (cpu - s->cpu_at_arm_ns) / s->period_ns;
    long long ov = atomic_load(&s->overrun);
    long long d = expected - atomic_load(&s->delivered) - ov - 1;
    d = ov + (d > 0 ? d : 0);
    if (d > s->missed_seen)
        s->missed_seen = d;
}

static int ev_open(int tid, long long period, int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (unsigned long long)period;
    a.disabled = 1;
    a.exclude_kernel = (unsigned)exclude_kernel;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int sig_prof_event_open(int tid, long long period, int exclude_kernel)
{
    struct f_owner_ex own = {F_OWNER_TID, tid};
    int fd = ev_open(tid, period, exclude_kernel);
    if (fd < 0)
        return -1;
    if (fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &own) != 0 ||
        fcntl(fd, F_SETFL, O_ASYNC) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The most events this run may hold (ev_cap). */
static void ev_cap_set(void)
{
    struct rlimit rl;
    ev_cap = 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur / 8 < (rlim_t)ev_cap)
        ev_cap = (int)(rl.rlim_cur / 8);
}

/* The kernel's tick rate (CONFIG_HZ): the coarse clocks advance once a tick, and say so as
 * their resolution. 0: not known. */
static int tick_hz(void)
{
    struct timespec res;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0 || res.tv_sec != 0 || res.tv_nsec <= 0)
        return 0;
    return (int)(1000000000L / res.tv_nsec);
}

/* Whether the kernel runs CPU timers from task work (CONFIG_POSIX_CPU_TIMERS_TASK_WORK, on
 * x86-64 since Linux 5.9): a timer's signal then comes as the thread returns to its own code,
 * never inside a system call it is entering. Elsewhere the tick raises it wherever it finds
 * the thread, and only events counting user time never cut a wait short. */
static int timers_from_task_work(void)
{
#if defined(__x86_64__)
    struct utsname u;
    if (uname(&u) != 0)
        return 0;
    char *end;
    long major = strtol(u.release, &end, 10), minor = 0;
    if (*end == '.')
        minor = strtol(end + 1, NULL, 10);
    return major > 5 || (major == 5 && minor >= 9);
#else
    return 0;
#endif
}

/* Whether AUTO takes CPU timers at this rate: at most half the kernel's tick rate (each period
 * spans two ticks: no expiration merged), where the kernel runs CPU timers from task work. */
static int auto_timers(int rate)
{
    int hz = tick_hz();
    return rate > 0 && hz > 0 && rate * 2 <= hz && timers_from_task_work();
}

int sig_prof_clock_choose(int want, int rate)
{
    long long period = 1000000000LL / (rate > 0 ? rate : 1);
    int fd, e;
    clock_kind = PROF_CLOCK_TIMERS;
    ev_exclude_kernel = 0;
    ev_cap_set();
    if (want == PROF_CLOCK_TIMERS)
        return 0;
    /* Auto, at a rate the tick serves (every period at least two ticks long): CPU timers,
     * which cost nothing between samples; an event's timer is stopped and started at each
     * of its thread's context switches, which 64 threads passing the GIL around make 14,000
     * times a second (docs/perf.md, "Which clock"). */
    if (want == PROF_CLOCK_AUTO && auto_timers(rate))
        return 0;
    /* An event on the calling thread, never enabled: whether the kernel lets this process
     * count its own threads' time (perf_event_paranoid 2 or less, or CAP_PERFMON). User time
     * only, whatever the kernel would allow: an overflow in the kernel's part (a thread on its
     * way into nanosleep or epoll_wait) would raise SIGPROF there and the wait would return
     * EINTR, which C code that does not retry takes as the time having passed; an overflow in
     * the thread's own code is taken as the interrupt returns to it. The kernel's part is
     * sampled by the timers clock, whose signal comes as the thread returns to its code. */
    fd = ev_open(0, period, 1);
    ev_exclude_kernel = 1;
    if (fd < 0) {
        e = errno;
        ev_exclude_kernel = 0;
        return -(e ? e : EINVAL);
    }
    close(fd);
    clock_kind = PROF_CLOCK_EVENTS;
    return 0;
}

int sig_prof_clock(int *user_only)
{
    if (user_only)
        *user_only = ev_exclude_kernel;
    return clock_kind;
}

/* The thread's task-clock event, signalling the thread itself at each overflow: 0, or -errno
 * (nothing left open). */
static int slot_arm_event(struct prof_slot *s, long long period)
{
    if (ev_count >= ev_cap)
        return -EMFILE; /* the host's descriptors come first: a timer */
    int fd = sig_prof_event_open(s->tid, period, ev_exclude_kernel), e;
    if (fd < 0)
        return -errno;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &s->ev_id) != 0) {
        e = errno;
        close(fd);
        return -e;
    }
    s->pfd = fd;
    s->pfd_open = 1;
    ev_count++;
    s->period_ns = period;
    s->cpu_at_arm_ns = now_ns(sig_thread_cpu_clock(s->tid));
    s->user_only = ev_exclude_kernel;
    s->utime_at_arm_ns = ev_exclude_kernel ? thread_utime_ns(s->tid) : -1;
    s->counting = 1;
    /* Enabled for good: each overflow signals the thread and the event runs on, its timer
     * moved on by the kernel. (Allowing one overflow at a time, PERF_EVENT_IOC_REFRESH from
     * the handler, had the kernel disable the event and re-arm its timer at every sample: a
     * system call in each handler, 2-7 us of its time on a VM.) */
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        e = errno;
        s->counting = 0;
        s->user_only = 0;
        s->pfd = -1;
        s->pfd_open = 0;
        ev_count--;
        close(fd);
        return -e;
    }
    return 0;
}

int sig_prof_slot_arm(struct prof_slot *s, int rate, struct pb_err *err)
{
    struct sigevent sev;
    struct itimerspec its;
    long long period = 1000000000LL / rate;
    /* Events: a thread whose event cannot be made (the process's open-file limit) gets a
     * timer, as every thread does with the timers clock. */
    if (clock_kind == PROF_CLOCK_EVENTS && slot_arm_event(s, period) == 0)
        return 0;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev.sigev_value.sival_ptr = s;
    sev._sigev_un._tid = s->tid;
    if (timer_create(sig_thread_cpu_clock(s->tid), &sev, &s->timer) != 0)
        return pb_err_set(err, -errno, "timer_create for thread %d: %s", s->tid, strerror(errno));
    s->has_timer = 1;
    s->counting = 1;
    s->period_ns = period;
    s->cpu_at_arm_ns = now_ns(sig_thread_cpu_clock(s->tid));
    its.it_interval.tv_sec = period / 1000000000LL;
    its.it_interval.tv_nsec = period % 1000000000LL;
    its.it_value = its.it_interval;
    if (timer_settime(s->timer, 0, &its, NULL) != 0) {
        int e = errno;
        timer_delete(s->timer);
        s->has_timer = 0;
        s->counting = 0;
        return pb_err_set(err, -e, "timer_settime: %s", strerror(e));
    }
    return 0;
}

/* The slot's clock stopped, once it is retired: its timer deleted, its event disabled and
 * closed (no handler touches an event: nothing can enable it again before the stop restores a
 * SIGPROF disposition that may be the default, terminate). Closing destroys it (fork children
 * close their copies). */
static void slot_disarm(struct prof_slot *s)
{
    if (s->has_timer) {
        timer_delete(s->timer);
        s->has_timer = 0;
    }
    uint64_t id = 0;
    /* Still our event? A host that closed every descriptor it did not open (closefrom) may
     * have the number for a file of its own now: that is neither disabled nor closed. */
    if (s->pfd_open && ioctl(s->pfd, PERF_EVENT_IOC_ID, &id) == 0 && id == s->ev_id) {
        ioctl(s->pfd, PERF_EVENT_IOC_DISABLE, 0);
        close(s->pfd);
    }
    if (s->pfd_open)
        ev_count--;
    s->pfd_open = 0;
    s->counting = 0;
}

void sig_prof_slot_retire(struct prof_slot *s)
{
    slot_missed_update(s); /* before the thread goes */
    atomic_store(&s->state, SLOT_RETIRED);
    slot_disarm(s);
}

int sig_prof_slot_tid(const struct prof_slot *s)
{
    return s->tid;
}

struct prof_slot *sig_prof_slot_find(int tid)
{
    int hi = atomic_load(&slots_hi);
    for (int i = 0; i < hi; i++)
        if (atomic_load(&slots[i].state) == SLOT_LIVE && slots[i].tid == tid)
            return &slots[i];
    return NULL;
}

void sig_prof_pokes_prepare(void)
{
    ev_cap_set();
}

void sig_prof_slot_arm_poke(struct prof_slot *s)
{
    struct sigevent sev;
    s->poke = POKE_SIGNAL;
    atomic_store(&s->poke_armed, 0);
    int fd = ev_count < ev_cap ? sig_prof_event_open(s->tid, POKE_PERIOD_NS, 1) : -1;
    if (fd >= 0) {
        if (ioctl(fd, PERF_EVENT_IOC_ID, &s->ev_id) == 0) {
            s->pfd = fd;
            s->pfd_open = 1;
            ev_count++;
            s->poke = POKE_EVENT; /* disabled until a poke allows it one overflow */
            return;
        }
        close(fd);
    }
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev.sigev_value.sival_ptr = s;
    sev._sigev_un._tid = s->tid;
    if (timer_create(sig_thread_cpu_clock(s->tid), &sev, &s->timer) == 0) {
        s->has_timer = 1;
        s->poke = POKE_TIMER; /* disarmed until a poke sets it to expire at once */
    }
}

int sig_prof_slot_poke(struct prof_slot *s, int wall)
{
    struct itimerspec its;
    (void)wall;
    switch (s->poke) {
    case POKE_EVENT:
        /* One overflow at a time: a poke not yet answered (the thread ran none of its own
         * code since) is not added to (each refresh adds one more overflow). */
        if (atomic_exchange(&s->poke_armed, 1))
            return -1;
        if (ioctl(s->pfd, PERF_EVENT_IOC_REFRESH, 1) == 0)
            return 0;
        atomic_store(&s->poke_armed, 0);
        return -1;
    case POKE_TIMER:
        /* The timer fires at the kernel's next tick that finds the thread running: one not
         * fired since the last poke is cancelled (no late sample to count twice) and the
         * thread read by the drain thread this time. */
        memset(&its, 0, sizeof its);
        if (atomic_exchange(&s->poke_armed, 1)) {
            timer_settime(s->timer, 0, &its, NULL);
            atomic_store(&s->poke_armed, 0);
            return -1;
        }
        its.it_value.tv_nsec = 1;
        if (timer_settime(s->timer, 0, &its, NULL) == 0)
            return 0;
        atomic_store(&s->poke_armed, 0);
        return -1;
    default: return sig_stack_queue(s->tid, s);
    }
}

static void slot_free(struct prof_slot *s, int rate)
{
    (void)rate;
    gone_lost += atomic_load(&s->lost);
    gone_self_ns += atomic_load(&s->self_ns);
    gone_missed += s->missed_seen;
    s->pfd = -1; /* closed at retire (slot_disarm) */
    if (s->win && nspare < PROF_MAX_SLOTS)
        spare[nspare++] = (char *)s->win;
    else if (s->win)
        munmap(s->win, SLOT_BYTES);
    s->ring = NULL;
    s->win = NULL;
    s->cache = NULL;
    s->magic = 0;
    atomic_store(&s->state, SLOT_FREE);
}

/* The mapping holding sp into ml: asked of the kernel where it can answer (PROCMAP_QUERY), else
 * from maps, read once per drain (NULL buffer: not yet). 0, or -1. */
static int stack_line(uintptr_t sp, struct unwind_maps *maps, struct unwind_mapline *ml, char *name,
                      size_t cap)
{
    if (maps_query) {
        if (maps_fd < 0)
            maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
        int rc = maps_fd >= 0 ? sig_unwind_maps_query(maps_fd, sp, ml, name, cap) : -2;
        if (rc != -2)
            return rc;
        maps_query = 0; /* an older kernel: the text from now on */
    }
    if (!maps->buf) {
        void *b =
            mmap(NULL, MAPS_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (b == MAP_FAILED)
            return -1;
        maps->buf = b;
        maps->cap = MAPS_BYTES;
        sig_unwind_maps_read(maps);
    }
    return sig_unwind_maps_line(maps, sp, ml);
}

/* Drain thread: the mapping that holds a record's sp becomes its slot's known stack. */
static void slot_learn_stack(struct prof_slot *s, const struct prof_raw *r,
                             struct unwind_maps *maps)
{
    struct unwind_mapline ml;
    char name[64];
    if (!r->sp || !r->self || atomic_load(&s->stack_self) != 0)
        return;
    size_t plen;
    uintptr_t hi;
    if (stack_line(r->sp, maps, &ml, name, sizeof name) != 0 || r->sp >= ml.hi)
        return;
    plen = (size_t)(ml.path_end - ml.path);
    if (plen == 7 && memcmp(ml.path, "[stack]", 7) == 0) {
        hi = (uintptr_t)ml.hi; /* the main thread's: the kernel's stack mapping, to its top */
    } else if (plen == 0 && r->self > r->sp && r->self < ml.hi) {
        /* Another thread's: glibc keeps the thread's descriptor (pthread_self) at the top of
         * the thread's own stack block, with its static TLS just below; [sp, self) is that
         * block. Not the mapping's end: the kernel merges adjacent anonymous mappings into one
         * line of maps, and a neighbour above may be unmapped at any time. */
        hi = r->self;
    } else {
        return; /* another kind of stack: read through the window */
    }
    s->stack_lo = (uintptr_t)ml.lo;
    s->stack_hi = hi;
    atomic_store_explicit(&s->stack_self, r->self, memory_order_release);
}

int sig_prof_slots_drain(void (*fn)(const struct prof_raw *r, void *arg), void *arg)
{
    int n = 0, hi = atomic_load(&slots_hi);
    struct unwind_maps maps = {NULL, 0, 0};
    for (int i = 0; i < hi; i++) {
        struct prof_slot *s = &slots[i];
        int st = atomic_load(&s->state);
        if (st == SLOT_FREE)
            continue;
        unsigned t = atomic_load_explicit(&s->tail, memory_order_relaxed);
        unsigned h = atomic_load_explicit(&s->head, memory_order_acquire);
        for (; t != h; t++, n++) {
            if (st == SLOT_LIVE && t + 1 == h)
                slot_learn_stack(s, &s->ring[t % PROF_RING], &maps);
            fn(&s->ring[t % PROF_RING], arg);
            atomic_store_explicit(&s->tail, t + 1, memory_order_release);
        }
        if (st == SLOT_RETIRED && atomic_load(&in_handler) == 0)
            slot_free(s, 0);
    }
    if (maps.buf)
        munmap(maps.buf, MAPS_BYTES);
    return n;
}

void sig_prof_slots_each(void (*fn)(struct prof_slot *s, void *arg), void *arg)
{
    int hi = atomic_load(&slots_hi);
    for (int i = 0; i < hi; i++)
        if (atomic_load(&slots[i].state) == SLOT_LIVE)
            fn(&slots[i], arg);
}

void sig_prof_slots_counters(int rate, long long *missed, long long *lost, double *handler_s,
                             int *armed)
{
    long long m = gone_missed, l = gone_lost, ns = gone_self_ns;
    int a = 0, hi = atomic_load(&slots_hi);
    (void)rate;
    for (int i = 0; i < hi; i++) {
        struct prof_slot *s = &slots[i];
        if (atomic_load(&s->state) == SLOT_FREE)
            continue;
        l += atomic_load(&s->lost);
        ns += atomic_load(&s->self_ns);
        if (s->counting) {
            a++;
            slot_missed_update(s);
        } else if (atomic_load(&s->state) == SLOT_LIVE) {
            a++;
        }
        m += s->missed_seen;
    }
    /* User-time clocks: signed per thread (slot_missed_user); the total only ever rises. */
    long long top = atomic_load(&missed_hi);
    while (m > top && !atomic_compare_exchange_weak(&missed_hi, &top, m)) {
    }
    if (missed)
        *missed = m > top ? m : top;
    if (lost)
        *lost = l;
    if (handler_s)
        *handler_s = ns / 1e9;
    if (armed)
        *armed = a;
}

void sig_prof_slots_clear(void)
{
    for (int i = 0; i < PROF_MAX_SLOTS; i++) {
        struct prof_slot *s = &slots[i];
        if (atomic_load(&s->state) == SLOT_FREE)
            continue;
        atomic_store(&s->state, SLOT_RETIRED);
        slot_disarm(s);
    }
}

void sig_prof_slots_release(void)
{
    while (nspare > 0)
        munmap(spare[--nspare], SLOT_BYTES);
    if (maps_fd >= 0)
        close(maps_fd);
    maps_fd = -1;
}

void sig_prof_slots_reset_totals(void)
{
    gone_missed = gone_lost = gone_self_ns = 0;
    atomic_store(&missed_hi, 0);
}
