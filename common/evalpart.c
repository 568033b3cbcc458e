/* SPDX-License-Identifier: MIT */
/* The detached parts of the interpreter loop, found from its exported entry's jumps (pb.h): used
 * by the probe over its own memory (probe/prof/evalpart.c) and by the CLI over an object file
 * (a core's interpreter: injector/cli/ext/srcline.c). x86-64 encodings: e9 rel32 (jmp), 0f 8x
 * rel32 (jcc). Pure: reads only code. */
#include "pb.h"

#include <stdint.h>
#include <string.h>

int pb_detached_parts(const unsigned char *code, size_t n, unsigned long lo,
                      unsigned long (*start_of)(unsigned long pc, void *arg),
                      int (*is_symbol)(unsigned long addr, void *arg), void *arg,
                      unsigned long *parts, int max)
{
    unsigned long cand[64], hi = lo + n;
    int hits[64], ncand = 0, np = 0;
    for (size_t i = 0; i + 6 <= n; i++) {
        int32_t d;
        unsigned long to;
        if (code[i] == 0xe9) {
            memcpy(&d, code + i + 1, 4);
            to = lo + i + 5 + (unsigned long)(long)d;
        } else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80) {
            memcpy(&d, code + i + 2, 4);
            to = lo + i + 6 + (unsigned long)(long)d;
        } else {
            continue;
        }
        if (to >= lo && to < hi)
            continue;
        unsigned long s = start_of(to, arg);
        if (!s || s == lo)
            continue;
        int k = 0;
        while (k < ncand && cand[k] != s)
            k++;
        if (k == ncand) {
            if (ncand == 64)
                continue;
            cand[ncand] = s;
            hits[ncand++] = 0;
        }
        hits[k]++;
    }
    for (int k = 0; k < ncand && np < max; k++)
        if (hits[k] >= 2 && !is_symbol(cand[k], arg))
            parts[np++] = cand[k];
    return np;
}
