/* SPDX-License-Identifier: MIT */
/* The request handlers added with SQL and eval, through a real session with the fakes
 * (fake_store.c, fake_eval.c) and the real settings registry: probing/query, probing/config,
 * probing/eval, and evaluate with its contexts and % console commands. */
#include <string.h>

#include "dapcap.h"
#include "unit.h"

static struct srv_session *attached(struct cap *c)
{
    memset(c, 0, sizeof *c);
    dap_reader_init(&c->out, 0);
    struct srv_session *s = srv_session_new(&cap_ops, c, SRV_TRANSPORT_UNIX);
    cJSON *r = ask(s, c, 1, "attach", NULL);
    ASSERT(ok(r));
    cJSON_Delete(r);
    return s;
}

static void done(struct srv_session *s, struct cap *c)
{
    srv_session_unref(s);
    dap_reader_close(&c->out);
    cJSON_Delete(c->events);
}

TEST(req_query_rows_and_errors)
{
    struct cap c;
    struct srv_session *s = attached(&c);
    cJSON *r = ask(s, &c, 2, "probing/query", "{\"sql\":\"SELECT 1\"}");
    ASSERT(ok(r));
    const cJSON *cols = body_get(r, "columns"), *rows = body_get(r, "rows");
    ASSERT_EQ(cJSON_GetArraySize(cols), 2);
    ASSERT_STR_EQ(cJSON_GetArrayItem(cols, 0)->valuestring, "a");
    ASSERT_EQ(cJSON_GetArraySize(rows), 1);
    ASSERT_EQ(cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 0)->valueint, 1);
    ASSERT_STR_EQ(cJSON_GetArrayItem(cJSON_GetArrayItem(rows, 0), 1)->valuestring, "x");
    ASSERT(cJSON_IsFalse(body_get(r, "truncated")));
    cJSON_Delete(r);
    r = ask(s, &c, 3, "probing/query", "{\"sql\":\"SLOW\"}");
    ASSERT(ok(r) && cJSON_IsTrue(body_get(r, "truncated")));
    ASSERT(strstr(body_get(r, "note")->valuestring, "query.max_rows"));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/query", "{\"sql\":\"FRM\"}");
    ASSERT(!ok(r) && strstr(message(r), "syntax error (at column 1)"));
    cJSON_Delete(r);
    r = ask(s, &c, 5, "probing/query", "{\"sql\":7}");
    ASSERT(!ok(r) && strcmp(message(r), "arguments.sql: expected string") == 0);
    cJSON_Delete(r);
    r = ask(s, &c, 6, "probing/query", NULL);
    ASSERT(!ok(r) && strstr(message(r), "sql"));
    cJSON_Delete(r);
    done(s, &c);
}

TEST(req_config_get_set_validate)
{
    struct cap c;
    struct srv_session *s = attached(&c);
    cJSON *r = ask(s, &c, 2, "probing/config", NULL);
    ASSERT(ok(r) && cJSON_GetArraySize(body_get(r, "settings")) >= 5);
    cJSON_Delete(r);
    r = ask(s, &c, 3, "probing/config", "{\"key\":\"query.max_rows\",\"value\":\"25\"}");
    ASSERT(ok(r));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/config", "{\"key\":\"query.max_rows\"}");
    ASSERT(ok(r));
    const cJSON *one = cJSON_GetArrayItem(body_get(r, "settings"), 0);
    ASSERT_STR_EQ(cJSON_GetObjectItem(one, "name")->valuestring, "query.max_rows");
    ASSERT_STR_EQ(cJSON_GetObjectItem(one, "value")->valuestring, "25");
    cJSON_Delete(r);
    r = ask(s, &c, 5, "probing/config", "{\"key\":\"query.max_rows\",\"value\":\"0\"}");
    ASSERT(!ok(r) && strstr(message(r), "query.max_rows"));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "probing/config", "{\"key\":\"no.such\"}");
    ASSERT(!ok(r) && strstr(message(r), "no.such"));
    cJSON_Delete(r);
    done(s, &c);
}

