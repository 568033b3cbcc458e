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
        printf("    note: native stack not read: %s\n", cli_json_text(n, "error"));
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

void cli_dump_print(const cJSON *d)
{
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(d, "threads");
    const cJSON *gil = cJSON_GetObjectItemCaseSensitive(d, "gil");
    const cJSON *holder = cJSON_GetObjectItemCaseSensitive(gil, "holder");
    printf("Process %d, CPython %s, %d Python thread%s\n", (int)cli_json_num(d, "pid", 0),
           cli_json_text(d, "python") ? cli_json_text(d, "python") : "?", cJSON_GetArraySize(threads),
           cJSON_GetArraySize(threads) == 1 ? "" : "s");
    if (cJSON_IsNumber(holder))
        printf("GIL: held by thread %.0f\n", holder->valuedouble);
    else
        printf("GIL: not held\n");
    if (cli_json_text(d, "localsError"))
        printf("note: %s\n", cli_json_text(d, "localsError"));
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
            printf("    %s (%s:%d)\n", cli_json_text(f, "name"), cli_json_text(f, "file"),
                   (int)cli_json_num(f, "line", 0));
            cli_print_locals(f, "        ");
        }
    }
}
