/* SPDX-License-Identifier: MIT */
/* probing/crash (custom; docs/protocol.md): crash capture (crash/crash.h, docs/crash.md).
 * Arguments: enable (boolean, optional): true arms, false disarms, absent only reports.
 * Body: armed, path (where a crash report of this process goes), signals (the names caught),
 * previous (what handled each before arming: "default", "ignore" or "handler"; empty when not
 * armed), changed (whether this request armed or disarmed), fired (a report was written).
 * Loop thread; no GIL. */
#include "crash/crash.h"
#include "server/server.h"

int srv_req_probing_crash(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(args, "enable");
    if (en && !cJSON_IsBool(en))
        return pb_err_set(&c->err, PB_EBADARG, "arguments.enable: expected boolean");
    int changed = 0, rc;
    struct probe_crash_status st;
    if (en) {
        crash_status_get(&st);
        int was = st.armed;
        if (cJSON_IsTrue(en)) {
            if ((rc = crash_arm(&c->err)) < 0)
                return rc;
            changed = !was;
        } else {
            changed = crash_disarm();
        }
    }
    crash_status_get(&st);
    cJSON_AddBoolToObject(body, "armed", st.armed);
    cJSON_AddBoolToObject(body, "changed", changed);
    cJSON_AddBoolToObject(body, "fired", st.fired);
    cJSON_AddStringToObject(body, "path", st.path);
    cJSON *sigs = cJSON_AddArrayToObject(body, "signals");
    cJSON *prev = cJSON_AddObjectToObject(body, "previous");
    for (int i = 0; i < PROBE_CRASH_NSIGS; i++) {
        const char *name = sig_crash_signame(probe_crash_signals[i]);
        cJSON_AddItemToArray(sigs, cJSON_CreateString(name));
        if (st.armed)
            cJSON_AddStringToObject(prev, name, st.previous[i]);
    }
    return 0;
}
