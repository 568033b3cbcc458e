/* SPDX-License-Identifier: MIT */
/* Breakpoints (DAP: SetBreakpointsArguments, SetFunctionBreakpointsArguments). Everything here
 * runs with the GIL held, which is also what guards these tables. A line breakpoint is verified
 * by compiling the file and collecting the lines that have code; a line without code is
 * refused with a reason. Conditions and log messages are compiled once, when set, and evaluated
 * in the frame that reached the line, in the thread that reached it. Code objects are matched
 * by file (realpath of co_filename) and by the lines their instructions carry, cached per
 * code object until the breakpoints change. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpcond.h"
#include "internal.h"
#include "core/core.h"
#include "debugger.h"

struct bp {
    int id, line;
    PyObject *cond; /* compiled condition or NULL (strong) */
    PyObject *log;  /* list of str / code objects making the message, or NULL (strong) */
    int hit_op;
    long hit_n, hits;
};

struct bpfile {
    char *path;
    int n;
    struct bp *bps;
    struct bpfile *next;
};

struct fbp {
    int id;
    char *name;
    PyObject *cond;
    int hit_op;
    long hit_n, hits;
    struct fbp *next;
};

static struct bpfile *files;
static struct fbp *funcs;
static atomic_int nbps; /* line + function breakpoints */
static int next_id = 1;
static PyObject *file_cache; /* co_filename -> bpfile index (int) or -1 */
static PyObject *code_cache; /* id(code) -> (code, bool) */

int dbg_bp_count(void)
{
    return atomic_load(&nbps);
}

int dbg_bp_any(void)
{
    return atomic_load(&nbps) > 0;
}

static void caches_clear(void)
{
    dbg_gate_bp_changed();
    Py_CLEAR(file_cache);
    Py_CLEAR(code_cache);
}

static void count(void)
{
    int n = 0;
    for (struct bpfile *f = files; f; f = f->next)
        n += f->n;
    for (struct fbp *b = funcs; b; b = b->next)
        n++;
    atomic_store(&nbps, n);
}

static void bpfile_free(struct bpfile *f)
{
    for (int i = 0; f && i < f->n; i++) {
        Py_XDECREF(f->bps[i].cond);
        Py_XDECREF(f->bps[i].log);
    }
    if (f) {
        free(f->bps);
        free(f->path);
        free(f);
    }
}

static struct fbp *funcs_block; /* where funcs' entries live (one allocation) */

static void funcs_free(void)
{
    while (funcs) {
        struct fbp *b = funcs;
        funcs = b->next;
        Py_XDECREF(b->cond);
        free(b->name);
    }
    free(funcs_block);
    funcs_block = NULL;
}

void dbg_bp_clear_all(void)
{
    while (files) {
        struct bpfile *f = files;
        files = f->next;
        bpfile_free(f);
    }
    funcs_free();
    caches_clear();
    count();
}

/* realpath of path, or path made absolute when it does not exist. malloc'd. */
static char *canon(const char *path)
{
    char buf[PATH_MAX];
    if (realpath(path, buf))
        return strdup(buf);
    if (path[0] == '/')
        return strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return strdup(path);
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s/%s", cwd, path);
    return r;
}

/* The breakpoint file of code's co_filename, or NULL. */
static struct bpfile *file_of(PyCodeObject *code)
{
    if (!files)
        return NULL;
    if (!file_cache && !(file_cache = PyDict_New())) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *hit = PyDict_GetItemWithError(file_cache, code->co_filename);
    long idx = -1;
    if (hit) {
        idx = PyLong_AsLong(hit);
    } else {
        PyErr_Clear();
        char *name = gil_py_strdup(code->co_filename);
        char *c = name && name[0] != '<' ? canon(name) : NULL;
        long i = 0;
        for (struct bpfile *f = files; c && f; f = f->next, i++)
            if (strcmp(f->path, c) == 0) {
                idx = i;
                break;
            }
        free(c);
        free(name);
        PyObject *v = PyLong_FromLong(idx);
        if (!v || PyDict_SetItem(file_cache, code->co_filename, v) < 0)
            PyErr_Clear();
        Py_XDECREF(v);
    }
    struct bpfile *f = files;
    for (long i = 0; f && i < idx; i++)
        f = f->next;
    return idx < 0 ? NULL : f;
}

