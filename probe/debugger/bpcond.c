/* SPDX-License-Identifier: MIT */
/* A breakpoint's hit condition and log message, as text (bpcond.h): no interpreter here. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpcond.h"

int dbg_hit_parse(const char *s, int *op, long *n)
{
    static const struct {
        const char *p;
        int op;
    } ops[] = {{"==", DBG_HIT_EQ}, {">=", DBG_HIT_GE}, {"<=", DBG_HIT_LE}, {">", DBG_HIT_GT},
               {"<", DBG_HIT_LT},  {"%", DBG_HIT_MOD}, {"=", DBG_HIT_EQ}};
    while (*s == ' ')
        s++;
    int o = DBG_HIT_EQ;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strncmp(s, ops[i].p, strlen(ops[i].p)) == 0) {
            o = ops[i].op;
            s += strlen(ops[i].p);
            break;
        }
    while (*s == ' ')
        s++;
    if (*s < '0' || *s > '9')
        return -1; /* no sign: strtol would take "-1" and "+1" */
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (*end == ' ')
        end++;
    if (errno || end == s || *end)
        return -1;
    *op = o;
    *n = v;
    return 0;
}

int dbg_hit_ok(int op, long n, long hits)
{
    switch (op) {
    case DBG_HIT_EQ: return hits == n;
    case DBG_HIT_GE: return hits >= n;
    case DBG_HIT_GT: return hits > n;
    case DBG_HIT_LE: return hits <= n;
    case DBG_HIT_LT: return hits < n;
    case DBG_HIT_MOD: return n > 0 && hits % n == 0;
    default: return 1;
    }
}

int dbg_log_split(const char *s, int (*part)(void *ctx, int is_expr, const char *text, size_t len),
                  void *ctx, const char **why)
{
    char lit[DBG_LOG_TEXT_MAX + 1];
    size_t ll = 0;
    int rc;
    while (*s) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            if (ll < DBG_LOG_TEXT_MAX)
                lit[ll++] = s[0];
            s += 2;
        } else if (s[0] == '{') {
            const char *end = strchr(s, '}');
            if (!end) {
                *why = "log message: unmatched '{'";
                return -1;
            }
            if (ll && (rc = part(ctx, 0, lit, ll)) < 0)
                return rc;
            ll = 0;
            size_t el = (size_t)(end - s - 1);
            if ((rc = part(ctx, 1, s + 1, el > DBG_LOG_EXPR_MAX ? DBG_LOG_EXPR_MAX : el)) < 0)
                return rc;
            s = end + 1;
        } else {
            if (ll < DBG_LOG_TEXT_MAX)
                lit[ll++] = *s;
            s++;
        }
    }
    if (ll && (rc = part(ctx, 0, lit, ll)) < 0)
        return rc;
    return 0;
}
