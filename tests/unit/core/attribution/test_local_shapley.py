"""The notebook explainer and the sampling estimator: the background is iSAGE's, any model gets
values that sum to the prediction minus the base, and sampled values are honest about their error."""

from __future__ import annotations

import math
import random

import pytest
import streamxai
from river import linear_model, neighbors, tree
from streamxai.core.attribution import attribute, brute_force, permutation_shapley
from streamxai.core.attribution.sampling import pass_cost
from streamxai.core.model import ModelFunction

NAMES = ["a", "b", "c"]


def rows(n: int, seed: int) -> list[dict]:
    gen = random.Random(seed)
    return [{"a": gen.random(), "b": gen.random(), "c": gen.choice(["x", "y"])} for _ in range(n)]


def label(r: dict) -> bool:
    return r["a"] + 0.5 * (r["c"] == "x") > 0.7


def test_background_is_isage_s_reservoir():
    """Same size and seed, same stream: the rows local values remove features with are
    exactly those iSAGE's interventional removal draws from."""
    model = tree.HoeffdingTreeClassifier(grace_period=20)
    isage = streamxai.ISAGE(ModelFunction(model, output="proba"), "brier", NAMES,
                            storage_size=15, seed=4)
    local = streamxai.LocalShapley(model, NAMES, storage_size=15, seed=4)
    for r in rows(300, 1):
        isage.explain_one(r, label(r))
        local.learn_one(r)
        model.learn_one(r, label(r))
    assert local.background == isage.removal_state.reservoir.items
    assert len(local.background) == 15


def test_explains_the_model_as_it_is_and_sums_to_prediction_minus_base():
    model = tree.HoeffdingTreeClassifier(grace_period=20, delta=0.1)
    local = streamxai.LocalShapley(model, NAMES, storage_size=10, seed=2)
    stream = rows(600, 2)
    for r in stream:
        local.learn_one(r)
        model.learn_one(r, label(r))
    x = stream[7]
    values = local.explain_one(x)
    assert local.exact and local.method == "tree" and local.n_explained == 1
    want, base = brute_force(lambda r: model.predict_proba_one(r).get(local.target, 0.0), x, local.background, NAMES)
    assert max(abs(values[f] - want[f]) for f in NAMES) < 1e-9
    assert local.prediction == pytest.approx(model.predict_proba_one(x)[local.target], abs=1e-12)
    assert sum(values.values()) == pytest.approx(local.prediction - local.base_value, abs=1e-12)
    assert local.target == model.predict_one(x)


def test_empty_background_gives_zero_values():
    model = linear_model.LinearRegression()
    model.learn_one({"a": 1.0, "b": 2.0}, 3.0)
    local = streamxai.LocalShapley(model, ["a", "b"])
    values = local.explain_one({"a": 0.5, "b": 0.1})
    assert values == {"a": 0.0, "b": 0.0}
    assert local.base_value == local.prediction == model.predict_one({"a": 0.5, "b": 0.1})


def test_model_function_gives_its_target_class():
    model = linear_model.LogisticRegression()
    for r in rows(100, 3):
        model.learn_one({"a": r["a"], "b": r["b"]}, label(r))
    local = streamxai.LocalShapley(ModelFunction(model, output="proba_of", target_class=False), ["a", "b"])
    for r in rows(5, 4):
        local.learn_one(r)
    local.explain_one({"a": 0.9, "b": 0.1})
    assert local.target is False and local.method == "logistic"


