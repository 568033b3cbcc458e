/* SPDX-License-Identifier: MIT */
/* dap/: framing under any split of the byte stream and bad input, envelopes, argument checks,
 * and dispatch through a real session with a fake probe (fake_probe.c): state checks, TCP
 * authentication, capabilities, the initialized event, deferred answers, error mapping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dap/dap.h"
#include "server/session.h"
#include "fake_probe.h"
#include "dapcap.h"
#include "unit.h"

/* ---- framing ---- */

TEST(dap_frame_any_split)
{
    char a[256], b[256], stream[512];
    frame("{\"seq\":1,\"type\":\"request\",\"command\":\"threads\"}", a, sizeof a);
    frame("{\"seq\":2,\"type\":\"event\",\"event\":\"x\",\"body\":{\"s\":\"\\u00e9\"}}", b,
          sizeof b);
    snprintf(stream, sizeof stream, "%s%s", a, b);
    size_t len = strlen(stream);
    for (size_t cut = 0; cut <= len; cut++) {
        struct dap_reader r;
        struct pb_err err = {0};
        dap_reader_init(&r, 0);
        cJSON *m = NULL;
        int got = 0;
        ASSERT_EQ(dap_reader_feed(&r, stream, cut, &err), 0);
        while (dap_reader_next(&r, &m, &err) == 1) {
            got++;
            cJSON_Delete(m);
        }
        ASSERT_EQ(dap_reader_feed(&r, stream + cut, len - cut, &err), 0);
        while (dap_reader_next(&r, &m, &err) == 1) {
            got++;
            ASSERT_EQ(cJSON_GetObjectItem(m, "seq")->valueint, got);
            cJSON_Delete(m);
        }
        ASSERT_EQ(got, 2);
        ASSERT_EQ(r.len, 0);
        dap_reader_close(&r);
    }
}

static int next_of(const char *bytes, struct pb_err *err)
{
    struct dap_reader r;
    cJSON *m = NULL;
    dap_reader_init(&r, 1024);
    int rc = dap_reader_feed(&r, bytes, strlen(bytes), err);
    if (rc == 0)
        rc = dap_reader_next(&r, &m, err);
    cJSON_Delete(m);
    dap_reader_close(&r);
    return rc;
}

TEST(dap_frame_rejects_bad_input)
{
    struct pb_err err = {0};
    ASSERT_EQ(next_of("Content-Length: 1073741824\r\n\r\n{}", &err), PB_EPROTO);
    ASSERT(strstr(err.msg, "over the limit"));
    ASSERT_EQ(next_of("Content-Length: abc\r\n\r\n{}", &err), PB_EPROTO);
    ASSERT_EQ(next_of("X-Other: 1\r\n\r\n{}", &err), PB_EPROTO);
    ASSERT(strstr(err.msg, "Content-Length"));
    ASSERT_EQ(next_of("Content-Length: 5\r\n\r\n{oops", &err), PB_EPROTO);
    ASSERT(strstr(err.msg, "not valid JSON"));
    ASSERT_EQ(next_of("Content-Length: 2\r\n\r\n[]", &err), PB_EPROTO);
    ASSERT_EQ(next_of("Content-Length: 15\r\n\r\n{\"type\":\"x\"}   ", &err), PB_EPROTO);
    ASSERT(strstr(err.msg, "seq"));
    ASSERT_EQ(next_of("Content-Length: 25\r\n\r\n{\"seq\":1,\"type\":\"request\"}", &err),
              PB_EPROTO);
    /* A header that never ends is refused once it passes the header limit. */
    char junk[2048];
    memset(junk, 'a', sizeof junk - 1);
    junk[sizeof junk - 1] = '\0';
    ASSERT_EQ(next_of(junk, &err), PB_EPROTO);
    /* Incomplete is not an error. */
    ASSERT_EQ(next_of("Content-Length: 10\r\n\r\n{\"se", &err), 0);
    /* Case-insensitive header, extra headers tolerated. */
    ASSERT_EQ(next_of("X-A: b\r\ncontent-length: 26\r\n\r\n{\"seq\":1,\"type\":\"event\"}  ", &err),
              1);
}

