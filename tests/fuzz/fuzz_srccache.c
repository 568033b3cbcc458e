/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the reader of the CLI's file:line cache (injector/cli/srccache.c,
 * cli_srccache_parse), whose files sit in the user's home and are read as untrusted bytes. The
 * first input line is the identity the cache expects (so the fuzzer can match the header), the
 * rest the file. Checks, beyond memory safety: at most CLI_SRCCACHE_MAX entries, sorted by
 * offset without repeats, each found by its offset, with no tab or newline in its strings,
 * and each written back as a line the parser reads as the same entry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/cli/srccache.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_srccache: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    struct cli_srccache c;
    memset(&c, 0, sizeof c);
    size_t il = nl ? (size_t)(nl - (const char *)data) : 0;
    if (!nl || il >= sizeof c.ident || memchr(data, '\0', il))
        return 0;
    memcpy(c.ident, data, il);
    c.ident[il] = '\0';
    /* the file in a buffer of exactly its size */
    size_t n = size - il - 1;
    char *buf = malloc(n ? n : 1);
    if (!buf)
        return 0;
    memcpy(buf, nl + 1, n);
    if (cli_srccache_parse(&c, buf, n) == 0) {
        check(c.n <= CLI_SRCCACHE_MAX, "more entries than the limit");
        for (size_t i = 0; i < c.n; i++) {
            const struct cli_srcent *e = &c.v[i];
            check(i == 0 || c.v[i - 1].off < e->off, "entries not sorted or repeated");
            check(cli_srccache_find(&c, e->off) == e, "an entry not found by its offset");
            check(!strpbrk(e->func, "\t\n") && !strpbrk(e->file, "\t\n"), "tab or newline kept");
            check(e->rc == 0 || e->rc == -1, "rc neither 0 nor -1");
            char line[4096 + 600];
            int k = snprintf(line, sizeof line, "%s%s\n", CLI_SRCCACHE_MAGIC, c.ident);
            int w = cli_srccache_format(e, line + k, sizeof line - (size_t)k);
            if (w > 0) {
                struct cli_srccache back;
                memset(&back, 0, sizeof back);
                memcpy(back.ident, c.ident, sizeof back.ident);
                check(cli_srccache_parse(&back, line, (size_t)(k + w)) == 0 && back.n == 1 &&
                          back.v[0].off == e->off && back.v[0].line == e->line &&
                          back.v[0].symoff == e->symoff && back.v[0].rc == e->rc &&
                          strcmp(back.v[0].func, e->func) == 0 &&
                          strcmp(back.v[0].file, e->file) == 0,
                      "an entry written back reads differently");
                cli_srccache_free(&back);
            }
        }
    } else {
        check(c.n == 0, "entries from a file refused");
    }
    cli_srccache_free(&c);
    free(buf);
    return 0;
}
