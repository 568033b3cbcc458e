/* SPDX-License-Identifier: MIT */
/* Which CPython a process runs: a mapped libpython3.X (shared builds such as pyenv's) gives the
 * minor version; otherwise the executable must carry the interpreter (Debian's python3 links it
 * statically). The micro version comes from the Py_Version constant (3.11+) or, before that, the
 * PY_VERSION string in the binary. Files are read through /proc/PID/root (the target's view).
 * A free-threaded build (Py_GIL_DISABLED, "3.13t") is told by the size of its None object: its
 * object header holds the owning thread, a lock and split reference counts, 32 bytes on 64-bit
 * against the default build's 16 (ob_refcnt, ob_type), the same on every version. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Find the PY_VERSION literal "M.m.micro[tag]" NUL-terminated, and parse it. The linker may have
 * merged it into the tail of a longer string ("/usr/lib/.../3.9.18"), so the byte before it only
 * has to be something other than a digit or a dot. major < 0 means any 3.x version. Read-only
 * data (.rodata) holds it: only that is scanned when the file names its sections (a libpython
 * with debug information is 13-30 MB, its .rodata 1-2 MB), else the whole file. Returns 0
 * with *micro (and *minor) set, or -ENOENT. */
static int scan_version(const struct ptrace_elf *e, int major, int *minor, int *micro)
{
    char pat[32];
    int plen = major >= 0 ? snprintf(pat, sizeof pat, "%d.%d.", major, *minor)
                          : snprintf(pat, sizeof pat, "3.");
    size_t off = 0, size = e->size;
    if (ptrace_elf_section(e, ".rodata", &off, &size) < 0 || size < 2)
        off = 0, size = e->size;
    const unsigned char *p = e->data + off + 1, *end = e->data + off + size;
    while (p < end) {
        const unsigned char *s = memmem(p, (size_t)(end - p), pat, (size_t)plen);
        if (!s)
            break;
        p = s + 1;
        if ((s[-1] >= '0' && s[-1] <= '9') || s[-1] == '.')
            continue;
        char buf[24];
        size_t n = 0;
        while (s + n < end && n < sizeof buf - 1 && s[n] != 0)
            n++;
        if (s + n >= end || s[n] != 0 || n >= sizeof buf - 1)
            continue;
        memcpy(buf, s, n);
        buf[n] = '\0';
        int a, b, c, used = 0;
        if (sscanf(buf, "%d.%d.%d%n", &a, &b, &c, &used) != 3 || a != 3 || b > 40 || c > 99)
            continue;
        /* Allow only a release tag after the numbers ("3.8.18", "3.13.0rc1", "3.12.1+"). */
        const char *t = buf + used;
        if (*t && !strchr("abrc+", *t))
            continue;
        *minor = b;
        *micro = c;
        return 0;
    }
    return -ENOENT;
}

/* Py_Version (3.11+) is a const: read it from the file, no need to touch the target. */
static int read_py_version(const struct ptrace_elf *e, int *major, int *minor, int *micro)
{
    uint64_t addr, size;
    uint32_t hex;
    if (ptrace_elf_sym(e, "Py_Version", &addr, &size) < 0 || ptrace_elf_read(e, addr, &hex, 4) < 0)
        return -ENOENT;
    *major = (int)(hex >> 24) & 0xff;
    *minor = (int)(hex >> 16) & 0xff;
    *micro = (int)(hex >> 8) & 0xff;
    return *major >= 2 ? 0 : -ENOENT;
}

/* 1 when the interpreter in e is a free-threaded build (see the top), 0 when not or unknown. */
static int free_threaded(const struct ptrace_elf *e)
{
    uint64_t a, size;
    return ptrace_elf_sym(e, "_Py_NoneStruct", &a, &size) == 0 && size > 2 * sizeof(void *);
}

static int status_err(pid_t pid, int rc, struct pb_err *err)
{
    if (rc == -ESRCH)
        return pb_err_set(err, -ESRCH, "no process %d: check the pid", (int)pid);
    if (rc == -EACCES || rc == -EPERM)
        return pb_err_set(err, -EACCES,
                          "cannot read /proc/%d: it belongs to another user; run as that user or "
                          "root",
                          (int)pid);
    return pb_err_set(err, rc, "cannot read /proc/%d: %s", (int)pid, pb_strerror(rc));
}

