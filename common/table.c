/* SPDX-License-Identifier: MIT */
/* Aligned text tables for query results, shared by the CLI (`query --format table`) and the
 * probe (the debug console's %sql). Widths count UTF-8 code points, not bytes; cells longer
 * than PB_TABLE_MAX_CELL are clipped with "..."; newlines and tabs in a cell are shown as
 * spaces so that one row stays one line. */
#include "pb.h"

#include <stdlib.h>
#include <string.h>

#define PB_TABLE_MAX_CELL 60

/* Code points in s (UTF-8 continuation bytes do not count). */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

/* Bytes of s making up at most max code points. */
static size_t prefix_bytes(const char *s, size_t max)
{
    size_t w = 0, i = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (w == max)
                break;
            w++;
        }
    }
    return i;
}

struct out {
    char *buf;
    size_t len, cap;
    int oom;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->oom)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 256;
        while (o->len + n + 1 > cap)
            cap *= 2;
        char *b = realloc(o->buf, cap);
        if (!b) {
            o->oom = 1;
            return;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void pad(struct out *o, size_t n)
{
    while (n--)
        put(o, " ", 1);
}

/* The cell as shown: NULL as "NULL", clipped, control characters as spaces. */
static void shown(const char *cell, char *buf, size_t n)
{
    if (!cell)
        cell = "NULL";
    size_t b = prefix_bytes(cell, PB_TABLE_MAX_CELL);
    if (cell[b] && b + 4 < n) {
        b = prefix_bytes(cell, PB_TABLE_MAX_CELL - 3);
        memcpy(buf, cell, b);
        memcpy(buf + b, "...", 4);
    } else {
        if (b >= n)
            b = n - 1;
        memcpy(buf, cell, b);
        buf[b] = '\0';
    }
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

char *pb_table_render(int ncols, const char *const *cols, size_t nrows, const char *const *cells)
{
    struct out o = {0};
    char cell[PB_TABLE_MAX_CELL * 4 + 8];
    if (ncols <= 0) {
        put(&o, "(no columns)\n", 13);
        return o.oom ? (free(o.buf), NULL) : o.buf;
    }
    size_t *w = calloc((size_t)ncols, sizeof *w);
    if (!w)
        return NULL;
    for (int c = 0; c < ncols; c++) {
        shown(cols[c], cell, sizeof cell);
        w[c] = width(cell);
    }
    for (size_t r = 0; r < nrows; r++)
        for (int c = 0; c < ncols; c++) {
            shown(cells[r * (size_t)ncols + (size_t)c], cell, sizeof cell);
            size_t cw = width(cell);
            if (cw > w[c])
                w[c] = cw;
        }
    for (size_t r = 0; r < nrows + 2; r++) {
        for (int c = 0; c < ncols; c++) {
            if (c)
                put(&o, "  ", 2);
            if (r == 1) {
                for (size_t i = 0; i < w[c]; i++)
                    put(&o, "-", 1);
                continue;
            }
            shown(r == 0 ? cols[c] : cells[(r - 2) * (size_t)ncols + (size_t)c], cell, sizeof cell);
            put(&o, cell, strlen(cell));
            if (c + 1 < ncols)
                pad(&o, w[c] - width(cell));
        }
        put(&o, "\n", 1);
    }
    free(w);
    if (o.oom) {
        free(o.buf);
        return NULL;
    }
    return o.buf;
}
