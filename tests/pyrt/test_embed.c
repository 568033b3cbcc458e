/* SPDX-License-Identifier: MIT */
/* tests/pyrt: embeds one CPython (3.8-3.13), parks threads at marked lines of pyrt_target.py
 * and checks pyrt_snapshot: without the GIL (threads, frames, lines, native ids, GIL
 * holder, stress while a thread mutates its stack, a thread holding the GIL forever in C,
 * timing) and with it (threading names, daemon flags, locals with bounded repr). Also checks
 * the line table decoders against PyCode_Addr2Line for every code object of the target.
 * Usage: test-embed <dir with pyrt_target.py>. Last line: "pyrt-embed <ver>: N passed, M failed". */
#include "pyrt/internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int npass, nfail;

#define CHECK(cond, ...)                                           \
    do {                                                           \
        if (cond) {                                                \
            npass++;                                               \
        } else {                                                   \
            nfail++;                                               \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                                   \
            printf("\n");                                          \
        }                                                          \
    } while (0)

struct tinfo {
    char name[64];
    unsigned long ident;
    long native;
    int daemon;
};

static struct tinfo infos[64];
static int ninfos;
static char target_py[4096], modblock_py[4096];
static volatile int busy_stop;
static volatile long hog_tid;
static volatile int hog_go;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Line of the "# BP: name" marker in path, or -1. */
static int marker(const char *path, const char *name)
{
    char line[512], tag[128];
    int n = 0, found = -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    snprintf(tag, sizeof tag, "# BP: %s", name);
    while (fgets(line, sizeof line, f)) {
        char *p;
        n++;
        if ((p = strstr(line, tag)) &&
            (p[strlen(tag)] == '\n' || p[strlen(tag)] == '\0' || p[strlen(tag)] == ' ')) {
            found = n;
            break;
        }
    }
    fclose(f);
    return found;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = s ? strlen(s) : 0, b = strlen(suf);
    return s && a >= b && strcmp(s + a - b, suf) == 0;
}

static const struct tinfo *info_by_name(const char *name)
{
    for (int i = 0; i < ninfos; i++)
        if (strcmp(infos[i].name, name) == 0)
            return &infos[i];
    return NULL;
}

static struct probe_thread *thread_by_ident(struct probe_snapshot *s, unsigned long ident)
{
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].ident == ident)
            return &s->threads[i];
    return NULL;
}

static const struct probe_local *local_by_name(const struct probe_frame *f, const char *name)
{
    for (int i = 0; i < f->nlocals; i++)
        if (strcmp(f->locals[i].name, name) == 0)
            return &f->locals[i];
    return NULL;
}

/* Number of threads whose innermost frame sits on one of the parking lines. */
static int count_parked(const struct probe_snapshot *s)
{
    int lines[3] = {marker(target_py, "leaf"), marker(target_py, "park"),
                    marker(modblock_py, "modlevel")};
    int n = 0;
    for (int i = 0; i < s->nthreads; i++) {
        const struct probe_thread *t = &s->threads[i];
        if (t->nframes > 0 && (t->frames[0].line == lines[0] || t->frames[0].line == lines[1] ||
                               t->frames[0].line == lines[2]))
            n++;
    }
    return n;
}

/* Takes snapshots (no flags) until pred says yes or timeout_ms passes. Returns 1 on success. */
static int wait_for(int (*pred)(struct probe_snapshot *, void *), void *arg, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    while (now_ms() < end) {
        struct probe_snapshot s;
        struct pb_err err;
        int ok = 0;
        if (pyrt_snapshot(&s, 0, 64, &err) == 0) {
            ok = pred(&s, arg);
            pyrt_snapshot_free(&s);
        }
        if (ok)
            return 1;
        sleep_ms(5);
    }
    return 0;
}

static int pred_parked(struct probe_snapshot *s, void *arg)
{
    return count_parked(s) >= *(int *)arg;
}

static int pred_busy_gone(struct probe_snapshot *s, void *arg)
{
    (void)arg;
    for (int i = 0; i < s->nthreads; i++)
        for (int j = 0; j < s->threads[i].nframes; j++)
            if (strcmp(s->threads[i].frames[j].func, "busy") == 0)
                return 0;
    return 1;
}

static int pred_hog(struct probe_snapshot *s, void *arg)
{
    int line = *(int *)arg;
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].holds_gil && s->threads[i].nframes > 0 &&
            s->threads[i].frames[0].line == line)
            return 1;
    return 0;
}