/* What ptrace_pyver_memo keeps: the version read from one file (a libpython or an executable,
 * told by its device, inode and path as the target sees it), or that it carries none (rc). Per
 * thread, as the maps' hold (procfs.c). */
#define MEMO_FILES 16
static _Thread_local struct {
    int on, n, next;
    struct {
        unsigned long long dev;
        unsigned long ino;
        int rc, major, minor, micro, free_threaded;
        char path[256];
    } e[MEMO_FILES];
} memo;

void ptrace_pyver_memo(int on)
{
    memset(&memo, 0, sizeof memo);
    memo.on = on;
}

static int memo_find(unsigned long long dev, unsigned long ino, const char *path)
{
    for (int i = 0; memo.on && i < memo.n; i++)
        if (memo.e[i].dev == dev && memo.e[i].ino == ino && strcmp(memo.e[i].path, path) == 0)
            return i;
    return -1;
}

/* The remembered answer for the file into v (its source set to path): its rc, or 1 if none. */
static int memo_get(unsigned long long dev, unsigned long ino, const char *path,
                    struct ptrace_pyver *v)
{
    int i = memo_find(dev, ino, path);
    if (i < 0)
        return 1;
    if (memo.e[i].rc == 0) {
        v->major = memo.e[i].major;
        v->minor = memo.e[i].minor;
        v->micro = memo.e[i].micro;
        v->free_threaded = memo.e[i].free_threaded;
        pb_strlcpy(v->source, path, sizeof v->source);
    }
    return memo.e[i].rc;
}

static void memo_put(unsigned long long dev, unsigned long ino, const char *path, int rc,
                     const struct ptrace_pyver *v)
{
    if (!memo.on || strlen(path) >= sizeof memo.e[0].path || memo_find(dev, ino, path) >= 0)
        return;
    int i = memo.n < MEMO_FILES ? memo.n++ : (memo.next++ % MEMO_FILES);
    memo.e[i].dev = dev;
    memo.e[i].ino = ino;
    memo.e[i].rc = rc;
    memo.e[i].major = v->major;
    memo.e[i].minor = v->minor;
    memo.e[i].micro = v->micro;
    memo.e[i].free_threaded = v->free_threaded;
    pb_strlcpy(memo.e[i].path, path, sizeof memo.e[i].path);
}

/* libpython3.X from the maps: "libpython3.11.so.1.0", "libpython3.7m.so.1.0". */
static int from_libpython(pid_t pid, const struct ptrace_maps *m, struct ptrace_pyver *v)
{
    const struct ptrace_map *mp = ptrace_maps_lookup(m, "libpython", "0123456789");
    if (!mp)
        return -ENOENT;
    if (memo_get(mp->dev, mp->inode, mp->path, v) == 0)
        return 0;
    int major, minor;
    if (sscanf(ptrace_path_base(mp->path), "libpython%d.%d", &major, &minor) != 2)
        return -ENOENT;
    v->major = major;
    v->minor = minor;
    v->micro = -1;
    pb_strlcpy(v->source, mp->path, sizeof v->source);
    struct ptrace_module mod;
    if (ptrace_module_open(pid, m, mp, &mod) == 0) {
        int a, b, c;
        if (read_py_version(&mod.elf, &a, &b, &c) == 0 && a == major && b == minor)
            v->micro = c;
        else if ((b = minor, scan_version(&mod.elf, major, &b, &c)) == 0)
            v->micro = c;
        v->free_threaded = free_threaded(&mod.elf);
        ptrace_module_close(&mod);
        memo_put(mp->dev, mp->inode, mp->path, 0, v); /* read: not a guess from the name */
    }
    return 0;
}

