/* SPDX-License-Identifier: MIT */
/* Code shared by the CLI, the injector, dap/ and the probe: error codes with their messages,
 * the error-detail struct, and logging. Kept tiny on purpose; see docs/style.md "Layout and names".
 * Errors: functions return 0 or a negative code (-errno, or a PB_E* code below). */
#ifndef PB_H
#define PB_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Project error codes, in their own negative range below -errno values. */
#define PB_ERRORS(X)                                                 \
    X(PB_EUNKNOWN, -1000, "unknown error")                           \
    X(PB_ENOPYTHON, -1001, "not a Python process")                   \
    X(PB_ENOBUILD, -1002, "no probe build for this CPython version") \
    X(PB_ETRACED, -1003, "process is already traced")                \
    X(PB_ESTOPPED, -1004, "process is stopped")                      \
    X(PB_ETIMEDOUT, -1005, "timed out")                              \
    X(PB_EDLOPEN, -1006, "dlopen failed in the target")              \
    X(PB_EPROTO, -1007, "protocol error")                            \
    X(PB_ENOPROBE, -1008, "no probe loaded")                         \
    X(PB_EUSAGE, -1009, "usage error")                               \
    X(PB_EGONE, -1010, "process exited")                             \
    X(PB_ENOGIL, -1011, "the GIL could not be had")                  \
    X(PB_EBADARG, -1012, "bad argument")                             \
    X(PB_EAUTH, -1013, "not authorised")                             \
    X(PB_ESTATE, -1014, "request not valid in this state")           \
    X(PB_EREFUSED, -1015, "the probe refused the request")

enum pb_code {
#define PB_ENUM_(name, val, msg) name = val,
    PB_ERRORS(PB_ENUM_)
#undef PB_ENUM_
};

/* Detail of an error, filled by the layer that knows why. */
struct pb_err {
    int code;
    char msg[256];
};

/* Message for a code: a PB_E* code's text or strerror(-code). Never NULL. */
const char *pb_strerror(int code);

/* Fill e (if not NULL) with code and a formatted message; returns code, so that
 * `return pb_err_set(e, -EPERM, "...")` reads naturally. */
