/* SPDX-License-Identifier: MIT */
/* The interpreter reader (pyrt.h): walks every interpreter's thread states (the main one's,
 * then each subinterpreter's: pyrt_interp_next) and each thread's frames without the GIL, every
 * read through pyrt_mem_read() and every loop bounded. Per version: threads from
 * interp->tstate_head (3.8-3.10) or interp->threads.head (3.11+);
 * frames through the shared walker (frames.c), then names, files and lines from each code
 * object (cached for one snapshot); the GIL's holder (frames.c too). Names/locals: locals.c. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_FRAMES 256
#define MAX_FRAMES 10000
#define CACHE_SLOTS 512 /* code objects remembered during one snapshot (power of two) */

/* What one snapshot learned about a code object; strings are copied into each frame. */
struct code_info {
    const void *addr;
    char *func;
    char *file;
    unsigned char *table;
    size_t tablen;
    int firstlineno;
    int ok;
};

struct walk {
    struct code_info cache[CACHE_SLOTS];
    int max_frames;
    int want_raw;
    long only;           /* > 0: the thread with this id (pyrt_thread_id) only */
    int comm_later;      /* threading names them: the OS name only of a thread it does not */
    struct pyrt_walk fw; /* one thread's walk (frames.h): max_frames of pos and ext */
    struct pyrt_code_memo memo[CACHE_SLOTS];
};

static void code_info_clear(struct code_info *ci)
{
    free(ci->func);
    free(ci->file);
    free(ci->table);
    memset(ci, 0, sizeof *ci);
}

/* Looks code object addr up in the cache, reading it on a miss. Returns NULL when addr is not
 * a readable code object. No GIL needed. */
static struct code_info *code_get(struct walk *w, const void *addr)
{
    size_t h = ((uintptr_t)addr >> 4) & (CACHE_SLOTS - 1);
    struct code_info *ci = NULL;
    struct pyrt_code co;

    for (size_t i = 0; i < CACHE_SLOTS; i++) {
        struct code_info *c = &w->cache[(h + i) & (CACHE_SLOTS - 1)];
        if (c->addr == addr)
            return c->ok ? c : NULL;
        if (!c->addr) {
            ci = c;
            break;
        }
    }
    if (!ci) { /* full: recycle the home slot */
        ci = &w->cache[h];
        code_info_clear(ci);
    }
    ci->addr = addr;
    if (pyrt_code_read((uintptr_t)addr, &co, pyrt_mem_read_at) != 0)
        return NULL;
    ci->func = pyrt_str_read((const void *)co.name, PYRT_MAX_STR);
    ci->file = pyrt_str_read((const void *)co.file, PYRT_MAX_STR);
    ci->firstlineno = co.firstlineno;
    ci->table = pyrt_bytes_read((const void *)co.table, PYRT_MAX_TABLE, &ci->tablen);
    if (!ci->func || !ci->file) {
        code_info_clear(ci);
        ci->addr = addr; /* remember the failure */
        return NULL;
    }
    ci->ok = 1;
    return ci;
}

/* Appends one frame to t. Returns 0, or -ENOMEM. */
static int frame_add(struct probe_thread *t, struct pyrt_rawframe **raw, const struct code_info *ci,
                     const struct pyrt_loc *loc, uintptr_t fp)
{
    struct probe_frame *f = &t->frames[t->nframes];
    memset(f, 0, sizeof *f);
    f->func = strdup(ci->func);
    f->file = strdup(ci->file);
    f->line = loc->line;
    if (loc->col >= 0 && loc->end_line >= loc->line && loc->end_col >= 0) {
        f->end_line = loc->end_line;
        f->col = loc->col + 1;
        f->end_col = loc->end_col + 1;
    }
    f->nlocals = -1;
    if (!f->func || !f->file) {
        free(f->func);
        free(f->file);
        return -ENOMEM;
    }
    if (*raw) {
        (*raw)[t->nframes].frame = (const void *)fp;
        (*raw)[t->nframes].code = ci->addr;
    }
    t->nframes++;
    return 0;
}

