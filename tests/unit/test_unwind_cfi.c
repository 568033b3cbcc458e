/* SPDX-License-Identifier: MIT */
/* The unwinder's DWARF CFI reader (probe/sig/unwind_cfi.c), opcode by opcode: each DW_CFA_*
 * instruction the CFA program interpreter knows, each DW_OP_* the expression evaluator knows,
 * with the failures each can give (an unknown opcode, a truncated operand, a stack over- or
 * underflow, remember_state nested too deep); CIE augmentations; an FDE with its rows; a whole
 * .eh_frame_hdr search table in this process's memory (FDE bounds and records read as the
 * unwinder reads a target); and the caches (unwind_cache.c): rows by range, the FDE cache, the
 * shared rows, keyed to the table's generation. */
#include <dwarf.h>
#include <stdint.h>
#include <string.h>

#include "sig/unwind.h"
#include "sig/unwind_cache.h"
#include "sig/unwind_cfi.h"
#include "unit.h"

/* ---- the CFA program ---- */

/* A CIE as GCC writes it for x86-64: code alignment 1, data alignment -8, RA column 16,
 * pc-relative 4-byte pointers. */
static struct unwind_cie gcc_cie(void)
{
    struct unwind_cie c;
    memset(&c, 0, sizeof c);
    c.code_align = 1;
    c.data_align = -8;
    c.ra_reg = UNWIND_RA;
    c.fde_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
    return c;
}

static void initial(struct unwind_cfi_state *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < UNWIND_NREG; i++)
        s->r[i].how = UNWIND_R_SAME;
    s->cfa_reg = UNWIND_RSP;
}

#define LOC 0x1000u
/* Runs program p (n bytes; at target address LOC * 16) from LOC up to pc into *s; row too. */
static int run_at(const uint8_t *p, size_t n, uintptr_t pc, struct unwind_cfi_state *s,
                  const struct unwind_cfi_state *init, uintptr_t row[2])
{
    struct unwind_cie c = gcc_cie();
    initial(s);
    return sig_unwind_cfi_run(p, p + n, (uintptr_t)LOC * 16, &c, LOC, pc, s, init, row);
}
#define RUN(s, ...)                                                \
    ({                                                             \
        static const uint8_t prog_[] = {__VA_ARGS__};              \
        uintptr_t row_[2];                                         \
        run_at(prog_, sizeof prog_, LOC + 0x100, (s), NULL, row_); \
    })

TEST(cfa_nop_leaves_the_row)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_nop, DW_CFA_nop), 0);
    ASSERT_EQ(s.cfa_reg, UNWIND_RSP);
    ASSERT_EQ(s.cfa_off, 0);
    ASSERT_EQ(s.r[UNWIND_RA].how, UNWIND_R_SAME);
}

TEST(cfa_advance_loc_forms_split_rows)
{
    /* def_cfa_offset 16 from LOC; each advance form moves on; the row for each pc is found. */
    static const uint8_t p[] = {
        DW_CFA_def_cfa_offset,
        16,
        DW_CFA_advance_loc | 4,
        DW_CFA_def_cfa_offset,
        24, /* LOC + 4 */
        DW_CFA_advance_loc1,
        0x10,
        DW_CFA_def_cfa_offset,
        32, /* LOC + 0x14 */
        DW_CFA_advance_loc2,
        0x00,
        0x01,
        DW_CFA_def_cfa_offset,
        40, /* LOC + 0x114 */
        DW_CFA_advance_loc4,
        0x00,
        0x00,
        0x01,
        0x00,
        DW_CFA_def_cfa_offset,
        48, /* + 0x10000 */
    };
    struct {
        uintptr_t pc;
        int64_t off;
        uintptr_t lo, hi;
    } want[] = {
        {LOC, 16, LOC, LOC + 4},
        {LOC + 3, 16, LOC, LOC + 4},
        {LOC + 4, 24, LOC + 4, LOC + 0x14},
        {LOC + 0x20, 32, LOC + 0x14, LOC + 0x114},
        {LOC + 0x114, 40, LOC + 0x114, LOC + 0x10114},
        {LOC + 0x20000, 48, LOC + 0x10114, 0}, /* the last row: to the FDE's end */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        struct unwind_cfi_state s;
        uintptr_t row[2];
        ASSERT_EQ(run_at(p, sizeof p, want[i].pc, &s, NULL, row), 0);
        ASSERT_EQ(s.cfa_off, want[i].off);
        ASSERT_EQ(row[0], want[i].lo);
        ASSERT_EQ(row[1], want[i].hi);
    }
    /* code_align scales every advance */
    struct unwind_cie c = gcc_cie();
    struct unwind_cfi_state s;
    uintptr_t row[2];
    static const uint8_t q[] = {DW_CFA_advance_loc | 2, DW_CFA_def_cfa_offset, 24};
    c.code_align = 4;
    initial(&s);
    ASSERT_EQ(sig_unwind_cfi_run(q, q + sizeof q, 0, &c, LOC, LOC + 7, &s, NULL, row), 0);
    ASSERT_EQ(s.cfa_off, 0);
    ASSERT_EQ(row[1], LOC + 8);
    /* a truncated advance fails */
    static const uint8_t t[] = {DW_CFA_advance_loc2, 0x01};
    ASSERT_EQ(run_at(t, sizeof t, LOC + 0x100, &s, NULL, row), -1);
}

