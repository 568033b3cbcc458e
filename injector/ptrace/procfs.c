/* SPDX-License-Identifier: MIT */
/* Reading a target from /proc: its mappings (/proc/PID/maps) and the few /proc/PID/status fields
 * the injector's checks need (State, TracerPid, Uid, Gid, NSpid). Also ptrace_maps_find from ptrace.h,
 * which the CLI uses to tell whether the probe is already loaded. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "procmap.h"

const char *ptrace_path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* One line of /proc/PID/maps, cut from its text (NUL-terminated, written in place):
 * "start-end perms offset dev inode   path". The kernel's fixed format, read without sscanf: a
 * process maps hundreds of files and the CLI reads the list before every injection. */
static int parse_line(char *line, struct ptrace_map *mp)
{
    char *p = line, *q;
    mp->start = strtoul(p, &q, 16);
    if (q == p || *q != '-')
        return -EINVAL;
    mp->end = strtoul(p = q + 1, &q, 16);
    if (q == p || *q != ' ')
        return -EINVAL;
    p = q + 1;
    size_t pl = strcspn(p, " ");
    if (pl == 0 || pl >= sizeof mp->perms || p[pl] != ' ')
        return -EINVAL;
    memcpy(mp->perms, p, pl);
    mp->perms[pl] = '\0';
    mp->offset = strtoul(p += pl + 1, &q, 16);
    if (q == p || *q != ' ')
        return -EINVAL;
    unsigned long major = strtoul(p = q + 1, &q, 16), minor = 0; /* the device, "fd:01" */
    if (q == p || *q != ':')
        return -EINVAL;
    minor = strtoul(p = q + 1, &q, 16);
    if (q == p || *q != ' ')
        return -EINVAL;
    mp->dev = (unsigned long long)major << 32 | minor;
    p = q;
    mp->inode = strtoul(p + 1, &q, 10);
    if (q == p + 1)
        return -EINVAL;
    while (*q == ' ')
        q++;
    mp->path = q;
    size_t len = strlen(q);
    static const char del[] = " (deleted)";
    if (len > sizeof del - 1 && strcmp(q + len - (sizeof del - 1), del) == 0)
        q[len - (sizeof del - 1)] = '\0';
    return 0;
}

/* ptrace_maps_hold's scope: the text of the first read of held's maps in it, reused. Per thread:
 * a scope in one thread (serve's attach) never answers another thread's reads. */
static _Thread_local struct {
    pid_t pid;
    char *text;
    size_t size;
} held;

void ptrace_maps_hold(pid_t pid)
{
    ptrace_maps_release();
    held.pid = pid;
}

void ptrace_maps_release(void)
{
    free(held.text);
    memset(&held, 0, sizeof held);
}

/* ptrace_maps_keep's: the first text read of each process (per thread, as held; a child forked
 * by the thread that read them inherits them). */
static _Thread_local struct {
    int on;
    size_t n, cap;
    struct kept_text {
        pid_t pid;
        char *text;
        size_t size;
    } * v;
} kept;

void ptrace_maps_keep(int on)
{
    for (size_t i = 0; i < kept.n; i++)
        free(kept.v[i].text);
    free(kept.v);
    memset(&kept, 0, sizeof kept);
    kept.on = on;
}

void ptrace_maps_keep_forget(pid_t pid)
{
    for (size_t i = 0; i < kept.n; i++)
        if (kept.v[i].pid == pid)
            kept.v[i].pid = 0; /* not freed: see ptrace.h */
}

static const struct kept_text *kept_find(pid_t pid)
{
    for (size_t i = 0; kept.on && i < kept.n; i++)
        if (kept.v[i].pid == pid)
            return &kept.v[i];
    return NULL;
}

static void kept_add(pid_t pid, const char *text, size_t size)
{
    if (!kept.on || kept_find(pid))
        return;
    if (kept.n == kept.cap) {
        size_t nc = kept.cap ? kept.cap * 2 : 64;
        struct kept_text *nv = realloc(kept.v, nc * sizeof *nv);
        if (!nv)
            return;
        kept.v = nv;
        kept.cap = nc;
    }
    char *t = malloc(size + 1);
    if (!t)
        return;
    memcpy(t, text, size + 1);
    kept.v[kept.n++] = (struct kept_text){.pid = pid, .text = t, .size = size};
}

/* n bytes at the end of a growing text. */
static int text_add(char **text, size_t *size, size_t *cap, const char *s, size_t n)
{
    if (*size + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 16384;
        while (nc < *size + n + 1)
            nc *= 2;
        char *nt = realloc(*text, nc);
        if (!nt)
            return -ENOMEM;
        *text = nt;
        *cap = nc;
    }
    memcpy(*text + *size, s, n);
    *size += n;
    (*text)[*size] = '\0';
    return 0;
}

