/* SPDX-License-Identifier: MIT */
/* The GIL worker: a thread that takes the GIL (PyGILState_Ensure) to run jobs for the loop.
 * The loop arms a timer per job; whichever comes first, the job starting under the GIL or the
 * timer, wins (an atomic state decides), so a GIL held forever by someone else costs a timeout
 * answer, never a blocked loop. Completions come back to the loop through a uv_async.
 *
 * A job that never returns (code evaluated in the target blocking in native code, such as
 * threading.Event().wait()) must not take every later job with it. When a job's time is up while
 * the active worker runs another job (not while it waits for the GIL), that worker is retired:
 * it takes no more jobs and its thread ends when its call returns (its answer still goes out if
 * its client waits), and a fresh worker takes the queue; the waiting job gets its time again.
 * At most MAX_WORKERS threads exist at once; past that, jobs time out and the answer says what
 * the evaluator is busy with (gil_worker_busy_text).
 *
 * While the debugger holds the target stopped (gil_worker_poll_when), its Python threads are
 * parked and the GIL is free: a job takes it at once, and a client sends its next request a
 * fraction of a millisecond after an answer. Then the worker looks for the next job, and the
 * loop for the job's completion, for at most POLL_US (yielding the CPU between looks) before
 * they sleep, rather than being woken: a wake-up costs 25-35 us on a VM (an interrupt to a
 * halted CPU), two per request. A running target is never polled for. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "core/inbox.h"
#include "gil.h"
#include "pyrt/pyrt.h"

#define MAX_WORKERS PROBE_MAX_WORKERS
#define POLL_US 300

enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE, JOB_TIMEDOUT };

struct job {
    probe_gil_fn fn;
    probe_gil_done done;
    void *arg;
    atomic_int state;
    atomic_int refs; /* the loop's (until its timer closed) and the worker's */
    int rc;
    int sync; /* gil_call: completion through `finished` + cv, no timer */
    int finished;
    int timeout_ms;
    int rest_ms; /* async: its time left after the timer's next firing, a budget check (loop) */
    struct probe_hurry hurry; /* lowering the switch interval while its worker waits */
    uv_timer_t timer;
    struct probe_link link; /* in the queue, then in the done inbox */
};

