"""Replicas fed the same ordered events predict identically, and a pickled copy continues identically."""

import pickle

import pytest
from river.datasets import synth
from streamxai.modelspec import build_model

MODELS = [
    ("river.tree.HoeffdingTreeClassifier", {"grace_period": 50}),
    ("river.tree.HoeffdingAdaptiveTreeClassifier", {"grace_period": 50}),
    ("river.forest.ARFClassifier", {"n_models": 3}),
    ("river.linear_model.LogisticRegression", {}),
]


@pytest.mark.parametrize("path, params", MODELS, ids=[m[0].rsplit(".", 1)[1] for m in MODELS])
def test_replicas_agree_exactly(path, params):
    a, b = build_model(path, params, seed=7), build_model(path, params, seed=7)
    data = list(synth.Agrawal(classification_function=1, seed=3).take(1500))
    c = None
    for t, (x, y) in enumerate(data):
        pa, pb = a.predict_proba_one(x), b.predict_proba_one(x)
        assert pa == pb, f"replicas diverged at event {t}"
        if c is not None:
            assert c.predict_proba_one(x) == pa, f"restored copy diverged at event {t}"
            c.learn_one(x, y)
        a.learn_one(x, y)
        b.learn_one(x, y)
        if t == 700:
            c = pickle.loads(pickle.dumps(a))


def test_unseeded_forest_is_not_a_valid_replica():
    """Without a seed, ARF replicas differ: the reason model_seed exists."""
    a = build_model("river.forest.ARFClassifier", {"n_models": 3}, seed=None)
    b = build_model("river.forest.ARFClassifier", {"n_models": 3}, seed=None)
    data = list(synth.Agrawal(classification_function=1, seed=3).take(1500))
    differ = False
    for x, y in data:
        differ |= a.predict_proba_one(x) != b.predict_proba_one(x)
        a.learn_one(x, y)
        b.learn_one(x, y)
    assert differ
