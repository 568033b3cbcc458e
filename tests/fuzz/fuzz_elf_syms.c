/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the CLI's ELF reader (injector/inject/elf.c) on a file a hostile user
 * chose (the interpreter of a process root reads with debug --dump, cluster, serve; a file a
 * core names). The input is the whole file, in a buffer of exactly its size: every symbol
 * lookup the CLI makes (.dynsym with versions and .gnu.hash, then .symtab), the section
 * lookup of the version scan, DT_NEEDED names, the load bias and reads of constant data.
 * Checks, beyond memory safety: what comes back lies within the file (a section, a NEEDED
 * name that ends there, bytes read at a symbol). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/inject/internal.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_elf_syms: %s\n", what);
        abort();
    }
}

static const char *const names[] = {
    "Py_Version",
    "_PyRuntime",
    "PyCode_Type",
    "PyFrame_Type",
    "PyUnicode_Type",
    "PyBytes_Type",
    "_Py_NoneStruct",
    "Py_Initialize",
    "Py_Main",
    "dlopen",
    "__libc_dlopen_mode",
    "_dl_open",
    "malloc",
    "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1); /* exactly size: ASan sees any overread */
    struct ptrace_elf e;
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (ptrace_elf_init(&e, buf, size) == 0) {
        check(e.data == buf && e.size == size, "ptrace_elf_init kept another buffer");
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            uint64_t v, sz;
            unsigned char out[16];
            if (ptrace_elf_sym(&e, names[i], &v, &sz) == 0) {
                ptrace_elf_read(&e, v, out, 4);
                ptrace_elf_read(&e, v, out, sizeof out);
                ptrace_elf_read(&e, v + sz, out, 1);
            }
        }
        size_t off, n;
        if (ptrace_elf_section(&e, ".rodata", &off, &n) == 0)
            check(off <= size && n <= size - off, ".rodata outside the file");
        for (int i = 0; i < 64; i++) {
            const char *need = ptrace_elf_needed(&e, i);
            if (!need)
                break;
            check((const unsigned char *)need >= buf && (const unsigned char *)need < buf + size &&
                      memchr(need, '\0', (size_t)(buf + size - (const unsigned char *)need)),
                  "DT_NEEDED name not within the file");
        }
        ptrace_elf_func_end_below(&e, UINT64_MAX);
        uint64_t bias;
        static const unsigned long offs[] = {0, 0x1000, 0x2d2000, ~0ul};
        for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
            ptrace_elf_bias(&e, 0x7f0000000000ul, offs[i], &bias);
        unsigned char word[8];
        ptrace_elf_read(&e, UINT64_MAX - 3, word, 8); /* a read whose end wraps */
    }
    free(buf);
    return 0;
}
