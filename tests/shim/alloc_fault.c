/* SPDX-License-Identifier: MIT */
/* LD_PRELOAD shim for a target process: makes one calloc of the probe (a call whose return
 * address is in libprobing) fail on demand, to test what a request answers when memory runs
 * out. Build: cc -shared -fPIC -o alloc_fault.so alloc_fault.c -ldl. Environment:
 *   ALLOC_FAULT_FILE=path   while path exists and holds a number N, the N-th calloc of the
 *                           probe from then on returns NULL; path is then removed (one fault).
 * Other callers (the interpreter, libraries) are never affected. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__libc_calloc(size_t n, size_t size);

static uintptr_t lo, hi; /* libprobing's text, once seen */
static int armed_n = -1, seen;

/* The end of the loaded object whose base is *data (its PT_LOAD segments). */
static int extent(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t *end = data;
    if (info->dlpi_addr != *end)
        return 0;
    uintptr_t e = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD &&
            info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz > e)
            e = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;
    *end = info->dlpi_addr + e;
    return 1;
}

static int from_probe(const void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    if (hi)
        return a >= lo && a < hi;
    Dl_info info;
    if (!dladdr(ret, &info) || !info.dli_fname || !strstr(info.dli_fname, "libprobing"))
        return 0;
    uintptr_t end = (uintptr_t)info.dli_fbase;
    dl_iterate_phdr(extent, &end);
    lo = (uintptr_t)info.dli_fbase;
    hi = end;
    return 1;
}

/* The armed count, read from the file (-1: not armed). */
static int armed(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[16] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atoi(buf) : -1;
}

void *calloc(size_t n, size_t size)
{
    const char *path = getenv("ALLOC_FAULT_FILE");
    if (path && from_probe(__builtin_return_address(0))) {
        int want = armed(path);
        if (want != armed_n) { /* newly armed */
            armed_n = want;
            seen = 0;
        }
        if (want > 0 && ++seen == want) {
            unlink(path);
            armed_n = -1;
            return NULL;
        }
    }
    return __libc_calloc(n, size);
}
