/* SPDX-License-Identifier: MIT */
/* DAP for probing, the protocol only: framing (Content-Length headers), message envelopes,
 * argument accessors and a blocking client (the CLI). The probe's side of it, sessions and the
 * request table, is probe/server/ (server/session.h).
 * Spec: tests/dap/schema/debugAdapterProtocol.json; our custom requests are in docs/protocol.md.
 * cJSON ownership: an item added to a parent belongs to it; only roots are deleted, by whoever
 * holds them; functions that "take" an item own it from the call on, even on failure; printed
 * strings are the caller's to free. */
#ifndef DAP_H
#define DAP_H

#include <stddef.h>

#include <cJSON.h>

#include "pb.h"

/* ---- framing ---- */
#define DAP_MAX_HEADER 1024
#define DAP_DEFAULT_MAX_BODY (16u << 20)

struct dap_reader {
    char *buf;
    size_t len, cap;
    size_t max_body;
};

void dap_reader_init(struct dap_reader *r, size_t max_body);
void dap_reader_close(struct dap_reader *r);
/* Append bytes from the peer. Returns 0, -ENOMEM, or PB_EPROTO when the buffered data can no
 * longer become a valid message (header too long, body over max_body). */
int dap_reader_feed(struct dap_reader *r, const char *data, size_t n, struct pb_err *err);
/* Take the next complete message: 1 with *msg set (a root the caller deletes), 0 when more bytes
 * are needed, PB_EPROTO for a malformed header, body or envelope (the stream is unusable). */
int dap_reader_next(struct dap_reader *r, cJSON **msg, struct pb_err *err);

/* cJSON_Print (formatted) or cJSON_PrintUnformatted of v, the same text, with integers printed
 * without printf's float path (v is changed during the call only). NULL when out of memory. */
char *dap_json_print(const cJSON *v, int formatted);

/* Header and body in one malloc'd buffer, for a single write. NULL on allocation failure. */
char *dap_encode(const cJSON *msg, size_t *len);

/* ---- envelopes ---- */
/* Numbers that read back as the same value (cJSON_CreateNumber prints 15 digits whenever that
 * is within an epsilon, which moves an epoch timestamp by an ulp, and rounds integers above
 * 2^53). dap_number_text: the fewest digits (15 to 17) that read back exactly, with a '.'
 * whatever the locale; "null" for infinity and NaN. The items are cJSON raw items. */
void dap_number_text(double d, char *buf, size_t n /* >= 32 */);
cJSON *dap_json_real(double d);
cJSON *dap_json_int(long long i);
cJSON *dap_msg_request(int seq, const char *command, cJSON *args /* taken, may be NULL */);
cJSON *dap_msg_event(int seq, const char *event, cJSON *body /* taken, may be NULL */);
cJSON *dap_msg_response(int seq, int request_seq, const char *command, int success,
                        const char *message, cJSON *body /* taken, may be NULL */);

/* Argument helpers: look up args.name with a type check. Return 0 (value set), 1 (absent:
 * default kept) or PB_EBADARG with "arguments.<name>: expected <type>" in err. */
int dap_arg_int(const cJSON *args, const char *name, long long *out, struct pb_err *err);
int dap_arg_bool(const cJSON *args, const char *name, int *out, struct pb_err *err);
int dap_arg_str(const cJSON *args, const char *name, const char **out, struct pb_err *err);

/* ---- client (CLI side): blocking, with timeouts ---- */
struct dap_client {
    int fd;
    int seq;
    int timeout_ms;
    struct dap_reader r;
    /* Called for each event received while waiting for a response (may be NULL). */
    void (*on_event)(void *arg, const cJSON *event);
    void *event_arg;
    /* Called while waiting for a response, at least every 100 ms and whenever a signal
     * interrupted the wait (may be NULL): e.g. to send probing/interrupt after Ctrl-C. */
    void (*on_wait)(void *arg);
    void *wait_arg;
    /* "REASON: FIX" of a `probing/refused` event (the probe closes the connection after it). */
    char refused[512];
    /* The first request sent ahead (dap_client_send_ahead) whose response the next
     * dap_client_request checks; 0: none. */
    int ahead_from;
    /* Requests sent ahead, encoded, not yet written: they go in one write with the next
     * request, so that the probe's loop thread wakes once for all of them (each wake-up of a
     * thread may wait milliseconds for a CPU behind a target's busy thread). */
    char *held;
    size_t held_len;
};

/* A c->timeout_ms set to 0 after init makes requests wait without a deadline (eval). */
void dap_client_init(struct dap_client *c, int timeout_ms);
int dap_client_connect_unix(struct dap_client *c, const char *path, struct pb_err *err);
int dap_client_connect_tcp(struct dap_client *c, const char *host, int port, struct pb_err *err);
/* Send a request (args taken) and wait for its response. On success returns 0 and, if body is
 * not NULL, *body is the response body (a root the caller deletes; an empty object if none).
 * A failed response (success false: the probe refused it) returns PB_EREFUSED with the
 * adapter's message in err. */
int dap_client_request(struct dap_client *c, const char *command, cJSON *args, cJSON **body,
                       struct pb_err *err);
/* Send a request (args taken) without waiting for its response (it is skipped when it comes).
 * Returns 0 or a negative code with err filled. */
int dap_client_send(struct dap_client *c, const char *command, cJSON *args, struct pb_err *err);
/* Send a request (args taken) with the next one and let the next dap_client_request wait for
 * both: one round trip, and one write, for several requests (the handshake's initialize and
 * attach). Held until the next dap_client_send or dap_client_request (dropped by close). Its
 * response body is skipped; its failure is that dap_client_request's, with its message.
 * Returns 0 or a negative code with err filled. */
int dap_client_send_ahead(struct dap_client *c, const char *command, cJSON *args,
                          struct pb_err *err);
void dap_client_close(struct dap_client *c);

#endif
