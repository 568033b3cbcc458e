/* SPDX-License-Identifier: MIT */
/* This node's part of `probing cluster`: every rank found (find.c) asked at once,
 * one child process per rank (run.c), each making sure the probe is loaded and
 * asking it over its socket: probing/dump without locals for stacks (read without the GIL, so
 * a rank stuck in C holding the GIL answers too), probing/query for a query, probing/dump with
 * locals for a dump, the latest rows of torch.collectives for collectives (and for stacks, the
 * hang line). The answers become one node document; stacks are interned per node, so a
 * node of 8 ranks in the same place sends one stack, not eight. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "injector/ptrace/ptrace.h"

struct local_ctx {
    const struct cli_cluster_opts *o;
    cJSON **ranks;
};

/* One native frame (--native) as the compact form has it: func its name (C++ demangled), "?"
 * when unknown (never its address: ranks differ in where objects are mapped, and the stacks
 * must compare equal), file the object's file name, line 0, native true. */
static cJSON *compact_native(const cJSON *f)
{
    cJSON *x = cJSON_CreateObject();
    char buf[1024];
    const char *name = cli_json_str(f, "name"), *mod = cli_json_str(f, "module");
    const char *base = mod && strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
    cJSON_AddStringToObject(x, "func", name ? cli_demangle(name, buf, sizeof buf) : "?");
    cJSON_AddStringToObject(x, "file", base ? base : "?");
    cJSON_AddNumberToObject(x, "line", 0);
    cJSON_AddBoolToObject(x, "native", 1);
    return x;
}

/* Keeps a thread's name, ids and frames (func, file, line), innermost first: with --native its
 * merged native and Python frames when they were read (else its Python frames). */
static cJSON *compact_thread(const cJSON *t)
{
    cJSON *c = cJSON_CreateObject(), *frames = cJSON_CreateArray();
    const cJSON *f, *n = cJSON_GetObjectItemCaseSensitive(t, "native");
    cJSON_AddNumberToObject(c, "thread", cli_json_num(t, "id", 0));
    cJSON_AddStringToObject(c, "name", cli_json_str(t, "name") ? cli_json_str(t, "name") : "");
    cJSON_AddBoolToObject(c, "main", cli_json_true(t, "main"));
    cJSON_AddBoolToObject(c, "holdsGil", cli_json_true(t, "holdsGil"));
    if (cli_json_true(n, "answered") && cli_json_true(n, "merged")) {
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(n, "frames"))
        {
            const char *kind = cli_json_str(f, "kind");
            if (kind && strcmp(kind, "native") == 0) {
                cJSON_AddItemToArray(frames, compact_native(f));
                continue;
            }
            cJSON *x = cJSON_CreateObject();
            const char *fn = cli_json_str(f, "name"), *file = cli_json_str(f, "file");
            cJSON_AddStringToObject(x, "func", fn ? fn : "?");
            cJSON_AddStringToObject(x, "file", file ? file : "?");
            cJSON_AddNumberToObject(x, "line", cli_json_num(f, "line", 0));
            cJSON_AddItemToArray(frames, x);
        }
        cJSON_AddItemToObject(c, "frames", frames);
        return c;
    }
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
    {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "func", cli_json_str(f, "name") ? cli_json_str(f, "name") : "?");
        cJSON_AddStringToObject(x, "file", cli_json_str(f, "file") ? cli_json_str(f, "file") : "?");
        cJSON_AddNumberToObject(x, "line", cli_json_num(f, "line", 0));
        cJSON_AddItemToArray(frames, x);
    }
    cJSON_AddItemToObject(c, "frames", frames);
    return c;
}

/* --tasks: each asyncio task's name, state and coroutine chain ("frames" as a thread's, interned
 * with them), or why none were read ("tasksError"). */
static void compact_tasks(cJSON *out, const cJSON *as)
{
    const cJSON *t;
    if (!cli_json_true(as, "read")) {
        cJSON_AddStringToObject(out, "tasksError",
                                cli_json_str(as, "error") ? cli_json_str(as, "error")
                                                          : "the probe did not read the tasks");
        return;
    }
    const char *via = cli_json_str(as, "via");
    if (via && strcmp(via, "memory") == 0) /* 3.14+ with the GIL held elsewhere */
        cJSON_AddStringToObject(out, "tasksVia", "memory");
    cJSON *arr = cJSON_AddArrayToObject(out, "tasks");
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(as, "tasks"))
    {
        cJSON *c = compact_thread(t); /* name and frames; the thread fields are dropped */
        cJSON_DeleteItemFromObjectCaseSensitive(c, "thread");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "main");
        cJSON_DeleteItemFromObjectCaseSensitive(c, "holdsGil");
        cJSON_AddStringToObject(c, "state",
                                cli_json_str(t, "state") ? cli_json_str(t, "state") : "?");
        cJSON_AddItemToArray(arr, c);
    }
}

