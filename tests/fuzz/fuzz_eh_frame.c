/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the unwinder's DWARF CFI reader (probe/sig/unwind_cfi.c) and the unwinder
 * over it (unwind.c, unwind_cache.c) on .eh_frame_hdr/.eh_frame bytes a hostile file chose
 * (`dump --core` reads the CFI of the modules a core file names). The input is a module's
 * .eh_frame_hdr followed by its .eh_frame (as the linker lays them out: tests/fuzz/
 * make_eh_frame_seeds.py cuts them from ELF files), placed in a fake address space at IMG; the
 * same bytes serve as the stack at STK. Every read of the "target" goes through this file's
 * pyrt_read over those two regions only, copying like process_vm_readv (as much as is
 * readable, into a destination of the asked size): a length the unwinder got wrong overruns
 * its own buffer, which ASan sees. Driven: the header's search table, for the pcs of its first
 * entries the FDE bounds, the FDE and CIE read and the rules at the pc, then whole unwinds
 * (from a pc and sp with rbp guessed, and from registers taken from the input) through a
 * published module table, with and without its index. Checks, beyond memory safety: the
 * bounds and rows found hold the pc; no unwind returns more frames than asked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>

#include "pyrt/read.h"
#include "sig/unwind.h"
#include "sig/unwind_cfi.h"

#define IMG ((uintptr_t)0x100000000ull)
#define STK ((uintptr_t)0x200000000ull)

static const uint8_t *img;
static size_t img_len;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_eh_frame: %s\n", what);
        abort();
    }
}

/* The fake target: [IMG, IMG + len) and [STK, STK + len) hold the input. */
int pyrt_read(uintptr_t addr, void *dst, size_t n)
{
    uintptr_t base = addr >= STK ? STK : IMG;
    if (n == 0)
        return 0;
    if (addr < base || addr - base >= img_len)
        return -1;
    size_t have = img_len - (size_t)(addr - base), k = n < have ? n : have;
    memcpy(dst, img + (addr - base), k); /* dst must hold n: a partial copy still writes k */
    return k == n ? 0 : -1;
}

/* The unwinder's direct stack reads: never vouched for here (stack_lo/hi stay 0). */
void pyrt_own_copy(void *dst, uintptr_t addr, size_t n)
{
    (void)dst, (void)addr, (void)n;
    check(0, "pyrt_own_copy outside the caller's stack bounds");
}

/* No pages for process_vm_readv: every stack read falls back to pyrt_read. */
int pyrt_iov_pages(uintptr_t at, uintptr_t end, struct iovec *out, int max, uintptr_t *reach)
{
    (void)at, (void)end, (void)out, (void)max;
    *reach = at;
    return 0;
}

static struct unwind_cache cache;
static unsigned gen;

