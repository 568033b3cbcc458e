/* SPDX-License-Identifier: MIT */
/* Flame graphs in the CLI (`probing flamegraph`, injector/cli/flamegraph.c): a call tree built
 * from folded stacks (flame_tree.c), and its renderers: folded text, a self-contained
 * interactive SVG (flame_svg.c) and speedscope JSON (flame_speedscope.c). The tree owns every
 * node and string; flame_tree_close frees them. Nothing here talks to the probe. */
#ifndef FLAME_H
#define FLAME_H

#include <stddef.h>
#include <stdio.h>

enum flame_kind { FLAME_ROOT, FLAME_PYTHON, FLAME_NATIVE };

struct flame_node {
    char *name;
    enum flame_kind kind;
    unsigned long long total; /* samples in this frame and its callees */
    unsigned long long self;  /* samples with this frame innermost */
    struct flame_node **kids; /* callees, sorted by name after flame_tree_sort */
    size_t nkids, cap;
};

/* One thread's stacks, kept for speedscope (one profile per thread). */
struct flame_stack {
    size_t thread; /* index into flame_tree.threads */
    char *folded;  /* outermost first, ';'-separated */
    unsigned long long count;
    long long id; /* the caller's id of the stack (perf.stacks.stack_id); -1 when none */
};
struct flame_thread {
    long long id;
    char *name;
};

struct flame_tree {
    struct flame_node root;     /* all threads merged */
    struct flame_stack *stacks; /* every stack added, in order */
    size_t nstacks, capstacks;
    struct flame_thread *threads;
    size_t nthreads;
    size_t nnodes;
    int maxdepth;
};

void flame_tree_init(struct flame_tree *t);
void flame_tree_close(struct flame_tree *t);
/* Add count samples of the stack `folded` (frames outermost first, joined by ';') seen on
 * thread (id, name) (name may be NULL). Returns 0 or -ENOMEM. */
int flame_tree_add(struct flame_tree *t, long long tid, const char *tname, const char *folded,
                   unsigned long long count);
/* The same, recording the caller's id of the stack (flame_stack.id) for flame_tree_find. */
int flame_tree_add_id(struct flame_tree *t, long long tid, const char *tname, long long id,
                      const char *folded, unsigned long long count);
/* The index in t->stacks of the stack added with (tid, id), or -1. The stacks must have been
 * added in increasing (tid, id) order (binary search). */
long flame_tree_find(const struct flame_tree *t, long long tid, long long id);
/* Parse folded text ("a;b;c 12" per line; blank lines and lines without a count are skipped)
 * into thread 0. Returns the number of lines taken, or -ENOMEM. */
int flame_tree_parse(struct flame_tree *t, FILE *in);
/* Sort every node's callees by name (the classic flame graph's alphabetical order). */
void flame_tree_sort(struct flame_tree *t);
/* A frame's kind from its name: Python frames are named "func (file:line)" (docs/tables.md,
 * perf.frames.name); anything else is native. */
enum flame_kind flame_kind_of(const char *name);
/* Split a Python frame name "func (file:line)" into its parts (func/file truncated to their
 * buffers). Returns 0, or -1 when name is not a Python frame name. */
int flame_name_split(const char *name, char *func, size_t funcn, char *file, size_t filen,
                     int *line);

/* Renderers: write to f; return 0, or -1 on a write error. */
/* Folded stacks, one "a;b;c N" line per distinct merged stack, sorted. */
int flame_write_folded(const struct flame_tree *t, FILE *f);
struct flame_svg_opts {
    const char *title;    /* shown on top; NULL: "Flame graph" */
    const char *subtitle; /* NULL: none */
    int width;            /* pixels; 0: 1200 */
    double minwidth;      /* frames narrower than this many pixels are left out; < 0: 0.1 */
    /* Non-NULL: a differential flame graph against this earlier profile (sorted): the shape is
     * t's, each frame coloured by how its share of all samples changed since before (red
     * grew, blue shrank, the deepest colour for the largest change, grey unchanged). */
    const struct flame_tree *before;
};
int flame_write_svg(const struct flame_tree *t, const struct flame_svg_opts *o, FILE *f);
/* speedscope's file format (https://www.speedscope.app/file-format-schema.json): shared frames
 * and one "sampled" profile per thread, weights in samples. */
int flame_write_speedscope(const struct flame_tree *t, const char *name, FILE *f);
/* One sample (or count samples taken at the same instant) for the timeline: the stack, an
 * index into flame_tree.stacks, and when it was taken (seconds). */
struct flame_tick {
    size_t stack;
    double ts;
};
/* Chrome trace event JSON (flame_chrome.c): per thread, one complete event per frame for each
 * run of consecutive samples that keep it under the same callers. ticks sorted by thread (as
 * t->stacks[stack].thread), then time; period is the sampling period in seconds (gaps over
 * two periods close every frame); pid and name label the process. */
int flame_write_chrometrace(const struct flame_tree *t, const struct flame_tick *ticks, size_t n,
                            double period, long long pid, const char *name, FILE *f);

/* Strings to dense ids 0, 1, 2... in the order first seen (intern.c). Zero-initialise;
 * flame_intern_free frees every key. */
struct flame_intern {
    char **keys;
    size_t *ids;
    size_t cap, n;
};
/* The id of s[0..len), copied in (and *added set) when new; -1 when out of memory. */
long flame_intern_id(struct flame_intern *t, const char *s, size_t len, int *added);
void flame_intern_free(struct flame_intern *t);

/* Writes s to f: an ASCII character as esc(c, buf) returns it (NULL: as it is; buf has room
 * for 8 bytes), a valid UTF-8 sequence as it is, an invalid byte as bad. */
void flame_escape(FILE *f, const char *s, const char *(*esc)(unsigned char c, char *buf),
                  const char *bad);
/* XML text escaping of s (&, <, >, ", ' and control characters) to f. */
void flame_xml_escape(FILE *f, const char *s);
/* Length of the valid UTF-8 sequence at s (1 for ASCII), or 0 when it is not valid UTF-8. */
size_t flame_utf8_len(const char *s);

#endif
