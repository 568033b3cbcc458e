/* SPDX-License-Identifier: MIT */
/* Symbol lookup in an ELF file read from disk (mapped read-only), without libelf: .dynsym/.dynstr
 * with symbol versions, then .symtab when present. Runtime addresses come from the load bias,
 * computed from the PT_LOAD segment that covers a mapping's file offset, so that executables,
 * PIE and shared objects with non-zero first p_vaddr all resolve right. 64-bit ELF only. */
#include "internal.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every offset and size below is the file's word: each is checked with pb_in_range (off + len
 * could wrap past 2^64), and each table read in place must be aligned for its type. */
static int in_file(const struct ptrace_elf *e, uint64_t off, uint64_t len)
{
    return pb_in_range(off, len, e->size);
}

int ptrace_elf_init(struct ptrace_elf *e, const void *data, size_t size)
{
    const Elf64_Ehdr *eh = data;
    e->data = data;
    e->size = size;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
        eh->e_phoff % 8 || !in_file(e, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)) ||
        (eh->e_shnum && (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff % 8 ||
                         !in_file(e, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))))) {
        e->data = NULL;
        e->size = 0;
        return -ENOEXEC;
    }
    return 0;
}

int ptrace_elf_open(const char *path, struct ptrace_elf *e)
{
    struct stat sb;
    int rc = 0;
    e->data = NULL;
    e->size = 0;
    int fd = pb_open_regular(path, &sb); /* a FIFO would block, a device act */
    if (fd < 0)
        return fd == -EINVAL || fd == -EISDIR ? -ENOEXEC : fd;
    if (sb.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        rc = -ENOEXEC;
        goto out;
    }
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        rc = -errno;
        goto out;
    }
    if ((rc = ptrace_elf_init(e, p, (size_t)sb.st_size)) < 0)
        munmap(p, (size_t)sb.st_size);
out:
    close(fd);
    return rc;
}

void ptrace_elf_close(struct ptrace_elf *e)
{
    if (e && e->data) {
        munmap((void *)e->data, e->size);
        e->data = NULL;
        e->size = 0;
    }
}

static const Elf64_Ehdr *ehdr(const struct ptrace_elf *e)
{
    return (const Elf64_Ehdr *)e->data;
}

static const Elf64_Phdr *phdr(const struct ptrace_elf *e, int i)
{
    return (const Elf64_Phdr *)(e->data + ehdr(e)->e_phoff) + i;
}

static const Elf64_Shdr *shdr(const struct ptrace_elf *e, unsigned i)
{
    if (i >= ehdr(e)->e_shnum)
        return NULL;
    return (const Elf64_Shdr *)(e->data + ehdr(e)->e_shoff) + i;
}

/* A symbol table with its string table and (for .dynsym) version table, bounds-checked. */
struct symtab {
    const Elf64_Sym *sym;
    size_t n;
    const char *str;
    size_t strsz;
    const uint16_t *ver; /* NULL if none */
};

static int table(const struct ptrace_elf *e, uint32_t type, struct symtab *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr(e, i);
        if (s->sh_type != type)
            continue;
        const Elf64_Shdr *ss = shdr(e, s->sh_link);
        if (!ss || !in_file(e, s->sh_offset, s->sh_size) || s->sh_offset % 8 ||
            !in_file(e, ss->sh_offset, ss->sh_size) || s->sh_entsize != sizeof(Elf64_Sym))
            return -ENOEXEC;
        t->sym = (const Elf64_Sym *)(e->data + s->sh_offset);
        t->n = s->sh_size / sizeof(Elf64_Sym);
        t->str = (const char *)e->data + ss->sh_offset;
        t->strsz = ss->sh_size;
        if (type == SHT_DYNSYM) {
            for (unsigned j = 0; j < ehdr(e)->e_shnum; j++) {
                const Elf64_Shdr *v = shdr(e, j);
                if (v->sh_type == SHT_GNU_versym && v->sh_link == i && v->sh_offset % 2 == 0 &&
                    in_file(e, v->sh_offset, (uint64_t)t->n * 2))
                    t->ver = (const uint16_t *)(e->data + v->sh_offset);
            }
        }
        return 0;
    }
    return -ENOENT;
}

static const char *symname(const struct symtab *t, const Elf64_Sym *s)
{
    if (s->st_name >= t->strsz)
        return "";
    const char *n = t->str + s->st_name;
    return memchr(n, '\0', t->strsz - s->st_name) ? n : "";
}

