/* SPDX-License-Identifier: MIT */
/* Cross-file internals of the injector: /proc parsing (procfs.c), ELF symbol lookup (elf.c),
 * ptrace stops with bounded waits (ptrace.c) and the per-architecture register work for a remote
 * function call (arch/x86_64.c, arch/aarch64.c). inject.c ties them together; ptrace.h is the
 * public face. Same error rule as ptrace.h: 0 or a negative code. */
#ifndef INJ_INTERNAL_H
#define INJ_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ptrace.h"

/* ---- procfs.c ---- */

struct ptrace_map {
    unsigned long start, end, offset, inode;
    unsigned long long dev; /* the file's device, major << 32 | minor (0: anonymous) */
    char perms[5];
    const char *path; /* as the target sees it; " (deleted)" stripped; "" if anonymous (in the
                         owning ptrace_maps's text) */
};

/* A process's mappings: those of files with code where the kernel answers PROCMAP_QUERY (Linux
 * 6.11+; every file the injector looks up has its code mapped), else all of them, from
 * /proc/PID/maps' text. Free with ptrace_maps_free. */
struct ptrace_maps {
    struct ptrace_map *v;
    size_t n;
    char *text; /* the file, its lines cut in place: where the paths are */
};

struct ptrace_status {
    char state; /* 'R', 'S', 'D', 'T', 't', 'Z', ... */
    char comm[64];
    pid_t tracer;            /* TracerPid, 0 if none */
    uid_t uid;               /* real uid */
    gid_t gid;               /* real gid */
    pid_t nspid;             /* pid in the innermost pid namespace */
    uint64_t sigign, sigcgt; /* signals ignored and caught (bit n-1 for signal n) */
};

int ptrace_maps_read(pid_t pid, struct ptrace_maps *m);
void ptrace_maps_free(struct ptrace_maps *m);
/* First mapping whose file basename starts with prefix and, when next is not NULL, is followed by
 * one of the characters in next ("" accepts anything). NULL if none. */
const struct ptrace_map *ptrace_maps_lookup(const struct ptrace_maps *m, const char *prefix,
                                            const char *next);
const char *ptrace_path_base(const char *path);
int ptrace_status_read(pid_t pid, struct ptrace_status *st);
/* comm of pid, or "?" if it cannot be read. */
void ptrace_comm_read(pid_t pid, char *buf, size_t n);

/* ---- elf.c ---- */

/* A 64-bit ELF file mapped read-only. Close with ptrace_elf_close (accepts a zeroed struct). */
struct ptrace_elf {
    const unsigned char *data;
    size_t size;
};

/* path mapped when it is a regular file holding a valid 64-bit ELF header: 0, -ENOEXEC (not
 * such a file: a FIFO or device is never opened), or -errno. */
int ptrace_elf_open(const char *path, struct ptrace_elf *e);
/* The size bytes at data (not copied; ptrace_elf_close is not for it) read as an ELF file, when
 * its header and header tables lie within them: 0 or -ENOEXEC (e zeroed). */
int ptrace_elf_init(struct ptrace_elf *e, const void *data, size_t size);
void ptrace_elf_close(struct ptrace_elf *e);
/* Link-time value and size of a defined symbol (.dynsym first, then .symtab; the default version
 * wins over hidden compat versions). 0, or -ENOENT. */
int ptrace_elf_sym(const struct ptrace_elf *e, const char *name, uint64_t *value, uint64_t *size);
/* Where the section called name lies in the file (its bytes in e->data). 0, or -ENOENT. */
int ptrace_elf_section(const struct ptrace_elf *e, const char *name, size_t *off, size_t *size);
/* The i-th (from 0) DT_NEEDED name of the file, or NULL past the last. */
const char *ptrace_elf_needed(const struct ptrace_elf *e, int i);
/* Highest end (value + size) of a defined function symbol whose value is below addr; 0 if none. */
uint64_t ptrace_elf_func_end_below(const struct ptrace_elf *e, uint64_t addr);
/* Load bias of a mapping of this file at start with file offset off: runtime = link + bias. */
int ptrace_elf_bias(const struct ptrace_elf *e, unsigned long start, unsigned long off,
                    uint64_t *bias);
/* Link-time end (p_vaddr + p_memsz) of the executable PT_LOAD segment mapped from file offset
 * off: the bytes after it, up to the end of its last page, belong to no section. 0, or -ENOENT. */
int ptrace_elf_exec_end(const struct ptrace_elf *e, unsigned long off, uint64_t *end);
/* Copy n bytes at link-time address vaddr from the file (constant data such as Py_Version). */
int ptrace_elf_read(const struct ptrace_elf *e, uint64_t vaddr, void *buf, size_t n);

/* A shared object or executable as loaded in a target: its ELF file (opened through
 * /proc/PID/root) and load bias. */
struct ptrace_module {
    struct ptrace_elf elf;
    uint64_t bias;
    unsigned long lo, hi; /* lowest and highest address of its mappings */
    char path[PATH_MAX];  /* as the target sees it */
};

