/* SPDX-License-Identifier: MIT */
/* The token a probe listening on TCP asks of its clients (inject --listen, debug --pause,
 * serve --token auto): $PROBING_TOKEN when set, else a fresh random one; never a predictable
 * one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Reads len random bytes from /dev/urandom (a character device). Returns 0 or -errno. */
static int urandom_read(unsigned char *raw, size_t len)
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : S_ISCHR(st.st_mode) ? 0 : -ENODEV;
    for (size_t got = 0; rc == 0 && got < len;) {
        ssize_t n = read(fd, raw + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = n < 0 ? -errno : -EIO;
        else
            got += (size_t)n;
    }
    close(fd);
    return rc;
}

/* A fresh token of 32 hex characters from getrandom(2), else /dev/urandom (getrandom may be
 * missing, or refused by a seccomp filter). With neither, no token: never a predictable one. */
static int token_make(char *buf, size_t n, struct pb_err *err)
{
    unsigned char raw[16];
    size_t got = 0;
    int grc = 0;
    while (got < sizeof raw) {
        ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            grc = r < 0 ? -errno : -EIO;
            break;
        }
        got += (size_t)r;
    }
    if (grc < 0) {
        int urc = urandom_read(raw, sizeof raw);
        if (urc < 0)
            return pb_err_set(err, urc,
                              "no random source for a TCP token (getrandom: %s; "
                              "/dev/urandom: %s): set PROBING_TOKEN to a secret of %d to %d "
                              "characters",
                              strerror(-grc), strerror(-urc), PB_TOKEN_MIN, PB_TOKEN_MAX);
    }
    for (size_t i = 0; i < sizeof raw && 2 * i + 2 < n; i++)
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    memset(raw, 0, sizeof raw);
    return 0;
}

int cli_token_check(const char *token, struct pb_err *err)
{
    size_t len = strlen(token);
    if (len > PB_TOKEN_MAX)
        return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN is %zu characters long: the limit is %d",
                          len, PB_TOKEN_MAX);
    return 0;
}

int cli_token_choose(char *buf, size_t n, struct pb_err *err)
{
    const char *env = getenv("PROBING_TOKEN");
    if (env && *env) {
        if (cli_token_check(env, err) < 0)
            return err->code;
        if (strlen(env) < PB_TOKEN_MIN)
            return pb_err_set(err, PB_EUSAGE,
                              "PROBING_TOKEN is %zu characters long: a TCP "
                              "listener needs %d to %d",
                              strlen(env), PB_TOKEN_MIN, PB_TOKEN_MAX);
        if (strlen(env) >= n)
            return pb_err_set(err, PB_EUSAGE, "PROBING_TOKEN does not fit in %zu bytes", n);
        pb_strlcpy(buf, env, n);
        return 0;
    }
    int rc = token_make(buf, n, err);
    return rc < 0 ? rc : 1;
}
