/* SPDX-License-Identifier: MIT */
/* pb_table_render (common/table.c): alignment, NULL cells, clipping of long cells, UTF-8
 * widths, control characters, no columns. */
#include <stdlib.h>
#include <string.h>

#include "pb.h"
#include "unit.h"

TEST(table_aligns_columns)
{
    const char *cols[] = {"name", "n"};
    const char *cells[] = {"MainThread", "1", "w", "12345"};
    char *t = pb_table_render(2, cols, 2, cells);
    ASSERT_STR_EQ(t, "name        n\n"
                     "----------  -----\n"
                     "MainThread  1\n"
                     "w           12345\n");
    free(t);
}

TEST(table_null_and_empty)
{
    const char *cols[] = {"a", "b"};
    const char *cells[] = {NULL, ""};
    char *t = pb_table_render(2, cols, 1, cells);
    ASSERT_STR_EQ(t, "a     b\n----  -\nNULL  \n");
    free(t);
    t = pb_table_render(2, cols, 0, NULL);
    ASSERT_STR_EQ(t, "a  b\n-  -\n");
    free(t);
    t = pb_table_render(0, NULL, 0, NULL);
    ASSERT_STR_EQ(t, "(no columns)\n");
    free(t);
}

TEST(table_clips_long_cells_and_controls)
{
    char longcell[200];
    memset(longcell, 'x', sizeof longcell - 1);
    longcell[sizeof longcell - 1] = '\0';
    const char *cols[] = {"v"};
    const char *cells[] = {longcell, "a\nb\tc"};
    char *t = pb_table_render(1, cols, 2, cells);
    char *line3 = strchr(strchr(t, '\n') + 1, '\n') + 1;
    ASSERT_EQ(strcspn(line3, "\n"), 60);
    ASSERT(strncmp(line3 + 57, "...", 3) == 0);
    ASSERT(strstr(t, "a b c\n") != NULL);
    free(t);
}

TEST(table_utf8_width)
{
    const char *cols[] = {"k", "v"};
    const char *cells[] = {"\xc3\xa9t\xc3\xa9", "1", "abc", "2"};
    char *t = pb_table_render(2, cols, 2, cells);
    /* "été" is 3 columns wide, like "abc": both are followed by exactly two spaces. */
    ASSERT(strstr(t, "\xc3\xa9t\xc3\xa9  1\n") != NULL);
    ASSERT(strstr(t, "abc  2\n") != NULL);
    free(t);
}