TEST(cfa_set_loc)
{
    struct unwind_cie c = gcc_cie();
    struct unwind_cfi_state s;
    uintptr_t row[2];
    uint8_t p[1 + 8 + 2];
    uint64_t to = LOC + 0x40;
    c.fde_enc = DW_EH_PE_absptr;
    p[0] = DW_CFA_set_loc;
    memcpy(p + 1, &to, 8);
    p[9] = DW_CFA_def_cfa_offset, p[10] = 16;
    initial(&s);
    ASSERT_EQ(sig_unwind_cfi_run(p, p + sizeof p, 0, &c, LOC, LOC + 0x3f, &s, NULL, row), 0);
    ASSERT_EQ(s.cfa_off, 0);
    ASSERT_EQ(row[1], LOC + 0x40);
    initial(&s);
    ASSERT_EQ(sig_unwind_cfi_run(p, p + sizeof p, 0, &c, LOC, LOC + 0x40, &s, NULL, row), 0);
    ASSERT_EQ(s.cfa_off, 16);
    c.fde_enc = 0x07; /* no such encoding */
    ASSERT_EQ(sig_unwind_cfi_run(p, p + sizeof p, 0, &c, LOC, LOC + 0x40, &s, NULL, row), -1);
}

TEST(cfa_def_cfa_forms)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa, 6, 0x90, 0x01), 0); /* rbp + 144 */
    ASSERT_EQ(s.cfa_reg, 6);
    ASSERT_EQ(s.cfa_off, 144);
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa, 7, 8, DW_CFA_def_cfa_register, 6), 0);
    ASSERT_EQ(s.cfa_reg, 6);
    ASSERT_EQ(s.cfa_off, 8);
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_offset, 0x80, 0x02), 0); /* uleb 256 */
    ASSERT_EQ(s.cfa_reg, UNWIND_RSP);
    ASSERT_EQ(s.cfa_off, 256);
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_sf, 6, 0x7e), 0); /* sleb -2, scaled by -8 */
    ASSERT_EQ(s.cfa_reg, 6);
    ASSERT_EQ(s.cfa_off, 16);
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_offset_sf, 0x7d), 0); /* -3 * -8 */
    ASSERT_EQ(s.cfa_off, 24);
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa, 7), -1); /* truncated */
}

TEST(cfa_def_cfa_expression)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_expression, 3, DW_OP_breg7, 8, DW_OP_deref,
                  DW_CFA_def_cfa_offset, 4),
              0);
    ASSERT_EQ(s.cfa_reg, -1);
    ASSERT_EQ(s.cfa_expr, (uintptr_t)LOC * 16 + 2); /* its bytes' target address */
    ASSERT_EQ(s.cfa_len, 3);
    ASSERT_EQ(s.cfa_off, 4); /* the instruction after it was read */
    /* a length past the end stops at the end, unread */
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_expression, 9, DW_OP_breg7), 0);
    ASSERT_EQ(s.cfa_len, 9);
}

TEST(cfa_offset_forms)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_offset | 16, 1, DW_CFA_offset | 6, 2), 0);
    ASSERT_EQ(s.r[16].how, UNWIND_R_OFF);
    ASSERT_EQ(s.r[16].v, -8);
    ASSERT_EQ(s.r[6].v, -16);
    ASSERT_EQ(RUN(&s, DW_CFA_offset_extended, 3, 3), 0);
    ASSERT_EQ(s.r[3].how, UNWIND_R_OFF);
    ASSERT_EQ(s.r[3].v, -24);
    ASSERT_EQ(RUN(&s, DW_CFA_offset_extended_sf, 12, 0x7f), 0); /* -1 * -8 */
    ASSERT_EQ(s.r[12].how, UNWIND_R_OFF);
    ASSERT_EQ(s.r[12].v, 8);
    ASSERT_EQ(RUN(&s, DW_CFA_GNU_negative_offset_extended, 13, 2), 0);
    ASSERT_EQ(s.r[13].how, UNWIND_R_OFF);
    ASSERT_EQ(s.r[13].v, 16);
    /* registers beyond x86-64's 17 columns are read and ignored */
    ASSERT_EQ(RUN(&s, DW_CFA_offset | 17, 1, DW_CFA_offset_extended, 40, 1), 0);
    for (int i = 0; i < UNWIND_NREG; i++)
        ASSERT_EQ(s.r[i].how, UNWIND_R_SAME);
}

