"""The compiled kernels neither leak nor keep references: 20,000 calls each on realistic, fallback and
raising inputs leave tracemalloc's memory and every given object's reference count where they were after
a warm-up; wrong shapes get False/None or a TypeError, never a crash."""

from __future__ import annotations

import gc
import random
import sys
import tracemalloc

import numpy as np
import pytest
from streamxai.core import kernels

pytestmark = pytest.mark.skipif(kernels.KERNELS is None, reason="the compiled kernels are not built")
K = kernels.KERNELS
CALLS = 20_000
WARM = 500


def names(d):
    """Feature names built at run time (not interned, so their reference counts are not immortal)."""
    return ["".join(("f", str(i))) for i in range(d)]


def fold_case():
    nf, g = 4, 8
    gen = np.random.default_rng(0)
    ice, grids = gen.normal(size=(nf, g)), np.sort(gen.normal(size=(nf, g)), axis=1)
    gx, pd, dev, scale, row = np.zeros((nf, g)), np.zeros((nf, g)), np.ones((nf, g)), np.ones(nf), np.zeros(nf * g + nf)
    fs, values = names(nf), {}
    values.update((f, 0.0) for f in fs)
    flat = np.zeros(nf, dtype=bool)
    args = [ice, grids, gx, pd, dev, scale, flat, row, 0.05, 0.95, 1.0, fs, values]
    late = list(args)  # every buffer taken, then a feature the values lack
    late[11] = fs[:3] + ["nope"]
    early = list(args)  # the fourth buffer of another type
    early[3] = pd.astype(np.float32)

    def call(i):
        assert K.fold_curves(*args) is not None
        assert K.fold_curves(*late) is None and K.fold_curves(*early) is None

    return call, [*args[:8], fs, *fs, values, late[11]]


def extremes_case():
    from streamxai.core.storage.extreme import ExtremeValueStorage
    from streamxai.core.storage.frequency import FrequencyStorage

    storages = [ExtremeValueStorage(w) for w in (1, 3, 50)]
    frac, out = np.linspace(0.0, 1.0, 5), np.empty((3, 5))
    gen = random.Random(1)
    streams = [[gen.choice([gen.gauss(0.0, 1.0), 2, -0.0, float("inf")]) for _ in storages] for _ in range(100)]
    freq = [FrequencyStorage(3)]
    # a period dividing WARM and CALLS: the deques end holding the values they held after the warm-up

    def call(i):
        vs = streams[i % len(streams)]
        assert K.extremes_grids(storages, vs, frac, out, ExtremeValueStorage)
        assert K.extremes_update(storages, vs, ExtremeValueStorage)
        assert not K.extremes_update(storages, [1.0, float("nan"), 1.0], ExtremeValueStorage)
        assert not K.extremes_update(freq, [1.0], ExtremeValueStorage)
        assert not K.extremes_grids(storages, vs, frac, out[:2], ExtremeValueStorage)

    return call, [*storages, frac, out, ExtremeValueStorage, *freq, *(v for s in streams for v in s)]


def linear_case():
    fs = names(6)
    terms, w, mean = [0.25 * i - 0.5 for i in range(6)], [1.5 - 0.5 * i for i in range(6)], [0.1 * i for i in range(6)]
    sd = [2.0, None, 0.5, 3.0, None, 1.0]
    pos = {f: i for i, f in enumerate(fs)}
    order, donors = fs[::-1], [{f: float(i) * 7.5 for f in fs} for i in range(3)]
    lacking = [{f: 1.0 for f in fs[:5]}]
    pairs = [(f, float(i) * 40.0 - 100.0) for i, f in enumerate(fs)] * 2
    bad_pairs = pairs[:3] + [(fs[0], 1)]  # an int: left to the Python code
    grids, out = np.linspace(-50.0, 50.0, 6 * 7).reshape(6, 7), np.empty((6, 7))

    def call(i):
        m, s = (mean, sd) if i % 2 else (None, None)  # with a scaler and without
        assert len(K.linear_chain(terms, w, m, s, pos, order, donors, i % 7, 0.5, i % 5)) == 1 + (6 - i % 7) * 3
        assert K.linear_chain(terms, w, m, s, pos, order, lacking, 0, 0.5, 1) is None
        assert len(K.linear_replaced(terms, w, m, s, pos, pairs, 0.5, i % 5, i % 2)) == 12 + i % 2
        assert K.linear_replaced(terms, w, m, s, pos, bad_pairs, 0.5, 1, True) is None
        assert K.linear_curves(terms, w, m, s, pos, fs, grids, 0.5, (0, 1, 2, 4)[i % 4], out)
        assert not K.linear_curves(terms, w, m, s, pos, fs, grids, 0.5, 3, out)  # labels: not floats
        assert not K.linear_curves(terms, w, m, s, pos, fs, grids, 0.5, 1, out[:5])

    return call, [*fs, terms, w, mean, sd, pos, order, donors, *donors, lacking, pairs, bad_pairs, grids, out]


def walk_case():
    feature, threshold = np.array([0, 1, -1, -1, -1]), np.array([0.5, -0.5, 0.0, 0.0, 0.0])
    child, x_right = np.array([[1, 2], [3, 4], [-1, -1], [-1, -1], [-1, -1]]), np.array([True, False, False, False, False])
    z = np.random.default_rng(2).normal(size=(30, 2))
    roots, trees = np.array([0]), np.array([0])
    outs = [np.empty(90, dtype=np.int64) for _ in range(5)]
    small = [np.empty(30, dtype=np.int64) for _ in range(5)]
    back = np.array([[1, 2], [0, 4], [-1, -1], [-1, -1], [-1, -1]])  # a child id that points back

    def call(i):
        assert K.tree_walk(feature, threshold, child, x_right, z, roots, trees, *outs) > 30
        assert K.tree_walk(feature, threshold, child, x_right, z, roots, trees, *small) is None
        assert K.tree_walk(feature, threshold, back, x_right, z, roots, trees, *outs) is None

    return call, [feature, threshold, child, x_right, z, roots, trees, *outs, *small, back]


CASES = {"fold_curves": fold_case, "extremes": extremes_case, "linear_rows": linear_case, "tree_walk": walk_case}


def measure(call, watched, calls):
    """(bytes allocated and still held, changed reference counts) over ``calls`` more calls."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    counts = [sys.getrefcount(o) for o in watched]
    for i in range(WARM, WARM + calls):
        call(i)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - before
    after = [sys.getrefcount(o) for o in watched]  # counted as before (a zip's tuple would add one)
    changed = [(type(o).__name__, c, a) for o, c, a in zip(watched, counts, after, strict=True) if a != c]
    return grown, changed


@pytest.mark.parametrize("case", CASES)
def test_kernels_keep_no_memory_and_no_references(case):
    """A dropped Py_DECREF keeps at least 16 bytes a call (320 kB over 20,000); the loop's containers are
    bounded, so after a warm-up the bound is 1 byte a call (20 kB), and every reference count is unchanged."""
    call, watched = CASES[case]()
    tracemalloc.start()
    try:
        for i in range(WARM):
            call(i)
        grown, changed = measure(call, watched, CALLS)
    finally:
        tracemalloc.stop()
    assert grown < CALLS, f"{case}: {grown} bytes still allocated after {CALLS} calls"
    assert not changed, f"{case}: reference counts changed (type, before, after): {changed}"
