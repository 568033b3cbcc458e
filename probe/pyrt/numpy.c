/* SPDX-License-Identifier: MIT */
/* NumPy values in one line without running any code of numpy's or the target's, for every
 * view of a value (dump locals with the GIL, variables, evaluate's result, and the locals read
 * without the GIL or from outside: memlocals.c, --no-inject, dump --core): a scalar by its
 * value, read from the object's memory by its type as py-spy and numpy print it ("2", "0.5",
 * "True", "(1+2j)", "numpy.datetime64('2024-01-01')", "numpy.timedelta64(5,'D')"), an array
 * (numpy.ndarray or a subclass) by its shape and dtype ("ndarray(shape=[2, 3],
 * dtype=float64)", "dtype=datetime64[ns]"), never its data. Both are found by their static
 * type's tp_name, never by importing numpy; every byte is read through the caller's
 * fault-proof read, every count is bounded, nothing calls CPython. The layouts read are
 * numpy's public C structs, the same in numpy 1.x and 2.x up to the dtype's elsize and
 * c_metadata, whose places differ (below). Built into the probe and, with PYRT_REMOTE, into
 * libprobing-read-3.X.so. */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP_MAX_DIMS 64 /* NPY_MAXDIMS: 32 in numpy 1.x, 64 in 2.x */
#define NP_SHOW_DIMS 16
#define NP_BASES 32 /* tp_base links followed to find ndarray */
#define NP_TEXT 256

/* A scalar type: its value sits right after the object header (numpy's Py<Type>ScalarObject:
 * PyObject_HEAD, then obval; datetime64 and timedelta64 then their unit, PyArray_DatetimeMetaData:
 * int base, int num). kind: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex (two
 * floats of size/2), 'M' datetime64, 'm' timedelta64. */
