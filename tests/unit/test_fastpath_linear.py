"""Property tests of the linear fast path: random linear and logistic regressions, with and
without a StandardScaler, learnt on random streams, give exactly (bit for bit) the values of
calling the model, on random rows and on one-feature replacements -- saturated sigmoids,
constant features, features without a weight and an untrained model included."""

from __future__ import annotations

import random

import numpy as np
import pytest
import river
from river import compose, linear_model, optim, preprocessing

from pipeline.core import fastpath
from pipeline.core.fastpath import compile_model
from pipeline.core.model import ModelFunction


def make(kind: str, scaled: bool, gen: random.Random):
    l2 = gen.choice([0.0, 0.01])
    lr = gen.choice([0.005, 0.05, 0.5])
    if kind == "logistic":
        model = linear_model.LogisticRegression(optimizer=optim.SGD(lr), l2=l2)
    else:
        model = linear_model.LinearRegression(optimizer=optim.SGD(lr / 10), l2=l2)
    return compose.Pipeline(preprocessing.StandardScaler(), model) if scaled else model


def stream(gen: random.Random, n: int, d: int, kind: str):
    scales = [10 ** gen.uniform(-3, 3) for _ in range(d)]
    w = [gen.gauss(0, 1) / s for s in scales]
    for _ in range(n):
        x = {f"f{i}": gen.gauss(0, s) for i, s in enumerate(scales)}
        x["const"] = 1.5  # zero variance after scaling
        z = sum(wi * x[f"f{i}"] for i, wi in enumerate(w))
        yield x, (z + gen.gauss(0, 0.5) > 0) if kind == "logistic" else 3.0 * z + gen.gauss(0, 0.1)


def check(model, kind: str, x: dict, rows: list[dict], pairs: list, fallback: bool = False) -> None:
    outputs = [("label", None), ("value", None)]
    if kind == "logistic":
        outputs += [("proba", None), ("proba_of", True), ("proba_of", 1), ("proba_of", False), ("proba_of", "no")]
    # ICE curves: per feature the values of its pairs (far out ones saturate the sigmoid)
    features = list(dict.fromkeys(f for f, _ in pairs))
    grids = np.array([([v for g, v in pairs if g == f] * 2)[:2] for f in features], dtype=float)
    for output, target in outputs:
        fast = ModelFunction(model, output=output, target_class=target)
        slow = ModelFunction(model, output=output, target_class=target, fast_path="off")
        assert fast.path == "fast"
        assert fast.many(rows) == slow.many(rows), output
        assert fast.replaced(x, pairs, with_x=True) == slow.replaced(x, pairs, with_x=True), output
        if output != "proba":  # bit for bit (tobytes tells 0.0 from -0.0)
            assert fast.curves(x, features, grids).tobytes() == slow.curves(x, features, grids).tobytes(), output
        assert (fast.fallbacks > 0) == fallback, fast.fallback_reason


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("scaled", [False, True])
def test_linear_models_match_bit_for_bit(kind, scaled):
    for seed in range(6):
        gen = random.Random(seed)
        d = gen.randint(1, 8)
        model = make(kind, scaled, gen)
        events = list(stream(gen, 400, d, kind))
        seen = [x for x, _ in events]
        for t, (x, y) in enumerate(events):
            if t % 50 == 0:
                rows = [{f: gen.choice(seen)[f] * gen.choice([1.0, 1.0, 100.0]) for f in x} for _ in range(10)]
                pairs = [(f, gen.choice(seen)[f] * gen.choice([1.0, -1e4])) for f in x for _ in range(2)]
                if t and scaled:  # a feature the weights never saw (the scaler would learn it: left to river)
                    check(model, kind, x, rows, pairs)
                elif t:
                    extra = dict(x, new=2.0)
                    check(model, kind, extra, [dict(r, new=1.0) for r in rows], pairs + [("new", 5.0)])
                else:  # before learning: no weights (river's dot product is the integer 0); a
                    # scaler that has seen nothing would add the features while predicting
                    check(model, kind, x, rows, pairs, fallback=scaled)
            model.learn_one(x, y)


def test_a_pipeline_that_learns_while_predicting_is_left_to_river():
    model = compose.Pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression())
    x = {"a": 1.0, "b": 2.0}
    model.learn_one(x, True)
    fast = ModelFunction(model, output="proba_of", target_class=True)
    with compose.learn_during_predict():
        copy = model.clone()
        copy.learn_one(x, True)
        slow = ModelFunction(copy, output="proba_of", target_class=True, fast_path="off")
        pairs = [("a", 3.0)] * 20
        assert fast.replaced(x, pairs, with_x=True) == slow.replaced(x, pairs, with_x=True)
    assert fast.fallbacks == 1 and "learns while predicting" in fast.fallback_reason


def test_installed_river_is_the_verified_one():
    """The fast path reads river internals; it is verified on VERIFIED_RIVER only."""
    assert fastpath.verified_river(river.__version__), (river.__version__, fastpath.VERIFIED_RIVER)


def test_another_river_means_black_box_and_one_warning(monkeypatch, caplog):
    monkeypatch.setattr(river, "__version__", "0.99.0")
    monkeypatch.setattr(fastpath, "_warned", [])
    with caplog.at_level("WARNING", logger="streamxai.fastpath"):
        for _ in range(3):
            assert compile_model(linear_model.LogisticRegression()) is None
            assert ModelFunction(linear_model.LogisticRegression(), "proba").path == "black_box"
    lines = [r.getMessage() for r in caplog.records if r.name == "streamxai.fastpath"]
    assert len(lines) == 1 and "0.99.0" in lines[0] and "black box" in lines[0]
