/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the CLI's DAP client (dap/client.c) reading what a malicious or broken
 * probe sends. The input is the probe's whole side of the conversation, written into a
 * socketpair whose far end is then shut down; the client sends requests (the ones the CLI
 * sends: initialize, attach, probing/dump, ...) and waits for each response, handing events
 * to a callback, until it gets an error. Nothing blocks: the bytes are all there, then EOF.
 * Checks, beyond memory safety: a success gives a body, the client's own errors a message,
 * events reach the callback as events. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dap/dap.h"

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_dap_client: %s\n", what);
        abort();
    }
}

static void on_event(void *arg, const cJSON *event)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(event, "type");
    check(cJSON_IsString(type) && strcmp(type->valuestring, "event") == 0, "not an event");
    (*(int *)arg)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const commands[] = {"initialize",   "attach",   "probing/dump",
                                           "probing/eval", "evaluate", "probing/query"};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return 0;
    /* All of it in one write (a larger input than the socket holds is cut short). */
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    if (size > 0 && write(sv[1], data, size) < 0 && errno != EAGAIN) {
        close(sv[0]);
        close(sv[1]);
        return 0;
    }
    shutdown(sv[1], SHUT_WR);

    struct dap_client c;
    int events = 0;
    dap_client_init(&c, 5000);
    c.fd = sv[0];
    c.on_event = on_event;
    c.event_arg = &events;
    for (int i = 0; i < 64; i++) {
        cJSON *body = NULL;
        struct pb_err err = {0};
        int rc = dap_client_request(&c, commands[i % 6], NULL, &body, &err);
        if (rc == 0) {
            check(body != NULL, "success without a body");
            cJSON_Delete(body);
            continue;
        }
        check(body == NULL, "a body with an error");
        if (rc == PB_EREFUSED) /* a failed response: its message is the probe's, maybe "" */
            continue;
        check(err.msg[0] != '\0', "an error of the client's without a message");
        break; /* the connection is unusable */
    }
    dap_client_close(&c);
    close(sv[1]);
    return 0;
}
