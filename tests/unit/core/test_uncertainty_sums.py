"""The standard errors' column sums add each column's rows in order as a plain loop does: bit for bit those
of the running sums, and a one-feature tracker gives the full tracker's values for it."""

from __future__ import annotations

import numpy as np
from streamxai.core.uncertainty import _column_sums


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


def _one_rate(t, slow: bool) -> tuple[np.ndarray, np.ndarray]:
    """The moments at one rate computed alone: the block scaled, the weights' sum, the column sums, the correction."""
    from streamxai.core.uncertainty import _BUFFER, _PAIRS_SLOWER

    mom = (t._slow if slow else t._mom).copy()
    w2sum = t._slow_w2sum if slow else t._w2sum
    c = 1.0 - (t.alpha / _PAIRS_SLOWER if slow else t.alpha)
    x = t._buffer[:t._held]
    b = len(x)
    if b:
        w = c ** np.arange(_BUFFER - 1, -1, -1)[_BUFFER - b:]
        cb = c**b
        mom *= cb
        mom[0] += np.add.reduce(w)
        mom[1] += _column_sums(w, x)
        mom[2] += _column_sums(w, x * x)
        w2sum = cb * cb * w2sum + float(np.add.reduce(w * w))
    mean = mom[1] / mom[0]
    var = np.maximum(mom[2] / mom[0] - mean * mean, 0.0)
    n_eff = float(mom[0][0]) ** 2 / w2sum
    if n_eff > 1.0:
        var = var * n_eff / (n_eff - 1.0)
    return mean, var


def test_a_report_takes_both_rates_in_one_pass_bit_for_bit():
    """Both rates' standard errors and variance factors from one pass equal each computed alone, bit for bit, for
    cancelling magnitudes, with donors, for 1 to 99 series."""
    import random

    from streamxai.core.uncertainty import SmoothedStderr

    gen = random.Random(6)
    items = [{"v": i} for i in range(20)]
    for trial in range(60):
        d = [1, 2, 9, 99][trial % 4]
        t = SmoothedStderr([f"f{i}" for i in range(d)], [0.001, 0.05, 0.3][trial % 3], ["zero", "first"][trial % 2])
        for _ in range(gen.randint(1, 150)):
            ds = [gen.choice([1e16, -1e16, 1.0, -1.0, 3.0, 1e-16]) if gen.random() < 0.5 else gen.gauss(0, 1)
                  for _ in range(d)]
            t.add_increments(ds)
            t.add_donors(items, [gen.randrange(20), gen.randrange(20)], ds)
            t.stored(gen.randrange(20), items, ds)
        mean, var = _one_rate(t, slow=False)
        se = np.sqrt(t._weights2() * (var + t._reuse(var, 1.0 - t.alpha)))
        _, slow = _one_rate(t, slow=True)
        k = np.where(slow > 0.0, 1.0 + t._reuse(slow, 1.0) / np.where(slow > 0.0, slow, 1.0), 1.0)
        assert t.stderr_array().tobytes() == se.tobytes(), trial
        assert t.variance_factors() == dict(zip(t._names, k.tolist(), strict=True)), trial
        both = t._moments()
        assert both[0][0].tobytes() == mean.tobytes() and both[1][1].tobytes() == slow.tobytes(), trial
