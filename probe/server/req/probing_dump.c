/* SPDX-License-Identifier: MIT */
/* probing/dump (custom; docs/protocol.md): every Python thread with its frames, innermost first,
 * in one consistent snapshot. Arguments: locals (bool), maxFrames (int), native ("merged" or
 * "all": each thread's native and Python frames merged, prof/native.c, and "nativeThreads":
 * the threads that run no Python, named by the kernel, with their native frames). Names from
 * `threading` and locals need the GIL: when it cannot be had in time the answer still comes,
 * read without the GIL, and says who holds it ("gil.available": false, "localsError"); the
 * locals are then read from memory, simple values only ("localsVia": "memory"). tasks (bool):
 * every asyncio task in "asyncio" (pyrt/asyncio.c), read with the GIL; without it, "asyncio"
 * says why not. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "server/snapshot.h"
#include "core/core.h"
#include "gil/gil.h"
#include "core/settings.h"
#include "prof/prof.h"

/* What a dump with locals does when the GIL cannot be had: the locals are read from memory
 * (PROBE_SNAP_MEMLOCALS, pyrt/memlocals.c). */
#define MEM_NOTE "locals read from memory without it (simple values only)"

/* What a dump with tasks says when the GIL cannot be had. */
#define TASKS_NOTE "asyncio tasks are read with the GIL: not read"

/* Why the GIL was not had (gil_rc), then what it means (note). */
static void gil_why(char *msg, size_t n, int gil_rc, const struct probe_thread *h, const char *note)
{
    char busy[256];
    if (gil_rc == PB_ETIMEDOUT && probe_worker_busy_text(h ? h->ident : 0, busy, sizeof busy))
        snprintf(msg, n, "%s: %s; %s", busy, note, PROBE_BUSY_HINT);
    else if (gil_rc == PB_ETIMEDOUT && h)
        snprintf(msg, n, "the GIL is held by thread %ld (%s) and was not released within %d ms: %s",
                 dap_thread_id(h), h->name ? h->name : "?", probe_setting_gil_timeout_ms(), note);
    else if (gil_rc == PB_ETIMEDOUT)
        snprintf(msg, n, "the GIL could not be had within %d ms: %s",
                 probe_setting_gil_timeout_ms(), note);
    else
        snprintf(msg, n,
                 "the interpreter is not running Python code now (starting or "
                 "finalising): %s",
                 note);
}

static const struct probe_thread *holder(const struct probe_snapshot *s)
{
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].holds_gil)
            return &s->threads[i];
    return NULL;
}