/* Reads pyrt_target.INFO into infos[]. Requires GIL. */
static void infos_load(void)
{
    PyObject *mod = PyImport_ImportModule("pyrt_target");
    PyObject *d = mod ? PyObject_GetAttrString(mod, "INFO") : NULL;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    ninfos = 0;
    while (d && PyDict_Next(d, &pos, &k, &v) && ninfos < 64) {
        struct tinfo *ti = &infos[ninfos++];
        snprintf(ti->name, sizeof ti->name, "%s", PyUnicode_AsUTF8(k));
        ti->ident = PyLong_AsUnsignedLong(PyTuple_GetItem(v, 0));
        ti->native = PyLong_AsLong(PyTuple_GetItem(v, 1));
        ti->daemon = PyObject_IsTrue(PyTuple_GetItem(v, 2));
    }
    Py_XDECREF(d);
    Py_XDECREF(mod);
    PyErr_Clear();
}

/* ---- line tables ---- */

/* Hand-made tables for each decoder (no interpreter needed). */
static void checks_lines_pure(void)
{
    static const unsigned char lnotab[] = {6, 1, 8, 2, 2, 0xFF};
    CHECK(pyrt_line_lnotab(lnotab, sizeof lnotab, 10, 0) == 10, "lnotab addr 0");
    CHECK(pyrt_line_lnotab(lnotab, sizeof lnotab, 10, 6) == 11, "lnotab addr 6");
    CHECK(pyrt_line_lnotab(lnotab, sizeof lnotab, 10, 13) == 11, "lnotab addr 13");
    CHECK(pyrt_line_lnotab(lnotab, sizeof lnotab, 10, 14) == 13, "lnotab addr 14");
    CHECK(pyrt_line_lnotab(lnotab, sizeof lnotab, 10, 16) == 12, "lnotab negative delta");

    static const unsigned char t310[] = {6, 1, 4, 0x80, 0, 2, 4, 1};
    CHECK(pyrt_line_310(t310, sizeof t310, 10, 0) == 11, "310 addr 0");
    CHECK(pyrt_line_310(t310, sizeof t310, 10, 7) == -1, "310 no-line range");
    CHECK(pyrt_line_310(t310, sizeof t310, 10, 10) == 14, "310 after empty range");
    CHECK(pyrt_line_310(t310, sizeof t310, 10, 20) == -1, "310 past the end");
    CHECK(pyrt_line_310(t310, sizeof t310, 10, -1) == 10, "310 not started");

    static const unsigned char loc[] = {
        0xE9, 0x02,                   /* no columns, +1, 2 units: [0,4) 11 */
        0xD8, 0x01, 0x05,             /* one line form, +1, 1 unit: [4,6) 12 */
        0xF8,                         /* no location: [6,8) -1 */
        0xF0, 0x05, 0x00, 0x01, 0x02, /* long form, -2: [8,10) 10 */
        0x98, 0x03,                   /* short form, same line: [10,12) 10 */
        0xE8, 0x48, 0x03,             /* no columns, +100 (2-byte varint): [12,14) 110 */
    };
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 0) == 11, "loc addr 0");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 2) == 11, "loc addr 2");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 4) == 12, "loc one-line form");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 6) == -1, "loc no location");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 8) == 10, "loc long form");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 10) == 10, "loc short form");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 12) == 110, "loc varint");
    CHECK(pyrt_line_loc(loc, sizeof loc, 10, 14) == -1, "loc past the end");
    CHECK(pyrt_line_loc(loc, 3, 10, 12) == -1, "loc truncated table");
    /* The whole position (co_positions): columns 0-based, -1 unknown. */
    struct pyrt_loc pl;
    CHECK(pyrt_loc_311(loc, sizeof loc, 10, 0, &pl) == 11 && pl.end_line == 11 && pl.col == -1 &&
              pl.end_col == -1,
          "loc no columns: %d %d %d %d", pl.line, pl.end_line, pl.col, pl.end_col);
    CHECK(pyrt_loc_311(loc, sizeof loc, 10, 4, &pl) == 12 && pl.end_line == 12 && pl.col == 1 &&
              pl.end_col == 5,
          "loc one-line columns: %d %d %d %d", pl.line, pl.end_line, pl.col, pl.end_col);
    CHECK(pyrt_loc_311(loc, sizeof loc, 10, 6, &pl) == -1 && pl.end_line == -1 && pl.col == -1,
          "loc no location: all unknown");
    CHECK(pyrt_loc_311(loc, sizeof loc, 10, 8, &pl) == 10 && pl.end_line == 10 && pl.col == 0 &&
              pl.end_col == 1,
          "loc long form columns: %d %d %d %d", pl.line, pl.end_line, pl.col, pl.end_col);
    CHECK(pyrt_loc_311(loc, sizeof loc, 10, 10, &pl) == 10 && pl.col == 24 && pl.end_col == 27,
          "loc short form columns: %d %d", pl.col, pl.end_col);
    static const unsigned char loc_long[] = {0xF0, 0x00, 0x03, 0x05, 0x0A}; /* +0, end +3 */
    CHECK(pyrt_loc_311(loc_long, sizeof loc_long, 7, 0, &pl) == 7 && pl.end_line == 10 &&
              pl.col == 4 && pl.end_col == 9,
          "loc long form end line: %d %d %d %d", pl.line, pl.end_line, pl.col, pl.end_col);
    CHECK(pyrt_loc_311(loc_long, 3, 7, 0, &pl) == 7 && pl.col == -1,
          "loc long form cut: no columns (%d)", pl.col);

    /* Tables read while their code object is built or freed can hold anything: a line past
     * int is no line (-1), never a signed overflow (UBSan in the sanitized run). */
    static const unsigned char lnotab_up[] = {0, 1};
    CHECK(pyrt_line_lnotab(lnotab_up, sizeof lnotab_up, INT_MAX, 0) == -1, "lnotab overflow");
    static const unsigned char t310_up[] = {2, 1};
    CHECK(pyrt_line_310(t310_up, sizeof t310_up, INT_MAX, 0) == -1, "310 overflow");
    static const unsigned char loc_up[] = {0xD8, 0x01, 0x05}; /* one line form, +1 */
    CHECK(pyrt_line_loc(loc_up, sizeof loc_up, INT_MAX, 0) == -1, "loc +1 overflow");
    static const unsigned char loc_big[] = {
        0xE8, 0x7E, 0x7F, 0x7F, 0x7F, 0x7F, 0x03, /* no columns, svarint +2^31-1 */
        0xE8, 0x7E, 0x7F, 0x7F, 0x7F, 0x7F, 0x03, /* and again */
        0xD8, 0x01, 0x05,                         /* one line form, +1 */
    };
    CHECK(pyrt_line_loc(loc_big, sizeof loc_big, 10, 4) == -1, "loc svarint sum overflow");
    CHECK(pyrt_line_loc(loc_big, sizeof loc_big, INT_MIN, 2) == INT_MAX - 1,
          "loc svarint sum back in range");
}