/* The executable carries the interpreter (static libpython) or is named pythonX.Y. */
static int from_exe(pid_t pid, struct ptrace_pyver *v)
{
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return -errno;
    target[n] = '\0';
    static const char del[] = " (deleted)";
    if ((size_t)n > sizeof del - 1 && strcmp(target + n - (sizeof del - 1), del) == 0)
        target[n - (sizeof del - 1)] = '\0';
    pb_strlcpy(v->source, target, sizeof v->source);
    struct stat st;
    int keyed = memo.on && stat(link, &st) == 0;
    int rc = keyed ? memo_get(st.st_dev, st.st_ino, target, v) : 1;
    if (rc <= 0)
        return rc;
    struct ptrace_elf e;
    rc = ptrace_elf_open(link, &e); /* /proc/PID/exe opens the very file, in any namespace */
    if (rc < 0)
        return rc;
    int major = -1, minor = -1, micro = -1;
    uint64_t a, s;
    if (read_py_version(&e, &major, &minor, &micro) == 0) {
        rc = 0;
    } else if (ptrace_elf_sym(&e, "Py_Initialize", &a, &s) == 0 ||
               ptrace_elf_sym(&e, "_PyRuntime", &a, &s) == 0 ||
               ptrace_elf_sym(&e, "Py_Main", &a, &s) == 0) {
        /* A static interpreter before 3.11: the name, then the PY_VERSION string. */
        if (sscanf(ptrace_path_base(target), "python%d.%d", &major, &minor) == 2) {
            if (scan_version(&e, major, &minor, &micro) < 0)
                micro = -1;
            rc = 0;
        } else if (scan_version(&e, -1, &minor, &micro) == 0) {
            major = 3;
            rc = 0;
        } else {
            rc = -ENOENT;
        }
    } else {
        rc = -ENOENT;
    }
    v->free_threaded = free_threaded(&e);
    ptrace_elf_close(&e);
    if (rc == 0) {
        v->major = major;
        v->minor = minor;
        v->micro = micro;
    }
    if (keyed)
        memo_put(st.st_dev, st.st_ino, target, rc, v);
    return rc;
}

int ptrace_pyver_detect(pid_t pid, struct ptrace_pyver *v, struct pb_err *err)
{
    return ptrace_pyver_detect_mapping(pid, v, NULL, NULL, err);
}

int ptrace_pyver_detect_mapping(pid_t pid, struct ptrace_pyver *v, const char *name_prefix,
                                int *mapped, struct pb_err *err)
{
    struct ptrace_status st;
    struct ptrace_maps m = {0};
    memset(v, 0, sizeof *v);
    if (mapped)
        *mapped = 0;
    int rc = ptrace_status_read(pid, &st);
    if (rc < 0)
        return status_err(pid, rc, err);
    if (st.state == 'Z' || st.state == 'X')
        return pb_err_set(err, -ESRCH, "process %d (%s) has exited: check the pid", (int)pid,
                          st.comm);
    rc = ptrace_maps_read(pid, &m);
    if (rc < 0)
        return status_err(pid, rc, err);
    if (mapped && name_prefix)
        *mapped = ptrace_maps_lookup(&m, name_prefix, NULL) != NULL;
    rc = from_libpython(pid, &m, v);
    if (rc == -ENOENT) {
        rc = from_exe(pid, v);
        if (rc == -EACCES || rc == -EPERM) {
            rc = status_err(pid, -EACCES, err);
            goto out;
        }
    }
    if (rc < 0 && ptrace_proc_gone(pid)) {
        /* It died while we read it (its maps read empty once it exits): not a verdict on
         * what it ran. */
        rc = pb_err_set(err, PB_EGONE,
                        "process %d (%s) exited while probing read it: check the "
                        "pid",
                        (int)pid, st.comm);
        goto out;
    }
    if (rc < 0) {
        rc = pb_err_set(err, PB_ENOPYTHON,
                        "process %d (%s) is not a Python process: give the pid of a python "
                        "program",
                        (int)pid, st.comm);
        goto out;
    }
    PB_LOG(PB_LOG_DEBUG, "pid %d runs Python %d.%d.%d (%s)", (int)pid, v->major, v->minor, v->micro,
           v->source);
out:
    ptrace_maps_free(&m);
    return rc;
}

