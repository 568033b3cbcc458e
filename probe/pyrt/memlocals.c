/* SPDX-License-Identifier: MIT */
/* Frame locals read from memory, without the GIL (internal.h, pyrt_mem_locals): what a dump
 * shows when the GIL cannot be had (a C call that holds it forever), and what the
 * out-of-process reader shows (--no-inject, dump --core). Built into the probe and, with
 * PYRT_REMOTE, into libprobing-read-3.X.so. Every read goes through the caller's fault-proof
 * read; nothing calls CPython, nothing allocates, every loop is bounded. The names come from the
 * code object (co_localsplusnames on 3.11+, co_varnames/co_cellvars/co_freevars before), the
 * values from the frame's fast locals. A value is shown by value only when its type is exactly
 * one of int, bool, float, str, bytes, None, or a tuple, list or dict of those (first
 * MEM_ITEMS items, shallow: a container inside one shows as "[...]"), each read whole and
 * consistent (sizes in bounds, storage readable), or a NumPy scalar or array (numpy.c: by value,
 * by shape and dtype); anything else as "<TYPE object at 0x...>"
 * with the type's tp_name read safely, and what cannot be read as "<invalid object at 0x...>".
 * The program runs on while we read (that is the point): a value being changed may show torn,
 * never crash anything. */
#include "internal.h"

#if PY_VERSION_HEX >= 0x030B0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "pycore_dict.h" /* the keys table's layout */
#pragma GCC diagnostic pop
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MEM_LOCALS 100    /* per frame, as the GIL path */
#define MEM_ITEMS 8       /* items of a container */
#define MEM_STR_CHARS 80  /* code points / bytes of a str / bytes */
#define MEM_INT_DIGITS 24 /* PyLong digits shown by value (720 bits at 30 bits a digit) */
#define MEM_VALUE 256     /* bytes of a value's text */
#define MEM_MAX_SIZE ((Py_ssize_t)1 << 40)

struct vbuf {
    char s[MEM_VALUE + 1];
    size_t len;
    int full;
};

static void put(struct vbuf *b, const char *src, size_t n)
{
    if (b->full)
        return;
    if (b->len + n > MEM_VALUE - 3) {
        size_t room = MEM_VALUE - 3 - b->len;
        if (room > n)
            room = n;
        while (room > 0 && room < n && ((unsigned char)src[room] & 0xC0) == 0x80)
            room--; /* never cut a UTF-8 sequence */
        memcpy(b->s + b->len, src, room);
        b->len += room;
        memcpy(b->s + b->len, "...", 3);
        b->len += 3;
        b->full = 1;
        return;
    }
    memcpy(b->s + b->len, src, n);
    b->len += n;
}

