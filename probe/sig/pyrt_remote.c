/* SPDX-License-Identifier: MIT */
/* The out-of-process reader (`debug --dump --no-inject`; not signal context, beside pyrt_sig.c whose
 * walk it reuses): the probe's own frame walker
 * (pyrt/frames.c, pyrt/lines.c, and pyrt_sig.c's thread list and descriptions) built a second time
 * per CPython minor with PYRT_REMOTE into libprobing-read-3.X.so, which the CLI dlopens: every
 * read goes through the CLI's read (process_vm_readv on a live target, or a core file's
 * segments; pyrt/read.c calls pyrt_remote_read) and the
 * interpreter's globals are the target's (pyrt_remote, from its ELF symbols). Nothing is
 * loaded into the target. In the probe itself this file is empty. */
#ifdef PYRT_REMOTE
#include "pyrt/atasks_json.h"
#include "pyrt/internal.h"
#include "pyrt_sig.h"
#include "unwind.h"

#if PY_VERSION_HEX >= 0x030B0000
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "pycore_dict.h"
#pragma GCC diagnostic pop
#endif

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

struct pyrt_remote_syms pyrt_remote;
pyrt_read_fn pyrt_remote_read;

#define REMOTE_THREADS 1024

/* One frame: its function, file and line, and on 3.11+ the instruction's source range from the
 * code object's location table (co_positions), as the probe's dump gives it: column, endLine,
 * endColumn, 1-based, the end exclusive, only when the table has a whole range. c: a buffer
 * for the code object's description (about 5 KiB, kept off the stack). */
static cJSON *frame_json(const struct pyrt_sig_frame *f, struct pyrt_sig_code *c)
{
    char func[256], file[1024];
    int line = -1;
    cJSON *o = cJSON_CreateObject();
    sig_pyrt_describe(f, func, sizeof func, file, sizeof file, &line);
    cJSON_AddStringToObject(o, "name", func);
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddNumberToObject(o, "line", line);
    struct pyrt_loc loc;
    if (c && line > 0 && sig_pyrt_code_get(f->code, c) == 0 && c->tn &&
        pyrt_code_loc(c->table, c->tn, c->firstlineno, f->lasti, &loc) == line && loc.col >= 0 &&
        loc.end_line >= loc.line && loc.end_col >= 0) {
        cJSON_AddNumberToObject(o, "column", loc.col + 1);
        cJSON_AddNumberToObject(o, "endLine", loc.end_line);
        cJSON_AddNumberToObject(o, "endColumn", loc.end_col + 1);
    }
    cJSON_AddBoolToObject(o, "entry", f->entry); /* for merging with native frames */
    return o;
}

/* ---- threading's names (issue 36 item 7): threading._active, a dict ident -> Thread, read
 * from sys.modules through raw, bounded, fault-proof reads (no GIL, no CPython call): every
 * count is capped, every pointer read through pyrt_read; anything unexpected gives up and
 * the thread keeps the kernel's name. ---- */
#define NAMES_MAX 1024      /* threads named */
#define DICT_SCAN_MAX 65536 /* entries of one dict looked at */

#if PY_VERSION_HEX < 0x030B0000
struct keys_310 { /* Objects/dict-common.h of 3.8-3.10 (not installed) */
    Py_ssize_t dk_refcnt, dk_size;
    void *dk_lookup;
    Py_ssize_t dk_usable, dk_nentries;
};
#endif

/* A dict's entries: keys object, values array (split table) or 0. */
struct dscan {
    uintptr_t entries, values;
    size_t n, width; /* width: bytes of one entry; key at 0 or 8, value after it */
    size_t keyoff;
};

