/* SPDX-License-Identifier: MIT */
/* DAP message envelopes (DAP: ProtocolMessage, Request, Response, Event) and typed argument
 * accessors that fail with a precise "arguments.<name>: expected <type>" message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dap.h"

void dap_number_text(double d, char *buf, size_t n)
{
    char tmp[40];
    if (!isfinite(d)) {
        snprintf(buf, n, "null");
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(tmp, sizeof tmp, "%.*g", digits, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    /* The target's locale may print "1,5" (or a multibyte point): JSON wants "1.5". */
    size_t k = 0;
    for (const char *p = tmp; *p && k + 1 < n; p++)
        if (strchr("0123456789+-eE", *p))
            buf[k++] = *p;
        else if (k == 0 || buf[k - 1] != '.')
            buf[k++] = '.';
    buf[k] = '\0';
}

cJSON *dap_json_real(double d)
{
    char buf[40];
    dap_number_text(d, buf, sizeof buf);
    return cJSON_CreateRaw(buf);
}

cJSON *dap_json_int(long long i)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", i);
    return cJSON_CreateRaw(buf);
}

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
