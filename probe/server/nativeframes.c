/* SPDX-License-Identifier: MIT */
/* stackTrace with native frames (attach's "nativeFrames", server.h): the thread's native stack
 * comes from the thread itself, merged with its Python frames, by the same code as `debug
 * --dump --native` (prof_native_stacks: SIGPROF to the thread, the sampler's unwinder, the one
 * merge, common/stackmerge.c), asked with CPython's internals kept and marked; here they are
 * collapsed into one "label" frame per run ("merged") or shown ("all"). Native frames are
 * "subtle", with instructionPointerReference and moduleId (prof_modules, the ids of the
 * `modules` request); file:line of native code needs DWARF, which the probe does not read in
 * the target, so they have no source. The probe's own frames (a parked thread waits in them)
 * and the interpreter's frames that called into them are left out. Python frames keep the ids
 * they have without native frames (stackTrace's depth among Python frames), so scopes,
 * variables and evaluate on them work as before; native and label frames have ids of a
 * thread index of their own (the negated tid), for which scopes answers no scope.
 * When the native stack cannot be had (the thread blocks SIGPROF, did not answer within the
 * bound, or its two stacks cannot be matched) the Python frames come alone under a label frame
 * that says why. Loop thread, but the ask (srv_native_ask), which may wait for the thread: the
 * task thread for a thread not parked (req/stackTrace.c). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/server.h"
#include "pyrt/pyrt.h"
#include "prof/prof.h"

enum { E_PY, E_NATIVE, E_LABEL };

struct entry {
    int kind;
    int py;                       /* E_PY: depth among the Python frames */
    const struct prof_nframe *nf; /* E_NATIVE; E_PY of a thread not parked: its frame */
    int exact;                    /* E_NATIVE: the innermost frame (its pc is not a return) */
    int count;                    /* E_LABEL: internal frames collapsed (0: a note) */
};

int srv_native_frame_id(long long id)
{
    long tid;
    int depth;
    return pb_frame_id_parse(id, &tid, &depth) == 0 && tid < 0;
}

/* 1 when thread tid blocks SIGPROF now (SigBlk of its status). */
static int blocks_sigprof(long tid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/self/task/%ld/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char *p = strstr(buf, "\nSigBlk:");
    return p && (strtoull(p + 8, NULL, 16) >> (SIGPROF - 1) & 1);
}

/* The path of the probe's own object (its frames are never shown). */
static const char *probe_path(void)
{
    static char path[PROF_MODULE_PATH];
    if (!path[0]) {
        Dl_info info;
        if (dladdr((void *)srv_native_frame_id, &info) && info.dli_fname)
            snprintf(path, sizeof path, "%s", info.dli_fname);
    }
    return path;
}

static int is_probe(const struct prof_nframe *f)
{
    return f->kind == PROF_NF_NATIVE && f->file && strcmp(f->file, probe_path()) == 0;
}

static cJSON *label_frame(long long id, const char *text)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddStringToObject(o, "name", text);
    cJSON_AddNumberToObject(o, "line", 0);
    cJSON_AddNumberToObject(o, "column", 0);
    cJSON_AddStringToObject(o, "presentationHint", "label");
    return o;
}

static cJSON *native_frame(long long id, const struct entry *e, const struct prof_module *mods,
                           int nmods)
{
    const struct prof_nframe *f = e->nf;
    char name[600], ip[32];
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    base = base ? base + 1 : f->file;
    if (f->name)
        snprintf(name, sizeof name, "%s+0x%lx", f->name, (unsigned long)f->offset);
    else if (base)
        snprintf(name, sizeof name, "%s+0x%lx", base, (unsigned long)(f->pc - f->bias));
    else
        snprintf(name, sizeof name, "0x%lx", (unsigned long)f->pc);
    cJSON *o = label_frame(id, name);
    cJSON_ReplaceItemInObject(o, "presentationHint", cJSON_CreateString("subtle"));
    snprintf(ip, sizeof ip, "0x%lx", (unsigned long)f->pc);
    cJSON_AddStringToObject(o, "instructionPointerReference", ip);
    int m = prof_module_find(mods, nmods, e->exact || f->pc == 0 ? f->pc : f->pc - 1);
    if (m >= 0)
        cJSON_AddNumberToObject(o, "moduleId", mods[m].id);
    return o;
}

/* The entries of a merged stack s into e (room for s->n + 1). expect (a parked thread's stop
 * record, nexpect frames; NULL: any) are the Python frames s must hold, by function name.
 * Returns the count, or -1 when s's Python frames are not those. */
