/* SPDX-License-Identifier: MIT */
/* A capturing transport for dap/ unit tests: a session's output is parsed back into messages,
 * and helpers feed a request and return its response. */
#ifndef DAPCAP_H
#define DAPCAP_H

#include "dap/dap.h"

struct cap {
    struct dap_reader out; /* what the session sent */
    int closed;
    /* Events seen by ask() before the response, in order (a JSON array; owned). */
    cJSON *events;
};

extern const struct srv_io_ops cap_ops;

/* "Content-Length: N\r\n\r\n" + json into buf. */
const char *frame(const char *json, char *buf, size_t n);
/* The next message the session sent (a root the caller deletes) or NULL. */
cJSON *sent(struct cap *c);
/* Feed one request; returns srv_session_feed's result. */
int feed(struct srv_session *s, int seq, const char *command, const char *args);
/* Feed a request and return its response (caller deletes); events before it go to c->events. */
cJSON *ask(struct srv_session *s, struct cap *c, int seq, const char *command, const char *args);
int ok(const cJSON *resp);
const char *message(const cJSON *resp);
/* The response body's member k, or NULL. */
const cJSON *body_get(const cJSON *resp, const char *k);
/* A Unix-transport session writing into c (zeroed here), already attached; NULL if the attach
 * failed. cap_finish releases the session and what c holds. */
struct srv_session *cap_attached(struct cap *c);
void cap_finish(struct srv_session *s, struct cap *c);

#endif