def test_other_models_are_sampled_within_budget_with_honest_errors():
    """KNN is permutation-sampled: over 40 seeds each value's error is within 3 standard errors in at least 90 %
    of checks (99.7 % for a normal estimate; the stratified draws only shrink the true error)."""
    model = neighbors.KNNClassifier(n_neighbors=3)
    data = [{"a": r["a"], "b": r["b"]} for r in rows(120, 5)]
    for r in data[:80]:
        model.learn_one(r, r["a"] + r["b"] > 1.0)
    background, x = data[80:92], data[100]
    out0 = attribute(model, x, background, ["a", "b"], max_evaluations=300, seed=0)
    want, base = brute_force(lambda r: model.predict_proba_one(r).get(out0.target, 0.0), x, background, ["a", "b"])
    inside = 0
    for seed in range(40):
        out = attribute(model, x, background, ["a", "b"], max_evaluations=300, seed=seed)
        assert out.method == "sampling" and not out.exact
        assert out.n_evaluations <= 300
        assert out.base == pytest.approx(base, abs=1e-12)
        assert sum(out.values.values()) == pytest.approx(out.prediction - out.base, abs=1e-12)
        inside += sum(abs(out.values[f] - want[f]) <= 3 * out.stderr[f] + 1e-12 for f in want)
    assert inside >= 0.9 * 80


def test_sampling_cost_is_what_it_says():
    f = lambda r: r["a"] * r["b"] + r["c"]  # noqa: E731
    background = [{"a": i, "b": -i, "c": i * i} for i in range(5)]
    x = {"a": 1, "b": 1, "c": 1}
    one = permutation_shapley(f, x, background, ["a", "b", "c"], max_evaluations=1, seed=0)
    assert one.n_evaluations == pass_cost(5, 3) == 16 and one.n_draws == 5
    three = permutation_shapley(f, x, background, ["a", "b", "c"], max_evaluations=pass_cost(5, 3) + 20, seed=0)
    assert three.n_draws == 15 and three.n_evaluations == 36
    assert math.isfinite(three.stderr[0])


def test_invalid_input_is_refused():
    with pytest.raises(ValueError, match="storage_size"):
        streamxai.LocalShapley(linear_model.LinearRegression(), ["a"], storage_size=0)
    with pytest.raises(TypeError, match="river model or a callable"):
        streamxai.LocalShapley(42, ["a"])
    with pytest.raises(ValueError, match="lacks features"):
        attribute(linear_model.LinearRegression(), {"a": 1.0}, [{"b": 1.0}], ["a"])
    with pytest.raises(ValueError, match="not among features"):
        attribute(linear_model.LinearRegression(), {"a": 1.0, "id": 7}, [{"a": 1.0}], ["a"])
    with pytest.raises(ValueError, match="background is empty"):
        attribute(linear_model.LinearRegression(), {"a": 1.0}, [], ["a"])


def test_leaf_memo_gives_the_values_of_a_fresh_walk():
    """The kept leaves change no value: each explanation of a learning forest, the class changing, equals a fresh one."""
    from river import forest

    gen = random.Random(6)
    stream = [{f"n{i}": round(gen.random(), 2) for i in range(5)} for _ in range(900)]
    model = forest.ARFClassifier(n_models=4, grace_period=30, delta=0.05, seed=6)
    names = list(stream[0])
    local = streamxai.LocalShapley(model, names, storage_size=20, seed=6)
    targets = set()
    for i, r in enumerate(stream):
        if i >= 600 and i % 10 == 0:
            values = local.explain_one(r)
            fresh = attribute(model, r, local.background, names, target_class=local.target)
            assert values == fresh.values and local.method == "forest"
            targets.add(local.target)
        local.learn_one(r)
        model.learn_one(r, r["n0"] + 0.5 * r["n1"] + 0.2 * gen.random() > 0.8)
    assert targets == {False, True}


def test_saturated_logistic_probabilities_are_exact_and_quiet():
    """Unscaled features drive the score far past the sigmoid's range; the values stay exact
    (pytest turns an overflow warning into an error)."""
    model = linear_model.LogisticRegression()
    gen = random.Random(8)
    data = [{"a": gen.uniform(0, 1e5), "b": gen.uniform(0, 10)} for _ in range(60)]
    for r in data:
        model.learn_one(r, r["a"] < 5e4)  # a weight that sends the scores far below 0
    x, background = data[0], data[1:9]
    got = attribute(model, x, background, ["a", "b"], target_class=True)
    want, base = brute_force(lambda r: model.predict_proba_one(r)[True], x, background, ["a", "b"])
    assert got.method == "logistic"
    assert max(abs(got.values[f] - want[f]) for f in want) < 1e-9 and abs(got.base - base) < 1e-9
