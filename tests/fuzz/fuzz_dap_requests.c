/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: well-framed requests with fuzzed commands, arguments and seq, into a DAP
 * session with the fake probe: dispatch, the argument helpers of every handler, and on TCP the
 * token check before attach (fake token "secret-token") and probingClient. Where
 * fuzz_dap_session mostly meets the framing, this one reaches the handlers.
 * Input: byte 0 = bit 0 TCP, bits 1-7 the size of the reads (1 + value * 7); then one request
 * per line, "[SEQ ]COMMAND[ JSON-ARGUMENTS]" (SEQ: a number, when the line starts with one;
 * lines whose JSON does not parse are skipped).
 * Checks, beyond memory safety: an unauthenticated TCP client gets nothing but the answers to
 * initialize, attach and disconnect (and `initialized`); a refused attach closes it; nothing is
 * sent after a close; every request of an open session gets one well-formed response, in
 * order, echoing its command and seq. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dap/dap.h"

#define MAX_REQS 512

struct state {
    int tcp, closed, authed, refused;
    int nreq, nresp;
    char cmd[MAX_REQS][64];
    double seq[MAX_REQS];
};

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_dap_requests: %s\n", what);
        abort();
    }
}

static int preauth(const char *command)
{
    return strcmp(command, "initialize") == 0 || strcmp(command, "attach") == 0 ||
           strcmp(command, "disconnect") == 0;
}

static void on_response(struct state *st, const cJSON *m)
{
    const cJSON *command = cJSON_GetObjectItemCaseSensitive(m, "command");
    const cJSON *success = cJSON_GetObjectItemCaseSensitive(m, "success");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m, "request_seq");
    check(cJSON_IsString(command) && cJSON_IsBool(success) && cJSON_IsNumber(rs),
          "malformed response");
    if (!cJSON_IsTrue(success)) {
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(m, "message");
        const cJSON *e =
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "body"), "error");
        check(cJSON_IsString(msg) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "format")),
              "error response without message or body.error.format");
    }
    check(st->nresp < st->nreq, "a response to no request");
    int i = st->nresp++;
    check(strcmp(command->valuestring, st->cmd[i]) == 0, "response for another command");
    double s = st->seq[i];
    if (s >= -2147483648.0 && s <= 2147483647.0 && s == (double)(int)s)
        check(rs->valuedouble == s, "request_seq is not the request's seq");
    if (st->tcp && !st->authed) {
        check(preauth(command->valuestring), "answered an unauthenticated TCP client");
        if (strcmp(command->valuestring, "attach") == 0) {
            if (cJSON_IsTrue(success))
                st->authed = 1;
            else
                st->refused = 1;
        }
    }
}

static int sink_send(void *io, const char *buf, size_t len)
{
    struct state *st = io;
    check(!st->closed, "sent after close");
    check(!st->refused, "sent after a refused attach");
    const char *body = strstr(buf, "\r\n\r\n");
    check(body != NULL, "unframed message");
    cJSON *m = cJSON_ParseWithLength(body + 4, len - (size_t)(body + 4 - buf));
    check(m != NULL, "invalid JSON sent");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
    check(cJSON_IsString(type), "message without type");
    if (strcmp(type->valuestring, "response") == 0) {
        on_response(st, m);
    } else {
        const cJSON *event = cJSON_GetObjectItemCaseSensitive(m, "event");
        check(strcmp(type->valuestring, "event") == 0 && cJSON_IsString(event), "bad event");
        check(!st->tcp || st->authed || strcmp(event->valuestring, "initialized") == 0,
              "event sent to an unauthenticated TCP client");
    }
    cJSON_Delete(m);
    return 0;
}

static void sink_close(void *io)
{
    ((struct state *)io)->closed = 1;
}

static const struct srv_io_ops sink = {sink_send, sink_close};

/* Appends the request of one line to the stream (recorded in st). */
static void add_request(struct state *st, const char *line, char **out, size_t *outlen)
{
    char *end;
    double seq = st->nreq + 1;
    if ((*line >= '0' && *line <= '9') || *line == '-') {
        seq = strtod(line, &end);
        if (end == line || *end != ' ' || seq != seq /* NaN */)
            return;
        line = end + 1;
    }
    size_t clen = strcspn(line, " ");
    char command[sizeof st->cmd[0]];
    if (clen >= sizeof command || st->nreq >= MAX_REQS)
        return;
    memcpy(command, line, clen);
    command[clen] = '\0';
    cJSON *args = NULL;
    if (line[clen] == ' ') {
        args = cJSON_Parse(line + clen + 1);
        if (!args)
            return;
    }
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "seq", seq);
    cJSON_AddStringToObject(m, "type", "request");
    cJSON_AddStringToObject(m, "command", command);
    if (args)
        cJSON_AddItemToObject(m, "arguments", args);
    size_t len = 0;
    char *wire = dap_encode(m, &len);
    if (wire) {
        char *grown = realloc(*out, *outlen + len);
        if (grown) {
            memcpy(grown + *outlen, wire, len);
            *out = grown;
            *outlen += len;
            memcpy(st->cmd[st->nreq], command, sizeof command);
            st->seq[st->nreq++] = seq;
        }
    }
    free(wire);
    cJSON_Delete(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct state st;
    if (size < 1)
        return 0;
    memset(&st, 0, sizeof st);
    st.tcp = data[0] & 1;
    size_t chunk = 1 + (size_t)(data[0] >> 1) * 7;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    char *stream = NULL;
    size_t len = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        add_request(&st, line, &stream, &len);
    }
    free(text);

    struct srv_session *s =
        srv_session_new(&sink, &st, st.tcp ? SRV_TRANSPORT_TCP : SRV_TRANSPORT_UNIX);
    int rc = 0;
    for (size_t off = 0; s && off < len && !st.closed && rc == 0; off += chunk) {
        rc = srv_session_feed(s, stream + off, len - off < chunk ? len - off : chunk);
        /* Closed at once: the client cannot try another token on the same connection. */
        check(!st.refused || st.closed || rc < 0, "a refused attach left the connection open");
    }
    if (s && rc == 0 && !st.closed)
        check(st.nresp == st.nreq, "a request without response on an open session");
    if (s) {
        srv_session_detach_io(s);
        srv_session_unref(s);
    }
    free(stream);
    return 0;
}
