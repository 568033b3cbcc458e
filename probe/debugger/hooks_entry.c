/* SPDX-License-Identifier: MIT */
/* Entry hooks: line breakpoints on CPython 3.11 without a frame-evaluation function.
 *
 * Why: with any PEP 523 function set, 3.11 stops running Python-to-Python calls inline, which
 * costs every call of the program about 15-20% (tests/bench/bench_gate.py), breakpoints hit or
 * not. Instead, each function whose code holds a breakpoint gets a copy of its code with a
 * prologue: right after RESUME, `__import__("sys").audit("probing.entry")`, which reaches an
 * audit hook of ours (dbg_trace_entered: trace this thread while the frame runs, as the gate
 * does). No other code changes, so the rest of the program runs at full speed. The prologue
 * adds only strings to the code's constants and names: the copy can be marshalled, pickled
 * (cloudpickle, dill, Ray) and run anywhere (without probing, the audit event reaches nobody).
 * The audit hook cannot be removed (CPython has no such call): after detach it only compares
 * the first byte of each audit event's name.
 *
 * The copy replaces the function's __code__ only when that is provably complete: every line
 * breakpoint lies in the own lines of a function found (in the modules of the breakpoint files:
 * their functions, classes' methods, decorated functions' __wrapped__ and closures), no
 * function breakpoint exists, and every reference to each such code object is accounted for
 * (its functions, frames running it, our caches, and the constants of a module or class body
 * that cannot make a new function from it again, a running module's `def` outside any loop).
 * Anything else (a file not imported yet, a nested function, a generator, an unknown holder of
 * the code) keeps the gate (hooks_trace.c) for the whole breakpoint set. Frames already running
 * the old code are traced as with the gate (threads whose stack holds breakpoint code).
 * Everything is put back when the breakpoints leave such a function, in full mode's end, and on
 * detach; a hook reached after that does nothing. GIL held throughout. */
#define Py_BUILD_CORE 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#include <opcode.h>
#include "pycore_code.h"
#endif
#pragma GCC diagnostic pop

#include "internal.h"
#include "core/settings.h"

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000

#include <stdlib.h>
#include <string.h>

/* Swapped functions: a list of (weakref to the function, original code, hooked code). */
static PyObject *swaps;
static int hooks_on; /* hooks act; 0 once everything is put back */
static int audit_added;
/* The prologue's constants and names, appended to the code's own. */
static PyObject *k_sys, *k_event, *n_import, *n_audit;
/* Files of the code objects ever hooked: where derived copies may hide at removal. */
static PyObject *hooked_files;
#define ENTRY_EVENT "probing.entry"

static int audit_hook(const char *event, PyObject *args, void *data)
{
    (void)args;
    (void)data;
    if (hooks_on && event[0] == 'p' && strcmp(event, ENTRY_EVENT) == 0)
        dbg_trace_entered();
    return 0;
}

static int hook_ready(void)
{
    if (!k_sys && (!(k_sys = PyUnicode_InternFromString("sys")) ||
                   !(k_event = PyUnicode_InternFromString(ENTRY_EVENT)) ||
                   !(n_import = PyUnicode_InternFromString("__import__")) ||
                   !(n_audit = PyUnicode_InternFromString("audit")))) {
        Py_CLEAR(k_sys);
        PyErr_Clear();
        return 0;
    }
    if (!hooked_files && !(hooked_files = PySet_New(NULL))) {
        PyErr_Clear();
        return 0;
    }
    /* Once: PySys_AddAuditHook raises sys.addaudithook, which the program's own hooks may
     * refuse (then the gate serves every breakpoint). */
    if (!audit_added && PySys_AddAuditHook(audit_hook, NULL) == 0)
        audit_added = 1;
    PyErr_Clear();
    return audit_added;
}

/* ---- the hooked copy of a code object ---- */

struct buf {
    unsigned char *p;
    size_t n, cap;
};

