/* SPDX-License-Identifier: MIT */
/* How the debugger sees an object (variables.c serves the requests): its displayed value (the
 * bounded repr of pyrt/repr.c, which runs no user code; tensors by shape, dtype and device),
 * whether it has children and how many, and its children page by page: namespaces (frame
 * locals, globals), dict items, list/tuple/set elements, attributes from __dict__ and
 * __slots__, module and class namespaces. Reading children runs no user code either: dicts
 * and slots are read directly, sets with the builtin iterator. Requires GIL throughout. */
#include "pyrt/internal.h"
#include <structmember.h> /* PyMemberDef on 3.8-3.11 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "gil/pyhelper.h"

#define EXPR_MAX 1024
/* The member type __slots__ creates (T_OBJECT_EX / Py_T_OBJECT_EX, 16 on every version). */
#define MEMBER_OBJECT_EX 16

/* 1 if instances of tp carry a __dict__. */
static int has_dict(PyTypeObject *tp)
{
#ifdef Py_TPFLAGS_MANAGED_DICT
    if (tp->tp_flags & Py_TPFLAGS_MANAGED_DICT)
        return 1;
#endif
    return tp->tp_dictoffset != 0;
}

/* The __slots__ members of o's heap types, in MRO order: visit(ctx, m) for each. */
static int slot_members(PyObject *o, int (*visit)(void *, const PyMemberDef *), void *ctx)
{
    PyObject *mro = Py_TYPE(o)->tp_mro;
    int n = 0;
    if (!mro || !PyTuple_Check(mro))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || !t->tp_members)
            continue;
        for (const PyMemberDef *m = t->tp_members; m->name; m++) {
            size_t len = strlen(m->name);
            if (m->type != MEMBER_OBJECT_EX ||
                (len > 4 && strncmp(m->name, "__", 2) == 0 && strcmp(m->name + len - 2, "__") == 0))
                continue;
#ifdef Py_RELATIVE_OFFSET
            if (m->flags & Py_RELATIVE_OFFSET)
                continue;
#endif
            n++;
            if (visit && visit(ctx, m) < 0)
                return n;
        }
    }
    return n;
}

int dbg_vars_shape(PyObject *obj, long long *indexed, long long *named)
{
    *indexed = *named = 0;
    if (PyList_Check(obj) || PyTuple_Check(obj)) {
        *indexed = PyList_Check(obj) ? PyList_GET_SIZE(obj) : PyTuple_GET_SIZE(obj);
        return *indexed > 0;
    }
    if (PyAnySet_Check(obj)) {
        *indexed = PySet_GET_SIZE(obj);
        return *indexed > 0;
    }
    if (PyDict_Check(obj)) {
        *named = PyDict_GET_SIZE(obj);
        return *named > 0;
    }
    if (PyModule_Check(obj)) {
        PyObject *d = PyModule_GetDict(obj); /* borrowed */
        *named = d ? PyDict_GET_SIZE(d) : 0;
        return *named > 0;
    }
    if (PyType_Check(obj)) {
        PyTypeObject *t = (PyTypeObject *)obj;
        if (!(t->tp_flags & Py_TPFLAGS_HEAPTYPE) || !t->tp_dict)
            return 0;
        *named = PyDict_GET_SIZE(t->tp_dict);
        return 1;
    }
    if (obj == Py_None || PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj) ||
        PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj) ||
        PyFunction_Check(obj) || PyCFunction_Check(obj) || PyMethod_Check(obj) ||
        PyCode_Check(obj) || PyFrame_Check(obj) || pyrt_repr_is_tensor(obj))
        return 0;
    return has_dict(Py_TYPE(obj)) || slot_members(obj, NULL, NULL) > 0;
}

/* A malloc'd "<parent><fmt...>" expression, or NULL when there is no parent or it is too
 * long. */
static char *expr_join(const char *parent, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static char *expr_join(const char *parent, const char *fmt, ...)
{
    char buf[EXPR_MAX];
    if (!parent)
        return NULL;
    size_t n = strlen(parent);
    if (n >= sizeof buf)
        return NULL;
    memcpy(buf, parent, n);
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof buf - n)
        return NULL;
    return strdup(buf);
}

/* The paging state of one `variables` answer. */
static int page_take(struct dbgv_page *pg)
{
    long long i = pg->seen++;
    if (i < pg->start)
        return 0;
    if (i >= pg->start + pg->count) {
        pg->more = 1;
        return 0;
    }
    return 1;
}

