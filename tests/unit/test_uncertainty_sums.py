"""The standard errors' column sums add each column's rows one after the other, exactly as a
plain loop does, whatever the number of rows and columns: the explanations' standard errors
are bit for bit those of the running sums, and a tracker of one feature gives the full
tracker's values for it (``pipeline.core.uncertainty._column_sums``)."""

from __future__ import annotations

import numpy as np

from pipeline.core.uncertainty import _column_sums


def sequential(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each column summed row after row in Python floats (the reference order)."""
    out = []
    for j in range(x.shape[1]):
        s = float(w[0] * x[0, j])
        for i in range(1, x.shape[0]):
            s = s + float(w[i] * x[i, j])
        out.append(s)
    return np.array(out)


def test_column_sums_add_rows_in_order_bit_for_bit():
    # cancelling magnitudes (1e16 against 1) make any other order of the additions visible;
    # a pairwise sum of one such column differs from the loop in about 1 case in 200
    rng = np.random.default_rng(3)
    for trial in range(600):
        b = int(rng.integers(1, 65))
        d = [1, 2, 3, 9, 99][trial % 5]
        if trial % 2:
            x = rng.choice([1e16, -1e16, 1.0, -1.0, 3.0, 1e-16], size=(b, d))
        else:
            x = rng.standard_normal((b, d)) * 10.0 ** rng.integers(-8, 9, size=(b, d))
        w = rng.random(b)
        assert _column_sums(w, x).tobytes() == sequential(w, x).tobytes(), (b, d)


def test_one_column_is_the_same_as_that_column_among_others():
    rng = np.random.default_rng(4)
    for _ in range(200):
        b = int(rng.integers(9, 65))
        x = rng.choice([1e16, -1e16, 1.0, -1.0, 3.0], size=(b, 5))
        w = rng.random(b)
        full = _column_sums(w, x)
        for j in range(5):
            assert _column_sums(w, x[:, j:j + 1])[0] == full[j]