static int dscan_init(uintptr_t keys, uintptr_t values, struct dscan *d)
{
#if PY_VERSION_HEX < 0x030B0000
    struct keys_310 k;
    if (!keys || pyrt_read(keys, &k, sizeof k) != 0 || k.dk_size <= 0 || k.dk_size > (1 << 24) ||
        k.dk_nentries < 0 || k.dk_nentries > k.dk_size)
        return -1;
    size_t ix = k.dk_size <= 0xff ? 1 : k.dk_size <= 0xffff ? 2 : 4;
    d->entries = keys + sizeof k + ix * (size_t)k.dk_size;
    d->n = (size_t)k.dk_nentries;
    d->width = 24;
    d->keyoff = 8;
#else
    PyDictKeysObject k;
    if (!keys || pyrt_read(keys, &k, sizeof k) != 0 || k.dk_log2_index_bytes > 27 ||
        k.dk_nentries < 0 || k.dk_nentries > ((Py_ssize_t)1 << 24))
        return -1;
    d->entries =
        keys + offsetof(PyDictKeysObject, dk_indices) + ((size_t)1 << k.dk_log2_index_bytes);
    d->n = (size_t)k.dk_nentries;
    d->width = k.dk_kind == DICT_KEYS_GENERAL ? 24 : 16;
    d->keyoff = k.dk_kind == DICT_KEYS_GENERAL ? 8 : 0;
#endif
    d->values = values;
    if (d->n > DICT_SCAN_MAX)
        d->n = DICT_SCAN_MAX;
    return 0;
}

/* Entry i's key and value (0 when empty or unreadable). */
static void dscan_at(const struct dscan *d, size_t i, uintptr_t *key, uintptr_t *value)
{
    uintptr_t e[3] = {0, 0, 0};
    *key = *value = 0;
    if (pyrt_read(d->entries + i * d->width, e, d->width) != 0)
        return;
    *key = e[d->keyoff / 8];
    *value = e[d->keyoff / 8 + 1];
    if (d->values && pyrt_read(d->values + i * sizeof(uintptr_t), value, sizeof *value) != 0)
        *value = 0;
}

/* A dict object's entries (its own keys, and values when split). */
static int dscan_dict(uintptr_t dict, struct dscan *d)
{
    PyDictObject o;
    if (!dict || pyrt_read(dict, &o, sizeof o) != 0)
        return -1;
    uintptr_t values = (uintptr_t)o.ma_values;
#if PY_VERSION_HEX >= 0x030B0000
    if (values)
        values += offsetof(PyDictValues, values);
#endif
    return dscan_init((uintptr_t)o.ma_keys, values, d);
}

/* Is obj a str equal to the ASCII want? */
static int str_is(uintptr_t obj, const char *want)
{
    char buf[64];
    return obj && sig_pyrt_str(obj, buf, sizeof buf) == 0 && strcmp(buf, want) == 0;
}

static uintptr_t dict_get(uintptr_t dict, const char *key)
{
    struct dscan d;
    uintptr_t k, v;
    if (dscan_dict(dict, &d) != 0)
        return 0;
    for (size_t i = 0; i < d.n; i++) {
        dscan_at(&d, i, &k, &v);
        if (v && str_is(k, key))
            return v;
    }
    return 0;
}

/* An int's value as unsigned long (up to three 30-bit digits), 0 or -1. */
static int long_get(uintptr_t obj, unsigned long *out)
{
    unsigned char b[64];
    uint32_t dg[3];
    size_t nd;
    int neg;
    if (pyrt_read(obj, b, 40) != 0)
        return -1;
#if PY_VERSION_HEX >= 0x030C0000
    uintptr_t tag;
    memcpy(&tag, b + sizeof(PyObject), sizeof tag);
    nd = tag >> 3;
    neg = (tag & 3) == 2;
    memcpy(dg, b + sizeof(PyObject) + 8, sizeof dg);
#else
    Py_ssize_t size;
    memcpy(&size, b + offsetof(PyVarObject, ob_size), sizeof size);
    neg = size < 0;
    nd = (size_t)(size < 0 ? -size : size);
    memcpy(dg, b + sizeof(PyVarObject), sizeof dg);
#endif
    if (neg || nd > 3)
        return -1;
    unsigned long v = 0;
    for (size_t i = nd; i-- > 0;)
        v = (v << 30) | (dg[i] & 0x3fffffff);
    *out = v;
    return 0;
}

