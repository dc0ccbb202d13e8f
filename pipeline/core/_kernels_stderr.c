/* The standard errors' kernels: SmoothedStderr's donor uses (donor_uses), a row's fill (fill_row)
 * and the weighted moment sums (moment_sums); see _kernels.h. */
#include "_kernels.h"

/* counts, sums and own of a SlotUse as built: d ints, d floats, and None or d floats */
static int slot_shape(PyObject *c, PyObject *t, PyObject *o, Py_ssize_t d) {
    if (!PyList_CheckExact(c) || PyList_GET_SIZE(c) != d || !exact_floats(t, d)) return 0;
    for (Py_ssize_t i = 0; i < d; i++) {
        long long n;
        if (!as_count(PyList_GET_ITEM(c, i), &n)) return 0;
    }
    if (o != Py_None) {
        if (!PyTuple_CheckExact(o) || PyTuple_GET_SIZE(o) != d) return 0;
        for (Py_ssize_t i = 0; i < d; i++)
            if (!PyFloat_CheckExact(PyTuple_GET_ITEM(o, i))) return 0;
    }
    return 1;
}

/* a slot record of type cls and the shape slot_shape checks: its attributes as new references
 * (an attribute may be made on each read, and reading one may run Python code); else 0, any
 * error cleared */
static int read_slot(PyObject *st, PyTypeObject *cls, Py_ssize_t d, PyObject **cnt, PyObject **tot, PyObject **own) {
    if (Py_TYPE(st) != cls) return 0;
    Py_INCREF(st);
    PyObject *c = PyObject_GetAttr(st, s_counts), *t = c ? PyObject_GetAttr(st, s_sums) : NULL;
    PyObject *o = t ? PyObject_GetAttr(st, s_own) : NULL;
    Py_DECREF(st);
    if (o == NULL || !slot_shape(c, t, o, d)) {
        PyErr_Clear();
        Py_XDECREF(c);
        Py_XDECREF(t);
        Py_XDECREF(o);
        return 0;
    }
    *cnt = c;
    *tot = t;
    *own = o;
    return 1;
}

#define F(list, i) PyFloat_AS_DOUBLE(PyList_GET_ITEM(list, i))

/* add x to a float item of a list (list[i] = list[i] + x), the list's length and item checked
 * again (use_slot runs Python code: an observation's __eq__, the class's __init__) */
static int add_to(PyObject *list, Py_ssize_t i, double x) {
    if (i >= PyList_GET_SIZE(list) || !PyFloat_CheckExact(PyList_GET_ITEM(list, i))) return changed("a pair sum");
    double v = F(list, i) + x;
    return set_item_float(list, i, v);
}

/* deltas[i] as a double, checked again */
static int delta_at(PyObject *deltas, Py_ssize_t i, double *x) {
    if (i >= PySequence_Fast_GET_SIZE(deltas) || !PyFloat_CheckExact(PySequence_Fast_ITEMS(deltas)[i]))
        return changed("the increments");
    *x = PyFloat_AS_DOUBLE(PySequence_Fast_ITEMS(deltas)[i]);
    return 0;
}

static int use_record(PyObject *cnt, PyObject *tot, PyObject *own, PyObject *deltas, Py_ssize_t f0, Py_ssize_t f1,
                      PyObject **ps, PyObject *uses);

/* one use of watched slot k by the features [f0, f1) (SmoothedStderr._use) */
static int use_slot(PyObject *slot_map, PyObject *cls, Py_ssize_t d, PyObject *key, PyObject *item, PyObject *deltas,
                    Py_ssize_t f0, Py_ssize_t f1, PyObject **ps, PyObject *uses) {
    PyObject *st = PyDict_GetItemWithError(slot_map, key);
    if (st == NULL && PyErr_Occurred()) return -1;
    int holds = 0;
    if (st != NULL) {
        PyObject *obs = PyObject_GetAttr(st, s_observation);
        if (obs == NULL) return -1;
        holds = obs == item ? 1 : PyObject_RichCompareBool(obs, item, Py_EQ);
        Py_DECREF(obs);
        if (holds < 0) return -1;
    }
    if (!holds) { /* an observation not seen stored */
        st = PyObject_CallFunction(cls, "On", item, d);
        if (st == NULL) return -1;
        int r = PyDict_SetItem(slot_map, key, st);
        Py_DECREF(st);
        if (r < 0) return -1;
    }
    /* the record, as the map holds it now (the comparison or __init__ may have replaced it) */
    st = PyDict_GetItemWithError(slot_map, key);
    PyObject *cnt, *tot, *own;
    if (st == NULL || !read_slot(st, (PyTypeObject *)cls, d, &cnt, &tot, &own))
        return PyErr_Occurred() ? -1 : changed("a reservoir slot's record");
    int r = use_record(cnt, tot, own, deltas, f0, f1, ps, uses);
    Py_DECREF(cnt);
    Py_DECREF(tot);
    Py_DECREF(own);
    return r;
}