/* Adds every line that code (and the code nested in it) has instructions for to set. */
static int code_lines(PyObject *code, PyObject *set, int depth)
{
    if (depth > 64)
        return 0;
#if PY_VERSION_HEX >= 0x030A0000
    PyObject *it = PyObject_CallMethod(code, "co_lines", NULL);
    PyObject *iter = it ? PyObject_GetIter(it) : NULL;
    PyObject *item;
    while (iter && (item = PyIter_Next(iter))) {
        PyObject *line =
            PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3 ? PyTuple_GET_ITEM(item, 2) : NULL;
        if (line && line != Py_None)
            PySet_Add(set, line);
        Py_DECREF(item);
    }
    Py_XDECREF(iter);
    Py_XDECREF(it);
#else
    PyCodeObject *co = (PyCodeObject *)code;
    const unsigned char *tab = (const unsigned char *)PyBytes_AS_STRING(co->co_lnotab);
    Py_ssize_t n = PyBytes_GET_SIZE(co->co_lnotab);
    long line = co->co_firstlineno;
    PyObject *l = PyLong_FromLong(line);
    if (l)
        PySet_Add(set, l);
    Py_XDECREF(l);
    for (Py_ssize_t i = 0; i + 1 < n; i += 2) {
        line += (signed char)tab[i + 1];
        if (tab[i + 1] == 0)
            continue;
        l = PyLong_FromLong(line);
        if (l)
            PySet_Add(set, l);
        Py_XDECREF(l);
    }
#endif
    PyObject *consts = PyObject_GetAttrString(code, "co_consts");
    for (Py_ssize_t i = 0; consts && PyTuple_Check(consts) && i < PyTuple_GET_SIZE(consts); i++)
        if (PyCode_Check(PyTuple_GET_ITEM(consts, i)))
            code_lines(PyTuple_GET_ITEM(consts, i), set, depth + 1);
    Py_XDECREF(consts);
    PyErr_Clear();
    return 0;
}

/* Lines of code itself (not nested code). New reference or NULL. */
static PyObject *own_lines(PyObject *code)
{
    PyObject *set = PySet_New(NULL);
    if (set)
        code_lines(code, set, 64); /* depth 64: no recursion into nested code */
    return set;
}

int dbg_bp_in_code(PyCodeObject *code)
{
    struct bpfile *f = file_of(code);
    if (!f)
        return 0;
    if (!code_cache && !(code_cache = PyDict_New())) {
        PyErr_Clear();
        return 1;
    }
    PyObject *key = PyLong_FromVoidPtr(code);
    PyObject *hit = key ? PyDict_GetItemWithError(code_cache, key) : NULL;
    if (hit) {
        Py_DECREF(key);
        return PyTuple_GET_ITEM(hit, 1) == Py_True;
    }
    PyErr_Clear();
    PyObject *lines = own_lines((PyObject *)code);
    int has = 0;
    for (int i = 0; lines && i < f->n && !has; i++) {
        PyObject *l = PyLong_FromLong(f->bps[i].line);
        has = l && PySet_Contains(lines, l) == 1;
        Py_XDECREF(l);
    }
    Py_XDECREF(lines);
    PyObject *v = key ? PyTuple_Pack(2, (PyObject *)code, has ? Py_True : Py_False) : NULL;
    if (!v || PyDict_SetItem(code_cache, key, v) < 0)
        PyErr_Clear();
    Py_XDECREF(v);
    Py_XDECREF(key);
    PyErr_Clear();
    return has;
}

