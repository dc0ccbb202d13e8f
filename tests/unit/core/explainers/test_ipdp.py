"""iPDP (Algorithm 1), its storages (Algorithms 2 and 3) and the batch PDP reference. Tolerances: each
point-wise estimate has variance at most ``sigma_k^2 * alpha / (2 - alpha)`` (Theorem 3.4, ``sigma_k^2``
the ICE value's variance at grid point k); "4 sd" is 4 * sqrt(that bound), about normal (an exponential
average of many i.i.d. terms), so a 4 sd excursion has probability ~6e-5 per check."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from river import drift, tree
from river.datasets import synth
from streamxai.core.batch.pdp import equidistant_grid, partial_dependence, pdp_importance
from streamxai.core.explainers.ipdp import IPDP
from streamxai.core.model import ModelFunction
from streamxai.core.storage.extreme import ExtremeValueStorage
from streamxai.core.storage.frequency import FrequencyStorage

AGRAWAL = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
AGRAWAL_CATEGORICAL = ["elevel", "car", "zipcode"]
EFFECT = {"a": 0.0, "b": 1.0, "c": 3.0}


# module-level models, so that explainers holding them pickle
def additive(x):
    """2 * x1 + x2^2: PD_x1(v) = 2v + E[x2^2] = 2v + 1/3, PD_x2(v) = E[2 x1] + v^2 = 1 + v^2."""
    return 2.0 * x["x1"] + x["x2"] ** 2


def with_category(x):
    """x1 + EFFECT[cat]: PD_cat(c) = E[x1] + EFFECT[c] = 0.5 + EFFECT[c]."""
    return x["x1"] + EFFECT[x["cat"]]


def agrawal_score(x):
    """A deterministic, cheap function of several agrawal features (numeric and categorical)."""
    return (
        x["salary"] / 1e5
        - (x["age"] - 50) ** 2 / 900
        + 0.1 * x["elevel"]
        + 0.05 * (x["car"] % 3)
        + 0.01 * x["zipcode"]
        + x["loan"] / 1e6
    )


class Switchable:
    """``slope * x1 + x2``; the test changes ``slope`` mid-stream (a real drift of the model)."""

    def __init__(self, slope):
        self.slope = slope

    def __call__(self, x):
        return self.slope * x["x1"] + x["x2"]


def uniform_stream(n, seed, names=("x1", "x2")):
    rng = random.Random(seed)
    return [{f: rng.random() for f in names} for _ in range(n)]


def agrawal_stream(n, seed):
    return [x for x, _ in synth.Agrawal(classification_function=1, seed=seed).take(n)]


def sd_bound(sigma2, alpha):
    """sqrt of Theorem 3.4's variance bound sigma^2 * alpha / (2 - alpha)."""
    return math.sqrt(sigma2 * alpha / (2 - alpha))


# --- convergence to ground truth ----------------------------------------------------------
@pytest.mark.parametrize("grid", ["extreme", "quantile"])
def test_converges_to_analytic_pd(grid):
    alpha = 0.01
    e = IPDP(ModelFunction(additive, output="value"), ["x1", "x2"], alpha=alpha, grid=grid, seed=3)
    for x in uniform_stream(3000, seed=11):
        e.explain_one(x)
    curves = e.curves()
    # ICE noise at a fixed grid value: Var(X2^2) = 1/5 - 1/9 = 4/45 for x1, Var(2 X1) = 1/3 for x2
    for f, pd_true, sigma2 in (
        ("x1", lambda v: 2 * v + 1 / 3, 4 / 45),
        ("x2", lambda v: 1 + v * v, 1 / 3),
    ):
        c = curves[f]
        err = max(abs(p - pd_true(g)) for g, p in zip(c["grid"], c["pd"], strict=True))
        assert err < 4 * sd_bound(sigma2, alpha), (f, err)
        # the grid spans the feature's recent range of U(0, 1).
        if grid == "extreme":
            # the minimum of the last w = 1000 values exceeds 0.01 with probability
            # (1 - 0.01)^1000 ~ 4e-5 (the maximum likewise)
            assert c["grid"][0] < 0.01 and c["grid"][-1] > 0.99
        else:
            # Q5 / Q95 of L = 100 stored values (linear interpolation at position q (L - 1)) is
            # about the order statistic k = q (L - 1) + 1 of 100 uniforms: Beta(k, L + 1 - k),
            # mean k / (L + 1), sd sqrt(k (L + 1 - k) / ((L + 1)^2 (L + 2))) ~ 0.023. The storage
            # turns over every ~1000 events, so alpha's smoothing barely averages it: 4 sd
            L = 100
            for q, g in ((0.05, c["grid"][0]), (0.95, c["grid"][-1])):
                k = q * (L - 1) + 1
                mean, sd = k / (L + 1), math.sqrt(k * (L + 1 - k) / ((L + 1) ** 2 * (L + 2)))
                assert abs(g - mean) < 4 * sd, (q, g)
    # importance = sample std of the PD curve. The ICE curves of an additive model are
    # parallel, so the noise is common to all grid points and cancels: exactly 2 std(grid)
    assert e.values["x1"] == pytest.approx(pdp_importance(curves["x1"]["pd"]), rel=1e-9)
    assert e.values["x1"] == pytest.approx(2 * np.std(curves["x1"]["grid"], ddof=1), rel=1e-9)


