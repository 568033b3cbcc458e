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
#include "pyrt/internal.h"
#include "pyrt_sig.h"
#include "unwind.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

struct pyrt_remote_syms pyrt_remote;
pyrt_read_fn pyrt_remote_read;

#define REMOTE_THREADS 1024

static cJSON *frame_json(const struct pyrt_sig_frame *f)
{
    char func[256], file[1024];
    int line = -1;
    cJSON *o = cJSON_CreateObject();
    pyrt_sig_describe(f, func, sizeof func, file, sizeof file, &line);
    cJSON_AddStringToObject(o, "name", func);
    cJSON_AddStringToObject(o, "file", file);
    cJSON_AddNumberToObject(o, "line", line);
    cJSON_AddBoolToObject(o, "entry", f->entry); /* for merging with native frames */
    return o;
}

/* The reader's one entry point. rd: reads the target's memory (0, or -1; it must never fault).
 * syms: the target's _PyRuntime, PyCode_Type, PyFrame_Type, PyUnicode_Type, PyBytes_Type
 * (runtime addresses); pid goes into the body as is. Returns the probing/dump body (threads
 * of every interpreter with id, ident, nativeId (null before 3.11: the caller finds it),
 * holdsGil (the main interpreter's GIL), main, interpreter (0: the main one), truncated, frames;
 * gil) as a malloc'd JSON text, or NULL with err filled. */
__attribute__((visibility("default"))) char *
probing_read_dump(pyrt_read_fn rd, int pid, const uintptr_t syms[5], int max_frames, char *err,
                  size_t errn);
char *probing_read_dump(pyrt_read_fn rd, int pid, const uintptr_t syms[5], int max_frames,
                        char *err, size_t errn)
{
    uintptr_t interp, head, holder = 0, *ts = NULL, main_ident = 0;
    long *ids = NULL;
    long long *interps = NULL;
    struct pyrt_sig_frame *fr = NULL;
    int locked = 0, n, rc;
    char *text = NULL;
    cJSON *body = NULL;
    pyrt_remote_read = rd;
    pyrt_remote = (struct pyrt_remote_syms){syms[0], syms[1], syms[2], syms[3], syms[4]};
    if (max_frames < 1)
        max_frames = 1;
    if ((rc = pyrt_threads_head(&interp, &head, pyrt_sig_read)) != 0) {
        snprintf(err, errn, rc == -1 ? "the interpreter of %d is not initialised, or its memory "
                                       "cannot be read (process_vm_readv)"
                                     : "the interpreter state of %d cannot be read", pid);
        return NULL;
    }
    ts = calloc(REMOTE_THREADS, sizeof *ts);
    ids = calloc(REMOTE_THREADS, sizeof *ids);
    interps = calloc(REMOTE_THREADS, sizeof *interps);
    fr = calloc((size_t)max_frames, sizeof *fr);
    body = cJSON_CreateObject();
    if (!ts || !ids || !interps || !fr || !body) {
        snprintf(err, errn, "out of memory");
        goto out;
    }
    pyrt_gil_read(interp, &locked, &holder, pyrt_sig_read);
    pyrt_sig_read((uintptr_t)&PYRT_RUNTIME->main_thread, &main_ident, sizeof main_ident);
    n = pyrt_sig_threads(ts, ids, interps, REMOTE_THREADS);
    cJSON_AddNumberToObject(body, "pid", pid);
    cJSON *gil = cJSON_AddObjectToObject(body, "gil");
    cJSON_AddNullToObject(gil, "holder"); /* the caller sets it from holdsGil */
    cJSON_AddBoolToObject(gil, "available", 0);
    cJSON *arr = cJSON_AddArrayToObject(body, "threads");
    for (int i = 0; i < n; i++) {
        struct pyrt_tstate t;
        if (pyrt_tstate_read(ts[i], &t, pyrt_sig_read) != 0)
            continue;
        cJSON *o = cJSON_CreateObject();
        /* as probe_thread_id (pyrt.h) gives it */
        cJSON_AddNumberToObject(o, "id", (double)(ids[i] > 0 ? ids[i]
                                                             : (long)(t.ident & 0x7fffffff)) +
                                             (double)interps[i] * 4194304.0);
        cJSON_AddNumberToObject(o, "ident", (double)t.ident);
        if (ids[i] > 0)
            cJSON_AddNumberToObject(o, "nativeId", (double)ids[i]);
        else
            cJSON_AddNullToObject(o, "nativeId");
        cJSON_AddBoolToObject(o, "holdsGil", locked && holder == ts[i]);
        cJSON_AddBoolToObject(o, "main", t.ident == main_ident && interps[i] == 0);
        cJSON_AddNumberToObject(o, "interpreter", (double)interps[i]);
        int nf = pyrt_sig_frames_tstate(ts[i], fr, max_frames);
        cJSON_AddBoolToObject(o, "truncated", nf == max_frames);
        cJSON *fa = cJSON_AddArrayToObject(o, "frames");
        for (int k = 0; k < nf; k++)
            cJSON_AddItemToArray(fa, frame_json(&fr[k]));
        cJSON_AddItemToArray(arr, o);
    }
    text = cJSON_PrintUnformatted(body);
    if (!text)
        snprintf(err, errn, "out of memory");
out:
    cJSON_Delete(body);
    free(fr);
    free(interps);
    free(ids);
    free(ts);
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
            return unwind_mod_from_image(ms->v[i].base, m, NULL) == 0 && pc >= m->lo && pc < m->hi
                       ? 0
                       : -1;
    return -1;
}

/* The second entry point: a thread's native stack from its registers (pc, sp, frame pointer)
 * with the probe's own unwinder over the target's memory (rd) and modules. Returns the count of
 * pcs in out (innermost first, the first exact), or -1 when out of memory. */
__attribute__((visibility("default"))) int
probing_read_unwind(pyrt_read_fn rd, const uintptr_t regs[3], const struct probing_read_mod *mods,
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
    int n = unwind_native(&uc, out, max, mods_find, &ms, cache);
    free(cache);
    return n;
}
#endif