/* A code object whose _co_firsttraceable is past its code (read while being built or freed):
 * pyrt_code_read refuses it (-1) instead of computing a prologue that overflows an int. */
static void checks_code_torn(void)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *co = Py_CompileString("x = 1\n", "<torn>", Py_file_input);
    CHECK(co && PyCode_Check(co), "compile");
    if (!co)
        return;
    size_t size = (size_t)_PyObject_VAR_SIZE(Py_TYPE(co), Py_SIZE(co));
    PyCodeObject *copy = malloc(size);
    memcpy(copy, co, size);
    struct pyrt_code c;
    CHECK(pyrt_code_read((uintptr_t)copy, &c, pyrt_mem_read_at) == 0 && c.prologue >= 0,
          "intact copy read: prologue %d", c.prologue);
    copy->_co_firsttraceable = INT_MAX;
    CHECK(pyrt_code_read((uintptr_t)copy, &c, pyrt_mem_read_at) == -1,
          "firsttraceable INT_MAX refused (prologue %d)", c.prologue);
    copy->_co_firsttraceable = (int)Py_SIZE(co) + 1;
    CHECK(pyrt_code_read((uintptr_t)copy, &c, pyrt_mem_read_at) == -1,
          "firsttraceable past the code refused");
    copy->_co_firsttraceable = -1;
    CHECK(pyrt_code_read((uintptr_t)copy, &c, pyrt_mem_read_at) == -1,
          "negative firsttraceable refused");
    free(copy);
    Py_DECREF(co);
#endif
}

/* Our decoder for this version against PyCode_Addr2Line at every instruction of co and of the
 * code objects nested in it. Returns the number of code objects checked. Requires GIL. */
