/* SPDX-License-Identifier: MIT */
/* NumPy values in one line without running any code of numpy's or the target's, for every
 * view of a value (dump locals, variables, evaluate's result): a scalar (numpy.int8 ...
 * numpy.float64, numpy.bool_) by its value, read from the object's memory by its type as
 * py-spy shows it ("2", "0.5", "True"), an array (numpy.ndarray or a subclass) by its shape and
 * dtype ("ndarray(shape=[2, 3], dtype=float64)"), never its data. Both are found by their
 * static type's tp_name, never by importing numpy; every byte is read with the fault-proof
 * reads (safe.c) after probe_obj_ok has passed the object, and every count is bounded. The
 * layouts read are numpy's public C structs, the same in numpy 1.x and 2.x up to the dtype's
 * elsize, whose place differs (below). Requires GIL (objects held still). */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP_MAX_DIMS 64 /* NPY_MAXDIMS: 32 in numpy 1.x, 64 in 2.x */
#define NP_SHOW_DIMS 16

/* A scalar type: its value sits right after the object header (numpy's Py<Type>ScalarObject:
 * PyObject_HEAD, then obval). kind: 'b' bool, 'i' signed, 'u' unsigned, 'f' float. */
static const struct {
    const char *name;
    char kind;
    unsigned char size;
} scalars[] = {
    {"numpy.bool_", 'b', 1},     {"numpy.bool", 'b', 1},      {"numpy.int8", 'i', 1},
    {"numpy.int16", 'i', 2},     {"numpy.int32", 'i', 4},     {"numpy.int64", 'i', 8},
    {"numpy.longlong", 'i', 8},  {"numpy.uint8", 'u', 1},     {"numpy.uint16", 'u', 2},
    {"numpy.uint32", 'u', 4},    {"numpy.uint64", 'u', 8},    {"numpy.ulonglong", 'u', 8},
    {"numpy.float16", 'f', 2},   {"numpy.float32", 'f', 4},   {"numpy.float64", 'f', 8},
};

/* Start of the PyArrayObject (numpy's PyArrayObject_fields), the same in 1.x and 2.x. */
struct np_array {
    PyObject ob_base;
    char *data;
    int nd;
    intptr_t *dimensions;
    intptr_t *strides;
    PyObject *base;
    PyObject *descr; /* PyArray_Descr * */
    int flags;
};

/* Start of the PyArray_Descr: type_num and kind in place in 1.x and 2.x; then 1.x has
 * int elsize, int alignment, 2.x npy_uint64 flags, npy_intp elsize. */
struct np_descr {
    PyObject ob_base;
    PyTypeObject *typeobj;
    char kind, type, byteorder, flags1;
    int type_num;
    uint64_t w32; /* 1.x: elsize | alignment << 32 (alignment >= 1); 2.x: flags (< 2^32) */
    int64_t w40;  /* 2.x: elsize */
};

/* tp: a static type (numpy's are; a Python class can take any name, never a static type). */
static int static_named(const PyTypeObject *tp, const char *name)
{
    return !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) && tp->tp_name && strcmp(tp->tp_name, name) == 0;
}

/* IEEE half -> double. */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

/* d is nearer to the half h than to either neighbour (h finite). */
static int half_nearest(double d, uint16_t h)
{
    double v = half_value(h), dist = fabs(d - v);
    uint16_t mag = h & 0x7fff;
    if (mag < 0x7bff) { /* the next one away from zero is finite */
        double up = half_value((uint16_t)(h + 1));
        if (fabs(d - up) <= dist)
            return 0;
    }
    if (mag > 0) {
        double down = half_value((uint16_t)(h - 1));
        if (fabs(d - down) <= dist)
            return 0;
    } else if (fabs(d) >= half_value(1)) {
        return 0;
    }
    return 1;
}

/* The shortest decimal that reads back as the same value of its width (size 2, 4 or 8), in
 * the form Python's repr() uses: positional for exponents -4 to 15 with ".0" when whole,
 * else d.ddde+XX. */
