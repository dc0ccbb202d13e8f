/* The background walk of a flattened tree, level by level (streamxai.core.attribution.flat_walk._walk).
 *
 * It moves integers only (node ids, point indices, bit masks) and compares each point's value with
 * a branch's threshold as the numpy code does (``not z <= threshold``: a NaN goes right), so its
 * states are those of the numpy code, in the same order. */
#include "_kernels.h"

#include <stdint.h>
#include <string.h>

/* a C-contiguous buffer of n items of 8 bytes: int64 (numpy's 'l' or 'q') or float64 ('d') */
static int get_8(PyObject *obj, Py_buffer *view, Py_ssize_t n, char kind, int writable) {
    if (n < 0 || n > PY_SSIZE_T_MAX / 8) return 0;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        return 0;
    }
    const char *fmt = view->format != NULL ? view->format : "B";
    if (fmt[0] == '<' || fmt[0] == '=' || fmt[0] == '@') fmt++;
    int ok = kind == 'd' ? fmt[0] == 'd' : (fmt[0] == 'l' || fmt[0] == 'q');
    if (!ok || fmt[1] != '\0' || view->itemsize != 8 || view->len != n * 8) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* the length of a 1-d buffer, or -1 */
static Py_ssize_t length(PyObject *obj) {
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_ND) < 0) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t n = v.ndim == 1 ? v.shape[0] : -1;
    PyBuffer_Release(&v);
    return n;
}

typedef struct {
    int64_t *node, *tree, *zs, *a, *b;
} States;

static void put(States *s, Py_ssize_t i, int64_t node, int64_t tree, int64_t zs, int64_t a, int64_t b) {
    s->node[i] = node;
    s->tree[i] = tree;
    s->zs[i] = zs;
    s->a[i] = a;
    s->b[i] = b;
}

/* tree_walk(feature, threshold, child, x_right, z, roots, trees, node, tree, zs, a, b) -> int or None:
 * the states at the leaves of every point (row of z, float64 (points, players)) from each root
 * (roots[t], tree trees[t]; int64), written to the first ``count`` items of the five int64
 * arrays node .. b (each of the same length, the capacity) and ``count`` returned. Node i is a
 * branch when feature[i] >= 0 (a player's column, below 63), with children child[i, 0] (left)
 * and child[i, 1] (right), both ids above i, and x_right[i] (bool) the side x takes. None, with
 * nothing written, when anything is unusual (a type, a shape, an id out of range, outputs that
 * share memory with anything else, more states than the capacity). */