static int in_torch_distributed(const cJSON *t)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
    {
        const char *file = cli_json_str(f, "file");
        if (file && strstr(file, "/torch/distributed/"))
            return 1;
    }
    return 0;
}

/* The threads of one dump that --thread asks for: all; the main thread; or (auto) the thread
 * whose stack runs torch.distributed code (the main thread first when several do), else the
 * main thread. */
static cJSON *select_threads(const cJSON *dump, int mode)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(dump, "threads"), *t, *pick = NULL;
    if (mode == CLUSTER_THREAD_ALL) {
        cJSON_ArrayForEach(t, threads) cJSON_AddItemToArray(out, compact_thread(t));
        /* --native: the threads that run no Python, after the Python ones */
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(dump, "nativeThreads"))
        {
            cJSON *c = cJSON_CreateObject(), *frames = cJSON_CreateArray();
            const cJSON *f;
            cJSON_AddNumberToObject(c, "thread", cli_json_num(t, "id", 0));
            cJSON_AddStringToObject(c, "name",
                                    cli_json_str(t, "name") ? cli_json_str(t, "name") : "");
            cJSON_AddBoolToObject(c, "main", 0);
            cJSON_AddBoolToObject(c, "holdsGil", 0);
            cJSON_AddBoolToObject(c, "nativeOnly", 1);
            cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(
                                      cJSON_GetObjectItemCaseSensitive(t, "native"), "frames"))
                cJSON_AddItemToArray(frames, compact_native(f));
            cJSON_AddItemToObject(c, "frames", frames);
            cJSON_AddItemToArray(out, c);
        }
        return out;
    }
    if (mode == CLUSTER_THREAD_AUTO) {
        cJSON_ArrayForEach(t, threads)
        {
            if (in_torch_distributed(t) && (!pick || cli_json_true(t, "main")))
                pick = t;
        }
    }
    if (!pick) {
        cJSON_ArrayForEach(t, threads)
        {
            if (cli_json_true(t, "main"))
                pick = t;
        }
    }
    if (!pick)
        pick = cJSON_GetArrayItem(threads, 0);
    if (pick)
        cJSON_AddItemToArray(out, compact_thread(pick));
    return out;
}

/* --subprocesses: the rank's descendants read from outside (children.c: nothing loaded, none
 * stopped), each with its pid, parent, role and command line and, when read, one sample of the
 * threads --thread asks for, interned as a rank's samples are. */
static void add_children(cJSON *out, pid_t pid, int mode)
{
    static const char *const keep[] = {"pid",  "ppid",   "comm",     "cmdline",   "role",
                                       "note", "python", "workerId", "numWorkers"};
    int left = 0;
    cJSON *arr = cli_children_read(pid, 0, 256, &left), *c;
    cJSON *kids = cJSON_AddArrayToObject(out, "children");
    cJSON_ArrayForEach(c, arr)
    {
        cJSON *k = cJSON_CreateObject();
        for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
            cJSON *v = cJSON_GetObjectItemCaseSensitive(c, keep[i]);
            if (v)
                cJSON_AddItemToObject(k, keep[i], cJSON_Duplicate(v, 1));
        }
        if (!cli_json_str(c, "note")) {
            cJSON *samples = cJSON_AddArrayToObject(k, "samples");
            cJSON_AddItemToArray(samples, select_threads(c, mode));
        }
        cJSON_AddItemToArray(kids, k);
    }
    if (left > 0)
        cJSON_AddNumberToObject(out, "childrenLeftOut", left);
    cJSON_Delete(arr);
}

static void emit(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    if (s) {
        fputs(s, stdout);
        cJSON_free(s);
    }
    fflush(stdout);
    cJSON_Delete(o);
}

static void emit_error(const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    emit(o);
}

