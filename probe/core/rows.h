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
};

void core_rows_free(struct probe_rows *r);
/* Builders for probe_rows (virtual tables, tests): append one cell to the current row. Return
 * 0 or -ENOMEM. Text is copied (NULL text adds a NULL cell). */
int core_rows_add_null(struct probe_rows *r);
int core_rows_add_int(struct probe_rows *r, long long v);
int core_rows_add_real(struct probe_rows *r, double v);
int core_rows_add_text(struct probe_rows *r, const char *s);

#endif
