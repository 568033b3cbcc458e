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
int probe_line_lnotab(const unsigned char *t, size_t n, int firstlineno, int addr)
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
int probe_line_310(const unsigned char *t, size_t n, int firstlineno, int addr)
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
 * (2 bytes each). Codes: 15 no location; 14 long form (svarint line delta, then end line,
 * start and end column varints); 13 line delta only (svarint); 10-12 line delta c-10 and two
 * column bytes; 0-9 same line, one column byte. Continuation bytes have the top bit clear. */
int probe_line_loc(const unsigned char *t, size_t n, int firstlineno, int addr)
{
    long long line = firstlineno;
    long long end = 0, start, thisline;
    size_t i = 0;
    if (addr < 0)
        return firstlineno;
    while (i < n) {
        unsigned char first = t[i++];
        int code;
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
            return line_of(thisline);
    }
    return -1;
}
