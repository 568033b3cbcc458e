/* SPDX-License-Identifier: MIT */
/* Internals shared by the files of pyrt/ (the interpreter reader, see pyrt.h): the CPython
 * internal headers of the version being built and the declarations of each layer. The files
 * form layers, each using only those below it:
 *   read.c (read.h)      async-signal-safe fault-proof read, pointer test, UTF-8 output
 *   lines.c, frames.c    line tables; the per-version frame walker (frames.h; signal-safe)
 *   safe.c               reads with the pipe fallback, pthread_t -> tid, reader set-up
 *   decode.c             str/bytes objects into malloc'd strings
 *   repr.c, tensor.c,    what needs the GIL: bounded repr (repr.h; tensors by shape, dtype,
 *   locals.c             device), then thread names and locals
 *   walk.c, snapshot.c   the snapshot (pyrt.h) on top of all of them
 *   asyncio.c, atasks.c  its asyncio tasks (GIL; atasks.c plain C: who awaits whom, cycles)
 * sig/pyrt_sig.c uses read.c, lines.c, frames.c and safe.c's set-up.
 * Everything here is hidden (-fvisibility=hidden); nothing is exported from the probe.
 * Rule for remote pointers: a `const void *` named `addr`/`obj` is interpreter memory that is
 * only ever read through pyrt_mem_read*(), never dereferenced. */
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

/* The interpreter's globals the walker compares with or starts from: ours in the probe; in the
 * out-of-process reader (built with PYRT_REMOTE, probe/reader/) the target's, found by the
 * CLI in its ELF symbols. */
#ifdef PYRT_REMOTE
struct pyrt_remote_syms {
    uintptr_t runtime, code_type, frame_type, unicode_type, bytes_type;
    /* for locals read from memory (memlocals.c); 0 when the target lacks one: such values
     * show by type name */
    uintptr_t long_type, bool_type, float_type, tuple_type, list_type, dict_type, cell_type, none;
    /* for asyncio tasks (asyncio_mem.c, 3.14+); 0 when the target lacks one */
    uintptr_t coro_type, gen_type, asyncgen_type, set_type;
};
extern struct pyrt_remote_syms pyrt_remote;
/* What the out-of-process reader (probe/reader/) gives asyncio_mem.c before
 * pyrt_asyncio_tasks_mem: the offsets of ".AsyncioDebug" (noffs of them, 13 used), read by the
 * CLI from the target's module file; the UTF-8 of the str at obj into out (cap bytes with the
 * NUL: 0, or -1); a code object's function and file names, line table (each malloc'd) and first
 * line (0, or -1). pyrt_asyncio_mem_remote_set: 0, or -1 when the offsets are implausible (or
 * before 3.14). */
struct pyrt_asyncio_mem_remote {
    const uint64_t *offs;
    int noffs;
    int (*str)(uintptr_t obj, char *out, size_t cap);
    int (*code)(uintptr_t code, char **func, char **file, unsigned char **table, size_t *tablen,
                int *firstlineno);
};
int pyrt_asyncio_mem_remote_set(const struct pyrt_asyncio_mem_remote *r);
#define PYRT_RUNTIME ((_PyRuntimeState *)pyrt_remote.runtime)
#define PYRT_CODE_TYPE ((PyTypeObject *)pyrt_remote.code_type)
#define PYRT_FRAME_TYPE ((PyTypeObject *)pyrt_remote.frame_type)
#define PYRT_UNICODE_TYPE ((PyTypeObject *)pyrt_remote.unicode_type)
#define PYRT_BYTES_TYPE ((PyTypeObject *)pyrt_remote.bytes_type)
#define PYRT_LONG_TYPE ((PyTypeObject *)pyrt_remote.long_type)
#define PYRT_BOOL_TYPE ((PyTypeObject *)pyrt_remote.bool_type)
#define PYRT_FLOAT_TYPE ((PyTypeObject *)pyrt_remote.float_type)
#define PYRT_TUPLE_TYPE ((PyTypeObject *)pyrt_remote.tuple_type)
#define PYRT_LIST_TYPE ((PyTypeObject *)pyrt_remote.list_type)
#define PYRT_DICT_TYPE ((PyTypeObject *)pyrt_remote.dict_type)
#define PYRT_CELL_TYPE ((PyTypeObject *)pyrt_remote.cell_type)
#define PYRT_NONE ((PyObject *)pyrt_remote.none)
#define PYRT_CORO_TYPE ((PyTypeObject *)pyrt_remote.coro_type)
#define PYRT_GEN_TYPE ((PyTypeObject *)pyrt_remote.gen_type)
#define PYRT_ASYNCGEN_TYPE ((PyTypeObject *)pyrt_remote.asyncgen_type)
#define PYRT_SET_TYPE ((PyTypeObject *)pyrt_remote.set_type)
#else
#define PYRT_RUNTIME (&_PyRuntime)
#define PYRT_CODE_TYPE (&PyCode_Type)
#define PYRT_FRAME_TYPE (&PyFrame_Type)
#define PYRT_UNICODE_TYPE (&PyUnicode_Type)
#define PYRT_BYTES_TYPE (&PyBytes_Type)
#define PYRT_LONG_TYPE (&PyLong_Type)
#define PYRT_BOOL_TYPE (&PyBool_Type)
#define PYRT_FLOAT_TYPE (&PyFloat_Type)
#define PYRT_TUPLE_TYPE (&PyTuple_Type)
#define PYRT_LIST_TYPE (&PyList_Type)
#define PYRT_DICT_TYPE (&PyDict_Type)
#define PYRT_CELL_TYPE (&PyCell_Type)
#define PYRT_NONE (Py_None)
#define PYRT_CORO_TYPE (&PyCoro_Type)
#define PYRT_GEN_TYPE (&PyGen_Type)
#define PYRT_ASYNCGEN_TYPE (&PyAsyncGen_Type)
#define PYRT_SET_TYPE (&PySet_Type)
#endif

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
#define PYRT_MAX_STR 1024     /* bytes of UTF-8 kept from a code/file/thread name */
#define PYRT_MAX_TABLE 262144 /* bytes of a line table read */