static int merge_entries(const struct prof_nstack *s, int mode, const struct probe_frame *expect,
                         int nexpect, struct entry *e)
{
    int first_py = s->n, cut = -1, n = 0, py = 0;
    for (int i = 0; i < s->n; i++)
        if (s->f[i].kind == PROF_NF_PYTHON) {
            first_py = i;
            break;
        }
    for (int i = 0; i < first_py; i++)
        if (is_probe(&s->f[i]))
            cut = i;
    /* A thread in the probe (parked): its frames, and the interpreter's that called them. */
    if (cut >= 0)
        cut = first_py - 1;
    for (int i = cut + 1; i < s->n; i++) {
        const struct prof_nframe *f = &s->f[i];
        if (f->kind == PROF_NF_PYTHON) {
            if (expect && (py >= nexpect || !f->name || !expect[py].func ||
                           strcmp(f->name, expect[py].func) != 0))
                return -1;
            e[n++] = (struct entry){.kind = E_PY, .py = py++, .nf = f};
        } else if (is_probe(f)) {
            continue;
        } else if (f->internal && mode == SRV_NATIVE_MERGED) {
            if (n > 0 && e[n - 1].kind == E_LABEL)
                e[n - 1].count++;
            else
                e[n++] = (struct entry){.kind = E_LABEL, .count = 1};
        } else {
            e[n++] = (struct entry){.kind = E_NATIVE, .nf = f, .exact = i == 0};
        }
    }
    return expect && py != nexpect ? -1 : n;
}

void srv_native_ask(long tid, struct srv_native_answer *a)
{
    struct prof_nstack ns;
    char *note = a->note;
    size_t nn = sizeof a->note;
    memset(&ns, 0, sizeof ns);
    note[0] = '\0';
    if (blocks_sigprof(tid)) {
        snprintf(note, nn,
                 "native frames not shown: the thread blocks SIGPROF, so its "
                 "native stack cannot be read");
    } else {
        struct pb_err nerr;
        if (prof_native_stacks(&tid, 1, 1, &ns, &nerr) < 0)
            snprintf(note, nn, "native frames not shown: %s", nerr.msg);
        else if (!ns.answered && ns.blocked)
            snprintf(note, nn,
                     "native frames not shown: the thread kept waking while "
                     "its stack was read (a blocked thread is never "
                     "signalled)");
        else if (!ns.answered)
            snprintf(note, nn,
                     "native frames not shown: the thread did not answer "
                     "in time (it blocks SIGPROF or does not run)");
        else if (!ns.merged)
            snprintf(note, nn,
                     "native frames not shown: the native stack (%d eval-loop "
                     "frames) and the Python stack (%d entry frames) could not be matched",
                     ns.evals, ns.entries);
    }
    a->ns = ns;
}

int srv_native_stack_answered(long tid, int mode, const struct probe_frame *py, int npy,
                              int inspectable, long long start, long long levels,
                              struct srv_native_answer *a, cJSON *body, struct pb_err *err)
{
    struct prof_nstack ns = a->ns;
    struct entry *e = NULL;
    struct prof_module *mods = NULL;
    const char *note = a->note;
    char mismatch[160] = "";
    int n = -1, nmods = 0;
    memset(&a->ns, 0, sizeof a->ns); /* ours to free now */
    if (!note[0]) {
        e = calloc((size_t)ns.n + 1, sizeof *e);
        if (!e) {
            prof_nstack_free(&ns);
            return pb_err_set(err, -ENOMEM, "out of memory");
        }
        n = merge_entries(&ns, mode, inspectable ? py : NULL, npy, e);
        if (n < 0)
            note = strcpy(mismatch, "native frames not shown: the stack recorded when the "
                                    "thread stopped is not the one it is in");
        nmods = prof_modules(&mods, 0);
    }
    if (note[0]) { /* the Python frames alone, under the note */
        free(e);
        e = calloc((size_t)npy + 1, sizeof *e);
        if (!e) {
            prof_nstack_free(&ns);
            return pb_err_set(err, -ENOMEM, "out of memory");
        }
        e[0] = (struct entry){.kind = E_LABEL};
        for (n = 1; n <= npy; n++)
            e[n] = (struct entry){.kind = E_PY, .py = n - 1};
    }
    cJSON *arr = cJSON_AddArrayToObject(body, "stackFrames");
    long long end = levels > 0 && start + levels < n ? start + levels : n;
    for (long long i = start; i < end; i++) {
        const struct entry *x = &e[i];
        long long own = pb_frame_id(-tid, (int)i);
        cJSON *o;
        if (x->kind == E_PY && (!x->nf || inspectable)) {
            o = srv_json_stack_frame(&py[x->py], tid, x->py, inspectable);
        } else if (x->kind == E_PY) {
            struct probe_frame pf = {.func = x->nf->name, .file = x->nf->file, .line = x->nf->line};
            o = srv_json_stack_frame(&pf, tid, x->py, 0);
        } else if (x->kind == E_NATIVE) {
            o = native_frame(own, x, mods, nmods > 0 ? nmods : 0);
        } else {
            char text[300];
            if (x->count)
                snprintf(text, sizeof text, "[%d CPython internal frame%s]", x->count,
                         x->count == 1 ? "" : "s");
            o = label_frame(own, x->count ? text : note);
        }
        cJSON_AddItemToArray(arr, o);
    }
    cJSON_AddNumberToObject(body, "totalFrames", n);
    free(e);
    free(mods);
    prof_nstack_free(&ns);
    return 0;
}

int srv_native_stack(long tid, int mode, const struct probe_frame *py, int npy, int inspectable,
                     long long start, long long levels, cJSON *body, struct pb_err *err)
{
    struct srv_native_answer a;
    srv_native_ask(tid, &a);
    return srv_native_stack_answered(tid, mode, py, npy, inspectable, start, levels, &a, body, err);
}
