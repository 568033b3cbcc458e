/* SPDX-License-Identifier: MIT */
/* An ELF core file read as memory (corefile.c), for `probing dump --core` (core.c): its PT_LOAD
 * segments, its NT_FILE note's mapped files (read from disk where the core left a mapping
 * out), and its threads' NT_PRSTATUS. Every offset and size in it is the core's word, which a
 * hostile core chooses: all are checked without overflow, names must end within their note,
 * and only regular files are opened. No allocation but the mapping table (cli_core_file_free). */
#ifndef PROBING_COREFILE_H
#define PROBING_COREFILE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

struct core_map {
    unsigned long start, end, off; /* off: bytes into the file */
    const char *path;              /* NUL-terminated within the core's note */
};

#define CORE_MAX_THREADS 4096

struct core_file {
    const unsigned char *data;
    size_t size;
    const Elf64_Phdr *ph;
    int nph;
    struct core_map *maps;
    int nmaps;
    int pid;
    int tids[CORE_MAX_THREADS];          /* the threads' NT_PRSTATUS pr_pid */
    uintptr_t regs[CORE_MAX_THREADS][3]; /* and their pc, sp, frame pointer */
    int ntids;
    int signo;                   /* the signal that ended it: NT_SIGINFO si_signo, else the first
                                * NT_PRSTATUS pr_cursig; 0: none (gcore of a live process) */
    int sigcode;                 /* NT_SIGINFO si_code (0 without one) */
    char fname[17];              /* NT_PRPSINFO pr_fname, NUL-terminated here */
    char psargs[81];             /* NT_PRPSINFO pr_psargs */
    uint64_t at_phdr, at_execfn; /* NT_AUXV's AT_PHDR and AT_EXECFN (0: none) */
};

/* The size bytes at data (kept, not copied) read as a 64-bit ELF core: 0, or -ENOEXEC when
 * it is not one (its program headers do not lie within it). Notes that do not fit are
 * skipped. */
int cli_core_file_parse(struct core_file *c, const void *data, size_t size);
void cli_core_file_free(struct core_file *c);
/* The size the core's segments say it has (the largest end of a segment's file bytes,
 * saturated): more than c->size when the file was cut short. */
uint64_t cli_core_file_expected_size(const struct core_file *c);
/* Up to n bytes at addr from one place: a PT_LOAD segment's bytes in the core, else the file
 * an NT_FILE mapping maps there (a regular file only). The count, or -1. */
long cli_core_file_read_one(const struct core_file *c, uintptr_t addr, void *dst, size_t n);
/* n bytes at addr, across segments and mappings: 0, or -1. */
int cli_core_file_read(const struct core_file *c, uintptr_t addr, void *dst, size_t n);
/* The mapping of the process's executable: the one holding AT_PHDR, else NULL. */
const struct core_map *cli_core_file_exe_map(const struct core_file *c);
/* The GNU build id (NT_GNU_BUILD_ID) of the ELF object mapped at start (its offset-0 mapping),
 * read through cli_core_file_read (the core's bytes, else the mapped file's), as lower-case hex in
 * hex (cap >= 129). 0, or -1 when it has none that can be read. */
int cli_core_file_build_id(const struct core_file *c, uintptr_t start, char *hex, size_t cap);

#endif
