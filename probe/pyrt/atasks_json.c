/* SPDX-License-Identifier: MIT */
/* The asyncio tasks of a snapshot as JSON (docs/protocol.md, probing/dump "asyncio"): built by
 * the probe's probing/dump and by the out-of-process reader (libprobing-read-3.X.so,
 * probe/sig/pyrt_remote.c), so that both give the same shape. Plain C over pyrt.h and cJSON. */
#include <stdint.h>
#include <stdio.h>

#include "atasks_json.h"

static void add_addr(cJSON *o, const char *key, uintptr_t a)
{
    char buf[32];
    snprintf(buf, sizeof buf, "0x%lx", (unsigned long)a);
    cJSON_AddStringToObject(o, key, buf);
}

static cJSON *task_refs(const struct probe_atasks *a, const int *idx, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; arr && i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "0x%lx", (unsigned long)a->tasks[idx[i]].addr);
        cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
    }
    return arr;
}

cJSON *pyrt_atasks_json(const struct probe_atasks *a)
{
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "tasks");
    cJSON_AddBoolToObject(o, "read", 1);
    cJSON_AddStringToObject(o, "via", a->via_memory ? "memory" : "gil");
    cJSON_AddBoolToObject(o, "truncated", a->truncated);
    for (int i = 0; i < a->ntasks; i++) {
        const struct probe_atask *t = &a->tasks[i];
        cJSON *j = cJSON_CreateObject(), *fr;
        add_addr(j, "id", t->addr);
        cJSON_AddStringToObject(j, "name", t->name ? t->name : "?");
        cJSON_AddStringToObject(j, "state", t->state ? t->state : "pending");
        cJSON_AddBoolToObject(j, "running", t->running);
        if (t->coro)
            cJSON_AddStringToObject(j, "coroutine", t->coro);
        else
            cJSON_AddNullToObject(j, "coroutine");
        if (t->loop)
            add_addr(j, "loop", t->loop);
        else
            cJSON_AddNullToObject(j, "loop");
        if (t->thread_id > 0) {
            cJSON_AddNumberToObject(j, "threadId", (double)t->thread_id);
            cJSON_AddNumberToObject(j, "ident", (double)t->ident);
        } else {
            cJSON_AddNullToObject(j, "threadId");
            cJSON_AddNullToObject(j, "ident");
        }
        fr = cJSON_AddArrayToObject(j, "frames");
        for (int k = 0; k < t->nframes; k++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", t->frames[k].func);
            cJSON_AddStringToObject(f, "file", t->frames[k].file);
            cJSON_AddNumberToObject(f, "line", t->frames[k].line);
            cJSON_AddItemToArray(fr, f);
        }
        cJSON_AddBoolToObject(j, "framesTruncated", t->truncated);
        if (t->waiter) {
            cJSON *w = cJSON_AddObjectToObject(j, "waiter");
            add_addr(w, "id", t->waiter);
            cJSON_AddStringToObject(w, "type", t->waiter_type ? t->waiter_type : "?");
        } else {
            cJSON_AddNullToObject(j, "waiter");
        }
        cJSON_AddItemToObject(j, "awaits", task_refs(a, t->awaits, t->nawaits));
        cJSON_AddItemToObject(j, "awaitedBy", task_refs(a, t->by, t->nby));
        if (t->cycle)
            cJSON_AddNumberToObject(j, "cycle", t->cycle);
        else
            cJSON_AddNullToObject(j, "cycle");
        cJSON_AddItemToArray(arr, j);
    }
    cJSON *cy = cJSON_AddArrayToObject(o, "cycles");
    for (int i = 0; i < a->ncycles; i++)
        cJSON_AddItemToArray(cy, task_refs(a, a->cycles[i].tasks, a->cycles[i].n));
    return o;
}
