/* SPDX-License-Identifier: MIT */
/* The DWARF CFI reader and interpreter of the unwinder (unwind_cfi.h): DW_EH_PE pointers,
 * CIE/FDE records, the CFA program, DWARF expressions, .eh_frame_hdr and its search table,
 * following the DWARF 5 "Call Frame Information" chapter and the LSB's .eh_frame layout.
 * Signal-side code only (tools/check_signal_safety.sh holds unwind_cfi.o to an allow-list);
 * every read of the target goes through pyrt_read. */
#include "unwind_cfi.h"

#include <dwarf.h>
#include <string.h>

#include "pyrt/read.h"

enum { NREG = UNWIND_NREG, RA = UNWIND_RA };

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

/* Built unsigned: a tenth byte's bits shifted past bit 63 are dropped, not undefined. */
static int64_t get_sleb(struct buf *b)
{
    uint64_t v = 0;
    int shift = 0;
    uint8_t c;
    do {
        c = (uint8_t)get_n(b, 1);
        v |= (uint64_t)(c & 0x7f) << shift;
        shift += 7;
    } while ((c & 0x80) && shift < 64);
    if (shift < 64 && (c & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* A pointer in DW_EH_PE encoding enc (pcrel and absolute; others are refused). */
static uintptr_t get_ptr(struct buf *b, uint8_t enc)
{
    uintptr_t at = b->addr, v;
    if (enc == DW_EH_PE_omit)
        return 0;
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr: v = (uintptr_t)get_n(b, 8); break;
    case DW_EH_PE_uleb128: v = (uintptr_t)get_uleb(b); break;
    case DW_EH_PE_udata2: v = (uintptr_t)get_n(b, 2); break;
    case DW_EH_PE_udata4: v = (uintptr_t)get_n(b, 4); break;
    case DW_EH_PE_udata8: v = (uintptr_t)get_n(b, 8); break;
    case DW_EH_PE_sleb128: v = (uintptr_t)get_sleb(b); break;
    case DW_EH_PE_sdata2: v = (uintptr_t)(intptr_t)(int16_t)get_n(b, 2); break;
    case DW_EH_PE_sdata4: v = (uintptr_t)(intptr_t)(int32_t)get_n(b, 4); break;
    case DW_EH_PE_sdata8: v = (uintptr_t)get_n(b, 8); break;
    default: b->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case DW_EH_PE_absptr: break;
    case DW_EH_PE_pcrel: v += at; break;
    default: b->bad = 1; return 0;
    }
    return v;
}

/* A factored offset: n times the CIE's data alignment, wrapping (a hostile CIE's factors
 * overflow; a real one's never do). */
static int64_t scaled(uint64_t n, int64_t align)
{
    return (int64_t)(n * (uint64_t)align);
}

/* A register number: one past any column x86-64 has stays past it (never negative). */
static int regno(uint64_t r)
{
    return r < 0x7fffffff ? (int)r : 0x7fffffff;
}

/* ---- DWARF expressions ---- */

enum { EXPR_MAX = 64, EXPR_STACK = 16 };

int sig_unwind_cfi_expr(uintptr_t expr, uint32_t len, const struct unwind_regs *rs, int push_cfa,
                        uintptr_t cfa, uintptr_t *out)
{
    uint8_t code[EXPR_MAX];
    uintptr_t st[EXPR_STACK];
    int sp = 0;
    if (len == 0 || len > sizeof code || pyrt_read(expr, code, len) != 0)
        return -1;
    struct buf b = {code, code + len, expr, 0};
    if (push_cfa)
        st[sp++] = cfa;
    while (b.p < b.end && !b.bad) {
        uint8_t op = (uint8_t)get_n(&b, 1);
        uintptr_t a, c;
        if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
            if (sp == EXPR_STACK)
                return -1;
            st[sp++] = op - DW_OP_lit0;
            continue;
        }
        if ((op >= DW_OP_breg0 && op <= DW_OP_breg31) || op == DW_OP_bregx) {
            int r = op == DW_OP_bregx ? regno(get_uleb(&b)) : op - DW_OP_breg0;
            int64_t off = get_sleb(&b);
            if (r >= NREG || !(rs->valid & (1u << r)) || sp == EXPR_STACK)
                return -1;
            st[sp++] = rs->v[r] + (uintptr_t)off;
            continue;
        }
        switch (op) {
        case DW_OP_deref:
            if (sp < 1 || pyrt_read(st[sp - 1], &st[sp - 1], sizeof st[0]) != 0)
                return -1;
            break;
        case DW_OP_const1u:
        case DW_OP_const1s:
        case DW_OP_const2u:
        case DW_OP_const2s:
        case DW_OP_const4u:
        case DW_OP_const4s:
        case DW_OP_const8u:
        case DW_OP_const8s:
        case DW_OP_constu:
        case DW_OP_consts: {
            static const int size[] = {1, 1, 2, 2, 4, 4, 8, 8}; /* const1u .. const8s */
            uintptr_t v;
            if (op == DW_OP_constu)
                v = (uintptr_t)get_uleb(&b);
            else if (op == DW_OP_consts)
                v = (uintptr_t)get_sleb(&b);
            else {
                int n = size[op - DW_OP_const1u];
                v = (uintptr_t)get_n(&b, n);
                if (op & 1) /* the signed forms */
                    v = n == 1   ? (uintptr_t)(intptr_t)(int8_t)v
                        : n == 2 ? (uintptr_t)(intptr_t)(int16_t)v
                        : n == 4 ? (uintptr_t)(intptr_t)(int32_t)v
                                 : v;
            }
            if (sp == EXPR_STACK)
                return -1;
            st[sp++] = v;
            break;
        }
        case DW_OP_dup:
            if (sp < 1 || sp == EXPR_STACK)
                return -1;
            st[sp] = st[sp - 1];
            sp++;
            break;
        case DW_OP_drop:
            if (sp < 1)
                return -1;
            sp--;
            break;
        case DW_OP_plus_uconst:
            if (sp < 1)
                return -1;
            st[sp - 1] += (uintptr_t)get_uleb(&b);
            break;
        case DW_OP_and:
        case DW_OP_minus:
        case DW_OP_mul:
        case DW_OP_or:
        case DW_OP_plus:
        case DW_OP_shl:
        case DW_OP_shr:
        case DW_OP_xor:
        case DW_OP_eq:
        case DW_OP_ge:
        case DW_OP_gt:
        case DW_OP_le:
        case DW_OP_lt:
        case DW_OP_ne:
            if (sp < 2)
                return -1;
            c = st[--sp];
            a = st[sp - 1];
            switch (op) {
            case DW_OP_and: a &= c; break;
            case DW_OP_minus: a -= c; break;
            case DW_OP_mul: a *= c; break;
            case DW_OP_or: a |= c; break;
            case DW_OP_plus: a += c; break;
            case DW_OP_shl: a = c < 64 ? a << c : 0; break;
            case DW_OP_shr: a = c < 64 ? a >> c : 0; break;
            case DW_OP_xor: a ^= c; break;
            case DW_OP_eq: a = (intptr_t)a == (intptr_t)c; break;
            case DW_OP_ge: a = (intptr_t)a >= (intptr_t)c; break;
            case DW_OP_gt: a = (intptr_t)a > (intptr_t)c; break;
            case DW_OP_le: a = (intptr_t)a <= (intptr_t)c; break;
            case DW_OP_lt: a = (intptr_t)a < (intptr_t)c; break;
            case DW_OP_ne: a = (intptr_t)a != (intptr_t)c; break;
            }
            st[sp - 1] = a;
            break;
        default: return -1;
        }
    }
    if (b.bad || sp < 1)
        return -1;
    *out = st[sp - 1];
    return 0;
}

/* ---- CIE/FDE ---- */

int sig_unwind_cfi_cie(const uint8_t *p, size_t n, uintptr_t addr, struct unwind_cie *c)
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
    c->fde_enc = DW_EH_PE_absptr; /* unless 'R' */
    c->code_align = get_uleb(&b);
    c->data_align = get_sleb(&b);
    c->ra_reg = version == 1 ? (int)get_n(&b, 1) : regno(get_uleb(&b));
    if (aug[0] == 'z') {
        uint64_t alen = get_uleb(&b);
        if (b.bad || alen > (uint64_t)(b.end - b.p))
            return -1; /* the augmentation data would end past the CIE */
        const uint8_t *aend = b.p + alen;
        c->has_z = 1;
        for (int i = 1; aug[i] && !b.bad; i++) {
            switch (aug[i]) {
            case 'R': c->fde_enc = (uint8_t)get_n(&b, 1); break;
            case 'L': get_n(&b, 1); break;
            case 'P': { /* the personality routine's pointer: skipped */
                uint8_t e = (uint8_t)get_n(&b, 1);
                get_ptr(&b, (uint8_t)(e & 0x7f));
                break;
            }
            case 'S': c->signal = 1; break;
            default: break; /* unknown: the 'z' length skips it */
            }
        }
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

/* The rule a register gets back from DW_CFA_restore: the CIE's, or "same" while running the
 * CIE's own instructions. */
static struct unwind_cfi_rule restored(const struct unwind_cfi_state *init, uint64_t r)
{
    return init ? init->r[r] : (struct unwind_cfi_rule){UNWIND_R_SAME, 0, 0};
}

/* Steps over n bytes of an expression operand (no further than the end). */
static void skip(struct buf *b, uint64_t n)
{
    b->p += n <= (uint64_t)(b->end - b->p) ? n : (uint64_t)(b->end - b->p);
    b->addr += (uintptr_t)n;
}

int sig_unwind_cfi_run(const uint8_t *p, const uint8_t *end, uintptr_t addr,
                       const struct unwind_cie *c, uintptr_t loc, uintptr_t pc,
                       struct unwind_cfi_state *s, const struct unwind_cfi_state *init,
                       uintptr_t row[2])
{
    struct unwind_cfi_state stack[4];
    int depth = 0;
    struct buf b = {p, end, addr, 0};
    while (b.p < b.end && !b.bad) {
        uint8_t op = (uint8_t)get_n(&b, 1), lo = op & 0x3f;
        uint64_t r;
        int64_t off;
        uintptr_t next = loc;
        switch (op & 0xc0) { /* the primary opcodes: the low 6 bits are the operand */
        case DW_CFA_advance_loc: next = loc + lo * c->code_align; goto advance;
        case DW_CFA_offset:
            off = scaled(get_uleb(&b), c->data_align);
            if (lo < NREG)
                s->r[lo] = (struct unwind_cfi_rule){UNWIND_R_OFF, off, 0};
            continue;
        case DW_CFA_restore:
            if (lo < NREG)
                s->r[lo] = restored(init, lo);
            continue;
        }
        switch (op) {
        case DW_CFA_nop: break;
        case DW_CFA_set_loc: next = get_ptr(&b, c->fde_enc); goto advance;
        case DW_CFA_advance_loc1: next = loc + get_n(&b, 1) * c->code_align; goto advance;
        case DW_CFA_advance_loc2: next = loc + get_n(&b, 2) * c->code_align; goto advance;
        case DW_CFA_advance_loc4: next = loc + get_n(&b, 4) * c->code_align; goto advance;
        case DW_CFA_offset_extended:
            r = get_uleb(&b);
            off = scaled(get_uleb(&b), c->data_align);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_OFF, off, 0};
            break;
        case DW_CFA_restore_extended:
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = restored(init, r);
            break;
        case DW_CFA_undefined:
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_UNDEF, 0, 0};
            break;
        case DW_CFA_same_value:
            r = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_SAME, 0, 0};
            break;
        case DW_CFA_register: {
            uint64_t r2;
            r = get_uleb(&b);
            r2 = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_REG, (int64_t)r2, 0};
            break;
        }
        case DW_CFA_remember_state:
            if (depth == 4)
                return -1;
            stack[depth++] = *s;
            break;
        case DW_CFA_restore_state: /* the whole row, CFA included */
            if (depth == 0)
                return -1;
            *s = stack[--depth];
            break;
        case DW_CFA_def_cfa:
            s->cfa_reg = regno(get_uleb(&b));
            s->cfa_off = (int64_t)get_uleb(&b);
            break;
        case DW_CFA_def_cfa_register: s->cfa_reg = regno(get_uleb(&b)); break;
        case DW_CFA_def_cfa_offset: s->cfa_off = (int64_t)get_uleb(&b); break;
        case DW_CFA_def_cfa_expression: {
            uint64_t n = get_uleb(&b);
            s->cfa_reg = -1;
            s->cfa_expr = b.addr;
            s->cfa_len = (uint32_t)n;
            skip(&b, n);
            break;
        }
        case DW_CFA_expression:
        case DW_CFA_val_expression: {
            uint64_t n;
            r = get_uleb(&b);
            n = get_uleb(&b);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){op == DW_CFA_expression ? UNWIND_R_EXPR
                                                                           : UNWIND_R_VALEXPR,
                                                   (int64_t)b.addr, (uint32_t)n};
            skip(&b, n);
            break;
        }
        case DW_CFA_offset_extended_sf:
            r = get_uleb(&b);
            off = scaled((uint64_t)get_sleb(&b), c->data_align);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_OFF, off, 0};
            break;
        case DW_CFA_def_cfa_sf:
            s->cfa_reg = regno(get_uleb(&b));
            s->cfa_off = scaled((uint64_t)get_sleb(&b), c->data_align);
            break;
        case DW_CFA_def_cfa_offset_sf:
            s->cfa_off = scaled((uint64_t)get_sleb(&b), c->data_align);
            break;
        case DW_CFA_val_offset:
        case DW_CFA_val_offset_sf:
            r = get_uleb(&b);
            off = op == DW_CFA_val_offset ? scaled(get_uleb(&b), c->data_align)
                                          : scaled((uint64_t)get_sleb(&b), c->data_align);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_VALOFF, off, 0};
            break;
        case DW_CFA_GNU_args_size: get_uleb(&b); break;
        case DW_CFA_GNU_negative_offset_extended:
            r = get_uleb(&b);
            off = scaled(0 - get_uleb(&b), c->data_align);
            if (r < NREG)
                s->r[r] = (struct unwind_cfi_rule){UNWIND_R_OFF, off, 0};
            break;
        default: return -1;
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
    int whole = pyrt_read(addr, buf, RECORD_GUESS) == 0;
    if (whole)
        memcpy(len, buf, 4);
    else if (pyrt_read(addr, len, 4) != 0)
        return -1;
    if (*len < 8 || *len > cap - 4) /* not *len + 4 > cap: that wraps past 2^32 */
        return -1;
    if (whole && *len + 4 <= RECORD_GUESS)
        return 0;
    return whole ? pyrt_read(addr + RECORD_GUESS, buf + RECORD_GUESS, *len + 4 - RECORD_GUESS)
                 : pyrt_read(addr, buf, *len + 4);
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
        if (pyrt_read(m->table + (uintptr_t)lo * 8, blk, (size_t)(hi - lo) * 8) == 0) {
            uint32_t x = last_at_or_below(blk, 2, hi - lo, m->hdr, pc);
            ent[0] = blk[2 * x], ent[1] = blk[2 * x + 1];
            return 0;
        }
    }
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        int32_t loc;
        if (pyrt_read(m->table + (uintptr_t)mid * 8, &loc, 4) != 0)
            return -1;
        if (m->hdr + (uintptr_t)(intptr_t)loc <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return pyrt_read(m->table + (uintptr_t)lo * 8, ent, 8);
}

