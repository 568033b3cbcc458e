/* SPDX-License-Identifier: MIT */
/* The sampler's control side (prof.h): start and stop, and the drain thread. The drain thread
 * (one of the probe's threads: every signal blocked, never sampled) wakes periodically (wall
 * mode: every sampling period; CPU mode: every 200 ms, or sooner when a handler filled half of
 * a ring: sig_prof_wait) to:
 *  - every 200 ms, look at the thread count (the link count of /proc/self/task: one fstat) and
 *    when it changed, or a second passed, list /proc/self/task: a new thread gets a slot and,
 *    in CPU mode, its timer (its own CPU clock, so an idle thread costs nothing); a thread gone
 *    has its timer deleted. (A listing costs 50-200 us: at every wake-up it was the largest part
 *    of the drain thread's time per sample.) Threads that block every signal (the probe's own threads) are left out; a host
 *    thread that blocks only SIGPROF keeps its timer and its expirations count as missed;
 *  - move the records of every ring into the store (store.c: symbolise, merge, dedup);
 *  - wall mode: read every Python thread's frames itself (off-CPU threads, on_cpu = 0) and
 *    poke the on-CPU ones (sig_prof_slot_poke: never into a wait), whose handler records
 *    native and Python frames (a poke still unanswered: read here, on_cpu = 1);
 *  - when new threads appeared, have threading names fetched (one short GIL call, made by the
 *    task thread: the drain thread never waits for the GIL, which a loaded machine can take
 *    longer to hand over than a ring lasts: 16 ms at 1000 Hz from the half-full wake-up).
 * fork(): the child stops sampling (no timers survive fork, no drain thread exists there) and
 * gets the old SIGPROF disposition back; its data stays readable. */
#include "prof.h"
#include "sig/unwind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "pyrt/pyrt.h"
#include "gil/gil.h"

#define SCAN_NS 200000000LL  /* thread count every 200 ms */
#define LIST_NS 1000000000LL /* thread list at least every second (same count, other threads) */
#define DRAIN_NS 200000000LL /* rings at least every 200 ms (sooner when half full) */
#define SKIP_MAX 64          /* threads known to block every signal, not asked again... */
#define SKIP_SCANS 5         /* ...for this many listings (about a second apart) */
#define NAMES_NS 500000000LL /* threading names at most every 0.5 s */

static pthread_t drain_thread;
static int drain_started;
static _Atomic int stop_asked;
static int skip_tids[SKIP_MAX], nskip, skip_age; /* drain thread only */
static _Atomic int drain_tid;
static struct prof_opts cur;
static _Atomic int is_running;
static int forked;
static double t_started, t_stopped;
static struct prof_status final; /* counters at the last stop */
static int atfork_done;
static _Atomic int names_pending;
static _Atomic int names_scheduled; /* a names task waits or runs on the task thread */
static double drain_cpu_last;       /* the drain thread's CPU time when it ended */
static char clock_why[192];         /* auto chose timers: why (prof_status.clock_why) */

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void add_cb(const struct prof_raw *r, void *arg)
{
    (void)arg;
    prof_store_add(r, cur.mode == PROF_WALL);
}

/* 1 when thread tid blocks SIGINT, SIGTERM, SIGUSR1 and SIGPROF: one of the probe's threads
 * (core_thread_start blocks everything), or a host thread that wants no signal at all. */
static int blocks_all(int tid)
{
    char path[64], buf[2048];
    unsigned long long blk = 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return 1; /* gone */
    const char *p = strstr(buf, "SigBlk:");
    if (!p || sscanf(p + 7, "%llx", &blk) != 1)
        return 0;
    unsigned long long want = (1ULL << (SIGINT - 1)) | (1ULL << (SIGTERM - 1)) |
                              (1ULL << (SIGUSR1 - 1)) | (1ULL << (SIGPROF - 1));
    return (blk & want) == want;
}

