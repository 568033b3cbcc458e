/* SPDX-License-Identifier: MIT */
/* Decoders working on bytes already copied with fault-proof reads: str and bytes objects (the
 * build version's own PyASCIIObject / PyCompactUnicodeObject layout, kinds 1/2/4 -> UTF-8), and
 * line numbers from an instruction offset and a line table: co_lnotab (3.8, 3.9), the PEP 626
 * co_linetable of 3.10, and the location table of 3.11+ (CPython's Objects/locations.md).
 * Nothing here calls CPython: memory freed or half-written under us gives a wrong name or
 * line, never a crash; every loop ends at the end of its buffer. The three line decoders are
 * compiled in every build so the tests can check them all. No GIL needed. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Appends code point c as UTF-8 if it fits before cap; lone surrogates become U+FFFD.
 * Returns the new length, or len unchanged when it does not fit. */
size_t pyrt_utf8_put(char *out, size_t len, size_t cap, uint32_t c)
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
        return pyrt_utf8_put(out, len, cap, 0xFFFD);
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

/* ---- line tables ---- */

/* co_lnotab: pairs (address delta, line delta), line delta signed since 3.6. The line of addr
 * is the one reached before the first address beyond addr. */
int probe_line_lnotab(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    int line = firstlineno;
    int a = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        a += t[i];
        if (a > addr)
            break;
        line += (signed char)t[i + 1];
    }
    return line;
}

/* 3.10 co_linetable: pairs (byte length of the range, signed line delta); a delta of -128
 * means "no line" for that range without changing the running line. Ranges of length 0 only
 * move the line. A negative addr (frame not started) gives the first line. */
int probe_line_310(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    int line = firstlineno;
    int end = 0;
    if (addr < 0)
        return firstlineno;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int start = end;
        int ldelta = (signed char)t[i + 1];
        end += t[i];
        if (ldelta != -128)
            line += ldelta;
        if (start <= addr && addr < end)
            return ldelta == -128 ? -1 : line;
    }
    return -1;
}

/* Unsigned varint of the location table: 6-bit chunks, least significant first, bit 6 set on
 * all but the last. Advances *i, never past n. */
static unsigned int read_varint(const unsigned char *t, size_t n, size_t *i)
{
    unsigned int v = 0;
    unsigned int shift = 0;
    while (*i < n) {
        unsigned char b = t[(*i)++];
        if (shift < 32)
            v |= (unsigned int)(b & 0x3F) << shift;
        shift += 6;
        if (!(b & 0x40))
            break;
    }
    return v;
}

static int read_svarint(const unsigned char *t, size_t n, size_t *i)
{
    unsigned int v = read_varint(t, n, i);
    return (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* 3.11+ location table. Each entry starts with a byte 1cccclll: code c, length l+1 code units
 * (2 bytes each). Codes: 15 no location; 14 long form (svarint line delta, then end line,
 * start and end column varints); 13 line delta only (svarint); 10-12 line delta c-10 and two
 * column bytes; 0-9 same line, one column byte. Continuation bytes have the top bit clear. */
int probe_line_loc(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    int line = firstlineno;
    int end = 0;
    size_t i = 0;
    if (addr < 0)
        return firstlineno;
    while (i < n) {
        unsigned char first = t[i++];
        int code, start, thisline;
        if (!(first & 0x80))
            continue; /* not an entry start: resynchronise on the next one */
        code = (first >> 3) & 15;
        start = end;
        end += ((first & 7) + 1) * 2;
        thisline = -1;
        switch (code) {
        case 15:
            break;
        case 14:
            line += read_svarint(t, n, &i);
            thisline = line;
            read_varint(t, n, &i); /* end line delta */
            read_varint(t, n, &i); /* start column + 1 */
            read_varint(t, n, &i); /* end column + 1 */
            break;
        case 13:
            line += read_svarint(t, n, &i);
            thisline = line;
            break;
        case 10:
        case 11:
        case 12:
            line += code - 10;
            thisline = line;
            i += 2;
            break;
        default:
            thisline = line;
            i += 1;
            break;
        }
        if (start <= addr && addr < end)
            return thisline;
    }
    return -1;
}