/* One published table of one module m; unwinds from entry pcs. */
static void unwinds(const struct unwind_mod *m, const uintptr_t *pcs, int npcs, const uint8_t *data,
                    size_t size)
{
    static _Alignas(struct unwind_table) unsigned char
        mem[sizeof(struct unwind_table) + sizeof(struct unwind_mod)];
    struct unwind_table *t = (struct unwind_table *)mem;
    uintptr_t out[64];
    memset(mem, 0, sizeof mem);
    t->gen = ++gen ? gen : ++gen; /* a new table: every cache entry void */
    t->n = 1;
    t->mods[0] = *m;
    atomic_store(&unwind_cur_table, t);
    for (int i = 0; i < npcs; i++) {
        int nalt = 0;
        uintptr_t sp = STK + (size > 16 ? (data[i % size] * 8u) % (size & ~(size_t)7) : 0);
        int n = sig_unwind_native_pcsp(pcs[i], sp, out, 64, &cache, 0, &nalt);
        check(n >= 0 && n <= 64, "sig_unwind_native_pcsp: more frames than asked");
        if (nalt > 0) {
            n = sig_unwind_native_pcsp(pcs[i], sp, out, 64, &cache, 1, NULL);
            check(n >= 0 && n <= 64, "sig_unwind_native_pcsp alt: more frames than asked");
        }
        ucontext_t uc;
        memset(&uc, 0, sizeof uc);
#if defined(__x86_64__)
        for (int r = 0; r < NGREG; r++) { /* the input's words, pointed into the stack */
            uint64_t w = 0;
            if (size >= 8)
                memcpy(&w, data + ((size_t)r * 8) % (size - 7), 8);
            uc.uc_mcontext.gregs[r] = (greg_t)(STK + (w % (size + 1)));
        }
        uc.uc_mcontext.gregs[REG_RIP] = (greg_t)pcs[i];
        uc.uc_mcontext.gregs[REG_RSP] = (greg_t)sp;
#endif
        n = sig_unwind_native(&uc, out, 64, NULL, NULL, &cache);
        check(n >= 0 && n <= 64, "sig_unwind_native: more frames than asked");
        n = sig_unwind_native(&uc, out, 3, sig_unwind_table_find, t,
                              &cache); /* a finder, no cache */
        check(n >= 0 && n <= 3, "sig_unwind_native(find): more frames than asked");
    }
    atomic_store(&unwind_cur_table, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1), h[32] = {0};
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    img = buf, img_len = size;
    memcpy(h, buf, size < sizeof h ? size : sizeof h);

    /* The module: the header at IMG, code anywhere a 32-bit offset from it reaches. */
    struct unwind_mod m;
    memset(&m, 0, sizeof m);
    m.lo = IMG - 0x80000000u, m.hi = IMG + 0x80000000u, m.hdr = IMG;
    sig_unwind_hdr_parse(&m, h);
    uintptr_t pcs[8];
    int npcs = 0;
    uint32_t entries = m.count < 6 ? m.count : 6;
    for (uint32_t i = 0; m.table && i < entries; i++) {
        int32_t loc;
        if (pyrt_read(m.table + (uintptr_t)i * 8, &loc, 4) != 0)
            break;
        /* a function's first byte, or one in */
        pcs[npcs++] = IMG + (uintptr_t)(intptr_t)loc + (i & 1);
    }
    if (m.table)
        pcs[npcs++] = IMG + 0x10; /* below, between or above the entries */

    for (int i = 0; i < npcs; i++) {
        uintptr_t range[2], a[2], row[2];
        uint32_t len[2];
        struct sig_unwind_cfi_fde f;
        struct unwind_cfi_state s;
        if (sig_unwind_fde_bounds(&m, pcs[i], range) == 0)
            check(range[0] <= pcs[i] && pcs[i] < range[1], "sig_unwind_fde_bounds: pc outside");
        if (sig_unwind_cfi_fetch(&m, pcs[i], cache.blk, cache.fde, UNWIND_MAXFDE, cache.cie,
                                 UNWIND_MAXREC, a, len) == 0 &&
            sig_unwind_cfi_fde(cache.fde, 4 + (size_t)len[0], a[0], cache.cie, len[1] + 4, a[1],
                               pcs[i], &f) == 0) {
            check(f.start <= pcs[i] && pcs[i] < f.end, "sig_unwind_cfi_fde: pc outside the FDE");
            if (sig_unwind_cfi_row(&f, pcs[i], &s, row) == 0)
                check(row[0] <= pcs[i] && pcs[i] < row[1],
                      "sig_unwind_cfi_row: pc outside its row");
        }
    }
    if (npcs) {
        unwinds(&m, pcs, npcs, data, size);
        struct unwind_mod mi = m; /* the search by blocks, as a published table does it */
        if (m.count && m.count <= 1u << 16 && sig_unwind_mod_index(&mi) == 0) {
            unwinds(&mi, pcs, npcs, data, size);
            free((void *)mi.index);
        }
    }
    free(buf);
    img = NULL, img_len = 0;
    return 0;
}