/* The samples of cluster stacks --no-inject: read from outside, nothing loaded. */
static void rank_child_readonly(pid_t pid, const struct cli_cluster_opts *o)
{
    struct pb_err err = {0};
    cJSON *out = cJSON_CreateObject();
    cJSON_AddBoolToObject(out, "injected", 0);
    cJSON *samples = cJSON_AddArrayToObject(out, "samples");
    if (cli_cluster_pool_safe() < 0) { /* nothing to protect: a kill is safe at any time */
        cJSON_Delete(out);
        return;
    }
    for (int s = 0; s < o->samples; s++) {
        if (s > 0) {
            struct timespec ts = {(time_t)o->interval,
                                  (long)((o->interval - (double)(time_t)o->interval) * 1e9)};
            nanosleep(&ts, NULL);
        }
        cJSON *body = cli_read_dump(pid, 256, 0, &err);
        if (!body) {
            cJSON_Delete(out);
            emit_error(err.msg);
            return;
        }
        cJSON_AddItemToArray(samples, select_threads(body, o->thread));
        cJSON_Delete(body);
    }
    if (o->subprocesses)
        add_children(out, pid, o->thread);
    emit(out);
}

/* The rank's latest limit records of torch.collectives (no GIL needed: a rank stuck holding it
 * answers); the probing/query body in *body. Returns 0 or a negative code. */
static int comm_rows(struct dap_client *dc, int limit, cJSON **body, struct pb_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s %d", cli_cluster_comm_sql, limit);
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "sql", sql);
    *body = NULL;
    return dap_client_request(dc, "probing/query", args, body, err);
}

/* In a worker (pool.c), for rank i: inject if needed with the usual signals held back (an
 * injection must finish to restore the target), then ask. Writes one JSON object on stdout. */