/* The bounds of an FDE's function from its first bytes fde (n of them, at fde_addr; the
 * length field first) and its CIE c. 0, or -1. */
static int fde_bounds(const uint8_t *fde, size_t n, uintptr_t fde_addr, const struct unwind_cie *c,
                      struct buf *b, uintptr_t *start, uintptr_t *range)
{
    *b = (struct buf){fde + 8, fde + n, fde_addr + 8, 0};
    *start = get_ptr(b, c->fde_enc);
    *range = get_ptr(b, (uint8_t)(c->fde_enc & 0x0f));
    return b->bad ? -1 : 0;
}

int sig_unwind_fde_bounds(const struct unwind_mod *m, uintptr_t pc, uintptr_t range[2])
{
    int32_t ent[2], blk[2 * UNWIND_STRIDE];
    uint8_t fde[32], cie[UNWIND_MAXREC];
    uint32_t len, clen, cie_ptr;
    struct unwind_cie c;
    struct buf b;
    uintptr_t start, size;
    if (table_entry(m, pc, blk, ent) != 0)
        return -1;
    uintptr_t fde_addr = m->hdr + (uintptr_t)(intptr_t)ent[1];
    if (pyrt_read(fde_addr, fde, 8) != 0)
        return -1;
    memcpy(&len, fde, 4);
    memcpy(&cie_ptr, fde + 4, 4);
    if (len < 12 || len == 0xffffffffu)
        return -1;
    size_t n = (size_t)len + 4 < sizeof fde ? (size_t)len + 4 : sizeof fde; /* no 32-bit wrap */
    uintptr_t cie_addr = fde_addr + 4 - cie_ptr;
    if (pyrt_read(fde_addr + 8, fde + 8, n - 8) != 0 ||
        record_read(cie_addr, cie, sizeof cie, &clen) != 0 || clen < 8 ||
        sig_unwind_cfi_cie(cie, clen + 4, cie_addr, &c) != 0 ||
        fde_bounds(fde, n, fde_addr, &c, &b, &start, &size) != 0 || pc < start ||
        pc - start >= size || size > UINTPTR_MAX - start) /* a range past the top: not one */
        return -1;
    range[0] = start, range[1] = start + size;
    return 0;
}