/* The entries of an instance's attribute dict. */
static int dscan_instance(uintptr_t obj, struct dscan *d)
{
    uintptr_t type;
    if (pyrt_read(obj + offsetof(PyObject, ob_type), &type, sizeof type) != 0 || !type)
        return -1;
#if PY_VERSION_HEX < 0x030B0000
    Py_ssize_t off;
    uintptr_t dict;
    if (pyrt_read(type + offsetof(PyTypeObject, tp_dictoffset), &off, sizeof off) != 0 ||
        off <= 0 || off > 4096 || pyrt_read(obj + (uintptr_t)off, &dict, sizeof dict) != 0)
        return -1;
    return dscan_dict(dict, d);
#else
    uintptr_t w[2], keys; /* the two words before the object's GC header: values, dict */
    if (pyrt_read(obj - 4 * sizeof(uintptr_t), w, sizeof w) != 0)
        return -1;
    if (pyrt_read(type + offsetof(PyHeapTypeObject, ht_cached_keys), &keys, sizeof keys) != 0)
        keys = 0;
#if PY_VERSION_HEX < 0x030C0000
    if (w[1])
        return dscan_dict(w[1], d);
    return w[0] ? dscan_init(keys, w[0] + offsetof(PyDictValues, values), d) : -1;
#elif PY_VERSION_HEX < 0x030D0000
    if (w[1] & 1) /* _PyDictOrValues: values, tagged */
        return dscan_init(keys, w[1] + 1 + offsetof(PyDictValues, values), d);
    return dscan_dict(w[1], d);
#else
    Py_ssize_t basic;
    PyDictValues vh;
    if (w[1])
        return dscan_dict(w[1], d);
    if (pyrt_read(type + offsetof(PyTypeObject, tp_basicsize), &basic, sizeof basic) != 0 ||
        basic <= 0 || basic > 4096 ||
        pyrt_read(obj + (uintptr_t)basic, &vh, offsetof(PyDictValues, values)) != 0 || !vh.valid)
        return -1;
    return dscan_init(keys, obj + (uintptr_t)basic + offsetof(PyDictValues, values), d);
#endif
#endif
}

struct tname {
    unsigned long ident;
    char name[128];
};

/* threading's names of up to max threads: the count found, 0 when none can be read. */
static int thread_names(uintptr_t interp, struct tname *out, int max)
{
    uintptr_t modules = 0, mod, mdict, active;
#if PY_VERSION_HEX >= 0x030C0000
    pyrt_read(interp + offsetof(PyInterpreterState, imports.modules), &modules, sizeof modules);
#else
    pyrt_read(interp + offsetof(PyInterpreterState, modules), &modules, sizeof modules);
#endif
    if (!(mod = dict_get(modules, "threading")) ||
        pyrt_read(mod + sizeof(PyObject), &mdict, sizeof mdict) != 0 || /* md_dict */
        !(active = dict_get(mdict, "_active")))
        return 0;
    struct dscan d;
    int n = 0;
    if (dscan_dict(active, &d) != 0)
        return 0;
    for (size_t i = 0; i < d.n && n < max; i++) {
        uintptr_t k, v, nm;
        struct dscan a;
        dscan_at(&d, i, &k, &v);
        if (!k || !v || long_get(k, &out[n].ident) != 0 || dscan_instance(v, &a) != 0)
            continue;
        for (size_t j = 0; j < a.n && j < 256; j++) {
            uintptr_t ak;
            dscan_at(&a, j, &ak, &nm);
            if (nm && str_is(ak, "_name") &&
                sig_pyrt_str(nm, out[n].name, sizeof out[n].name) == 0) {
                n++;
                break;
            }
        }
    }
    return n;
}

static void local_json(void *arg, const char *name, const char *type, const char *value)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "name", name);
    cJSON_AddStringToObject(l, "type", type);
    cJSON_AddStringToObject(l, "value", value);
    cJSON_AddItemToArray(arg, l);
}

