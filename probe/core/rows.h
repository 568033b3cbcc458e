/* SPDX-License-Identifier: MIT */
/* Rows of values: what the probe's tables produce (the sampler's, the interpreter's, the
 * store's query results) and what the server turns into JSON. Plain C, any thread.
 * Ownership: a probe_rows owns its column names, cells and their strings; core_rows_free()
 * releases them (accepts NULL and zeroed structs). */
#ifndef PROBE_ROWS_H
#define PROBE_ROWS_H

#include <stddef.h>

enum { PROBE_V_NULL, PROBE_V_INT, PROBE_V_REAL, PROBE_V_TEXT };

/* One cell. Blobs are returned as hex text. s is owned by the containing probe_rows. */
struct probe_value {
    int type;
    long long i;
    double d;
    char *s;
};

struct probe_rows {
    int ncols;
    char **cols;
    size_t nrows;
    struct probe_value *cells; /* row-major, nrows * ncols */
    int truncated;             /* 1 when max rows or bytes cut the result */
    char note[160];            /* why it was cut ("" if not) */
    double elapsed_ms;         /* time spent in SQLite (prepare to finalize) */
    size_t ncells, cap;        /* cells filled and allocated (builders) */
    int err;                   /* the builders' first error (-ENOMEM), 0 if none */
};

void core_rows_free(struct probe_rows *r);
/* Builders for probe_rows (virtual tables, tests): append one cell to the current row. Text is
 * copied (NULL text adds a NULL cell). The error is sticky (as SQLite's sqlite3_str): the first
 * add that fails (out of memory) is remembered in r->err and every later add is a no-op, so a
 * caller adds its values unchecked and asks core_rows_error() once at the end. The cells added
 * before the failure stay until core_rows_free(), which also clears the error. */
void core_rows_add_null(struct probe_rows *r);
void core_rows_add_int(struct probe_rows *r, long long v);
void core_rows_add_real(struct probe_rows *r, double v);
void core_rows_add_text(struct probe_rows *r, const char *s);
/* The first error of the builders above: 0, or -ENOMEM. */
int core_rows_error(const struct probe_rows *r);

#endif
