/* iPDP's kernels: the per-event fold of its ICE curves (fold_curves) and its feature ranges'
 * extreme-value storages (extremes_update, extremes_grids); see _kernels.h. */
#include "_kernels.h"

/* a row's values added left to right, the first one as it is (np.add.accumulate(a, axis=1)[:, -1]) */
static double row_sum(const double *x, Py_ssize_t g) {
    double s = x[0];
    for (Py_ssize_t k = 1; k < g; k++) s = s + x[k];
    return s;
}

/* fold_curves(ice, grids, gx, pd, dev, scale, flat, row, a, b, bias, names, values) -> (lin, smooth) or None
 *
 * iPDP's _fold_curves for nf numeric features and g grid points, all arrays C-contiguous float64:
 *     lin = scale * sums(dev * (ice - ice[:, :1])), 0 where flat (flat: bool array or None)
 *     row[:] = concatenate((ice, lin[:, None]), axis=1).ravel()   (the standard errors' series)
 *     gx = b * gx + a * grids; pd = b * pd + a * ice              (in place)
 *     sh = pd - pd[:, :1]; dev = sh - (sums(sh) / g)[:, None]; ss = sums(dev * dev)   (dev in place)
 *     values[names[i]] = sqrt(ss / (g - 1)) / bias
 *     scale = 1 / sqrt(ss * (g - 1)) when every ss > 0 (in place; smooth = True), else scale
 *     untouched and smooth = False (the caller computes the gradient with its flat rows)
 * sums: each row added left to right. Returns lin as a list; None, with nothing changed, when
 * an argument is not as expected. */
