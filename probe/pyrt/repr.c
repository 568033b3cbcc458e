/* SPDX-License-Identifier: MIT */
/* A bounded repr that never runs user code, for showing locals of a live process: exact
 * builtin types only (None, bool, int, float, complex, str, bytes, and list/tuple/dict/set/
 * frozenset recursing at most REPR_DEPTH deep and REPR_ITEMS items each); anything else,
 * subclasses of builtins included, is "<module.Type object at 0x...>", but PyTorch tensors
 * show their shape, dtype and device (tensor.c), NumPy scalars their value and arrays their
 * shape and dtype (numpy.c). Strings and bytes are
 * cut before their repr is built; huge ints are "<int of N bits>". Total <= PYRT_REPR_MAX.
 * Every object is checked with pyrt_obj_ok (objcheck.c: fault-proof reads) before anything
 * touches it; one that fails, as memory corruption leaves them, is "<invalid object at 0x...>".
 * Requires GIL; every exception caused here is cleared. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPR_DEPTH 3
#define REPR_ITEMS PYRT_REPR_ITEMS
#define REPR_STR_CHARS PYRT_REPR_STR_CHARS
#define REPR_INT_BITS 1000
#define REPR_SET_SCAN (1 << 20) /* set table entries looked at, at most */
#define REPR_SET_CHUNK 64

struct rbuf {
    char s[PYRT_REPR_MAX + 1];
    size_t len;
    int full;
};

/* Appends n bytes; once the buffer would overflow the output ends with "..." instead, cut on
 * a UTF-8 character boundary, and later appends are ignored. */
static void put(struct rbuf *b, const char *src, size_t n)
{
    const size_t keep = PYRT_REPR_MAX - 3;
    if (b->full)
        return;
    if (b->len + n <= PYRT_REPR_MAX) {
        memcpy(b->s + b->len, src, n);
        b->len += n;
        return;
    }
    if (b->len > keep) {
        b->len = keep;
        while (b->len > 0 && ((unsigned char)b->s[b->len] & 0xC0) == 0x80)
            b->len--;
    } else {
        size_t room = keep - b->len < n ? keep - b->len : n;
        while (room > 0 && room < n && ((unsigned char)src[room] & 0xC0) == 0x80)
            room--;
        memcpy(b->s + b->len, src, room);
        b->len += room;
    }
    memcpy(b->s + b->len, "...", 3);
    b->len += 3;
    b->full = 1;
}

static void puts_(struct rbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Appends the UTF-8 of a str object we made ourselves (a repr result); consumes r. */
static void put_repr_result(struct rbuf *b, PyObject *r)
{
    if (!r) {
        PyErr_Clear();
        puts_(b, "<repr failed>");
        return;
    }
    char *s = pyrt_str_read(r, PYRT_REPR_MAX);
    puts_(b, s ? s : "<repr failed>");
    free(s);
    Py_DECREF(r);
}

static void put_invalid(struct rbuf *b, const void *o)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "<invalid object at 0x%" PRIxPTR ">", (uintptr_t)o);
    puts_(b, tmp);
}

/* "module.QualName" of a type (just the name for builtins), malloc'd. tp has passed
 * pyrt_type_ok. Requires GIL. */
static char *type_name(PyTypeObject *tp)
{
    if (tp->tp_flags & Py_TPFLAGS_HEAPTYPE) {
        PyHeapTypeObject *ht = (PyHeapTypeObject *)tp;
        PyObject *mod = tp->tp_dict ? PyDict_GetItemString(tp->tp_dict, "__module__") : NULL;
        char *q = ht->ht_qualname ? pyrt_str_read(ht->ht_qualname, 200) : NULL;
        char *m =
            mod && pyrt_obj_ok(mod) && PyUnicode_CheckExact(mod) ? pyrt_str_read(mod, 200) : NULL;
        char *out = NULL;
        if (q && m && strcmp(m, "builtins") != 0) {
            size_t n = strlen(m) + strlen(q) + 2;
            out = malloc(n);
            if (out)
                snprintf(out, n, "%s.%s", m, q);
        } else if (q) {
            out = q;
            q = NULL;
        }
        free(q);
        free(m);
        if (out)
            return out;
    }
    return strdup(tp->tp_name ? tp->tp_name : "?");
}

PyObject *pyrt_name(const char *name)
{
    static const char *names[PYRT_NAMES_MAX];
    static PyObject *keys[PYRT_NAMES_MAX];
    for (size_t i = 0; i < PYRT_NAMES_MAX; i++) {
        if (!names[i]) {
            keys[i] = PyUnicode_InternFromString(name);
            if (!keys[i]) {
                PyErr_Clear();
                return NULL;
            }
            names[i] = name;
        }
        if (names[i] == name || strcmp(names[i], name) == 0)
            return keys[i];
    }
    return NULL;
}

