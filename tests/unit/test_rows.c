/* SPDX-License-Identifier: MIT */
/* The rows builder (probe/core/rows.c): its error is sticky. An allocation that fails in the
 * middle of a table is remembered, every later add is a no-op (nothing half-added, nothing
 * leaked: `make asan` runs these under LeakSanitizer), and core_rows_error() reports the first
 * error once at the end, as the virtual tables' fills ask it. */
#include <errno.h>

#include "core/rows.h"
#include "fail_alloc.h"
#include "unit.h"

/* Under `make asan`: nothing this test allocated is left (the runner's children end with
 * _exit, which skips LeakSanitizer's own check at exit). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define ASSERT_NO_LEAK() ASSERT(__lsan_do_recoverable_leak_check() == 0)
#else
#define ASSERT_NO_LEAK() ((void)0)
#endif

/* One row of three cells, as a table's fill adds them: no check between the adds. */
static void add_row(struct probe_rows *r, long long i)
{
    core_rows_add_int(r, i);
    core_rows_add_text(r, "python");
    core_rows_add_real(r, 0.5);
}

TEST(rows_builder_fills_rows)
{
    struct probe_rows r = {.ncols = 3};
    for (int i = 0; i < 100; i++)
        add_row(&r, i);
    core_rows_add_null(&r);
    core_rows_add_text(&r, NULL);
    ASSERT_EQ(core_rows_error(&r), 0);
    ASSERT_EQ(r.ncells, 302);
    ASSERT_EQ(r.nrows, 100);
    ASSERT_EQ(r.cells[99 * 3].i, 99);
    ASSERT_STR_EQ(r.cells[99 * 3 + 1].s, "python");
    ASSERT_EQ(r.cells[300].type, PROBE_V_NULL);
    ASSERT_EQ(r.cells[301].type, PROBE_V_NULL);
    core_rows_free(&r);
}

/* The cell array grows at 64 cells: its second realloc fails in the middle of row 22. */
TEST(rows_builder_growth_failure_is_sticky)
{
    struct probe_rows r = {.ncols = 3};
    for (int i = 0; i < 21; i++)
        add_row(&r, i);
    core_rows_add_int(&r, 21); /* cell 64, the last of the first array */
    ASSERT_EQ(r.ncells, 64);
    unit_fail_realloc(1);
    core_rows_add_text(&r, "python"); /* needs the array to grow: fails */
    ASSERT(unit_calloc_failed());
    ASSERT_EQ(core_rows_error(&r), -ENOMEM);
    unit_fail_realloc(0);
    /* Memory is back, but the rows failed: later adds are no-ops, whole rows too. */
    core_rows_add_real(&r, 0.5);
    for (int i = 22; i < 40; i++)
        add_row(&r, i);
    core_rows_add_null(&r);
    ASSERT_EQ(r.ncells, 64);
    ASSERT_EQ(r.nrows, 21); /* the partial row 21 is not a row */
    ASSERT_EQ(core_rows_error(&r), -ENOMEM);
    core_rows_free(&r);
    ASSERT_EQ(core_rows_error(&r), 0); /* free clears it: the rows can be refilled */
    add_row(&r, 7);
    ASSERT_EQ(core_rows_error(&r), 0);
    ASSERT_EQ(r.ncells, 3);
    core_rows_free(&r);
    ASSERT_NO_LEAK();
}

/* A text copy that fails: no cell for it, and no copy made by the adds after it. */
TEST(rows_builder_text_failure_is_sticky)
{
    struct probe_rows r = {.ncols = 3};
    add_row(&r, 0);
    core_rows_add_int(&r, 1);
    unit_fail_strdup(1);
    core_rows_add_text(&r, "python");
    ASSERT(unit_calloc_failed());
    ASSERT_EQ(core_rows_error(&r), -ENOMEM);
    ASSERT_EQ(r.ncells, 4);
    unit_fail_strdup(2); /* a text add after the error must not even try to copy */
    core_rows_add_text(&r, "one");
    core_rows_add_text(&r, "two");
    ASSERT(!unit_calloc_failed());
    unit_fail_strdup(0);
    ASSERT_EQ(r.ncells, 4);
    ASSERT_EQ(r.nrows, 1);
    ASSERT_EQ(core_rows_error(&r), -ENOMEM);
    core_rows_free(&r);
    ASSERT_NO_LEAK();
}
