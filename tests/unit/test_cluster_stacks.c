/* SPDX-License-Identifier: MIT */
/* `probing cluster stacks`'s grouping (cli_cluster_stacks_report, stacks.c) as a pure function of
 * the node documents, without a job: the document is what `probing cluster stacks --local --json
 * --samples 2 --interval 0.3` answered on this machine for tests/e2e/test_cluster.py's torchrun
 * job (samples/cluster_job.py, 4 ranks, gloo, Debian's torch 1.13: rank 3 stuck in a C call
 * holding the GIL, ranks 0-2 waiting for it in all_reduce; the checkout's path replaced by
 * /src/probing). From it: the groups smallest first with the frames that differ marked, STUCK
 * when every sample agrees, the merged tree, a missing rank, and a rank whose stack moved. Also
 * the rank ranges and gaps the report prints. */
#include <unistd.h>

#include "injector/cli/cluster/cluster.h"
#include "unit.h"

static const char node_doc[] =
    "{\"node\":\"vm\",\"ranks\":[{\"job\":\"torchrun:none@127.0.0.1:29731\",\"launcher\":"
    "\"torchrun\",\"rank"
    "\":0,\"local_rank\":0,\"world_size\":4,\"group_rank\":0,\"master\":\"127.0.0.1:29731\","
    "\"pid\":11343,"
    "\"node\":\"vm\",\"uid\":0,\"python\":\"3.11.2\",\"probe\":\"loaded\",\"job_uid\":0,"
    "\"injected\":false,\"sam"
    "ples\":[[{\"thread\":11343,\"name\":\"MainThread\",\"main\":true,\"holdsGil\":false,\"stack\":"
    "0}],[{\""
    "thread\":11343,\"name\":\"MainThread\",\"main\":true,\"holdsGil\":false,\"stack\":0}]]},{"
    "\"job\":\"tor"
    "chrun:none@127.0.0.1:29731\",\"launcher\":\"torchrun\",\"rank\":1,\"local_rank\":1,\"world_"
    "size\":4"
    ",\"group_rank\":0,\"master\":\"127.0.0.1:29731\",\"pid\":11346,\"node\":\"vm\",\"uid\":0,"
    "\"python\":\"3.1"
    "1.2\",\"probe\":\"loaded\",\"job_uid\":0,\"injected\":false,\"samples\":[[{\"thread\":11346,"
    "\"name\":\"M"
    "ainThread\",\"main\":true,\"holdsGil\":false,\"stack\":0}],[{\"thread\":11346,\"name\":"
    "\"MainThread\""
    ",\"main\":true,\"holdsGil\":false,\"stack\":0}]]},{\"job\":\"torchrun:none@127.0.0.1:29731\","
    "\"laun"
    "cher\":\"torchrun\",\"rank\":2,\"local_rank\":2,\"world_size\":4,\"group_rank\":0,\"master\":"
    "\"127.0.0"
    ".1:29731\",\"pid\":11352,\"node\":\"vm\",\"uid\":0,\"python\":\"3.11.2\",\"probe\":\"loaded\","
    "\"job_uid\":0"
    ",\"injected\":false,\"samples\":[[{\"thread\":11352,\"name\":\"MainThread\",\"main\":true,"
    "\"holdsGil\""
    ":false,\"stack\":0}],[{\"thread\":11352,\"name\":\"MainThread\",\"main\":true,\"holdsGil\":"
    "false,\"st"
    "ack\":0}]]},{\"job\":\"torchrun:none@127.0.0.1:29731\",\"launcher\":\"torchrun\",\"rank\":3,"
    "\"local_"
    "rank\":3,\"world_size\":4,\"group_rank\":0,\"master\":\"127.0.0.1:29731\",\"pid\":11370,"
    "\"node\":\"vm\""
    ",\"uid\":0,\"python\":\"3.11.2\",\"probe\":\"loaded\",\"job_uid\":0,\"injected\":false,"
    "\"samples\":[[{\"t"
    "hread\":11370,\"name\":\"python3.11\",\"main\":true,\"holdsGil\":true,\"stack\":1}],[{"
    "\"thread\":1137"
    "0,\"name\":\"python3.11\",\"main\":true,\"holdsGil\":true,\"stack\":1}]]}],\"stacks\":[[{"
    "\"func\":\"all"
    "_reduce\",\"file\":\"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\",\""
    "line\":1541},{\"func\":\"wait_for_peers\",\"file\":\"/src/probing/samples/"
    "cluster_job.py\",\"line\""
    ":30},{\"func\":\"main\",\"file\":\"/src/probing/samples/"
    "cluster_job.py\",\"line\":48},{\"func\":\"<mo"
    "dule>\",\"file\":\"/src/probing/samples/"
    "cluster_job.py\",\"line\":53}],[{\"func\":\"stuck_in_c\",\"f"
    "ile\":\"/src/probing/samples/cluster_job.py\",\"line\":24},{\"func\":\"main\",\"file\":\"/src/"
    "probin"
    "g/samples/cluster_job.py\",\"line\":46},{\"func\":\"<module>\",\"file\":\"/src/probing/"
    "samples/clu"
    "ster_job.py\",\"line\":53}]]}";

