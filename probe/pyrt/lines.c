/* SPDX-License-Identifier: MIT */
/* Line numbers from an instruction offset and a line table, on bytes already copied with
 * fault-proof reads: co_lnotab (3.8, 3.9), the PEP 626 co_linetable of 3.10, and the location
 * table of 3.11+ (CPython's Objects/locations.md). Pure functions: every loop ends at the end
 * of its buffer, nothing is allocated (async-signal-safe: crash reports and the sampler use
 * them). All three are compiled in every build so the tests can check them all. */
#include "frames.h"

#include <limits.h>

/* The running line is summed in a long long from deltas the table holds: a table read while
 * its code object is built or freed can hold anything, and an int sum would overflow. A line
 * outside int is no line (-1). Positions are summed the same way. */
static int line_of(long long line)
{
    return line >= INT_MIN && line <= INT_MAX ? (int)line : -1;
}

/* co_lnotab: pairs (address delta, line delta), line delta signed since 3.6. The line of addr
 * is the one reached before the first address beyond addr. */
int pyrt_line_lnotab(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    long long line = firstlineno;
    long long a = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        a += t[i];
        if (a > addr)
            break;
        line += (signed char)t[i + 1];
    }
    return line_of(line);
}

/* 3.10 co_linetable: pairs (byte length of the range, signed line delta); a delta of -128
 * means "no line" for that range without changing the running line. Ranges of length 0 only
 * move the line. A negative addr (frame not started) gives the first line. */
int pyrt_line_310(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    long long line = firstlineno;
    long long end = 0;
    if (addr < 0)
        return firstlineno;
    for (size_t i = 0; i + 1 < n; i += 2) {
        long long start = end;
        int ldelta = (signed char)t[i + 1];
        end += t[i];
        if (ldelta != -128)
            line += ldelta;
        if (start <= addr && addr < end)
            return ldelta == -128 ? -1 : line_of(line);
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
 * (2 bytes each). Codes: 15 no location; 14 long form (svarint line delta, then varints of the
 * end line delta, start column + 1 and end column + 1: 0 is "no column"); 13 line delta only
 * (svarint), no columns; 10-12 line delta c-10, then the start and end column bytes; 0-9 same
 * line, one byte: start column c*8 + bits 4-6, end column start + bits 0-3. Continuation
 * bytes have the top bit clear. Columns are 0-based offsets in UTF-8 bytes, the end exclusive,
 * as co_positions() gives them. */
int pyrt_loc_311(const unsigned char *t, size_t n, int firstlineno, int addr, struct pyrt_loc *loc)
{
    long long line = firstlineno;
    long long end = 0, start;
    size_t i = 0;
    struct pyrt_loc l;
    loc->line = loc->end_line = loc->col = loc->end_col = -1;
    if (addr < 0) {
        loc->line = firstlineno;
        return firstlineno;
    }
    while (i < n) {
        unsigned char first = t[i++];
        int code;
        long long el = -1, c = -1, ec = -1, thisline = -1;
        if (!(first & 0x80))
            continue; /* not an entry start: resynchronise on the next one */
        code = (first >> 3) & 15;
        start = end;
        end += ((first & 7) + 1) * 2;
        switch (code) {
        case 15: break;
        case 14:
            line += read_svarint(t, n, &i);
            thisline = line;
            el = line + read_varint(t, n, &i);
            c = (long long)read_varint(t, n, &i) - 1;
            ec = (long long)read_varint(t, n, &i) - 1;
            break;
        case 13:
            line += read_svarint(t, n, &i);
            thisline = el = line;
            break;
        case 10:
        case 11:
        case 12:
            line += code - 10;
            thisline = el = line;
            c = i < n ? t[i] : -1;
            ec = i + 1 < n ? t[i + 1] : -1;
            i += 2;
            break;
        default:
            thisline = el = line;
            if (i < n) {
                c = code * 8 + ((t[i] >> 4) & 7);
                ec = c + (t[i] & 15);
            }
            i += 1;
            break;
        }
        if (start <= addr && addr < end) {
            l.line = line_of(thisline);
            l.end_line = l.line < 0 ? -1 : line_of(el);
            l.col = l.end_line < 0 || c < 0 ? -1 : line_of(c);
            l.end_col = l.col < 0 || ec < 0 ? -1 : line_of(ec);
            if (l.col < 0)
                l.end_col = -1;
            *loc = l;
            return l.line;
        }
    }
    return -1;
}

int pyrt_line_loc(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    struct pyrt_loc l;
    return pyrt_loc_311(t, n, firstlineno, addr, &l);
}
