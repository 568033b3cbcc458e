/* SPDX-License-Identifier: MIT */
/* Evaluating code in the target: dbg_eval_run() runs on the worker under the GIL, in
 * __main__ or in a stopped thread's frame, swaps sys.stdout/stderr for capturing stand-ins
 * (pyhelper.c) and restores the very same objects in C afterwards, where no asynchronous
 * exception can interrupt the restore. In a frame, locals are a write-through proxy on 3.13 and
 * a synced f_locals dict written back to the fast locals before (so assignments stick, as for
 * setVariable). Interrupts (gil_eval_interrupt) come from a short-lived thread that takes the
 * GIL and raises KeyboardInterrupt in the evaluating workers' threads only, and only while an
 * evaluation runs. Evaluations run one at a time, except when one is stuck in a call that never
 * returns and a fresh worker goes on beside it (worker.c): one pair of stand-in streams then
 * serves both, each thread's writes captured for its own evaluation. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <stdio.h>

#include <frameobject.h>

#include "core/core.h"
#include "pyhelper.h"
#include "pyrt/repr.h"
#include "core/settings.h"
#include "gil.h"

/* The threads evaluating now: one per worker at most (several when one is stuck in a call that
 * never returns, worker.c). Written by the evaluating worker and read by the interrupter, both
 * with the GIL held; eval_running counts them for a check without the GIL. */
static struct {
    unsigned long ident;
    _Atomic int tid;    /* the kernel's id of the evaluating thread, 0 when none */
    int interrupt_sent; /* set by the interrupter, cleared by the evaluating worker */
} evals[PROBE_MAX_WORKERS];
static atomic_int eval_running;
static atomic_int interrupter_busy;

/* The stand-ins for sys.stdout/stderr (pyhelper's Stream pair, made once and kept for good) and
 * the streams they replaced while at least one evaluation runs (stream_users). GIL held. */
static PyObject *our_out, *our_err, *real_out, *real_err;
static int stream_users;

/* Puts the stand-ins in place for one more evaluation; the first remembers the real streams
 * (exactly those go back when the last one ends, whatever the code does). 0 or -1 with a
 * Python exception set. Requires GIL. */
static int streams_acquire(void)
{
    if (!our_out) {
        PyObject *mk = gil_pyhelper_get("streams");
        PyObject *pair = mk ? PyObject_CallObject(mk, NULL) : NULL;
        if (!pair)
            return -1;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_RuntimeError, "streams() did not give a pair");
            return -1;
        }
        if (!our_out) { /* (the call above may have let another evaluation make them) */
            our_out = PyTuple_GET_ITEM(pair, 0);
            our_err = PyTuple_GET_ITEM(pair, 1);
            Py_INCREF(our_out);
            Py_INCREF(our_err);
        }
        Py_DECREF(pair);
    }
    if (stream_users++ == 0) {
        real_out = PySys_GetObject("stdout"); /* borrowed */
        real_err = PySys_GetObject("stderr");
        Py_XINCREF(real_out);
        Py_XINCREF(real_err);
        if (PyObject_SetAttrString(our_out, "_real", real_out ? real_out : Py_None) < 0 ||
            PyObject_SetAttrString(our_err, "_real", real_err ? real_err : Py_None) < 0)
            PyErr_Clear();
    }
    PySys_SetObject("stdout", our_out);
    PySys_SetObject("stderr", our_err);
    return 0;
}

/* One evaluation fewer: the last puts the real streams back; while others run, the stand-ins
 * stay (put back if this evaluation's code replaced them). Requires GIL. */
static void streams_release(void)
{
    if (--stream_users == 0) {
        PyObject *o = real_out, *e = real_err;
        real_out = real_err = NULL;
        PySys_SetObject("stdout", o);
        PySys_SetObject("stderr", e);
        Py_XDECREF(o);
        Py_XDECREF(e);
    } else {
        PySys_SetObject("stdout", our_out);
        PySys_SetObject("stderr", our_err);
    }
    PyErr_Clear();
}

/* The slot of this thread's evaluation, taken (ident 0: a free one) or -1. Requires GIL. */
static int eval_slot(unsigned long ident)
{
    for (int i = 0; i < PROBE_MAX_WORKERS; i++)
        if (evals[i].ident == ident)
            return i;
    return -1;
}

