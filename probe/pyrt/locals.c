/* SPDX-License-Identifier: MIT */
/* The parts of a snapshot that need the GIL: thread names and daemon flags from the
 * `threading` module (only if already imported; nothing is ever imported), and frame locals
 * read straight from the frame's fast locals (no PyFrame_FastToLocals, nothing that mutates
 * the frame), with values from the bounded repr of repr.c (which shows an object that memory
 * corruption overwrote as "<invalid object at 0x...>"). No user code runs: attribute
 * reads go to instance dicts only, never through descriptors or __getattr__.
 * Requires GIL for everything in this file; no function leaves an exception set. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LOCALS 100     /* per function frame */
#define MAX_DICT_LOCALS 50 /* per module-level frame (its namespace dict) */

/* Attribute name of o found in o's instance dict, without running any user code: types with
 * their own __getattribute__/__getattr__ and names the type defines (properties, slots) are
 * refused. name is a string literal (pyrt_name: nothing of ours stays in the program's
 * heap). Returns a new reference, or NULL (no exception left set). Requires GIL. */
static PyObject *attr_plain(PyObject *o, const char *name)
{
    PyTypeObject *tp = Py_TYPE(o);
    PyObject *key, *r = NULL;
    if (tp->tp_getattro != PyObject_GenericGetAttr || !(key = pyrt_name(name)))
        return NULL;
    if (_PyType_Lookup(tp, key) == NULL) {
        r = PyObject_GenericGetAttr(o, key);
        if (!r)
            PyErr_Clear();
    }
    return r;
}

/* Borrowed reference to threading._active, or NULL when threading is not imported. */
static PyObject *active_get(void)
{
    PyObject *modules = PyImport_GetModuleDict(); /* borrowed */
    PyObject *mod, *d, *active;
    if (!modules || !PyDict_Check(modules))
        return NULL;
    mod = PyDict_GetItemString(modules, "threading"); /* borrowed */
    if (!mod || !PyModule_Check(mod))
        return NULL;
    d = PyModule_GetDict(mod); /* borrowed */
    if (!d)
        return NULL;
    active = PyDict_GetItemString(d, "_active"); /* borrowed */
    return active && PyDict_CheckExact(active) ? active : NULL;
}

int pyrt_names_read(struct probe_thread *t)
{
    PyObject *active = active_get();
    PyObject *key, *th, *name, *daemon;
    int from = 0;

    if (!active) {
        /* threading was never imported: the main thread is what threading would call it. */
        if (!t->is_main)
            return 0;
        char *s = strdup("MainThread");
        if (!s)
            return 0;
        free(t->name);
        t->name = s;
        t->daemon = 0;
        return 1;
    }
    key = PyLong_FromUnsignedLong(t->ident);
    if (!key) {
        PyErr_Clear();
        return 0;
    }
    th = PyDict_GetItemWithError(active, key); /* borrowed; int key: no user __eq__ */
    Py_DECREF(key);
    if (!th) {
        PyErr_Clear();
        return 0;
    }
    Py_INCREF(th);
    name = attr_plain(th, "_name");
    if (name && PyUnicode_CheckExact(name)) {
        char *s = pyrt_str_read(name, PYRT_MAX_STR);
        if (s) {
            free(t->name);
            t->name = s;
            from = 1;
        }
    }
    Py_XDECREF(name);
    daemon = attr_plain(th, "_daemonic");
    if (daemon == Py_True)
        t->daemon = 1;
    else if (daemon == Py_False)
        t->daemon = 0;
    Py_XDECREF(daemon);
    Py_DECREF(th);
    return from;
}

/* Adds name = value to f->locals (array sized by the caller). Returns 0 or -ENOMEM. */
static int local_add(struct probe_frame *f, PyObject *name, PyObject *value)
{
    struct probe_local *l = &f->locals[f->nlocals];
    l->name = pyrt_obj_ok(name) && PyUnicode_Check(name) ? pyrt_str_read(name, PYRT_MAX_STR) : NULL;
    if (!l->name)
        return 0; /* non-str key in a namespace dict: skipped */
    l->type = pyrt_repr_typename(value);
    l->value = pyrt_repr_new(value);
    PyErr_Clear();
    if (!l->type || !l->value) {
        free(l->name);
        free(l->type);
        free(l->value);
        memset(l, 0, sizeof *l);
        return -ENOMEM;
    }
    f->nlocals++;
    return 0;
}

/* Module-level (and class-body) frames: their namespace dict, first MAX_DICT_LOCALS entries.
 * PyDict_Next runs no user code. */
static int dict_locals(struct probe_frame *f, PyObject *d)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    f->locals = calloc(MAX_DICT_LOCALS, sizeof *f->locals);
    if (!f->locals)
        return -ENOMEM;
    f->nlocals = 0;
    while (f->nlocals < MAX_DICT_LOCALS && PyDict_Next(d, &pos, &k, &v))
        if (local_add(f, k, v) < 0)
            return -ENOMEM;
    return 0;
}

