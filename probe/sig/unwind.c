/* SPDX-License-Identifier: MIT */
/* A lock-free, allocation-free DWARF CFI unwinder for signal handlers (unwind.h): for each frame
 * the module holding its pc (the published module table, or the caller's finder), the rules
 * at the pc (the caches of unwind_cache.c, else the FDE read and run by unwind_cfi.c), then the
 * caller's registers from the rules, the stack read through a window; the frame-pointer chain
 * where no CFI covers a pc; rbp guessed for a thread read without its registers. And the ELF
 * side: the module table's lookup, a module from an ELF image in memory. Everything the
 * unwinder reads of the target goes through pyrt_read. Only signal-side code lives here
 * (make check-exports holds this file to an allow-list of calls); the module table is built in
 * unwind_table.c. */
#include "unwind.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "pyrt/read.h"
#include "unwind_cache.h"
#include "unwind_cfi.h"

#if defined(__x86_64__)
#define HAVE_CFI 1
#else
#define HAVE_CFI 0
#endif

_Atomic(struct unwind_table *) unwind_cur_table;

/* ---- register state ---- */

enum { NREG = UNWIND_NREG, RA = UNWIND_RA, RBP = UNWIND_RBP, RSP = UNWIND_RSP };

static int rd(uintptr_t addr, uintptr_t *out)
{
    return pyrt_read(addr, out, sizeof *out);
}

/* Stack reads: directly where the caller vouched for the memory (the sampled thread's own
 * stack, cache->stack_lo/hi), else through the cache's window: one process_vm_readv copies up
 * to UNWIND_WINDOW bytes from addr on (page by page, so an unmapped page only shortens it), and
 * the frames above are then read from the copy. A window never outlives one unwind. */
static int srd(struct unwind_cache *c, uintptr_t addr, void *dst, size_t n)
{
    if (addr >= c->stack_lo && addr + n >= addr && addr + n <= c->stack_hi) {
        pyrt_own_copy(dst, addr, n); /* mapped: the caller checked */
        return 0;
    }
    if (addr >= c->win_lo && addr + n >= addr && addr + n <= c->win_lo + c->win_len) {
        memcpy(dst, c->win + (addr - c->win_lo), n);
        return 0;
    }
    struct iovec local = {c->win, sizeof c->win};
    struct iovec remote[UNWIND_WINDOW / 4096 + 1];
    uintptr_t at = addr & ~(uintptr_t)7, reach;
    int k = pyrt_iov_pages(at, at + sizeof c->win, remote, (int)(sizeof remote / sizeof remote[0]),
                           &reach);
    int saved = errno;
    ssize_t r = c->pid > 0 ? process_vm_readv(c->pid, &local, 1, remote, (unsigned long)k, 0) : -1;
    errno = saved;
    c->win_lo = addr & ~(uintptr_t)7;
    c->win_len = r > 0 ? (size_t)r : 0;
    if (addr + n <= c->win_lo + c->win_len) {
        memcpy(dst, c->win + (addr - c->win_lo), n);
        return 0;
    }
    return pyrt_read(addr, dst, n); /* process_vm_readv refused: pyrt_sig's own way */
}

static int srd_word(struct unwind_cache *c, uintptr_t addr, uintptr_t *out)
{
    return srd(c, addr, out, sizeof *out);
}

/* ---- the rules at a pc ---- */

/* The FDE covering pc in module m: its CIE and instructions into *f, the rules at pc into *s,
 * and into row the range of locations those rules hold for. The FDE and CIE bytes come from
 * the thread's FDE cache when a recent unwind (same table generation gen, nonzero) read them;
 * else from the module's search table (and then join that cache). */
