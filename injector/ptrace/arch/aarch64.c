/* SPDX-License-Identifier: MIT */
/* aarch64 registers for a remote call (AAPCS64): arguments in x0..x7, sp 16-byte aligned, the
 * link register x30 = 0 so the callee's `ret` faults at 0 and the tracer sees SIGSEGV. The
 * syscall number (NT_ARM_SYSTEM_CALL) is set to -1 during the call so no syscall restart is
 * applied to it, and restored afterwards with every other register. FP state is FPSIMD
 * (NT_PRFPREG). There is no red zone in the Linux ABI; inject.c skips 128 bytes anyway. */
#if defined(__aarch64__)
#include "injector/ptrace/internal.h"

#include <elf.h>
#include <errno.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NT_ARM_SYSTEM_CALL
#define NT_ARM_SYSTEM_CALL 0x404
#endif

int ptrace_regs_get(pid_t tid, struct ptrace_regs *r)
{
    struct iovec iov = {&r->r, sizeof r->r};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
        return -errno;
    iov.iov_base = &r->syscallno;
    iov.iov_len = sizeof r->syscallno;
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov) < 0)
        return -errno;
    return 0;
}

int ptrace_regs_set(pid_t tid, const struct ptrace_regs *r)
{
    struct iovec iov = {(void *)&r->r, sizeof r->r};
    if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &iov) < 0)
        return -errno;
    iov.iov_base = (void *)&r->syscallno;
    iov.iov_len = sizeof r->syscallno;
    if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &iov) < 0)
        return -errno;
    return 0;
}

int ptrace_fpregs_get(pid_t tid, struct ptrace_fpregs *f)
{
    struct iovec iov = {f->buf, sizeof(struct user_fpsimd_state)};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRFPREG, &iov) < 0)
        return -errno;
    f->len = iov.iov_len;
    f->kind = 1;
    return 0;
}

int ptrace_fpregs_set(pid_t tid, const struct ptrace_fpregs *f)
{
    struct iovec iov = {(void *)f->buf, f->len};
    if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRFPREG, &iov) < 0)
        return -errno;
    return 0;
}

unsigned long ptrace_regs_pc(const struct ptrace_regs *r)
{
    return (unsigned long)r->r.pc;
}

unsigned long ptrace_regs_sp(const struct ptrace_regs *r)
{
    return (unsigned long)r->r.sp;
}

unsigned long ptrace_regs_lr(const struct ptrace_regs *r)
{
    return (unsigned long)r->r.regs[30];
}

unsigned long ptrace_regs_ret(const struct ptrace_regs *r)
{
    return (unsigned long)r->r.regs[0];
}

long ptrace_regs_syscall(const struct ptrace_regs *r, int memfd)
{
    if (r->syscallno >= 0)
        return r->syscallno;
    /* At a signal or interrupt stop the kernel has already rewound an interrupted syscall to
     * its `svc #0` (and forgotten the number): x8 still holds it. */
    uint32_t insn = 0;
    if (memfd >= 0 && pread(memfd, &insn, sizeof insn, (off_t)r->r.pc) == (ssize_t)sizeof insn &&
        insn == 0xd4000001u)
        return (long)r->r.regs[8];
    return -1;
}

int ptrace_remote_setup(struct ptrace_regs *r, unsigned long fn, const unsigned long *args,
                        int nargs, unsigned long top, unsigned long *ret_slot)
{
    if (nargs < 0 || nargs > 8)
        return -EINVAL;
    for (int i = 0; i < nargs; i++)
        r->r.regs[i] = args[i];
    r->r.sp = top & ~15UL;
    r->r.regs[30] = 0; /* return to 0: SIGSEGV stop */
    r->r.pc = fn;
    r->syscallno = -1; /* no syscall restart into our call */
    *ret_slot = 0;
    return 0;
}

/* No self-restoring trampoline here yet (see x86_64.c): a remote call returns to address 0, and
 * the injector holds the caller's catchable signals across it. Run by make release-check-aarch64
 * on Debian 11's arm64 kernel in qemu-system-aarch64 (qemu-user has no ptrace). */
int ptrace_tramp_code(const unsigned char **code, size_t *len, size_t *stop_off)
{
    (void)code, (void)len, (void)stop_off;
    return -ENOSYS;
}

size_t ptrace_tramp_frame_size(void)
{
    return 0;
}

size_t ptrace_tramp_fpstate(const struct ptrace_fpregs *f, unsigned char *out, size_t cap,
                            int *xstate)
{
    (void)f, (void)out, (void)cap;
    *xstate = 0;
    return 0;
}

int ptrace_tramp_frame(unsigned char *buf, const struct ptrace_regs *saved, uint64_t sigmask,
                       unsigned long fp_addr, int fp_xstate)
{
    (void)buf, (void)saved, (void)sigmask, (void)fp_addr, (void)fp_xstate;
    return -ENOSYS;
}

int ptrace_tramp_setup(struct ptrace_regs *r, unsigned long stub, const unsigned long *args,
                       int nargs, unsigned long top)
{
    (void)r, (void)stub, (void)args, (void)nargs, (void)top;
    return -ENOSYS;
}
#else
/* Compiled on other architectures as an empty unit so one source list serves every build. */
typedef int ptrace_remote_aarch64_unused;
#endif
