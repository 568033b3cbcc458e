/* SPDX-License-Identifier: MIT */
/* `probing cluster list`: the node documents' ranks grouped by job, each job with its launcher,
 * world size, master address, its ranks (rank, local rank, node, pid, CPython, probe state) and
 * the ranks its WORLD_SIZE expects that no node reported; nodes that did not answer are named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"

static int by_rank(const void *pa, const void *pb)
{
    const cJSON *a = *(const cJSON *const *)pa, *b = *(const cJSON *const *)pb;
    double x = cli_json_num(a, "rank", 0), y = cli_json_num(b, "rank", 0);
    return x < y ? -1 : x > y;
}

/* {jobs: [{job, launcher, world_size, master, nodes, ranks, missing}], errors: [{node, error}]} */
static cJSON *merge(const struct cli_cluster_opts *o, const cJSON *nodes)
{
    cJSON *out = cJSON_CreateObject();
    cJSON *jobs = cJSON_AddArrayToObject(out, "jobs"),
          *errors = cJSON_AddArrayToObject(out, "errors");
    const cJSON *d, *r;
    cJSON_ArrayForEach(d, nodes)
    {
        if (cli_json_str(d, "error")) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "node", cli_json_str(d, "node"));
            cJSON_AddStringToObject(e, "error", cli_json_str(d, "error"));
            cJSON_AddItemToArray(errors, e);
            continue;
        }
        cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(d, "ranks"))
        {
            const char *id = cli_json_str(r, "job");
            if (!id || (o->job && strcmp(o->job, id) != 0))
                continue;
            cJSON *j = NULL, *x;
            cJSON_ArrayForEach(x, jobs) if (strcmp(cli_json_str(x, "job"), id) == 0) j = x;
            if (!j) {
                j = cJSON_CreateObject();
                cJSON_AddStringToObject(j, "job", id);
                cJSON_AddStringToObject(j, "launcher", cli_json_str(r, "launcher"));
                cJSON_AddNumberToObject(j, "world_size", 0);
                cJSON_AddItemToObject(j, "master",
                                      cJSON_Duplicate(cJSON_GetObjectItem(r, "master"), 1));
                cJSON_AddArrayToObject(j, "nodes");
                cJSON_AddArrayToObject(j, "ranks");
                cJSON_AddItemToArray(jobs, j);
            }
            int ws = (int)cli_json_num(r, "world_size", 0);
            if (ws > cli_json_num(j, "world_size", 0))
                cJSON_SetNumberValue(cJSON_GetObjectItem(j, "world_size"), ws);
            cJSON *nds = cJSON_GetObjectItem(j, "nodes");
            const char *nd = cli_json_str(r, "node");
            int have = 0;
            cJSON_ArrayForEach(x, nds) have |= strcmp(x->valuestring, nd) == 0;
            if (!have)
                cJSON_AddItemToArray(nds, cJSON_CreateString(nd));
            cJSON *c = cJSON_CreateObject();
            static const char *const keep[] = {"rank",    "local_rank", "group_rank", "node",
                                               "pid",     "python",     "probe",      "uid",
                                               "job_uid", "foreign",    "duplicate"};
            for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
                if (cJSON_GetObjectItem(r, keep[k]))
                    cJSON_AddItemToObject(c, keep[k],
                                          cJSON_Duplicate(cJSON_GetObjectItem(r, keep[k]), 1));
            cJSON_AddItemToArray(cJSON_GetObjectItem(j, "ranks"), c);
        }
    }
    cJSON *j;
    cJSON_ArrayForEach(j, jobs)
    {
        cJSON *ranks = cJSON_DetachItemFromObject(j, "ranks");
        int n = cJSON_GetArraySize(ranks), ws = (int)cli_json_num(j, "world_size", 0);
        cJSON **v = calloc((size_t)n + 1, sizeof *v);
        for (int i = n - 1; i >= 0; i--)
            v[i] = cJSON_DetachItemFromArray(ranks, i);
        qsort(v, (size_t)n, sizeof *v, by_rank);
        for (int i = 0; i < n; i++) {
            /* the same rank on two nodes is a duplicate too (find.c marks those of a node) */
            if (!cli_json_true(v[i], "duplicate") &&
                ((i > 0 && cli_json_num(v[i - 1], "rank", -1) == cli_json_num(v[i], "rank", -1)) ||
                 (i + 1 < n &&
                  cli_json_num(v[i + 1], "rank", -1) == cli_json_num(v[i], "rank", -1))))
                cJSON_AddBoolToObject(v[i], "duplicate", 1);
            cJSON_AddItemToArray(ranks, v[i]);
        }
        cJSON_AddItemToObject(j, "ranks", ranks);
        int *rk = malloc(sizeof(int) * ((size_t)n + 1));
        for (int i = 0; rk && i < n; i++)
            rk[i] = (int)cli_json_num(v[i], "rank", -1);
        struct cli_cluster_gaps g;
        cli_cluster_gaps(rk, rk ? n : 0, ws, &g);
        cli_cluster_gaps_to_json(j, &g);
        cli_cluster_gaps_free(&g);
        free(rk);
        free(v);
    }
    return out;
}

