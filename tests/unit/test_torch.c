/* SPDX-License-Identifier: MIT */
/* probing/torch through a real session with the fake tracer (fake_torch.c): argument checks,
 * start / status / stop answers, and the error of a target without torch. */
#include <string.h>

#include "dapcap.h"
#include "unit.h"

TEST(req_torch_actions_and_arguments)
{
    struct cap c;
    struct srv_session *s = cap_attached(&c);
    ASSERT(s != NULL);
    cJSON *r;
    r = ask(s, &c, 2, "probing/torch", "{\"action\":\"start\",\"every\":4}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "started")));
    ASSERT_EQ((int)body_get(r, "every")->valuedouble, 4);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "probing/torch", NULL);
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "running")));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/torch", "{\"action\":\"stop\"}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "stopped")) && cJSON_IsFalse(body_get(r, "running")));
    cJSON_Delete(r);
    r = ask(s, &c, 5, "probing/torch", "{\"action\":\"go\"}");
    ASSERT(!ok(r) && strstr(message(r), "arguments.action"));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "probing/torch", "{\"action\":\"start\",\"every\":0}");
    ASSERT(!ok(r) && strstr(message(r), "arguments.every"));
    cJSON_Delete(r);
    r = ask(s, &c, 7, "probing/torch", "{\"action\":\"start\",\"every\":\"2\"}");
    ASSERT(!ok(r) && strstr(message(r), "every"));
    cJSON_Delete(r);
    r = ask(s, &c, 8, "probing/torch", "{\"action\":\"start\",\"every\":999999}");
    ASSERT(!ok(r) && strstr(message(r), "torch is not imported"));
    cJSON_Delete(r);
    cap_finish(s, &c);
}
