"""The tree fast path gives the model's values bit for bit on random (drifting, categorical) trees, for every
output, on random and one-feature-replaced rows; each test checks that what it covers happened (no
fallback, categorical splits, alternate trees, majority-class and naive-Bayes leaves)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from river import drift, forest, tree
from river.tree.nodes.branch import NominalBinaryBranch, NominalMultiwayBranch
from streamxai.core.fastpath import compile_model
from streamxai.core.fastpath.base import Unsupported
from streamxai.core.fastpath.tree_curves import class_curves, forest_class_curves
from streamxai.core.model import ModelFunction

N_NUM, N_CAT = 3, 2


def random_stream(seed: int, n: int, n_classes: int | None = 2):
    """Events with numeric features of random scales and categorical ones; the concept (a
    random linear rule plus category effects) is drawn anew at a third and two thirds."""
    gen = random.Random(seed)
    scales = [10 ** gen.uniform(-2, 3) for _ in range(N_NUM)]
    cats = [[f"v{j}" for j in range(gen.randint(2, 5))] for _ in range(N_CAT)]

    def concept():
        return ([gen.gauss(0, 1) / s for s in scales], [{c: gen.gauss(0, 1) for c in cs} for cs in cats])

    w, eff = concept()
    for t in range(n):
        if t in (n // 3, 2 * n // 3):
            w, eff = concept()
        x = {f"n{i}": gen.gauss(0, s) if i % 2 else gen.uniform(-s, s) for i, s in enumerate(scales)}
        x.update({f"c{i}": gen.choice(cs) for i, cs in enumerate(cats)})
        score = sum(wi * x[f"n{i}"] for i, wi in enumerate(w)) + sum(e[x[f"c{i}"]] for i, e in enumerate(eff))
        score += gen.gauss(0, 0.3)
        if n_classes is None:
            yield x, 10.0 * score
        else:
            yield x, min(n_classes - 1, max(0, int(score + n_classes / 2)))


def probe_rows(gen: random.Random, seen: list[dict], k: int) -> list[dict]:
    """Rows mixing seen events' values, far-out numbers, ints and categories never seen."""
    rows = []
    for _ in range(k):
        row = dict(gen.choice(seen))
        for f in list(row):
            r = gen.random()
            if r < 0.3:
                row[f] = gen.choice(seen)[f]
            elif r < 0.35:
                row[f] = "unseen" if f.startswith("c") else row[f] * 1e3
            elif r < 0.4 and f.startswith("n"):
                row[f] = int(row[f])
        rows.append(row)
    return rows


def probe_pairs(gen: random.Random, seen: list[dict], k: int) -> list[tuple[str, object]]:
    pairs = []
    for row in probe_rows(gen, seen, k):
        f = gen.choice(list(row))
        pairs.append((f, row[f]))
    return pairs


def probe_grids(gen: random.Random, seen: list[dict], features: list[str], k: int = 8) -> np.ndarray:
    """ICE grids of the numeric features: seen values, far-out ones, repeats and integers."""
    grids = []
    for f in features:
        values = [gen.choice(seen)[f] for _ in range(k - 3)]
        grids.append([*values, values[0] * 1e3, float(int(values[1])), values[2]])
    return np.array(grids, dtype=float)


def assert_same(model, outputs, seen, gen, k=25) -> int:
    """Fast and black-box values agree on random rows, replacements and ICE curves (bit for
    bit); returns fallbacks."""
    fallbacks = 0
    x = gen.choice(seen)
    rows, pairs = probe_rows(gen, seen, k), probe_pairs(gen, seen, k)
    numeric = [f for f in x if f.startswith("n")]
    grids = probe_grids(gen, seen, numeric)
    for output, target in outputs:
        fast = ModelFunction(model, output=output, target_class=target)
        slow = ModelFunction(model, output=output, target_class=target, fast_path="off")
        assert fast.path == "fast"
        assert fast.many(rows) == slow.many(rows), (output, fast.fallback_reason)
        assert fast.replaced(x, pairs, with_x=True) == slow.replaced(x, pairs, with_x=True), output
        # iSAGE's rows: x with the features after a random cut taken from donors (many reach x's leaves)
        order, donors = gen.sample(list(x), len(x)), gen.sample(seen, 3)
        assert fast.coalitions(x, order, donors) == slow.coalitions(x, order, donors), output
        assert fast.many([x] * 9) == slow.many([x] * 9), output
        if output != "proba":  # a numeric output: ICE curves as arrays
            assert fast.curves(x, numeric, grids).tobytes() == slow.curves(x, numeric, grids).tobytes(), output
        fallbacks += fast.fallbacks
    return fallbacks


