/* SPDX-License-Identifier: MIT */
/* The directory holding the probe's Unix sockets: /tmp/probing-<euid>, mode 0700. If it exists it
 * must be a real directory owned by us with no group/other access; otherwise we refuse to serve
 * there (someone else could have prepared it to intercept connections). */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int probe_rundir_path(char *buf, size_t n, struct pb_err *err)
{
    uid_t uid = geteuid();
    snprintf(buf, n, "/tmp/probing-%u", (unsigned)uid);
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
        return pb_err_set(err, -errno, "mkdir %s: %s", buf, strerror(errno));
    struct stat st;
    if (lstat(buf, &st) < 0)
        return pb_err_set(err, -errno, "stat %s: %s", buf, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
        return pb_err_set(err, -EPERM, "%s is not a private directory of uid %u: remove it",
                          buf, (unsigned)uid);
    return 0;
}
