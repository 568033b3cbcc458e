/* SPDX-License-Identifier: MIT */
/* `probing cluster collectives`'s matching (cli_cluster_comm_analyse, collectives.c) as a pure
 * function of the node documents, without a job. The rows are torch.collectives rows as the
 * recorder writes them for the scenarios tests/e2e/test_cluster_collectives_cxx.py runs: a
 * 4-rank DDP job (samples/ddp_job.py, gloo, one bucket per step: the reducer's all_reduce of
 * 65 floats from loss.backward() at line 78) where rank 3 stops joining, one rank calling
 * broadcast where the others call all_reduce, and a dead rank whose peers' collective failed.
 * From them: the rank not entered and who waits, the two sides of a mismatch, a failure's
 * failed and gone ranks, and a straggler. */
#include <time.h>

#include "injector/cli/cluster/cluster.h"
#include "unit.h"

#define JOB "torchrun:none@127.0.0.1:29500"
#define FILE_ "/src/probing/samples/ddp_job.py"

struct row {
    int rank;
    long long seq;
    const char *op, *state, *sizes;
    double ago; /* start_time: this many seconds before now */
};

/* One rank's answer: {job, rank, pid, comm: {rows: [[rank, pg, group_ranks, seq, seq_source, op,
 * state, start_time, file, line, func, peer, sizes, dtype], ...]}}. */
static cJSON *rank_doc(int rank, const struct row *rows, int n)
{
    cJSON *r = cJSON_CreateObject(), *comm, *arr;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* as collectives.c's now: not time()'s whole seconds */
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    cJSON_AddStringToObject(r, "job", JOB);
    cJSON_AddNumberToObject(r, "rank", rank);
    cJSON_AddNumberToObject(r, "pid", 1000 + rank);
    comm = cJSON_AddObjectToObject(r, "comm");
    arr = cJSON_AddArrayToObject(comm, "rows");
    for (int i = 0; i < n; i++) {
        if (rows[i].rank != rank)
            continue;
        cJSON *c = cJSON_CreateArray();
        cJSON_AddItemToArray(c, cJSON_CreateNumber(rank));
        cJSON_AddItemToArray(c, cJSON_CreateString("0"));
        cJSON_AddItemToArray(c, cJSON_CreateString("0,1,2,3"));
        cJSON_AddItemToArray(c, cJSON_CreateNumber((double)rows[i].seq));
        cJSON_AddItemToArray(c, cJSON_CreateString("torch"));
        cJSON_AddItemToArray(c, cJSON_CreateString(rows[i].op));
        cJSON_AddItemToArray(c, cJSON_CreateString(rows[i].state));
        cJSON_AddItemToArray(c, cJSON_CreateNumber(now - rows[i].ago));
        cJSON_AddItemToArray(c, cJSON_CreateString(FILE_));
        cJSON_AddItemToArray(c, cJSON_CreateNumber(78));
        cJSON_AddItemToArray(c, cJSON_CreateString("main"));
        cJSON_AddItemToArray(c, cJSON_CreateNull());
        cJSON_AddItemToArray(c, cJSON_CreateString(rows[i].sizes ? rows[i].sizes : "65"));
        cJSON_AddItemToArray(c, cJSON_CreateString("float32"));
        cJSON_AddItemToArray(arr, c);
    }
    return r;
}

/* The node document of ranks 0..nranks-1 (skip: a rank no process claims, -1 for none). */
static cJSON *nodes_of(const struct row *rows, int n, int nranks, int skip)
{
    cJSON *nodes = cJSON_CreateArray(), *node = cJSON_CreateObject();
    cJSON_AddStringToObject(node, "node", "vm");
    cJSON *ranks = cJSON_AddArrayToObject(node, "ranks");
    for (int r = 0; r < nranks; r++)
        if (r != skip)
            cJSON_AddItemToArray(ranks, rank_doc(r, rows, n));
    cJSON_AddItemToArray(nodes, node);
    return nodes;
}

static int ints_are(const cJSON *a, const int *want, int n)
{
    if (cJSON_GetArraySize(a) != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (cJSON_GetArrayItem(a, i)->valueint != want[i])
            return 0;
    return 1;
}

/* Steps 1-5 done on every rank; at 6 ranks 0-2 wait 40 s in the reducer's all_reduce, rank 3
 * never entered it (it stopped before its backward). */
static const struct row ddp_hang[] = {
    {0, 5, "all_reduce", "done", NULL, 50},    {1, 5, "all_reduce", "done", NULL, 50},
    {2, 5, "all_reduce", "done", NULL, 50},    {3, 5, "all_reduce", "done", NULL, 50},
    {0, 6, "all_reduce", "running", NULL, 40}, {1, 6, "all_reduce", "running", NULL, 40},
    {2, 6, "all_reduce", "running", NULL, 40},
};

TEST(collectives_names_the_rank_that_did_not_enter)
{
    cJSON *nodes = nodes_of(ddp_hang, sizeof ddp_hang / sizeof ddp_hang[0], 4, -1);
    cJSON *a = cli_cluster_comm_analyse(nodes, JOB);
    ASSERT(a);
    const cJSON *hangs = cJSON_GetObjectItemCaseSensitive(a, "hangs");
    ASSERT_EQ(cJSON_GetArraySize(hangs), 1);
    const cJSON *h = cJSON_GetArrayItem(hangs, 0);
    ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(h, "op")->valuestring, "all_reduce");
    ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(h, "seq")->valueint, 6);
    static const int absent[] = {3}, waiting[] = {0, 1, 2}, members[] = {0, 1, 2, 3};
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(h, "not_entered"), absent, 1));
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(h, "waiting"), waiting, 3));
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(h, "group_ranks"), members, 4));
    ASSERT(cJSON_GetObjectItemCaseSensitive(h, "waiting_s")->valuedouble >= 39);
    /* Rank 3's last collective is the one before: #5, done. */
    const cJSON *l, *last3 = NULL;
    cJSON_ArrayForEach(
        l, cJSON_GetObjectItemCaseSensitive(
               h, "last")) if (cJSON_GetObjectItemCaseSensitive(l, "rank")->valueint == 3) last3 =
        l;
    ASSERT(last3);
    ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(last3, "seq")->valueint, 5);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "mismatches")), 0);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "failures")), 0);
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}