/* The target's globals (syms, in the order of probing_read_dump_v2's) into pyrt_remote. */
static void syms_set(const uintptr_t *syms, int nsyms)
{
    uintptr_t s[17] = {0};
    for (int i = 0; i < nsyms && i < 17; i++)
        s[i] = syms[i];
    pyrt_remote = (struct pyrt_remote_syms){.runtime = s[0],
                                            .code_type = s[1],
                                            .frame_type = s[2],
                                            .unicode_type = s[3],
                                            .bytes_type = s[4],
                                            .long_type = s[5],
                                            .bool_type = s[6],
                                            .float_type = s[7],
                                            .tuple_type = s[8],
                                            .list_type = s[9],
                                            .dict_type = s[10],
                                            .cell_type = s[11],
                                            .none = s[12],
                                            .coro_type = s[13],
                                            .gen_type = s[14],
                                            .asyncgen_type = s[15],
                                            .set_type = s[16]};
}

/* The reader's first entry point. rd: reads the target's memory (0, or -1; it must never fault).
 * syms (nsyms of them): the target's _PyRuntime, PyCode_Type, PyFrame_Type, PyUnicode_Type,
 * PyBytes_Type, then for locals PyLong_Type, PyBool_Type, PyFloat_Type, PyTuple_Type,
 * PyList_Type, PyDict_Type, PyCell_Type, _Py_NoneStruct, then for tasks PyCoro_Type,
 * PyGen_Type, PyAsyncGen_Type, PySet_Type (runtime addresses, 0: not found);
 * pid goes into the body as is. locals: each frame's locals read from memory (memlocals.c).
 * Returns the probing/dump body (threads with id, ident, nativeId (null before 3.11: the
 * caller finds it), holdsGil, main, truncated, frames; gil; localsVia "memory" with locals) as
 * a malloc'd JSON text, or NULL with err filled. */
__attribute__((visibility("default"))) char *probing_read_dump_v2(pyrt_read_fn rd, int pid,
                                                                  const uintptr_t *syms, int nsyms,
                                                                  int max_frames, int locals,
                                                                  char *err, size_t errn);