int sig_unwind_cfi_fetch(const struct unwind_mod *m, uintptr_t pc, int32_t *blk, uint8_t *fde,
                         uint32_t fde_cap, uint8_t *cie, uint32_t cie_cap, uintptr_t a[2],
                         uint32_t n[2])
{
    int32_t ent[2];
    uint32_t len, clen, cie_ptr;
    if (table_entry(m, pc, blk, ent) != 0)
        return -1;
    a[0] = m->hdr + (uintptr_t)(intptr_t)ent[1];
    if (record_read(a[0], fde, fde_cap, &len) != 0 || len < 12)
        return -1;
    memcpy(&cie_ptr, fde + 4, 4);
    a[1] = a[0] + 4 - cie_ptr;
    if (record_read(a[1], cie, cie_cap, &clen) != 0 || clen < 8)
        return -1;
    n[0] = len, n[1] = clen;
    return 0;
}

int sig_unwind_cfi_fde(const uint8_t *fde, size_t fde_len, uintptr_t fde_addr, const uint8_t *cie,
                       size_t cie_len, uintptr_t cie_addr, uintptr_t pc,
                       struct sig_unwind_cfi_fde *f)
{
    struct buf b;
    uintptr_t start, range;
    if (sig_unwind_cfi_cie(cie, cie_len, cie_addr, &f->cie) != 0 ||
        fde_bounds(fde, fde_len, fde_addr, &f->cie, &b, &start, &range) != 0)
        return -1;
    if (f->cie.has_z) {
        uint64_t alen = get_uleb(&b);
        if (alen > (uint64_t)(b.end - b.p))
            return -1;
        b.p += alen;
        b.addr += (uintptr_t)alen;
    }
    if (b.bad || pc < start || pc >= start + range)
        return -1;
    f->insn = b.p, f->insn_end = b.end, f->insn_addr = b.addr;
    f->start = start, f->end = start + range;
    return 0;
}