def test_variance_matches_theorem_3_4():
    """The error of a point-wise estimate has variance sigma^2 alpha / (2 - alpha): for f = 2 x1 + x2^2 the
    bound holds with equality, so over 30 seeds MSE / bound is chi^2_30 / 30, in [0.36, 2.07] w.p. 0.999."""
    alpha, n_seeds = 0.02, 30
    bound = (4 / 45) * alpha / (2 - alpha)
    sq = []
    for seed in range(n_seeds):
        e = IPDP(ModelFunction(additive, output="value"), ["x1", "x2"], ["x1"], alpha=alpha)
        for x in uniform_stream(1000, seed=100 + seed):
            e.explain_one(x)
        c = e.curves()["x1"]
        sq.append((c["pd"][4] - (2 * c["grid"][4] + 1 / 3)) ** 2)
    ratio = sum(sq) / n_seeds / bound
    assert 0.36 < ratio < 2.07, ratio


@pytest.mark.slow
def test_agrees_with_batch_pdp_on_frozen_river_model():
    model = tree.HoeffdingTreeClassifier()
    # 8000 events: enough for the tree to split on both salary and age
    for x, y in synth.Agrawal(classification_function=1, seed=5).take(8000):
        model.learn_one(x, y)
    data = agrawal_stream(2000, seed=6)
    alpha = 0.01  # 2000 events = 20 / alpha: the debiasing term (1 - alpha)^t is ~2e-9
    mf = ModelFunction(model, output="proba_of", target_class=1)
    e = IPDP(mf, AGRAWAL, ["salary", "age"], alpha=alpha, seed=0)
    for x in data:
        e.explain_one(x)
    curves = e.curves()
    importance = {}
    for f in ("salary", "age"):
        grid = curves[f]["grid"]
        # batch PDP on the same data and grid: the mean of the ICE values at each grid point
        ice = [mf.many([{**x, f: g} for x in data]) for g in grid]
        batch = [float(np.mean(v)) for v in ice]
        assert partial_dependence(mf, data[:200], f, grid) == pytest.approx([float(np.mean(v[:200])) for v in ice])
        tols = []
        for p_inc, p_batch, v in zip(curves[f]["pd"], batch, ice, strict=True):
            # both average the same ICE values, iPDP with weights w_s ~ alpha (1 - alpha)^(t-s),
            # batch with 1/n: Var(diff) = sigma^2 (sum w^2 - 1/n) <= sigma^2 alpha / (2 - alpha),
            # sigma^2 measured on the data (variance of the ICE values at the grid point)
            tols.append(4 * sd_bound(float(np.var(v)), alpha) + 1e-9)
            assert abs(p_inc - p_batch) <= tols[-1], (f, p_inc, p_batch)
        # the sample std is a seminorm: |std(a) - std(b)| <= std(a - b) <= sqrt(m/(m-1)) max|a - b|
        m = len(grid)
        assert abs(e.values[f] - pdp_importance(batch)) <= math.sqrt(m / (m - 1)) * max(tols)
        # the model uses the feature (its PD curve is not flat)
        assert pdp_importance(batch) > 0, f
        importance[f] = pdp_importance(batch)
    # not vacuous: the salary effect (std ~0.25) is far above the largest tolerance (~0.08)
    assert importance["salary"] > 0.2


