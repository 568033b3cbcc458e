/* SPDX-License-Identifier: MIT */
/* The task thread: runs work that may block (SQL queries, waiting for the GIL through
 * probe_gil_call) off the loop, one task at a time, and hands each completion back to the loop
 * through a uv_async. Never holds the GIL itself. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

struct task {
    probe_task_fn fn;
    probe_task_done done;
    void *arg;
    struct task *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct task *head, *tail, *done_list;
static uv_async_t done_async;
static pthread_t task_thread;

static void *task_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!head)
            pthread_cond_wait(&cv, &mu);
        struct task *t = head;
        head = t->next;
        if (!head)
            tail = NULL;
        pthread_mutex_unlock(&mu);
        t->fn(t->arg);
        pthread_mutex_lock(&mu);
        t->next = done_list;
        done_list = t;
        pthread_mutex_unlock(&mu);
        uv_async_send(&done_async);
    }
    return NULL;
}

/* Loop thread: completions, oldest first. */
static void on_done(uv_async_t *a)
{
    (void)a;
    pthread_mutex_lock(&mu);
    struct task *list = done_list, *rev = NULL;
    done_list = NULL;
    pthread_mutex_unlock(&mu);
    while (list) {
        struct task *t = list;
        list = t->next;
        t->next = rev;
        rev = t;
    }
    while (rev) {
        struct task *t = rev;
        rev = t->next;
        t->done(t->arg);
        free(t);
    }
}

int probe_task_submit(probe_task_fn fn, probe_task_done done, void *arg)
{
    struct task *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    t->fn = fn;
    t->done = done;
    t->arg = arg;
    pthread_mutex_lock(&mu);
    if (tail)
        tail->next = t;
    else
        head = t;
    tail = t;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    return 0;
}

int probe_task_start(uv_loop_t *loop, struct pb_err *err)
{
    uv_async_init(loop, &done_async, on_done);
    int rc = probe_thread_start(&task_thread, task_main, 0);
    if (rc < 0)
        return pb_err_set(err, rc, "pthread_create: %s", strerror(-rc));
    return 0;
}
