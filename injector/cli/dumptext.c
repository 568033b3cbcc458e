/* SPDX-License-Identifier: MIT */
/* A probing/dump body as text (debug --dump, dump --core): the process line, the GIL, then each
 * thread with its frames innermost first, or its merged native and Python frames when the body
 * has them (debug --dump --native). */
#include <stdio.h>
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
        printf("    note: native stack not read: %s\n", cli_json_text(n, "error") ?
               cli_json_text(n, "error") : "?");
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "frames"))
            printf("    (Python) %s (%s:%d)\n", cli_json_text(f, "name"), cli_json_text(f, "file"),
                   (int)cli_json_num(f, "line", 0));
        return;
    }
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(n, "frames");
    if (cli_json_true(n, "merged")) {
        cJSON_ArrayForEach(f, frames)
            print_nframe(f, "    ");
        return;
    }
    printf("    note: unable to merge the native and Python stacks (%d eval-loop frames, %d "
           "Python entry frames): both shown\n    native:\n",
           (int)cli_json_num(n, "evalFrames", 0), (int)cli_json_num(n, "entryFrames", 0));
    cJSON_ArrayForEach(f, frames)
        print_nframe(f, "      ");
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

void cli_dump_print(const cJSON *d)
{
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(d, "threads");
    const cJSON *gil = cJSON_GetObjectItemCaseSensitive(d, "gil");
    const cJSON *holder = cJSON_GetObjectItemCaseSensitive(gil, "holder");
    const cJSON *others = cJSON_GetObjectItemCaseSensitive(d, "nativeThreads");
    printf("Process %d, CPython %s, %d Python thread%s", (int)cli_json_num(d, "pid", 0),
           cli_json_text(d, "python") ? cli_json_text(d, "python") : "?", cJSON_GetArraySize(threads),
           cJSON_GetArraySize(threads) == 1 ? "" : "s");
    if (cJSON_IsArray(others))
        printf(", %d without Python", cJSON_GetArraySize(others) +
                                          (int)cli_json_num(d, "nativeThreadsLeftOut", 0));
    printf("\n");
    if (cli_json_text(d, "core")) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(d, "executable");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(d, "libpython");
        const cJSON *sg = cJSON_GetObjectItemCaseSensitive(d, "signal");
        printf("Core: %s\n", cli_json_text(d, "core"));
        if (e)
            printf("Executable: %s (build id %s)\n", cli_json_text(e, "path") ? cli_json_text(e, "path") : "?",
                   cli_json_text(e, "buildId") ? cli_json_text(e, "buildId") : "unknown");
        if (l)
            printf("libpython: %s (build id %s)\n", cli_json_text(l, "path"),
                   cli_json_text(l, "buildId") ? cli_json_text(l, "buildId") : "unknown");
        if (cJSON_IsObject(sg))
            printf("Signal: %d (%s)\n", (int)cli_json_num(sg, "number", 0), cli_json_text(sg, "name"));
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
               cli_json_text(t, "name") ? cli_json_text(t, "name") : "", cli_json_num(t, "ident", 0), tags);
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
}
