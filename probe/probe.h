/* SPDX-License-Identifier: MIT */
/* libprobing's entry points (entry.c): the only symbols the library exports; `make
 * check-exports` compares `nm -D` with the names declared here. Loading the library starts the
 * probe (its constructor); these add a TCP listener and serve the Python package (probe/python,
 * through ctypes). Any thread; none needs the GIL. */
#ifndef PROBE_H
#define PROBE_H

#include <stddef.h>

#define PROBE_EXPORT __attribute__((visibility("default")))

/* Start serving (idempotent) and, if listen is a non-empty "HOST:PORT", also on TCP with token.
 * Returns 0, or a negative code with a one-line message in errbuf. */
PROBE_EXPORT int probing_start(const char *listen, const char *token, char *errbuf, size_t errlen);
/* The Unix socket path this probe serves ("" if none). */
PROBE_EXPORT const char *probing_socket_path(void);
/* The TCP address being served ("" if none). */
PROBE_EXPORT const char *probing_tcp_address(void);
/* The probe's version (PROBING_VERSION). */
PROBE_EXPORT const char *probing_version(void);
/* For collectors written in Python: declare "schema.name" with REAL columns named in a
 * comma-separated list, index it, append one row of n values. 0 or a negative code. */
PROBE_EXPORT int probing_history_define(const char *table, const char *columns, char *errbuf,
                                        size_t errlen);
PROBE_EXPORT int probing_history_index(const char *table, const char *columns, char *errbuf,
                                       size_t errlen);
PROBE_EXPORT int probing_history_append(const char *table, const double *values, int n);
PROBE_EXPORT int probing_history_rollup(const char *table, const char *group_cols,
                                        const char *value_cols, char *errbuf, size_t errlen);

#endif
