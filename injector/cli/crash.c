/* SPDX-License-Identifier: MIT */
/* `inject -c/--crash` and `inject --no-crash` (cli_inject.c): arm or disarm crash capture
 * through probing/crash (docs/crash.md) and say where a report will go. */
#include <stdio.h>

#include "cli.h"

int cli_crash_set(struct dap_client *dc, int enable, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddBoolToObject(args, "enable", enable);
    int rc = dap_client_request(dc, "probing/crash", args, &body, err);
    if (rc < 0)
        return rc;
    const char *path = cli_json_str(body, "path");
    int changed = cli_json_true(body, "changed");
    if (enable)
        printf("crash capture %s: a crash writes %s, then goes on to the previous handler\n",
               changed ? "armed" : "already armed", path ? path : "?");
    else
        printf("crash capture %s\n", changed ? "disarmed: previous handlers restored"
                                             : "was not armed");
    cJSON_Delete(body);
    return 0;
}
