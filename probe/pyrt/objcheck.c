/* SPDX-License-Identifier: MIT */
/* Is this pointer a live object the repr may touch? Memory corruption (a native extension
 * writing over an object, the very case someone reaches for a debugger with) leaves locals
 * whose type pointer or element pointers point anywhere; calling CPython on one would take the
 * target down inside the probe. Everything here is read with the fault-proof reads of safe.c
 * (a bad address answers "no", never SIGSEGV) and nothing calls CPython: the object's header
 * and its type's whole struct readable, the type a ready type whose own type is a type
 * (Py_TPFLAGS_TYPE_SUBCLASS), sizes plausible, tp_name a readable C string, a heap type's
 * qualname and dict readable objects of the right type, and the storage the repr reads of the
 * builtins it shows (the first items of a list or tuple, the characters of a str or bytes, the
 * digits of an int, a dict's keys table, a set's table). Requires GIL (objects cannot change
 * under us), though only to hold them still. */
#include "internal.h"

#include <string.h>

#define OBJ_MAX_BASIC (1 << 20) /* a tp_basicsize/tp_itemsize past this is no type of ours */
#define OBJ_MAX_MRO 256
#define OBJ_MAX_SIZE ((Py_ssize_t)1 << 48)
#define OBJ_PAGE 4096
#define OBJ_PREFIX 128 /* bytes read at an object at first: its header and most small bodies */
#define OBJ_CACHE 64   /* types remembered as good while a cache is on */

/* Types found good, while the caller keeps the cache on (pyrt_obj_cache: no code runs then
 * that could free a type; pyrt_obj_cache_pinned: each type is held by a reference of ours). */
static _Thread_local struct {
    int on, pin, n;
    const PyTypeObject *t[OBJ_CACHE];
} cache;

static void cache_set(int on, int pin)
{
    if (cache.pin)
        for (int i = 0; i < cache.n; i++)
            Py_DECREF((PyObject *)cache.t[i]); /* may free a type the program dropped */
    cache.on = on;
    cache.pin = on && pin;
    cache.n = 0;
}

void pyrt_obj_cache(int on)
{
    cache_set(on, 0);
}

void pyrt_obj_cache_pinned(int on)
{
    cache_set(on, 1);
}

/* The builtin types the repr shows by value or by name: static, part of libpython, trusted. */
static int builtin(const PyTypeObject *tp)
{
    return tp == &PyLong_Type || tp == &PyBool_Type || tp == &PyFloat_Type ||
           tp == &PyComplex_Type || tp == &PyUnicode_Type || tp == &PyBytes_Type ||
           tp == &PyList_Type || tp == &PyTuple_Type || tp == &PyDict_Type || tp == &PySet_Type ||
           tp == &PyFrozenSet_Type || tp == &PyType_Type || tp == &PyModule_Type ||
           tp == &PyFunction_Type || tp == &PyCell_Type || tp == &PyBaseObject_Type;
}

/* 1 when every byte of [a, a+n) is readable: one read for a short range, else a byte of each
 * page it touches (the ranges here are bounded by the callers). */
static int range_ok(const void *a, size_t n)
{
    char buf[512];
    uintptr_t p = (uintptr_t)a, end;
    if (n == 0)
        return 1;
    if (!pyrt_ptr_ok(a, 1) || p + n < p)
        return 0;
    if (n <= sizeof buf)
        return pyrt_mem_read(a, buf, n) == 0;
    end = p + n - 1;
    for (; p <= end; p = (p & ~(uintptr_t)(OBJ_PAGE - 1)) + OBJ_PAGE) {
        if (pyrt_mem_read((const void *)p, buf, 1) != 0)
            return 0;
        if (p > end - OBJ_PAGE) /* the last page: its last byte too, then done */
            return pyrt_mem_read((const void *)end, buf, 1) == 0;
    }
    return 1;
}

/* [o+off, o+off+n) readable: inside the prefix already read (got bytes), else read now. */
static int have(const PyObject *o, size_t got, size_t off, size_t n)
{
    return off + n <= got || range_ok((const char *)o + off, n);
}

/* A readable NUL-terminated C string of at most 1 KiB (a type's tp_name). */
static int cstr_ok(const char *s)
{
    char buf[1024];
    size_t n = pyrt_ptr_ok(s, 1) ? pyrt_mem_read_upto(s, buf, sizeof buf) : 0;
    return n > 0 && memchr(buf, '\0', n) != NULL;
}

