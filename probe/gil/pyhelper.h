/* SPDX-License-Identifier: MIT */
/* The GIL side's interfaces: the private Python helper namespace (pyhelper.c), conversions at
 * the C-API boundary (pyerr.c) and evaluation with captured output (eval.c); how an object is
 * shown is pyrt/repr.h. Everything here requires the GIL (worker thread). Objects returned are new
 * references unless a comment says borrowed. */
#ifndef PROBE_PYHELPER_H
#define PROBE_PYHELPER_H

#include <Python.h>

#include "pb.h"
#include "gil.h"

struct probe_eval_result;

/* ---- pyerr.c ---- */
/* A malloc'd UTF-8 copy of a str; NULL (exception cleared) if o is not one. */
char *gil_py_strdup(PyObject *o);
/* Turn the pending exception into err's text ("what: message") and clear it. Returns
 * PB_EUNKNOWN. */
int gil_py_fail(struct pb_err *err, const char *what);

/* The helper's object called name (a function or class), compiling the helper on first use.
 * Borrowed reference, or NULL with an exception set. */
PyObject *gil_pyhelper_get(const char *name);

/* ---- eval.c ---- */

/* Run src (PROBE_EVAL_STATEMENTS or _EXPRESSION) with globals g and locals l (NULL: g), the
 * evaluating thread's output captured into r; *value gets the result (new reference; NULL for
 * None, statements, or an exception, which is in r). Returns 0, or a negative code with err
 * when the probe itself failed. */
int gil_eval_ns(const char *src, int mode, PyObject *g, PyObject *l, struct probe_eval_result *r,
                PyObject **value, struct pb_err *err);
/* PROBE_EVAL_CHECK: only whether src is a complete statement (r->complete). */
int gil_eval_check(const char *src, struct probe_eval_result *r, struct pb_err *err);

/* The namespaces to evaluate in frame f: *g its globals, *l its locals (3.13: the write-through
 * proxy; before: f_locals freshly synced from the fast locals, to be written back with
 * gil_eval_frame_commit). Both new references. Returns 0 or a negative code with err. */
int gil_eval_frame_ns(PyObject *f, PyObject **g, PyObject **l, struct pb_err *err);
/* Write l (from gil_eval_frame_ns) back into f's fast locals (3.8-3.12; nothing on 3.13). */
void gil_eval_frame_commit(PyObject *f, PyObject *g, PyObject *l);
/* Evaluate one expression in frame (NULL: __main__) with output captured into r (exceptions
 * too, as for dbg_eval_run); *value is the result (new reference) when it did not raise.
 * Returns 0 or a negative code with err when the probe itself failed. */
int gil_eval_value(const char *src, PyObject *frame, struct probe_eval_result *r, PyObject **value,
                   struct pb_err *err);

#endif
