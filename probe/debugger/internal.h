/* SPDX-License-Identifier: MIT */
/* What the debugger's files share (see debugger.h for the model). state.c parks and resumes
 * threads and keeps their stop records; events.c carries events to the loop; hooks_*.c
 * install the per-version event source (a C trace function on 3.8-3.11, sys.monitoring on
 * 3.12+) and turn its callbacks into dbg_on_*() calls (step.c); breakpoints.c holds
 * breakpoints; exceptions.c exception breakpoints; variables.c inspects stopped frames;
 * control.c pauses, resumes, steps, and cleans up when the client leaves. */
#ifndef PROBE_DBG_INTERNAL_H
#define PROBE_DBG_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <stdatomic.h>

#include "debugger.h"
#include "gil/pyhelper.h"

#define DBG_MAX_FRAMES 4096

/* ---- events.c ---- */
/* Loop thread: deliver every queued event now, held back or not (detach). */
void dbg_events_drain_all(void);
/* Loop thread: +1 while a request runs whose events must follow its response (pause: the
 * `stopped` it causes), -1 after the response went out. */
void dbg_events_hold(int delta);
int dbg_events_start(void); /* loop thread, once */
/* 1 in a fork() child of the process the probe started in: the debugger is off there. */
int dbg_forked(void);
/* threads.c: `thread` events while a client is attached (loop thread). */
void dbg_threads_watch(int on);

/* ---- state.c ---- */
enum dbg_step { DBG_STEP_NONE = 0, DBG_STEP_IN, DBG_STEP_OVER, DBG_STEP_OUT };

/* What a stop reports (filled by the stopping thread, GIL held). */
struct dbg_stop_why {
    const char *reason;      /* DAP StoppedEvent reason */
    const char *description; /* may be NULL */
    int nbp;                 /* hitBreakpointIds */
    int bp_ids[8];
    PyObject *exc;          /* borrowed: the exception, for exception stops */
    const char *break_mode; /* exceptionInfo breakMode: "always" or "unhandled" */
    PyObject *tb;           /* borrowed: traceback whose frames make the stack (uncaught) */
};

/* Park the calling thread at frame f (GIL held; released while parked). Returns when the
 * debugger resumes it; the step mode it was given is then in the thread's state. */
void dbg_park(PyFrameObject *f, const struct dbg_stop_why *why);
/* Set when threads must stop at their next line: a pause, or another thread stopped. */
extern atomic_int dbg_pause_all;
/* A debugging client is attached (its session is the events' sink). */
extern atomic_int dbg_client;
/* Threads with a step in progress (step.c), counted per session so that a detach (which voids
 * every step) and a step starting or ending at the same time never leave a count behind, which
 * would keep every thread traced after the client is gone. */
/* 1 while any step of the current session is under way. */
int dbg_steps_any(void);
/* A step of session gen starts: 1, or 0 (nothing counted) when that session is over. */
int dbg_steps_begin(unsigned long gen);
/* A step of session gen ends or is voided (nothing when that session is over). */
void dbg_steps_end(unsigned long gen);
/* Session gen begins (a detach): no step is under way. */
void dbg_steps_reset(unsigned long gen);
/* Something needs events from the hooks (a client is attached and set breakpoints, asked to
 * pause, steps, or watches exceptions). */
int dbg_wanted(void);

/* Loop side of the stop records (state.c). Resume every parked thread, step_tid with
 * the step mode given (returns 1 if step_tid was parked). */
int dbg_resume(long step_tid, int step);
/* probing/pause with hold: stopped without a client until released. */
void dbg_hold(int on);
int dbg_held(void);
/* A parked thread's id, or 0. */
long dbg_first_parked(void);
/* Whether the current stop was announced; sets it, returns the old value. */
int dbg_set_announced(int v);

/* The calling thread's debugger state (thread-local; only that thread touches it). */
struct dbg_tls {
    long tid;             /* kernel tid, 0 until known */
    unsigned long gen;    /* dbg_resume_gen when step was set */
    int step;             /* enum dbg_step */
    PyObject *step_frame; /* strong: where a step over/out started (NULL for step in) */
    PyObject *fbp_frame;  /* borrowed marker: stop at this frame's first line */
    int fbp_id;
};
struct dbg_tls *dbg_tls_get(void);
/* 1 if the calling thread is one of the probe's (never traced). */
int dbg_is_probe_thread(void);
/* Bumped on every resume and detach (a stale step of a previous session is then ignored). */
extern atomic_ulong dbg_session_gen;

/* ---- step.c: the decisions, called by the hooks with the GIL held ---- */
/* Each returns 0, or -1 with a Python exception set (propagated by the trace machinery). */
int dbg_on_call(PyFrameObject *f);
int dbg_on_line(PyFrameObject *f, int line);
int dbg_on_return(PyFrameObject *f);
/* A raised exception in frame f (first raise only). */
int dbg_on_raise(PyFrameObject *f, PyObject *exc);
/* 1 if code has line events worth delivering (a breakpoint in it, or stepping/pausing). */
int dbg_code_wants_lines(PyCodeObject *code);

/* ---- hooks_trace.c (3.8-3.11) / hooks_monitor.c (3.12+) ---- */
/* Make the event source match what is wanted now: install, widen, narrow or remove. GIL held.
 * Returns 0 or a negative code with err. */
int dbg_hooks_update(struct pb_err *err);
/* Every thread stops at its next line: line events everywhere (GIL held). */
int dbg_hooks_pause_all(struct pb_err *err);
/* Remove everything (GIL held). */
void dbg_hooks_remove(void);
/* Breakpoints changed: cached per-code decisions are stale (any thread). */
void dbg_gate_bp_changed(void);
/* What of ours is installed, read from the interpreter itself (probing/debugger; GIL held):
 * traced_threads, monitoring_tool, threading_hook, eval_frame_hook. */
