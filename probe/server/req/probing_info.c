/* SPDX-License-Identifier: MIT */
/* probing/info (custom; docs/protocol.md): who this probe is: pid, CPython version, probe version,
 * socket path, TCP address, executable and command line. Used by `probing list`. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "server/server.h"
#include "core/core.h"

int srv_req_probing_info(struct srv_ctx *c, const cJSON *args, cJSON *body)
{
    (void)c;
    (void)args;
    const struct probe_info *pi = core_info_get();
    char buf[4096];
    cJSON_AddNumberToObject(body, "pid", pi->pid);
    cJSON_AddStringToObject(body, "python", pi->python_version);
    cJSON_AddStringToObject(body, "probe", PROBING_VERSION);
    cJSON_AddStringToObject(body, "socket", pi->socket_path);
    if (pi->tcp_address[0])
        cJSON_AddStringToObject(body, "tcp", pi->tcp_address);
    else
        cJSON_AddNullToObject(body, "tcp");
    cJSON_AddNumberToObject(body, "probeStartTime", pi->start_time);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    cJSON_AddStringToObject(body, "executable", buf);
    long len = pb_read_file("/proc/self/cmdline", buf, sizeof buf);
    cJSON *argv = cJSON_AddArrayToObject(body, "argv");
    for (long i = 0; i < len;) {
        cJSON_AddItemToArray(argv, cJSON_CreateString(buf + i));
        i += (long)strlen(buf + i) + 1;
    }
    return 0;
}
