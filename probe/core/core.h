/* SPDX-License-Identifier: MIT */
/* The probe's core (probe/core/): what every other folder may use. Any thread, no GIL, no
 * CPython: the probe's identity and the agent's loop (loop.c), the task thread (task.c), probe
 * threads and their signal masks (thread.c), the private run directory (rundir.c), the TCP
 * token (token.c). Handing work between threads is inbox.h, rows of values rows.h, settings
 * settings.h. */
#ifndef PROBE_CORE_H
#define PROBE_CORE_H

#include <pthread.h>
#include <signal.h>
#include <uv.h>

#include "pb.h"

struct probe_info {
    int pid;
    char python_version[32];
    char socket_path[256];
    char tcp_address[80]; /* "" when not listening on TCP */
    double start_time;    /* when the probe started (epoch seconds) */
};

/* Borrowed; valid for the life of the process. */
const struct probe_info *core_info_get(void);

/* Borrowed; valid for the life of the process. */
const struct probe_info *core_info_get(void);

/* core/loop.c: the agent's loop, run by the agent thread, and the probe's identity. */
uv_loop_t *core_agent_loop(void);
/* The identity to fill (entry.c, the server's listeners). */
struct probe_info *core_info_edit(void);
/* Initialise the loop and the identity's pid and start time (entry.c, once). */
int core_loop_init(struct pb_err *err);
/* core/uv_static.c: what the static libuv's renamed references to libc's data point at; before
 * the loop exists. 0, or -1 when the stream for libuv's stderr cannot be made. */
int core_uv_static_init(void);
/* Start the agent thread: first() (may be NULL) on it, then the loop until the process ends. */
int core_loop_start(void (*first)(void), struct pb_err *err);
/* Undoes core_loop_init when the start failed before core_loop_start (entry.c): runs the
 * close callbacks of the handles the undone steps closed, then closes the loop. */
void core_loop_close(void);
/* 1 on the agent thread. */
int core_on_agent_thread(void);

/* Run fn(arg) on the task thread (no GIL held; it may block, e.g. in gil_call or a long
 * SQL query), then done(arg) on the loop thread. Tasks run one at a time, in order. Returns 0
 * or -ENOMEM (then nothing is called). */
typedef void (*probe_task_fn)(void *arg);
typedef void (*probe_task_done)(void *arg);
int core_task_submit(probe_task_fn fn, probe_task_done done, void *arg);

/* task.c: the task thread (before the loop runs). */
int core_task_start(uv_loop_t *loop, struct pb_err *err);
/* Undoes core_task_start (a start that failed later, before the loop ran): the thread ends
 * after the task it runs, and is joined. */
void core_task_stop(void);

/* rundir.c: "/tmp/probing-<uid>", created 0700 or verified to be ours and private. */
int core_rundir_path(char *buf, size_t n, struct pb_err *err);
/* The socket's path in dir for pid: "<dir>/<pid>-<pid namespace inode>.sock" (rundir.c). */
void core_rundir_socket_name(char *buf, size_t n, const char *dir, int pid);
/* Whether something listens on the socket at path (connect() is not refused; a path that is
 * not a socket, or is gone, is not live); the listener's pid as we see it in *peer (0: not
 * visible from our PID namespace). */
int core_rundir_socket_live(const char *path, pid_t *peer);
/* Remove <pid>.sock and <pid>-<ns>.sock files in dir, other than own, that nobody listens on any more (their process
 * died without removing them). Blocking file-system work: task thread. Returns how many. */
int core_rundir_sweep(const char *dir, const char *own);

/* token.c */
void core_token_set(const char *token);

/* token.c: constant-time token comparison. 1 if token matches the TCP token, else 0. */
int core_token_check(const char *token);

/* thread.c: start a thread of the probe with every signal blocked in it. Returns 0 or -errno. */
int core_thread_start(pthread_t *t, void *(*fn)(void *), int detached);
/* Any thread, a signal handler too. 1 when the kernel thread tid is one that
 * core_thread_start started and that has not returned yet (the probe's own: left out of the
 * target's native-only threads, prof_native_others). */
int core_thread_is_ours(long tid);
/* Around user code on a probe thread: the target main thread's signal mask in, the saved
 * (all blocked) mask back. Threads the user code starts inherit the target's mask. */
void core_thread_user_enter(sigset_t *saved);
void core_thread_user_leave(const sigset_t *saved);

#endif
