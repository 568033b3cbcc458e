/* SPDX-License-Identifier: MIT */
/* str and bytes objects read with fault-proof reads (the build version's own PyASCIIObject /
 * PyCompactUnicodeObject layout, kinds 1/2/4 -> UTF-8) into new malloc'd buffers. Nothing here
 * calls CPython: memory freed or half-written under us gives a wrong name, never a crash; every
 * loop ends at the end of its buffer. Line tables: lines.c. No GIL needed. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

char *pyrt_str_read(const void *obj, size_t max)
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

    if (!pyrt_ptr_ok(obj, sizeof(void *)))
        return NULL;
    got = pyrt_mem_read_upto(obj, buf.raw, sizeof buf.raw);
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
        if (want && pyrt_mem_read(data_addr, data, want) != 0) {
            free(data);
            return NULL;
        }
    }
    out = malloc(max + 1);
    if (out) {
        size_t len = 0;
        for (size_t i = 0; i < nchars; i++) {
            size_t nl = pyrt_utf8_put(out, len, max, pyrt_ucs_at(data, kind, i));
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

unsigned char *pyrt_bytes_read(const void *obj, size_t max, size_t *len)
{
    PyBytesObject head;
    size_t off = offsetof(PyBytesObject, ob_sval);
    unsigned char *out;
    size_t n;

    if (!pyrt_ptr_ok(obj, sizeof(void *)) || pyrt_mem_read(obj, &head, off) != 0)
        return NULL;
    if (Py_TYPE(&head) != &PyBytes_Type || Py_SIZE(&head) < 0)
        return NULL;
    n = (size_t)Py_SIZE(&head) < max ? (size_t)Py_SIZE(&head) : max;
    out = malloc(n ? n : 1);
    if (!out)
        return NULL;
    if (n && pyrt_mem_read((const char *)obj + off, out, n) != 0) {
        free(out);
        return NULL;
    }
    *len = n;
    return out;
}
