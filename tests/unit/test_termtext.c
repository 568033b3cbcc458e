/* SPDX-License-Identifier: MIT */
/* pb_term_escape (common/termtext.c): what the CLI shows of a target's strings on a terminal.
 * C0 controls (tab and newline too), DEL and C1 controls become visible escapes, bytes of no
 * valid UTF-8 sequence \xNN; valid UTF-8 (accents, CJK, emoji) is kept. */
#include <stdlib.h>
#include <string.h>

#include "pb.h"
#include "unit.h"

static void check(const char *in, const char *want)
{
    char *got = pb_term_escape(in);
    ASSERT_STR_EQ(got, want);
    ASSERT_EQ(pb_term_clean(in), strcmp(in, want) == 0);
    free(got);
}

TEST(termtext_keeps_plain_and_utf8)
{
    check("", "");
    check("MainThread", "MainThread");
    check("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x90\x8d \\x1b",
          "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x90\x8d \\x1b");
    check("\xc2\xa0\xc2\xbf", "\xc2\xa0\xc2\xbf"); /* U+00A0, U+00BF: past C1 */
}

TEST(termtext_escapes_controls)
{
    check("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07");
    check("a\x1b[2Jb", "a\\x1b[2Jb");
    check("a\nb\tc\rd", "a\\x0ab\\x09c\\x0dd");
    check("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
    check("\xc2\x9b"
          "31m \xc2\x80\xc2\x9f",
          "\\u009b31m \\u0080\\u009f"); /* C1 as UTF-8 */
}

TEST(termtext_lines_keeps_newline_and_tab)
{
    char *got = pb_term_escape_lines("a\nb\tc\rd\x1b[2J\xc2\x9b");
    ASSERT_STR_EQ(got, "a\nb\tc\\x0dd\\x1b[2J\\u009b");
    free(got);
}

TEST(termtext_escapes_invalid_utf8)
{
    check("\x9b"
          "31m",
          "\\x9b31m");                                 /* a raw C1 byte */
    check("\x80\xbf\xff\xfe", "\\x80\\xbf\\xff\\xfe"); /* lone continuation, never-valid bytes */
    check("\xc0\x9b", "\\xc0\\x9b");                   /* overlong ESC-like C1 */
    check("\xe0\x80\x9b", "\\xe0\\x80\\x9b");          /* overlong */
    check("\xed\xa0\x80", "\\xed\\xa0\\x80");          /* a surrogate */
    check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
    check("\xe4\xb8", "\\xe4\\xb8");                   /* cut at the end */
    check("\xc3"
          "A",
          "\\xc3A"); /* cut by an ASCII byte */
}