/* Whether PROCMAP_QUERY may be asked: -1 not yet known, 0 no (an older kernel, or
 * PROBING_NO_PROCMAP_QUERY=1 set to test the text's way), 1 yes. Atomic: serve reads maps
 * from several threads. */
static atomic_int query_ok = -1;

/* The mappings of files with code, asked of the kernel one by one through fd (PROCMAP_QUERY),
 * written as /proc/PID/maps' lines: everything the injector looks up is among them (libc's,
 * the loader's and libpython's code, a probe's, the executable's), and the kernel formats no
 * line for the others (a process with torch maps 1,700 files' segments and anonymous areas:
 * 1.3 ms as text, 0.36 ms so). 1 done, 0 not available (read the text), or a negative code. */
static int query_exec_maps(int fd, char **text, size_t *size, size_t *cap)
{
    if (query_ok < 0) {
        const char *no = getenv("PROBING_NO_PROCMAP_QUERY");
        query_ok = !(no && *no && strcmp(no, "0") != 0);
    }
    if (!query_ok)
        return 0;
    char name[PATH_MAX + 1], line[2 * PATH_MAX + 128];
    for (unsigned long addr = 0;;) {
        struct procmap_query q;
        memset(&q, 0, sizeof q);
        q.size = sizeof q;
        q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA | PROCMAP_QUERY_VMA_EXECUTABLE |
                        PROCMAP_QUERY_FILE_BACKED_VMA;
        q.query_addr = addr;
        q.vma_name_size = sizeof name;
        q.vma_name_addr = (uint64_t)(uintptr_t)name;
        if (ioctl(fd, PROCMAP_QUERY, &q) != 0) {
            if (errno == ENOENT) /* no mapping at or above addr */
                return 1;
            if (addr == 0 && (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)) {
                query_ok = 0;
                return 0;
            }
            return errno == ESRCH ? 1 : -errno; /* gone: no maps, as the text reads */
        }
        if (q.vma_end <= addr)
            return -EIO;
        addr = q.vma_end;
        name[q.vma_name_size && q.vma_name_size <= sizeof name ? q.vma_name_size - 1 : 0] = '\0';
        int n = snprintf(
            line, sizeof line, "%lx-%lx %c%c%c%c %08lx %02x:%02x %lu ", (unsigned long)q.vma_start,
            (unsigned long)q.vma_end, q.vma_flags & PROCMAP_QUERY_VMA_READABLE ? 'r' : '-',
            q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE ? 'w' : '-',
            q.vma_flags & PROCMAP_QUERY_VMA_EXECUTABLE ? 'x' : '-',
            q.vma_flags & PROCMAP_QUERY_VMA_SHARED ? 's' : 'p', (unsigned long)q.vma_offset,
            q.dev_major, q.dev_minor, (unsigned long)q.inode);
        /* A newline in a name as the text writes it, so that a line stays a line. */
        for (const char *c = name; *c && n < (int)sizeof line - 5; c++) {
            if (*c == '\n')
                n += snprintf(line + n, sizeof line - (size_t)n, "\\012");
            else
                line[n++] = *c;
        }
        line[n++] = '\n';
        int rc = text_add(text, size, cap, line, (size_t)n);
        if (rc < 0)
            return rc;
    }
}

