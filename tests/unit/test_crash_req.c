/* SPDX-License-Identifier: MIT */
/* probing/crash through a real session with the fake crash capture (fake_crash.c): status,
 * arm (twice: changed only the first time), disarm (twice), and a wrong-typed enable. The real
 * handler is tested end to end in tests/e2e/test_crash.py. */
#include <string.h>

#include "dapcap.h"
#include "unit.h"

TEST(req_crash_arm_disarm)
{
    struct cap c;
    struct srv_session *s = cap_attached(&c);
    ASSERT(s != NULL);
    cJSON *r;
    r = ask(s, &c, 2, "probing/crash", NULL);
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "armed")) && cJSON_IsFalse(body_get(r, "changed")));
    ASSERT_STR_EQ(body_get(r, "path")->valuestring, "/tmp/probing-0/crash-1.txt");
    ASSERT_EQ(cJSON_GetArraySize(body_get(r, "signals")), 5);
    ASSERT_STR_EQ(cJSON_GetArrayItem(body_get(r, "signals"), 0)->valuestring, "SIGSEGV");
    ASSERT_EQ(cJSON_GetArraySize(body_get(r, "previous")), 0);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "probing/crash", "{\"enable\":true}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "armed")) && cJSON_IsTrue(body_get(r, "changed")));
    ASSERT_STR_EQ(cJSON_GetObjectItem(body_get(r, "previous"), "SIGABRT")->valuestring, "default");
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/crash", "{\"enable\":true}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "armed")) && cJSON_IsFalse(body_get(r, "changed")));
    cJSON_Delete(r);
    r = ask(s, &c, 5, "probing/crash", "{\"enable\":\"yes\"}");
    ASSERT(!ok(r) && strstr(message(r), "arguments.enable: expected boolean"));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "probing/crash", "{\"enable\":false}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "armed")) && cJSON_IsTrue(body_get(r, "changed")));
    cJSON_Delete(r);
    r = ask(s, &c, 7, "probing/crash", "{\"enable\":false}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "changed")));
    cJSON_Delete(r);
    cap_finish(s, &c);
}
