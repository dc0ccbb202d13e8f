/* The explainers' draws: iPFI's stored values (draw_pairs) and iSAGE's shuffle (shuffle); see
 * _kernels.h. */
#include "_kernels.h"

/* rng.random() as a double (rng exactly of type cls: random.Random, whose random() is a float) */
static int draw(PyObject *rng, double *u) {
    PyObject *r = PyObject_CallMethodNoArgs(rng, s_random);
    if (r == NULL) return -1;
    *u = PyFloat_AsDouble(r);
    Py_DECREF(r);
    return (*u == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int draw_one(PyObject *f, double x, PyObject *past, PyObject *pairs, PyObject *slots);

/* draw_pairs(rngs, past, pairs, slots, cls) -> bool: iPFI's draws, one per feature:
 *     for f, rng in rngs: k = int(rng.random() * len(past)); pairs.append((f, past[k][f])); slots.append(k)
 * raising what that code raises (an IndexError, the KeyError of a missing feature) after the
 * same draws; False, with nothing drawn, unless rngs is a list of (feature, cls) pairs. */
PyObject *draw_pairs(PyObject *self, PyObject *args) {
    PyObject *rngs, *past, *pairs, *slots, *cls;
    if (!PyArg_ParseTuple(args, "OOOOO!", &rngs, &past, &pairs, &slots, &PyType_Type, &cls)) return NULL;
    if (!PyList_CheckExact(rngs) || !PyList_CheckExact(past) || !PyList_CheckExact(pairs) || !PyList_CheckExact(slots))
        Py_RETURN_FALSE;
    Py_ssize_t nf = PyList_GET_SIZE(rngs);
    for (Py_ssize_t i = 0; i < nf; i++) {
        PyObject *t = PyList_GET_ITEM(rngs, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2 || Py_TYPE(PyTuple_GET_ITEM(t, 1)) != (PyTypeObject *)cls)
            Py_RETURN_FALSE;
    }
    double n = (double)PyList_GET_SIZE(past);
    for (Py_ssize_t i = 0; i < nf; i++) {
        /* a generator, a key's __hash__ or __eq__ may change the list: checked again */
        if (PyList_GET_SIZE(rngs) != nf) {
            changed("the generators");
            return NULL;
        }
        PyObject *t = PyList_GET_ITEM(rngs, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2 || Py_TYPE(PyTuple_GET_ITEM(t, 1)) != (PyTypeObject *)cls) {
            changed("the generators");
            return NULL;
        }
        Py_INCREF(t); /* the tuple holds the feature and the generator */
        PyObject *f = PyTuple_GET_ITEM(t, 0);
        double u;
        int bad = draw(PyTuple_GET_ITEM(t, 1), &u) < 0 || draw_one(f, u * n, past, pairs, slots) < 0;
        Py_DECREF(t);
        if (bad) return NULL;
    }
    Py_RETURN_TRUE;
}

/* one draw of draw_pairs: k = int(x); pairs.append((f, past[k][f])); slots.append(k) */
static int draw_one(PyObject *f, double x, PyObject *past, PyObject *pairs, PyObject *slots) {
    PyObject *k = PyLong_FromDouble(x); /* int() of a float: truncation */
    if (k == NULL) return -1;
    PyObject *row = PyObject_GetItem(past, k);
    PyObject *v = row ? PyObject_GetItem(row, f) : NULL;
    Py_XDECREF(row);
    PyObject *pair = v ? PyTuple_Pack(2, f, v) : NULL;
    Py_XDECREF(v);
    int bad = pair == NULL || PyList_Append(pairs, pair) < 0 || PyList_Append(slots, k) < 0;
    Py_XDECREF(pair);
    Py_DECREF(k);
    if (bad) return -1;
    return 0;
}

/* shuffle(order, rng, cls) -> bool: iSAGE's Fisher-Yates shuffle of the list order in place,
 *     for i in range(len(order) - 1, 0, -1): k = int(rng.random() * (i + 1)); order[i], order[k] = order[k], order[i]
 * (an IndexError as that code's); False, with nothing drawn, unless rng is exactly of type cls. */
PyObject *shuffle(PyObject *self, PyObject *args) {
    PyObject *order, *rng, *cls;
    if (!PyArg_ParseTuple(args, "OOO!", &order, &rng, &PyType_Type, &cls)) return NULL;
    if (!PyList_CheckExact(order) || Py_TYPE(rng) != (PyTypeObject *)cls) Py_RETURN_FALSE;
    for (Py_ssize_t i = PyList_GET_SIZE(order) - 1; i > 0; i--) {
        double u;
        if (draw(rng, &u) < 0) return NULL;
        double x = u * (double)(i + 1);
        /* x checked before the cast (a generator returning NaN or 1e300 must not overflow it) */
        if (!(x > -1.0 && x < (double)PyList_GET_SIZE(order))) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return NULL;
        }
        Py_ssize_t k = (Py_ssize_t)x;
        if (k < 0 || k >= PyList_GET_SIZE(order) || i >= PyList_GET_SIZE(order)) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return NULL;
        }
        PyObject *a = PyList_GET_ITEM(order, i), *b = PyList_GET_ITEM(order, k);
        PyList_SET_ITEM(order, i, b);
        PyList_SET_ITEM(order, k, a);
    }
    Py_RETURN_TRUE;
}