# --- storages -----------------------------------------------------------------------------
@pytest.mark.parametrize("window", [1, 5, 50])
def test_extreme_value_storage_equals_brute_force(window):
    rng = random.Random(window)
    stream = [rng.randint(0, 20) for _ in range(600)]  # ties on purpose
    stream += list(range(300, 0, -1)) + list(range(300))  # monotone runs: worst case, then best
    s = ExtremeValueStorage(window=window)
    for i, v in enumerate(stream):
        s.update(v)
        recent = stream[max(0, i + 1 - window) : i + 1]
        assert (s.min, s.max) == s.extremes(-1) == (min(recent), max(recent)), i
        assert len(s) <= 2 * window
    assert s.n_seen == len(stream)


def test_extreme_value_storage_is_small_on_iid_data():
    s = ExtremeValueStorage(window=1000)
    rng = random.Random(0)
    sizes = []
    for _ in range(5000):
        s.update(rng.random())
        sizes.append(len(s))
    # expected deque length on i.i.d. data is the harmonic number H_1000 ~ 7.5 per deque
    assert max(sizes) < 100


def test_frequency_storage_keeps_last_values_when_everything_enters():
    s = FrequencyStorage(size=7)
    for v in range(100):
        s.update(v)
        assert s.values == list(range(max(0, v - 6), v + 1))
    assert s.counts == Counter(s.values)


def test_frequency_storage_replaces_oldest_first():
    s = FrequencyStorage(size=10, entrance_probability=0.3, seed=4)
    for i in range(2000):
        before = s.values
        replaced = s.n_replaced
        s.update(i)  # values are their own arrival index
        after = s.values
        assert after == sorted(after)  # arrival order is kept
        if len(before) < 10:
            assert after == before + [i]
        elif s.n_replaced > replaced:
            assert after == before[1:] + [i]  # the oldest left, the new one entered
        else:
            assert after == before


def test_frequency_storage_entrance_probability_is_binomial():
    size, p, n = 10, 0.3, 20000
    s = FrequencyStorage(size=size, entrance_probability=p, seed=8)
    for i in range(size + n):
        s.update(i)
    # entrances into the full storage ~ Binomial(n, p): mean 6000, sd ~ 64.8; 4 sd
    assert abs(s.n_replaced - n * p) < 4 * math.sqrt(n * p * (1 - p))
    # and the storage describes the last size / p values: the oldest stored is about that old
    # (its age is a sum of `size` geometric waits, mean size / p ~ 33, sd ~ 8.8; 5 sd)
    assert (size + n) - s.values[0] < size / p + 5 * math.sqrt(size * (1 - p)) / p


def test_frequency_storage_quantiles_counts_and_seed():
    a, b, c = (FrequencyStorage(50, 0.5, seed=sd) for sd in (1, 1, 2))
    rng = random.Random(0)
    for _ in range(500):
        v = rng.gauss(0, 1)
        for s in (a, b, c):
            s.update(v)
    assert a.values == b.values and a.values != c.values
    for q in (0.0, 0.05, 0.5, 0.95, 1.0):
        assert a.quantile(q) == pytest.approx(float(np.quantile(a.values, q)))
    cat = FrequencyStorage(size=20)
    for v in ["x"] * 5 + ["y"] * 10 + ["z"] * 3 + [1, 2]:
        cat.update(v)
    assert cat.counts == Counter(cat.values)
    assert cat.frequent(2) == ["x", "y"] and cat.frequent(10) == [1, 2, "x", "y", "z"]


# --- explainer contract -------------------------------------------------------------------
def _agrawal_explainer(**kw):
    kw.setdefault("categorical", AGRAWAL_CATEGORICAL)
    return IPDP(ModelFunction(agrawal_score, output="value"), AGRAWAL, alpha=0.05, **kw)


@pytest.mark.parametrize("grid", ["extreme", "quantile"])
def test_feature_partition_gives_identical_values(grid):
    data = agrawal_stream(400, seed=2)
    full = _agrawal_explainer(grid=grid, seed=9, storage_size=20, window=100)
    parts = {f: _agrawal_explainer(grid=grid, seed=9, storage_size=20, window=100, features=[f]) for f in AGRAWAL}
    for x in data:
        out = full.explain_one(x)
        for f, part in parts.items():
            assert part.explain_one(x) == {f: out[f]}
    curves = full.curves()
    for f, part in parts.items():
        assert part.curves() == {f: curves[f]}


