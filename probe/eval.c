/* SPDX-License-Identifier: MIT */
/* Evaluating code in the target: probe_eval_run() runs on the worker under the GIL, in
 * __main__ or in a stopped thread's frame, swaps sys.stdout/stderr for capturing stand-ins
 * (pyhelper.c) and restores the very same objects in C afterwards, where no asynchronous
 * exception can interrupt the restore. In a frame, locals are a write-through proxy on 3.13 and
 * a synced f_locals dict written back to the fast locals before (so assignments stick, as for
 * setVariable). Interrupts (probe_eval_interrupt) come from a short-lived thread that takes the
 * GIL and raises KeyboardInterrupt in the worker's thread only, and only while an evaluation
 * runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <frameobject.h>

#include "debug.h"
#include "internal.h"
#include "pyhelper.h"
#include "settings.h"

/* Set and cleared by the worker with the GIL held; read by the interrupter with the GIL held. */
static atomic_int eval_running;
static atomic_int interrupter_busy;
static atomic_int interrupt_sent; /* set by the interrupter, cleared by the worker (GIL held) */

/* Copies an outcome tuple of the helper's run() or show() into r; the value object of a
 * ("value", obj) outcome goes to *value (new reference). Requires GIL. */
static void take_outcome(PyObject *res, struct probe_eval_result *r, PyObject **value)
{
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) < 1)
        return;
    char *kind = probe_py_strdup(PyTuple_GET_ITEM(res, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(res);
    if (kind && strcmp(kind, "value") == 0 && n == 2) {
        *value = PyTuple_GET_ITEM(res, 1);
        Py_INCREF(*value);
    } else if (kind && strcmp(kind, "value") == 0 && n == 3) {
        r->value = probe_py_strdup(PyTuple_GET_ITEM(res, 1));
        r->type = probe_py_strdup(PyTuple_GET_ITEM(res, 2));
    } else if (kind && strcmp(kind, "error") == 0 && n == 3) {
        r->exc_type = probe_py_strdup(PyTuple_GET_ITEM(res, 1));
        r->traceback = probe_py_strdup(PyTuple_GET_ITEM(res, 2));
    } else if (kind && strcmp(kind, "complete") == 0 && n == 2) {
        r->complete = PyObject_IsTrue(PyTuple_GET_ITEM(res, 1)) == 1;
    }
    free(kind);
}

/* Copies the helper's end() output [(is_err, text), ...], truncated into r. Requires GIL. */
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
        char *text = probe_py_strdup(PyTuple_GET_ITEM(c, 1));
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
    if (mode == PROBE_EVAL_EXPRESSION && probe_dbgv_is_tensor(*value)) {
        r->value = probe_dbgv_display(*value);
        r->type = probe_dbgv_typename(*value);
        return 0;
    }
    PyObject *res = PyObject_CallFunctionObjArgs(show, *value, NULL);
    if (!res)
        return probe_py_fail(err, "eval");
    PyObject *unused = NULL;
    take_outcome(res, r, &unused);
    Py_XDECREF(unused);
    Py_DECREF(res);
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
    PyObject *drain = probe_pyhelper_get("drain");
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
    PyObject *run = probe_pyhelper_get("run"), *begin = probe_pyhelper_get("begin");
    PyObject *end = probe_pyhelper_get("end"), *show = probe_pyhelper_get("show");
    *value = NULL;
    if (!run || !begin || !end || !show)
        return probe_py_fail(err, "eval set-up");
    /* The streams as they are now: exactly these go back, whatever the code does. */
    PyObject *out0 = PySys_GetObject("stdout"), *err0 = PySys_GetObject("stderr"); /* borrowed */
    Py_XINCREF(out0);
    Py_XINCREF(err0);
    PyObject *cap = PyObject_CallFunction(begin, "OO", out0 ? out0 : Py_None,
                                          err0 ? err0 : Py_None);
    if (!cap || !PyTuple_Check(cap) || PyTuple_GET_SIZE(cap) != 3) {
        Py_XDECREF(cap);
        Py_XDECREF(out0);
        Py_XDECREF(err0);
        return probe_py_fail(err, "eval set-up");
    }
    PySys_SetObject("stdout", PyTuple_GET_ITEM(cap, 1));
    PySys_SetObject("stderr", PyTuple_GET_ITEM(cap, 2));
    atomic_store(&eval_running, 1);
    /* User code (and its repr) runs with the target's signal mask: threads it starts are
     * sampled and get the host's signals like any other (issue 15, item 7). */
    sigset_t mask;
    probe_thread_user_enter(&mask);
    PyObject *res = PyObject_CallFunction(run, "siOO", src, mode, g, l ? l : Py_None);
    int rc = 0;
    if (res)
        take_outcome(res, r, value);
    else
        rc = probe_py_fail(err, "eval"); /* e.g. interrupted inside the helper itself */
    Py_XDECREF(res);
    if (rc == 0 && *value)
        rc = show_value(show, mode, value, r, err);
    probe_thread_user_leave(&mask);
    atomic_store(&eval_running, 0);
    if (atomic_exchange(&interrupt_sent, 0))
        drain_interrupt();
    if (rc < 0)
        Py_CLEAR(*value);
    PySys_SetObject("stdout", out0);
    PySys_SetObject("stderr", err0);
    PyErr_Clear();
    PyObject *o = PyObject_CallFunctionObjArgs(end, PyTuple_GET_ITEM(cap, 0), NULL);
    if (o)
        take_output(o, r);
    Py_XDECREF(o);
    PyErr_Clear();
    Py_DECREF(cap);
    Py_XDECREF(out0);
    Py_XDECREF(err0);
    return rc;
}

