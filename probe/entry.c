/* SPDX-License-Identifier: MIT */
/* libprobing's entry points. Loading the library (dlopen by the injector, or ctypes from the
 * `probing` Python package) starts the agent from the constructor, which may run in a thread
 * hijacked at an arbitrary safe point: it only starts threads and never touches the GIL.
 * probing_start() adds a TCP listener; it is what probing.init(listen=...) calls. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "core/core.h"
#include "core/settings.h"
#include "pyrt/pyrt.h"
#include "prof/prof.h"
#include "sql/store.h"
#include "gil/gil.h"
#include "server/server.h"
#include "debugger/debugger.h"

static void on_fork_prepare(void)
{
    prof_native_fork_prepare();
}

static void on_fork_parent(void)
{
    prof_native_fork_parent();
}

static void on_fork_child(void)
{
    srv_agent_forget();
    dbg_fork_child();
    gil_hurry_fork_child();
    prof_native_fork_child();
}

/* GIL worker: read threading's names once at start, so that a first `threads` (a debugger
 * attaching now) finds them remembered and needs no GIL (server/req/threads.c). */
static void names_warm(void *arg)
{
    (void)arg;
    struct probe_snapshot s;
    struct pb_err err = {0};
    if (pyrt_snapshot(&s, PROBE_SNAP_NAMES, 1, &err) == 0)
        pyrt_snapshot_free(&s);
}

static void names_warmed(void *arg, int rc)
{
    (void)arg;
    (void)rc;
}

/* First thing on the agent thread, before the loop runs. */
static void agent_first(void)
{
    struct pb_err err = {0};
    if (pyrt_init(&err) < 0)
        PB_LOG(PB_LOG_WARN, "interpreter reader: %s", err.msg);
    else if (gil_submit(names_warm, names_warmed, NULL, 1000) < 0)
        PB_LOG(PB_LOG_WARN, "thread names not read at start");
    if (sql_collector_start() < 0)
        PB_LOG(PB_LOG_WARN, "history collector not started");
    srv_sweep_later();
    PB_LOG(PB_LOG_INFO, "agent running (probe %s, CPython %s)", PROBING_VERSION,
           core_info_get()->python_version);
}

/* A start step made to fail for the tests (PROBING_TEST_FAIL_START=loop|server|worker|task|
 * events|thread, read at each start): undoing what came before it is tested step by step
 * (tests/e2e/test_start_undo.py). Unset in production. */
static int fault(const char *step, struct pb_err *err)
{
    const char *f = getenv("PROBING_TEST_FAIL_START");
    if (f && strcmp(f, step) == 0)
        return pb_err_set(err, PB_EUNKNOWN, "%s: failed for the test (PROBING_TEST_FAIL_START)",
                          step);
    return 0;
}

/* The composition root: the loop, the server on it, the GIL worker, the task thread, the
 * debugger's event queue, then the agent thread. Once it succeeded (idempotent), any thread.
 * A step that fails undoes those before it, last first (as libuv's own set-up does), so that
 * nothing is left running or listening and a later probing_start() starts afresh. */
static int probe_start(struct pb_err *err)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int started;
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (started)
        goto out;
    if ((rc = fault("loop", err)) < 0 || (rc = core_loop_init(err)) < 0)
        goto out;
    if ((rc = fault("server", err)) < 0 || (rc = srv_start(err)) < 0)
        goto undo_loop;
    gil_worker_poll_when(dbg_stopped);
    if ((rc = fault("worker", err)) < 0 || (rc = gil_worker_start(core_agent_loop(), err)) < 0)
        goto undo_server;
    if ((rc = fault("task", err)) < 0 || (rc = core_task_start(core_agent_loop(), err)) < 0)
        goto undo_worker;
    if ((rc = fault("events", err)) < 0)
        goto undo_task;
    if (dbg_events_start() != 0) {
        rc = pb_err_set(err, -ENOMEM, "cannot start the debugger's event queue");
        goto undo_task;
    }
    if ((rc = fault("thread", err)) < 0 || (rc = core_loop_start(agent_first, err)) < 0)
        goto undo_events;
    started = 1;
    goto out;
undo_events:
    dbg_events_stop();
undo_task:
    core_task_stop();
undo_worker:
    gil_worker_stop();
undo_server:
    srv_stop();
undo_loop:
    core_loop_close();
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

