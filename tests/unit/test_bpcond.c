/* SPDX-License-Identifier: MIT */
/* A breakpoint's hit condition and log message as text (probe/debugger/bpcond.c), with the
 * strings VS Code sends when a user types them in its breakpoint editor ("Hit Count", "Log
 * Message"): what stops when, what is refused, and what a log message prints as text and as
 * expressions. */
#include <stdio.h>
#include <string.h>

#include "debugger/bpcond.h"
#include "unit.h"

/* The hits (1..20) at which (op, n) stops, as "1,2,3". */
static void stops(const char *cond, const char *want)
{
    int op = -1;
    long n = -1;
    ASSERT_EQ(dbg_hit_parse(cond, &op, &n), 0);
    char got[256] = "";
    for (long h = 1; h <= 20; h++)
        if (dbg_hit_ok(op, n, h))
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%ld", got[0] ? "," : "", h);
    ASSERT_STR_EQ(got, want);
}

TEST(bpcond_hit_conditions_stop_where_the_user_said)
{
    stops("5", "5");
    stops("==5", "5");
    stops("=5", "5");
    stops(" >= 18 ", "18,19,20");
    stops(">18", "19,20");
    stops("<= 2", "1,2");
    stops("<3", "1,2");
    stops("%7", "7,14");
    stops("% 10", "10,20");
    stops("%0", ""); /* never: no division by zero */
    stops("0", "");  /* the 0th hit never comes */
    stops(">0", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20");
}

TEST(bpcond_hit_conditions_refused)
{
    const char *bad[] = {"",    "   ",  "x",   ">",
                         "5x",  "-1",   "+5",  "> -2",
                         "5 5", "==",   "%",   "=>5",
                         "<>5", "0x10", "1e3", "99999999999999999999999"}; /* overflows long */
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int op = 123;
        long n = 456;
        ASSERT_EQ(dbg_hit_parse(bad[i], &op, &n), -1);
        ASSERT_EQ(op, 123); /* nothing set on a refusal */
        ASSERT_EQ(n, 456);
    }
    ASSERT_EQ(dbg_hit_ok(DBG_HIT_NONE, 0, 1), 1); /* no condition: every hit */
}

struct parts {
    char text[8192];
    int n, fail_at;
};

static int part(void *ctx, int is_expr, const char *text, size_t len)
{
    struct parts *p = ctx;
    if (++p->n == p->fail_at)
        return -7;
    size_t used = strlen(p->text);
    snprintf(p->text + used, sizeof p->text - used, "%s%.*s%s", is_expr ? "[" : "<", (int)len, text,
             is_expr ? "]" : ">");
    return 0;
}

/* The message's parts as "<text>[expr]...", or "ERR: why". */
static void split(const char *msg, const char *want)
{
    struct parts p = {.fail_at = -1};
    const char *why = NULL;
    if (dbg_log_split(msg, part, &p, &why) < 0)
        snprintf(p.text, sizeof p.text, "ERR: %s", why ? why : "?");
    ASSERT_STR_EQ(p.text, want);
}

TEST(bpcond_log_messages_split_into_text_and_expressions)
{
    split("step {step} loss {loss:.3f}", "<step >[step]< loss >[loss:.3f]");
    split("{a} + {b} = {a + b}", "[a]< + >[b]< = >[a + b]");
    split("{len(batch)}", "[len(batch)]");
    split("no braces at all", "<no braces at all>");
    split("", "");
    split("{{literal}} and {x}", "<{literal} and >[x]");
    split("a } alone", "<a } alone>"); /* a single '}' is text */
    split("{}", "[]");                 /* an empty expression: compiling it says so */
    split("d = {{'k': {v}}}", "<d = {'k': >[v]<}>");
    split("caf\xc3\xa9 {x}", "<caf\xc3\xa9 >[x]");
    split("x is {x", "ERR: log message: unmatched '{'");
    split("{a} then {b", "ERR: log message: unmatched '{'");
}

TEST(bpcond_log_message_bounds_and_failures)
{
    static char big[20000], want[20000];
    memset(big, 'a', 10000);
    big[10000] = 0;
    snprintf(want, sizeof want, "<%.*s>", DBG_LOG_TEXT_MAX, big); /* text cut at the bound */
    split(big, want);
    big[0] = '{';
    big[5000] = '}';
    big[5001] = 0;
    snprintf(want, sizeof want, "[%.*s]", DBG_LOG_EXPR_MAX, big + 1);
    split(big, want);
    /* A part that fails stops the split with its value. */
    struct parts p = {.fail_at = 2};
    const char *why = NULL;
    ASSERT_EQ(dbg_log_split("x {y} z", part, &p, &why), -7);
    ASSERT_STR_EQ(p.text, "<x >");
    ASSERT(why == NULL);
}
