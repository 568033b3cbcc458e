/* SPDX-License-Identifier: MIT */
/* Inspecting a stopped thread: scopes, variables, setVariable and source (DAP), served on the
 * worker under the GIL (requests.c routes them here). A variablesReference names an entry of one
 * table that holds strong references (a frame's locals, its globals, or an object with
 * children); what an object shows and its children come from variables_obj.c. The table is
 * emptied when the stop generation changes (a resume or a detach: references of the past stop
 * are then stale and say so) and when it is full. References are never reused: each is above
 * every reference handed out before, so a stale one is always recognised. */
#include "pyrt/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "probe.h"
#include "gil/pyhelper.h"

#define VREF_MAX 32768    /* entries held at once */
#define VREF_HASH 65536   /* open addressing over (kind, obj, frame); a power of 2 */
#define VARS_MAX 1000     /* children in one `variables` answer */
#define VREF_LIMIT 0x7fff0000LL /* DAP numbers are 32-bit signed: wrap before that */

enum vkind { VK_LOCALS = 1, VK_GLOBALS, VK_OBJECT };

struct vref {
    int kind;
    PyObject *obj;   /* strong: the frame (locals), the globals dict, or the object */
    PyObject *frame; /* strong or NULL: where setVariable evaluates (NULL: __main__) */
    char *expr;      /* obj's evaluateName, or NULL */
};

static struct vref *tab;
static int ntab, captab;
static int32_t *hash; /* index + 1 into tab; 0 is empty */
static long long first_ref = 1;   /* the reference of tab[0] */
static long long prev_first = 1;  /* first_ref before the last emptying */
static int last_full;             /* the last emptying was because the table was full */
static unsigned long tab_gen;

/* Empty the table; full says why (for the message of a stale reference). */
static void vars_clear(int full)
{
    struct vref *old = tab;
    int n = ntab;
    tab = NULL;
    ntab = captab = 0;
    prev_first = first_ref;
    first_ref += n;
    if (first_ref + VREF_MAX >= VREF_LIMIT)
        first_ref = prev_first = 1;
    last_full = full;
    if (hash)
        memset(hash, 0, VREF_HASH * sizeof *hash);
    /* Released after the table is consistent: a __del__ may run here. */
    for (int i = 0; i < n; i++) {
        Py_XDECREF(old[i].obj);
        Py_XDECREF(old[i].frame);
        free(old[i].expr);
    }
    free(old);
}

/* Drop the references of a past stop. GIL held. */
static void vars_sync(void)
{
    unsigned long gen = probe_dbg_generation();
    if (gen != tab_gen) {
        if (ntab > 0)
            vars_clear(0);
        tab_gen = gen;
    }
}

void dbg_vars_sync(void)
{
    vars_sync();
}

static uint32_t slot_of(int kind, PyObject *obj, PyObject *frame)
{
    uint64_t h = ((uint64_t)(uintptr_t)obj >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uintptr_t)frame >> 4) * 0xC2B2AE3D27D4EB4Full + (uint64_t)kind;
    return (uint32_t)(h >> 40) & (VREF_HASH - 1);
}

/* The reference of (kind, obj, frame), adding it when new; 0 when the table is full or out of
 * memory. */
static long long vars_add(int kind, PyObject *obj, PyObject *frame, const char *expr)
{
    if (!hash && !(hash = calloc(VREF_HASH, sizeof *hash)))
        return 0;
    uint32_t h = slot_of(kind, obj, frame);
    for (; hash[h]; h = (h + 1) & (VREF_HASH - 1)) {
        const struct vref *e = &tab[hash[h] - 1];
        if (e->kind == kind && e->obj == obj && e->frame == frame)
            return first_ref + hash[h] - 1;
    }
    if (ntab >= VREF_MAX)
        return 0;
    if (ntab == captab) {
        int ncap = captab ? captab * 2 : 256;
        struct vref *t = realloc(tab, (size_t)ncap * sizeof *t);
        if (!t)
            return 0;
        tab = t;
        captab = ncap;
    }
    struct vref *e = &tab[ntab];
    e->kind = kind;
    e->obj = obj;
    e->frame = frame;
    e->expr = expr ? strdup(expr) : NULL;
    Py_INCREF(obj);
    Py_XINCREF(frame);
    hash[h] = ++ntab;
    return first_ref + ntab - 1;
}

