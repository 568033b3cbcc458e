/* SPDX-License-Identifier: MIT */
/* The capturing transport of dapcap.h. */
#include "dapcap.h"

#include <stdio.h>
#include <string.h>

#include "unit.h"

static int cap_send(void *io, const char *buf, size_t len)
{
    struct cap *c = io;
    struct pb_err err;
    return dap_reader_feed(&c->out, buf, len, &err);
}

static void cap_close(void *io)
{
    ((struct cap *)io)->closed = 1;
}

const struct srv_io_ops cap_ops = {cap_send, cap_close};

const char *frame(const char *json, char *buf, size_t n)
{
    snprintf(buf, n, "Content-Length: %zu\r\n\r\n%s", strlen(json), json);
    return buf;
}

cJSON *sent(struct cap *c)
{
    cJSON *m = NULL;
    struct pb_err err;
    return dap_reader_next(&c->out, &m, &err) == 1 ? m : NULL;
}

int feed(struct srv_session *s, int seq, const char *command, const char *args)
{
    char json[2048], buf[2200];
    snprintf(json, sizeof json, "{\"seq\":%d,\"type\":\"request\",\"command\":\"%s\"%s%s}", seq,
             command, args ? ",\"arguments\":" : "", args ? args : "");
    frame(json, buf, sizeof buf);
    return srv_session_feed(s, buf, strlen(buf));
}

cJSON *ask(struct srv_session *s, struct cap *c, int seq, const char *command, const char *args)
{
    feed(s, seq, command, args);
    cJSON *m;
    while ((m = sent(c))) {
        if (strcmp(cJSON_GetObjectItem(m, "type")->valuestring, "response") == 0) {
            ASSERT_EQ(cJSON_GetObjectItem(m, "request_seq")->valueint, seq);
            return m;
        }
        if (!c->events)
            c->events = cJSON_CreateArray();
        cJSON_AddItemToArray(c->events, m);
    }
    return NULL;
}

int ok(const cJSON *resp)
{
    return resp && cJSON_IsTrue(cJSON_GetObjectItem(resp, "success"));
}

const char *message(const cJSON *resp)
{
    const cJSON *m = cJSON_GetObjectItem(resp, "message");
    return cJSON_IsString(m) ? m->valuestring : "";
}

const cJSON *body_get(const cJSON *resp, const char *k)
{
    return cJSON_GetObjectItem(cJSON_GetObjectItem(resp, "body"), k);
}

struct srv_session *cap_attached(struct cap *c)
{
    memset(c, 0, sizeof *c);
    dap_reader_init(&c->out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, c, SRV_TRANSPORT_UNIX);
    cJSON *r = ask(s, c, 1, "attach", NULL);
    int attached = ok(r);
    cJSON_Delete(r);
    if (!attached) {
        cap_finish(s, c);
        return NULL;
    }
    return s;
}

void cap_finish(struct srv_session *s, struct cap *c)
{
    srv_session_unref(s);
    dap_reader_close(&c->out);
    cJSON_Delete(c->events);
    c->events = NULL;
}
