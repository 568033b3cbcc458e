/* SPDX-License-Identifier: MIT */
/* Live tables as SQLite virtual tables: one module ("probing") whose tables are rows of the
 * catalogue below. A query materialises the table in xFilter by calling its fill function
 * (vtab_python.c, vtab_system.c, and probing.settings / probing.tables here), then iterates
 * the rows. xBestIndex passes `thread_id = N` down (python.backtrace) and tells the fill
 * function whether the costly column (locals) is wanted. Task thread only. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/settings.h"
#include "vtab.h"

static int settings_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);
static int tables_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err);

static int comm_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    return core_comm_fill(r, err);
}

static const struct probe_column backtrace_cols[] = {
    {"func", "TEXT", "function (qualified name on 3.11+)"},
    {"file", "TEXT", "source file"},
    {"lineno", "INTEGER", "current line"},
    {"depth", "INTEGER", "0 for the innermost frame, then 1, 2... outwards"},
    {"thread_id", "INTEGER",
     "native thread id (as in python.threads); main thread unless "
     "given in WHERE thread_id = N"},
    {"frame_type", "TEXT", "'python'"},
    {"locals", "TEXT", "JSON object {name: bounded repr}; NULL when the GIL could not be had"},
};
static const struct probe_column native_bt_cols[] = {
    {"thread_id", "INTEGER",
     "native thread id (as in python.threads); every Python thread "
     "unless given in WHERE thread_id = N"},
    {"depth", "INTEGER", "0 for the innermost frame, then 1, 2... outwards (per stack)"},
    {"kind", "TEXT", "'python' or 'native'"},
    {"func", "TEXT", "function: Python's qualified name, or the native symbol (NULL unknown)"},
    {"file", "TEXT", "Python source file (NULL for native frames)"},
    {"lineno", "INTEGER", "Python line (NULL for native frames)"},
    {"module", "TEXT", "native: the object's path (NULL for Python frames)"},
    {"offset", "INTEGER", "native: offset into the function (NULL for Python frames)"},
    {"address", "INTEGER", "native: the pc or return address (NULL for Python frames)"},
    {"stack", "TEXT",
     "'merged'; when the two stacks could not be matched, 'native' and "
     "'python' rows, each with its own depths"},
};
static const struct probe_column pythreads_cols[] = {
    {"thread_id", "INTEGER",
     "native thread id (the DAP thread id; a subinterpreter's thread "
     "state adds interp_id * 4194304)"},
    {"ident", "INTEGER", "threading.get_ident()"},
    {"name", "TEXT", "threading name, or the OS name when the GIL cannot be had"},
    {"native_id", "INTEGER", "kernel thread id (NULL if unknown)"},
    {"holds_gil", "INTEGER", "1 if this thread holds the GIL"},
    {"daemon", "INTEGER", "1/0, NULL when unknown (needs the GIL)"},
    {"is_main", "INTEGER", "1 for the main thread"},
    {"state", "TEXT", "kernel state: running, sleeping, disk-wait, stopped, zombie..."},
    {"name_source", "TEXT", "'threading' or 'os'"},
    {"interp_id", "INTEGER", "its interpreter's id: 0 the main one, else a subinterpreter's"},
};
static const struct probe_column objects_cols[] = {
    {"type", "TEXT", "type name (tp_name)"},
    {"count", "INTEGER", "live objects of this type tracked by the garbage collector"},
    {"size", "INTEGER", "their shallow size in bytes (basic size + items)"},
};
static const struct probe_column modules_cols[] = {
    {"name", "TEXT", "key in sys.modules"},
    {"file", "TEXT", "__file__, NULL for built-in modules"},
    {"version", "TEXT", "__version__ when it is a string, else NULL"},
};
static const struct probe_column gc_cols[] = {
    {"generation", "INTEGER", "0, 1, 2"},
    {"count", "INTEGER", "objects allocated since the last collection (gc.get_count())"},
    {"threshold", "INTEGER", "gc.get_threshold()"},
    {"collections", "INTEGER", "collections so far (gc.get_stats())"},
    {"collected", "INTEGER", "objects collected so far"},
    {"uncollectable", "INTEGER", "uncollectable objects found so far"},
    {"enabled", "INTEGER", "gc.isenabled()"},
};
static const struct probe_column atasks_cols[] = {
    {"thread_id", "INTEGER",
     "the thread running the task's event loop (as in python.threads); "
     "NULL when that loop is not running"},
    {"task", "TEXT", "the task's id in this answer ('0x...', its address)"},
    {"name", "TEXT", "Task.get_name()"},
    {"state", "TEXT", "'pending', 'done' or 'cancelled'"},
    {"running", "INTEGER", "1 when its coroutine runs now (its frames are in the thread's stack)"},
    {"coroutine", "TEXT", "the task's coroutine (qualified name)"},
    {"func", "TEXT", "the innermost coroutine's function, where the task is suspended"},
    {"file", "TEXT", "its source file"},
    {"lineno", "INTEGER", "its line"},
    {"stack", "TEXT", "the coroutine chain, innermost first: 'func (file:line)', ';' between"},
    {"awaits_type", "TEXT",
     "the type of the future the task is blocked on (_asyncio.Future, "
     "_GatheringFuture, a task's type), NULL when none"},
    {"awaits", "TEXT",
     "the tasks it awaits (that future when it is a task, a gather's "
     "children): ids, ',' between"},
    {"awaited_by", "TEXT", "the tasks that await it: ids, ',' between"},
    {"cycle", "INTEGER", "the await cycle (deadlock) it is part of: 1, 2...; NULL none"},
    {"loop", "TEXT", "its event loop's id ('0x...')"},
};
static const struct probe_column process_cols[] = {
    {"pid", "INTEGER", "process id"},
    {"rss", "INTEGER", "resident set size, bytes"},
    {"vms", "INTEGER", "virtual memory size, bytes"},
    {"peak_rss", "INTEGER", "peak resident set size (VmHWM), bytes"},
    {"cpu_user", "REAL", "user CPU time, seconds"},
    {"cpu_system", "REAL", "system CPU time, seconds"},
    {"threads", "INTEGER", "number of threads (all, not only Python's)"},
    {"open_fds", "INTEGER", "open file descriptors"},
    {"uptime_s", "REAL", "seconds since the process started"},
};
static const struct probe_column systhreads_cols[] = {
    {"tid", "INTEGER", "kernel thread id"},
    {"name", "TEXT", "thread name (comm)"},
    {"state", "TEXT", "running, sleeping, disk-wait, stopped, zombie, idle..."},
    {"cpu_user", "REAL", "user CPU time, seconds"},
    {"cpu_system", "REAL", "system CPU time, seconds"},
    {"processor", "INTEGER", "CPU it last ran on"},
};
static const struct probe_column tracemalloc_cols[] = {
    {"file", "TEXT", "source file of the allocation site"},
    {"lineno", "INTEGER", "line of the allocation site"},
    {"size", "INTEGER", "bytes allocated there and still alive"},
    {"count", "INTEGER", "live blocks allocated there"},
};
static const struct probe_column collectives_cols[] = {
    {"id", "INTEGER", "record number in this process (1, 2, ... since perf --comm started)"},
    {"rank", "INTEGER", "this process's global rank (torch.distributed.get_rank())"},
    {"pg", "TEXT", "process group name (torch's: '0' is the default group)"},
    {"group_ranks", "TEXT", "the group's global ranks, '0,1,2,3'"},
    {"group_size", "INTEGER", "number of ranks in the group"},
    {"seq", "INTEGER",
     "collective sequence number in the group: torch's own (the same on "
     "every rank) when seq_source is 'torch'; else counted by the recorder"},
    {"seq_source", "TEXT",
     "'torch' (ProcessGroup._get_sequence_number_for_group) or "
     "'recorder' (point-to-point calls, backends without one)"},
    {"op", "TEXT", "all_reduce, all_gather, broadcast, barrier, send, recv, isend, irecv, ..."},
    {"peer", "INTEGER",
     "send/recv/isend/irecv: the other rank (NULL for a recv from any "
     "source); broadcast, reduce, gather, scatter: the root; NULL otherwise "
     "(global ranks)"},
    {"sizes", "TEXT", "tensor shapes, '4x1024', ';' between tensors of a list"},
    {"dtype", "TEXT", "element type of the first tensor (float32, ...)"},
    {"bytes", "INTEGER", "bytes of the input tensors"},
    {"async", "INTEGER", "1 when called with async_op=True, and isend/irecv"},
    {"state", "TEXT", "'running' (not returned, or async work not completed), 'done', 'failed'"},
    {"start_time", "REAL", "when the call started, epoch seconds"},
    {"end_time", "REAL",
     "when it returned (async: when its Work completed or its wait() "
     "returned); NULL while running"},
    {"duration_ms", "REAL", "end_time - start_time in ms; while running, the time so far"},
    {"thread_id", "INTEGER", "native thread id of the caller"},
    {"file", "TEXT", "calling Python frame (outside torch.distributed): source file"},
    {"line", "INTEGER", "its line"},
    {"func", "TEXT", "its function"},
};
static const struct probe_column settings_cols[] = {
    {"name", "TEXT", "setting key (probing config KEY=VALUE)"},
    {"value", "TEXT", "current value"},
    {"default_value", "TEXT", "default value"},
    {"allowed", "TEXT", "allowed range or values"},
    {"description", "TEXT", "what it does"},
};
static const struct probe_column tables_cols[] = {
    {"table_name", "TEXT", "schema.table"},
    {"kind", "TEXT",
     "'live' (computed when queried), 'history' (rows kept by a collector), "
     "'rollup' (a history table's GROUP BY kept as rows arrive) or 'view' (the original "
     "Probing's names)"},
    {"column_name", "TEXT", "column"},
    {"type", "TEXT", "INTEGER, REAL or TEXT"},
    {"description", "TEXT", "what the column holds"},
    {"table_description", "TEXT", "what the table holds"},
};

int probe_vtab_failed;
char probe_vtab_note[200];

struct vtab_def {
    struct probe_table_info info;
    vtab_fill fill;
    int thread_col; /* column pushed down as WHERE col = N, -1 none */
    int lazy_col;   /* costly column, -1 none */
};

