/* SPDX-License-Identifier: MIT */
/* DAP: SetBreakpointsRequest. Replaces the line breakpoints of source.path (conditions, hit
 * conditions, logpoints), set on the worker with the GIL. The answer has one Breakpoint per
 * requested one, in order: a line without code, a condition that does not compile, or a
 * failure is verified:false with a message. setFunctionBreakpoints shares the job's parts
 * (srv_bpjob_*). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "debugger/debugger.h"
#include "server/server.h"

static const char *str_field(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

int srv_bpjob_parse(struct srv_ctx *c, struct srv_bpjob *j, const cJSON *args)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(args, "breakpoints");
    int n = cJSON_GetArraySize(list);
    if (n > 10000)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.breakpoints: at most 10000 per file");
    /* The arguments are gone once the handler returns: the specs point into a copy. */
    j->args = cJSON_Duplicate(args, 1);
    j->specs = n ? calloc((size_t)n, sizeof *j->specs) : NULL;
    j->out = n ? calloc((size_t)n, sizeof *j->out) : NULL;
    if (!j->args || (n && (!j->specs || !j->out)))
        return pb_err_set(&c->err, -ENOMEM, "out of memory: no breakpoint was changed");
    list = cJSON_GetObjectItemCaseSensitive(j->args, "breakpoints");
    const cJSON *item;
    cJSON_ArrayForEach(item, list)
    {
        struct probe_dbg_bp_spec *sp = &j->specs[j->n++];
        const cJSON *jl = cJSON_GetObjectItemCaseSensitive(item, "line");
        sp->line = cJSON_IsObject(item) && cJSON_IsNumber(jl) && jl->valuedouble >= 1 &&
                           jl->valuedouble <= INT_MAX
                       ? (int)jl->valuedouble
                       : 0;
        sp->name = str_field(item, "name");
        sp->condition = str_field(item, "condition");
        sp->hit_condition = str_field(item, "hitCondition");
        sp->log_message = str_field(item, "logMessage");
    }
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(j->args, "source");
    j->path = cJSON_IsObject(source) ? str_field(source, "path") : NULL;
    return 0;
}

int srv_bpjob_reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct srv_bpjob *j = job;
    cJSON *arr = cJSON_AddArrayToObject(body, "breakpoints");
    for (int i = 0; i < j->n; i++) {
        const struct probe_dbg_bp *b = &j->out[i];
        cJSON *o = cJSON_CreateObject();
        if (b->id)
            cJSON_AddNumberToObject(o, "id", b->id);
        cJSON_AddBoolToObject(o, "verified", b->verified);
        if (b->line > 0)
            cJSON_AddNumberToObject(o, "line", b->line);
        if (b->message[0])
            cJSON_AddStringToObject(o, "message", b->message);
        if (j->line_breakpoints)
            cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "source"), "path", j->path);
        cJSON_AddItemToArray(arr, o);
    }
    return 0;
}

void srv_bpjob_drop(void *job)
{
    struct srv_bpjob *j = job;
    free(j->specs);
    free(j->out);
    cJSON_Delete(j->args);
}

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct srv_bpjob *j = job;
    const cJSON *source = cJSON_GetObjectItemCaseSensitive(args, "source");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(args, "breakpoints");
    if (!cJSON_IsObject(source) || !str_field(source, "path"))
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.source.path: expected a file path "
                          "(breakpoints in code without a file are not "
                          "supported)");
    if (list && !cJSON_IsArray(list))
        return pb_err_set(&c->err, PB_EBADARG, "arguments.breakpoints: expected array");
    j->line_breakpoints = 1;
    return srv_bpjob_parse(c, j, args);
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct srv_bpjob *j = job;
    j->rc.rc = dbg_set_breakpoints(j->path, j->specs, j->n, j->out, &j->rc.err);
}

const struct srv_job srv_job_setBreakpoints = {.size = sizeof(struct srv_bpjob),
                                               .parse = parse,
                                               .run = run,
                                               .reply = srv_bpjob_reply,
                                               .drop = srv_bpjob_drop};
