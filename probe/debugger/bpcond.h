/* SPDX-License-Identifier: MIT */
/* The parts of a breakpoint's options that need no interpreter (bpcond.c): its hit condition
 * (DAP hitCondition: "5", "==5", ">=5", ">5", "<=5", "<5", "%5") and the split of its log
 * message ("x is {x}") into text and expressions. breakpoints.c compiles the expressions and
 * counts the hits; these are unit-tested on their own (tests/unit/test_bpcond.c). */
#ifndef PROBE_DBG_BPCOND_H
#define PROBE_DBG_BPCOND_H

#include <stddef.h>

enum dbg_hit_op {
    DBG_HIT_NONE,
    DBG_HIT_EQ,
    DBG_HIT_GE,
    DBG_HIT_GT,
    DBG_HIT_LE,
    DBG_HIT_LT,
    DBG_HIT_MOD
};

/* Parses a hit condition: 0 with *op and *n, or -1 (not understood: nothing set). Spaces
 * around the operator and the number are allowed; the number is 0 or more; "=5" is "==5". */
int dbg_hit_parse(const char *s, int *op, long *n);

/* Whether a breakpoint stops at its hits-th hit (counted from 1) under (op, n). %0 never does. */
int dbg_hit_ok(int op, long n, long hits);

/* Splits a log message into its parts, in order: text (with "{{" and "}}" as single braces) and
 * the expressions between single braces, each handed to part(ctx, is_expr, text, len) (text is
 * not NUL-terminated past len; an empty text part is not handed). Text parts are cut at
 * DBG_LOG_TEXT_MAX bytes, expressions at DBG_LOG_EXPR_MAX (as the message always was). Returns 0;
 * -1 with *why set for an unmatched '{'; or the first negative value part returned. */
#define DBG_LOG_TEXT_MAX 4095
#define DBG_LOG_EXPR_MAX 1023
int dbg_log_split(const char *s, int (*part)(void *ctx, int is_expr, const char *text, size_t len),
                  void *ctx, const char **why);

#endif
