/* SPDX-License-Identifier: MIT */
/* The native frames' file:line cache between CLI runs (injector/cli/srccache.c): its lines
 * written and read back, the header that ties a file to one object, damaged lines skipped,
 * limits, and a real file in a cache directory (XDG_CACHE_HOME) written and reopened. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "injector/cli/srccache.h"
#include "unit.h"

static struct cli_srccache with_ident(const char *ident)
{
    struct cli_srccache c;
    memset(&c, 0, sizeof c);
    snprintf(c.ident, sizeof c.ident, "%s", ident);
    return c;
}

TEST(srccache_format_parse_roundtrip)
{
    struct cli_srccache a = with_ident("1 2 3 4.000000005 /lib/x.so");
    struct cli_srcent e1 = {.off = 0x85f16,
                            .line = 57,
                            .symoff = 0xc6,
                            .rc = 0,
                            .func = "__futex_abstimed_wait_common",
                            .file = "./nptl/futex-internal.c"};
    struct cli_srcent e2 = {.off = 0x10, .rc = -1, .func = "", .file = ""};
    struct cli_srcent e3 = {.off = 0x20, .line = 0, .symoff = 4, .rc = 0, .func = "f", .file = ""};
    char buf[4096];
    size_t k = (size_t)snprintf(buf, sizeof buf, "%s%s\n", CLI_SRCCACHE_MAGIC, a.ident);
    const struct cli_srcent *es[] = {&e1, &e2, &e3};
    for (int i = 0; i < 3; i++) {
        int n = cli_srccache_format(es[i], buf + k, sizeof buf - k);
        ASSERT(n > 0);
        k += (size_t)n;
    }
    ASSERT_EQ(cli_srccache_parse(&a, buf, k), 0);
    ASSERT_EQ(a.n, 3);
    const struct cli_srcent *f = cli_srccache_find(&a, 0x85f16);
    ASSERT(f && f->line == 57 && f->symoff == 0xc6 && f->rc == 0);
    ASSERT_STR_EQ(f->func, "__futex_abstimed_wait_common");
    ASSERT_STR_EQ(f->file, "./nptl/futex-internal.c");
    f = cli_srccache_find(&a, 0x10);
    ASSERT(f && f->rc == -1 && !f->func[0] && !f->file[0]);
    f = cli_srccache_find(&a, 0x20);
    ASSERT(f && f->line == 0 && f->symoff == 4);
    ASSERT(!cli_srccache_find(&a, 0x11));
    /* sorted by offset whatever the order written */
    ASSERT(a.v[0].off == 0x10 && a.v[1].off == 0x20 && a.v[2].off == 0x85f16);
    cli_srccache_free(&a);
}

TEST(srccache_header_ties_file_to_object)
{
    const char *file = CLI_SRCCACHE_MAGIC "1 2 3 4.000000005 /lib/x.so\n10 5 0 0\tf\ta.c\n";
    struct cli_srccache other = with_ident("1 2 3 4.000000006 /lib/x.so"); /* rebuilt */
    ASSERT_EQ(cli_srccache_parse(&other, file, strlen(file)), -1);
    ASSERT_EQ(other.n, 0);
    struct cli_srccache prefix = with_ident("1 2 3 4.000000005 /lib/x.s"); /* a prefix */
    ASSERT_EQ(cli_srccache_parse(&prefix, file, strlen(file)), -1);
    struct cli_srccache same = with_ident("1 2 3 4.000000005 /lib/x.so");
    ASSERT_EQ(cli_srccache_parse(&same, file, strlen(file)), 0);
    ASSERT_EQ(same.n, 1);
    cli_srccache_free(&same);
    struct cli_srccache empty = with_ident("x");
    ASSERT_EQ(cli_srccache_parse(&empty, "", 0), -1);
}