static int defined(const Elf64_Sym *s)
{
    int type = ELF64_ST_TYPE(s->st_info);
    return s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
           (type == STT_FUNC || type == STT_OBJECT || type == STT_GNU_IFUNC || type == STT_NOTYPE);
}

int ptrace_elf_section(const struct ptrace_elf *e, const char *name, size_t *off, size_t *size)
{
    const Elf64_Shdr *names = shdr(e, ehdr(e)->e_shstrndx);
    if (!names || !in_file(e, names->sh_offset, names->sh_size))
        return -ENOENT;
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr(e, i);
        if (s->sh_name >= names->sh_size || s->sh_type == SHT_NOBITS ||
            !in_file(e, s->sh_offset, s->sh_size))
            continue;
        const char *n = (const char *)e->data + names->sh_offset + s->sh_name;
        size_t left = names->sh_size - s->sh_name;
        if (strnlen(n, left) == strlen(name) && strncmp(n, name, left) == 0) {
            *off = (size_t)s->sh_offset;
            *size = (size_t)s->sh_size;
            return 0;
        }
    }
    return -ENOENT;
}

const char *ptrace_elf_needed(const struct ptrace_elf *e, int i)
{
    for (unsigned k = 0; k < ehdr(e)->e_shnum; k++) {
        const Elf64_Shdr *s = shdr(e, k), *ss;
        if (s->sh_type != SHT_DYNAMIC)
            continue;
        if (!(ss = shdr(e, s->sh_link)) || !in_file(e, s->sh_offset, s->sh_size) ||
            s->sh_offset % 8 || !in_file(e, ss->sh_offset, ss->sh_size))
            return NULL;
        const Elf64_Dyn *d = (const Elf64_Dyn *)(e->data + s->sh_offset);
        const char *str = (const char *)e->data + ss->sh_offset;
        for (size_t j = 0; j < s->sh_size / sizeof *d && d[j].d_tag != DT_NULL; j++) {
            if (d[j].d_tag != DT_NEEDED || i-- > 0)
                continue;
            if (d[j].d_un.d_val >= ss->sh_size ||
                !memchr(str + d[j].d_un.d_val, '\0', ss->sh_size - d[j].d_un.d_val))
                return NULL;
            return str + d[j].d_un.d_val;
        }
        return NULL;
    }
    return NULL;
}

/* The GNU hash table (.gnu.hash) of the .dynsym at section index dynsym: the range of symbol
 * indices [*first, *end) whose chain holds name's hash (a bloom filter and a bucket first: most
 * names not defined there cost no string comparison at all). 0, -ENOENT when name is not
 * there, or 1 when the file has no usable table (search every symbol). */
static int gnu_hash_range(const struct ptrace_elf *e, unsigned dynsym, size_t nsyms,
                          const char *name, size_t *first, size_t *end)
{
    uint32_t h = 5381;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = h * 33 + *c;
    for (unsigned i = 0; i < ehdr(e)->e_shnum; i++) {
        const Elf64_Shdr *s = shdr(e, i);
        if (s->sh_type != SHT_GNU_HASH || s->sh_link != dynsym)
            continue;
        if (s->sh_size < 16 || s->sh_offset % 8 || !in_file(e, s->sh_offset, s->sh_size))
            return 1;
        const uint32_t *w = (const uint32_t *)(e->data + s->sh_offset);
        uint32_t nb = w[0], symoff = w[1], nbloom = w[2], shift = w[3];
        size_t words = s->sh_size / 4;
        if (nb == 0 || nbloom == 0 || shift >= 64 || 4 + (size_t)nbloom * 2 + nb > words)
            return 1;
        const uint64_t *bloom = (const uint64_t *)(w + 4);
        const uint32_t *buckets = w + 4 + (size_t)nbloom * 2, *chain = buckets + nb;
        uint64_t mask = (1ull << (h % 64)) | (1ull << ((h >> shift) % 64));
        if ((bloom[(h / 64) % nbloom] & mask) != mask)
            return -ENOENT;
        uint32_t k = buckets[h % nb];
        if (k < symoff)
            return -ENOENT;
        size_t j = k;
        for (;; j++) { /* the chain ends at the entry with the low bit set */
            size_t c = j - symoff;
            if (j >= nsyms || 4 + (size_t)nbloom * 2 + nb + c >= words)
                return 1; /* malformed: search it all */
            if (chain[c] & 1)
                break;
        }
        *first = k;
        *end = j + 1;
        return 0;
    }
    return 1;
}