TEST(dap_encode_roundtrip)
{
    cJSON *m = dap_msg_event(7, "output", cJSON_CreateObject());
    size_t len = 0;
    char *buf = dap_encode(m, &len);
    ASSERT(buf && strncmp(buf, "Content-Length: ", 16) == 0);
    struct dap_reader r;
    struct pb_err err;
    cJSON *back = NULL;
    dap_reader_init(&r, 0);
    dap_reader_feed(&r, buf, len, &err);
    ASSERT_EQ(dap_reader_next(&r, &back, &err), 1);
    ASSERT_STR_EQ(cJSON_GetObjectItem(back, "event")->valuestring, "output");
    ASSERT_EQ(cJSON_GetObjectItem(back, "seq")->valueint, 7);
    cJSON_Delete(back);
    cJSON_Delete(m);
    free(buf);
    dap_reader_close(&r);
}

TEST(dap_args_typed)
{
    cJSON *a = cJSON_Parse("{\"n\":3,\"f\":1.5,\"s\":\"x\",\"b\":true,\"big\":1e300}");
    struct pb_err err = {0};
    long long n = -1;
    int b = 0;
    const char *s = NULL;
    ASSERT_EQ(dap_arg_int(a, "n", &n, &err), 0);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(dap_arg_int(a, "missing", &n, &err), 1);
    ASSERT_EQ(dap_arg_int(a, "f", &n, &err), PB_EBADARG);
    ASSERT_STR_EQ(err.msg, "arguments.f: expected integer");
    ASSERT_EQ(dap_arg_int(a, "big", &n, &err), PB_EBADARG);
    ASSERT_EQ(dap_arg_int(a, "s", &n, &err), PB_EBADARG);
    ASSERT_EQ(dap_arg_bool(a, "b", &b, &err), 0);
    ASSERT_EQ(b, 1);
    ASSERT_EQ(dap_arg_bool(a, "n", &b, &err), PB_EBADARG);
    ASSERT_EQ(dap_arg_str(a, "s", &s, &err), 0);
    ASSERT_STR_EQ(s, "x");
    ASSERT_EQ(dap_arg_str(a, "b", &s, &err), PB_EBADARG);
    ASSERT_STR_EQ(err.msg, "arguments.b: expected string");
    cJSON_Delete(a);
}

/* ---- sessions over a capturing transport (dapcap.c) ---- */

TEST(srv_session_initialize_then_initialized_event)
{
    struct cap c = {0};
    dap_reader_init(&c.out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, &c, SRV_TRANSPORT_UNIX);
    feed(s, 1, "initialize", "{\"adapterID\":\"probing\"}");
    cJSON *r = sent(&c), *e = sent(&c);
    ASSERT(ok(r));
    ASSERT(cJSON_IsTrue(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "supportsConfigurationDoneRequest")));
    /* Nothing not implemented is advertised. */
    ASSERT(!cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "supportsTerminateRequest"));
    ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "supportsLogPoints")));
    ASSERT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"),
                                                  "exceptionBreakpointFilters")) == 2);
    ASSERT(e && strcmp(cJSON_GetObjectItem(e, "event")->valuestring, "initialized") == 0);
    ASSERT(cJSON_GetObjectItem(e, "seq")->valueint > cJSON_GetObjectItem(r, "seq")->valueint);
    cJSON_Delete(r);
    cJSON_Delete(e);
    srv_session_unref(s);
    dap_reader_close(&c.out);
}