static void rank_child(int i, void *p)
{
    struct local_ctx *lc = p;
    const struct cli_cluster_opts *o = lc->o;
    pid_t pid = (pid_t)cli_json_num(lc->ranks[i], "pid", 0);
    struct pb_err err = {0};
    sigset_t hold, old;
    if (o->no_inject) {
        rank_child_readonly(pid, o);
        return;
    }
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    sigaddset(&hold, SIGQUIT);
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_BLOCK, &hold, &old);
    int injected = 0, rc = 0;
    struct dap_client dc;
    dap_client_init(&dc, o->rank_timeout_ms);
    /* Loaded when the ranks were found: its socket at once, no second read of its maps; one that
     * does not answer goes the usual way (an orphaned probe is loaded again). */
    const char *probe = cli_json_str(lc->ranks[i], "probe");
    int connected =
        probe && strcmp(probe, "loaded") == 0 && cli_connect_pid(pid, 0, &dc, &err) == 0;
    pb_err_clear(&err);
    /* Not loaded when found: loaded from the maps read then (find.c keeps them), no second read
     * before the lock. Otherwise (loaded but not answering: a fork's orphaned copy) from fresh
     * reads, as any command. */
    if (!connected && probe && strcmp(probe, "not loaded") == 0) {
        rc = cli_probe_ensure_unloaded(pid, &injected, NULL, 0, &err);
    } else if (!connected) {
        ptrace_maps_keep_forget(pid);
        rc = cli_probe_ensure(pid, &injected, NULL, 0, &err);
    }
    ptrace_maps_keep_forget(pid); /* what is read of the rank from now on is read afresh */
    /* Past the injection: a kill is safe now. */
    int given_up = cli_cluster_pool_safe() < 0;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (given_up) {
        dap_client_close(&dc);
        return;
    }
    if (rc < 0) {
        dap_client_close(&dc);
        emit_error(err.msg);
        return;
    }
    if (!connected)
        rc = cli_connect_pid(pid, 5000, &dc, &err);
    if (rc == 0)
        rc = cli_handshake(&dc, NULL, &err);
    if (rc < 0) {
        dap_client_close(&dc);
        emit_error(err.msg);
        return;
    }
    cJSON *out = cJSON_CreateObject(), *body = NULL;
    cJSON_AddBoolToObject(out, "injected", injected);
    if (o->op == CLUSTER_OP_STACKS) {
        cJSON *samples = cJSON_AddArrayToObject(out, "samples");
        for (int s = 0; s < o->samples && rc == 0; s++) {
            if (s > 0) {
                struct timespec ts = {(time_t)o->interval,
                                      (long)((o->interval - (double)(time_t)o->interval) * 1e9)};
                nanosleep(&ts, NULL);
            }
            cJSON *args = cJSON_CreateObject();
            cJSON_AddBoolToObject(args, "locals", 0);
            if (o->native)
                cJSON_AddStringToObject(args, "native", "merged");
            if (o->tasks && s == o->samples - 1)
                cJSON_AddBoolToObject(args, "tasks", 1);
            rc = dap_client_request(&dc, "probing/dump", args, &body, &err);
            if (rc == 0)
                cJSON_AddItemToArray(samples, select_threads(body, o->thread));
            if (rc == 0 && o->tasks && s == o->samples - 1)
                compact_tasks(out, cJSON_GetObjectItemCaseSensitive(body, "asyncio"));
            cJSON_Delete(body);
            body = NULL;
        }
        if (rc == 0 && o->subprocesses)
            add_children(out, pid, o->thread);
        /* The recorder's last calls, for the hang line above the groups; none is no error. A
         * probe this run loaded has none (only a start request opens the recorder): not asked,
         * which spares that rank its first query's store (36 tables declared: 1.3-2 ms of its
         * CPU, half of what a rank costs in a first run). */
        struct pb_err cerr = {0};
        if (rc == 0 && !injected && comm_rows(&dc, 64, &body, &cerr) == 0)
            cJSON_AddItemToObject(out, "comm", body);
    } else if (o->op == CLUSTER_OP_COMM) {
        cli_query_wait(&dc, o->rank_timeout_ms);
        rc = comm_rows(&dc, 2000, &body, &err);
        if (rc == 0) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            cJSON_AddItemToObject(out, "comm", body);
            cJSON_AddNumberToObject(out, "comm_read_at",
                                    (double)now.tv_sec + (double)now.tv_nsec / 1e9);
        }
        /* Where the rank is (read without the GIL): named beside torch's sequence numbers. */
        body = NULL;
        if (rc == 0) {
            cJSON *args = cJSON_CreateObject();
            cJSON_AddBoolToObject(args, "locals", 0);
            struct pb_err derr = {0};
            if (dap_client_request(&dc, "probing/dump", args, &body, &derr) == 0) {
                cJSON *sel = select_threads(body, CLUSTER_THREAD_AUTO);
                cJSON *t = cJSON_GetArrayItem(sel, 0);
                cJSON *frames = t ? cJSON_DetachItemFromObjectCaseSensitive(t, "frames") : NULL;
                while (frames && cJSON_GetArraySize(frames) > 32)
                    cJSON_DeleteItemFromArray(frames, 32);
                if (frames)
                    cJSON_AddItemToObject(out, "where", frames);
                cJSON_Delete(sel);
            }
            cJSON_Delete(body);
        }
        /* torch's flight recorder, read under the GIL: a rank holding it (stuck in C) does not
         * answer, so a short bound, and its records above are what counts. */
        struct pb_err ferr = {0};
        body = NULL;
        dc.timeout_ms = o->rank_timeout_ms < 3000 ? o->rank_timeout_ms : 3000;
        if (rc == 0) {
            cJSON *args = cJSON_CreateObject();
            cJSON_AddStringToObject(args, "action", "flight_recorder");
            if (dap_client_request(&dc, "probing/comm", args, &body, &ferr) == 0)
                cJSON_AddItemToObject(out, "fr", body);
            else
                cJSON_AddStringToObject(out, "fr_error", ferr.msg);
        }
        /* Each process group's sequence number as torch keeps it: what a job on which the
         * recorder never ran still tells. Under the GIL too: after a flight recorder request
         * that got no answer, the worker is still waiting for it, so that answer stands. One
         * the probe refused (the GIL not had within its bound: nothing was run) is no such
         * verdict: the sequence request has its own wait (CI: a rank of a loaded machine whose
         * GIL was free went unread). */
        if (rc == 0) {
            body = NULL;
            struct pb_err serr = {0};
            if (cJSON_GetObjectItemCaseSensitive(out, "fr_error") && ferr.code != PB_EREFUSED) {
                serr = ferr;
            } else {
                cJSON *args = cJSON_CreateObject();
                cJSON_AddStringToObject(args, "action", "sequence");
                if (dap_client_request(&dc, "probing/comm", args, &body, &serr) == 0) {
                    cJSON_AddItemToObject(out, "seq", body);
                    /* Again a second later: a hang is numbers that stay (a job at work moves
                     * on; ranks read a moment apart may differ by one without a hang). */
                    struct timespec ts = {CLUSTER_SEQ_WAIT_MS / 1000,
                                          (CLUSTER_SEQ_WAIT_MS % 1000) * 1000000L};
                    nanosleep(&ts, NULL);
                    struct pb_err lerr = {0};
                    cJSON *later = NULL;
                    args = cJSON_CreateObject();
                    cJSON_AddStringToObject(args, "action", "sequence");
                    if (dap_client_request(&dc, "probing/comm", args, &later, &lerr) == 0)
                        cJSON_AddItemToObject(out, "seq_later", later);
                }
            }
            if (serr.msg[0]) {
                char msg[400];
                snprintf(msg, sizeof msg, "%s%s", serr.msg,
                         serr.code == PB_ETIMEDOUT
                             ? " (a thread holds its GIL: see where in 'probing cluster stacks')"
                             : "");
                cJSON_AddStringToObject(out, "seq_error", msg);
            }
        }
    } else if (o->op == CLUSTER_OP_QUERY) {
        cli_query_wait(&dc, o->rank_timeout_ms);
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "sql", o->sql);
        rc = dap_client_request(&dc, "probing/query", args, &body, &err);
        if (rc == 0)
            cJSON_AddItemToObject(out, "result", body);
    } else {
        cJSON *args = cJSON_CreateObject();
        cJSON_AddBoolToObject(args, "locals", 1);
        rc = dap_client_request(&dc, "probing/dump", args, &body, &err);
        if (rc == 0 && o->subprocesses)
            cli_children_add(body, pid, 1, 256);
        if (rc == 0)
            cJSON_AddItemToObject(out, "dump", body);
    }
    cli_disconnect_nowait(&dc); /* every request above only reads */
    if (rc < 0) {
        cJSON_Delete(out);
        emit_error(err.msg);
    } else {
        emit(out);
    }
}