static int code_compare(PyObject *co, int depth)
{
    PyObject *tab, *bytecode, *consts;
    int checked = 0;
    if (!co || !PyCode_Check(co) || depth > 5)
        return 0;
#if PY_VERSION_HEX >= 0x030A0000
    tab = PyObject_GetAttrString(co, "co_linetable");
#else
    tab = PyObject_GetAttrString(co, "co_lnotab");
#endif
    bytecode = PyObject_GetAttrString(co, "co_code");
    if (tab && bytecode && PyBytes_Check(tab) && PyBytes_Check(bytecode)) {
        const unsigned char *t = (const unsigned char *)PyBytes_AS_STRING(tab);
        size_t n = (size_t)PyBytes_GET_SIZE(tab);
        int first = ((PyCodeObject *)co)->co_firstlineno, bad = -1, want = 0, got = 0;
        for (int off = 0; off < PyBytes_GET_SIZE(bytecode); off += 2) {
            want = PyCode_Addr2Line((PyCodeObject *)co, off);
#if PY_VERSION_HEX >= 0x030B0000
            got = pyrt_line_loc(t, n, first, off);
#elif PY_VERSION_HEX >= 0x030A0000
            got = pyrt_line_310(t, n, first, off);
#else
            got = pyrt_line_lnotab(t, n, first, off);
#endif
            if (got != want) {
                bad = off;
                break;
            }
#if PY_VERSION_HEX >= 0x030B0000
            int sl, sc, el, ec;
            struct pyrt_loc pl;
            PyCode_Addr2Location((PyCodeObject *)co, off, &sl, &sc, &el, &ec);
            pyrt_loc_311(t, n, first, off, &pl);
            if (sl >= 0 &&
                (pl.line != sl || pl.end_line != el || pl.col != sc || pl.end_col != ec)) {
                fprintf(stderr, "position %d:%d-%d:%d, CPython says %d:%d-%d:%d\n", pl.line, pl.col,
                        pl.end_line, pl.end_col, sl, sc, el, ec);
                bad = off;
                break;
            }
#endif
        }
        char *name = pyrt_str_read(((PyCodeObject *)co)->co_name, 100);
        CHECK(bad < 0, "%s: offset %d: line %d, CPython says %d", name ? name : "?", bad, got,
              want);
        free(name);
        checked++;
    }
    Py_XDECREF(tab);
    Py_XDECREF(bytecode);
    consts = PyObject_GetAttrString(co, "co_consts");
    for (Py_ssize_t i = 0; consts && PyTuple_Check(consts) && i < PyTuple_GET_SIZE(consts); i++)
        checked += code_compare(PyTuple_GET_ITEM(consts, i), depth + 1);
    Py_XDECREF(consts);
    PyErr_Clear();
    return checked;
}

static int module_compare(const char *modname)
{
    PyObject *mod = PyImport_ImportModule(modname);
    PyObject *d = mod ? PyModule_GetDict(mod) : NULL, *k, *v;
    Py_ssize_t pos = 0;
    int n = 0;
    while (d && PyDict_Next(d, &pos, &k, &v)) {
        if (PyFunction_Check(v)) {
            n += code_compare(PyFunction_GetCode(v), 0);
        } else if (PyType_Check(v)) {
            PyObject *cd = ((PyTypeObject *)v)->tp_dict, *k2, *v2;
            Py_ssize_t p2 = 0;
            while (cd && PyDict_Next(cd, &p2, &k2, &v2))
                if (PyFunction_Check(v2))
                    n += code_compare(PyFunction_GetCode(v2), 0);
        }
    }
    Py_XDECREF(mod);
    PyErr_Clear();
    return n;
}

static void checks_lines_vs_cpython(void)
{
    int n = module_compare("pyrt_target") + module_compare("threading") + module_compare("os") +
            module_compare("ctypes");
    CHECK(n > 100, "only %d code objects compared", n);
}

/* ---- fault-proof reads and decoders on bad memory (no interpreter state needed) ---- */

static void checks_memory(void)
{
    char buf[8192];
    long pg = sysconf(_SC_PAGESIZE);
    char *m =
        mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(m != MAP_FAILED, "mmap");
    if (m == MAP_FAILED)
        return;
    memset(m, 'a', (size_t)pg * 2);
    munmap(m + pg, (size_t)pg); /* second page now unmapped */
    CHECK(pyrt_mem_read(NULL, buf, 8) == -EFAULT, "NULL read");
    CHECK(pyrt_mem_read((void *)16, buf, 8) == -EFAULT, "low address read");
    CHECK(pyrt_mem_read(m + pg, buf, 8) == -EFAULT, "unmapped read");
    CHECK(pyrt_mem_read(m + pg - 4, buf, 8) == -EFAULT, "read across into unmapped page");
    CHECK(pyrt_mem_read(m, buf, 16) == 0 && buf[15] == 'a', "mapped read");
    CHECK(pyrt_mem_read_upto(m + pg - 100, buf, 1000) == 100, "partial read stops at the page");
    CHECK(pyrt_mem_read_upto(m + 8, buf, (size_t)pg) == (size_t)pg - 8, "read to the page end");

    /* A fake str whose length runs into the unmapped page: refused, not a crash. */
    PyASCIIObject fake;
    memset(&fake, 0, sizeof fake);
    ((PyObject *)&fake)->ob_type = &PyUnicode_Type;
    fake.length = (Py_ssize_t)1 << 40;
    fake.state.kind = 1;
    fake.state.compact = 1;
    fake.state.ascii = 1;
    char *at = m + pg - sizeof fake - 16; /* 8-aligned, 16 data bytes before the hole */
    memcpy(at, &fake, sizeof fake);
    char *str = pyrt_str_read(at, 100);
    CHECK(str == NULL, "fake str reaching unmapped memory: %s", str ? str : "");
    free(str);
    str = pyrt_str_read(at, 5);
    CHECK(str && strcmp(str, "aaaaa") == 0, "fake str cut at max: %s", str ? str : "(null)");
    free(str);
    fake.state.kind = 3; /* no such kind */
    memcpy(at, &fake, sizeof fake);
    CHECK(pyrt_str_read(at, 5) == NULL, "bad kind refused");
    CHECK(pyrt_str_read(m, 5) == NULL, "not a str refused");
    size_t len = 0;
    CHECK(pyrt_bytes_read(m, 5, &len) == NULL, "not bytes refused");
    CHECK(pyrt_str_read(m + pg + 64, 5) == NULL, "unmapped str refused");
    munmap(m, (size_t)pg);
}