static int put(struct buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        unsigned char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

static int put_unit(struct buf *b, int op, int arg)
{
    unsigned char u[2] = {(unsigned char)op, (unsigned char)arg};
    return put(b, u, 2);
}

/* op with its EXTENDED_ARG prefixes, then n CACHE units. */
static int put_op(struct buf *b, int op, long arg, size_t caches)
{
    for (int shift = 24; shift > 0; shift -= 8)
        if (arg >> shift && put_unit(b, EXTENDED_ARG, (int)((arg >> shift) & 255)) < 0)
            return -1;
    if (put_unit(b, op, (int)(arg & 255)) < 0)
        return -1;
    for (size_t i = 0; i < caches; i++)
        if (put_unit(b, CACHE, 0) < 0)
            return -1;
    return 0;
}

/* The prologue for a code object with nconsts constants and nnames names, whose own come first:
 * __import__("sys").audit("probing.entry"), no value left on the stack (depth 3 at most). */
static int prologue(struct buf *pro, Py_ssize_t nconsts, Py_ssize_t nnames)
{
    long c_sys = (long)nconsts, c_event = (long)nconsts + 1;
    long n_imp = (long)nnames, n_aud = (long)nnames + 1;
    return put_op(pro, LOAD_GLOBAL, (n_imp << 1) | 1, INLINE_CACHE_ENTRIES_LOAD_GLOBAL) == 0 &&
                   put_op(pro, LOAD_CONST, c_sys, 0) == 0 &&
                   put_op(pro, PRECALL, 1, INLINE_CACHE_ENTRIES_PRECALL) == 0 &&
                   put_op(pro, CALL, 1, INLINE_CACHE_ENTRIES_CALL) == 0 &&
                   put_op(pro, LOAD_METHOD, n_aud, INLINE_CACHE_ENTRIES_LOAD_METHOD) == 0 &&
                   put_op(pro, LOAD_CONST, c_event, 0) == 0 &&
                   put_op(pro, PRECALL, 1, INLINE_CACHE_ENTRIES_PRECALL) == 0 &&
                   put_op(pro, CALL, 1, INLINE_CACHE_ENTRIES_CALL) == 0 &&
                   put_op(pro, POP_TOP, 0, 0) == 0
               ? 0
               : -1;
}

/* Bytes of the location table covering the first units code units, or -1 when no entry ends
 * there. Entries: a first byte 1cccclll (code c, l+1 units) and c-dependent extra bytes. */
static Py_ssize_t lines_split(const unsigned char *t, Py_ssize_t n, int units)
{
    Py_ssize_t i = 0;
    int at = 0;
    while (at < units && i < n) {
        if (!(t[i] & 0x80))
            return -1;
        int code = (t[i] >> 3) & 15;
        at += (t[i] & 7) + 1;
        i++;
        int varints = code == 15 ? 0 : code == 14 ? 4 : code == 13 ? 1 : 0;
        if (code < 10)
            i += 1;
        else if (code < 13)
            i += 2;
        for (int v = 0; v < varints && i < n; v++) {
            while (i < n && (t[i] & 0x40))
                i++;
            i++;
        }
    }
    return at == units && i <= n ? i : -1;
}

/* Exception table numbers: 6-bit groups, most significant first, bit 6 "more follows"; the
 * first byte of an entry has bit 7 set. */
static int exc_read(const unsigned char *t, Py_ssize_t n, Py_ssize_t *i, int *v)
{
    if (*i >= n)
        return -1;
    int x = t[*i] & 63;
    while (t[*i] & 64) {
        if (++*i >= n || x > (1 << 24))
            return -1;
        x = (x << 6) | (t[*i] & 63);
    }
    ++*i;
    *v = x;
    return 0;
}

static int exc_write(struct buf *b, int v, int first)
{
    unsigned char out[6];
    int k = 0;
    for (int shift = 24; shift > 0; shift -= 6)
        if (v >= 1 << shift)
            out[k++] = (unsigned char)(((v >> shift) & 63) | 64);
    out[k++] = (unsigned char)(v & 63);
    if (first)
        out[0] |= 128;
    return put(b, out, (size_t)k);
}

/* The exception table with every offset moved by shift code units (none may lie before at). */
static PyObject *exc_shift(PyObject *table, int at, int shift)
{
    const unsigned char *t = (const unsigned char *)PyBytes_AS_STRING(table);
    Py_ssize_t n = PyBytes_GET_SIZE(table), i = 0;
    struct buf b = {0};
    int ok = 1;
    while (ok && i < n) {
        int start, size, target, dl;
        ok = (t[i] & 128) && exc_read(t, n, &i, &start) == 0 && exc_read(t, n, &i, &size) == 0 &&
             exc_read(t, n, &i, &target) == 0 && exc_read(t, n, &i, &dl) == 0 && start >= at &&
             target >= at && exc_write(&b, start + shift, 1) == 0 && exc_write(&b, size, 0) == 0 &&
             exc_write(&b, target + shift, 0) == 0 && exc_write(&b, dl, 0) == 0;
    }
    PyObject *r = ok ? PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.n) : NULL;
    free(b.p);
    return r;
}

/* Where the prologue goes in raw code: right after RESUME (the frame is complete there), past
 * MAKE_CELL/COPY_FREE_VARS. -1 if the code does not start so. */
