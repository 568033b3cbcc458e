/* SPDX-License-Identifier: MIT */
/* Requests answered after work on another thread (the table's SRV_F_GIL and SRV_F_TASK jobs,
 * and evaluate, whose handler picks its job): whichever allocation of the server
 * fails, each request gets exactly one response; setBreakpoints and setFunctionBreakpoints
 * answer one Breakpoint per requested one, or fail. With the fakes (fake_*.c). */
#include <string.h>

#include "dapcap.h"
#include "server/server.h"
#include "fail_alloc.h"
#include "unit.h"

static const struct {
    const char *command, *args;
    int nbps; /* Breakpoints a success must carry, or -1 */
} reqs[] = {
    {"probing/query", "{\"sql\":\"SELECT 1\"}", -1},
    {"probing/memory", "{}", -1},
    {"probing/torch", "{}", -1},
    {"probing/comm", "{}", -1},
    {"probing/eval", "{\"code\":\"6*7\"}", -1},
    {"evaluate", "{\"expression\":\"6*7\",\"context\":\"repl\"}", -1},
    {"evaluate", "{\"expression\":\"%sql SELECT 1\",\"context\":\"repl\"}", -1},
    {"threads", NULL, -1},
    {"probing/dump", "{\"locals\":true}", -1},
    {"probing/dump", "{\"native\":\"merged\"}", -1},
    {"probing/debugger", NULL, -1},
    {"scopes", "{\"frameId\":1}", -1},
    {"setBreakpoints",
     "{\"source\":{\"path\":\"/x.py\"},\"breakpoints\":[{\"line\":1},"
     "{\"line\":2},{\"line\":3}]}",
     3},
    {"setFunctionBreakpoints", "{\"breakpoints\":[{\"name\":\"f\"},{\"name\":\"g\"}]}", 2},
};

/* Responses to seq among what the session sent; the last one in *last (caller deletes). */
static int responses(struct cap *c, int seq, cJSON **last)
{
    int n = 0;
    cJSON *m;
    while ((m = sent(c)) != NULL) {
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(m, "request_seq");
        if (cJSON_IsNumber(rs) && rs->valueint == seq) {
            n++;
            cJSON_Delete(*last);
            *last = m;
        } else {
            cJSON_Delete(m);
        }
    }
    return n;
}

TEST(dispatch_one_response_under_allocation_failure)
{
    struct cap c;
    struct srv_session *s = cap_attached(&c);
    ASSERT(s);
    int seq = 10;
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        for (int nth = 1;; nth++) {
            unit_fail_calloc(nth);
            feed(s, ++seq, reqs[i].command, reqs[i].args);
            int failed = unit_calloc_failed();
            unit_fail_calloc(0);
            cJSON *r = NULL;
            int n = responses(&c, seq, &r);
            if (n != 1)
                UNIT_FAIL_("%s with calloc #%d failing: %d responses", reqs[i].command, nth, n);
            if (ok(r) && reqs[i].nbps >= 0)
                ASSERT_EQ(cJSON_GetArraySize(body_get(r, "breakpoints")), reqs[i].nbps);
            cJSON_Delete(r);
            if (!failed)
                break; /* the request made fewer allocations than nth: all were tried */
        }
    }
    cap_finish(s, &c);
}

/* The table: sorted (bsearch), and each entry says in one way where it runs: a handler on the
 * loop, or a job on the worker with a GIL timeout (SRV_F_GIL) or on the task thread. */
TEST(dispatch_table_sorted_and_placed)
{
    for (size_t i = 0; i < srv_ncommands; i++) {
        const struct srv_command *c = &srv_commands[i];
        if (i > 0 && strcmp(srv_commands[i - 1].name, c->name) >= 0)
            UNIT_FAIL_("'%s' is out of order", c->name);
        ASSERT(srv_command_find(c->name) == c);
        int gil = !!(c->flags & SRV_F_GIL), task = !!(c->flags & SRV_F_TASK);
        if (!c->job != !(gil || task) || (c->job && gil == task) || !c->handler == !c->job ||
            !c->gil_timeout_ms != !gil || ((c->flags & SRV_F_GIL_FALLBACK) && !gil))
            UNIT_FAIL_("'%s': handler, job, flags and GIL timeout disagree", c->name);
    }
}