/* ---- without the GIL ---- */

static int expect_parked;

static void checks_flags_need_gil(void)
{
    struct probe_snapshot s;
    struct pb_err err;
    int rc = pyrt_snapshot(&s, PROBE_SNAP_NAMES, 10, &err);
    CHECK(rc == PB_ENOGIL, "flags without the GIL: rc %d", rc);
    if (rc == 0)
        pyrt_snapshot_free(&s);
}

static void checks_stress(void)
{
    int bad = 0, busy_held = 0, holder_ok = 1, seen_busy = 0;
    for (int k = 0; k < 400; k++) {
        struct probe_snapshot s;
        struct pb_err err;
        if (pyrt_snapshot(&s, 0, 64, &err) != 0) {
            bad++;
            continue;
        }
        for (int i = 0; i < s.nthreads; i++) {
            struct probe_thread *t = &s.threads[i];
            int is_busy = 0;
            if (t->nframes > 64 || !t->name)
                bad++;
            for (int j = 0; j < t->nframes; j++) {
                if (!t->frames[j].func || !t->frames[j].file || !t->frames[j].func[0])
                    bad++;
                else if (strcmp(t->frames[j].func, "busy") == 0)
                    is_busy = 1;
            }
            seen_busy += is_busy;
            if (is_busy && t->holds_gil)
                busy_held++;
            if (t->holds_gil && s.gil_holder_native_id != t->native_id)
                holder_ok = 0;
        }
        pyrt_snapshot_free(&s);
    }
    CHECK(bad == 0, "%d bad snapshots/frames while a thread runs", bad);
    CHECK(seen_busy > 0, "busy thread never seen");
    CHECK(busy_held > 0, "busy thread never seen holding the GIL");
    CHECK(holder_ok, "gil_holder_native_id differs from the holder's native_id");
}

static void check_frame(const struct probe_thread *t, int i, const char *func, const char *file,
                        int line)
{
    if (i >= t->nframes) {
        CHECK(0, "%s: no frame %d (has %d)", t->name, i, t->nframes);
        return;
    }
    const struct probe_frame *f = &t->frames[i];
    CHECK(strcmp(f->func, func) == 0, "frame %d: func %s, want %s", i, f->func, func);
    CHECK(ends_with(f->file, file), "frame %d: file %s, want */%s", i, f->file, file);
    if (line > 0)
        CHECK(f->line == line, "frame %d (%s): line %d, want %d", i, func, f->line, line);
}

#if PY_VERSION_HEX >= 0x030B0000
#define QUAL(cls, fn) cls "." fn
#else
#define QUAL(cls, fn) fn
#endif

