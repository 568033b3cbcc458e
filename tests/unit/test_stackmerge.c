/* SPDX-License-Identifier: MIT */
/* pb_stack_merge (common/stackmerge.c), the one merge of native and Python stacks that perf
 * --cc and debug --dump --native share: groups up to each entry frame in place of each eval-loop
 * frame, 3.8-3.10 stacks (every Python frame an entry), and the stacks it refuses to merge
 * (counts differ; the outermost Python frame not an entry frame), which the dump then shows
 * apart; and two real stacks of samples/native_mix.py taken apart and merged again, then cleaned
 * (pb_cpython_machinery, pb_startup_frame) into what `debug --dump --native` showed. */
#include "pb.h"
#include "unit.h"

/* The merged stack as a string: P<i> for Python frame i, N<i> for native frame i. */
static const char *render(const struct pb_merge_step *s, int n, char *buf)
{
    char *p = buf;
    for (int i = 0; i < n; i++)
        p += sprintf(p, "%s%c%d", i ? " " : "", s[i].kind == PB_MERGE_PY ? 'P' : 'N', s[i].index);
    *p = '\0';
    return buf;
}

TEST(stackmerge_groups_per_eval_frame)
{
    /* native: lock wait, eval, ctypes callback, qsort, eval, start; Python: wait, cmp (entry),
     * run_qsort, Thread.run (entry) */
    const unsigned char ev[] = {0, 1, 0, 0, 1, 0}, en[] = {0, 1, 0, 1};
    struct pb_merge_step s[10];
    char buf[128];
    int n = pb_stack_merge(ev, 6, en, 4, s);
    ASSERT_EQ(n, 10);
    ASSERT_STR_EQ(render(s, n, buf), "N0 P0 P1 N1 N2 N3 P2 P3 N4 N5");
}

TEST(stackmerge_every_frame_an_entry)
{
    const unsigned char ev[] = {0, 1, 1, 1}, en[] = {1, 1, 1};
    struct pb_merge_step s[7];
    char buf[128];
    int n = pb_stack_merge(ev, 4, en, 3, s);
    ASSERT_STR_EQ(render(s, n, buf), "N0 P0 N1 P1 N2 P2 N3");
}

TEST(stackmerge_refuses_what_does_not_match)
{
    struct pb_merge_step s[8];
    const unsigned char ev2[] = {0, 1, 1}, en1[] = {0, 1};
    ASSERT_EQ(pb_stack_merge(ev2, 3, en1, 2, s), -1); /* two eval frames, one entry */
    const unsigned char ev1[] = {1, 0}, en_open[] = {1, 0};
    ASSERT_EQ(pb_stack_merge(ev1, 2, en_open, 2, s), -1); /* outermost not an entry */
    const unsigned char none[] = {0, 0};
    ASSERT_EQ(pb_stack_merge(ev1, 2, none, 0, s), -1); /* an eval frame, no Python frames */
    ASSERT_EQ(pb_stack_merge(none, 2, none, 0, s), 2); /* no Python at all: native only */
}

/* Two threads of samples/native_mix.py on pyenv's CPython 3.11.7, as `debug --dump --native=all
 * --json` (all) and `--native` (clean) showed them on this machine: "qsorter" (Python -> libc's
 * qsort through ctypes -> a Python comparator waiting on a lock) and "caller" (Python -> C
 * mix_call -> Python -> time.sleep). Innermost first; "P name" a Python frame, "N? name" a native
 * one in libpython (L), libc (C) or elsewhere (O), "?" unnamed. */