/* Value in a cell/free slot: the cell's content when the slot already holds a cell.
 * Borrowed reference, NULL when unbound; an invalid object (pyrt_obj_ok) as it is, for the
 * repr to say so. */
static PyObject *cell_deref(PyObject *v)
{
    return v && pyrt_obj_ok(v) && PyCell_Check(v) ? PyCell_GET(v) : v;
}

int pyrt_locals_read(struct probe_frame *f, const struct pyrt_rawframe *raw)
{
    PyCodeObject *co = (PyCodeObject *)raw->code;
    PyObject *nsdict;
    Py_ssize_t n;

    f->nlocals = -1;
    f->locals = NULL;
    if (!raw->frame || !co || !PyCode_Check((PyObject *)co))
        return -EINVAL;
#if PY_VERSION_HEX < 0x030B0000
    PyFrameObject *fr = (PyFrameObject *)raw->frame;
    /* With the GIL the frame cannot change under us, but it may have returned since the
     * no-GIL walk: check it is still that code's frame. */
    if (!PyFrame_Check((PyObject *)fr) || fr->f_code != co)
        return -ESRCH;
    nsdict = fr->f_locals ? fr->f_locals : fr->f_globals;
    if (!(co->co_flags & CO_NEWLOCALS))
        return nsdict && PyDict_Check(nsdict) ? dict_locals(f, nsdict) : -EINVAL;
    Py_ssize_t nvar = co->co_nlocals;
    Py_ssize_t ncell = PyTuple_GET_SIZE(co->co_cellvars);
    Py_ssize_t nfree = PyTuple_GET_SIZE(co->co_freevars);
    n = nvar + ncell + nfree;
    if (n > MAX_LOCALS)
        n = MAX_LOCALS;
    f->locals = calloc((size_t)(n ? n : 1), sizeof *f->locals);
    if (!f->locals)
        return -ENOMEM;
    f->nlocals = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *v = fr->f_localsplus[i];
        if (i < nvar) {
            name = PyTuple_GET_ITEM(co->co_varnames, i);
        } else if (i < nvar + ncell) {
            name = PyTuple_GET_ITEM(co->co_cellvars, i - nvar);
            v = cell_deref(v);
        } else {
            name = PyTuple_GET_ITEM(co->co_freevars, i - nvar - ncell);
            v = cell_deref(v);
        }
        if (v && local_add(f, name, v) < 0)
            return -ENOMEM;
    }
#else
    _PyInterpreterFrame *fr = (_PyInterpreterFrame *)raw->frame;
#if PY_VERSION_HEX >= 0x030E0000
    if (pyrt_ref_addr(fr->f_executable) != (uintptr_t)co)
        return -ESRCH;
#elif PY_VERSION_HEX >= 0x030D0000
    if (fr->f_executable != (PyObject *)co)
        return -ESRCH;
#else
    if (fr->f_code != co)
        return -ESRCH;
#endif
    nsdict = fr->f_locals ? fr->f_locals : fr->f_globals;
    if (!(co->co_flags & CO_NEWLOCALS))
        return nsdict && PyDict_Check(nsdict) ? dict_locals(f, nsdict) : -EINVAL;
    if (!PyBytes_Check(co->co_localspluskinds) || !PyTuple_Check(co->co_localsplusnames))
        return -EINVAL;
    n = co->co_nlocalsplus;
    if (n > PyTuple_GET_SIZE(co->co_localsplusnames))
        n = PyTuple_GET_SIZE(co->co_localsplusnames);
    if (n > PyBytes_GET_SIZE(co->co_localspluskinds))
        n = PyBytes_GET_SIZE(co->co_localspluskinds);
    if (n > MAX_LOCALS)
        n = MAX_LOCALS;
    f->locals = calloc((size_t)(n ? n : 1), sizeof *f->locals);
    if (!f->locals)
        return -ENOMEM;
    f->nlocals = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char kind = (unsigned char)PyBytes_AS_STRING(co->co_localspluskinds)[i];
#if PY_VERSION_HEX >= 0x030E0000
        PyObject *v = (PyObject *)pyrt_ref_addr(fr->localsplus[i]);
#else
        PyObject *v = fr->localsplus[i];
#endif
#ifdef CO_FAST_HIDDEN
        if (kind & CO_FAST_HIDDEN) /* 3.12+ inlined comprehension variables */
            continue;
#endif
        if (kind & (CO_FAST_CELL | CO_FAST_FREE))
            v = cell_deref(v);
        if (v && local_add(f, PyTuple_GET_ITEM(co->co_localsplusnames, i), v) < 0)
            return -ENOMEM;
    }
#endif
    return 0;
}