static void checks_nogil(void)
{
    struct probe_snapshot s, s20;
    struct pb_err err;
    int nmain = 0;
    const char *tgt = "pyrt_target.py";
    int rc = pyrt_snapshot(&s, 0, 64, &err);
    CHECK(rc == 0, "snapshot: %d %s", rc, err.msg);
    if (rc)
        return;
    CHECK(strcmp(s.version, PY_VERSION) == 0, "version %s, want %s", s.version, PY_VERSION);
    CHECK(s.nthreads == 1 + expect_parked, "%d threads, want %d", s.nthreads, 1 + expect_parked);
    CHECK(s.gil_holder_native_id == -1, "GIL holder %ld, want nobody", s.gil_holder_native_id);
    for (int i = 0; i < s.nthreads; i++) {
        struct probe_thread *t = &s.threads[i];
        CHECK(!t->holds_gil, "thread %lu holds the GIL", t->ident);
        CHECK(t->daemon == -1 && !t->name_from_threading, "names/daemon without the flag");
        for (int j = 0; j < t->nframes; j++)
            CHECK(t->frames[j].nlocals == -1, "locals without the flag");
        if (t->is_main) {
            nmain++;
            CHECK(t->ident == (unsigned long)pthread_self(), "main ident");
            CHECK(t->native_id == (long)getpid(), "main native id %ld", t->native_id);
            CHECK(t->nframes == 0, "main thread has %d frames", t->nframes);
        }
    }
    CHECK(nmain == 1, "%d main threads", nmain);
    for (int i = 0; i < ninfos; i++) {
        const struct tinfo *ti = &infos[i];
        struct probe_thread *t = thread_by_ident(&s, ti->ident);
        char comm[64] = "", path[64];
        if (strcmp(ti->name, "pyrt-busy") == 0)
            continue;
        CHECK(t != NULL, "thread %s (ident %lu) missing", ti->name, ti->ident);
        if (!t)
            continue;
        CHECK(t->native_id == ti->native, "%s: native id %ld, want %ld", ti->name, t->native_id,
              ti->native);
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", ti->native);
        pb_read_file(path, comm, sizeof comm);
        comm[strcspn(comm, "\n")] = '\0';
        CHECK(strcmp(t->name, comm) == 0, "%s: name %s, want comm %s", ti->name, t->name, comm);
        CHECK(!t->is_main, "%s is_main", ti->name);
    }
    const struct tinfo *ti;
    struct probe_thread *t;
    if ((ti = info_by_name("pyrt-locals")) && (t = thread_by_ident(&s, ti->ident))) {
        check_frame(t, 0, "leaf", tgt, marker(target_py, "leaf"));
        check_frame(t, 1, "middle", tgt, marker(target_py, "middle"));
        check_frame(t, 2, QUAL("Holder", "method"), tgt, marker(target_py, "method"));
        check_frame(t, 3, "run_locals", tgt, marker(target_py, "run_locals"));
        check_frame(t, 4, QUAL("Thread", "run"), "threading.py", 0);
        check_frame(t, t->nframes - 1, QUAL("Thread", "_bootstrap"), "threading.py", 0);
        CHECK(t->nframes == 7 && !t->truncated, "pyrt-locals: %d frames", t->nframes);
    } else {
        CHECK(0, "pyrt-locals not found");
    }
    if ((ti = info_by_name("pyrt-w0")) && (t = thread_by_ident(&s, ti->ident))) {
        check_frame(t, 0, "park", tgt, marker(target_py, "park"));
        check_frame(t, 1, "recurse", tgt, marker(target_py, "recurse_leaf"));
        for (int j = 2; j < 19; j++)
            check_frame(t, j, "recurse", tgt, marker(target_py, "recurse"));
        check_frame(t, 19, QUAL("Thread", "run"), "threading.py", 0);
        CHECK(t->nframes == 22 && !t->truncated, "pyrt-w0: %d frames", t->nframes);
    } else {
        CHECK(0, "pyrt-w0 not found");
    }
    if ((ti = info_by_name("pyrt-module")) && (t = thread_by_ident(&s, ti->ident))) {
        int found = 0;
        check_frame(t, 0, "<module>", "pyrt_modblock.py", marker(modblock_py, "modlevel"));
        for (int j = 1; j < t->nframes; j++)
            if (strcmp(t->frames[j].func, "run_module") == 0 &&
                t->frames[j].line == marker(target_py, "run_module"))
                found = 1;
        CHECK(found, "pyrt-module: run_module frame not found below the import");
    } else {
        CHECK(0, "pyrt-module not found");
    }
    rc = pyrt_snapshot(&s20, 0, 20, &err);
    CHECK(rc == 0, "snapshot(20): %d", rc);
    if (rc == 0 && (ti = info_by_name("pyrt-deep")) && (t = thread_by_ident(&s20, ti->ident))) {
        CHECK(t->nframes == 20 && t->truncated, "pyrt-deep: %d frames, truncated %d", t->nframes,
              t->truncated);
        check_frame(t, 0, "park", tgt, marker(target_py, "park"));
        check_frame(t, 19, "recurse", tgt, marker(target_py, "recurse"));
    } else {
        CHECK(0, "pyrt-deep not found");
    }
    if (rc == 0)
        pyrt_snapshot_free(&s20);
    pyrt_snapshot_free(&s);
}

static void checks_timing(void)
{
    int frames = 0, threads = 0;
    const int rounds = 200;
    double t0 = now_ms(), worst = 0;
    for (int k = 0; k < rounds; k++) {
        struct probe_snapshot s;
        struct pb_err err;
        double a = now_ms();
        if (pyrt_snapshot(&s, 0, 64, &err) != 0)
            continue;
        if (now_ms() - a > worst)
            worst = now_ms() - a;
        threads = s.nthreads;
        frames = 0;
        for (int i = 0; i < s.nthreads; i++)
            frames += s.threads[i].nframes;
        pyrt_snapshot_free(&s);
    }
    double avg = (now_ms() - t0) / rounds;
    printf("timing: %d threads, %d frames: %.3f ms per snapshot (worst %.3f ms)\n", threads, frames,
           avg, worst);
    /* A figure, not a check: speed is `make bench`'s (dump latency), and a timed assertion fails
     * on a loaded machine (8.6 ms once with other builds running). */
}

