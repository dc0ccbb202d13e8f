"""The exact local attributions against the oracle (:func:`brute_force`: Shapley's formula over all 2^d
coalitions, the model evaluated on every hybrid row), models grown on seeded streams. Both sides add
at most ``2^10 * len(background)`` terms of size <= 10, so rounding differs by far less than the
tolerance 1e-9; a wrong weight, route or leaf dependence shows at 1e-3 or more."""

from __future__ import annotations

import random

import numpy as np
import pytest
from river import compose, forest, linear_model, preprocessing, tree
from streamxai.core.attribution import attribute, brute_force
from streamxai.core.attribution.background_walk import background_shapley
from streamxai.core.attribution.flat_walk import flat_collect
from streamxai.core.attribution.frame import Frame
from streamxai.core.attribution.shares import Shares
from streamxai.core.attribution.trees import tree_game, tree_shapley

TOL = 1e-9


def stream(seed: int, n: int, d_num: int, d_nom: int, drift_at: int | None = None):
    """Rows of ``d_num`` two-decimal numbers (values repeat) and ``d_nom`` categories; the label's rule changes at ``drift_at``."""
    gen = random.Random(seed)
    for t in range(n):
        x = {f"n{i}": round(gen.random(), 2) for i in range(d_num)}
        x.update({f"c{i}": gen.choice("abcd") for i in range(d_nom)})
        old = drift_at is None or t < drift_at
        score = x["n0"] + 0.4 * x["n1"] if old else x["n1"] - 0.5 * x["n0"]
        if d_nom:
            score += 0.5 * (x["c0"] in ("ab" if old else "cd"))
        yield x, score + gen.gauss(0, 0.15)


def grown(model, seed, n=1500, d_num=4, d_nom=2, classify=True, drift_at=None, until=None):
    """``model`` after learning the stream (or until ``until(model)`` holds past the drift),
    with the rows seen."""
    rows = []
    for t, (x, s) in enumerate(stream(seed, n, d_num, d_nom, drift_at)):
        model.learn_one(x, s > 0.8 if classify else s)
        rows.append(x)
        if until is not None and drift_at is not None and t > drift_at and until(model):
            break
    return model, rows


def own_output(model, target):
    if target is None:
        return lambda r: float(model.predict_one(r))
    return lambda r: float(model.predict_proba_one(r).get(target, 0.0))


def assert_oracle(model, rows, seed, n_background=6, x=None, target_class=None, method=None):
    gen = random.Random(seed)
    names = list(rows[0])
    background = gen.sample(rows, n_background)
    x = x or gen.choice(rows)
    got = attribute(model, x, background, names, target_class=target_class)
    assert got.exact and (method is None or got.method == method), got.method
    want, base = brute_force(own_output(model, got.target), x, background, names)
    assert max(abs(got.values[f] - want[f]) for f in names) < TOL
    assert abs(got.base - base) < TOL
    fx = own_output(model, got.target)(x)
    assert abs(got.prediction - fx) < TOL
    assert abs(sum(got.values.values()) - (fx - base)) < TOL  # efficiency
    return got


@pytest.mark.parametrize("leaf", ["mc", "nb", "nba"])
@pytest.mark.parametrize("seed", [1, 2])
def test_hoeffding_tree_classifier(leaf, seed):
    model, rows = grown(tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05, leaf_prediction=leaf), seed)
    assert model.height >= 3  # numeric and nominal splits to walk
    got = assert_oracle(model, rows, seed, method="tree")
    assert any(abs(v) > 1e-3 for v in got.values.values())


