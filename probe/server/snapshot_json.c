/* SPDX-License-Identifier: MIT */
/* JSON for interpreter snapshots (pyrt/pyrt.h): the thread objects of `probing/dump`, DAP
 * Thread and StackFrame objects for `threads` and `stackTrace`. The snapshot functions here
 * also leave out the probe's own worker thread, which is not the user's. */
#include "server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyrt/pyrt.h"
#include "snapshot.h"
#include "gil/gil.h"
#include "prof/prof.h"

long srv_thread_id(const struct probe_thread *t)
{
    return pyrt_thread_id(t);
}

void srv_snapshot_drop_worker(struct probe_snapshot *s)
{
    for (int i = 0; i < s->nthreads; i++) {
        if (!gil_worker_owns(s->threads[i].ident))
            continue;
        pyrt_thread_free(&s->threads[i]);
        memmove(&s->threads[i], &s->threads[i + 1],
                sizeof s->threads[0] * (size_t)(s->nthreads - i - 1));
        s->nthreads--;
        i--;
    }
}

cJSON *srv_json_frame(const struct probe_frame *f, int with_locals)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", f->func ? f->func : "?");
    cJSON_AddStringToObject(o, "file", f->file ? f->file : "?");
    cJSON_AddNumberToObject(o, "line", f->line);
    if (f->col > 0) { /* 3.11+: the instruction's source range (docs/protocol.md) */
        cJSON_AddNumberToObject(o, "column", f->col);
        cJSON_AddNumberToObject(o, "endLine", f->end_line);
        cJSON_AddNumberToObject(o, "endColumn", f->end_col);
    }
    if (with_locals && f->nlocals >= 0) {
        cJSON *ls = cJSON_AddArrayToObject(o, "locals");
        for (int i = 0; i < f->nlocals; i++) {
            cJSON *l = cJSON_CreateObject();
            cJSON_AddStringToObject(l, "name", f->locals[i].name ? f->locals[i].name : "?");
            cJSON_AddStringToObject(l, "type", f->locals[i].type ? f->locals[i].type : "?");
            if (f->locals[i].value)
                cJSON_AddStringToObject(l, "value", f->locals[i].value);
            else
                cJSON_AddNullToObject(l, "value");
            cJSON_AddItemToArray(ls, l);
        }
    }
    return o;
}

cJSON *srv_json_thread(const struct probe_thread *t, int with_locals)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)srv_thread_id(t));
    cJSON_AddNumberToObject(o, "ident", (double)t->ident);
    if (t->native_id > 0)
        cJSON_AddNumberToObject(o, "nativeId", (double)t->native_id);
    else
        cJSON_AddNullToObject(o, "nativeId");
    cJSON_AddStringToObject(o, "name", t->name ? t->name : "");
    cJSON_AddStringToObject(o, "nameSource", t->name_from_threading ? "threading" : "os");
    cJSON_AddBoolToObject(o, "holdsGil", t->holds_gil);
    cJSON_AddBoolToObject(o, "main", t->is_main);
    cJSON_AddNumberToObject(o, "interpreter", (double)t->interp_id);
    if (t->daemon >= 0)
        cJSON_AddBoolToObject(o, "daemon", t->daemon);
    else
        cJSON_AddNullToObject(o, "daemon");
    cJSON_AddBoolToObject(o, "truncated", t->truncated);
    cJSON *fr = cJSON_AddArrayToObject(o, "frames");
    for (int i = 0; i < t->nframes; i++)
        cJSON_AddItemToArray(fr, srv_json_frame(&t->frames[i], with_locals));
    return o;
}

const struct probe_thread *srv_snapshot_find(const struct probe_snapshot *s, long id)
{
    for (int i = 0; i < s->nthreads; i++)
        if (srv_thread_id(&s->threads[i]) == id)
            return &s->threads[i];
    return NULL;
}

static cJSON *nframe_json(const struct prof_nframe *f)
{
    cJSON *o = cJSON_CreateObject();
    if (f->kind == PROF_NF_PYTHON) {
        cJSON_AddStringToObject(o, "kind", "python");
        cJSON_AddStringToObject(o, "name", f->name ? f->name : "?");
        cJSON_AddStringToObject(o, "file", f->file ? f->file : "?");
        cJSON_AddNumberToObject(o, "line", f->line);
        return o;
    }
    char hex[32];
    cJSON_AddStringToObject(o, "kind", "native");
    if (f->name)
        cJSON_AddStringToObject(o, "name", f->name);
    else
        cJSON_AddNullToObject(o, "name");
    cJSON_AddNumberToObject(o, "offset", (double)f->offset);
    if (f->file)
        cJSON_AddStringToObject(o, "module", f->file);
    else
        cJSON_AddNullToObject(o, "module");
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)f->pc);
    cJSON_AddStringToObject(o, "address", hex);
    snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)f->bias);
    cJSON_AddStringToObject(o, "bias", hex);
    if (f->internal)
        cJSON_AddBoolToObject(o, "internal", 1);
    return o;
}

cJSON *srv_json_native(const struct prof_nstack *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "answered", s->answered);
    if (s->blocked)
        cJSON_AddBoolToObject(o, "blocked", 1); /* read without a signal (prof/native.c) */
    if (!s->answered) {
        cJSON_AddStringToObject(o, "error",
                                s->blocked   ? "the thread kept waking while its stack was read "
                                               "(a blocked thread is never signalled)"
                                : s->unasked ? "not asked: the dump had already waited 3 s for "
                                               "other threads' native stacks"
                                : s->masked  ? "the thread blocks SIGPROF while it runs: not "
                                               "asked (it could not answer)"
                                : s->tid > 0 ? "the thread did not answer in time "
                                               "(it blocks SIGPROF, or never ran)"
                                             : "the thread's native id is unknown");
        return o;
    }
    cJSON_AddBoolToObject(o, "merged", s->merged);
    cJSON_AddNumberToObject(o, "evalFrames", s->evals);
    cJSON_AddNumberToObject(o, "entryFrames", s->entries);
    cJSON *st = cJSON_AddArrayToObject(o, "frames");
    for (int i = 0; i < s->n; i++)
        cJSON_AddItemToArray(st, nframe_json(&s->f[i]));
    if (!s->merged) {
        cJSON *py = cJSON_AddArrayToObject(o, "pythonFrames");
        for (int i = 0; i < s->npy; i++)
            cJSON_AddItemToArray(py, nframe_json(&s->py[i]));
    }
    return o;
}
