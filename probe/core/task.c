/* SPDX-License-Identifier: MIT */
/* The task thread: runs work that may block (SQL queries, waiting for the GIL through
 * gil_call) off the loop, one task at a time, and hands each completion back to the loop
 * through a uv_async. Never holds the GIL itself. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "inbox.h"

struct task {
    probe_task_fn fn;
    probe_task_done done;
    void *arg;
    struct probe_link link; /* in the queue, then in the inbox */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct probe_fifo queue;
static struct probe_inbox done_inbox = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_t task_thread;
static int task_quit; /* mu: core_task_stop asks the thread to end */

static void *task_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!queue.head && !task_quit)
            pthread_cond_wait(&cv, &mu);
        if (task_quit) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        struct task *t = PROBE_CONTAINER(core_fifo_pop(&queue), struct task, link);
        pthread_mutex_unlock(&mu);
        t->fn(t->arg);
        core_inbox_post(&done_inbox, &t->link);
    }
    return NULL;
}

/* Loop thread: a completion. */
static void on_done(struct probe_link *l)
{
    struct task *t = PROBE_CONTAINER(l, struct task, link);
    t->done(t->arg);
    free(t);
}

int core_task_submit(probe_task_fn fn, probe_task_done done, void *arg)
{
    struct task *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->fn = fn;
    t->done = done;
    t->arg = arg;
    pthread_mutex_lock(&mu);
    core_fifo_push(&queue, &t->link);
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}

int core_task_start(uv_loop_t *loop, struct pb_err *err)
{
    pthread_mutex_lock(&mu);
    task_quit = 0;
    pthread_mutex_unlock(&mu);
    core_inbox_init(&done_inbox, loop, on_done);
    int rc = core_thread_start(&task_thread, task_main, 0);
    if (rc < 0) {
        core_inbox_close(&done_inbox);
        return pb_err_set(err, rc, "pthread_create: %s", strerror(-rc));
    }
    return 0;
}

void core_task_stop(void)
{
    pthread_mutex_lock(&mu);
    task_quit = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(task_thread, NULL);
    core_inbox_close(&done_inbox);
}
