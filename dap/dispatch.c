/* SPDX-License-Identifier: MIT */
/* The request table and dap_dispatch's shared work: unknown commands, state and authentication
 * checks, the response envelope, error mapping, and post-response hooks. Capabilities for
 * `initialize` are derived from the table, so only what is implemented is advertised. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Sorted by name (strcmp), for bsearch. */
const struct dap_command dap_commands[] = {
    {"attach", dap_req_attach, DAP_F_PREAUTH, NULL},
    {"configurationDone", dap_req_configurationDone, DAP_F_NEEDS_ATTACHED, NULL},
    {"disconnect", dap_req_disconnect, DAP_F_PREAUTH, NULL},
    {"evaluate", dap_req_evaluate, DAP_F_NEEDS_ATTACHED, NULL},
    {"initialize", dap_req_initialize, DAP_F_PREAUTH, dap_post_initialize},
    {"probing/config", dap_req_probing_config, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/dump", dap_req_probing_dump, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/eval", dap_req_probing_eval, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/info", dap_req_probing_info, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/interrupt", dap_req_probing_interrupt, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/listen", dap_req_probing_listen, DAP_F_NEEDS_ATTACHED | DAP_F_UNIX_ONLY, NULL},
    {"probing/memory", dap_req_probing_memory, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/query", dap_req_probing_query, DAP_F_NEEDS_ATTACHED, NULL},
    {"stackTrace", dap_req_stackTrace, DAP_F_NEEDS_ATTACHED, NULL},
    {"threads", dap_req_threads, DAP_F_NEEDS_ATTACHED, NULL},
};
const size_t dap_ncommands = sizeof dap_commands / sizeof dap_commands[0];

static int cmp_command(const void *key, const void *elem)
{
    return strcmp((const char *)key, ((const struct dap_command *)elem)->name);
}

const struct dap_command *dap_command_find(const char *name)
{
    return bsearch(name, dap_commands, dap_ncommands, sizeof dap_commands[0], cmp_command);
}

/* DAP: Capabilities. A capability is advertised when the request behind it is in the table. */
static const struct {
    const char *capability, *command;
} caps_by_command[] = {
    {"supportsConfigurationDoneRequest", "configurationDone"},
    {"supportsEvaluateForHovers", "evaluate"},
    {"supportsClipboardContext", "evaluate"},
    {"supportsTerminateRequest", "terminate"},
    {"supportsSetVariable", "setVariable"},
    {"supportsFunctionBreakpoints", "setFunctionBreakpoints"},
    {"supportsExceptionInfoRequest", "exceptionInfo"},
    {"supportsCancelRequest", "cancel"},
    {"supportsLoadedSourcesRequest", "loadedSources"},
};

cJSON *dap_capabilities(void)
{
    cJSON *caps = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof caps_by_command / sizeof caps_by_command[0]; i++)
        if (dap_command_find(caps_by_command[i].command))
            cJSON_AddBoolToObject(caps, caps_by_command[i].capability, 1);
    return caps;
}
