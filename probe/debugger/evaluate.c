/* SPDX-License-Identifier: MIT */
/* Evaluation in the debugger's context (dbg_eval_run, probe.h): in __main__, or in a frame of
 * a stopped thread, with assignments to its locals kept while it stays stopped, and a result
 * with children registered for `variables`. The evaluation itself is the GIL side's
 * (gil/eval.c: output captured, streams restored, interruptible); this file only adds frames
 * and references, so the evaluator never depends on the debugger. Worker thread; GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "internal.h"
#include "gil/pyhelper.h"
#include "gil/gil.h"
#include "debugger.h"

/* The namespaces of frame_id (frame NULL: __main__'s globals, l NULL). *f, *g and *l are new
 * references. Requires GIL. */
static int namespaces(long long frame_id, PyObject **f, PyObject **g, PyObject **l,
                      struct pb_err *err)
{
    *f = *g = *l = NULL;
    if (frame_id < 0) {
        PyObject *main_mod = PyImport_AddModule("__main__"); /* borrowed */
        *g = main_mod ? PyModule_GetDict(main_mod) : NULL;   /* borrowed */
        if (!*g)
            return gil_py_fail(err, "eval set-up");
        Py_INCREF(*g);
        return 0;
    }
    /* Borrowed from the stop record, which the thread drops once it resumes: the code we run
     * may let it (it gives up the GIL), so hold the frame ourselves. */
    *f = dbg_frame(frame_id, err);
    if (!*f)
        return err->code ? err->code : PB_ESTATE;
    Py_INCREF(*f);
    int rc = gil_eval_frame_ns(*f, g, l, err);
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

int dbg_eval_run(const char *src, int mode, long long frame_id, int refs,
                 struct probe_eval_result *r, struct pb_err *err)
{
    memset(r, 0, sizeof *r);
    if (mode == PROBE_EVAL_CHECK)
        return gil_eval_check(src, r, err);
    PyObject *f, *g, *l, *value = NULL;
    int rc = namespaces(frame_id, &f, &g, &l, err);
    if (rc < 0)
        return rc;
    unsigned long gen = dbg_generation();
    rc = gil_eval_ns(src, mode, g, l, r, &value, err);
    /* Assignments stick, unless the thread resumed meanwhile (it runs the frame again now). */
    if (f && gen == dbg_generation())
        gil_eval_frame_commit(f, g, l);
    if (rc == 0 && value && refs)
        r->var_ref = dbg_vars_register(value, f, simple_expr(src), &r->indexed, &r->named);
    Py_XDECREF(value);
    Py_XDECREF(l);
    Py_XDECREF(g);
    Py_XDECREF(f);
    PyErr_Clear();
    return rc;
}
