/* SPDX-License-Identifier: MIT */
/* Text from a target made safe for a terminal: the target chooses its function, file, thread
 * and module names, its argv and environment, and the strings its tables hold, and a terminal
 * obeys the control characters in them (retitle, clear, rewrite the screen, answer back). Every
 * C0 control (tab and newline included: one field stays on one line), DEL and every C1 control
 * (U+0080-U+009F) is shown as a visible escape, \x1b or \u009b; bytes that are not valid UTF-8
 * as \xNN; valid UTF-8 is kept as it is. A backslash is kept: the output is for reading, not for
 * parsing back (JSON output is exact). */
#include "pb.h"

#include <stdlib.h>
#include <string.h>

/* Bytes of the valid UTF-8 sequence at s (1 to 4), or 0 when s does not start one: no overlong
 * forms, no surrogates, nothing past U+10FFFF (RFC 3629). *cp gets its code point. */
static int utf8_seq(const unsigned char *s, unsigned long *cp)
{
    unsigned char b = s[0];
    int n, i;
    unsigned long c, min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF)
        n = 2, c = b & 0x1F, min = 0x80;
    else if (b >= 0xE0 && b <= 0xEF)
        n = 3, c = b & 0x0F, min = 0x800;
    else if (b >= 0xF0 && b <= 0xF4)
        n = 4, c = b & 0x07, min = 0x10000;
    else
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) /* the NUL ends it here too */
            return 0;
        c = c << 6 | (s[i] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return n;
}

/* Bytes the escaped form of s takes (without the NUL); nothing written when out is NULL.
 * lines: newline and tab are kept. */
static size_t escape(const char *str, char *out, int lines)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    size_t len = 0;
    while (*s) {
        unsigned long cp;
        int n = utf8_seq(s, &cp);
        if (n == 0 || (cp < 0x20 && !(lines && (cp == '\n' || cp == '\t'))) || cp == 0x7F ||
            (cp >= 0x80 && cp <= 0x9F)) {
            /* \xNN for a byte (a C0 control, DEL, a byte of no valid sequence), \u00NN for a
             * C1 control written as UTF-8 */
            const char *pre = n == 2 ? "\\u00" : "\\x";
            unsigned v = n == 2 ? (unsigned)cp : s[0];
            size_t k = strlen(pre);
            if (out) {
                memcpy(out + len, pre, k);
                out[len + k] = hex[v >> 4];
                out[len + k + 1] = hex[v & 15];
            }
            len += k + 2;
            s += n ? n : 1;
            continue;
        }
        if (out)
            memcpy(out + len, s, (size_t)n);
        len += (size_t)n;
        s += n;
    }
    return len;
}

int pb_term_clean(const char *s)
{
    return escape(s, NULL, 0) == strlen(s);
}

static char *escaped(const char *s, int lines)
{
    size_t n = escape(s, NULL, lines);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    escape(s, out, lines);
    out[n] = '\0';
    return out;
}

char *pb_term_escape(const char *s)
{
    return escaped(s, 0);
}

char *pb_term_escape_lines(const char *s)
{
    return escaped(s, 1);
}
