/* SPDX-License-Identifier: MIT */
/* Error codes and the pb_err detail struct (see pb.h). */
#include "pb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *pb_strerror(int code)
{
    switch (code) {
#define PB_CASE_(name, val, msg) \
    case name: return msg;
        PB_ERRORS(PB_CASE_)
#undef PB_CASE_
    default: break;
    }
    if (code < 0 && code > -1000)
        return strerror(-code);
    return "unknown error";
}

int pb_err_set(struct pb_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        e->code = code;
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void pb_err_clear(struct pb_err *e)
{
    if (e) {
        e->code = 0;
        e->msg[0] = '\0';
    }
}

size_t pb_strlcpy(char *dst, const char *src, size_t n)
{
    size_t len = strlen(src);
    if (n) {
        size_t c = len < n - 1 ? len : n - 1;
        memcpy(dst, src, c);
        dst[c] = '\0';
    }
    return len;
}

long pb_read_file(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got + 1 < n) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = -errno;
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    close(fd);
    return (long)got;
}