__attribute__((constructor)) static void probe_load(void)
{
    struct pb_err err = {0};
    pb_log_init("probe");
    core_settings_load();
    core_settings_compat_env();
    struct probe_info *i = core_info_edit();
    /* Py_GetVersion needs no GIL: "3.11.7 (main, ...". Keep the first word. */
    pb_strlcpy(i->python_version, Py_GetVersion(), sizeof i->python_version);
    i->python_version[strcspn(i->python_version, " ")] = '\0';
    pyrt_tid_seed(); /* before the agent thread starts: its pyrt_init then starts no helper */
    if (probe_start(&err) < 0) {
        PB_LOG(PB_LOG_ERROR, "probe not started: %s", err.msg);
        return;
    }
    pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

__attribute__((destructor)) static void probe_unload(void)
{
    srv_agent_cleanup();
}

/* Start serving (idempotent) and, if listen is a non-empty "HOST:PORT", also on TCP with
 * token. Returns 0, or a negative code with a one-line message in errbuf. Any thread; does not
 * need the GIL (callers through ctypes may hold it: we never wait for it). */
PROBE_EXPORT int probing_start(const char *listen, const char *token, char *errbuf, size_t errlen)
{
    struct pb_err err = {0};
    int rc = probe_start(&err);
    if (rc == 0 && listen && *listen)
        rc = srv_agent_listen_sync(listen, token ? token : "", &err);
    if (rc < 0 && errbuf && errlen)
        pb_strlcpy(errbuf, err.msg[0] ? err.msg : pb_strerror(rc), errlen);
    return rc;
}

/* The Unix socket path this probe serves (empty if none). */
PROBE_EXPORT const char *probing_socket_path(void)
{
    return core_info_get()->socket_path;
}

PROBE_EXPORT const char *probing_version(void)
{
    return PROBING_VERSION;
}

/* The TCP address being served ("" if none). */
PROBE_EXPORT const char *probing_tcp_address(void)
{
    return core_info_get()->tcp_address;
}

/* ---- for collectors written in Python (ctypes) ---- */

/* Declare "schema.name" with REAL columns named in a comma-separated list. Any thread. */
PROBE_EXPORT int probing_history_define(const char *table, const char *columns, char *errbuf,
                                        size_t errlen)
{
    struct pb_err err = {0};
    char *copy = table && columns ? strdup(columns) : NULL;
    struct probe_column *cols = calloc(PROBE_HISTORY_MAX_COLS, sizeof *cols);
    int n = 0, rc = 0;
    char *save = NULL;
    for (char *c = copy ? strtok_r(copy, ", ", &save) : NULL; c && n < PROBE_HISTORY_MAX_COLS;
         c = strtok_r(NULL, ", ", &save))
        cols[n++] = (struct probe_column){c, "REAL", "collector column"};
    if (!copy || !cols)
        rc = pb_err_set(&err, PB_EBADARG, "table and columns are required");
    else
        rc = sql_history_define(strdup(table), "defined by a Python collector", cols, n, &err);
    /* On success the strings live for the process (history tables are never dropped). */
    if (rc < 0) {
        free(copy);
        free(cols);
        if (errbuf && errlen)
            pb_strlcpy(errbuf, err.msg, errlen);
    }
    return rc;
}

/* Index a table declared with probing_history_define on "col1,col2,..." (the columns users
 * group or filter by), so such queries scan the index instead of sorting the table. */
PROBE_EXPORT int probing_history_index(const char *table, const char *columns, char *errbuf,
                                       size_t errlen)
{
    struct pb_err err = {0};
    int rc = table ? sql_history_index(table, columns, &err)
                   : pb_err_set(&err, PB_EBADARG, "a table is required");
    if (rc < 0 && errbuf && errlen)
        pb_strlcpy(errbuf, err.msg, errlen);
    return rc;
}

/* Keep a rollup of a table declared with probing_history_define: one row per distinct value
 * of group_cols with count/sum/min/max/mean of value_cols, as "<table>_by_<group cols>"
 * (docs/tables.md), so GROUP BY group_cols reads the groups instead of the rows. */
PROBE_EXPORT int probing_history_rollup(const char *table, const char *group_cols,
                                        const char *value_cols, char *errbuf, size_t errlen)
{
    struct pb_err err = {0};
    int rc = table ? sql_history_rollup(table, group_cols, value_cols, &err)
                   : pb_err_set(&err, PB_EBADARG, "a table is required");
    if (rc < 0 && errbuf && errlen)
        pb_strlcpy(errbuf, err.msg, errlen);
    return rc;
}

/* Append one row of n REAL values to a table declared with probing_history_define. */
PROBE_EXPORT int probing_history_append(const char *table, const double *values, int n)
{
    struct probe_value v[PROBE_HISTORY_MAX_COLS];
    if (!table || !values || n < 1 || n > PROBE_HISTORY_MAX_COLS)
        return PB_EBADARG;
    for (int i = 0; i < n; i++)
        v[i] = (struct probe_value){PROBE_V_REAL, (long long)values[i], values[i], NULL};
    return sql_history_append(table, v, n);
}