static const char *const qsorter_all[] = {"NC __futex_abstimed_wait_common",
                                          "NC __new_sem_wait_slow64.constprop.0",
                                          "NL PyThread_acquire_lock_timed",
                                          "NL acquire_timed",
                                          "NL lock_PyThread_acquire_lock",
                                          "NL method_vectorcall_VARARGS_KEYWORDS",
                                          "NL PyObject_Vectorcall",
                                          "P Condition.wait",
                                          "P Event.wait",
                                          "P py_cmp",
                                          "NL _PyEval_EvalFrameDefault",
                                          "NL _PyEval_Vector",
                                          "NL PyObject_Vectorcall",
                                          "NO _CallPythonObject",
                                          "NO closure_fcn",
                                          "NO ?",
                                          "NO ?",
                                          "NC msort_with_tmp.part.0",
                                          "NC msort_with_tmp.part.0",
                                          "NC msort_with_tmp.part.0",
                                          "NC qsort_r",
                                          "NO ?",
                                          "NO ?",
                                          "NO ffi_call",
                                          "NO _ctypes_callproc",
                                          "NO PyCFuncPtr_call",
                                          "NL _PyObject_MakeTpCall",
                                          "P run_qsort",
                                          "NL _PyEval_EvalFrameDefault",
                                          "NL _PyEval_Vector",
                                          "P Thread.run",
                                          "P Thread._bootstrap_inner",
                                          "P Thread._bootstrap",
                                          "NL _PyEval_EvalFrameDefault",
                                          "NL _PyEval_Vector",
                                          "NL method_vectorcall",
                                          "NL thread_run",
                                          "NL pythread_wrapper",
                                          "NC start_thread",
                                          "NC __clone3",
                                          NULL};
static const char *const qsorter_clean[] = {"NC __futex_abstimed_wait_common",
                                            "NC __new_sem_wait_slow64.constprop.0",
                                            "NL PyThread_acquire_lock_timed",
                                            "NL acquire_timed",
                                            "NL lock_PyThread_acquire_lock",
                                            "P Condition.wait",
                                            "P Event.wait",
                                            "P py_cmp",
                                            "NO _CallPythonObject",
                                            "NO closure_fcn",
                                            "NO ?",
                                            "NO ?",
                                            "NC msort_with_tmp.part.0",
                                            "NC msort_with_tmp.part.0",
                                            "NC msort_with_tmp.part.0",
                                            "NC qsort_r",
                                            "NO ?",
                                            "NO ?",
                                            "NO ffi_call",
                                            "NO _ctypes_callproc",
                                            "NO PyCFuncPtr_call",
                                            "P run_qsort",
                                            "P Thread.run",
                                            "P Thread._bootstrap_inner",
                                            "P Thread._bootstrap",
                                            NULL};
static const char *const caller_all[] = {"NC clock_nanosleep",
                                         "NL time_sleep",
                                         "NL cfunction_vectorcall_O",
                                         "NL PyObject_Vectorcall",
                                         "P py_callback",
                                         "NL _PyEval_EvalFrameDefault",
                                         "NL _PyEval_Vector",
                                         "NL PyObject_Vectorcall",
                                         "NO _CallPythonObject",
                                         "NO closure_fcn",
                                         "NO ?",
                                         "NO ?",
                                         "NO mix_call",
                                         "NO ?",
                                         "NO ?",
                                         "NO ffi_call",
                                         "NO _ctypes_callproc",
                                         "NO PyCFuncPtr_call",
                                         "NL _PyObject_MakeTpCall",
                                         "P run_call",
                                         "NL _PyEval_EvalFrameDefault",
                                         "NL _PyEval_Vector",
                                         "P Thread.run",
                                         "P Thread._bootstrap_inner",
                                         "P Thread._bootstrap",
                                         "NL _PyEval_EvalFrameDefault",
                                         "NL _PyEval_Vector",
                                         "NL method_vectorcall",
                                         "NL thread_run",
                                         "NL pythread_wrapper",
                                         "NC start_thread",
                                         "NC __clone3",
                                         NULL};
static const char *const caller_clean[] = {"NC clock_nanosleep",
                                           "NL time_sleep",
                                           "P py_callback",
                                           "NO _CallPythonObject",
                                           "NO closure_fcn",
                                           "NO ?",
                                           "NO ?",
                                           "NO mix_call",
                                           "NO ?",
                                           "NO ?",
                                           "NO ffi_call",
                                           "NO _ctypes_callproc",
                                           "NO PyCFuncPtr_call",
                                           "P run_call",
                                           "P Thread.run",
                                           "P Thread._bootstrap_inner",
                                           "P Thread._bootstrap",
                                           NULL};

