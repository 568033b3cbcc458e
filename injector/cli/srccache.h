/* SPDX-License-Identifier: MIT */
/* What DWARF said of a native frame (file, line, function), kept between runs of the CLI
 * (srccache.c): `debug --dump --native` names the same frames of the same objects run after
 * run, and reading an object's DWARF (libc's separate debug file is compressed) is most of its
 * time. One file per object under $XDG_CACHE_HOME/probing/srcline/ (else ~/.cache), keyed by
 * the object's identity (device, inode, size, modification time, path): a rebuilt or updated
 * object has another key, its old file is ignored. The file is the user's own and still read
 * as untrusted bytes (cli_srccache_parse, fuzzed by tests/fuzz/fuzz_srccache.c). */
#ifndef PROBING_CLI_SRCCACHE_H
#define PROBING_CLI_SRCCACHE_H

#include <stddef.h>
#include <sys/types.h>

/* One answer: the frame's offset into its object (pc - load bias), what srcline returned (0
 * found, -1 nothing) and, when found, its line (0: none), the symbol offset, function and file
 * (either may be empty). */
struct cli_srcent {
    unsigned long long off, symoff;
    int rc, line;
    const char *func, *file;
};

struct cli_srccache {
    char ident[512]; /* "dev ino size mtime.ns path" of the object */
    char path[4096]; /* the cache file; "" when there is none (no home, not writable) */
    struct cli_srcent *v;
    size_t n, cap;
    long long bytes; /* the file's size as read and appended to */
};

/* Limits: a file holds at most CLI_SRCCACHE_MAX entries and CLI_SRCCACHE_MAX_BYTES bytes; past
 * them nothing more is written (lookups go to DWARF as without a cache). */
#define CLI_SRCCACHE_MAX 65536
#define CLI_SRCCACHE_MAX_BYTES (4 << 20)
#define CLI_SRCCACHE_FILES 256 /* files in the directory: the least recently written go */
#define CLI_SRCCACHE_MAGIC "probing-srcline 1 "

/* Parses buf (a cache file's bytes) into c, which has its ident set: 0 with the entries of a
 * file whose first line is CLI_SRCCACHE_MAGIC followed by c->ident; -1 (no entries) for any
 * other file. Lines that are not well-formed entries are skipped. */
int cli_srccache_parse(struct cli_srccache *c, const char *buf, size_t n);
/* The entry for off, or NULL. */
const struct cli_srcent *cli_srccache_find(const struct cli_srccache *c, unsigned long long off);
/* Adds an entry to c (copying the strings): 0, or -1 (full, out of memory, or a string with a
 * tab or newline, which a line cannot hold). */
int cli_srccache_add(struct cli_srccache *c, const struct cli_srcent *e);
/* One entry as a line of the file ("off line symoff rc\tfunc\tfile\n"): its length, or -1 when
 * it does not fit n. */
int cli_srccache_format(const struct cli_srcent *e, char *out, size_t n);
void cli_srccache_free(struct cli_srccache *c);

/* The cache of the object at path in process pid's root (the file the CLI's DWARF reader
 * opens): sets c->ident from its identity and c->path from the user's cache directory, and
 * loads the entries. 0 (possibly with no entries), or -1 when the object cannot be stat'ed. */
int cli_srccache_open(struct cli_srccache *c, pid_t pid, const char *object);
/* Records e (as cli_srccache_add) and appends it to the file (created 0600 in a 0700
 * directory, one write per line). */
void cli_srccache_put(struct cli_srccache *c, const struct cli_srcent *e);

#endif