TEST(cfa_val_offset_forms)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_val_offset, 3, 2), 0);
    ASSERT_EQ(s.r[3].how, UNWIND_R_VALOFF);
    ASSERT_EQ(s.r[3].v, -16);
    ASSERT_EQ(RUN(&s, DW_CFA_val_offset_sf, 3, 0x7e), 0);
    ASSERT_EQ(s.r[3].how, UNWIND_R_VALOFF);
    ASSERT_EQ(s.r[3].v, 16);
}

TEST(cfa_restore_forms)
{
    struct unwind_cfi_state init, s;
    uintptr_t row[2];
    initial(&init);
    init.r[6] = (struct unwind_cfi_rule){UNWIND_R_OFF, -16, 0};
    init.r[3] = (struct unwind_cfi_rule){UNWIND_R_OFF, -24, 0};
    static const uint8_t p[] = {
        DW_CFA_offset | 6, 4, DW_CFA_offset | 3, 5, DW_CFA_restore | 6, DW_CFA_restore_extended, 3};
    ASSERT_EQ(run_at(p, sizeof p, LOC, &s, &init, row), 0);
    ASSERT_EQ(s.r[6].how, UNWIND_R_OFF);
    ASSERT_EQ(s.r[6].v, -16); /* the CIE's rule back */
    ASSERT_EQ(s.r[3].v, -24);
    ASSERT_EQ(run_at(p, sizeof p, LOC, &s, NULL, row), 0); /* in the CIE itself: "same" */
    ASSERT_EQ(s.r[6].how, UNWIND_R_SAME);
    ASSERT_EQ(s.r[3].how, UNWIND_R_SAME);
}

TEST(cfa_undefined_same_value_register)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_undefined, 16), 0);
    ASSERT_EQ(s.r[16].how, UNWIND_R_UNDEF);
    ASSERT_EQ(RUN(&s, DW_CFA_offset | 3, 1, DW_CFA_same_value, 3), 0);
    ASSERT_EQ(s.r[3].how, UNWIND_R_SAME);
    ASSERT_EQ(RUN(&s, DW_CFA_register, 16, 0), 0); /* RA in rax */
    ASSERT_EQ(s.r[16].how, UNWIND_R_REG);
    ASSERT_EQ(s.r[16].v, 0);
}

TEST(cfa_expression_and_val_expression)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_expression, 6, 2, DW_OP_breg7, 0, DW_CFA_val_expression, 3, 1,
                  DW_OP_lit5, DW_CFA_nop),
              0);
    ASSERT_EQ(s.r[6].how, UNWIND_R_EXPR);
    ASSERT_EQ(s.r[6].v, (int64_t)LOC * 16 + 3);
    ASSERT_EQ(s.r[6].len, 2);
    ASSERT_EQ(s.r[3].how, UNWIND_R_VALEXPR);
    ASSERT_EQ(s.r[3].v, (int64_t)LOC * 16 + 8);
    ASSERT_EQ(s.r[3].len, 1);
}

TEST(cfa_remember_restore_state)
{
    struct unwind_cfi_state s;
    /* the whole row comes back, CFA included */
    ASSERT_EQ(RUN(&s, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2, DW_CFA_remember_state,
                  DW_CFA_def_cfa, 6, 32, DW_CFA_same_value, 6, DW_CFA_restore_state),
              0);
    ASSERT_EQ(s.cfa_reg, UNWIND_RSP);
    ASSERT_EQ(s.cfa_off, 16);
    ASSERT_EQ(s.r[6].how, UNWIND_R_OFF);
    /* four deep is the limit; restore without remember fails */
    ASSERT_EQ(RUN(&s, DW_CFA_remember_state, DW_CFA_remember_state, DW_CFA_remember_state,
                  DW_CFA_remember_state, DW_CFA_restore_state, DW_CFA_restore_state,
                  DW_CFA_restore_state, DW_CFA_restore_state),
              0);
    ASSERT_EQ(RUN(&s, DW_CFA_remember_state, DW_CFA_remember_state, DW_CFA_remember_state,
                  DW_CFA_remember_state, DW_CFA_remember_state),
              -1);
    ASSERT_EQ(RUN(&s, DW_CFA_restore_state), -1);
}

TEST(cfa_gnu_args_size_and_unknown)
{
    struct unwind_cfi_state s;
    ASSERT_EQ(RUN(&s, DW_CFA_GNU_args_size, 0x80, 0x01, DW_CFA_def_cfa_offset, 8), 0);
    ASSERT_EQ(s.cfa_off, 8);
    ASSERT_EQ(RUN(&s, DW_CFA_GNU_window_save), -1); /* not x86-64's */
    ASSERT_EQ(RUN(&s, DW_CFA_low_user), -1);
    ASSERT_EQ(RUN(&s, 0x17), -1); /* DWARF 5 has none there */
}