def test_tree_with_multiway_nominal_splits_and_an_unseen_category():
    """Numbers declared nominal split multiway; a category the tree never saw sends the row
    down the most traversed path (river's fallback), for x and for the background alike."""
    model = tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05, nominal_attributes=["n3"])
    model, rows = grown(model, 3)
    rows = [{**r, "n3": round(r["n3"] * 4) / 4} for r in rows]
    for r in rows[:1500]:
        model.learn_one(r, r["n0"] + 0.4 * r["n1"] + 0.3 * r["n3"] > 0.9)
    x = {**rows[5], "c0": "unseen", "n3": 0.33}
    assert_oracle(model, rows, 3, x=x)
    assert_oracle(model, rows, 4, x=x, target_class=False)


@pytest.mark.parametrize("leaf", ["mc", "nba"])
def test_adaptive_tree_with_an_alternate_tree(leaf):
    model, rows = grown(tree.HoeffdingAdaptiveTreeClassifier(grace_period=20, delta=0.05, leaf_prediction=leaf,
                                                             seed=1),
                        3, n=6000, drift_at=2000, until=lambda m: m.n_alternate_trees > 0 and m.height >= 3)
    assert model.n_alternate_trees > 0
    assert_oracle(model, rows[-500:], 5, method="tree")


def test_arf_is_its_members_weighted_mean():
    model, rows = grown(forest.ARFClassifier(n_models=4, grace_period=30, delta=0.05, seed=2), 2, n=1200)
    weights = [m.get() for m in model._metrics]
    assert len(set(weights)) > 1  # the accuracy weights differ, so a plain mean would fail
    assert_oracle(model, rows, 2, n_background=4, method="forest")


def test_arf_unweighted_and_for_a_given_class():
    model, rows = grown(forest.ARFClassifier(n_models=3, grace_period=30, disable_weighted_vote=True, seed=3),
                        3, n=900)
    assert_oracle(model, rows, 3, n_background=4, target_class=False)


@pytest.mark.parametrize("make, seed, grow", [
    *[(lambda leaf=leaf: tree.HoeffdingTreeRegressor(grace_period=40, delta=0.05, leaf_prediction=leaf), 4,
       {"d_num": 6, "d_nom": 0}) for leaf in ("mean", "model", "adaptive")],
    (lambda: tree.HoeffdingAdaptiveTreeRegressor(grace_period=40, delta=0.05, leaf_prediction="mean", seed=1), 5,
     {"n": 3000, "d_num": 5, "d_nom": 2, "drift_at": 1500}),
], ids=["mean", "model", "adaptive", "adaptive-tree"])
def test_tree_regressors(make, seed, grow):
    model, rows = grown(make(), seed, classify=False, **grow)
    assert model.height >= 2
    assert_oracle(model, rows, seed, method="tree")


def test_ten_features_tree():
    model, rows = grown(tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05), 6, d_num=7, d_nom=3)
    assert_oracle(model, rows, 6, n_background=3)


@pytest.mark.parametrize("d", [3, 10])
def test_linear_regression(d):
    model, rows = grown(compose.Pipeline(preprocessing.StandardScaler(), linear_model.LinearRegression()), 7,
                        n=300, d_num=d, d_nom=0, classify=False)
    assert_oracle(model, rows, 7, method="linear")


@pytest.mark.parametrize("d", [4, 10])
@pytest.mark.parametrize("scaled", [False, True])
def test_logistic_regression(d, scaled):
    model = linear_model.LogisticRegression(optimizer=__import__("river").optim.SGD(0.5))
    if scaled:
        model = preprocessing.StandardScaler() | model
    model, rows = grown(model, 8, n=300, d_num=d, d_nom=0)
    got = assert_oracle(model, rows, 8, method="logistic")
    assert_oracle(model, rows, 9, target_class=not got.target)