static Py_ssize_t prologue_at(const unsigned char *c, Py_ssize_t units)
{
    Py_ssize_t at = 0;
    while (at < units && (c[2 * at] == MAKE_CELL || c[2 * at] == COPY_FREE_VARS))
        at++;
    if (at >= units || c[2 * at] != RESUME || c[2 * at + 1] != 0)
        return -1;
    return at + 1;
}

/* A tuple's items plus two more. New reference. */
static PyObject *tuple_plus(PyObject *t, PyObject *a, PyObject *b)
{
    Py_ssize_t k = PyTuple_GET_SIZE(t);
    PyObject *r = PyTuple_New(k + 2);
    if (!r)
        return NULL;
    for (Py_ssize_t i = 0; i < k; i++)
        PyTuple_SET_ITEM(r, i, Py_NewRef(PyTuple_GET_ITEM(t, i)));
    PyTuple_SET_ITEM(r, k, Py_NewRef(a));
    PyTuple_SET_ITEM(r, k + 1, Py_NewRef(b));
    return r;
}

/* co.replace(**fields): a new code object, or NULL (no exception). */
static PyObject *code_replace(PyCodeObject *co, PyObject *kw)
{
    PyObject *replace = kw ? PyObject_GetAttrString((PyObject *)co, "replace") : NULL;
    PyObject *empty = replace ? PyTuple_New(0) : NULL;
    PyObject *res = empty ? PyObject_Call(replace, empty, kw) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(replace);
    if (res && !PyCode_Check(res))
        Py_CLEAR(res);
    PyErr_Clear();
    return res;
}

static PyObject *stripped_code(PyCodeObject *co);

/* A copy of code whose first instructions after RESUME raise the entry audit event; NULL (no
 * exception) for a shape it does not handle. */
static PyObject *hooked_code(PyCodeObject *co)
{
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return NULL; /* resumed after each yield, past a prologue */
    PyObject *again = stripped_code(co);
    if (again) { /* a copy the program made of a hooked one: the gate serves it */
        Py_DECREF(again);
        return NULL;
    }
    PyObject *raw = PyCode_GetCode(co);
    PyObject *consts = NULL, *names = NULL, *lines = NULL, *exc = NULL, *res = NULL;
    struct buf b = {0}, pro = {0};
    if (!raw || !PyBytes_Check(raw))
        goto out;
    const unsigned char *c = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t units = PyBytes_GET_SIZE(raw) / 2, at = prologue_at(c, units);
    if (at < 0)
        goto out;
    /* No jump reaches back before RESUME (the compiler starts the function's first block with
     * it), and every jump is relative: they all stay right. */
    if (prologue(&pro, PyTuple_GET_SIZE(co->co_consts), PyTuple_GET_SIZE(co->co_names)) < 0)
        goto out;
    int added = (int)(pro.n / 2);
    int ok = put(&b, c, (size_t)at * 2) == 0 && put(&b, pro.p, pro.n) == 0 &&
             put(&b, c + 2 * at, (size_t)(units - at) * 2) == 0;
    if (!ok)
        goto out;
    /* Location table: the prologue has no location (entries 11111lll), put where RESUME's
     * entry ends. */
    const unsigned char *lt = (const unsigned char *)PyBytes_AS_STRING(co->co_linetable);
    Py_ssize_t ln = PyBytes_GET_SIZE(co->co_linetable);
    Py_ssize_t cut = lines_split(lt, ln, (int)at);
    struct buf lb = {0};
    ok = cut >= 0 && put(&lb, lt, (size_t)cut) == 0;
    for (int left = added; ok && left > 0; left -= 8) {
        unsigned char e = (unsigned char)(0x80 | (15 << 3) | ((left > 8 ? 8 : left) - 1));
        ok = put(&lb, &e, 1) == 0;
    }
    ok = ok && put(&lb, lt + cut, (size_t)(ln - cut)) == 0;
    lines = ok ? PyBytes_FromStringAndSize((const char *)lb.p, (Py_ssize_t)lb.n) : NULL;
    free(lb.p);
    exc = lines ? exc_shift(co->co_exceptiontable, (int)at, added) : NULL;
    consts = exc ? tuple_plus(co->co_consts, k_sys, k_event) : NULL;
    names = consts ? tuple_plus(co->co_names, n_import, n_audit) : NULL;
    if (!names)
        goto out;
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.n);
    PyObject *stack = PyLong_FromLong(co->co_stacksize < 3 ? 3 : co->co_stacksize);
    PyObject *kw = bytes && stack ? Py_BuildValue("{sOsOsOsOsOsO}", "co_code", bytes, "co_consts",
                                                  consts, "co_names", names, "co_linetable", lines,
                                                  "co_exceptiontable", exc, "co_stacksize", stack)
                                  : NULL;
    res = code_replace(co, kw);
    Py_XDECREF(kw);
    Py_XDECREF(stack);
    Py_XDECREF(bytes);
    if (res && PySet_Add(hooked_files, co->co_filename) < 0)
        PyErr_Clear();
