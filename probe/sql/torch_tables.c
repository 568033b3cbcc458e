/* SPDX-License-Identifier: MIT */
/* The history tables that `perf --torch` fills (torch/torch.c appends their rows): their
 * names, columns and descriptions, defined here with the rest of the catalogue so that the
 * store can declare them (sql_compat.c's views read them) without depending on the tracer. */
#include "store.h"

static const struct probe_column trace_cols[] = {
    {"step", "INTEGER",
     "step number: from 1 at the first perf --torch in the process, rising across restarts"},
    {"seq", "INTEGER", "order of the event within its step (by time)"},
    {"module", "TEXT", "qualified name from named_modules() (a root module: its class name)"},
    {"module_type", "TEXT", "the module's class name"},
    {"stage", "TEXT", "forward_pre, forward_post, backward_pre or backward_post"},
    {"duration", "REAL", "seconds from the matching pre event (post events; NULL on pre)"},
    {"allocated", "INTEGER", "torch.cuda.memory_allocated() at the event (0 without CUDA)"},
    {"max_allocated", "INTEGER", "torch.cuda.max_memory_allocated() (0 without CUDA)"},
    {"cached", "INTEGER", "torch.cuda.memory_reserved() (0 without CUDA)"},
    {"max_cached", "INTEGER", "torch.cuda.max_memory_reserved() (0 without CUDA)"},
    {"rss", "INTEGER", "the process's resident set size in bytes at the event"},
    {"time_offset", "REAL", "seconds from the start of the step to the event"},
    {"rank", "INTEGER", "torch.distributed rank (RANK or get_rank()); NULL when not set"},
    {"thread_id", "INTEGER", "Python thread ident (threading.get_ident()) of the event"},
};
static const struct probe_column steps_cols[] = {
    {"step", "INTEGER",
     "step number: from 1 at the first perf --torch in the process, rising across restarts"},
    {"start_time", "REAL", "when the step started (epoch seconds)"},
    {"duration", "REAL", "seconds from the step's start to its end"},
    {"traced", "INTEGER", "1 when its modules were traced (one step in --every N)"},
    {"loss", "REAL", "a scalar returned by a top-level module (nn loss) in a traced step"},
    {"modules", "INTEGER", "module calls traced in the step (0 when not traced)"},
    {"rank", "INTEGER", "torch.distributed rank; NULL when not set"},
    {"detection", "TEXT", "what ended the step: optimizer or top-level (module call)"},
};
const int probe_torch_trace_ncols = (int)(sizeof trace_cols / sizeof trace_cols[0]);
const int probe_torch_steps_ncols = (int)(sizeof steps_cols / sizeof steps_cols[0]);

int sql_torch_tables_define(struct pb_err *err)
{
    int rc = sql_history_define(PROBE_TORCH_TRACE_TABLE,
                                "per-module PyTorch timing and memory of the "
                                "traced steps (perf --torch)",
                                trace_cols, probe_torch_trace_ncols, err);
    if (rc == 0)
        rc = sql_history_define(PROBE_TORCH_STEPS_TABLE, "one row per step while perf --torch runs",
                                steps_cols, probe_torch_steps_ncols, err);
    /* What users group by (docs/torch.md's queries): per module and stage, per step. */
    if (rc == 0)
        rc = sql_history_rollup(PROBE_TORCH_TRACE_TABLE, "module,stage",
                                "duration,allocated,max_allocated", err);
    if (rc == 0)
        rc = sql_history_rollup(PROBE_TORCH_TRACE_TABLE, "step",
                                "duration,allocated,"
                                "max_allocated,rss",
                                err);
    return rc;
}