/* ---- DWARF expressions ---- */

static struct unwind_regs regs(void)
{
    struct unwind_regs r;
    for (int i = 0; i < UNWIND_NREG; i++)
        r.v[i] = 0x1000u * (uintptr_t)(i + 1);
    r.valid = (1u << UNWIND_NREG) - 1;
    return r;
}
/* The expression's value, or -1 as (uintptr_t)-12345 when it fails. */
static uintptr_t ev(const uint8_t *code, size_t n)
{
    struct unwind_regs r = regs();
    uintptr_t out = 0;
    return sig_unwind_cfi_expr((uintptr_t)code, (uint32_t)n, &r, 0, 0, &out) == 0
               ? out
               : (uintptr_t)-12345;
}
#define FAILED ((uintptr_t)-12345)
#define EV(...)                                       \
    ({                                                \
        static const uint8_t code_[] = {__VA_ARGS__}; \
        ev(code_, sizeof code_);                      \
    })

TEST(op_lit)
{
    ASSERT_EQ(EV(DW_OP_lit0), 0);
    ASSERT_EQ(EV(DW_OP_lit7), 7);
    ASSERT_EQ(EV(DW_OP_lit31), 31);
}

TEST(op_breg_bregx)
{
    ASSERT_EQ(EV(DW_OP_breg0, 8), 0x1008);
    ASSERT_EQ(EV(DW_OP_breg7, 0x78), 0x8000 - 8); /* sleb -8 */
    ASSERT_EQ(EV(DW_OP_breg16, 0), 0x11000);
    ASSERT_EQ(EV(DW_OP_bregx, 6, 0x10), 0x7010);
    ASSERT_EQ(EV(DW_OP_breg17, 0), FAILED); /* past x86-64's columns */
    ASSERT_EQ(EV(DW_OP_bregx, 40, 0), FAILED);
    struct unwind_regs r = regs();
    uintptr_t out;
    static const uint8_t c[] = {DW_OP_breg3, 0};
    r.valid &= ~(1u << 3); /* not known */
    ASSERT_EQ(sig_unwind_cfi_expr((uintptr_t)c, sizeof c, &r, 0, 0, &out), -1);
}

TEST(op_deref)
{
    static uintptr_t word = 0x1234567890abcdefull;
    uint8_t c[10] = {DW_OP_const8u};
    uintptr_t at = (uintptr_t)&word;
    memcpy(c + 1, &at, 8);
    c[9] = DW_OP_deref;
    ASSERT_EQ(ev(c, sizeof c), 0x1234567890abcdefull);
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_deref), FAILED); /* unreadable */
    ASSERT_EQ(EV(DW_OP_deref), FAILED);             /* nothing to read */
}

TEST(op_const_forms)
{
    ASSERT_EQ(EV(DW_OP_const1u, 0xff), 0xff);
    ASSERT_EQ(EV(DW_OP_const1s, 0xff), (uintptr_t)-1);
    ASSERT_EQ(EV(DW_OP_const2u, 0x34, 0x82), 0x8234);
    ASSERT_EQ(EV(DW_OP_const2s, 0xfe, 0xff), (uintptr_t)-2);
    ASSERT_EQ(EV(DW_OP_const4u, 1, 0, 0, 0x80), 0x80000001u);
    ASSERT_EQ(EV(DW_OP_const4s, 0xfd, 0xff, 0xff, 0xff), (uintptr_t)-3);
    ASSERT_EQ(EV(DW_OP_const8u, 1, 2, 3, 4, 5, 6, 7, 8), 0x0807060504030201ull);
    ASSERT_EQ(EV(DW_OP_const8s, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), (uintptr_t)-4);
    ASSERT_EQ(EV(DW_OP_constu, 0xe5, 0x8e, 0x26), 624485);
    ASSERT_EQ(EV(DW_OP_consts, 0x7f), (uintptr_t)-1);
    ASSERT_EQ(EV(DW_OP_const4u, 1, 2), FAILED); /* truncated */
}

TEST(op_dup_drop_plus_uconst)
{
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_dup, DW_OP_plus), 6);
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_lit4, DW_OP_drop), 3);
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_plus_uconst, 0x80, 0x01), 131);
    ASSERT_EQ(EV(DW_OP_dup), FAILED);
    ASSERT_EQ(EV(DW_OP_drop), FAILED);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_drop), FAILED); /* an empty stack at the end */
    ASSERT_EQ(EV(DW_OP_plus_uconst, 1), FAILED);
}