out:
    free(b.p);
    free(pro.p);
    Py_XDECREF(consts);
    Py_XDECREF(names);
    Py_XDECREF(lines);
    Py_XDECREF(exc);
    Py_XDECREF(raw);
    PyErr_Clear();
    return res;
}

static int is_str(PyObject *o, PyObject *want)
{
    return o == want || (PyUnicode_Check(o) && PyUnicode_Compare(o, want) == 0);
}

/* The code without our prologue, for a copy the program made of a hooked code object (say
 * `f.__code__ = f.__code__.replace(...)` while a breakpoint was set): a new reference, or NULL
 * (no exception) when co has no prologue of ours. */
static PyObject *stripped_code(PyCodeObject *co)
{
    Py_ssize_t nc = PyTuple_GET_SIZE(co->co_consts), nn = PyTuple_GET_SIZE(co->co_names);
    if (nc < 2 || nn < 2 || !is_str(PyTuple_GET_ITEM(co->co_consts, nc - 2), k_sys) ||
        !is_str(PyTuple_GET_ITEM(co->co_consts, nc - 1), k_event) ||
        !is_str(PyTuple_GET_ITEM(co->co_names, nn - 2), n_import) ||
        !is_str(PyTuple_GET_ITEM(co->co_names, nn - 1), n_audit))
        return NULL;
    PyObject *raw = PyCode_GetCode(co), *res = NULL;
    struct buf pro = {0};
    if (!raw || !PyBytes_Check(raw) || prologue(&pro, nc - 2, nn - 2) < 0)
        goto out;
    const unsigned char *c = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t units = PyBytes_GET_SIZE(raw) / 2, at = prologue_at(c, units);
    Py_ssize_t added = (Py_ssize_t)pro.n / 2;
    /* CACHE units read back as zeros from PyCode_GetCode: the bytes compare exactly. */
    if (at < 0 || units - at < added || memcmp(c + 2 * at, pro.p, pro.n) != 0)
        goto out;
    const unsigned char *lt = (const unsigned char *)PyBytes_AS_STRING(co->co_linetable);
    Py_ssize_t ln = PyBytes_GET_SIZE(co->co_linetable), cut = lines_split(lt, ln, (int)at);
    Py_ssize_t ents = (added + 7) / 8;
    if (cut < 0 || ln - cut < ents)
        goto out;
    for (Py_ssize_t i = 0; i < ents; i++)
        if ((lt[cut + i] & 0xf8) != 0xf8)
            goto out;
    struct buf cb = {0}, lb = {0};
    int ok = put(&cb, c, (size_t)at * 2) == 0 &&
             put(&cb, c + 2 * (at + added), (size_t)(units - at - added) * 2) == 0 &&
             put(&lb, lt, (size_t)cut) == 0 &&
             put(&lb, lt + cut + ents, (size_t)(ln - cut - ents)) == 0;
    PyObject *bytes = ok ? PyBytes_FromStringAndSize((const char *)cb.p, (Py_ssize_t)cb.n) : NULL;
    PyObject *lines =
        bytes ? PyBytes_FromStringAndSize((const char *)lb.p, (Py_ssize_t)lb.n) : NULL;
    free(cb.p);
    free(lb.p);
    PyObject *exc = lines ? exc_shift(co->co_exceptiontable, (int)(at + added), (int)-added) : NULL;
    PyObject *consts = exc ? PyTuple_GetSlice(co->co_consts, 0, nc - 2) : NULL;
    PyObject *names = consts ? PyTuple_GetSlice(co->co_names, 0, nn - 2) : NULL;
    PyObject *kw =
        names ? Py_BuildValue("{sOsOsOsOsO}", "co_code", bytes, "co_consts", consts, "co_names",
                              names, "co_linetable", lines, "co_exceptiontable", exc)
              : NULL;
    res = code_replace(co, kw);
    Py_XDECREF(kw);
    Py_XDECREF(names);
    Py_XDECREF(consts);
    Py_XDECREF(exc);
    Py_XDECREF(lines);
    Py_XDECREF(bytes);
out:
    free(pro.p);
    Py_XDECREF(raw);
    PyErr_Clear();
    return res;
}

