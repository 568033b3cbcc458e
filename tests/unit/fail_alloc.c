/* SPDX-License-Identifier: MIT */
/* Allocation failures on demand: the unit tests are linked with -Wl,--wrap=calloc, so every
 * calloc of the code under test (the server, the fakes) comes here; unit_fail_calloc(n) makes
 * the n-th one from now return NULL (once). Libraries (cJSON, libuv) are not affected. */
#include <stddef.h>

#include "fail_alloc.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);

static int countdown, failed;

void unit_fail_calloc(int nth)
{
    countdown = nth;
    failed = 0;
}

int unit_calloc_failed(void)
{
    return failed;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (countdown > 0 && --countdown == 0) {
        failed = 1;
        return NULL;
    }
    return __real_calloc(n, size);
}
