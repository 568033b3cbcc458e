/* SPDX-License-Identifier: MIT */
/* The repl's line editing and history (libedit's readline interface), for a terminal only:
 * the repl reads piped input itself without this library. */
#include <stdio.h>

#include <editline/readline.h>

#include "ext.h"

void ext_history_load(const char *path)
{
    using_history();
    if (path && *path)
        read_history(path);
}

char *ext_readline(const char *prompt)
{
    return readline(prompt);
}

void ext_history_add(const char *line)
{
    add_history(line);
}

void ext_history_save(const char *path)
{
    if (path && *path)
        write_history(path);
}