/* Copies an outcome tuple of the helper's run() or show() into r; the value object of a
 * ("value", obj) outcome goes to *value (new reference). Requires GIL. */
static void take_outcome(PyObject *res, struct probe_eval_result *r, PyObject **value)
{
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) < 1)
        return;
    char *kind = gil_py_strdup(PyTuple_GET_ITEM(res, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(res);
    if (kind && strcmp(kind, "value") == 0 && n == 2) {
        *value = PyTuple_GET_ITEM(res, 1);
        Py_INCREF(*value);
    } else if (kind && strcmp(kind, "value") == 0 && n == 3) {
        r->value = gil_py_strdup(PyTuple_GET_ITEM(res, 1));
        r->type = gil_py_strdup(PyTuple_GET_ITEM(res, 2));
    } else if (kind && strcmp(kind, "error") == 0 && n == 3) {
        r->exc_type = gil_py_strdup(PyTuple_GET_ITEM(res, 1));
        r->traceback = gil_py_strdup(PyTuple_GET_ITEM(res, 2));
    } else if (kind && strcmp(kind, "complete") == 0 && n == 2) {
        r->complete = PyObject_IsTrue(PyTuple_GET_ITEM(res, 1)) == 1;
    }
    free(kind);
}

/* Copies the helper's end() output [(is_err, text), ...], truncated into r. Requires GIL. */
/* The outcome of a helper call that returns no value to keep (res: new reference or NULL with
 * an exception set), into r. Returns 0, or a negative code with err when the call failed. */
static int take_answer(PyObject *res, struct probe_eval_result *r, struct pb_err *err)
{
    if (!res)
        return gil_py_fail(err, "eval");
    PyObject *unused = NULL;
    take_outcome(res, r, &unused);
    Py_XDECREF(unused);
    Py_DECREF(res);
    return 0;
}

static void take_output(PyObject *o, struct probe_eval_result *r)
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2 || !PyList_Check(PyTuple_GET_ITEM(o, 0)))
        return;
    PyObject *list = PyTuple_GET_ITEM(o, 0);
    r->output_truncated = PyObject_IsTrue(PyTuple_GET_ITEM(o, 1)) == 1;
    Py_ssize_t n = PyList_GET_SIZE(list);
    r->chunks = calloc((size_t)n + 1, sizeof *r->chunks);
    if (!r->chunks)
        return;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = PyList_GET_ITEM(list, i);
        if (!PyTuple_Check(c) || PyTuple_GET_SIZE(c) != 2)
            continue;
        char *text = gil_py_strdup(PyTuple_GET_ITEM(c, 1));
        if (!text)
            continue;
        r->chunks[r->nchunks].is_stderr = PyObject_IsTrue(PyTuple_GET_ITEM(c, 0)) == 1;
        r->chunks[r->nchunks++].text = text;
    }
    PyErr_Clear();
}

/* Shows *value in r: a tensor in an expression (a watch, a hover) by shape, dtype and device
 * without touching its data; anything else with the helper's show() (repr, user code, so it
 * runs captured like the code). *value is released when show() fails. Requires GIL. */
static int show_value(PyObject *show, int mode, PyObject **value, struct probe_eval_result *r,
                      struct pb_err *err)
{
    if (mode == PROBE_EVAL_EXPRESSION && pyrt_repr_is_tensor(*value)) {
        r->value = pyrt_repr_new(*value);
        r->type = pyrt_repr_typename(*value);
        return 0;
    }
    int rc = take_answer(PyObject_CallFunctionObjArgs(show, *value, NULL), r, err);
    if (rc < 0)
        return rc;
    if (r->exc_type)
        Py_CLEAR(*value);
    return 0;
}

/* An interrupt that arrived after the code finished must not hit anything else: let it fire
 * in a call of our own and swallow it. (Clearing it with PyThreadState_SetAsyncExc(id, NULL)
 * would leave the interpreter's "async exception pending" signal set for good on 3.8-3.12: the
 * eval breaker then trips at every check in every thread, and on 3.11 a tripped breaker skips
 * the trace function's call events, so breakpoints stop working.) Requires GIL. */
static void drain_interrupt(void)
{
    PyObject *drain = gil_pyhelper_get("drain");
    PyObject *r = drain ? PyObject_CallObject(drain, NULL) : NULL;
    Py_XDECREF(r);
    PyErr_Clear();
}