TEST(srv_session_state_and_errors)
{
    struct cap c = {0};
    dap_reader_init(&c.out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, &c, SRV_TRANSPORT_UNIX);
    cJSON *r = ask(s, &c, 1, "threads", NULL);
    ASSERT(!ok(r));
    ASSERT(strstr(message(r), "not attached"));
    cJSON_Delete(r);
    r = ask(s, &c, 2, "frobnicate", NULL);
    ASSERT(!ok(r) && strstr(message(r), "unknown command 'frobnicate'"));
    ASSERT_EQ(
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "error"), "id")
            ->valueint,
        -PB_EBADARG);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "attach", "{\"probingClient\":\"cli\"}");
    ASSERT(ok(r));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "stackTrace", "{\"threadId\":\"x\"}");
    ASSERT(!ok(r) && strcmp(message(r), "arguments.threadId: expected integer") == 0);
    cJSON_Delete(r);
    r = ask(s, &c, 5, "stackTrace", "{\"threadId\":1}");
    ASSERT(!ok(r) && strstr(message(r), "no Python thread with id 1"));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "threads", "[1,2]");
    ASSERT(!ok(r) && strstr(message(r), "arguments: expected object"));
    cJSON_Delete(r);
    ASSERT_EQ(c.closed, 0);
    srv_session_unref(s);
    dap_reader_close(&c.out);
}

TEST(srv_session_threads_stack_dump)
{
    struct cap c = {0};
    dap_reader_init(&c.out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, &c, SRV_TRANSPORT_UNIX);
    cJSON_Delete(ask(s, &c, 1, "attach", NULL));
    cJSON *r = ask(s, &c, 2, "threads", NULL);
    ASSERT(ok(r));
    cJSON *th = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "threads");
    ASSERT_EQ(cJSON_GetArraySize(th), 2); /* the worker is left out */
    ASSERT_STR_EQ(cJSON_GetObjectItem(cJSON_GetArrayItem(th, 0), "name")->valuestring,
                  "MainThread");
    ASSERT_EQ(cJSON_GetObjectItem(cJSON_GetArrayItem(th, 0), "id")->valueint, 4242);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "stackTrace", "{\"threadId\":4243,\"startFrame\":1,\"levels\":1}");
    ASSERT(ok(r));
    cJSON *b = cJSON_GetObjectItem(r, "body");
    ASSERT_EQ(cJSON_GetObjectItem(b, "totalFrames")->valueint, 3);
    cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "stackFrames"), 0);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItem(b, "stackFrames")), 1);
    ASSERT_STR_EQ(cJSON_GetObjectItem(f, "name")->valuestring, "outer");
    ASSERT_EQ(cJSON_GetObjectItem(f, "line")->valueint, 20);
    ASSERT_STR_EQ(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "source"), "path")->valuestring,
                  "/app/main.py");
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/dump", "{\"locals\":true}");
    ASSERT(ok(r));
    b = cJSON_GetObjectItem(r, "body");
    ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "gil"), "available")));
    ASSERT_EQ(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "gil"), "holder")->valueint, 4243);
    cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "threads"), 0);
    cJSON *l0 = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "frames"), 0), "locals"), 0);
    ASSERT_STR_EQ(cJSON_GetObjectItem(l0, "value")->valuestring, "42");
    cJSON_Delete(r);
    /* The GIL not to be had: still an answer, without locals, saying why. */
    fake_gil_timeout = 1;
    r = ask(s, &c, 5, "probing/dump", "{\"locals\":true}");
    ASSERT(ok(r));
    b = cJSON_GetObjectItem(r, "body");
    ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "gil"), "available")));
    ASSERT(strstr(cJSON_GetObjectItem(b, "localsError")->valuestring,
                  "held by thread 4243 (python3)"));
    t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(b, "threads"), 0);
    ASSERT(
        !cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "frames"), 0), "locals"));
    ASSERT_STR_EQ(cJSON_GetObjectItem(t0, "nameSource")->valuestring, "os");
    cJSON_Delete(r);
    fake_gil_timeout = 0;
    r = ask(s, &c, 6, "probing/dump", "{\"maxFrames\":0}");
    ASSERT(!ok(r) && strstr(message(r), "maxFrames"));
    cJSON_Delete(r);
    srv_session_unref(s);
    dap_reader_close(&c.out);
}

