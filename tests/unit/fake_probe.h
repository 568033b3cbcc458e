/* SPDX-License-Identifier: MIT */
/* Knobs of the fake probe (fake_probe.c) used by the dap/ unit tests. */
#ifndef FAKE_PROBE_H
#define FAKE_PROBE_H
extern int fake_gil_timeout;
extern int fake_listen_calls;

#include <stdlib.h>
#include <string.h>

/* Zeroed memory for the fakes' own structures: not calloc, whose failures the unit tests
 * inject into the code under test (fail_alloc.c). Never fails (aborts instead). */
static inline void *fake_zalloc(size_t n, size_t size)
{
    void *(*volatile zero)(void *, int, size_t) = memset; /* not folded into calloc */
    void *p = malloc(n * size);
    if (!p)
        abort();
    return zero(p, 0, n * size);
}
#endif