/* Workers for n ranks: POOL_PER_CPU a CPU (a worker waits on its rank's probe part of the
 * time), at most one a rank. PROBING_RANK_WORKERS overrides it (1 to 256, checked with the
 * options: cluster.c). */
#define POOL_PER_CPU 4
static int pool_workers(int n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int w = (int)((cpus > 0 ? cpus : 1) * POOL_PER_CPU);
    const char *env = getenv("PROBING_RANK_WORKERS");
    if (env && atoi(env) >= 1 && atoi(env) <= 256)
        w = atoi(env);
    return w < n ? w : n;
}

/* Replaces each thread's frames by the index of its stack in the node's table. */
static void intern_samples(cJSON *samples, cJSON *stacks, struct flame_intern *tab)
{
    cJSON *sample, *t;
    cJSON_ArrayForEach(sample, samples)
    {
        cJSON_ArrayForEach(t, sample)
        {
            cJSON *frames = cJSON_DetachItemFromObjectCaseSensitive(t, "frames");
            int is_new = 0, id = cli_cluster_intern_id(tab, cli_cluster_stack_key(frames), &is_new);
            if (is_new)
                cJSON_AddItemToArray(stacks, frames);
            else
                cJSON_Delete(frames);
            cJSON_AddNumberToObject(t, "stack", id);
        }
    }
}

