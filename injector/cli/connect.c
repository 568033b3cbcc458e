/* SPDX-License-Identifier: MIT */
/* The CLI as a DAP client of the probe: connect to a local target (loading the probe when
 * needed) or to a probe listening on TCP (with $PROBING_TOKEN), the handshake of a CLI client,
 * and the one-request helpers the commands share. */
#include <stdlib.h>

#include "cli.h"

/* initialize, and attach when ahead (else the caller's request): one round trip. */
static int handshake(struct dap_client *c, const char *token, int ahead, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "clientID", "probing-cli");
    cJSON_AddStringToObject(args, "adapterID", "probing");
    cJSON_AddBoolToObject(args, "linesStartAt1", 1);
    int rc = dap_client_send_ahead(c, "initialize", args, err);
    if (rc < 0)
        return rc;
    args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "probingClient", "cli");
    if (token)
        cJSON_AddStringToObject(args, "token", token);
    return ahead ? dap_client_send_ahead(c, "attach", args, err)
                 : dap_client_request(c, "attach", args, NULL, err);
}

int cli_handshake(struct dap_client *c, const char *token, struct pb_err *err)
{
    return handshake(c, token, 0, err);
}

int cli_handshake_ahead(struct dap_client *c, const char *token, struct pb_err *err)
{
    return handshake(c, token, 1, err);
}

int cli_connect(const struct cli_opts *o, struct dap_client *c, struct pb_err *err)
{
    const char *token = NULL;
    int rc;
    dap_client_init(c, o->timeout_ms);
    if (o->target.pid > 0) {
        int injected;
        rc = cli_probe_ensure(o->target.pid, &injected, NULL, 0, err);
        if (rc == 0)
            rc = cli_connect_pid(o->target.pid, 5000, c, err);
    } else {
        token = getenv("PROBING_TOKEN");
        if (!token || !*token)
            return pb_err_set(err, PB_EUSAGE,
                              "PROBING_TOKEN is not set: export the token "
                              "printed by 'probing -p PID inject --listen %s:%d'",
                              o->target.host, o->target.port);
        if (cli_token_check(token, err) < 0)
            return err->code;
        rc = dap_client_connect_tcp(c, o->target.host, o->target.port, err);
    }
    if (rc == 0)
        rc = cli_handshake(c, token, err);
    if (rc < 0)
        dap_client_close(c);
    return rc;
}

int cli_open(const struct cli_opts *o, struct dap_client *c)
{
    struct pb_err err = {0};
    if (cli_connect(o, c, &err) < 0) {
        cli_error("%s", err.msg);
        return -1;
    }
    return 0;
}

void cli_disconnect(struct dap_client *c)
{
    struct pb_err err;
    dap_client_request(c, "disconnect", cJSON_CreateObject(), NULL, &err);
    dap_client_close(c);
}

void cli_disconnect_nowait(struct dap_client *c)
{
    struct pb_err err;
    dap_client_send(c, "disconnect", cJSON_CreateObject(), &err);
    dap_client_close(c);
}

static cJSON *call(const struct cli_opts *o, const char *what, const char *command, cJSON *args,
                   int wait)
{
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON *body = NULL;
    int rc = cli_connect(o, &dc, &err);
    if (rc < 0) {
        cJSON_Delete(args);
        cli_error("%s", err.msg);
        return NULL;
    }
    rc = dap_client_request(&dc, command, args, &body, &err);
    if (wait)
        cli_disconnect(&dc);
    else
        cli_disconnect_nowait(&dc);
    if (rc < 0) {
        if (what)
            cli_error("%s: %s", what, err.msg);
        else
            cli_error("%s", err.msg);
        return NULL;
    }
    return body;
}

cJSON *cli_query(struct dap_client *dc, const char *sql, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "sql", sql);
    if (dap_client_request(dc, "probing/query", args, &body, err) < 0)
        return NULL;
    return body;
}

void cli_query_wait(struct dap_client *dc, int base_ms)
{
    struct pb_err err = {0};
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "key", "query.timeout_ms");
    if (dap_client_request(dc, "probing/config", args, &body, &err) == 0) {
        const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(body, "settings"), 0);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "value");
        if (cJSON_IsString(v))
            dc->timeout_ms = base_ms + atoi(v->valuestring);
    }
    cJSON_Delete(body);
}

cJSON *cli_call(const struct cli_opts *o, const char *what, const char *command, cJSON *args)
{
    return call(o, what, command, args, 1);
}

cJSON *cli_call_read(const struct cli_opts *o, const char *what, const char *command, cJSON *args)
{
    return call(o, what, command, args, 0);
}
