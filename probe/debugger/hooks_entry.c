/* SPDX-License-Identifier: MIT */
/* Entry hooks: line breakpoints on CPython 3.11 without a frame-evaluation function.
 *
 * Why: with any PEP 523 function set, 3.11 stops running Python-to-Python calls inline, which
 * costs every call of the program about 15-20% (tests/bench/bench_gate.py), breakpoints hit or
 * not. Instead, each function whose code holds a breakpoint gets a copy of its code with a
 * prologue: right after RESUME, `PUSH_NULL; LOAD_CONST <hook>; PRECALL 0; CALL 0; POP_TOP`
 * calls a C function of ours (dbg_trace_entered: trace this thread while the frame runs, as the
 * gate does). No other code changes, so the rest of the program runs at full speed.
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
static PyObject *hook_fn;

static PyObject *entry_hook(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (hooks_on)
        dbg_trace_entered();
    Py_RETURN_NONE;
}

static PyMethodDef hook_def = {"probing_entry", entry_hook, METH_NOARGS, NULL};

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
             target >= at && exc_write(&b, start + shift, 1) == 0 &&
             exc_write(&b, size, 0) == 0 && exc_write(&b, target + shift, 0) == 0 &&
             exc_write(&b, dl, 0) == 0;
    }
    PyObject *r = ok ? PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.n) : NULL;
    free(b.p);
    return r;
}

/* A copy of code whose first instructions after RESUME call the hook; NULL (no exception) for
 * a shape it does not handle. */
static PyObject *hooked_code(PyCodeObject *co)
{
    if (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE))
        return NULL; /* resumed after each yield, past a prologue */
    PyObject *raw = PyCode_GetCode(co);
    PyObject *consts = NULL, *lines = NULL, *exc = NULL, *res = NULL;
    struct buf b = {0};
    if (!raw || !PyBytes_Check(raw))
        goto out;
    const unsigned char *c = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t units = PyBytes_GET_SIZE(raw) / 2, at = 0;
    while (at < units && (c[2 * at] == MAKE_CELL || c[2 * at] == COPY_FREE_VARS))
        at++;
    if (at >= units || c[2 * at] != RESUME || c[2 * at + 1] != 0)
        goto out;
    at++; /* the prologue goes right after RESUME: the frame is complete there */
    Py_ssize_t k = PyTuple_GET_SIZE(co->co_consts);
    if (k > 0xffff)
        goto out;
    /* The prologue's code units. No jump reaches back before RESUME (the compiler starts the
     * function's first block with it), and every jump is relative: they all stay right. */
    struct buf pro = {0};
    int ok = put_unit(&pro, PUSH_NULL, 0) == 0 &&
             (k < 256 || put_unit(&pro, EXTENDED_ARG, (int)(k >> 8)) == 0) &&
             put_unit(&pro, LOAD_CONST, (int)(k & 255)) == 0 && put_unit(&pro, PRECALL, 0) == 0;
    for (size_t i = 0; ok && i < INLINE_CACHE_ENTRIES_PRECALL; i++)
        ok = put_unit(&pro, CACHE, 0) == 0;
    ok = ok && put_unit(&pro, CALL, 0) == 0;
    for (size_t i = 0; ok && i < INLINE_CACHE_ENTRIES_CALL; i++)
        ok = put_unit(&pro, CACHE, 0) == 0;
    ok = ok && put_unit(&pro, POP_TOP, 0) == 0;
    int added = (int)(pro.n / 2);
    ok = ok && put(&b, c, (size_t)at * 2) == 0 && put(&b, pro.p, pro.n) == 0 &&
         put(&b, c + 2 * at, (size_t)(units - at) * 2) == 0;
    free(pro.p);
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
    consts = exc ? PyTuple_New(k + 1) : NULL;
    if (!consts)
        goto out;
    for (Py_ssize_t i = 0; i < k; i++)
        PyTuple_SET_ITEM(consts, i, Py_NewRef(PyTuple_GET_ITEM(co->co_consts, i)));
    PyTuple_SET_ITEM(consts, k, Py_NewRef(hook_fn));
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)b.p, (Py_ssize_t)b.n);
    PyObject *stack = PyLong_FromLong(co->co_stacksize < 2 ? 2 : co->co_stacksize);
    PyObject *kw = bytes && stack ? Py_BuildValue("{sOsOsOsOsO}", "co_code", bytes, "co_consts",
                                                  consts, "co_linetable", lines,
                                                  "co_exceptiontable", exc, "co_stacksize", stack)
                                  : NULL;
    PyObject *replace = kw ? PyObject_GetAttrString((PyObject *)co, "replace") : NULL;
    PyObject *empty = replace ? PyTuple_New(0) : NULL;
    res = empty ? PyObject_Call(replace, empty, kw) : NULL;
    Py_XDECREF(empty);
    Py_XDECREF(replace);
    Py_XDECREF(kw);
    Py_XDECREF(stack);
    Py_XDECREF(bytes);
    if (res && !PyCode_Check(res))
        Py_CLEAR(res);
out:
    free(b.p);
    Py_XDECREF(consts);
    Py_XDECREF(lines);
    Py_XDECREF(exc);
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

/* The functions of the modules whose file has breakpoints: id -> function. New reference. */
static PyObject *functions(void)
{
    PyObject *funcs = PyDict_New();
    PyObject *mods = PyImport_GetModuleDict(), *k, *m;
    Py_ssize_t pos = 0;
    while (funcs && mods && PyDict_Next(mods, &pos, &k, &m)) {
        PyObject *d = PyModule_Check(m) ? PyModule_GetDict(m) : NULL;
        PyObject *file = d ? PyDict_GetItemString(d, "__file__") : NULL;
        const char *path = file && PyUnicode_Check(file) ? PyUnicode_AsUTF8(file) : NULL;
        const char *base = path ? strrchr(path, '/') : NULL;
        if (!path || !dbg_bp_file_named(base ? base + 1 : path))
            continue;
        PyObject *key, *v;
        Py_ssize_t p2 = 0;
        while (PyDict_Next(d, &p2, &key, &v))
            gather(v, funcs, 0);
    }
    PyErr_Clear();
    return funcs;
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
        if (c[2 * i] != LOAD_CONST || arg >= nconsts || !PyCode_Check(PyTuple_GET_ITEM(p->co_consts, arg)))
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

int dbg_entry_update(void)
{
    if (!hook_fn && !(hook_fn = PyCFunction_New(&hook_def, NULL))) {
        PyErr_Clear();
        return 0;
    }
    if (!probe_setting_int("debugger.entry_hooks")) {
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
