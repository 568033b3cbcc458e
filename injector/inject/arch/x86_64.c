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

int ptrace_regs_get(pid_t tid, struct ptrace_regs *r)
{
    if (ptrace(PTRACE_GETREGS, tid, NULL, &r->r) < 0)
        return -errno;
    return 0;
}

int ptrace_regs_set(pid_t tid, const struct ptrace_regs *r)
{
    if (ptrace(PTRACE_SETREGS, tid, NULL, &r->r) < 0)
        return -errno;
    return 0;
}

int ptrace_fpregs_get(pid_t tid, struct ptrace_fpregs *f)
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

int ptrace_fpregs_set(pid_t tid, const struct ptrace_fpregs *f)
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

unsigned long ptrace_regs_pc(const struct ptrace_regs *r)
{
    return r->r.rip;
}

unsigned long ptrace_regs_sp(const struct ptrace_regs *r)
{
    return r->r.rsp;
}

unsigned long ptrace_regs_lr(const struct ptrace_regs *r)
{
    (void)r;
    return 0;
}

unsigned long ptrace_regs_ret(const struct ptrace_regs *r)
{
    return r->r.rax;
}

long ptrace_regs_syscall(const struct ptrace_regs *r, int memfd)
{
    (void)memfd;
    return (long)r->r.orig_rax; /* -1 outside a syscall */
}

int ptrace_remote_setup(struct ptrace_regs *r, unsigned long fn, const unsigned long *args,
                        int nargs, unsigned long top, unsigned long *ret_slot)
{
    if (nargs < 0 || nargs > 6)
        return -EINVAL;
    unsigned long long *slot[6] = {&r->r.rdi, &r->r.rsi, &r->r.rdx, &r->r.rcx, &r->r.r8, &r->r.r9};
    for (int i = 0; i < nargs; i++)
        *slot[i] = args[i];
    /* At the first instruction of the callee, (rsp + 8) is 16-byte aligned: the return address
     * sits just below an aligned top. */
    top &= ~15UL;
    r->r.rsp = top - 8;
    *ret_slot = top - 8;
    r->r.rip = fn;
    r->r.rax = 0;                           /* no vector registers used by a variadic callee */
    r->r.orig_rax = (unsigned long long)-1; /* not in a syscall: no restart into our call */
    r->r.eflags &= ~(1ULL << 10);           /* DF clear, as the ABI requires at a call */
    return 0;
}

/* ---- the self-restoring trampoline ----
 * A remote call normally returns to address 0 and the tracer catches the fault. If the tracer
 * dies during the call (Ctrl-C, SIGKILL, a timeout), nobody catches it and the target dies. The
 * trampoline instead is a few bytes of code, written into unused padding at the end of an
 * executable mapping, that calls fn and then restores the thread on its own:
 *
 *     mov  (%rsp),%rax        fn, from the parameter block at the stack top
 *     call *%rax
 *     mov  %rax,0x30(%rsp)    the result, for the tracer
 *     mov  0x8(%rsp),%rcx     the thread's errno address (0: unknown)
 *     test %rcx,%rcx ; je 1f
 *     mov  0x10(%rsp),%edx ; mov %edx,(%rcx)      put the thread's errno back
 * 1:  getpid ; gettid ; tgkill(pid, tid, 0x28(%rsp))   the stop signal: the tracer stops here
 *     add  $0x40,%rsp         to the ucontext the tracer built above the parameters
 *     rt_sigreturn            every register, the FP state and the signal mask as they were
 *
 * The stop signal is one the target ignores (its SIG_IGN set, or a default-ignored signal it
 * does not catch): while traced, the kernel reports even an ignored signal to the tracer, which
 * reads the result and restores the thread itself; untraced, the signal is dropped and
 * rt_sigreturn puts the thread back exactly where it was. */