/* stdout, captured around one report. */
static char out_text[16384];
static int report(const struct cli_cluster_opts *o, cJSON *nodes)
{
    unit_capture_begin(1);
    int rc = cli_cluster_stacks_report(o, nodes);
    unit_capture_end(out_text, sizeof out_text);
    return rc;
}

/* The nodes array of the one node, host "vm" as the CLI adds it. */
static cJSON *nodes_of(cJSON *doc)
{
    cJSON *nodes = cJSON_CreateArray();
    cJSON_AddStringToObject(doc, "host", "vm");
    cJSON_AddItemToArray(nodes, doc);
    return nodes;
}

static const struct cli_cluster_opts opts = {
    .op = CLUSTER_OP_STACKS, .samples = 2, .interval = 0.3, .format = "table"};

/* A group's ranks as "0,1,2". */
static const char *ranks_of(const cJSON *g, char *buf)
{
    const cJSON *r;
    char *p = buf;
    *p = '\0';
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(g, "ranks")) p +=
        sprintf(p, "%s%d", p == buf ? "" : ",", r->valueint);
    return buf;
}

TEST(cluster_stacks_groups_the_torchrun_hang)
{
    struct cli_cluster_opts o = opts;
    o.json = 1;
    cJSON *nodes = nodes_of(cJSON_Parse(node_doc));
    ASSERT_EQ(report(&o, nodes), CLI_OK);
    cJSON *out = cJSON_Parse(out_text);
    ASSERT(out != NULL);
    ASSERT_STR_EQ(cli_json_str(out, "job"), "torchrun:none@127.0.0.1:29731");
    ASSERT_EQ(cli_json_num(out, "world_size", 0), 4);
    ASSERT_EQ(cli_json_num(out, "samples", 0), 2);
    ASSERT_EQ(cli_json_num(out, "missing_count", -1), 0);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(out, "groups");
    ASSERT_EQ(cJSON_GetArraySize(groups), 2);
    const cJSON *g0 = cJSON_GetArrayItem(groups, 0), *g1 = cJSON_GetArrayItem(groups, 1);
    char buf[64];
    ASSERT_STR_EQ(ranks_of(g0, buf), "3"); /* smallest first */
    ASSERT_STR_EQ(ranks_of(g1, buf), "0,1,2");
    ASSERT(cli_json_true(g0, "stuck") && cli_json_true(g1, "stuck"));
    ASSERT_EQ(cli_json_num(g0, "pid", 0), 11370); /* a group of one names its pid */
    ASSERT(cJSON_GetObjectItemCaseSensitive(g1, "pid") == NULL);
    const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g0, "frames"), 0);
    const cJSON *f1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g1, "frames"), 0);
    ASSERT_STR_EQ(cli_json_str(f0, "func"), "stuck_in_c");
    ASSERT_EQ(cli_json_num(f0, "line", 0), 24);
    ASSERT_STR_EQ(cli_json_str(f1, "func"), "all_reduce");
    cJSON_Delete(out);
    cJSON_Delete(nodes);
}

TEST(cluster_stacks_text_marks_what_differs)
{
    struct cli_cluster_opts o = opts;
    cJSON *nodes = nodes_of(cJSON_Parse(node_doc));
    ASSERT_EQ(report(&o, nodes), CLI_OK);
    ASSERT_STR_EQ(
        out_text,
        "job torchrun:none@127.0.0.1:29731: world size 4, 4 ranks answered on 1 of 1 node, 2 "
        "groups (2 samples, 0.3 s apart)\n"
        "\n"
        "1 rank: 3 (node vm, pid 11370)  STUCK: unchanged in all 2 samples\n"
        "  > stuck_in_c (/src/probing/samples/cluster_job.py:24)\n"
        "  > main (/src/probing/samples/cluster_job.py:46)\n"
        "    <module> (/src/probing/samples/cluster_job.py:53)\n"
        "\n"
        "3 ranks: 0-2  STUCK: unchanged in all 2 samples\n"
        "    all_reduce "
        "(/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1541)\n"
        "    wait_for_peers (/src/probing/samples/cluster_job.py:30)\n"
        "    main (/src/probing/samples/cluster_job.py:48)\n"
        "    <module> (/src/probing/samples/cluster_job.py:53)\n");
    cJSON_Delete(nodes);
}

