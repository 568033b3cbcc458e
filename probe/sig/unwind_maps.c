/* SPDX-License-Identifier: MIT */
/* The unwinder's second way to find modules (unwind.h), for a handler that has no module
 * table (crash capture): /proc/self/maps read into the caller's buffer with open(2)/read(2),
 * the line holding a pc, the mapping of its file at offset 0, and the ELF headers there
 * (sig_unwind_mod_from_image). Async-signal-safe: no allocation, no lock, no loader call. */
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "procmap.h"

void sig_unwind_maps_read(struct unwind_maps *m)
{
    m->len = 0;
    if (m->cap == 0)
        return;
    m->buf[0] = '\0';
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while (m->len + 1 < m->cap) {
        ssize_t r = read(fd, m->buf + m->len, m->cap - 1 - m->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        m->len += (size_t)r;
    }
    m->buf[m->len] = '\0';
    close(fd);
}

static unsigned long long hex_at(const char **p)
{
    unsigned long long v = 0;
    for (;; (*p)++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return v;
        v = v * 16 + (unsigned)d;
    }
}

static int parse_line(const char *line, const char *end, struct unwind_mapline *ml)
{
    const char *q = line;
    ml->lo = hex_at(&q);
    if (*q++ != '-')
        return -1;
    ml->hi = hex_at(&q);
    q += 6; /* " rwxp " */
    ml->off = hex_at(&q);
    /* Skip device and inode to the path. */
    for (int f = 0; f < 2 && q < end; f++) {
        while (q < end && *q == ' ')
            q++;
        while (q < end && *q != ' ' && *q != '\n')
            q++;
    }
    while (q < end && *q == ' ')
        q++;
    ml->path = q;
    while (q < end && *q != '\n')
        q++;
    ml->path_end = q;
    return 0;
}

int sig_unwind_maps_line(const struct unwind_maps *m, uintptr_t pc, struct unwind_mapline *ml)
{
    const char *p = m->buf, *end = m->buf + m->len;
    while (p < end) {
        const char *line = p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        if (parse_line(line, p, ml) == 0 && pc >= ml->lo && pc < ml->hi)
            return 0;
    }
    return -1;
}

int sig_unwind_maps_base(const struct unwind_maps *m, const struct unwind_mapline *ml,
                         uintptr_t *base)
{
    const char *p = m->buf, *end = m->buf + m->len;
    size_t len = (size_t)(ml->path_end - ml->path);
    struct unwind_mapline o;
    if (len == 0)
        return -1;
    while (p < end) {
        const char *line = p;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
        if (parse_line(line, p, &o) == 0 && o.off == 0 && o.lo <= ml->lo &&
            (size_t)(o.path_end - o.path) == len && memcmp(o.path, ml->path, len) == 0) {
            *base = (uintptr_t)o.lo;
            return 0;
        }
    }
    return -1;
}

int sig_unwind_maps_find(uintptr_t pc, struct unwind_mod *m, void *arg)
{
    const struct unwind_maps *maps = arg;
    struct unwind_mapline ml;
    uintptr_t base;
    if (!maps || sig_unwind_maps_line(maps, pc, &ml) != 0 ||
        sig_unwind_maps_base(maps, &ml, &base) != 0)
        return -1;
    return sig_unwind_mod_from_image(base, m, NULL);
}

int sig_unwind_maps_query(int fd, uintptr_t addr, struct unwind_mapline *ml, char *name, size_t cap)
{
    struct procmap_query q;
    memset(&q, 0, sizeof q);
    q.size = sizeof q;
    q.query_addr = addr;
    q.vma_name_size = (uint32_t)cap;
    q.vma_name_addr = (uint64_t)(uintptr_t)name;
    if (ioctl(fd, PROCMAP_QUERY, &q) != 0)
        return errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP ? -2 : -1;
    size_t n = q.vma_name_size ? q.vma_name_size - 1 : 0; /* with its terminating zero */
    if (n >= cap)
        return -1;
    name[n] = '\0';
    ml->lo = q.vma_start;
    ml->hi = q.vma_end;
    ml->off = q.vma_offset;
    ml->path = name;
    ml->path_end = name + n;
    return 0;
}