/* The entry behind ref, or NULL with err saying why. */
static struct vref *vars_get(long long ref, struct pb_err *err)
{
    vars_sync();
    if (ref >= first_ref && ref < first_ref + ntab)
        return &tab[ref - first_ref];
    if (ref >= prev_first && ref < first_ref && last_full)
        pb_err_set(err, PB_ESTATE, "variablesReference %lld was dropped: at most %d references "
                   "are held at once; ask for the scopes again", ref, VREF_MAX);
    else if (ref >= 1 && ref < first_ref)
        pb_err_set(err, PB_ESTATE, "variablesReference %lld is stale: the program ran since it "
                   "was handed out (references last until the next continue or step)", ref);
    else
        pb_err_set(err, PB_EBADARG, "variablesReference %lld: no such reference", ref);
    return NULL;
}

long long probe_dbgv_register(PyObject *obj, PyObject *frame, const char *expr,
                              long long *indexed, long long *named)
{
    long long ix, nm;
    vars_sync();
    if (ntab >= VREF_MAX)
        vars_clear(1); /* evaluate results while running: the oldest go (answers reserve room) */
    int has = dbgv_shape(obj, &ix, &nm);
    if (indexed)
        *indexed = ix;
    if (named)
        *named = nm;
    return has ? vars_add(VK_OBJECT, obj, frame, expr) : 0;
}

long long probe_dbgv_ref(struct _object *obj)
{
    return obj ? probe_dbgv_register(obj, NULL, NULL, NULL, NULL) : 0;
}

/* Room for one more answer's children: empty a nearly full table first (its references then
 * say they were dropped). */
static void vars_room(void)
{
    vars_sync();
    if (ntab + VARS_MAX + 8 > VREF_MAX)
        vars_clear(1);
}

/* ---- arguments ---- */

static int arg_int(const cJSON *args, const char *name, int required, long long *out,
                   struct pb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return pb_err_set(err, PB_EBADARG, "arguments.%s: expected integer", name);
        return 1;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble < -9007199254740992.0 ||
        v->valuedouble != (double)(long long)v->valuedouble)
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected integer", name);
    *out = (long long)v->valuedouble;
    return 0;
}

static int arg_str(const cJSON *args, const char *name, const char **out, struct pb_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, name);
    if (!cJSON_IsString(v))
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected string", name);
    *out = v->valuestring;
    return 0;
}

/* ---- building variables ---- */

struct vars_out {
    cJSON *arr;
    PyObject *frame;
};

/* DAP Variable's value, type, variablesReference and child counts for v into o. */
static void describe(cJSON *o, PyObject *v, PyObject *frame, const char *expr)
{
    long long ix = 0, nm = 0;
    char *shown = probe_dbgv_display(v), *type = probe_dbgv_typename(v);
    cJSON_AddStringToObject(o, "value", shown ? shown : "?");
    cJSON_AddStringToObject(o, "type", type ? type : "?");
    long long ref = probe_dbgv_register(v, frame, expr, &ix, &nm);
    cJSON_AddNumberToObject(o, "variablesReference", (double)ref);
    if (ix > 0)
        cJSON_AddNumberToObject(o, "indexedVariables", (double)ix);
    if (nm > 0)
        cJSON_AddNumberToObject(o, "namedVariables", (double)nm);
    free(shown);
    free(type);
    PyErr_Clear();
}

static void add_var(void *ctx, const char *name, PyObject *v, const char *expr)
{
    struct vars_out *out = ctx;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    describe(o, v, out->frame, expr);
    if (expr)
        cJSON_AddStringToObject(o, "evaluateName", expr);
    cJSON_AddItemToArray(out->arr, o);
}

