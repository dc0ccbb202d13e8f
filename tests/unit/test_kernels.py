"""The compiled kernels (pipeline/core/kernels.py) give bit for bit the values of the Python
code they replace: on random inputs with NaN, infinities, signed zeros and integers, and for
whole reports of a stream explainer (logistic regression, a Hoeffding tree) on either path;
anything unusual is left to the Python code, with nothing changed. In CI
(``STREAMXAI_REQUIRE_KERNEL=1``, set by ``.ci/run``) a missing build fails here."""

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
from streamxai.core.increments import IncrementTracker
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
    """A value with its float's exact bits (signed zeros included). Any NaN counts as one: IEEE
    754 leaves which NaN an operation on two NaNs returns to the machine (x86 returns the
    first operand's, and a compiler may swap the operands of an addition), and nothing
    downstream tells NaNs apart (repr and JSON write every NaN alike)."""
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
    stale.welford_smooth = lambda *args: False
    monkeypatch.setitem(sys.modules, "streamxai.core._kernels", stale)
    assert kernels.load({}) is None
    for f in kernels.FUNCTIONS:
        setattr(stale, f, None)
    assert kernels.load({}) is stale


def test_the_python_path_can_be_forced():
    assert kernels.load({"STREAMXAI_PURE_PYTHON": "1"}) is None
    if kernels.KERNELS is not None:
        assert kernels.load({"STREAMXAI_PURE_PYTHON": "0"}) is kernels.KERNELS


SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e308, -1e308, 5e-324, 1e-300, 3, -7, 0, 2**60]


def draw(gen: random.Random):
    r = gen.random()
    if r < 0.15:
        return gen.choice(SPECIAL)
    if r < 0.25:
        return gen.randint(-1000, 1000)
    return gen.gauss(0.0, 10.0 ** gen.randint(-5, 5))


def run_both(features, stats, values, smoothed, keep, a, index, out):
    """(the kernel's result, the Python code's) from copies of the same state."""
    results = []
    for compiled in (True, False):
        t = IncrementTracker([])
        t._stats = pickle.loads(pickle.dumps(stats))
        sm = dict(smoothed) if smoothed is not None else None
        o = list(out) if out is not None else None
        if compiled:
            done = kernels.KERNELS.welford_smooth(t._stats, features, values, sm, keep, a, index, o)
            assert done
        elif sm is None:
            t.add_all(features, values)
        else:
            import streamxai.core.increments as inc
            saved, inc.KERNELS = inc.KERNELS, None
            try:
                t.add_smoothed(features, values, sm, keep, a, index, o)
            finally:
                inc.KERNELS = saved
        results.append((shape(t._stats), shape(sm), shape(o)))
    return results


@needs_kernel
@pytest.mark.parametrize("seed", range(4))
def test_welford_and_smoothing_bit_for_bit(seed):
    """2,000 random calls on random states (feature orders, repeated features, special values):
    the kernel's counts, means, sums of squares, smoothed values and copies are the Python
    code's bits."""
    gen = random.Random(seed)
    names = [f"f{i}" for i in range(9)]
    for _ in range(500):
        k = gen.randint(0, 9)
        features = [gen.choice(names) for _ in range(k)] if gen.random() < 0.2 else gen.sample(names, k)
        values = [draw(gen) for _ in features]
        stats = {f: [gen.choice([0, 1, gen.randint(2, 10**6)]), float(draw(gen)), abs(float(draw(gen)))]
                 for f in names}
        a = gen.choice([0.001, 0.02, 0.5, 1.0, gen.random()])
        smoothed = {f: float(draw(gen)) for f in names}
        index = {f: i for i, f in enumerate(names)}
        for args in ((None, 0.0, 0.0, None, None), (smoothed, 1.0 - a, a, None, None),
                     (smoothed, 1.0 - a, a, index, [None] * len(names))):
            compiled, python = run_both(features, stats, values, *args)
            assert compiled == python


