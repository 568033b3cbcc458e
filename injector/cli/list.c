/* SPDX-License-Identifier: MIT */
/* `probing list [--json]`: every process of this user (all of them for root) with the probe
 * loaded, found through /proc/PID/maps, each asked for its details over its socket. */
#include <ctype.h>
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "injector/inject/inj.h"

static void help(void)
{
    printf("usage: probing list [--json]\n"
           "\n"
           "List the processes of this user (every user's, for root) that have the probe\n"
           "loaded: pid, CPython version, socket, TCP address if any, command line.\n");
}

static cJSON *describe(pid_t pid, const char *lib, int timeout_ms)
{
    cJSON *o = cJSON_CreateObject();
    char buf[4096];
    struct pb_err err = {0};
    struct dap_client dc;
    cJSON_AddNumberToObject(o, "pid", pid);
    const char *v = strrchr(lib, '-');
    snprintf(buf, sizeof buf, "%s", v ? v + 1 : "?");
    if (strlen(buf) > 3 && strcmp(buf + strlen(buf) - 3, ".so") == 0)
        buf[strlen(buf) - 3] = '\0';
    cJSON_AddStringToObject(o, "python", buf);
    cli_proc_cmdline(pid, buf, sizeof buf);
    cJSON_AddStringToObject(o, "command", buf);
    dap_client_init(&dc, timeout_ms);
    cJSON *info = NULL;
    int rc = cli_connect_pid(pid, 0, &dc, &err);
    if (rc == 0)
        rc = cli_handshake(&dc, NULL, &err);
    if (rc == 0)
        rc = dap_client_request(&dc, "probing/info", NULL, &info, &err);
    if (rc == 0) {
        cJSON *py = cJSON_GetObjectItemCaseSensitive(info, "python");
        if (cJSON_IsString(py))
            cJSON_ReplaceItemInObjectCaseSensitive(o, "python",
                                                   cJSON_CreateString(py->valuestring));
        cJSON_AddItemToObject(o, "socket", cJSON_DetachItemFromObject(info, "socket"));
        cJSON_AddItemToObject(o, "tcp", cJSON_DetachItemFromObject(info, "tcp"));
        cJSON_AddNullToObject(o, "error");
        cli_disconnect(&dc);
    } else {
        cJSON_AddNullToObject(o, "socket");
        cJSON_AddNullToObject(o, "tcp");
        cJSON_AddStringToObject(o, "error", err.msg);
        dap_client_close(&dc);
    }
    cJSON_Delete(info);
    return o;
}

int cli_cmd_list(const struct cli_opts *o, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, 0, 'j'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else if (c == 'h') {
            help();
            return CLI_OK;
        } else
            return cli_bad_option("list", argv);
    }
    DIR *d = opendir("/proc");
    if (!d) {
        cli_error("cannot read /proc: is it mounted?");
        return CLI_FAIL;
    }
    cJSON *all = cJSON_CreateArray();
    uid_t me = geteuid();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        char path[64], lib[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "/proc/%d", (int)pid);
        if (pid == getpid() || stat(path, &st) < 0 || (me != 0 && st.st_uid != me))
            continue;
        if (ptrace_maps_find(pid, CLI_PROBE_LIB_PREFIX, lib, sizeof lib) != 1)
            continue;
        cJSON_AddItemToArray(all, describe(pid, lib, o->timeout_ms < 3000 ? o->timeout_ms : 3000));
    }
    closedir(d);
    if (json) {
        char *s = cJSON_Print(all);
        puts(s);
        cJSON_free(s);
    } else {
        printf("%-8s %-8s %-36s %-22s %s\n", "PID", "PYTHON", "SOCKET", "TCP", "COMMAND");
        const cJSON *p;
        cJSON_ArrayForEach(p, all)
        {
            const cJSON *sock = cJSON_GetObjectItem(p, "socket"),
                        *tcp = cJSON_GetObjectItem(p, "tcp");
            const cJSON *er = cJSON_GetObjectItem(p, "error");
            printf("%-8d %-8s %-36s %-22s %s\n", cJSON_GetObjectItem(p, "pid")->valueint,
                   cli_json_text(p, "python"),
                   cJSON_IsString(sock) ? cli_tx(sock->valuestring) : "(not answering)",
                   cJSON_IsString(tcp) ? cli_tx(tcp->valuestring) : "-",
                   cli_json_text(p, "command"));
            if (cJSON_IsString(er))
                fprintf(stderr, "probing: warning: %d: %s\n",
                        cJSON_GetObjectItem(p, "pid")->valueint, cli_tx(er->valuestring));
        }
    }
    cJSON_Delete(all);
    return CLI_OK;
}