char *probing_read_dump_v2(pyrt_read_fn rd, int pid, const uintptr_t *syms, int nsyms,
                           int max_frames, int locals, char *err, size_t errn)
{
    uintptr_t interp, head, holder = 0, *ts = NULL, main_ident = 0;
    long *ids = NULL;
    long long *interps = NULL;
    struct pyrt_sig_frame *fr = NULL;
    struct pyrt_frame_ext *ext = NULL;
    int locked = 0, n, rc;
    char *text = NULL;
    cJSON *body = NULL;
    pyrt_remote_read = rd;
    syms_set(syms, nsyms);
    if (max_frames < 1)
        max_frames = 1;
    if ((rc = pyrt_threads_head(&interp, &head, pyrt_read)) != 0) {
        snprintf(err, errn,
                 rc == -1 ? "the interpreter of %d is not initialised, or its memory "
                            "cannot be read (process_vm_readv)"
                          : "the interpreter state of %d cannot be read",
                 pid);
        return NULL;
    }
    ts = calloc(REMOTE_THREADS, sizeof *ts);
    ids = calloc(REMOTE_THREADS, sizeof *ids);
    interps = calloc(REMOTE_THREADS, sizeof *interps);
    fr = calloc((size_t)max_frames, sizeof *fr);
    ext = calloc((size_t)max_frames, sizeof *ext);
    body = cJSON_CreateObject();
    if (!ts || !ids || !interps || !fr || !ext || !body) {
        snprintf(err, errn, "out of memory");
        goto out;
    }
    pyrt_gil_read(interp, &locked, &holder, pyrt_read);
    pyrt_read((uintptr_t)&PYRT_RUNTIME->main_thread, &main_ident, sizeof main_ident);
    n = sig_pyrt_threads(ts, ids, interps, REMOTE_THREADS);
    cJSON_AddNumberToObject(body, "pid", pid);
    cJSON *gil = cJSON_AddObjectToObject(body, "gil");
    cJSON_AddNullToObject(gil, "holder"); /* the caller sets it from holdsGil */
    cJSON_AddBoolToObject(gil, "available", 0);
    int gc = pyrt_gc_collecting(interp, pyrt_read);
    if (gc >= 0)
        cJSON_AddBoolToObject(body, "gcCollecting", gc);
    else
        cJSON_AddNullToObject(body, "gcCollecting");
    if (locals)
        cJSON_AddStringToObject(body, "localsVia", "memory");
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    struct tname *names = calloc(NAMES_MAX, sizeof *names);
    struct pyrt_sig_code *code = malloc(sizeof *code);
    int nnames = names ? thread_names(interp, names, NAMES_MAX) : 0;
    for (int i = 0; i < n; i++) {
        struct pyrt_tstate t;
        if (pyrt_tstate_read(ts[i], &t, pyrt_read) != 0)
            continue;
        cJSON *o = cJSON_CreateObject();
        /* as pyrt_thread_id (pyrt.h) gives it */
        cJSON_AddNumberToObject(o, "id",
                                (double)(ids[i] > 0 ? ids[i] : (long)(t.ident & 0x7fffffff)) +
                                    (double)interps[i] * 4194304.0);
        cJSON_AddNumberToObject(o, "ident", (double)t.ident);
        if (ids[i] > 0)
            cJSON_AddNumberToObject(o, "nativeId", (double)ids[i]);
        else
            cJSON_AddNullToObject(o, "nativeId");
        cJSON_AddBoolToObject(o, "holdsGil", locked && holder == ts[i]);
        cJSON_AddBoolToObject(o, "main", t.ident == main_ident && interps[i] == 0);
        cJSON_AddNumberToObject(o, "interpreter", (double)interps[i]);
        for (int k = 0; k < nnames; k++)
            if (names[k].ident == (unsigned long)t.ident) {
                cJSON_AddStringToObject(o, "name", names[k].name);
                cJSON_AddStringToObject(o, "nameSource", "threading");
                break;
            }
        struct pyrt_walk w = {
            .rd = pyrt_read, .flags = PYRT_WALK_CHECK, .max = max_frames, .out = fr, .ext = ext};
        int nf = pyrt_frames_walk(&w, pyrt_frames_top(ts[i], pyrt_read));
        cJSON_AddBoolToObject(o, "truncated", nf == max_frames);
        cJSON *fa = cJSON_AddArrayToObject(o, "frames");
        for (int k = 0; k < nf; k++) {
            cJSON *f = frame_json(&fr[k], code), *ls = cJSON_CreateArray();
            if (locals && pyrt_mem_locals(ext[k].frame, fr[k].code, pyrt_read, local_json, ls) >= 0)
                cJSON_AddItemToObject(f, "locals", ls);
            else
                cJSON_Delete(ls);
            cJSON_AddItemToArray(fa, f);
        }
        cJSON_AddItemToArray(arr, o);
    }
    free(names);
    free(code);
    text = cJSON_PrintUnformatted(body);
    if (!text)
        snprintf(err, errn, "out of memory");
out:
    cJSON_Delete(body);
    free(ext);
    free(fr);
    free(interps);
    free(ids);
    free(ts);
    return text;
}
/* A code object for asyncio_mem.c (struct pyrt_asyncio_mem_remote). */
static int code_for_tasks(uintptr_t code, char **func, char **file, unsigned char **table,
                          size_t *tablen, int *firstlineno)
{
    struct pyrt_sig_code *c = malloc(sizeof *c);
    int rc = -1;
    if (c && sig_pyrt_code_get(code, c) == 0 && (*func = strdup(c->func)) &&
        (*file = strdup(c->file))) {
        *tablen = c->tn;
        *table = c->tn ? malloc(c->tn) : NULL;
        if (*table)
            memcpy(*table, c->table, c->tn);
        else
            *tablen = 0;
        *firstlineno = c->firstlineno;
        rc = 0;
    }
    free(c);
    return rc;
}

