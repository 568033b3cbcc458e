/* SPDX-License-Identifier: MIT */
/* Starting the probe's own threads (agent, worker, task, interrupter): every signal is blocked
 * in them, so the host's signals (SIGINT, SIGPROF, its own handlers' signals) are never
 * delivered to a thread of ours. */
#include <pthread.h>
#include <signal.h>

#include "internal.h"

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