TEST(op_binary)
{
    ASSERT_EQ(EV(DW_OP_lit12, DW_OP_lit10, DW_OP_and), 8);
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_lit5, DW_OP_minus), (uintptr_t)-2);
    ASSERT_EQ(EV(DW_OP_lit6, DW_OP_lit7, DW_OP_mul), 42);
    ASSERT_EQ(EV(DW_OP_lit12, DW_OP_lit3, DW_OP_or), 15);
    ASSERT_EQ(EV(DW_OP_lit12, DW_OP_lit3, DW_OP_plus), 15);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_lit4, DW_OP_shl), 16);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_const1u, 64, DW_OP_shl), 0); /* no undefined shift */
    ASSERT_EQ(EV(DW_OP_lit16, DW_OP_lit2, DW_OP_shr), 4);
    ASSERT_EQ(EV(DW_OP_lit16, DW_OP_const1u, 64, DW_OP_shr), 0);
    ASSERT_EQ(EV(DW_OP_lit12, DW_OP_lit10, DW_OP_xor), 6);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_plus), FAILED); /* one operand */
}

TEST(op_comparisons_are_signed)
{
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_lit3, DW_OP_eq), 1);
    ASSERT_EQ(EV(DW_OP_lit3, DW_OP_lit4, DW_OP_eq), 0);
    ASSERT_EQ(EV(DW_OP_consts, 0x7f, DW_OP_lit0, DW_OP_ge), 0); /* -1 >= 0 */
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_lit0, DW_OP_ge), 1);
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_consts, 0x7f, DW_OP_gt), 1);
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_lit0, DW_OP_gt), 0);
    ASSERT_EQ(EV(DW_OP_consts, 0x7f, DW_OP_lit0, DW_OP_le), 1);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_lit0, DW_OP_le), 0);
    ASSERT_EQ(EV(DW_OP_consts, 0x7f, DW_OP_lit0, DW_OP_lt), 1);
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_lit0, DW_OP_lt), 0);
    ASSERT_EQ(EV(DW_OP_lit0, DW_OP_lit1, DW_OP_ne), 1);
    ASSERT_EQ(EV(DW_OP_lit1, DW_OP_lit1, DW_OP_ne), 0);
}

TEST(op_limits)
{
    uint8_t c[17];
    memset(c, DW_OP_lit1, sizeof c);
    ASSERT_EQ(ev(c, 16), 1);          /* sixteen on the stack */
    ASSERT_EQ(ev(c, 17), FAILED);     /* seventeen do not fit */
    ASSERT_EQ(EV(DW_OP_nop), FAILED); /* not in the set */
    ASSERT_EQ(EV(DW_OP_call_frame_cfa), FAILED);
    static uint8_t big[65];
    memset(big, DW_OP_nop, sizeof big);
    ASSERT_EQ(ev(big, 65), FAILED); /* longer than the evaluator reads */
    ASSERT_EQ(ev(big, 0), FAILED);
    /* push_cfa: the CFA first */
    struct unwind_regs r = regs();
    uintptr_t out;
    static const uint8_t p[] = {DW_OP_plus_uconst, 8};
    ASSERT_EQ(sig_unwind_cfi_expr((uintptr_t)p, sizeof p, &r, 1, 0x5000, &out), 0);
    ASSERT_EQ(out, 0x5008);
}

/* ---- CIE, FDE, .eh_frame_hdr ---- */

/* A module laid out as a linker does it, in this process's memory: .eh_frame_hdr at img, then
 * .eh_frame (one CIE "zR", two FDEs) at img + 64, the "code" they describe 0x1000 below. */
static _Alignas(16) uint8_t img[256];
#define EH 64
#define CIE_LEN 20
static uintptr_t func(int i)
{
    return (uintptr_t)img - 0x1000 + (uintptr_t)i * 0x100;
}
static void build(void)
{
    static const uint8_t cie[] = {
        CIE_LEN - 4,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        'z',
        'R',
        0,
        1,
        0x78,
        16,
        1,
        DW_EH_PE_pcrel | DW_EH_PE_sdata4,
        DW_CFA_def_cfa,
        7,
        8, /* then offset RA below */
    };
    memset(img, 0, sizeof img);
    memcpy(img + EH, cie, sizeof cie);
    img[EH + CIE_LEN] = DW_CFA_offset | 16, img[EH + CIE_LEN + 1] = 1;
    img[EH] = CIE_LEN; /* four more bytes: the offset of RA, two nops */
    size_t at = EH + CIE_LEN + 4;
    for (int i = 0; i < 2; i++) {
        uint8_t fde[24] = {20, 0, 0, 0};
        uint32_t cie_ptr = (uint32_t)(at + 4 - EH);
        int32_t start = (int32_t)(func(i) - ((uintptr_t)img + at + 8));
        uint32_t size = 0x80;
        memcpy(fde + 4, &cie_ptr, 4);
        memcpy(fde + 8, &start, 4);
        memcpy(fde + 12, &size, 4);
        fde[16] = 0; /* augmentation length */
        fde[17] = DW_CFA_advance_loc | 4, fde[18] = DW_CFA_def_cfa_offset, fde[19] = 16;
        memcpy(img + at, fde, sizeof fde);
        /* the header's table entry: (location, FDE), relative to the header */
        int32_t ent[2] = {(int32_t)(func(i) - (uintptr_t)img), (int32_t)at};
        memcpy(img + 12 + 8 * i, ent, 8);
        at += sizeof fde;
    }
    static const uint8_t hdr[] = {1, DW_EH_PE_pcrel | DW_EH_PE_sdata4, DW_EH_PE_udata4,
                                  DW_EH_PE_datarel | DW_EH_PE_sdata4};
    int32_t eh_ptr = EH - 4;
    uint32_t count = 2;
    memcpy(img, hdr, 4);
    memcpy(img + 4, &eh_ptr, 4);
    memcpy(img + 8, &count, 4);
}