TEST(req_eval_value_output_exception)
{
    struct cap c;
    struct srv_session *s = attached(&c);
    cJSON *r = ask(s, &c, 2, "probing/eval", "{\"code\":\"6*7\"}");
    ASSERT(ok(r));
    ASSERT_STR_EQ(body_get(r, "result")->valuestring, "6*7");
    ASSERT(cJSON_IsNull(body_get(r, "exception")));
    cJSON_Delete(r);
    /* An exception is an answer (the CLI prints the traceback and exits 1), not a failure. */
    r = ask(s, &c, 3, "probing/eval", "{\"code\":\"raise\"}");
    ASSERT(ok(r));
    const cJSON *exc = body_get(r, "exception");
    ASSERT_STR_EQ(cJSON_GetObjectItem(exc, "type")->valuestring, "ValueError");
    ASSERT(strstr(cJSON_GetObjectItem(exc, "traceback")->valuestring, "ValueError: boom"));
    ASSERT(cJSON_IsNull(body_get(r, "result")));
    cJSON_Delete(r);
    r = ask(s, &c, 31, "probing/eval", "{\"code\":\"print\"}");
    ASSERT(ok(r));
    const cJSON *o = cJSON_GetArrayItem(body_get(r, "output"), 0);
    ASSERT_STR_EQ(cJSON_GetObjectItem(o, "output")->valuestring, "hi\n");
    ASSERT_STR_EQ(cJSON_GetObjectItem(o, "category")->valuestring, "stdout");
    cJSON_Delete(r);
    r = ask(s, &c, 32, "probing/eval", "{\"code\":\"incomplete\",\"mode\":\"complete\"}");
    ASSERT(ok(r) && cJSON_IsFalse(body_get(r, "complete")));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "probing/eval", "{\"code\":5}");
    ASSERT(!ok(r) && strcmp(message(r), "arguments.code: expected string") == 0);
    cJSON_Delete(r);
    done(s, &c);
}

TEST(req_evaluate_contexts_and_console)
{
    struct cap c;
    struct srv_session *s = attached(&c);
    cJSON *r = ask(s, &c, 2, "evaluate", "{\"expression\":\"print\",\"context\":\"repl\"}");
    ASSERT(ok(r));
    /* What the code printed came first, as an output event. */
    const cJSON *e = cJSON_GetArrayItem(c.events, 0);
    ASSERT(e && strcmp(cJSON_GetObjectItem(e, "event")->valuestring, "output") == 0);
    ASSERT_STR_EQ(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "body"), "output")->valuestring,
                  "hi\n");
    cJSON_Delete(r);
    r = ask(s, &c, 3, "evaluate", "{\"expression\":\"raise\",\"context\":\"watch\"}");
    ASSERT(!ok(r) && strstr(message(r), "ValueError: boom"));
    cJSON_Delete(r);
    r = ask(s, &c, 4, "evaluate", "{\"expression\":\"%sql SELECT 1\",\"context\":\"repl\"}");
    ASSERT(ok(r));
    const char *table = body_get(r, "result")->valuestring;
    ASSERT(strstr(table, "a") && strstr(table, "x") && strstr(table, "(1 row"));
    cJSON_Delete(r);
    r = ask(s, &c, 5, "evaluate", "{\"expression\":\"%sql FRM\",\"context\":\"repl\"}");
    ASSERT(!ok(r) && strstr(message(r), "syntax error"));
    cJSON_Delete(r);
    r = ask(s, &c, 6, "evaluate", "{\"expression\":\"%help\",\"context\":\"repl\"}");
    ASSERT(ok(r) && strstr(body_get(r, "result")->valuestring, "%sql"));
    cJSON_Delete(r);
    r = ask(s, &c, 7, "evaluate", "{\"expression\":\"%frob\",\"context\":\"repl\"}");
    ASSERT(!ok(r) && strstr(message(r), "unknown console command '%frob'"));
    cJSON_Delete(r);
    r = ask(s, &c, 8, "evaluate", "{\"expression\":\"x\",\"context\":\"hover\",\"frameId\":3}");
    ASSERT(!ok(r) && strstr(message(r), "frame"));
    cJSON_Delete(r);
    /* A result with children is handed out with its reference and child count. */
    r = ask(s, &c, 10, "evaluate", "{\"expression\":\"list\",\"context\":\"watch\"}");
    ASSERT(ok(r));
    ASSERT_EQ((long long)body_get(r, "variablesReference")->valuedouble, 7);
    ASSERT_EQ((long long)body_get(r, "indexedVariables")->valuedouble, 3);
    cJSON_Delete(r);
    r = ask(s, &c, 9, "evaluate", "{\"context\":\"repl\"}");
    ASSERT(!ok(r) && strstr(message(r), "expression"));
    cJSON_Delete(r);
    done(s, &c);
}