static void put_float(char *out, size_t n, double v, int size, uint16_t half)
{
    char e[64];
    int p;
    if (isnan(v) || isinf(v)) {
        snprintf(out, n, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
        return;
    }
    for (p = 1; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        double back = strtod(e, NULL);
        if (size == 8 ? back == v : size == 4 ? (float)back == (float)v : half_nearest(back, half))
            break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    /* e: [-]d[.ddd]e[+-]XX */
    char digits[32], *x = strchr(e, 'e');
    int exp = x ? atoi(x + 1) : 0, nd = 0;
    const char *s = e;
    int neg = *s == '-';
    if (neg)
        s++;
    for (; *s && *s != 'e' && nd < (int)sizeof digits - 1; s++)
        if (*s >= '0' && *s <= '9')
            digits[nd++] = *s;
    digits[nd] = '\0';
    while (nd > 1 && digits[nd - 1] == '0')
        digits[--nd] = '\0';
    char buf[64];
    size_t k = 0;
    if (neg)
        buf[k++] = '-';
    if (exp < -4 || exp >= 16) {
        buf[k++] = digits[0];
        if (nd > 1) {
            buf[k++] = '.';
            memcpy(buf + k, digits + 1, (size_t)nd - 1);
            k += (size_t)nd - 1;
        }
        snprintf(buf + k, sizeof buf - k, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        buf[k++] = '0';
        buf[k++] = '.';
        for (int i = 0; i < -exp - 1; i++)
            buf[k++] = '0';
        memcpy(buf + k, digits, (size_t)nd);
        buf[k + (size_t)nd] = '\0';
    } else {
        for (int i = 0; i <= exp; i++)
            buf[k++] = i < nd ? digits[i] : '0';
        buf[k++] = '.';
        if (nd > exp + 1) {
            memcpy(buf + k, digits + exp + 1, (size_t)(nd - exp - 1));
            k += (size_t)(nd - exp - 1);
        } else {
            buf[k++] = '0';
        }
        buf[k] = '\0';
    }
    snprintf(out, n, "%s", buf);
}

/* A numpy scalar's value; 0 when o is none (or unreadable). */
static int scalar_display(PyObject *o, char *out, size_t n)
{
    const PyTypeObject *tp = Py_TYPE(o);
    unsigned char raw[8];
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        if (!static_named(tp, scalars[i].name))
            continue;
        size_t size = scalars[i].size;
        if (tp->tp_basicsize < (Py_ssize_t)(sizeof(PyObject) + size) ||
            probe_mem_read((const char *)o + sizeof(PyObject), raw, size) != 0)
            return 0;
        uint64_t u = 0;
        int64_t s;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        float f;
        double d;
        switch (size) {
        case 1:
            memcpy(&u8, raw, 1);
            u = u8;
            s = (int8_t)u8;
            break;
        case 2:
            memcpy(&u16, raw, 2);
            u = u16;
            s = (int16_t)u16;
            break;
        case 4:
            memcpy(&u32, raw, 4);
            u = u32;
            s = (int32_t)u32;
            break;
        default:
            memcpy(&u, raw, 8);
            s = (int64_t)u;
            break;
        }
        switch (scalars[i].kind) {
        case 'b':
            snprintf(out, n, "%s", u ? "True" : "False");
            break;
        case 'i':
            snprintf(out, n, "%lld", (long long)s);
            break;
        case 'u':
            snprintf(out, n, "%llu", (unsigned long long)u);
            break;
        default:
            if (size == 2) {
                put_float(out, n, half_value((uint16_t)u), 2, (uint16_t)u);
            } else if (size == 4) {
                memcpy(&f, raw, 4);
                put_float(out, n, f, 4, 0);
            } else {
                memcpy(&d, raw, 8);
                put_float(out, n, d, 8, 0);
            }
        }
        return 1;
    }
    return 0;
}

/* The dtype's name from its kind and item size: float64, int32, uint8, bool, complex128, <U5,
 * |S3, object, datetime64, ... ("?" parts where the descriptor does not say). */
static void dtype_name(char *out, size_t n, const struct np_descr *d, long long elsize)
{
    switch (d->kind) {
    case 'b':
        snprintf(out, n, "bool");
        return;
    case 'i':
    case 'u':
    case 'f':
    case 'c': {
        const char *base = d->kind == 'i' ? "int" : d->kind == 'u' ? "uint" : d->kind == 'f' ? "float" : "complex";
        if (elsize > 0 && elsize <= 64)
            snprintf(out, n, "%s%lld", base, elsize * 8);
        else
            snprintf(out, n, "%s", base);
        return;
    }
    case 'U':
        snprintf(out, n, "<U%lld", elsize >= 0 ? elsize / 4 : 0);
        return;
    case 'S':
        snprintf(out, n, "|S%lld", elsize >= 0 ? elsize : 0);
        return;
    case 'V':
        snprintf(out, n, "|V%lld", elsize >= 0 ? elsize : 0);
        return;
    case 'O':
        snprintf(out, n, "object");
        return;
    case 'M':
        snprintf(out, n, "datetime64");
        return;
    case 'm':
        snprintf(out, n, "timedelta64");
        return;
    default:
        snprintf(out, n, "?");
    }
}

/* 1 when tp or a type of its MRO is numpy's ndarray (static, as numpy makes it) and o is big
 * enough to hold its fields. tp has passed probe_type_ok (its MRO readable types). */
static int is_array(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    if (static_named(tp, "numpy.ndarray"))
        return tp->tp_basicsize >= (Py_ssize_t)sizeof(struct np_array);
    PyObject *mro = tp->tp_mro;
    if (!mro || !PyTuple_Check(mro))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro) && i < 64; i++) {
        PyTypeObject *t = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (static_named(t, "numpy.ndarray"))
            return tp->tp_basicsize >= (Py_ssize_t)sizeof(struct np_array);
    }
    return 0;
}