TEST(cie_augmentations)
{
    struct unwind_cie c;
    build();
    ASSERT_EQ(sig_unwind_cfi_cie(img + EH, CIE_LEN + 4, (uintptr_t)img + EH, &c), 0);
    ASSERT_EQ(c.code_align, 1);
    ASSERT_EQ(c.data_align, -8);
    ASSERT_EQ(c.ra_reg, 16);
    ASSERT_EQ(c.fde_enc, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
    ASSERT_EQ(c.has_z, 1);
    ASSERT_EQ(c.signal, 0);
    ASSERT_EQ(c.insn_end - c.insn, 7); /* def_cfa 7 8, offset RA 1, a nop */
    ASSERT_EQ(c.insn[0], DW_CFA_def_cfa);
    /* zPLRS: a personality pointer skipped, the LSDA encoding, a signal frame */
    static const uint8_t s[] = {28,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                0,
                                3,
                                'z',
                                'P',
                                'L',
                                'R',
                                'S',
                                0,
                                1,
                                0x78,
                                16,
                                7,
                                DW_EH_PE_pcrel | DW_EH_PE_sdata4,
                                0,
                                0,
                                0,
                                0,
                                DW_EH_PE_pcrel | DW_EH_PE_sdata4,
                                DW_EH_PE_pcrel | DW_EH_PE_sdata4,
                                DW_CFA_nop,
                                DW_CFA_nop,
                                DW_CFA_nop,
                                DW_CFA_nop,
                                DW_CFA_nop,
                                DW_CFA_nop};
    ASSERT_EQ(sig_unwind_cfi_cie(s, sizeof s, 0, &c), 0);
    ASSERT_EQ(c.signal, 1);
    ASSERT_EQ(c.insn_end - c.insn, 6);
    /* refused: another RA column, a CIE id that is not 0, 64-bit DWARF, a length past n, an
     * augmentation without 'z' */
    uint8_t b[sizeof s];
    memcpy(b, s, sizeof s);
    b[17] = 15;
    ASSERT_EQ(sig_unwind_cfi_cie(b, sizeof b, 0, &c), -1);
    memcpy(b, s, sizeof s);
    b[4] = 1;
    ASSERT_EQ(sig_unwind_cfi_cie(b, sizeof b, 0, &c), -1);
    memset(b, 0xff, 4);
    ASSERT_EQ(sig_unwind_cfi_cie(b, sizeof b, 0, &c), -1);
    ASSERT_EQ(sig_unwind_cfi_cie(s, sizeof s - 1, 0, &c), -1);
    static const uint8_t eh[] = {24, 0, 0, 0, 0, 0, 0, 0,    1,  'e', 'h', 0, 0, 0,
                                 0,  0, 0, 0, 0, 0, 1, 0x78, 16, 0,   0,   0, 0, 0};
    ASSERT_EQ(sig_unwind_cfi_cie(eh, sizeof eh, 0, &c), -1);
}

TEST(fde_and_rows_from_the_search_table)
{
    struct unwind_mod m;
    build();
    memset(&m, 0, sizeof m);
    m.hdr = (uintptr_t)img;
    sig_unwind_hdr_parse(&m, img);
    ASSERT_EQ(m.table, (uintptr_t)img + 12);
    ASSERT_EQ(m.count, 2);
    for (int i = 0; i < 2; i++) {
        uintptr_t pcs[] = {func(i), func(i) + 4, func(i) + 0x7f}, range[2], a[2], row[2];
        for (int k = 0; k < 3; k++) {
            static uint8_t fde[UNWIND_MAXFDE], cie[UNWIND_MAXREC];
            static int32_t blk[2 * UNWIND_STRIDE];
            uint32_t len[2];
            struct sig_unwind_cfi_fde f;
            struct unwind_cfi_state s;
            ASSERT_EQ(sig_unwind_fde_bounds(&m, pcs[k], range), 0);
            ASSERT_EQ(range[0], func(i));
            ASSERT_EQ(range[1], func(i) + 0x80);
            ASSERT_EQ(
                sig_unwind_cfi_fetch(&m, pcs[k], blk, fde, sizeof fde, cie, sizeof cie, a, len), 0);
            ASSERT_EQ(a[1], (uintptr_t)img + EH);
            ASSERT_EQ(len[0], 20);
            ASSERT_EQ(sig_unwind_cfi_fde(fde, len[0] + 4, a[0], cie, len[1] + 4, a[1], pcs[k], &f),
                      0);
            ASSERT_EQ(f.start, func(i));
            ASSERT_EQ(f.end, func(i) + 0x80);
            ASSERT_EQ(sig_unwind_cfi_row(&f, pcs[k], &s, row), 0);
            ASSERT_EQ(s.cfa_reg, UNWIND_RSP);
            ASSERT_EQ(s.cfa_off, k == 0 ? 8 : 16);
            ASSERT_EQ(s.r[UNWIND_RA].how, UNWIND_R_OFF);
            ASSERT_EQ(s.r[UNWIND_RA].v, -8);
            ASSERT_EQ(row[0], k == 0 ? func(i) : func(i) + 4);
            ASSERT_EQ(row[1], k == 0 ? func(i) + 4 : func(i) + 0x80);
            /* the FDE does not cover a pc past its end */
            ASSERT_EQ(sig_unwind_cfi_fde(fde, len[0] + 4, a[0], cie, len[1] + 4, a[1],
                                         func(i) + 0x80, &f),
                      -1);
        }
    }
    /* between the functions and below the first: no FDE covers it */
    uintptr_t range[2];
    ASSERT_EQ(sig_unwind_fde_bounds(&m, func(0) + 0x90, range), -1);
    ASSERT_EQ(sig_unwind_fde_bounds(&m, func(0) - 1, range), -1);
    /* a header of another layout gives no table */
    img[3] = DW_EH_PE_absptr;
    sig_unwind_hdr_parse(&m, img);
    ASSERT_EQ(m.table, 0);
    ASSERT_EQ(sig_unwind_fde_bounds(&m, func(0), range), -1);
}

/* ---- the caches ---- */

TEST(cache_rule_shapes)
{
    struct unwind_cfi_state s;
    struct unwind_rule e;
    initial(&s);
    s.cfa_off = 16;
    s.r[UNWIND_RA] = (struct unwind_cfi_rule){UNWIND_R_OFF, -8, 0};
    ASSERT_EQ(sig_unwind_cache_rule(&s, &e), 1);
    ASSERT_EQ(e.cfa_reg, UNWIND_RSP);
    ASSERT_EQ(e.cfa_off, 16);
    ASSERT_EQ(e.ra_off, -8);
    ASSERT_EQ(e.fp_off, 0);
    s.r[UNWIND_RBP] = (struct unwind_cfi_rule){UNWIND_R_OFF, -16, 0};
    ASSERT_EQ(sig_unwind_cache_rule(&s, &e), 1);
    ASSERT_EQ(e.fp_off, -16);
    s.r[UNWIND_RBP] = (struct unwind_cfi_rule){UNWIND_R_REG, 3, 0};
    ASSERT_EQ(sig_unwind_cache_rule(&s, &e), 0); /* rbp in another register: not this shape */
    s.r[UNWIND_RBP].how = UNWIND_R_SAME;
    s.cfa_reg = -1;
    ASSERT_EQ(sig_unwind_cache_rule(&s, &e), 0); /* CFA by expression */
    s.r[UNWIND_RA].how = UNWIND_R_UNDEF;
    ASSERT_EQ(sig_unwind_cache_rule(&s, &e), 1); /* the outermost frame: the end mark */
    ASSERT_EQ(e.ra_off, 0);
}

TEST(cache_rows_fdes_and_shared_by_generation)
{
    static struct unwind_cache c;
    struct unwind_rule r = {.pc = 0x401010,
                            .gen = 5,
                            .cfa_reg = UNWIND_RSP,
                            .ra_off = -8,
                            .cfa_off = 16},
                       got;
    uintptr_t row[2] = {0x401000, 0x401040};
    memset(&c, 0, sizeof c);
    sig_unwind_cache_row_put(&c, row, &r);
    ASSERT_EQ(sig_unwind_cache_row_get(&c, 0x401020, 5, &got), 0);
    ASSERT_EQ(got.pc, 0x401020);
    ASSERT_EQ(got.cfa_off, 16);
    ASSERT_EQ(sig_unwind_cache_row_get(&c, 0x401040, 5, &got), -1); /* past the row */
    ASSERT_EQ(sig_unwind_cache_row_get(&c, 0x401020, 6, &got), -1); /* another table */
    for (int i = 1; i <= UNWIND_ROWS; i++) { /* round-robin: the first goes */
        uintptr_t other[2] = {0x500000 + (uintptr_t)i * 0x100, 0x500000 + (uintptr_t)i * 0x100 + 1};
        sig_unwind_cache_row_put(&c, other, &r);
    }
    ASSERT_EQ(sig_unwind_cache_row_get(&c, 0x401020, 5, &got), -1);

    sig_unwind_cache_shared_put(row, &r);
    ASSERT_EQ(sig_unwind_cache_shared_get(0x401030, 5, &got), 0);
    ASSERT_EQ(got.ra_off, -8);
    ASSERT_EQ(got.cfa_reg, UNWIND_RSP);
    ASSERT_EQ(sig_unwind_cache_shared_get(0x401030, 4, &got), -1);

    struct sig_unwind_cfi_fde f = {.start = 0x401000, .end = 0x401080};
    uint8_t fde[24] = {20}, cie[24] = {20};
    sig_unwind_cache_fde_put(&c, 5, &f, fde, sizeof fde, 0x9000, cie, sizeof cie, 0x8000);
    const struct unwind_fde *h = sig_unwind_cache_fde_get(&c, 0x40107f, 5);
    ASSERT(h != NULL);
    ASSERT_EQ(h->fde_addr, 0x9000);
    ASSERT_EQ(h->cie_len, 24);
    ASSERT(sig_unwind_cache_fde_get(&c, 0x401080, 5) == NULL);
    ASSERT(sig_unwind_cache_fde_get(&c, 0x401000, 6) == NULL);
    static uint8_t big[UNWIND_MAXFDE];
    sig_unwind_cache_fde_put(&c, 5, &f, big, sizeof c.f[0].fde + 1, 0xa000, cie, sizeof cie,
                             0x8000);
    ASSERT_EQ(sig_unwind_cache_fde_get(&c, 0x401000, 5)->fde_addr, 0x9000); /* too long: not kept */
    sig_unwind_cache_fde_put(&c, 0, &f, fde, sizeof fde, 0xa000, cie, sizeof cie, 0x8000);
    ASSERT_EQ(sig_unwind_cache_fde_get(&c, 0x401000, 5)->fde_addr, 0x9000); /* no table: not kept */
}

/* What the eh_frame fuzzer found (tests/fuzz/corpus/eh_frame/crash-*), in this process's
 * memory: an FDE length of 0xfffffffd passed "len + 4 > cap" (wrapped to 1) and the FDE was
 * then run past its buffer; an FDE range past the top of the address space gave bounds
 * [start, start + size) that wrap and do not hold the pc. */
TEST(fuzz_found_record_length_wrap_refused)
{
    struct unwind_mod m;
    static uint8_t fde[UNWIND_MAXFDE], cie[UNWIND_MAXREC];
    static int32_t blk[2 * UNWIND_STRIDE];
    uintptr_t a[2];
    uint32_t len[2], huge = 0xfffffffdu;
    build();
    memset(&m, 0, sizeof m);
    m.hdr = (uintptr_t)img;
    sig_unwind_hdr_parse(&m, img);
    ASSERT_EQ(sig_unwind_cfi_fetch(&m, func(0), blk, fde, sizeof fde, cie, sizeof cie, a, len), 0);
    memcpy(img + EH + CIE_LEN + 4, &huge, 4); /* the first FDE's length field */
    ASSERT_EQ(sig_unwind_cfi_fetch(&m, func(0), blk, fde, sizeof fde, cie, sizeof cie, a, len), -1);
    memcpy(img + EH, &huge, 4); /* the CIE's */
    ASSERT_EQ(sig_unwind_cfi_fetch(&m, func(1), blk, fde, sizeof fde, cie, sizeof cie, a, len), -1);
}

TEST(fuzz_found_fde_range_past_the_top_refused)
{
    struct unwind_mod m;
    uintptr_t range[2], start = UINTPTR_MAX - 0xff, size = 0x1000;
    build();
    memset(&m, 0, sizeof m);
    m.hdr = (uintptr_t)img;
    sig_unwind_hdr_parse(&m, img);
    img[EH + 16] = DW_EH_PE_udata8;    /* the CIE's 'R': absolute 8-byte start and size */
    size_t at = EH + CIE_LEN + 4 + 24; /* the second FDE */
    memcpy(img + at + 8, &start, 8);
    memcpy(img + at + 16, &size, 8);
    ASSERT_EQ(sig_unwind_fde_bounds(&m, start + 0x10, range), -1);
    size = 0xff; /* up to the last byte: a range */
    memcpy(img + at + 16, &size, 8);
    ASSERT_EQ(sig_unwind_fde_bounds(&m, start + 0x10, range), 0);
    ASSERT_EQ(range[0], start);
    ASSERT_EQ(range[1], UINTPTR_MAX);
}
