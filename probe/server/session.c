/* SPDX-License-Identifier: MIT */
/* One DAP connection on the probe side: buffers the byte stream, dispatches each request through
 * the table (dispatch.c) with the shared checks, and sends responses and events, each in one
 * write. Deferred requests hold a reference so they can finish after the peer left. */
#include "server.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Requests of one connection answered later (deferred) and not answered yet. A client that
 * sends more without reading the answers is dropped: the queues behind them (GIL jobs, SQL
 * tasks, timers) are the target's memory. No real client comes near it. */
#define MAX_INFLIGHT 1024

struct srv_session {
    int refs;
    const struct srv_io_ops *ops;
    void *io;
    int transport;
    int seq;
    int attached, debugger, authed;
    int close_after;
    int evals;         /* evaluations of this session queued or running (evaljob.c) */
    int inflight;      /* deferred requests not answered yet */
    int native_frames; /* attach's nativeFrames: SRV_NATIVE_* (server.h) */
    struct dap_reader r;
};

struct srv_pending {
    struct srv_session *s;
    int request_seq;
    char command[64];
};

struct srv_session *srv_session_new(const struct srv_io_ops *ops, void *io, int transport)
{
    struct srv_session *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->refs = 1;
    s->ops = ops;
    s->io = io;
    s->transport = transport;
    s->authed = transport != SRV_TRANSPORT_TCP;
    dap_reader_init(&s->r, 0);
    return s;
}

void srv_session_ref(struct srv_session *s)
{
    s->refs++;
}

void srv_session_unref(struct srv_session *s)
{
    if (!s || --s->refs > 0)
        return;
    dap_reader_close(&s->r);
    free(s);
}

void srv_session_detach_io(struct srv_session *s)
{
    s->io = NULL;
    /* What the session's requests left behind is the services' to end (closed.c). */
    for (size_t i = 0; i < srv_nclosed_hooks; i++)
        srv_closed_hooks[i](s);
}

void srv_session_eval_count(struct srv_session *s, int delta)
{
    s->evals += delta;
}

int srv_session_evals(const struct srv_session *s)
{
    return s->evals;
}

int srv_session_transport(const struct srv_session *s)
{
    return s->transport;
}

void srv_session_set_attached(struct srv_session *s, int debugger)
{
    s->attached = 1;
    s->debugger = debugger;
}

int srv_session_is_attached(const struct srv_session *s)
{
    return s->attached;
}

void srv_session_set_native_frames(struct srv_session *s, int mode)
{
    s->native_frames = mode;
}

int srv_session_native_frames(const struct srv_session *s)
{
    return s->native_frames;
}

void srv_session_set_authed(struct srv_session *s)
{
    s->authed = 1;
    s->r.max_body = DAP_DEFAULT_MAX_BODY;
}

int srv_session_is_authed(const struct srv_session *s)
{
    return s->authed;
}

void srv_session_set_preauth_max(struct srv_session *s, size_t bytes)
{
    if (!s->authed && bytes > 0 && bytes < DAP_DEFAULT_MAX_BODY)
        s->r.max_body = bytes;
}

size_t srv_session_buffered(const struct srv_session *s)
{
    return s->r.len;
}

void srv_session_close_after_reply(struct srv_session *s)
{
    s->close_after = 1;
}

/* Sends msg (deleted here). */
static void send_msg(struct srv_session *s, cJSON *msg)
{
    if (!msg)
        return;
    if (s->io) {
        size_t len = 0;
        char *buf = dap_encode(msg, &len);
        if (buf) {
            PB_LOG(PB_LOG_TRACE, "-> %.*s", (int)(len > 4000 ? 4000 : len), buf);
            if (s->ops->send(s->io, buf, len) < 0)
                s->close_after = 1;
            free(buf);
        }
    }
    cJSON_Delete(msg);
}

void srv_session_event(struct srv_session *s, const char *event, cJSON *body)
{
    send_msg(s, dap_msg_event(++s->seq, event, body));
}

static void send_error(struct srv_session *s, int request_seq, const char *command, int rc,
                       const char *text, int show_user);

