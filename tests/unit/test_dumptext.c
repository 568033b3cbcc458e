/* SPDX-License-Identifier: MIT */
/* cli_dump_print's asyncio trees (debug --dump --tasks as text): a loop's trees in the natural
 * order of their root tasks' names (case aside, numbers by value), whatever order the answer
 * lists the tasks in, the last one drawn with the closing branch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "injector/cli/cli.h"
#include "unit.h"

/* stdout of one cli_dump_print of the document text doc. */
static char *printed(const char *doc)
{
    static char out[8192];
    cJSON *d = cJSON_Parse(doc);
    if (!d)
        return NULL;
    unit_capture_begin(1);
    cli_dump_print(d);
    unit_capture_end(out, sizeof out);
    cJSON_Delete(d);
    return out;
}

/* A pending task of loop 0x10 awaiting nothing: a root. */
static void task(char *doc, size_t n, const char *id, const char *name)
{
    size_t at = strlen(doc);
    snprintf(doc + at, n - at,
             "%s{\"id\":\"%s\",\"name\":\"%s\",\"state\":\"pending\",\"loop\":\"0x10\","
             "\"threadId\":1,\"awaits\":[],\"awaitedBy\":[],\"frames\":[]}",
             doc[at - 1] == '[' ? "" : ",", id, name);
}

TEST(dumptext_task_trees_in_natural_order)
{
    char doc[4096] =
        "{\"pid\":7,\"python\":\"3.11.2\",\"gil\":{\"holder\":null,\"available\":true},"
        "\"threads\":[{\"id\":1,\"name\":\"MainThread\",\"main\":true,\"frames\":[]}],"
        "\"asyncio\":{\"read\":true,\"cycles\":[],\"tasks\":[";
    /* in no order (the probe lists them as it finds them), a name twice */
    task(doc, sizeof doc, "0x5", "Task-10");
    task(doc, sizeof doc, "0x1", "gpu-owner");
    task(doc, sizeof doc, "0x4", "Task-9");
    task(doc, sizeof doc, "0x2", "Task-1");
    task(doc, sizeof doc, "0x3", "Task-9");
    strcat(doc, "]}}");
    const char *out = printed(doc);
    ASSERT(out != NULL);
    const char *g = strstr(out, "\"gpu-owner\""), *t1 = strstr(out, "\"Task-1\" ");
    const char *t9 = strstr(out, "\"Task-9\""), *t10 = strstr(out, "\"Task-10\"");
    ASSERT(g && t1 && t9 && t10);
    ASSERT(g < t1 && t1 < t9 && t9 < t10);
    ASSERT(strstr(t9 + 1, "\"Task-9\"") != NULL && strstr(t9 + 1, "\"Task-9\"") < t10); /* both */
    ASSERT(strstr(out, "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 (T) \"Task-10\"") != NULL); /* └── */
    ASSERT(strstr(out, "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 (T) \"gpu-owner\"") != NULL); /* ├── */
}