/* ---- with the GIL ---- */

static void check_local(const struct probe_frame *f, const char *name, const char *type,
                        const char *value, int prefix)
{
    const struct probe_local *l = local_by_name(f, name);
    CHECK(l != NULL, "local %s missing", name);
    if (!l)
        return;
    CHECK(strcmp(l->type, type) == 0, "%s: type %s, want %s", name, l->type, type);
    CHECK(prefix ? strncmp(l->value, value, strlen(value)) == 0 : strcmp(l->value, value) == 0,
          "%s: value %s, want %s%s", name, l->value, value, prefix ? "..." : "");
    CHECK(strlen(l->value) <= PYRT_REPR_MAX, "%s: value of %zu chars", name, strlen(l->value));
}

static void checks_with_gil(void)
{
    struct probe_snapshot s;
    struct pb_err err;
    const struct tinfo *ti;
    struct probe_thread *t;
    PyErr_SetString(PyExc_KeyError, "caller's own exception");
    int rc = pyrt_snapshot(&s, PROBE_SNAP_NAMES | PROBE_SNAP_LOCALS, 64, &err);
    CHECK(PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_KeyError),
          "caller's pending exception not preserved");
    PyErr_Clear();
    CHECK(rc == 0, "snapshot with flags: %d %s", rc, err.msg);
    if (rc)
        return;
    CHECK(s.gil_holder_native_id == (long)getpid(), "GIL holder %ld, want main %ld",
          s.gil_holder_native_id, (long)getpid());
    for (int i = 0; i < s.nthreads; i++) {
        t = &s.threads[i];
        if (t->is_main) {
            CHECK(strcmp(t->name, "MainThread") == 0, "main name %s", t->name);
            CHECK(t->name_from_threading && t->daemon == 0, "main from threading/daemon");
            CHECK(t->holds_gil, "main thread should hold the GIL");
        } else {
            CHECK(!t->holds_gil, "%s holds the GIL", t->name);
        }
    }
    for (int i = 0; i < ninfos; i++) {
        ti = &infos[i];
        if (strcmp(ti->name, "pyrt-busy") == 0 || !(t = thread_by_ident(&s, ti->ident)))
            continue;
        CHECK(strcmp(t->name, ti->name) == 0 && t->name_from_threading, "name %s, want %s", t->name,
              ti->name);
        CHECK(t->daemon == ti->daemon, "%s: daemon %d, want %d", ti->name, t->daemon, ti->daemon);
    }
    CHECK((ti = info_by_name("pyrt-daemon")) && ti->daemon == 1, "pyrt-daemon is a daemon");
    if ((ti = info_by_name("pyrt-locals")) && (t = thread_by_ident(&s, ti->ident)) &&
        t->nframes > 2) {
        const struct probe_frame *f = &t->frames[0];
        CHECK(f->nlocals >= 13, "leaf: %d locals", f->nlocals);
        check_local(f, "depth", "int", "1", 0);
        check_local(f, "n", "int", "42", 0);
        check_local(f, "s", "str", "'hello'", 0);
        check_local(f, "lst", "list", "[1, 2, 'x']", 0);
        check_local(f, "d", "dict", "{'k': 1}", 0);
        check_local(f, "obj", "pyrt_target.Point", "<pyrt_target.Point object at 0x", 1);
        check_local(f, "big", "int", "<int of 5001 bits>", 0);
        check_local(f, "longs", "str", "'xxxxxxxxxx", 1);
        const struct probe_local *l = local_by_name(f, "longs");
        CHECK(l && strlen(l->value) < 100 && ends_with(l->value, "..."), "longs cut: %s",
              l ? l->value : "");
        check_local(f, "nested", "list", "[[[[...]]]]", 0);
        check_local(f, "many", "tuple", "(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...)", 0);
        check_local(f, "sub", "pyrt_target.MyInt", "<pyrt_target.MyInt object at 0x", 1);
        check_local(f, "fl", "float", "1.5", 0);
        check_local(f, "uni", "str", "'h\xc3\xa9\xe4\xb8\x96\xf0\x9f\x98\x80'", 0);
        f = &t->frames[1];
        check_local(f, "captured", "str", "'cell-value'", 0);
        check_local(f, "inner", "function", "<function middle.<locals>.inner>", 0);
        check_local(&t->frames[2], "self", "pyrt_target.Holder", "<pyrt_target.Holder object", 1);
    } else {
        CHECK(0, "pyrt-locals not found");
    }
    if ((ti = info_by_name("pyrt-module")) && (t = thread_by_ident(&s, ti->ident)) &&
        t->nframes > 0) {
        const struct probe_frame *f = &t->frames[0];
        CHECK(f->nlocals > 0 && f->nlocals <= 50, "module frame: %d locals", f->nlocals);
        check_local(f, "MOD_X", "int", "7", 0);
        check_local(f, "MOD_S", "str", "'module-level'", 0);
    } else {
        CHECK(0, "pyrt-module not found");
    }
    pyrt_snapshot_free(&s);
}

