/* SPDX-License-Identifier: MIT */
/* `probing -p PID perf --comm [--stop] [--json]`: the collectives recorder through probing/comm
 * (every torch.distributed collective and point-to-point call into torch.collectives), also
 * started by perf --torch unless --no-comm. Recording goes on after the command exits, until
 * perf --stop. See docs/torch.md "perf --comm"; the job-wide view is `probing cluster
 * collectives` (docs/cluster.md). */
#include <stdio.h>
#include <string.h>

#include "perf.h"

static void help(void)
{
    printf("usage: probing -p PID perf --comm [--ddp] [--json]\n"
           "       probing -p PID perf --comm --stop\n"
           "\n"
           "Record every torch.distributed collective and point-to-point call of a running job\n"
           "(all_reduce, all_gather, reduce_scatter, broadcast, barrier, all_to_all, send, recv,\n"
           "isend, irecv, batch_isend_irecv, ... and when their async Work completes), for any\n"
           "backend: per process group its sequence number, op, ranks, peer, tensor sizes and\n"
           "dtype, start and end (or still running), and the calling Python frame. Also started\n"
           "by 'perf --torch'. Results:\n"
           "  torch.collectives   one row per call, oldest first (a ring of comm.max_records)\n"
           "  comm_metrics        the original Probing's view of it\n"
           "Across the job: probing cluster collectives (who has not entered which collective\n"
           "or posted which recv, which ranks the others wait for, and torch's own flight\n"
           "recorder where the job enabled it).\n"
           "DistributedDataParallel's bucket allreduces are issued from C++, past these\n"
           "functions: they are recorded only with --ddp (torch's sequence numbers count them\n"
           "either way, so 'probing cluster collectives' still names a rank behind).\n"
           "\n"
           "  --ddp           also record DDP's bucket allreduces: each DistributedDataParallel\n"
           "                  module gets the recorder's comm hook at its next forward. torch\n"
           "                  takes no hook back: it stays for the module's life, passing the\n"
           "                  allreduces through unrecorded after --stop (a Python call per\n"
           "                  bucket; see docs/torch.md)\n"
           "  --stop          put every torch.distributed function back (the records stay)\n"
           "  --json          print the probing/comm answer as JSON\n");
}

cJSON *cli_perf_comm_request(struct dap_client *dc, const char *action, int ddp, struct pb_err *err)
{
    cJSON *args = cJSON_CreateObject(), *body = NULL;
    cJSON_AddStringToObject(args, "action", action);
    if (ddp)
        cJSON_AddTrueToObject(args, "ddp");
    if (dap_client_request(dc, "probing/comm", args, &body, err) < 0)
        return NULL;
    return body;
}

int cli_perf_comm_stop(struct dap_client *dc, int *stopped, struct pb_err *err)
{
    cJSON *body = cli_perf_comm_request(dc, "stop", 0, err);
    if (!body)
        return err->code < 0 ? err->code : PB_EUNKNOWN;
    if (cli_json_true(body, "stopped")) {
        const cJSON *left = cJSON_GetObjectItemCaseSensitive(body, "left");
        printf("perf --comm: stopped after %.0f records; every torch.distributed function put "
               "back",
               cli_json_num(body, "records", 0));
        if (cJSON_GetArraySize(left) > 0) {
            const cJSON *n;
            printf(" except those replaced since by someone else (left as they are):");
            cJSON_ArrayForEach(n, left) printf(" %s", cJSON_IsString(n) ? n->valuestring : "?");
        }
        printf("\n");
        if (cli_json_num(body, "ddpHooks", 0) > 0)
            printf("perf --comm: %.0f DistributedDataParallel module(s) keep the recorder's comm "
                   "hook (started with --ddp; torch takes no hook back), passing their "
                   "allreduces through unrecorded\n",
                   cli_json_num(body, "ddpHooks", 0));
        *stopped = 1;
    }
    cJSON_Delete(body);
    return 0;
}

void cli_perf_comm_print(const cJSON *b, int pid)
{
    if (cli_json_true(b, "started"))
        printf("perf --comm: recording torch.distributed calls in process %d (torch %s", pid,
               cli_json_str(b, "torch") ? cli_json_str(b, "torch") : "?");
    else
        printf("perf --comm: already recording in process %d (%.0f records so far; torch %s", pid,
               cli_json_num(b, "records", 0),
               cli_json_str(b, "torch") ? cli_json_str(b, "torch") : "?");
    if (cli_json_num(b, "rank", -1) >= 0)
        printf(", rank %.0f", cli_json_num(b, "rank", -1));
    printf("): a ring of %.0f records (comm.max_records)\n", cli_json_num(b, "maxRecords", 0));
    const cJSON *fns = cJSON_GetObjectItemCaseSensitive(b, "functions"), *n;
    printf("  calls:");
    cJSON_ArrayForEach(n, fns) printf(" %s", cJSON_IsString(n) ? n->valuestring : "?");
    printf("\n");
    if (cli_json_true(b, "ddpAsked"))
        printf("  DistributedDataParallel: every module's bucket allreduces, from its next forward "
               "(a comm hook that stays for the module's life; %.0f modules so far)\n",
               cli_json_num(b, "ddp", 0));
    else if (cli_json_num(b, "ddpHooks", 0) > 0)
        printf("  DistributedDataParallel: the bucket allreduces of the %.0f module(s) given the "
               "recorder's comm hook by an earlier --ddp\n",
               cli_json_num(b, "ddpHooks", 0));
    else
        printf("  DistributedDataParallel: bucket allreduces (issued from C++) not recorded: add "
               "--ddp to record them (a comm hook that stays: see --help)\n");
    printf("  torch's flight recorder: %s\n",
           cli_json_str(b, "flightRecorder") ? cli_json_str(b, "flightRecorder") : "?");
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(b, "notes")) if (cJSON_IsString(n))
        printf("  note: %s\n", n->valuestring);
}

int cli_perf_comm(const struct cli_opts *o, int argc, char **argv)
{
    /* A few flags and no values: no getopt needed. */
    int stop = 0, json = 0, ddp = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            help();
            return CLI_OK;
        }
        if (strcmp(argv[i], "--stop") == 0)
            stop = 1;
        else if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else if (strcmp(argv[i], "--ddp") == 0)
            ddp = 1;
        else if (strcmp(argv[i], "--comm") != 0) {
            cli_error("perf --comm: unknown option '%s': see 'probing perf --comm --help'",
                      argv[i]);
            return CLI_USAGE;
        }
    }
    if (stop && ddp) {
        cli_error("perf --comm: --ddp starts recording, --stop ends it: give one of them");
        return CLI_USAGE;
    }
    if (stop)
        return CLI_PERF_STOP;
    struct dap_client dc;
    if (cli_open(o, &dc) < 0)
        return CLI_FAIL;
    struct pb_err err = {0};
    cJSON *body = cli_perf_comm_request(&dc, "start", ddp, &err);
    cli_disconnect(&dc);
    int pid = o->target.pid;
    if (!body) {
        cli_error("perf --comm: %s", err.msg);
        return CLI_FAIL;
    }
    if (json) {
        cli_print_json(body);
    } else {
        cli_perf_comm_print(body, pid);
        printf("results: probing -p %d query \"SELECT seq, op, pg, sizes, state, duration_ms, "
               "file, line FROM torch.collectives ORDER BY id DESC LIMIT 10\"\n",
               pid);
        printf("stop with: probing -p %d perf --stop\n", pid);
    }
    cJSON_Delete(body);
    return CLI_OK;
}
