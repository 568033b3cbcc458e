/* SPDX-License-Identifier: MIT */
/* probing/dump (custom; docs/protocol.md): every Python thread with its frames, innermost first,
 * in one consistent snapshot. Arguments: locals (bool), maxFrames (int), native ("merged" or
 * "all": each thread's native and Python frames merged, prof/native.c, and "nativeThreads":
 * the threads that run no Python, named by the kernel, with their native frames). Names from
 * `threading` and locals need the GIL: when it cannot be had in time the answer still comes,
 * read without the GIL, and says who holds it ("gil.available": false, "localsError"); the
 * locals are then read from memory, simple values only ("localsVia": "memory"). tasks (bool):
 * every asyncio task in "asyncio" (pyrt/asyncio.c), read with the GIL; without it, "asyncio"
 * says why not. A dump with native runs on the task thread (its snapshot through the GIL worker
 * as the GIL job takes it), because asking the threads for their stacks waits for their answers
 * (up to 1 s per batch, prof/native.c): the loop never blocks; the body is built on the loop. */
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
    if (gil_rc == PB_ETIMEDOUT && gil_worker_busy_text(h ? h->ident : 0, busy, sizeof busy))
        snprintf(msg, n, "%s: %s; %s", busy, note, PROBE_BUSY_HINT);
    else if (gil_rc == PB_ETIMEDOUT && h)
        snprintf(msg, n, "the GIL is held by thread %ld (%s) and was not released within %d ms: %s",
                 srv_thread_id(h), h->name ? h->name : "?", core_setting_gil_timeout_ms(), note);
    else if (gil_rc == PB_ETIMEDOUT)
        snprintf(msg, n, "the GIL could not be had within %d ms: %s", core_setting_gil_timeout_ms(),
                 note);
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

/* The native part of a dump: asked on the task thread, rendered on the loop. */
struct native {
    struct prof_nstack *ns; /* nt Python threads' entries, then nothers */
    char (*names)[PROF_COMM];
    int nothers, more;
};

static void native_free(struct native *nat, int nt)
{
    for (int i = 0; nat->ns && i < nt + nat->nothers; i++)
        prof_nstack_free(&nat->ns[i]);
    free(nat->ns);
    free(nat->names);
    memset(nat, 0, sizeof *nat);
}

/* Task thread (it waits for the threads' answers). Each thread's native stack into nat. 0, or a
 * negative code with err (nat then empty). */
static int native_collect(const struct probe_snapshot *s, int all, struct native *nat,
                          struct pb_err *err)
{
    int nt = s->nthreads;
    long *tids = calloc(2 * (size_t)nt + PROF_OTHERS_MAX + 1, sizeof *tids);
    nat->ns = calloc((size_t)nt + PROF_OTHERS_MAX + 1, sizeof *nat->ns);
    nat->names = calloc(PROF_OTHERS_MAX, sizeof *nat->names);
    if (!tids || !nat->ns || !nat->names) {
        free(tids);
        native_free(nat, 0);
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
    int rc = prof_native_others(tids + nt, nt, tids + nt + nt, nat->names, PROF_OTHERS_MAX,
                                &nat->more, err);
    if (rc >= 0) {
        nat->nothers = rc;
        memmove(tids + nt, tids + nt + nt, (size_t)nat->nothers * sizeof *tids);
        rc = prof_native_stacks(tids, nt + nat->nothers, all, nat->ns, err);
    }
    free(tids);
    if (rc < 0) {
        native_free(nat, 0); /* prof_native_stacks frees what it made when it fails */
        return rc;
    }
    return 0;
}

/* Loop. The body of a dump; nat: the native stacks when they were asked for, else NULL. */
static int render_dump(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                       const struct native *nat, struct pb_err *err)
{
    int want_locals = 0;
    dap_arg_bool(args, "locals", &want_locals, err);
    const struct probe_info *pi = core_info_get();
    cJSON_AddNumberToObject(body, "pid", pi->pid);
    cJSON_AddStringToObject(body, "python", s->version[0] ? s->version : pi->python_version);
    cJSON *gil = cJSON_AddObjectToObject(body, "gil");
    const struct probe_thread *h = holder(s);
    if (h)
        cJSON_AddNumberToObject(gil, "holder", (double)srv_thread_id(h));
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
        cJSON_AddItemToObject(body, "asyncio", pyrt_atasks_json(&s->atasks));
    } else if (want_tasks) {
        char msg[512];
        cJSON *a = cJSON_AddObjectToObject(body, "asyncio");
        gil_why(msg, sizeof msg, gil_rc, h, TASKS_NOTE);
        cJSON_AddBoolToObject(a, "read", 0);
        cJSON_AddStringToObject(a, "error", msg);
    }
    if (want_locals)
        cJSON_AddStringToObject(body, "localsVia", gil_rc == 0 ? "gil" : "memory");
    const struct prof_nstack *ns = nat ? nat->ns : NULL;
    int nt = s->nthreads, nothers = nat ? nat->nothers : 0;
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    for (int i = 0; i < nt; i++) {
        cJSON *t = srv_json_thread(&s->threads[i], want_locals);
        if (ns) {
            int k = i;
            long tid = s->threads[i].native_id;
            for (int j = 0; j < i && k == i; j++)
                if (tid > 0 && s->threads[j].native_id == tid)
                    k = j; /* asked once, for its first state */
            cJSON_AddItemToObject(t, "native", srv_json_native(&ns[k]));
        }
        cJSON_AddItemToArray(arr, t);
    }
    if (ns) { /* the threads that run no Python, by kernel id, named by the kernel */
        cJSON *others = cJSON_AddArrayToObject(body, "nativeThreads");
        for (int i = 0; i < nothers; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddNumberToObject(t, "id", (double)ns[nt + i].tid);
            cJSON_AddStringToObject(t, "name", nat->names[i]);
            cJSON_AddItemToObject(t, "native", srv_json_native(&ns[nt + i]));
            cJSON_AddItemToArray(others, t);
        }
        if (nat->more)
            cJSON_AddNumberToObject(body, "nativeThreadsLeftOut", nat->more);
    }
    return 0;
}

