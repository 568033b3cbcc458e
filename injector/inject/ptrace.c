/* SPDX-License-Identifier: MIT */
/* ptrace stops with bounded waits. The injector uses PTRACE_SEIZE (no SIGSTOP sent, other
 * threads untouched) and PTRACE_INTERRUPT, and waits for the tracee's next stop with SIGCHLD
 * blocked and sigtimedwait: no busy loop and no unbounded wait. The kernel sends SIGCHLD to the
 * tracer on every tracee stop; slices are capped at 20 ms in case another thread of the caller
 * takes that SIGCHLD first. One SIGCHLD may be consumed by the wait. */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>

#ifndef PTRACE_SEIZE
#define PTRACE_SEIZE 0x4206
#define PTRACE_INTERRUPT 0x4207
#endif

int ptrace_seize(pid_t tid)
{
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0)
        return -errno;
    return 0;
}

int ptrace_interrupt(pid_t tid)
{
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
        return -errno;
    return 0;
}

int ptrace_cont(pid_t tid, int sig)
{
    if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig) < 0)
        return -errno;
    return 0;
}

int ptrace_detach(pid_t tid, int sig)
{
    if (ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)sig) < 0)
        return -errno;
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ptrace_wait(pid_t tid, int timeout_ms, int *status)
{
    sigset_t set, old;
    int rc;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    /* Blocked, a SIGCHLD that arrives between waitpid and sigtimedwait stays pending and ends
     * the sigtimedwait at once: no lost wake-up. */
    pthread_sigmask(SIG_BLOCK, &set, &old);
    long long deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        pid_t r = waitpid(tid, status, WNOHANG | __WALL);
        if (r == tid) {
            rc = 0;
            break;
        }
        if (r < 0 && errno != EINTR) {
            rc = -errno;
            break;
        }
        long long left = deadline - now_ms();
        if (left <= 0) {
            rc = PB_ETIMEDOUT;
            break;
        }
        if (left > 20)
            left = 20;
        struct timespec ts = {0, (long)left * 1000000L};
        sigtimedwait(&set, NULL, &ts);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int ptrace_proc_gone(pid_t pid)
{
    struct ptrace_status st;
    int rc = ptrace_status_read(pid, &st);
    if (rc == -ESRCH)
        return 1;
    return rc == 0 && (st.state == 'Z' || st.state == 'X');
}
