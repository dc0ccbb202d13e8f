/* The linear fast path's rows (pipeline/core/fastpath/linear.py, LinearCall): a river linear or
 * logistic regression (maybe after a StandardScaler) at rows that differ from the event x in some
 * features, from x's products x_k * w_k; see _kernels.h.
 *
 * River's dot product walks a row in its key order (x's, for rows copied from x), adds each
 * weighted feature's product to a running sum that starts at 0 and then adds the intercept; a
 * scaler first maps v to (v - mean) / sd (0.0 where the variance is 0; v - mean without std).
 * A row here is x's products with some replaced by the new values' products, summed in the same
 * order, then river's sigmoid (0 below -30, 1 above 30, else 1 / (1 + exp(-z))): the same
 * operations as river and as LinearCall's Python code. */
#include "_kernels.h"

/* what a row's value becomes: z itself, the sigmoid p, 1 - p, the label (p > 1 - p: True, as
 * Classifier.predict_one picks the first of two equal probabilities, False) or that as a float */
enum { OUT_Z = 0, OUT_P = 1, OUT_NOT_P = 2, OUT_LABEL = 3, OUT_LABEL_VALUE = 4 };

/* the model of one call, read from LinearCall's lists (all checked first) */
typedef struct {
    Py_ssize_t n;     /* weighted features of x, in x's order */
    double *terms;    /* x's products */
    double *w;        /* the weights */
    double *mean;     /* the scaler's means, or NULL without a scaler */
    double *sd;       /* its deviations (NaN where unused) */
    char *how;        /* per feature: 'd' divide by sd, 'z' zero variance (0.0), 'c' centre only */
    double intercept;
    int mode;
} Linear;

static void linear_free(Linear *m) {
    PyMem_Free(m->terms);
    m->terms = NULL;
}

/* a list of n exact floats into out */
static int float_list(PyObject *list, Py_ssize_t n, double *out) {
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) != n) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(list, i);
        if (!PyFloat_CheckExact(v)) return 0;
        out[i] = PyFloat_AS_DOUBLE(v);
    }
    return 1;
}

/* read (terms, w, mean, sd, intercept, mode); 0 (nothing allocated) when anything is unusual */
static int linear_read(Linear *m, PyObject *terms, PyObject *w, PyObject *mean, PyObject *sd, PyObject *intercept,
                       int mode) {
    if (!PyList_CheckExact(terms) || !PyFloat_CheckExact(intercept) || mode < OUT_Z || mode > OUT_LABEL_VALUE) return 0;
    Py_ssize_t n = PyList_GET_SIZE(terms);
    if (n < 1 || n > PY_SSIZE_T_MAX / 64) return 0;
    int scaled = mean != Py_None;
    if (!scaled && sd != Py_None) return 0;
    m->terms = PyMem_Malloc((size_t)n * (4 * sizeof(double) + 1));
    if (m->terms == NULL) return 0;
    m->n = n;
    m->w = m->terms + n;
    m->mean = scaled ? m->w + n : NULL;
    m->sd = m->w + 2 * n;
    m->how = (char *)(m->w + 3 * n);
    m->intercept = PyFloat_AS_DOUBLE(intercept);
    m->mode = mode;
    if (!float_list(terms, n, m->terms) || !float_list(w, n, m->w)) goto bad;
    if (scaled) {
        if (!float_list(mean, n, m->mean) || !PyList_CheckExact(sd) || PyList_GET_SIZE(sd) != n) goto bad;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *s = PyList_GET_ITEM(sd, i);
            m->sd[i] = NAN;
            if (PyFloat_CheckExact(s)) {
                m->how[i] = 'd';
                m->sd[i] = PyFloat_AS_DOUBLE(s);
            } else if (s == Py_None) {
                m->how[i] = 'z';
            } else if (s == Py_False) {
                m->how[i] = 'c';
            } else {
                goto bad;
            }
        }
    }
    return 1;
bad:
    linear_free(m);
    return 0;
}

/* the product of feature i with value v: LinearCall._term */
static inline double term(const Linear *m, Py_ssize_t i, double v) {
    if (m->mean != NULL) {
        if (m->how[i] == 'c')
            v = v - m->mean[i];
        else if (m->how[i] == 'd')
            v = (v - m->mean[i]) / m->sd[i];
        else
            v = 0.0;
    }
    return v * m->w[i];
}