/* Walks a running thread again from its innermost frame when a walk found no frame at all
 * though it had one: the thread popped and reused frames under the reader (3.14 clears a
 * popped frame's executable, so the chain read then leads nowhere; 3.12 could show a frame
 * being pushed, its link not yet set, so the chain ended there: 1 empty stack in 1500 reads
 * of a busy thread). */
#define REWALKS 8

/* One thread's frames from the innermost one (fp, of thread state ts) outwards: the shared
 * walker (frames.h), then names and lines from each code object. No GIL needed. */
static int frames_walk(struct walk *w, struct probe_thread *t, uintptr_t ts, uintptr_t fp,
                       struct pyrt_rawframe **raw)
{
    int cap = w->max_frames, n;

    t->frames = calloc((size_t)cap, sizeof *t->frames);
    if (!t->frames)
        return -ENOMEM;
    if (w->want_raw) {
        *raw = calloc((size_t)cap, sizeof **raw);
        if (!*raw)
            return -ENOMEM;
    }
    n = pyrt_frames_walk(&w->fw, fp);
    for (int i = 0; i < REWALKS && n == 0 && fp; i++)
        n = pyrt_frames_walk(&w->fw, pyrt_frames_top(ts, pyrt_mem_read_at));
    t->truncated = w->fw.truncated;
    for (int i = 0; i < n; i++) {
        const struct pyrt_sig_frame *pos = &w->fw.out[i];
        const struct pyrt_frame_ext *ext = &w->fw.ext[i];
        const struct code_info *ci = code_get(w, (const void *)pos->code);
        if (!ci) {
            t->truncated = 1;
            break;
        }
        struct pyrt_loc loc = {ext->line, -1, -1, -1};
        if (ext->line == PYRT_NO_LINE)
            pyrt_code_loc(ci->table, ci->tablen, ci->firstlineno, pos->lasti, &loc);
        if (frame_add(t, raw, ci, &loc, ext->frame) < 0)
            return -ENOMEM;
    }
    return 0;
}

static void version_read(char *out, size_t n)
{
    const char *v = Py_GetVersion(); /* static string, no GIL needed */
    size_t i = 0;
    while (i + 1 < n && v[i] && v[i] != ' ')
        i++;
    memcpy(out, v, i);
    out[i] = '\0';
}

static char *comm_read(long tid)
{
    char path[64];
    char buf[64];
    long n;
    if (tid > 0) {
        snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
        n = pb_read_file(path, buf, sizeof buf);
        if (n > 0) {
            if (buf[n - 1] == '\n')
                buf[n - 1] = '\0';
            return strdup(buf);
        }
    }
    return strdup("");
}

/* Saves and restores the caller's pending exception around the GIL passes. Requires GIL. */
struct exc_saved {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *tb;
#endif
};

static void exc_save(struct exc_saved *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    e->exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e->type, &e->value, &e->tb);
#endif
}

static void exc_restore(struct exc_saved *e)
{
    PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e->exc);
#else
    PyErr_Restore(e->type, e->value, e->tb);
#endif
}

unsigned long *pyrt_switch_interval(void)
{
    uintptr_t interp, head, field;
    if (!pyrt_ready())
        return NULL;
    pyrt_threads_head(&interp, &head, pyrt_mem_read_at); /* only interp is needed */
    if (!interp)
        return NULL;
    field = pyrt_gil_interval_addr(interp, pyrt_mem_read_at);
    return pyrt_ptr_ok((const void *)field, sizeof(unsigned long)) ? (unsigned long *)field : NULL;
}

/* Who held the GIL when this thread last asked for it (pyrt_gil_note). */
#define GIL_NOTE_KEEP_MS 100
static _Thread_local struct {
    int set;    /* a note for the GIL this thread holds or waits for */
    int locked; /* what it says */
    uintptr_t holder;
    int kept;      /* released: locked/holder still describe the GIL before that request */
    uintptr_t own; /* this thread's thread state when it released the GIL */
    struct timespec released;
} gil_note;

static double ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