@pytest.mark.parametrize("walk", ["points", "background"])
@pytest.mark.parametrize("make", [
    lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05, nominal_attributes=["n3"]),
    lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=30, delta=0.05, seed=3),
    lambda: tree.HoeffdingTreeRegressor(grace_period=40, delta=0.05, leaf_prediction="model"),
], ids=["ht", "hat", "htr-model"])
def test_both_walks_match_the_oracle(walk, make):
    """The walk point by point (river releases whose internals are not read) and the walk of
    all points at once (naive Bayes as arrays) give the oracle's values."""
    model = make()
    regression = isinstance(model, tree.HoeffdingTreeRegressor)
    model, rows = grown(model, 11, d_num=5, d_nom=0 if regression else 2, classify=not regression)
    gen = random.Random(11)
    names = list(rows[0])
    background, x = gen.sample(rows, 7), {**gen.choice(rows), "n0": 0.5}
    target = None if regression else model.predict_one(x)
    game = tree_game(model, target)
    shapley = tree_shapley if walk == "points" else background_shapley
    values, base, fx, _ = shapley(game, x, background, names)
    want, want_base = brute_force(own_output(model, target), x, background, names)
    assert max(abs(v - want[f]) for f, v in zip(names, values, strict=True)) < TOL
    assert abs(base - want_base) < TOL and abs(fx - own_output(model, target)(x)) < TOL


@pytest.mark.parametrize("make", [
    lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05, leaf_prediction="mc"),
    lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05),
    lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=30, delta=0.05, seed=2),
    lambda: forest.ARFClassifier(n_models=4, grace_period=30, delta=0.05, seed=5),
], ids=["ht-mc", "ht-nba", "hat", "arf"])
def test_numeric_trees_walk_level_by_level(make):
    """Trees of threshold branches and Gaussian naive Bayes leaves take the level-by-level walk
    (the walk gives every member back otherwise), and match the oracle."""
    model, rows = grown(make(), 12, n=1500, d_num=7, d_nom=0)
    assert getattr(model, "n_alternate_trees", 0) == 0  # (a tree with one walks node by node)
    gen = random.Random(12)
    names = list(rows[0])
    background, x = gen.sample(rows, 5), gen.choice(rows)
    members = list(model) if isinstance(model, forest.ARFClassifier) else [model]
    target = model.predict_one(x)
    sums = flat_collect([(tree_game(m, target), 1.0) for m in members], Frame(x, background, names), 12,
                        Shares(len(names)))
    assert sums.count("one") == len(members)
    assert_oracle(model, rows, 12, n_background=5, x=x)


@pytest.mark.parametrize("make", [
    lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05, leaf_prediction="nb"),
    lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=30, delta=0.05, leaf_prediction="nb", seed=2),
    lambda: forest.ARFClassifier(n_models=3, grace_period=30, delta=0.05, leaf_prediction="nb", seed=2),
], ids=["ht", "hat", "arf"])
def test_pure_leaves_and_far_values(make):
    """Naive Bayes leaves that saw one class, and x so far out that the leaves' votes overflow: both classes exact."""
    model, rows = make(), []
    for x, _ in stream(16, 1500, 5, 0):
        model.learn_one(x, x["n0"] > 0.5)
        rows.append(x)
    members = list(model) if isinstance(model, forest.ARFClassifier) else [model]
    pure = [leaf for m in members for leaf in _leaves(m._root) if len(leaf.stats) == 1 and leaf.splitters]
    assert pure  # naive Bayes leaves of one class, with their observers
    far = {**rows[3], "n1": 40.0, "n2": -35.0}
    for target_class in (True, False):
        assert_oracle(model, rows, 16, n_background=5, target_class=target_class)
        assert_oracle(model, rows, 17, n_background=5, x=far, target_class=target_class)


def _leaves(node):
    children = getattr(node, "children", None)
    return [node] if children is None else [leaf for c in children for leaf in _leaves(c)]


def three_classes(model, seed, d_num=4, d_nom=2, n=2500):
    """``model`` grown on three classes (the score cut at two points)."""
    rows = []
    for x, s in stream(seed, n, d_num, d_nom):
        model.learn_one(x, "low" if s < 0.5 else "mid" if s < 1.0 else "high")
        rows.append(x)
    return model, rows