struct fr {
    char kind; /* 'P', or the native frame's module: 'L', 'C', 'O' */
    const char *name;
};

static int frames_of(const char *const *in, struct fr *out)
{
    int n = 0;
    for (; in[n]; n++)
        out[n] =
            (struct fr){.kind = in[n][0] == 'P' ? 'P' : in[n][1], .name = strchr(in[n], ' ') + 1};
    return n;
}

static int is_eval(const struct fr *f)
{
    return f->kind != 'P' && strcmp(f->name, "_PyEval_EvalFrameDefault") == 0;
}

/* The dump's rules (injector/cli/core.c, probe/prof/symbols.c): CPython's own call machinery in
 * libpython is left out of the clean view; start-up frames below the outermost Python frame
 * too. */
static int internal(const struct fr *f)
{
    return is_eval(f) || (f->kind == 'L' && pb_cpython_machinery(f->name));
}

static int startup(const struct fr *f)
{
    return internal(f) || pb_startup_frame(f->name) || (f->kind == 'C' && !strcmp(f->name, "?"));
}

/* The all view taken apart into its native and Python stacks, merged again by pb_stack_merge
 * (an entry frame: a Python frame the eval loop's frame follows), and then cleaned as the dump
 * does: both views as they were shown. */
static void merge_and_clean(const char *const *all, const char *const *clean)
{
    struct fr a[64], nat[64], py[64], c[64], got[64];
    unsigned char ev[64], en[64];
    int na = frames_of(all, a), nc = frames_of(clean, c), nn = 0, np = 0;
    for (int i = 0; i < na; i++) {
        if (a[i].kind == 'P') {
            en[np] = i + 1 < na && is_eval(&a[i + 1]);
            py[np++] = a[i];
        } else {
            ev[nn] = (unsigned char)is_eval(&a[i]);
            nat[nn++] = a[i];
        }
    }
    struct pb_merge_step s[128];
    int m = pb_stack_merge(ev, nn, en, np, s);
    ASSERT_EQ(m, na);
    for (int i = 0; i < m; i++) {
        const struct fr *f = s[i].kind == PB_MERGE_PY ? &py[s[i].index] : &nat[s[i].index];
        ASSERT_STR_EQ(f->name, a[i].name);
    }
    int k = 0;
    for (int i = 0; i < m; i++)
        if (a[i].kind == 'P' || !internal(&a[i]))
            got[k++] = a[i];
    while (k > 1 && got[k - 1].kind != 'P' && startup(&got[k - 1]))
        k--;
    ASSERT_EQ(k, nc);
    for (int i = 0; i < k; i++)
        ASSERT_STR_EQ(got[i].name, c[i].name);
}

TEST(stackmerge_real_qsort_callback)
{
    merge_and_clean(qsorter_all, qsorter_clean);
}

TEST(stackmerge_real_c_calling_python)
{
    merge_and_clean(caller_all, caller_clean);
}

TEST(stackmerge_machinery_and_startup_names)
{
    /* from the stacks above: CPython's call machinery, not the C functions it calls */
    ASSERT(pb_cpython_machinery("PyObject_Vectorcall"));
    ASSERT(pb_cpython_machinery("_PyObject_MakeTpCall"));
    ASSERT(pb_cpython_machinery("cfunction_vectorcall_O"));
    ASSERT(pb_cpython_machinery("method_vectorcall_VARARGS_KEYWORDS"));
    ASSERT(pb_cpython_machinery("pythread_wrapper"));
    ASSERT(!pb_cpython_machinery("PyThread_acquire_lock_timed"));
    ASSERT(!pb_cpython_machinery("lock_PyThread_acquire_lock"));
    ASSERT(!pb_cpython_machinery("time_sleep"));
    ASSERT(pb_startup_frame("start_thread") && pb_startup_frame("__clone3"));
    ASSERT(!pb_startup_frame("qsort_r") && !pb_startup_frame(NULL));
}
