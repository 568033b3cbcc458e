/* SPDX-License-Identifier: MIT */
/* x86-64 registers for a remote call (System V ABI): arguments in rdi, rsi, rdx, rcx, r8, r9, a
 * 16-byte aligned stack at the call, a zero return address so the callee's `ret` faults at 0 and
 * the tracer sees SIGSEGV. orig_rax = -1 stops the kernel from "restarting" an interrupted
 * syscall into our call; restoring the saved orig_rax/rax afterwards lets the kernel restart it
 * as if nothing happened. The FP/vector state is saved as the whole XSAVE area. */
#if defined(__x86_64__)
#include "injector/inject/internal.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

enum { FP_XSTATE = 1, FP_FXSAVE = 2 };

int inj_regs_get(pid_t tid, struct inj_regs *r)
{
    if (ptrace(PTRACE_GETREGS, tid, NULL, &r->r) < 0)
        return -errno;
    return 0;
}

int inj_regs_set(pid_t tid, const struct inj_regs *r)
{
    if (ptrace(PTRACE_SETREGS, tid, NULL, &r->r) < 0)
        return -errno;
    return 0;
}

int inj_fpregs_get(pid_t tid, struct inj_fpregs *f)
{
    struct iovec iov = {f->buf, sizeof f->buf};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_X86_XSTATE, &iov) == 0) {
        f->len = iov.iov_len;
        f->kind = FP_XSTATE;
        return 0;
    }
    /* No XSAVE (very old CPU or kernel): the legacy FXSAVE area still covers x87 and SSE. */
    if (ptrace(PTRACE_GETFPREGS, tid, NULL, f->buf) < 0)
        return -errno;
    f->len = sizeof(struct user_fpregs_struct);
    f->kind = FP_FXSAVE;
    return 0;
}

int inj_fpregs_set(pid_t tid, const struct inj_fpregs *f)
{
    if (f->kind == FP_XSTATE) {
        struct iovec iov = {(void *)f->buf, f->len};
        if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_X86_XSTATE, &iov) < 0)
            return -errno;
        return 0;
    }
    if (ptrace(PTRACE_SETFPREGS, tid, NULL, (void *)f->buf) < 0)
        return -errno;
    return 0;
}

unsigned long inj_regs_pc(const struct inj_regs *r)
{
    return r->r.rip;
}

unsigned long inj_regs_sp(const struct inj_regs *r)
{
    return r->r.rsp;
}

unsigned long inj_regs_lr(const struct inj_regs *r)
{
    (void)r;
    return 0;
}

unsigned long inj_regs_ret(const struct inj_regs *r)
{
    return r->r.rax;
}

long inj_regs_syscall(const struct inj_regs *r, int memfd)
{
    (void)memfd;
    return (long)r->r.orig_rax; /* -1 outside a syscall */
}

int inj_remote_setup(struct inj_regs *r, unsigned long fn, const unsigned long *args, int nargs,
                     unsigned long top, unsigned long *ret_slot)
{
    if (nargs < 0 || nargs > 6)
        return -EINVAL;
    unsigned long long *slot[6] = {&r->r.rdi, &r->r.rsi, &r->r.rdx,
                                   &r->r.rcx, &r->r.r8,  &r->r.r9};
    for (int i = 0; i < nargs; i++)
        *slot[i] = args[i];
    /* At the first instruction of the callee, (rsp + 8) is 16-byte aligned: the return address
     * sits just below an aligned top. */
    top &= ~15UL;
    r->r.rsp = top - 8;
    *ret_slot = top - 8;
    r->r.rip = fn;
    r->r.rax = 0;             /* no vector registers used by a variadic callee */
    r->r.orig_rax = (unsigned long long)-1; /* not in a syscall: no restart into our call */
    r->r.eflags &= ~(1ULL << 10); /* DF clear, as the ABI requires at a call */
    return 0;
}
#else
/* Compiled on other architectures as an empty unit so one source list serves every build. */
typedef int inj_remote_x86_64_unused;
#endif