/* the output of a row's products: their sum from 0 in order, the intercept, then the mode */
static inline double output(const Linear *m, const double *row) {
    double acc = 0.0; /* river's sum starts at the integer 0: 0 + t is t, and 0.0 for t = -0.0 alike */
    for (Py_ssize_t i = 0; i < m->n; i++) acc = acc + row[i];
    double z = acc + m->intercept;
    if (m->mode == OUT_Z) return z;
    double p = z < -30 ? 0.0 : z > 30 ? 1.0 : 1.0 / (1.0 + exp(-z));
    if (m->mode == OUT_P) return p;
    if (m->mode == OUT_NOT_P) return 1.0 - p;
    return p > 1.0 - p ? 1.0 : 0.0;
}

/* list[i] = a row's output: a float, or True / False for the label */
static inline int set_output(const Linear *m, PyObject *list, Py_ssize_t i, double v) {
    if (m->mode != OUT_LABEL) return set_float(list, i, v);
    PyObject *b = v != 0.0 ? Py_True : Py_False;
    Py_INCREF(b);
    PyList_SET_ITEM(list, i, b);
    return 0;
}

/* the position of feature f in pos (a dict of exact ints in [0, n)), or -1 */
static Py_ssize_t position(PyObject *pos, PyObject *f, Py_ssize_t n) {
    if (!PyUnicode_CheckExact(f)) return -1; /* str keys only: no Python code runs in the lookups */
    PyObject *i = PyDict_GetItemWithError(pos, f);
    if (i == NULL) {
        PyErr_Clear();
        return -1;
    }
    long long k;
    if (!as_count(i, &k) || k >= n) return -1;
    return (Py_ssize_t)k;
}

/* linear_chain(terms, w, mean, sd, pos, order, donors, first, intercept, mode) -> list or None:
 * LinearFast.coalitions: the output at x, then, for j = first .. d - 1 and each donor, at x with
 * the features order[j:] from that donor (chain_rows' rows, in its order); None, with nothing
 * computed, when anything is unusual (a feature without a weight or repeated, a donor without a
 * feature or with a value that is not an exact float). */
PyObject *linear_chain(PyObject *self, PyObject *args) {
    PyObject *terms, *w, *mean, *sd, *pos, *order, *donors, *intercept;
    Py_ssize_t first;
    int mode;
    if (!PyArg_ParseTuple(args, "OOOOO!O!O!nOi", &terms, &w, &mean, &sd, &PyDict_Type, &pos, &PyList_Type, &order,
                          &PyList_Type, &donors, &first, &intercept, &mode))
        return NULL;
    if (!PyDict_CheckExact(pos) || !PyList_CheckExact(order) || !PyList_CheckExact(donors)) Py_RETURN_NONE;
    Linear m;
    if (!linear_read(&m, terms, w, mean, sd, intercept, mode)) Py_RETURN_NONE;
    /* the lists as tuples this call holds: a key's __eq__ met in a lookup (a dict holding a key
     * of another type with an equal hash) may change the lists, never what is read here */
    order = PySequence_Tuple(order);
    donors = order != NULL ? PySequence_Tuple(donors) : NULL;
    if (donors == NULL) {
        Py_XDECREF(order);
        linear_free(&m);
        return NULL;
    }
    Py_ssize_t d = PyTuple_GET_SIZE(order), nd = PyTuple_GET_SIZE(donors), n = m.n;
    PyObject *out = NULL;
    Py_ssize_t *cols = NULL;
    double *dterms = NULL, *row = NULL;
    Py_ssize_t rows;
    if (d < 1 || first < 0 || first > d || d > n || nd > PY_SSIZE_T_MAX / 8 / d) goto none;
    if (!product(d - first, nd, &rows) || rows >= PY_SSIZE_T_MAX / 8) goto none;
    cols = PyMem_Malloc((size_t)d * sizeof(Py_ssize_t));
    dterms = PyMem_Malloc(((size_t)(d * nd) + (size_t)n + 1) * sizeof(double));
    if (cols == NULL || dterms == NULL) goto none;
    row = dterms + d * nd;
    char *seen = (char *)row; /* n bytes before the row is used: each position once */
    memset(seen, 0, (size_t)n);
    for (Py_ssize_t i = 0; i < d; i++) {
        Py_ssize_t c = position(pos, PyTuple_GET_ITEM(order, i), n);
        if (c < 0 || seen[c]) goto none;
        seen[c] = 1;
        cols[i] = c;
    }
    for (Py_ssize_t k = 0; k < nd; k++) {
        PyObject *donor = PyTuple_GET_ITEM(donors, k);
        if (!PyDict_CheckExact(donor)) goto none;
        for (Py_ssize_t i = 0; i < d; i++) {
            PyObject *v = PyDict_GetItemWithError(donor, PyTuple_GET_ITEM(order, i)); /* read before any other lookup */
            if (v == NULL || !PyFloat_CheckExact(v)) {
                PyErr_Clear();
                goto none;
            }
            dterms[k * d + i] = term(&m, cols[i], PyFloat_AS_DOUBLE(v));
        }
    }
    out = PyList_New(rows + 1);
    if (out == NULL) goto fail;
    if (set_output(&m, out, 0, output(&m, m.terms)) < 0) goto fail;
    Py_ssize_t r = 1;
    for (Py_ssize_t j = first; j < d; j++) {
        for (Py_ssize_t k = 0; k < nd; k++) {
            memcpy(row, m.terms, (size_t)n * sizeof(double));
            for (Py_ssize_t i = j; i < d; i++) row[cols[i]] = dterms[k * d + i];
            if (set_output(&m, out, r++, output(&m, row)) < 0) goto fail;
        }
    }
    PyMem_Free(cols);
    PyMem_Free(dterms);
    linear_free(&m);
    Py_DECREF(order);
    Py_DECREF(donors);
    return out;
none:
    PyErr_Clear();
    PyMem_Free(cols);
    PyMem_Free(dterms);
    linear_free(&m);
    Py_DECREF(order);
    Py_DECREF(donors);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    PyMem_Free(cols);
    PyMem_Free(dterms);
    linear_free(&m);
    Py_DECREF(order);
    Py_DECREF(donors);
    return NULL;
}