/* The locals of frame f as a dict (new reference): 3.13's proxy copied, else f_locals synced
 * from the fast locals. */
static PyObject *locals_dict(PyObject *f, struct pb_err *err)
{
    PyObject *g, *l;
    if (probe_eval_frame_ns(f, &g, &l, err) < 0)
        return NULL;
    Py_DECREF(g);
    if (PyDict_Check(l))
        return l;
    PyObject *d = PyDict_New();
    if (!d || PyDict_Update(d, l) < 0) {
        Py_XDECREF(d);
        Py_DECREF(l);
        return probe_py_fail(err, "reading the frame's locals"), NULL;
    }
    Py_DECREF(l);
    return d;
}

/* ---- requests ---- */

int probe_dbgv_scopes(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)long_msg;
    long long frame_id = 0;
    int rc = arg_int(args, "frameId", 1, &frame_id, err);
    if (rc < 0)
        return rc;
    /* Borrowed from the stop record: held while we work, as code we cause to run (a __del__
     * during an allocation) could let the thread resume and drop it. */
    PyObject *f = probe_dbg_frame(frame_id, err);
    if (!f)
        return err->code;
    Py_INCREF(f);
    vars_room();
    PyObject *g, *l;
    if ((rc = probe_eval_frame_ns(f, &g, &l, err)) < 0) {
        Py_DECREF(f);
        return rc;
    }
    Py_ssize_t nl = PyObject_Size(l), ng = PyObject_Size(g);
    PyErr_Clear();
    long long lref = vars_add(VK_LOCALS, f, f, NULL), gref = vars_add(VK_GLOBALS, g, f, NULL);
    Py_DECREF(l);
    Py_DECREF(g);
    Py_DECREF(f);
    if (!lref || !gref)
        return pb_err_set(err, PB_EUNKNOWN, "out of memory");
    cJSON *arr = cJSON_AddArrayToObject(body, "scopes");
    const struct {
        const char *name, *hint;
        long long ref;
        Py_ssize_t n;
    } scopes[] = {{"Locals", "locals", lref, nl}, {"Globals", "globals", gref, ng}};
    for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "name", scopes[i].name);
        cJSON_AddStringToObject(s, "presentationHint", scopes[i].hint);
        cJSON_AddNumberToObject(s, "variablesReference", (double)scopes[i].ref);
        if (scopes[i].n >= 0)
            cJSON_AddNumberToObject(s, "namedVariables", (double)scopes[i].n);
        cJSON_AddBoolToObject(s, "expensive", 0);
        cJSON_AddItemToArray(arr, s);
    }
    return 0;
}