static void comm_name(int tid)
{
    char path[64], buf[64];
    long n;
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    n = pb_read_file(path, buf, sizeof buf);
    if (n <= 0)
        return;
    if (buf[n - 1] == '\n')
        buf[n - 1] = '\0';
    prof_store_thread_name(tid, buf, 0);
}

struct scan {
    int *tids;
    int n;
};

static void retire_gone(struct prof_slot *s, void *arg)
{
    struct scan *sc = arg;
    int tid = sig_prof_slot_tid(s);
    for (int i = 0; i < sc->n; i++)
        if (sc->tids[i] == tid)
            return;
    sig_prof_slot_retire(s);
}

/* blocks_all, remembered for SKIP_SCANS scans (the probe's own threads would cost a read of
 * their status file at every scan). */
static int skipped(int tid)
{
    for (int i = 0; i < nskip; i++)
        if (skip_tids[i] == tid)
            return 1;
    if (!blocks_all(tid))
        return 0;
    if (nskip < SKIP_MAX)
        skip_tids[nskip++] = tid;
    return 1;
}

static void scan_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    struct scan sc = {NULL, 0};
    int cap = 0, me = atomic_load(&drain_tid);
    if (++skip_age >= SKIP_SCANS)
        nskip = skip_age = 0;
    if (!d)
        return;
    while ((e = readdir(d))) {
        int tid = atoi(e->d_name);
        if (tid <= 0)
            continue;
        if (sc.n == cap) {
            int *nt = realloc(sc.tids, (size_t)(cap = cap ? cap * 2 : 64) * sizeof *nt);
            if (!nt)
                break;
            sc.tids = nt;
        }
        sc.tids[sc.n++] = tid;
        if (tid == me || sig_prof_slot_find(tid) || skipped(tid))
            continue;
        struct prof_slot *s = sig_prof_slot_new(tid);
        if (!s)
            continue; /* full: the thread goes unsampled */
        if (!prof_store_has_thread_name(tid))
            comm_name(tid);
        atomic_store(&names_pending, 1);
        if (cur.mode == PROF_CPU) {
            struct pb_err err = {0};
            if (sig_prof_slot_arm(s, cur.rate, &err) < 0) {
                PB_LOG(PB_LOG_WARN, "perf: %s", err.msg);
                sig_prof_slot_retire(s);
            }
        } else {
            sig_prof_slot_arm_poke(s);
        }
    }
    closedir(d);
    if (sc.tids)
        sig_prof_slots_each(retire_gone, &sc);
    free(sc.tids);
}

static void names_fn(void *arg)
{
    (void)arg;
    struct probe_snapshot s;
    struct pb_err err = {0};
    if (pyrt_snapshot(&s, PROBE_SNAP_NAMES, 1, &err) < 0)
        return;
    for (int i = 0; i < s.nthreads; i++)
        if (s.threads[i].native_id > 0 && s.threads[i].name_from_threading && s.threads[i].name)
            prof_store_thread_name((int)s.threads[i].native_id, s.threads[i].name, 1);
    pyrt_snapshot_free(&s);
}

/* Task thread. */
static void names_task(void *arg)
{
    gil_call(names_fn, arg, 200);
    atomic_store(&names_scheduled, 0);
}

static void names_done(void *arg)
{
    (void)arg;
}

/* 1 when the kernel says thread tid is running or runnable. */
static int on_cpu(long tid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%ld/stat", tid);
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return 0;
    const char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    return p && p[1] == ' ' && p[2] == 'R';
}