/* o readable as a PyObject whose type pointer is exactly tp (no type check beyond). */
static int obj_of_type(const PyObject *o, const PyTypeObject *tp)
{
    PyObject h;
    return pyrt_ptr_ok(o, sizeof(void *)) && pyrt_mem_read(o, &h, sizeof h) == 0 && h.ob_type == tp;
}

static int type_ok(const PyTypeObject *tp, int with_mro);

/* The type's tp_mro: a readable tuple of readable types (tensor.c walks it); self, the type
 * whose MRO it is (its first entry), is being checked by the caller. */
static int mro_ok(const PyObject *mro, const PyTypeObject *self)
{
    PyTupleObject t;
    if (!mro)
        return 1;
    if (!obj_of_type(mro, &PyTuple_Type) || pyrt_mem_read(mro, &t, sizeof t) != 0)
        return 0;
    Py_ssize_t n = t.ob_base.ob_size;
    if (n < 0 || n > OBJ_MAX_MRO ||
        !range_ok(((const PyTupleObject *)mro)->ob_item, (size_t)n * sizeof(PyObject *)))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (((const PyTupleObject *)mro)->ob_item[i] != (const PyObject *)self &&
            !type_ok((const PyTypeObject *)((const PyTupleObject *)mro)->ob_item[i], 0))
            return 0;
    return 1;
}

static int dict_ok(const PyObject *o);

/* tp is a type (see the file's comment); with_mro: its tp_mro as well. */
static int type_ok(const PyTypeObject *tp, int with_mro)
{
    PyHeapTypeObject h; /* a PyTypeObject first */
    PyTypeObject *t = &h.ht_type;
    const PyTypeObject *meta;
    unsigned long mflags;
    if (builtin(tp))
        return 1;
    if (!pyrt_ptr_ok(tp, sizeof(void *)) || pyrt_mem_read(tp, t, sizeof *t) != 0)
        return 0;
    if (!(t->tp_flags & Py_TPFLAGS_READY) || t->tp_basicsize <= 0 ||
        t->tp_basicsize > OBJ_MAX_BASIC || t->tp_itemsize < 0 || t->tp_itemsize > OBJ_MAX_BASIC)
        return 0;
    meta = t->ob_base.ob_base.ob_type;
    if (meta != &PyType_Type &&
        (!pyrt_ptr_ok(meta, sizeof(void *)) ||
         pyrt_mem_read((const char *)meta + offsetof(PyTypeObject, tp_flags), &mflags,
                       sizeof mflags) != 0 ||
         !(mflags & Py_TPFLAGS_TYPE_SUBCLASS)))
        return 0;
    if (!cstr_ok(t->tp_name))
        return 0;
    if (t->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        if (pyrt_mem_read(tp, &h, sizeof h) != 0)
            return 0;
        if (h.ht_qualname && !pyrt_obj_ok(h.ht_qualname))
            return 0;
        if (t->tp_dict && (!obj_of_type(t->tp_dict, &PyDict_Type) || !dict_ok(t->tp_dict)))
            return 0;
    }
    return !with_mro || mro_ok(t->tp_mro, tp);
}

int pyrt_type_ok(const PyTypeObject *tp)
{
    if (builtin(tp))
        return 1;
    for (int i = 0; cache.on && i < cache.n; i++)
        if (cache.t[i] == tp)
            return 1;
    if (!type_ok(tp, 1))
        return 0;
    if (cache.on && cache.n < OBJ_CACHE) {
        if (cache.pin)
            Py_INCREF((PyObject *)tp);
        cache.t[cache.n++] = tp;
    }
    return 1;
}

/* A dict's header read, its keys table readable (PyDict_Next reads it; the keys and values
 * it yields are checked one by one where they are used). */
static int dict_ok(const PyObject *o)
{
    PyDictObject d;
    if (pyrt_mem_read(o, &d, sizeof d) != 0 || d.ma_used < 0 || d.ma_used > OBJ_MAX_SIZE)
        return 0;
    return range_ok(d.ma_keys, 4 * sizeof(Py_ssize_t));
}

/* The characters the repr reads of a str: its header, then its first PYRT_REPR_STR_CHARS + 1
 * code points (PyUnicode_Substring and repr() read no further). */
