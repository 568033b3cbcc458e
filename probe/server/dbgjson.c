/* SPDX-License-Identifier: MIT */
/* DAP JSON of what the debugger returns as C structs: StackFrame (for stackTrace, from a
 * parked thread's stop record or from a GIL-free snapshot alike) and the bodies of the
 * debugger's events (stopped, continued, output, thread). Loop thread. */
#include <string.h>

#include "debugger/debugger.h"
#include "pyrt/pyrt.h"
#include "server/server.h"

/* A Source: name (the file's base name), and path when the code has a file. */
static cJSON *add_source(cJSON *o, const char *file)
{
    cJSON *src = cJSON_AddObjectToObject(o, "source");
    const char *base = strrchr(file, '/');
    cJSON_AddStringToObject(src, "name", base ? base + 1 : file);
    if (file[0] != '<')
        cJSON_AddStringToObject(src, "path", file);
    return src;
}

cJSON *srv_json_stack_frame(const struct probe_frame *f, long tid, int depth, int inspectable)
{
    long long id = pb_frame_id(tid, depth);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddStringToObject(o, "name", f->func ? f->func : "?");
    const char *file = f->file ? f->file : "?";
    cJSON *src = add_source(o, file);
    if (file[0] == '<' && inspectable) /* `source` reads it from the frame's code */
        cJSON_AddNumberToObject(src, "sourceReference", (double)(id + 1));
    cJSON_AddNumberToObject(o, "line", f->line);
    /* 3.11+: the range of the instruction running (co_positions), which VS Code highlights;
     * else column 1 (DAP requires one) and no range. */
    cJSON_AddNumberToObject(o, "column", f->col > 0 ? f->col : 1);
    if (f->col > 0) {
        cJSON_AddNumberToObject(o, "endLine", f->end_line);
        cJSON_AddNumberToObject(o, "endColumn", f->end_col);
    }
    if (dbg_is_library(f->file))
        cJSON_AddStringToObject(o, "presentationHint", "subtle");
    return o;
}

cJSON *srv_json_dbg_event(const struct probe_dbg_event *e)
{
    cJSON *b = cJSON_CreateObject();
    switch (e->kind) {
    case PROBE_DBG_EV_STOPPED:
        cJSON_AddStringToObject(b, "reason", e->reason);
        if (e->text)
            cJSON_AddStringToObject(b, "description", e->text);
        cJSON_AddNumberToObject(b, "threadId", (double)e->thread_id);
        cJSON_AddBoolToObject(b, "allThreadsStopped", 1);
        if (e->nbp > 0) {
            cJSON *ids = cJSON_AddArrayToObject(b, "hitBreakpointIds");
            for (int i = 0; i < e->nbp; i++)
                cJSON_AddItemToArray(ids, cJSON_CreateNumber(e->bp_ids[i]));
        }
        break;
    case PROBE_DBG_EV_CONTINUED:
        cJSON_AddNumberToObject(b, "threadId", (double)e->thread_id);
        cJSON_AddBoolToObject(b, "allThreadsContinued", 1);
        break;
    case PROBE_DBG_EV_OUTPUT:
        cJSON_AddStringToObject(b, "category", e->category);
        cJSON_AddStringToObject(b, "output", e->text ? e->text : "");
        if (e->path) {
            add_source(b, e->path);
            cJSON_AddNumberToObject(b, "line", e->line);
        }
        break;
    case PROBE_DBG_EV_THREAD:
        cJSON_AddStringToObject(b, "reason", e->reason);
        cJSON_AddNumberToObject(b, "threadId", (double)e->thread_id);
        break;
    }
    return b;
}

void srv_json_children(cJSON *o, long long ref, long long indexed, long long named)
{
    cJSON_AddNumberToObject(o, "variablesReference", (double)ref);
    if (indexed > 0)
        cJSON_AddNumberToObject(o, "indexedVariables", (double)indexed);
    if (named > 0)
        cJSON_AddNumberToObject(o, "namedVariables", (double)named);
}

void srv_json_variable_into(cJSON *o, const struct probe_dbg_var *v)
{
    cJSON_AddStringToObject(o, "value", v->value ? v->value : "?");
    cJSON_AddStringToObject(o, "type", v->type ? v->type : "?");
    srv_json_children(o, v->ref, v->indexed, v->named);
}

cJSON *srv_json_variable(const struct probe_dbg_var *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name ? v->name : "?");
    srv_json_variable_into(o, v);
    if (v->evaluate_name)
        cJSON_AddStringToObject(o, "evaluateName", v->evaluate_name);
    return o;
}
