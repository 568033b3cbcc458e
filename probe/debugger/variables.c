/* SPDX-License-Identifier: MIT */
/* Inspecting a stopped thread: scopes, variables, setVariable and source, on the worker under
 * the GIL, answered as C structs (server/req/ makes the DAP JSON). A variablesReference names an entry of one
 * table that holds strong references (a frame's locals, its globals, or an object with
 * children); what an object shows and its children come from variables_obj.c. The table is
 * emptied when the stop generation changes (a resume or a detach: references of the past stop
 * are then stale and say so) and when it is full. References are never reused: each is above
 * every reference handed out before, so a stale one is always recognised. */
#include "pyrt/internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "gil/pyhelper.h"
#include "gil/gil.h"
#include "debugger.h"

#define VREF_MAX 32768          /* entries held at once */
#define VREF_HASH 65536         /* open addressing over (kind, obj, frame); a power of 2 */
#define VARS_MAX 1000           /* children in one `variables` answer */
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
static int32_t *hash;            /* index + 1 into tab; 0 is empty */
static long long first_ref = 1;  /* the reference of tab[0] */
static long long prev_first = 1; /* first_ref before the last emptying */
static int last_full;            /* the last emptying was because the table was full */
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
    unsigned long gen = dbg_generation();
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
        pb_err_set(err, PB_ESTATE,
                   "variablesReference %lld was dropped: at most %d references "
                   "are held at once; ask for the scopes again",
                   ref, VREF_MAX);
    else if (ref >= 1 && ref < first_ref)
        pb_err_set(err, PB_ESTATE,
                   "variablesReference %lld is stale: the program ran since it "
                   "was handed out (references last until the next continue or step)",
                   ref);
    else
        pb_err_set(err, PB_EBADARG, "variablesReference %lld: no such reference", ref);
    return NULL;
}

long long dbg_vars_register(PyObject *obj, PyObject *frame, const char *expr, long long *indexed,
                            long long *named)
{
    long long ix, nm;
    vars_sync();
    if (ntab >= VREF_MAX)
        vars_clear(1); /* evaluate results while running: the oldest go (answers reserve room) */
    int has = dbg_vars_shape(obj, &ix, &nm);
    if (indexed)
        *indexed = ix;
    if (named)
        *named = nm;
    return has ? vars_add(VK_OBJECT, obj, frame, expr) : 0;
}

/* Room for one more answer's children: empty a nearly full table first (its references then
 * say they were dropped). */
static void vars_room(void)
{
    vars_sync();
    if (ntab + VARS_MAX + 8 > VREF_MAX)
        vars_clear(1);
}

/* ---- building variables ---- */

void dbg_var_free(struct probe_dbg_var *v)
{
    free(v->name);
    free(v->value);
    free(v->type);
    free(v->evaluate_name);
    memset(v, 0, sizeof *v);
}