PyObject *tree_walk(PyObject *self, PyObject *args) {
    PyObject *feature_o, *threshold_o, *child_o, *x_right_o, *z_o, *roots_o, *trees_o, *out_o[5];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOO", &feature_o, &threshold_o, &child_o, &x_right_o, &z_o, &roots_o,
                          &trees_o, &out_o[0], &out_o[1], &out_o[2], &out_o[3], &out_o[4]))
        return NULL;
    Py_ssize_t n_nodes = length(feature_o), n_roots = length(roots_o), cap = length(out_o[0]);
    if (n_nodes < 0 || n_roots < 0 || cap < 0) Py_RETURN_NONE;
    Py_buffer fv, tv, cv, xv, zv, rv, kv, ov[5];
    Py_buffer *held[12];
    int n_held = 0;
    PyObject *result = NULL;
    int64_t *scratch = NULL;
    if (!get_8(feature_o, &fv, n_nodes, 'l', 0)) goto unusual;
    held[n_held++] = &fv;
    if (!get_8(threshold_o, &tv, n_nodes, 'd', 0)) goto unusual;
    held[n_held++] = &tv;
    if (!get_8(child_o, &cv, 2 * n_nodes, 'l', 0)) goto unusual;
    held[n_held++] = &cv;
    if (!get_array(x_right_o, &xv, n_nodes, '?', 0)) goto unusual;
    held[n_held++] = &xv;
    if (PyObject_GetBuffer(z_o, &zv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND) < 0) {
        PyErr_Clear();
        goto unusual;
    }
    held[n_held++] = &zv;
    const char *zf = zv.format != NULL ? zv.format : "B";
    if (zf[0] == '<' || zf[0] == '=' || zf[0] == '@') zf++;
    if (zv.ndim != 2 || zf[0] != 'd' || zf[1] != '\0' || zv.itemsize != 8) goto unusual;
    Py_ssize_t n = zv.shape[0], d = zv.shape[1];
    if (!get_8(roots_o, &rv, n_roots, 'l', 0)) goto unusual;
    held[n_held++] = &rv;
    if (!get_8(trees_o, &kv, n_roots, 'l', 0)) goto unusual;
    held[n_held++] = &kv;
    for (int j = 0; j < 5; j++) {
        if (!get_8(out_o[j], &ov[j], cap, 'l', 1)) goto unusual;
        held[n_held++] = &ov[j];
    }
    for (int j = 0; j < 5; j++) /* outputs share no byte with any other buffer (_kernels.h) */
        for (int i = 0; i < n_held; i++)
            if (held[i] != &ov[j] && overlap(&ov[j], held[i])) goto unusual;
    const int64_t *feature = fv.buf, *child = cv.buf, *roots = rv.buf, *trees = kv.buf;
    const double *threshold = tv.buf, *z = zv.buf;
    const char *x_right = xv.buf;
    for (Py_ssize_t i = 0; i < n_nodes; i++) {
        if (feature[i] < 0) continue;
        if (feature[i] >= d || feature[i] >= 63) goto unusual;
        for (int side = 0; side < 2; side++)
            if (child[2 * i + side] <= i || child[2 * i + side] >= n_nodes) goto unusual; /* ids grow: no cycle */
    }
    for (Py_ssize_t t = 0; t < n_roots; t++)
        if (roots[t] < 0 || roots[t] >= n_nodes) goto unusual;
    Py_ssize_t m;
    if (n_roots && n > (Py_ssize_t)(cap / n_roots)) goto unusual;
    m = n_roots * n;
    if (cap > PY_SSIZE_T_MAX / 121 - 1) goto unusual;
    /* the numpy code's level is [its states at leaves, children of those that follow x, of the
     * free ones on x's side, on z's side]: its states at leaves are those of the levels before, in
     * order, then the new children that are leaves; so the states at leaves are appended to
     * ``done`` as the children are made, and only the children at branches walk on */
    /* three sets of states, each with room for one more (a state is written, then kept or not) */
    Py_ssize_t room = cap + 1;
    scratch = PyMem_Malloc((size_t)room * (15 * sizeof(int64_t) + 1));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    States buf[3];
    for (int k = 0; k < 3; k++) {
        int64_t *base = scratch + (size_t)k * 5 * (size_t)room;
        buf[k] = (States){base, base + room, base + 2 * room, base + 3 * room, base + 4 * room};
    }
    unsigned char *flags = (unsigned char *)(scratch + (size_t)15 * (size_t)room);
    States *cur = &buf[0], *next = &buf[1], *fin = &buf[2];
    Py_ssize_t n_fin = 0;
    for (Py_ssize_t t = 0; t < n_roots; t++) /* np.repeat(roots, n), np.tile(arange(n), n_roots) */
        for (Py_ssize_t p = 0; p < n; p++) put(cur, t * n + p, roots[t], trees[t], p, 0, 0);
    /* without branches on the data: each state is written where it would go and the count
     * moves on only when it goes there */
    enum { AT_BRANCH = 1, FOLLOW_X = 2, FREE = 4, Z_RIGHT = 8, X_RIGHT = 16 };
    while (m > 0) {
        Py_ssize_t n_active = 0, n_free = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            int64_t nd = cur->node[i], f = feature[nd];
            int at_branch = f >= 0;
            put(fin, n_fin, nd, cur->tree[i], cur->zs[i], cur->a[i], cur->b[i]);
            n_fin += !at_branch;
            int64_t col = at_branch ? f : 0;
            int64_t bit = at_branch ? (int64_t)1 << col : 0;
            int z_right = !(z[cur->zs[i] * d + col] <= threshold[nd]);
            int x_side = x_right[nd] != 0;
            int follow_x = (z_right == x_side) || (cur->a[i] & bit) != 0;
            int free = !follow_x && (cur->b[i] & bit) == 0;
            flags[i] = (unsigned char)(at_branch * AT_BRANCH | follow_x * FOLLOW_X | free * FREE | z_right * Z_RIGHT
                                       | x_side * X_RIGHT);
            n_active += at_branch;
            n_free += at_branch & free;
        }
        if (n_active == 0) break;
        if (n_active + n_free > cap - n_fin) goto unusual; /* more states than a point has leaves */
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < m; i++) { /* those that follow x */
            int fl = flags[i];
            int64_t nd = cur->node[i];
            put(next, k, child[2 * nd + ((fl & X_RIGHT) != 0)], cur->tree[i], cur->zs[i], cur->a[i], cur->b[i]);
            k += (fl & (AT_BRANCH | FOLLOW_X)) == (AT_BRANCH | FOLLOW_X);
        }
        for (Py_ssize_t i = 0; i < m; i++) { /* the free ones, on x's side */
            int fl = flags[i];
            int64_t nd = cur->node[i];
            int64_t bit = (fl & AT_BRANCH) ? (int64_t)1 << feature[nd] : 0;
            put(next, k, child[2 * nd + ((fl & X_RIGHT) != 0)], cur->tree[i], cur->zs[i], cur->a[i] | bit, cur->b[i]);
            k += (fl & (AT_BRANCH | FREE)) == (AT_BRANCH | FREE);
        }
        for (Py_ssize_t i = 0; i < m; i++) { /* those that do not follow x, on their own side */
            int fl = flags[i];
            int64_t nd = cur->node[i];
            int64_t bit = (fl & AT_BRANCH) && (fl & FREE) ? (int64_t)1 << feature[nd] : 0;
            put(next, k, child[2 * nd + ((fl & Z_RIGHT) != 0)], cur->tree[i], cur->zs[i], cur->a[i], cur->b[i] | bit);
            k += (fl & (AT_BRANCH | FOLLOW_X)) == AT_BRANCH;
        }
        m = k;
        States *swap = cur;
        cur = next;
        next = swap;
    }
    m = n_fin;
    int64_t *dst[5];
    for (int j = 0; j < 5; j++) dst[j] = ov[j].buf;
    memcpy(dst[0], fin->node, (size_t)m * sizeof(int64_t));
    memcpy(dst[1], fin->tree, (size_t)m * sizeof(int64_t));
    memcpy(dst[2], fin->zs, (size_t)m * sizeof(int64_t));
    memcpy(dst[3], fin->a, (size_t)m * sizeof(int64_t));
    memcpy(dst[4], fin->b, (size_t)m * sizeof(int64_t));
    result = PyLong_FromSsize_t(m);
    goto done;
unusual:
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(scratch);
    for (int i = 0; i < n_held; i++) PyBuffer_Release(held[i]);
    return result;
}