#define COLS(a) a, (int)(sizeof a / sizeof a[0])
static const struct vtab_def defs[] = {
    {{"python.backtrace", "live",
      "Python frames of one thread (the main thread unless "
      "WHERE thread_id = N), innermost first; read without the GIL, locals need it",
      COLS(backtrace_cols)},
     sql_vtab_backtrace_fill,
     4,
     6},
    {{"python.native_backtrace", "live",
      "native and Python frames merged, innermost first, of "
      "every Python thread, then of every thread that runs no Python (or WHERE thread_id = N); "
      "CPython's call machinery left out; read without the GIL",
      COLS(native_bt_cols)},
     sql_vtab_native_bt_fill,
     0,
     -1},
    {{"python.threads", "live",
      "Python threads; names and daemon from threading when the GIL "
      "can be had, else from the OS",
      COLS(pythreads_cols)},
     sql_vtab_pythreads_fill,
     -1,
     -1},
    {{"python.objects", "live",
      "live objects tracked by the garbage collector, by type "
      "(walks gc.get_objects() under the GIL: cost grows with the heap)",
      COLS(objects_cols)},
     sql_vtab_objects_fill,
     -1,
     -1},
    {{"python.modules", "live", "imported modules (sys.modules; needs the GIL)",
      COLS(modules_cols)},
     sql_vtab_modules_fill,
     -1,
     -1},
    {{"python.gc", "live", "garbage collector state per generation (needs the GIL)", COLS(gc_cols)},
     sql_vtab_gc_fill,
     -1,
     -1},
    {{"python.asyncio_tasks", "live",
      "every asyncio task of every event loop: state, where its "
      "coroutines are suspended, what it awaits and who awaits it (needs the GIL)",
      COLS(atasks_cols)},
     sql_vtab_atasks_fill,
     -1,
     -1},
    {{"system.process", "live", "this process from /proc: memory, CPU, threads, descriptors",
      COLS(process_cols)},
     sql_vtab_process_fill,
     -1,
     -1},
    {{"system.threads", "live", "every native thread from /proc/self/task: CPU time and state",
      COLS(systhreads_cols)},
     sql_vtab_systhreads_fill,
     -1,
     -1},
    {{"system.gpus", "live",
      "every NVIDIA GPU of the machine from NVML: utilisation, memory, "
      "temperature, power, clocks, throttling, ECC and XID counts; empty without an NVIDIA GPU "
      "and driver (the query's note says why)",
      vtab_gpus_cols, 17},
     sql_vtab_gpus_fill,
     -1,
     -1},
    {{"system.gpu_processes", "live",
      "every process that holds memory on an NVIDIA GPU (NVML's "
      "compute processes: which rank uses which GPU); empty without a GPU and driver",
      vtab_gpu_procs_cols, 4},
     sql_vtab_gpu_procs_fill,
     -1,
     -1},
    {{"perf.samples", "live",
      "perf --cc samples: one row per sample of a thread (kept after "
      "perf --stop until the next start)",
      vtab_perf_samples_cols, 7},
     sql_vtab_perf_samples_fill,
     -1,
     -1},
    {{"perf.samples_by_stack", "live",
      "perf --cc samples counted per thread and stack, kept "
      "as samples arrive (the GROUP BY thread_id, stack_id of perf.samples)",
      vtab_perf_by_stack_cols, 7},
     sql_vtab_perf_by_stack_fill,
     -1,
     -1},
    {{"perf.stacks", "live",
      "perf --cc: each distinct merged native+Python stack, folded "
      "(outermost frame first, ';' between frames)",
      vtab_perf_stacks_cols, 4},
     sql_vtab_perf_stacks_fill,
     0,
     -1},
    {{"perf.frames", "live", "perf --cc: the frames of every stack, depth 0 innermost",
      vtab_perf_frames_cols, 9},
     sql_vtab_perf_frames_fill,
     0,
     -1},
    {{"python.tracemalloc", "live",
      "tracemalloc's live allocations by line, largest first; "
      "empty unless the target traces (probing -p PID memory --trace start); needs the GIL",
      COLS(tracemalloc_cols)},
     sql_vtab_tracemalloc_fill,
     -1,
     -1},
    {{"python.cuda_memory", "live",
      "torch's CUDA caching allocator per device "
      "(torch.cuda.memory_stats): allocated, reserved, peaks, fragmentation, retries, OOMs; "
      "empty unless torch.cuda is initialised in the target (a query never initialises it; "
      "the note says why); needs the GIL",
      vtab_cuda_memory_cols, 11},
     sql_vtab_cuda_memory_fill,
     -1,
     -1},
    {{"torch.collectives", "live",
      "perf --comm: every torch.distributed collective and "
      "point-to-point call, oldest first (a ring of comm.max_records; kept after perf --stop "
      "until the next start); read without the GIL",
      COLS(collectives_cols)},
     comm_fill,
     -1,
     -1},
    {{"probing.settings", "live", "every runtime setting (change with probing config)",
      COLS(settings_cols)},
     settings_fill,
     -1,
     -1},
    {{"probing.tables", "live", "every table and column with a description", COLS(tables_cols)},
     tables_fill,
     -1,
     -1},
    {{"information_schema.tables", "live",
      "every table and view (the SQL standard's view of "
      "probing.tables)",
      vtab_is_tables_cols, 6},
     sql_vtab_is_tables_fill,
     -1,
     -1},
    {{"information_schema.columns", "live",
      "every column of every table and view (the SQL "
      "standard's view of probing.tables)",
      vtab_is_columns_cols, 8},
     sql_vtab_is_columns_fill,
     -1,
     -1},
    {{"information_schema.df_settings", "live",
      "every runtime setting as name and value (the "
      "original Probing's name for probing.settings)",
      vtab_is_settings_cols, 3},
     sql_vtab_is_settings_fill,
     -1,
     -1},
};
#define NDEFS ((int)(sizeof defs / sizeof defs[0]))