/* A str key as a name (as is when it is a str, else its bounded repr); malloc'd. */
static char *key_name(PyObject *k, int as_attr)
{
    if (as_attr && PyUnicode_Check(k)) {
        const char *u = PyUnicode_AsUTF8(k);
        if (u)
            return strdup(u);
        PyErr_Clear();
    }
    return pyrt_repr_new(k);
}

/* The children of a dict: names are keys as they are (attr: a namespace, expr parent.name or
 * just name when top is set) or their bounded repr (a mapping, expr parent[repr]). */
static void dict_children(PyObject *d, int attr, int top, const char *parent, struct dbgv_page *pg,
                          dbgv_visit visit, void *ctx)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (!pg->more && PyDict_Next(d, &pos, &k, &v)) {
        if (!page_take(pg))
            continue;
        Py_INCREF(k);
        Py_INCREF(v);
        char *name = key_name(k, attr), *expr = NULL;
        if (attr && PyUnicode_Check(k) && PyUnicode_IsIdentifier(k) == 1)
            expr = top && name ? strdup(name) : expr_join(parent, ".%s", name ? name : "");
        else if (!attr && name &&
                 (PyLong_CheckExact(k) ||
                  (PyUnicode_CheckExact(k) && PyUnicode_GET_LENGTH(k) <= 64)))
            expr = expr_join(parent, "[%s]", name);
        PyErr_Clear();
        visit(ctx, name ? name : "?", v, expr);
        free(name);
        free(expr);
        Py_DECREF(v);
        Py_DECREF(k);
    }
}

static void seq_children(PyObject *o, const char *parent, struct dbgv_page *pg, dbgv_visit visit,
                         void *ctx)
{
    int is_list = PyList_Check(o);
    Py_ssize_t n = is_list ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
    pg->seen = pg->start < n ? pg->start : n;
    for (Py_ssize_t i = (Py_ssize_t)pg->seen; i < n && !pg->more; i++) {
        /* Re-read the size: a child's registration runs no code, but stay defensive. */
        if (is_list && i >= PyList_GET_SIZE(o))
            break;
        if (!page_take(pg))
            continue;
        PyObject *v = is_list ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i);
        char name[32];
        snprintf(name, sizeof name, "%zd", i);
        char *expr = expr_join(parent, "[%zd]", i);
        Py_INCREF(v);
        visit(ctx, name, v, expr);
        Py_DECREF(v);
        free(expr);
    }
    if (n > pg->start + pg->count)
        pg->more = 1;
}

/* Sets: the builtin set iterator, called through PySet_Type's own slot so a subclass's
 * __iter__ is not run. Names are positions (a set has no indices, so no evaluateName). */
static void set_children(PyObject *o, struct dbgv_page *pg, dbgv_visit visit, void *ctx)
{
    PyObject *it = PySet_Type.tp_iter ? PySet_Type.tp_iter(o) : NULL;
    PyObject *v;
    if (!it) {
        PyErr_Clear();
        return;
    }
    while (!pg->more && (v = PyIter_Next(it)) != NULL) {
        long long i = pg->seen;
        if (page_take(pg)) {
            char name[32];
            snprintf(name, sizeof name, "%lld", i);
            visit(ctx, name, v, NULL);
        }
        Py_DECREF(v);
    }
    Py_DECREF(it);
    PyErr_Clear();
}

struct slot_walk {
    PyObject *o;
    const char *parent;
    struct dbgv_page *pg;
    dbgv_visit visit;
    void *ctx;
};

static int slot_child(void *arg, const PyMemberDef *m)
{
    struct slot_walk *w = arg;
    PyObject *v = *(PyObject **)((char *)w->o + m->offset); /* NULL: the slot is unset */
    if (!v || w->pg->more || !page_take(w->pg))
        return w->pg->more ? -1 : 0;
    char *expr = expr_join(w->parent, ".%s", m->name);
    Py_INCREF(v);
    w->visit(w->ctx, m->name, v, expr);
    Py_DECREF(v);
    free(expr);
    return 0;
}

/* Attributes of an instance: its __dict__ (read with the generic getter, so neither a
 * __getattribute__ nor a __dict__ property of the class runs), then its __slots__. */