void dbg_vars_free(struct probe_dbg_vars *vs)
{
    for (int i = 0; i < vs->n; i++)
        dbg_var_free(&vs->v[i]);
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

struct vars_out {
    struct probe_dbg_vars *vs;
    PyObject *frame;
};

/* A Variable's value, type, variablesReference and child counts for v into o. */
static void describe(struct probe_dbg_var *o, PyObject *v, PyObject *frame, const char *expr)
{
    o->value = pyrt_repr_new(v);
    o->type = pyrt_repr_typename(v);
    o->ref = dbg_vars_register(v, frame, expr, &o->indexed, &o->named);
    PyErr_Clear();
}

static void add_var(void *ctx, const char *name, PyObject *v, const char *expr)
{
    struct vars_out *out = ctx;
    struct probe_dbg_vars *vs = out->vs;
    if (vs->n == vs->cap) {
        int ncap = vs->cap ? vs->cap * 2 : 32;
        struct probe_dbg_var *nv = realloc(vs->v, (size_t)ncap * sizeof *nv);
        if (!nv)
            return;
        vs->v = nv;
        vs->cap = ncap;
    }
    struct probe_dbg_var *o = &vs->v[vs->n++];
    memset(o, 0, sizeof *o);
    o->name = strdup(name);
    describe(o, v, out->frame, expr);
    o->evaluate_name = expr ? strdup(expr) : NULL;
}

/* The locals of frame f as a dict (new reference): 3.13's proxy copied, else f_locals synced
 * from the fast locals. */
static PyObject *locals_dict(PyObject *f, struct pb_err *err)
{
    PyObject *g, *l;
    if (gil_eval_frame_ns(f, &g, &l, err) < 0)
        return NULL;
    Py_DECREF(g);
    if (PyDict_Check(l))
        return l;
    PyObject *d = PyDict_New();
    if (!d || PyDict_Update(d, l) < 0) {
        Py_XDECREF(d);
        Py_DECREF(l);
        return gil_py_fail(err, "reading the frame's locals"), NULL;
    }
    Py_DECREF(l);
    return d;
}

/* ---- requests ---- */

int dbg_scopes(long long frame_id, struct probe_dbg_scope out[2], struct pb_err *err)
{
    /* Borrowed from the stop record: held while we work, as code we cause to run (a __del__
     * during an allocation) could let the thread resume and drop it. */
    PyObject *f = dbg_frame(frame_id, err);
    if (!f)
        return err->code;
    Py_INCREF(f);
    vars_room();
    PyObject *g, *l;
    int rc;
    if ((rc = gil_eval_frame_ns(f, &g, &l, err)) < 0) {
        Py_DECREF(f);
        PyErr_Clear();
        return rc;
    }
    out[0].named = PyObject_Size(l);
    out[1].named = PyObject_Size(g);
    PyErr_Clear();
    out[0].ref = vars_add(VK_LOCALS, f, f, NULL);
    out[1].ref = vars_add(VK_GLOBALS, g, f, NULL);
    Py_DECREF(l);
    Py_DECREF(g);
    Py_DECREF(f);
    PyErr_Clear();
    if (!out[0].ref || !out[1].ref)
        return pb_err_set(err, -ENOMEM, "out of memory");
    return 0;
}

int dbg_variables(long long ref, int filter, long long start, long long count,
                  struct probe_dbg_vars *vs, struct pb_err *err)
{
    struct dbgv_page pg = {.filter = filter == PROBE_DBG_VARS_INDEXED ? DBGV_INDEXED
                                     : filter == PROBE_DBG_VARS_NAMED ? DBGV_NAMED
                                                                      : DBGV_ALL,
                           .start = start,
                           .count = count <= 0 || count > VARS_MAX ? VARS_MAX : count};
    memset(vs, 0, sizeof *vs);
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
    struct vars_out out = {vs, frame};
    int rc = 0;
    pyrt_obj_cache_pinned(1); /* each type checked once per answer, not once per child */
    if (kind == VK_LOCALS) {
        PyObject *d = locals_dict(obj, err);
        if (d)
            dbg_vars_children(d, 1, NULL, &pg, add_var, &out);
        else
            rc = err->code;
        Py_XDECREF(d);
    } else {
        dbg_vars_children(obj, kind == VK_GLOBALS, expr, &pg, add_var, &out);
    }
    pyrt_obj_cache_pinned(0);
    vs->more = pg.more;
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
    int rc = gil_eval_value(src, frame, &r, value, err);
    for (int i = 0; rc == 0 && i < r.nchunks; i++) {
        struct probe_dbg_event e = {
            .kind = PROBE_DBG_EV_OUTPUT, .text = r.chunks[i].text, .category = "stdout"};
        if (r.chunks[i].is_stderr)
            pb_strlcpy(e.category, "stderr", sizeof e.category);
        dbg_emit(&e);
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
    gil_eval_result_free(&r);
    return rc;
}

/* name = value in frame f's locals; the running program sees it. */
static int set_local(PyObject *f, const char *name, PyObject *value, unsigned long gen,
                     struct pb_err *err)
{
    PyObject *g, *l;
    if (gen != dbg_generation())
        return pb_err_set(err, PB_ESTATE,
                          "the thread resumed while the value was evaluated: "
                          "nothing was set");
    if (gil_eval_frame_ns(f, &g, &l, err) < 0)
        return err->code;
    int rc = PyMapping_SetItemString(l, name, value);
    if (rc == 0)
        gil_eval_frame_commit(f, g, l);
    else
        rc = gil_py_fail(err, "setting the local");
    Py_DECREF(l);
    Py_DECREF(g);
    return rc;
}

int dbg_set_variable(long long ref, const char *name, const char *src, struct probe_dbg_var *out,
                     struct pb_err *err, char **long_msg)
{
    int rc;
    memset(out, 0, sizeof *out);
    const struct vref *e = vars_get(ref, err);
    if (!e)
        return err->code;
    int kind = e->kind;
    PyObject *obj = e->obj, *frame = e->frame, *value = NULL;
    char *parent = e->expr ? strdup(e->expr) : NULL, *expr = NULL;
    Py_INCREF(obj);
    Py_XINCREF(frame);
    vars_room();
    unsigned long gen = dbg_generation();
    rc = eval_for_set(src, frame, &value, err, long_msg);
    if (rc == 0 && kind == VK_LOCALS) {
        rc = set_local(obj, name, value, gen, err);
        expr = strdup(name);
    } else if (rc == 0 && kind == VK_GLOBALS) {
        rc = PyMapping_SetItemString(obj, name, value) < 0 ? gil_py_fail(err, "setting the global")
                                                           : 0;
        expr = strdup(name);
    } else if (rc == 0) {
        rc = dbg_vars_child_set(obj, parent, name, value, &expr, err);
    }
    if (rc == 0)
        describe(out, value, frame, expr);
    free(expr);
    free(parent);
    Py_XDECREF(value);
    Py_XDECREF(frame);
    Py_DECREF(obj);
    PyErr_Clear();
    return rc;
}

/* ---- source ---- */

static int source(long long sref, const char *path, char **content, char **mime, struct pb_err *err)
{
    PyObject *fn = gil_pyhelper_get("source");
    if (!fn)
        return gil_py_fail(err, "source");
    PyObject *res = NULL;
    if (sref > 0) {
        struct pb_err ferr = {0};
        PyObject *f = dbg_frame(sref - 1, &ferr); /* borrowed */
        if (!f)
            return pb_err_set(err, ferr.code ? ferr.code : PB_ESTATE, "sourceReference %lld: %s",
                              sref, ferr.msg);
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
        return gil_py_fail(err, "source");
    if (res == Py_None || !PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        return pb_err_set(err, PB_EBADARG, "no source for %s", path ? path : "this reference");
    }
    *mime = gil_py_strdup(PyTuple_GET_ITEM(res, 0));
    *content = gil_py_strdup(PyTuple_GET_ITEM(res, 1));
    Py_DECREF(res);
    PyErr_Clear();
    if (*content)
        return 0;
    free(*mime);
    *mime = NULL;
    return pb_err_set(err, -ENOMEM, "out of memory");
}

int dbg_source(long long sref, const char *path, char **content, char **mime, struct pb_err *err)
{
    *content = *mime = NULL;
    int rc = source(sref, path, content, mime, err);
    PyErr_Clear();
    return rc;
}
