/* SPDX-License-Identifier: MIT */
/* Starting the probe's own threads (agent, worker, task, interrupter): every signal is blocked
 * in them, so the host's signals (SIGINT, SIGPROF, its own handlers' signals) are never
 * delivered to a thread of ours. The one exception is user code: while the worker runs what
 * the user typed (eval, DAP evaluate, the repl), it takes the target's main-thread mask, so
 * that code, and every thread it starts, sees signals as the target's own threads do. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

int probe_thread_start(pthread_t *t, void *(*fn)(void *), int detached)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_attr_init(&attr);
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits this mask */
    int rc = pthread_create(t, &attr, fn, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return -rc;
}

/* The signal mask of the target's main thread (/proc/self/task/PID/status, SigBlk), or the
 * empty set when it cannot be read (a thread started by the host without a reason to block
 * anything has that). */
static void main_thread_mask(sigset_t *set)
{
    char path[64], buf[4096];
    unsigned long long blk = 0;
    sigemptyset(set);
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)getpid());
    if (pb_read_file(path, buf, sizeof buf) <= 0)
        return;
    const char *p = strstr(buf, "\nSigBlk:");
    if (!p || sscanf(p + 8, "%llx", &blk) != 1)
        return;
    for (int sig = 1; sig <= 64; sig++)
        if (blk & (1ULL << (sig - 1)))
            sigaddset(set, sig); /* glibc's own (32, 33) are refused here and kept as they are */
}

void probe_thread_user_enter(sigset_t *saved)
{
    sigset_t user;
    main_thread_mask(&user);
    pthread_sigmask(SIG_SETMASK, &user, saved);
}

void probe_thread_user_leave(const sigset_t *saved)
{
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}