@needs_kernel
@pytest.mark.parametrize("bad", [
    lambda s, v, sm: v.__setitem__(0, np.float32(1.5)),  # a value of another type
    lambda s, v, sm: v.__setitem__(0, "x"),
    lambda s, v, sm: v.__setitem__(0, 10**400),  # an int too large for a float
    lambda s, v, sm: s.pop("b"),  # a feature without an accumulator
    lambda s, v, sm: s["b"].__setitem__(1, np.float64(1.0)),  # a state of another type
    lambda s, v, sm: s["b"].append(0.0),
    lambda s, v, sm: sm.pop("b"),
    lambda s, v, sm: v.append(1.0),  # lengths differ
])
def test_anything_unusual_is_left_to_the_python_code(bad):
    stats = {"a": [1, 0.5, 0.0], "b": [2, 1.0, 2.0]}
    values = [1.0, 2.0]
    smoothed = {"a": 0.0, "b": 1.0}
    bad(stats, values, smoothed)
    before = repr((stats, smoothed))
    assert kernels.KERNELS.welford_smooth(stats, ["a", "b"], values, smoothed, 0.5, 0.5, None, None) is False
    assert repr((stats, smoothed)) == before


@needs_kernel
def test_the_python_code_still_raises_its_errors():
    t = IncrementTracker(["a"])
    with pytest.raises(KeyError):
        t.add_all(["b"], [1.0])
    with pytest.raises(ValueError):
        t.add_smoothed(["a"], [1.0, 2.0], {"a": 0.0}, 0.5, 0.5)


def run_stream(factory, events, s):
    se = StreamExplainer(factory, AGRAWAL, explainer_specs(s), seed=3, stream_id="s")
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
    """IPDP's fold of its ICE curves: random curves (flat ones, constant ones, huge and tiny
    values, infinities) on states reached by earlier folds, with the kernel and with the
    numpy code, from copies of the same state: the same bits everywhere."""
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


def stderr_state(t):
    slots = {k: (s.observation, shape(s.counts), shape(s.sums), shape(s.own)) for k, s in sorted(t._slots.items())}
    return (slots, shape([t._pairs.xy, t._pairs.x, t._pairs.y, t._pairs.n]),
            shape([t._owns.xy, t._owns.x, t._owns.y, t._owns.n]), shape(t._uses),
            shape(t._buffer[:t._held].tolist()), t.n, t._donors, shape(t.stderr_array().tolist()),
            shape(t.variance_factors()))


@needs_kernel
@pytest.mark.parametrize("mode", ["shared", "per_feature", "per_feature_lists"])
def test_donor_uses_bit_for_bit(mode, monkeypatch):
    """The standard errors' reuse statistics: random events drawing donors from a reservoir
    whose slots are replaced by new observations, by equal copies or kept; with the kernels
    and with the Python code, from the same start: the same slots, pair sums and results."""
    import streamxai.core.uncertainty as unc

    gen = random.Random(len(mode))
    d, size = 4, 12
    names = [f"f{i}" for i in range(d)]
    items = [{"x": float(i)} for i in range(size)]
    trackers = [unc.SmoothedStderr(names, 0.05), unc.SmoothedStderr(names, 0.05)]
    for step in range(300):
        deltas = [gen.choice([gen.gauss(0.0, 1.0), 0.0, -0.0, 1e100]) for _ in range(d)]
        if mode == "shared":
            slots = [gen.randrange(size) for _ in range(gen.randint(1, 3))]
        elif mode == "per_feature":
            slots = [gen.randrange(size) for _ in range(d)]
        else:
            slots = [[gen.randrange(size) for _ in range(2)] for _ in range(d)]
        slot = gen.randrange(size)
        r = gen.random()
        items[slot] = {"x": gen.random()} if r < 0.3 else dict(items[slot]) if r < 0.6 else items[slot]
        own = deltas if gen.random() < 0.5 else None
        for t, compiled in zip(trackers, (True, False), strict=True):
            if not compiled:
                monkeypatch.setattr(unc, "KERNELS", None)
            t.add_increments(deltas)
            t.add_donors(items, slots, deltas, per_feature=mode != "shared")
            t.stored(slot, items, own)
            monkeypatch.undo()
        assert stderr_state(trackers[0]) == stderr_state(trackers[1]), step
    assert unc.KERNELS is not None and trackers[0]._slots