/* Runs src (mode PROBE_EVAL_STATEMENTS or _EXPRESSION) with globals g and locals l (NULL: g),
 * the evaluating thread's output captured into r. *value gets the result object (new
 * reference; NULL for None, statements, or an exception, which is in r). Requires GIL. */
static int run_captured(const char *src, int mode, PyObject *g, PyObject *l,
                        struct probe_eval_result *r, PyObject **value, struct pb_err *err)
{
    PyObject *run = gil_pyhelper_get("run"), *begin = gil_pyhelper_get("begin");
    PyObject *end = gil_pyhelper_get("end"), *show = gil_pyhelper_get("show");
    *value = NULL;
    if (!run || !begin || !end || !show)
        return gil_py_fail(err, "eval set-up");
    char what[80]; /* short: it goes into one-line errors of at most 255 bytes */
    size_t wn = strcspn(src, "\n");
    snprintf(what, sizeof what, "evaluating `%.*s%s`", (int)(wn > 44 ? 44 : wn), src,
             wn > 44 || src[wn] ? " ..." : "");
    gil_worker_activity("%s", what);
    PyObject *cap = PyObject_CallObject(begin, NULL);
    if (!cap)
        return gil_py_fail(err, "eval set-up");
    if (streams_acquire() < 0) {
        int rc = gil_py_fail(err, "eval set-up");
        Py_XDECREF(PyObject_CallFunctionObjArgs(end, cap, NULL));
        PyErr_Clear();
        Py_DECREF(cap);
        return rc;
    }
    /* Taken after the calls above, which may let another evaluation run (and take a slot). */
    int slot = eval_slot(0);
    if (slot < 0) { /* cannot be: one evaluation per worker */
        streams_release();
        Py_XDECREF(PyObject_CallFunctionObjArgs(end, cap, NULL));
        PyErr_Clear();
        Py_DECREF(cap);
        return pb_err_set(err, PB_EUNKNOWN, "too many evaluations at once");
    }
    evals[slot].ident = (unsigned long)pthread_self();
    evals[slot].interrupt_sent = 0;
    atomic_store(&evals[slot].tid, (int)syscall(SYS_gettid));
    atomic_fetch_add(&eval_running, 1);
    /* User code (and its repr) runs with the target's signal mask: threads it starts are
     * sampled and get the host's signals like any other (issue 15, item 7). */
    sigset_t mask;
    core_thread_user_enter(&mask);
    PyObject *res = PyObject_CallFunction(run, "siOO", src, mode, g, l ? l : Py_None);
    int rc = 0;
    if (res)
        take_outcome(res, r, value);
    else
        rc = gil_py_fail(err, "eval"); /* e.g. interrupted inside the helper itself */
    Py_XDECREF(res);
    if (rc == 0 && *value)
        rc = show_value(show, mode, value, r, err);
    core_thread_user_leave(&mask);
    int sent = evals[slot].interrupt_sent;
    atomic_store(&evals[slot].tid, 0);
    evals[slot].ident = 0;
    evals[slot].interrupt_sent = 0;
    atomic_fetch_sub(&eval_running, 1);
    if (sent)
        drain_interrupt();
    if (rc < 0)
        Py_CLEAR(*value);
    streams_release();
    PyObject *o = PyObject_CallFunctionObjArgs(end, cap, NULL);
    if (o)
        take_output(o, r);
    Py_XDECREF(o);
    PyErr_Clear();
    Py_DECREF(cap);
    return rc;
}

int gil_eval_frame_ns(PyObject *f, PyObject **g, PyObject **l, struct pb_err *err)
{
    PyFrameObject *fr = (PyFrameObject *)f;
    *g = *l = NULL;
#if PY_VERSION_HEX >= 0x030B0000
    *g = PyFrame_GetGlobals(fr);
    *l = *g ? PyFrame_GetLocals(fr) : NULL; /* 3.11, 3.12: synced from the fast locals */
#else
    if (PyFrame_FastToLocalsWithError(fr) == 0) {
        *g = fr->f_globals;
        *l = fr->f_locals;
        Py_XINCREF(*g);
        Py_XINCREF(*l);
    }
#endif
    if (!*g || !*l) {
        Py_CLEAR(*g);
        Py_CLEAR(*l);
        if (PyErr_Occurred())
            return gil_py_fail(err, "reading the frame's locals");
        return pb_err_set(err, PB_EUNKNOWN, "the frame has no locals");
    }
    return 0;
}