/* the additions of one use of a slot's record (its counts, sums and own, checked) */
static int use_record(PyObject *cnt, PyObject *tot, PyObject *own, PyObject *deltas, Py_ssize_t f0, Py_ssize_t f1,
                      PyObject **ps, PyObject *uses) {
    PyObject *pxy = ps[0], *px = ps[1], *py = ps[2], *pn = ps[3];
    for (Py_ssize_t i = f0; i < f1; i++) {
        double x;
        if (delta_at(deltas, i, &x) < 0) return -1;
        long long c = 0;
        as_count(PyList_GET_ITEM(cnt, i), &c);
        if (c) { /* pairs with the earlier users of this observation */
            double t = F(tot, i), dc = (double)c;
            double xt = x * t, xc = x * dc;
            if (add_to(pxy, i, xt) < 0 || add_to(px, i, xc) < 0 || add_to(py, i, t) < 0 || add_to(pn, i, dc) < 0)
                return -1;
        }
        if (add_to(tot, i, x) < 0) return -1;
        PyObject *n = PyLong_FromLongLong(c + 1);
        if (n == NULL) return -1;
        PyObject *old = PyList_GET_ITEM(cnt, i);
        PyList_SET_ITEM(cnt, i, n);
        Py_DECREF(old);
        if (add_to(uses, i, 1.0) < 0) return -1;
    }
    if (own != Py_None) { /* the pairs with the observation's own event (count 1.0 each) */
        PyObject *oxy = ps[4], *ox = ps[5], *oy = ps[6], *on = ps[7];
        for (Py_ssize_t i = f0; i < f1; i++) {
            double x;
            if (delta_at(deltas, i, &x) < 0) return -1;
            double t = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(own, i));
            double xt = x * t;
            if (add_to(oxy, i, xt) < 0 || add_to(ox, i, x) < 0 || add_to(oy, i, t) < 0 || add_to(on, i, 1.0) < 0)
                return -1;
        }
    }
    return 0;
}

/* the j-th slot index of an entry of slots (an int, or with per_feature a list or tuple of
 * ints; its type checked), borrowed; NULL past the last */
static PyObject *slot_key(PyObject *e, int per_feature, Py_ssize_t j) {
    if (per_feature && !PyLong_CheckExact(e)) return j < PySequence_Fast_GET_SIZE(e) ? PySequence_Fast_ITEMS(e)[j] : NULL;
    return j == 0 ? e : NULL;
}

/* donor_uses(slot_map, items, slots, deltas, per_feature, cls, pxy, px, py, pn, oxy, ox, oy, on, uses, every) -> bool
 *
 * SmoothedStderr.add_donors's uses of the watched slots (index a multiple of every): with
 * per_feature false, every slot k of slots by all features; else slots[i] (an int, or a list
 * of ints) by feature i alone. False, with nothing changed, when anything is unusual. */
