"""iSAGE's chains through tree classifiers and ARF give river's ``predict_proba_one`` bit for bit, for both
chain starts, one to three donors, unseen categories and through the explainer; the chains did reuse
predictions, so the reuse is covered."""

from __future__ import annotations

import random

import pytest
from river import forest, tree
from streamxai.core.fastpath import chains, compile_model
from streamxai.core.model import ModelFunction, chain_rows

FEATURES = ["n0", "n1", "n2", "n3", "c0", "c1"]


def stream(seed: int, n: int):
    gen = random.Random(seed)
    for _ in range(n):
        x = {f"n{i}": gen.gauss(0, 1 + i) for i in range(4)}
        x.update({f"c{i}": gen.choice(["a", "b", "c"]) for i in range(2)})
        score = x["n0"] + 0.5 * x["n1"] - 0.3 * x["n3"] + (x["c0"] == "a") + gen.gauss(0, 0.3)
        yield x, int(score > 0.5)


def grown(model, seed: int, n: int = 1500) -> tuple:
    seen = []
    for x, y in stream(seed, n):
        model.learn_one(x, y)
        seen.append(x)
    return model, seen


MODELS = [
    lambda: forest.ARFClassifier(n_models=4, seed=3, grace_period=40, nominal_attributes=["c0", "c1"]),
    lambda: forest.ARFClassifier(n_models=3, seed=4, grace_period=40, leaf_prediction="mc"),
    lambda: tree.HoeffdingAdaptiveTreeClassifier(grace_period=40, seed=5, nominal_attributes=["c0", "c1"]),
    lambda: tree.HoeffdingTreeClassifier(grace_period=40, leaf_prediction="nb"),
]


@pytest.mark.slow
@pytest.mark.parametrize("make", MODELS, ids=["arf-nba", "arf-mc", "hat", "ht-nb"])
def test_chains_are_river_s_own_predictions(make, monkeypatch):
    model, seen = grown(make(), 11)
    gen = random.Random(2)
    computed = []  # the predictions a chain computed rather than took from a neighbour
    state, at_x = chains._state, chains._at_x
    monkeypatch.setattr(chains, "_state", lambda *a: computed.append(1) or state(*a))
    monkeypatch.setattr(chains, "_at_x", lambda *a: computed.append(1) or at_x(*a))
    rows_total = 0
    for k in range(40):
        x = dict(gen.choice(seen))
        if k % 5 == 0:
            x["c1"] = "never seen"
        order = gen.sample(FEATURES, len(FEATURES))
        donors = gen.sample(seen, 1 + k % 3)
        first = k % 2
        fast = compile_model(model)
        for output, target in (("proba_of", 1), ("proba", None)):
            got = fast.coalitions(x, order, donors, first, output, target)
            rows = [x, *chain_rows(x, order, donors, first)]
            want = [model.predict_proba_one(r) for r in rows]
            if output == "proba_of":
                want = [float(p.get(1, 0.0)) for p in want]
            assert got == want, (k, output)
            rows_total += len(rows)
    n_trees = len(model) if isinstance(model, forest.ARFClassifier) else 1
    assert 0 < len(computed) < 0.5 * rows_total * n_trees  # some rows computed, most reused a neighbour's


@pytest.mark.slow
def test_isage_through_the_chain_equals_isage_through_the_model():
    from streamxai.core.explainers import ISAGE
    from streamxai.core.losses import BrierOf

    model, _ = grown(forest.ARFClassifier(n_models=3, seed=1), 5, 600)
    fast = ModelFunction(model, output="proba_of", target_class=1)
    slow = ModelFunction(model, output="proba_of", target_class=1, fast_path="off")
    a, b = (ISAGE(fn, BrierOf(1), FEATURES, alpha=0.01, seed=3) for fn in (fast, slow))
    for x, y in stream(9, 150):
        assert a.explain_one(x, y) == b.explain_one(x, y)
        model.learn_one(x, y)
    assert fast.fallbacks == 0 and fast.n_evaluations == slow.n_evaluations


def test_a_chain_feature_the_row_lacks_is_left_to_the_model():
    model, seen = grown(tree.HoeffdingTreeClassifier(grace_period=40), 3, 300)
    fn = ModelFunction(model, output="proba_of", target_class=1)
    x = {k: v for k, v in seen[0].items() if k != "n3"}
    got = fn.coalitions(x, FEATURES, [seen[1]])
    assert got == [model.predict_proba_one(r).get(1, 0.0) for r in [x, *chain_rows(x, FEATURES, [seen[1]])]]
    assert fn.fallbacks >= 1  # the chain refused the rows; the model predicted them