def test_evaluations_per_event_in_one_call():
    calls = []

    def batch(rows):
        calls.append(len(rows))
        return [agrawal_score(r) for r in rows]

    mf = ModelFunction(agrawal_score, output="value", batch=batch)
    numeric = [f for f in AGRAWAL if f not in AGRAWAL_CATEGORICAL]
    e = IPDP(mf, AGRAWAL, numeric, grid_size=7)
    data = agrawal_stream(50, seed=3)
    for x in data:
        e.explain_one(x)
    assert calls == [7 * len(numeric)] * len(data)
    assert e.n_evaluations == 7 * len(numeric) * len(data)
    # categorical features: one evaluation per recent category, at most grid_size
    calls.clear()
    e = IPDP(mf, AGRAWAL, ["elevel", "car"], grid_size=7, categorical=AGRAWAL_CATEGORICAL)
    for x in data:
        e.explain_one(x)
    seen = [
        min(7, len({d["elevel"] for d in data[:i]}) or 1) + min(7, len({d["car"] for d in data[:i]}) or 1)
        for i in range(len(data))
    ]
    assert calls == seen  # storage_size=100 > 50 events: the storage holds every past event


def test_a_quantile_grid_of_an_integer_feature_holds_its_values():
    e = _agrawal_explainer(grid="quantile", seed=1)
    for x in agrawal_stream(200, seed=4):
        e.explain_one(x)
        e.observe_one(x)
    curves = e.curves()
    assert set(curves["car"]["grid"]) <= set(range(1, 21)) and len(curves["car"]["grid"]) == 10


def test_categorical_feature_pd():
    alpha = 0.01
    e = IPDP(ModelFunction(with_category, output="value"), ["x1", "cat"], alpha=alpha, categorical=["cat"], seed=1)
    rng = random.Random(2)
    for _ in range(3000):
        e.explain_one({"x1": rng.random(), "cat": rng.choice("aabbbc")})
    c = e.curves()["cat"]
    assert c["grid"] == ["a", "b", "c"]
    # ICE noise at a fixed category: Var(X1) = 1/12
    for g, p in zip(c["grid"], c["pd"], strict=True):
        assert abs(p - (0.5 + EFFECT[g])) < 4 * sd_bound(1 / 12, alpha)
    assert e.values["cat"] == pytest.approx(pdp_importance(c["pd"], categorical=True))
    # the x1 noise is common to all categories evaluated at the same events and cancels in
    # the range; categories that entered the grid a few events apart differ by O((1 - alpha)^t)
    assert e.values["cat"] == pytest.approx((3.0 - 0.0) / 4, abs=1e-9)


def test_categories_are_forgotten_and_bounded():
    e = IPDP(
        ModelFunction(with_category, output="value"),
        ["x1", "cat"],
        ["cat"],
        grid_size=3,
        storage_size=10,
        window=10,
        categorical=["cat"],
    )
    global EFFECT
    saved = EFFECT
    EFFECT = {f"c{i}": float(i) for i in range(500)}
    try:
        for i in range(500):
            e.explain_one({"x1": 0.5, "cat": f"c{i}"})
            # state only for categories in the storage or the last grid
            assert len(e._cpd["cat"]) <= 10 + 3
    finally:
        EFFECT = saved
    assert len(e.curves()["cat"]["grid"]) == 3
    # the grid of the last event came from the storage before it: the 10 previous categories
    assert all(c in {f"c{i}" for i in range(489, 499)} for c in e.curves()["cat"]["grid"])


def test_refuses_non_numeric_outputs_and_bad_input():
    for output in ("label", "proba"):
        with pytest.raises(ValueError, match="output='value'"):
            IPDP(ModelFunction(additive, output=output), ["x1", "x2"])
    with pytest.raises(ValueError, match="output='value'"):
        partial_dependence(ModelFunction(additive), [{"x1": 0.0, "x2": 0.0}], "x1", [0.0])
    e = IPDP(ModelFunction(additive, output="value"), ["x1", "x2"])
    with pytest.raises(ValueError, match="missing"):
        e.explain_one({"x1": 0.5})
    e = IPDP(ModelFunction(with_category, output="value"), ["x1", "cat"], ["cat"])
    with pytest.raises(TypeError, match="categorical"):
        e.explain_one({"x1": 0.5, "cat": "a"})
    with pytest.raises(ValueError, match="categorical"):
        IPDP(ModelFunction(additive, output="value"), ["x1", "x2"], categorical=["nope"])