static const unsigned char tramp_code[] = {
    0x48, 0x8b, 0x04, 0x24,       /* mov (%rsp),%rax */
    0xff, 0xd0,                   /* call *%rax */
    0x48, 0x89, 0x44, 0x24, 0x30, /* mov %rax,0x30(%rsp) */
    0x48, 0x8b, 0x4c, 0x24, 0x08, /* mov 0x8(%rsp),%rcx */
    0x48, 0x85, 0xc9,             /* test %rcx,%rcx */
    0x74, 0x06,                   /* je +6 */
    0x8b, 0x54, 0x24, 0x10,       /* mov 0x10(%rsp),%edx */
    0x89, 0x11,                   /* mov %edx,(%rcx) */
    0xb8, 0x27, 0x00, 0x00, 0x00, /* mov $39 (getpid),%eax */
    0x0f, 0x05,                   /* syscall */
    0x89, 0xc7,                   /* mov %eax,%edi */
    0xb8, 0xba, 0x00, 0x00, 0x00, /* mov $186 (gettid),%eax */
    0x0f, 0x05,                   /* syscall */
    0x89, 0xc6,                   /* mov %eax,%esi */
    0x8b, 0x54, 0x24, 0x28,       /* mov 0x28(%rsp),%edx */
    0xb8, 0xea, 0x00, 0x00, 0x00, /* mov $234 (tgkill),%eax */
    0x0f, 0x05,                   /* syscall */
    /* the stop: pc here when the tracer sees the stop signal */
    0x48, 0x83, 0xc4, 0x40,       /* add $0x40,%rsp */
    0xb8, 0x0f, 0x00, 0x00, 0x00, /* mov $15 (rt_sigreturn),%eax */
    0x0f, 0x05,                   /* syscall */
    0x0f, 0x0b,                   /* ud2: never reached */
};
#define TRAMP_STOP 0x38

/* The kernel's x86-64 ucontext (uapi asm/ucontext.h, asm/sigcontext.h), which rt_sigreturn reads
 * at the stack pointer; 128 bytes of siginfo room follow it in a real frame (access_ok covers
 * them). */
struct k_sigcontext {
    uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
    uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
    uint16_t cs, gs, fs, ss;
    uint64_t err, trapno, oldmask, cr2, fpstate, reserved1[8];
};
struct k_ucontext {
    uint64_t uc_flags, uc_link;
    uint64_t ss_sp;
    int32_t ss_flags, ss_pad;
    uint64_t ss_size;
    struct k_sigcontext mc;
    uint64_t uc_sigmask;
};
_Static_assert(sizeof(struct k_ucontext) == 304, "x86-64 ucontext layout");

#define UC_FP_XSTATE 1
#define UC_SIGCONTEXT_SS 2
#define UC_STRICT_RESTORE_SS 4
#define FP_XSTATE_MAGIC1 0x46505853U
#define FP_XSTATE_MAGIC2 0x46505845U
#define FXSAVE_SIZE 512
#define XSAVE_MIN (FXSAVE_SIZE + 64)
#define SW_BYTES 464 /* fxsave's sw_reserved: magic1, extended_size, xfeatures, xstate_size */

/* Linux's codes for an interrupted syscall (include/linux/errno.h, not exported). */
#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

int ptrace_tramp_code(const unsigned char **code, size_t *len, size_t *stop_off)
{
    *code = tramp_code;
    *len = sizeof tramp_code;
    *stop_off = TRAMP_STOP;
    return 0;
}

size_t ptrace_tramp_frame_size(void)
{
    return sizeof(struct k_ucontext) + 128 + 8; /* the ucontext, siginfo room, the pretcode slot */
}