void dbg_hooks_census(struct dbg_census *into);
/* hooks_entry.c (3.11; 0 / nothing elsewhere), GIL held: serve the line breakpoints by entry
 * hooks if they can serve all of them (1; the gate is not needed), else put every hooked
 * function back (0); put everything back; the number of functions hooked. */
int dbg_entry_update(void);
void dbg_entry_remove(void);
int dbg_entry_count(void);
/* An entry hook ran in the calling thread's newest frame: trace it as the gate would. */
void dbg_trace_entered(void);
/* The thread that parks is about to step: make sure its frames deliver the events it needs. */
void dbg_hooks_stepping(PyFrameObject *f);

/* ---- breakpoints.c ---- */
/* Line breakpoint at (file, line) of frame f: 1 if it must stop (condition and hit count
 * checked; a logpoint emits its output and returns 0), with ids added to why. GIL held. */
int dbg_bp_check(PyFrameObject *f, PyCodeObject *code, int line, struct dbg_stop_why *why);
/* For the entry hooks (hooks_entry.c), GIL held: a breakpoint file is named base; function
 * breakpoints exist; the breakpoints' code cache holds a reference to code; every line
 * breakpoint lies in the own lines of a code object of the list codes. */
int dbg_bp_file_named(const char *base);
int dbg_bp_functions_any(void);
int dbg_bp_code_cached(PyCodeObject *code);
int dbg_bp_lines_within(PyObject *codes);
/* 1 if code (by file and line range) holds a line breakpoint. GIL held. */
int dbg_bp_in_code(PyCodeObject *code);
/* 1 if a line breakpoint (of any kind) is set on code's file at line. GIL held. */
int dbg_bp_at(PyCodeObject *code, int line);
/* Function breakpoint id matching code's name, or 0. GIL held. */
int dbg_bp_function(PyCodeObject *code);
/* Function breakpoint id reached in f: 1 if its condition and hit count say stop. GIL held. */
int dbg_bp_function_ok(PyFrameObject *f, int id);
int dbg_bp_any(void);
int dbg_bp_count(void);
void dbg_bp_clear_all(void); /* GIL held */

/* ---- exceptions.c ---- */
extern atomic_int dbg_exc_raised;   /* filter "raised" */
extern atomic_int dbg_exc_uncaught; /* filter "uncaught" */
int dbg_exc_skip(PyObject *exc);    /* 1 for control-flow exceptions (StopIteration...) */
void dbg_exc_remove(void);          /* GIL held: excepthooks back */
/* Fills excepthook / threading_excepthook: whether ours are in place (GIL held). */
void dbg_exc_census(struct dbg_census *into);

/* ---- variables.c ---- */
/* Release the variable references of a past stop (after a resume or a detach). GIL held. */
void dbg_vars_sync(void);

/* ---- frame accessors across versions (GIL held; each returns a new reference) ---- */
static inline PyFrameObject *dbg_frame_back(PyFrameObject *f)
{
#if PY_VERSION_HEX >= 0x03090000
    return PyFrame_GetBack(f);
#else
    Py_XINCREF(f->f_back);
    return f->f_back;
#endif
}

static inline PyCodeObject *dbg_frame_code(PyFrameObject *f)
{
#if PY_VERSION_HEX >= 0x03090000
    return PyFrame_GetCode(f);
#else
    Py_INCREF(f->f_code);
    return f->f_code;
#endif
}

/* "Type: message" of an exception object into buf. GIL held; never leaves an error set. */
void dbg_exc_describe(PyObject *exc, char *buf, size_t n);

/* ---- variables.c, variables_obj.c ---- */

/* Register obj for `variables` (frame: where setVariable on its children evaluates, NULL for
 * __main__; expr: an expression that gives obj back, or NULL). Returns its variablesReference,
 * or 0 when it has no children or the table cannot take it; indexed and named (may be NULL) get
 * its counts of children (0 when unknown). Valid until the next resume. */
long long dbg_vars_register(PyObject *obj, PyObject *frame, const char *expr, long long *indexed,
                            long long *named);

/* Among dbg_vars*.c: the children of an object, a page at a time (debugger/variables_obj.c). */
enum { DBGV_ALL = 0, DBGV_INDEXED = 1, DBGV_NAMED = 2 };
struct dbgv_page {
    int filter;             /* DBGV_*: DAP VariablesArguments.filter */
    long long start, count; /* the window asked for */
    long long seen;         /* children passed so far (private) */
    int more;               /* set when children beyond the window exist */
};
/* Called for each child in the window: name and expr (evaluateName, may be NULL) are valid
 * during the call; value is borrowed. */
typedef void (*dbgv_visit)(void *ctx, const char *name, PyObject *value, const char *expr);
/* 1 if obj has children worth expanding; indexed and named get their counts (0 when unknown
 * or not relevant). Runs no user code. */
int dbg_vars_shape(PyObject *obj, long long *indexed, long long *named);
/* Visit obj's children within pg's window. ns: obj is a namespace dict (frame locals or
 * globals: names as they are, evaluateName the name itself); parent: obj's evaluateName or
 * NULL. Runs no user code. Returns 0. */
int dbg_vars_children(PyObject *obj, int ns, const char *parent, struct dbgv_page *pg,
                      dbgv_visit visit, void *ctx);
/* Store value as obj's child called name (as dbg_vars_children names it). Returns 0 (with *expr
 * the child's evaluateName, malloc'd, or NULL) or a negative code with err. */
int dbg_vars_child_set(PyObject *obj, const char *parent, const char *name, PyObject *value,
                       char **expr, struct pb_err *err);

#endif