def test_a_refused_event_leaves_no_trace():
    stream = uniform_stream(100, seed=7)
    e, ref = (IPDP(ModelFunction(additive, output="value"), ["x1", "x2"], grid="quantile", seed=1) for _ in "ab")
    for x in stream[:50]:
        e.explain_one(x)
        ref.explain_one(x)
    for bad, err in (({"x1": 0.5, "x2": "oops"}, TypeError), ({"x1": float("nan"), "x2": 0.5}, ValueError)):
        for call in (e.explain_one, e.observe_one):
            with pytest.raises(err):
                call(bad)
    for x in stream[50:]:
        assert e.explain_one(x) == ref.explain_one(x)
    assert e.curves() == ref.curves()


def test_observe_one_only_feeds_the_storage():
    e = IPDP(ModelFunction(additive, output="value"), ["x1", "x2"], grid_size=5)
    for x in uniform_stream(20, seed=1):
        e.observe_one(x)
    assert e.n_explained == 0 and e.n_evaluations == 0
    assert e.curves() == {"x1": {"grid": [], "pd": [], "se": []}, "x2": {"grid": [], "pd": [], "se": []}}
    e.explain_one({"x1": 0.5, "x2": 0.5})
    # the first explained event already uses the range of the observed values
    grid = e.curves()["x1"]["grid"]
    assert grid[0] < 0.3 and grid[-1] > 0.7


def test_batch_pdp_matches_definition():
    mf = ModelFunction(additive, output="value")
    data = uniform_stream(200, seed=3)
    grid = equidistant_grid(0.0, 1.0, 5)
    pd = partial_dependence(mf, data, "x2", grid)
    mean_x1 = sum(x["x1"] for x in data) / len(data)
    assert pd == pytest.approx([2 * mean_x1 + v * v for v in grid])
    assert mf.n_evaluations == 200 * 5


# --- drift ---------------------------------------------------------------------------------
def test_pd_curve_follows_a_model_change_within_o_of_one_over_alpha():
    alpha = 0.01
    model = Switchable(slope=2.0)
    e = IPDP(ModelFunction(model, output="value"), ["x1", "x2"], ["x1"], alpha=alpha, window=200, seed=0)
    data = uniform_stream(3000, seed=21)
    t_switch = 1000
    for x in data[:t_switch]:
        e.explain_one(x)
    model.slope = -2.0
    noise = 4 * sd_bound(1 / 12, alpha)  # Var(X2) = 1/12 at any grid point
    n = 0
    for checkpoint in (10, 100, 200, 500):
        while n < checkpoint:
            e.explain_one(data[t_switch + n])
            n += 1
        # Theorem 3.1: the estimate is the exponential average of the PD functions seen,
        # so n events after the switch the old curve keeps weight (1 - alpha)^n
        w_old = (1 - alpha) ** n
        c = e.curves()["x1"]
        for g, p in zip(c["grid"], c["pd"], strict=True):
            expected = w_old * (2 * g + 0.5) + (1 - w_old) * (-2 * g + 0.5)
            assert abs(p - expected) < noise, (n, g)
    # after 5 / alpha events the curve is the new one (old weight e^-5 < 0.007)
    c = e.curves()["x1"]
    slope = (c["pd"][-1] - c["pd"][0]) / (c["grid"][-1] - c["grid"][0])
    assert slope == pytest.approx(-2.0, abs=0.1)


def test_adwin_on_the_importance_stream_detects_the_change():
    alpha = 0.01
    model = Switchable(slope=2.0)
    e = IPDP(ModelFunction(model, output="value"), ["x1", "x2"], ["x1"], alpha=alpha, window=200, seed=0)
    adwin = drift.ADWIN()
    t_switch = 3000
    # warm-up: the grid needs `window` events to span the range and 5 / alpha more for the
    # smoothed grid points to forget the narrow initial range (weight e^-5); ADWIN watches
    # the settled stream only, as a monitor started after the warm-up would
    settled = 200 + 5 / alpha
    detections = []
    for t, x in enumerate(uniform_stream(4000, seed=22)):
        if t == t_switch:
            model.slope = 0.5  # importance 2 std(grid) ~ 0.67 drops to ~ 0.17
        importance = e.explain_one(x)["x1"]
        if t >= settled:
            adwin.update(importance)
            if adwin.drift_detected:
                detections.append(t)
    assert detections, "ADWIN saw no change in the importance stream"
    assert t_switch < detections[0] <= t_switch + 5 / alpha, detections


