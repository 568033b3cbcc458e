/* SPDX-License-Identifier: MIT */
/* A lock-free, allocation-free DWARF CFI unwinder for signal handlers (unwind.h), and the
 * module table it looks pcs up in. The CFI side follows the DWARF 5 "Call Frame Information"
 * chapter and the LSB's .eh_frame/.eh_frame_hdr layout: binary search of the header's table,
 * the FDE and its CIE read into stack buffers, the CFA program run up to the pc, then the
 * caller's registers from the rules (a small DWARF expression evaluator covers the PLT and
 * signal-trampoline expressions). Everything the unwinder reads of the target goes through
 * pyrt_sig_read. Only signal-side code lives here (make check-signal-safety holds this file
 * to an allow-list of calls); the module table is built in unwind_table.c. */
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

#if defined(__x86_64__)
#define HAVE_CFI 1
#else
#define HAVE_CFI 0
#endif

_Atomic(struct unwind_table *) unwind_cur_table;

/* ---- reading DWARF data from a local buffer ---- */

struct buf {
    const uint8_t *p, *end;
    uintptr_t addr; /* the target address of p (for pc-relative pointers) */
    int bad;
};

static uint64_t get_n(struct buf *b, int n)
{
    uint64_t v = 0;
    if (b->end - b->p < n) {
        b->bad = 1;
        b->p = b->end;
        return 0;
    }
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | b->p[i];
    b->p += n;
    b->addr += (uintptr_t)n;
    return v;
}

static uint64_t get_uleb(struct buf *b)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t c = (uint8_t)get_n(b, 1);
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    b->bad = 1;
    return v;
}

