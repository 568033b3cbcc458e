/* SPDX-License-Identifier: MIT */
/* The sampler's live tables (perf.samples, perf.stacks, perf.frames; docs/tables.md): their
 * columns, and fill functions that copy the sampler's in-memory data (prof/store.c) under its
 * mutex. WHERE stack_id = N reaches the stacks/frames fill functions (vtab.c pushes the
 * column down), so joins with perf.samples read one stack per lookup. Task thread; no GIL. */
#include "prof/prof.h"
#include "vtab.h"

const struct probe_column vtab_perf_samples_cols[7] = {
    {"ts", "REAL", "when the sample was taken, epoch seconds"},
    {"thread_id", "INTEGER", "native thread id"},
    {"thread_name", "TEXT", "threading name (else the OS name)"},
    {"stack_id", "INTEGER", "the merged stack (perf.stacks, perf.frames)"},
    {"on_cpu", "INTEGER", "1 when the thread was running (always in cpu mode), 0 off-CPU"},
    {"mode", "TEXT", "'cpu' (CPU-time timers) or 'wall' (wall-clock sampler)"},
    {"gil", "INTEGER", "1 when the thread held the main interpreter's GIL, 0 not, NULL unknown"},
};
const struct probe_column vtab_perf_stacks_cols[4] = {
    {"stack_id", "INTEGER", "stack id"},
    {"nframes", "INTEGER", "number of frames (perf.frames rows, collapsed ones included)"},
    {"folded", "TEXT",
     "frame names, outermost first, joined by ';' (folded-stacks format), "
     "CPython's own frames and the start-up at the root left out"},
    {"folded_all", "TEXT", "the same with every frame (flamegraph --native=all)"},
};
const struct probe_column vtab_perf_frames_cols[9] = {
    {"stack_id", "INTEGER", "stack id"},
    {"depth", "INTEGER", "0 for the innermost frame, then 1, 2... outwards"},
    {"kind", "TEXT", "'python' or 'native'"},
    {"name", "TEXT", "python: 'func (file:line)'; native: demangled symbol or module+0xOFFSET"},
    {"func", "TEXT", "function (NULL for an unknown native symbol)"},
    {"file", "TEXT", "python: source file; native: the object file"},
    {"line", "INTEGER", "python: current line; NULL for native"},
    {"address", "INTEGER", "native: the pc; NULL for python"},
    {"collapsed", "INTEGER",
     "1 when perf.stacks.folded leaves the frame out (CPython's own "
     "frames, start-up at the root), else 0"},
};

const struct probe_column vtab_perf_by_stack_cols[7] = {
    {"thread_id", "INTEGER", "native thread id"},
    {"thread_name", "TEXT", "threading name (else the OS name)"},
    {"stack_id", "INTEGER", "the merged stack (perf.stacks, perf.frames)"},
    {"samples", "INTEGER", "samples of this thread with this stack (count(*) in perf.samples)"},
    {"on_cpu", "INTEGER", "of which on CPU (sum(on_cpu))"},
    {"first_ts", "REAL", "the first such sample, epoch seconds (min(ts))"},
    {"last_ts", "REAL", "the last such sample, epoch seconds (max(ts))"},
};

int sql_vtab_perf_by_stack_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    return prof_stack_counts_fill(r, err);
}

int sql_vtab_perf_samples_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    return prof_samples_fill(r, err);
}

int sql_vtab_perf_stacks_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    return prof_stacks_fill(r, a->has_thread ? a->thread_id : -1, err);
}

int sql_vtab_perf_frames_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    return prof_frames_fill(r, a->has_thread ? a->thread_id : -1, err);
}
