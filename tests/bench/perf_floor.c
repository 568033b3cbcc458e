/* SPDX-License-Identifier: MIT */
/* The kernel's part of perf --cc's events clock, without the probe (bench_perf.py builds it with
 * cc and perf_work.py loads it when PERF_FLOOR_NS is set): each worker thread opens the same
 * perf event the sampler opens for it (its task clock, one overflow per period of its CPU time,
 * user time only, as the sampler's) and, with a signal, has each overflow
 * send SIGPROF to it as the sampler's does (F_SETSIG, F_SETOWN_EX), to a handler that only
 * counts. What the process pays for that over the same workload without events is the floor a
 * sampler of this kind cannot go under on this machine and kernel; the probe's own part is
 * what perf --cc costs above it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic long floor_signals;

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    atomic_fetch_add_explicit(&floor_signals, 1, memory_order_relaxed);
}

/* The SIGPROF handler that only counts (once, before the threads arm). */
int floor_setup(void);
int floor_setup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGPROF, &sa, NULL);
}

long floor_count(void);
long floor_count(void)
{
    return atomic_load(&floor_signals);
}

/* The attributes of probe/sig/prof_sig.c's ev_open, on purpose: the floor is that event's cost. */
static int ev_open(int tid, long period_ns, int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (unsigned long long)period_ns;
    a.disabled = 1;
    a.exclude_kernel = (unsigned)exclude_kernel;
    a.exclude_hv = 1;
    return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The calling thread's event, enabled: 0, or -errno. with_signal 0: the event overflows (the
 * kernel's timer runs) but sends nothing. */
int floor_arm(long period_ns, int with_signal);
int floor_arm(long period_ns, int with_signal)
{
    int tid = (int)syscall(SYS_gettid);
    int fd = ev_open(tid, period_ns, 1); /* user time only, as the sampler's since stop 61 */
    if (fd < 0)
        return -errno;
    if (with_signal) {
        struct f_owner_ex own = {F_OWNER_TID, tid};
        if (fcntl(fd, F_SETSIG, SIGPROF) != 0 || fcntl(fd, F_SETOWN_EX, &own) != 0 ||
            fcntl(fd, F_SETFL, O_ASYNC) != 0) {
            int e = errno;
            close(fd);
            return -e;
        }
    }
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return 0;
}