int sql_vtab_count(void)
{
    return NDEFS;
}

const struct probe_table_info *sql_vtab_info(int i)
{
    return i >= 0 && i < NDEFS ? &defs[i].info : NULL;
}

/* ---- probing.settings, probing.tables ---- */

static int settings_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    struct probe_setting_view v;
    for (int i = 0; !core_rows_error(r) && core_setting_view_get(i, &v) == 0; i++) {
        core_rows_add_text(r, v.name);
        core_rows_add_text(r, v.value);
        core_rows_add_text(r, v.dflt);
        core_rows_add_text(r, v.allowed);
        core_rows_add_text(r, v.description);
    }
    return core_rows_error(r);
}

static int table_rows(struct probe_rows *r, const struct probe_table_info *t, int with_ts)
{
    for (int c = -with_ts; !core_rows_error(r) && c < t->ncols; c++) {
        static const struct probe_column ts = {"ts", "REAL", "sample time, epoch seconds"};
        static const struct probe_column rts = {"ts", "REAL",
                                                "the group's latest row, epoch "
                                                "seconds (max(ts))"};
        const struct probe_column *col = c >= 0                      ? &t->cols[c]
                                         : strcmp(t->kind, "rollup") ? &ts
                                                                     : &rts;
        core_rows_add_text(r, t->name);
        core_rows_add_text(r, t->kind);
        core_rows_add_text(r, col->name);
        core_rows_add_text(r, col->type);
        core_rows_add_text(r, col->description);
        core_rows_add_text(r, t->description);
    }
    return core_rows_error(r);
}

