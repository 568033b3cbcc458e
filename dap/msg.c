/* SPDX-License-Identifier: MIT */
/* DAP message envelopes (DAP: ProtocolMessage, Request, Response, Event) and typed argument
 * accessors that fail with a precise "arguments.<name>: expected <type>" message. */
#include "dap.h"


cJSON *dap_msg_request(int seq, const char *command, cJSON *args)
{
    cJSON *m = cJSON_CreateObject();
    if (!m) {
        cJSON_Delete(args);
        return NULL;
    }
    cJSON_AddNumberToObject(m, "seq", seq);
    cJSON_AddStringToObject(m, "type", "request");
    cJSON_AddStringToObject(m, "command", command);
    if (args)
        cJSON_AddItemToObject(m, "arguments", args);
    return m;
}

cJSON *dap_msg_event(int seq, const char *event, cJSON *body)
{
    cJSON *m = cJSON_CreateObject();
    if (!m) {
        cJSON_Delete(body);
        return NULL;
    }
    cJSON_AddNumberToObject(m, "seq", seq);
    cJSON_AddStringToObject(m, "type", "event");
    cJSON_AddStringToObject(m, "event", event);
    if (body)
        cJSON_AddItemToObject(m, "body", body);
    return m;
}

cJSON *dap_msg_response(int seq, int request_seq, const char *command, int success,
                        const char *message, cJSON *body)
{
    cJSON *m = cJSON_CreateObject();
    if (!m) {
        cJSON_Delete(body);
        return NULL;
    }
    cJSON_AddNumberToObject(m, "seq", seq);
    cJSON_AddStringToObject(m, "type", "response");
    cJSON_AddNumberToObject(m, "request_seq", request_seq);
    cJSON_AddBoolToObject(m, "success", success);
    cJSON_AddStringToObject(m, "command", command ? command : "");
    if (message)
        cJSON_AddStringToObject(m, "message", message);
    if (body)
        cJSON_AddItemToObject(m, "body", body);
    return m;
}

static const cJSON *arg_get(const cJSON *args, const char *name)
{
    return cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, name) : NULL;
}

int dap_arg_int(const cJSON *args, const char *name, long long *out, struct pb_err *err)
{
    const cJSON *v = arg_get(args, name);
    if (!v || cJSON_IsNull(v))
        return 1;
    double d = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
    if (!(d <= 9007199254740991.0 && d >= -9007199254740991.0) || d != (double)(long long)d)
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected integer", name);
    *out = (long long)d;
    return 0;
}

int dap_arg_bool(const cJSON *args, const char *name, int *out, struct pb_err *err)
{
    const cJSON *v = arg_get(args, name);
    if (!v || cJSON_IsNull(v))
        return 1;
    if (!cJSON_IsBool(v))
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected boolean", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

int dap_arg_str(const cJSON *args, const char *name, const char **out, struct pb_err *err)
{
    const cJSON *v = arg_get(args, name);
    if (!v || cJSON_IsNull(v))
        return 1;
    if (!cJSON_IsString(v))
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected string", name);
    *out = v->valuestring;
    return 0;
}
