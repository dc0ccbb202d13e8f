/* Welford's running moments with exponential smoothing (welford_smooth; see _kernels.h). */
#include "_kernels.h"

static int welford_one(PyObject *stats, PyObject *f_i, PyObject *v_i, PyObject *smoothed, double keep, double a,
                       PyObject *index, PyObject *out);

/* 1 if welford_smooth can update feature f with value v (any error cleared), else 0 */
static int welford_check(PyObject *stats, PyObject *f, PyObject *v_i, PyObject *smoothed, PyObject *index,
                         PyObject *out) {
    double v = 0.0;
    long long n = 0;
    if (!as_number(v_i, &v)) return 0;
    PyObject *s = PyDict_GetItemWithError(stats, f);
    if (s == NULL || !PyList_CheckExact(s) || PyList_GET_SIZE(s) != 3 || !as_count(PyList_GET_ITEM(s, 0), &n)
        || !PyFloat_CheckExact(PyList_GET_ITEM(s, 1)) || !PyFloat_CheckExact(PyList_GET_ITEM(s, 2))) {
        PyErr_Clear();
        return 0;
    }
    if (smoothed != Py_None) {
        PyObject *old = PyDict_GetItemWithError(smoothed, f);
        if (old == NULL || !PyFloat_CheckExact(old)) {
            PyErr_Clear();
            return 0;
        }
    }
    if (index != Py_None) {
        PyObject *j = PyDict_GetItemWithError(index, f);
        Py_ssize_t at = j != NULL && PyLong_CheckExact(j) ? PyLong_AsSsize_t(j) : -1;
        if (at < 0 || at >= PyList_GET_SIZE(out)) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

/* welford_smooth(stats, features, values, smoothed, keep, a, index, out) -> bool
 *
 * For each feature f and value v, in order (IncrementTracker.add_all):
 *     s = stats[f]; n = s[0] + 1; d = v - s[1]; mean = s[1] + d / n
 *     s[0] = n; s[1] = mean; s[2] += d * (v - mean)
 * then, unless smoothed is None (an explainer's exponential smoothing):
 *     smoothed[f] = keep * smoothed[f] + a * v
 * and, unless index is None: out[index[f]] = v. */
PyObject *welford_smooth(PyObject *self, PyObject *args) {
    PyObject *stats, *features, *values, *smoothed, *index, *out;
    double keep, a;
    if (!PyArg_ParseTuple(args, "O!OOOddOO", &PyDict_Type, &stats, &features, &values, &smoothed, &keep, &a,
                          &index, &out))
        return NULL;
    if (!PyList_CheckExact(features) && !PyTuple_CheckExact(features)) Py_RETURN_FALSE;
    if (!PyList_CheckExact(values) && !PyTuple_CheckExact(values)) Py_RETURN_FALSE;
    if (smoothed != Py_None && !PyDict_CheckExact(smoothed)) Py_RETURN_FALSE;
    if (index != Py_None && (!PyDict_CheckExact(index) || !PyList_CheckExact(out))) Py_RETURN_FALSE;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(features);
    if (PySequence_Fast_GET_SIZE(values) != k) Py_RETURN_FALSE;
    /* check everything before any write; a key's lookups may run its Python code, which may
     * change the sequences: measured again for every feature, the feature held */
    for (Py_ssize_t i = 0; i < k; i++) {
        if (PySequence_Fast_GET_SIZE(features) != k || PySequence_Fast_GET_SIZE(values) != k) Py_RETURN_FALSE;
        PyObject *f_i = PySequence_Fast_ITEMS(features)[i], *v_i = PySequence_Fast_ITEMS(values)[i];
        Py_INCREF(f_i);
        Py_INCREF(v_i);
        int ok = welford_check(stats, f_i, v_i, smoothed, index, out);
        Py_DECREF(f_i);
        Py_DECREF(v_i);
        if (!ok) Py_RETURN_FALSE;
    }
    /* the updates, feature after feature (a feature given twice sees its first update) */
    for (Py_ssize_t i = 0; i < k; i++) {
        /* the lookups below may run a key's Python code: everything is checked again */
        if (PySequence_Fast_GET_SIZE(features) != k || PySequence_Fast_GET_SIZE(values) != k) {
            changed("the features or values");
            return NULL;
        }
        PyObject *f_i = PySequence_Fast_ITEMS(features)[i], *v_i = PySequence_Fast_ITEMS(values)[i];
        Py_INCREF(f_i);
        Py_INCREF(v_i);
        int ok = welford_one(stats, f_i, v_i, smoothed, keep, a, index, out);
        Py_DECREF(f_i);
        Py_DECREF(v_i);
        if (ok < 0) return NULL;
    }
    Py_RETURN_TRUE;
}

/* one feature's update of welford_smooth, each item checked again before it is written */
static int welford_one(PyObject *stats, PyObject *f_i, PyObject *v_i, PyObject *smoothed, double keep, double a,
                       PyObject *index, PyObject *out) {
    double v = 0.0;
    long long n = 0;
    PyObject *s = PyDict_GetItemWithError(stats, f_i);
    if (s == NULL || !as_number(v_i, &v) || !PyList_CheckExact(s) || PyList_GET_SIZE(s) != 3
        || !as_count(PyList_GET_ITEM(s, 0), &n) || !PyFloat_CheckExact(PyList_GET_ITEM(s, 1))
        || !PyFloat_CheckExact(PyList_GET_ITEM(s, 2)))
        return PyErr_Occurred() ? -1 : changed("an increment's statistics");
    {
        n += 1;
        double m = PyFloat_AS_DOUBLE(PyList_GET_ITEM(s, 1));
        double m2 = PyFloat_AS_DOUBLE(PyList_GET_ITEM(s, 2));
        double d = v - m;
        double mean = m + d / (double)n;
        double e = v - mean;
        double dm2 = d * e;
        m2 = m2 + dm2;
        PyObject *count = PyLong_FromLongLong(n);
        if (count == NULL) return -1;
        PyObject *old = PyList_GET_ITEM(s, 0);
        PyList_SET_ITEM(s, 0, count);
        Py_DECREF(old);
        if (set_item_float(s, 1, mean) < 0 || set_item_float(s, 2, m2) < 0) return -1;
        if (smoothed != Py_None) {
            PyObject *prev = PyDict_GetItemWithError(smoothed, f_i);
            if (prev == NULL || !PyFloat_CheckExact(prev))
                return PyErr_Occurred() ? -1 : changed("the smoothed values");
            double kept = keep * PyFloat_AS_DOUBLE(prev);
            double added = a * v;
            PyObject *f = PyFloat_FromDouble(kept + added);
            if (f == NULL || PyDict_SetItem(smoothed, f_i, f) < 0) {
                Py_XDECREF(f);
                return -1;
            }
            Py_DECREF(f);
        }
        if (index != Py_None) {
            PyObject *j = PyDict_GetItemWithError(index, f_i);
            if (j == NULL || !PyLong_CheckExact(j)) return PyErr_Occurred() ? -1 : changed("the index");
            Py_ssize_t at = PyLong_AsSsize_t(j);
            if (at == -1 && PyErr_Occurred()) return -1;
            if (at < 0 || at >= PyList_GET_SIZE(out)) return changed("the output list");
            Py_INCREF(v_i);
            PyObject *old_out = PyList_GET_ITEM(out, at);
            PyList_SET_ITEM(out, at, v_i);
            Py_DECREF(old_out);
        }
    }
    return 0;
}