static void attr_children(PyObject *o, const char *parent, struct dbgv_page *pg, dbgv_visit visit,
                          void *ctx)
{
    if (has_dict(Py_TYPE(o))) {
        PyObject *d = PyObject_GenericGetDict(o, NULL);
        if (d && PyDict_Check(d))
            dict_children(d, 1, 0, parent, pg, visit, ctx);
        Py_XDECREF(d);
        PyErr_Clear();
    }
    struct slot_walk w = {o, parent, pg, visit, ctx};
    slot_members(o, slot_child, &w);
}

int dbg_vars_children(PyObject *obj, int ns, const char *parent, struct dbgv_page *pg,
                      dbgv_visit visit, void *ctx)
{
    pg->seen = 0;
    pg->more = 0;
    int indexed = PyList_Check(obj) || PyTuple_Check(obj) || PyAnySet_Check(obj);
    if ((pg->filter == DBGV_NAMED && indexed) || (pg->filter == DBGV_INDEXED && !indexed))
        return 0;
    if (ns && PyDict_Check(obj))
        dict_children(obj, 1, 1, NULL, pg, visit, ctx);
    else if (PyList_Check(obj) || PyTuple_Check(obj))
        seq_children(obj, parent, pg, visit, ctx);
    else if (PyAnySet_Check(obj))
        set_children(obj, pg, visit, ctx);
    else if (PyDict_Check(obj))
        dict_children(obj, 0, 0, parent, pg, visit, ctx);
    else if (PyModule_Check(obj)) {
        PyObject *d = PyModule_GetDict(obj); /* borrowed */
        if (d)
            dict_children(d, 1, 0, parent, pg, visit, ctx);
    } else if (PyType_Check(obj)) {
        PyTypeObject *t = (PyTypeObject *)obj;
        if ((t->tp_flags & Py_TPFLAGS_HEAPTYPE) && t->tp_dict)
            dict_children(t->tp_dict, 1, 0, parent, pg, visit, ctx);
    } else if (!pyrt_repr_is_tensor(obj)) {
        attr_children(obj, parent, pg, visit, ctx);
    }
    PyErr_Clear();
    return 0;
}

/* setVariable on a child of a container: finds the child called name the way dbg_vars_children
 * names it and stores value there (list item, dict item, attribute or slot). Setting runs the
 * container's own __setitem__/__setattr__, as an assignment in the program would. Returns 0,
 * or a negative code with err (a Python exception is cleared into it); *expr gets the child's
 * evaluateName (malloc'd) or NULL. */
int dbg_vars_child_set(PyObject *obj, const char *parent, const char *name, PyObject *value,
                       char **expr, struct pb_err *err)
{
    *expr = NULL;
    if (PyTuple_Check(obj) || PyAnySet_Check(obj))
        return pb_err_set(err, PB_EBADARG, "a %s's elements cannot be assigned",
                          Py_TYPE(obj)->tp_name);
    if (PyList_Check(obj)) {
        char *end = NULL;
        long long i = strtoll(name, &end, 10);
        if (!*name || *end || i < 0 || i >= PyList_GET_SIZE(obj))
            return pb_err_set(err, PB_EBADARG, "no element '%s' in this list of %zd", name,
                              PyList_GET_SIZE(obj));
        PyObject *idx = PyLong_FromLongLong(i);
        int rc = idx ? PyObject_SetItem(obj, idx, value) : -1;
        Py_XDECREF(idx);
        if (rc < 0)
            return gil_py_fail(err, "setting the element");
        *expr = expr_join(parent, "[%lld]", i);
        return 0;
    }
    if (PyDict_Check(obj)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v, *key = NULL;
        while (!key && PyDict_Next(obj, &pos, &k, &v)) {
            char *kn = pyrt_repr_new(k);
            if (kn && strcmp(kn, name) == 0) {
                key = k;
                Py_INCREF(key);
            }
            free(kn);
        }
        PyErr_Clear();
        if (!key)
            return pb_err_set(err, PB_EBADARG, "no key shown as %s in this dict", name);
        int rc = PyObject_SetItem(obj, key, value);
        if (rc == 0 && (PyLong_CheckExact(key) || PyUnicode_CheckExact(key)))
            *expr = expr_join(parent, "[%s]", name);
        Py_DECREF(key);
        return rc < 0 ? gil_py_fail(err, "setting the item") : 0;
    }
    if (PyObject_SetAttrString(obj, name, value) < 0)
        return gil_py_fail(err, "setting the attribute");
    *expr = expr_join(parent, ".%s", name);
    return 0;
}
