/* SPDX-License-Identifier: MIT */
/* How the probe shows a Python object in one line (dump locals, variables, evaluate's result):
 * repr.c and tensor.c, which run no user code. Requires GIL for all of these. */
#ifndef PYRT_REPR_H
#define PYRT_REPR_H

#include <Python.h>

#define PYRT_REPR_MAX 256
#define PYRT_REPR_ITEMS 10     /* items shown of a container */
#define PYRT_REPR_STR_CHARS 80 /* code points of a str (or bytes) kept before repr() */
/* objcheck.c: 1 when o can be touched: read with fault-proof reads only, no CPython call (its
 * header, its type a plausible ready type whose own type is a type, sizes, tp_name, and the
 * storage the repr reads of a builtin: first items, characters, digits, tables). A pointer
 * that memory corruption overwrote answers 0: the repr shows "<invalid object at 0x...>",
 * never calls CPython on it. pyrt_type_ok: the same for a type object's own fields. */
int pyrt_obj_ok(PyObject *o);
int pyrt_type_ok(const PyTypeObject *tp);
/* on=1: the calling thread remembers the types it found good, until on=0, for many objects
 * checked in a row while no code runs that could free a type (a snapshot's locals). */
void pyrt_obj_cache(int on);
/* The same with the GIL held, while code may run (an allocation's garbage collection): each
 * type remembered is held by a reference until on=0, so none is freed while it is trusted. */
void pyrt_obj_cache_pinned(int on);
/* Bounded repr of o into a new malloc'd string (<= PYRT_REPR_MAX chars); never runs user code:
 * exact builtins only, PyTorch tensors by shape, dtype and device (tensor.c), anything else
 * "<module.Type object at 0x...>"; an object (or element) failing pyrt_obj_ok
 * "<invalid object at 0x...>". NULL on out of memory. */
char *pyrt_repr_new(PyObject *o);
/* Name of o's type ("int", "mymod.Point") in a new malloc'd string; "?" when o fails
 * pyrt_obj_ok. */
char *pyrt_repr_typename(PyObject *o);
/* The interned string of an attribute name (a string literal), borrowed, kept for the life of
 * the process (at most PYRT_NAMES_MAX names), or NULL (no exception left set). Look attributes
 * up with these, never with a string made for the call: CPython's type attribute cache keeps a
 * reference to the name of each lookup, so a made string would stay in the program's heap,
 * one block per name and type, in a size class the program may churn (that cost a call-heavy
 * loop on 3.13 about 2% in every later call: docs/benchmarks.md, stop 32). Interning finds the
 * program's own string for an identifier it uses (threading.py's `_name`). */
#define PYRT_NAMES_MAX 16
PyObject *pyrt_name(const char *name);

/* 1 if obj is a torch.Tensor (or a subclass that does not override __torch_function__, such as
 * torch.nn.Parameter), found by its type's name and module, never by importing torch. */
int pyrt_repr_is_tensor(PyObject *obj);
/* "tensor(shape=[2, 3], dtype=torch.float32, device=cpu)" of such a tensor: its metadata read
 * through torch's C getters, never its data. New malloc'd string, NULL on out of memory. */
char *pyrt_tensor_display(PyObject *obj);

/* NumPy (numpy.c), by static type name, never importing numpy or running its code: a scalar
 * (numpy.int8 ... numpy.uint64, float16/32/64, bool_) as its value read from the object by its
 * type ("2", "0.5", "True"); an array (numpy.ndarray or a subclass) as
 * "ndarray(shape=[2, 3], dtype=float64)" from its header and dtype descriptor, never its data.
 * New malloc'd string, or NULL when obj is neither (or fails a check). obj has passed
 * pyrt_obj_ok. */
char *pyrt_numpy_display(PyObject *obj);

#endif