static int64_t get_sleb(struct buf *b)
{
    int64_t v = 0;
    int shift = 0;
    uint8_t c;
    do {
        c = (uint8_t)get_n(b, 1);
        v |= (int64_t)(c & 0x7f) << shift;
        shift += 7;
    } while ((c & 0x80) && shift < 64);
    if (shift < 64 && (c & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* A pointer in DW_EH_PE encoding enc (pcrel and absolute; others are refused). */
static uintptr_t get_ptr(struct buf *b, uint8_t enc)
{
    uintptr_t at = b->addr, v;
    if (enc == 0xff) /* DW_EH_PE_omit */
        return 0;
    switch (enc & 0x0f) {
    case 0x00: v = (uintptr_t)get_n(b, 8); break;                   /* absptr */
    case 0x01: v = (uintptr_t)get_uleb(b); break;                   /* uleb128 */
    case 0x02: v = (uintptr_t)get_n(b, 2); break;                   /* udata2 */
    case 0x03: v = (uintptr_t)get_n(b, 4); break;                   /* udata4 */
    case 0x04: v = (uintptr_t)get_n(b, 8); break;                   /* udata8 */
    case 0x09: v = (uintptr_t)get_sleb(b); break;                   /* sleb128 */
    case 0x0a: v = (uintptr_t)(intptr_t)(int16_t)get_n(b, 2); break; /* sdata2 */
    case 0x0b: v = (uintptr_t)(intptr_t)(int32_t)get_n(b, 4); break; /* sdata4 */
    case 0x0c: v = (uintptr_t)get_n(b, 8); break;                   /* sdata8 */
    default: b->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break; /* pcrel */
    default: b->bad = 1; return 0;
    }
    return v;
}

/* ---- register state ---- */

enum { NREG = 17, RA = 16, RBP = 6, RSP = 7 };
enum { R_SAME, R_UNDEF, R_OFF, R_VALOFF, R_REG, R_EXPR, R_VALEXPR };

struct rule {
    uint8_t how;
    int64_t v; /* offset, register, or expression address */
    uint32_t len;
};

struct cfi_state {
    struct rule r[NREG];
    int cfa_reg;    /* -1: expression */
    int64_t cfa_off;
    uintptr_t cfa_expr;
    uint32_t cfa_len;
};

struct regs {
    uintptr_t v[NREG];
    unsigned valid;
};

static int rd(uintptr_t addr, uintptr_t *out)
{
    return pyrt_sig_read(addr, out, sizeof *out);
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
    int k = pyrt_iov_pages(at, at + sizeof c->win, remote,
                           (int)(sizeof remote / sizeof remote[0]), &reach);
    int saved = errno;
    ssize_t r = c->pid > 0 ? process_vm_readv(c->pid, &local, 1, remote, (unsigned long)k, 0) : -1;
    errno = saved;
    c->win_lo = addr & ~(uintptr_t)7;
    c->win_len = r > 0 ? (size_t)r : 0;
    if (addr + n <= c->win_lo + c->win_len) {
        memcpy(dst, c->win + (addr - c->win_lo), n);
        return 0;
    }
    return pyrt_sig_read(addr, dst, n); /* process_vm_readv refused: pyrt_sig's own way */
}

static int srd_word(struct unwind_cache *c, uintptr_t addr, uintptr_t *out)
{
    return srd(c, addr, out, sizeof *out);
}

/* A DWARF expression at [expr, expr+len) (read fault-proof), with push first on the stack
 * when push_cfa. 0 and *out, or -1 for anything outside the small supported set. */
static int eval_expr(uintptr_t expr, uint32_t len, const struct regs *rs, int push_cfa,
                     uintptr_t cfa, uintptr_t *out)
{
    uint8_t code[64];
    uintptr_t st[16];
    int sp = 0;
    if (len == 0 || len > sizeof code || pyrt_sig_read(expr, code, len) != 0)
        return -1;
    struct buf b = {code, code + len, expr, 0};
    if (push_cfa)
        st[sp++] = cfa;
    while (b.p < b.end && !b.bad) {
        uint8_t op = (uint8_t)get_n(&b, 1);
        uintptr_t a, c;
        if (op >= 0x30 && op <= 0x4f) { /* lit0..31 */
            if (sp == 16)
                return -1;
            st[sp++] = op - 0x30;
            continue;
        }
        if ((op >= 0x70 && op <= 0x8f) || op == 0x92) { /* breg0..31, bregx */
            int r = op == 0x92 ? (int)get_uleb(&b) : op - 0x70;
            int64_t off = get_sleb(&b);
            if (r >= NREG || !(rs->valid & (1u << r)) || sp == 16)
                return -1;
            st[sp++] = rs->v[r] + (uintptr_t)off;
            continue;
        }
        switch (op) {
        case 0x06: /* deref */
            if (sp < 1 || rd(st[sp - 1], &st[sp - 1]) != 0)
                return -1;
            break;
        case 0x08: case 0x09: case 0x0a: case 0x0b: case 0x0c: case 0x0d: case 0x0e:
        case 0x0f: case 0x10: case 0x11: { /* const1u .. consts */
            static const int size[] = {1, 1, 2, 2, 4, 4, 8, 8};
            uintptr_t v;
            if (op == 0x10)
                v = (uintptr_t)get_uleb(&b);
            else if (op == 0x11)
                v = (uintptr_t)get_sleb(&b);
            else {
                int n = size[op - 0x08];
                v = (uintptr_t)get_n(&b, n);
                if (op & 1) /* the signed forms */
                    v = n == 1 ? (uintptr_t)(intptr_t)(int8_t)v
                      : n == 2 ? (uintptr_t)(intptr_t)(int16_t)v
                      : n == 4 ? (uintptr_t)(intptr_t)(int32_t)v : v;
            }
            if (sp == 16)
                return -1;
            st[sp++] = v;
            break;
        }
        case 0x12: /* dup */
            if (sp < 1 || sp == 16)
                return -1;
            st[sp] = st[sp - 1];
            sp++;
            break;
        case 0x13: /* drop */
            if (sp < 1)
                return -1;
            sp--;
            break;
        case 0x23: /* plus_uconst */
            if (sp < 1)
                return -1;
            st[sp - 1] += (uintptr_t)get_uleb(&b);
            break;
        case 0x1a: case 0x1c: case 0x1e: case 0x21: case 0x22: case 0x24: case 0x25:
        case 0x27: case 0x29: case 0x2a: case 0x2b: case 0x2c: case 0x2d: case 0x2e:
            if (sp < 2)
                return -1;
            c = st[--sp];
            a = st[sp - 1];
            switch (op) {
            case 0x1a: a &= c; break;
            case 0x1c: a -= c; break;
            case 0x1e: a *= c; break;
            case 0x21: a |= c; break;
            case 0x22: a += c; break;
            case 0x24: a = c < 64 ? a << c : 0; break;
            case 0x25: a = c < 64 ? a >> c : 0; break;
            case 0x27: a ^= c; break;
            case 0x29: a = (intptr_t)a == (intptr_t)c; break;
            case 0x2a: a = (intptr_t)a >= (intptr_t)c; break;
            case 0x2b: a = (intptr_t)a > (intptr_t)c; break;
            case 0x2c: a = (intptr_t)a <= (intptr_t)c; break;
            case 0x2d: a = (intptr_t)a < (intptr_t)c; break;
            case 0x2e: a = (intptr_t)a != (intptr_t)c; break;
            }
            st[sp - 1] = a;
            break;
        default:
            return -1;
        }
    }
    if (b.bad || sp < 1)
        return -1;
    *out = st[sp - 1];
    return 0;
}

/* ---- CIE/FDE ---- */

struct cie {
    uint64_t code_align;
    int64_t data_align;
    int ra_reg;
    uint8_t fde_enc;
    int has_z, signal;
    const uint8_t *insn, *insn_end;
    uintptr_t insn_addr;
};

static int parse_cie(const uint8_t *p, size_t n, uintptr_t addr, struct cie *c)
{
    struct buf b = {p, p + n, addr, 0};
    uint32_t len = (uint32_t)get_n(&b, 4);
    if (len == 0xffffffffu || len + 4 > n || get_n(&b, 4) != 0) /* 64-bit DWARF, or not a CIE */
        return -1;
    b.end = p + 4 + len;
    int version = (int)get_n(&b, 1);
    char aug[8];
    int k = 0;
    for (;;) {
        char ch = (char)get_n(&b, 1);
        if (b.bad || ch == 0)
            break;
        if (k == (int)sizeof aug - 1)
            return -1;
        aug[k++] = ch;
    }
    aug[k] = 0;
    if (aug[0] == 'e' && aug[1] == 'h')
        get_n(&b, 8);
    memset(c, 0, sizeof *c);
    c->fde_enc = 0; /* absptr unless 'R' */
    c->code_align = get_uleb(&b);
    c->data_align = get_sleb(&b);
    c->ra_reg = version == 1 ? (int)get_n(&b, 1) : (int)get_uleb(&b);
    if (aug[0] == 'z') {
        uint64_t alen = get_uleb(&b);
        const uint8_t *aend = b.p + alen;
        c->has_z = 1;
        for (int i = 1; aug[i] && !b.bad; i++) {
            switch (aug[i]) {
            case 'R': c->fde_enc = (uint8_t)get_n(&b, 1); break;
            case 'L': get_n(&b, 1); break;
            case 'P': { uint8_t e = (uint8_t)get_n(&b, 1); get_ptr(&b, (uint8_t)(e & 0x7f)); break; }
            case 'S': c->signal = 1; break;
            default: break; /* unknown: the 'z' length skips it */
            }
        }
        if (aend > b.end)
            return -1;
        b.addr += (uintptr_t)(aend - b.p);
        b.p = aend;
    } else if (aug[0]) {
        return -1;
    }
    if (b.bad || c->ra_reg != RA)
        return -1;
    c->insn = b.p;
    c->insn_end = b.end;
    c->insn_addr = b.addr;
    return 0;
}

/* Runs CFA instructions [p, end) from location loc while loc <= pc. init holds the rules
 * after the CIE's instructions (for DW_CFA_restore), NULL while running those. row (may be
 * NULL) gets the locations where the row found for pc starts and ends (end 0: at the end of
 * the instructions, i.e. the FDE's range). */
static int run_cfa(const uint8_t *p, const uint8_t *end, uintptr_t addr, const struct cie *c,
                   uintptr_t loc, uintptr_t pc, struct cfi_state *s, const struct cfi_state *init,
                   uintptr_t row[2])
{
    struct cfi_state stack[4];
    int depth = 0;
    struct buf b = {p, end, addr, 0};
    while (b.p < b.end && !b.bad) {
        uint8_t op = (uint8_t)get_n(&b, 1), lo = op & 0x3f;
        uint64_t r;
        int64_t off;
        uintptr_t next = loc;
        switch (op >> 6) {
        case 1: next = loc + lo * c->code_align; goto advance; /* advance_loc */
        case 2: /* offset */
            off = (int64_t)get_uleb(&b) * c->data_align;
            if (lo < NREG)
                s->r[lo] = (struct rule){R_OFF, off, 0};
            continue;
        case 3: /* restore */
            if (lo < NREG)
                s->r[lo] = init ? init->r[lo] : (struct rule){R_SAME, 0, 0};
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: next = get_ptr(&b, c->fde_enc); goto advance; /* set_loc */
        case 0x02: next = loc + get_n(&b, 1) * c->code_align; goto advance;
        case 0x03: next = loc + get_n(&b, 2) * c->code_align; goto advance;
        case 0x04: next = loc + get_n(&b, 4) * c->code_align; goto advance;
        case 0x05: /* offset_extended */
            r = get_uleb(&b);
            off = (int64_t)get_uleb(&b) * c->data_align;
            if (r < NREG)
                s->r[r] = (struct rule){R_OFF, off, 0};
            break;
        case 0x06: /* restore_extended */
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = init ? init->r[r] : (struct rule){R_SAME, 0, 0};
            break;
        case 0x07: /* undefined */
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct rule){R_UNDEF, 0, 0};
            break;
        case 0x08: /* same_value */
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct rule){R_SAME, 0, 0};
            break;
        case 0x09: { /* register */
            uint64_t r2;
            r = get_uleb(&b);
            r2 = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct rule){R_REG, (int64_t)r2, 0};
            break;
        }
        case 0x0a: /* remember_state */
            if (depth == 4)
                return -1;
            stack[depth++] = *s;
            break;
        case 0x0b: /* restore_state: the whole row, CFA included */
            if (depth == 0)
                return -1;
            *s = stack[--depth];
            break;
        case 0x0c: /* def_cfa */
            s->cfa_reg = (int)get_uleb(&b);
            s->cfa_off = (int64_t)get_uleb(&b);
            break;
        case 0x0d: s->cfa_reg = (int)get_uleb(&b); break; /* def_cfa_register */
        case 0x0e: s->cfa_off = (int64_t)get_uleb(&b); break; /* def_cfa_offset */
        case 0x0f: { /* def_cfa_expression */
            uint64_t n = get_uleb(&b);
            s->cfa_reg = -1;
            s->cfa_expr = b.addr;
            s->cfa_len = (uint32_t)n;
            b.p += n <= (uint64_t)(b.end - b.p) ? n : (uint64_t)(b.end - b.p);
            b.addr += (uintptr_t)n;
            break;
        }
        case 0x10: case 0x16: { /* expression, val_expression */
            uint64_t n;
            r = get_uleb(&b);
            n = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct rule){op == 0x10 ? R_EXPR : R_VALEXPR, (int64_t)b.addr,
                                        (uint32_t)n};
            b.p += n <= (uint64_t)(b.end - b.p) ? n : (uint64_t)(b.end - b.p);
            b.addr += (uintptr_t)n;
            break;
        }
        case 0x11: /* offset_extended_sf */
            r = get_uleb(&b);
            off = get_sleb(&b) * c->data_align;
            if (r < NREG)
                s->r[r] = (struct rule){R_OFF, off, 0};
            break;
        case 0x12: /* def_cfa_sf */
            s->cfa_reg = (int)get_uleb(&b);
            s->cfa_off = get_sleb(&b) * c->data_align;
            break;
        case 0x13: s->cfa_off = get_sleb(&b) * c->data_align; break; /* def_cfa_offset_sf */
        case 0x14: case 0x15: /* val_offset, val_offset_sf */
            r = get_uleb(&b);
            off = op == 0x14 ? (int64_t)get_uleb(&b) * c->data_align : get_sleb(&b) * c->data_align;
            if (r < NREG)
                s->r[r] = (struct rule){R_VALOFF, off, 0};
            break;
        case 0x2e: get_uleb(&b); break; /* GNU_args_size */
        case 0x2f: /* GNU_negative_offset_extended */
            r = get_uleb(&b);
            off = -(int64_t)get_uleb(&b) * c->data_align;
            if (r < NREG)
                s->r[r] = (struct rule){R_OFF, off, 0};
            break;
        default:
            return -1;
        }
        continue;
    advance:
        if (next > pc) {
            if (row)
                row[0] = loc, row[1] = next;
            return 0;
        }
        loc = next;
    }
    if (row)
        row[0] = loc, row[1] = 0;
    return b.bad ? -1 : 0;
}