/* The whole of /proc/PID/maps' text from fd. 0 or a negative code. */
static int read_text(int fd, char **text, size_t *size, size_t *cap)
{
    for (;;) {
        if (*cap - *size < 4096) {
            size_t nc = *cap ? *cap * 2 : 65536;
            char *nt = realloc(*text, nc);
            if (!nt)
                return -ENOMEM;
            *text = nt;
            *cap = nc;
        }
        ssize_t r = read(fd, *text + *size, *cap - *size - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno == ESRCH ? -ESRCH : -EIO;
        if (r == 0)
            break;
        *size += (size_t)r;
    }
    (*text)[*size] = '\0';
    return 0;
}

int ptrace_maps_read(pid_t pid, struct ptrace_maps *m)
{
    char path[64];
    size_t cap = 0, size = 0, vcap = 0;
    int rc = 0, fd = -1;
    m->v = NULL;
    m->n = 0;
    m->text = NULL;
    const struct kept_text *k = kept_find(pid);
    if ((held.text && held.pid == pid) || k) {
        const char *from = held.text && held.pid == pid ? held.text : k->text;
        size = held.text && held.pid == pid ? held.size : k->size;
        if (!(m->text = malloc(size + 1)))
            return -ENOMEM;
        memcpy(m->text, from, size + 1);
        goto parse;
    }
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    rc = query_exec_maps(fd, &m->text, &size, &cap);
    /* No file with code mapped: a zombie, or a process between its exec and the mapping of its
     * new program (a launcher's child, caught on a loaded machine): the text tells them apart
     * as it did before PROCMAP_QUERY (an exec's new stack is mapped first: "not a Python
     * process", not "no process"). */
    if (rc == 1 && size == 0)
        rc = 0;
    if (rc == 0)
        rc = read_text(fd, &m->text, &size, &cap);
    if (rc >= 0 && !m->text) /* nothing mapped */
        rc = text_add(&m->text, &size, &cap, "", 0);
    if (rc < 0)
        goto out;
    rc = 0;
    m->text[size] = '\0';
    if (held.pid == pid && !held.text && (held.text = malloc(size + 1))) {
        memcpy(held.text, m->text, size + 1);
        held.size = size;
    }
    kept_add(pid, m->text, size);
parse:
    for (char *line = m->text, *nl; *line; line = nl) {
        nl = strchr(line, '\n');
        if (nl)
            *nl++ = '\0';
        else
            nl = line + strlen(line);
        if (m->n == vcap) {
            size_t ncap = vcap ? vcap * 2 : 256;
            struct ptrace_map *nv = realloc(m->v, ncap * sizeof *nv);
            if (!nv) {
                rc = -ENOMEM;
                goto out;
            }
            m->v = nv;
            vcap = ncap;
        }
        if (parse_line(line, &m->v[m->n]) == 0)
            m->n++;
    }
    if (m->n == 0)
        rc = -ESRCH; /* a zombie or kernel thread has no maps */
out:
    if (fd >= 0)
        close(fd);
    if (rc < 0)
        ptrace_maps_free(m);
    return rc;
}

void ptrace_maps_free(struct ptrace_maps *m)
{
    if (!m)
        return;
    free(m->v);
    free(m->text);
    m->v = NULL;
    m->text = NULL;
    m->n = 0;
}

const struct ptrace_map *ptrace_maps_lookup(const struct ptrace_maps *m, const char *prefix,
                                            const char *next)
{
    size_t plen = strlen(prefix);
    for (size_t i = 0; i < m->n; i++) {
        if (m->v[i].path[0] != '/')
            continue;
        const char *b = ptrace_path_base(m->v[i].path);
        if (strncmp(b, prefix, plen) != 0)
            continue;
        if (next && *next && (!b[plen] || !strchr(next, b[plen])))
            continue;
        return &m->v[i];
    }
    return NULL;
}

int ptrace_maps_find(pid_t pid, const char *name_prefix, char *path, size_t n)
{
    struct ptrace_maps m;
    int rc = ptrace_maps_read(pid, &m);
    if (rc < 0)
        return rc;
    const struct ptrace_map *mp = ptrace_maps_lookup(&m, name_prefix, NULL);
    rc = mp != NULL;
    if (mp && path && n)
        pb_strlcpy(path, mp->path, n);
    ptrace_maps_free(&m);
    return rc;
}

/* The value after "key:" in a status file, or NULL. */
static const char *field(const char *buf, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            p += klen + 1;
            while (*p == ' ' || *p == '\t')
                p++;
            return p;
        }
    }
    return NULL;
}

int ptrace_status_read(pid_t pid, struct ptrace_status *st)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    long r = pb_read_file(path, buf, sizeof buf);
    if (r < 0)
        return r == -ENOENT ? -ESRCH : (int)r;
    memset(st, 0, sizeof *st);
    const char *v;
    if ((v = field(buf, "Name")) != NULL) {
        size_t len = strcspn(v, "\n");
        if (len >= sizeof st->comm)
            len = sizeof st->comm - 1;
        memcpy(st->comm, v, len);
        st->comm[len] = '\0';
    }
    if ((v = field(buf, "State")) != NULL)
        st->state = *v;
    if ((v = field(buf, "TracerPid")) != NULL)
        st->tracer = (pid_t)strtol(v, NULL, 10);
    if ((v = field(buf, "Uid")) != NULL)
        st->uid = (uid_t)strtoul(v, NULL, 10);
    if ((v = field(buf, "Gid")) != NULL)
        st->gid = (gid_t)strtoul(v, NULL, 10);
    if ((v = field(buf, "SigIgn")) != NULL)
        st->sigign = strtoull(v, NULL, 16);
    if ((v = field(buf, "SigCgt")) != NULL)
        st->sigcgt = strtoull(v, NULL, 16);
    st->nspid = pid;
    if ((v = field(buf, "NSpid")) != NULL) {
        /* The last number on the line is the pid in the target's own namespace. */
        const char *end = v + strcspn(v, "\n");
        const char *last = v;
        for (const char *p = v; p < end; p++)
            if ((*p == ' ' || *p == '\t') && p + 1 < end && p[1] != ' ' && p[1] != '\t')
                last = p + 1;
        st->nspid = (pid_t)strtol(last, NULL, 10);
    }
    if (!st->state)
        return -EIO;
    return 0;
}

void ptrace_comm_read(pid_t pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    if (pb_read_file(path, buf, n) <= 0) {
        pb_strlcpy(buf, "?", n);
        return;
    }
    buf[strcspn(buf, "\n")] = '\0';
}
