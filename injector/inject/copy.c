/* SPDX-License-Identifier: MIT */
/* ptrace_file_copy: a library copied where a target can dlopen it (inject.c: under the target's
 * own /tmp when it does not see ours; the CLI: a fresh copy for a fork child whose inherited
 * probe has no agent). */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "inj.h"

int ptrace_file_copy(const char *from, const char *to, uid_t uid, gid_t gid)
{
    char buf[65536];
    int rc = 0, in = open(from, O_RDONLY | O_CLOEXEC), out = -1;
    if (in < 0)
        return -errno;
    out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    if (out < 0)
        rc = -errno;
    while (rc == 0) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n > 0 && write(out, buf, (size_t)n) != n)
            rc = -EIO;
    }
    if (rc == 0 && fchown(out, uid, gid) < 0 && geteuid() == 0)
        rc = -errno;
    if (out >= 0 && close(out) < 0 && rc == 0)
        rc = -errno;
    close(in);
    return rc;
}
