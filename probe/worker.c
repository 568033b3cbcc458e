/* SPDX-License-Identifier: MIT */
/* The GIL worker: one thread that takes the GIL (PyGILState_Ensure) to run jobs for the loop.
 * The loop arms a timer per job; whichever comes first, the job starting under the GIL or the
 * timer, wins (an atomic state decides), so a GIL held forever by someone else costs a timeout
 * answer, never a blocked loop. Completions come back to the loop through a uv_async. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_TIMEDOUT };

struct job {
    probe_gil_fn fn;
    probe_gil_done done;
    void *arg;
    atomic_int state;
    atomic_int refs; /* the loop's (until its timer closed) and the worker's */
    int rc;
    int sync;      /* probe_gil_call: completion through `finished` + cv, no timer */
    int finished;
    uv_timer_t timer;
    struct job *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct job *queue_head, *queue_tail, *done_head;
static uv_async_t done_async;
static pthread_t worker_thread;
static atomic_ulong worker_ident;

static void job_unref(struct job *j)
{
    if (atomic_fetch_sub(&j->refs, 1) == 1)
        free(j);
}

static void on_timer_closed(uv_handle_t *h)
{
    job_unref(h->data);
}

static int python_usable(void)
{
    if (!Py_IsInitialized())
        return 0;
#if PY_VERSION_HEX >= 0x030D0000
    return !Py_IsFinalizing();
#else
    return !_Py_IsFinalizing();
#endif
}

static void *worker_main(void *arg)
{
    (void)arg;
    atomic_store(&worker_ident, (unsigned long)pthread_self());
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!queue_head)
            pthread_cond_wait(&cv, &mu);
        struct job *j = queue_head;
        queue_head = j->next;
        if (!queue_head)
            queue_tail = NULL;
        pthread_mutex_unlock(&mu);

        if (atomic_load(&j->state) == JOB_QUEUED) {
            if (!python_usable()) {
                j->rc = PB_ENOGIL;
            } else {
                /* Blocks until the GIL is ours; the loop's timer may give up meanwhile. */
                PyGILState_STATE g = PyGILState_Ensure();
                int expect = JOB_QUEUED;
                if (atomic_compare_exchange_strong(&j->state, &expect, JOB_RUNNING)) {
                    j->fn(j->arg);
                    if (PyErr_Occurred())
                        PyErr_Clear();
                }
                PyGILState_Release(g);
            }
            int expect = JOB_RUNNING;
            if (!atomic_compare_exchange_strong(&j->state, &expect, JOB_DONE) && j->rc) {
                expect = JOB_QUEUED;
                atomic_compare_exchange_strong(&j->state, &expect, JOB_DONE);
            }
            if (j->sync) {
                pthread_mutex_lock(&mu);
                j->finished = 1;
                pthread_cond_broadcast(&cv);
                pthread_mutex_unlock(&mu);
            } else if (atomic_load(&j->state) == JOB_DONE) {
                atomic_fetch_add(&j->refs, 1);
                pthread_mutex_lock(&mu);
                j->next = done_head;
                done_head = j;
                pthread_mutex_unlock(&mu);
                uv_async_send(&done_async);
            }
        }
        job_unref(j);
    }
    return NULL;
}

/* Loop thread: deliver completed jobs. */
static void on_done(uv_async_t *a)
{
    (void)a;
    pthread_mutex_lock(&mu);
    struct job *list = done_head;
    done_head = NULL;
    pthread_mutex_unlock(&mu);
    while (list) {
        struct job *j = list;
        list = j->next;
        uv_timer_stop(&j->timer);
        j->done(j->arg, j->rc);
        uv_close((uv_handle_t *)&j->timer, on_timer_closed);
        job_unref(j); /* the reference taken for the done list */
    }
}

static void on_timeout(uv_timer_t *t)
{
    struct job *j = t->data;
    int expect = JOB_QUEUED;
    if (atomic_compare_exchange_strong(&j->state, &expect, JOB_TIMEDOUT)) {
        j->done(j->arg, PB_ETIMEDOUT);
        uv_close((uv_handle_t *)&j->timer, on_timer_closed);
    }
    /* JOB_RUNNING: it holds the GIL now and will finish; on_done delivers it. */
}

static void enqueue(struct job *j)
{
    pthread_mutex_lock(&mu);
    if (queue_tail)
        queue_tail->next = j;
    else
        queue_head = j;
    queue_tail = j;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

int probe_gil_submit(probe_gil_fn fn, probe_gil_done done, void *arg, int timeout_ms)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->fn = fn;
    j->done = done;
    j->arg = arg;
    atomic_init(&j->state, JOB_QUEUED);
    atomic_init(&j->refs, 2);
    uv_timer_init(probe_agent_loop(), &j->timer);
    j->timer.data = j;
    uv_timer_start(&j->timer, on_timeout, (uint64_t)(timeout_ms > 0 ? timeout_ms : 1), 0);
    enqueue(j);
    return 0;
}

int probe_gil_call(probe_gil_fn fn, void *arg, int timeout_ms)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->fn = fn;
    j->arg = arg;
    j->sync = 1;
    atomic_init(&j->state, JOB_QUEUED);
    atomic_init(&j->refs, 2);
    enqueue(j);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    int rc = 0;
    pthread_mutex_lock(&mu);
    while (!j->finished && rc == 0)
        rc = pthread_cond_timedwait(&cv, &mu, &dl);
    if (!j->finished) {
        int expect = JOB_QUEUED;
        if (atomic_compare_exchange_strong(&j->state, &expect, JOB_TIMEDOUT)) {
            pthread_mutex_unlock(&mu);
            job_unref(j);
            return PB_ETIMEDOUT;
        }
        /* It started under the GIL just now: it is bounded work, wait for it. */
        while (!j->finished)
            pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
    rc = j->rc;
    job_unref(j);
    return rc;
}

unsigned long probe_worker_ident(void)
{
    return atomic_load(&worker_ident);
}

int probe_worker_start(uv_loop_t *loop, struct pb_err *err)
{
    uv_async_init(loop, &done_async, on_done);
    int rc = probe_thread_start(&worker_thread, worker_main, 0);
    if (rc < 0)
        return pb_err_set(err, rc, "pthread_create: %s", strerror(-rc));
    return 0;
}
