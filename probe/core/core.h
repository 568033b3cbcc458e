/* SPDX-License-Identifier: MIT */
/* probe/ internals shared between the agent, the worker and the entry points. */
#ifndef PROBE_INTERNAL_H
#define PROBE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <uv.h>

#include "probe.h"

#define PROBE_EXPORT __attribute__((visibility("default")))

/* core/loop.c: the agent's loop, run by the agent thread, and the probe's identity. */
uv_loop_t *probe_agent_loop(void);
/* The identity to fill (entry.c, the server's listeners). */
struct probe_info *probe_info_edit(void);
/* Initialise the loop and the identity's pid and start time (entry.c, once). */
int probe_loop_init(struct pb_err *err);
/* Start the agent thread: first() (may be NULL) on it, then the loop until the process ends. */
int probe_loop_start(void (*first)(void), struct pb_err *err);
/* 1 on the agent thread. */
int probe_on_agent_thread(void);

/* server/listen.c: the Unix listener (once the loop exists, before it runs), the stale-socket
 * sweep (a task), TCP from any thread, fork and exit. */
int probe_server_start(struct pb_err *err);
void probe_server_sweep(void);
/* From any thread: ask the loop to listen on TCP and wait for the outcome. */
int probe_agent_listen_sync(const char *address, const char *token, struct pb_err *err);
/* fork() child: drop every descriptor the agent owned; the child has no agent. */
void probe_agent_forget(void);
/* At exit in the process that created it: remove the socket file. */
void probe_agent_cleanup(void);

/* gil/worker.c: the GIL workers (see its header comment). At most PROBE_MAX_WORKERS threads: one
 * taking jobs, the others retired and stuck in a call that has not returned yet. */
#define PROBE_MAX_WORKERS 4
int probe_worker_start(uv_loop_t *loop, struct pb_err *err);
/* Worker threads alive (taking jobs or retired), for tests and the log. */
int probe_worker_count(void);

/* thread.c: start a thread of the probe with every signal blocked in it. Returns 0 or -errno. */
int probe_thread_start(pthread_t *t, void *(*fn)(void *), int detached);
/* Around user code on a probe thread: the target main thread's signal mask in, the saved
 * (all blocked) mask back. Threads the user code starts inherit the target's mask. */
void probe_thread_user_enter(sigset_t *saved);
void probe_thread_user_leave(const sigset_t *saved);

/* debugger/events.c: the debugger's event queue (before the loop runs). */
int dbg_events_start(void);
/* fork() child (async-signal-safe): the child has no agent, so its debugger is off for good:
 * no thread ever parks, hooks do nothing, events are dropped. */
void dbg_fork_child(void);

/* task.c */
int probe_task_start(uv_loop_t *loop, struct pb_err *err);

/* rundir.c: "/tmp/probing-<uid>", created 0700 or verified to be ours and private. */
int probe_rundir_path(char *buf, size_t n, struct pb_err *err);
/* Remove <pid>.sock files in dir, other than own, that nobody listens on any more (their process
 * died without removing them). Blocking file-system work: task thread. Returns how many. */
int probe_rundir_sweep(const char *dir, const char *own);

/* token.c */
void probe_token_set(const char *token);

/* settings.c */
void probe_settings_load(void);

#endif
