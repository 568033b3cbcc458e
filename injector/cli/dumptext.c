/* SPDX-License-Identifier: MIT */
/* A probing/dump body as text (debug --dump, dump --core): the process line, the GIL, then each
 * thread with its frames innermost first, or its merged native and Python frames when the body
 * has them (debug --dump --native), then the asyncio tasks when asked (--tasks). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void print_nframe(const cJSON *f, const char *indent)
{
    const char *kind = cli_json_str(f, "kind");
    if (kind && strcmp(kind, "python") == 0) {
        printf("%s(Python) %s (%s:%d)\n", indent, cli_json_text(f, "name"),
               cli_json_text(f, "file"), (int)cli_json_num(f, "line", 0));
        return;
    }
    const char *name = cli_json_text(f, "name"), *mod = cli_json_text(f, "module");
    const char *base = mod ? strrchr(mod, '/') : NULL;
    if (name)
        printf("%s(native) %s+0x%llx", indent, name,
               (unsigned long long)cli_json_num(f, "offset", 0));
    else
        printf("%s(native) %s", indent, cli_json_text(f, "address"));
    printf(" in %s", base ? base + 1 : mod ? mod : "?");
    if (cli_json_text(f, "file"))
        printf(" (%s:%d)", cli_json_text(f, "file"), (int)cli_json_num(f, "line", 0));
    printf("\n");
}

/* The merged stack of thread t (debug --dump --native). */
static void print_native(const cJSON *t)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "native"), *f;
    if (!cli_json_true(n, "answered")) {
        printf("    note: native stack not read: %s\n",
               cli_json_text(n, "error") ? cli_json_text(n, "error") : "?");
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
            printf("    (Python) %s (%s:%d)\n", cli_json_text(f, "name"), cli_json_text(f, "file"),
                   (int)cli_json_num(f, "line", 0));
        return;
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(n, "frames");
    if (cli_json_true(n, "merged")) {
        cJSON_ArrayForEach(f, frames) print_nframe(f, "    ");
        return;
    }
    printf("    note: unable to merge the native and Python stacks (%d eval-loop frames, %d "
           "Python entry frames): both shown\n    native:\n",
           (int)cli_json_num(n, "evalFrames", 0), (int)cli_json_num(n, "entryFrames", 0));
    cJSON_ArrayForEach(f, frames) print_nframe(f, "      ");
    printf("    Python:\n");
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(n, "pythonFrames"))
        print_nframe(f, "      ");
}

/* The threads that run no Python (debug --dump --native: nativeThreads). */
static void print_native_only(const cJSON *d)
{
    const cJSON *t, *others = cJSON_GetObjectItemCaseSensitive(d, "nativeThreads");
    cJSON_ArrayForEach(t, others)
    {
        printf("\nThread %.0f \"%s\" (native, no Python)\n", cli_json_num(t, "id", 0),
               cli_json_text(t, "name") ? cli_json_text(t, "name") : "");
        print_native(t);
    }
    if (cli_json_num(d, "nativeThreadsLeftOut", 0) > 0)
        printf("\nnote: %.0f more threads that run no Python not shown\n",
               cli_json_num(d, "nativeThreadsLeftOut", 0));
}

/* ---- asyncio tasks (debug --dump --tasks): a tree per event loop, as `python -m asyncio pstree`
 * draws one: each task under the task that awaits it, its coroutine chain innermost first ---- */

#define TASK_DEPTH 64 /* levels of the tree drawn */

static const cJSON *task_find(const cJSON *tasks, const char *id)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tasks)
    {
        const char *tid = cli_json_str(t, "id");
        if (id && tid && strcmp(tid, id) == 0)
            return t;
    }
    return NULL;
}

static const char *task_label(const cJSON *t)
{
    static char buf[4][600];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "\"%s\"", cli_json_text(t, "name") ? cli_json_text(t, "name") : "?");
    return b;
}

