/* SPDX-License-Identifier: MIT */
/* The layout check (3.13+): CPython publishes the offsets of the fields a debugger reads in
 * _PyRuntime.debug_offsets (_Py_DebugOffsets, for out-of-process tools). The probe compiles
 * the same offsets in from the headers of its build (frames.c); before the reader first runs,
 * the fields it relies on are compared with the ones the running interpreter publishes, so that
 * a micro release or a distribution patch that moved one (the probe for 3.13 is built from
 * 3.13.0's headers and loads into any 3.13.x) is refused with one clear line instead of read
 * wrongly. Why compiled-in offsets stay the source: docs/architecture.md ("Structure offsets").
 * No GIL needed. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>

#if PY_VERSION_HEX >= 0x030D0000
#if PY_VERSION_HEX >= 0x030E0000
#include "pycore_debug_offsets.h"
#endif

struct field {
    const char *name;
    uint64_t built, *live;
};

int pyrt_layout_check(struct pb_err *err)
{
    _Py_DebugOffsets d;
    if (pyrt_mem_read(&_PyRuntime.debug_offsets, &d, sizeof d) != 0)
        return pb_err_set(err, -EFAULT, "unreadable _PyRuntime.debug_offsets");
    if (memcmp(d.cookie, _Py_Debug_Cookie, sizeof d.cookie) != 0)
        return pb_err_set(err, PB_ENOBUILD,
                          "this interpreter publishes no _Py_DebugOffsets: its layout cannot be "
                          "checked against the probe's build; rebuild the probe with its headers");
    if ((d.version >> 16) != (PY_VERSION_HEX >> 16))
        return pb_err_set(err, PB_ENOBUILD,
                          "the interpreter's debug offsets are for CPython %d.%d, the probe was "
                          "built for %d.%d: rebuild the probe with this interpreter's headers",
                          (int)(d.version >> 24) & 0xff, (int)(d.version >> 16) & 0xff,
                          PY_MAJOR_VERSION, PY_MINOR_VERSION);
    const struct field f[] = {
        {"_PyRuntimeState.interpreters.head", offsetof(_PyRuntimeState, interpreters.head),
         &d.runtime_state.interpreters_head},
        {"PyInterpreterState.id", offsetof(PyInterpreterState, id), &d.interpreter_state.id},
        {"PyInterpreterState.next", offsetof(PyInterpreterState, next), &d.interpreter_state.next},
        {"PyInterpreterState.threads.head", offsetof(PyInterpreterState, threads.head),
         &d.interpreter_state.threads_head},
        {"PyThreadState.next", offsetof(PyThreadState, next), &d.thread_state.next},
        {"PyThreadState.interp", offsetof(PyThreadState, interp), &d.thread_state.interp},
        {"PyThreadState.current_frame", offsetof(PyThreadState, current_frame),
         &d.thread_state.current_frame},
        {"PyThreadState.thread_id", offsetof(PyThreadState, thread_id), &d.thread_state.thread_id},
        {"PyThreadState.native_thread_id", offsetof(PyThreadState, native_thread_id),
         &d.thread_state.native_thread_id},
        {"_PyInterpreterFrame.previous", offsetof(_PyInterpreterFrame, previous),
         &d.interpreter_frame.previous},
        {"_PyInterpreterFrame.f_executable", offsetof(_PyInterpreterFrame, f_executable),
         &d.interpreter_frame.executable},
        {"_PyInterpreterFrame.instr_ptr", offsetof(_PyInterpreterFrame, instr_ptr),
         &d.interpreter_frame.instr_ptr},
        {"_PyInterpreterFrame.localsplus", offsetof(_PyInterpreterFrame, localsplus),
         &d.interpreter_frame.localsplus},
        {"_PyInterpreterFrame.owner", offsetof(_PyInterpreterFrame, owner),
         &d.interpreter_frame.owner},
        {"PyInterpreterState.gc", offsetof(PyInterpreterState, gc), &d.interpreter_state.gc},
        {"_gc_runtime_state.collecting", offsetof(struct _gc_runtime_state, collecting),
         &d.gc.collecting},
        {"PyCodeObject.co_filename", offsetof(PyCodeObject, co_filename), &d.code_object.filename},
        {"PyCodeObject.co_qualname", offsetof(PyCodeObject, co_qualname), &d.code_object.qualname},
        {"PyCodeObject.co_linetable", offsetof(PyCodeObject, co_linetable),
         &d.code_object.linetable},
        {"PyCodeObject.co_firstlineno", offsetof(PyCodeObject, co_firstlineno),
         &d.code_object.firstlineno},
        {"PyCodeObject.co_localsplusnames", offsetof(PyCodeObject, co_localsplusnames),
         &d.code_object.localsplusnames},
        {"PyCodeObject.co_localspluskinds", offsetof(PyCodeObject, co_localspluskinds),
         &d.code_object.localspluskinds},
        {"PyCodeObject.co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive),
         &d.code_object.co_code_adaptive},
    };
    const char *v = Py_GetVersion(); /* "3.13.18 (main, ...": the first word */
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (*f[i].live != f[i].built)
            return pb_err_set(err, PB_ENOBUILD,
                              "CPython %.*s lays out %s at offset %llu, the probe was built for "
                              "%llu: rebuild the probe with this interpreter's headers",
                              (int)strcspn(v, " "), v, f[i].name, (unsigned long long)*f[i].live,
                              (unsigned long long)f[i].built);
    return 0;
}
#else
int pyrt_layout_check(struct pb_err *err)
{
    (void)err; /* before 3.13 CPython publishes no offsets: nothing to compare */
    return 0;
}
#endif