int probe_dbgv_variables(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)long_msg;
    long long ref = 0;
    struct dbgv_page pg = {.filter = DBGV_ALL, .start = 0, .count = 0};
    int rc;
    if ((rc = arg_int(args, "variablesReference", 1, &ref, err)) < 0 ||
        (rc = arg_int(args, "start", 0, &pg.start, err)) < 0 ||
        (rc = arg_int(args, "count", 0, &pg.count, err)) < 0)
        return rc;
    const cJSON *filter = cJSON_GetObjectItemCaseSensitive(args, "filter");
    if (filter && !cJSON_IsNull(filter)) {
        if (cJSON_IsString(filter) && strcmp(filter->valuestring, "indexed") == 0)
            pg.filter = DBGV_INDEXED;
        else if (cJSON_IsString(filter) && strcmp(filter->valuestring, "named") == 0)
            pg.filter = DBGV_NAMED;
        else
            return pb_err_set(err, PB_EBADARG, "arguments.filter: expected \"indexed\" or "
                                               "\"named\"");
    }
    if (pg.start < 0 || pg.count < 0)
        return pb_err_set(err, PB_EBADARG, "arguments.%s: expected a number >= 0",
                          pg.start < 0 ? "start" : "count");
    int asked = pg.count > 0;
    if (pg.count == 0 || pg.count > VARS_MAX)
        pg.count = VARS_MAX;
    const struct vref *e = vars_get(ref, err);
    if (!e)
        return err->code;
    /* Copies: registering children may grow (move) the table, or empty it (vars_room). */
    int kind = e->kind;
    PyObject *obj = e->obj, *frame = e->frame;
    char *expr = e->expr ? strdup(e->expr) : NULL;
    Py_INCREF(obj);
    Py_XINCREF(frame);
    vars_room();
    struct vars_out out = {cJSON_AddArrayToObject(body, "variables"), frame};
    rc = 0;
    if (kind == VK_LOCALS) {
        PyObject *d = locals_dict(obj, err);
        if (d)
            dbgv_children(d, 1, NULL, &pg, add_var, &out);
        else
            rc = err->code;
        Py_XDECREF(d);
    } else {
        dbgv_children(obj, kind == VK_GLOBALS, expr, &pg, add_var, &out);
    }
    if (rc == 0 && pg.more && !asked) {
        /* More than one answer holds: say so where the user looks. */
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", "...");
        cJSON_AddStringToObject(o, "value", "more children not shown (the first "
                                            "1000 are; ask with start and count)");
        cJSON_AddNumberToObject(o, "variablesReference", 0);
        cJSON_AddItemToArray(out.arr, o);
    }
    free(expr);
    Py_XDECREF(frame);
    Py_DECREF(obj);
    PyErr_Clear();
    return rc;
}

/* Evaluate src for setVariable in frame (NULL: __main__): output goes out as `output` events,
 * an exception becomes the error (its traceback in *long_msg). *value: new reference. */
static int eval_for_set(const char *src, PyObject *frame, PyObject **value, struct pb_err *err,
                        char **long_msg)
{
    struct probe_eval_result r;
    int rc = probe_eval_value(src, frame, &r, value, err);
    for (int i = 0; rc == 0 && i < r.nchunks; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "category", r.chunks[i].is_stderr ? "stderr" : "stdout");
        cJSON_AddStringToObject(ev, "output", r.chunks[i].text);
        probe_dbg_emit("output", ev);
    }
    if (rc == 0 && r.exc_type) {
        rc = pb_err_set(err, PB_EUNKNOWN, "%s", r.exc_type);
        if (r.traceback) {
            size_t n = strlen(r.traceback);
            if (n > 0 && r.traceback[n - 1] == '\n')
                r.traceback[n - 1] = 0; /* a message, not a line */
            *long_msg = r.traceback;
            r.traceback = NULL;
        }
    } else if (rc == 0 && !*value) {
        rc = pb_err_set(err, PB_EUNKNOWN, "the value could not be evaluated");
    }
    if (rc < 0)
        Py_CLEAR(*value);
    probe_eval_result_free(&r);
    return rc;
}

/* name = value in frame f's locals; the running program sees it. */
static int set_local(PyObject *f, const char *name, PyObject *value, unsigned long gen,
                     struct pb_err *err)
{
    PyObject *g, *l;
    if (gen != probe_dbg_generation())
        return pb_err_set(err, PB_ESTATE, "the thread resumed while the value was evaluated: "
                                          "nothing was set");
    if (probe_eval_frame_ns(f, &g, &l, err) < 0)
        return err->code;
    int rc = PyMapping_SetItemString(l, name, value);
    if (rc == 0)
        probe_eval_frame_commit(f, g, l);
    else
        rc = probe_py_fail(err, "setting the local");
    Py_DECREF(l);
    Py_DECREF(g);
    return rc;
}

