/* SPDX-License-Identifier: MIT */
/* The debugger (probe/dbg_*.c): pause, continue, stepping, breakpoints, exception breakpoints,
 * and the inspection of stopped frames (scopes, variables, setVariable, evaluate in a frame,
 * source). What dap/ calls is at the top (loop thread); below it, what the probe's own debugger
 * files share (worker or target threads, GIL held as stated).
 *
 * Model: all-stop. When a thread stops (pause, breakpoint, step, exception), it parks inside
 * our trace callback with the GIL released, and every other Python thread parks at its next
 * line; threads blocked in C code park when they come back to Python. A parked thread keeps
 * strong references to its frames (a stop record); frame ids (pb_frame_id()) name a thread
 * and a depth and are valid while the thread stays parked. Resuming bumps the stop generation: variable references
 * handed out before are stale after it. */
#ifndef PROBE_DEBUG_H
#define PROBE_DEBUG_H

#include <cJSON.h>

#include "pb.h"

/* ---- loop thread, for dap/ ---- */

/* Where debugger events go (the debugging session); body is taken. NULL drops events. */
typedef void (*probe_dbg_sink)(void *ctx, const char *event, cJSON *body);
void probe_dbg_set_sink(probe_dbg_sink sink, void *ctx);

/* 1 if command is a debugger request served by probe_dbg_request(). */
int probe_dbg_has(const char *command);

/* Completion of a debugger request, on the loop: rc 0 with body (taken) or a negative code with
 * err; long_msg, when not NULL, is a longer error text (a traceback) to use instead of err's.
 * Events emitted while the request ran are delivered before done is called. */
typedef void (*probe_dbg_done)(void *arg, int rc, cJSON *body, const struct pb_err *err,
                               const char *long_msg);
/* Serve a debugger request (args may be NULL). Returns 0 when done will be called (possibly
 * before this returns), or a negative code with err filled (done is not called). */
int probe_dbg_request(const char *command, const cJSON *args, probe_dbg_done done, void *arg,
                      struct pb_err *err);

/* The debugging client is gone (disconnect, or the connection dropped): every breakpoint,
 * trace function, monitoring event and hook of ours is removed and parked threads resume. */
void probe_dbg_detach(void);
/* The debugging client sent configurationDone: if threads are stopped (probing/pause held
 * them), it is told with a `stopped` event. */
void probe_dbg_configured(void);

/* stackTrace of a parked thread from its stop record: fills body's stackFrames/totalFrames and
 * returns 0; returns 1 when tid is not parked (the caller reads the stack without the GIL). */
int probe_dbg_stack(long tid, long long start, long long levels, cJSON *body);
/* 1 while the target is stopped (some thread parked or a pause pending/held). */
int probe_dbg_stopped(void);
/* 1 if tid is parked. */
int probe_dbg_parked(long tid);

/* A frame's presentation: 1 for library code (the standard library, site-packages), which
 * stackTrace marks with presentationHint "subtle". Any thread; no GIL. */
int probe_dbg_is_library(const char *file);

/* ---- any thread ---- */

/* Queue an event for the debugging session (body taken); delivered in order on the loop. */
void probe_dbg_emit(const char *event, cJSON *body);

/* ---- worker thread, GIL held: frame inspection (variables.c, dbg_frame.c) ---- */
struct _object;
/* The frame object behind frameId while its thread is parked (borrowed: valid until the
 * thread resumes); NULL with err filled otherwise. */
struct _object *probe_dbg_frame(long long frame_id, struct pb_err *err);
/* Changes each time parked threads resume. */
unsigned long probe_dbg_generation(void);

/* Requests served under the GIL by variables.c. Each fills body or returns a negative code
 * with err; *long_msg may be set to a malloc'd longer message (a traceback). */
int probe_dbgv_scopes(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
int probe_dbgv_variables(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
int probe_dbgv_setVariable(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
int probe_dbgv_source(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg);
/* Register obj (GIL held) for `variables`; returns its variablesReference (> 0), or 0 when obj
 * has no children worth expanding (or on failure). Valid until the next resume. */
long long probe_dbgv_ref(struct _object *obj);

#endif
