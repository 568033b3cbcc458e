/* SPDX-License-Identifier: MIT */
/* Releasing snapshots (pyrt.h's memory rule). Plain C with no CPython dependency, so dap/ unit
 * tests link it next to a fake reader. */
#include <stdlib.h>

#include "pyrt.h"

long pyrt_thread_id(const struct probe_thread *t)
{
    long id = t->native_id > 0 ? t->native_id : (long)(t->ident & 0x7fffffff);
    return t->interp_id > 0 ? id + (long)t->interp_id * PROBE_INTERP_ID_STRIDE : id;
}

void pyrt_thread_free(struct probe_thread *t)
{
    for (int j = 0; t->frames && j < t->nframes; j++) {
        struct probe_frame *f = &t->frames[j];
        for (int k = 0; f->locals && k < f->nlocals; k++) {
            free(f->locals[k].name);
            free(f->locals[k].type);
            free(f->locals[k].value);
        }
        free(f->locals);
        free(f->func);
        free(f->file);
    }
    free(t->frames);
    free(t->name);
    t->frames = NULL;
    t->name = NULL;
    t->nframes = 0;
}

void pyrt_snapshot_free(struct probe_snapshot *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nthreads; i++)
        pyrt_thread_free(&s->threads[i]);
    free(s->threads);
    s->threads = NULL;
    s->nthreads = 0;
    pyrt_atasks_free(&s->atasks);
}