static void wall_tick(void)
{
    uintptr_t ts[256];
    long ids[256];
    long long interps[256];
    static struct prof_raw raw; /* drain thread only */
    int n = sig_pyrt_threads(ts, ids, interps, 256), me = atomic_load(&drain_tid), sub = 0;
    for (int i = 0; i < n; i++)
        sub |= interps[i] != 0;
    for (int i = 0; i < n; i++) {
        struct prof_slot *s;
        int later = 0;
        if (ids[i] <= 0 || ids[i] == me)
            continue;
        /* A thread running code in a subinterpreter has a thread state in each: the one of
         * the highest interpreter id (where it runs now) stands for it, the others' frames
         * below its own (sig_pyrt_frames_outer). */
        for (int j = 0; sub && j < n && !later; j++)
            later = j != i && ids[j] == ids[i] && interps[j] > interps[i];
        if (later)
            continue;
        s = sig_prof_slot_find((int)ids[i]);
        /* Only a thread the kernel reports running is poked, read just before: a signal wakes
         * a thread blocked in nanosleep/epoll_wait/poll/select with EINTR (issue 36 item 2).
         * The poke (sig_prof_slot_arm_poke) raises SIGPROF where the thread runs its own code,
         * so one that enters such a wait meanwhile is not woken; only the last resort, a
         * queued signal, leaves the window from this read to its delivery (microseconds). A
         * thread whose last poke is still unanswered is read here instead (running, Python
         * frames only). */
        int running = s && on_cpu(ids[i]);
        if (running && sig_prof_slot_poke(s, 1) == 0)
            continue; /* its handler records native and Python frames */
        raw.ts = wall_now();
        raw.tid = (int)ids[i];
        raw.on_cpu = running;
        raw.gil = sig_pyrt_holds_gil(ts[i]); /* off-CPU yet holding it: a C call that keeps it */
        raw.nnative = 0;
        raw.npy = sig_pyrt_frames_fast(ts[i], raw.py, PROF_MAX_PY);
        if (sub)
            raw.npy = sig_pyrt_frames_outer(ts[i], ids[i], raw.py, raw.npy, PROF_MAX_PY);
        if (raw.npy > 0)
            prof_store_add(&raw, 1);
    }
}

/* The process's thread count from the link count of /proc/self/task (the kernel adds one per
 * thread, counted at each fstat), -1 when unknown. fd: that directory, opened once by the drain
 * thread (a stat of the path walked /proc/self's link and the dentries at every call: after
 * its sleep, with cold caches, nearly a third of the drain thread's CPU time). */
static long task_links(int fd)
{
    struct stat st;
    if (fd >= 0 ? fstat(fd, &st) : stat("/proc/self/task", &st))
        return -1;
    return (long)st.st_nlink;
}

static void *drain_main(void *arg)
{
    (void)arg;
    long long last_scan = 0, last_list = 0, last_names = 0, last_tick = mono_ns();
    long links = -2;
    /* CPU mode: the handlers wake the drain thread when a ring is half full; else every
     * 200 ms (a wake-up per sample, or per 10 ms, cost more than the samples' own work; each
     * costs about 100 us with cold caches, whatever it finds: at 100 ms it was a third of the
     * drain thread's CPU per sample of one busy thread). */
    long long period = DRAIN_NS;
    if (cur.mode == PROF_WALL)
        period = 1000000000LL / cur.rate;
    atomic_store(&drain_tid, (int)syscall(SYS_gettid));
    nskip = skip_age = 0;
    if (cur.mode == PROF_WALL)
        sig_prof_pokes_prepare();
    int task_fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    while (!atomic_load(&stop_asked)) {
        long long now = mono_ns();
        if (now - last_scan >= SCAN_NS) {
            long l = task_links(task_fd);
            if (l != links || l < 0 || now - last_list >= LIST_NS) {
                scan_threads();
                last_list = now;
                links = l;
            }
            last_scan = now;
        }
        if (cur.mode == PROF_WALL)
            wall_tick();
        /* The handlers' module table follows dlopen/dlclose; replaced tables go once no
         * handler can hold them (sig/unwind.h). */
        sig_unwind_table_refresh();
        sig_unwind_table_reclaim(sig_prof_quiet);
        sig_prof_slots_drain(add_cb, NULL);
        int idle = 0;
        if (atomic_load(&names_pending) && now - last_names >= NAMES_NS &&
            atomic_compare_exchange_strong(&names_scheduled, &idle, 1)) {
            atomic_store(&names_pending, 0);
            last_names = now;
            if (core_task_submit(names_task, names_done, NULL) < 0) {
                atomic_store(&names_scheduled, 0);
                atomic_store(&names_pending, 1);
            }
        }
        if (now - last_tick >= 1000000000LL) {
            prof_store_tick();
            /* Missed samples of threads that block SIGPROF, before one goes (a thread's CPU
             * clock dies with it; the others' is known from their last signal). */
            sig_prof_slots_counters(cur.rate, NULL, NULL, NULL, NULL);
            last_tick = now;
        }
        if (!atomic_load(&stop_asked))
            sig_prof_wait(period);
    }
    if (task_fd >= 0)
        close(task_fd);
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        drain_cpu_last = (double)cpu.tv_sec + cpu.tv_nsec / 1e9;
    atomic_store(&drain_tid, 0);
    return NULL;
}