/* 1 if some file with line breakpoints is named base (its last path component). */
int dbg_bp_file_named(const char *base)
{
    for (struct bpfile *f = files; f; f = f->next) {
        const char *b = strrchr(f->path, '/');
        if (strcmp(b ? b + 1 : f->path, base) == 0)
            return 1;
    }
    return 0;
}

int dbg_bp_functions_any(void)
{
    return funcs != NULL;
}

/* 1 if the breakpoints' own cache holds code (a reference of ours). */
int dbg_bp_code_cached(PyCodeObject *code)
{
    PyObject *key = code_cache ? PyLong_FromVoidPtr(code) : NULL;
    PyObject *hit = key ? PyDict_GetItemWithError(code_cache, key) : NULL;
    Py_XDECREF(key);
    PyErr_Clear();
    return hit && PyTuple_GET_ITEM(hit, 0) == (PyObject *)code;
}

/* 1 if every line breakpoint lies in the own lines (not nested code) of a code object in codes
 * (a list). */
int dbg_bp_lines_within(PyObject *codes)
{
    Py_ssize_t n = PyList_GET_SIZE(codes);
    PyObject **lines = calloc((size_t)n + 1, sizeof *lines);
    struct bpfile **of = calloc((size_t)n + 1, sizeof *of);
    int all = lines && of;
    for (Py_ssize_t i = 0; all && i < n; i++) {
        of[i] = file_of((PyCodeObject *)PyList_GET_ITEM(codes, i));
        lines[i] = of[i] ? own_lines(PyList_GET_ITEM(codes, i)) : NULL;
    }
    for (struct bpfile *f = files; all && f; f = f->next)
        for (int b = 0; all && b < f->n; b++) {
            PyObject *l = PyLong_FromLong(f->bps[b].line);
            int in = 0;
            for (Py_ssize_t i = 0; l && i < n && !in; i++)
                in = of[i] == f && lines[i] && PySet_Contains(lines[i], l) == 1;
            Py_XDECREF(l);
            all = in;
        }
    for (Py_ssize_t i = 0; lines && i < n; i++)
        Py_XDECREF(lines[i]);
    free(lines);
    free(of);
    PyErr_Clear();
    return all;
}

int dbg_bp_at(PyCodeObject *code, int line)
{
    struct bpfile *f = file_of(code);
    for (int i = 0; f && i < f->n; i++)
        if (f->bps[i].line == line)
            return 1;
    return 0;
}

int dbg_bp_function(PyCodeObject *code)
{
    if (!funcs)
        return 0;
    for (struct fbp *b = funcs; b; b = b->next) {
#if PY_VERSION_HEX >= 0x030B0000
        if (PyUnicode_CompareWithASCIIString(code->co_qualname, b->name) == 0)
            return b->id;
#endif
        if (PyUnicode_CompareWithASCIIString(code->co_name, b->name) == 0)
            return b->id;
        const char *dot = strrchr(b->name, '.');
        if (dot && PyUnicode_CompareWithASCIIString(code->co_name, dot + 1) == 0)
            return b->id;
    }
    return 0;
}

/* ---- evaluation in the stopping frame ---- */

/* Evaluates a compiled expression in f. New reference or NULL with an exception set. */
static PyObject *eval_in(PyFrameObject *f, PyObject *code)
{
    PyObject *g, *l;
    struct pb_err err = {0};
    if (gil_eval_frame_ns((PyObject *)f, &g, &l, &err) < 0) {
        PyErr_SetString(PyExc_RuntimeError, err.msg);
        return NULL;
    }
    PyObject *r = PyEval_EvalCode(code, g, l);
    Py_XDECREF(g);
    Py_XDECREF(l);
    return r;
}

static void emit_output(const char *category, const char *text, PyCodeObject *code, int line)
{
    struct probe_dbg_event e = {.kind = PROBE_DBG_EV_OUTPUT, .text = text};
    pb_strlcpy(e.category, category, sizeof e.category);
    char *file = gil_py_strdup(code->co_filename);
    if (file && file[0] != '<') {
        e.path = file;
        e.line = line;
    }
    dbg_emit(&e);
    free(file);
}