/* Open the module mapped from the file named by map (any of its mappings). */
int ptrace_module_open(pid_t pid, const struct ptrace_maps *m, const struct ptrace_map *map,
                       struct ptrace_module *mod);
void ptrace_module_close(struct ptrace_module *mod);
/* Runtime address of a symbol in the module, or 0. */
unsigned long ptrace_module_sym(const struct ptrace_module *mod, const char *name,
                                unsigned long *size);

/* ---- ptrace.c ---- */

int ptrace_seize(pid_t tid);
int ptrace_interrupt(pid_t tid);
int ptrace_cont(pid_t tid, int sig);
int ptrace_detach(pid_t tid, int sig);
/* Wait for a state change of traced thread tid for at most timeout_ms, without busy looping
 * (SIGCHLD through sigtimedwait). 0 with *status set, PB_ETIMEDOUT, or -errno. */
int ptrace_wait(pid_t tid, int timeout_ms, int *status);
/* Whether pid is gone (no /proc entry, a zombie, or dead). */
int ptrace_proc_gone(pid_t pid);

/* ---- arch/<arch>.c ---- */

#define INJ_REDZONE 128 /* the x86-64 ABI's red zone; harmless elsewhere */

#if defined(__x86_64__)
#include <sys/user.h>
struct ptrace_regs {
    struct user_regs_struct r;
};
#elif defined(__aarch64__)
#include <asm/ptrace.h>
struct ptrace_regs {
    struct user_pt_regs r;
    int syscallno; /* NT_ARM_SYSTEM_CALL */
};
#else
#error "probing's injector supports x86-64 and aarch64"
#endif

/* Floating-point / vector state, opaque (x86: the XSAVE area; aarch64: FPSIMD). */
struct ptrace_fpregs {
    unsigned char buf[16384] __attribute__((aligned(64)));
    size_t len;
    int kind;
};

int ptrace_regs_get(pid_t tid, struct ptrace_regs *r);
int ptrace_regs_set(pid_t tid, const struct ptrace_regs *r);
int ptrace_fpregs_get(pid_t tid, struct ptrace_fpregs *f);
int ptrace_fpregs_set(pid_t tid, const struct ptrace_fpregs *f);
unsigned long ptrace_regs_pc(const struct ptrace_regs *r);
unsigned long ptrace_regs_sp(const struct ptrace_regs *r);
/* The link register (aarch64), 0 where return addresses live on the stack only. */
unsigned long ptrace_regs_lr(const struct ptrace_regs *r);
unsigned long ptrace_regs_ret(const struct ptrace_regs *r);
/* The syscall the thread was stopped in (interrupted or about to be restarted), or -1. memfd is
 * /proc/PID/mem, for architectures that must look at the instruction at pc. */
long ptrace_regs_syscall(const struct ptrace_regs *r, int memfd);
/* Turn r (a copy of a stopped thread's registers) into a call of fn(args[0..nargs)) with the
 * stack top at top (below the red zone and our data), returning to address 0 so that the call
 * ends in a SIGSEGV stop. Syscall restart is neutralised in r. *ret_slot is the stack address
 * where the caller must store a zero return address (x86-64), or 0 if none is needed. */
int ptrace_remote_setup(struct ptrace_regs *r, unsigned long fn, const unsigned long *args,
                        int nargs, unsigned long top, unsigned long *ret_slot);

/* The self-restoring trampoline (x86_64.c has the full story): code written into unused padding
 * of an executable mapping, which calls fn with the parameter block at the stack top, stops on
 * a signal the target ignores, and then puts the thread back with rt_sigreturn from a frame the
 * tracer built, so that a call survives the tracer's death. -ENOSYS where there is none. */
#define INJ_TRAMP_PARAMS 64 /* fn, errno address, errno, -, -, stop signal, result, - */
int ptrace_tramp_code(const unsigned char **code, size_t *len, size_t *stop_off);
/* Bytes of the frame written at top + INJ_TRAMP_PARAMS - 8 (its first 8: the pretcode slot). */
size_t ptrace_tramp_frame_size(void);
/* The FP area as the frame holds it (copied from f into out, with the kernel's end marker);
 * its length, or 0 if it does not fit in cap. */
size_t ptrace_tramp_fpstate(const struct ptrace_fpregs *f, unsigned char *out, size_t cap,
                            int *xstate);
/* Fill buf (ptrace_tramp_frame_size() bytes) with the frame that restores saved, sigmask and the
 * FP area at fp_addr (64-byte aligned; fp_xstate: a full XSAVE area with its markers). */
int ptrace_tramp_frame(unsigned char *buf, const struct ptrace_regs *saved, uint64_t sigmask,
                       unsigned long fp_addr, int fp_xstate);
/* Registers for a call through the stub at stub, the parameter block at top (16-aligned). */
int ptrace_tramp_setup(struct ptrace_regs *r, unsigned long stub, const unsigned long *args,
                       int nargs, unsigned long top);

#endif
