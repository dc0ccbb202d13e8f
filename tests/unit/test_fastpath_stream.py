"""``fast_path = auto`` and ``off`` give the same explanations: per model family, and the worker's whole
output on the demo's drifting stream through the handlers."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest
from helpers.handler_inputs import run_handlers
from river import compose, linear_model, preprocessing
from streamxai.core.stream import StreamExplainer
from streamxai.local.demo import demo_plan, demo_settings
from streamxai.local.demo_stream import agrawal_events
from streamxai.modelspec import build_model
from streamxai.plan import explainer_specs
from streamxai.settings import AGRAWAL_FEATURES, Settings

AGRAWAL = list(AGRAWAL_FEATURES)


def scaled_logistic():
    return compose.Pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression())


CLASSIFIERS = {
    "hat": ("river.tree.HoeffdingAdaptiveTreeClassifier", {"grace_period": 50}),
    "ht-nb": ("river.tree.HoeffdingTreeClassifier", {"grace_period": 50, "leaf_prediction": "nb"}),
    "arf": ("river.forest.ARFClassifier", {"n_models": 3, "grace_period": 50}),
    "logistic": ("river.linear_model.LogisticRegression", {}),
}


def run(factory, specs, events, fast_path):
    se = StreamExplainer.on_worker(factory(), AGRAWAL, specs, seed=3, stream_id="s", fast_path=fast_path)
    out = []
    for i, ev in enumerate(events):
        out.append(se.process_one(ev.x, ev.y, report=i % 10 == 9, loss=0.5))
    return se, out


@pytest.mark.slow
@pytest.mark.parametrize("name", [*CLASSIFIERS, "scaled-logistic"])
def test_classifiers_explained_identically(name):
    s = Settings(features=AGRAWAL, grid_size=5, storage_size=30, alpha=0.02)
    if name == "scaled-logistic":
        factory = scaled_logistic
    else:
        path, params = CLASSIFIERS[name]
        factory = functools.partial(build_model, path, params, 42)
    events = list(agrawal_events("s", 400, drift_at=250, seed=9))
    fast, fast_out = run(factory, explainer_specs(s), events, "auto")
    slow, slow_out = run(factory, explainer_specs(s), events, "off")
    assert fast.evaluation_path == "fast" and slow.evaluation_path == "black_box"
    assert fast_out == slow_out and sum(map(len, fast_out)) == 40 * 3 * len(AGRAWAL)
    # the fast path served every call but the first of an ARF (river builds the forest in it)
    # and of a scaler (it has seen no feature yet)
    assert sum(ex.model_fn.fallbacks for ex in fast.explainers) == (name in ("arf", "scaled-logistic"))


@pytest.mark.slow
def test_regression_tree_explained_identically():
    s = Settings(features=AGRAWAL, task="regression", output="value", loss="squared", grid_size=5, storage_size=30,
                 alpha=0.02, model="river.tree.HoeffdingTreeRegressor", model_params={"grace_period": 50})
    factory = functools.partial(build_model, "river.tree.HoeffdingTreeRegressor", {"grace_period": 50}, None)
    events = [dataclasses.replace(ev, y=ev.x["salary"] / 1000 + 3 * ev.x["age"]) for ev in agrawal_events("s", 300, seed=4)]
    fast, fast_out = run(factory, explainer_specs(s), events, "auto")
    slow, slow_out = run(factory, explainer_specs(s), events, "off")
    assert fast.evaluation_path == "fast" and fast_out == slow_out


@pytest.mark.slow
def test_the_demo_gives_the_same_explanations_and_change_events_both_ways():
    n = 1800
    plan = demo_plan(n)
    s = Settings(features=AGRAWAL, **demo_settings(n))
    events = list(agrawal_events("demo", n, plan.drift_at, plan.swap_at, seed=42,
                                 f_before=plan.f_before, f_after=plan.f_after))
    fast = run_handlers(s, events)
    slow = run_handlers(s.replace(fast_path="off"), events)
    assert len(fast["drift-events"]) >= 3 and len(fast["explanations"]) == (n // s.emit_every) * 27
    del fast["explain-tasks"], slow["explain-tasks"]  # internal, stamped with the clock when sent
    assert set(fast) >= {"predictions", "explanations", "drift-events", "change-episodes"} and fast == slow


def test_the_worker_metrics_say_which_path_each_stream_uses():
    from streamxai.handlers import ExplainHandler, ModelHandler, Source
    from streamxai.schemas import dumps

    s = Settings(features=AGRAWAL, model="river.tree.HoeffdingTreeClassifier", grid_size=3, storage_size=10,
                 streams={"slow-*": {"fast_path": "off"}, "knn-*": {"model": "river.neighbors.KNNClassifier", "model_params": {}}})
    model, explain = ModelHandler(s), ExplainHandler(s)
    events = [ev for sid in ("fast-1", "slow-1", "knn-1") for ev in agrawal_events(sid, 5, seed=1)]
    for off, ev in enumerate(events):
        for o in model.on_message(dumps(ev), ev.stream_id.encode(), Source("features", 0, off)):
            if o.topic == "explain-tasks":
                explain.on_message(o.value, o.key, Source("explain-tasks", 0, off))
    gauges = explain.metrics.snapshot()["gauges"]
    assert {k: v for k, v in gauges.items() if k.startswith("fast_path")} == {
        "fast_path{stream=fast-1}": 1, "fast_path{stream=knn-1}": 0, "fast_path{stream=slow-1}": 0}
    assert 'streamxai_fast_path{stream="fast-1"} 1.0' in explain.metrics.exposition().decode()


@pytest.mark.parametrize("name", ["hat", "logistic", "arf"])
def test_a_kept_scope_follows_the_model_and_x_even_without_being_told(name):
    """A shared evaluator's kept factors and sums notice an unreported learn_one and an x changed in place."""
    from streamxai.core.fastpath import compile_model
    from streamxai.core.model import ModelFunction

    path, params = CLASSIFIERS[name]
    model = build_model(path, params, 42)
    events = list(agrawal_events("s", 300, seed=2))
    for ev in events[:200]:
        model.learn_one(ev.x, ev.y)
    fast = compile_model(model)
    fast.shared = True
    fn, ref = ModelFunction(model, "proba_of", target_class=1), ModelFunction(model, "proba_of", 1, fast_path="off")
    fn.share(fast)
    for ev in events[200:]:
        x = dict(ev.x)
        pairs = [(f, events[0].x[f]) for f in AGRAWAL]
        assert fn.replaced(x, pairs, with_x=True) == ref.replaced(x, pairs, with_x=True)
        x["salary"], x["age"] = x["age"], x["salary"]  # the same dict, other values
        assert fn.replaced(x, pairs, with_x=True) == ref.replaced(x, pairs, with_x=True)
        grids = np.array([[events[k].x[f] for k in range(5)] for f in ("salary", "age", "loan")])
        assert fn.curves(x, ["salary", "age", "loan"], grids).tolist() == \
            ref.curves(x, ["salary", "age", "loan"], grids).tolist()
        model.learn_one(ev.x, ev.y)  # not reported to the evaluator
    assert fn.fallbacks == 0


@pytest.mark.parametrize("name", ["hat", "arf"])
def test_predict_and_learn_steps_apart_are_explained_identically(name):
    """With labels that come later, iPDP explains at the predict step and iPFI/iSAGE at the
    learn step; the kept evaluator must follow the model across the interleaving."""
    s = Settings(features=AGRAWAL, grid_size=4, storage_size=20, alpha=0.05)
    factory = functools.partial(build_model, *CLASSIFIERS[name], 42)
    events = list(agrawal_events("s", 240, seed=6))
    outs = {}
    for mode in ("auto", "off"):
        se = StreamExplainer.on_worker(factory(), AGRAWAL, explainer_specs(s), seed=3, stream_id="s", fast_path=mode)
        out = []
        for i in range(0, len(events), 3):
            batch = events[i:i + 3]
            out += [se.step("predict", ev.x) for ev in batch]  # three events predicted ...
            out += [se.step("learn", ev.x, ev.y) for ev in batch]  # ... before their labels
        outs[mode] = (out, se.evaluation_path)
    assert outs["auto"][1] == "fast" and outs["auto"][0] == outs["off"][0]
    assert sum(map(len, outs["auto"][0])) > 0

