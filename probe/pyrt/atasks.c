/* SPDX-License-Identifier: MIT */
/* The asyncio tasks of a snapshot (pyrt.h), once read (asyncio.c): who awaits each task, and the
 * await cycles among them (tasks that wait for each other: a deadlock). Plain C with no CPython
 * dependency. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pyrt.h"

void pyrt_atasks_free(struct probe_atasks *a)
{
    if (!a)
        return;
    for (int i = 0; a->tasks && i < a->ntasks; i++) {
        struct probe_atask *t = &a->tasks[i];
        for (int j = 0; t->frames && j < t->nframes; j++) {
            free(t->frames[j].func);
            free(t->frames[j].file);
        }
        free(t->frames);
        free(t->name);
        free(t->coro);
        free(t->waiter_type);
        free(t->awaits);
        free(t->by);
    }
    for (int i = 0; a->cycles && i < a->ncycles; i++)
        free(a->cycles[i].tasks);
    free(a->tasks);
    free(a->cycles);
    memset(a, 0, sizeof *a);
}

/* Records the cycle path[from..depth-1] (each awaiting the next, the last the first). */
static int cycle_add(struct probe_atasks *a, const int *path, int from, int depth)
{
    struct probe_acycle *c;
    void *n = realloc(a->cycles, (size_t)(a->ncycles + 1) * sizeof *a->cycles);
    if (!n)
        return -ENOMEM;
    a->cycles = n;
    c = &a->cycles[a->ncycles];
    c->n = depth - from;
    if (!(c->tasks = malloc((size_t)c->n * sizeof *c->tasks)))
        return -ENOMEM;
    memcpy(c->tasks, path + from, (size_t)c->n * sizeof *c->tasks);
    a->ncycles++;
    for (int i = 0; i < c->n; i++)
        if (!a->tasks[c->tasks[i]].cycle)
            a->tasks[c->tasks[i]].cycle = a->ncycles;
    return 0;
}

int pyrt_atasks_link(struct probe_atasks *a)
{
    int n = a->ntasks, rc = 0;
    for (int i = 0; i < n; i++) {
        const struct probe_atask *t = &a->tasks[i];
        for (int k = 0; k < t->nawaits; k++) {
            struct probe_atask *w = &a->tasks[t->awaits[k]];
            int *by = realloc(w->by, (size_t)(w->nby + 1) * sizeof *by);
            if (!by)
                return -ENOMEM;
            w->by = by;
            w->by[w->nby++] = i;
        }
    }
    /* Depth-first along the awaits, iteratively (a chain may be thousands of tasks long): a task
     * met again while on the path closes a cycle. Each cycle is found once (from where the walk
     * first entered it). */
    char *color = calloc((size_t)n + 1, 1); /* 0 new, 1 on the path, 2 done */
    int *path = malloc(((size_t)n + 1) * sizeof *path);
    int *edge = malloc(((size_t)n + 1) * sizeof *edge);
    if (!color || !path || !edge) {
        rc = -ENOMEM;
        goto out;
    }
    for (int s = 0; s < n && rc == 0; s++) {
        int depth = 0;
        if (color[s])
            continue;
        path[depth] = s, edge[depth++] = 0, color[s] = 1;
        while (depth > 0 && rc == 0) {
            int u = path[depth - 1];
            const struct probe_atask *t = &a->tasks[u];
            if (edge[depth - 1] >= t->nawaits) {
                color[u] = 2;
                depth--;
                continue;
            }
            int v = t->awaits[edge[depth - 1]++];
            if (color[v] == 1) {
                int from = depth - 1;
                while (from > 0 && path[from] != v)
                    from--;
                rc = cycle_add(a, path, from, depth);
            } else if (color[v] == 0) {
                path[depth] = v, edge[depth++] = 0, color[v] = 1;
            }
        }
    }
out:
    free(color);
    free(path);
    free(edge);
    return rc;
}