/* One worker thread. Fields other than ident are guarded by mu. */
struct worker {
    int used;        /* the slot holds a thread (starting, working or retired) */
    int retired;     /* takes no more jobs; its thread ends after the current one */
    int busy;        /* runs a job's function (it holds or has held the GIL for it) */
    double since_ms; /* when that job started */
    char what[160];  /* what that job does, for "busy with ..." */
    atomic_ulong ident;
    /* Its own thread state kept between jobs while polling (worker thread only): see
     * run_job. */
    PyThreadState *kept;
    PyGILState_STATE kept_g;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct probe_fifo queue;
static struct probe_inbox done_inbox = {.mu = PTHREAD_MUTEX_INITIALIZER};
static struct worker workers[MAX_WORKERS];
static struct worker *active;   /* the one that takes jobs; under mu */
static struct worker *starting; /* handed to the thread being started; under mu */
static _Thread_local struct worker *self;
static int (*poll_when)(void); /* set before the loop runs; NULL: never poll */
static atomic_int nqueued;     /* jobs in the queue */
static atomic_int ninflight;   /* jobs submitted whose done has not been called */
static atomic_int nposted;     /* completions in done_inbox, not delivered yet */
static uv_prepare_t poll_prep; /* the loop's look for completions before it sleeps */
static int poll_fresh;         /* loop only: a job was submitted since the last look */
static int poll_prep_ready;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* 1 once *v is non-zero, 0 after POLL_US without. */
static int poll_for(atomic_int *v)
{
    double end = now_ms() + POLL_US / 1e3;
    while (atomic_load(v) == 0) {
        if (now_ms() > end)
            return 0;
        sched_yield();
    }
    return 1;
}

static int polling(void)
{
    return poll_when && poll_when();
}

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

void gil_worker_activity(const char *fmt, ...)
{
    struct worker *w = self;
    if (!w)
        return;
    char buf[sizeof w->what];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    memcpy(w->what, buf, sizeof buf);
    pthread_mutex_unlock(&mu);
}

/* Runs j on this worker: the GIL, then j->fn unless the job timed out meanwhile. */
static void run_job(struct worker *w, struct job *j)
{
    if (!python_usable()) {
        j->rc = PB_ENOGIL;
    } else {
        /* Blocks until the GIL is ours; the loop's timer may give up meanwhile (and stops the
         * hurry: if that came first, the job's state says so and it stops here). */
        pyrt_gil_note(1); /* who holds it as we ask: a snapshot under it reports them */
        gil_hurry_begin(&j->hurry);
        if (atomic_load(&j->state) != JOB_QUEUED)
            gil_hurry_stop(&j->hurry);
        /* The thread state kept from the last job (polling: the target stopped), unless the
         * interpreter has since been finalised (and initialised again). */
        PyGILState_STATE g = PyGILState_UNLOCKED;
        PyThreadState *kept = w->kept;
        if (kept && PyGILState_GetThisThreadState() == kept)
            PyEval_RestoreThread(kept);
        else
            kept = w->kept = NULL, g = PyGILState_Ensure();
        gil_hurry_end(&j->hurry); /* under the GIL: sys.setswitchinterval cannot run */
        int expect = JOB_QUEUED;
        if (atomic_compare_exchange_strong(&j->state, &expect, JOB_RUNNING)) {
            pthread_mutex_lock(&mu);
            w->busy = 1;
            w->since_ms = now_ms();
            snprintf(w->what, sizeof w->what, "a request");
            pthread_mutex_unlock(&mu);
            j->fn(j->arg);
            if (PyErr_Occurred())
                PyErr_Clear();
            pthread_mutex_lock(&mu);
            w->busy = 0;
            pthread_mutex_unlock(&mu);
        }
        pyrt_gil_note(0);
        pthread_mutex_lock(&mu);
        int retired = w->retired;
        pthread_mutex_unlock(&mu);
        /* Polling (the target stopped), keep this thread state for the next job: taking the
         * GIL is then PyEval_RestoreThread, not a thread state made and destroyed per job
         * (with the first Python call's frame stack, an mmap and munmap: 20-25 us a job).
         * Dropped at the end of the first job after the stop (the debugger's clean-up at a
         * detach is one) and by a retired worker. */
        if (!retired && polling()) {
            if (!kept) {
                w->kept = PyThreadState_Get();
                w->kept_g = g;
            }
            PyEval_SaveThread();
        } else {
            w->kept = NULL;
            PyGILState_Release(kept ? w->kept_g : g);
        }
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
        atomic_fetch_add(&nposted, 1);
        core_inbox_post(&done_inbox, &j->link);
    }
}

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    struct worker *w = starting;
    starting = NULL;
    atomic_store(&w->ident, (unsigned long)pthread_self());
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    self = w;
    for (;;) {
        if (polling())
            poll_for(&nqueued);
        pthread_mutex_lock(&mu);
        while (!w->retired && !queue.head)
            pthread_cond_wait(&cv, &mu);
        if (w->retired) {
            atomic_store(&w->ident, 0);
            w->used = 0;
            pthread_mutex_unlock(&mu);
            PB_LOG(PB_LOG_INFO, "a retired GIL worker ended: its call returned");
            return NULL;
        }
        struct job *j = PROBE_CONTAINER(core_fifo_pop(&queue), struct job, link);
        atomic_fetch_sub(&nqueued, 1);
        pthread_mutex_unlock(&mu);
        if (atomic_load(&j->state) == JOB_QUEUED)
            run_job(w, j);
        job_unref(j);
    }
}

/* Starts a worker thread in a free slot and makes it the active one. mu held. Returns 0 or a
 * negative code (no free slot: -EAGAIN). */
static int spawn_locked(void)
{
    struct worker *w = NULL;
    for (int i = 0; i < MAX_WORKERS && !w; i++)
        if (!workers[i].used)
            w = &workers[i];
    if (!w || starting)
        return -EAGAIN;
    memset(w, 0, sizeof *w);
    w->used = 1;
    starting = w;
    pthread_t t;
    int rc = core_thread_start(&t, worker_main, 1);
    if (rc < 0) {
        starting = NULL;
        w->used = 0;
        return rc;
    }
    while (starting == w) /* it takes its slot first: the next spawn needs `starting` */
        pthread_cond_wait(&cv, &mu);
    active = w;
    return 0;
}

/* j has waited its time in the queue. If that is because the active worker runs another job,
 * retire that worker and start a fresh one, which takes j: returns 1 (j waits again). Returns
 * 0 when the worker is rather waiting for the GIL, or no thread can be started. Any thread. */