/* ---- finding the functions ---- */

/* Adds the functions reachable from o (a module's value) to funcs: functions (with their
 * closure cells and __wrapped__), the methods, static and class methods and properties of
 * classes. Looks only at dicts and C-level fields: no code of the program runs. */
static void gather(PyObject *o, PyObject *funcs, int depth)
{
    if (!o || depth > 4 || Py_EnterRecursiveCall(""))
        return;
    if (PyFunction_Check(o)) {
        PyObject *key = PyLong_FromVoidPtr(o);
        int seen = !key || PyDict_Contains(funcs, key) != 0;
        if (!seen && PyDict_SetItem(funcs, key, o) == 0) {
            PyFunctionObject *f = (PyFunctionObject *)o;
            for (Py_ssize_t i = 0; f->func_closure && i < PyTuple_GET_SIZE(f->func_closure); i++)
                gather(PyCell_GET(PyTuple_GET_ITEM(f->func_closure, i)), funcs, depth + 1);
            if (f->func_dict)
                gather(PyDict_GetItemString(f->func_dict, "__wrapped__"), funcs, depth + 1);
        }
        Py_XDECREF(key);
    } else if (PyType_Check(o) && (((PyTypeObject *)o)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyObject *d = ((PyTypeObject *)o)->tp_dict, *k, *v;
        Py_ssize_t pos = 0;
        while (d && PyDict_Next(d, &pos, &k, &v))
            gather(v, funcs, depth + 1);
    } else if (Py_IS_TYPE(o, &PyStaticMethod_Type) || Py_IS_TYPE(o, &PyClassMethod_Type)) {
        PyObject *f = PyObject_GetAttrString(o, "__func__");
        gather(f, funcs, depth + 1);
        Py_XDECREF(f);
    } else if (Py_IS_TYPE(o, &PyProperty_Type)) {
        static const char *const parts[] = {"fget", "fset", "fdel"};
        for (int i = 0; i < 3; i++) {
            PyObject *f = PyObject_GetAttrString(o, parts[i]);
            gather(f, funcs, depth + 1);
            Py_XDECREF(f);
        }
    } else if (!PyModule_Check(o) && !(Py_TYPE(o)->tp_flags & Py_TPFLAGS_MANAGED_DICT)) {
        /* A C wrapper's __wrapped__ (lru_cache). Not instances of Python classes: asking for
         * their dict would make one from their inline values, changing the program's object. */
        PyObject **dp = _PyObject_GetDictPtr(o);
        if (dp && *dp && PyDict_Check(*dp))
            gather(PyDict_GetItemString(*dp, "__wrapped__"), funcs, depth + 1);
    }
    Py_LeaveRecursiveCall();
    PyErr_Clear();
}

/* The functions of the modules whose __file__ passes wanted: id -> function. New reference. */
static PyObject *module_functions(int (*wanted)(PyObject *file))
{
    PyObject *funcs = PyDict_New();
    PyObject *mods = PyImport_GetModuleDict(), *k, *m;
    Py_ssize_t pos = 0;
    while (funcs && mods && PyDict_Next(mods, &pos, &k, &m)) {
        PyObject *d = PyModule_Check(m) ? PyModule_GetDict(m) : NULL;
        PyObject *file = d ? PyDict_GetItemString(d, "__file__") : NULL;
        if (!file || !PyUnicode_Check(file) || !wanted(file))
            continue;
        PyObject *key, *v;
        Py_ssize_t p2 = 0;
        while (PyDict_Next(d, &p2, &key, &v))
            gather(v, funcs, 0);
    }
    PyErr_Clear();
    return funcs;
}

static int has_breakpoints(PyObject *file)
{
    const char *path = PyUnicode_AsUTF8(file);
    const char *base = path ? strrchr(path, '/') : NULL;
    return path && dbg_bp_file_named(base ? base + 1 : path);
}

/* The functions of the modules whose file has breakpoints. New reference. */
static PyObject *functions(void)
{
    return module_functions(has_breakpoints);
}

/* ---- accounting for every reference to a code object ---- */

static int backward_jump(int op)
{
    return op == JUMP_BACKWARD || op == JUMP_BACKWARD_NO_INTERRUPT ||
           op == POP_JUMP_BACKWARD_IF_NOT_NONE || op == POP_JUMP_BACKWARD_IF_NONE ||
           op == POP_JUMP_BACKWARD_IF_FALSE || op == POP_JUMP_BACKWARD_IF_TRUE;
}

/* Marks in loops[k] each code constant of p loaded inside a loop (a backward jump spans the
 * load). -1 if p's code cannot be read. */
static int consts_in_loops(PyCodeObject *p, char *loops, Py_ssize_t nconsts)
{
    PyObject *raw = PyCode_GetCode(p);
    if (!raw || !PyBytes_Check(raw)) {
        Py_XDECREF(raw);
        PyErr_Clear();
        return -1;
    }
    const unsigned char *c = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t units = PyBytes_GET_SIZE(raw) / 2, nspans = 0;
    Py_ssize_t(*spans)[2] = malloc(sizeof *spans * (size_t)(units + 1));
    long ext = 0;
    for (Py_ssize_t i = 0; spans && i < units; i++) { /* [target, jump] of each loop */
        long arg = ext | c[2 * i + 1];
        ext = c[2 * i] == EXTENDED_ARG ? arg << 8 : 0;
        if (backward_jump(c[2 * i])) {
            spans[nspans][0] = i + 1 - arg;
            spans[nspans++][1] = i;
        }
    }
    ext = 0;
    for (Py_ssize_t i = 0; spans && i < units; i++) {
        long arg = ext | c[2 * i + 1];
        ext = c[2 * i] == EXTENDED_ARG ? arg << 8 : 0;
        if (c[2 * i] != LOAD_CONST || arg >= nconsts ||
            !PyCode_Check(PyTuple_GET_ITEM(p->co_consts, arg)))
            continue;
        for (Py_ssize_t j = 0; j < nspans && !loops[arg]; j++)
            loops[arg] = (char)(spans[j][0] <= i && i <= spans[j][1]);
    }
    int rc = spans ? 0 : -1;
    free(spans);
    Py_DECREF(raw);
    return rc;
}

/* Module and class-body code: runs once per execution of what holds it. */
static int runs_once(PyCodeObject *p)
{
    return !(p->co_flags & (CO_NEWLOCALS | CO_OPTIMIZED));
}

static void add_count(PyObject *held, PyObject *o);

/* Counts into held (id(code) -> count) the references that constants of module and class
 * bodies reachable from p hold and that cannot make a function again: p runs once, and the
 * constant is loaded outside any loop. Each p once (seen). */
static void harmless_consts(PyCodeObject *p, PyObject *held, PyObject *seen, int depth)
{
    if (depth > 8 || !runs_once(p))
        return;
    PyObject *id = PyLong_FromVoidPtr(p);
    int again = !id || PySet_Contains(seen, id) != 0 || PySet_Add(seen, id) < 0;
    Py_XDECREF(id);
    Py_ssize_t n = PyTuple_GET_SIZE(p->co_consts);
    char *loops = again ? NULL : calloc((size_t)n + 1, 1);
    if (loops && consts_in_loops(p, loops, n) == 0)
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = PyTuple_GET_ITEM(p->co_consts, i);
            if (!PyCode_Check(c) || loops[i])
                continue;
            add_count(held, c);
            harmless_consts((PyCodeObject *)c, held, seen, depth + 1);
        }
    free(loops);
    PyErr_Clear();
}