char *pyrt_repr_typename(PyObject *o)
{
    return pyrt_obj_ok(o) ? type_name(Py_TYPE(o)) : strdup("?");
}

static void repr_any(struct rbuf *b, PyObject *o, int depth);

static void repr_seq(struct rbuf *b, PyObject *o, int depth, const char *open, const char *close)
{
    Py_ssize_t n = PyList_CheckExact(o) ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
    puts_(b, open);
    if (depth >= REPR_DEPTH && n > 0) {
        puts_(b, "...");
    } else {
        for (Py_ssize_t i = 0; i < n && !b->full; i++) {
            if (i >= REPR_ITEMS) {
                puts_(b, ", ...");
                break;
            }
            if (i)
                puts_(b, ", ");
            /* Re-read the size each time: nothing here runs user code, but be defensive. */
            if (PyList_CheckExact(o) && i >= PyList_GET_SIZE(o))
                break;
            repr_any(b, PyList_CheckExact(o) ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i),
                     depth + 1);
        }
        if (n == 1 && PyTuple_CheckExact(o))
            puts_(b, ",");
    }
    puts_(b, close);
}

static void repr_dict(struct rbuf *b, PyObject *o, int depth)
{
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    int i = 0;
    puts_(b, "{");
    if (depth >= REPR_DEPTH && PyDict_Size(o) > 0) {
        puts_(b, "...");
    } else {
        while (!b->full && PyDict_Next(o, &pos, &k, &v)) {
            if (i >= REPR_ITEMS) {
                puts_(b, ", ...");
                break;
            }
            if (i++)
                puts_(b, ", ");
            repr_any(b, k, depth + 1);
            puts_(b, ": ");
            repr_any(b, v, depth + 1);
        }
    }
    puts_(b, "}");
}

/* set/frozenset: the table read with fault-proof reads, in the order its iterator yields
 * (empty and deleted entries skipped: a deleted one has hash -1, which no key has), never
 * through the iterator, which takes a reference to each key before we could check it. */
static void repr_set(struct rbuf *b, PyObject *o, int depth)
{
    const PySetObject *so = (const PySetObject *)o;
    int frozen = PyFrozenSet_CheckExact(o);
    int i = 0;
    if (PySet_GET_SIZE(o) == 0) {
        puts_(b, frozen ? "frozenset()" : "set()");
        return;
    }
    puts_(b, frozen ? "frozenset({" : "{");
    if (depth >= REPR_DEPTH) {
        puts_(b, "...");
    } else {
        Py_ssize_t size = so->mask + 1, scan = size < REPR_SET_SCAN ? size : REPR_SET_SCAN;
        setentry e[REPR_SET_CHUNK];
        for (Py_ssize_t pos = 0; pos < scan && !b->full; pos += REPR_SET_CHUNK) {
            Py_ssize_t n = scan - pos < REPR_SET_CHUNK ? scan - pos : REPR_SET_CHUNK;
            if (pyrt_mem_read(so->table + pos, e, (size_t)n * sizeof e[0]) != 0) {
                puts_(b, i ? ", " : "");
                put_invalid(b, so->table + pos);
                break;
            }
            for (Py_ssize_t k = 0; k < n && !b->full; k++) {
                if (!e[k].key || e[k].hash == -1)
                    continue;
                if (i >= REPR_ITEMS) {
                    puts_(b, ", ...");
                    pos = scan;
                    break;
                }
                if (i++)
                    puts_(b, ", ");
                repr_any(b, e[k].key, depth + 1);
            }
        }
        if (scan < size && i < REPR_ITEMS && i < PySet_GET_SIZE(o))
            puts_(b, ", ...");
    }
    puts_(b, frozen ? "})" : "}");
}

/* Modules, functions and classes are named the way Python names them, from their own C-level
 * fields (no attribute lookup, no user code): <module 'math'>, <function Model.forward>,
 * <class 'pkg.Model'>. Returns 0 when o is none of those. Requires GIL. */