int probe_dbgv_setVariable(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg)
{
    long long ref = 0;
    const char *name = NULL, *src = NULL;
    int rc;
    if ((rc = arg_int(args, "variablesReference", 1, &ref, err)) < 0 ||
        (rc = arg_str(args, "name", &name, err)) < 0 ||
        (rc = arg_str(args, "value", &src, err)) < 0)
        return rc;
    const struct vref *e = vars_get(ref, err);
    if (!e)
        return err->code;
    int kind = e->kind;
    PyObject *obj = e->obj, *frame = e->frame, *value = NULL;
    char *parent = e->expr ? strdup(e->expr) : NULL, *expr = NULL;
    Py_INCREF(obj);
    Py_XINCREF(frame);
    vars_room();
    unsigned long gen = probe_dbg_generation();
    rc = eval_for_set(src, frame, &value, err, long_msg);
    if (rc == 0 && kind == VK_LOCALS) {
        rc = set_local(obj, name, value, gen, err);
        expr = strdup(name);
    } else if (rc == 0 && kind == VK_GLOBALS) {
        rc = PyMapping_SetItemString(obj, name, value) < 0 ? probe_py_fail(err, "setting the global")
                                                           : 0;
        expr = strdup(name);
    } else if (rc == 0) {
        rc = dbgv_child_set(obj, parent, name, value, &expr, err);
    }
    if (rc == 0)
        describe(body, value, frame, expr);
    free(expr);
    free(parent);
    Py_XDECREF(value);
    Py_XDECREF(frame);
    Py_DECREF(obj);
    PyErr_Clear();
    return rc;
}

/* ---- source ---- */

int probe_dbgv_source(const cJSON *args, cJSON *body, struct pb_err *err, char **long_msg)
{
    (void)long_msg;
    long long sref = 0;
    const char *path = NULL;
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(args, "source");
    int rc = arg_int(args, "sourceReference", 0, &sref, err);
    if (rc < 0)
        return rc;
    if (sref <= 0 && cJSON_IsObject(src)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(src, "sourceReference");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(src, "path");
        if (cJSON_IsNumber(r))
            sref = (long long)r->valuedouble;
        if (cJSON_IsString(p))
            path = p->valuestring;
    }
    if (sref <= 0 && !path)
        return pb_err_set(err, PB_EBADARG, "arguments.sourceReference: expected a reference "
                                           "> 0 (or source.path)");
    PyObject *fn = probe_pyhelper_get("source");
    if (!fn)
        return probe_py_fail(err, "source");
    PyObject *res = NULL;
    if (sref > 0) {
        struct pb_err ferr = {0};
        PyObject *f = probe_dbg_frame(sref - 1, &ferr); /* borrowed */
        if (!f)
            return pb_err_set(err, ferr.code ? ferr.code : PB_ESTATE,
                              "sourceReference %lld: %s", sref, ferr.msg);
#if PY_VERSION_HEX >= 0x03090000
        PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)f); /* new reference */
#else
        PyCodeObject *code = ((PyFrameObject *)f)->f_code;
        Py_XINCREF(code);
#endif
#if PY_VERSION_HEX >= 0x030B0000
        PyObject *g = PyFrame_GetGlobals((PyFrameObject *)f);
#else
        PyObject *g = ((PyFrameObject *)f)->f_globals;
        Py_XINCREF(g);
#endif
        if (code && g)
            res = PyObject_CallFunction(fn, "OOO", code->co_filename, (PyObject *)code, g);
        Py_XDECREF(g);
        Py_XDECREF(code);
    } else {
        res = PyObject_CallFunction(fn, "sOO", path, Py_None, Py_None);
    }
    if (!res)
        return probe_py_fail(err, "source");
    if (res == Py_None || !PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        return pb_err_set(err, PB_EBADARG, "no source for %s", path ? path : "this reference");
    }
    char *mime = probe_py_strdup(PyTuple_GET_ITEM(res, 0));
    char *text = probe_py_strdup(PyTuple_GET_ITEM(res, 1));
    Py_DECREF(res);
    if (text) {
        cJSON_AddStringToObject(body, "content", text);
        if (mime)
            cJSON_AddStringToObject(body, "mimeType", mime);
    }
    free(mime);
    free(text);
    return text ? 0 : pb_err_set(err, PB_EUNKNOWN, "out of memory");
}
