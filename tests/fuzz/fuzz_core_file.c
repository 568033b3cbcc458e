/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the core-file reader of `probing dump --core` (injector/cli/corefile.c),
 * which root may run on a core a user crafted. The input is the whole core, in a buffer of
 * exactly its size: the program headers, every PT_NOTE's notes (NT_PRSTATUS, NT_PRPSINFO,
 * NT_FILE, NT_SIGINFO, NT_AUXV), then reads at each segment's and each mapping's edges (a mapping the core left
 * out is read from the file its NT_FILE names: regular files only). Checks, beyond memory
 * safety: every mapping's name lies within the core and ends there; the thread count stays
 * within its table; a read inside a segment's file bytes returns those bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/cli/corefile.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_core_file: %s\n", what);
        abort();
    }
}

static struct core_file c; /* 115 KiB of thread tables: not on the stack */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size ? size : 1), out[64];
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (cli_core_file_parse(&c, buf, size) == 0) {
        check(c.ntids >= 0 && c.ntids <= CORE_MAX_THREADS, "thread count past its table");
        for (int i = 0; i < c.nmaps; i++) {
            const unsigned char *p = (const unsigned char *)c.maps[i].path;
            check(p >= buf && p < buf + size && memchr(p, '\0', (size_t)(buf + size - p)),
                  "NT_FILE name not within the core");
            cli_core_file_read(&c, c.maps[i].start, out, sizeof out);
            cli_core_file_read(&c, c.maps[i].end - 1, out, 2); /* across its end */
        }
        for (int i = 0; i < c.nph; i++) {
            const Elf64_Phdr *p = &c.ph[i];
            if (p->p_type != 1 /* PT_LOAD */)
                continue;
            int first = 1; /* no earlier PT_LOAD covers its start: the read comes from it */
            for (int k = 0; k < i; k++)
                if (c.ph[k].p_type == 1 && p->p_vaddr >= c.ph[k].p_vaddr &&
                    p->p_vaddr - c.ph[k].p_vaddr < c.ph[k].p_memsz)
                    first = 0;
            long r = cli_core_file_read_one(&c, p->p_vaddr, out, sizeof out);
            if (r > 0 && first && p->p_filesz > 0 && p->p_memsz > 0)
                check(memcmp(out, buf + p->p_offset, (size_t)r) == 0,
                      "a segment's bytes read back different");
            cli_core_file_read(&c, p->p_vaddr + p->p_memsz - 1, out, 8);
            cli_core_file_read(&c, p->p_vaddr, out, sizeof out);
        }
        cli_core_file_read(&c, UINTPTR_MAX - 3, out, 8); /* a read whose end wraps */
        check(c.fname[16] == '\0' && c.psargs[80] == '\0', "NT_PRPSINFO names unterminated");
        char hex[160];
        const struct core_map *x = cli_core_file_exe_map(&c); /* the build-id notes it maps */
        if (x && cli_core_file_build_id(&c, x->start - x->off, hex, sizeof hex) == 0)
            check(strlen(hex) % 2 == 0 && strlen(hex) <= 128, "a build id past 64 bytes");
        for (int i = 0; i < c.nmaps && i < 8; i++)
            cli_core_file_build_id(&c, c.maps[i].start, hex, sizeof hex);
        cli_core_file_free(&c);
    }
    free(buf);
    return 0;
}