/* A loop's trees in the order of their root tasks' names as people sort them: case aside,
 * numbers by value ("Task-9" before "Task-10", the order asyncio named them in), then by id:
 * the same order from one dump to the next, whatever order the answer lists the tasks in. */
static const char *name_lowered(const cJSON *t, char *buf, size_t n)
{
    const char *name = cli_json_str(t, "name");
    size_t i = 0;
    for (; name && name[i] && i + 1 < n; i++)
        buf[i] = (char)tolower((unsigned char)name[i]);
    buf[i] = '\0';
    return buf;
}

static int task_order(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    char lx[256], ly[256];
    int c = strverscmp(name_lowered(x, lx, sizeof lx), name_lowered(y, ly, sizeof ly));
    if (c)
        return c;
    const char *ix = cli_json_str(x, "id"), *iy = cli_json_str(y, "id");
    return strcmp(ix ? ix : "", iy ? iy : "");
}

/* One task and, below it, the tasks it awaits. path: the tasks above it (a cycle stops there). */
static void task_print(const cJSON *tasks, const cJSON *t, const char *prefix, int last,
                       const char **path, int depth)
{
    const char *id = cli_json_str(t, "id");
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(t, "waiter");
    const cJSON *awaits = cJSON_GetObjectItemCaseSensitive(t, "awaits"), *a, *f;
    int seen = 0;
    for (int i = 0; i < depth && !seen; i++)
        seen = id && strcmp(path[i], id) == 0;
    printf("%s%s (T) %s %s", prefix,
           last ? "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80" /* └── */
                : "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80" /* ├── */,
           task_label(t), cli_json_text(t, "state") ? cli_json_text(t, "state") : "?");
    if (cli_json_true(t, "running"))
        printf(", running");
    if (seen) {
        printf(" (await cycle: see above)\n");
        return;
    }
    if (cJSON_GetArraySize(awaits) == 1)
        printf(", awaits task %s",
               task_label(task_find(tasks, cJSON_GetArrayItem(awaits, 0)->valuestring)));
    else if (cJSON_IsObject(w))
        printf(", awaits %s %s", cli_json_text(w, "type"), cli_json_text(w, "id"));
    printf("\n");
    char sub[4 * TASK_DEPTH + 16];
    snprintf(sub, sizeof sub, "%s%s", prefix, last ? "    " : "\xe2\x94\x82   " /* │ */);
    int nchild = cJSON_GetArraySize(awaits);
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
        printf("%s%s  %s (%s:%d)\n", sub, nchild ? "\xe2\x94\x82" : " ", cli_json_text(f, "name"),
               cli_json_text(f, "file"), (int)cli_json_num(f, "line", 0));
    if (depth + 1 >= TASK_DEPTH) {
        if (nchild)
            printf("%s    ...\n", sub);
        return;
    }
    path[depth] = id ? id : "";
    int i = 0;
    cJSON_ArrayForEach(a, awaits)
    {
        const cJSON *c = cJSON_IsString(a) ? task_find(tasks, a->valuestring) : NULL;
        i++;
        if (c)
            task_print(tasks, c, sub, i == nchild, path, depth + 1);
    }
}

static const char *thread_name(const cJSON *d, double id)
{
    const cJSON *t;
    cJSON_ArrayForEach(
        t, cJSON_GetObjectItemCaseSensitive(d, "threads")) if (cli_json_num(t, "id", -1) ==
                                                               id) return cli_json_text(t, "name");
    return NULL;
}

/* A tree starts at a task no task awaits, and at the first task of a cycle that only the cycle
 * awaits. */
static int task_root(const cJSON *t, const cJSON *cycles)
{
    const cJSON *cy = cJSON_GetObjectItemCaseSensitive(t, "cycle");
    int nby = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "awaitedBy"));
    if (nby == 0)
        return 1;
    const cJSON *c =
        cJSON_IsNumber(cy) ? cJSON_GetArrayItem(cycles, (int)cy->valuedouble - 1) : NULL;
    const char *id = cli_json_str(t, "id");
    const cJSON *f0 = c ? cJSON_GetArrayItem(c, 0) : NULL;
    return nby == 1 && cJSON_IsString(f0) && id && strcmp(f0->valuestring, id) == 0;
}