TEST(srv_session_tcp_needs_token)
{
    struct cap c = {0};
    dap_reader_init(&c.out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, &c, SRV_TRANSPORT_TCP);
    cJSON *r = ask(s, &c, 1, "initialize", NULL);
    ASSERT(ok(r));
    cJSON_Delete(r);
    /* Anything but initialize/attach before authentication closes the connection. */
    ASSERT(feed(s, 2, "threads", NULL) < 0);
    srv_session_unref(s);

    struct cap c2 = {0};
    dap_reader_init(&c2.out, 0);
    s = srv_session_new(&cap_ops, &c2, SRV_TRANSPORT_TCP);
    r = ask(s, &c2, 1, "attach", "{\"token\":\"wrong\"}");
    ASSERT(!ok(r) && strstr(message(r), "token"));
    ASSERT_EQ(c2.closed, 1);
    cJSON_Delete(r);
    srv_session_unref(s);

    struct cap c3 = {0};
    dap_reader_init(&c3.out, 0);
    s = srv_session_new(&cap_ops, &c3, SRV_TRANSPORT_TCP);
    r = ask(s, &c3, 1, "attach", "{\"token\":\"secret-token\"}");
    ASSERT(ok(r));
    cJSON_Delete(r);
    r = ask(s, &c3, 2, "threads", NULL);
    ASSERT(ok(r));
    cJSON_Delete(r);
    /* probing/listen is for the local socket only. */
    r = ask(s, &c3, 3, "probing/listen", "{\"address\":\"127.0.0.1:0\",\"token\":\"abcdefgh\"}");
    ASSERT(!ok(r) && strstr(message(r), "local socket"));
    ASSERT_EQ(fake_listen_calls, 0);
    cJSON_Delete(r);
    ASSERT_EQ(c3.closed, 0);
    srv_session_unref(s);
    dap_reader_close(&c.out);
    dap_reader_close(&c2.out);
    dap_reader_close(&c3.out);
}

TEST(srv_session_garbage_closes)
{
    struct cap c = {0};
    dap_reader_init(&c.out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, &c, SRV_TRANSPORT_UNIX);
    const char *junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT(srv_session_feed(s, junk, strlen(junk)) < 0);
    srv_session_unref(s);
    dap_reader_close(&c.out);
}

/* One debugging client at a time; CLI clients never take the seat nor send its commands. */
TEST(srv_session_debugger_seat)
{
    extern int fake_dbg_detaches;
    struct cap a = {0}, b = {0}, cli = {0};
    dap_reader_init(&a.out, 0);
    dap_reader_init(&b.out, 0);
    dap_reader_init(&cli.out, 0);
    struct srv_session *sa = srv_session_new(&cap_ops, &a, SRV_TRANSPORT_UNIX);
    struct srv_session *sb = srv_session_new(&cap_ops, &b, SRV_TRANSPORT_UNIX);
    struct srv_session *sc = srv_session_new(&cap_ops, &cli, SRV_TRANSPORT_UNIX);
    feed(sa, 1, "attach", "{}");
    cJSON *r = sent(&a);
    ASSERT(ok(r));
    cJSON_Delete(r);
    feed(sb, 1, "attach", "{}");
    r = sent(&b);
    ASSERT(!ok(r));
    ASSERT(strstr(cJSON_GetObjectItem(r, "message")->valuestring, "another debugging client"));
    /* The refusal is for the user to see; the configuration requests VS Code has sent on
     * `initialized` meanwhile get "not attached" answers that are not (no toasts after the
     * refusal's dialog). */
    ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(
        cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "error"), "showUser")));
    cJSON_Delete(r);
    const char *config_reqs[] = {"setBreakpoints", "setFunctionBreakpoints",
                                 "setExceptionBreakpoints", "configurationDone"};
    for (int i = 0; i < 4; i++) {
        feed(sb, 2 + i, config_reqs[i], "{}");
        r = sent(&b);
        ASSERT(!ok(r));
        ASSERT(strstr(cJSON_GetObjectItem(r, "message")->valuestring, "not attached"));
        ASSERT(cJSON_IsFalse(cJSON_GetObjectItem(
            cJSON_GetObjectItem(cJSON_GetObjectItem(r, "body"), "error"), "showUser")));
        cJSON_Delete(r);
    }
    feed(sc, 1, "attach", "{\"probingClient\":\"cli\"}");
    r = sent(&cli);
    ASSERT(ok(r));
    cJSON_Delete(r);
    feed(sc, 2, "pause", "{\"threadId\":1}");
    r = sent(&cli);
    ASSERT(!ok(r));
    ASSERT(strstr(cJSON_GetObjectItem(r, "message")->valuestring, "for the debugging client"));
    cJSON_Delete(r);
    /* The seat holder's requests reach the debugger (the fake refuses them). */
    feed(sa, 2, "pause", "{\"threadId\":1}");
    r = sent(&a);
    ASSERT(!ok(r));
    ASSERT(strstr(cJSON_GetObjectItem(r, "message")->valuestring, "fake debugger"));
    cJSON_Delete(r);
    /* The holder's connection goes: the debugger is detached and the seat is free. */
    int before = fake_dbg_detaches;
    srv_session_detach_io(sa);
    ASSERT(fake_dbg_detaches == before + 1);
    feed(sb, 2, "attach", "{}");
    r = sent(&b);
    ASSERT(ok(r));
    cJSON_Delete(r);
    feed(sb, 3, "disconnect", "{}");
    ASSERT(fake_dbg_detaches == before + 2);
    srv_session_unref(sa);
    srv_session_unref(sb);
    srv_session_unref(sc);
    dap_reader_close(&a.out);
    dap_reader_close(&b.out);
    dap_reader_close(&cli.out);
}

