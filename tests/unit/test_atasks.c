/* SPDX-License-Identifier: MIT */
/* pyrt_atasks_link (probe/pyrt/atasks.c): who awaits each asyncio task, and the await cycles
 * (tasks waiting for each other: a deadlock), each found once, in await order, whatever task
 * the walk starts from; chains and gathers are no cycle. */
#include <stdlib.h>
#include <string.h>

#include "pyrt/pyrt.h"
#include "unit.h"

/* n tasks; edges "a>b" (a awaits b), each an index pair. */
static void build(struct probe_atasks *a, int n, const int (*edges)[2], int nedges)
{
    memset(a, 0, sizeof *a);
    a->ntasks = n;
    a->tasks = calloc((size_t)n, sizeof *a->tasks);
    for (int i = 0; i < n; i++)
        a->tasks[i].addr = 0x1000u + (uintptr_t)i * 0x100u;
    for (int e = 0; e < nedges; e++) {
        struct probe_atask *t = &a->tasks[edges[e][0]];
        t->awaits = realloc(t->awaits, (size_t)(t->nawaits + 1) * sizeof *t->awaits);
        t->awaits[t->nawaits++] = edges[e][1];
    }
}

TEST(atasks_chain_and_gather_have_no_cycle)
{
    struct probe_atasks a;
    static const int e[][2] = {{0, 1}, {1, 2}, {3, 4}, {3, 5}, {6, 2}};
    build(&a, 7, e, 5);
    ASSERT_EQ(pyrt_atasks_link(&a), 0);
    ASSERT_EQ(a.ncycles, 0);
    ASSERT_EQ(a.tasks[2].nby, 2);
    ASSERT_EQ(a.tasks[2].by[0], 1);
    ASSERT_EQ(a.tasks[2].by[1], 6);
    ASSERT_EQ(a.tasks[4].nby, 1);
    ASSERT_EQ(a.tasks[0].nby, 0);
    for (int i = 0; i < 7; i++)
        ASSERT_EQ(a.tasks[i].cycle, 0);
    pyrt_atasks_free(&a);
}

TEST(atasks_cycles_named_once_in_await_order)
{
    struct probe_atasks a;
    /* 0 -> 1 -> 2 -> 1 (a cycle of two entered from outside), 3 <-> 4, 5 awaits itself via 6,
     * and 7 -> 3 into the second cycle. */
    static const int e[][2] = {{0, 1}, {1, 2}, {2, 1}, {3, 4}, {4, 3}, {5, 6}, {6, 5}, {7, 3}};
    build(&a, 8, e, 8);
    ASSERT_EQ(pyrt_atasks_link(&a), 0);
    ASSERT_EQ(a.ncycles, 3);
    ASSERT_EQ(a.cycles[0].n, 2);
    ASSERT_EQ(a.cycles[0].tasks[0], 1);
    ASSERT_EQ(a.cycles[0].tasks[1], 2);
    ASSERT_EQ(a.cycles[1].tasks[0], 3);
    ASSERT_EQ(a.cycles[1].tasks[1], 4);
    ASSERT_EQ(a.cycles[2].tasks[0], 5);
    ASSERT_EQ(a.tasks[0].cycle, 0);
    ASSERT_EQ(a.tasks[1].cycle, 1);
    ASSERT_EQ(a.tasks[2].cycle, 1);
    ASSERT_EQ(a.tasks[4].cycle, 2);
    ASSERT_EQ(a.tasks[6].cycle, 3);
    ASSERT_EQ(a.tasks[7].cycle, 0);
    ASSERT_EQ(a.tasks[3].nby, 2); /* 4 and 7 */
    pyrt_atasks_free(&a);
    ASSERT_EQ(a.ntasks, 0);
}

TEST(atasks_long_chain_into_a_cycle)
{
    /* 20000 tasks in a line, the last awaiting the one before it: the walk is iterative. */
    enum { N = 20000 };
    struct probe_atasks a;
    int(*e)[2] = calloc(N, sizeof *e);
    for (int i = 0; i < N - 1; i++)
        e[i][0] = i, e[i][1] = i + 1;
    e[N - 1][0] = N - 1, e[N - 1][1] = N - 2;
    build(&a, N, (const int(*)[2])e, N);
    ASSERT_EQ(pyrt_atasks_link(&a), 0);
    ASSERT_EQ(a.ncycles, 1);
    ASSERT_EQ(a.cycles[0].n, 2);
    ASSERT_EQ(a.cycles[0].tasks[0], N - 2);
    pyrt_atasks_free(&a);
    free(e);
}