/* 1 when task u runs on loop (NULL: tasks without one). */
static int in_loop(const cJSON *u, const char *loop)
{
    const char *l2 = cli_json_str(u, "loop");
    return (!loop && !l2) || (loop && l2 && strcmp(loop, l2) == 0);
}

static void tasks_print(const cJSON *d, const cJSON *as)
{
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(as, "tasks"), *t, *c;
    const cJSON *cycles = cJSON_GetObjectItemCaseSensitive(as, "cycles");
    int n = cJSON_GetArraySize(tasks);
    if (!cli_json_true(as, "read")) {
        printf("\nasyncio tasks: not read: %s\n", cli_json_text(as, "error"));
        return;
    }
    const char *via = cli_json_text(as, "via");
    int mem = via && strcmp(via, "memory") == 0;
    printf("\nasyncio: %d task%s, read with%s the GIL%s%s\n", n, n == 1 ? "" : "s",
           mem ? "out" : "", mem ? " (pending tasks; a future awaited is not known)" : "",
           cli_json_true(as, "truncated") ? " (more not read: the bound was reached)" : "");
    cJSON_ArrayForEach(c, cycles)
    {
        const cJSON *id;
        printf("deadlock: await cycle: ");
        cJSON_ArrayForEach(id, c) printf("%s -> ", task_label(task_find(tasks, id->valuestring)));
        printf("%s\n", task_label(task_find(tasks, cJSON_GetArrayItem(c, 0)->valuestring)));
    }
    /* Each loop in the order its first task comes; a loop's roots are the tasks no task awaits,
     * and of each cycle that nothing outside awaits, its first task. */
    const char *path[TASK_DEPTH];
    int i = 0;
    cJSON_ArrayForEach(t, tasks)
    {
        const char *loop = cli_json_str(t, "loop");
        const cJSON *u;
        int j = 0, first = 1;
        cJSON_ArrayForEach(u, tasks)
        {
            if (j++ >= i)
                break;
            if (in_loop(u, loop))
                first = 0;
        }
        i++;
        if (!first)
            continue;
        double tid = cli_json_num(t, "threadId", 0);
        const char *tn = tid > 0 ? thread_name(d, tid) : NULL;
        if (!loop)
            printf("\nTasks without a loop\n");
        else if (tid > 0)
            printf("\nLoop %s in thread %.0f \"%s\"\n", loop, tid, tn ? tn : "");
        else
            printf("\nLoop %s (not running)\n", loop);
        int nroots = 0, k = 0;
        const cJSON **roots = calloc((size_t)n + 1, sizeof *roots);
        cJSON_ArrayForEach(u, tasks)
        {
            if (in_loop(u, loop) && task_root(u, cycles)) {
                if (roots)
                    roots[nroots] = u;
                nroots++;
            }
        }
        if (roots) {
            qsort(roots, (size_t)nroots, sizeof *roots, task_order);
            for (k = 0; k < nroots; k++)
                task_print(tasks, roots[k], "", k + 1 == nroots, path, 0);
        } else { /* no memory to sort them: in the answer's order */
            cJSON_ArrayForEach(u, tasks)
            {
                if (in_loop(u, loop) && task_root(u, cycles))
                    task_print(tasks, u, "", ++k == nroots, path, 0);
            }
        }
        free(roots);
    }
}