static void add_count(PyObject *held, PyObject *o)
{
    PyObject *key = PyLong_FromVoidPtr(o);
    PyObject *n = key ? PyDict_GetItemWithError(held, key) : NULL;
    PyObject *m = PyLong_FromLong((n ? PyLong_AsLong(n) : 0) + 1);
    if (!m || PyDict_SetItem(held, key, m) < 0)
        PyErr_Clear();
    Py_XDECREF(m);
    Py_XDECREF(key);
}

static long count_of(PyObject *held, PyObject *o)
{
    PyObject *key = PyLong_FromVoidPtr(o);
    PyObject *n = key ? PyDict_GetItemWithError(held, key) : NULL;
    long r = n ? PyLong_AsLong(n) : 0;
    Py_XDECREF(key);
    PyErr_Clear();
    return r;
}

/* References we know of, by code object: frames running it (each holds its code) and the
 * harmless constants of running module bodies. New reference. */
static PyObject *known_holders(void)
{
    PyObject *held = PyDict_New(), *seen = PySet_New(NULL);
    PyInterpreterState *interp = PyInterpreterState_Main();
    int t = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); held && seen && ts && t < 4096;
         ts = PyThreadState_Next(ts), t++) {
        PyFrameObject *f = PyThreadState_GetFrame(ts);
        for (int n = 0; f && n < DBG_MAX_FRAMES; n++) {
            PyCodeObject *code = PyFrame_GetCode(f);
            add_count(held, (PyObject *)code);
            harmless_consts(code, held, seen, 0);
            Py_DECREF(code);
            PyFrameObject *b = PyFrame_GetBack(f);
            Py_DECREF(f);
            f = b;
        }
        Py_XDECREF(f);
    }
    Py_XDECREF(seen);
    PyErr_Clear();
    return held;
}

