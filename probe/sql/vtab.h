/* SPDX-License-Identifier: MIT */
/* Live tables (probe-internal): each is a row of vtab.c's catalogue with a fill function that
 * computes every row when the table is queried (task thread). Fill functions return 0 or a
 * negative code with err filled; err->msg becomes the query's error message, so it names the
 * table. */
#ifndef PROBE_VTAB_H
#define PROBE_VTAB_H

#include "store.h"

struct vtab_args {
    int has_thread; /* WHERE thread_id = N was given */
    long long thread_id;
    int want_lazy; /* the table's costly column (e.g. locals) is used */
};

typedef int (*vtab_fill)(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);

/* vtab_python.c (needs the GIL for some: each says) */
int sql_vtab_backtrace_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_native_bt_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_pythreads_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_objects_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_modules_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_gc_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_atasks_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_tracemalloc_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_cuda_memory_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
extern const struct probe_column vtab_cuda_memory_cols[11];
/* sql_compat.c: information_schema.tables, .columns, .df_settings (no GIL) */
int sql_vtab_is_tables_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_is_columns_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_is_settings_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
extern const struct probe_column vtab_is_tables_cols[6], vtab_is_columns_cols[8],
    vtab_is_settings_cols[3];
/* vtab_system.c (/proc, no GIL) */
int sql_vtab_process_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_systhreads_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
/* vtab_gpu.c (NVML, no GIL) */
int sql_vtab_gpus_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_gpu_procs_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
extern const struct probe_column vtab_gpus_cols[17], vtab_gpu_procs_cols[4];
/* vtab_perf.c (the sampler's data, prof/prof.h; no GIL) */
int sql_vtab_perf_samples_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_perf_stacks_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
int sql_vtab_perf_frames_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
extern const struct probe_column vtab_perf_samples_cols[7], vtab_perf_stacks_cols[4],
    vtab_perf_frames_cols[9];
int sql_vtab_perf_by_stack_fill(struct probe_rows *r, const struct vtab_args *a,
                                struct pb_err *err);
extern const struct probe_column vtab_perf_by_stack_cols[7];
/* Sample /proc/self for system.process_history: rss, vms, cpu_user, cpu_system, threads, fds. */
int sql_vtab_process_sample(double out[6]);
/* Kernel state of a thread of this process ("running", "sleeping"...; "unknown"). */
const char *sql_vtab_thread_state(long tid);

#endif