@pytest.mark.parametrize("make, d_nom", [
    (lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05), 2),
    (lambda: tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05), 0),
    (lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=30, delta=0.05, seed=4), 0),
    (lambda: forest.ARFClassifier(n_models=3, grace_period=30, delta=0.05, seed=4), 0),
    (lambda: forest.ARFClassifier(n_models=3, grace_period=30, delta=0.05, seed=4), 2),
], ids=["ht-nominal", "ht-numeric", "hat", "arf-numeric", "arf-nominal"])
def test_three_classes(make, d_nom):
    """Naive Bayes leaves over three classes: each class's probability, predicted or asked for."""
    model, rows = three_classes(make(), 13, d_nom=d_nom)
    got = assert_oracle(model, rows, 13, n_background=5)
    other = next(c for c in ("low", "mid", "high") if c != got.target)
    assert_oracle(model, rows, 14, n_background=5, target_class=other)


@pytest.mark.parametrize("leaf", ["mean", "adaptive"])
@pytest.mark.parametrize("weighted", [True, False])
def test_arf_regressor_mean(leaf, weighted):
    model = forest.ARFRegressor(n_models=3, grace_period=40, aggregation_method="mean", leaf_prediction=leaf,
                                disable_weighted_vote=not weighted, seed=3)
    model, rows = grown(model, 15, n=800, d_num=5, d_nom=0, classify=False)
    assert_oracle(model, rows, 15, n_background=4, method="forest")


def test_arf_regressor_median_is_sampled():
    """The median of the members is not linear in them: no exact method, the values are sampled."""
    model, rows = grown(forest.ARFRegressor(n_models=3, grace_period=40, seed=3), 15, n=400, d_num=3, d_nom=0,
                        classify=False)
    got = attribute(model, rows[0], rows[1:6], list(rows[0]), max_evaluations=50, seed=1)
    assert got.method == "sampling" and not got.exact and set(got.stderr) == set(rows[0])


@pytest.mark.parametrize("d", [3, 12, 14])
def test_shares_spread_alike_summed_per_mask_or_point_by_point(d, monkeypatch):
    """Each point's share reaches the players of its mask, whether the shares are first summed
    per mask (up to 12 players) or spread point by point."""
    from streamxai.core.attribution import shares as shares_module

    gen = np.random.default_rng(d)
    masks = gen.integers(0, 1 << d, 500)
    values = gen.normal(size=500)
    want = np.array([values[(masks >> j) & 1 == 1].sum() for j in range(d)])
    for few in (0, 62):
        monkeypatch.setattr(shares_module, "_FEW_PLAYERS", few)
        s = shares_module.Shares(d)
        s._spread(masks[:200], values[:200])
        s._spread(masks[200:], values[200:])
        phi, _, _ = s.finish()
        assert np.allclose(phi, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("k", [0, 3, 7])
def test_shares_settle_values_as_votes(k):
    """A route handed over as values (add_values) settles as the same route handed over as votes (add_votes)."""
    from streamxai.core.attribution.coalitions import masks

    gen = np.random.default_rng(k)
    d, s = 10, 40
    used = np.broadcast_to(gen.permutation(d)[:k], (s, k))
    a = gen.integers(0, 1 << d, s) & gen.integers(0, 1 << d, s)
    b = gen.integers(0, 1 << d, s) & ~a
    votes, diff = gen.normal(size=(1, s)), gen.normal(size=(1, s, k))
    scale = gen.uniform(0.5, 1.5, s)
    g = 1.0 / (1.0 + np.exp(votes[0][:, None] + diff[0] @ masks(k).T.astype(float)))  # (points, subsets)
    by_votes, by_values = Shares(d), Shares(d)
    by_votes.add_votes(votes, diff, used, a, b, scale)
    by_values.add_values(g * scale[:, None], used, a, b, 1.0)
    for got, want in zip(by_values.finish(), by_votes.finish(), strict=True):
        assert np.allclose(got, want, rtol=0, atol=1e-12)