void pyrt_gil_note(int on)
{
    uintptr_t interp = 0, head, holder;
    int locked;
    if (!on) {
        gil_note.own = (uintptr_t)PyGILState_GetThisThreadState();
        gil_note.kept = gil_note.set && gil_note.own;
        gil_note.set = 0;
        clock_gettime(CLOCK_MONOTONIC, &gil_note.released);
        return;
    }
    gil_note.set = 0;
    if (!pyrt_ready())
        return;
    pyrt_threads_head(&interp, &head, pyrt_mem_read_at);
    if (!interp)
        return;
    pyrt_gil_read(interp, &locked, &holder, pyrt_mem_read_at);
    gil_note.set = 1;
    /* Nobody has taken the GIL since this thread gave it up a moment ago (jobs back to back:
     * the holder we made wait is waking up to take it back): what the previous request found
     * still stands; the free GIL is of our making. */
    if (!locked && gil_note.kept && holder == gil_note.own &&
        ms_since(&gil_note.released) < GIL_NOTE_KEEP_MS)
        return;
    gil_note.locked = locked;
    gil_note.holder = holder;
}

/* The GIL's state as the snapshot reports it: read now, unless this thread holds the GIL
 * itself (a snapshot with names or locals) and noted who held it when it asked: then that. */
static void gil_state(uintptr_t interp, int *locked, uintptr_t *holder)
{
    uintptr_t self = (uintptr_t)PyGILState_GetThisThreadState();
    pyrt_gil_read(interp, locked, holder, pyrt_mem_read_at);
    if (!self || !*locked || *holder != self || !gil_note.set)
        return;
    *locked = gil_note.locked && gil_note.holder != self;
    *holder = *locked ? gil_note.holder : 0;
}

/* Grows the snapshot's arrays by one thread. Returns it, or NULL when out of memory. */
static struct probe_thread *thread_add(struct probe_snapshot *s, struct pyrt_rawframe ***raws,
                                       int *cap)
{
    struct probe_thread *t;
    if (s->nthreads == *cap) {
        int ncap = *cap ? *cap * 2 : 16;
        void *nt = realloc(s->threads, (size_t)ncap * sizeof *s->threads);
        void *nr = nt ? realloc(*raws, (size_t)ncap * sizeof **raws) : NULL;
        if (nt)
            s->threads = nt;
        if (!nr)
            return NULL;
        *raws = nr;
        *cap = ncap;
    }
    t = &s->threads[s->nthreads];
    memset(t, 0, sizeof *t);
    (*raws)[s->nthreads] = NULL;
    s->nthreads++;
    return t;
}

/* One walk of the thread list: every interpreter's thread states (the main one's first), each
 * thread's frames. *broken: it stopped at a state that was freed under it. No GIL needed. */
