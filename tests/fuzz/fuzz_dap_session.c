/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: bytes from a peer into a DAP session (framing, JSON, envelope checks,
 * dispatch, argument parsing, the token check), over both transports, with the fake probe.
 * The first byte picks the transport and how the input is split into reads. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "dap/dap.h"

#include "fuzz_sink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int closed = 0;
    int transport = data[0] & 1 ? SRV_TRANSPORT_TCP : SRV_TRANSPORT_UNIX;
    size_t chunk = (size_t)(data[0] >> 1) + 1;
    data++;
    size--;
    struct srv_session *s = srv_session_new(&sink, &closed, transport);
    for (size_t off = 0; off < size && !closed; off += chunk) {
        size_t n = size - off < chunk ? size - off : chunk;
        if (srv_session_feed(s, (const char *)data + off, n) < 0)
            break;
    }
    srv_session_detach_io(s);
    srv_session_unref(s);
    return 0;
}