/* linear_replaced(terms, w, mean, sd, pos, pairs, intercept, mode, with_x) -> list or None:
 * LinearCall's replaced rows: for each (feature, value) of pairs the output at x with that one
 * feature set to value, preceded by the output at x when with_x; None, with nothing computed,
 * when anything is unusual (a pair not a 2-tuple, a feature without a weight, a value that is
 * not an exact float). */
PyObject *linear_replaced(PyObject *self, PyObject *args) {
    PyObject *terms, *w, *mean, *sd, *pos, *pairs, *intercept;
    int mode, with_x;
    if (!PyArg_ParseTuple(args, "OOOOO!O!Oip", &terms, &w, &mean, &sd, &PyDict_Type, &pos, &PyList_Type, &pairs,
                          &intercept, &mode, &with_x))
        return NULL;
    if (!PyDict_CheckExact(pos) || !PyList_CheckExact(pairs)) Py_RETURN_NONE;
    Linear m;
    if (!linear_read(&m, terms, w, mean, sd, intercept, mode)) Py_RETURN_NONE;
    pairs = PySequence_Tuple(pairs); /* held by this call (see linear_chain) */
    if (pairs == NULL) {
        linear_free(&m);
        return NULL;
    }
    Py_ssize_t np_ = PyTuple_GET_SIZE(pairs), n = m.n;
    PyObject *out = NULL;
    double *row = NULL, *vals = NULL;
    Py_ssize_t *cols = NULL;
    if (np_ > PY_SSIZE_T_MAX / 16 - 1) goto none;
    row = PyMem_Malloc(((size_t)n + (size_t)np_ + 1) * sizeof(double));
    cols = PyMem_Malloc(((size_t)np_ + 1) * sizeof(Py_ssize_t));
    if (row == NULL || cols == NULL) goto none;
    vals = row + n;
    for (Py_ssize_t i = 0; i < np_; i++) {
        PyObject *t = PyTuple_GET_ITEM(pairs, i);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 2 || !PyFloat_CheckExact(PyTuple_GET_ITEM(t, 1))) goto none;
        cols[i] = position(pos, PyTuple_GET_ITEM(t, 0), n);
        if (cols[i] < 0) goto none;
        vals[i] = term(&m, cols[i], PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(t, 1)));
    }
    out = PyList_New(np_ + (with_x ? 1 : 0));
    if (out == NULL) goto fail;
    Py_ssize_t r = 0;
    if (with_x && set_output(&m, out, r++, output(&m, m.terms)) < 0) goto fail;
    memcpy(row, m.terms, (size_t)n * sizeof(double));
    for (Py_ssize_t i = 0; i < np_; i++) {
        row[cols[i]] = vals[i];
        double v = output(&m, row);
        row[cols[i]] = m.terms[cols[i]];
        if (set_output(&m, out, r++, v) < 0) goto fail;
    }
    PyMem_Free(row);
    PyMem_Free(cols);
    linear_free(&m);
    Py_DECREF(pairs);
    return out;
