/* SPDX-License-Identifier: MIT */
/* Placeholder: scopes, variables, setVariable, source (being written). */
#include "dbg_internal.h"

#define NOTYET(name)                                                                              \
    int probe_dbgv_##name(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg)   \
    {                                                                                             \
        (void)args;                                                                               \
        (void)body;                                                                               \
        (void)long_msg;                                                                           \
        return pb_err_set(err, PB_EUNKNOWN, "'" #name "' is not implemented yet");              \
    }
NOTYET(scopes)
NOTYET(variables)
NOTYET(setVariable)
NOTYET(source)

long long probe_dbgv_ref(struct _object *obj)
{
    (void)obj;
    return 0;
}

void dbg_vars_sync(void)
{
}