int cli_cluster_list_report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    cJSON *m = merge(o, nodes);
    const cJSON *jobs = cJSON_GetObjectItem(m, "jobs"), *j, *r, *e;
    if (o->json) {
        cli_print_json(m);
    } else {
        if (cJSON_GetArraySize(jobs) == 0)
            printf("no distributed job found on %d node%s\n", cJSON_GetArraySize(nodes),
                   cJSON_GetArraySize(nodes) == 1 ? "" : "s");
        cJSON_ArrayForEach(j, jobs)
        {
            const cJSON *ranks = cJSON_GetObjectItem(j, "ranks"),
                        *miss = cJSON_GetObjectItem(j, "missing");
            int nn = cJSON_GetArraySize(cJSON_GetObjectItem(j, "nodes"));
            printf("job %s (%s): world size %d, %d rank%s found on %d node%s%s%s\n",
                   cli_json_text(j, "job"), cli_json_text(j, "launcher"),
                   (int)cli_json_num(j, "world_size", 0), cJSON_GetArraySize(ranks),
                   cJSON_GetArraySize(ranks) == 1 ? "" : "s", nn, nn == 1 ? "" : "s",
                   cli_json_text(j, "master") ? ", master " : "",
                   cli_json_text(j, "master") ? cli_json_text(j, "master") : "");
            printf("  %-6s %-6s %-20s %-8s %-8s %s\n", "RANK", "LOCAL", "NODE", "PID", "PYTHON",
                   "PROBE");
            cJSON_ArrayForEach(r, ranks)
            {
                char local[16] = "-";
                if (cJSON_IsNumber(cJSON_GetObjectItem(r, "local_rank")))
                    snprintf(local, sizeof local, "%d", (int)cli_json_num(r, "local_rank", 0));
                printf("  %-6d %-6s %-20s %-8d %-8s %s\n", (int)cli_json_num(r, "rank", -1), local,
                       cli_json_text(r, "node"), (int)cli_json_num(r, "pid", 0),
                       cli_json_text(r, "python") ? cli_json_text(r, "python") : "?",
                       cli_json_text(r, "probe") ? cli_json_text(r, "probe") : "?");
            }
            (void)miss;
            if (cli_json_num(j, "missing_count", 0) > 0)
                printf("  missing: %.0f rank%s: %s\n", cli_json_num(j, "missing_count", 0),
                       cli_json_num(j, "missing_count", 0) == 1 ? "" : "s",
                       cli_json_text(j, "missing_ranges"));
            const cJSON *p;
            cJSON_ArrayForEach(r, ranks)
            {
                int rank = (int)cli_json_num(r, "rank", -1);
                if (cli_json_true(r, "duplicate") &&
                    (r == ranks->child || cli_json_num(r->prev, "rank", -1) != rank)) {
                    printf("  duplicate rank %d: claimed by", rank);
                    for (p = r; p && (int)cli_json_num(p, "rank", -1) == rank; p = p->next)
                        printf(" pid %d (node %s, uid %d)%s", (int)cli_json_num(p, "pid", 0),
                               cli_json_text(p, "node"), (int)cli_json_num(p, "uid", -1),
                               p->next && (int)cli_json_num(p->next, "rank", -1) == rank ? ","
                                                                                         : "");
                    printf(": only one can be the job's\n");
                }
                if (cli_json_true(r, "foreign"))
                    printf("  rank %d (pid %d, node %s) belongs to uid %d, not the job's uid %d: "
                           "not injected (cluster stacks --any-uid to allow)\n",
                           rank, (int)cli_json_num(r, "pid", 0), cli_json_text(r, "node"),
                           (int)cli_json_num(r, "uid", -1), (int)cli_json_num(r, "job_uid", -1));
            }
        }
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "errors"))
            printf("node %s: %s\n", cli_json_text(e, "node"), cli_json_text(e, "error"));
    }
    int rc = cJSON_GetArraySize(jobs) > 0 ? CLI_OK : CLI_FAIL;
    cJSON_Delete(m);
    return rc;
}