class _Switch:
    """``x1`` alone, then ``x1 + 2 x1 s(x2)`` with ``s = +-1`` by ``x2 > 0.5``: an interaction that
    changes every ICE curve of ``x1`` (slope 3 or -1 instead of 1) but not its PD (E[s] = 0)."""

    def __init__(self):
        self.on = False

    def __call__(self, x):
        s = 1.0 if x["x2"] > 0.5 else -1.0
        return x["x1"] + (2.0 * x["x1"] * s if self.on else 0.0)


def test_increments_follow_the_pd_curve_not_each_events_own_ice_curve():
    """iPDP's increments (each event's centred ICE curve projected on the PD so far) keep their mean when the
    model adds an interaction that changes each ICE curve but not the PD. PD std 0.395 on a grid of 5;
    3,000 events a side at increment sd ~0.8, so the difference of means has sd ~0.02."""
    model = _Switch()
    ipdp = IPDP(ModelFunction(model, output="value"), ["x1", "x2"], features=["x1"], alpha=0.01, grid_size=5,
                seed=3)
    rng = random.Random(4)
    means, spreads = [], []
    for on in (False, True):
        model.on = on
        ipdp.increments.take()
        spread = []
        for _ in range(3000):
            x = {"x1": rng.random(), "x2": rng.random()}
            ipdp.explain_one(x, None)
            grid = ipdp._evaluation_grid("x1", x["x1"])
            spread.append(pdp_importance([model({**x, "x1": g}) for g in grid]))
        means.append(ipdp.increments.take()["x1"].mean)
        spreads.append(sum(spread) / len(spread))
    assert means[0] == pytest.approx(0.395, abs=0.02) and abs(means[1] - means[0]) < 0.08  # 4 sd
    assert spreads[1] == pytest.approx(2 * spreads[0], rel=0.05)
    assert ipdp.values["x1"] == pytest.approx(0.395, abs=0.05)


@pytest.mark.parametrize("pure_python", [False, True])
@pytest.mark.parametrize("const", [0.1, 0.35, 7.0])
def test_a_feature_whose_pd_curve_is_flat_has_increments_zero(const, pure_python, monkeypatch):
    """A constant or ignored feature (flat PD curve) has importance 0 and every increment exactly 0, on the
    compiled and numpy paths (rounding noise, normalised as a gradient, would make them ±f(x) sqrt(K / (K - 1)))."""
    import streamxai.core.explainers.ipdp as ipdp_module

    if pure_python:
        monkeypatch.setattr(ipdp_module, "KERNELS", None)
    ipdp = IPDP(ModelFunction(lambda x: 0.7 * x["a"] - 0.11, output="value"), ["a", "c", "d", "e"], alpha=0.01,
                grid_size=5, seed=1)
    rng = random.Random(0)
    for _ in range(300):
        ipdp.explain_one({"a": rng.random(), "c": const, "d": 3 * const, "e": rng.random()}, None)
    blocks = ipdp.increments.take()
    assert blocks["a"].mean > 0.1
    for f in ("c", "d", "e"):
        assert (blocks[f].n, blocks[f].mean, blocks[f].m2) == (300, 0.0, 0.0), f
        assert ipdp.values[f] == 0.0


@pytest.mark.parametrize("pure_python", [False, True])
def test_a_feature_that_turns_constant_has_increments_zero_once_its_grid_is_one_point(pure_python, monkeypatch):
    """A used feature that stops varying has increments exactly 0 once its grid is one point; its PD still decays."""
    import streamxai.core.explainers.ipdp as ipdp_module

    if pure_python:
        monkeypatch.setattr(ipdp_module, "KERNELS", None)
    ipdp = IPDP(ModelFunction(lambda x: 0.7 * x["a"] + 0.3 * x["b"] - 0.11, output="value"), ["a", "b"],
                alpha=0.01, grid_size=5, window=50, seed=1)
    rng = random.Random(0)
    for t in range(400):
        ipdp.explain_one({"a": rng.random(), "b": rng.random() if t < 200 else 0.35}, None)
        if t == 260:
            ipdp.increments.take()
    late = ipdp.increments.take()["b"]
    assert (late.n, late.mean, late.m2) == (139, 0.0, 0.0)
    assert ipdp.values["b"] > 0.0  # the PD curve of before, decaying