static cJSON *collect(const struct cli_cluster_opts *o)
{
    cJSON *doc = cJSON_CreateObject(), *found = cli_cluster_find_ranks();
    cJSON_AddStringToObject(doc, "node", cli_cluster_node_name());
    cJSON *ranks = cJSON_AddArrayToObject(doc, "ranks");
    cJSON *stacks = o->op == CLUSTER_OP_STACKS ? cJSON_AddArrayToObject(doc, "stacks") : NULL;
    while (cJSON_GetArraySize(found) > 0) {
        cJSON *r = cJSON_DetachItemFromArray(found, 0);
        if (o->job && strcmp(o->job, cli_json_str(r, "job")) != 0)
            cJSON_Delete(r);
        else
            cJSON_AddItemToArray(ranks, r);
    }
    cJSON_Delete(found);
    int all = cJSON_GetArraySize(ranks), n = 0;
    if (o->op == CLUSTER_OP_LIST || all == 0)
        return doc;
    struct local_ctx lc = {o, calloc((size_t)all, sizeof(cJSON *))};
    struct cli_cluster_child *kids = calloc((size_t)all, sizeof *kids);
    if (!lc.ranks || !kids) {
        free(lc.ranks);
        free(kids);
        return doc;
    }
    cJSON *r0;
    cJSON_ArrayForEach(r0, ranks)
    {
        /* Anyone can put RANK, WORLD_SIZE and the job's MASTER_ADDR in their own process: one
         * run by another user than the job's is not injected (nor read) unless asked. */
        if (cli_json_true(r0, "foreign") && !o->any_uid) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "rank %d (pid %d) belongs to uid %d, not the job's uid %d: "
                     "not injected (--any-uid to ask it anyway)",
                     (int)cli_json_num(r0, "rank", -1), (int)cli_json_num(r0, "pid", 0),
                     (int)cli_json_num(r0, "uid", -1), (int)cli_json_num(r0, "job_uid", -1));
            cJSON_AddStringToObject(r0, "error", msg);
            continue;
        }
        lc.ranks[n] = r0;
        n++;
    }
    int timeout = o->rank_timeout_ms +
                  (o->op == CLUSTER_OP_STACKS ? (int)((o->samples - 1) * o->interval * 1000) : 0);
    fflush(stdout);
    if (n > 0 && !o->no_inject) {
        cli_inject_lock_sweep_once(); /* here, not in each rank's child */
        char dir[PATH_MAX];
        cli_libdir(dir, sizeof dir); /* resolved once here: the children inherit it */
    }
    if (n > 0)
        cli_cluster_run_pool(kids, n, pool_workers(n), timeout, rank_child, &lc);
    struct flame_intern tab = {0};
    for (int i = 0; i < n; i++) {
        cJSON *r = lc.ranks[i], *ans = NULL;
        char msg[512];
        struct cli_cluster_child *k = &kids[i];
        msg[0] = '\0';
        if (k->state == CLUSTER_CHILD_TIMEDOUT)
            snprintf(msg, sizeof msg, "no answer within %d ms%s", timeout,
                     k->olen == 0 ? " (the injection was still running)" : "");
        else if (k->olen > 1 && !(ans = cJSON_Parse(k->obuf + 1)))
            snprintf(msg, sizeof msg, "unreadable answer from the child for pid %d",
                     (int)cli_json_num(r, "pid", 0));
        else if (!ans)
            snprintf(msg, sizeof msg, "the child for pid %d failed (status %d)%s%.200s",
                     (int)cli_json_num(r, "pid", 0), k->status, k->elen ? ": " : "",
                     k->ebuf ? k->ebuf : "");
        else if (cli_json_str(ans, "error"))
            snprintf(msg, sizeof msg, "%s", cli_json_str(ans, "error"));
        if (msg[0]) {
            cJSON_AddStringToObject(r, "error", msg);
        } else {
            cJSON *it = ans->child;
            while (it) {
                cJSON *nx = it->next;
                cJSON_AddItemToObject(r, it->string, cJSON_DetachItemViaPointer(ans, it));
                it = nx;
            }
            if (stacks) {
                intern_samples(cJSON_GetObjectItemCaseSensitive(r, "samples"), stacks, &tab);
                cJSON *kid;
                cJSON_ArrayForEach(kid, cJSON_GetObjectItemCaseSensitive(r, "children"))
                    intern_samples(cJSON_GetObjectItemCaseSensitive(kid, "samples"), stacks, &tab);
                cJSON *tasks = cJSON_GetObjectItemCaseSensitive(r, "tasks");
                if (tasks) { /* interned as a sample's threads are */
                    cJSON *one = cJSON_CreateArray();
                    cJSON_AddItemReferenceToArray(one, tasks);
                    intern_samples(one, stacks, &tab);
                    cJSON_Delete(one);
                }
            }
        }
        cJSON_Delete(ans);
        cli_cluster_child_free(k);
    }
    flame_intern_free(&tab);
    free(kids);
    free(lc.ranks);
    return doc;
}

cJSON *cli_cluster_local_collect(const struct cli_cluster_opts *o)
{
    /* A job's ranks run the same interpreter: its version read from each file once, in finding
     * them and in the children forked to inject (they inherit what was read); and each rank's
     * maps read once, in finding it: a child injecting works from them. Both only for this
     * collect (a process that lives on, such as serve, reads afresh after it). */
    ptrace_pyver_memo(1);
    ptrace_maps_keep(1);
    cJSON *doc = collect(o);
    ptrace_maps_keep(0);
    ptrace_pyver_memo(0);
    return doc;
}