/* The pending exception as "Type: message" (cleared). malloc'd. */
static char *exc_text(void)
{
    PyObject *t = PyErr_Occurred(); /* borrowed: its name is copied before it can go */
    char name[128];
    snprintf(name, sizeof name, "%s", t ? ((PyTypeObject *)t)->tp_name : "error");
    struct pb_err e = {0};
    gil_py_fail(&e, name);
    return strdup(e.msg);
}

/* Condition true (1), false (0); an error in it stops (1) and says why on the console. */
static int cond_ok(PyFrameObject *f, PyObject *cond, PyCodeObject *code, int line)
{
    if (!cond)
        return 1;
    PyObject *r = eval_in(f, cond);
    int ok = r ? PyObject_IsTrue(r) : -1;
    Py_XDECREF(r);
    if (ok < 0) {
        char *m = exc_text();
        char text[700];
        snprintf(text, sizeof text, "breakpoint condition at line %d raised %s: stopping\n", line,
                 m ? m : "an exception");
        free(m);
        emit_output("console", text, code, line);
        return 1;
    }
    return ok;
}

static void log_message(PyFrameObject *f, PyObject *parts, PyCodeObject *code, int line)
{
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out && i < PyList_GET_SIZE(parts); i++) {
        PyObject *p = PyList_GET_ITEM(parts, i);
        PyObject *s = NULL;
        if (PyUnicode_Check(p)) {
            Py_INCREF(p);
            s = p;
        } else {
            PyObject *v = eval_in(f, p);
            if (v) {
                s = PyObject_Str(v);
                Py_DECREF(v);
            }
            if (!s) {
                char *m = exc_text();
                s = PyUnicode_FromFormat("<%s>", m ? m : "error");
                free(m);
            }
        }
        if (!s || PyList_Append(out, s) < 0)
            PyErr_Clear();
        Py_XDECREF(s);
    }
    PyObject *empty = PyUnicode_FromString("");
    PyObject *text = out && empty ? PyUnicode_Join(empty, out) : NULL;
    char *t = gil_py_strdup(text);
    if (t) {
        size_t n = strlen(t);
        char *line_text = malloc(n + 2);
        if (line_text) {
            memcpy(line_text, t, n);
            line_text[n] = '\n';
            line_text[n + 1] = 0;
            emit_output("console", line_text, code, line);
            free(line_text);
        }
    }
    free(t);
    Py_XDECREF(text);
    Py_XDECREF(empty);
    Py_XDECREF(out);
    PyErr_Clear();
}

int dbg_bp_check(PyFrameObject *f, PyCodeObject *code, int line, struct dbg_stop_why *why)
{
    struct bpfile *bf = file_of(code);
    int stop = 0;
    for (int i = 0; bf && i < bf->n; i++) {
        struct bp *b = &bf->bps[i];
        if (b->line != line || !cond_ok(f, b->cond, code, line))
            continue;
        b->hits++;
        if (!dbg_hit_ok(b->hit_op, b->hit_n, b->hits))
            continue;
        if (b->log) {
            log_message(f, b->log, code, line);
            continue;
        }
        if (why->nbp < (int)(sizeof why->bp_ids / sizeof why->bp_ids[0]))
            why->bp_ids[why->nbp++] = b->id;
        stop = 1;
    }
    return stop;
}

/* ---- requests ---- */

/* "N", "==N", ">=N", ">N", "<=N", "<N", "%N". Returns 0 or -1. */
/* Compiles an expression; on failure returns NULL and puts "what: error" in msg. */
static PyObject *compile_expr(const char *src, const char *what, char *msg, size_t n)
{
    PyObject *c = Py_CompileString(src, "<breakpoint>", Py_eval_input);
    if (!c) {
        char *m = exc_text();
        snprintf(msg, n, "%s does not compile: %s", what, m ? m : "error");
        free(m);
    }
    return c;
}

struct logparts {
    PyObject *parts; /* str and code objects, in order */
    char *msg;
    size_t n;
};

