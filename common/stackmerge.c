/* SPDX-License-Identifier: MIT */
/* Merging a thread's native and Python stacks (pb.h), shared by the sampler's store
 * (probe/prof/store.c) and on-demand native stacks (probe/prof/native.c): each eval-loop native
 * frame stands for the Python frames that C call runs, up to and including the next entry frame
 * (3.8-3.10: every frame is one; 3.11+: the first frame of each C-level call), as py-spy and
 * pystack merge. Pure: no allocation, any thread, signal-safe. */
#include "pb.h"

#include <string.h>

int pb_stack_merge(const unsigned char *is_eval, int nn, const unsigned char *entry, int np,
                   struct pb_merge_step *out)
{
    int evals = 0, entries = 0, last_entry = -1, n = 0, k = 0;
    for (int i = 0; i < nn; i++)
        evals += is_eval[i] != 0;
    for (int i = 0; i < np; i++)
        if (entry[i]) {
            entries++;
            last_entry = i;
        }
    /* Every eval-loop frame needs its group, and the outermost Python frame must close one. */
    if (evals != entries || (np > 0 && last_entry != np - 1))
        return -1;
    for (int i = 0; i < nn; i++) {
        if (is_eval[i]) {
            do
                out[n++] = (struct pb_merge_step){PB_MERGE_PY, k};
            while (!entry[k++]);
        }
        out[n++] = (struct pb_merge_step){PB_MERGE_NATIVE, i};
    }
    return n;
}

int pb_startup_frame(const char *name)
{
    static const char *const names[] = {"_start",
                                        "__libc_start_main",
                                        "__libc_start_call_main",
                                        "start_thread",
                                        "clone",
                                        "clone3",
                                        "__clone",
                                        "__clone3",
                                        "__GI___clone",
                                        "__GI___clone3",
                                        "main"};
    if (!name)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return 1;
    return 0;
}

int pb_cpython_machinery(const char *name)
{
    static const char *const pre[] = {"_Py",
                                      "cfunction_",
                                      "method_vectorcall",
                                      "vectorcall",
                                      "slot_tp_",
                                      "call_function",
                                      "_call_function",
                                      "function_code_fastcall",
                                      "object_vacall",
                                      "wrapper_call",
                                      "builtin_",
                                      "pymain_",
                                      "pyrun_",
                                      "run_",
                                      "thread_run",
                                      "t_bootstrap",
                                      "method_call",
                                      "pythread_wrapper"};
    if (!name || !*name)
        return 1;
    if (strncmp(name, "Py", 2) == 0)
        return strncmp(name, "PyThread_", 9) != 0;
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        if (strncmp(name, pre[i], strlen(pre[i])) == 0)
            return 1;
    return 0;
}