PyObject *fold_curves(PyObject *self, PyObject *args) {
    PyObject *o_ice, *o_grids, *o_gx, *o_pd, *o_dev, *o_scale, *o_flat, *o_row, *names, *values;
    double a, b, bias;
    if (!PyArg_ParseTuple(args, "OOOOOOOOdddOO", &o_ice, &o_grids, &o_gx, &o_pd, &o_dev, &o_scale, &o_flat, &o_row,
                          &a, &b, &bias, &names, &values))
        return NULL;
    if (!PyList_CheckExact(names) || !PyDict_CheckExact(values)) Py_RETURN_NONE;
    Py_ssize_t nf = PyList_GET_SIZE(names);
    Py_buffer v_ice, v_grids, v_gx, v_pd, v_dev, v_scale, v_flat, v_row;
    Py_buffer *held[8];
    int nheld = 0;
    PyObject *result = NULL;
    if (PyObject_GetBuffer(o_ice, &v_ice, PyBUF_ND) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    /* the grid size from ice's shape (nf x g) */
    Py_ssize_t g = (v_ice.ndim == 2 && v_ice.shape[0] == nf) ? v_ice.shape[1] : 0;
    PyBuffer_Release(&v_ice);
    if (nf < 1 || g < 2) Py_RETURN_NONE;
    Py_ssize_t n = nf * g;
#define TAKE(obj, view, len, kind, w)                                   \
    do {                                                                \
        if (!get_array(obj, view, len, kind, w)) goto unusual;         \
        held[nheld++] = view;                                           \
    } while (0)
    TAKE(o_ice, &v_ice, n, 'd', 0);
    TAKE(o_grids, &v_grids, n, 'd', 0);
    TAKE(o_gx, &v_gx, n, 'd', 1);
    TAKE(o_pd, &v_pd, n, 'd', 1);
    TAKE(o_dev, &v_dev, n, 'd', 1);
    TAKE(o_scale, &v_scale, nf, 'd', 1);
    TAKE(o_row, &v_row, n + nf, 'd', 1);
    const unsigned char *flat = NULL;
    if (o_flat != Py_None) {
        TAKE(o_flat, &v_flat, nf, '?', 0);
        flat = (const unsigned char *)v_flat.buf;
    }
#undef TAKE
    for (Py_ssize_t i = 0; i < nf; i++) {
        if (PyList_GET_SIZE(names) != nf) goto unusual; /* a name's __hash__ or __eq__ changed the list */
        PyObject *name = PyList_GET_ITEM(names, i);
        Py_INCREF(name);
        PyObject *found = PyDict_GetItemWithError(values, name);
        Py_DECREF(name);
        if (found == NULL) { /* a feature the values do not have */
            PyErr_Clear();
            goto unusual;
        }
    }
    const double *ice = v_ice.buf, *grids = v_grids.buf;
    double *gx = v_gx.buf, *pd = v_pd.buf, *dev = v_dev.buf, *scale = v_scale.buf, *row = v_row.buf;
    /* the writable arrays (from the third) must not share memory with each other nor with the inputs */
    {
        const Py_buffer *all[8] = {&v_ice, &v_grids, &v_gx, &v_pd, &v_dev, &v_scale, &v_row, flat ? &v_flat : NULL};
        for (int p = 0; p < 8; p++)
            for (int q = p + 1; q < 8; q++)
                if (all[p] && all[q] && (p >= 2 && p < 7) + (q >= 2 && q < 7) && overlap(all[p], all[q])) goto unusual;
    }
    PyObject *lin = PyList_New(nf);
    if (lin == NULL) goto done;
    double width = (double)g, gm1 = (double)(g - 1);
    int smooth = 1;
    double ss_all[64];
    double *ss = nf <= 64 ? ss_all : PyMem_Malloc(nf * sizeof(double));
    if (ss == NULL) {
        Py_DECREF(lin);
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        const double *ic = ice + i * g, *gr = grids + i * g;
        double *x = gx + i * g, *p = pd + i * g, *dv = dev + i * g, *out = row + i * (g + 1);
        /* the increment along the old gradient, the ICE curve taken from its first point */
        double s = dv[0] * (ic[0] - ic[0]);
        for (Py_ssize_t k = 1; k < g; k++) {
            double t = dv[k] * (ic[k] - ic[0]);
            s = s + t;
        }
        double l = scale[i] * s;
        if (flat != NULL && flat[i]) l = 0.0;
        for (Py_ssize_t k = 0; k < g; k++) out[k] = ic[k];
        out[g] = l;
        PyList_SET_ITEM(lin, i, PyFloat_FromDouble(l));
        /* Eq. 2 and 3 */
        for (Py_ssize_t k = 0; k < g; k++) {
            double u = b * x[k], w = a * gr[k];
            x[k] = u + w;
            double u2 = b * p[k], w2 = a * ic[k];
            p[k] = u2 + w2;
        }
        /* the new deviations and their sum of squares, from the values less the first one */
        double p0 = p[0];
        for (Py_ssize_t k = 0; k < g; k++) dv[k] = p[k] - p0;
        double mean = row_sum(dv, g) / width;
        for (Py_ssize_t k = 0; k < g; k++) dv[k] = dv[k] - mean;
        double q = dv[0] * dv[0];
        for (Py_ssize_t k = 1; k < g; k++) {
            double t = dv[k] * dv[k];
            q = q + t;
        }
        ss[i] = q;
        if (!(q > 0.0)) smooth = 0;
    }
    for (Py_ssize_t i = 0; i < nf; i++) {
        if (PyList_GET_ITEM(lin, i) == NULL) { /* a float that could not be made */
            Py_DECREF(lin);
            lin = NULL;
            break;
        }
    }
    if (lin != NULL) {
        for (Py_ssize_t i = 0; i < nf; i++) {
            double std = sqrt(ss[i] / gm1) / bias;
            if (smooth) scale[i] = 1.0 / sqrt(ss[i] * gm1);
            if (PyList_GET_SIZE(names) != nf) { /* a name's __hash__ or __eq__ changed the list */
                changed("the names");
                Py_CLEAR(lin);
                break;
            }
            PyObject *f = PyFloat_FromDouble(std), *name = PyList_GET_ITEM(names, i);
            Py_INCREF(name);
            int bad = f == NULL || PyDict_SetItem(values, name, f) < 0;
            Py_DECREF(name);
            Py_XDECREF(f);
            if (bad) {
                Py_CLEAR(lin);
                break;
            }
        }
    }
    if (ss != ss_all) PyMem_Free(ss);
    if (lin != NULL) result = Py_BuildValue("(NO)", lin, smooth ? Py_True : Py_False);
    goto done;
unusual:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int h = 0; h < nheld; h++) PyBuffer_Release(held[h]);
    return result;
}

/* the attributes of an ExtremeValueStorage the kernels use (borrowed from its __dict__) */
typedef struct {
    PyObject *dict, *hi, *lo;
    long long n_seen, window;
} Extreme;