@needs_kernel
def test_donor_uses_leave_the_unusual_to_python():
    import streamxai.core.uncertainty as unc

    t = unc.SmoothedStderr(["a", "b"], 0.1)
    items = [{"x": 1.0}] * 8
    t.add_increments([1.0, 2.0])
    t.add_donors(items, [0, 4], [1.0, 2.0], per_feature=True)
    before = stderr_state(t)
    p, o = t._pairs, t._owns
    for slots, deltas, per in [([0, 9], [1.0, 2.0], True), ([0, [4]], [1.0, 2.0], True), ([0], [1.0, 2], False),
                               ([0, 4], [1.0], True), ([-4], [1.0, 2.0], False), ([0, 4], np.ones(2), True)]:
        assert kernels.KERNELS.donor_uses(t._slots, items, slots, deltas, per, unc.SlotUse, p.xy, p.x, p.y, p.n,
                                          o.xy, o.x, o.y, o.n, t._uses, 4) is False
        assert stderr_state(t) == before
    row = np.zeros(2)
    assert not kernels.KERNELS.fill_row(row, [1.0, 2]) and not kernels.KERNELS.fill_row(row.astype(np.float32), [1.0, 2.0])
    assert not row.any() and kernels.KERNELS.fill_row(row, (1.0, 2.0)) and row.tolist() == [1.0, 2.0]


@needs_kernel
def test_moment_sums_bit_for_bit():
    """The standard errors' weighted column sums of the increments and their squares, for one
    and two rates: the numpy code's bits (cancelling magnitudes make any other order of the
    additions visible, as in test_uncertainty_sums.py; overflowing squares included)."""
    from streamxai.core.uncertainty import _column_sums

    rng = np.random.default_rng(5)
    for trial in range(400):
        b, d, rates = int(rng.integers(1, 65)), [1, 2, 9, 99][trial % 4], 1 + trial % 2
        if trial % 3 == 0:
            x = rng.choice([1e16, -1e16, 1.0, -1.0, 3.0, 1e-16, 1e200, -0.0], size=(b, d))
        else:
            x = rng.standard_normal((b, d)) * 10.0 ** rng.integers(-8, 9, size=(b, d))
        w = rng.random((rates, b))
        out = np.empty((rates, 2, d))
        assert kernels.KERNELS.moment_sums(w, x, out)
        with np.errstate(over="ignore"):
            xx = np.concatenate((x, x * x), axis=1)
            expected = np.array([_column_sums(wr, xx).reshape(2, -1) for wr in w])
        assert shape(out.tolist()) == shape(expected.tolist()), (b, d, rates)
    for b in (1, 2, 5):  # a column of -0.0 only: numpy's sum starts from +0.0, so it is +0.0
        x, w = np.full((b, 3), -0.0), np.ones((1, b))
        out = np.empty((1, 2, 3))
        assert kernels.KERNELS.moment_sums(w, x, out)
        assert shape(out.tolist()) == shape([_column_sums(w[0], np.concatenate((x, x * x), axis=1)).reshape(2, -1).tolist()])
    out = np.zeros((1, 2, 2))
    for w, x in [(np.ones((1, 3)), np.ones((2, 2))), (np.ones(2), np.ones((2, 2))),
                 (np.ones((1, 2)), np.ones((2, 2), dtype=np.float32)), (np.ones((1, 2)), np.ones((2, 2)).T[::1, ::2])]:
        assert not kernels.KERNELS.moment_sums(w, x, out) and not out.any()


