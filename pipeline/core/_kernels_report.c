/* The standard errors' report in one call (stderr_report): SmoothedStderr._report's numpy code --
 * the held increments folded into a copy of the moments at both rates, the weighted variances,
 * the reuse correction and the standard errors and variance factors -- without numpy's cost per
 * call on arrays of 9 to 99 features; see _kernels.h. */
#include "_kernels.h"

/* numpy's maximum and minimum of float64 as this numpy computes them: a NaN operand gives NaN,
 * and of two equal values (signed zeros) the second (tests/unit/test_kernels.py checks) */
static inline double np_max(double a, double b) { return isnan(a) ? a : (a > b ? a : b); }
static inline double np_min(double a, double b) { return isnan(a) ? a : (a < b ? a : b); }

#define AT(list, i) PyFloat_AS_DOUBLE(PyList_GET_ITEM(list, i))

/* PairSums.covariance of item i: xy / n - (x / n) * (y / n), or 0.0 without pairs */
static inline double covariance(PyObject *xy, PyObject *x, PyObject *y, PyObject *n, Py_ssize_t i) {
    double c = AT(n, i);
    return c > 0.0 ? AT(xy, i) / c - (AT(x, i) / c) * (AT(y, i) / c) : 0.0;
}

/* stderr_report(mom, slow, held, w, out, scalars, pairs) -> bool

 * mom, slow: the (3, d) moments at the estimate's and the slow rate; held: the (b, d) increments
 * not folded in (None: b = 0) and w their (2, b) weights; out: a (6, d) array written with the
 * means (rows 0-1), variances (2-3), standard errors (4) and variance factors (5);
 * scalars: (cb0, cb1, wsum0, wsum1, w2sum0, w2sum1, weights2, c0, reuse, mm, size, rho, two_m),
 * the numbers SmoothedStderr works out in Python (c^b and the weights' sums per rate, the squared
 * weights' sums after the fold, the estimate's W2, 1 - a, whether the reuse correction applies,
 * m * m, L, rho and 2 m); pairs: the (xy, x, y, n) lists of the shared-donor and own-event pair
 * sums and the uses, d exact floats each. False, with nothing written, when anything is unusual. */