/* ---- swapping ---- */

static void set_code(PyFunctionObject *f, PyObject *code)
{
    Py_SETREF(f->func_code, Py_NewRef(code));
    f->func_version = 0; /* calls specialised for the old code look again */
}

/* Puts back every swapped function whose original code is not in keep (a dict id -> code, or
 * NULL for all); keeps the others in the list. */
static void restore(PyObject *keep)
{
    if (!swaps)
        return;
    PyObject *left = PyList_New(0);
    for (Py_ssize_t i = 0; left && i < PyList_GET_SIZE(swaps); i++) {
        PyObject *s = PyList_GET_ITEM(swaps, i);
        PyObject *f = PyWeakref_GetObject(PyTuple_GET_ITEM(s, 0));
        PyObject *orig = PyTuple_GET_ITEM(s, 1), *hooked = PyTuple_GET_ITEM(s, 2);
        PyObject *key = keep ? PyLong_FromVoidPtr(orig) : NULL;
        int kept = key && PyDict_GetItemWithError(keep, key) && f != Py_None;
        Py_XDECREF(key);
        if (kept) {
            if (PyList_Append(left, s) < 0)
                PyErr_Clear();
        } else if (f != Py_None && ((PyFunctionObject *)f)->func_code == hooked) {
            set_code((PyFunctionObject *)f, orig);
        }
    }
    Py_XSETREF(swaps, left);
    PyErr_Clear();
}

/* Original code objects of the swaps: id -> count of swaps holding it (they hold it). */
static PyObject *swapped_originals(void)
{
    PyObject *held = PyDict_New();
    for (Py_ssize_t i = 0; held && swaps && i < PyList_GET_SIZE(swaps); i++)
        add_count(held, PyTuple_GET_ITEM(PyList_GET_ITEM(swaps, i), 1));
    return held;
}

static PyObject *hooked_of(PyObject *orig)
{
    for (Py_ssize_t i = 0; swaps && i < PyList_GET_SIZE(swaps); i++) {
        PyObject *s = PyList_GET_ITEM(swaps, i);
        if (PyTuple_GET_ITEM(s, 1) == orig)
            return Py_NewRef(PyTuple_GET_ITEM(s, 2));
    }
    return hooked_code((PyCodeObject *)orig);
}

/* The original code of a function (itself when not swapped). Borrowed. */
static PyObject *original_of(PyFunctionObject *f)
{
    for (Py_ssize_t i = 0; swaps && i < PyList_GET_SIZE(swaps); i++) {
        PyObject *s = PyList_GET_ITEM(swaps, i);
        if (PyWeakref_GetObject(PyTuple_GET_ITEM(s, 0)) == (PyObject *)f &&
            f->func_code == PyTuple_GET_ITEM(s, 2))
            return PyTuple_GET_ITEM(s, 1);
    }
    return f->func_code;
}

/* Decides and applies: 1 if the entry hooks serve every breakpoint (the gate is not needed),
 * 0 if the gate must (every swap put back). */
