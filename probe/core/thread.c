/* SPDX-License-Identifier: MIT */
/* Starting the probe's own threads (agent, worker, task, interrupter): every signal is blocked
 * in them, so the host's signals (SIGINT, SIGPROF, its own handlers' signals) are never
 * delivered to a thread of ours. The one exception is user code: while the worker runs what
 * the user typed (eval, DAP evaluate, the repl), it takes the target's main-thread mask, so
 * that code, and every thread it starts, sees signals as the target's own threads do. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

/* The kernel ids of the probe's running threads (a handful: agent, task, worker, interrupter,
 * the sampler's drain thread), each written by the thread itself when it starts and cleared
 * when it ends (returns or exits: the key's destructor). */
#define OWN_MAX 64
static _Atomic long own_tids[OWN_MAX];

struct own_start {
    void *(*fn)(void *);
};

static pthread_key_t own_key; /* each own thread's slot, cleared by its destructor at exit */
static pthread_once_t own_once = PTHREAD_ONCE_INIT;
static int own_key_ok;

static void own_forget(void *slot)
{
    atomic_store((_Atomic long *)slot, 0);
}

static void own_key_make(void)
{
    own_key_ok = pthread_key_create(&own_key, own_forget) == 0;
}

static void *own_main(void *p)
{
    void *(*fn)(void *) = ((struct own_start *)p)->fn;
    long me = (long)syscall(SYS_gettid);
    free(p);
    pthread_once(&own_once, own_key_make);
    for (int i = 0; i < OWN_MAX && own_key_ok; i++) {
        long zero = 0;
        if (atomic_compare_exchange_strong(&own_tids[i], &zero, me)) {
            pthread_setspecific(own_key, &own_tids[i]); /* returns or pthread_exit: cleared */
            break;
        }
    }
    return fn(NULL);
}

int core_thread_is_ours(long tid)
{
    for (int i = 0; tid > 0 && i < OWN_MAX; i++)
        if (atomic_load(&own_tids[i]) == tid)
            return 1;
    return 0;
}

int core_thread_start(pthread_t *t, void *(*fn)(void *), int detached)
{
    struct own_start *st = malloc(sizeof *st);
    if (!st)
        return -ENOMEM;
    st->fn = fn;
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_attr_init(&attr);
    if (detached)
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits this mask */
    int rc = pthread_create(t, &attr, own_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc)
        free(st);
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

void core_thread_user_enter(sigset_t *saved)
{
    sigset_t user;
    main_thread_mask(&user);
    pthread_sigmask(SIG_SETMASK, &user, saved);
}

void core_thread_user_leave(const sigset_t *saved)
{
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}