PyObject *donor_uses(PyObject *self, PyObject *args) {
    PyObject *slot_map, *items, *slots, *deltas, *cls, *uses, *ps[8];
    int per_feature;
    long every;
    if (!PyArg_ParseTuple(args, "O!O!OOpO!OOOOOOOOOl", &PyDict_Type, &slot_map, &PyList_Type, &items, &slots, &deltas,
                          &per_feature, &PyType_Type, &cls, &ps[0], &ps[1], &ps[2], &ps[3], &ps[4], &ps[5], &ps[6],
                          &ps[7], &uses, &every))
        return NULL;
    if (every < 1) Py_RETURN_FALSE;
    if (!PyList_CheckExact(deltas) && !PyTuple_CheckExact(deltas)) Py_RETURN_FALSE;
    if (!PyList_CheckExact(slots) && !PyTuple_CheckExact(slots)) Py_RETURN_FALSE;
    Py_ssize_t d = PySequence_Fast_GET_SIZE(deltas);
    Py_ssize_t n_slots = PySequence_Fast_GET_SIZE(slots);
    for (Py_ssize_t i = 0; i < d; i++)
        if (!PyFloat_CheckExact(PySequence_Fast_ITEMS(deltas)[i])) Py_RETURN_FALSE;
    for (int j = 0; j < 8; j++)
        if (!exact_floats(ps[j], d)) Py_RETURN_FALSE;
    if (!exact_floats(uses, d)) Py_RETURN_FALSE;
    if (per_feature && n_slots != d) Py_RETURN_FALSE;
    for (Py_ssize_t i = 1; i < n_slots; i++) /* per feature: all ints or all lists, as the first */
        if (PyLong_CheckExact(PySequence_Fast_ITEMS(slots)[i]) != PyLong_CheckExact(PySequence_Fast_ITEMS(slots)[0]))
            Py_RETURN_FALSE;
    /* every slot index, and the watched slots' records */
    for (Py_ssize_t i = 0; i < n_slots; i++) {
        /* a lookup may run a stored key's __eq__: the lists measured again, the entry held */
        if (PySequence_Fast_GET_SIZE(slots) != n_slots) Py_RETURN_FALSE;
        PyObject *e = PySequence_Fast_ITEMS(slots)[i];
        if (per_feature && !PyLong_CheckExact(e) && !PyList_CheckExact(e) && !PyTuple_CheckExact(e)) Py_RETURN_FALSE;
        Py_INCREF(e);
        int ok = 1;
        PyObject *key;
        for (Py_ssize_t j = 0; ok && (key = slot_key(e, per_feature, j)) != NULL; j++) {
            long long k = 0;
            ok = as_count(key, &k) && k < PyList_GET_SIZE(items);
            if (!ok || k % every) continue;
            PyObject *st = PyDict_GetItemWithError(slot_map, key), *c, *t, *o;
            ok = st != NULL ? read_slot(st, (PyTypeObject *)cls, d, &c, &t, &o) : !PyErr_Occurred();
            if (ok && st != NULL) {
                Py_DECREF(c);
                Py_DECREF(t);
                Py_DECREF(o);
            }
        }
        Py_DECREF(e);
        if (!ok) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
    }
    /* use_slot runs Python code (an observation's __eq__, the class's __init__) that may change
     * the lists read here: their lengths and items are checked again before each use */
    for (Py_ssize_t i = 0; i < n_slots; i++) {
        if (PySequence_Fast_GET_SIZE(slots) != n_slots) {
            changed("the slots");
            return NULL;
        }
        PyObject *e = PySequence_Fast_ITEMS(slots)[i];
        if (per_feature && !PyLong_CheckExact(e) && !PyList_CheckExact(e) && !PyTuple_CheckExact(e)) {
            changed("the slots");
            return NULL;
        }
        Py_INCREF(e);
        int r = 0;
        PyObject *key;
        for (Py_ssize_t j = 0; r == 0 && (key = slot_key(e, per_feature, j)) != NULL; j++) {
            long long k = 0;
            if (!as_count(key, &k) || k >= PyList_GET_SIZE(items)) {
                r = changed("the slots or the reservoir");
                break;
            }
            if (k % every) continue;
            PyObject *item = PyList_GET_ITEM(items, k);
            Py_INCREF(item);
            Py_INCREF(key);
            r = per_feature ? use_slot(slot_map, cls, d, key, item, deltas, i, i + 1, ps, uses)
                            : use_slot(slot_map, cls, d, key, item, deltas, 0, d, ps, uses);
            Py_DECREF(key);
            Py_DECREF(item);
        }
        Py_DECREF(e);
        if (r < 0) return NULL;
    }
    Py_RETURN_TRUE;
}

