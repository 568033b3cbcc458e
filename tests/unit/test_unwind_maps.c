/* SPDX-License-Identifier: MIT */
/* The two ways probe/sig/unwind_maps.c finds the mapping holding an address: the kernel's
 * PROCMAP_QUERY ioctl (Linux 6.11+) and /proc/self/maps read as text. They agree on bounds,
 * offset and name for this process's stack, its own code and an anonymous mapping; an
 * unmapped address gets no answer; a kernel without the ioctl says so (-2). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sig/unwind.h"
#include "unit.h"

/* 1 when the running kernel is at least 6.11 (it has PROCMAP_QUERY). */
static int kernel_has_query(void)
{
    struct utsname u;
    int a = 0, b = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &a, &b) != 2)
        return 0;
    return a > 6 || (a == 6 && b >= 11);
}

TEST(maps_query_agrees_with_maps_text)
{
    static char text[1 << 20];
    struct unwind_maps m = {text, sizeof text, 0};
    int local = 0;
    void *anon = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT(anon != MAP_FAILED);
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    ASSERT(fd >= 0);
    sig_unwind_maps_read(&m);
    ASSERT(m.len > 0);
    uintptr_t addrs[] = {(uintptr_t)&local, (uintptr_t)&kernel_has_query, (uintptr_t)anon + 4096};
    const char *kinds[] = {"[stack]", "/", ""};
    char name[256];
    for (int i = 0; i < 3; i++) {
        struct unwind_mapline t, q;
        ASSERT_EQ(sig_unwind_maps_line(&m, addrs[i], &t), 0);
        int rc = sig_unwind_maps_query(fd, addrs[i], &q, name, sizeof name);
        if (rc == -2) {
            ASSERT(!kernel_has_query()); /* only an older kernel may lack it */
            break;
        }
        ASSERT_EQ(rc, 0);
        ASSERT_EQ(q.lo, t.lo);
        ASSERT_EQ(q.hi, t.hi);
        ASSERT_EQ(q.off, t.off);
        ASSERT_EQ((long)(q.path_end - q.path), (long)(t.path_end - t.path));
        ASSERT(memcmp(q.path, t.path, (size_t)(t.path_end - t.path)) == 0);
        ASSERT(strncmp(q.path, kinds[i], strlen(kinds[i])) == 0);
        ASSERT(addrs[i] >= q.lo && addrs[i] < q.hi);
    }
    struct unwind_mapline q;
    if (kernel_has_query()) {
        ASSERT_EQ(sig_unwind_maps_query(fd, 4096, &q, name, sizeof name), -1); /* nothing there */
        ASSERT_EQ(sig_unwind_maps_query(fd, (uintptr_t)&kernel_has_query, &q, name, 2), -1);
    }
    close(fd);
    munmap(anon, 3 * 4096);
}
