/* SPDX-License-Identifier: MIT */
/* Evaluating code in the target: probe_eval_run() runs on the worker under the GIL, swaps
 * sys.stdout/stderr for capturing stand-ins (pyhelper.c) and restores the very same objects in
 * C afterwards, where no asynchronous exception can interrupt the restore. Interrupts
 * (probe_eval_interrupt) come from a short-lived thread that takes the GIL and raises
 * KeyboardInterrupt in the worker's thread only, and only while an evaluation runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pyhelper.h"
#include "settings.h"

/* Set and cleared by the worker with the GIL held; read by the interrupter with the GIL held. */
static atomic_int eval_running;
static atomic_int interrupter_busy;

/* A malloc'd UTF-8 copy of a str; NULL (exception cleared) if o is not one. Requires GIL. */
static char *dup_str(PyObject *o)
{
    Py_ssize_t n;
    const char *s = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, &n) : NULL;
    if (!s) {
        PyErr_Clear();
        return NULL;
    }
    char *d = malloc((size_t)n + 1);
    if (d) {
        memcpy(d, s, (size_t)n);
        d[n] = 0;
    }
    return d;
}

/* Turn the pending exception into err's text and clear it. Requires GIL. */
static int fail(struct pb_err *err, const char *what)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *t = NULL, *tb = NULL, *v = PyErr_GetRaisedException();
#else
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
#endif
    PyObject *s = v ? PyObject_Str(v) : NULL;
    char *m = dup_str(s);
    pb_err_set(err, PB_EUNKNOWN, "%s: %s", what, m ? m : "unknown Python error");
    free(m);
    Py_XDECREF(s);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
    return PB_EUNKNOWN;
}

/* Copies the helper's run() outcome tuple into r. Requires GIL. */
static void take_outcome(PyObject *res, struct probe_eval_result *r)
{
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) < 1)
        return;
    char *kind = dup_str(PyTuple_GET_ITEM(res, 0));
    Py_ssize_t n = PyTuple_GET_SIZE(res);
    if (kind && strcmp(kind, "value") == 0 && n == 3) {
        r->value = dup_str(PyTuple_GET_ITEM(res, 1));
        r->type = dup_str(PyTuple_GET_ITEM(res, 2));
    } else if (kind && strcmp(kind, "error") == 0 && n == 3) {
        r->exc_type = dup_str(PyTuple_GET_ITEM(res, 1));
        r->traceback = dup_str(PyTuple_GET_ITEM(res, 2));
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
        char *text = dup_str(PyTuple_GET_ITEM(c, 1));
        if (!text)
            continue;
        r->chunks[r->nchunks].is_stderr = PyObject_IsTrue(PyTuple_GET_ITEM(c, 0)) == 1;
        r->chunks[r->nchunks++].text = text;
    }
    PyErr_Clear();
}

int probe_eval_run(const char *src, int mode, struct probe_eval_result *r, struct pb_err *err)
{
    memset(r, 0, sizeof *r);
    PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
    PyObject *g = main_mod ? PyModule_GetDict(main_mod) : NULL; /* borrowed */
    PyObject *run = probe_pyhelper_get("run"), *begin = probe_pyhelper_get("begin");
    PyObject *end = probe_pyhelper_get("end");
    if (!g || !run || !begin || !end)
        return fail(err, "eval set-up");
    if (mode == PROBE_EVAL_CHECK) {
        PyObject *res = PyObject_CallFunction(run, "siO", src, mode, g);
        if (!res)
            return fail(err, "eval");
        take_outcome(res, r);
        Py_DECREF(res);
        return 0;
    }
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
        return fail(err, "eval set-up");
    }
    PySys_SetObject("stdout", PyTuple_GET_ITEM(cap, 1));
    PySys_SetObject("stderr", PyTuple_GET_ITEM(cap, 2));
    atomic_store(&eval_running, 1);
    PyObject *res = PyObject_CallFunction(run, "siO", src, mode, g);
    atomic_store(&eval_running, 0);
    /* An interrupt that arrived after the code finished must not hit anything else. */
    PyThreadState_SetAsyncExc(probe_worker_ident(), NULL);
    int rc = 0;
    if (!res)
        rc = fail(err, "eval"); /* e.g. interrupted inside the helper itself */
    else
        take_outcome(res, r);
    Py_XDECREF(res);
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

/* The interrupter: waits for the GIL (the evaluating worker gives it up every switch
 * interval), then raises KeyboardInterrupt in the worker's thread if it still evaluates. */
static void *interrupter_main(void *arg)
{
    (void)arg;
    PyGILState_STATE g = PyGILState_Ensure();
    if (atomic_load(&eval_running))
        PyThreadState_SetAsyncExc(probe_worker_ident(), PyExc_KeyboardInterrupt);
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
