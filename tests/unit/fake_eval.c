/* SPDX-License-Identifier: MIT */
/* The fake probe's eval and memory for dap/ unit tests and fuzz replays: an evaluation of
 * "raise" raises, "print" prints "hi\n", "incomplete" is incomplete, "list" is a list of 3
 * (variablesReference 7 when refs are asked for), anything else evaluates to its own text; no
 * thread is ever stopped, so a frame is refused as the real probe refuses a running thread's;
 * memory answers with fixed figures. No Python. */
#include <cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "fake_probe.h"
#include "gil/gil.h"
#include "debugger/debugger.h"

int dbg_eval_run(const char *src, int mode, long long frame_id, int refs,
                 struct probe_eval_result *r, struct pb_err *err)
{
    memset(r, 0, sizeof *r);
    if (frame_id >= 0 && mode != PROBE_EVAL_CHECK)
        return pb_err_set(err, PB_ESTATE,
                          "frame %lld: thread %lld is not stopped (frames can "
                          "be inspected while it is paused)",
                          frame_id, frame_id >> 12);
    if (mode == PROBE_EVAL_CHECK) {
        r->complete = strcmp(src, "incomplete") != 0;
        return 0;
    }
    if (strcmp(src, "raise") == 0) {
        r->exc_type = strdup("ValueError");
        r->traceback = strdup("Traceback (most recent call last):\n  File \"<probing>\", line 1, "
                              "in <module>\nValueError: boom\n");
    } else if (strcmp(src, "print") == 0) {
        r->chunks = fake_zalloc(1, sizeof *r->chunks);
        r->chunks[0].text = strdup("hi\n");
        r->nchunks = 1;
    } else if (strcmp(src, "list") == 0) {
        r->value = strdup("[1, 2, 3]");
        r->type = strdup("list");
        r->var_ref = refs ? 7 : 0;
        r->indexed = refs ? 3 : 0;
    } else {
        r->value = strdup(src);
        r->type = strdup("str");
    }
    return 0;
}

int gil_eval_interrupt(void)
{
    return 0;
}
long gil_eval_native_wait(void)
{
    return -1;
}
int gil_eval_timeout_ms(void)
{
    return 500;
}

int gil_memory_proc(struct cJSON *into, struct pb_err *err)
{
    (void)err;
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(into, "process"), "rss", 1 << 20);
    return 0;
}

int gil_memory_python(struct cJSON *into, int top, const char *trace, const char *snapshot,
                      struct pb_err *err)
{
    (void)top;
    (void)trace;
    (void)snapshot;
    (void)err;
    cJSON_AddObjectToObject(into, "gc");
    return 0;
}
