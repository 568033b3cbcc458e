/* SPDX-License-Identifier: MIT */
/* Exception breakpoints (DAP: SetExceptionBreakpointsArguments, filters "raised" and
 * "uncaught"). "raised" comes from the event source (the trace function's exception event, or
 * sys.monitoring's RAISE), at the frame that raised, control-flow exceptions left out.
 * "uncaught" costs nothing while no exception escapes: sys.excepthook and threading.excepthook
 * are wrapped, and the wrapper parks the thread with the stack the traceback still holds before
 * handing the exception to the hook that was there. Each wrapper is put back on detach if it is
 * still in place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "core/core.h"
#include "debugger.h"

atomic_int dbg_exc_raised;
atomic_int dbg_exc_uncaught;

static PyObject *orig_sys_hook, *orig_thread_hook; /* strong, while ours are set */
static PyObject *our_sys_hook, *our_thread_hook;

int dbg_exc_skip(PyObject *exc)
{
    return PyErr_GivenExceptionMatches(exc, PyExc_StopIteration) ||
           PyErr_GivenExceptionMatches(exc, PyExc_StopAsyncIteration) ||
           PyErr_GivenExceptionMatches(exc, PyExc_GeneratorExit);
}

void dbg_exc_describe(PyObject *exc, char *buf, size_t n)
{
    PyObject *s = PyObject_Str(exc);
    char *m = gil_py_strdup(s);
    Py_XDECREF(s);
    PyErr_Clear();
    snprintf(buf, n, "%s: %s", Py_TYPE(exc)->tp_name, m ? m : "");
    free(m);
}

static PyObject *threading_module(void) /* new reference or NULL; never imports */
{
    PyObject *name = PyUnicode_FromString("threading");
    PyObject *m = name ? PyImport_GetModule(name) : NULL;
    Py_XDECREF(name);
    PyErr_Clear();
    return m;
}

static void park_uncaught(PyObject *exc, PyObject *tb)
{
    if (!atomic_load(&dbg_exc_uncaught) || dbg_is_probe_thread() || !exc || exc == Py_None)
        return;
    char desc[300];
    dbg_exc_describe(exc, desc, sizeof desc);
    struct dbg_stop_why why = {.reason = "exception",
                               .description = desc,
                               .exc = exc,
                               .break_mode = "unhandled",
                               .tb = tb != Py_None ? tb : NULL};
    dbg_park(NULL, &why);
}

static PyObject *sys_hook(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *type, *value, *tb;
    if (!PyArg_UnpackTuple(args, "excepthook", 3, 3, &type, &value, &tb))
        return NULL;
    PyObject *orig = orig_sys_hook ? orig_sys_hook : PySys_GetObject("__excepthook__");
    Py_XINCREF(orig); /* held across the park: the client may clear the filter meanwhile */
    park_uncaught(value, tb);
    if (!orig)
        Py_RETURN_NONE;
    PyObject *r = PyObject_Call(orig, args, NULL);
    Py_DECREF(orig);
    return r;
}

static PyObject *thread_hook(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *a;
    if (!PyArg_UnpackTuple(args, "excepthook", 1, 1, &a))
        return NULL;
    PyObject *value = PyObject_GetAttrString(a, "exc_value");
    PyObject *tb = value ? PyObject_GetAttrString(a, "exc_traceback") : NULL;
    PyErr_Clear();
    /* The client may clear the filter (or leave) while we are parked: keep the hook to hand
     * the exception on to. */
    PyObject *orig = orig_thread_hook;
    Py_XINCREF(orig);
    park_uncaught(value, tb);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (!orig) {
        PyObject *th = threading_module();
        orig = th ? PyObject_GetAttrString(th, "__excepthook__") : NULL;
        Py_XDECREF(th);
        PyErr_Clear();
        if (!orig)
            Py_RETURN_NONE;
    }
    PyObject *r = PyObject_Call(orig, args, NULL);
    Py_DECREF(orig);
    return r;
}

static PyMethodDef sys_def = {"probing_excepthook", sys_hook, METH_VARARGS, NULL};
static PyMethodDef thread_def = {"probing_thread_excepthook", thread_hook, METH_VARARGS, NULL};

static void hooks_set(void)
{
    if (!our_sys_hook && (our_sys_hook = PyCFunction_New(&sys_def, NULL))) {
        orig_sys_hook = PySys_GetObject("excepthook");
        Py_XINCREF(orig_sys_hook);
        if (PySys_SetObject("excepthook", our_sys_hook) < 0) {
            Py_CLEAR(orig_sys_hook);
            Py_CLEAR(our_sys_hook);
        }
    }
    PyObject *th = threading_module();
    if (th && !our_thread_hook && PyObject_HasAttrString(th, "excepthook") &&
        (our_thread_hook = PyCFunction_New(&thread_def, NULL))) {
        orig_thread_hook = PyObject_GetAttrString(th, "excepthook");
        if (!orig_thread_hook || PyObject_SetAttrString(th, "excepthook", our_thread_hook) < 0) {
            Py_CLEAR(orig_thread_hook);
            Py_CLEAR(our_thread_hook);
        }
    }
    Py_XDECREF(th);
    PyErr_Clear();
}

void dbg_exc_remove(void)
{
    atomic_store(&dbg_exc_raised, 0);
    atomic_store(&dbg_exc_uncaught, 0);
    if (our_sys_hook) {
        if (PySys_GetObject("excepthook") == our_sys_hook && orig_sys_hook)
            PySys_SetObject("excepthook", orig_sys_hook);
        Py_CLEAR(our_sys_hook);
        Py_CLEAR(orig_sys_hook);
    }
    if (our_thread_hook) {
        PyObject *th = threading_module();
        PyObject *cur = th ? PyObject_GetAttrString(th, "excepthook") : NULL;
        if (cur == our_thread_hook && orig_thread_hook)
            PyObject_SetAttrString(th, "excepthook", orig_thread_hook);
        Py_XDECREF(cur);
        Py_XDECREF(th);
        Py_CLEAR(our_thread_hook);
        Py_CLEAR(orig_thread_hook);
    }
    PyErr_Clear();
}

void dbg_exc_census(struct dbg_census *into)
{
    PyObject *th = threading_module();
    PyObject *cur = th ? PyObject_GetAttrString(th, "excepthook") : NULL;
    PyObject *sys_cur = PySys_GetObject("excepthook");
    int ours_sys =
        sys_cur && PyCFunction_Check(sys_cur) && ((PyCFunctionObject *)sys_cur)->m_ml == &sys_def;
    int ours_th = cur && PyCFunction_Check(cur) && ((PyCFunctionObject *)cur)->m_ml == &thread_def;
    Py_XDECREF(cur);
    Py_XDECREF(th);
    PyErr_Clear();
    into->excepthook = ours_sys;
    into->threading_excepthook = ours_th;
}

int dbg_set_exception_breakpoints(int raised, int uncaught, struct pb_err *err)
{
    atomic_store(&dbg_exc_raised, raised);
    if (uncaught) {
        atomic_store(&dbg_exc_uncaught, 1);
        hooks_set();
    } else {
        int r = atomic_load(&dbg_exc_raised);
        dbg_exc_remove();
        atomic_store(&dbg_exc_raised, r);
    }
    int rc = dbg_hooks_update(err);
    PyErr_Clear();
    return rc;
}