TEST(cluster_stacks_tree)
{
    struct cli_cluster_opts o = opts;
    o.tree = 1;
    cJSON *nodes = nodes_of(cJSON_Parse(node_doc));
    ASSERT_EQ(report(&o, nodes), CLI_OK);
    const char *tree = "[0-3] <module> (/src/probing/samples/cluster_job.py:53)\n"
                       "|-[0-2] main (/src/probing/samples/cluster_job.py:48)\n"
                       "| [0-2] wait_for_peers (/src/probing/samples/cluster_job.py:30)\n"
                       "| [0-2] all_reduce (/usr/lib/python3/dist-packages/torch/distributed/"
                       "distributed_c10d.py:1541)\n"
                       "`-[3] main (/src/probing/samples/cluster_job.py:46)\n"
                       "  [3] stuck_in_c (/src/probing/samples/cluster_job.py:24)\n";
    ASSERT(strstr(out_text, tree) != NULL);
    cJSON_Delete(nodes);
}

/* The same job with rank 1's answer taken out: WORLD_SIZE says 4, so rank 1 is missing. */
TEST(cluster_stacks_missing_rank)
{
    struct cli_cluster_opts o = opts;
    o.json = 1;
    cJSON *doc = cJSON_Parse(node_doc);
    cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(doc, "ranks"), 1);
    cJSON *nodes = nodes_of(doc);
    ASSERT_EQ(report(&o, nodes), CLI_OK);
    cJSON *out = cJSON_Parse(out_text);
    ASSERT(out != NULL);
    ASSERT_EQ(cli_json_num(out, "missing_count", -1), 1);
    ASSERT_STR_EQ(cli_json_str(out, "missing_ranges"), "1");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(out, "groups");
    char buf[64];
    ASSERT_STR_EQ(ranks_of(cJSON_GetArrayItem(groups, 0), buf), "3");
    ASSERT_STR_EQ(ranks_of(cJSON_GetArrayItem(groups, 1), buf), "0,2");
    cJSON_Delete(out);
    cJSON_Delete(nodes);
}

/* Rank 0 caught in the stuck rank's stack in the first sample, in all_reduce in the last: it
 * groups by its last sample, and its group is no longer stuck; rank 3's still is. */
TEST(cluster_stacks_moving_rank)
{
    struct cli_cluster_opts o = opts;
    o.json = 1;
    cJSON *doc = cJSON_Parse(node_doc);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "ranks"), 0);
    cJSON *s0 = cJSON_GetArrayItem(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r0, "samples"), 0), 0);
    cJSON_ReplaceItemInObjectCaseSensitive(s0, "stack", cJSON_CreateNumber(1));
    cJSON *nodes = nodes_of(doc);
    ASSERT_EQ(report(&o, nodes), CLI_OK);
    cJSON *out = cJSON_Parse(out_text);
    ASSERT(out != NULL);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(out, "groups");
    char buf[64];
    ASSERT_EQ(cJSON_GetArraySize(groups), 2);
    ASSERT_STR_EQ(ranks_of(cJSON_GetArrayItem(groups, 1), buf), "0,1,2");
    ASSERT(cli_json_true(cJSON_GetArrayItem(groups, 0), "stuck"));
    ASSERT(!cli_json_true(cJSON_GetArrayItem(groups, 1), "stuck"));
    cJSON_Delete(out);
    cJSON_Delete(nodes);
}

TEST(cluster_ranges_and_gaps)
{
    /* the help's example: 64 ranks with 17 not answering */
    int v[63], n = 0;
    for (int r = 0; r < 64; r++)
        if (r != 17)
            v[n++] = r;
    char *s = cli_cluster_ranges(v, n);
    ASSERT_STR_EQ(s, "0-16,18-63");
    free(s);
    struct cli_cluster_gaps g;
    cli_cluster_gaps(v, n, 64, &g);
    ASSERT_EQ(g.count, 1);
    ASSERT_STR_EQ(g.ranges, "17");
    cli_cluster_gaps_free(&g);
    /* test_cluster.py's fake jobs: ranks 0 and 1 of 3 answered, out of order and twice */
    int fake[] = {1, 0, 1};
    cli_cluster_gaps(fake, 3, 3, &g);
    ASSERT_EQ(g.count, 1);
    ASSERT_STR_EQ(g.ranges, "2");
    cli_cluster_gaps_free(&g);
    /* a process claiming WORLD_SIZE=2147483647: the gap is one range, nothing sized by it */
    int one[] = {0};
    cli_cluster_gaps(one, 1, CLUSTER_WORLD_MAX, &g);
    ASSERT_EQ(g.count, CLUSTER_WORLD_MAX - 1);
    ASSERT_STR_EQ(g.ranges, "1-2147483646");
    ASSERT_EQ(cJSON_GetArraySize(g.list), CLUSTER_MISSING_LIST);
    cli_cluster_gaps_free(&g);
}