int ptrace_pysyms(pid_t pid, const char *const *names, int n, unsigned long *addrs,
                  struct pb_err *err)
{
    struct ptrace_pyver v;
    struct ptrace_maps m = {0};
    struct ptrace_module mod;
    const struct ptrace_map *mp = NULL;
    int rc = ptrace_pyver_detect(pid, &v, err);
    if (rc < 0)
        return rc;
    if ((rc = ptrace_maps_read(pid, &m)) < 0)
        return status_err(pid, rc, err);
    for (size_t i = 0; i < m.n && !mp; i++) /* the object the version came from */
        if (strcmp(m.v[i].path, v.source) == 0)
            mp = &m.v[i];
    if (!mp) {
        rc = pb_err_set(err, PB_ENOPYTHON, "process %d: %s is not mapped", (int)pid, v.source);
    } else if ((rc = ptrace_module_open(pid, &m, mp, &mod)) < 0) {
        rc = pb_err_set(err, rc, "cannot read %s of process %d: %s", mp->path, (int)pid,
                        pb_strerror(rc));
    } else {
        for (int i = 0; i < n; i++)
            addrs[i] = ptrace_module_sym(&mod, names[i], NULL);
        ptrace_module_close(&mod);
    }
    ptrace_maps_free(&m);
    return rc;
}

int ptrace_file_bias(const char *path, unsigned long start, unsigned long off, unsigned long *bias)
{
    struct ptrace_elf e;
    uint64_t b = 0;
    int rc = ptrace_elf_open(path, &e);
    if (rc < 0)
        return rc;
    rc = ptrace_elf_bias(&e, start, off, &b);
    ptrace_elf_close(&e);
    *bias = (unsigned long)b;
    return rc;
}

int ptrace_file_syms(const char *path, unsigned long start, unsigned long off,
                     const char *const *names, int n, unsigned long *addrs)
{
    struct ptrace_elf e;
    uint64_t bias, v, sz;
    int rc = ptrace_elf_open(path, &e);
    if (rc < 0)
        return rc;
    if ((rc = ptrace_elf_bias(&e, start, off, &bias)) == 0)
        for (int i = 0; i < n; i++)
            addrs[i] = ptrace_elf_sym(&e, names[i], &v, &sz) == 0 ? (unsigned long)(v + bias) : 0;
    ptrace_elf_close(&e);
    return rc;
}

/* Whether the file at path may hold _asyncio (its own module, libpython, or a python
 * executable it is built into). */
int ptrace_asyncio_candidate(const char *path)
{
    const char *b = ptrace_path_base(path);
    return strstr(b, "_asyncio.") || strncmp(b, "libpython", 9) == 0 ||
           strncmp(b, "python", 6) == 0;
}

int ptrace_file_section(const char *path, const char *name, void *buf, size_t n)
{
    struct ptrace_elf e;
    size_t off, size;
    int rc = ptrace_elf_open(path, &e);
    if (rc < 0)
        return rc;
    if ((rc = ptrace_elf_section(&e, name, &off, &size)) == 0 && size < n)
        rc = -ENOENT;
    if (rc == 0)
        memcpy(buf, e.data + off, n);
    ptrace_elf_close(&e);
    return rc;
}

int ptrace_asyncio_section(pid_t pid, const char *name, void *buf, size_t n, struct pb_err *err)
{
    struct ptrace_maps m = {0};
    int rc = ptrace_maps_read(pid, &m), found = 0, mapped = 0;
    if (rc < 0)
        return status_err(pid, rc, err);
    for (size_t i = 0; i < m.n && !found; i++) {
        struct ptrace_module mod;
        size_t off, size;
        int seen = 0;
        if (!m.v[i].path[0] || !ptrace_asyncio_candidate(m.v[i].path))
            continue;
        for (size_t k = 0; k < i && !seen; k++) /* each file once */
            seen = strcmp(m.v[k].path, m.v[i].path) == 0;
        if (seen || ptrace_module_open(pid, &m, &m.v[i], &mod) < 0)
            continue;
        mapped |= strstr(ptrace_path_base(m.v[i].path), "_asyncio.") != NULL;
        if (ptrace_elf_section(&mod.elf, name, &off, &size) == 0 && size >= n) {
            memcpy(buf, mod.elf.data + off, n);
            found = 1;
        }
        ptrace_module_close(&mod);
    }
    ptrace_maps_free(&m);
    if (found)
        return 0;
    if (!mapped)
        return 1; /* _asyncio not loaded: no C task */
    return pb_err_set(err, -ENOENT, "its _asyncio module has no %s section", name);
}
