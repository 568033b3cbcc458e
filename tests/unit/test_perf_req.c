/* SPDX-License-Identifier: MIT */
/* probing/perf through a real session with the fake sampler (fake_perf.c): status, start with
 * options, a second start refused, stop (twice: wasRunning only the first time), and every
 * argument error. The real sampler is tested end to end in tests/e2e/test_perf_cc.py. */
#include <string.h>

#include "dapcap.h"
#include "unit.h"

TEST(req_perf_actions_and_arguments)
{
    struct cap c;
    struct srv_session *s = cap_attached(&c);
    ASSERT(s != NULL);
    cJSON *r;
    r = ask(s, &c, 2, "probing/perf", "{\"action\":\"status\"}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "running")));
    ASSERT_EQ((int)body_get(r, "samples")->valuedouble, 42);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "probing/perf", "{\"action\":\"start\",\"rate\":250,\"mode\":\"wall\"}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "running")));
    ASSERT_EQ((int)body_get(r, "rate")->valuedouble, 250);
    ASSERT_STR_EQ(body_get(r, "mode")->valuestring, "wall");
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/perf", "{\"action\":\"start\"}");
    ASSERT(!ok(r) && strstr(message(r), "already running (wall mode, 250 Hz)"));
    cJSON_Delete(r);
    r = ask(s, &c, 5, "probing/perf", "{\"action\":\"stop\"}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "wasRunning")) &&
           cJSON_IsFalse(body_get(r, "running")));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "probing/perf", "{\"action\":\"stop\"}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "wasRunning")));
    cJSON_Delete(r);
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {NULL, "arguments.action: expected \"start\", \"stop\" or \"status\""},
        {"{\"action\":7}", "arguments.action: expected string"},
        {"{\"action\":\"go\"}", "arguments.action: 'go' is not one of"},
        {"{\"action\":\"start\",\"rate\":0}", "arguments.rate: 0 is out of range (1 to 1000"},
        {"{\"action\":\"start\",\"rate\":1001}", "arguments.rate: 1001 is out of range"},
        {"{\"action\":\"start\",\"rate\":2.5}", "arguments.rate: expected integer"},
        {"{\"action\":\"start\",\"mode\":\"gpu\"}", "arguments.mode: expected \"cpu\" or \"wall\""},
        {"{\"action\":\"status\",\"rate\":10}", "only with action \"start\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = ask(s, &c, 10 + (int)i, "probing/perf", bad[i].args);
        ASSERT(!ok(r) && strstr(message(r), bad[i].msg));
        cJSON_Delete(r);
    }
    r = ask(s, &c, 30, "probing/perf", "{\"action\":\"status\"}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "running"))); /* the bad starts started nothing */
    cJSON_Delete(r);
    cap_finish(s, &c);
}