void gil_eval_frame_commit(PyObject *f, PyObject *g, PyObject *l)
{
#if PY_VERSION_HEX < 0x030D0000
    /* A module or class body's locals are its namespace itself: nothing to copy back. With
     * clear 0 a name deleted from the dict keeps its fast value (a cleared fast local could be
     * one the interpreter relies on, such as a comprehension's hidden variable). */
    if (l != g && PyDict_Check(l)) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyFrame_LocalsToFast((PyFrameObject *)f, 0);
        PyErr_Clear();
        PyErr_Restore(t, v, tb);
    }
#else
    (void)f;
    (void)g;
    (void)l;
#endif
}

int gil_eval_check(const char *src, struct probe_eval_result *r, struct pb_err *err)
{
    memset(r, 0, sizeof *r);
    PyObject *run = gil_pyhelper_get("run");
    return take_answer(
        run ? PyObject_CallFunction(run, "siOO", src, PROBE_EVAL_CHECK, Py_None, Py_None) : NULL, r,
        err);
}

int gil_eval_ns(const char *src, int mode, PyObject *g, PyObject *l, struct probe_eval_result *r,
                PyObject **value, struct pb_err *err)
{
    return run_captured(src, mode, g, l, r, value, err);
}

int gil_eval_value(const char *src, PyObject *frame, struct probe_eval_result *r, PyObject **value,
                   struct pb_err *err)
{
    PyObject *g = NULL, *l = NULL;
    memset(r, 0, sizeof *r);
    *value = NULL;
    if (frame) {
        if (gil_eval_frame_ns(frame, &g, &l, err) < 0)
            return err->code;
    } else {
        PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
        g = main_mod ? PyModule_GetDict(main_mod) : NULL;    /* borrowed */
        if (!g)
            return gil_py_fail(err, "eval set-up");
        Py_INCREF(g);
    }
    int rc = run_captured(src, PROBE_EVAL_EXPRESSION, g, l, r, value, err);
    Py_XDECREF(l);
    Py_XDECREF(g);
    PyErr_Clear();
    return rc;
}

/* The interrupter: waits for the GIL (an evaluating worker gives it up every switch interval),
 * then raises KeyboardInterrupt in each worker thread that still evaluates. */
static void *interrupter_main(void *arg)
{
    (void)arg;
    PyGILState_STATE g = PyGILState_Ensure();
    for (int i = 0; i < PROBE_MAX_WORKERS; i++)
        if (evals[i].ident &&
            PyThreadState_SetAsyncExc(evals[i].ident, PyExc_KeyboardInterrupt) > 0)
            evals[i].interrupt_sent = 1;
    PyGILState_Release(g);
    atomic_store(&interrupter_busy, 0);
    return NULL;
}

int gil_eval_interrupt(void)
{
    if (!atomic_load(&eval_running) || !Py_IsInitialized())
        return 0;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&interrupter_busy, &expect, 1))
        return 1; /* one is already on its way */
    pthread_t t;
    int rc = core_thread_start(&t, interrupter_main, 1);
    if (rc < 0) {
        atomic_store(&interrupter_busy, 0);
        return rc;
    }
    return 1;
}

/* Whether thread tid of this process sits in a system call (not running): the kernel's
 * /proc/self/task/TID/syscall starts with a number then, "running" otherwise. The syscall's
 * number, or -1. */
static long blocked_in(int tid)
{
    char path[64], buf[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    long n = pb_read_file(path, buf, sizeof buf);
    if (n <= 0 || buf[0] < '0' || buf[0] > '9')
        return -1;
    return strtol(buf, NULL, 10);
}

long gil_eval_native_wait(void)
{
    if (!atomic_load(&eval_running))
        return -1;
    for (int i = 0; i < PROBE_MAX_WORKERS; i++) {
        int tid = atomic_load(&evals[i].tid);
        long nr = tid ? blocked_in(tid) : -1;
        /* futex: the GIL's own wait (or a lock's): the thread runs Python again soon after, or
         * is in a lock, which the interrupt does not end either; not told apart here (this
         * runs on the loop: one read, no waiting). */
        if (nr >= 0 && nr != SYS_futex && atomic_load(&evals[i].tid) == tid)
            return nr;
    }
    return -1;
}

int gil_eval_timeout_ms(void)
{
    return (int)core_setting_int("eval.timeout_ms");
}