def curves_as_arrays(model) -> bool:
    """Whether the fast path computes this classifier's ICE curves as arrays (two classes)."""
    x = next(random_stream(0, 1))[0]
    return class_curves(compile_model(model).new_call(x.keys()), x, ["n0"], np.zeros((1, 2)), 1) is not None


CLASSIFIER_OUTPUTS = [("proba", None), ("proba_of", 1), ("label", None), ("value", None)]


def nodes_of(model):
    root = model._root
    return list(root.iter_dfs()) if hasattr(root, "iter_dfs") else []


def has_alternate(model) -> bool:
    return any(getattr(node, "_alternate_tree", None) is not None for node in nodes_of(model))


def grow_and_check(model, seed: int, n: int, outputs, n_classes: int | None = 2, every: int = 150,
                   with_alternates: list | None = None) -> int:
    """Learn a random stream, comparing fast and black-box values every ``every`` events;
    the fallbacks (``with_alternates`` collects whether each check met an alternate tree)."""
    gen = random.Random(seed + 1000)
    seen: list[dict] = []
    fallbacks = 0
    for t, (x, y) in enumerate(random_stream(seed, n, n_classes)):
        seen.append(x)
        if t and t % every == 0:
            fallbacks += assert_same(model, outputs, seen, gen)
            if with_alternates is not None:
                with_alternates.append(has_alternate(model))
        model.learn_one(x, y)
    fallbacks += assert_same(model, outputs, seen, gen)
    return fallbacks


@pytest.mark.slow
@pytest.mark.parametrize("leaf_prediction", ["mc", "nb", "nba"])
@pytest.mark.parametrize("binary_split", [False, True])
def test_hoeffding_tree_classifier(leaf_prediction, binary_split):
    nominal_splits = 0
    for seed in range(3):
        model = tree.HoeffdingTreeClassifier(grace_period=40, leaf_prediction=leaf_prediction, delta=0.01,
                                             nominal_attributes=[f"c{i}" for i in range(N_CAT)],
                                             binary_split=binary_split)
        n_classes = 2 + seed % 2
        assert grow_and_check(model, seed, 900, CLASSIFIER_OUTPUTS, n_classes) == 0
        nominal_splits += sum(isinstance(nd, (NominalBinaryBranch, NominalMultiwayBranch)) for nd in nodes_of(model))
        assert curves_as_arrays(model) == (n_classes == 2)  # else value by value, as river sums three terms
    assert nominal_splits > 0


@pytest.mark.slow
@pytest.mark.parametrize("leaf_prediction", ["mc", "nb", "nba"])
def test_adaptive_tree_classifier_with_alternate_trees(leaf_prediction):
    switched, alternates = 0, []
    for seed in range(4):
        model = tree.HoeffdingAdaptiveTreeClassifier(
            grace_period=30, leaf_prediction=leaf_prediction, delta=0.01, drift_window_threshold=40,
            switch_significance=0.5, nominal_attributes=[f"c{i}" for i in range(N_CAT)], seed=seed,
            drift_detector=drift.ADWIN(delta=0.1))  # a sensitive detector: many alternate trees
        assert grow_and_check(model, seed, 2000, CLASSIFIER_OUTPUTS, 2 + seed % 2, every=100,
                              with_alternates=alternates) == 0
        assert curves_as_arrays(model) == (seed % 2 == 0)
        switched += model.n_switch_alternate_trees
    # alternate trees were there at some checks, and some replaced the subtree they grew beside
    assert sum(alternates) > 0 and switched > 0, (sum(alternates), switched)