static int plan(void)
{
    if (dbg_bp_functions_any())
        return 0;
    PyObject *funcs = functions();
    PyObject *targets = PyDict_New(); /* id(original code) -> [code, function...] */
    PyObject *codes = PyList_New(0);
    PyObject *held = known_holders(), *ours = swapped_originals();
    int ok = funcs && targets && codes && held && ours;
    PyObject *k, *fn;
    Py_ssize_t pos = 0;
    while (ok && PyDict_Next(funcs, &pos, &k, &fn)) {
        PyObject *code = original_of((PyFunctionObject *)fn);
        if (!dbg_bp_in_code((PyCodeObject *)code))
            continue;
        PyObject *key = PyLong_FromVoidPtr(code);
        PyObject *entry = key ? PyDict_GetItemWithError(targets, key) : NULL;
        if (!entry && key && !PyErr_Occurred()) {
            entry = PyList_New(0);
            ok = entry && PyList_Append(entry, code) == 0 &&
                 PyDict_SetItem(targets, key, entry) == 0 && PyList_Append(codes, code) == 0;
            Py_XDECREF(entry);
        }
        ok = ok && entry && PyList_Append(entry, fn) == 0;
        Py_XDECREF(key);
    }
    ok = ok && dbg_bp_lines_within(codes);
    /* Every reference to each code object must be one we know: its functions found (those
     * swapped hold the hooked copy, the swap list the original), running frames, module and
     * class bodies that cannot run its `def` again, the breakpoints' cache, our two lists. */
    pos = 0;
    PyObject *entry;
    while (ok && PyDict_Next(targets, &pos, &k, &entry)) {
        PyObject *code = PyList_GET_ITEM(entry, 0);
        long fns = 0;
        for (Py_ssize_t i = 1; i < PyList_GET_SIZE(entry); i++)
            fns += ((PyFunctionObject *)PyList_GET_ITEM(entry, i))->func_code == code;
        long known = fns + count_of(held, code) + count_of(ours, code) +
                     dbg_bp_code_cached((PyCodeObject *)code) + 2 /* entry, codes */;
        ok = Py_REFCNT(code) == known;
    }
    /* Swap: hooked copies made first, so that a shape not handled changes nothing. */
    PyObject *made = ok ? PyDict_New() : NULL;
    pos = 0;
    while (made && ok && PyDict_Next(targets, &pos, &k, &entry)) {
        PyObject *h = hooked_of(PyList_GET_ITEM(entry, 0));
        ok = h && PyDict_SetItem(made, k, h) == 0;
        Py_XDECREF(h);
    }
    if (ok && made) {
        restore(targets);
        if (!swaps)
            swaps = PyList_New(0);
        pos = 0;
        while (swaps && PyDict_Next(targets, &pos, &k, &entry)) {
            PyObject *code = PyList_GET_ITEM(entry, 0), *h = PyDict_GetItem(made, k);
            for (Py_ssize_t i = 1; i < PyList_GET_SIZE(entry); i++) {
                PyFunctionObject *f = (PyFunctionObject *)PyList_GET_ITEM(entry, i);
                if (f->func_code != code)
                    continue; /* swapped already */
                PyObject *ref = PyWeakref_NewRef((PyObject *)f, NULL);
                PyObject *s = ref ? PyTuple_Pack(3, ref, code, h) : NULL;
                if (s && PyList_Append(swaps, s) == 0)
                    set_code(f, h);
                Py_XDECREF(s);
                Py_XDECREF(ref);
            }
        }
    } else {
        restore(NULL);
        ok = 0;
    }
    Py_XDECREF(made);
    Py_XDECREF(ours);
    Py_XDECREF(held);
    Py_XDECREF(codes);
    Py_XDECREF(targets);
    Py_XDECREF(funcs);
    PyErr_Clear();
    return ok;
}

static int was_hooked(PyObject *file)
{
    return PySet_Contains(hooked_files, file) == 1;
}

/* After every swap is put back: functions of the files ever hooked whose code still has our
 * prologue (a copy the program made of a hooked code object while it was in place: replace(),
 * an assignment to another function's __code__) get it without. The number fixed. */
static int strip_derived(void)
{
    if (!hooked_files || PySet_GET_SIZE(hooked_files) == 0)
        return 0;
    int fixed = 0;
    PyObject *funcs = module_functions(was_hooked), *k, *fn;
    Py_ssize_t pos = 0;
    while (funcs && PyDict_Next(funcs, &pos, &k, &fn)) {
        PyObject *clean = stripped_code((PyCodeObject *)((PyFunctionObject *)fn)->func_code);
        if (clean) {
            set_code((PyFunctionObject *)fn, clean);
            fixed++;
            Py_DECREF(clean);
        }
    }
    Py_XDECREF(funcs);
    PyErr_Clear();
    return fixed;
}

int dbg_entry_update(void)
{
    if (!hook_ready())
        return 0;
    if (!core_setting_int("debugger.entry_hooks")) {
        dbg_entry_remove();
        return 0;
    }
    int gc = PyGC_Disable(); /* no finalizer (program code) runs while we walk */
    int served = plan();
    if (gc)
        PyGC_Enable();
    hooks_on = served && swaps && PyList_GET_SIZE(swaps) > 0;
    return served;
}

void dbg_entry_remove(void)
{
    hooks_on = 0;
    restore(NULL);
    if (k_sys) {
        int gc = PyGC_Disable();
        int fixed = strip_derived();
        if (gc)
            PyGC_Enable();
        if (fixed)
            PB_LOG(PB_LOG_INFO,
                   "entry hooks: %d copies of hooked code made by the program put "
                   "back without the hook",
                   fixed);
    }
}

int dbg_entry_count(void)
{
    return swaps ? (int)PyList_GET_SIZE(swaps) : 0;
}

#else

int dbg_entry_update(void)
{
    return 0;
}

void dbg_entry_remove(void)
{
}

int dbg_entry_count(void)
{
    return 0;
}

#endif
