/* SPDX-License-Identifier: MIT */
/* The interpreter loop's detached parts (through prof_sym_describe, under its mutex; never in a
 * signal handler). An
 * optimising build (Debian's CPython 3.13-3.15: GCC with profile-guided hot/cold splitting)
 * leaves only the entry of _PyEval_EvalFrameDefault under its exported name (about 1 KiB) and
 * moves the loop's body into a separate, unnamed part of .text; a stripped binary has no symbol
 * for that part, so a native frame running Python code there would not be known for the eval
 * loop, and the sampler could not put the Python frames in its place (store.c).
 * Such a part is found without symbols: the exported entry jumps into it (rel32 jmp/jcc), and
 * the unwind table (.eh_frame_hdr) gives the start of the part covering a pc. A part counts
 * when at least two jumps of the entry land in it and no exported symbol starts there. */
#include "prof.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "sig/unwind.h"

#define MAX_PARTS 8

static int ready;
static struct unwind_mod mod; /* the module of _PyEval_EvalFrameDefault */
static unsigned long parts[MAX_PARTS];
static int nparts;

/* The initial location of the unwind table entry covering pc in m (the last one at or below
 * pc), or 0. The table is the module's own mapped memory. */
static uintptr_t part_start(uintptr_t pc)
{
    if (!mod.table || mod.count == 0 || pc < mod.lo || pc >= mod.hi)
        return 0;
    const int32_t *t = (const int32_t *)mod.table;
    uint32_t lo = 0, hi = mod.count;
    if (mod.hdr + (uintptr_t)(intptr_t)t[0] > pc)
        return 0;
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (mod.hdr + (uintptr_t)(intptr_t)t[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return mod.hdr + (uintptr_t)(intptr_t)t[2 * lo];
}

static unsigned long start_of(unsigned long pc, void *arg)
{
    (void)arg;
    return part_start(pc);
}

static int is_symbol(unsigned long addr, void *arg)
{
    (void)arg;
    Dl_info si;
    return dladdr((void *)addr, &si) && si.dli_saddr == (void *)addr;
}

static void find_parts(void)
{
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    void *f = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !info.dli_fbase ||
        sig_unwind_mod_from_image((uintptr_t)info.dli_fbase, &mod, NULL) != 0)
        return;
    nparts = pb_detached_parts(f, sym->st_size, (unsigned long)f, start_of, is_symbol, NULL, parts,
                               MAX_PARTS);
}

int prof_sym_eval_part(uintptr_t pc)
{
    if (!ready) {
        find_parts();
        ready = 1;
    }
    if (!nparts)
        return 0;
    uintptr_t s = part_start(pc);
    for (int i = 0; s && i < nparts; i++)
        if (parts[i] == s)
            return 1;
    return 0;
}
