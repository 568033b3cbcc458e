/* SPDX-License-Identifier: MIT */
/* The request table and dap_dispatch's shared work: unknown commands, state and authentication
 * checks, the response envelope, error mapping, and post-response hooks. Capabilities for
 * `initialize` are derived from the table, so only what is implemented is advertised. */
#include "server.h"

#include <stdlib.h>
#include <string.h>

/* Sorted by name (strcmp), for bsearch. */
const struct dap_command dap_commands[] = {
    {"attach", dap_req_attach, DAP_F_PREAUTH, NULL},
    {"configurationDone", dap_req_configurationDone, DAP_F_NEEDS_ATTACHED,
     dap_post_configurationDone},
    {"continue", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"disconnect", dap_req_disconnect, DAP_F_PREAUTH, NULL},
    {"evaluate", dap_req_evaluate, DAP_F_NEEDS_ATTACHED, NULL},
    {"exceptionInfo", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"initialize", dap_req_initialize, DAP_F_PREAUTH, dap_post_initialize},
    {"next", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"pause", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"probing/config", dap_req_probing_config, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/crash", dap_req_probing_crash, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/debugger", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/dump", dap_req_probing_dump, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/eval", dap_req_probing_eval, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/info", dap_req_probing_info, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/interrupt", dap_req_probing_interrupt, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/listen", dap_req_probing_listen, DAP_F_NEEDS_ATTACHED | DAP_F_UNIX_ONLY, NULL},
    {"probing/memory", dap_req_probing_memory, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/pause", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/perf", dap_req_probing_perf, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/query", dap_req_probing_query, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/resume", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"probing/torch", dap_req_probing_torch, DAP_F_NEEDS_ATTACHED, NULL},
    {"scopes", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"setBreakpoints", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"setExceptionBreakpoints", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"setFunctionBreakpoints", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"setVariable", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"source", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
    {"stackTrace", dap_req_stackTrace, DAP_F_NEEDS_ATTACHED, NULL},
    {"stepIn", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"stepOut", dap_req_debug, DAP_F_NEEDS_ATTACHED | DAP_F_DEBUGGER, NULL},
    {"threads", dap_req_threads, DAP_F_NEEDS_ATTACHED, NULL},
    {"variables", dap_req_debug, DAP_F_NEEDS_ATTACHED, NULL},
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
    {"supportsConditionalBreakpoints", "setBreakpoints"},
    {"supportsHitConditionalBreakpoints", "setBreakpoints"},
    {"supportsLogPoints", "setBreakpoints"},
    {"supportsDelayedStackTraceLoading", "stackTrace"},
};

cJSON *dap_capabilities(void)
{
    cJSON *caps = cJSON_CreateObject();
    for (size_t i = 0; i < sizeof caps_by_command / sizeof caps_by_command[0]; i++)
        if (dap_command_find(caps_by_command[i].command))
            cJSON_AddBoolToObject(caps, caps_by_command[i].capability, 1);
    if (dap_command_find("setExceptionBreakpoints")) {
        static const struct {
            const char *filter, *label, *description;
            int dflt;
        } filters[] = {
            {"raised", "Raised Exceptions", "Stop where any exception is raised", 0},
            {"uncaught", "Uncaught Exceptions", "Stop when an exception ends a thread", 1},
        };
        cJSON *arr = cJSON_AddArrayToObject(caps, "exceptionBreakpointFilters");
        for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "filter", filters[i].filter);
            cJSON_AddStringToObject(f, "label", filters[i].label);
            cJSON_AddStringToObject(f, "description", filters[i].description);
            cJSON_AddBoolToObject(f, "default", filters[i].dflt);
            cJSON_AddItemToArray(arr, f);
        }
    }
    return caps;
}