@needs_kernel
def test_draws_and_shuffles_bit_for_bit():
    """iPFI's draws of stored values and iSAGE's shuffles: the same rows, slots, orders and
    generator states as the Python code, for reservoirs and orders of every size up to 100;
    a missing feature raises the same KeyError after the same draws."""
    gen = random.Random(11)
    for n in range(1, 101):
        names = [f"f{i}" for i in range(gen.randint(1, 12))]
        past = [{f: gen.choice([gen.random(), 3, "a"]) for f in names} for _ in range(n)]
        rngs = [(f, random.Random(gen.random())) for f in names]
        twins = [(f, random.Random()) for f, _ in rngs]
        for (_, a), (_, b) in zip(rngs, twins, strict=True):
            b.setstate(a.getstate())
        pairs, slots = [], []
        assert kernels.KERNELS.draw_pairs(rngs, past, pairs, slots, random.Random)
        want_pairs, want_slots = [], []
        for f, rng in twins:
            k = int(rng.random() * n)
            want_pairs.append((f, past[k][f]))
            want_slots.append(k)
        assert (pairs, slots) == (want_pairs, want_slots)
        assert [r.getstate() for _, r in rngs] == [r.getstate() for _, r in twins]
        order, theirs = list(names), list(names)
        rng, twin = random.Random(n), random.Random(n)
        assert kernels.KERNELS.shuffle(order, rng, random.Random)
        for i in range(len(theirs) - 1, 0, -1):
            k = int(twin.random() * (i + 1))
            theirs[i], theirs[k] = theirs[k], theirs[i]
        assert order == theirs and rng.getstate() == twin.getstate()
    rngs = [("a", random.Random(1)), ("b", random.Random(2))]
    with pytest.raises(KeyError, match="b"):
        kernels.KERNELS.draw_pairs(rngs, [{"a": 1.0}], [], [], random.Random)


@needs_kernel
def test_draws_and_shuffles_leave_other_generators_to_python():
    class Mine(random.Random):
        pass

    rng = Mine(1)
    state = rng.getstate()
    assert not kernels.KERNELS.draw_pairs([("a", rng)], [{"a": 1.0}], [], [], random.Random)
    assert not kernels.KERNELS.shuffle(["a", "b"], rng, random.Random)
    assert not kernels.KERNELS.draw_pairs([("a", random.Random(1))], ({"a": 1.0},), [], [], random.Random)
    assert rng.getstate() == state


def random_tracker(gen: random.Random, rng: np.random.Generator, d: int):
    """A SmoothedStderr in a random state: moments, held increments and pair sums drawn with
    special values (NaN, infinities, signed zeros, huge and tiny), donors or none."""
    from streamxai.core.uncertainty import _BUFFER, SmoothedStderr

    def values(shape):
        x = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, size=shape)
        special = rng.random(shape) < 0.1
        x[special] = rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan, 1e200, 5e-324], size=special.sum())
        return x

    t = SmoothedStderr([f"f{i}" for i in range(d)], alpha=gen.choice([0.001, 0.05, 0.5, 1.0]))
    t.n = gen.randint(1, 10**6)
    t._held = gen.choice([0, 1, 2, gen.randint(3, _BUFFER)])
    t._buffer[:t._held] = values((t._held, d))
    for mom in (t._mom, t._slow):
        mom[:] = np.abs(values((3, d))) if gen.random() < 0.8 else values((3, d))
        mom[0] = mom[0, 0] if gen.random() < 0.9 else 0.0  # every feature has the same weights
    t._w2sum, t._slow_w2sum = (gen.choice([0.0, gen.random(), gen.random() * 1e-9]) for _ in range(2))
    for sums in (t._pairs, t._owns):
        sums.xy, sums.x, sums.y = (values(d).tolist() for _ in range(3))
        sums.n = [gen.choice([0.0, -1.0, gen.random() * 50, math.nan]) for _ in range(d)]
    t._uses = [gen.choice([0.0, gen.random() * 100]) for _ in range(d)]
    for j in range(d):  # flat features: a variance of exactly 0, so the clips and floors compare signed zeros
        if gen.random() < 0.3:
            for mom in (t._mom, t._slow):
                mom[1:, j] = 0.0
            t._buffer[:t._held, j] = gen.choice([0.0, -0.0])
            for sums in (t._pairs, t._owns):
                sums.xy[j] = sums.x[j] = sums.y[j] = gen.choice([0.0, -0.0])
    t._donors = gen.choice([0, 1, 3, 10])
    t._size = gen.choice([0, 1, 2, 100])
    t._updates = gen.choice([1.0, 0.5, 3])
    t._replace = gen.choice([0.0, 0.01, 1.0, 1 / 7])
    return t