int pb_err_set(struct pb_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void pb_err_clear(struct pb_err *e);

/* Logging. Levels: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace (every DAP message).
 * The level and file come from PROBING_LOG_LEVEL / PROBING_LOG; without PROBING_LOG nothing is
 * written anywhere (the probe must never touch the host's stdout/stderr). */
enum { PB_LOG_OFF, PB_LOG_ERROR, PB_LOG_WARN, PB_LOG_INFO, PB_LOG_DEBUG, PB_LOG_TRACE };
extern int pb_log_level;
void pb_log_init(const char *who);
void pb_log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define PB_LOG(level, ...)                                          \
    do {                                                            \
        if ((level) <= pb_log_level)                                \
            pb_log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* The longest TCP token (characters, not counting the NUL), the same in the CLI (PROBING_TOKEN,
 * inject --listen, debug --pause, -t HOST:PORT), the probe (probing/listen, probing.init) and
 * the docs: longer ones are refused with an error, never cut. `openssl rand -hex 64` fits. */
/* The version of the CLI and the probe (they must match). */
#define PROBING_VERSION "0.1.0"

#define PB_TOKEN_MAX 255
/* The shortest token a TCP listener accepts. */
#define PB_TOKEN_MIN 8

/* Small helpers. */
size_t pb_strlcpy(char *dst, const char *src, size_t n);
/* Read a whole small file (e.g. under /proc) into buf, NUL-terminated. Returns bytes read or
 * -errno. */
long pb_read_file(const char *path, char *buf, size_t n);

/* 1 when [off, off + len) lies within [0, size), without the overflow of off + len: the bounds
 * check for every offset and size a file gives (ELF headers, sections, notes). */
static inline int pb_in_range(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}
/* path opened read-only when it is a regular file (regfile.c): a descriptor, or -errno
 * (-EINVAL: a FIFO, device or socket, which is never opened; -EISDIR). *st (may be NULL) gets
 * its stat. Never blocks on what the path names. */
struct stat;
int pb_open_regular(const char *path, struct stat *st);

/* An aligned text table (table.c): a header line, a dashes line, one line per row; cells is
 * row-major (nrows * ncols), NULL cells are shown as NULL, long cells are clipped with "...".
 * Returns a malloc'd string the caller frees, or NULL on allocation failure. */
char *pb_table_render(int ncols, const char *const *cols, size_t nrows, const char *const *cells);

/* Text a target chose (names, argv, environment, table cells) made safe for a terminal
 * (termtext.c): C0 controls (tab and newline too), DEL and C1 controls (U+0080-U+009F) become
 * visible escapes (\x1b, \u009b), bytes that are not valid UTF-8 \xNN; valid UTF-8 is kept.
 * pb_term_escape returns a malloc'd string the caller frees, or NULL on allocation failure;
 * pb_term_escape_lines the same but keeps newline and tab (query cells: a CSV field, quoted,
 * may span lines; the table shows them as spaces); pb_term_clean is 1 when s needs no escape. */
char *pb_term_escape(const char *s);
char *pb_term_escape_lines(const char *s);
int pb_term_clean(const char *s);

/* Native and Python stacks merged (stackmerge.c). is_eval[i]: native frame i (innermost first)
 * is the interpreter's eval loop; entry[i]: Python frame i (innermost first) is the first frame
 * its eval-loop call ran. Fills out (room for nn + np steps) with the merged stack, innermost
 * first: each eval-loop frame preceded by the Python frames it runs. Returns the count, or -1
 * when the stacks do not match (eval-loop and entry frames differ in number, or the outermost
 * Python frame is not an entry frame): the merge cannot be trusted. */
enum { PB_MERGE_PY, PB_MERGE_NATIVE };
struct pb_merge_step {
    int kind;  /* PB_MERGE_* */
    int index; /* into the Python or the native frames */
};
int pb_stack_merge(const unsigned char *is_eval, int nn, const unsigned char *entry, int np,
                   struct pb_merge_step *out);

/* 1 when a function of the interpreter's own object named name (NULL or "": unknown) is
 * CPython's call machinery, which merged stacks leave out (--native=all keeps it): _Py*, Py*
 * but PyThread_*, vectorcall and slot wrappers... Its other functions (time_sleep,
 * acquire_timed, PyThread_*: where a thread waits) stay. */
int pb_cpython_machinery(const char *name);
/* 1 for a function that starts a process or a thread (_start, __libc_start_main,
 * start_thread, clone3, main...): left out of merged stacks at their root, where they are
 * under every stack alike (--native=all keeps them). */
int pb_startup_frame(const char *name);

/* The detached parts of an x86-64 function (evalpart.c): GCC's hot/cold splitting of an
 * optimised CPython moves the body of _PyEval_EvalFrameDefault out of the exported symbol into
 * unnamed parts, which a stripped binary does not name. code is the function's n bytes at
 * address lo; start_of(pc, arg) gives the start of the unwind-table entry covering pc (0: none),
 * is_symbol(addr, arg) whether a named symbol starts at addr. A part is such a start, other than
 * lo, that at least two rel32 jmp/jcc of the function land in, and no symbol's. Fills parts (at
 * most max) and returns their count. */
int pb_detached_parts(const unsigned char *code, size_t n, unsigned long lo,
                      unsigned long (*start_of)(unsigned long pc, void *arg),
                      int (*is_symbol)(unsigned long addr, void *arg), void *arg,
                      unsigned long *parts, int max);

/* DAP frame ids (frameid.c): the id of frame depth (0 = innermost, < 4096) of native thread
 * tid, below 2^31; and back (0, or -1 for an id never handed out). Any thread. */
long long pb_frame_id(long tid, int depth);
int pb_frame_id_parse(long long id, long *tid, int *depth);

#endif
