/* SPDX-License-Identifier: MIT */
/* Native symbols for the sampler (drain thread only, never in a signal handler): dladdr1 finds
 * the object and its exported symbol; when the pc is not inside that symbol (a static
 * function: dladdr only knows the dynamic symbol table) the object's own .symtab is read once
 * (mmap of the file, ELF64, function symbols sorted by address) and searched. Objects without
 * .symtab (stripped) fall back to "[module]" in the caller. Every function named once is kept
 * with its address range (the `known` table): a later pc inside it is named from there, without
 * dladdr, which scans the object's symbols at every call (about 35 us for libpython), while a
 * sampler sees a new exact pc at almost every sample; a function no symbol names is kept by
 * its bounds in the unwind table (.eh_frame_hdr); they are forgotten once the loader says
 * a library was unloaded (another may come at its place). prof_sym_describe is the entry
 * (store.c for the sampler, native.c for dumps); one mutex guards the caches; prof_sym_reset
 * empties them. */
#include "prof.h"
#include "sig/unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MODULES 512

struct fsym {
    uintptr_t lo, hi; /* link-time addresses */
    const char *name; /* in the mapped file */
};

struct module {
    uintptr_t fbase;
    uintptr_t bias; /* runtime address - link-time address */
    struct fsym *syms;
    size_t n;
    void *map;
    size_t maplen;
};

static struct module mods[MAX_MODULES];

/* Each object's unwind table (its search table and an index of it) and load bias, from its
 * image in memory, once: the bounds of a function no symbol names. */
struct umod {
    uintptr_t fbase, bias;
    struct unwind_mod m;
    int ok;
};
static struct umod umods[MAX_MODULES];
static int numods;

/* A function already named: [lo, hi) at run time, and the answer. Sorted by lo. */
struct known {
    uintptr_t lo, hi;
    char *name, *module;
    uintptr_t fbase, bias;
    int is_eval;
};
#define MAX_KNOWN 65536
static struct known *known;
static size_t nknown, capknown;
static int nmods;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *(*demangle)(const char *, char *, size_t *, int *);
static unsigned long long demangle_looked_at = ~0ull; /* the loader's adds count then */

static int sym_cmp(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Reads .symtab of path (ELF64 of our machine only). */
static void module_load(struct module *m, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return;
    const unsigned char *base = map;
    size_t len = (size_t)st.st_size;
    const Elf64_Ehdr *eh = map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len ||
        eh->e_phoff + (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > len) {
        munmap(map, len);
        return;
    }
    /* Link-time address of the first loadable segment: bias = fbase - that (page-aligned). */
    uintptr_t first = 0;
    int have_first = 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && (!have_first || ph[i].p_vaddr < first)) {
            first = ph[i].p_vaddr & ~(uintptr_t)4095;
            have_first = 1;
        }
    m->bias = m->fbase - first;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > len || strs->sh_offset + strs->sh_size > len)
            break;
        size_t cnt = sh[i].sh_size / sizeof(Elf64_Sym);
        const Elf64_Sym *sy = (const Elf64_Sym *)(base + sh[i].sh_offset);
        m->syms = calloc(cnt ? cnt : 1, sizeof *m->syms);
        if (!m->syms)
            break;
        for (size_t k = 0; k < cnt; k++) {
            if (ELF64_ST_TYPE(sy[k].st_info) != STT_FUNC || sy[k].st_value == 0 ||
                sy[k].st_name >= strs->sh_size)
                continue;
            const char *nm = (const char *)base + strs->sh_offset + sy[k].st_name;
            m->syms[m->n].lo = sy[k].st_value;
            m->syms[m->n].hi = sy[k].st_value + (sy[k].st_size ? sy[k].st_size : 1);
            m->syms[m->n].name = nm;
            m->n++;
        }
        qsort(m->syms, m->n, sizeof *m->syms, sym_cmp);
        break;
    }
    if (m->n == 0) {
        free(m->syms);
        m->syms = NULL;
        munmap(map, len);
        return;
    }
    m->map = map;
    m->maplen = len;
}

/* The .symtab name of pc in the object loaded at fbase from path, or NULL. *off gets pc's
 * offset into the function, *hi its run-time end. */
static const char *sym_local(uintptr_t pc, uintptr_t fbase, const char *path, uintptr_t *off,
                             uintptr_t *hi_out)
{
    struct module *m = NULL;
    for (int i = 0; i < nmods; i++)
        if (mods[i].fbase == fbase)
            m = &mods[i];
    if (!m) {
        if (nmods == MAX_MODULES || !path || !*path)
            return NULL;
        m = &mods[nmods++];
        memset(m, 0, sizeof *m);
        m->fbase = fbase;
        module_load(m, path);
    }
    if (!m->n)
        return NULL;
    uintptr_t a = pc - m->bias;
    size_t lo = 0, hi = m->n;
    while (lo < hi) { /* last symbol with lo <= a */
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || a >= m->syms[lo - 1].hi)
        return NULL;
    *off = a - m->syms[lo - 1].lo;
    *hi_out = m->syms[lo - 1].hi + m->bias;
    return m->syms[lo - 1].name;
}

