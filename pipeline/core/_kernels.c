/* The module streamxai.core._kernels: its table of kernels and the attribute names interned at
 * import. The kernels are in _kernels_welford.c, _kernels_ipdp.c, _kernels_stderr.c,
 * _kernels_report.c, _kernels_draws.c and _kernels_linear.c; what they share, and the conventions they keep, in _kernels.h. */
#include "_kernels.h"

PyObject *s_hi, *s_lo, *s_n_seen, *s_window, *s_pop, *s_popleft, *s_append;
PyObject *s_observation, *s_counts, *s_sums, *s_own;
PyObject *s_random;

static PyMethodDef methods[] = {
    {"welford_smooth", welford_smooth, METH_VARARGS,
     "welford_smooth(stats, features, values, smoothed, keep, a, index, out) -> bool: Welford's update of "
     "stats[f] = [n, mean, m2] with each value, smoothed[f] = keep * smoothed[f] + a * value (unless "
     "smoothed is None), out[index[f]] = value (unless index is None); False, with nothing changed, "
     "when an argument is not as expected."},
    {"fold_curves", fold_curves, METH_VARARGS,
     "fold_curves(ice, grids, gx, pd, dev, scale, flat, row, a, b, bias, names, values) -> (lin, smooth) or "
     "None: iPDP's per-event fold of its ICE curves (IPDP._fold_curves), in place; None, with nothing changed, "
     "when an argument is not as expected."},
    {"extremes_update", extremes_update, METH_VARARGS,
     "extremes_update(storages, values, cls) -> bool: ExtremeValueStorage.update of each storage with its value; "
     "False, with nothing changed, when anything is unusual."},
    {"extremes_grids", extremes_grids, METH_VARARGS,
     "extremes_grids(storages, values, frac, out, cls) -> bool: each row of out the grid lo + (hi - lo) * frac "
     "of its storage's extremes (its value when empty); False, with nothing changed, when anything is unusual."},
    {"donor_uses", donor_uses, METH_VARARGS,
     "donor_uses(slot_map, items, slots, deltas, per_feature, cls, pxy, px, py, pn, oxy, ox, oy, on, uses, every) "
     "-> bool: SmoothedStderr.add_donors's uses of the watched slots; False, with nothing changed, when anything "
     "is unusual."},
    {"fill_row", fill_row, METH_VARARGS,
     "fill_row(row, values) -> bool: row[:] = values for a float64 row and exact floats; False otherwise."},
    {"moment_sums", moment_sums, METH_VARARGS,
     "moment_sums(w, x, out) -> bool: out[i] = the weighted column sums of x and x * x with the weights w[i], "
     "added row after row; False, with nothing changed, when anything is unusual."},
    {"stderr_report", stderr_report, METH_VARARGS,
     "stderr_report(mom, slow, held, w, out, scalars, pairs) -> bool: SmoothedStderr._report's means, variances, "
     "standard errors and variance factors into out; False, with nothing written, when anything is unusual."},
    {"draw_pairs", draw_pairs, METH_VARARGS,
     "draw_pairs(rngs, past, pairs, slots, cls) -> bool: iPFI's draw of one stored value per feature; False, "
     "with nothing drawn, unless every generator is exactly of type cls."},
    {"shuffle", shuffle, METH_VARARGS,
     "shuffle(order, rng, cls) -> bool: iSAGE's Fisher-Yates shuffle in place; False, with nothing drawn, unless "
     "rng is exactly of type cls."},
    {"linear_chain", linear_chain, METH_VARARGS,
     "linear_chain(terms, w, mean, sd, pos, order, donors, first, intercept, mode) -> list or None: a linear "
     "model's output at x and at iSAGE's chain rows (LinearFast.coalitions); None when anything is unusual."},
    {"linear_replaced", linear_replaced, METH_VARARGS,
     "linear_replaced(terms, w, mean, sd, pos, pairs, intercept, mode, with_x) -> list or None: a linear model's "
     "output at x with one feature replaced, per pair (LinearCall); None when anything is unusual."},
    {"linear_curves", linear_curves, METH_VARARGS,
     "linear_curves(terms, w, mean, sd, pos, features, grids, intercept, mode, out) -> bool: a linear model's ICE "
     "curves into out (LinearFast.curves); False, with nothing written, when anything is unusual."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "Compiled bookkeeping kernels (pipeline/core/kernels.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    if (!(s_hi = PyUnicode_InternFromString("_hi")) || !(s_lo = PyUnicode_InternFromString("_lo"))
        || !(s_n_seen = PyUnicode_InternFromString("n_seen")) || !(s_window = PyUnicode_InternFromString("window"))
        || !(s_pop = PyUnicode_InternFromString("pop")) || !(s_popleft = PyUnicode_InternFromString("popleft"))
        || !(s_append = PyUnicode_InternFromString("append"))
        || !(s_observation = PyUnicode_InternFromString("observation"))
        || !(s_counts = PyUnicode_InternFromString("counts")) || !(s_sums = PyUnicode_InternFromString("sums"))
        || !(s_own = PyUnicode_InternFromString("own")) || !(s_random = PyUnicode_InternFromString("random")))
        return NULL;
    return PyModule_Create(&module);
}