static const struct {
    const char *name;
    char kind;
    unsigned char size;
} scalars[] = {
    {"numpy.bool_", 'b', 1},       {"numpy.bool", 'b', 1},        {"numpy.int8", 'i', 1},
    {"numpy.int16", 'i', 2},       {"numpy.int32", 'i', 4},       {"numpy.int64", 'i', 8},
    {"numpy.longlong", 'i', 8},    {"numpy.uint8", 'u', 1},       {"numpy.uint16", 'u', 2},
    {"numpy.uint32", 'u', 4},      {"numpy.uint64", 'u', 8},      {"numpy.ulonglong", 'u', 8},
    {"numpy.float16", 'f', 2},     {"numpy.float32", 'f', 4},     {"numpy.float64", 'f', 8},
    {"numpy.complex64", 'c', 8},   {"numpy.complex128", 'c', 16}, {"numpy.datetime64", 'M', 8},
    {"numpy.timedelta64", 'm', 8},
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
/* Where the descriptor's c_metadata pointer is (a datetime unit's NpyAuxData): 1.x after
 * subarray, fields, names, f, metadata; 2.x in _PyArray_LegacyDescr after the base descriptor
 * (flags, elsize, alignment, metadata, hash, reserved_null[2]), subarray, fields, names. */
#define NP_CMETA_1 80
#define NP_CMETA_2 112
/* In the NpyAuxData the unit follows: free, clone, reserved[2]. */
#define NP_AUX_META 32

static int rd_at(pyrt_read_fn rd, uintptr_t a, void *dst, size_t n)
{
    return a && pyrt_ptr_ok((const void *)a, 1) && rd(a, dst, n) == 0;
}

#define NP_NAME 48 /* longer than any name below, with its NUL */

/* tp's name into buf when tp is a static type (numpy's are; a Python class can take any name,
 * never a static type) whose name is shorter than NP_NAME; else 0. Read once per type, then
 * compared with every name of ours. */
static int static_name(pyrt_read_fn rd, uintptr_t tp, char buf[NP_NAME])
{
    unsigned long flags;
    uintptr_t tn;
    if (!rd_at(rd, tp + offsetof(PyTypeObject, tp_flags), &flags, sizeof flags) ||
        (flags & Py_TPFLAGS_HEAPTYPE) ||
        !rd_at(rd, tp + offsetof(PyTypeObject, tp_name), &tn, sizeof tn))
        return 0;
    /* up to the end of its page first (the name may end just before an unmapped one), then the
     * rest from the next page when no NUL came yet */
    size_t first = 4096 - (tn & 4095);
    if (first > NP_NAME)
        first = NP_NAME;
    if (!rd_at(rd, tn, buf, first))
        return 0;
    if (!memchr(buf, '\0', first) &&
        (first == NP_NAME || !rd_at(rd, tn + first, buf + first, NP_NAME - first) ||
         !memchr(buf, '\0', NP_NAME)))
        return 0;
    return 1;
}

static Py_ssize_t basicsize(pyrt_read_fn rd, uintptr_t tp)
{
    Py_ssize_t n;
    return rd_at(rd, tp + offsetof(PyTypeObject, tp_basicsize), &n, sizeof n) ? n : -1;
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

/* Python's repr of one part of a complex: the shortest float, without ".0" when whole. */
static void put_part(char *out, size_t n, double v, int size)
{
    put_float(out, n, v, size, 0);
    size_t l = strlen(out);
    if (l > 2 && strcmp(out + l - 2, ".0") == 0 && !strchr(out, 'e'))
        out[l - 2] = '\0';
}

/* complex(re, im) as Python prints it: "2j" when the real part is +0, else "(1+2j)". */
static void put_complex(char *out, size_t n, double re, double im, int size)
{
    char r[40], i[40];
    put_part(i, sizeof i, im, size);
    if (re == 0 && !signbit(re)) {
        snprintf(out, n, "%sj", i);
        return;
    }
    put_part(r, sizeof r, re, size);
    snprintf(out, n, "(%s%s%sj)", r, i[0] == '-' ? "" : "+", i);
}

static const char *const units[] = {"Y",  "M",  "W",  "B",  "D",  "h",  "m", "s",
                                    "ms", "us", "ns", "ps", "fs", "as", ""};
#define UNIT_GENERIC 14

static long long floordiv(long long a, long long b)
{
    long long q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 to year, month (1-12), day (1-31), proleptic Gregorian. */
static void civil(long long days, long long *y, int *m, int *d)
{
    long long z = days + 719468, era = floordiv(z, 146097);
    long long doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long long mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static void put_year(char *out, size_t n, long long y)
{
    snprintf(out, n, y >= 0 ? "%04lld" : "%05lld", y);
}

/* A datetime64's ISO text as numpy prints it for its unit ("2024-01-01", "2024-01-01T10:30",
 * "...T10:30:00.123"): 0, or -1 when the value is out of what is shown. */
static int put_datetime(char *out, size_t n, long long v, int unit, int num)
{
    char y[24];
    long long yy, secs = 0, frac = 0, days, sod = 0, per = 1;
    int m, d, digits = 0;
    if (num < 1 || num > 1000000 || __builtin_mul_overflow(v, (long long)num, &v))
        return -1;
    switch (unit) {
    case 0: /* years */ put_year(out, n, 1970 + v); return 0;
    case 1: /* months */
        put_year(y, sizeof y, 1970 + floordiv(v, 12));
        snprintf(out, n, "%s-%02lld", y, v - floordiv(v, 12) * 12 + 1);
        return 0;
    case 2: /* weeks */
    case 4: /* days */
        if (unit == 2 && __builtin_mul_overflow(v, 7LL, &v))
            return -1;
        days = v;
        break;
    case 5: /* hours */
    case 6: /* minutes */
        per = unit == 5 ? 24 : 1440;
        days = floordiv(v, per);
        sod = (v - days * per) * (unit == 5 ? 3600 : 60);
        break;
    default:
        if (unit < 7 || unit > 13)
            return -1;
        digits = 3 * (unit - 7);
        for (int i = 0; i < digits; i++)
            per *= 10;
        secs = floordiv(v, per);
        frac = v - secs * per;
        days = floordiv(secs, 86400);
        sod = secs - days * 86400;
        break;
    }
    if (days > 100000000000LL || days < -100000000000LL)
        return -1;
    civil(days, &yy, &m, &d);
    put_year(y, sizeof y, yy);
    int k = snprintf(out, n, "%s-%02d-%02d", y, m, d);
    if (unit <= 4 || k < 0 || (size_t)k >= n)
        return 0;
    k += snprintf(out + k, n - (size_t)k, "T%02lld", sod / 3600);
    if (unit >= 6 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, ":%02lld", sod / 60 % 60);
    if (unit >= 7 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, ":%02lld", sod % 60);
    if (digits && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, ".%0*lld", digits, frac);
    return 0;
}

/* The unit text of a datetime64/timedelta64 ("D", "2D", "" for generic), -1 when unknown. */
static int unit_text(char *out, size_t n, int unit, int num)
{
    if (unit < 0 || unit > UNIT_GENERIC || unit == 3)
        return -1;
    if (num > 1)
        snprintf(out, n, "%d%s", num, units[unit]);
    else
        snprintf(out, n, "%s", units[unit]);
    return 0;
}

/* A numpy scalar's value; 0 when obj (of type tp) is none (or unreadable). */
static int scalar_display(pyrt_read_fn rd, uintptr_t obj, uintptr_t tp, char *out, size_t n)
{
    unsigned char raw[16];
    char tname[NP_NAME];
    if (!static_name(rd, tp, tname))
        return 0;
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
        if (strcmp(tname, scalars[i].name) != 0)
            continue;
        char kind = scalars[i].kind;
        size_t size = scalars[i].size, need = size + (kind == 'M' || kind == 'm' ? 8 : 0);
        if (basicsize(rd, tp) < (Py_ssize_t)(sizeof(PyObject) + need) ||
            !rd_at(rd, obj + sizeof(PyObject), raw, need))
            return 0;
        uint64_t u = 0;
        int64_t s;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        float f, f2;
        double d, d2;
        int meta[2];
        char ut[24];
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
        switch (kind) {
        case 'b': snprintf(out, n, "%s", u ? "True" : "False"); break;
        case 'i': snprintf(out, n, "%lld", (long long)s); break;
        case 'u': snprintf(out, n, "%llu", (unsigned long long)u); break;
        case 'c':
            if (size == 8) {
                memcpy(&f, raw, 4);
                memcpy(&f2, raw + 4, 4);
                put_complex(out, n, f, f2, 4);
            } else {
                memcpy(&d, raw, 8);
                memcpy(&d2, raw + 8, 8);
                put_complex(out, n, d, d2, 8);
            }
            break;
        case 'M':
        case 'm':
            memcpy(meta, raw + 8, sizeof meta);
            if (unit_text(ut, sizeof ut, meta[0], meta[1]) != 0)
                return 0;
            if (s == INT64_MIN) { /* NaT */
                snprintf(out, n, "numpy.%s('NaT')", kind == 'M' ? "datetime64" : "timedelta64");
            } else if (kind == 'm') {
                snprintf(out, n, ut[0] ? "numpy.timedelta64(%lld,'%s')" : "numpy.timedelta64(%lld)",
                         (long long)s, ut);
            } else {
                char iso[96];
                if (meta[0] == UNIT_GENERIC ||
                    put_datetime(iso, sizeof iso, (long long)s, meta[0], meta[1]) != 0)
                    return 0;
                /* numpy's repr adds the unit where the text does not tell it */
                if (meta[1] == 1 && meta[0] != 5)
                    snprintf(out, n, "numpy.datetime64('%s')", iso);
                else
                    snprintf(out, n, "numpy.datetime64('%s','%s')", iso, ut);
            }
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
static void dtype_name(char *out, size_t n, const struct np_descr *d, long long elsize,
                       const char *unit)
{
    switch (d->kind) {
    case 'b': snprintf(out, n, "bool"); return;
    case 'i':
    case 'u':
    case 'f':
    case 'c': {
        const char *base = d->kind == 'i'   ? "int"
                           : d->kind == 'u' ? "uint"
                           : d->kind == 'f' ? "float"
                                            : "complex";
        if (elsize > 0 && elsize <= 64)
            snprintf(out, n, "%s%lld", base, elsize * 8);
        else
            snprintf(out, n, "%s", base);
        return;
    }
    case 'U': snprintf(out, n, "<U%lld", elsize >= 0 ? elsize / 4 : 0); return;
    case 'S': snprintf(out, n, "|S%lld", elsize >= 0 ? elsize : 0); return;
    case 'V': snprintf(out, n, "|V%lld", elsize >= 0 ? elsize : 0); return;
    case 'O': snprintf(out, n, "object"); return;
    case 'M':
    case 'm':
        /* the unit, when the descriptor's datetime metadata says it: datetime64[ns] */
        snprintf(out, n, "%s%s%s%s", d->kind == 'M' ? "datetime64" : "timedelta64",
                 unit && unit[0] ? "[" : "", unit ? unit : "", unit && unit[0] ? "]" : "");
        return;
    default: snprintf(out, n, "?");
    }
}

/* 1 when tp or a type it derives from (tp_base, bounded) is numpy's ndarray (static, as numpy
 * makes it) and its instances are big enough to hold the array's fields. */
static int is_array(pyrt_read_fn rd, uintptr_t tp)
{
    Py_ssize_t size = basicsize(rd, tp);
    char tname[NP_NAME];
    for (int i = 0; i < NP_BASES && tp; i++) {
        if (static_name(rd, tp, tname) && strcmp(tname, "numpy.ndarray") == 0)
            return size >= (Py_ssize_t)sizeof(struct np_array);
        if (!rd_at(rd, tp + offsetof(PyTypeObject, tp_base), &tp, sizeof tp))
            return 0;
    }
    return 0;
}

struct nbuf {
    char s[NP_TEXT + 1];
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

/* A datetime dtype's unit from its c_metadata ("" when it has none or it cannot be read). */
static void descr_unit(pyrt_read_fn rd, uintptr_t descr, int v1, char *out, size_t n)
{
    uintptr_t aux;
    int meta[2];
    out[0] = '\0';
    if (!rd_at(rd, descr + (v1 ? NP_CMETA_1 : NP_CMETA_2), &aux, sizeof aux) ||
        !rd_at(rd, aux + NP_AUX_META, meta, sizeof meta) || unit_text(out, n, meta[0], meta[1]))
        out[0] = '\0';
}

/* "ndarray(shape=[2, 3], dtype=float64)": the array's header, its dimensions and its dtype's
 * descriptor read with fault-proof reads, each checked (nd 0 to 64, dims >= 0, the descriptor
 * an object whose kind is a letter); obj has passed is_array. 0 when one of them fails. */
static int array_display(pyrt_read_fn rd, uintptr_t obj, uintptr_t tp, const char *name, char *out,
                         size_t n)
{
    struct np_array a;
    struct np_descr d;
    intptr_t dims[NP_SHOW_DIMS];
    struct nbuf b = {.n = 0};
    char tn[128], unit[24] = "";
    unsigned long flags = 0;
    if (!rd_at(rd, obj, &a, sizeof a))
        return 0;
    if (a.nd < 0 || a.nd > NP_MAX_DIMS)
        return 0;
    int show = a.nd < NP_SHOW_DIMS ? a.nd : NP_SHOW_DIMS;
    if (show > 0 && !rd_at(rd, (uintptr_t)a.dimensions, dims, (size_t)show * sizeof dims[0]))
        return 0;
    if (!rd_at(rd, (uintptr_t)a.descr, &d, sizeof d) || d.kind < 'A' || d.kind > 'z')
        return 0;
    int v1 = (d.w32 >> 32) != 0;
    long long elsize = v1 ? (long long)(uint32_t)d.w32 : (long long)d.w40;
    if (d.kind == 'M' || d.kind == 'm')
        descr_unit(rd, (uintptr_t)a.descr, v1, unit, sizeof unit);
    rd_at(rd, tp + offsetof(PyTypeObject, tp_flags), &flags, sizeof flags);
    snprintf(tn, sizeof tn, "ndarray");
    if (flags & Py_TPFLAGS_HEAPTYPE) { /* a Python subclass: its name */
        uintptr_t p;
        if (name)
            snprintf(tn, sizeof tn, "%s", name);
        else if (rd_at(rd, tp + offsetof(PyTypeObject, tp_name), &p, sizeof p) &&
                 rd_at(rd, p, tn, 1))
            for (size_t i = 0; i < sizeof tn - 1; i++) { /* NUL-terminated, printable */
                if (!rd_at(rd, p + i, tn + i, 1) || !tn[i]) {
                    tn[i] = '\0';
                    break;
                }
                if ((unsigned char)tn[i] < 0x20 || tn[i] == 0x7f)
                    tn[i] = '?';
                tn[i + 1] = '\0';
            }
    }
    nb_add(&b, "%s(shape=[", tn[0] ? tn : "ndarray");
    for (int i = 0; i < show; i++) {
        if (dims[i] < 0)
            return 0;
        nb_add(&b, i ? ", %lld" : "%lld", (long long)dims[i]);
    }
    if (a.nd > show)
        nb_add(&b, ", ...(%d dims)", a.nd);
    char dt[48];
    dtype_name(dt, sizeof dt, &d, elsize, unit);
    nb_add(&b, "], dtype=%s%s)", d.byteorder == '>' ? ">" : "", dt);
    snprintf(out, n, "%s", b.s);
    return 1;
}

int pyrt_np_value(uintptr_t obj, uintptr_t tp, const char *name, pyrt_read_fn rd, char *out,
                  size_t n)
{
    return scalar_display(rd, obj, tp, out, n) ||
           (is_array(rd, tp) && array_display(rd, obj, tp, name, out, n));
}

#ifndef PYRT_REMOTE
char *pyrt_numpy_display(PyObject *o)
{
    char out[PYRT_REPR_MAX + 1];
    PyTypeObject *tp = Py_TYPE(o);
    uintptr_t obj = (uintptr_t)o, t = (uintptr_t)tp;
    if (scalar_display(pyrt_mem_read_at, obj, t, out, sizeof out))
        return strdup(out);
    if (!is_array(pyrt_mem_read_at, t)) /* most objects: no name needed */
        return NULL;
    char *tn = tp->tp_flags & Py_TPFLAGS_HEAPTYPE ? pyrt_repr_typename(o) : NULL;
    int ok = array_display(pyrt_mem_read_at, obj, t, tn, out, sizeof out);
    free(tn);
    return ok ? strdup(out) : NULL;
}
#endif
