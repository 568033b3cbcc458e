/* SPDX-License-Identifier: MIT */
/* asyncio tasks in the debugger's call stack (issue 41, docs/protocol.md): while the target is
 * stopped, the threads answer lists after the Python threads one entry per asyncio task (read
 * with the GIL, with the threads' names), id SRV_TASK_ID_BASE + a number given to the Task
 * object's address the first time it is seen (so the same for a task at every stop while it
 * lives; DAP ids are int32), named `asyncio task "name" (state, what it awaits)`. stackTrace of such an id answers the task's coroutine chain, innermost first, as
 * that threads answer read it (the tasks do not move while every thread is stopped); its
 * frames are not inspectable (scopes: the thread is not stopped). Loop thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"
#include "server/snapshot.h"

struct task_entry {
    long long id;
    int nframes;
    struct probe_frame *frames;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct task_entry *entries;
static int nentries;

/* Task address -> number: open addressing, emptied when half full (the numbers go on from
 * where they were, so an id handed out before is not given to another task until they wrap
 * after SRV_TASK_ID_COUNT). Loop thread only. */
#define SLOT_BITS 14
static struct slot {
    uintptr_t addr;
    long long n;
} * slots; /* allocated at the first task listed (256 KiB) */
static int nslots;
static long long next_n;

/* -1 when out of memory. */
static long long task_number(uintptr_t addr)
{
    size_t mask = ((size_t)1 << SLOT_BITS) - 1, i = (size_t)(addr >> 4) * 2654435761u & mask;
    if (!slots && !(slots = calloc((size_t)1 << SLOT_BITS, sizeof *slots)))
        return -1;
    while (slots[i].addr && slots[i].addr != addr)
        i = (i + 1) & mask;
    if (slots[i].addr == addr)
        return slots[i].n;
    if (nslots >= 1 << (SLOT_BITS - 1)) {
        memset(slots, 0, ((size_t)1 << SLOT_BITS) * sizeof *slots);
        nslots = 0;
        return task_number(addr);
    }
    slots[i].addr = addr;
    slots[i].n = next_n;
    next_n = (next_n + 1) % SRV_TASK_ID_COUNT;
    nslots++;
    return slots[i].n;
}

static void entries_free(struct task_entry *e, int n)
{
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < e[i].nframes; k++) {
            free(e[i].frames[k].func);
            free(e[i].frames[k].file);
        }
        free(e[i].frames);
    }
    free(e);
}

int srv_task_id_is(long long id)
{
    return id >= SRV_TASK_ID_BASE && id < SRV_TASK_ID_BASE + SRV_TASK_ID_COUNT;
}

static void task_name(const struct probe_atasks *a, const struct probe_atask *t, char *buf,
                      size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "asyncio task \"%s\" (%s", t->name ? t->name : "?",
                                t->state ? t->state : "pending");
    if (n < size && t->running)
        n += (size_t)snprintf(buf + n, size - n, ", running");
    if (n < size && t->nawaits == 1) {
        const struct probe_atask *w = &a->tasks[t->awaits[0]];
        n += (size_t)snprintf(buf + n, size - n, ", awaits task \"%s\"", w->name ? w->name : "?");
    } else if (n < size && t->waiter) {
        n += (size_t)snprintf(buf + n, size - n, ", awaits %s",
                              t->waiter_type ? t->waiter_type : "a future");
    }
    if (n < size && t->cycle)
        n += (size_t)snprintf(buf + n, size - n, ", await cycle %d", t->cycle);
    if (n < size)
        snprintf(buf + n, size - n, ")");
}

void srv_tasks_threads(const struct probe_atasks *a, cJSON *threads)
{
    struct task_entry *e = a->ntasks > 0 ? calloc((size_t)a->ntasks, sizeof *e) : NULL;
    int n = 0;
    for (int i = 0; e && i < a->ntasks; i++) {
        const struct probe_atask *t = &a->tasks[i];
        char name[600];
        long long num = task_number(t->addr);
        cJSON *o = num < 0 ? NULL : cJSON_CreateObject();
        if (!o)
            break;
        e[n].id = SRV_TASK_ID_BASE + num;
        e[n].frames = t->nframes > 0 ? calloc((size_t)t->nframes, sizeof *e[n].frames) : NULL;
        for (int k = 0; e[n].frames && k < t->nframes; k++) {
            e[n].frames[k].func = strdup(t->frames[k].func ? t->frames[k].func : "?");
            e[n].frames[k].file = strdup(t->frames[k].file ? t->frames[k].file : "?");
            e[n].frames[k].line = t->frames[k].line;
            e[n].frames[k].nlocals = -1;
            e[n].nframes = k + 1;
        }
        task_name(a, t, name, sizeof name);
        cJSON_AddNumberToObject(o, "id", (double)e[n].id);
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddItemToArray(threads, o);
        n++;
    }
    pthread_mutex_lock(&mu);
    struct task_entry *old = entries;
    int nold = nentries;
    entries = e;
    nentries = n;
    pthread_mutex_unlock(&mu);
    entries_free(old, nold);
}

int srv_tasks_stack(long long id, long long start, long long levels, cJSON *body,
                    struct pb_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&mu);
    const struct task_entry *e = NULL;
    for (int i = 0; i < nentries && !e; i++)
        if (entries[i].id == id)
            e = &entries[i];
    if (!e) {
        rc = pb_err_set(err, PB_EBADARG,
                        "no asyncio task with id %lld: the tasks are those of the last threads "
                        "answer while the target was stopped",
                        id);
    } else {
        cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
        long long end = levels > 0 && start + levels < e->nframes ? start + levels : e->nframes;
        for (long long i = start; i < end; i++)
            cJSON_AddItemToArray(arr, srv_json_stack_frame(&e->frames[i], (long)id, (int)i, 0));
        cJSON_AddNumberToObject(body, "totalFrames", e->nframes);
    }
    pthread_mutex_unlock(&mu);
    return rc;
}