int ptrace_elf_sym(const struct ptrace_elf *e, const char *name, uint64_t *value, uint64_t *size)
{
    static const uint32_t types[] = {SHT_DYNSYM, SHT_SYMTAB};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        struct symtab t;
        size_t from = 0, to;
        if (table(e, types[k], &t) < 0)
            continue;
        to = t.n;
        if (types[k] == SHT_DYNSYM) {
            unsigned idx = 0; /* the .dynsym that table() took: the first */
            while (idx < ehdr(e)->e_shnum && shdr(e, idx)->sh_type != SHT_DYNSYM)
                idx++;
            int rc = gnu_hash_range(e, idx, t.n, name, &from, &to);
            if (rc < 0)
                continue;
            if (rc > 0)
                from = 0, to = t.n;
        }
        const Elf64_Sym *best = NULL;
        for (size_t i = from; i < to; i++) {
            const Elf64_Sym *s = &t.sym[i];
            if (!defined(s) || strcmp(symname(&t, s), name) != 0)
                continue;
            /* A hidden version (dlopen@GLIBC_2.2.5 beside dlopen@@GLIBC_2.34) only if nothing
             * better turns up. */
            int hidden = t.ver && (t.ver[i] & 0x8000);
            if (!best || !hidden)
                best = s;
            if (!hidden)
                break;
        }
        if (best) {
            *value = best->st_value;
            if (size)
                *size = best->st_size;
            return 0;
        }
    }
    return -ENOENT;
}

uint64_t ptrace_elf_func_end_below(const struct ptrace_elf *e, uint64_t addr)
{
    struct symtab t;
    uint64_t best = 0;
    if (table(e, SHT_DYNSYM, &t) < 0)
        return 0;
    for (size_t i = 0; i < t.n; i++) {
        const Elf64_Sym *s = &t.sym[i];
        if (!defined(s) || ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_value >= addr)
            continue;
        if (s->st_value + s->st_size > best)
            best = s->st_value + s->st_size;
    }
    return best;
}

int ptrace_elf_bias(const struct ptrace_elf *e, unsigned long start, unsigned long off,
                    uint64_t *bias)
{
    const Elf64_Phdr *hit = NULL;
    for (int i = 0; i < ehdr(e)->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(e, i);
        if (p->p_type != PT_LOAD)
            continue;
        if (off >= p->p_offset && off < p->p_offset + (p->p_filesz ? p->p_filesz : 1)) {
            hit = p;
            break;
        }
        /* The kernel maps from the page below p_offset: accept a segment starting within
         * 64 KiB (the largest page size) above off. */
        if (off < p->p_offset && p->p_offset - off < 65536 && (!hit || p->p_offset < hit->p_offset))
            hit = p;
    }
    if (!hit)
        return -ENOEXEC;
    /* Link-time address of file offset off within the segment, then bias = runtime - link. */
    *bias = (uint64_t)start + hit->p_offset - off - hit->p_vaddr;
    return 0;
}

int ptrace_elf_exec_end(const struct ptrace_elf *e, unsigned long off, uint64_t *end)
{
    for (int i = 0; i < ehdr(e)->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(e, i);
        if (p->p_type != PT_LOAD || !(p->p_flags & PF_X) || p->p_memsz == 0 ||
            p->p_vaddr + p->p_memsz < p->p_vaddr)
            continue;
        /* The mapping starts at the page of p_offset (pages up to 64 KiB). */
        if (off <= p->p_offset && p->p_offset - off < 65536) {
            *end = p->p_vaddr + p->p_memsz;
            return 0;
        }
    }
    return -ENOENT;
}

int ptrace_elf_read(const struct ptrace_elf *e, uint64_t vaddr, void *buf, size_t n)
{
    for (int i = 0; i < ehdr(e)->e_phnum; i++) {
        const Elf64_Phdr *p = phdr(e, i);
        if (p->p_type != PT_LOAD || vaddr < p->p_vaddr ||
            !pb_in_range(vaddr - p->p_vaddr, n, p->p_filesz))
            continue;
        if (vaddr - p->p_vaddr > UINT64_MAX - p->p_offset ||
            !in_file(e, p->p_offset + (vaddr - p->p_vaddr), n))
            return -ENOEXEC;
        uint64_t off = p->p_offset + (vaddr - p->p_vaddr);
        memcpy(buf, e->data + off, n);
        return 0;
    }
    return -ENOENT;
}

/* Candidate i of the paths a mapping of pid may be read at; 0 when it does not apply:
 * 0: as the target sees it, through /proc/PID/root (its own mount namespace, after pivot_root);
 * 1: a plain chroot below our root (maps shows our path, which starts with the target's root),
 *    through /proc/PID/root too: a user who may not cross the root's parents (a chroot under
 *    /root, mode 700) still reaches the files there;
 * 2: our path as it is. */
