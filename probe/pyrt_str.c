/* SPDX-License-Identifier: MIT */
/* Decoding str and bytes objects from copies made with fault-proof reads, for the no-GIL walk
 * (code names, file names) and for thread names. The layout is the build version's own
 * (PyASCIIObject / PyCompactUnicodeObject, kinds 1/2/4), so nothing here calls CPython: a
 * string freed or half-written under us gives garbage bytes at worst, never a crash.
 * No GIL needed. */
#include "pyrt_internal.h"

#include <stdlib.h>
#include <string.h>

const void *probe_obj_type(const void *obj)
{
    PyObject head;
    if (!probe_ptr_ok(obj, sizeof(void *)) || probe_mem_read(obj, &head, sizeof head) != 0)
        return NULL;
    return Py_TYPE(&head);
}

/* Appends code point c as UTF-8 if it fits before cap; lone surrogates become U+FFFD.
 * Returns the new length, or len unchanged when it does not fit. */
static size_t put_utf8(char *out, size_t len, size_t cap, uint32_t c)
{
    unsigned char b[4];
    size_t n;
    if (c >= 0xD800 && c <= 0xDFFF)
        c = 0xFFFD;
    if (c < 0x80) {
        b[0] = (unsigned char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (unsigned char)(0xC0 | (c >> 6));
        b[1] = (unsigned char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (c >> 12));
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (c & 0x3F));
        n = 3;
    } else if (c <= 0x10FFFF) {
        b[0] = (unsigned char)(0xF0 | (c >> 18));
        b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (c & 0x3F));
        n = 4;
    } else {
        return put_utf8(out, len, cap, 0xFFFD);
    }
    if (len + n > cap)
        return len;
    memcpy(out + len, b, n);
    return len + n;
}

char *probe_str_read(const void *obj, size_t max)
{
    /* Header and the start of the data in one read; most names need no second one. */
    union {
        PyASCIIObject a;
        PyCompactUnicodeObject c;
        PyUnicodeObject u;
        unsigned char raw[sizeof(PyUnicodeObject) + 256];
    } buf;
    size_t got, hdr, want, nchars;
    unsigned int kind;
    const char *data_addr;
    unsigned char *data = NULL;
    char *out;
    int heap = 0;

    if (!probe_ptr_ok(obj, sizeof(void *)))
        return NULL;
    got = probe_mem_read_upto(obj, buf.raw, sizeof buf.raw);
    if (got < sizeof(PyASCIIObject))
        return NULL;
    if (Py_TYPE(&buf.a.ob_base) != &PyUnicode_Type)
        return NULL;
    if (buf.a.length < 0)
        return NULL;
    kind = buf.a.state.kind;
    if (kind != 1 && kind != 2 && kind != 4)
        return NULL; /* 3.8-3.11 legacy string not ready (wchar_t kind 0): not decoded */
    nchars = (size_t)buf.a.length < max ? (size_t)buf.a.length : max;
    want = nchars * kind;
    if (buf.a.state.compact) {
        hdr = buf.a.state.ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject);
        data_addr = (const char *)obj + hdr;
        if (hdr + want <= got) {
            data = buf.raw + hdr;
        }
    } else {
        if (got < sizeof(PyUnicodeObject))
            return NULL;
        data_addr = buf.u.data.any;
    }
    if (!data) {
        data = malloc(want ? want : 1);
        if (!data)
            return NULL;
        heap = 1;
        if (want && probe_mem_read(data_addr, data, want) != 0) {
            free(data);
            return NULL;
        }
    }
    out = malloc(max + 1);
    if (out) {
        size_t len = 0;
        for (size_t i = 0; i < nchars; i++) {
            uint32_t c;
            if (kind == 1) {
                c = data[i];
            } else if (kind == 2) {
                uint16_t v;
                memcpy(&v, data + 2 * i, 2);
                c = v;
            } else {
                memcpy(&c, data + 4 * i, 4);
            }
            size_t nl = put_utf8(out, len, max, c);
            if (nl == len)
                break;
            len = nl;
        }
        out[len] = '\0';
    }
    if (heap)
        free(data);
    return out;
}

unsigned char *probe_bytes_read(const void *obj, size_t max, size_t *len)
{
    PyBytesObject head;
    size_t off = offsetof(PyBytesObject, ob_sval);
    unsigned char *out;
    size_t n;

    if (!probe_ptr_ok(obj, sizeof(void *)) || probe_mem_read(obj, &head, off) != 0)
        return NULL;
    if (Py_TYPE(&head) != &PyBytes_Type || Py_SIZE(&head) < 0)
        return NULL;
    n = (size_t)Py_SIZE(&head) < max ? (size_t)Py_SIZE(&head) : max;
    out = malloc(n ? n : 1);
    if (!out)
        return NULL;
    if (n && probe_mem_read((const char *)obj + off, out, n) != 0) {
        free(out);
        return NULL;
    }
    *len = n;
    return out;
}
