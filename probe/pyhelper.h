/* SPDX-License-Identifier: MIT */
/* The private Python helper namespace behind eval and memory (pyhelper.c). Probe-internal. */
#ifndef PROBE_PYHELPER_H
#define PROBE_PYHELPER_H

#include <Python.h>

/* The helper's object called name (a function or class), compiling the helper on first use.
 * Borrowed reference, or NULL with an exception set. Requires GIL. */
PyObject *probe_pyhelper_get(const char *name);

#endif
