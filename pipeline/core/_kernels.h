/* What the compiled kernels' sources share (pipeline/core/_kernels*.c, built into the one
 * extension streamxai.core._kernels): the argument checks and writes every kernel uses, the
 * interned attribute names (made at import in _kernels.c) and the kernels the module table lists.
 *
 * Each function does exactly the floating-point operations of the Python code it replaces,
 * in the same order, on the same Python objects (lists and dicts the classes hold), so the
 * values are bit for bit those of the pure-Python path and the checkpoint format does not
 * change. Built with -ffp-contract=off (no fused multiply-add) and without -ffast-math.
 *
 * Every function first checks everything it will read (types, keys, lengths) and writes
 * nothing unless all of it is as expected; then it returns True. Otherwise it returns False
 * with nothing changed, and the caller runs its Python code (which raises the error, if any,
 * or handles the unusual types). An array a kernel writes that shares memory with another
 * array it is given is unusual too (overlap below). */
#ifndef STREAMXAI_KERNELS_H
#define STREAMXAI_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define MAX_COUNT (1LL << 52) /* counts kept exactly as doubles */

/* v as a double if it is an exact float or an int that converts without overflow */
static inline int as_number(PyObject *v, double *out) {
    if (PyFloat_CheckExact(v)) {
        *out = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    if (PyLong_CheckExact(v)) {
        double d = PyLong_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        *out = d;
        return 1;
    }
    return 0;
}

/* a count: an exact int in [0, MAX_COUNT) */
static inline int as_count(PyObject *v, long long *out) {
    if (!PyLong_CheckExact(v)) return 0;
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || n < 0 || n >= MAX_COUNT) {
        PyErr_Clear();
        return 0;
    }
    *out = n;
    return 1;
}

/* Python code a kernel runs midway (a key's __hash__ or __eq__, a value's comparison, a class's
 * __init__) may change what the kernel checked: every write re-checks what it touches and
 * stops with this error (the update then incomplete, as the Python code's would be). */
static inline int changed(const char *what) {
    PyErr_Format(PyExc_RuntimeError,
                 "%s changed during a compiled kernel's update (Python code it ran -- a key's __hash__ or "
                 "__eq__, a value's comparison -- modified it); the update is incomplete: use plain keys and values",
                 what);
    return -1;
}

/* set a list item to a new float; the list's length was checked */
static inline int set_float(PyObject *list, Py_ssize_t i, double v) {
    PyObject *f = PyFloat_FromDouble(v);
    if (f == NULL) return -1;
    PyList_SET_ITEM(list, i, f);
    return 0;
}

static inline int set_item_float(PyObject *list, Py_ssize_t i, double v) {
    PyObject *old = PyList_GET_ITEM(list, i);
    if (set_float(list, i, v) < 0) return -1;
    Py_DECREF(old);
    return 0;
}

/* *n = a * b when that fits a Py_ssize_t of bytes for float64 items; else 0 (sizes taken from
 * different arguments must not wrap around to match a buffer's length) */
static inline int product(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *n) {
    if (a < 0 || b < 0 || (b != 0 && a > PY_SSIZE_T_MAX / 8 / b)) return 0;
    *n = a * b;
    return 1;
}

/* a C-contiguous float64 (or bool: kind '?') buffer of n items, writable if asked */
static inline int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t n, char kind, int writable) {
    if (n < 0 || n > PY_SSIZE_T_MAX / 8) return 0;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *fmt = view->format != NULL ? view->format : "B"; /* NULL: unsigned bytes */
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@') fmt++;
    Py_ssize_t size = kind == '?' ? 1 : 8;
    if (fmt[0] != kind || fmt[1] != '\0' || view->itemsize != size || view->len != n * size) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* an exact list of n exact floats */
static inline int exact_floats(PyObject *o, Py_ssize_t n) {
    if (!PyList_CheckExact(o) || PyList_GET_SIZE(o) != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyFloat_CheckExact(PyList_GET_ITEM(o, i))) return 0;
    return 1;
}

/* the shape of a 2-d buffer, or 0 */
static inline int shape2(PyObject *obj, Py_ssize_t *rows, Py_ssize_t *cols) {
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_ND) < 0) {
        PyErr_Clear();
        return 0;
    }
    int ok = v.ndim == 2;
    if (ok) {
        *rows = v.shape[0];
        *cols = v.shape[1];
    }
    PyBuffer_Release(&v);
    return ok;
}

/* whether two buffers share a byte: a kernel writes only to arrays that share none with any other
 * array it is given (it declines otherwise, and the caller's numpy code, which reads all of an
 * input before writing an overlapping output, runs) */
static inline int overlap(const Py_buffer *a, const Py_buffer *b) {
    const char *pa = a->buf, *pb = b->buf;
    return a->len > 0 && b->len > 0 && pa < pb + b->len && pb < pa + a->len;
}

/* shared between the sources but not exported from the extension (PyInit__kernels is, as before the split) */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* attribute names interned at import (PyInit__kernels) */
extern PyObject *s_hi, *s_lo, *s_n_seen, *s_window, *s_pop, *s_popleft, *s_append; /* iPDP's extremes */

/* the kernels (the module table in _kernels.c) */
PyObject *fold_curves(PyObject *self, PyObject *args);
PyObject *extremes_update(PyObject *self, PyObject *args);
PyObject *extremes_grids(PyObject *self, PyObject *args);
PyObject *linear_chain(PyObject *self, PyObject *args);
PyObject *linear_replaced(PyObject *self, PyObject *args);
PyObject *linear_curves(PyObject *self, PyObject *args);
PyObject *tree_walk(PyObject *self, PyObject *args);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
