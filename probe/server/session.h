/* SPDX-License-Identifier: MIT */
/* The server's face (the probe is the debug adapter): a session per connection, fed the peer's
 * bytes, and the request being handled (its context, deferral, completion). What the composition
 * root (probe/entry.c), the listeners and the request table share; the protocol itself (framing,
 * envelopes, arguments) is dap/dap.h. cJSON ownership as in dap/dap.h. Loop thread only. */
#ifndef SRV_SESSION_H
#define SRV_SESSION_H

#include <stddef.h>

#include <cJSON.h>

#include "dap/dap.h"

struct srv_session;

struct srv_io_ops {
    /* Queue len bytes for the peer in one write. Returns 0 or a negative code (the session is
     * then closed). */
    int (*send)(void *io, const char *buf, size_t len);
    /* Close the connection (after pending writes). */
    void (*close)(void *io);
};

enum { SRV_TRANSPORT_UNIX = 0, SRV_TRANSPORT_TCP = 1 };

/* A session per connection; ref-counted because a deferred request may outlive the
 * connection. */
struct srv_session *srv_session_new(const struct srv_io_ops *ops, void *io, int transport);
void srv_session_ref(struct srv_session *s);
void srv_session_unref(struct srv_session *s);
/* The connection is gone: nothing more is sent; deferred requests complete into the void. */
void srv_session_detach_io(struct srv_session *s);
/* Bytes from the peer: parses and dispatches every complete message. Returns 0, or a negative
 * code when the connection must be closed (protocol error, failed authentication). */
int srv_session_feed(struct srv_session *s, const char *data, size_t n);
int srv_session_transport(const struct srv_session *s);
/* Whether the peer may send requests: always on the Unix socket, after a successful `attach`
 * (token) on TCP. */
int srv_session_is_authed(const struct srv_session *s);
/* Before authentication, messages larger than bytes (body) close the connection; the limit goes
 * back to DAP_DEFAULT_MAX_BODY once `attach` succeeds. The agent sets it (net.preauth_max_bytes)
 * for TCP sessions. */
void srv_session_set_preauth_max(struct srv_session *s, size_t bytes);
/* Bytes received and not yet parsed into a message (what the session holds for its peer). */
size_t srv_session_buffered(const struct srv_session *s);
/* Send an event on this session (body taken). */
void srv_session_event(struct srv_session *s, const char *event, cJSON *body);

/* A request being handled. Handlers fill body and return 0, or return a negative code with
 * c->err filled (sent as an error response), or call srv_ctx_defer() and return SRV_DEFERRED,
 * completing later with srv_pending_finish(). */
struct srv_ctx {
    struct srv_session *s;
    int request_seq;
    const char *command;
    struct pb_err err;
};

#define SRV_DEFERRED 1
struct srv_pending;
struct srv_pending *srv_ctx_defer(struct srv_ctx *c);
/* Complete a deferred request: rc 0 sends body (taken) as success, else an error response with
 * err's text. Frees p. Loop thread only. */
void srv_pending_finish(struct srv_pending *p, int rc, cJSON *body, const struct pb_err *err);
/* Complete a deferred request with an error whose message is longer than pb_err holds (a
 * traceback). rc < 0. Frees p. Loop thread only. */
void srv_pending_fail_text(struct srv_pending *p, int rc, const char *text);

typedef int (*srv_handler)(struct srv_ctx *c, const cJSON *args, cJSON *body);

/* Session state the handlers may change (initialize, attach). */
void srv_session_set_attached(struct srv_session *s, int debugger);
int srv_session_is_attached(const struct srv_session *s);
/* Ask the session to close after the current response is sent (disconnect, bad token). */
void srv_session_close_after_reply(struct srv_session *s);

/* The capabilities object for `initialize`, derived from the dispatch table (new reference). */
cJSON *srv_capabilities(void);

#endif