/* fill_row(row, values) -> bool: row[:] = values for a C-contiguous float64 row and exact floats */
PyObject *fill_row(PyObject *self, PyObject *args) {
    PyObject *o_row, *values;
    if (!PyArg_ParseTuple(args, "OO", &o_row, &values)) return NULL;
    if (!PyList_CheckExact(values) && !PyTuple_CheckExact(values)) Py_RETURN_FALSE;
    /* the buffer first: taking it may run Python code (a __buffer__ method, Python 3.12+) */
    Py_buffer v;
    if (!get_array(o_row, &v, PySequence_Fast_GET_SIZE(values), 'd', 1)) Py_RETURN_FALSE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    PyObject **vs = PySequence_Fast_ITEMS(values);
    int ok = v.len == n * 8;
    for (Py_ssize_t i = 0; ok && i < n; i++) ok = PyFloat_CheckExact(vs[i]);
    if (!ok) {
        PyBuffer_Release(&v);
        Py_RETURN_FALSE;
    }
    double *row = v.buf;
    for (Py_ssize_t i = 0; i < n; i++) row[i] = PyFloat_AS_DOUBLE(vs[i]);
    PyBuffer_Release(&v);
    Py_RETURN_TRUE;
}

/* moment_sums(w, x, out) -> bool: for each rate i (a row of w, one weight per row of x) and
 * column j of x, out[i, 0, j] = sum_r w[i, r] * x[r, j] and out[i, 1, j] = sum_r w[i, r] *
 * (x[r, j] * x[r, j]), each added row after row to +0.0 as numpy's reduction does (so a column
 * of products that are all -0.0 sums to +0.0; the standard errors' _column_sums of x and x * x);
 * False, with nothing changed, when anything is unusual. */
PyObject *moment_sums(PyObject *self, PyObject *args) {
    PyObject *o_w, *o_x, *o_out;
    if (!PyArg_ParseTuple(args, "OOO", &o_w, &o_x, &o_out)) return NULL;
    Py_ssize_t rates, b, bx, d;
    Py_ssize_t rb = 0, bd = 0, r2d = 0;
    if (!shape2(o_w, &rates, &b) || !shape2(o_x, &bx, &d) || bx != b || b < 1 || d < 1 || rates < 1
        || d > PY_SSIZE_T_MAX / 16 || !product(rates, b, &rb) || !product(b, d, &bd) || !product(rates, 2 * d, &r2d))
        Py_RETURN_FALSE;
    Py_buffer v_w, v_x, v_out;
    if (!get_array(o_w, &v_w, rb, 'd', 0)) Py_RETURN_FALSE;
    if (!get_array(o_x, &v_x, bd, 'd', 0)) {
        PyBuffer_Release(&v_w);
        Py_RETURN_FALSE;
    }
    if (!get_array(o_out, &v_out, r2d, 'd', 1)) {
        PyBuffer_Release(&v_w);
        PyBuffer_Release(&v_x);
        Py_RETURN_FALSE;
    }
    if (overlap(&v_out, &v_w) || overlap(&v_out, &v_x)) {
        PyBuffer_Release(&v_w);
        PyBuffer_Release(&v_x);
        PyBuffer_Release(&v_out);
        Py_RETURN_FALSE;
    }
    const double *w = v_w.buf, *x = v_x.buf;
    double *out = v_out.buf;
    for (Py_ssize_t i = 0; i < rates; i++) {
        const double *wi = w + i * b;
        double *s1 = out + i * 2 * d, *s2 = s1 + d;
        for (Py_ssize_t j = 0; j < d; j++) {
            double v = x[j];
            double sq = v * v;
            double p1 = wi[0] * v, p2 = wi[0] * sq;
            s1[j] = 0.0 + p1;
            s2[j] = 0.0 + p2;
        }
        for (Py_ssize_t r = 1; r < b; r++) {
            const double *xr = x + r * d;
            double wr = wi[r];
            for (Py_ssize_t j = 0; j < d; j++) {
                double v = xr[j];
                double sq = v * v;
                double p1 = wr * v, p2 = wr * sq;
                s1[j] = s1[j] + p1;
                s2[j] = s2[j] + p2;
            }
        }
    }
    PyBuffer_Release(&v_w);
    PyBuffer_Release(&v_x);
    PyBuffer_Release(&v_out);
    Py_RETURN_TRUE;
}
