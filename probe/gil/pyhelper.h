/* SPDX-License-Identifier: MIT */
/* Probe-internal interfaces of evaluation and inspection: the private Python helper namespace
 * (pyhelper.c), evaluation in a stopped frame (eval.c) and the variables table (dbg_vars*.c),
 * which call one another. Everything here requires the GIL (worker thread). Objects returned
 * are new references unless a comment says borrowed. */
#ifndef PROBE_PYHELPER_H
#define PROBE_PYHELPER_H

#include <Python.h>

#include "pb.h"

struct probe_eval_result;

/* ---- pyerr.c ---- */
/* A malloc'd UTF-8 copy of a str; NULL (exception cleared) if o is not one. */
char *probe_py_strdup(PyObject *o);
/* Turn the pending exception into err's text ("what: message") and clear it. Returns
 * PB_EUNKNOWN. */
int probe_py_fail(struct pb_err *err, const char *what);

/* The helper's object called name (a function or class), compiling the helper on first use.
 * Borrowed reference, or NULL with an exception set. */
PyObject *probe_pyhelper_get(const char *name);

/* ---- eval.c ---- */

/* The namespaces to evaluate in frame f: *g its globals, *l its locals (3.13: the write-through
 * proxy; before: f_locals freshly synced from the fast locals, to be written back with
 * probe_eval_frame_commit). Both new references. Returns 0 or a negative code with err. */
int probe_eval_frame_ns(PyObject *f, PyObject **g, PyObject **l, struct pb_err *err);
/* Write l (from probe_eval_frame_ns) back into f's fast locals (3.8-3.12; nothing on 3.13). */
void probe_eval_frame_commit(PyObject *f, PyObject *g, PyObject *l);
/* Evaluate one expression in frame (NULL: __main__) with output captured into r (exceptions
 * too, as for probe_eval_run); *value is the result (new reference) when it did not raise.
 * Returns 0 or a negative code with err when the probe itself failed. */
int probe_eval_value(const char *src, PyObject *frame, struct probe_eval_result *r,
                     PyObject **value, struct pb_err *err);

/* ---- dbg_vars*.c ---- */

/* Register obj for `variables` (frame: where setVariable on its children evaluates, NULL for
 * __main__; expr: an expression that gives obj back, or NULL). Returns its variablesReference,
 * or 0 when it has no children or the table cannot take it; indexed and named (may be NULL) get
 * its counts of children (0 when unknown). Valid until the next resume. */
long long probe_dbgv_register(PyObject *obj, PyObject *frame, const char *expr,
                              long long *indexed, long long *named);
/* How variables show obj: a bounded repr that runs no user code (pyrt/repr.c), tensors by
 * shape, dtype and device. New malloc'd string, or NULL on out of memory. */
char *probe_dbgv_display(PyObject *obj);
/* Name of obj's type ("int", "mymod.Point"), read without user code. New malloc'd string. */
char *probe_dbgv_typename(PyObject *obj);
/* 1 if obj is a torch.Tensor (or a subclass that does not override __torch_function__), found
 * by its type's name and module, never by importing torch. */
int probe_dbgv_is_tensor(PyObject *obj);


/* Among dbg_vars*.c: the children of an object, a page at a time (debugger/variables_obj.c). */
enum { DBGV_ALL = 0, DBGV_INDEXED = 1, DBGV_NAMED = 2 };
struct dbgv_page {
    int filter;            /* DBGV_*: DAP VariablesArguments.filter */
    long long start, count; /* the window asked for */
    long long seen;        /* children passed so far (private) */
    int more;              /* set when children beyond the window exist */
};
/* Called for each child in the window: name and expr (evaluateName, may be NULL) are valid
 * during the call; value is borrowed. */
typedef void (*dbgv_visit)(void *ctx, const char *name, PyObject *value, const char *expr);
/* 1 if obj has children worth expanding; indexed and named get their counts (0 when unknown
 * or not relevant). Runs no user code. */
int dbgv_shape(PyObject *obj, long long *indexed, long long *named);
/* Visit obj's children within pg's window. ns: obj is a namespace dict (frame locals or
 * globals: names as they are, evaluateName the name itself); parent: obj's evaluateName or
 * NULL. Runs no user code. Returns 0. */
int dbgv_children(PyObject *obj, int ns, const char *parent, struct dbgv_page *pg,
                  dbgv_visit visit, void *ctx);
/* Store value as obj's child called name (as dbgv_children names it). Returns 0 (with *expr
 * the child's evaluateName, malloc'd, or NULL) or a negative code with err. */
int dbgv_child_set(PyObject *obj, const char *parent, const char *name, PyObject *value,
                   char **expr, struct pb_err *err);

#endif