static int render(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                  struct pb_err *err)
{
    int want_locals = 0;
    dap_arg_bool(args, "locals", &want_locals, err);
    const struct probe_info *pi = probe_info_get();
    cJSON_AddNumberToObject(body, "pid", pi->pid);
    cJSON_AddStringToObject(body, "python", s->version[0] ? s->version : pi->python_version);
    cJSON *gil = cJSON_AddObjectToObject(body, "gil");
    const struct probe_thread *h = holder(s);
    if (h)
        cJSON_AddNumberToObject(gil, "holder", (double)dap_thread_id(h));
    else
        cJSON_AddNullToObject(gil, "holder");
    cJSON_AddBoolToObject(gil, "available", gil_rc == 0);
    if (s->gc_collecting >= 0)
        cJSON_AddBoolToObject(body, "gcCollecting", s->gc_collecting);
    else
        cJSON_AddNullToObject(body, "gcCollecting");
    if (want_locals && gil_rc != 0) {
        char msg[512];
        gil_why(msg, sizeof msg, gil_rc, h, MEM_NOTE);
        cJSON_AddStringToObject(body, "localsError", msg);
    }
    int want_tasks = 0;
    dap_arg_bool(args, "tasks", &want_tasks, err);
    if (want_tasks && s->atasks.read) { /* with the GIL, or without it (3.14+) */
        cJSON_AddItemToObject(body, "asyncio", dap_json_atasks(&s->atasks));
    } else if (want_tasks) {
        char msg[512];
        cJSON *a = cJSON_AddObjectToObject(body, "asyncio");
        gil_why(msg, sizeof msg, gil_rc, h, TASKS_NOTE);
        cJSON_AddBoolToObject(a, "read", 0);
        cJSON_AddStringToObject(a, "error", msg);
    }
    if (want_locals)
        cJSON_AddStringToObject(body, "localsVia", gil_rc == 0 ? "gil" : "memory");
    const char *native = NULL;
    struct prof_nstack *ns = NULL;
    long *tids = NULL;
    char(*names)[PROF_COMM] = NULL;
    int nothers = 0, more = 0, nt = s->nthreads;
    dap_arg_str(args, "native", &native, err);
    if (native) {
        tids = calloc(2 * (size_t)nt + PROF_OTHERS_MAX + 1, sizeof *tids);
        ns = calloc((size_t)nt + PROF_OTHERS_MAX + 1, sizeof *ns);
        names = calloc(PROF_OTHERS_MAX, sizeof *names);
        if (!tids || !ns || !names) {
            free(tids);
            free(ns);
            free(names);
            return pb_err_set(err, -ENOMEM, "out of memory");
        }
        /* A thread running code in a subinterpreter has a thread state in each interpreter:
         * its one native stack is asked once (a second SIGPROF would merge with the first)
         * and shown with each (its frames there hold both states': stack_sig). */
        for (int i = 0; i < nt; i++) {
            tids[i] = s->threads[i].native_id;
            for (int j = 0; j < i && tids[i] > 0; j++)
                if (s->threads[j].native_id == tids[i])
                    tids[i] = -1;
        }
        /* then the threads that run no Python, asked after the Python ones (prof/native.c) */
        for (int i = 0; i < nt; i++)
            tids[nt + i] = s->threads[i].native_id; /* scratch: the ids to leave out */
        int rc =
            prof_native_others(tids + nt, nt, tids + nt + nt, names, PROF_OTHERS_MAX, &more, err);
        if (rc >= 0) {
            nothers = rc;
            memmove(tids + nt, tids + nt + nt, (size_t)nothers * sizeof *tids);
            rc = prof_native_stacks(tids, nt + nothers, strcmp(native, "all") == 0, ns, err);
        }
        free(tids);
        if (rc < 0) {
            free(ns);
            free(names);
            return rc;
        }
    }
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    for (int i = 0; i < nt; i++) {
        cJSON *t = dap_json_thread(&s->threads[i], want_locals);
        if (ns) {
            int k = i;
            long tid = s->threads[i].native_id;
            for (int j = 0; j < i && k == i; j++)
                if (tid > 0 && s->threads[j].native_id == tid)
                    k = j; /* asked once, for its first state */
            cJSON_AddItemToObject(t, "native", dap_json_native(&ns[k]));
        }
        cJSON_AddItemToArray(arr, t);
    }
    if (ns) { /* the threads that run no Python, by kernel id, named by the kernel */
        cJSON *others = cJSON_AddArrayToObject(body, "nativeThreads");
        for (int i = 0; i < nothers; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "id", (double)ns[nt + i].tid);
            cJSON_AddStringToObject(t, "name", names[i]);
            cJSON_AddItemToObject(t, "native", dap_json_native(&ns[nt + i]));
            cJSON_AddItemToArray(others, t);
        }
        if (more)
            cJSON_AddNumberToObject(body, "nativeThreadsLeftOut", more);
    }
    for (int i = 0; ns && i < nt + nothers; i++)
        prof_nstack_free(&ns[i]);
    free(ns);
    free(names);
    return 0;
}

static int parse(struct dap_ctx *c, const cJSON *args, void *job)
{
    int locals = 0;
    long long max_frames = 256;
    int rc;
    if ((rc = dap_arg_bool(args, "locals", &locals, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "maxFrames", &max_frames, &c->err)) < 0)
        return rc;
    if (max_frames < 1 || max_frames > 4096)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.maxFrames: expected 1 to 4096");
    const char *native = NULL;
    if ((rc = dap_arg_str(args, "native", &native, &c->err)) < 0)
        return rc;
    if (native && strcmp(native, "merged") != 0 && strcmp(native, "all") != 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.native: expected \"merged\" or \"all\"");
    int tasks = 0;
    if ((rc = dap_arg_bool(args, "tasks", &tasks, &c->err)) < 0)
        return rc;
    int flags =
        PROBE_SNAP_NAMES | (locals ? PROBE_SNAP_LOCALS : 0) | (tasks ? PROBE_SNAP_TASKS : 0);
    return dap_snap_init(c, job, args, flags, (int)max_frames, render);
}

const struct dap_job dap_job_probing_dump = {sizeof(struct dap_snapjob), parse, dap_snap_run,
                                             dap_snap_reply, dap_snap_drop};