static int take_over(struct job *j)
{
    int rc = 0;
    pthread_mutex_lock(&mu);
    struct worker *old = active;
    if (atomic_load(&j->state) == JOB_QUEUED && old && old->busy) {
        if (spawn_locked() == 0) {
            old->retired = 1;
            pthread_cond_broadcast(&cv);
            PB_LOG(PB_LOG_WARN,
                   "the GIL worker has been busy with %s for %.0f ms: retired, "
                   "a fresh one takes the queue",
                   old->what, now_ms() - old->since_ms);
            rc = 1;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Loop thread: deliver a completed job. */
static void on_done(struct probe_link *l)
{
    struct job *j = PROBE_CONTAINER(l, struct job, link);
    atomic_fetch_sub(&nposted, 1);
    atomic_fetch_sub(&ninflight, 1);
    uv_timer_stop(&j->timer);
    j->done(j->arg, j->rc);
    uv_close((uv_handle_t *)&j->timer, on_timer_closed);
    job_unref(j); /* the reference taken for the done inbox */
}

/* A job's wait of ms is cut at first to PROBE_HURRY_BUDGET_MS (the first budget check): the
 * first part, *rest the remainder. */
static int budget_first(int ms, int *rest)
{
    int first = ms > PROBE_HURRY_BUDGET_MS ? PROBE_HURRY_BUDGET_MS : ms;
    *rest = ms - first;
    return first;
}

/* At a budget check with *rest to go: the next part. In budget steps until j's wait has begun
 * (its hurry then stops), then the whole rest at the program's interval. */
static int budget_next(struct job *j, int *rest)
{
    int step = *rest;
    if (!gil_hurry_expire(&j->hurry) && step > PROBE_HURRY_BUDGET_MS)
        step = PROBE_HURRY_BUDGET_MS;
    *rest -= step;
    return step;
}

static void on_timeout(uv_timer_t *t);

/* Loop thread: j's timer for ms, in budget steps at first. */
static void arm(struct job *j, int ms)
{
    uv_timer_start(&j->timer, on_timeout, (uint64_t)budget_first(ms, &j->rest_ms), 0);
}

static void on_timeout(uv_timer_t *t)
{
    struct job *j = t->data;
    if (j->rest_ms) { /* a budget check */
        uv_timer_start(&j->timer, on_timeout, (uint64_t)budget_next(j, &j->rest_ms), 0);
        return;
    }
    if (take_over(j)) {
        arm(j, j->timeout_ms);
        return;
    }
    int expect = JOB_QUEUED;
    if (atomic_compare_exchange_strong(&j->state, &expect, JOB_TIMEDOUT)) {
        gil_hurry_stop(&j->hurry); /* its worker may still wait: no longer in a hurry */
        atomic_fetch_sub(&ninflight, 1);
        j->done(j->arg, PB_ETIMEDOUT);
        uv_close((uv_handle_t *)&j->timer, on_timer_closed);
    }
    /* JOB_RUNNING: it holds the GIL now and will finish; on_done delivers it. */
}

static void enqueue(struct job *j)
{
    pthread_mutex_lock(&mu);
    core_fifo_push(&queue, &j->link);
    atomic_fetch_add(&nqueued, 1);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

int gil_submit(probe_gil_fn fn, probe_gil_done done, void *arg, int timeout_ms)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->fn = fn;
    j->done = done;
    j->arg = arg;
    j->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    atomic_init(&j->state, JOB_QUEUED);
    atomic_init(&j->refs, 2);
    uv_timer_init(core_agent_loop(), &j->timer);
    j->timer.data = j;
    arm(j, j->timeout_ms);
    atomic_fetch_add(&ninflight, 1);
    poll_fresh = 1;
    enqueue(j);
    return 0;
}

static void deadline_in(struct timespec *dl, int timeout_ms)
{
    clock_gettime(CLOCK_REALTIME, dl);
    dl->tv_sec += timeout_ms / 1000;
    dl->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (dl->tv_nsec >= 1000000000) {
        dl->tv_sec++;
        dl->tv_nsec -= 1000000000;
    }
}

int gil_call(probe_gil_fn fn, void *arg, int timeout_ms)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j)
        return -ENOMEM;
    j->fn = fn;
    j->arg = arg;
    j->sync = 1;
    j->timeout_ms = timeout_ms;
    atomic_init(&j->state, JOB_QUEUED);
    atomic_init(&j->refs, 2);
    enqueue(j);
    int rest;
    struct timespec dl;
    deadline_in(&dl, budget_first(timeout_ms, &rest));
    int rc = 0;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!j->finished && rc == 0)
            rc = pthread_cond_timedwait(&cv, &mu, &dl);
        if (j->finished || rc != ETIMEDOUT)
            break;
        pthread_mutex_unlock(&mu);
        if (rest > 0) { /* a budget check */
            int step = budget_next(j, &rest);
            pthread_mutex_lock(&mu);
            deadline_in(&dl, step);
            rc = 0;
            continue;
        }
        int again = take_over(j);
        pthread_mutex_lock(&mu);
        if (!again)
            break;
        deadline_in(&dl, budget_first(timeout_ms, &rest));
        rc = 0;
    }
    if (!j->finished) {
        int expect = JOB_QUEUED;
        if (atomic_compare_exchange_strong(&j->state, &expect, JOB_TIMEDOUT)) {
            pthread_mutex_unlock(&mu);
            gil_hurry_stop(&j->hurry);
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

unsigned long gil_worker_ident(void)
{
    pthread_mutex_lock(&mu);
    unsigned long id = active ? atomic_load(&active->ident) : 0;
    pthread_mutex_unlock(&mu);
    return id;
}

int gil_worker_owns(unsigned long ident)
{
    if (!ident)
        return 0;
    for (int i = 0; i < MAX_WORKERS; i++)
        if (atomic_load(&workers[i].ident) == ident)
            return 1;
    return 0;
}

int gil_worker_count(void)
{
    int n = 0;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_WORKERS; i++)
        n += workers[i].used;
    pthread_mutex_unlock(&mu);
    return n;
}

int gil_worker_busy_text(unsigned long holder, char *buf, size_t n)
{
    int found = 0, stuck = 0;
    pthread_mutex_lock(&mu);
    struct worker *w = active && active->busy ? active : NULL;
    for (int i = 0; i < MAX_WORKERS; i++) {
        struct worker *x = &workers[i];
        if (x->used && x->busy && x != active)
            stuck++;
        if (holder && x->used && atomic_load(&x->ident) == holder && x->busy)
            w = x;
    }
    if (w) {
        char more[64] = "";
        if (stuck)
            snprintf(more, sizeof more, "; %d earlier %s never returned", stuck,
                     stuck == 1 ? "one" : "ones");
        snprintf(buf, n, "the probe's evaluator is busy with %s (for %.1f s%s)", w->what,
                 (now_ms() - w->since_ms) / 1e3, more);
        found = 1;
    }
    pthread_mutex_unlock(&mu);
    return found;
}

static void close_poll_prep(void)
{
    if (poll_prep_ready) {
        poll_prep_ready = 0;
        uv_close((uv_handle_t *)&poll_prep, NULL);
    }
}

/* Loop thread, before it sleeps: a job in flight while polling is on may finish within
 * POLL_US; deliver it now rather than after a wake-up. */
static void on_poll_prep(uv_prepare_t *h)
{
    (void)h;
    if (!poll_fresh) /* once per job: a long one is not looked for at every wake-up */
        return;
    poll_fresh = 0;
    if (atomic_load(&ninflight) > 0 && polling() && poll_for(&nposted) && done_inbox.held == 0)
        core_inbox_drain(&done_inbox);
}

void gil_worker_poll_when(int (*pred)(void))
{
    poll_when = pred;
}

int gil_worker_start(uv_loop_t *loop, struct pb_err *err)
{
    core_inbox_init(&done_inbox, loop, on_done);
    if (uv_prepare_init(loop, &poll_prep) == 0) {
        poll_prep_ready = 1;
        uv_prepare_start(&poll_prep, on_poll_prep);
        uv_unref((uv_handle_t *)&poll_prep); /* never keeps the loop alive */
    }
    pthread_mutex_lock(&mu);
    int rc = spawn_locked();
    pthread_mutex_unlock(&mu);
    if (rc < 0) {
        core_inbox_close(&done_inbox);
        close_poll_prep();
        return pb_err_set(err, rc, "pthread_create: %s", strerror(-rc));
    }
    return 0;
}

void gil_worker_stop(void)
{
    pthread_mutex_lock(&mu);
    if (active) {
        active->retired = 1; /* it ends at once: no job was ever queued */
        active = NULL;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    core_inbox_close(&done_inbox);
    close_poll_prep();
}