TEST(srccache_damaged_lines_skipped)
{
    const char *file = CLI_SRCCACHE_MAGIC "id\n"
                                          "zz 5 0 0\tf\ta.c\n"        /* not hex */
                                          "10 5 0 7\tf\ta.c\n"        /* rc neither 0 nor -1 */
                                          "11 -3 0 0\tf\ta.c\n"       /* negative line */
                                          "12 5 0 0\tf\n"             /* one tab */
                                          "13 5 0 0\tf\ta.c\textra\n" /* three tabs */
                                          "14 5 0 0 junk\tf\ta.c\n"   /* trailing junk */
                                          "15 5 0 0\tf\ta.c\n"        /* good */
                                          "15 6 0 0\tg\tb.c\n" /* repeated: the first stays */
                                          "16 5 0 0\tf\ta.c";  /* cut short: no newline */
    struct cli_srccache c = with_ident("id");
    ASSERT_EQ(cli_srccache_parse(&c, file, strlen(file)), 0);
    ASSERT_EQ(c.n, 1);
    const struct cli_srcent *f = cli_srccache_find(&c, 0x15);
    ASSERT(f && f->line == 5);
    ASSERT_STR_EQ(f->func, "f");
    cli_srccache_free(&c);
}

TEST(srccache_refuses_tabs_and_newlines)
{
    struct cli_srccache c = with_ident("id");
    struct cli_srcent e = {.off = 1, .func = "a\tb", .file = ""};
    ASSERT_EQ(cli_srccache_add(&c, &e), -1);
    e.func = "ok", e.file = "x\ny";
    ASSERT_EQ(cli_srccache_add(&c, &e), -1);
    ASSERT_EQ(c.n, 0);
    char small[8];
    e.file = "x.c";
    ASSERT_EQ(cli_srccache_format(&e, small, sizeof small), -1);
}

TEST(srccache_file_written_and_reopened)
{
    char dir[] = "/tmp/srccache-unit-XXXXXX", obj[256], cache[300];
    ASSERT(mkdtemp(dir));
    snprintf(obj, sizeof obj, "%s/libobj.so", dir);
    FILE *f = fopen(obj, "w");
    ASSERT(f && fputs("not really an ELF file", f) >= 0 && fclose(f) == 0);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    setenv("XDG_CACHE_HOME", cache, 1);
    unsetenv("PROBING_NO_SRCCACHE");
    struct cli_srccache c;
    ASSERT_EQ(cli_srccache_open(&c, 0, obj), 0);
    ASSERT(c.path[0] && c.n == 0);
    struct cli_srcent e = {
        .off = 0x42, .line = 7, .symoff = 2, .rc = 0, .func = "fn", .file = "src.c"};
    cli_srccache_put(&c, &e);
    struct stat st;
    ASSERT_EQ(stat(c.path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    char probing_dir[400];
    snprintf(probing_dir, sizeof probing_dir, "%s/probing/srcline", cache);
    ASSERT_EQ(stat(probing_dir, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);
    char path[sizeof c.path];
    snprintf(path, sizeof path, "%s", c.path);
    cli_srccache_free(&c);

    struct cli_srccache again;
    ASSERT_EQ(cli_srccache_open(&again, 0, obj), 0);
    ASSERT_STR_EQ(again.path, path);
    const struct cli_srcent *g = cli_srccache_find(&again, 0x42);
    ASSERT(g && g->line == 7);
    ASSERT_STR_EQ(g->file, "src.c");
    cli_srccache_free(&again);

    /* the object changes (another size): another key, nothing known */
    f = fopen(obj, "a");
    ASSERT(f && fputs(" grown", f) >= 0 && fclose(f) == 0);
    struct cli_srccache changed;
    ASSERT_EQ(cli_srccache_open(&changed, 0, obj), 0);
    ASSERT(strcmp(changed.path, path) != 0 && changed.n == 0);
    cli_srccache_free(&changed);

    /* PROBING_NO_SRCCACHE: none at all */
    setenv("PROBING_NO_SRCCACHE", "1", 1);
    struct cli_srccache off;
    ASSERT_EQ(cli_srccache_open(&off, 0, obj), -1);
    unsetenv("PROBING_NO_SRCCACHE");
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}