/* dap_json_print: the text cJSON prints (the same values, integers as digits), the tree as it
 * was after the print. */
TEST(dap_json_print_integers_as_cjson)
{
    const char *in = "{\"a\":[0,1,-1,2147483647,2147483648,-2147483649,140560463398592,"
                     "9007199254740991,9007199254740993,1e15,1.5,-0.25,1e300,-0.0],"
                     "\"b\":{\"c\":42,\"d\":\"x\",\"e\":[[7]],\"f\":null,\"g\":true}}";
    cJSON *v = cJSON_Parse(in), *copy = cJSON_Duplicate(v, 1);
    ASSERT(v && copy);
    for (int formatted = 0; formatted < 2; formatted++) {
        char *ours = dap_json_print(v, formatted);
        char *theirs = formatted ? cJSON_Print(copy) : cJSON_PrintUnformatted(copy);
        ASSERT(ours && theirs);
        cJSON *a = cJSON_Parse(ours), *b = cJSON_Parse(theirs);
        ASSERT(a && b && cJSON_Compare(a, b, 1));
        ASSERT(strstr(ours, "140560463398592") && strstr(ours, "-2147483649") &&
               strstr(ours, "9007199254740991"));
        ASSERT(cJSON_Compare(v, copy, 1)); /* numbers again */
        cJSON_Delete(a);
        cJSON_Delete(b);
        free(ours);
        free(theirs);
    }
    cJSON *small = cJSON_Parse("{\"x\":[1,2,{\"y\":-3}],\"z\":0}");
    char *t = dap_json_print(small, 0);
    ASSERT(t && strcmp(t, "{\"x\":[1,2,{\"y\":-3}],\"z\":0}") == 0);
    ASSERT(cJSON_IsNumber(cJSON_GetObjectItem(small, "z")));
    free(t);
    cJSON *leaf = cJSON_GetArrayItem(cJSON_GetObjectItem(small, "x"), 0); /* siblings untouched */
    t = dap_json_print(leaf, 0);
    ASSERT(t && strcmp(t, "1") == 0);
    free(t);
    cJSON_Delete(small);
    cJSON_Delete(v);
    cJSON_Delete(copy);
}

/* The probe refused the connection and closed it before the client's first request: the
 * write fails (EPIPE) and the client still says why, from the event left to read. */