/* A thread sits in pause() through ctypes.PyDLL, holding the GIL: the snapshot must still
 * work and name it as the holder. */
static void checks_hog(void)
{
    struct probe_snapshot s;
    struct pb_err err;
    int line = marker(target_py, "hog"), found = 0;
    CHECK(wait_for(pred_hog, &line, 10000), "no thread seen holding the GIL at line %d", line);
    double t0 = now_ms();
    int rc = pyrt_snapshot(&s, 0, 64, &err);
    double dt = now_ms() - t0;
    CHECK(rc == 0, "snapshot while the GIL is held forever: %d", rc);
    if (rc)
        return;
    CHECK(dt < 50, "snapshot took %.1f ms", dt);
    for (int i = 0; i < s.nthreads; i++) {
        struct probe_thread *t = &s.threads[i];
        if (t->is_main)
            CHECK(!t->holds_gil, "main holds the GIL");
        if (t->nframes > 0 && t->frames[0].line == line) {
            found = 1;
            CHECK(strcmp(t->frames[0].func, "hog") == 0, "hog func %s", t->frames[0].func);
            CHECK(t->holds_gil, "hog does not hold the GIL");
            CHECK(t->native_id == hog_tid, "hog native id %ld, want %ld", t->native_id, hog_tid);
        }
    }
    CHECK(found, "hog thread not found");
    CHECK(s.gil_holder_native_id == hog_tid && hog_tid > 0, "GIL holder %ld, want hog %ld",
          s.gil_holder_native_id, hog_tid);
    pyrt_snapshot_free(&s);
}

static void on_usr1(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    struct pb_err err;
    char code[8192];
    int rc;
    PyThreadState *save;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    snprintf(target_py, sizeof target_py, "%s/pyrt_target.py", argv[1]);
    snprintf(modblock_py, sizeof modblock_py, "%s/pyrt_modblock.py", argv[1]);
    signal(SIGUSR1, on_usr1);

    checks_lines_pure();
    checks_memory();
    Py_InitializeEx(0);
    rc = pyrt_init(&err);
    CHECK(rc == 0, "pyrt_init: %d %s", rc, err.msg);
    checks_code_torn();

    snprintf(code, sizeof code,
             "import sys\nsys.path.insert(0, %s%s%s)\nimport pyrt_target\n"
             "EXPECT = pyrt_target.start(%lu)\n",
             "'", argv[1], "'", (unsigned long)(uintptr_t)&busy_stop);
    CHECK(PyRun_SimpleString(code) == 0, "start threads");
    expect_parked = 4 + 12;
    checks_lines_vs_cpython();

    save = PyEval_SaveThread(); /* Py_BEGIN_ALLOW_THREADS */
    CHECK(wait_for(pred_parked, &expect_parked, 20000), "all %d threads parked", expect_parked);
    checks_flags_need_gil();
    checks_stress();
    busy_stop = 1;
    CHECK(wait_for(pred_busy_gone, NULL, 10000), "busy thread ended");
    PyEval_RestoreThread(save);

    infos_load();
    CHECK(ninfos == expect_parked + 1, "INFO has %d threads", ninfos);

    save = PyEval_SaveThread();
    checks_nogil();
    checks_timing();
    PyEval_RestoreThread(save);

    checks_with_gil();

    snprintf(code, sizeof code, "pyrt_target.start_hog(%lu, %lu)\n",
             (unsigned long)(uintptr_t)&hog_tid, (unsigned long)(uintptr_t)&hog_go);
    CHECK(PyRun_SimpleString(code) == 0, "start hog");
    save = PyEval_SaveThread();
    hog_go = 1;
    checks_hog();
    /* Wake pause() with a signal; resend until the hog has left it (a signal that lands just
     * before pause() starts would be lost). */
    for (int i = 0; i < 200 && hog_tid > 0; i++) {
        int line = marker(target_py, "hog");
        syscall(SYS_tgkill, getpid(), (pid_t)hog_tid, SIGUSR1);
        sleep_ms(20);
        if (!wait_for(pred_hog, &line, 1))
            break;
    }
    PyEval_RestoreThread(save);

    CHECK(PyRun_SimpleString("assert pyrt_target.finish()\n") == 0, "threads finished");
    Py_FinalizeEx();
    printf("pyrt-embed %s: %d passed, %d failed\n", PY_VERSION, npass, nfail);
    return nfail ? 1 : 0;
}
