/* SPDX-License-Identifier: MIT */
/* The CLI's private library, probing-cli.so (installed beside the probes in lib/probing/):
 * the work that needs libraries most commands never use (elfutils' libdw and libelf, libedit,
 * SQLite, protobuf-c, and the six they bring), so that `inject`, `debug --dump` and the other commands do
 * not pay the dynamic loader for them. The commands that do use it load it on demand
 * (injector/cli/ext_load.c). It exports one symbol, CLI_EXT_ENTRY: a table of the functions
 * below. The CLI and the library come from one build; the entry's name carries the table's
 * version, so a library of another layout is refused by name. Nothing here calls the CLI
 * (linked with -z defs): a layer below it. Its name does not start with "libprobing-": a CLI
 * that maps it (a repl on a terminal) is no process with the probe loaded (list, serve). */
#ifndef CLI_EXT_H
#define CLI_EXT_H

#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

#include "injector/render/flame.h"
#include "pb.h"

/* What a pprof profile says besides its stacks (pprof.c). */
struct cli_pprof_info {
    double start_ts;   /* the first sample, epoch seconds */
    double duration_s; /* from the first sample to the last */
    double period_s;   /* between two samples of a thread: 1 / rate */
    const char *mode;  /* "cpu" or "wall": the second value's name */
    const char *comment;
};

#define CLI_EXT_LIB "probing-cli.so"
#define CLI_EXT_ENTRY "probing_cli_ext_v2"

struct cli_ext {
    /* srcline.c (libdw): the source file and line (file "" when unknown) and the function
     * (func "" when unknown; *off the offset of pc into it) of native address pc (a return
     * address: pass pc - 1) in the object at path (read through /proc/PID/root when pid > 0)
     * loaded with load bias bias, from its DWARF and symbol tables or its separate debug
     * file. 0, or -1 when neither is known. */
    int (*srcline)(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias,
                   char *file, size_t n, int *line, char *func, size_t fn, unsigned long long *off);
    /* 1 when pc lies in a detached part of the interpreter loop (_PyEval_EvalFrameDefault.cold:
     * pb_detached_parts) of the object at path, loaded with bias; 0 otherwise. */
    int (*eval_part)(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias);
    /* lineedit.c (libedit): the repl's line editing and history file (path "" for none).
     * readline returns a malloc'd line without its newline, or NULL at end of input. */
    void (*history_load)(const char *path);
    char *(*readline)(const char *prompt);
    void (*history_add)(const char *line);
    void (*history_save)(const char *path);
    /* reduce.c (SQLite): sql run over table (a probing/query-like body {columns, rows}) loaded
     * as table r of a fresh in-memory database; the result as such a body, or NULL with
     * err->msg SQLite's message. */
    cJSON *(*reduce)(const cJSON *table, const char *sql, struct pb_err *err);
    /* pprof.c (protobuf-c, zlib): the stacks of t as pprof's profile.proto, gzip-compressed,
     * to f. 0, or -1 with err filled. */
    int (*pprof)(const struct flame_tree *t, const struct cli_pprof_info *info, FILE *f,
                 struct pb_err *err);
};

/* The table's functions, each in the file named above. */
int ext_srcline(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias,
                char *file, size_t n, int *line, char *func, size_t fn, unsigned long long *off);
int ext_eval_part(pid_t pid, const char *path, unsigned long long pc, unsigned long long bias);
void ext_history_load(const char *path);
char *ext_readline(const char *prompt);
void ext_history_add(const char *line);
void ext_history_save(const char *path);
cJSON *ext_reduce(const cJSON *table, const char *sql, struct pb_err *err);
int ext_pprof(const struct flame_tree *t, const struct cli_pprof_info *info, FILE *f,
              struct pb_err *err);

#endif