int sig_unwind_cfi_row(const struct sig_unwind_cfi_fde *f, uintptr_t pc, struct unwind_cfi_state *s,
                       uintptr_t row[2])
{
    const struct unwind_cie *c = &f->cie;
    memset(s, 0, sizeof *s);
    for (int i = 0; i < NREG; i++)
        s->r[i].how = UNWIND_R_SAME;
    s->cfa_reg = UNWIND_RSP;
    if (sig_unwind_cfi_run(c->insn, c->insn_end, c->insn_addr, c, f->start, pc, s, NULL, NULL) != 0)
        return -1;
    struct unwind_cfi_state init = *s;
    if (sig_unwind_cfi_run(f->insn, f->insn_end, f->insn_addr, c, f->start, pc, s, &init, row) != 0)
        return -1;
    if (row[1] == 0 || row[1] > f->end)
        row[1] = f->end;
    if (row[0] < f->start || row[0] > pc || pc >= row[1]) /* odd locations: the pc alone */
        row[0] = pc, row[1] = pc + 1;
    return 0;
}

/* ---- .eh_frame_hdr ---- */

/* Only the layout GNU ld and lld write is used: version 1, a 4-byte count, datarel sdata4
 * entries. */
void sig_unwind_hdr_parse(struct unwind_mod *m, const uint8_t *h)
{
    struct buf b = {h, h + 32, m->hdr, 0};
    m->table = 0;
    m->count = 0;
    if (get_n(&b, 1) != 1)
        return;
    uint8_t ptr_enc = (uint8_t)get_n(&b, 1), cnt_enc = (uint8_t)get_n(&b, 1);
    uint8_t tab_enc = (uint8_t)get_n(&b, 1);
    get_ptr(&b, ptr_enc);
    if (b.bad || cnt_enc != DW_EH_PE_udata4 || tab_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
        return;
    uint32_t count = (uint32_t)get_n(&b, 4);
    if (b.bad)
        return;
    m->table = b.addr;
    m->count = count;
}
