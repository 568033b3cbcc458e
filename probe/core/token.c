/* SPDX-License-Identifier: MIT */
/* The TCP token: stored once, compared in constant time (the comparison's duration does not
 * depend on where the first differing byte is, nor on the secret's length). */
#include "core.h"

#include <string.h>

#define TOKEN_MAX (PB_TOKEN_MAX + 1)
static char token[TOKEN_MAX];
static size_t token_len;

void core_token_set(const char *t)
{
    size_t n = strlen(t);
    if (n > PB_TOKEN_MAX) /* never reached: srv_tcp_listen refuses longer ones */
        n = PB_TOKEN_MAX;
    memset(token, 0, sizeof token);
    memcpy(token, t, n);
    token_len = n;
}

int core_token_check(const char *given)
{
    if (!given || token_len == 0)
        return 0;
    size_t glen = strnlen(given, TOKEN_MAX);
    /* Walk the whole buffer whatever the lengths; mix the length difference in. */
    volatile unsigned char diff = (unsigned char)(glen != token_len);
    for (size_t i = 0; i < TOKEN_MAX; i++) {
        unsigned char g = i < glen ? (unsigned char)given[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)token[i]);
    }
    return diff == 0;
}
