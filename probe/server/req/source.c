/* SPDX-License-Identifier: MIT */
/* DAP: SourceRequest. The text of arguments.sourceReference (> 0: the code of a stopped
 * frame that has no file, e.g. <string>) or of source.path, read on the worker with the GIL
 * (linecache and the module's loader). Body: content, mimeType. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"

struct sourcejob {
    struct srv_job_rc rc;
    long long sref;
    char *path;
    char *content, *mime;
};

static int parse(struct srv_ctx *c, const cJSON *args, void *job)
{
    struct sourcejob *j = job;
    const char *path = NULL;
    int rc = dap_arg_int(args, "sourceReference", &j->sref, &c->err);
    if (rc < 0)
        return rc;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(args, "source");
    if (j->sref <= 0 && cJSON_IsObject(src)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(src, "sourceReference");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(src, "path");
        if (cJSON_IsNumber(r))
            j->sref = (long long)r->valuedouble;
        if (cJSON_IsString(p))
            path = p->valuestring;
    }
    if (j->sref <= 0 && !path)
        return pb_err_set(&c->err, PB_EBADARG,
                          "arguments.sourceReference: expected a "
                          "reference > 0 (or source.path)");
    if (path && !(j->path = strdup(path)))
        return pb_err_set(&c->err, -ENOMEM, "out of memory");
    return 0;
}

/* Worker thread, GIL held. */
static void run(void *job)
{
    struct sourcejob *j = job;
    j->rc.rc = dbg_source(j->sref, j->path, &j->content, &j->mime, &j->rc.err);
}

static int reply(struct srv_reply *r, void *job, cJSON *body)
{
    (void)r;
    const struct sourcejob *j = job;
    cJSON_AddStringToObject(body, "content", j->content);
    if (j->mime)
        cJSON_AddStringToObject(body, "mimeType", j->mime);
    return 0;
}

static void drop(void *job)
{
    struct sourcejob *j = job;
    free(j->path);
    free(j->content);
    free(j->mime);
}

const struct srv_job srv_job_source = {
    .size = sizeof(struct sourcejob), .parse = parse, .run = run, .reply = reply, .drop = drop};