static int cfi_at(const struct unwind_mod *m, uintptr_t pc, struct sig_unwind_cfi_fde *f,
                  struct unwind_cfi_state *s, struct unwind_cache *uc, unsigned gen,
                  uintptr_t row[2])
{
    const struct unwind_fde *hit = sig_unwind_cache_fde_get(uc, pc, gen);
    const uint8_t *fde = uc->fde, *cie = uc->cie;
    uintptr_t a[2];
    uint32_t len[2];
    if (hit) {
        fde = hit->fde, cie = hit->cie;
        a[0] = hit->fde_addr, a[1] = hit->cie_addr;
        len[0] = hit->fde_len - 4u, len[1] = hit->cie_len - 4u;
    } else if (sig_unwind_cfi_fetch(m, pc, uc->blk, uc->fde, UNWIND_MAXFDE, uc->cie, UNWIND_MAXREC,
                                    a, len) != 0) {
        return -1;
    }
    if (sig_unwind_cfi_fde(fde, 4 + (size_t)len[0], a[0], cie, len[1] + 4, a[1], pc, f) != 0)
        return -1;
    if (!hit) /* f's instruction pointers point into uc's scratch; the copy is identical */
        sig_unwind_cache_fde_put(uc, gen, f, uc->fde, len[0] + 4, a[0], uc->cie, len[1] + 4, a[1]);
    return sig_unwind_cfi_row(f, pc, s, row);
}

/* ---- stepping ---- */

static int step_fp(struct unwind_regs *rs, struct unwind_cache *c)
{
    uintptr_t fp = rs->v[RBP], pair[2];
    if (!(rs->valid & (1u << RBP)) || (fp & 7) || fp < rs->v[RSP] ||
        srd(c, fp, pair, sizeof pair) != 0 || !pair[1])
        return -1;
    rs->v[RBP] = pair[0];
    rs->v[RSP] = fp + 16;
    rs->v[RA] = pair[1];
    rs->valid = (1u << RBP) | (1u << RSP) | (1u << RA);
    return 0;
}

/* One frame up with the rules at lookup pc. *signal gets the CIE's 'S'. 0, or -1. */
static int step_cfi(struct unwind_regs *rs, const struct unwind_cfi_state *s, int *signal,
                    struct unwind_cache *c)
{
    uintptr_t cfa;
    struct unwind_regs old = *rs;
    (void)signal;
    if (s->cfa_reg >= 0) {
        if (s->cfa_reg >= NREG || !(old.valid & (1u << s->cfa_reg)))
            return -1;
        cfa = old.v[s->cfa_reg] + (uintptr_t)s->cfa_off;
    } else if (sig_unwind_cfi_expr(s->cfa_expr, s->cfa_len, &old, 0, 0, &cfa) != 0) {
        return -1;
    }
    unsigned valid = 0;
    for (int i = 0; i < NREG; i++) {
        const struct unwind_cfi_rule *r = &s->r[i];
        uintptr_t v = 0, a;
        int ok = 0;
        switch (r->how) {
        case UNWIND_R_SAME:
            /* Callee-saved registers keep their value; RA has no "same" meaning. */
            ok = i != RA && (old.valid & (1u << i)) && (i == 3 || i == RBP || i >= 12);
            v = old.v[i];
            break;
        case UNWIND_R_OFF: ok = srd_word(c, cfa + (uintptr_t)r->v, &v) == 0; break;
        case UNWIND_R_VALOFF:
            v = cfa + (uintptr_t)r->v;
            ok = 1;
            break;
        case UNWIND_R_REG:
            ok = r->v >= 0 && r->v < NREG && (old.valid & (1u << r->v));
            v = ok ? old.v[r->v] : 0;
            break;
        case UNWIND_R_EXPR:
            ok = sig_unwind_cfi_expr((uintptr_t)r->v, r->len, &old, 1, cfa, &a) == 0 &&
                 rd(a, &v) == 0;
            break;
        case UNWIND_R_VALEXPR:
            ok = sig_unwind_cfi_expr((uintptr_t)r->v, r->len, &old, 1, cfa, &v) == 0;
            break;
        default: break;
        }
        if (ok) {
            rs->v[i] = v;
            valid |= 1u << i;
        }
    }
    if (!(valid & (1u << RA)))
        return -1; /* undefined return address: the outermost frame */
    rs->v[RSP] = cfa;
    rs->valid = valid | (1u << RSP);
    return 0;
}