static int tables_fill(struct probe_rows *r, const struct vtab_args *a, struct pb_err *err)
{
    (void)a;
    (void)err;
    int rc = 0;
    for (int i = 0; rc == 0 && i < NDEFS; i++)
        rc = table_rows(r, &defs[i].info, 0);
    for (int i = 0; rc == 0 && i < sql_history_count(); i++)
        rc = table_rows(r, sql_history_info(i), 1);
    for (int i = 0; rc == 0 && i < sql_compat_count(); i++)
        rc = table_rows(r, sql_compat_info(i), 0);
    return rc;
}

/* ---- the module ---- */

struct vt {
    sqlite3_vtab base;
    const struct vtab_def *def;
};

struct cur {
    sqlite3_vtab_cursor base;
    struct probe_rows rows;
    size_t row;
};

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **errmsg)
{
    (void)aux;
    char name[96];
    if (argc < 3)
        return SQLITE_ERROR;
    snprintf(name, sizeof name, "%s.%s", argv[1], argv[2]);
    const struct vtab_def *def = NULL;
    for (int i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].info.name, name) == 0)
            def = &defs[i];
    if (!def) {
        *errmsg = sqlite3_mprintf("no live table %s", name);
        return SQLITE_ERROR;
    }
    sqlite3_str *s = sqlite3_str_new(db);
    sqlite3_str_appendf(s, "CREATE TABLE x(");
    for (int c = 0; c < def->info.ncols; c++)
        sqlite3_str_appendf(s, "%s\"%w\" %s", c ? ", " : "", def->info.cols[c].name,
                            def->info.cols[c].type);
    sqlite3_str_appendf(s, ")");
    char *sql = sqlite3_str_finish(s);
    if (!sql)
        return SQLITE_NOMEM;
    int rc = sqlite3_declare_vtab(db, sql);
    sqlite3_free(sql);
    if (rc != SQLITE_OK)
        return rc;
    struct vt *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->def = def;
    *out = &v->base;
    return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *base)
{
    sqlite3_free(base);
    return SQLITE_OK;
}