static const struct umod *umod_of(uintptr_t fbase)
{
    for (int i = 0; i < numods; i++)
        if (umods[i].fbase == fbase)
            return &umods[i];
    if (numods == MAX_MODULES)
        return NULL;
    struct umod *u = &umods[numods++];
    memset(u, 0, sizeof *u);
    u->fbase = fbase;
    u->ok = sig_unwind_mod_from_image(fbase, &u->m, &u->bias) == 0;
    if (u->ok)
        sig_unwind_mod_index(&u->m); /* without one, a lookup reads once per halving */
    return u;
}

static void umods_clear(void)
{
    for (int i = 0; i < numods; i++)
        free((void *)umods[i].m.index);
    memset(umods, 0, sizeof umods);
    numods = 0;
}

static void known_clear(void)
{
    for (size_t i = 0; i < nknown; i++) {
        free(known[i].name);
        free(known[i].module);
    }
    free(known);
    known = NULL;
    nknown = capknown = 0;
}

/* The known functions are forgotten when a library was unloaded since they were named (another
 * may be loaded at its place). */
static void known_check_loader(void)
{
    static unsigned long long seen_subs = ~0ull;
    unsigned long long adds, subs;
    sig_unwind_loader_counts(&adds, &subs);
    if (subs != seen_subs) {
        known_clear();
        umods_clear();
        seen_subs = subs;
    }
}