static void on_fork_child(void)
{
    atomic_store(&names_scheduled, 0); /* a names task of the parent's task thread */
    if (!atomic_load(&is_running))
        return;
    sig_prof_fork_child();
    atomic_store(&is_running, 0);
    drain_started = 0; /* the thread exists only in the parent */
    forked = 1;
    t_stopped = 0;
}

int prof_start(const struct prof_opts *o, struct pb_err *err)
{
    int rc;
    if (atomic_load(&is_running))
        return pb_err_set(err, PB_ESTATE,
                          "sampling is already running (%s mode, %d Hz): stop it "
                          "first with 'probing perf --stop'",
                          cur.mode == PROF_WALL ? "wall" : "cpu", cur.rate);
    if (o->rate < PROF_RATE_MIN || o->rate > PROF_RATE_MAX)
        return pb_err_set(err, PB_EBADARG, "rate %d: use %d to %d samples per second", o->rate,
                          PROF_RATE_MIN, PROF_RATE_MAX);
    if (o->mode != PROF_CPU && o->mode != PROF_WALL)
        return pb_err_set(err, PB_EBADARG, "mode: use cpu or wall");
    if (o->clock != PROF_CLOCK_AUTO && o->clock != PROF_CLOCK_EVENTS &&
        o->clock != PROF_CLOCK_TIMERS)
        return pb_err_set(err, PB_EBADARG, "clock: use auto, events or timers");
    if (o->clock != PROF_CLOCK_AUTO && o->mode == PROF_WALL)
        return pb_err_set(err, PB_EBADARG,
                          "clock: only in cpu mode (wall mode is paced by the sampler's "
                          "own thread)");
    /* The threads to sample are found in /proc/self/task (scan_threads): a root without /proc
     * (a chroot that mounts none) would sample nothing, silently. */
    if (access("/proc/self/task", R_OK) < 0)
        return pb_err_set(err, -ENOENT,
                          "cannot list this process's threads: its root has no "
                          "/proc (%s); mount proc in its root (a container does) and start again",
                          strerror(errno));
    if (sig_pyrt_prepare() < 0)
        return pb_err_set(err, -ENOSYS,
                          "no signal-safe memory read (process_vm_readv is "
                          "refused here): the sampler cannot read Python frames");
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, on_fork_child);
        atfork_done = 1;
    }
    clock_why[0] = '\0';
    if (o->mode == PROF_CPU && (rc = sig_prof_clock_choose(o->clock, o->rate)) < 0) {
        char paranoid[16] = "";
        long n = pb_read_file("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof paranoid);
        while (n > 0 && (paranoid[n - 1] == '\n' || paranoid[n - 1] == ' '))
            paranoid[--n] = '\0';
        if (o->clock == PROF_CLOCK_EVENTS)
            return pb_err_set(err, rc,
                              "the \"events\" clock: the kernel refuses perf events here "
                              "(perf_event_open: %s; kernel.perf_event_paranoid is %s): ask "
                              "for the \"timers\" clock, or lower that setting (or allow "
                              "perf_event_open in the container's seccomp profile)",
                              strerror(-rc), n > 0 ? paranoid : "unreadable");
        snprintf(clock_why, sizeof clock_why,
                 "perf_event_open: %s; kernel.perf_event_paranoid is %s", strerror(-rc),
                 n > 0 ? paranoid : "unreadable");
    }
    prof_store_clear();
    sig_prof_slots_reset_totals();
    memset(&final, 0, sizeof final);
    cur = *o;
    forked = 0;
    atomic_store(&stop_asked, 0);
    drain_cpu_last = 0;
    atomic_store(&names_pending, 1);
    prof_sig_lock();
    rc = sig_prof_install(err);
    prof_sig_unlock();
    if (rc < 0)
        return rc;
    sig_prof_set_running(1);
    atomic_store(&is_running, 1);
    t_started = wall_now();
    t_stopped = 0;
    rc = core_thread_start(&drain_thread, drain_main, 0);
    if (rc < 0) {
        sig_prof_set_running(0);
        atomic_store(&is_running, 0);
        prof_sig_lock();
        sig_prof_uninstall();
        prof_sig_unlock();
        return pb_err_set(err, rc, "starting the sampler thread: %s", strerror(-rc));
    }
    drain_started = 1;
    return 0;
}