static int log_part(void *ctx, int is_expr, const char *text, size_t len)
{
    struct logparts *lp = ctx;
    PyObject *o;
    if (is_expr) {
        char expr[DBG_LOG_EXPR_MAX + 1];
        snprintf(expr, sizeof expr, "%.*s", (int)len, text);
        o = compile_expr(expr, "log message expression", lp->msg, lp->n);
    } else {
        o = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace"); /* a cut may split a char */
    }
    int rc = o && PyList_Append(lp->parts, o) == 0 ? 0 : -1;
    Py_XDECREF(o);
    return rc;
}

/* A log message "x is {x}" as a list of str and compiled expressions (bpcond.c splits it). */
static PyObject *compile_log(const char *s, char *msg, size_t n)
{
    struct logparts lp = {PyList_New(0), msg, n};
    const char *why = NULL;
    if (lp.parts && dbg_log_split(s, log_part, &lp, &why) < 0) {
        if (why)
            snprintf(msg, n, "%s", why);
        else if (!msg[0])
            snprintf(msg, n, "log message: out of memory");
        Py_CLEAR(lp.parts);
    }
    PyErr_Clear();
    return lp.parts;
}

/* The set of lines with code in the file at path, or NULL with msg. */
static PyObject *file_lines(const char *path, char *msg, size_t n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(msg, n, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, fp);
        len += got;
        if (got == 0)
            break;
        if (len + 1 >= cap) {
            if (cap >= (64u << 20)) {
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(fp);
    if (!buf) {
        snprintf(msg, n, "out of memory reading %s", path);
        return NULL;
    }
    buf[len] = 0;
    PyObject *code = Py_CompileStringExFlags(buf, path, Py_file_input, NULL, 0);
    free(buf);
    if (!code) {
        char *m = exc_text();
        snprintf(msg, n, "%s does not compile: %s", path, m ? m : "error");
        free(m);
        return NULL;
    }
    PyObject *set = PySet_New(NULL);
    if (set)
        code_lines(code, set, 0);
    Py_DECREF(code);
    return set;
}

/* The breakpoints changed: what depends on them follows. */
static int changed(struct pb_err *err)
{
    caches_clear();
    count();
    int rc = dbg_hooks_update(err);
    PyErr_Clear();
    return rc;
}

static void result(struct probe_dbg_bp *out, int id, int verified, int line, const char *msg)
{
    out->id = id;
    out->verified = verified;
    out->line = line;
    pb_strlcpy(out->message, msg ? msg : "", sizeof out->message);
}

int dbg_set_breakpoints(const char *path, const struct probe_dbg_bp_spec *specs, int n,
                        struct probe_dbg_bp *out, struct pb_err *err)
{
    char *cpath = canon(path);
    char fmsg[600] = "";
    PyObject *lines = n && cpath ? file_lines(cpath, fmsg, sizeof fmsg) : NULL;
    struct bpfile *nf = cpath ? calloc(1, sizeof *nf) : NULL;
    struct bp *bps = nf && n ? calloc((size_t)n, sizeof *bps) : NULL;
    if (!nf || (n && !bps)) {
        for (int i = 0; i < n; i++)
            result(&out[i], next_id++, 0, specs[i].line, "out of memory: not set");
        free(nf);
        free(bps);
        free(cpath);
        Py_XDECREF(lines);
        PyErr_Clear();
        return pb_err_set(err, -ENOMEM,
                          "out of memory: the breakpoints of %s are "
                          "unchanged",
                          path);
    }
    nf->path = cpath;
    nf->bps = bps;
    for (int i = 0; i < n; i++) {
        const struct probe_dbg_bp_spec *sp = &specs[i];
        int line = sp->line;
        char msg[700] = "";
        struct bp b = {.line = line};
        if (line <= 0) {
            snprintf(msg, sizeof msg, "breakpoint without a valid line");
        } else if (!lines) {
            snprintf(msg, sizeof msg, "%s", fmsg);
        } else {
            PyObject *l = PyLong_FromLong(line);
            int has = l && PySet_Contains(lines, l) == 1;
            Py_XDECREF(l);
            if (!has)
                snprintf(msg, sizeof msg,
                         "no code on line %d of %s (a blank line, a comment or "
                         "part of a longer statement)",
                         line, path);
        }
        if (!msg[0] && sp->hit_condition &&
            dbg_hit_parse(sp->hit_condition, &b.hit_op, &b.hit_n) < 0)
            snprintf(msg, sizeof msg,
                     "hit condition '%s' not understood (use N, ==N, >=N, >N, "
                     "<=N, <N or %%N)",
                     sp->hit_condition);
        if (!msg[0] && sp->condition)
            b.cond = compile_expr(sp->condition, "condition", msg, sizeof msg);
        if (!msg[0] && sp->log_message)
            b.log = compile_log(sp->log_message, msg, sizeof msg);
        if (msg[0]) {
            Py_XDECREF(b.cond);
            Py_XDECREF(b.log);
            result(&out[i], next_id++, 0, line, msg);
            continue;
        }
        b.id = next_id++;
        nf->bps[nf->n++] = b;
        result(&out[i], b.id, 1, line, NULL);
    }
    Py_XDECREF(lines);
    PyErr_Clear();
    /* Replace this file's breakpoints. */
    for (struct bpfile **pp = &files; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->path, nf->path) == 0) {
            struct bpfile *old = *pp;
            *pp = old->next;
            bpfile_free(old);
            break;
        }
    if (nf->n > 0) {
        nf->next = files;
        files = nf;
    } else {
        bpfile_free(nf);
    }
    return changed(err);
}

int dbg_set_function_breakpoints(const struct probe_dbg_bp_spec *specs, int n,
                                 struct probe_dbg_bp *out, struct pb_err *err)
{
    /* Every entry is allocated before the old ones go: a failure changes nothing. */
    struct fbp *all = n ? calloc((size_t)n, sizeof *all) : NULL;
    if (n && !all) {
        for (int i = 0; i < n; i++)
            result(&out[i], next_id++, 0, 0, "out of memory: not set");
        return pb_err_set(err, -ENOMEM,
                          "out of memory: the function breakpoints are "
                          "unchanged");
    }
    funcs_free();
    for (int i = 0; i < n; i++) {
        const struct probe_dbg_bp_spec *sp = &specs[i];
        struct fbp *b = &all[i];
        char msg[700] = "";
        if (!sp->name)
            snprintf(msg, sizeof msg, "function breakpoint without a name");
        if (!msg[0] && sp->hit_condition &&
            dbg_hit_parse(sp->hit_condition, &b->hit_op, &b->hit_n) < 0)
            snprintf(msg, sizeof msg, "hit condition '%s' not understood", sp->hit_condition);
        if (!msg[0] && sp->condition)
            b->cond = compile_expr(sp->condition, "condition", msg, sizeof msg);
        if (!msg[0] && !(b->name = strdup(sp->name)))
            snprintf(msg, sizeof msg, "out of memory: not set");
        b->id = next_id++;
        if (msg[0]) {
            result(&out[i], b->id, 0, 0, msg);
            Py_CLEAR(b->cond);
            continue;
        }
        b->next = funcs;
        funcs = b;
        result(&out[i], b->id, 1, 0, NULL);
    }
    funcs_block = all;
    PyErr_Clear();
    return changed(err);
}

int dbg_bp_function_ok(PyFrameObject *f, int id)
{
    for (struct fbp *b = funcs; b; b = b->next) {
        if (b->id != id)
            continue;
        PyCodeObject *code = dbg_frame_code(f);
        int ok = cond_ok(f, b->cond, code, PyFrame_GetLineNumber(f));
        Py_DECREF(code);
        if (!ok)
            return 0;
        b->hits++;
        return dbg_hit_ok(b->hit_op, b->hit_n, b->hits);
    }
    return 0;
}