static int read_extreme(PyObject *storage, PyTypeObject *cls, Extreme *e) {
    if (Py_TYPE(storage) != cls) return 0;
    PyObject *dict = PyObject_GenericGetDict(storage, NULL);
    if (dict == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(dict); /* the storage holds it */
    if (!PyDict_CheckExact(dict)) return 0;
    e->dict = dict;
    e->hi = PyDict_GetItemWithError(e->dict, s_hi);
    e->lo = e->hi ? PyDict_GetItemWithError(e->dict, s_lo) : NULL;
    PyObject *n = e->lo ? PyDict_GetItemWithError(e->dict, s_n_seen) : NULL;
    PyObject *w = n ? PyDict_GetItemWithError(e->dict, s_window) : NULL;
    if (w == NULL) {
        PyErr_Clear();
        return 0;
    }
    static PyTypeObject *deque_type = NULL;
    if (deque_type == NULL) {
        PyObject *collections = PyImport_ImportModule("collections");
        if (collections == NULL) {
            PyErr_Clear();
            return 0;
        }
        deque_type = (PyTypeObject *)PyObject_GetAttrString(collections, "deque");
        Py_DECREF(collections);
        if (deque_type == NULL) {
            PyErr_Clear();
            return 0;
        }
    }
    if (Py_TYPE(e->hi) != deque_type || Py_TYPE(e->lo) != deque_type) return 0;
    if (!as_count(n, &e->n_seen) || !as_count(w, &e->window) || e->window < 1) return 0;
    return 1;
}

/* the value of a deque's entry (index, value) at position i (-1: the last) */
static PyObject *entry(PyObject *dq, Py_ssize_t i, int part) {
    PyObject *t = PySequence_GetItem(dq, i);
    if (t == NULL) return NULL;
    if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "an ExtremeValueStorage entry is not an (index, value) pair");
        return NULL;
    }
    PyObject *v = PyTuple_GET_ITEM(t, part);
    Py_INCREF(v);
    Py_DECREF(t);
    return v;
}

/* one side of ExtremeValueStorage.update: drop the entries the value beats (op: Py_LE for the
 * maxima, Py_GE for the minima), append (t, value), drop the front once it is expired */
static int extreme_side(PyObject *dq, PyObject *pair, PyObject *value, int op, long long expired) {
    while (PySequence_Size(dq) > 0) {
        PyObject *last = entry(dq, -1, 1);
        if (last == NULL) return -1;
        int beaten = PyObject_RichCompareBool(last, value, op);
        Py_DECREF(last);
        if (beaten < 0) return -1;
        if (!beaten) break;
        PyObject *r = PyObject_CallMethodNoArgs(dq, s_pop);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    PyObject *r = PyObject_CallMethodOneArg(dq, s_append, pair);
    if (r == NULL) return -1;
    Py_DECREF(r);
    PyObject *front = entry(dq, 0, 0);
    if (front == NULL) return -1;
    long long idx = PyLong_AsLongLong(front);
    Py_DECREF(front);
    if (idx == -1 && PyErr_Occurred()) return -1;
    if (idx <= expired) {
        r = PyObject_CallMethodNoArgs(dq, s_popleft);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* a value the storage can hold: an exact float that is not NaN, or an exact int */
static int storable(PyObject *v) {
    if (PyFloat_CheckExact(v)) return !isnan(PyFloat_AS_DOUBLE(v));
    return PyLong_CheckExact(v);
}

/* extremes_update(storages, values, cls) -> bool: storages[i].update(values[i]) for each i
 * (ExtremeValueStorage.update's steps and comparisons); False, with nothing changed, unless
 * every storage is of type cls as built and every value an exact float (not NaN) or int. */
PyObject *extremes_update(PyObject *self, PyObject *args) {
    PyObject *storages, *values, *cls;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &storages, &PyList_Type, &values, &PyType_Type, &cls))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(storages);
    if (PyList_GET_SIZE(values) != k) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < k; i++) {
        Extreme e;
        if (!read_extreme(PyList_GET_ITEM(storages, i), (PyTypeObject *)cls, &e)) Py_RETURN_FALSE;
        if (!storable(PyList_GET_ITEM(values, i))) Py_RETURN_FALSE;
        for (Py_ssize_t j = 0; j < i; j++) /* one storage twice: left to the Python code */
            if (PyList_GET_ITEM(storages, j) == PyList_GET_ITEM(storages, i)) Py_RETURN_FALSE;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        Extreme e;
        /* the comparisons below may run a stored value's Python code (a value the Python path
         * stored), which may change the lists, the storage or its deques: all checked again and held */
        if (PyList_GET_SIZE(storages) != k || PyList_GET_SIZE(values) != k
            || !read_extreme(PyList_GET_ITEM(storages, i), (PyTypeObject *)cls, &e)
            || !storable(PyList_GET_ITEM(values, i))) {
            changed("the storages or values");
            return NULL;
        }
        PyObject *value = PyList_GET_ITEM(values, i);
        long long t = e.n_seen;
        PyObject *n = PyLong_FromLongLong(t + 1);
        if (n == NULL || PyDict_SetItem(e.dict, s_n_seen, n) < 0) {
            Py_XDECREF(n);
            return NULL;
        }
        Py_DECREF(n);
        long long expired = t - e.window;
        PyObject *index = PyLong_FromLongLong(t);
        PyObject *pair = index ? PyTuple_Pack(2, index, value) : NULL;
        Py_XDECREF(index);
        if (pair == NULL) return NULL;
        Py_INCREF(e.hi);
        Py_INCREF(e.lo);
        int bad = extreme_side(e.hi, pair, value, Py_LE, expired) < 0
                  || extreme_side(e.lo, pair, value, Py_GE, expired) < 0;
        Py_DECREF(e.hi);
        Py_DECREF(e.lo);
        Py_DECREF(pair);
        if (bad) return NULL;
    }
    Py_RETURN_TRUE;
}

