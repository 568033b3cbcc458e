/* SPDX-License-Identifier: MIT */
/* The native frames' file:line kept between runs (srccache.h). Entries sorted by offset,
 * found by binary search; the file is appended to a line at a time, so two CLIs running at
 * once at worst write one answer twice (the first is kept when read back). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srccache.h"

static ssize_t read_all(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w, n -= (size_t)w;
    }
    return 0;
}

/* Index of the first entry whose offset is >= off. */
static size_t lower(const struct cli_srccache *c, unsigned long long off)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->v[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct cli_srcent *cli_srccache_find(const struct cli_srccache *c, unsigned long long off)
{
    size_t i = lower(c, off);
    return i < c->n && c->v[i].off == off ? &c->v[i] : NULL;
}

static int clean(const char *s)
{
    return s && !strpbrk(s, "\t\n\r");
}

int cli_srccache_add(struct cli_srccache *c, const struct cli_srcent *e)
{
    if (c->n >= CLI_SRCCACHE_MAX || !clean(e->func) || !clean(e->file))
        return -1;
    size_t i = lower(c, e->off);
    if (i < c->n && c->v[i].off == e->off)
        return 0; /* known: the first answer stays */
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        struct cli_srcent *v = realloc(c->v, cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v, c->cap = cap;
    }
    char *func = strdup(e->func), *file = strdup(e->file);
    if (!func || !file) {
        free(func);
        free(file);
        return -1;
    }
    memmove(&c->v[i + 1], &c->v[i], (c->n - i) * sizeof *c->v);
    c->v[i] = (struct cli_srcent){.off = e->off,
                                  .symoff = e->symoff,
                                  .rc = e->rc,
                                  .line = e->line,
                                  .func = func,
                                  .file = file};
    c->n++;
    return 0;
}

int cli_srccache_format(const struct cli_srcent *e, char *out, size_t n)
{
    int k = snprintf(out, n, "%llx %d %llx %d\t%s\t%s\n", e->off, e->line, e->symoff, e->rc,
                     e->func, e->file);
    return k < 0 || (size_t)k >= n ? -1 : k;
}

/* One entry line (without its newline, len bytes, not NUL-terminated) into c. */
static void parse_line(struct cli_srccache *c, const char *s, size_t len)
{
    char buf[2048];
    if (len >= sizeof buf)
        return;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *t1 = strchr(buf, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
    if (!t2 || strchr(t2 + 1, '\t'))
        return;
    *t1 = *t2 = '\0';
    unsigned long long off, symoff;
    int line, rc, used = 0;
    if (sscanf(buf, "%llx %d %llx %d%n", &off, &line, &symoff, &rc, &used) != 4 ||
        buf[used] != '\0' || line < 0 || (rc != 0 && rc != -1))
        return;
    struct cli_srcent e = {
        .off = off, .symoff = symoff, .rc = rc, .line = line, .func = t1 + 1, .file = t2 + 1};
    cli_srccache_add(c, &e);
}

int cli_srccache_parse(struct cli_srccache *c, const char *buf, size_t n)
{
    size_t ml = strlen(CLI_SRCCACHE_MAGIC), il = strlen(c->ident);
    if (n < ml + il + 1 || memcmp(buf, CLI_SRCCACHE_MAGIC, ml) != 0 ||
        memcmp(buf + ml, c->ident, il) != 0 || buf[ml + il] != '\n')
        return -1;
    size_t i = ml + il + 1;
    while (i < n && c->n < CLI_SRCCACHE_MAX) {
        const char *nl = memchr(buf + i, '\n', n - i);
        if (!nl)
            break; /* a last line cut short (a writer died mid-line): left out */
        parse_line(c, buf + i, (size_t)(nl - (buf + i)));
        i = (size_t)(nl - buf) + 1;
    }
    return 0;
}

void cli_srccache_free(struct cli_srccache *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free((char *)c->v[i].func);
        free((char *)c->v[i].file);
    }
    free(c->v);
    c->v = NULL;
    c->n = c->cap = 0;
}

/* $XDG_CACHE_HOME/probing/srcline, else $HOME/.cache/probing/srcline, made 0700 as needed:
 * 0, or -1 (no home, or it cannot be made). */
static int cache_dir(char *out, size_t n)
{
    const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[3072];
    if (x && x[0] == '/')
        snprintf(base, sizeof base, "%s", x);
    else if (home && home[0] == '/')
        snprintf(base, sizeof base, "%s/.cache", home);
    else
        return -1;
    const char *parts[] = {"", "/probing", "/probing/srcline"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if ((size_t)snprintf(out, n, "%s%s", base, parts[i]) >= n)
            return -1;
        if (mkdir(out, 0700) != 0 && errno != EEXIST)
            return -1;
    }
    struct stat st;
    /* a directory of this user's (not one planted by someone else) */
    return stat(out, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() ? 0 : -1;
}

int cli_srccache_open(struct cli_srccache *c, pid_t pid, const char *object)
{
    memset(c, 0, sizeof *c);
    if (getenv("PROBING_NO_SRCCACHE"))
        return -1;
    char full[4096];
    struct stat st;
    int ok = 0;
    if (pid > 0 &&
        (size_t)snprintf(full, sizeof full, "/proc/%d/root%s", (int)pid, object) < sizeof full)
        ok = stat(full, &st) == 0;
    if (!ok && stat(object, &st) != 0)
        return -1;
    if (!S_ISREG(st.st_mode))
        return -1;
    if ((size_t)snprintf(c->ident, sizeof c->ident, "%llu %llu %lld %lld.%09ld %s",
                         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                         (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                         object) >= sizeof c->ident ||
        !clean(object))
        return -1;
    char dir[3200];
    if (cache_dir(dir, sizeof dir) < 0)
        return 0;                                 /* no cache: every lookup goes to DWARF */
    unsigned long long h = 0xcbf29ce484222325ull; /* FNV-1a of the identity */
    for (const char *s = c->ident; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    const char *slash = strrchr(object, '/');
    snprintf(c->path, sizeof c->path, "%s/%.64s-%016llx", dir, slash ? slash + 1 : object, h);
    int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    struct stat fs;
    if (fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == geteuid() && fs.st_size > 0 &&
        fs.st_size <= CLI_SRCCACHE_MAX_BYTES) {
        char *buf = malloc((size_t)fs.st_size);
        ssize_t got = buf ? read_all(fd, buf, (size_t)fs.st_size) : -1;
        if (got > 0 && cli_srccache_parse(c, buf, (size_t)got) == 0)
            c->bytes = got;
        else
            c->bytes = -1; /* another object's, or damaged: rewritten from scratch */
        free(buf);
    } else {
        c->bytes = -1;
    }
    close(fd);
    return 0;
}

/* Keeps the directory of c->path to CLI_SRCCACHE_FILES files before one more is made: the
 * least recently written go (objects rebuilt or gone leave their files behind). */
static void prune(const struct cli_srccache *c)
{
    char dir[sizeof c->path];
    snprintf(dir, sizeof dir, "%s", c->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    for (int round = 0; round < 8; round++) {
        DIR *d = opendir(dir);
        if (!d)
            return;
        struct dirent *de;
        int n = 0;
        char oldest[256] = "";
        struct timespec old = {0};
        while ((de = readdir(d))) {
            struct stat st;
            if (de->d_name[0] == '.' ||
                fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISREG(st.st_mode))
                continue;
            n++;
            if (!oldest[0] || st.st_mtim.tv_sec < old.tv_sec ||
                (st.st_mtim.tv_sec == old.tv_sec && st.st_mtim.tv_nsec < old.tv_nsec)) {
                old = st.st_mtim;
                snprintf(oldest, sizeof oldest, "%s", de->d_name);
            }
        }
        if (n < CLI_SRCCACHE_FILES || !oldest[0]) {
            closedir(d);
            return;
        }
        unlinkat(dirfd(d), oldest, 0);
        closedir(d);
    }
}

void cli_srccache_put(struct cli_srccache *c, const struct cli_srcent *e)
{
    char line[2048];
    if (cli_srccache_find(c, e->off) || cli_srccache_add(c, e) != 0 || !c->path[0])
        return;
    int k = cli_srccache_format(e, line, sizeof line);
    if (k < 0 || c->bytes + k > CLI_SRCCACHE_MAX_BYTES)
        return;
    int fd;
    if (c->bytes <= 0) { /* none yet, or not ours: a fresh file with its header */
        if (c->bytes == 0)
            prune(c);
        fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return;
        char head[600];
        int hk = snprintf(head, sizeof head, "%s%s\n", CLI_SRCCACHE_MAGIC, c->ident);
        if (hk < 0 || (size_t)hk >= sizeof head || write_all(fd, head, (size_t)hk) < 0) {
            close(fd);
            c->path[0] = '\0';
            return;
        }
        c->bytes = hk;
    } else {
        fd = open(c->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
            return;
    }
    if (write_all(fd, line, (size_t)k) == 0)
        c->bytes += k;
    close(fd);
}