@pytest.mark.slow
def test_arf_classifier():
    for seed, leaf_prediction in enumerate(["nba", "mc", "nb"]):
        model = forest.ARFClassifier(n_models=3, grace_period=30, leaf_prediction=leaf_prediction, seed=seed,
                                     nominal_attributes=[f"c{i}" for i in range(N_CAT)])
        assert grow_and_check(model, seed + 10, 700, CLASSIFIER_OUTPUTS, 2 + seed % 2) == 0
        x = next(random_stream(0, 1))[0]
        arrays = forest_class_curves(compile_model(model).new_call(x.keys()), x, ["n0"], np.zeros((1, 2)), 1)
        assert (arrays is not None) == (seed % 2 == 0)  # two classes: the members' curves as arrays


def test_arf_before_its_first_event_is_left_to_the_model():
    model = forest.ARFClassifier(n_models=2, seed=1)
    x = {"a": 1.0, "b": 2.0}
    fast, slow = ModelFunction(model, "proba"), ModelFunction(model.clone(), "proba", fast_path="off")
    assert fast.many([x]) == slow.many([x]) and fast.fallbacks == 1  # river builds the ensemble here
    assert fast.many([x]) == slow.many([x]) and fast.fallbacks == 1


@pytest.mark.slow
@pytest.mark.parametrize("model", [
    tree.HoeffdingTreeRegressor(grace_period=40, leaf_prediction="mean", nominal_attributes=["c0", "c1"]),
    tree.HoeffdingTreeRegressor(grace_period=40, leaf_prediction="model"),
    tree.HoeffdingTreeRegressor(grace_period=40, leaf_prediction="adaptive"),
    tree.HoeffdingAdaptiveTreeRegressor(grace_period=40, leaf_prediction="adaptive", drift_window_threshold=40,
                                        switch_significance=0.5, seed=3),
    tree.HoeffdingAdaptiveTreeRegressor(grace_period=40, leaf_prediction="mean", seed=4,
                                        nominal_attributes=["c0", "c1"]),
], ids=["mean", "model", "adaptive", "hatr-adaptive", "hatr-mean"])
def test_tree_regressors(model):
    numeric_only = model.leaf_prediction != "mean"  # a linear leaf model cannot read categories
    gen = random.Random(7)
    seen: list[dict] = []
    fallbacks = 0
    for t, (x, y) in enumerate(random_stream(5, 900, None)):
        if numeric_only:
            x = {k: v for k, v in x.items() if k.startswith("n")}
        seen.append(x)
        if t and t % 150 == 0:
            fallbacks += assert_same(model, [("value", None), ("label", None)], seen, gen)
        model.learn_one(x, y)
    assert fallbacks == 0
    assert len(nodes_of(model)) > 1  # it did split


def test_models_it_does_not_know_are_called():
    from river import naive_bayes, neighbors

    for model in (neighbors.KNNClassifier(), naive_bayes.GaussianNB()):
        assert compile_model(model) is None and ModelFunction(model, "proba").path == "black_box"


@pytest.mark.parametrize("make", [lambda: tree.HoeffdingTreeClassifier(grace_period=30, leaf_prediction="nb"),
                                  lambda: forest.ARFClassifier(n_models=3, seed=1, leaf_prediction="nb")])
def test_a_kept_scope_follows_x_changed_in_place_after_another_row(make):
    """x changed in place after a failing row took its kept tree scope is predicted from its new values."""
    model, seen = make(), []
    for x, y in random_stream(3, 800):
        model.learn_one(x, y)
        seen.append(x)
    fast = compile_model(model)
    fast.shared = True
    x, f = dict(seen[0]), "n1"
    pairs = [(f, seen[1][f])]

    def expected(row):
        moved = {**row, f: seen[1][f]}
        return [model.predict_proba_one(r).get(1, 0.0) for r in (row, moved)]

    assert fast.replaced(x, pairs, "proba_of", 1, with_x=True) == expected(x)
    with pytest.raises(Unsupported):
        fast.replaced(dict(seen[2]), (("zz", 1.0),), "proba_of", 1)
    x.update(seen[5])  # x changed in place
    assert expected(x) != expected(seen[0])  # (the change is seen by the model)
    assert fast.replaced(x, pairs, "proba_of", 1, with_x=True) == expected(x)
