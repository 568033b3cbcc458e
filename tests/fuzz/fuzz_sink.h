/* SPDX-License-Identifier: MIT */
/* A DAP transport that drops what a session sends and marks its io int when the session closes,
 * for the harnesses that drive sessions (fuzz_dap_session.c, fuzz_conn_limits.c). */
#ifndef FUZZ_SINK_H
#define FUZZ_SINK_H

#include <stddef.h>

#include "dap/dap.h"

static int sink_send(void *io, const char *buf, size_t len)
{
    (void)io;
    (void)buf;
    (void)len;
    return 0;
}

static void sink_close(void *io)
{
    *(int *)io = 1;
}

static const struct srv_io_ops sink = {sink_send, sink_close};

#endif
