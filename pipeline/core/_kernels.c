/* The module streamxai.core._kernels: its table of kernels and the attribute names interned at
 * import. The kernels are in _kernels_ipdp.c, _kernels_linear.c and
 * _kernels_walk.c; what they share, and the conventions they keep, in _kernels.h. */
#include "_kernels.h"

PyObject *s_hi, *s_lo, *s_n_seen, *s_window, *s_pop, *s_popleft, *s_append;

static PyMethodDef methods[] = {
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
    {"linear_chain", linear_chain, METH_VARARGS,
     "linear_chain(terms, w, mean, sd, pos, order, donors, first, intercept, mode) -> list or None: a linear "
     "model's output at x and at iSAGE's chain rows (LinearFast.coalitions); None when anything is unusual."},
    {"linear_replaced", linear_replaced, METH_VARARGS,
     "linear_replaced(terms, w, mean, sd, pos, pairs, intercept, mode, with_x) -> list or None: a linear model's "
     "output at x with one feature replaced, per pair (LinearCall); None when anything is unusual."},
    {"linear_curves", linear_curves, METH_VARARGS,
     "linear_curves(terms, w, mean, sd, pos, features, grids, intercept, mode, out) -> bool: a linear model's ICE "
     "curves into out (LinearFast.curves); False, with nothing written, when anything is unusual."},
    {"tree_walk", tree_walk, METH_VARARGS,
     "tree_walk(feature, threshold, child, x_right, z, roots, trees, node, tree, zs, a, b) -> int or None: the "
     "states of the background walk of flattened trees at their leaves (flat_walk._walk), in the numpy code's "
     "order, written to node .. b; None, with nothing written, when anything is unusual."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "Compiled bookkeeping kernels (pipeline/core/kernels.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void) {
    if (!(s_hi = PyUnicode_InternFromString("_hi")) || !(s_lo = PyUnicode_InternFromString("_lo"))
        || !(s_n_seen = PyUnicode_InternFromString("n_seen")) || !(s_window = PyUnicode_InternFromString("window"))
        || !(s_pop = PyUnicode_InternFromString("pop")) || !(s_popleft = PyUnicode_InternFromString("popleft"))
        || !(s_append = PyUnicode_InternFromString("append")))
        return NULL;
    return PyModule_Create(&module);
}
