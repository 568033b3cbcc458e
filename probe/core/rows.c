/* SPDX-License-Identifier: MIT */
/* Building and releasing rows (struct probe_rows, rows.h). Plain C with no SQLite or CPython
 * dependency, so the server's unit tests and the fuzz harnesses link it next to a fake store.
 * The builders' error is sticky (rows.h): after the first failure every add is a no-op. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rows.h"

/* The next free cell, growing the array; nrows follows the filled cells. NULL when the rows
 * already failed or the array cannot grow (the error is then remembered). */
static struct probe_value *new_cell(struct probe_rows *r)
{
    if (r->err)
        return NULL;
    if (r->ncells == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct probe_value *c = realloc(r->cells, cap * sizeof *c);
        if (!c) {
            r->err = -ENOMEM;
            return NULL;
        }
        r->cells = c;
        r->cap = cap;
    }
    struct probe_value *v = &r->cells[r->ncells++];
    memset(v, 0, sizeof *v);
    if (r->ncols > 0)
        r->nrows = r->ncells / (size_t)r->ncols;
    return v;
}

void core_rows_add_null(struct probe_rows *r)
{
    new_cell(r);
}

void core_rows_add_int(struct probe_rows *r, long long v)
{
    struct probe_value *c = new_cell(r);
    if (!c)
        return;
    c->type = PROBE_V_INT;
    c->i = v;
    c->d = (double)v;
}

void core_rows_add_real(struct probe_rows *r, double v)
{
    struct probe_value *c = new_cell(r);
    if (!c)
        return;
    c->type = PROBE_V_REAL;
    c->d = v;
    c->i = (long long)v;
}

void core_rows_add_text(struct probe_rows *r, const char *s)
{
    if (!s) {
        core_rows_add_null(r);
        return;
    }
    if (r->err)
        return;
    char *copy = strdup(s);
    if (!copy) {
        r->err = -ENOMEM;
        return;
    }
    struct probe_value *c = new_cell(r);
    if (!c) {
        free(copy);
        return;
    }
    c->type = PROBE_V_TEXT;
    c->s = copy;
}

int core_rows_error(const struct probe_rows *r)
{
    return r->err;
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
