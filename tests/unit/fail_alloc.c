/* SPDX-License-Identifier: MIT */
/* Allocation failures on demand: the unit tests are linked with -Wl,--wrap=calloc (and realloc,
 * strdup), so every such call of the code under test (the server, the rows builder, the fakes)
 * comes here; unit_fail_calloc(n) makes the n-th calloc from now return NULL (once), and so on for
 * each function with its own count. Libraries (cJSON, libuv) are not affected. */
#include <stddef.h>

#include "fail_alloc.h"

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

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

static int realloc_countdown, strdup_countdown;

void unit_fail_realloc(int nth)
{
    realloc_countdown = nth;
    failed = 0;
}

void unit_fail_strdup(int nth)
{
    strdup_countdown = nth;
    failed = 0;
}

void *__wrap_realloc(void *p, size_t size)
{
    if (realloc_countdown > 0 && --realloc_countdown == 0) {
        failed = 1;
        return NULL;
    }
    return __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
    if (strdup_countdown > 0 && --strdup_countdown == 0) {
        failed = 1;
        return NULL;
    }
    return __real_strdup(s);
}
