/* SPDX-License-Identifier: MIT */
/* A tiny unit-test harness (libuv's runner in spirit): TEST(name) registers a test; the runner
 * (tests/unit/runner.c) runs each in its own child process with a timeout, so a crash or hang
 * fails one test, not the run. ASSERT_* print both sides and abort the test. */
#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, const char *file, unit_fn fn);

/* What the code under test writes to fd (1: stdout, 2: stderr) between the two calls, into buf
 * (NUL-terminated, cut at n - 1 bytes; its length returned). One capture at a time. */
void unit_capture_begin(int fd);
size_t unit_capture_end(char *buf, size_t n);

#define TEST(name)                                            \
    static void test_##name(void);                            \
    __attribute__((constructor)) static void reg_##name(void) \
    {                                                         \
        unit_register(#name, __FILE__, test_##name);          \
    }                                                         \
    static void test_##name(void)

#define UNIT_FAIL_(...)                                 \
    do {                                                \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                   \
        fprintf(stderr, "\n");                          \
        exit(1);                                        \
    } while (0)

#define ASSERT(cond)                                   \
    do {                                               \
        if (!(cond))                                   \
            UNIT_FAIL_("assertion failed: %s", #cond); \
    } while (0)

#define ASSERT_EQ(a, b)                                           \
    do {                                                          \
        long long a_ = (long long)(a), b_ = (long long)(b);       \
        if (a_ != b_)                                             \
            UNIT_FAIL_("%s == %s: %lld != %lld", #a, #b, a_, b_); \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                      \
    do {                                                                         \
        const char *a_ = (a), *b_ = (b);                                         \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                   \
            UNIT_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)", \
                       b_ ? b_ : "(null)");                                      \
    } while (0)

#endif