static int vt_best_index(sqlite3_vtab *base, sqlite3_index_info *ii)
{
    const struct vtab_def *def = ((struct vt *)base)->def;
    int idx = 0;
    for (int i = 0; i < ii->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &ii->aConstraint[i];
        if (c->usable && c->op == SQLITE_INDEX_CONSTRAINT_EQ && def->thread_col >= 0 &&
            c->iColumn == def->thread_col && !(idx & 1)) {
            ii->aConstraintUsage[i].argvIndex = 1;
            ii->aConstraintUsage[i].omit = 0; /* SQLite re-checks; harmless */
            idx |= 1;
        }
    }
    if (def->lazy_col >= 0 && (ii->colUsed & ((sqlite3_uint64)1 << def->lazy_col)))
        idx |= 2;
    ii->idxNum = idx;
    ii->estimatedCost = (idx & 1) ? 10 : 1000;
    ii->estimatedRows = (idx & 1) ? 50 : 1000;
    return SQLITE_OK;
}

static int vt_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out)
{
    (void)base;
    struct cur *c = calloc(1, sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    *out = &c->base;
    return SQLITE_OK;
}

static int vt_close(sqlite3_vtab_cursor *base)
{
    struct cur *c = (struct cur *)base;
    core_rows_free(&c->rows);
    free(c);
    return SQLITE_OK;
}

static int vt_filter(sqlite3_vtab_cursor *base, int idx, const char *idxstr, int argc,
                     sqlite3_value **argv)
{
    (void)idxstr;
    struct cur *c = (struct cur *)base;
    struct vt *v = (struct vt *)base->pVtab;
    struct vtab_args a = {0};
    struct pb_err err = {0};
    core_rows_free(&c->rows);
    c->row = 0;
    c->rows.ncols = v->def->info.ncols;
    if ((idx & 1) && argc >= 1) {
        if (sqlite3_value_numeric_type(argv[0]) != SQLITE_INTEGER)
            return SQLITE_OK; /* thread_id = 'x': no rows */
        a.has_thread = 1;
        a.thread_id = sqlite3_value_int64(argv[0]);
    }
    a.want_lazy = (idx & 2) != 0;
    int rc = v->def->fill(&c->rows, &a, &err);
    if (rc == 0)
        rc = core_rows_error(&c->rows); /* a fill that did not say: its rows' error stands */
    if (rc < 0) {
        probe_vtab_failed = 1;
        int ncols = c->rows.ncols;
        core_rows_free(&c->rows);
        c->rows.ncols = ncols;
        sqlite3_free(base->pVtab->zErrMsg);
        base->pVtab->zErrMsg = sqlite3_mprintf("%s", err.msg[0] ? err.msg : pb_strerror(rc));
        return rc == -ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    }
    return SQLITE_OK;
}

static int vt_next(sqlite3_vtab_cursor *base)
{
    ((struct cur *)base)->row++;
    return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *base)
{
    struct cur *c = (struct cur *)base;
    return c->row >= c->rows.nrows;
}

static int vt_column(sqlite3_vtab_cursor *base, sqlite3_context *cx, int col)
{
    struct cur *c = (struct cur *)base;
    const struct probe_value *v = &c->rows.cells[c->row * (size_t)c->rows.ncols + (size_t)col];
    switch (v->type) {
    case PROBE_V_INT: sqlite3_result_int64(cx, v->i); break;
    case PROBE_V_REAL: sqlite3_result_double(cx, v->d); break;
    case PROBE_V_TEXT: sqlite3_result_text(cx, v->s, -1, SQLITE_TRANSIENT); break;
    default: sqlite3_result_null(cx); break;
    }
    return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64)((struct cur *)base)->row;
    return SQLITE_OK;
}