static int walk_once(struct walk *w, struct probe_snapshot *s, struct pyrt_rawframe ***raws,
                     int *cap, int *broken, struct pb_err *err)
{
    struct pyrt_interp_iter it;
    struct pyrt_interp in;
    unsigned long main_ident = 0;
    uintptr_t holder = 0;
    int locked = 0, want_raw = w->want_raw, rc = pyrt_interp_first(&it, pyrt_mem_read_at);

    *broken = 0;
    if (rc == -1)
        return pb_err_set(err, PB_ENOPYTHON, "Python is not initialised (no main interpreter)");
    if (rc < 0)
        return pb_err_set(err, -EFAULT, "unreadable main interpreter state");
    pyrt_mem_read(&PYRT_RUNTIME->main_thread, &main_ident, sizeof main_ident);
    s->gc_collecting = -1;

    while (s->nthreads < PYRT_MAX_THREADS && pyrt_interp_next(&it, &in, pyrt_mem_read_at) == 1) {
        uintptr_t ts_addr = in.head;
        if (in.id == 0) { /* the GIL the probe takes: the main interpreter's (a subinterpreter
                             that shares it holds it with its own thread state) */
            gil_state(in.addr, &locked, &holder);
            s->gc_collecting = pyrt_gc_collecting(in.addr, pyrt_mem_read_at);
        }
        /* Locals are read through CPython calls under the main interpreter's GIL: never of a
         * subinterpreter's frames. */
        w->want_raw = want_raw && in.id == 0;
        while (ts_addr && s->nthreads < PYRT_MAX_THREADS) {
            struct pyrt_tstate ts;
            struct probe_thread *t;
            if (pyrt_tstate_read(ts_addr, &ts, pyrt_mem_read_at) != 0 || ts.interp != in.addr) {
                *broken = 1; /* freed under us (a thread's exit) */
                break;
            }
            long nid = ts.native_id > 0 ? ts.native_id : pyrt_tid_from_pthread(ts.ident);
            if (locked && holder == ts_addr)
                s->gil_holder_native_id = nid;
            if (w->only > 0) {
                struct probe_thread id = {.ident = ts.ident, .native_id = nid, .interp_id = in.id};
                if (pyrt_thread_id(&id) != w->only) {
                    ts_addr = ts.next;
                    if (ts_addr == in.head)
                        break;
                    continue;
                }
            }
            if (!(t = thread_add(s, raws, cap))) {
                w->want_raw = want_raw;
                return pb_err_set(err, -ENOMEM, "out of memory");
            }
            t->ident = ts.ident;
            t->native_id = nid;
            t->interp_id = in.id;
            t->is_main = ts.ident == main_ident && in.id == 0;
            t->daemon = -1;
            t->holds_gil = locked && holder == ts_addr;
            t->name = w->comm_later ? strdup("") : comm_read(t->native_id);
            if (!t->name || frames_walk(w, t, ts_addr, ts.top, &(*raws)[s->nthreads - 1]) < 0) {
                w->want_raw = want_raw;
                return pb_err_set(err, -ENOMEM, "out of memory");
            }
            ts_addr = ts.next;
            if (ts_addr == in.head)
                break;
        }
    }
    w->want_raw = want_raw;
    return 0;
}

/* The thread list, read without the lock that guards it: a thread's exit unlinks its state,
 * then frees it, so a walk may meet a freed state and stop before the states behind it. Such
 * a walk is dropped and the list walked again from the heads (the unlink came first), three
 * walks at most; the last one's threads are reported as they are. */
static int threads_walk(struct walk *w, struct probe_snapshot *s, struct pyrt_rawframe ***raws,
                        struct pb_err *err)
{
    int cap = 0, broken = 0, rc = 0;
    for (int tries = 0; tries < 3; tries++) {
        for (int i = 0; i < s->nthreads; i++) {
            pyrt_thread_free(&s->threads[i]);
            free((*raws)[i]);
            (*raws)[i] = NULL;
        }
        s->nthreads = 0;
        s->gil_holder_native_id = -1;
        rc = walk_once(w, s, raws, &cap, &broken, err);
        if (rc < 0 || !broken)
            break;
    }
    return rc;
}

/* threading's names remembered from the last snapshot taken with PROBE_SNAP_NAMES, so that a
 * GIL-free snapshot names threads as threading does when the GIL is not to be had (a hang in C)
 * or not worth waiting for (pyrt_names_fresh). A thread is known by (ident, native id). */
#define NAMES_MAX 256
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    unsigned long ident;
    long native_id;
    int daemon, from_threading;
    char name[64];
} names[NAMES_MAX];
static int nnames;
static struct timespec names_at;

static void names_remember(const struct probe_snapshot *s)
{
    pthread_mutex_lock(&names_mu);
    nnames = 0;
    for (int i = 0; i < s->nthreads && nnames < NAMES_MAX; i++) {
        const struct probe_thread *t = &s->threads[i];
        int from = t->name_from_threading && t->name && strlen(t->name) < sizeof names[0].name;
        names[nnames].ident = t->ident;
        names[nnames].native_id = t->native_id;
        names[nnames].daemon = t->daemon;
        names[nnames].from_threading = from;
        strcpy(names[nnames].name, from ? t->name : "");
        nnames++;
    }
    clock_gettime(CLOCK_MONOTONIC, &names_at);
    pthread_mutex_unlock(&names_mu);
}

