/* SPDX-License-Identifier: MIT */
/* Building and releasing rows (struct probe_rows, rows.h). Plain C with no SQLite or CPython
 * dependency, so the server's unit tests and the fuzz harnesses link it next to a fake store. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

/* The next free cell, growing the array; nrows follows the filled cells. */
static struct probe_value *new_cell(struct probe_rows *r)
{
    if (r->ncells == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct probe_value *c = realloc(r->cells, cap * sizeof *c);
        if (!c)
            return NULL;
        r->cells = c;
        r->cap = cap;
    }
    struct probe_value *v = &r->cells[r->ncells++];
    memset(v, 0, sizeof *v);
    if (r->ncols > 0)
        r->nrows = r->ncells / (size_t)r->ncols;
    return v;
}

int core_rows_add_null(struct probe_rows *r)
{
    return new_cell(r) ? 0 : -ENOMEM;
}

int core_rows_add_int(struct probe_rows *r, long long v)
{
    struct probe_value *c = new_cell(r);
    if (!c)
        return -ENOMEM;
    c->type = PROBE_V_INT;
    c->i = v;
    c->d = (double)v;
    return 0;
}

int core_rows_add_real(struct probe_rows *r, double v)
{
    struct probe_value *c = new_cell(r);
    if (!c)
        return -ENOMEM;
    c->type = PROBE_V_REAL;
    c->d = v;
    c->i = (long long)v;
    return 0;
}

int core_rows_add_text(struct probe_rows *r, const char *s)
{
    if (!s)
        return core_rows_add_null(r);
    char *copy = strdup(s);
    if (!copy)
        return -ENOMEM;
    struct probe_value *c = new_cell(r);
    if (!c) {
        free(copy);
        return -ENOMEM;
    }
    c->type = PROBE_V_TEXT;
    c->s = copy;
    return 0;
}

void core_rows_free(struct probe_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncells && r->cells; i++)
        free(r->cells[i].s);
    free(r->cells);
    for (int c = 0; c < r->ncols && r->cols; c++)
        free(r->cols[c]);
    free(r->cols);
    memset(r, 0, sizeof *r);
}
