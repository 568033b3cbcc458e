/* SPDX-License-Identifier: MIT */
/* pb_stack_merge (common/stackmerge.c), the one merge of native and Python stacks that perf
 * --cc and debug --dump --native share: groups up to each entry frame in place of each eval-loop
 * frame, 3.8-3.10 stacks (every Python frame an entry), and the stacks it refuses to merge
 * (counts differ; the outermost Python frame not an entry frame), which the dump then shows
 * apart. */
#include "pb.h"
#include "unit.h"

/* The merged stack as a string: P<i> for Python frame i, N<i> for native frame i. */
static const char *render(const struct pb_merge_step *s, int n, char *buf)
{
    char *p = buf;
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s%c%d", i ? " " : "", s[i].kind == PB_MERGE_PY ? 'P' : 'N', s[i].index);
    *p = '\0';
    return buf;
}

TEST(stackmerge_groups_per_eval_frame)
{
    /* native: lock wait, eval, ctypes callback, qsort, eval, start; Python: wait, cmp (entry),
     * run_qsort, Thread.run (entry) */
    const unsigned char ev[] = {0, 1, 0, 0, 1, 0}, en[] = {0, 1, 0, 1};
    struct pb_merge_step s[10];
    char buf[128];
    int n = pb_stack_merge(ev, 6, en, 4, s);
    ASSERT_EQ(n, 10);
    ASSERT_STR_EQ(render(s, n, buf), "N0 P0 P1 N1 N2 N3 P2 P3 N4 N5");
}

TEST(stackmerge_every_frame_an_entry)
{
    const unsigned char ev[] = {0, 1, 1, 1}, en[] = {1, 1, 1};
    struct pb_merge_step s[7];
    char buf[128];
    int n = pb_stack_merge(ev, 4, en, 3, s);
    ASSERT_STR_EQ(render(s, n, buf), "N0 P0 N1 P1 N2 P2 N3");
}

TEST(stackmerge_refuses_what_does_not_match)
{
    struct pb_merge_step s[8];
    const unsigned char ev2[] = {0, 1, 1}, en1[] = {0, 1};
    ASSERT_EQ(pb_stack_merge(ev2, 3, en1, 2, s), -1); /* two eval frames, one entry */
    const unsigned char ev1[] = {1, 0}, en_open[] = {1, 0};
    ASSERT_EQ(pb_stack_merge(ev1, 2, en_open, 2, s), -1); /* outermost not an entry */
    const unsigned char none[] = {0, 0};
    ASSERT_EQ(pb_stack_merge(ev1, 2, none, 0, s), -1); /* an eval frame, no Python frames */
    ASSERT_EQ(pb_stack_merge(none, 2, none, 0, s), 2); /* no Python at all: native only */
}
