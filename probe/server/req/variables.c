/* SPDX-License-Identifier: MIT */
/* DAP: VariablesRequest. The children of a variablesReference (a frame's locals or globals,
 * or an object), paged with filter/start/count (at most 1000 at once; an unpaged answer that
 * holds more ends with a "..." entry saying so); read on the worker with the GIL. */
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"

struct varsjob {
    struct srv_job_rc rc;
    long long ref, start, count;
    int filter;
    struct probe_dbg_vars vars;
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct varsjob *j = job;
    int rc;
    if ((rc = dap_arg_int(args, "variablesReference", &j->ref, &c->err)) != 0)
        return rc < 0 ? rc
                      : pb_err_set(&c->err, PB_EBADARG,
                                   "arguments.variablesReference: expected integer");
    if ((rc = dap_arg_int(args, "start", &j->start, &c->err)) < 0 ||
        (rc = dap_arg_int(args, "count", &j->count, &c->err)) < 0)
        return rc;
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(args, "filter");
    if (filter && !cJSON_IsNull(filter)) {
        if (cJSON_IsString(filter) && strcmp(filter->valuestring, "indexed") == 0)
            j->filter = PROBE_DBG_VARS_INDEXED;
        else if (cJSON_IsString(filter) && strcmp(filter->valuestring, "named") == 0)
            j->filter = PROBE_DBG_VARS_NAMED;
        else
            return pb_err_set(&c->err, PB_EBADARG,
                              "arguments.filter: expected \"indexed\" or "
                              "\"named\"");
    }
    if (j->start < 0 || j->count < 0)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.%s: expected a number >= 0",
                          j->start < 0 ? "start" : "count");
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct varsjob *j = job;
    j->rc.rc = dbg_variables(j->ref, j->filter, j->start, j->count, &j->vars, &j->rc.err);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct varsjob *j = job;
    cJSON *arr = cJSON_AddArrayToObject(body, "variables");
    for (int i = 0; i < j->vars.n; i++)
        cJSON_AddItemToArray(arr, srv_json_variable(&j->vars.v[i]));
    if (j->vars.more && j->count == 0) {
        /* More than one answer holds: say so where the user looks. */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", "...");
        cJSON_AddStringToObject(o, "value",
                                "more children not shown (the first "
                                "1000 are; ask with start and count)");
        cJSON_AddNumberToObject(o, "variablesReference", 0);
        cJSON_AddItemToArray(arr, o);
    }
    return 0;
}

static void drop(void *job)
{
    dbg_vars_free(&((struct varsjob *)job)->vars);
}

const struct srv_job srv_job_variables = {
    .size = sizeof(struct varsjob), .parse = parse, .run = run, .reply = reply, .drop = drop};