static int step_cached(struct unwind_regs *rs, const struct unwind_rule *e, struct unwind_cache *c)
{
    if (e->ra_off == 0)
        return -1; /* the outermost frame */
    if (!(rs->valid & (1u << e->cfa_reg)))
        return -1;
    uintptr_t cfa = rs->v[e->cfa_reg] + (uintptr_t)(intptr_t)e->cfa_off, ra, fp = rs->v[RBP];
    unsigned fpv = rs->valid & (1u << RBP);
    if (e->fp_off == e->ra_off - 8) { /* the usual pair: one read */
        uintptr_t pair[2];
        if (srd(c, cfa + (uintptr_t)(intptr_t)e->fp_off, pair, sizeof pair) != 0)
            return -1;
        fp = pair[0], ra = pair[1], fpv = 1u << RBP;
    } else {
        if (srd_word(c, cfa + (uintptr_t)(intptr_t)e->ra_off, &ra) != 0)
            return -1;
        if (e->fp_off) {
            fpv = srd_word(c, cfa + (uintptr_t)(intptr_t)e->fp_off, &fp) == 0 ? 1u << RBP : 0;
        }
    }
    rs->v[RA] = ra;
    rs->v[RSP] = cfa;
    rs->v[RBP] = fp;
    rs->valid = (1u << RA) | (1u << RSP) | fpv;
    return 0;
}

static int walk(struct unwind_regs *rsp, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                struct unwind_cache *cache, int guess, int exact, int *clean, int *nalt);

int sig_unwind_native(const ucontext_t *uc, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                      struct unwind_cache *cache)
{
    struct unwind_regs rs;
    memset(&rs, 0, sizeof rs);
#if defined(__x86_64__)
    static const int map[NREG] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                  REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                  REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < NREG; i++)
        rs.v[i] = (uintptr_t)uc->uc_mcontext.gregs[map[i]];
    rs.valid = (1u << NREG) - 1;
#elif defined(__aarch64__)
    rs.v[RA] = (uintptr_t)uc->uc_mcontext.pc;
    rs.v[RBP] = (uintptr_t)uc->uc_mcontext.regs[29];
    rs.v[RSP] = (uintptr_t)uc->uc_mcontext.sp;
    rs.valid = (1u << RA) | (1u << RBP) | (1u << RSP);
#endif
    int clean;
    return walk(&rs, out, max, find, arg, cache, 0, 1, &clean, NULL);
}

int sig_unwind_native_pcsp(uintptr_t pc, uintptr_t sp, uintptr_t *out, int max,
                           struct unwind_cache *cache, int alt, int *nalt)
{
    struct unwind_regs rs;
    memset(&rs, 0, sizeof rs);
    rs.v[RA] = pc;
    rs.v[RSP] = sp;
    rs.valid = (1u << RA) | (1u << RSP); /* the frame pointer is not known */
    int clean, dummy;
    if (!nalt)
        nalt = &dummy;
    *nalt = 0;
    return walk(&rs, out, max, NULL, NULL, cache, 1 + alt, 1, &clean, nalt);
}

/* 1 when the instruction that ends at ra is a call (e8 rel32, or ff /2 with any operand, with
 * or without a REX prefix). */
static int after_call(uintptr_t ra)
{
    uint8_t b[8];
    if (ra < 8 || pyrt_read(ra - 8, b, sizeof b) != 0)
        return 0;
    if (b[3] == 0xe8)
        return 1;
    for (int k = 2; k <= 7; k++) {
        if (b[8 - k] != 0xff)
            continue;
        uint8_t m = b[9 - k];
        int mod = m >> 6, rm = m & 7, len = 2;
        if (((m >> 3) & 7) != 2)
            continue;
        if (mod != 3 && rm == 4) {
            if (k < 3)
                continue;
            len++;
            if (mod == 0 && (b[10 - k] & 7) == 5)
                len += 4;
        }
        len += mod == 1 ? 1 : mod == 2 ? 4 : mod == 0 && rm == 5 ? 4 : 0;
        if (len == k)
            return 1;
    }
    return 0;
}