void cli_dump_print(const cJSON *d)
{
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(d, "threads");
    const cJSON *gil = cJSON_GetObjectItemCaseSensitive(d, "gil");
    const cJSON *holder = cJSON_GetObjectItemCaseSensitive(gil, "holder");
    const cJSON *others = cJSON_GetObjectItemCaseSensitive(d, "nativeThreads");
    printf("Process %d, CPython %s, %d Python thread%s", (int)cli_json_num(d, "pid", 0),
           cli_json_text(d, "python") ? cli_json_text(d, "python") : "?",
           cJSON_GetArraySize(threads), cJSON_GetArraySize(threads) == 1 ? "" : "s");
    if (cJSON_IsArray(others))
        printf(", %d without Python",
               cJSON_GetArraySize(others) + (int)cli_json_num(d, "nativeThreadsLeftOut", 0));
    printf("\n");
    if (cli_json_text(d, "core")) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "executable");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(d, "libpython");
        const cJSON *sg = cJSON_GetObjectItemCaseSensitive(d, "signal");
        printf("Core: %s\n", cli_json_text(d, "core"));
        if (e)
            printf("Executable: %s (build id %s)\n",
                   cli_json_text(e, "path") ? cli_json_text(e, "path") : "?",
                   cli_json_text(e, "buildId") ? cli_json_text(e, "buildId") : "unknown");
        if (l)
            printf("libpython: %s (build id %s)\n", cli_json_text(l, "path"),
                   cli_json_text(l, "buildId") ? cli_json_text(l, "buildId") : "unknown");
        if (cJSON_IsObject(sg))
            printf("Signal: %d (%s)\n", (int)cli_json_num(sg, "number", 0),
                   cli_json_text(sg, "name"));
        else
            printf("Signal: none (a core of a running process: gcore)\n");
    }
    if (cJSON_IsNumber(holder))
        printf("GIL: held by thread %.0f\n", holder->valuedouble);
    else
        printf("GIL: not held\n");
    if (cli_json_true(d, "gcCollecting"))
        printf("GC: collecting (a garbage collection is running: a thread may be in a finalizer "
               "it called)\n");
    if (cli_json_text(d, "localsError"))
        printf("note: %s\n", cli_json_text(d, "localsError"));
    else if (cli_json_text(d, "localsVia") && strcmp(cli_json_text(d, "localsVia"), "memory") == 0)
        printf("note: locals read from memory without the GIL (simple values only)\n");
    const cJSON *t;
    cJSON_ArrayForEach(t, threads)
    {
        char tags[160] = "";
        double interp = cli_json_num(t, "interpreter", 0);
        if (interp != 0) /* a subinterpreter's thread state */
            snprintf(tags, sizeof tags, ", interp %.0f", interp);
        if (cli_json_true(t, "main"))
            strcat(tags, ", main");
        if (cli_json_true(t, "holdsGil"))
            strcat(tags, ", holds GIL");
        if (cli_json_true(t, "daemon"))
            strcat(tags, ", daemon");
        if (cli_json_true(t, "truncated"))
            strcat(tags, ", stack truncated");
        printf("\nThread %.0f \"%s\" (ident %.0f%s)\n", cli_json_num(t, "id", 0),
               cli_json_text(t, "name") ? cli_json_text(t, "name") : "",
               cli_json_num(t, "ident", 0), tags);
        const cJSON *frames = cJSON_GetObjectItemCaseSensitive(t, "frames"), *f;
        if (cJSON_GetObjectItemCaseSensitive(t, "native")) {
            print_native(t);
            continue;
        }
        if (cJSON_GetArraySize(frames) == 0)
            printf("    (no Python frames)\n");
        cJSON_ArrayForEach(f, frames)
        {
            /* file:line:column on 3.11+ (the column where the running instruction starts) */
            printf("    %s (%s:%d", cli_json_text(f, "name"), cli_json_text(f, "file"),
                   (int)cli_json_num(f, "line", 0));
            if (cli_json_num(f, "column", 0) > 0)
                printf(":%d", (int)cli_json_num(f, "column", 0));
            printf(")\n");
            cli_print_locals(f, "        ");
        }
    }
    print_native_only(d);
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(d, "asyncio");
    if (as)
        tasks_print(d, as);
    cli_children_print(d);
}
