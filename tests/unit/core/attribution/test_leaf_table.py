"""The leaves kept between explanations (:class:`LeafMemo`) change no value: on every event of a learning,
deactivating, drifting forest the explainer gives a fresh explanation's values bit for bit (brute force to 1e-9)."""

from __future__ import annotations

import random

from river import drift, forest, tree
from streamxai import LocalShapley
from streamxai.core.attribution import attribute, brute_force
from streamxai.core.attribution.leaf_table import LeafMemo


def _stream(seed: int, n: int, names: list) -> list[dict]:
    gen = random.Random(seed)
    return [{f: round(gen.random(), 2) for f in names} for _ in range(n)]


def _described(memo: LeafMemo) -> dict:
    """Per tree met by the last explanation: its leaves and what each is described as."""
    return {key: (table.shape, list(zip(table.leaves, table.built, strict=True))) for key, table in memo._met.items()}


def test_forest_explainer_keeps_the_values_of_a_fresh_one_on_every_event():
    names = [f"n{i}" for i in range(4)]
    stream = _stream(11, 760, names)

    def label(i, r):  # the concept turns round at 350: the forest's detectors replace trees
        up = r["n0"] + 0.5 * r["n1"] > 0.7
        return up if i < 350 else not up

    model = forest.ARFClassifier(n_models=3, grace_period=15, delta=0.05, seed=11, max_size=0.05,
                                 memory_estimate_period=40, drift_detector=drift.ADWIN(delta=0.01),
                                 warning_detector=drift.ADWIN(delta=0.05))
    local = LocalShapley(model, names, storage_size=20, seed=11)
    for i, r in enumerate(stream[:40]):
        local.learn_one(r)
        model.learn_one(r, label(i, r))
    first_trees = {id(t) for t in model}
    seen = {"leaf kept": 0, "leaf described again": 0, "new branches": 0, "bayes": 0, "inactive": 0, "targets": set()}
    last: dict = {}
    for i, r in enumerate(stream[40:], start=40):
        values = local.explain_one(r)
        fresh = attribute(model, r, local.background, names, target_class=local.target, memo=LeafMemo())
        assert (values, local.base_value, local.prediction) == (fresh.values, fresh.base, fresh.prediction), i
        assert local.method == fresh.method == "forest", i
        if i % 60 == 0:
            want, base = brute_force(lambda row, t=local.target: model.predict_proba_one(row).get(t, 0.0), r,
                                     local.background, names)
            assert max(abs(values[f] - want[f]) for f in names) < 1e-9 and abs(local.base_value - base) < 1e-9
        now = _described(local._memo)
        for key, (shape, leaves) in now.items():
            if key in last:
                seen["new branches"] += shape is not last[key][0]
                before = {id(leaf): built for leaf, built in last[key][1]}
                for leaf, built in leaves:
                    if id(leaf) in before:
                        seen["leaf kept" if before[id(leaf)] is built else "leaf described again"] += 1
            seen["bayes"] += sum(built[0] == "bayes" for _, built in leaves)
            seen["inactive"] += sum(leaf.splitters is None for leaf, _ in leaves)
        seen["targets"].add(local.target)
        last = now
        local.learn_one(r)
        model.learn_one(r, label(i, r))
    assert seen["leaf kept"] > seen["leaf described again"] > 0 and seen["new branches"] > 0 and seen["bayes"] > 0
    assert seen["targets"] == {False, True}
    assert {id(t) for t in model} != first_trees  # a tree was replaced on drift
    assert seen["inactive"] > 0  # leaves deactivated to bound a tree's memory


def test_a_leaf_reactivated_without_learning_is_described_again():
    """A leaf deactivated and reactivated (same class counts, new empty splitters) is described again."""
    names = ["a", "b", "c"]
    stream = _stream(4, 400, names)
    model = tree.HoeffdingTreeClassifier(grace_period=30, delta=0.05)
    for r in stream[:300]:
        model.learn_one(r, r["a"] + 0.5 * r["b"] > 0.7)
    memo = LeafMemo()
    background, x = stream[300:330], stream[350]
    first = attribute(model, x, background, names, memo=memo)
    reading = [leaf for leaf in model._root.iter_leaves() if leaf.splitters]
    assert reading and first.method == "tree"
    for leaf in reading:
        leaf.deactivate()
        leaf.activate()
    again = attribute(model, x, background, names, memo=memo)
    fresh = attribute(model, x, background, names)
    assert again == fresh and again != first
