/* SPDX-License-Identifier: MIT */
/* What ends when a session's peer is gone (the connection closed or dropped): the session
 * (session.c) runs these hooks and knows nothing of what they end. Loop thread. */
#include "server.h"

const srv_closed_hook srv_closed_hooks[] = {
    /* A debugging client that vanished is a disconnect: tracing goes, threads resume. */
    srv_debugger_release,
    /* Its code still running in the target is interrupted rather than left, say, in a
     * `while True: pass` with nobody to see it. */
    srv_evals_closed,
};
const size_t srv_nclosed_hooks = sizeof srv_closed_hooks / sizeof srv_closed_hooks[0];
