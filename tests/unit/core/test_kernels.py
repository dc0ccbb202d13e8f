"""The compiled kernels give the Python code's values bit for bit, on random inputs with special values and
whole stream-explainer reports, leaving anything unusual to Python; with ``STREAMXAI_REQUIRE_KERNEL=1``
a missing build fails."""

from __future__ import annotations

import functools
import math
import os
import pickle
import random
import struct
import sys

import numpy as np
import pytest
from streamxai.core import kernels
from streamxai.core.stream import StreamExplainer
from streamxai.local.demo_stream import agrawal_events
from streamxai.modelspec import build_model
from streamxai.plan import explainer_specs
from streamxai.settings import AGRAWAL_FEATURES, Settings

needs_kernel = pytest.mark.skipif(kernels.KERNELS is None, reason="the compiled kernels are not built")
AGRAWAL = list(AGRAWAL_FEATURES)


@pytest.fixture
def pure_python(monkeypatch):
    """Every module of the core that uses the kernels runs its Python code instead."""
    def switch():
        for name, mod in list(sys.modules.items()):
            if name.startswith("streamxai.core") and getattr(mod, "KERNELS", None) is not None:
                monkeypatch.setattr(mod, "KERNELS", None)
    return switch


def bits(v):
    """A value with its float's exact bits (signed zeros included); any NaN counts as one (IEEE 754 leaves which
    NaN to the machine, and nothing downstream tells them apart)."""
    if type(v) is float:
        return ("f", "nan") if math.isnan(v) else ("f", struct.pack("<d", v))
    return (type(v).__name__, v)