static int mapped_path(pid_t pid, const char *mpath, int i, char *path, size_t size)
{
    if (i == 0) {
        snprintf(path, size, "/proc/%d/root%s", (int)pid, mpath);
        return 1;
    }
    if (i == 2) {
        pb_strlcpy(path, mpath, size);
        return 1;
    }
    char link[64], root[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/root", (int)pid);
    ssize_t n = readlink(link, root, sizeof root - 1);
    if (n <= 1) /* "/" (not in a chroot) or unreadable */
        return 0;
    root[n] = '\0';
    if (strncmp(mpath, root, (size_t)n) != 0 || mpath[n] != '/')
        return 0;
    snprintf(path, size, "/proc/%d/root%s", (int)pid, mpath + n);
    return 1;
}

/* The file a mapping of pid was made from, so that a container's own libc is the one we read.
 * /proc/PID/map_files opens the very file in any namespace, but needs CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE); otherwise one of mapped_path's forms: the first whose inode is the
 * mapping's wins, else the first that opens. */
static int open_mapped(pid_t pid, const struct ptrace_map *map, struct ptrace_elf *e)
{
    char path[PATH_MAX + 32];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d/map_files/%lx-%lx", (int)pid, map->start, map->end);
    if (ptrace_elf_open(path, e) == 0)
        return 0;
    int rc = -ENOENT, first = -1;
    for (int i = 0; i < 3; i++) {
        if (!mapped_path(pid, map->path, i, path, sizeof path))
            continue;
        if (stat(path, &st) < 0) {
            if (i == 0)
                rc = -errno;
            continue;
        }
        if (first < 0)
            first = i;
        if (map->inode && st.st_ino == map->inode)
            return ptrace_elf_open(path, e);
    }
    if (first < 0)
        return rc;
    mapped_path(pid, map->path, first, path, sizeof path);
    return ptrace_elf_open(path, e);
}

/* Whether mapping i of m is continued by the next one: the same file, starting where it ends
 * (the loader maps an object's segments side by side). */
static int continued(const struct ptrace_maps *m, size_t i)
{
    return i + 1 < m->n && m->v[i + 1].start == m->v[i].end && m->v[i + 1].inode == m->v[i].inode &&
           strcmp(m->v[i + 1].path, m->v[i].path) == 0;
}

int ptrace_module_open(pid_t pid, const struct ptrace_maps *m, const struct ptrace_map *map,
                       struct ptrace_module *mod)
{
    const struct ptrace_map *first = NULL;
    memset(mod, 0, sizeof *mod);
    pb_strlcpy(mod->path, map->path, sizeof mod->path);
    mod->lo = (unsigned long)-1;
    /* A mapping of the whole file at offset 0 that nothing continues is no load address: the
     * probe's symbol reader keeps libpython and libc mapped so (probe/prof/symbols.c), a
     * program may map a library to read it, and a child forked after inherits it. When the
     * file also has a mapping at offset 0 that its next segment continues, that one is the
     * object's, and such lone ones are left out (they come first when mapped lower). */
    int loaded = 0;
    for (size_t i = 0; i < m->n && !loaded; i++)
        loaded = m->v[i].offset == 0 && strcmp(m->v[i].path, map->path) == 0 && continued(m, i);
    for (size_t i = 0; i < m->n; i++) {
        if (strcmp(m->v[i].path, map->path) != 0)
            continue;
        if (loaded && m->v[i].offset == 0 && !continued(m, i) && !(i > 0 && continued(m, i - 1)))
            continue;
        if (!first || m->v[i].offset < first->offset)
            first = &m->v[i];
        if (m->v[i].start < mod->lo)
            mod->lo = m->v[i].start;
        if (m->v[i].end > mod->hi)
            mod->hi = m->v[i].end;
    }
    int rc = open_mapped(pid, first, &mod->elf);
    if (rc < 0)
        return rc;
    rc = ptrace_elf_bias(&mod->elf, first->start, first->offset, &mod->bias);
    if (rc < 0)
        ptrace_module_close(mod);
    return rc;
}

void ptrace_module_close(struct ptrace_module *mod)
{
    if (mod)
        ptrace_elf_close(&mod->elf);
}

unsigned long ptrace_module_sym(const struct ptrace_module *mod, const char *name,
                                unsigned long *size)
{
    uint64_t v, sz;
    if (!mod->elf.data || ptrace_elf_sym(&mod->elf, name, &v, &sz) < 0)
        return 0;
    if (size)
        *size = (unsigned long)sz;
    return (unsigned long)(v + mod->bias);
}