/* extremes_grids(storages, values, frac, out, cls) -> bool: row i of out (C-contiguous float64,
 * len(storages) x len(frac)) = lo + (hi - lo) * frac with (lo, hi) = storages[i].extremes(values[i])
 * as floats (IPDP._numeric_grids); False, with nothing changed, when anything is unusual. */
PyObject *extremes_grids(PyObject *self, PyObject *args) {
    PyObject *storages, *values, *o_frac, *o_out, *cls;
    if (!PyArg_ParseTuple(args, "O!O!OOO!", &PyList_Type, &storages, &PyList_Type, &values, &o_frac, &o_out,
                          &PyType_Type, &cls))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(storages);
    if (PyList_GET_SIZE(values) != k || k < 1) Py_RETURN_FALSE;
    Py_buffer v_frac, v_out;
    if (PyObject_GetBuffer(o_frac, &v_frac, PyBUF_ND) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    Py_ssize_t g = v_frac.ndim == 1 ? v_frac.shape[0] : 0;
    PyBuffer_Release(&v_frac);
    Py_ssize_t kg = 0;
    if (g < 1 || !product(k, g, &kg) || !get_array(o_frac, &v_frac, g, 'd', 0)) Py_RETURN_FALSE;
    if (!get_array(o_out, &v_out, kg, 'd', 1)) {
        PyBuffer_Release(&v_frac);
        Py_RETURN_FALSE;
    }
    if (overlap(&v_out, &v_frac)) {
        PyBuffer_Release(&v_frac);
        PyBuffer_Release(&v_out);
        Py_RETURN_FALSE;
    }
    PyObject *result = Py_False;
    double *lows = PyMem_Malloc(2 * k * sizeof(double));
    if (lows == NULL) {
        result = PyErr_NoMemory();
        goto done;
    }
    double *highs = lows + k;
    for (Py_ssize_t i = 0; i < k; i++) {
        Extreme e;
        if (!read_extreme(PyList_GET_ITEM(storages, i), (PyTypeObject *)cls, &e)) goto done;
        PyObject *lo = NULL, *hi = NULL;
        if (PySequence_Size(e.lo) > 0) {
            lo = entry(e.lo, 0, 1);
            hi = lo ? entry(e.hi, 0, 1) : NULL;
            if (hi == NULL) {
                Py_XDECREF(lo);
                PyErr_Clear();
                goto done;
            }
        } else {
            lo = PyList_GET_ITEM(values, i);
            hi = lo;
            Py_INCREF(lo);
            Py_INCREF(hi);
        }
        int ok = as_number(lo, &lows[i]) && as_number(hi, &highs[i]);
        Py_DECREF(lo);
        Py_DECREF(hi);
        if (!ok) goto done;
    }
    const double *frac = v_frac.buf;
    double *out = v_out.buf;
    for (Py_ssize_t i = 0; i < k; i++) {
        double low = lows[i], span = highs[i] - lows[i];
        for (Py_ssize_t j = 0; j < g; j++) {
            double step = span * frac[j];
            out[i * g + j] = low + step;
        }
    }
    result = Py_True;
done:
    PyMem_Free(lows);
    PyBuffer_Release(&v_frac);
    PyBuffer_Release(&v_out);
    Py_XINCREF(result);
    return result;
}
