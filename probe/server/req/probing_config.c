/* SPDX-License-Identifier: MIT */
/* probing/config (custom; docs/protocol.md): show or change runtime settings. Arguments: key
 * (string, optional), value (string, optional; needs key). Without key: every setting; with
 * key: that one; with key and value: validate, set, and return it. Body: settings, an array of
 * {name, value, default, allowed, description}. */
#include "server/server.h"
#include "core/settings.h"

static cJSON *setting_json(int i)
{
    struct probe_setting_view v;
    if (core_setting_view_get(i, &v) < 0)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v.name);
    cJSON_AddStringToObject(o, "value", v.value);
    cJSON_AddStringToObject(o, "default", v.dflt);
    cJSON_AddStringToObject(o, "allowed", v.allowed);
    cJSON_AddStringToObject(o, "description", v.description);
    return o;
}

int srv_req_probing_config(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const char *key = NULL, *value = NULL;
    int rc;
    if ((rc = dap_arg_str(args, "key", &key, &c->err)) < 0 ||
        (rc = dap_arg_str(args, "value", &value, &c->err)) < 0)
        return rc;
    if (value && !key)
        return pb_err_set(&c->err, PB_EBADARG, "arguments.value: needs arguments.key");
    cJSON *arr = cJSON_AddArrayToObject(body, "settings");
    if (!key) {
        for (int i = 0; i < core_settings_count(); i++)
            cJSON_AddItemToArray(arr, setting_json(i));
        return 0;
    }
    if (value && (rc = core_setting_set(key, value, &c->err)) < 0)
        return rc;
    int i = core_setting_find(key, &c->err);
    if (i < 0)
        return i;
    cJSON_AddItemToArray(arr, setting_json(i));
    return 0;
}
