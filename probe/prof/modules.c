/* SPDX-License-Identifier: MIT */
/* The loaded objects (prof.h; the debugger's `modules` request and the moduleId of native
 * frames in stackTrace): dl_iterate_phdr, each object's range the union of its PT_LOAD
 * segments. An object keeps its id for the life of the process (a table keyed by where it is
 * loaded and its path, filled in as objects are first seen), and whether its file has symbols
 * (a .symtab or .debug_info section: the section headers read once, nothing mapped) is kept
 * with it. Any thread but a signal handler; one mutex. */
#include "prof.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_IDS 4096

struct seen {
    uintptr_t lo;
    char path[PROF_MODULE_PATH];
    int symbols; /* -1 not checked yet */
};

static struct seen ids[MAX_IDS];
static int nids;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* 1 when the ELF file at path has a .symtab or .debug_info section, else 0. */
static int has_symbols(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
    Elf64_Ehdr eh;
    if (fd < 0)
        return 0;
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shnum > 4096 ||
        eh.e_shstrndx >= eh.e_shnum) {
        close(fd);
        return 0;
    }
    Elf64_Shdr *sh = calloc(eh.e_shnum, sizeof *sh);
    size_t shlen = (size_t)eh.e_shnum * sizeof *sh;
    if (sh && pread(fd, sh, shlen, (off_t)eh.e_shoff) == (ssize_t)shlen) {
        const Elf64_Shdr *ss = &sh[eh.e_shstrndx];
        size_t nlen = ss->sh_size < (1u << 20) ? ss->sh_size : 0;
        char *names = nlen ? malloc(nlen + 1) : NULL;
        if (names && pread(fd, names, nlen, (off_t)ss->sh_offset) == (ssize_t)nlen) {
            names[nlen] = 0;
            for (int i = 0; i < eh.e_shnum && !found; i++)
                if (sh[i].sh_type == SHT_SYMTAB ||
                    (sh[i].sh_name < nlen && strcmp(names + sh[i].sh_name, ".debug_info") == 0))
                    found = 1;
        }
        free(names);
    }
    free(sh);
    close(fd);
    return found;
}

/* The id of the object loaded at lo from path (a new one the first time). mu held. */
static int id_of(uintptr_t lo, const char *path)
{
    for (int i = 0; i < nids; i++)
        if (ids[i].lo == lo && strcmp(ids[i].path, path) == 0)
            return i + 1;
    if (nids == MAX_IDS)
        nids = 0; /* thousands of objects loaded and unloaded: start over */
    ids[nids].lo = lo;
    snprintf(ids[nids].path, sizeof ids[nids].path, "%s", path);
    ids[nids].symbols = -1;
    return ++nids;
}

struct collect {
    struct prof_module *m;
    int n, cap, nomem;
};

static int one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct collect *c = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        struct prof_module *m = realloc(c->m, (size_t)cap * sizeof *m);
        if (!m) {
            c->nomem = 1;
            return 1;
        }
        c->m = m;
        c->cap = cap;
    }
    struct prof_module *m = &c->m[c->n++];
    memset(m, 0, sizeof *m);
    m->lo = lo;
    m->hi = hi;
    m->bias = info->dlpi_addr;
    m->symbols = -1;
    const char *name = info->dlpi_name;
    if (!name || !*name) { /* the main program */
        ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[k > 0 ? k : 0] = 0;
    } else {
        snprintf(m->path, sizeof m->path, "%s", name);
    }
    return 0;
}

int prof_modules(struct prof_module **out, int with_symbols)
{
    struct collect c = {0};
    *out = NULL;
    dl_iterate_phdr(one, &c);
    if (c.nomem) {
        free(c.m);
        return -ENOMEM;
    }
    pthread_mutex_lock(&mu);
    for (int i = 0; i < c.n; i++) {
        struct prof_module *m = &c.m[i];
        m->id = id_of(m->lo, m->path);
        struct seen *s = &ids[m->id - 1];
        if (with_symbols && s->symbols < 0)
            s->symbols = m->path[0] == '/' && has_symbols(m->path);
        m->symbols = s->symbols;
    }
    pthread_mutex_unlock(&mu);
    *out = c.m;
    return c.n;
}

int prof_module_find(const struct prof_module *mods, int n, uintptr_t pc)
{
    for (int i = 0; i < n; i++)
        if (pc >= mods[i].lo && pc < mods[i].hi)
            return i;
    return -1;
}
