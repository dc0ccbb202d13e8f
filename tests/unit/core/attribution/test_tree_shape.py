"""The branches kept between explanations (:class:`ShapeCache`) change no value: on every event of a learning
model (splits, deactivations, drift replacements, new categories) the cached explanation equals a fresh one."""

from __future__ import annotations

import random

from river import drift, forest, tree
from streamxai.core.attribution import attribute
from streamxai.core.attribution.leaf_table import LeafMemo


def _explain_every_event(model, stream, label, names, background, memo: LeafMemo) -> dict:
    """Explain each event with ``memo`` and afresh before the model learns it; count shapes kept, reread, trees met,
    and events where a tree with a shape had inactive leaves."""
    seen = {"kept": 0, "read again": 0, "trees": set(), "inactive": 0}
    last: dict = {}
    for i, r in enumerate(stream):
        kept = attribute(model, r, background, names, memo=memo)
        fresh = attribute(model, r, background, names)
        assert kept == fresh, i
        for key, shape in memo.shapes._met.items():
            seen["trees"].add(key)
            if key in last:
                seen["kept" if last[key] is shape else "read again"] += 1
        last = dict(memo.shapes._met)
        seen["inactive"] += any(t._n_inactive_leaves and id(t) in last for t in getattr(model, "data", [model]))
        model.learn_one(r, label(i, r))
    return seen


def test_forest_under_drift_and_memory_bound_keeps_exact_values():
    gen = random.Random(3)
    names = [f"n{i}" for i in range(4)]
    stream = [{f: round(gen.random(), 2) for f in names} for _ in range(700)]

    def label(i, r):  # the concept turns round: the forest's detectors replace trees
        up = r["n0"] + 0.5 * r["n1"] > 0.7
        return up if i < 300 else not up

    model = forest.ARFClassifier(n_models=3, grace_period=20, delta=0.05, seed=3, max_size=0.04,
                                 memory_estimate_period=50,
                                 drift_detector=drift.ADWIN(delta=0.01), warning_detector=drift.ADWIN(delta=0.05))
    for r in stream[:50]:
        model.learn_one(r, label(0, r))
    first_trees = {id(t) for t in model}
    seen = _explain_every_event(model, stream[50:], label, names, stream[:25], LeafMemo())
    assert seen["kept"] > 0 and seen["read again"] > 0 and seen["inactive"] > 0
    assert {id(t) for t in model} != first_trees  # a tree was replaced on drift


def test_tree_with_new_categories_and_deactivated_leaves_keeps_exact_values():
    gen = random.Random(5)
    names = ["a", "b", "c"]
    stream = [{"a": round(gen.random(), 2), "b": round(gen.random(), 2), "c": f"k{i // 40}"} for i in range(600)]

    def label(i, r):  # the category matters from event 300 on
        return (r["a"] + 0.5 * r["b"] > 0.7) != (i >= 300 and int(r["c"][1:]) % 2 == 1)

    model = tree.HoeffdingTreeClassifier(grace_period=20, delta=0.05, max_size=0.05, memory_estimate_period=50)
    for r in stream[:30]:
        model.learn_one(r, label(0, r))
    seen = _explain_every_event(model, stream[30:], label, names, stream[:20], LeafMemo())
    assert seen["kept"] > 0 and seen["read again"] > 0