static double drain_cpu_s(void)
{
    int tid = atomic_load(&drain_tid);
    struct timespec ts;
    if (tid <= 0)
        return drain_cpu_last;
    if (clock_gettime(sig_thread_cpu_clock(tid), &ts) != 0)
        return 0;
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void clock_fill(struct prof_status *st)
{
    st->clock = 0;
    st->clock_user_only = 0;
    st->clock_why[0] = '\0';
    if (cur.mode != PROF_CPU)
        return;
    st->clock = sig_prof_clock(&st->clock_user_only);
    snprintf(st->clock_why, sizeof st->clock_why, "%s", clock_why);
}

static void status_live(struct prof_status *st)
{
    double handler_s = 0;
    long long lost_ring = 0, lost_store = 0;
    memset(st, 0, sizeof *st);
    st->running = 1;
    st->mode = cur.mode;
    st->rate = cur.rate;
    st->started = t_started;
    sig_prof_slots_counters(cur.rate, &st->missed, &lost_ring, &handler_s, &st->armed);
    prof_store_counts(&st->samples, &st->stacks, &st->threads, &lost_store);
    st->lost = lost_ring + lost_store;
    st->handler_cpu_s = handler_s;
    st->drain_cpu_s = drain_cpu_s();
    st->probe_cpu_s = st->handler_cpu_s + st->drain_cpu_s;
    clock_fill(st);
    PB_LOG(PB_LOG_DEBUG, "perf: handlers %.4f s, drain thread %.4f s", handler_s, drain_cpu_s());
}

int prof_stop(struct prof_status *st)
{
    if (!atomic_load(&is_running)) {
        prof_status_get(st ? st : &(struct prof_status){0});
        return 0;
    }
    sig_prof_set_running(0);
    atomic_store(&stop_asked, 1);
    sig_prof_wake();
    if (drain_started)
        pthread_join(drain_thread, NULL);
    drain_started = 0;
    status_live(&final); /* before the slots go */
    sig_prof_slots_clear();
    prof_sig_lock();
    sig_prof_uninstall();
    prof_sig_unlock();
    sig_prof_slots_drain(add_cb, NULL); /* what was queued; frees the slots */
    sig_prof_slots_release();
    atomic_store(&is_running, 0);
    t_stopped = wall_now();
    prof_status_get(st ? st : &(struct prof_status){0});
    return 1;
}

void prof_status_get(struct prof_status *st)
{
    if (atomic_load(&is_running)) {
        status_live(st);
        return;
    }
    *st = final;
    st->running = 0;
    st->mode = cur.mode;
    st->rate = cur.rate;
    st->started = t_started;
    st->stopped = t_stopped;
    st->forked = forked;
    clock_fill(st);
    prof_store_counts(&st->samples, &st->stacks, &st->threads, NULL);
}
