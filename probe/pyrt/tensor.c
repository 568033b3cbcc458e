/* SPDX-License-Identifier: MIT */
/* PyTorch tensors in one line without running user code, for every view of a value (dump
 * locals, variables, evaluate's result): found by their type's name and module, never by
 * importing torch; shape, dtype and device read through the C getters of torch's own base
 * type. Requires GIL. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An attribute of tp found in the MRO without running user code (borrowed or NULL). name is
 * a string literal (pyrt_name). */
static PyObject *type_lookup(PyTypeObject *tp, const char *name)
{
    PyObject *key = pyrt_name(name);
    return key ? _PyType_Lookup(tp, key) : NULL;
}

/* 1 if tp is a heap type named qualname whose __module__ is module. */
static int type_is(PyTypeObject *tp, const char *module, const char *qualname)
{
    if (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || !tp->tp_dict)
        return 0;
    PyObject *q = ((PyHeapTypeObject *)tp)->ht_qualname;
    PyObject *m = PyDict_GetItemString(tp->tp_dict, "__module__"); /* borrowed */
    if (!q || !m || !pyrt_obj_ok(m) || !PyUnicode_CheckExact(q) || !PyUnicode_CheckExact(m))
        return 0;
    return PyUnicode_CompareWithASCIIString(q, qualname) == 0 &&
           PyUnicode_CompareWithASCIIString(m, module) == 0;
}

int pyrt_repr_is_tensor(PyObject *obj)
{
    PyTypeObject *tp = Py_TYPE(obj), *base = NULL;
    PyObject *mro = tp->tp_mro;
    if (!mro || !PyTuple_Check(mro))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro) && !base; i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (t->tp_name && strcmp(t->tp_name, "Tensor") == 0 && type_is(t, "torch", "Tensor"))
            base = t;
    }
    if (!base)
        return 0;
    if (base == tp)
        return 1;
    /* A subclass with its own __torch_function__ would run it for .shape and the like;
     * torch.nn.Parameter's is torch's own "disabled" one. */
    PyObject *tf = type_lookup(tp, "__torch_function__");
    if (tf == type_lookup(base, "__torch_function__"))
        return 1;
    return tf && PyCFunction_Check(tf) &&
           strcmp(((PyCFunctionObject *)tf)->m_ml->ml_name, "_disabled_torch_function_impl") == 0;
}

/* The value of a C-level getter (a getset descriptor of a C base type) of o: new reference,
 * or NULL (no exception left) when there is none or it fails. */
static PyObject *c_getter(PyObject *o, const char *name)
{
    PyObject *d = type_lookup(Py_TYPE(o), name);
    if (!d || Py_TYPE(d) != &PyGetSetDescr_Type || !Py_TYPE(d)->tp_descr_get)
        return NULL;
    PyObject *v = Py_TYPE(d)->tp_descr_get(d, o, (PyObject *)Py_TYPE(o));
    if (!v)
        PyErr_Clear();
    return v;
}

struct sbuf {
    char s[256];
    size_t n;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
    if (b->n >= sizeof b->s - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        b->n = b->n + (size_t)k < sizeof b->s ? b->n + (size_t)k : sizeof b->s - 1;
}

/* str() or repr() of a torch.dtype / torch.device (C types of torch: no user code). */
static void sb_torch(struct sbuf *b, PyObject *v, const char *tp_name, int use_str)
{
    PyObject *s = v && strcmp(Py_TYPE(v)->tp_name, tp_name) == 0
                      ? (use_str ? PyObject_Str(v) : PyObject_Repr(v))
                      : NULL;
    const char *u = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    sb_add(b, "%s", u ? u : "?");
    Py_XDECREF(s);
    PyErr_Clear();
}

/* "tensor(shape=[2, 3], dtype=torch.float32, device=cpu)": the metadata only, never the data
 * (no copy from a device, no formatting of elements). */
char *pyrt_tensor_display(PyObject *o)
{
    struct sbuf b = {.n = 0};
    PyObject *shape = c_getter(o, "shape");
    sb_add(&b, "tensor(shape=");
    if (shape && PyTuple_Check(shape)) {
        sb_add(&b, "[");
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
            long long d = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
            sb_add(&b, i ? ", %lld" : "%lld", d);
        }
        sb_add(&b, "]");
    } else {
        sb_add(&b, "?");
    }
    PyErr_Clear();
    Py_XDECREF(shape);
    PyObject *dtype = c_getter(o, "dtype"), *device = c_getter(o, "device");
    sb_add(&b, ", dtype=");
    sb_torch(&b, dtype, "torch.dtype", 0);
    sb_add(&b, ", device=");
    sb_torch(&b, device, "torch.device", 1);
    sb_add(&b, ")");
    Py_XDECREF(dtype);
    Py_XDECREF(device);
    return strdup(b.s);
}