size_t ptrace_tramp_fpstate(const struct ptrace_fpregs *f, unsigned char *out, size_t cap,
                            int *xstate)
{
    *xstate = 0;
    if (f->len < FXSAVE_SIZE || f->len + 4 > cap)
        return 0;
    memcpy(out, f->buf, f->len);
    if (f->kind != FP_XSTATE || f->len < XSAVE_MIN)
        return f->len; /* legacy FXSAVE: the kernel restores x87 and SSE from it */
    uint32_t magic1, xstate_size;
    memcpy(&magic1, out + SW_BYTES, 4);
    memcpy(&xstate_size, out + SW_BYTES + 16, 4);
    if (magic1 != FP_XSTATE_MAGIC1 || xstate_size < XSAVE_MIN || xstate_size > f->len)
        return f->len; /* no software bytes from ptrace: FXSAVE part only */
    uint32_t magic2 = FP_XSTATE_MAGIC2;
    memcpy(out + xstate_size, &magic2, 4);
    *xstate = 1;
    return xstate_size + 4 > f->len ? xstate_size + 4 : f->len;
}

int ptrace_tramp_frame(unsigned char *buf, const struct ptrace_regs *saved, uint64_t sigmask,
                       unsigned long fp_addr, int fp_xstate)
{
    struct k_ucontext uc;
    const struct user_regs_struct *s = &saved->r;
    memset(&uc, 0, sizeof uc);
    uc.uc_flags = (fp_xstate ? UC_FP_XSTATE : 0) | UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
    /* An invalid sigaltstack mode: rt_sigreturn's restore_altstack() then fails with EINVAL,
     * which the kernel ignores, and the thread's alternate stack stays as it is. */
    uc.ss_flags = 3;
    struct k_sigcontext *m = &uc.mc;
    m->r8 = s->r8, m->r9 = s->r9, m->r10 = s->r10, m->r11 = s->r11;
    m->r12 = s->r12, m->r13 = s->r13, m->r14 = s->r14, m->r15 = s->r15;
    m->rdi = s->rdi, m->rsi = s->rsi, m->rbp = s->rbp, m->rbx = s->rbx;
    m->rdx = s->rdx, m->rax = s->rax, m->rcx = s->rcx, m->rsp = s->rsp;
    m->rip = s->rip, m->eflags = s->eflags;
    m->cs = (uint16_t)s->cs, m->ss = (uint16_t)s->ss;
    m->gs = (uint16_t)s->gs, m->fs = (uint16_t)s->fs;
    m->fpstate = fp_addr;
    /* rt_sigreturn does not restart a syscall (orig_rax becomes -1): do here what the kernel does
     * for a signal without a handler, re-execute the interrupted syscall (2-byte instruction).
     * A relative timeout then starts again: the wait is longer, never cut short. */
    long nr = (long)s->orig_rax, rv = (long)s->rax;
    if (nr >= 0 && (rv == -ERESTARTSYS || rv == -ERESTARTNOINTR || rv == -ERESTARTNOHAND ||
                    rv == -ERESTART_RESTARTBLOCK)) {
        m->rax = (uint64_t)nr;
        m->rip -= 2;
    }
    uc.uc_sigmask = sigmask;
    memset(buf, 0, ptrace_tramp_frame_size());
    memcpy(buf + 8, &uc, sizeof uc); /* buf + 0: the pretcode slot, at sp - 8 */
    return 0;
}

int ptrace_tramp_setup(struct ptrace_regs *r, unsigned long stub, const unsigned long *args,
                       int nargs, unsigned long top)
{
    if (nargs < 0 || nargs > 6 || (top & 15))
        return -EINVAL;
    unsigned long long *slot[6] = {&r->r.rdi, &r->r.rsi, &r->r.rdx, &r->r.rcx, &r->r.r8, &r->r.r9};
    for (int i = 0; i < nargs; i++)
        *slot[i] = args[i];
    r->r.rsp = top; /* the stub's call pushes the return address: aligned at the callee */
    r->r.rip = stub;
    r->r.rax = 0;
    r->r.orig_rax = (unsigned long long)-1;
    r->r.eflags &= ~(1ULL << 10);
    return 0;
}
#else
/* Compiled on other architectures as an empty unit so one source list serves every build. */
typedef int ptrace_remote_x86_64_unused;
#endif