TEST(collectives_waits_under_a_second_are_no_hang)
{
    struct row rows[] = {
        {0, 6, "all_reduce", "running", NULL, 0.2},
        {1, 6, "all_reduce", "running", NULL, 0.2},
    };
    cJSON *nodes = nodes_of(rows, 2, 2, -1);
    cJSON *a = cli_cluster_comm_analyse(nodes, JOB);
    ASSERT(a);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "hangs")), 0);
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}

/* Rank 3 calls broadcast as #7 where ranks 0-2 call all_reduce (samples/cluster_job.py's
 * "mismatch" mode): gloo hangs in both. */
TEST(collectives_names_both_sides_of_a_mismatch)
{
    static const struct row rows[] = {
        {0, 6, "all_reduce", "done", NULL, 30},    {1, 6, "all_reduce", "done", NULL, 30},
        {2, 6, "all_reduce", "done", NULL, 30},    {3, 6, "all_reduce", "done", NULL, 30},
        {0, 7, "all_reduce", "running", NULL, 20}, {1, 7, "all_reduce", "running", NULL, 20},
        {2, 7, "all_reduce", "running", NULL, 20}, {3, 7, "broadcast", "running", NULL, 20},
    };
    cJSON *nodes = nodes_of(rows, sizeof rows / sizeof rows[0], 4, -1);
    cJSON *a = cli_cluster_comm_analyse(nodes, JOB);
    ASSERT(a);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "mismatches"), 0);
    ASSERT(m);
    ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(m, "seq")->valueint, 7);
    ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(m, "later")->valueint, 0);
    const cJSON *sides = cJSON_GetObjectItemCaseSensitive(m, "sides");
    ASSERT_EQ(cJSON_GetArraySize(sides), 2);
    static const int left[] = {0, 1, 2}, right[] = {3};
    const cJSON *s0 = cJSON_GetArrayItem(sides, 0), *s1 = cJSON_GetArrayItem(sides, 1);
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(s0, "ranks"), left, 3));
    ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(s0, "op")->valuestring, "all_reduce");
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(s1, "ranks"), right, 1));
    ASSERT_STR_EQ(cJSON_GetObjectItemCaseSensitive(s1, "op")->valuestring, "broadcast");
    /* Every member entered #7: no rank is "not entered". */
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "hangs")), 0);
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}

TEST(collectives_sizes_differ_is_a_mismatch_too)
{
    static const struct row rows[] = {
        {0, 3, "all_reduce", "running", "65", 5},
        {1, 3, "all_reduce", "running", "64", 5},
    };
    cJSON *nodes = nodes_of(rows, 2, 2, -1);
    cJSON *a = cli_cluster_comm_analyse(nodes, JOB);
    ASSERT(a);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "mismatches"), 0);
    ASSERT(m);
    const cJSON *sides = cJSON_GetObjectItemCaseSensitive(m, "sides");
    ASSERT_EQ(cJSON_GetArraySize(sides), 2);
    ASSERT_STR_EQ(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(sides, 1), "sizes")->valuestring, "64");
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}

/* Rank 3 was killed in step 4: gloo failed #4 on ranks 0 and 2 at once, rank 1 still waits in
 * it, and no process claims rank 3. */
TEST(collectives_names_the_failed_and_the_gone)
{
    static const struct row rows[] = {
        {0, 3, "all_reduce", "done", NULL, 30},    {1, 3, "all_reduce", "done", NULL, 30},
        {2, 3, "all_reduce", "done", NULL, 30},    {0, 4, "all_reduce", "failed", NULL, 20},
        {1, 4, "all_reduce", "running", NULL, 20}, {2, 4, "all_reduce", "failed", NULL, 20},
    };
    cJSON *nodes = nodes_of(rows, sizeof rows / sizeof rows[0], 4, 3);
    cJSON *a = cli_cluster_comm_analyse(nodes, JOB);
    ASSERT(a);
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "failures"), 0);
    ASSERT(f);
    static const int failed[] = {0, 2}, gone[] = {3};
    ASSERT_EQ(cJSON_GetObjectItemCaseSensitive(f, "seq")->valueint, 4);
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(f, "failed"), failed, 2));
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(f, "gone"), gone, 1));
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "not_read")), 0);
    /* Rank 1 waits in #4, which only rank 3 did not enter: ranks that failed there did. */
    const cJSON *h = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "hangs"), 0);
    ASSERT(h);
    static const int absent[] = {3};
    ASSERT(ints_are(cJSON_GetObjectItemCaseSensitive(h, "not_entered"), absent, 1));
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}

TEST(collectives_another_job_is_not_read)
{
    cJSON *nodes = nodes_of(ddp_hang, sizeof ddp_hang / sizeof ddp_hang[0], 4, -1);
    cJSON *a = cli_cluster_comm_analyse(nodes, "torchrun:other@127.0.0.1:1");
    ASSERT(a);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "hangs")), 0);
    ASSERT_EQ(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(a, "recording")), 0);
    cJSON_Delete(a);
    cJSON_Delete(nodes);
}