/* Names from the cache for the threads a GIL-free snapshot named from the OS. */
static void names_recall(struct probe_snapshot *s)
{
    pthread_mutex_lock(&names_mu);
    for (int i = 0; i < s->nthreads; i++) {
        struct probe_thread *t = &s->threads[i];
        for (int k = 0; k < nnames && !t->name_from_threading; k++) {
            char *n;
            if (names[k].ident != t->ident || names[k].native_id != t->native_id ||
                !names[k].from_threading || !(n = strdup(names[k].name)))
                continue;
            free(t->name);
            t->name = n;
            t->daemon = names[k].daemon;
            t->name_from_threading = 1;
        }
    }
    pthread_mutex_unlock(&names_mu);
}

int pyrt_names_known(const struct probe_snapshot *s)
{
    int known = 1;
    pthread_mutex_lock(&names_mu);
    for (int i = 0; i < s->nthreads && known; i++) {
        known = 0;
        for (int k = 0; k < nnames && !known; k++)
            known = names[k].ident == s->threads[i].ident &&
                    names[k].native_id == s->threads[i].native_id;
    }
    pthread_mutex_unlock(&names_mu);
    return known;
}

int pyrt_names_fresh(int max_age_ms)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&names_mu);
    double age = (double)(now.tv_sec - names_at.tv_sec) * 1e3 +
                 (double)(now.tv_nsec - names_at.tv_nsec) / 1e6;
    int fresh = names_at.tv_sec != 0 && age <= max_age_ms;
    pthread_mutex_unlock(&names_mu);
    return fresh;
}

/* pyrt_mem_locals' locals gathered for one frame. */
struct mem_sink {
    struct probe_local l[100];
    int n, oom;
};

static void mem_add(void *arg, const char *name, const char *type, const char *value)
{
    struct mem_sink *m = arg;
    struct probe_local *l;
    if (m->n >= (int)(sizeof m->l / sizeof m->l[0]) || m->oom)
        return;
    l = &m->l[m->n];
    l->name = strdup(name);
    l->type = strdup(type);
    l->value = strdup(value);
    if (!l->name || !l->type || !l->value) {
        free(l->name);
        free(l->type);
        free(l->value);
        m->oom = 1;
        return;
    }
    m->n++;
}

/* f's locals read from memory (no GIL): nlocals stays -1 when they cannot be read. */
static void mem_locals(struct probe_frame *f, const struct pyrt_rawframe *raw)
{
    struct mem_sink *m = calloc(1, sizeof *m);
    f->nlocals = -1;
    f->locals = NULL;
    if (!m)
        return;
    if (pyrt_mem_locals((uintptr_t)raw->frame, (uintptr_t)raw->code, pyrt_mem_read_at, mem_add,
                        m) >= 0 &&
        (f->locals = calloc((size_t)(m->n ? m->n : 1), sizeof *f->locals)) != NULL) {
        memcpy(f->locals, m->l, (size_t)m->n * sizeof m->l[0]);
        f->nlocals = m->n;
    } else {
        for (int i = 0; i < m->n; i++) {
            free(m->l[i].name);
            free(m->l[i].type);
            free(m->l[i].value);
        }
    }
    free(m);
}

/* No GIL needed without flags or with PROBE_SNAP_MEMLOCALS; NAMES, LOCALS, TASKS Require GIL. */
static int snapshot(struct probe_snapshot *s, int flags, long only, int max_frames,
                    struct pb_err *err);

int pyrt_snapshot(struct probe_snapshot *s, int flags, int max_frames, struct pb_err *err)
{
    return snapshot(s, flags, 0, max_frames, err);
}

int pyrt_snapshot_thread(struct probe_snapshot *s, long id, int max_frames, struct pb_err *err)
{
    return snapshot(s, 0, id > 0 ? id : -1, max_frames, err);
}

static int snapshot(struct probe_snapshot *s, int flags, long only, int max_frames,
                    struct pb_err *err)
{
    struct walk *w;
    struct pyrt_rawframe **raws = NULL;
    int rc;