/* Loop: a dump without native (the GIL job's renderer, srv_snap_reply). */
static int render(const struct probe_snapshot *s, int gil_rc, const cJSON *args, cJSON *body,
                  struct pb_err *err)
{
    return render_dump(s, gil_rc, args, body, NULL, err);
}

/* A dump's job: the snapshot job's parts (first: the job's rc), and for a dump with native
 * what the task thread found. */
struct dumpjob {
    struct srv_snapjob snap;
    const char *native; /* "merged", "all" or NULL: in snap.args */
    int gil_rc;         /* with native: whether the snapshot had the GIL (srv_snap_render) */
    int native_rc;
    struct native nat;
};

static int parse(struct srv_ctx *c, const cJSON *args, struct dumpjob *j)
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
    if ((rc = srv_snap_init(c, &j->snap, args, flags, (int)max_frames, render)) < 0)
        return rc;
    if (native)
        dap_arg_str(j->snap.args, "native", &j->native, &c->err);
    return 0;
}

/* Task thread: the snapshot through the GIL worker, as the GIL job takes it (without the GIL
 * when it cannot be had in time, as its fallback does), then the threads' native stacks. */
static void native_run(void *job)
{
    struct dumpjob *j = job;
    j->gil_rc = gil_call(srv_snap_run, &j->snap, core_setting_gil_timeout_ms());
    if (j->gil_rc < 0)
        srv_snap_without_gil(&j->snap);
    if (j->snap.snap_rc < 0)
        return;
    srv_snapshot_drop_worker(&j->snap.snap);
    j->native_rc =
        native_collect(&j->snap.snap, strcmp(j->native, "all") == 0, &j->nat, &j->snap.err);
}

/* Loop. */
static int native_reply(struct srv_reply *r, void *job, cJSON *body)
{
    struct dumpjob *j = job;
    int rc = j->snap.snap_rc < 0 ? j->snap.snap_rc : j->native_rc;
    if (rc == 0)
        rc = render_dump(&j->snap.snap, j->gil_rc, j->snap.args, body, &j->nat, &j->snap.err);
    r->err = j->snap.err;
    return rc;
}

static void dump_drop(void *job)
{
    struct dumpjob *j = job;
    native_free(&j->nat, j->snap.snap.nthreads);
    srv_snap_drop(&j->snap);
}

static const struct srv_job snap_job = {.size = sizeof(struct dumpjob),
                                        .run = srv_snap_run,
                                        .reply = srv_snap_reply,
                                        .drop = dump_drop};
static const struct srv_job native_job = {
    .size = sizeof(struct dumpjob), .run = native_run, .reply = native_reply, .drop = dump_drop};

/* The job by the arguments: on the GIL worker (with the GIL-free fallback) without native, on
 * the task thread with it. */
int srv_req_probing_dump(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)body;
    struct dumpjob *j = calloc(1, sizeof *j);
    if (!j)
        return pb_err_set(&c->err, -ENOMEM, "out of memory: '%s' was not run", c->command);
    int rc = parse(c, args, j);
    if (rc < 0) {
        dump_drop(j);
        free(j);
        return rc;
    }
    if (j->native)
        return srv_job_submit(c, &native_job, j, SRV_F_TASK, 0);
    return srv_job_submit(c, &snap_job, j, SRV_F_GIL | SRV_F_GIL_FALLBACK,
                          core_setting_gil_timeout_ms());
}