PyObject *stderr_report(PyObject *self, PyObject *args) {
    PyObject *o_mom, *o_slow, *o_held, *o_w, *o_out;
    double cb[2], wsum[2], w2sum[2], weights2, c0, mm, size, rho, two_m;
    int reuse;
    PyObject *pxy, *px, *py, *pn, *oxy, *ox, *oy, *on, *uses;
    if (!PyArg_ParseTuple(args, "OOOOO(ddddddddpdddd)(OOOOOOOOO)", &o_mom, &o_slow, &o_held, &o_w, &o_out, &cb[0],
                          &cb[1], &wsum[0], &wsum[1], &w2sum[0], &w2sum[1], &weights2, &c0, &reuse, &mm, &size, &rho,
                          &two_m, &pxy, &px, &py, &pn, &oxy, &ox, &oy, &on, &uses))
        return NULL;
    Py_ssize_t d, b = 0, n3, n6, nb;
    if (!PyList_CheckExact(uses)) Py_RETURN_FALSE;
    d = PyList_GET_SIZE(uses);
    if (d < 1 || !product(3, d, &n3) || !product(6, d, &n6)) Py_RETURN_FALSE;
    if (o_held != Py_None) { /* the shapes: (b, d) and (2, b); the buffers are taken below */
        Py_ssize_t hb, hd, wr, wb;
        if (!shape2(o_held, &hb, &hd) || !shape2(o_w, &wr, &wb) || hd != d || wr != 2 || wb != hb || hb < 1)
            Py_RETURN_FALSE;
        b = hb;
    }
    if (!product(b, d, &nb)) Py_RETURN_FALSE;
    Py_buffer v_mom[2], v_held, v_w, v_out;
    if (!get_array(o_mom, &v_mom[0], n3, 'd', 0)) Py_RETURN_FALSE;
    if (!get_array(o_slow, &v_mom[1], n3, 'd', 0)) {
        PyBuffer_Release(&v_mom[0]);
        Py_RETURN_FALSE;
    }
    int got_held = 0, got_w = 0, got_out = 0;
    if (b && (got_held = get_array(o_held, &v_held, nb, 'd', 0)))
        got_w = get_array(o_w, &v_w, 2 * b, 'd', 0);
    if (!b || got_w) got_out = get_array(o_out, &v_out, n6, 'd', 1);
    int ok = got_out && !overlap(&v_out, &v_mom[0]) && !overlap(&v_out, &v_mom[1])
             && !(b && (overlap(&v_out, &v_held) || overlap(&v_out, &v_w)));
    /* the lists last: taking a buffer may run Python code (a __buffer__ method, Python 3.12+),
     * and nothing runs any after this check */
    PyObject *lists[9] = {pxy, px, py, pn, oxy, ox, oy, on, uses};
    for (int i = 0; ok && i < 9; i++) ok = exact_floats(lists[i], d);
    if (!ok) {
        if (got_out) PyBuffer_Release(&v_out);
        if (got_w) PyBuffer_Release(&v_w);
        if (got_held) PyBuffer_Release(&v_held);
        PyBuffer_Release(&v_mom[1]);
        PyBuffer_Release(&v_mom[0]);
        Py_RETURN_FALSE;
    }
    double *out = v_out.buf;
    double *mean = out, *var = out + 2 * d, *se = out + 4 * d, *k = out + 5 * d;
    const double *x = b ? v_held.buf : NULL, *w = b ? v_w.buf : NULL;
    /* _moments(both=True): per rate, the moments folded as _fold folds them (times c^b, plus the
     * weights' sum and the weighted column sums added row after row), then the weighted mean and
     * variance with its small-sample correction */
    for (int r = 0; r < 2; r++) {
        const double *m = v_mom[r].buf, *wi = b ? w + r * b : NULL;
        double *mu = mean + r * d, *s2 = var + r * d, *m0 = se; /* se and k: scratch for the fold */
        for (Py_ssize_t j = 0; j < d; j++) {
            double a0 = m[j], a1 = m[d + j], a2 = m[2 * d + j];
            if (b) {
                double v = x[j], sq = v * v;
                double p1 = wi[0] * v, p2 = wi[0] * sq;
                double s1 = 0.0 + p1, t2 = 0.0 + p2; /* from +0.0, as numpy's sums (moment_sums) */
                for (Py_ssize_t i = 1; i < b; i++) {
                    v = x[i * d + j];
                    sq = v * v;
                    double p1 = wi[i] * v, p2 = wi[i] * sq;
                    s1 = s1 + p1;
                    t2 = t2 + p2;
                }
                a0 = a0 * cb[r] + wsum[r];
                a1 = a1 * cb[r] + s1;
                a2 = a2 * cb[r] + t2;
            }
            m0[j] = a0;
            mu[j] = a1;
            s2[j] = a2;
        }
        if (r == 0 && m0[0] == 0.0) { /* no weight yet: every mean and variance is 0 */
            for (Py_ssize_t j = 0; j < 4 * d; j++) out[j] = 0.0;
            break;
        }
        double w0s = m0[0];
        double n_eff = w2sum[r] > 0 ? w0s * w0s / w2sum[r] : 1.0;
        double num = n_eff > 1.0 ? n_eff : 1.0, den = n_eff > 1.0 ? n_eff - 1.0 : 1.0;
        for (Py_ssize_t j = 0; j < d; j++) {
            double mj = mu[j] / m0[j];
            double vj = np_max(s2[j] / m0[j] - mj * mj, 0.0);
            mu[j] = mj;
            s2[j] = vj * num / den;
        }
    }
    /* _reuse for both rates (c = 1 - a, then 1), then the standard errors and the factors */
    double cs[2] = {c0, 1.0};
    for (Py_ssize_t j = 0; j < d; j++) {
        double re[2] = {0.0, 0.0};
        if (reuse) {
            double zeta = covariance(pxy, px, py, pn, j);
            double u = AT(uses, j), n = AT(on, j);
            double own = (u > 0.0 ? n / u : 0.0) * covariance(oxy, ox, oy, on, j);
            for (int r = 0; r < 2; r++) {
                double vr = var[r * d + j];
                double z = np_min(np_max(zeta, -vr), vr), o = np_min(np_max(own, -vr), vr);
                double extra = mm * z / size * 2.0 * cs[r] * rho / (1.0 - cs[r] * rho);
                extra = extra + two_m * o;
                re[r] = np_max(extra, -0.75 * vr);
            }
        }
        double slow = var[d + j];
        se[j] = sqrt(weights2 * (var[j] + re[0]));
        k[j] = slow > 0.0 ? 1.0 + re[1] / slow : 1.0;
    }
    PyBuffer_Release(&v_out);
    if (b) {
        PyBuffer_Release(&v_w);
        PyBuffer_Release(&v_held);
    }
    PyBuffer_Release(&v_mom[1]);
    PyBuffer_Release(&v_mom[0]);
    Py_RETURN_TRUE;
}
