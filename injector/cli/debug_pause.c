/* SPDX-License-Identifier: MIT */
/* `probing -p PID debug --pause [--address HOST:PORT]` and `debug --resume`: stop the target
 * where it is and keep it stopped, serving DAP on TCP (with a token), until a debugger attaches
 * and continues it or --resume releases it; the way to debug a process on a machine the
 * debugger is not on. See docs/cli.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DEFAULT_ADDRESS "127.0.0.1:9922"

int cli_debug_pause(const struct cli_opts *o, const char *address)
{
    if (o->target.pid <= 0) {
        cli_error("debug --pause needs a local process: probing -p PID debug --pause");
        return CLI_USAGE;
    }
    struct pb_err err = {0};
    struct dap_client dc;
    char token[PB_TOKEN_MAX + 1];
    int generated = cli_token_choose(token, sizeof token, &err);
    if (generated < 0) {
        cli_error("debug --pause: %s", err.msg);
        return CLI_FAIL;
    }
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    cJSON *args = cJSON_CreateObject(), *body = NULL, *pbody = NULL;
    cJSON_AddStringToObject(args, "address", address ? address : DEFAULT_ADDRESS);
    cJSON_AddStringToObject(args, "token", token);
    int rc = dap_client_request(&dc, "probing/listen", args, &body, &err);
    if (rc == 0) {
        args = cJSON_CreateObject();
        cJSON_AddBoolToObject(args, "hold", 1);
        rc = dap_client_request(&dc, "probing/pause", args, &pbody, &err);
    }
    cli_disconnect(&dc);
    if (rc < 0) {
        cJSON_Delete(body);
        cli_error("debug --pause: %s", err.msg);
        return CLI_FAIL;
    }
    const char *addr = cli_json_str(body, "address");
    char host[128] = "127.0.0.1";
    int port = 9922;
    const char *colon = addr ? strrchr(addr, ':') : NULL;
    if (colon) {
        snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
        port = atoi(colon + 1);
    }
    printf("paused %d: it stays paused until a debugger attaches and continues it,\n"
           "or until: probing -p %d debug --resume\n"
           "DAP on %s:%d", (int)o->target.pid, (int)o->target.pid, host, port);
    if (generated)
        printf(", token %s\n", token);
    else
        printf(", token from $PROBING_TOKEN\n");
    printf("VS Code (probing extension), launch.json configuration:\n"
           "  {\"type\": \"probing\", \"request\": \"attach\", \"name\": \"probing %d\",\n"
           "   \"connect\": {\"host\": \"%s\", \"port\": %d}, \"token\": \"%s\"}\n"
           "Any other DAP client: connect to %s:%d and send \"token\" in the attach arguments.\n",
           (int)o->target.pid, host, port, generated ? token : "$PROBING_TOKEN", host, port);
    cJSON_Delete(body);
    cJSON_Delete(pbody);
    return CLI_OK;
}

int cli_debug_resume(const struct cli_opts *o)
{
    cJSON *body = cli_call(o, "debug --resume", "probing/resume", cJSON_CreateObject());
    if (!body)
        return CLI_FAIL;
    if (cli_json_true(body, "wasStopped"))
        printf("resumed %d\n", (int)o->target.pid);
    else
        printf("%d was not paused\n", (int)o->target.pid);
    cJSON_Delete(body);
    return CLI_OK;
}