def shape(obj):
    """Every number in nested lists, dicts and tuples, as bits."""
    if isinstance(obj, dict):
        return {k: shape(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [shape(v) for v in obj]
    return bits(obj)


def test_required_kernel_is_built():
    """CI exports STREAMXAI_REQUIRE_KERNEL=1: a broken or missing build fails there instead of
    passing silently on the Python path."""
    if os.environ.get("STREAMXAI_REQUIRE_KERNEL", "") in ("", "0"):
        pytest.skip("STREAMXAI_REQUIRE_KERNEL is not set")
    assert os.environ.get("STREAMXAI_PURE_PYTHON", "") in ("", "0"), "both the kernels and the Python path forced"
    assert kernels.PATH == "compiled", "pipeline/core/_kernels*.c are not built: run `bash deploy/setup.sh`"


def test_a_build_from_older_source_is_not_used(monkeypatch):
    """A build that lacks a function this code calls (pulled without reinstalling) would fail
    on the first event that calls it; it is not used."""
    import types

    stale = types.ModuleType("streamxai.core._kernels")
    stale.fold_curves = lambda *args: None
    monkeypatch.setitem(sys.modules, "streamxai.core._kernels", stale)
    assert kernels.load({}) is None
    for f in kernels.FUNCTIONS:
        setattr(stale, f, None)
    assert kernels.load({}) is stale


def test_the_python_path_can_be_forced():
    assert kernels.load({"STREAMXAI_PURE_PYTHON": "1"}) is None
    if kernels.KERNELS is not None:
        assert kernels.load({"STREAMXAI_PURE_PYTHON": "0"}) is kernels.KERNELS


def run_stream(factory, events, s):
    se = StreamExplainer(factory(), AGRAWAL, explainer_specs(s), seed=3, stream_id="s")
    return [repr(se.process_one(ev.x, ev.y, report=i % 10 == 9, loss=0.5)) for i, ev in enumerate(events)]


@needs_kernel
@pytest.mark.slow
@pytest.mark.parametrize("model", [("river.linear_model.LogisticRegression", {}),
                                   ("river.tree.HoeffdingTreeClassifier", {"grace_period": 50})])
def test_whole_reports_are_the_same_on_either_path(model, pure_python):
    """Every field of every report (values, curves, blocks, standard errors, as repr: exact
    floats) of 300 events, with the kernels and with the Python code."""
    s = Settings(features=AGRAWAL, grid_size=5, storage_size=30, alpha=0.02)
    factory = functools.partial(build_model, model[0], model[1], 42)
    events = list(agrawal_events("s", 300, drift_at=200, seed=9))
    compiled = run_stream(factory, events, s)
    pure_python()
    assert kernels.PATH == "compiled" and run_stream(factory, events, s) == compiled
    assert sum(len(r) > 2 for r in compiled) == 30


def additive(x):
    return x["a"] + x["b"]


def ipdp_state(e):
    """Everything an IPDP event changes, as bits."""
    se = e._se
    return shape({"gx": e._gx.tolist(), "pd": e._pd.tolist(), "values": e.values,
                  "grad": [None if g is None else g.tolist() for g in e._grad],
                  "series": se._buffer[:se._held].tolist(), "n": se.n, "stats": e.increments._stats})


@needs_kernel
@pytest.mark.parametrize("seed", range(3))
def test_ipdp_fold_bit_for_bit(seed, monkeypatch):
    """iPDP's fold of random ICE curves (special values included) gives the same bits with the kernel and numpy."""
    import streamxai.core.explainers.ipdp as ipdp_module
    from streamxai.core.explainers.ipdp import IPDP
    from streamxai.core.model import ModelFunction

    gen = np.random.default_rng(seed)
    e = IPDP(ModelFunction(additive, output="value"), ["a", "b", "c"], alpha=0.05, grid_size=6)
    nf, g = 3, 6
    for step in range(60):
        kind = gen.integers(6)
        ice = gen.normal(0.0, 10.0 ** gen.integers(-3, 4), (nf, g))
        if kind == 0:
            ice[gen.integers(nf)] = 1.5  # a flat curve
        elif kind == 1:
            ice[gen.integers(nf), gen.integers(g)] = gen.choice([1e300, -1e300, 5e-324])
        elif kind == 2:  # a flat PD curve (a model constant in that feature), with an infinite ICE value
            i = gen.integers(nf)
            e._pd[i] = 2.0
            e._grad = None
            ice[i, gen.integers(g)] = math.inf
        grids = np.sort(gen.normal(0.0, 3.0, (nf, g)), axis=1)
        a, b = e.alpha, 1.0 - e.alpha
        decay = e._decay * b
        e._decay = decay
        copy = pickle.loads(pickle.dumps(e))
        with np.errstate(all="ignore"):  # numpy warns of the overflows it makes (the kernel makes them silently)
            e._fold_curves(grids, ice, a, b, 1.0 - decay)
            monkeypatch.setattr(ipdp_module, "KERNELS", None)
            copy._fold_curves(grids, ice, a, b, 1.0 - decay)
        monkeypatch.undo()
        e.n_explained += 1
        copy.n_explained += 1
        assert ipdp_state(e) == ipdp_state(copy), step
    assert ipdp_module.KERNELS is not None


@needs_kernel
def test_ipdp_fold_leaves_unusual_arrays_to_numpy():
    """Arrays of another type, order or shape: None, nothing changed."""
    fold = kernels.KERNELS.fold_curves
    ice, grids = np.ones((2, 3)), np.zeros((2, 3))
    gx, pd, dev, scale, row = np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), np.zeros(8)
    names, values = ["a", "b"], {"a": 0.0, "b": 0.0}
    args = [ice, grids, gx, pd, dev, scale, None, row, 0.5, 0.5, 1.0, names, values]
    for k, bad in [(0, ice.astype(np.float32)), (0, np.ones((3, 2)).T), (2, np.zeros((2, 4))), (5, np.ones(3)),
                   (7, np.zeros(9)), (6, np.ones(2)), (3, gx), (11, ["a"]), (12, {"a": 0.0})]:
        changed = list(args)
        changed[k] = bad
        assert fold(*changed) is None, k
        assert not gx.any() and not pd.any() and not row.any() and values == {"a": 0.0, "b": 0.0}
    assert fold(*args) is not None and pd.any()


def extreme_state(s):
    return shape({"hi": list(s._hi), "lo": list(s._lo), "n": s.n_seen})


@needs_kernel
@pytest.mark.parametrize("seed", range(3))
def test_extreme_storages_bit_for_bit(seed):
    """iPDP's extreme-value storages and grids: random streams with ties, integers, signed zeros
    and infinities, small windows; the kernels' deques, counts and grids are the Python code's."""
    from streamxai.core.storage.extreme import ExtremeValueStorage

    gen = random.Random(seed)
    window = gen.choice([1, 2, 5, 50])
    ours = [ExtremeValueStorage(window) for _ in range(4)]
    theirs = pickle.loads(pickle.dumps(ours))
    frac = np.array([k / 4 for k in range(5)])
    for step in range(400):
        values = [gen.choice([gen.choice([0.0, -0.0, 1.0, 2, -3, math.inf, -math.inf, 1e308]),
                              float(gen.randint(-3, 3)), gen.gauss(0.0, 1.0)]) for _ in ours]
        grids = np.empty((len(ours), len(frac)))
        assert kernels.KERNELS.extremes_grids(ours, values, frac, grids, ExtremeValueStorage)
        low = np.array([s.extremes(v)[0] for s, v in zip(theirs, values, strict=True)], dtype=float)[:, None]
        high = np.array([s.extremes(v)[1] for s, v in zip(theirs, values, strict=True)], dtype=float)[:, None]
        with np.errstate(all="ignore"):  # inf - inf
            expected = low + (high - low) * frac
        assert shape(grids.tolist()) == shape(expected.tolist()), step
        assert kernels.KERNELS.extremes_update(ours, values, ExtremeValueStorage)
        for s, v in zip(theirs, values, strict=True):
            s.update(v)
        assert [extreme_state(s) for s in ours] == [extreme_state(s) for s in theirs], step


@needs_kernel
def test_extreme_storages_leave_the_unusual_to_python():
    from streamxai.core.storage.extreme import ExtremeValueStorage
    from streamxai.core.storage.frequency import FrequencyStorage

    s = ExtremeValueStorage(3)
    s.update(1.0)
    before = extreme_state(s)
    for storages, values in [([s], [math.nan]), ([s], [np.float64(2.0)]), ([s], ["x"]), ([s, s], [2.0, 3.0]),
                             ([FrequencyStorage(3)], [1.0]), ([s], [])]:
        assert kernels.KERNELS.extremes_update(storages, values, ExtremeValueStorage) is False
        assert extreme_state(s) == before
    out = np.zeros((1, 2))
    assert not kernels.KERNELS.extremes_grids([s], [1.0], np.ones(3), out, ExtremeValueStorage)
    assert not kernels.KERNELS.extremes_grids([s], [1.0], np.ones(2), out.astype(np.float32), ExtremeValueStorage)
    assert not out.any()
    with pytest.raises(ValueError, match="NaN"):  # the Python code still says what was wrong
        s.update(math.nan)