/* The start of the function whose FDE covers look (its rules were cached without it), or 0. */
static uintptr_t fde_start(uintptr_t look, unwind_find_fn find, void *arg, struct unwind_cache *c,
                           unsigned gen)
{
    struct unwind_mod m;
    struct sig_unwind_cfi_fde f;
    struct unwind_cfi_state s;
    uintptr_t row[2];
    if (!HAVE_CFI || find(look, &m, arg) != 0 || cfi_at(&m, look, &f, &s, c, gen, row) != 0)
        return 0;
    return f.start;
}

int64_t sig_unwind_prologue_depth(uintptr_t start, uintptr_t pc)
{
    uint8_t b[64];
    if (pc <= start)
        return -1;
    size_t n = pc - start > sizeof b ? sizeof b : pc - start, i = 0;
    int whole = pc - start <= sizeof b, sub = 0;
    int64_t d = 0;
    if (pyrt_read(start, b, n) != 0)
        return -1;
    if (n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
        i = 4; /* endbr64 */
    if (i + 4 > n || b[i] != 0x55 || b[i + 1] != 0x48 ||
        !((b[i + 2] == 0x89 && b[i + 3] == 0xe5) || (b[i + 2] == 0x8b && b[i + 3] == 0xec)))
        return -1; /* push %rbp; mov %rsp,%rbp */
    i += 4;
    while (i < n) {
        uint8_t x = b[i];
        size_t p = (x & 0xf0) == 0x40; /* a REX prefix */
        if (x >= 0x50 && x <= 0x57 && x != 0x54 && x != 0x55) {
            d += 8, i += 1; /* push %rax..%rdi */
        } else if (x == 0x41 && i + 1 < n && b[i + 1] >= 0x50 && b[i + 1] <= 0x57) {
            d += 8, i += 2; /* push %r8..%r15 */
        } else if (x == 0x48 && i + 3 < n && b[i + 1] == 0x83 && b[i + 2] == 0xec) {
            if (b[i + 3] >= 0x80)
                return -1;                  /* a negative imm8 */
            d += b[i + 3], i += 4, sub = 1; /* sub $imm8,%rsp */
        } else if (x == 0x48 && i + 6 < n && b[i + 1] == 0x81 && b[i + 2] == 0xec) {
            uint32_t v = (uint32_t)b[i + 3] | (uint32_t)b[i + 4] << 8 | (uint32_t)b[i + 5] << 16 |
                         (uint32_t)b[i + 6] << 24;
            if (v >= (1u << 24))
                return -1;
            d += v, i += 7, sub = 1; /* sub $imm32,%rsp */
        } else if (x == 0x48 && i + 2 < n && b[i + 1] == 0x83 && b[i + 2] == 0xe4) {
            return -1; /* and $-N,%rsp: realigned, the depth is no constant */
        } else if (!(p && (x & 2)) && i + p + 1 < n && (b[i + p] == 0x89 || b[i + p] == 0x8b) &&
                   (b[i + p + 1] & 0xc0) == 0xc0) {
            /* a move between registers (mod 3), never into rsp or rbp */
            uint8_t m = b[i + p + 1];
            int dst = b[i + p] == 0x89 ? (m & 7) | (p ? (x & 1) << 3 : 0)
                                       : ((m >> 3) & 7) | (p ? (x & 4) << 1 : 0);
            if (dst == 4 || dst == 5)
                return -1;
            i += p + 2;
        } else {
            break;
        }
    }
    return (i >= n && whole) || sub ? d : -1;
}

/* The unwind from rs with rbp taken to be a, into out (walk's frame count and *clean). */
static int walk_rbp(const struct unwind_regs *rs, uintptr_t a, int exact, uintptr_t *out, int max,
                    struct unwind_cache *c, unwind_find_fn find, void *arg, int *clean)
{
    struct unwind_regs t = *rs;
    t.v[RBP] = a;
    t.valid |= 1u << RBP;
    return walk(&t, out, max, find, arg, c, 0, exact, clean, NULL);
}

/* Whether the return address slot of a frame whose rbp is a (at a + cfa_off + ra_off) holds a
 * return address: in a known module, right after a call. 1, 0, or -1 when it cannot be read. */
static int ra_slot(struct unwind_cache *c, uintptr_t a, int64_t cfa_off, int64_t ra_off,
                   unwind_find_fn find, void *arg)
{
    uintptr_t ra;
    struct unwind_mod m;
    if (srd_word(c, a + (uintptr_t)cfa_off + (uintptr_t)ra_off, &ra) != 0)
        return -1;
    return ra >= 8 && find(ra - 1, &m, arg) == 0 && after_call(ra);
}

/* A thread read without its registers (sig_unwind_native_pcsp) has no rbp: a frame whose CFA is
 * rbp + cfa_off (a function built with frame pointers, libffi's call frame, one with a
 * variable-size frame) when no inner frame saved rbp needs it found. First from the function's
 * prologue (start: its FDE's first pc; look: the pc its rules are for), exact where the
 * prologue is a plain one: a frame of a few KiB over stale return addresses (ASan's read
 * interceptor, native_mix.c's mix_big_read) let a stale chain win the guess below, which
 * otherwise decides. The guess's candidates are the 8-aligned slots a from sp up for which the
 * return address at a + cfa_off + ra_off lies in a known module right after a call
 * instruction; stale return addresses left below the frame by
 * earlier calls pass that test too, so each candidate is tried by unwinding the rest of the
 * stack with it (without guessing again): of those whose unwind reaches the outermost frame
 * (clone3, _start) the one with the most frames wins (a stale return address that still ends
 * well skips frames), else the one that went deepest. A stale return address above the frame
 * (in the caller's uninitialised locals, left by the caller's earlier calls) can chain into
 * the real frames too and win with more frames (CPython 3.15's subinterpreter runner: the
 * sleep's frame guessed into PyEval_EvalCode's earlier thread-state calls): alt > 0 takes the
 * alt-th other candidate that ends at the outermost frame, lowest address first, for a caller
 * that can check the result against what it knows (prof/native.c: the eval-loop frames against
 * the Python entry frames); *nalt is set to how many there are. The frames of the pick are in
 * out[0..return value); 0 when no candidate unwinds at all or there is no alt-th. */
#define GUESS_SPAN 8192 /* bytes of stack searched above sp */
/* candidates tried: a sanitizer's interceptor between the eval loop and libc (ASan's read,
 * a 2 KiB frame full of its earlier calls' return addresses) puts the real frame past the
 * 32nd candidate; 32 tries picked a stale one that skipped ffi_call_unix64 and the merge failed */
#define GUESS_TRIES 128

static int guess_rbp(const struct unwind_regs *rs, int64_t cfa_off, int64_t ra_off, int exact,
                     uintptr_t *out, int max, struct unwind_cache *c, unwind_find_fn find,
                     void *arg, int alt, int *nalt, uintptr_t start, uintptr_t look)
{
    uintptr_t sp = rs->v[RSP], best = 0, cleans[GUESS_TRIES], pro = 0;
    int best_n = 0, best_clean = 0, tries = 0, ncl = 0, pro_ok = 0;
    /* The frame pointer the prologue gives (sig_unwind_prologue_depth; CFA = rbp + 16 is what
     * push %rbp; mov %rsp,%rbp makes), when its return address follows a call: it beats the
     * candidates below when its unwind ends at the outermost frame (or fills out), or when
     * none of theirs does. */
    int64_t dep = start && cfa_off == 16 ? sig_unwind_prologue_depth(start, look) : -1;
    if (dep >= 0 && ra_slot(c, sp + (uintptr_t)dep, cfa_off, ra_off, find, arg) == 1) {
        int clean = 0, k = walk_rbp(rs, sp + (uintptr_t)dep, exact, out, max, c, find, arg, &clean);
        pro = sp + (uintptr_t)dep;
        pro_ok = k > 0 ? (clean || k >= max ? 2 : 1) : 0;
    }
    for (uintptr_t a = (sp + 7) & ~(uintptr_t)7; a < sp + GUESS_SPAN && tries < GUESS_TRIES;
         a += 8) {
        int is_ra = ra_slot(c, a, cfa_off, ra_off, find, arg);
        if (is_ra < 0)
            break;
        if (!is_ra)
            continue;
        int clean = 0, k;
        tries++;
        k = walk_rbp(rs, a, exact, out, max, c, find, arg, &clean);
        if (clean && k > 0)
            cleans[ncl++] = a;
        if (clean > best_clean || (clean == best_clean && k > best_n))
            best_n = k, best = a, best_clean = clean;
    }
    if (pro_ok == 2 || (pro_ok && !best_clean))
        best = pro, best_n = 1, best_clean = best_clean || pro_ok == 2;
    if (nalt) { /* the clean candidates other than the pick */
        int others = 0;
        for (int i = 0; i < ncl; i++)
            others += cleans[i] != best;
        *nalt = best_clean ? others : 0;
    }
    if (alt > 0) { /* the alt-th clean candidate other than best, lowest first */
        uintptr_t was = best;
        best = 0;
        for (int i = 0, seen = 0; best_clean && i < ncl && !best; i++)
            if (cleans[i] != was && ++seen == alt)
                best = cleans[i];
        best_n = best != 0;
    }
    int clean;
    return best_n ? walk_rbp(rs, best, exact, out, max, c, find, arg, &clean) : 0;
}

/* Unwinds from *rsp into out (exact: rs's pc is where it stopped, not a return address);
 * *clean is set when the stack ended at its outermost frame (CFI's undefined return address:
 * clone3, _start). guess > 0: guess rbp where a frame needs it and it is not known
 * (guess_rbp, taking its candidate guess - 1; *nalt: its count of alternatives). */
static int walk(struct unwind_regs *rsp, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                struct unwind_cache *cache, int guess, int exact, int *clean, int *nalt)
{
    struct unwind_regs rs = *rsp;
    int n = 0;
    *clean = 0;
    unsigned gen = 0;
    struct unwind_table *t = NULL;
    if (max <= 0)
        return 0;
    if (!find) {
        t = atomic_load_explicit(&unwind_cur_table, memory_order_acquire);
        find = sig_unwind_table_find;
        arg = t;
        gen = t ? t->gen : 0;
    }
    cache->win_len = 0;
#ifdef PYRT_REMOTE
    cache->pid = 0; /* the out-of-process reader: every read through pyrt_read */
#else
    cache->pid = getpid();
#endif
    while (n < max) {
        uintptr_t pc = rs.v[RA];
        if (!(rs.valid & (1u << RA)))
            break;
        if (pc == 0)
            break; /* not clean: a garbage frame may well read a zero */
        out[n++] = pc;
        if (n == max)
            break;
        uintptr_t look = exact ? pc : pc - 1;
        uintptr_t sp = rs.v[RSP];
        int signal = 0;
        /* The CFI register numbers here are x86-64's; elsewhere the frame-pointer chain. */
        /* The thread's rows, the shared rules, then the thread's entry for pc: the first two
         * are resident from the start (a thread's first sample writes no page of e[]). */
        struct unwind_rule r, *e = NULL;
        int hit = 0;
        if (gen && HAVE_CFI) {
            hit = sig_unwind_cache_row_get(cache, look, gen, &r) == 0 ||
                  sig_unwind_cache_shared_get(look, gen, &r) == 0;
            if (!hit) {
                e = sig_unwind_cache_slot(cache, look);
                if (e->pc == look && e->gen == gen)
                    r = *e, hit = 1;
            }
        }
        if (hit) {
            if (guess && r.cfa_reg == RBP && r.ra_off && !(rs.valid & (1u << RBP)))
                return n - 1 +
                       guess_rbp(&rs, r.cfa_off, r.ra_off, exact, out + n - 1, max - n + 1, cache,
                                 find, arg, guess - 1, nalt, fde_start(look, find, arg, cache, gen),
                                 look);
            if (r.ra_off == 0) {
                *clean = 1; /* the outermost frame */
                break;
            }
            if (step_cached(&rs, &r, cache) != 0)
                break;
            signal = r.signal;
        } else {
            struct unwind_mod m;
            struct sig_unwind_cfi_fde f;
            struct unwind_cfi_state s;
            uintptr_t row[2];
            if (HAVE_CFI && find(look, &m, arg) == 0 &&
                cfi_at(&m, look, &f, &s, cache, gen, row) == 0) {
                struct unwind_rule ne;
                if (e && !f.cie.signal && sig_unwind_cache_rule(&s, &ne)) {
                    ne.pc = look, ne.gen = gen, ne.signal = 0;
                    *e = ne;
                    sig_unwind_cache_shared_put(row, &ne);
                    sig_unwind_cache_row_put(cache, row, &ne);
                }
                signal = f.cie.signal;
                if (guess && s.cfa_reg == RBP && !(rs.valid & (1u << RBP)) &&
                    s.r[RA].how == UNWIND_R_OFF)
                    return n - 1 +
                           guess_rbp(&rs, s.cfa_off, s.r[RA].v, exact, out + n - 1, max - n + 1,
                                     cache, find, arg, guess - 1, nalt, f.start, look);
                if (s.r[RA].how == UNWIND_R_UNDEF) {
                    *clean = 1; /* the outermost frame */
                    break;
                }
                if (step_cfi(&rs, &s, &signal, cache) != 0)
                    break;
            } else if (step_fp(&rs, cache) != 0) {
                break;
            }
        }
        /* Stacks grow down: a caller's frame is above; a loop or a jump down is garbage. */
        if (rs.v[RSP] <= sp && !signal)
            break;
        exact = signal;
    }
    return n;
}

/* ---- the module table ---- */

int sig_unwind_table_find(uintptr_t pc, struct unwind_mod *m, void *arg)
{
    const struct unwind_table *t = arg;
    int lo = 0, hi;
    if (!t)
        return -1;
    hi = t->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (t->mods[mid].hi <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= t->n || pc < t->mods[lo].lo)
        return -1;
    *m = t->mods[lo];
    return 0;
}

int sig_unwind_mod_from_image(uintptr_t base, struct unwind_mod *m, uintptr_t *biasp)
{
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[64];
    uint8_t h[32];
    uintptr_t bias = 0;
    int have = 0;
    memset(m, 0, sizeof *m);
    if (pyrt_read(base, &eh, sizeof eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_phnum == 0 || eh.e_phnum > 64 || eh.e_phentsize != sizeof ph[0] ||
        pyrt_read(base + eh.e_phoff, ph, eh.e_phnum * sizeof ph[0]) != 0)
        return -1;
    /* The segment mapped at file offset 0 starts at base. */
    for (int i = 0; i < eh.e_phnum && !have; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
            bias = base - (uintptr_t)(ph[i].p_vaddr & ~(ElfW(Addr))4095), have = 1;
    if (!have)
        return -1;
    if (biasp)
        *biasp = bias;
    for (int i = 0; i < eh.e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
            uintptr_t lo = bias + ph[i].p_vaddr, hi = lo + ph[i].p_memsz;
            if (!m->lo || lo < m->lo)
                m->lo = lo;
            if (hi > m->hi)
                m->hi = hi;
        } else if (ph[i].p_type == PT_GNU_EH_FRAME) {
            m->hdr = bias + ph[i].p_vaddr;
        }
    }
    if (m->hdr && pyrt_read(m->hdr, h, sizeof h) == 0)
        sig_unwind_hdr_parse(m, h);
    return m->hi ? 0 : -1;
}
