/* SPDX-License-Identifier: MIT */
/* A module walker for samples/dlopen_loop.py --walk: dl_iterate_phdr with a callback that
 * works a little on each loaded object, so the loader's lock is held while code outside the
 * loader runs (as an unwinder or a plugin scanner does). Called through ctypes, without the
 * GIL. */
#define _GNU_SOURCE
#include <link.h>
#include <stddef.h>

static volatile unsigned long sink;

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    for (int i = 0; i < 20000; i++)
        sink += (unsigned long)info->dlpi_phnum * (unsigned long)i;
    return 0;
}

long dlopen_walk(void)
{
    return dl_iterate_phdr(visit, NULL);
}
