/* SPDX-License-Identifier: MIT */
/* The DWARF call-frame information reader and interpreter of the unwinder (unwind.h): CIE and
 * FDE records, the CFA program, the small DWARF expression evaluator, .eh_frame_hdr and its
 * search table (DWARF 5 "Call Frame Information"; the LSB's .eh_frame/.eh_frame_hdr layout).
 * The opcodes are <dwarf.h>'s (elfutils) DW_CFA_*, DW_OP_* and DW_EH_PE_* names. The bytes are
 * untrusted (a core file names the modules whose .eh_frame `dump --core` reads): every length
 * is checked against its buffer, every read of the target goes through pyrt_read.
 * Async-signal-safe throughout: no allocation, no lock, no loader call (make check-exports runs
 * tools/check_signal_safety.sh on unwind_cfi.o). x86-64's register numbers. */
#ifndef PROBE_UNWIND_CFI_H
#define PROBE_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

#include "unwind.h"

/* DWARF register numbers of x86-64 (System V psABI): rax rdx rcx rbx rsi rdi rbp rsp r8-r15,
 * then the return address column. */
enum { UNWIND_NREG = 17, UNWIND_RA = 16, UNWIND_RBP = 6, UNWIND_RSP = 7 };

/* A register's rule in a CFI row. */
enum {
    UNWIND_R_SAME,    /* same value (DW_CFA_same_value; the initial rule) */
    UNWIND_R_UNDEF,   /* undefined (DW_CFA_undefined) */
    UNWIND_R_OFF,     /* saved at CFA + v */
    UNWIND_R_VALOFF,  /* is CFA + v */
    UNWIND_R_REG,     /* in register v */
    UNWIND_R_EXPR,    /* saved at the address the expression at v (len bytes) gives */
    UNWIND_R_VALEXPR, /* is the value that expression gives */
};
struct unwind_cfi_rule {
    uint8_t how;
    int64_t v; /* offset, register, or expression address */
    uint32_t len;
};
/* A row: the CFA and each register's rule. */
struct unwind_cfi_state {
    struct unwind_cfi_rule r[UNWIND_NREG];
    int cfa_reg; /* -1: expression */
    int64_t cfa_off;
    uintptr_t cfa_expr;
    uint32_t cfa_len;
};
/* Register values; bit i of valid says v[i] is known. */
struct unwind_regs {
    uintptr_t v[UNWIND_NREG];
    unsigned valid;
};
/* A parsed CIE: its instructions point into the bytes it was parsed from. */
struct unwind_cie {
    uint64_t code_align;
    int64_t data_align;
    int ra_reg;
    uint8_t fde_enc;
    int has_z, signal;
    const uint8_t *insn, *insn_end;
    uintptr_t insn_addr;
};

/* A DWARF expression at [expr, expr+len) in the target (read fault-proof), with cfa first on
 * its stack when push_cfa: lit, const, breg/bregx, deref, dup, drop, plus_uconst and the binary
 * arithmetic and comparisons. 0 and *out, or -1 (another opcode, a stack over- or underflow,
 * an unreadable byte, an unknown register). */
int sig_unwind_cfi_expr(uintptr_t expr, uint32_t len, const struct unwind_regs *rs, int push_cfa,
                        uintptr_t cfa, uintptr_t *out);

/* The CIE in the n bytes p (its 4-byte length first; at target address addr) into *c. Only
 * 32-bit records whose return-address column is UNWIND_RA, with augmentations "", "eh" or
 * "z..." (R, L, P, S understood). 0, or -1. */
int sig_unwind_cfi_cie(const uint8_t *p, size_t n, uintptr_t addr, struct unwind_cie *c);

/* Runs the CFA instructions [p, end) (at target address addr) from location loc while
 * loc <= pc, into *s. init holds the rules after the CIE's instructions (for DW_CFA_restore),
 * NULL while running those. row (may be NULL) gets the locations where the row found for pc
 * starts and ends (end 0: at the end of the instructions, i.e. the FDE's range). 0, or -1 (an
 * unknown opcode, a truncated operand, remember_state nested deeper than 4, restore_state
 * without remember_state). */
int sig_unwind_cfi_run(const uint8_t *p, const uint8_t *end, uintptr_t addr,
                       const struct unwind_cie *c, uintptr_t loc, uintptr_t pc,
                       struct unwind_cfi_state *s, const struct unwind_cfi_state *init,
                       uintptr_t row[2]);

/* An FDE parsed for a pc: its CIE, its instructions (pointing into the FDE's bytes) and the
 * range [start, end) of its function. */
struct sig_unwind_cfi_fde {
    struct unwind_cie cie;
    const uint8_t *insn, *insn_end;
    uintptr_t insn_addr;
    uintptr_t start, end;
};

/* The FDE whose fde_len bytes are fde (at fde_addr, its length field first), with the CIE of
 * cie_len bytes at cie (at cie_addr), parsed into *f when it covers pc (f's pointers point into
 * fde and cie). 0, or -1 (a bad record, or pc outside the FDE). */
int sig_unwind_cfi_fde(const uint8_t *fde, size_t fde_len, uintptr_t fde_addr, const uint8_t *cie,
                       size_t cie_len, uintptr_t cie_addr, uintptr_t pc,
                       struct sig_unwind_cfi_fde *f);

/* The rules at pc of the FDE f (the CIE's instructions, then the FDE's) into *s, and into row
 * the range of locations they hold for (the pc alone when the locations are odd). 0, or -1. */
int sig_unwind_cfi_row(const struct sig_unwind_cfi_fde *f, uintptr_t pc, struct unwind_cfi_state *s,
                       uintptr_t row[2]);

/* The FDE of module m whose search-table entry is the last at or below pc, read fault-proof
 * (blk: 2 * UNWIND_STRIDE words of scratch) into fde (fde_cap bytes) and its CIE into cie
 * (cie_cap bytes); their addresses into a (a[0] the FDE's, a[1] the CIE's) and their length
 * fields into len (each record is len + 4 bytes). 0, or -1. */
int sig_unwind_cfi_fetch(const struct unwind_mod *m, uintptr_t pc, int32_t *blk, uint8_t *fde,
                         uint32_t fde_cap, uint8_t *cie, uint32_t cie_cap, uintptr_t a[2],
                         uint32_t len[2]);

#endif
