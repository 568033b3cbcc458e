/* SPDX-License-Identifier: MIT */
/* DAP: SetVariableRequest. arguments.value is Python, evaluated where the variable lives (the
 * stopped frame, or __main__) on the worker with the GIL, and stored as name in
 * variablesReference's container; the program sees it. Its output goes out as `output`
 * events before the response; an exception is the error, with its traceback. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"

struct setjob {
    struct srv_job_rc rc;
    long long ref;
    char *name, *value;
    struct probe_dbg_var var;
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct setjob *j = job;
    const char *name = NULL, *value = NULL;
    int rc;
    if ((rc = dap_arg_int(args, "variablesReference", &j->ref, &c->err)) != 0)
        return rc < 0 ? rc
                      : pb_err_set(&c->err, PB_EBADARG,
                                   "arguments.variablesReference: expected integer");
    if ((rc = dap_arg_str(args, "name", &name, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "value", &value, &c->err)) < 0)
        return rc;
    if (!name || !value)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.%s: expected string",
                          name ? "value" : "name");
    if (!(j->name = strdup(name)) || !(j->value = strdup(value)))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct setjob *j = job;
    j->rc.rc = dbg_set_variable(j->ref, j->name, j->value, &j->var, &j->rc.err, &j->rc.long_msg);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    srv_json_variable_into(body, &((const struct setjob *)job)->var);
    return 0;
}

static void drop(void *job)
{
    struct setjob *j = job;
    dbg_var_free(&j->var);
    free(j->name);
    free(j->value);
}

const struct srv_job srv_job_setVariable = {
    .size = sizeof(struct setjob), .parse = parse, .run = run, .reply = reply, .drop = drop};