none:
    PyErr_Clear();
    PyMem_Free(row);
    PyMem_Free(cols);
    linear_free(&m);
    Py_DECREF(pairs);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    PyMem_Free(row);
    PyMem_Free(cols);
    linear_free(&m);
    Py_DECREF(pairs);
    return NULL;
}

/* linear_curves(terms, w, mean, sd, pos, features, grids, intercept, mode, out) -> bool:
 * LinearFast.curves: out[i, k] = the output at x with features[i] = grids[i, k] (grids and out
 * C-contiguous float64 arrays of len(features) rows, out writable); False, with nothing written,
 * when anything is unusual (a feature without a weight, arrays of another shape or type, out
 * sharing memory with grids). */
PyObject *linear_curves(PyObject *self, PyObject *args) {
    PyObject *terms, *w, *mean, *sd, *pos, *features, *grids, *intercept, *outarr;
    int mode;
    if (!PyArg_ParseTuple(args, "OOOOO!O!OOiO", &terms, &w, &mean, &sd, &PyDict_Type, &pos, &PyList_Type, &features,
                          &grids, &intercept, &mode, &outarr))
        return NULL;
    if (!PyDict_CheckExact(pos) || !PyList_CheckExact(features)) Py_RETURN_FALSE;
    /* held by this call (see linear_chain), taken before a buffer's __buffer__ (Python 3.12+)
     * can change the list: its length is the tuple's */
    features = PySequence_Tuple(features);
    if (features == NULL) return NULL;
    Py_ssize_t nf = PyTuple_GET_SIZE(features);
    Py_buffer gv, ov;
    /* the length of the grids' buffer, then each row's length from it */
    if (PyObject_GetBuffer(grids, &gv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        Py_DECREF(features);
        Py_RETURN_FALSE;
    }
    Py_ssize_t total = gv.len / 8, g, size;
    PyBuffer_Release(&gv);
    if (nf < 1 || total % nf != 0 || !product(nf, g = total / nf, &size) || !get_array(grids, &gv, size, 'd', 0)) {
        Py_DECREF(features);
        Py_RETURN_FALSE;
    }
    if (!get_array(outarr, &ov, size, 'd', 1)) {
        PyBuffer_Release(&gv);
        Py_DECREF(features);
        Py_RETURN_FALSE;
    }
    if (overlap(&ov, &gv)) { /* out written while grids are still read (_kernels.h) */
        PyBuffer_Release(&gv);
        PyBuffer_Release(&ov);
        Py_RETURN_FALSE;
    }
    Linear m = {0};
    double *row = NULL;
    Py_ssize_t *cols = NULL;
    int ok = 0;
    if (mode == OUT_LABEL || !linear_read(&m, terms, w, mean, sd, intercept, mode)) goto done; /* floats only */
    row = PyMem_Malloc((size_t)m.n * sizeof(double));
    cols = PyMem_Malloc((size_t)nf * sizeof(Py_ssize_t));
    if (row == NULL || cols == NULL) goto done;
    for (Py_ssize_t i = 0; i < nf; i++) {
        cols[i] = position(pos, PyTuple_GET_ITEM(features, i), m.n);
        if (cols[i] < 0) goto done;
    }
    const double *gd = (const double *)gv.buf;
    double *od = (double *)ov.buf;
    memcpy(row, m.terms, (size_t)m.n * sizeof(double));
    for (Py_ssize_t i = 0; i < nf; i++) {
        Py_ssize_t c = cols[i];
        for (Py_ssize_t k = 0; k < g; k++) {
            row[c] = term(&m, c, gd[i * g + k]);
            od[i * g + k] = output(&m, row);
        }
        row[c] = m.terms[c];
    }
    ok = 1;
done:
    PyErr_Clear();
    PyMem_Free(row);
    PyMem_Free(cols);
    linear_free(&m);
    Py_DECREF(features);
    PyBuffer_Release(&gv);
    PyBuffer_Release(&ov);
    if (ok) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}
