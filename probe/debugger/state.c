/* SPDX-License-Identifier: MIT */
/* Parked threads. A thread that must stop calls dbg_park() from a hook with the GIL held: it
 * records its frames (strong references, names, lines) and the reason, announces the stop if
 * it is the first of this stop, makes every other thread stop at its next line, then waits with
 * the GIL released until the loop resumes it. The loop answers stackTrace and exceptionInfo of
 * parked threads from these records without the GIL; the worker reaches their frame objects
 * (dbg_frame) while it holds the GIL, which a resumed thread needs before it can drop
 * them. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "core/core.h"
#include "pyrt/pyrt.h"
#include "gil/gil.h"
#include "debugger.h"

struct frame_rec {
    PyObject *frame; /* strong */
    char *name, *file;
    int line;
    int end_line, col, end_col; /* as struct probe_frame's: 3.11+, 0 unknown */
};

struct parked {
    long tid;
    int resume;        /* set by the loop */
    int step;          /* the step mode it resumes with */
    unsigned long gen; /* dbg_session_gen when the step was given */
    int nframes;
    struct frame_rec *frames;
    char reason[32];
    char *exc_type, *exc_msg, *exc_tb;
    const char *break_mode;
    struct parked *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct parked *parked_list;
static int announced; /* a stopped event went out for the current stop */
static int held;      /* probing/pause with hold: stay stopped without a client */

atomic_int dbg_pause_all;
atomic_int dbg_client;
atomic_ulong dbg_session_gen;
static atomic_ulong resume_gen;
static char stdlib_dir[512];

static __thread struct dbg_tls tls;

struct dbg_tls *dbg_tls_get(void)
{
    if (!tls.tid)
        tls.tid = (long)syscall(SYS_gettid);
    return &tls;
}

int dbg_is_probe_thread(void)
{
    return gil_worker_owns((unsigned long)pthread_self());
}

unsigned long dbg_generation(void)
{
    return atomic_load(&resume_gen);
}

/* The standard library's directory (os.__file__'s), once. GIL held. */
static void find_stdlib(void)
{
    if (stdlib_dir[0])
        return;
    PyObject *os = PyImport_ImportModule("os");
    PyObject *f = os ? PyObject_GetAttrString(os, "__file__") : NULL;
    char *p = gil_py_strdup(f);
    if (p) {
        char *slash = strrchr(p, '/');
        if (slash) {
            slash[1] = 0;
            pb_strlcpy(stdlib_dir, p, sizeof stdlib_dir);
        }
        free(p);
    }
    Py_XDECREF(f);
    Py_XDECREF(os);
    PyErr_Clear();
}

int dbg_is_library(const char *file)
{
    if (!file)
        return 0;
    if (strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
        strncmp(file, "<frozen ", 8) == 0)
        return 1;
    size_t n = strlen(stdlib_dir);
    return n > 0 && strncmp(file, stdlib_dir, n) == 0;
}

/* Appends frame f (a new reference, taken) to r. GIL held. */
static void add_frame(struct parked *r, PyFrameObject *f, int cap)
{
    if (r->nframes >= cap) {
        Py_DECREF(f);
        return;
    }
    struct frame_rec *fr = &r->frames[r->nframes++];
    PyCodeObject *code = dbg_frame_code(f);
    fr->frame = (PyObject *)f;
#if PY_VERSION_HEX >= 0x030B0000
    fr->name = gil_py_strdup(code->co_qualname);
#else
    fr->name = gil_py_strdup(code->co_name);
#endif
    fr->file = gil_py_strdup(code->co_filename);
    fr->line = PyFrame_GetLineNumber(f);
#if PY_VERSION_HEX >= 0x030B0000
    int sl = -1, sc = -1, el = -1, ec = -1, lasti = PyFrame_GetLasti(f);
    /* The range of the instruction it runs, when it is on the line shown (a traced frame's
     * line can be set apart from its instruction). */
    if (lasti >= 0 && PyCode_Addr2Location(code, lasti, &sl, &sc, &el, &ec) && sl == fr->line &&
        sc >= 0 && ec >= 0 && el >= sl) {
        fr->end_line = el;
        fr->col = sc + 1;
        fr->end_col = ec + 1;
    }
#endif
    Py_DECREF(code);
}

/* The stack of a stop: tb's frames innermost first when given (an uncaught exception, whose
 * frames have already unwound), then f and its callers. GIL held. */
static void record_frames(struct parked *r, PyFrameObject *f, PyObject *tb)
{
    r->frames = calloc(DBG_MAX_FRAMES, sizeof *r->frames);
    if (!r->frames)
        return;
    PyFrameObject *outer = NULL;
    if (tb && PyTraceBack_Check(tb)) {
        PyTracebackObject *chain[DBG_MAX_FRAMES];
        int n = 0;
        for (PyTracebackObject *t = (PyTracebackObject *)tb; t && n < DBG_MAX_FRAMES;
             t = t->tb_next)
            chain[n++] = t;
        for (int i = n - 1; i >= 0; i--) {
            Py_INCREF(chain[i]->tb_frame);
            add_frame(r, chain[i]->tb_frame, DBG_MAX_FRAMES);
        }
        if (n > 0)
            outer = dbg_frame_back(chain[0]->tb_frame);
    } else if (f) {
        Py_INCREF(f);
        outer = f;
    }
    while (outer && r->nframes < DBG_MAX_FRAMES) {
        PyFrameObject *next = dbg_frame_back(outer);
        add_frame(r, outer, DBG_MAX_FRAMES);
        outer = next;
    }
    Py_XDECREF(outer);
}

/* Exception text for exceptionInfo. GIL held; runs the traceback module's formatting. */
static void record_exception(struct parked *r, PyObject *exc, PyObject *tb, PyFrameObject *f)
{
    PyObject *type = (PyObject *)Py_TYPE(exc);
    PyObject *mod = PyObject_GetAttrString(type, "__module__");
    PyObject *qn = PyObject_GetAttrString(type, "__qualname__");
    char *m = gil_py_strdup(mod), *q = gil_py_strdup(qn);
    PyErr_Clear();
    if (q) {
        size_t n = strlen(q) + (m ? strlen(m) : 0) + 2;
        r->exc_type = malloc(n);
        if (r->exc_type) {
            if (m && strcmp(m, "builtins") != 0)
                snprintf(r->exc_type, n, "%s.%s", m, q);
            else
                snprintf(r->exc_type, n, "%s", q);
        }
    }
    free(m);
    free(q);
    Py_XDECREF(mod);
    Py_XDECREF(qn);
    PyObject *s = PyObject_Str(exc);
    r->exc_msg = gil_py_strdup(s);
    Py_XDECREF(s);
    PyErr_Clear();
    PyObject *tbmod = PyImport_ImportModule("traceback");
    PyObject *lines = NULL;
    if (tbmod && !tb && f) {
        /* Raised just now: the traceback holds only this frame; the stack is where it is. */
        PyObject *stack = PyObject_CallMethod(tbmod, "format_stack", "O", (PyObject *)f);
        PyObject *only = PyObject_CallMethod(tbmod, "format_exception_only", "OO", type, exc);
        PyObject *head = PyList_New(0);
        PyObject *h = PyUnicode_FromString("Traceback (most recent call last):\n");
        if (stack && only && head && h && PyList_Append(head, h) == 0) {
            PyObject *a = PySequence_Concat(head, stack);
            lines = a ? PySequence_Concat(a, only) : NULL;
            Py_XDECREF(a);
        }
        Py_XDECREF(h);
        Py_XDECREF(head);
        Py_XDECREF(only);
        Py_XDECREF(stack);
    } else if (tbmod) {
        lines = PyObject_CallMethod(tbmod, "format_exception", "OOO", type, exc, tb ? tb : Py_None);
    }
    PyObject *empty = PyUnicode_FromString("");
    PyObject *text = lines && empty ? PyUnicode_Join(empty, lines) : NULL;
    r->exc_tb = gil_py_strdup(text);
    Py_XDECREF(text);
    Py_XDECREF(empty);
    Py_XDECREF(lines);
    Py_XDECREF(tbmod);
    PyErr_Clear();
}

static void free_record(struct parked *r) /* GIL held */
{
    for (int i = 0; i < r->nframes; i++) {
        Py_XDECREF(r->frames[i].frame);
        free(r->frames[i].name);
        free(r->frames[i].file);
    }
    free(r->frames);
    free(r->exc_type);
    free(r->exc_msg);
    free(r->exc_tb);
    free(r);
}

static void announce(const struct dbg_stop_why *why, long tid)
{
    struct probe_dbg_event e = {
        .kind = PROBE_DBG_EV_STOPPED, .thread_id = tid, .text = why->description, .nbp = why->nbp};
    pb_strlcpy(e.reason, why->reason, sizeof e.reason);
    memcpy(e.bp_ids, why->bp_ids, sizeof e.bp_ids);
    dbg_emit(&e);
}

void dbg_park(PyFrameObject *f, const struct dbg_stop_why *why)
{
    if (dbg_forked())
        return; /* a fork child: nobody could resume it (and mu may be held forever) */
    struct dbg_tls *t = dbg_tls_get();
    struct parked *r = calloc(1, sizeof *r);
    if (!r)
        return;
    find_stdlib();
    r->tid = t->tid;
    pb_strlcpy(r->reason, why->reason, sizeof r->reason);
    record_frames(r, f, why->tb);
    if (why->exc) {
        r->break_mode = why->break_mode ? why->break_mode : "always";
        record_exception(r, why->exc, why->tb, f);
    }
    /* A step or a pause of this thread is over once it stops. */
    if (t->step != DBG_STEP_NONE)
        dbg_steps_end(t->gen);
    Py_CLEAR(t->step_frame);
    t->step = DBG_STEP_NONE;
    t->fbp_frame = NULL;

    int first = 0;
    pthread_mutex_lock(&mu);
    int pausing = strcmp(why->reason, "pause") == 0;
    if ((pausing && !atomic_load(&dbg_pause_all)) || (!atomic_load(&dbg_client) && !held)) {
        /* The pause was lifted while we got here, or nobody is there to resume us: the
         * target is never left stopped without a client (or a probing/pause hold). */
        pthread_mutex_unlock(&mu);
        free_record(r);
        return;
    }
    r->next = parked_list;
    parked_list = r;
    if (!announced) {
        announced = 1;
        first = 1;
    }
    atomic_store(&dbg_pause_all, 1);
    pthread_mutex_unlock(&mu);
    if (first) {
        announce(why, t->tid);
        struct pb_err err = {0};
        if (dbg_hooks_pause_all(&err) < 0)
            PB_LOG(PB_LOG_WARN, "stopping the other threads: %s", err.msg);
    }
    PB_LOG(PB_LOG_DEBUG, "thread %ld parked (%s)", t->tid, why->reason);

    int step;
    unsigned long gen;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&mu);
    while (!r->resume)
        pthread_cond_wait(&cv, &mu);
    for (struct parked **pp = &parked_list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    step = r->step;
    gen = r->gen;
    pthread_mutex_unlock(&mu);
    Py_END_ALLOW_THREADS

        PB_LOG(PB_LOG_DEBUG, "thread %ld resumed (step %d)", t->tid, step);
    free_record(r);
    /* A detach since the resume voids the step: it is not started (the client is gone; a
     * step started now would trace this thread after the detach's cleanup). */
    if (step != DBG_STEP_NONE && f && dbg_steps_begin(gen)) {
        t->step = step;
        t->gen = gen; /* a detach from here on makes this step void (step.c) */
        if (step != DBG_STEP_IN) {
            Py_INCREF(f);
            t->step_frame = (PyObject *)f;
        }
        dbg_hooks_stepping(f);
    }
}

/* ---- loop side ---- */

int dbg_resume(long step_tid, int step)
{
    int found = 0;
    pthread_mutex_lock(&mu);
    for (struct parked *r = parked_list; r; r = r->next) {
        if (r->resume)
            continue;
        r->resume = 1;
        if (r->tid == step_tid) {
            r->step = step;
            r->gen = atomic_load(&dbg_session_gen);
            found = 1;
        }
    }
    announced = 0;
    held = 0;
    atomic_store(&dbg_pause_all, 0);
    atomic_fetch_add(&resume_gen, 1);
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return found;
}

void dbg_hold(int on)
{
    pthread_mutex_lock(&mu);
    held = on;
    pthread_mutex_unlock(&mu);
}

int dbg_held(void)
{
    pthread_mutex_lock(&mu);
    int h = held;
    pthread_mutex_unlock(&mu);
    return h;
}

/* Loop: the first thread id parked, or 0. */
long dbg_first_parked(void)
{
    pthread_mutex_lock(&mu);
    long tid = 0;
    for (struct parked *r = parked_list; r; r = r->next)
        if (!r->resume)
            tid = r->tid;
    pthread_mutex_unlock(&mu);
    return tid;
}

/* Loop: mark that a stopped event went out (or must go out again). Returns the old value. */
int dbg_set_announced(int v)
{
    pthread_mutex_lock(&mu);
    int old = announced;
    announced = v;
    pthread_mutex_unlock(&mu);
    return old;
}

int dbg_stopped(void)
{
    pthread_mutex_lock(&mu);
    int any = held || announced;
    for (struct parked *r = parked_list; r && !any; r = r->next)
        any = !r->resume;
    pthread_mutex_unlock(&mu);
    return any;
}

static struct parked *find_parked(long tid) /* mu held */
{
    for (struct parked *r = parked_list; r; r = r->next)
        if (r->tid == tid && !r->resume)
            return r;
    return NULL;
}

int dbg_parked(long tid)
{
    pthread_mutex_lock(&mu);
    int p = find_parked(tid) != NULL;
    pthread_mutex_unlock(&mu);
    return p;
}

void dbg_frames_free(struct probe_frame *frames, int n)
{
    for (int i = 0; frames && i < n; i++) {
        free(frames[i].func);
        free(frames[i].file);
    }
    free(frames);
}

int dbg_stack(long tid, long long start, long long max, struct probe_frame **frames, int *n)
{
    *frames = NULL;
    *n = 0;
    pthread_mutex_lock(&mu);
    struct parked *r = find_parked(tid);
    if (!r) {
        pthread_mutex_unlock(&mu);
        return -1;
    }
    int total = r->nframes;
    long long end = max > 0 && start + max < total ? start + max : total;
    int want = end > start ? (int)(end - start) : 0;
    struct probe_frame *out = want ? calloc((size_t)want, sizeof *out) : NULL;
    int ok = !want || out;
    for (int i = 0; out && i < want; i++) {
        const struct frame_rec *fr = &r->frames[start + i];
        out[i].func = strdup(fr->name ? fr->name : "?");
        out[i].file = fr->file ? strdup(fr->file) : NULL;
        out[i].line = fr->line;
        out[i].end_line = fr->end_line;
        out[i].col = fr->col;
        out[i].end_col = fr->end_col;
        out[i].nlocals = -1;
        if (!out[i].func || (fr->file && !out[i].file))
            ok = 0;
    }
    pthread_mutex_unlock(&mu);
    if (!ok) {
        dbg_frames_free(out, want);
        return -1;
    }
    *frames = out;
    *n = want;
    return total;
}

void dbg_exception_free(struct dbg_exception *e)
{
    free(e->type);
    free(e->message);
    free(e->traceback);
    memset(e, 0, sizeof *e);
}

int dbg_exception(long tid, struct dbg_exception *out, struct pb_err *err)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&mu);
    struct parked *r = find_parked(tid);
    if (!r || !r->exc_type) {
        pthread_mutex_unlock(&mu);
        return pb_err_set(err, PB_ESTATE, "thread %ld is not stopped on an exception", tid);
    }
    out->type = strdup(r->exc_type);
    out->message = r->exc_msg ? strdup(r->exc_msg) : NULL;
    out->traceback = r->exc_tb ? strdup(r->exc_tb) : NULL;
    out->break_mode = r->break_mode;
    int ok = out->type && (!r->exc_msg || out->message) && (!r->exc_tb || out->traceback);
    pthread_mutex_unlock(&mu);
    if (!ok) {
        dbg_exception_free(out);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

struct _object *dbg_frame(long long frame_id, struct pb_err *err)
{
    long tid = 0;
    int depth = 0;
    PyObject *f = NULL;
    if (pb_frame_id_parse(frame_id, &tid, &depth) < 0) {
        pb_err_set(err, PB_EBADARG, "frame %lld: no such frame", frame_id);
        return NULL;
    }
    pthread_mutex_lock(&mu);
    struct parked *r = find_parked(tid);
    if (r && depth < r->nframes)
        f = r->frames[depth].frame;
    pthread_mutex_unlock(&mu);
    if (!f) {
        if (!r)
            pb_err_set(err, PB_ESTATE,
                       "frame %lld: thread %ld is not stopped (frames can be inspected while "
                       "it is paused)",
                       frame_id, tid);
        else
            pb_err_set(err, PB_EBADARG, "frame %lld: thread %ld has no frame at depth %d", frame_id,
                       tid, depth);
    }
    return f;
}