static const sqlite3_module module = {
    .iVersion = 1,
    .xCreate = vt_connect,
    .xConnect = vt_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

int sql_vtab_register(struct sqlite3 *db, struct pb_err *err)
{
    int rc = sqlite3_create_module(db, "probing_live", &module, NULL);
    char done[NDEFS];
    memset(done, 0, sizeof done);
    /* One catalogue write per schema, its tables' rows as CREATE VIRTUAL TABLE writes them. */
    for (int i = 0; rc == SQLITE_OK && i < NDEFS; i++) {
        const char *name = defs[i].info.name, *dot = strchr(name, '.');
        if (done[i] || !dot)
            continue;
        int slen = (int)(dot - name);
        char schema[32];
        snprintf(schema, sizeof schema, "%.*s", slen, name);
        sqlite3_str *v = sqlite3_str_new(db);
        for (int j = i, n = 0; j < NDEFS; j++) {
            const char *t = defs[j].info.name;
            if (done[j] || strncmp(t, name, (size_t)slen + 1) != 0)
                continue;
            done[j] = 1;
            char *create =
                sqlite3_mprintf("CREATE VIRTUAL TABLE \"%w\" USING probing_live", t + slen + 1);
            if (!create)
                rc = SQLITE_NOMEM;
            sqlite3_str_appendf(v, "%s('table', %Q, %Q, 0, %Q)", n++ ? ", " : "", t + slen + 1,
                                t + slen + 1, create);
            sqlite3_free(create);
        }
        char *values = sqlite3_str_finish(v);
        if (rc == SQLITE_OK)
            rc = values ? sql_schema_declare(db, schema, values) : SQLITE_NOMEM;
        sqlite3_free(values);
    }
    if (rc != SQLITE_OK)
        return pb_err_set(err, PB_EUNKNOWN, "creating the live tables: %s", sqlite3_errmsg(db));
    return 0;
}