int probe_eval_frame_ns(PyObject *f, PyObject **g, PyObject **l, struct pb_err *err)
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
            return probe_py_fail(err, "reading the frame's locals");
        return pb_err_set(err, PB_EUNKNOWN, "the frame has no locals");
    }
    return 0;
}

void probe_eval_frame_commit(PyObject *f, PyObject *g, PyObject *l)
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

/* The namespaces of frame_id (frame NULL: __main__'s globals, l NULL). *f, *g and *l are new
 * references. Requires GIL. */
static int namespaces(long long frame_id, PyObject **f, PyObject **g, PyObject **l,
                      struct pb_err *err)
{
    *f = *g = *l = NULL;
    if (frame_id < 0) {
        PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
        *g = main_mod ? PyModule_GetDict(main_mod) : NULL;  /* borrowed */
        if (!*g)
            return probe_py_fail(err, "eval set-up");
        Py_INCREF(*g);
        return 0;
    }
    /* Borrowed from the stop record, which the thread drops once it resumes: the code we run
     * may let it (it gives up the GIL), so hold the frame ourselves. */
    *f = probe_dbg_frame(frame_id, err);
    if (!*f)
        return err->code ? err->code : PB_ESTATE;
    Py_INCREF(*f);
    int rc = probe_eval_frame_ns(*f, g, l, err);
    if (rc < 0)
        Py_CLEAR(*f);
    return rc;
}

/* src as an expression that gives its value back for children's evaluateName: only a dotted
 * name (evaluating anything else again could differ or have effects). Borrowed or NULL. */
static const char *simple_expr(const char *src)
{
    const char *p = src + strspn(src, " \t");
    size_t n = strlen(p);
    if (n == 0 || n > 200 ||
        n != strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ||
        (p[0] >= '0' && p[0] <= '9') || p[0] == '.' || p[n - 1] == '.' || strstr(p, ".."))
        return NULL;
    return p;
}

int probe_eval_run(const char *src, int mode, long long frame_id, int refs,
                   struct probe_eval_result *r, struct pb_err *err)
{
    memset(r, 0, sizeof *r);
    if (mode == PROBE_EVAL_CHECK) {
        PyObject *run = probe_pyhelper_get("run");
        PyObject *res = run ? PyObject_CallFunction(run, "siOO", src, mode, Py_None, Py_None)
                            : NULL;
        if (!res)
            return probe_py_fail(err, "eval");
        PyObject *unused = NULL;
        take_outcome(res, r, &unused);
        Py_XDECREF(unused);
        Py_DECREF(res);
        return 0;
    }
    PyObject *f, *g, *l, *value = NULL;
    int rc = namespaces(frame_id, &f, &g, &l, err);
    if (rc < 0)
        return rc;
    unsigned long gen = probe_dbg_generation();
    rc = run_captured(src, mode, g, l, r, &value, err);
    /* Assignments stick, unless the thread resumed meanwhile (it runs the frame again now). */
    if (f && gen == probe_dbg_generation())
        probe_eval_frame_commit(f, g, l);
    if (rc == 0 && value && refs)
        r->var_ref = probe_dbgv_register(value, f, simple_expr(src), &r->indexed, &r->named);
    Py_XDECREF(value);
    Py_XDECREF(l);
    Py_XDECREF(g);
    Py_XDECREF(f);
    PyErr_Clear();
    return rc;
}

int probe_eval_value(const char *src, PyObject *frame, struct probe_eval_result *r,
                     PyObject **value, struct pb_err *err)
{
    PyObject *g = NULL, *l = NULL;
    memset(r, 0, sizeof *r);
    *value = NULL;
    if (frame) {
        if (probe_eval_frame_ns(frame, &g, &l, err) < 0)
            return err->code;
    } else {
        PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
        g = main_mod ? PyModule_GetDict(main_mod) : NULL;  /* borrowed */
        if (!g)
            return probe_py_fail(err, "eval set-up");
        Py_INCREF(g);
    }
    int rc = run_captured(src, PROBE_EVAL_EXPRESSION, g, l, r, value, err);
    Py_XDECREF(l);
    Py_XDECREF(g);
    PyErr_Clear();
    return rc;
}

/* The interrupter: waits for the GIL (the evaluating worker gives it up every switch
 * interval), then raises KeyboardInterrupt in the worker's thread if it still evaluates. */
static void *interrupter_main(void *arg)
{
    (void)arg;
    PyGILState_STATE g = PyGILState_Ensure();
    if (atomic_load(&eval_running) &&
        PyThreadState_SetAsyncExc(probe_worker_ident(), PyExc_KeyboardInterrupt) > 0)
        atomic_store(&interrupt_sent, 1);
    PyGILState_Release(g);
    atomic_store(&interrupter_busy, 0);
    return NULL;
}

int probe_eval_interrupt(void)
{
    if (!atomic_load(&eval_running) || !Py_IsInitialized())
        return 0;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&interrupter_busy, &expect, 1))
        return 1; /* one is already on its way */
    pthread_t t;
    int rc = probe_thread_start(&t, interrupter_main, 1);
    if (rc < 0) {
        atomic_store(&interrupter_busy, 0);
        return rc;
    }
    return 1;
}

int probe_eval_timeout_ms(void)
{
    return (int)probe_setting_int("eval.timeout_ms");
}