@needs_kernel
def test_stderr_report_bit_for_bit(monkeypatch):
    """A report's standard errors, variance factors and moments (SmoothedStderr._report) from
    the compiled call and from the numpy code, on random states of 1, 2, 9 and 99 features
    with special values, held increments or none, donors or none: the same bits."""
    import streamxai.core.uncertainty as unc

    gen, rng = random.Random(17), np.random.default_rng(17)
    compiled_runs = 0
    for trial in range(600):
        t = random_tracker(gen, rng, [1, 2, 9, 99][trial % 4])
        u = pickle.loads(pickle.dumps(t))
        compiled_runs += t._report_compiled()
        with monkeypatch.context() as m, np.errstate(all="ignore"):
            m.setattr(unc, "KERNELS", None)
            expected = u._report(), u._moments(both=True)
        got = t._cached, t._cached_moments
        assert shape([a.tolist() for pair in got for a in pair]) == \
               shape([a.tolist() for pair in expected for a in pair]), trial
    assert compiled_runs == 600


@needs_kernel
def test_stderr_report_leaves_the_unusual_to_numpy():
    """Arrays of another type or layout, or pair sums that are not lists of floats of the
    features' length: the kernel declines and writes nothing, and the numpy code answers."""
    gen, rng = random.Random(3), np.random.default_rng(3)
    t = random_tracker(gen, rng, 4)
    t._held = 5
    t._donors, t._size = 2, 10
    expected = shape([a.tolist() for a in t._report()])

    def call(mom=None, held=None, w=None, out=None, lists=None):
        from streamxai.core.uncertainty import _BUFFER
        p, o = t._pairs, t._owns
        scalars = (0.5, 0.9, 1.0, 1.0, 0.1, 0.1, 0.01, 0.9, True, 4.0, 10.0, 0.5, 4.0)
        return kernels.KERNELS.stderr_report(
            t._mom if mom is None else mom, t._slow, t._buffer[:5] if held is None else held,
            t._weights()[[0, 1], _BUFFER - 5:] if w is None else w, out, scalars,
            lists or (p.xy, p.x, p.y, p.n, o.xy, o.x, o.y, o.n, t._uses))

    good = np.zeros((6, 4))
    assert call(out=good) and good.any()
    floats = [1.0] * 4
    for kwargs in [{"mom": t._mom.astype(np.float32)}, {"mom": np.asfortranarray(t._mom)},
                   {"held": t._buffer[:5, :3]}, {"w": np.ones((1, 5))}, {"w": np.ones((2, 4))},
                   {"lists": (floats,) * 8 + ([1.0, 2, 3.0, 4.0],)}, {"lists": (floats,) * 8 + ([1.0] * 3,)},
                   {"lists": (floats,) * 8 + ((1.0,) * 4,)}, {"held": t._buffer[:5], "w": None, "mom": t._mom[:2]}]:
        out = np.zeros((6, 4))
        assert call(out=out, **kwargs) is False and not out.any(), kwargs
    shared = np.zeros((6, 4))
    assert call(out=shared, held=shared[:5]) is False and not shared.any()
    for out in (np.zeros((6, 4), dtype=np.float32), np.zeros((5, 4)), np.zeros((6, 4))[:, ::1].T):
        assert call(out=out) is False
    t._cached = None
    assert shape([a.tolist() for a in t._report()]) == expected
