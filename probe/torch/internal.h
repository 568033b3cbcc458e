/* SPDX-License-Identifier: MIT */
/* What the files of probe/torch/ share (torch.c for comm.c): compiling a Python source into a
 * private namespace and copying a Python answer into JSON. Requires GIL. */
#ifndef PROBE_TORCH_INTERNAL_H
#define PROBE_TORCH_INTERNAL_H

#include <Python.h>

struct cJSON;

/* src compiled and run in a new dict with __builtins__ and __name__ = modname (no module, no
 * sys.modules entry): the dict (new reference), or NULL with an exception set. */
PyObject *torch_compile(const char *src, const char *filename, const char *modname);
/* A Python source compiled on first use, with the two C functions it is given. */
struct probe_torch_ns {
    const char *src, *filename, *modname;
    PyMethodDef *defs[2];
    PyObject *ns;     /* owned for the life of the process; NULL until compiled */
    PyObject *fns[2]; /* owned, made from defs */
};
/* n->ns[name] (borrowed), compiling n->src and making n->fns on first use; NULL with an
 * exception set. */
PyObject *torch_ns_fn(struct probe_torch_ns *n, const char *name);
/* The members of a dict of str, int, float, bool, None and lists of str added to out; leaves no
 * exception set. */
void torch_copy_dict(PyObject *d, struct cJSON *out);

#endif