    memset(s, 0, sizeof *s);
    s->gil_holder_native_id = -1;
    s->gc_collecting = -1;
    version_read(s->version, sizeof s->version);
    if (!pyrt_ready() && (rc = pyrt_init(err)) < 0)
        return rc;
    if ((flags & (PROBE_SNAP_NAMES | PROBE_SNAP_LOCALS | PROBE_SNAP_TASKS)) && !PyGILState_Check())
        return pb_err_set(err, PB_ENOGIL, "names/locals/tasks need the GIL held by the caller");
    w = calloc(1, sizeof *w);
    if (!w)
        return pb_err_set(err, -ENOMEM, "out of memory");
    w->max_frames = max_frames <= 0           ? DEFAULT_FRAMES
                    : max_frames > MAX_FRAMES ? MAX_FRAMES
                                              : max_frames;
    w->want_raw = (flags & (PROBE_SNAP_LOCALS | PROBE_SNAP_MEMLOCALS)) != 0;
    w->only = only;
    w->comm_later = (flags & PROBE_SNAP_NAMES) != 0;
    w->fw.rd = pyrt_mem_read_at;
    w->fw.flags = PYRT_WALK_CHECK;
    w->fw.max = w->max_frames;
    w->fw.memo = w->memo;
    w->fw.nmemo = CACHE_SLOTS;
    w->fw.out = calloc((size_t)w->max_frames, sizeof *w->fw.out);
    w->fw.ext = calloc((size_t)w->max_frames, sizeof *w->fw.ext);
    if (!w->fw.out || !w->fw.ext) {
        free(w->fw.out);
        free(w->fw.ext);
        free(w);
        return pb_err_set(err, -ENOMEM, "out of memory");
    }

    rc = threads_walk(w, s, &raws, err);
    if (rc == 0 && (flags & PROBE_SNAP_MEMLOCALS) && !(flags & PROBE_SNAP_LOCALS))
        for (int i = 0; i < s->nthreads; i++)
            for (int j = 0; raws[i] && j < s->threads[i].nframes; j++)
                mem_locals(&s->threads[i].frames[j], &raws[i][j]);
    if (rc == 0 && (flags & (PROBE_SNAP_NAMES | PROBE_SNAP_LOCALS))) {
        struct exc_saved saved;
        exc_save(&saved);
        pyrt_obj_cache(1); /* no code of the program's runs until it is off */
        for (int i = 0; i < s->nthreads; i++) {
            struct probe_thread *t = &s->threads[i];
            if (flags & PROBE_SNAP_NAMES)
                t->name_from_threading = pyrt_names_read(t);
            if ((flags & PROBE_SNAP_LOCALS) && raws[i])
                for (int j = 0; j < t->nframes; j++)
                    pyrt_locals_read(&t->frames[j], &raws[i][j]);
        }
        pyrt_obj_cache(0);
        exc_restore(&saved);
        if (flags & PROBE_SNAP_NAMES) {
            for (int i = 0; i < s->nthreads; i++) { /* the OS's name where threading has none */
                struct probe_thread *t = &s->threads[i];
                char *os_name = t->name_from_threading ? NULL : comm_read(t->native_id);
                if (os_name) {
                    free(t->name);
                    t->name = os_name;
                }
            }
            names_remember(s);
        }
    }
    if (rc == 0 && !(flags & PROBE_SNAP_NAMES))
        names_recall(s);
    if (rc == 0 && (flags & PROBE_SNAP_TASKS))
        rc = pyrt_asyncio_tasks(&s->atasks, err);
    else if (rc == 0 && (flags & PROBE_SNAP_TASKS_MEM)) {
        struct pb_err e = {0};
        if (pyrt_asyncio_tasks_mem(&s->atasks, &e) < 0) /* unread: the dump says why */
            PB_LOG(PB_LOG_DEBUG, "asyncio tasks without the GIL: %s", e.msg);
        pb_err_clear(&e);
    }
    for (int i = 0; i < s->nthreads; i++)
        free(raws ? raws[i] : NULL);
    free(raws);
    for (int i = 0; i < CACHE_SLOTS; i++)
        code_info_clear(&w->cache[i]);
    free(w->fw.out);
    free(w->fw.ext);
    free(w);
    if (rc < 0)
        pyrt_snapshot_free(s);
    return rc;
}