/* A CIE or FDE at addr (its 4-byte length, then that many bytes) into buf (cap bytes): a first
 * read of RECORD_GUESS bytes holds most records whole (one system call instead of two), the
 * rest is read after; a record running into an unreadable page is read by its length alone.
 * 0 and *len (the length field: the record is *len + 4 bytes), or -1. */
#define RECORD_GUESS 128
static int record_read(uintptr_t addr, uint8_t *buf, uint32_t cap, uint32_t *len)
{
    int whole = pyrt_sig_read(addr, buf, RECORD_GUESS) == 0;
    if (whole)
        memcpy(len, buf, 4);
    else if (pyrt_sig_read(addr, len, 4) != 0)
        return -1;
    if (*len < 8 || *len + 4 > cap)
        return -1;
    if (whole && *len + 4 <= RECORD_GUESS)
        return 0;
    return whole ? pyrt_sig_read(addr + RECORD_GUESS, buf + RECORD_GUESS, *len + 4 - RECORD_GUESS)
                 : pyrt_sig_read(addr, buf, *len + 4);
}

/* Of n search-table locations (v[0], v[step], ...: relative to hdr, sorted), the index of the
 * last one at or below pc (0 when none is). */
static uint32_t last_at_or_below(const int32_t *v, uint32_t step, uint32_t n, uintptr_t hdr,
                                 uintptr_t pc)
{
    uint32_t a = 0, b = n;
    while (b - a > 1) {
        uint32_t mid = a + (b - a) / 2;
        if (hdr + (uintptr_t)(intptr_t)v[(size_t)step * mid] <= pc)
            a = mid;
        else
            b = mid;
    }
    return a;
}

