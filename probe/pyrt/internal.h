/* SPDX-License-Identifier: MIT */
/* Internals shared by the files of pyrt/ (the interpreter reader, see pyrt.h): the CPython
 * internal headers of the version being built and the declarations of each layer. The files
 * form layers, each using only those below it:
 *   read.c (read.h)      async-signal-safe fault-proof read, pointer test, UTF-8 output
 *   lines.c, frames.c    line tables; the per-version frame walker (frames.h; signal-safe)
 *   safe.c               reads with the pipe fallback, pthread_t -> tid, reader set-up
 *   decode.c             str/bytes objects into malloc'd strings
 *   repr.c, locals.c     what needs the GIL: bounded repr, then thread names and locals
 *   walk.c, snapshot.c   the snapshot (pyrt.h) on top of all of them
 * sig/pyrt_sig.c uses read.c, lines.c, frames.c and safe.c's set-up.
 * Everything here is hidden (-fvisibility=hidden); nothing is exported from the probe.
 * Rule for remote pointers: a `const void *` named `addr`/`obj` is interpreter memory that is
 * only ever read through probe_mem_read*(), never dereferenced. */
#ifndef PROBE_PYRT_INTERNAL_H
#define PROBE_PYRT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The internal headers need Py_BUILD_CORE. 3.13's pull in mimalloc's headers, which test
 * undefined macros in #if (harmless there, but -Wundef would warn and CI uses -Werror), and
 * 3.14's inline functions leave parameters unused: those warnings are silenced for the CPython
 * headers only. */
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wundef"
#pragma GCC diagnostic ignored "-Wunused-parameter" /* 3.14+'s pycore_stackref.h */
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "pycore_code.h"
#include "pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x03090000
#include "pycore_interp.h"
#include "pycore_runtime.h"
#endif
#include "pycore_pystate.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "pycore_stackref.h"
#endif
#pragma GCC diagnostic pop

#include "frames.h"
#include "pyrt.h"
#include "read.h"

/* 3.14+: a frame holds tagged stack references (pycore_stackref.h), f_executable and its locals
 * among them: the object's address with tags in its low bits (Py_TAG_BITS); a tagged int (every
 * tag bit set) and the NULL reference are no object (0). */
#if PY_VERSION_HEX >= 0x030E0000
static inline uintptr_t pyrt_ref_addr(_PyStackRef r)
{
    uintptr_t a = r.bits & ~(uintptr_t)Py_TAG_BITS;
    return (r.bits & Py_TAG_BITS) == Py_INT_TAG ? 0 : a;
}
#endif

/* Hard bounds of every loop over interpreter data. */
#define PYRT_MAX_THREADS 4096
#define PYRT_MAX_STR 1024      /* bytes of UTF-8 kept from a code/file/thread name */
#define PYRT_MAX_TABLE 262144  /* bytes of a line table read */

/* ---- safe.c: fault-proof reads (No GIL needed, thread-safe) ---- */

/* Choose the read method (process_vm_readv on ourselves, else a pipe). Idempotent. */
int probe_mem_init(void);
/* Copy exactly n bytes from addr into dst. Returns 0, or -EFAULT when any byte is unreadable
 * (dst is then unspecified). Never crashes on a bad address. */
int probe_mem_read(const void *addr, void *dst, size_t n);
/* Copy up to n bytes, stopping at the first unreadable page. Returns the number of bytes copied
 * (0 when addr itself is unreadable). */
size_t probe_mem_read_upto(const void *addr, void *dst, size_t n);
/* pyrt_read_fn over probe_mem_read: 0, or -1. */
int probe_mem_read_at(uintptr_t addr, void *dst, size_t n);

/* ---- safe.c: pthread_t -> kernel tid on 3.8-3.10 (No GIL needed) ---- */

/* 1 once probe_pyrt_init (pyrt.h, defined in safe.c) has succeeded. */
int probe_pyrt_ready(void);

/* Find the offset of the tid inside glibc's struct pthread with two threads of our own.
 * Returns 0 or a negative code. */
int probe_tid_calibrate(struct pb_err *err);
/* Kernel tid of a live thread given its pthread_t, or -1 when unknown or the thread is gone. */
long probe_tid_from_pthread(unsigned long pthread_ident);

/* ---- layout.c: the build's offsets against the interpreter's _Py_DebugOffsets (3.13+) ---- */

/* 0 when every field the reader uses sits where the build expects, else PB_ENOBUILD with a
 * line naming the first that moved. No GIL needed. */
int pyrt_layout_check(struct pb_err *err);

/* ---- decode.c: str/bytes objects from copied memory (No GIL needed) ---- */

/* UTF-8 of the str object at obj, at most max bytes (cut on a character boundary), in a new
 * malloc'd NUL-terminated string; NULL when obj is not a readable exact str. */
char *probe_str_read(const void *obj, size_t max);
/* Copy of the payload of the bytes object at obj (at most max bytes) into a new malloc'd
 * buffer, its length in *len. Returns NULL when obj is not a readable exact bytes object. */
unsigned char *probe_bytes_read(const void *obj, size_t max, size_t *len);

/* ---- repr.c: bounded repr (Requires GIL) ---- */

#define PYRT_REPR_MAX 256
/* Bounded repr of o into a new malloc'd string (<= PYRT_REPR_MAX chars); never runs user code:
 * exact builtins only, anything else "<module.Type object at 0x...>". NULL on out of memory. */
char *probe_repr_new(PyObject *o);
/* Name of o's type ("int", "mymod.Point") in a new malloc'd string. */
char *probe_repr_typename(PyObject *o);


/* ---- locals.c: what needs the GIL (Requires GIL for all of these) ---- */

/* Raw positions the walk remembers for the GIL-side passes. */
struct pyrt_rawframe {
    const void *frame; /* PyFrameObject* (3.8-3.10) or _PyInterpreterFrame* (3.11+) */
    const void *code;  /* PyCodeObject* */
};

/* Fill t->name/t->daemon from threading._active if `threading` is already imported. Clears
 * any exception it causes. Returns 1 when the name came from threading, else 0. */
int probe_names_read(struct probe_thread *t);
/* Fill f->locals/f->nlocals for one frame. Returns 0 or a negative code (f->nlocals stays -1). */
int probe_locals_read(struct probe_frame *f, const struct pyrt_rawframe *raw);

#endif
