/* SPDX-License-Identifier: MIT */
/* DAP: ExceptionInfoRequest. The exception a thread stopped on, from its stop record (no GIL):
 * exceptionId, description, breakMode, details (message, typeName, fullTypeName, stackTrace). */
#include <string.h>

#include "debugger/debugger.h"
#include "server/server.h"

int srv_req_exceptionInfo(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    long tid = 0;
    struct dbg_exception e;
    int rc = srv_thread_arg(c, args, &tid);
    if (rc == 0)
        rc = dbg_exception(tid, &e, &c->err);
    if (rc < 0)
        return rc;
    const char *msg = e.message ? e.message : "";
    cJSON_AddStringToObject(body, "exceptionId", e.type);
    cJSON_AddStringToObject(body, "description", msg);
    cJSON_AddStringToObject(body, "breakMode", e.break_mode);
    cJSON *d = cJSON_AddObjectToObject(body, "details");
    cJSON_AddStringToObject(d, "message", msg);
    const char *dot = strrchr(e.type, '.');
    cJSON_AddStringToObject(d, "typeName", dot ? dot + 1 : e.type);
    cJSON_AddStringToObject(d, "fullTypeName", e.type);
    if (e.traceback)
        cJSON_AddStringToObject(d, "stackTrace", e.traceback);
    dbg_exception_free(&e);
    return 0;
}
