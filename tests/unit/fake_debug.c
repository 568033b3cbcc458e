/* SPDX-License-Identifier: MIT */
/* The probe's debugger as the dap/ unit tests see it: no thread is ever parked, requests are
 * answered with a fixed error (the real debugger is tested end to end against real targets). */
#include <string.h>

#include "debugger/debugger.h"

static probe_dbg_sink fake_sink;
int fake_dbg_detaches;

void probe_dbg_set_sink(probe_dbg_sink sink, void *ctx)
{
    (void)ctx;
    fake_sink = sink;
}

int probe_dbg_has(const char *command)
{
    return strcmp(command, "pause") == 0 || strcmp(command, "continue") == 0;
}

int probe_dbg_request(const char *command, const cJSON *args, probe_dbg_done done, void *arg,
                      struct pb_err *err)
{
    (void)args;
    (void)done;
    (void)arg;
    return pb_err_set(err, PB_ESTATE, "fake debugger: '%s' not served", command);
}

void probe_dbg_detach(void)
{
    fake_dbg_detaches++;
}

void probe_dbg_configured(void)
{
}

int probe_dbg_stack(long tid, long long start, long long levels, cJSON *body)
{
    (void)tid;
    (void)start;
    (void)levels;
    (void)body;
    return 1;
}

int probe_dbg_stopped(void)
{
    return 0;
}

int probe_dbg_parked(long tid)
{
    (void)tid;
    return 0;
}

int probe_dbg_is_library(const char *file)
{
    return file && strstr(file, "/site-packages/") != NULL;
}

void probe_dbg_emit(const char *event, cJSON *body)
{
    (void)event;
    cJSON_Delete(body);
}