/* The search-table entry (initial location, FDE) of module m whose location is the last at or
 * below pc, into ent: its block found from the index, the block in one read into blk (2 *
 * UNWIND_STRIDE words), the entry in the copy; without an index (or if that read fails), one
 * read per halving. 0, or -1. */
static int table_entry(const struct unwind_mod *m, uintptr_t pc, int32_t *blk, int32_t ent[2])
{
    uint32_t lo = 0, hi = m->count;
    if (!m->table || hi == 0)
        return -1;
    if (m->index && m->nindex) {
        lo = last_at_or_below(m->index, 1, m->nindex, m->hdr, pc) * UNWIND_STRIDE;
        hi = lo + UNWIND_STRIDE < m->count ? lo + UNWIND_STRIDE : m->count;
        if (pyrt_sig_read(m->table + (uintptr_t)lo * 8, blk, (size_t)(hi - lo) * 8) == 0) {
            uint32_t x = last_at_or_below(blk, 2, hi - lo, m->hdr, pc);
            ent[0] = blk[2 * x], ent[1] = blk[2 * x + 1];
            return 0;
        }
    }
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        int32_t loc;
        if (pyrt_sig_read(m->table + (uintptr_t)mid * 8, &loc, 4) != 0)
            return -1;
        if (m->hdr + (uintptr_t)(intptr_t)loc <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return pyrt_sig_read(m->table + (uintptr_t)lo * 8, ent, 8);
}

/* The bounds of an FDE's function from its first bytes fde (n of them, at fde_addr; the
 * length field first) and its CIE c. 0, or -1. */
static int fde_bounds(const uint8_t *fde, size_t n, uintptr_t fde_addr, const struct cie *c,
                      struct buf *b, uintptr_t *start, uintptr_t *range)
{
    *b = (struct buf){fde + 8, fde + n, fde_addr + 8, 0};
    *start = get_ptr(b, c->fde_enc);
    *range = get_ptr(b, (uint8_t)(c->fde_enc & 0x0f));
    return b->bad ? -1 : 0;
}

int unwind_fde_bounds(const struct unwind_mod *m, uintptr_t pc, uintptr_t range[2])
{
    int32_t ent[2], blk[2 * UNWIND_STRIDE];
    uint8_t fde[32], cie[UNWIND_MAXREC];
    uint32_t len, clen, cie_ptr;
    struct cie c;
    struct buf b;
    uintptr_t start, size;
    if (table_entry(m, pc, blk, ent) != 0)
        return -1;
    uintptr_t fde_addr = m->hdr + (uintptr_t)(intptr_t)ent[1];
    if (pyrt_sig_read(fde_addr, fde, 8) != 0)
        return -1;
    memcpy(&len, fde, 4);
    memcpy(&cie_ptr, fde + 4, 4);
    if (len < 12 || len == 0xffffffffu)
        return -1;
    size_t n = len + 4 < sizeof fde ? len + 4 : sizeof fde;
    uintptr_t cie_addr = fde_addr + 4 - cie_ptr;
    if (pyrt_sig_read(fde_addr + 8, fde + 8, n - 8) != 0 ||
        record_read(cie_addr, cie, sizeof cie, &clen) != 0 || clen < 8 ||
        parse_cie(cie, clen + 4, cie_addr, &c) != 0 ||
        fde_bounds(fde, n, fde_addr, &c, &b, &start, &size) != 0 || pc < start ||
        pc - start >= size)
        return -1;
    range[0] = start, range[1] = start + size;
    return 0;
}

/* The FDE covering pc in module m: its CIE parsed into *c, the rules at pc into *s, and into
 * row the range of locations those rules hold for. The FDE and CIE bytes come from the
 * thread's FDE cache when a recent unwind (same table generation gen, nonzero) read them; else
 * from the module's search table. */
static int cfi_at(const struct unwind_mod *m, uintptr_t pc, struct cie *c, struct cfi_state *s,
                  struct unwind_cache *uc, unsigned gen, uintptr_t row[2])
{
    enum { MAXREC = UNWIND_MAXREC, MAXFDE = UNWIND_MAXFDE };
    const uint8_t *fde = uc->fde, *cie = uc->cie;
    uintptr_t fde_addr, cie_addr;
    uint32_t len, clen;
    struct unwind_fde *hit = NULL;
    for (int i = 0; gen && i < UNWIND_FDES && !hit; i++)
        if (uc->f[i].gen == gen && uc->f[i].start <= pc && pc < uc->f[i].end)
            hit = &uc->f[i];
    if (hit) {
        fde = hit->fde, cie = hit->cie;
        fde_addr = hit->fde_addr, cie_addr = hit->cie_addr;
        len = hit->fde_len - 4u, clen = hit->cie_len - 4u;
    } else {
        int32_t ent[2];
        if (table_entry(m, pc, uc->blk, ent) != 0)
            return -1;
        fde_addr = m->hdr + (uintptr_t)(intptr_t)ent[1];
        if (record_read(fde_addr, uc->fde, MAXFDE, &len) != 0 || len < 12)
            return -1;
        uint32_t cie_ptr;
        memcpy(&cie_ptr, uc->fde + 4, 4);
        cie_addr = fde_addr + 4 - cie_ptr;
        if (record_read(cie_addr, uc->cie, MAXREC, &clen) != 0 || clen < 8)
            return -1;
    }
    if (parse_cie(cie, clen + 4, cie_addr, c) != 0)
        return -1;
    struct buf b;
    uintptr_t start, range;
    if (fde_bounds(fde, 4 + (size_t)len, fde_addr, c, &b, &start, &range) != 0)
        return -1;
    if (c->has_z) {
        uint64_t alen = get_uleb(&b);
        if (alen > (uint64_t)(b.end - b.p))
            return -1;
        b.p += alen;
        b.addr += (uintptr_t)alen;
    }
    if (b.bad || pc < start || pc >= start + range)
        return -1;
    if (!hit && gen && len + 4 <= sizeof uc->f[0].fde && clen + 4 <= sizeof uc->f[0].cie) {
        struct unwind_fde *e = &uc->f[uc->f_next++ % UNWIND_FDES];
        e->gen = 0;
        memcpy(e->fde, uc->fde, len + 4);
        memcpy(e->cie, uc->cie, clen + 4);
        e->fde_len = (uint16_t)(len + 4), e->cie_len = (uint16_t)(clen + 4);
        e->fde_addr = fde_addr, e->cie_addr = cie_addr;
        e->start = start, e->end = start + range;
        e->gen = gen;
        /* c's instruction pointers point into uc->cie; the copy is identical. */
    }
    memset(s, 0, sizeof *s);
    for (int i = 0; i < NREG; i++)
        s->r[i].how = R_SAME;
    s->cfa_reg = RSP;
    if (run_cfa(c->insn, c->insn_end, c->insn_addr, c, start, pc, s, NULL, NULL) != 0)
        return -1;
    struct cfi_state init = *s;
    if (run_cfa(b.p, b.end, b.addr, c, start, pc, s, &init, row) != 0)
        return -1;
    if (row[1] == 0 || row[1] > start + range)
        row[1] = start + range;
    if (row[0] < start || row[0] > pc || pc >= row[1]) /* odd locations: the pc alone */
        row[0] = pc, row[1] = pc + 1;
    return 0;
}

/* ---- stepping ---- */

static int step_fp(struct regs *rs, struct unwind_cache *c)
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
static int step_cfi(struct regs *rs, const struct cfi_state *s, int *signal,
                    struct unwind_cache *c)
{
    uintptr_t cfa;
    struct regs old = *rs;
    (void)signal;
    if (s->cfa_reg >= 0) {
        if (s->cfa_reg >= NREG || !(old.valid & (1u << s->cfa_reg)))
            return -1;
        cfa = old.v[s->cfa_reg] + (uintptr_t)s->cfa_off;
    } else if (eval_expr(s->cfa_expr, s->cfa_len, &old, 0, 0, &cfa) != 0) {
        return -1;
    }
    unsigned valid = 0;
    for (int i = 0; i < NREG; i++) {
        const struct rule *r = &s->r[i];
        uintptr_t v = 0, a;
        int ok = 0;
        switch (r->how) {
        case R_SAME:
            /* Callee-saved registers keep their value; RA has no "same" meaning. */
            ok = i != RA && (old.valid & (1u << i)) && (i == 3 || i == RBP || i >= 12);
            v = old.v[i];
            break;
        case R_OFF: ok = srd_word(c, cfa + (uintptr_t)r->v, &v) == 0; break;
        case R_VALOFF: v = cfa + (uintptr_t)r->v; ok = 1; break;
        case R_REG:
            ok = r->v >= 0 && r->v < NREG && (old.valid & (1u << r->v));
            v = ok ? old.v[r->v] : 0;
            break;
        case R_EXPR:
            ok = eval_expr((uintptr_t)r->v, r->len, &old, 1, cfa, &a) == 0 && rd(a, &v) == 0;
            break;
        case R_VALEXPR:
            ok = eval_expr((uintptr_t)r->v, r->len, &old, 1, cfa, &v) == 0;
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

/* The rule cache shared by every thread (a thread's first samples find what the others
 * learnt): rows of rules by pc range, in sets by the pc's page (SHARED_WAYS rows per set, a
 * row's way chosen by its start, so a row is never held twice in a set). A seqlock per entry,
 * written only by a handler that wins its sequence number with one compare-and-swap (never
 * waiting: a loser just does not cache), read by copying the words and checking the number did
 * not move. Lock-free and wait-free for readers and writers. A row is put in the set of the pc
 * that found it; other pages of a long row (an interpreter loop's body) join as pcs there are
 * found. */
#define SHARED_SETS 1024
#define SHARED_WAYS 4
struct shared_rule {
    _Atomic unsigned seq; /* odd while written */
    _Atomic uint64_t w[4]; /* lo, hi, gen << 32 | cfa_off, the rest of the rule */
};
static struct shared_rule shared[SHARED_SETS][SHARED_WAYS];

static struct shared_rule *shared_set(uintptr_t pc)
{
    uintptr_t h = (pc >> 12) * 0x9E3779B97F4A7C15ull;
    return shared[(h >> 40) % SHARED_SETS];
}

static int shared_get(uintptr_t pc, unsigned gen, struct unwind_rule *out)
{
    struct shared_rule *set = shared_set(pc);
    for (int k = 0; k < SHARED_WAYS; k++) {
        struct shared_rule *g = &set[k];
        uint64_t w[4];
        unsigned s1 = atomic_load_explicit(&g->seq, memory_order_acquire);
        if (s1 & 1)
            continue;
        for (int i = 0; i < 4; i++)
            w[i] = atomic_load_explicit(&g->w[i], memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&g->seq, memory_order_relaxed) != s1 || pc < w[0] ||
            pc >= w[1] || (unsigned)(w[2] >> 32) != gen)
            continue;
        out->pc = pc;
        out->gen = gen;
        out->cfa_off = (int32_t)(uint32_t)w[2];
        out->cfa_reg = (int8_t)(uint8_t)w[3];
        out->signal = (uint8_t)(w[3] >> 8);
        out->ra_off = (int16_t)(uint16_t)(w[3] >> 16);
        out->fp_off = (int16_t)(uint16_t)(w[3] >> 32);
        return 0;
    }
    return -1;
}

static void shared_put(const uintptr_t row[2], const struct unwind_rule *r)
{
    struct shared_rule *g = &shared_set(r->pc)[(row[0] >> 4) % SHARED_WAYS];
    uint64_t w[4] = {row[0], row[1], (uint64_t)r->gen << 32 | (uint32_t)r->cfa_off,
                     (uint64_t)(uint8_t)r->cfa_reg | (uint64_t)r->signal << 8 |
                         (uint64_t)(uint16_t)r->ra_off << 16 | (uint64_t)(uint16_t)r->fp_off << 32};
    unsigned s = atomic_load_explicit(&g->seq, memory_order_relaxed);
    if ((s & 1) || !atomic_compare_exchange_strong(&g->seq, &s, s + 1))
        return;
    atomic_thread_fence(memory_order_release);
    for (int i = 0; i < 4; i++)
        atomic_store_explicit(&g->w[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&g->seq, s + 2, memory_order_release);
}

static struct unwind_rule *cache_slot(struct unwind_cache *c, uintptr_t pc)
{
    uintptr_t h = (pc ^ (pc >> 9) ^ (pc >> 20)) * 0x9E3779B97F4A7C15ull;
    return &c->e[(h >> 40) % UNWIND_CACHE];
}

/* The thread's recent rows (rules by pc range): an interrupted pc anywhere in a function
 * body already seen is found again without reading its FDE. Fills *e (keyed to pc) on a hit:
 * 0, or -1. */
static int row_get(const struct unwind_cache *c, uintptr_t pc, unsigned gen, struct unwind_rule *e)
{
    for (int i = 0; i < UNWIND_ROWS; i++)
        if (c->rows[i].gen == gen && c->rows[i].lo <= pc && pc < c->rows[i].hi) {
            *e = c->rows[i].r;
            e->pc = pc;
            e->gen = gen;
            return 0;
        }
    return -1;
}

static void row_put(struct unwind_cache *c, const uintptr_t row[2], const struct unwind_rule *r)
{
    struct unwind_row *w = &c->rows[c->row_next++ % UNWIND_ROWS];
    w->gen = 0;
    w->lo = row[0], w->hi = row[1];
    w->r = *r;
    w->gen = r->gen;
}

/* The simple shape most frames have, worth caching: CFA = rsp/rbp + n, RA and rbp saved at
 * fixed offsets (or rbp untouched), no other register needed by a caller's CFA. */
static int cacheable(const struct cfi_state *s, struct unwind_rule *e)
{
    if (s->r[RA].how == R_UNDEF) { /* the outermost frame (clone3, _start): the stack ends */
        e->cfa_reg = RSP;
        e->cfa_off = 0;
        e->ra_off = 0; /* never a caller's return address: the end mark */
        e->fp_off = 0;
        return 1;
    }
    if ((s->cfa_reg != RSP && s->cfa_reg != RBP) || s->cfa_off < INT32_MIN ||
        s->cfa_off > INT32_MAX || s->r[RA].how != R_OFF || s->r[RA].v < INT16_MIN ||
        s->r[RA].v > INT16_MAX)
        return 0;
    if (s->r[RBP].how == R_OFF) {
        if (s->r[RBP].v == 0 || s->r[RBP].v < INT16_MIN || s->r[RBP].v > INT16_MAX)
            return 0;
        e->fp_off = (int16_t)s->r[RBP].v;
    } else if (s->r[RBP].how == R_SAME) {
        e->fp_off = 0;
    } else {
        return 0;
    }
    e->cfa_reg = (int8_t)s->cfa_reg;
    e->cfa_off = (int32_t)s->cfa_off;
    e->ra_off = (int16_t)s->r[RA].v;
    return 1;
}

static int step_cached(struct regs *rs, const struct unwind_rule *e, struct unwind_cache *c)
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

static int walk(struct regs *rsp, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                struct unwind_cache *cache, int guess, int exact, int *clean, int *nalt);

int unwind_native(const ucontext_t *uc, uintptr_t *out, int max, unwind_find_fn find,
                  void *arg, struct unwind_cache *cache)
{
    struct regs rs;
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

int unwind_native_pcsp(uintptr_t pc, uintptr_t sp, uintptr_t *out, int max,
                       struct unwind_cache *cache, int alt, int *nalt)
{
    struct regs rs;
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
    if (ra < 8 || pyrt_sig_read(ra - 8, b, sizeof b) != 0)
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

/* A thread read without its registers (unwind_native_pcsp) has no rbp: a frame whose CFA is
 * rbp + cfa_off (a function built with frame pointers, libffi's call frame, one with a
 * variable-size frame) when no inner frame saved rbp needs it guessed. The candidates are the
 * 8-aligned slots a from sp up for which the return address at a + cfa_off + ra_off lies in a
 * known module right after a call instruction; stale return addresses left below the frame by
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
#define GUESS_TRIES 32  /* candidates tried */

static int guess_rbp(const struct regs *rs, int64_t cfa_off, int64_t ra_off, int exact,
                     uintptr_t *out, int max, struct unwind_cache *c, unwind_find_fn find,
                     void *arg, int alt, int *nalt)
{
    uintptr_t sp = rs->v[RSP], best = 0, cleans[GUESS_TRIES];
    int best_n = 0, best_clean = 0, tries = 0, ncl = 0;
    for (uintptr_t a = (sp + 7) & ~(uintptr_t)7; a < sp + GUESS_SPAN && tries < GUESS_TRIES;
         a += 8) {
        uintptr_t ra;
        struct unwind_mod m;
        if (srd_word(c, a + (uintptr_t)(cfa_off + ra_off), &ra) != 0)
            break;
        if (ra < 8 || find(ra - 1, &m, arg) != 0 || !after_call(ra))
            continue;
        struct regs t = *rs;
        int clean = 0, k;
        t.v[RBP] = a;
        t.valid |= 1u << RBP;
        tries++;
        k = walk(&t, out, max, find, arg, c, 0, exact, &clean, NULL);
        if (clean && k > 0)
            cleans[ncl++] = a;
        if (clean > best_clean || (clean == best_clean && k > best_n))
            best_n = k, best = a, best_clean = clean;
    }
    if (nalt)
        *nalt = best_clean ? ncl - 1 : 0;
    if (alt > 0) { /* the alt-th clean candidate other than best, lowest first */
        uintptr_t was = best;
        best = 0;
        for (int i = 0, seen = 0; best_clean && i < ncl && !best; i++)
            if (cleans[i] != was && ++seen == alt)
                best = cleans[i];
        best_n = best != 0;
    }
    if (!best_n)
        return 0;
    struct regs t = *rs;
    int clean;
    t.v[RBP] = best;
    t.valid |= 1u << RBP;
    return walk(&t, out, max, find, arg, c, 0, exact, &clean, NULL);
}

/* Unwinds from *rsp into out (exact: rs's pc is where it stopped, not a return address);
 * *clean is set when the stack ended at its outermost frame (CFI's undefined return address:
 * clone3, _start). guess > 0: guess rbp where a frame needs it and it is not known
 * (guess_rbp, taking its candidate guess - 1; *nalt: its count of alternatives). */
static int walk(struct regs *rsp, uintptr_t *out, int max, unwind_find_fn find, void *arg,
                struct unwind_cache *cache, int guess, int exact, int *clean, int *nalt)
{
    struct regs rs = *rsp;
    int n = 0;
    *clean = 0;
    unsigned gen = 0;
    struct unwind_table *t = NULL;
    if (max <= 0)
        return 0;
    if (!find) {
        t = atomic_load_explicit(&unwind_cur_table, memory_order_acquire);
        find = unwind_table_find;
        arg = t;
        gen = t ? t->gen : 0;
    }
    cache->win_len = 0;
#ifdef PYRT_REMOTE
    cache->pid = 0; /* the out-of-process reader: every read through pyrt_sig_read */
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
            hit = row_get(cache, look, gen, &r) == 0 || shared_get(look, gen, &r) == 0;
            if (!hit) {
                e = cache_slot(cache, look);
                if (e->pc == look && e->gen == gen)
                    r = *e, hit = 1;
            }
        }
        if (hit) {
            if (guess && r.cfa_reg == RBP && r.ra_off && !(rs.valid & (1u << RBP)))
                return n - 1 + guess_rbp(&rs, r.cfa_off, r.ra_off, exact, out + n - 1,
                                         max - n + 1, cache, find, arg, guess - 1, nalt);
            if (r.ra_off == 0) {
                *clean = 1; /* the outermost frame */
                break;
            }
            if (step_cached(&rs, &r, cache) != 0)
                break;
            signal = r.signal;
        } else {
            struct unwind_mod m;
            struct cie c;
            struct cfi_state s;
            uintptr_t row[2];
            if (HAVE_CFI && find(look, &m, arg) == 0 &&
                cfi_at(&m, look, &c, &s, cache, gen, row) == 0) {
                struct unwind_rule ne;
                if (e && !c.signal && cacheable(&s, &ne)) {
                    ne.pc = look, ne.gen = gen, ne.signal = 0;
                    *e = ne;
                    shared_put(row, &ne);
                    row_put(cache, row, &ne);
                }
                signal = c.signal;
                if (guess && s.cfa_reg == RBP && !(rs.valid & (1u << RBP)) &&
                    s.r[RA].how == R_OFF)
                    return n - 1 + guess_rbp(&rs, s.cfa_off, s.r[RA].v, exact, out + n - 1,
                                             max - n + 1, cache, find, arg, guess - 1, nalt);
                if (s.r[RA].how == R_UNDEF) {
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

int unwind_table_find(uintptr_t pc, struct unwind_mod *m, void *arg)
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

/* The search table of the .eh_frame_hdr at hdr, read by read(): only the layout GNU ld and
 * lld write (version 1, a 4-byte count, datarel sdata4 entries) is used. */
void unwind_hdr_parse(struct unwind_mod *m, const uint8_t *h)
{
    struct buf b = {h, h + 32, m->hdr, 0};
    m->table = 0;
    m->count = 0;
    if (get_n(&b, 1) != 1)
        return;
    uint8_t ptr_enc = (uint8_t)get_n(&b, 1), cnt_enc = (uint8_t)get_n(&b, 1);
    uint8_t tab_enc = (uint8_t)get_n(&b, 1);
    get_ptr(&b, ptr_enc);
    if (b.bad || cnt_enc != 0x03 || tab_enc != 0x3b)
        return;
    uint32_t count = (uint32_t)get_n(&b, 4);
    if (b.bad)
        return;
    m->table = b.addr;
    m->count = count;
}

int unwind_mod_from_image(uintptr_t base, struct unwind_mod *m, uintptr_t *biasp)
{
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[64];
    uint8_t h[32];
    uintptr_t bias = 0;
    int have = 0;
    memset(m, 0, sizeof *m);
    if (pyrt_sig_read(base, &eh, sizeof eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_phnum == 0 || eh.e_phnum > 64 || eh.e_phentsize != sizeof ph[0] ||
        pyrt_sig_read(base + eh.e_phoff, ph, eh.e_phnum * sizeof ph[0]) != 0)
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
    if (m->hdr && pyrt_sig_read(m->hdr, h, sizeof h) == 0)
        unwind_hdr_parse(m, h);
    return m->hi ? 0 : -1;
}