static int repr_named(struct rbuf *b, PyObject *o)
{
    const char *name = NULL;
    PyObject *qual = NULL;
    if (PyModule_CheckExact(o)) {
        PyObject *d = PyModule_GetDict(o); /* borrowed */
        PyObject *n = d && pyrt_obj_ok(d) && PyDict_CheckExact(d)
                          ? PyDict_GetItemString(d, "__name__")
                          : NULL; /* borrowed */
        name = n && pyrt_obj_ok(n) && PyUnicode_CheckExact(n) ? PyUnicode_AsUTF8(n) : NULL;
        if (!name)
            return PyErr_Clear(), 0;
        puts_(b, "<module '");
        puts_(b, name);
        puts_(b, "'>");
        return 1;
    }
    if (PyFunction_Check(o)) {
        qual = ((PyFunctionObject *)o)->func_qualname; /* borrowed */
        name =
            qual && pyrt_obj_ok(qual) && PyUnicode_CheckExact(qual) ? PyUnicode_AsUTF8(qual) : NULL;
        if (!name)
            return PyErr_Clear(), 0;
        puts_(b, "<function ");
        puts_(b, name);
        puts_(b, ">");
        return 1;
    }
    if (PyType_Check(o) && pyrt_type_ok((PyTypeObject *)o)) {
        char *tn = type_name((PyTypeObject *)o);
        puts_(b, "<class '");
        puts_(b, tn ? tn : "?");
        puts_(b, "'>");
        free(tn);
        return 1;
    }
    return 0;
}

static void repr_other(struct rbuf *b, PyObject *o)
{
    char tmp[64];
    if (repr_named(b, o))
        return;
    if (pyrt_repr_is_tensor(o)) {
        char *t = pyrt_tensor_display(o);
        puts_(b, t ? t : "tensor(?)");
        free(t);
        return;
    }
    char *np = pyrt_numpy_display(o);
    if (np) {
        puts_(b, np);
        free(np);
        return;
    }
    char *tn = pyrt_repr_typename(o);
    puts_(b, "<");
    puts_(b, tn ? tn : "?");
    snprintf(tmp, sizeof tmp, " object at %p>", (void *)o);
    puts_(b, tmp);
    free(tn);
}

static void repr_any(struct rbuf *b, PyObject *o, int depth)
{
    char tmp[64];
    if (b->full)
        return;
    if (o != Py_None && o != Py_True && o != Py_False && !pyrt_obj_ok(o)) {
        put_invalid(b, o);
    } else if (o == Py_None) {
        puts_(b, "None");
    } else if (o == Py_True || o == Py_False) {
        puts_(b, o == Py_True ? "True" : "False");
    } else if (PyLong_CheckExact(o)) {
        size_t bits = _PyLong_NumBits(o);
        if (bits == (size_t)-1) {
            PyErr_Clear();
            puts_(b, "<int>");
        } else if (bits > REPR_INT_BITS) {
            snprintf(tmp, sizeof tmp, "<int of %zu bits>", bits);
            puts_(b, tmp);
        } else {
            put_repr_result(b, PyObject_Repr(o));
        }
    } else if (PyFloat_CheckExact(o) || PyComplex_CheckExact(o)) {
        put_repr_result(b, PyObject_Repr(o));
    } else if (PyUnicode_CheckExact(o)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(o);
        PyObject *cut = n > REPR_STR_CHARS ? PyUnicode_Substring(o, 0, REPR_STR_CHARS) : NULL;
        put_repr_result(b, PyObject_Repr(cut ? cut : o));
        Py_XDECREF(cut);
        if (n > REPR_STR_CHARS)
            puts_(b, "...");
    } else if (PyBytes_CheckExact(o)) {
        Py_ssize_t n = PyBytes_GET_SIZE(o);
        PyObject *cut = n > REPR_STR_CHARS
                            ? PyBytes_FromStringAndSize(PyBytes_AS_STRING(o), REPR_STR_CHARS)
                            : NULL;
        put_repr_result(b, PyObject_Repr(cut ? cut : o));
        Py_XDECREF(cut);
        if (n > REPR_STR_CHARS)
            puts_(b, "...");
    } else if (PyList_CheckExact(o)) {
        repr_seq(b, o, depth, "[", "]");
    } else if (PyTuple_CheckExact(o)) {
        repr_seq(b, o, depth, "(", ")");
    } else if (PyDict_CheckExact(o)) {
        repr_dict(b, o, depth);
    } else if (Py_TYPE(o) == &PySet_Type || PyFrozenSet_CheckExact(o)) {
        repr_set(b, o, depth);
    } else {
        repr_other(b, o);
    }
    PyErr_Clear();
}

char *pyrt_repr_new(PyObject *o)
{
    struct rbuf *b = calloc(1, sizeof *b);
    char *out;
    if (!b)
        return NULL;
    repr_any(b, o, 0);
    b->s[b->len] = '\0';
    out = strdup(b->s);
    free(b);
    return out;
}