static int str_ok(PyObject *o, size_t got)
{
    if (!have(o, got, 0, sizeof(PyASCIIObject)))
        return 0;
#if PY_VERSION_HEX < 0x030C0000
    if (!PyUnicode_IS_READY(o))
        return 0;
#endif
    if (!PyUnicode_IS_COMPACT(o) && !have(o, got, 0, sizeof(PyUnicodeObject)))
        return 0;
    if (PyUnicode_IS_COMPACT(o) && !PyUnicode_IS_ASCII(o) &&
        !have(o, got, 0, sizeof(PyCompactUnicodeObject)))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(o);
    int kind = PyUnicode_KIND(o);
    if (n < 0 || n > OBJ_MAX_SIZE || (kind != 1 && kind != 2 && kind != 4))
        return 0;
    if (n > PYRT_REPR_STR_CHARS)
        n = PYRT_REPR_STR_CHARS + 1;
    return have(o, got, (size_t)((char *)PyUnicode_DATA(o) - (char *)o), (size_t)n * (size_t)kind);
}

/* An int's digits (_PyLong_NumBits reads the top one, repr() all of a small one). */
static int long_ok(PyObject *o, size_t got)
{
#if PY_VERSION_HEX >= 0x030C0000
    Py_ssize_t n = (Py_ssize_t)(((PyLongObject *)o)->long_value.lv_tag >> 3);
    const digit *d = ((PyLongObject *)o)->long_value.ob_digit;
#else
    Py_ssize_t n = Py_SIZE(o) < 0 ? -Py_SIZE(o) : Py_SIZE(o);
    const digit *d = ((PyLongObject *)o)->ob_digit;
#endif
    if (n < 0 || n > OBJ_MAX_SIZE)
        return 0;
    if (n <= 256)
        return have(o, got, (size_t)((const char *)d - (char *)o), (size_t)n * sizeof(digit));
    return range_ok(d, 64 * sizeof(digit)) && range_ok(d + n - 1, sizeof(digit));
}

int pyrt_obj_ok(PyObject *o)
{
    char pre[OBJ_PREFIX];
    size_t got = pyrt_ptr_ok(o, sizeof(void *)) ? pyrt_mem_read_upto(o, pre, sizeof pre) : 0;
    if (got < sizeof(PyObject))
        return 0;
    const PyTypeObject *tp = ((PyObject *)pre)->ob_type;
    if (!pyrt_type_ok(tp))
        return 0;
    if (tp == &PyUnicode_Type)
        return str_ok(o, got);
    /* Every other object is at least its type's basic size (tp has passed: readable). */
    Py_ssize_t basic = tp->tp_basicsize;
    if (basic < (Py_ssize_t)sizeof(PyObject) || !have(o, got, 0, (size_t)basic))
        return 0;
    if (tp == &PyLong_Type || tp == &PyBool_Type)
        return long_ok(o, got);
    if (tp == &PyList_Type || tp == &PyTuple_Type) {
        Py_ssize_t n = Py_SIZE(o);
        PyObject **items =
            tp == &PyList_Type ? ((PyListObject *)o)->ob_item : ((PyTupleObject *)o)->ob_item;
        if (n < 0 || n > OBJ_MAX_SIZE)
            return 0;
        if (n > PYRT_REPR_ITEMS)
            n = PYRT_REPR_ITEMS;
        return tp == &PyList_Type ? range_ok(items, (size_t)n * sizeof(PyObject *))
                                  : have(o, got, (size_t)((char *)items - (char *)o),
                                         (size_t)n * sizeof(PyObject *));
    }
    if (tp == &PyBytes_Type) {
        Py_ssize_t n = Py_SIZE(o);
        if (n < 0 || n > OBJ_MAX_SIZE)
            return 0;
        return have(o, got, offsetof(PyBytesObject, ob_sval),
                    (size_t)(n > PYRT_REPR_STR_CHARS ? PYRT_REPR_STR_CHARS : n) + 1);
    }
    if (tp == &PyDict_Type)
        return dict_ok(o);
    if (tp == &PySet_Type || tp == &PyFrozenSet_Type) {
        const PySetObject *s = (const PySetObject *)o;
        return s->mask >= 0 && s->mask < OBJ_MAX_SIZE && s->used >= 0 &&
               range_ok(s->table, sizeof(setentry));
    }
    return 1;
}