/* The third entry point: the asyncio tasks of CPython 3.14+ read from memory as the probe reads
 * them without the GIL (pyrt/asyncio_mem.c): rd and syms as for probing_read_dump_v2; offs (noffs
 * of them): the 13 offsets of the _asyncio module's ".AsyncioDebug" section, read by the caller
 * from the target's file. Returns the probing/dump "asyncio" object (pyrt/atasks_json.c, "via":
 * "memory") as a malloc'd JSON text, or NULL with err filled. */
__attribute__((visibility("default"))) char *probing_read_tasks(pyrt_read_fn rd,
                                                                const uintptr_t *syms, int nsyms,
                                                                const uint64_t *offs, int noffs,
                                                                char *err, size_t errn);
char *probing_read_tasks(pyrt_read_fn rd, const uintptr_t *syms, int nsyms, const uint64_t *offs,
                         int noffs, char *err, size_t errn)
{
    struct probe_atasks a;
    struct pb_err e = {0};
    pyrt_remote_read = rd;
    syms_set(syms, nsyms);
    struct pyrt_asyncio_mem_remote r = {
        .offs = offs, .noffs = noffs, .str = sig_pyrt_str, .code = code_for_tasks};
    if (PY_VERSION_HEX >= 0x030E0000 && pyrt_asyncio_mem_remote_set(&r) < 0) {
        snprintf(err, errn, "the _asyncio module's .AsyncioDebug offsets are implausible");
        return NULL;
    }
    if (pyrt_asyncio_tasks_mem(&a, &e) < 0) {
        snprintf(err, errn, "%s", e.msg);
        return NULL;
    }
    cJSON *o = pyrt_atasks_json(&a);
    pyrt_atasks_free(&a);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        snprintf(err, errn, "out of memory");
    return text;
}

/* A module of the target for the unwinder: its executable range and where its ELF header is. */
struct probing_read_mod {
    uintptr_t lo, hi, base;
};
struct mods {
    const struct probing_read_mod *v;
    int n;
};

static int mods_find(uintptr_t pc, struct unwind_mod *m, void *arg)
{
    const struct mods *ms = arg;
    for (int i = 0; i < ms->n; i++)
        if (pc >= ms->v[i].lo && pc < ms->v[i].hi)
            return sig_unwind_mod_from_image(ms->v[i].base, m, NULL) == 0 && pc >= m->lo &&
                           pc < m->hi
                       ? 0
                       : -1;
    return -1;
}

/* The second entry point: a thread's native stack from its registers (pc, sp, frame pointer)
 * with the probe's own unwinder over the target's memory (rd) and modules. Returns the count of
 * pcs in out (innermost first, the first exact), or -1 when out of memory. */
__attribute__((visibility("default"))) int probing_read_unwind(pyrt_read_fn rd,
                                                               const uintptr_t regs[3],
                                                               const struct probing_read_mod *mods,
                                                               int nmods, uintptr_t *out, int max);
int probing_read_unwind(pyrt_read_fn rd, const uintptr_t regs[3],
                        const struct probing_read_mod *mods, int nmods, uintptr_t *out, int max)
{
    ucontext_t uc;
    struct mods ms = {mods, nmods};
    struct unwind_cache *cache = calloc(1, sizeof *cache);
    if (!cache)
        return -1;
    pyrt_remote_read = rd;
    memset(&uc, 0, sizeof uc);
#if defined(__x86_64__)
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)regs[0];
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)regs[1];
    uc.uc_mcontext.gregs[REG_RBP] = (greg_t)regs[2];
#elif defined(__aarch64__)
    uc.uc_mcontext.pc = regs[0];
    uc.uc_mcontext.sp = regs[1];
    uc.uc_mcontext.regs[29] = regs[2];
#endif
    int n = sig_unwind_native(&uc, out, max, mods_find, &ms, cache);
    free(cache);
    return n;
}
#endif