/* The index of the first known function with lo > pc. */
static size_t known_after(uintptr_t pc)
{
    size_t lo = 0, hi = nknown;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (known[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const struct known *known_find(uintptr_t pc)
{
    size_t i = known_after(pc);
    return i > 0 && pc < known[i - 1].hi ? &known[i - 1] : NULL;
}

/* Remembers the answer s for [lo, hi) (not overlapping a known one: a pc inside that one was
 * answered from it). Out of memory or full: not remembered, nothing else changes. */
static void known_add(uintptr_t lo, uintptr_t hi, const struct prof_sym *s)
{
    size_t i = known_after(lo);
    if (hi <= lo || nknown == MAX_KNOWN || (i < nknown && known[i].lo < hi))
        return;
    if (nknown == capknown) {
        size_t nc = capknown ? capknown * 2 : 256;
        struct known *nk = realloc(known, nc * sizeof *nk);
        if (!nk)
            return;
        known = nk;
        capknown = nc;
    }
    struct known k = {lo, hi, strdup(s->name), strdup(s->module), s->fbase, s->bias, s->is_eval};
    if (!k.name || !k.module) {
        free(k.name);
        free(k.module);
        return;
    }
    memmove(&known[i + 1], &known[i], (nknown - i) * sizeof *known);
    known[i] = k;
    nknown++;
}

/* Under mu, before a mangled name (_Z...) is shown: libstdc++'s __cxa_demangle, looked up
 * where the process already has it, never loaded here: in the global scope, else the
 * libstdc++.so.6 some object brought in (a C++ extension module or a ctypes.CDLL is loaded
 * RTLD_LOCAL: its libstdc++ is not in the global scope; RTLD_NOLOAD finds it, and keeps it
 * mapped for the life of the process). An object that names a mangled function links
 * libstdc++, so when none is found it is looked for again once another object was loaded. */
static void demangler_find(void)
{
    unsigned long long adds, subs;
    if (demangle)
        return;
    sig_unwind_loader_counts(&adds, &subs);
    if (adds == demangle_looked_at)
        return;
    demangle_looked_at = adds;
    *(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!demangle) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            *(void **)&demangle = dlsym(h, "__cxa_demangle");
        if (h && !demangle)
            dlclose(h);
    }
}

void prof_sym_describe(uintptr_t pc, int depth, struct prof_sym *s)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    struct link_map *lm = NULL;
    const char *sn = NULL;
    uintptr_t look = depth > 0 && pc > 0 ? pc - 1 : pc, off = 0, lo = 0, hi = 0;
    char *dem = NULL;
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&mu);
    known_check_loader();
    const struct known *k = known_find(look);
    if (k) {
        pb_strlcpy(s->name, k->name, sizeof s->name);
        pb_strlcpy(s->module, k->module, sizeof s->module);
        s->offset = look - k->lo + (look != pc);
        s->fbase = k->fbase;
        s->bias = k->bias;
        s->is_eval = k->is_eval;
        pthread_mutex_unlock(&mu);
        return;
    }
    memset(&info, 0, sizeof info);
    if (dladdr1((void *)look, &info, (void **)&sym, RTLD_DL_SYMENT) && info.dli_sname &&
        info.dli_saddr &&
        (!sym || sym->st_size == 0 || look - (uintptr_t)info.dli_saddr < (uintptr_t)sym->st_size)) {
        sn = info.dli_sname;
        off = look - (uintptr_t)info.dli_saddr;
        if (sym && sym->st_size > 0)
            lo = (uintptr_t)info.dli_saddr, hi = lo + (uintptr_t)sym->st_size;
    } else if (info.dli_fbase) {
        sn = sym_local(look, (uintptr_t)info.dli_fbase, info.dli_fname, &off, &hi);
        lo = sn ? look - off : 0;
    }
    if (!sn && info.dli_fbase && prof_sym_eval_part(look))
        sn = "_PyEval_EvalFrameDefault.cold"; /* GCC's name for such a part (evalpart.c) */
    if (sn) {
        if (sn[0] == '_' && sn[1] == 'Z')
            demangler_find();
        if (demangle && sn[0] == '_' && sn[1] == 'Z') {
            int status = -1;
            dem = demangle(sn, NULL, NULL, &status);
            if (status != 0) {
                free(dem);
                dem = NULL;
            }
        }
        snprintf(s->name, sizeof s->name, "%s", dem ? dem : sn);
        s->is_eval = strcmp(sn, "_PyEval_EvalFrameDefault") == 0 ||
                     strncmp(sn, "_PyEval_EvalFrameDefault.", 25) == 0;
        s->offset = off + (look != pc); /* from the return address itself */
    }
    if (info.dli_fname)
        snprintf(s->module, sizeof s->module, "%s", info.dli_fname);
    /* The load bias from the image's headers (a second dladdr1 would scan the symbols again),
     * and for a pc no symbol names, its function's bounds from the unwind table: an unnamed
     * function (a stripped object's static one) is remembered too, else every new pc in it
     * (one at almost every sample) would cost the scans again. An FDE that some symbol shares
     * with another function would be remembered as unnamed; compilers emit one per function
     * (or per detached part). */
    const struct umod *um = info.dli_fbase ? umod_of((uintptr_t)info.dli_fbase) : NULL;
    uintptr_t fb[2];
    if (um && um->ok)
        s->bias = um->bias;
    else if (info.dli_fbase && dladdr1((void *)look, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm)
        s->bias = (uintptr_t)lm->l_addr;
    s->fbase = (uintptr_t)info.dli_fbase;
    if (!lo && s->module[0] && um && um->ok && sig_unwind_fde_bounds(&um->m, look, fb) == 0 &&
        (!sn || s->is_eval || fb[0] == (uintptr_t)info.dli_saddr)) {
        /* unnamed, the eval loop's detached part, or a symbol without a size starting it */
        lo = fb[0], hi = fb[1];
        if (sn)
            s->offset = look - lo + (look != pc);
    }
    if (lo && s->module[0])
        known_add(lo, hi, s);
    pthread_mutex_unlock(&mu);
    free(dem);
}

void prof_sym_reset(void)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < nmods; i++) {
        free(mods[i].syms);
        if (mods[i].map)
            munmap(mods[i].map, mods[i].maplen);
    }
    memset(mods, 0, sizeof mods);
    nmods = 0;
    known_clear();
    umods_clear();
    pthread_mutex_unlock(&mu);
}

/* Where the interpreter's own object (the executable or libpython) is mapped, 0 unknown. */
static uintptr_t interp_fb;
static pthread_once_t interp_once = PTHREAD_ONCE_INIT;

static uintptr_t exe_fb; /* the executable's (its entry point's object) */

static void interp_find(void)
{
    void *ev = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    struct prof_sym sy;
    Dl_info info;
    if (ev) {
        prof_sym_describe((uintptr_t)ev, 0, &sy);
        interp_fb = sy.fbase;
    }
    unsigned long entry = getauxval(AT_ENTRY);
    if (entry && dladdr((void *)entry, &info))
        exe_fb = (uintptr_t)info.dli_fbase;
}

static uintptr_t interp_fbase(void)
{
    pthread_once(&interp_once, interp_find);
    return interp_fb;
}

int prof_sym_internal(const struct prof_sym *s)
{
    uintptr_t fb = interp_fbase();
    return s->is_eval || (fb && s->fbase == fb && pb_cpython_machinery(s->name));
}

int prof_sym_startup(const struct prof_sym *s)
{
    if (prof_sym_internal(s) || pb_startup_frame(s->name))
        return 1;
    if (!s->name[0] && exe_fb && s->fbase == exe_fb)
        return 1; /* a stripped executable's _start or main */
    const char *b = strrchr(s->module, '/');
    b = b ? b + 1 : s->module;
    return !s->name[0] && (strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libc-", 5) == 0);
}