/* ---- safe.c: fault-proof reads (No GIL needed, thread-safe) ---- */

/* Choose the read method (process_vm_readv on ourselves, else a pipe). Idempotent. */
int pyrt_mem_init(void);
/* Copy exactly n bytes from addr into dst. Returns 0, or -EFAULT when any byte is unreadable
 * (dst is then unspecified). Never crashes on a bad address. */
int pyrt_mem_read(const void *addr, void *dst, size_t n);
/* Copy up to n bytes, stopping at the first unreadable page. Returns the number of bytes copied
 * (0 when addr itself is unreadable). */
size_t pyrt_mem_read_upto(const void *addr, void *dst, size_t n);
/* pyrt_read_fn over pyrt_mem_read: 0, or -1. */
int pyrt_mem_read_at(uintptr_t addr, void *dst, size_t n);

/* ---- safe.c: pthread_t -> kernel tid on 3.8-3.10 (No GIL needed) ---- */

/* 1 once pyrt_init (pyrt.h, defined in safe.c) has succeeded. */
int pyrt_ready(void);

/* Find the offset of the tid inside glibc's struct pthread with two threads of our own: the
 * calling one and the one that called pyrt_tid_seed (pyrt.h) when that was another, else a
 * helper started here. Returns 0 or a negative code. */
int pyrt_tid_calibrate(struct pb_err *err);
/* Kernel tid of a live thread given its pthread_t, or -1 when unknown or the thread is gone. */
long pyrt_tid_from_pthread(unsigned long pthread_ident);

/* ---- layout.c: the build's offsets against the interpreter's _Py_DebugOffsets (3.13+) ---- */

/* 0 when every field the reader uses sits where the build expects, else PB_ENOBUILD with a
 * line naming the first that moved. No GIL needed. */
int pyrt_layout_check(struct pb_err *err);

/* ---- decode.c: str/bytes objects from copied memory (No GIL needed) ---- */

/* UTF-8 of the str object at obj, at most max bytes (cut on a character boundary), in a new
 * malloc'd NUL-terminated string; NULL when obj is not a readable exact str. */
char *pyrt_str_read(const void *obj, size_t max);
/* Copy of the payload of the bytes object at obj (at most max bytes) into a new malloc'd
 * buffer, its length in *len. Returns NULL when obj is not a readable exact bytes object. */
unsigned char *pyrt_bytes_read(const void *obj, size_t max, size_t *len);

/* ---- memlocals.c: locals read from memory (No GIL needed; no allocation, no CPython call) ---- */

/* One local: its name, its type's name and its value's text (memlocals.c says which values are
 * shown by value). */
typedef void (*pyrt_local_fn)(void *arg, const char *name, const char *type, const char *value);
/* Calls fn for each bound fast local of the frame at frame (PyFrameObject* before 3.11,
 * _PyInterpreterFrame* after) running code, cells dereferenced, at most 100. Returns the
 * count, or -1 when the frame or its code is unreadable or it has no fast locals (a module or
 * class body). Everything read through rd. */
int pyrt_mem_locals(uintptr_t frame, uintptr_t code, pyrt_read_fn rd, pyrt_local_fn fn, void *arg);
/* The type name and value text of the object at obj, as pyrt_mem_locals shows a local. 0, or -1
 * when obj is unreadable (value "<invalid object at 0x...>"). */
int pyrt_mem_value(uintptr_t obj, pyrt_read_fn rd, char *type, size_t typen, char *value,
                   size_t valuen);
/* numpy.c: a NumPy value of the object at obj, of type tp, read through rd without the GIL or
 * any call (a scalar by value: "2", "(1+2j)", "numpy.datetime64('2024-01-01')"; an array by
 * shape and dtype: "ndarray(shape=[2, 3], dtype=float64)"); name: what to call an array's
 * Python subclass (NULL: its tp_name). 1 with out filled, 0 when obj is no NumPy value. */
int pyrt_np_value(uintptr_t obj, uintptr_t tp, const char *name, pyrt_read_fn rd, char *out,
                  size_t n);

/* ---- repr.c: bounded repr (Requires GIL) ---- */

#include "repr.h"

/* ---- locals.c: what needs the GIL (Requires GIL for all of these) ---- */

/* Raw positions the walk remembers for the GIL-side passes. */
struct pyrt_rawframe {
    const void *frame; /* PyFrameObject* (3.8-3.10) or _PyInterpreterFrame* (3.11+) */
    const void *code;  /* PyCodeObject* */
};

/* Fill t->name/t->daemon from threading._active if `threading` is already imported. Clears
 * any exception it causes. Returns 1 when the name came from threading, else 0. */
int pyrt_names_read(struct probe_thread *t);
/* Fill f->locals/f->nlocals for one frame. Returns 0 or a negative code (f->nlocals stays -1). */
int pyrt_locals_read(struct probe_frame *f, const struct pyrt_rawframe *raw);

#endif