struct nbuf {
    char s[PYRT_REPR_MAX + 1];
    size_t n;
};

static void nb_add(struct nbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void nb_add(struct nbuf *b, const char *fmt, ...)
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

/* "ndarray(shape=[2, 3], dtype=float64)": the array's header, its dimensions and its dtype's
 * descriptor read with fault-proof reads, each checked (nd 0 to 64, dims >= 0, the descriptor
 * an object whose kind is a letter); 0 when o is no array or one of them fails. */
static int array_display(PyObject *o, char *out, size_t n)
{
    struct np_array a;
    struct np_descr d;
    intptr_t dims[NP_SHOW_DIMS];
    struct nbuf b = {.n = 0};
    if (!is_array(o) || probe_mem_read(o, &a, sizeof a) != 0)
        return 0;
    if (a.nd < 0 || a.nd > NP_MAX_DIMS)
        return 0;
    int show = a.nd < NP_SHOW_DIMS ? a.nd : NP_SHOW_DIMS;
    if (show > 0 && probe_mem_read(a.dimensions, dims, (size_t)show * sizeof dims[0]) != 0)
        return 0;
    if (!a.descr || probe_mem_read(a.descr, &d, sizeof d) != 0 || d.kind < 'A' || d.kind > 'z')
        return 0;
    long long elsize = (d.w32 >> 32) != 0 ? (long long)(uint32_t)d.w32 : (long long)d.w40;
    char *tn = Py_TYPE(o)->tp_flags & Py_TPFLAGS_HEAPTYPE ? probe_repr_typename(o) : NULL;
    nb_add(&b, "%s(shape=[", tn ? tn : "ndarray");
    free(tn);
    for (int i = 0; i < show; i++) {
        if (dims[i] < 0)
            return 0;
        nb_add(&b, i ? ", %lld" : "%lld", (long long)dims[i]);
    }
    if (a.nd > show)
        nb_add(&b, ", ...(%d dims)", a.nd);
    char dt[48];
    dtype_name(dt, sizeof dt, &d, elsize);
    nb_add(&b, "], dtype=%s%s)", d.byteorder == '>' ? ">" : "", dt);
    snprintf(out, n, "%s", b.s);
    return 1;
}

char *probe_numpy_display(PyObject *o)
{
    char out[PYRT_REPR_MAX + 1];
    if (scalar_display(o, out, sizeof out) || array_display(o, out, sizeof out))
        return strdup(out);
    return NULL;
}
