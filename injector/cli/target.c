/* SPDX-License-Identifier: MIT */
/* The target of a command: "PID" or "HOST:PORT" parsed, and what /proc says of a local
 * process (its command line, the fields of its status); the clock every wait uses. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int cli_target_parse(const char *s, struct cli_target *t, struct pb_err *err)
{
    memset(t, 0, sizeof *t);
    char *end;
    long v = strtol(s, &end, 10);
    if (*s && !*end) {
        if (v <= 0 || v > INT_MAX)
            return pb_err_set(err, PB_EUSAGE, "'%s' is not a process id", s);
        t->pid = (pid_t)v;
        return 0;
    }
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return pb_err_set(err, PB_EUSAGE, "target '%s': expected PID or HOST:PORT", s);
    v = strtol(colon + 1, &end, 10);
    if (*end || v <= 0 || v > 65535)
        return pb_err_set(err, PB_EUSAGE, "target '%s': bad port", s);
    size_t hl = (size_t)(colon - s);
    if (s[0] == '[' && hl > 2 && s[hl - 1] == ']') {
        s++;
        hl -= 2;
    }
    if (hl >= sizeof t->host)
        return pb_err_set(err, PB_EUSAGE, "target '%s': host too long", s);
    memcpy(t->host, s, hl);
    t->host[hl] = '\0';
    t->port = (int)v;
    return 0;
}

void cli_proc_cmdline(pid_t pid, char *buf, size_t n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    long len = pb_read_file(path, buf, n);
    for (long i = 0; i + 1 < len; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    if (len <= 0)
        buf[0] = '\0';
}

/* NSpid's last value is the pid as the target sees it in its own namespace. */
long cli_proc_status_value(const char *status, const char *key, int last)
{
    char pat[32];
    snprintf(pat, sizeof pat, "\n%s:", key);
    const char *p = strstr(status, pat);
    if (!p)
        return -1;
    p += strlen(pat);
    long v = -1;
    for (;;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p || (*end != '\t' && *end != ' ' && *end != '\n' && *end != '\0'))
            break;
        v = x;
        if (!last || *end == '\n')
            break;
        p = end;
    }
    return v;
}

long long cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
