/* SPDX-License-Identifier: MIT */
/* The prologue decoder of the unwinder (sig_unwind_prologue_depth, probe/sig/unwind.c): how far
 * below its frame pointer a function's stack pointer is at a pc, for a thread read without its
 * registers. Real prologues (ASan's read interceptor as GCC 12 built it, a -O0 function with a
 * 4 KiB buffer, an endbr64 one), and every case that must give up: no frame pointer set up,
 * rsp realigned or moved into, a negative or absurd subtraction, an unknown instruction before
 * the frame's size was seen, a pc at or before the start. The code is this process's memory. */
#include <stdint.h>
#include <string.h>

#include "sig/unwind.h"
#include "unit.h"

static int64_t depth_at(const uint8_t *code, size_t pc_off)
{
    return sig_unwind_prologue_depth((uintptr_t)code, (uintptr_t)code + pc_off);
}

TEST(prologue_asan_read_interceptor)
{
    /* __interceptor_read.part.0 of libasan.so.8 (GCC 12): push %rbp; mov %rsp,%rbp; push
     * %r14; push %r13; push %r12; mov %rsi,%r12; push %rbx; sub $0x830,%rsp; lea ...; */
    static const uint8_t f[] = {0x55, 0x48, 0x89, 0xe5, 0x41, 0x56, 0x41, 0x55, 0x41, 0x54,
                                0x49, 0x89, 0xf4, 0x53, 0x48, 0x81, 0xec, 0x30, 0x08, 0x00,
                                0x00, 0x48, 0x8d, 0x05, 0x00, 0x15, 0x10, 0x00, 0x8b, 0x08};
    ASSERT_EQ(depth_at(f, sizeof f), 4 * 8 + 0x830);
    ASSERT_EQ(depth_at(f, 21), 4 * 8 + 0x830); /* right after the sub */
    ASSERT_EQ(depth_at(f, 14), 4 * 8);         /* in the prologue: the pushes so far */
    ASSERT_EQ(depth_at(f, 4), 0);              /* right after mov %rsp,%rbp */
}

TEST(prologue_o0_big_buffer)
{
    /* push %rbp; mov %rsp,%rbp; sub $0x1010,%rsp; mov %edi,-0x1004(%rbp); ... */
    static const uint8_t f[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x81, 0xec, 0x10, 0x10,
                                0x00, 0x00, 0x89, 0xbd, 0xfc, 0xef, 0xff, 0xff, 0x90};
    ASSERT_EQ(depth_at(f, sizeof f), 0x1010);
}

TEST(prologue_endbr64_imm8_and_register_moves)
{
    /* endbr64; push %rbp; mov %rsp,%rbp (the 8b form); push %rbx; mov %edi,%ebx; mov
     * %rdx,%r8 (8b, REX.R); sub $0x18,%rsp; call ... */
    static const uint8_t f[] = {0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x8b, 0xec,
                                0x53, 0x89, 0xfb, 0x4c, 0x8b, 0xc2, 0x48, 0x83,
                                0xec, 0x18, 0xe8, 0x00, 0x00, 0x00, 0x00};
    ASSERT_EQ(depth_at(f, sizeof f), 8 + 0x18);
}

TEST(prologue_pushes_only_counts_when_read_to_pc)
{
    /* push %rbp; mov %rsp,%rbp; push %rbx; then xor %eax,%eax: no sub seen */
    static const uint8_t f[] = {0x55, 0x48, 0x89, 0xe5, 0x53, 0x31, 0xc0};
    ASSERT_EQ(depth_at(f, 5), 8);         /* every instruction up to pc read */
    ASSERT_EQ(depth_at(f, sizeof f), -1); /* an unknown one before pc, no frame size seen */
}

TEST(prologue_refusals)
{
    static const uint8_t nofp[] = {0x53, 0x48, 0x83, 0xec, 0x10, 0x90};
    ASSERT_EQ(depth_at(nofp, sizeof nofp), -1); /* no push %rbp; mov %rsp,%rbp */
    static const uint8_t realign[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xe4,
                                      0xf0, 0x48, 0x83, 0xec, 0x20, 0x90};
    ASSERT_EQ(depth_at(realign, sizeof realign), -1); /* and $-16,%rsp */
    static const uint8_t into_rsp[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x89, 0xc4, 0x90};
    ASSERT_EQ(depth_at(into_rsp, sizeof into_rsp), -1); /* mov %rax,%rsp */
    static const uint8_t into_rbp[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0xe8, 0x90};
    ASSERT_EQ(depth_at(into_rbp, sizeof into_rbp), -1); /* mov %rax,%rbp (8b form) */
    static const uint8_t neg8[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x80, 0x90};
    ASSERT_EQ(depth_at(neg8, sizeof neg8), -1); /* sub $-128,%rsp */
    static const uint8_t huge[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x81,
                                   0xec, 0x00, 0x00, 0x00, 0x40, 0x90};
    ASSERT_EQ(depth_at(huge, sizeof huge), -1); /* 1 GiB of frame */
    static const uint8_t cut[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x81, 0xec, 0x30};
    ASSERT_EQ(depth_at(cut, sizeof cut), -1); /* pc inside the sub: not executed */
    ASSERT_EQ(depth_at(cut, 0), -1);
    ASSERT_EQ(sig_unwind_prologue_depth((uintptr_t)cut + 4, (uintptr_t)cut), -1);
}