static void puts_(struct vbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static int rd_ok(pyrt_read_fn rd, uintptr_t a, void *dst, size_t n)
{
    return pyrt_ptr_ok((const void *)a, 1) && rd(a, dst, n) == 0;
}

/* A NUL-terminated C string at a, at most n - 1 bytes, read page by page. 0, or -1. */
static int cstr_read(pyrt_read_fn rd, uintptr_t a, char *out, size_t n)
{
    size_t got = 0;
    while (got + 1 < n) {
        size_t chunk = 4096 - ((a + got) & 4095);
        if (chunk > n - 1 - got)
            chunk = n - 1 - got;
        if (!rd_ok(rd, a + got, out + got, chunk))
            return got > 0 && memchr(out, '\0', got) ? 0 : -1;
        if (memchr(out + got, '\0', chunk))
            return 0;
        got += chunk;
    }
    out[n - 1] = '\0';
    return 0;
}

/* The type of obj (0 when unreadable) and its name (tp_name, read safely; "?" when not). */
static uintptr_t type_of(pyrt_read_fn rd, uintptr_t obj)
{
    PyObject h;
    if (!pyrt_ptr_ok((const void *)obj, sizeof(void *)) || !rd_ok(rd, obj, &h, sizeof h) ||
        !pyrt_ptr_ok(h.ob_type, sizeof(void *)))
        return 0;
    return (uintptr_t)h.ob_type;
}

static int type_name(pyrt_read_fn rd, uintptr_t tp, char *out, size_t n)
{
    uintptr_t name;
    if (!rd_ok(rd, tp + offsetof(PyTypeObject, tp_name), &name, sizeof name) ||
        cstr_read(rd, name, out, n) != 0 || !out[0]) {
        snprintf(out, n, "?");
        return -1;
    }
    for (char *c = out; *c; c++) /* a name to print: no control bytes */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return 0;
}

static void put_other(struct vbuf *b, const char *what, uintptr_t obj)
{
    char s[160];
    snprintf(s, sizeof s, "<%s object at %#lx>", what, (unsigned long)obj);
    puts_(b, s);
}

/* ---- int, bool ---- */

/* The digits of the int at obj: *neg, *n (at most max, else -1 with *n the count). */
static int long_digits(pyrt_read_fn rd, uintptr_t obj, digit *d, int max, int *neg, long *n)
{
#if PY_VERSION_HEX >= 0x030C0000
    uintptr_t tag;
    if (!rd_ok(rd, obj + offsetof(PyLongObject, long_value.lv_tag), &tag, sizeof tag))
        return -1;
    *neg = (tag & 3) == 2;
    *n = (tag & 3) == 1 ? 0 : (long)(tag >> 3);
    uintptr_t at = obj + offsetof(PyLongObject, long_value.ob_digit);
#else
    Py_ssize_t size;
    if (!rd_ok(rd, obj + offsetof(PyVarObject, ob_size), &size, sizeof size))
        return -1;
    *neg = size < 0;
    *n = size < 0 ? -(long)size : (long)size;
    uintptr_t at = obj + offsetof(PyLongObject, ob_digit);
#endif
    if (*n < 0 || *n > (long)(MEM_MAX_SIZE / 4))
        return -1;
    if (*n > max)
        return -2;
    return *n == 0 || rd_ok(rd, at, d, (size_t)*n * sizeof(digit)) ? 0 : -1;
}

static int put_long(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj, int is_bool)
{
    digit d[MEM_INT_DIGITS];
    uint32_t chunks[MEM_INT_DIGITS * 2]; /* base 10^9, least significant first */
    int neg, nc = 0, rc;
    long n;
    char s[16];
    if ((rc = long_digits(rd, obj, d, MEM_INT_DIGITS, &neg, &n)) == -1)
        return -1;
    if (rc == -2) {
        snprintf(s, sizeof s, "%ld", n * PyLong_SHIFT);
        puts_(b, neg ? "<int < -2**" : "<int >= 2**");
        puts_(b, s);
        puts_(b, "...>");
        return 0;
    }
    for (long i = 0; i < n; i++)
        if (d[i] >> PyLong_SHIFT)
            return -1; /* not a digit: torn or not an int */
    if (is_bool) {
        puts_(b, n > 0 ? "True" : "False");
        return 0;
    }
    while (n > 0 && nc < (int)(sizeof chunks / sizeof chunks[0])) {
        uint64_t rem = 0;
        for (long i = n - 1; i >= 0; i--) {
            uint64_t cur = (rem << PyLong_SHIFT) | d[i];
            d[i] = (digit)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        chunks[nc++] = (uint32_t)rem;
        while (n > 0 && d[n - 1] == 0)
            n--;
    }
    if (neg && nc > 0)
        puts_(b, "-");
    snprintf(s, sizeof s, "%u", nc > 0 ? chunks[nc - 1] : 0u);
    puts_(b, s);
    for (int i = nc - 2; i >= 0; i--) {
        snprintf(s, sizeof s, "%09u", chunks[i]);
        puts_(b, s);
    }
    return 0;
}

/* ---- float: repr()'s shortest round-trip form ---- */

static void put_float(struct vbuf *b, double v)
{
    char e[40], out[64];
    int p;
    if (isnan(v)) {
        puts_(b, "nan");
        return;
    }
    if (isinf(v)) {
        puts_(b, v < 0 ? "-inf" : "inf");
        return;
    }
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    /* e: [-]D[.DDD]e[+-]XX; repr() writes it plain when -4 <= exponent < 16 */
    char digits[24];
    int nd = 0, neg = e[0] == '-', exp;
    const char *c = e + neg;
    for (; *c && *c != 'e'; c++)
        if (*c >= '0' && *c <= '9' && nd < 20)
            digits[nd++] = *c;
    exp = *c == 'e' ? atoi(c + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    size_t k = 0;
    if (neg)
        out[k++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out[k++] = '0';
            out[k++] = '.';
            for (int i = -1; i > exp; i--)
                out[k++] = '0';
            for (int i = 0; i < nd; i++)
                out[k++] = digits[i];
        } else {
            for (int i = 0; i <= exp; i++)
                out[k++] = i < nd ? digits[i] : '0';
            out[k++] = '.';
            if (nd > exp + 1)
                for (int i = exp + 1; i < nd; i++)
                    out[k++] = digits[i];
            else
                out[k++] = '0';
        }
        out[k] = '\0';
    } else {
        out[k++] = digits[0];
        if (nd > 1) {
            out[k++] = '.';
            for (int i = 1; i < nd; i++)
                out[k++] = digits[i];
        }
        snprintf(out + k, sizeof out - k, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    puts_(b, out);
}

/* ---- str, bytes ---- */

/* The code points of the str at obj: up to max of them into cp, the length in *len. 0, -1. */
static int str_points(pyrt_read_fn rd, uintptr_t obj, uint32_t *cp, size_t max, size_t *len,
                      size_t *got)
{
    PyASCIIObject a;
    unsigned char data[MEM_STR_CHARS * 4];
    uintptr_t at;
    if (!rd_ok(rd, obj, &a, sizeof a))
        return -1;
#if PY_VERSION_HEX < 0x030C0000
    if (!a.state.ready)
        return -1;
#endif
    unsigned kind = a.state.kind;
    if ((kind != 1 && kind != 2 && kind != 4) || a.length < 0 || a.length > MEM_MAX_SIZE ||
        (a.state.ascii && kind != 1))
        return -1;
    if (a.state.compact)
        at = obj + (a.state.ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject));
    else if (!rd_ok(rd, obj + offsetof(PyUnicodeObject, data.any), &at, sizeof at))
        return -1;
    *len = (size_t)a.length;
    *got = *len < max ? *len : max;
    if (*got > MEM_STR_CHARS)
        *got = MEM_STR_CHARS;
    if (*got && !rd_ok(rd, at, data, *got * kind))
        return -1;
    for (size_t i = 0; i < *got; i++)
        cp[i] = pyrt_ucs_at(data, kind, i);
    return 0;
}

/* The UTF-8 of a str (a local's name), at most n - 1 bytes. 0, or -1. */
static int str_plain(pyrt_read_fn rd, uintptr_t obj, char *out, size_t n)
{
    uint32_t cp[MEM_STR_CHARS];
    size_t len, got, k = 0;
    if (type_of(rd, obj) != (uintptr_t)PYRT_UNICODE_TYPE ||
        str_points(rd, obj, cp, MEM_STR_CHARS, &len, &got) != 0)
        return -1;
    for (size_t i = 0; i < got; i++)
        k = pyrt_utf8_put(out, k, n - 1, cp[i] < 0x20 || cp[i] == 0x7f ? '?' : cp[i]);
    out[k] = '\0';
    return 0;
}

static char quote_for(const uint32_t *cp, size_t n)
{
    int sq = 0, dq = 0;
    for (size_t i = 0; i < n; i++) {
        sq |= cp[i] == '\'';
        dq |= cp[i] == '"';
    }
    return sq && !dq ? '"' : '\'';
}

/* One code point as repr() writes it inside quotes q (bytes: 0-255, non-ASCII escaped). */
static void put_char(struct vbuf *b, uint32_t c, char q, int bytes)
{
    char s[16];
    size_t k = 0;
    if (c == (uint32_t)q || c == '\\') {
        s[0] = '\\';
        s[1] = (char)c;
        k = 2;
    } else if (c == '\n' || c == '\r' || c == '\t') {
        s[0] = '\\';
        s[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        k = 2;
    } else if (c < 0x20 || c == 0x7f || (c >= 0x80 && (bytes || c < 0xa0))) {
        k = (size_t)snprintf(s, sizeof s, "\\x%02x", c);
    } else if ((c >= 0xD800 && c <= 0xDFFF) || c == 0x2028 || c == 0x2029 || c > 0x10FFFF) {
        k = (size_t)snprintf(s, sizeof s, c > 0xFFFF ? "\\U%08x" : "\\u%04x", c);
    } else {
        k = pyrt_utf8_put(s, 0, sizeof s, c);
    }
    put(b, s, k);
}

/* What was left of a str/bytes of len items after got of them. */
static void put_rest(struct vbuf *b, size_t got, size_t len)
{
    char s[48];
    if (got < len) {
        snprintf(s, sizeof s, "...(%zu chars)", len);
        puts_(b, s);
    }
}

static int put_str(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj)
{
    uint32_t cp[MEM_STR_CHARS];
    size_t len, got;
    if (str_points(rd, obj, cp, MEM_STR_CHARS, &len, &got) != 0)
        return -1;
    char q = quote_for(cp, got);
    put(b, &q, 1);
    for (size_t i = 0; i < got; i++)
        put_char(b, cp[i], q, 0);
    put(b, &q, 1);
    put_rest(b, got, len);
    return 0;
}

static int put_bytes(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj)
{
    Py_ssize_t n;
    unsigned char data[MEM_STR_CHARS];
    uint32_t cp[MEM_STR_CHARS];
    if (!rd_ok(rd, obj + offsetof(PyVarObject, ob_size), &n, sizeof n) || n < 0 || n > MEM_MAX_SIZE)
        return -1;
    size_t got = (size_t)n < MEM_STR_CHARS ? (size_t)n : MEM_STR_CHARS;
    if (got && !rd_ok(rd, obj + offsetof(PyBytesObject, ob_sval), data, got))
        return -1;
    for (size_t i = 0; i < got; i++)
        cp[i] = data[i];
    char q = quote_for(cp, got);
    put(b, "b", 1);
    put(b, &q, 1);
    for (size_t i = 0; i < got; i++)
        put_char(b, cp[i], q, 1);
    put(b, &q, 1);
    put_rest(b, got, (size_t)n);
    return 0;
}

/* ---- containers ---- */

static void put_value(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj, int depth);

static void put_count(struct vbuf *b, Py_ssize_t shown, Py_ssize_t n)
{
    char s[48];
    if (shown < n) {
        snprintf(s, sizeof s, "%s...(%zd items)", shown ? ", " : "", n);
        puts_(b, s);
    }
}

/* A tuple's or list's first items (items: their array's address). */
static int put_seq(struct vbuf *b, pyrt_read_fn rd, uintptr_t items, Py_ssize_t n, int tuple)
{
    uintptr_t v[MEM_ITEMS];
    Py_ssize_t k = n < MEM_ITEMS ? n : MEM_ITEMS;
    if (n < 0 || n > MEM_MAX_SIZE || (k && !rd_ok(rd, items, v, (size_t)k * sizeof v[0])))
        return -1;
    puts_(b, tuple ? "(" : "[");
    for (Py_ssize_t i = 0; i < k; i++) {
        if (i)
            puts_(b, ", ");
        put_value(b, rd, v[i], 1);
    }
    if (tuple && n == 1)
        puts_(b, ",");
    put_count(b, k, n);
    puts_(b, tuple ? ")" : "]");
    return 0;
}

#if PY_VERSION_HEX < 0x030B0000
/* 3.8-3.10's dict keys object (Objects/dict-common.h: no header of theirs has it). */
struct dk_old {
    Py_ssize_t dk_refcnt, dk_size;
    void *dk_lookup;
    Py_ssize_t dk_usable, dk_nentries;
};
#endif

static int put_dict(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj)
{
    PyDictObject d;
    uintptr_t entries, values = 0;
    Py_ssize_t nentries, shown = 0;
    size_t esize, koff, voff;
    if (!rd_ok(rd, obj, &d, sizeof d) || d.ma_used < 0 || d.ma_used > MEM_MAX_SIZE)
        return -1;
#if PY_VERSION_HEX >= 0x030B0000
    PyDictKeysObject k;
    if (!rd_ok(rd, (uintptr_t)d.ma_keys, &k, offsetof(PyDictKeysObject, dk_indices)) ||
        k.dk_log2_index_bytes > 40 || k.dk_nentries < 0 || k.dk_nentries > MEM_MAX_SIZE)
        return -1;
    entries = (uintptr_t)d.ma_keys + offsetof(PyDictKeysObject, dk_indices) +
              ((size_t)1 << k.dk_log2_index_bytes);
    nentries = k.dk_nentries;
    if (k.dk_kind == DICT_KEYS_GENERAL) {
        esize = sizeof(PyDictKeyEntry);
        koff = offsetof(PyDictKeyEntry, me_key);
        voff = offsetof(PyDictKeyEntry, me_value);
    } else {
        esize = sizeof(PyDictUnicodeEntry);
        koff = offsetof(PyDictUnicodeEntry, me_key);
        voff = offsetof(PyDictUnicodeEntry, me_value);
    }
    if (d.ma_values)
        values = (uintptr_t)d.ma_values + offsetof(PyDictValues, values);
#else
    struct dk_old k;
    if (!rd_ok(rd, (uintptr_t)d.ma_keys, &k, sizeof k) || k.dk_size <= 0 ||
        k.dk_size > MEM_MAX_SIZE || k.dk_nentries < 0 || k.dk_nentries > k.dk_size)
        return -1;
    size_t iw = k.dk_size <= 0xff ? 1 : k.dk_size <= 0xffff ? 2 : k.dk_size <= 0xffffffffLL ? 4 : 8;
    entries = (uintptr_t)d.ma_keys + sizeof k + iw * (size_t)k.dk_size;
    nentries = k.dk_nentries;
    esize = 3 * sizeof(void *); /* me_hash, me_key, me_value */
    koff = sizeof(void *);
    voff = 2 * sizeof(void *);
    values = (uintptr_t)d.ma_values;
#endif
    puts_(b, "{");
    /* Bounded: a torn table with holes everywhere stops after 4 * MEM_ITEMS entries. */
    for (Py_ssize_t i = 0; i < nentries && i < 4 * MEM_ITEMS && shown < MEM_ITEMS; i++) {
        unsigned char e[32];
        uintptr_t key, val;
        if (esize > sizeof e || !rd_ok(rd, entries + (size_t)i * esize, e, esize))
            return -1;
        memcpy(&key, e + koff, sizeof key);
        memcpy(&val, e + voff, sizeof val);
        if (values && !rd_ok(rd, values + (size_t)i * sizeof(void *), &val, sizeof val))
            return -1;
        if (!key || !val)
            continue; /* a deleted entry */
        if (shown++)
            puts_(b, ", ");
        put_value(b, rd, key, 1);
        puts_(b, ": ");
        put_value(b, rd, val, 1);
    }
    put_count(b, shown, d.ma_used);
    puts_(b, "}");
    return 0;
}

/* obj by value (depth 0: containers of scalars; depth 1: scalars only). */
static void put_value(struct vbuf *b, pyrt_read_fn rd, uintptr_t obj, int depth)
{
    uintptr_t tp = type_of(rd, obj);
    size_t mark = b->len;
    int rc = 0;
    char name[128];
    if (!tp) {
        put_other(b, "invalid", obj);
        return;
    }
    if (obj == (uintptr_t)PYRT_NONE) {
        puts_(b, "None");
        return;
    }
    if (tp == (uintptr_t)PYRT_LONG_TYPE || tp == (uintptr_t)PYRT_BOOL_TYPE) {
        rc = put_long(b, rd, obj, tp == (uintptr_t)PYRT_BOOL_TYPE);
    } else if (tp == (uintptr_t)PYRT_FLOAT_TYPE) {
        double v;
        if ((rc = rd_ok(rd, obj + offsetof(PyFloatObject, ob_fval), &v, sizeof v) ? 0 : -1) == 0)
            put_float(b, v);
    } else if (tp == (uintptr_t)PYRT_UNICODE_TYPE) {
        rc = put_str(b, rd, obj);
    } else if (tp == (uintptr_t)PYRT_BYTES_TYPE) {
        rc = put_bytes(b, rd, obj);
    } else if (tp == (uintptr_t)PYRT_TUPLE_TYPE || tp == (uintptr_t)PYRT_LIST_TYPE ||
               tp == (uintptr_t)PYRT_DICT_TYPE) {
        int tuple = tp == (uintptr_t)PYRT_TUPLE_TYPE, list = tp == (uintptr_t)PYRT_LIST_TYPE;
        Py_ssize_t n;
        uintptr_t items = obj + offsetof(PyTupleObject, ob_item);
        if (depth > 0) {
            puts_(b, tuple ? "(...)" : list ? "[...]" : "{...}");
            return;
        }
        if (!tuple && !list)
            rc = put_dict(b, rd, obj);
        else if (!rd_ok(rd, obj + offsetof(PyVarObject, ob_size), &n, sizeof n) ||
                 (list && !rd_ok(rd, obj + offsetof(PyListObject, ob_item), &items, sizeof items)))
            rc = -1;
        else
            rc = put_seq(b, rd, items, n, tuple);
    } else {
        char np[MEM_VALUE];
        if (pyrt_np_value(obj, tp, NULL, rd, np, sizeof np)) { /* numpy.c */
            puts_(b, np);
            return;
        }
        type_name(rd, tp, name, sizeof name);
        put_other(b, name, obj);
        return;
    }
    if (rc != 0 && !b->full) {
        b->len = mark;
        put_other(b, "invalid", obj);
    }
}

int pyrt_mem_value(uintptr_t obj, pyrt_read_fn rd, char *type, size_t typen, char *value,
                   size_t valuen)
{
    struct vbuf b = {.len = 0};
    uintptr_t tp = type_of(rd, obj);
    if (!tp || type_name(rd, tp, type, typen) != 0)
        snprintf(type, typen, "?");
    put_value(&b, rd, obj, 0);
    b.s[b.len] = '\0';
    snprintf(value, valuen, "%s", b.s);
    return tp ? 0 : -1;
}

/* ---- a frame's fast locals ---- */

/* The local's value: a cell's content where the slot holds a cell. 0 when unbound. */
static uintptr_t cell_value(pyrt_read_fn rd, uintptr_t v)
{
    uintptr_t in = 0;
    if (v && type_of(rd, v) == (uintptr_t)PYRT_CELL_TYPE &&
        !rd_ok(rd, v + offsetof(PyCellObject, ob_ref), &in, sizeof in))
        return v;
    return v && type_of(rd, v) == (uintptr_t)PYRT_CELL_TYPE ? in : v;
}

static void emit(pyrt_read_fn rd, uintptr_t name, uintptr_t v, pyrt_local_fn fn, void *arg)
{
    char n[PYRT_MAX_STR / 4], type[128], value[MEM_VALUE + 1];
    if (!v || str_plain(rd, name, n, sizeof n) != 0)
        return;
    pyrt_mem_value(v, rd, type, sizeof type, value, sizeof value);
    fn(arg, n, type, value);
}

/* The size and first n items of the tuple at t. The size, or -1. */
static Py_ssize_t tuple_items(pyrt_read_fn rd, uintptr_t t, uintptr_t *items, Py_ssize_t n)
{
    Py_ssize_t size;
    if (type_of(rd, t) != (uintptr_t)PYRT_TUPLE_TYPE ||
        !rd_ok(rd, t + offsetof(PyVarObject, ob_size), &size, sizeof size) || size < 0 ||
        size > MEM_MAX_SIZE)
        return -1;
    if (n > size)
        n = size;
    return n == 0 ||
                   rd_ok(rd, t + offsetof(PyTupleObject, ob_item), items, (size_t)n * sizeof *items)
               ? size
               : -1;
}

int pyrt_mem_locals(uintptr_t frame, uintptr_t code, pyrt_read_fn rd, pyrt_local_fn fn, void *arg)
{
    PyCodeObject co;
    uintptr_t names[MEM_LOCALS], vals[MEM_LOCALS];
    if (!pyrt_ptr_ok((const void *)frame, sizeof(void *)) || !rd_ok(rd, code, &co, sizeof co) ||
        Py_TYPE((PyObject *)&co) != PYRT_CODE_TYPE)
        return -1;
    if (!(co.co_flags & CO_NEWLOCALS))
        return -1; /* module or class body: its namespace is a dict (not read here) */
#if PY_VERSION_HEX >= 0x030B0000
    unsigned char kinds[MEM_LOCALS];
    Py_ssize_t n = co.co_nlocalsplus, size;
    if (n < 0)
        return -1;
    if (n > MEM_LOCALS)
        n = MEM_LOCALS;
    if ((size = tuple_items(rd, (uintptr_t)co.co_localsplusnames, names, n)) < 0)
        return -1;
    if (n > size)
        n = size;
    if (n && !rd_ok(rd, (uintptr_t)co.co_localspluskinds + offsetof(PyBytesObject, ob_sval), kinds,
                    (size_t)n))
        return -1;
#if PY_VERSION_HEX >= 0x030E0000
    _PyStackRef refs[MEM_LOCALS];
    if (n && !rd_ok(rd, frame + offsetof(_PyInterpreterFrame, localsplus), refs,
                    (size_t)n * sizeof refs[0]))
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        vals[i] = pyrt_ref_addr(refs[i]);
#else
    if (n && !rd_ok(rd, frame + offsetof(_PyInterpreterFrame, localsplus), vals,
                    (size_t)n * sizeof vals[0]))
        return -1;
#endif
    int count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uintptr_t v = vals[i];
#ifdef CO_FAST_HIDDEN
        if (kinds[i] & CO_FAST_HIDDEN)
            continue;
#endif
        if (kinds[i] & (CO_FAST_CELL | CO_FAST_FREE))
            v = cell_value(rd, v);
        if (v) {
            emit(rd, names[i], v, fn, arg);
            count++;
        }
    }
    return count;
#else
    Py_ssize_t nvar = co.co_nlocals, k = 0, n;
    uintptr_t part[MEM_LOCALS];
    int ncell = 0;
    if (nvar < 0)
        return -1;
    /* names[]: the varnames, then the cellvars, then the freevars (the order of
     * f_localsplus); ncell: where the cells begin. */
    uintptr_t tuples[3] = {(uintptr_t)co.co_varnames, (uintptr_t)co.co_cellvars,
                           (uintptr_t)co.co_freevars};
    for (int t = 0; t < 3 && k < MEM_LOCALS; t++) {
        Py_ssize_t want = t == 0 ? (nvar < MEM_LOCALS ? nvar : MEM_LOCALS) : MEM_LOCALS - k;
        Py_ssize_t size = tuple_items(rd, tuples[t], part, want);
        if (size < 0)
            return -1;
        if (t == 0 && size < nvar)
            return -1;
        if (size > want)
            size = want;
        memcpy(names + k, part, (size_t)size * sizeof part[0]);
        k += size;
        if (t == 0)
            ncell = (int)k;
    }
    n = k;
    if (n &&
        !rd_ok(rd, frame + offsetof(PyFrameObject, f_localsplus), vals, (size_t)n * sizeof vals[0]))
        return -1;
    int count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uintptr_t v = i >= ncell ? cell_value(rd, vals[i]) : vals[i];
        if (v) {
            emit(rd, names[i], v, fn, arg);
            count++;
        }
    }
    return count;
#endif
}