static void send_response(struct srv_session *s, int request_seq, const char *command, int rc,
                          cJSON *body, const struct pb_err *err)
{
    if (rc == 0) {
        send_msg(s, dap_msg_response(++s->seq, request_seq, command, 1, NULL, body));
        return;
    }
    cJSON_Delete(body);
    send_error(s, request_seq, command, rc, err && err->msg[0] ? err->msg : pb_strerror(rc), 1);
}

/* An error response; show_user is the DAP error's showUser: whether the client should show it
 * to its user (VS Code shows such an answer to any request as a notification). */
static void send_error(struct srv_session *s, int request_seq, const char *command, int rc,
                       const char *text, int show_user)
{
    cJSON *eb = cJSON_CreateObject();
    cJSON *e = cJSON_AddObjectToObject(eb, "error");
    cJSON_AddNumberToObject(e, "id", rc < 0 ? -rc : rc);
    cJSON_AddStringToObject(e, "format", text);
    cJSON_AddBoolToObject(e, "showUser", show_user);
    send_msg(s, dap_msg_response(++s->seq, request_seq, command, 0, text, eb));
}

static void close_now(struct srv_session *s)
{
    if (s->io) {
        void *io = s->io;
        s->io = NULL;
        s->ops->close(io);
    }
}

/* Handles one request message. Returns <0 when the connection must close at once. */
static int dispatch(struct srv_session *s, const cJSON *req)
{
    const char *command = cJSON_GetObjectItemCaseSensitive(req, "command")->valuestring;
    int request_seq = (int)cJSON_GetObjectItemCaseSensitive(req, "seq")->valuedouble;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(req, "arguments");
    const struct srv_command *cmd = srv_command_find(command);
    struct srv_ctx c = {.s = s, .request_seq = request_seq, .command = command};
    long long tid;
    int rc;

    if (!s->authed && (!cmd || !(cmd->flags & SRV_F_PREAUTH))) {
        PB_LOG(PB_LOG_WARN, "unauthenticated TCP client sent '%s': closing", command);
        return PB_EAUTH;
    }
    if (s->inflight >= MAX_INFLIGHT) {
        PB_LOG(PB_LOG_WARN, "client has %d requests in flight and sent '%s': dropping it",
               s->inflight, command);
        return PB_EPROTO;
    }
    if (!cmd) {
        rc = pb_err_set(&c.err, PB_EBADARG, "unknown command '%s'", command);
    } else if ((cmd->flags & SRV_F_NEEDS_ATTACHED) && !s->attached) {
        /* Not for the user's eyes (showUser false): a client whose attach was refused (a second
         * debugger) has its configuration requests on the way already, as VS Code sends them on
         * `initialized`; the refusal was shown, these answers would only repeat it as noise. */
        rc = pb_err_set(&c.err, PB_ESTATE, "not attached: send 'attach' before '%s'", command);
        if (!s->authed)
            s->close_after = 1;
        send_error(s, request_seq, command, rc, c.err.msg, 0);
        return 0;
    } else if ((cmd->flags & SRV_F_DEBUGGER) && !srv_session_is_debugger(s)) {
        rc = pb_err_set(&c.err, PB_ESTATE, "'%s' is for the debugging client: %s", command,
                        s->debugger ? "another client holds the debugger"
                                    : "attach without probingClient \"cli\" to debug");
    } else if ((cmd->flags & SRV_F_UNIX_ONLY) && s->transport == SRV_TRANSPORT_TCP) {
        rc = pb_err_set(&c.err, PB_EAUTH, "'%s' is only accepted on the local socket", command);
    } else if (args && !cJSON_IsObject(args)) {
        rc = pb_err_set(&c.err, PB_EBADARG, "arguments: expected object");
    } else if ((rc = dap_arg_int(args, "threadId", &tid, &c.err)) < 0) {
        /* Every request's threadId is an integer (DAP); checked once here because requests
         * that act on all threads (pause, continue) would otherwise ignore a bad one. */
    } else {
        cJSON *body = cJSON_CreateObject();
        if (!body)
            return -ENOMEM;
        rc = srv_command_run(cmd, &c, args, body);
        if (rc == SRV_DEFERRED) {
            cJSON_Delete(body);
            return 0;
        }
        send_response(s, request_seq, command, rc, body, &c.err);
        if (rc == 0 && cmd->post)
            cmd->post(s);
        return 0;
    }
    if (!s->authed) /* refused before authentication (a malformed attach): no second try */
        s->close_after = 1;
    send_response(s, request_seq, command, rc, NULL, &c.err);
    return 0;
}