TEST(client_refusal_read_after_broken_pipe)
{
    int sv[2];
    ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "reason",
                            "40 of 48 descriptors open, 64 kept for the target "
                            "(net.fd_reserve)");
    cJSON_AddStringToObject(body, "fix", "raise the target's open-file limit (prlimit ...)");
    cJSON *ev = dap_msg_event(1, "probing/refused", body);
    size_t len = 0;
    char *buf = dap_encode(ev, &len);
    cJSON_Delete(ev);
    ASSERT(buf && write(sv[1], buf, len) == (ssize_t)len);
    free(buf);
    close(sv[1]);

    struct dap_client c;
    dap_client_init(&c, 1000);
    c.fd = sv[0];
    struct pb_err err = {0};
    int rc = dap_client_send(&c, "initialize", NULL, &err);
    ASSERT(rc == -ECONNREFUSED);
    ASSERT(strstr(err.msg, "the probe refused the connection: 40 of 48 descriptors open") != NULL);
    ASSERT(strstr(err.msg, "prlimit") != NULL);
    dap_client_close(&c);
}

/* A response written to the client's socket, as the probe would send it. */
static void put_response(int fd, int request_seq, const char *command, int success,
                         const char *message, cJSON *body)
{
    cJSON *r = dap_msg_response(request_seq, request_seq, command, success, message, body);
    size_t len = 0;
    char *buf = dap_encode(r, &len);
    cJSON_Delete(r);
    ASSERT(buf && write(fd, buf, len) == (ssize_t)len);
    free(buf);
}

/* Requests sent ahead (the CLI's handshake) and the request after them: one wait for all, the
 * body of the last, and the first failure among them reported with its message; a request sent
 * with dap_client_send alone still has its answer skipped. */
TEST(client_send_ahead_one_round_trip)
{
    for (int k = 0; k < 3; k++) {
        int sv[2];
        ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        struct dap_client c;
        dap_client_init(&c, 1000);
        c.fd = sv[0];
        struct pb_err err = {0};
        cJSON *body = cJSON_CreateObject();
        cJSON_AddNumberToObject(body, "pid", 42);
        if (k == 0) { /* all went well */
            put_response(sv[1], 1, "initialize", 1, NULL, NULL);
            put_response(sv[1], 2, "attach", 1, NULL, NULL);
            put_response(sv[1], 3, "probing/info", 1, NULL, body);
        } else if (k == 1) { /* attach refused: no answer to the request after it */
            cJSON_Delete(body);
            put_response(sv[1], 1, "initialize", 1, NULL, NULL);
            put_response(sv[1], 2, "attach", 0, "attach refused: wrong or missing token", NULL);
        } else { /* sent with dap_client_send alone: its failure is not ours to report */
            put_response(sv[1], 1, "initialize", 0, "not this one", NULL);
            put_response(sv[1], 2, "attach", 1, NULL, NULL);
            put_response(sv[1], 3, "probing/info", 1, NULL, body);
        }
        cJSON *got = NULL;
        if (k < 2) {
            ASSERT(dap_client_send_ahead(&c, "initialize", NULL, &err) == 0);
            ASSERT(dap_client_send_ahead(&c, "attach", NULL, &err) == 0);
        } else {
            ASSERT(dap_client_send(&c, "initialize", NULL, &err) == 0);
            ASSERT(dap_client_request(&c, "attach", NULL, NULL, &err) == 0);
        }
        int rc = dap_client_request(&c, "probing/info", NULL, &got, &err);
        if (k == 1) {
            ASSERT(rc == PB_EREFUSED);
            ASSERT(strstr(err.msg, "attach refused: wrong or missing token") != NULL);
            ASSERT(got == NULL);
        } else {
            ASSERT(rc == 0);
            ASSERT(cJSON_GetObjectItemCaseSensitive(got, "pid")->valueint == 42);
        }
        ASSERT(c.ahead_from == 0);
        cJSON_Delete(got);
        dap_client_close(&c);
        close(sv[1]);
    }
}