/* Whether s is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
 * U+10FFFF). */
static int utf8_valid(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s++;
        int more = c < 0x80                 ? 0
                   : c >= 0xc2 && c <= 0xdf ? 1
                   : c >= 0xe0 && c <= 0xef ? 2
                   : c >= 0xf0 && c <= 0xf4 ? 3
                                            : -1;
        if (more < 0)
            return 0;
        unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
        unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
        for (int i = 0; i < more; i++, s++, lo = 0x80, hi = 0xbf)
            if (*s < lo || *s > hi)
                return 0;
    }
    return 1;
}

/* Whether every key and string in m is UTF-8, as JSON text must be (RFC 8259): a request's
 * strings come back in answers (an unknown command's name, for one), and a client must be
 * able to read those. Depth is bounded by the parser's nesting limit. */
static int strings_valid(const cJSON *m)
{
    for (; m; m = m->next) {
        if (m->string && !utf8_valid((const unsigned char *)m->string))
            return 0;
        if (cJSON_IsString(m) && !utf8_valid((const unsigned char *)m->valuestring))
            return 0;
        if (m->child && !strings_valid(m->child))
            return 0;
    }
    return 1;
}

int srv_session_feed(struct srv_session *s, const char *data, size_t n)
{
    struct pb_err err = {0};
    int rc = 0;
    srv_session_ref(s);
    while (rc == 0 && s->io && n > 0) {
        /* Hand the reader no more than its limit takes now: before `attach` that limit is
         * small (net.preauth_max_bytes), and requests pipelined behind a successful `attach`
         * in the same read must meet the larger one. */
        size_t cap = s->r.max_body + DAP_MAX_HEADER;
        size_t take = s->r.len < cap && cap - s->r.len < n ? cap - s->r.len : n;
        rc = dap_reader_feed(&s->r, data, take, &err);
        data += take;
        n -= take;
        while (rc == 0 && s->io) {
            cJSON *msg = NULL;
            rc = dap_reader_next(&s->r, &msg, &err);
            if (rc <= 0)
                break;
            rc = 0;
            if (pb_log_level >= PB_LOG_TRACE) {
                char *t = cJSON_PrintUnformatted(msg);
                PB_LOG(PB_LOG_TRACE, "<- %.4000s", t ? t : "?");
                cJSON_free(t);
            }
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(msg, "type");
            if (!strings_valid(msg))
                rc = pb_err_set(&err, PB_EPROTO, "message is not valid UTF-8");
            else if (strcmp(type->valuestring, "request") == 0)
                rc = dispatch(s, msg);
            cJSON_Delete(msg);
            if (s->close_after)
                close_now(s);
        }
    }
    if (rc < 0)
        PB_LOG(PB_LOG_WARN, "closing connection: %s", err.msg[0] ? err.msg : pb_strerror(rc));
    srv_session_unref(s);
    return rc < 0 ? rc : 0;
}

struct srv_pending *srv_ctx_defer(struct srv_ctx *c)
{
    struct srv_pending *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->s = c->s;
    srv_session_ref(p->s);
    p->s->inflight++;
    p->request_seq = c->request_seq;
    pb_strlcpy(p->command, c->command, sizeof p->command);
    return p;
}

void srv_pending_finish(struct srv_pending *p, int rc, cJSON *body, const struct pb_err *err)
{
    struct srv_session *s = p->s;
    s->inflight--;
    send_response(s, p->request_seq, p->command, rc, body, err);
    if (s->close_after)
        close_now(s);
    srv_session_unref(s);
    free(p);
}

void srv_pending_fail_text(struct srv_pending *p, int rc, const char *text)
{
    struct srv_session *s = p->s;
    s->inflight--;
    send_error(s, p->request_seq, p->command, rc, text, 1);
    if (s->close_after)
        close_now(s);
    srv_session_unref(s);
    free(p);
}
