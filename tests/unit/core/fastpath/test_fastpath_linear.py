"""The linear fast path gives the model's values bit for bit: random (logistic) regressions, with and without
a StandardScaler, on random rows and one-feature replacements, edge cases included."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest
import river
from river import compose, linear_model, optim, preprocessing
from streamxai.core import fastpath, kernels
from streamxai.core.fastpath import compile_model
from streamxai.core.fastpath.base import Unsupported
from streamxai.core.model import ModelFunction


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


SPECIAL = [0.0, -0.0, 1e308, -1e308, 5e-324, math.inf, -math.inf, math.nan, 3, True]


def bits(values: list) -> list:
    """Each float's exact bits (signed zeros told apart; any NaN counts as one, as in test_kernels.py)."""
    return [("nan" if v != v else struct.pack("<d", v)) if type(v) is float else (type(v).__name__, v) for v in values]


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("scaled", [False, True])
def test_compiled_rows_match_the_model_bit_for_bit(kind, scaled):
    """The compiled linear kernels' rows match river bit for bit on random models, donors and special values
    (those left to Python), and the kernels were used."""
    gen = random.Random(11)
    outputs = [("value", None)]
    if kind == "logistic":
        outputs += [("label", None), ("proba_of", True), ("proba_of", False), ("proba_of", 0)]
    used = calls = 0
    for _ in range(5):
        model = make(kind, scaled, gen)
        d = gen.randint(1, 8)
        events = list(stream(gen, 300, d, kind))
        for x, y in events:
            model.learn_one(x, y)
        seen = [x for x, _ in events]
        for t in range(20):
            x = dict(gen.choice(seen))
            donors = [dict(gen.choice(seen)) for _ in range(gen.randint(1, 3))]
            for row in (x, *donors):  # a special value now and then
                if gen.random() < 0.3:
                    row[gen.choice(list(row))] = gen.choice(SPECIAL)
            order = gen.sample(list(x), len(x))
            pairs = [(f, gen.choice([gen.choice(seen)[f], gen.choice(SPECIAL)])) for f in x for _ in range(2)]
            grids = np.array([[gen.choice([gen.choice(seen)[f], *SPECIAL[:8]]) for _ in range(6)] for f in x])
            for output, target in outputs:
                fast = ModelFunction(model, output=output, target_class=target)
                slow = ModelFunction(model, output=output, target_class=target, fast_path="off")
                first = t % 2
                assert bits(fast.coalitions(x, order, donors, first)) == bits(slow.coalitions(x, order, donors, first))
                assert bits(fast.replaced(x, pairs, with_x=True)) == bits(slow.replaced(x, pairs, with_x=True))
                assert bits(fast.curves(x, list(x), grids).ravel().tolist()) == bits(
                    slow.curves(x, list(x), grids).ravel().tolist())
                used += fast._fast.coalitions(x, order, donors, first, output, target) is not None
                calls += 1
    if kernels.KERNELS is not None:  # the chains without ints or bools went through the kernel
        assert used > calls / 2, (used, calls)


def test_a_tie_is_labelled_as_river_labels_it():
    """p = 1 - p = 0.5 (z = 0): river's predict_one picks the first of the equal probabilities,
    False; so do the compiled rows (a ``>=`` for the ``>`` fails this)."""
    model = linear_model.LogisticRegression()
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    model._weights["a"], model._weights["b"], model.intercept = 0.0, -0.0, 0.0
    x, pairs = {"a": 1.0, "b": 2.0}, [("a", 3.0), ("b", -1.0)]
    for output in ("label", "value"):
        fast = ModelFunction(model, output=output)
        slow = ModelFunction(model, output=output, fast_path="off")
        assert fast.replaced(x, pairs, with_x=True) == slow.replaced(x, pairs, with_x=True) == [False] * 3 == [0.0] * 3
        assert fast.coalitions(x, ["b", "a"], [x]) == slow.coalitions(x, ["b", "a"], [x])
        assert kernels.KERNELS is None or fast._fast.coalitions(x, ["b", "a"], [x], 0, output, None) is not None


def sparse_stream(gen: random.Random, n: int, kind: str):
    """One-hot-like rows: one of five categories present (1.0, so the scaler's variance of each
    is 0), numeric features missing now and then, a rare feature, keys in a random order."""
    cats = [f"cat={c}" for c in "abcde"]
    w = {c: gen.gauss(0, 2) for c in cats} | {f"f{i}": gen.gauss(0, 1) for i in range(4)}
    for t in range(n):
        x = {gen.choice(cats): 1.0}
        x.update((f"f{i}", gen.gauss(0, 10 ** (i - 1))) for i in range(4) if gen.random() < 0.8)
        if t % 7 == 0:
            x["rare"] = gen.gauss(0, 1)
        x = dict(gen.sample(list(x.items()), len(x)))
        z = sum(w.get(k, 0.0) * v for k, v in x.items())
        yield x, (z + gen.gauss(0, 0.5) > 0) if kind == "logistic" else z + gen.gauss(0, 0.1)


def probe(gen: random.Random, seen: list, keys: list) -> dict:
    """A row like the stream's, changed as a live event may be: a feature missing, one never
    seen (no weight, and a scaler has no statistics of it), a special value, keys reordered."""
    x = dict(gen.choice(seen))
    r = gen.random()
    if r < 0.2 and len(x) > 1:
        del x[gen.choice(list(x))]
    elif r < 0.3:
        x["unseen"] = gen.gauss(0, 1)
    elif r < 0.5:
        x[gen.choice(keys)] = gen.choice([0.0, -0.0, 1.0, gen.gauss(0, 1e3), *SPECIAL[:8]])
    return dict(gen.sample(list(x.items()), len(x)))


@pytest.mark.parametrize("kind", ["logistic", "linear"])
@pytest.mark.parametrize("scaled", [False, True])
def test_compiled_rows_on_sparse_rows_match_the_model_bit_for_bit(kind, scaled):
    """The same on sparse one-hot-like rows: missing features, features without weights or scaler statistics,
    keys and donors in any order."""
    gen = random.Random(23)
    outputs = [("value", None)]
    if kind == "logistic":
        outputs += [("label", None), ("proba_of", True), ("proba_of", False)]
    used = calls = 0
    for _ in range(3):
        model = make(kind, scaled, gen)
        events = list(sparse_stream(gen, 300, kind))
        for x, y in events:
            model.learn_one(x, y)
        seen = [x for x, _ in events]
        keys = sorted({k for x in seen for k in x})
        for t in range(25):
            x = probe(gen, seen, keys)
            donors = []
            for _ in range(gen.randint(1, 3)):
                source = gen.choice(seen)
                donor = {f: source.get(f, gen.choice([0.0, 1.0, gen.gauss(0, 1)])) for f in x}
                donors.append(dict(gen.sample(list(donor.items()), len(donor))))
            order = gen.sample(list(x), gen.randint(1, len(x)))  # all of x's features or some
            pairs = [(f, gen.choice([0.0, 1.0, gen.choice(seen).get(f, -0.0), gen.gauss(0, 100)])) for f in x]
            grids = np.array([[gen.gauss(0, 10) for _ in range(5)] for _ in x])
            for output, target in outputs:
                fast = ModelFunction(model, output=output, target_class=target)
                slow = ModelFunction(model, output=output, target_class=target, fast_path="off")
                first = t % len(order)
                assert bits(fast.coalitions(x, order, donors, first)) == bits(slow.coalitions(x, order, donors, first))
                assert bits(fast.replaced(x, pairs, with_x=True)) == bits(slow.replaced(x, pairs, with_x=True))
                assert bits(fast.curves(x, list(x), grids).ravel().tolist()) == bits(
                    slow.curves(x, list(x), grids).ravel().tolist())
                try:  # (a scaler without a feature's statistics: left to river)
                    used += fast._fast.coalitions(x, order, donors, first, output, target) is not None
                except Unsupported:
                    pass
                calls += 1
    if kernels.KERNELS is not None:  # most chains went through the kernel
        assert used > calls / 2, (used, calls)


def test_the_sigmoid_bounds_are_rivers():
    """z exactly -30 or 30 is not saturated (river's sigmoid is 0 below -30 and 1 above 30):
    1 / (1 + exp(-z)) there; a ``>=`` for a ``>`` in the compiled rows fails this."""
    model = linear_model.LogisticRegression()
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    model._weights["a"], model._weights["b"], model.intercept = 1.0, 0.0, 0.0
    edges = [30.0, -30.0, math.nextafter(30.0, math.inf), math.nextafter(-30.0, -math.inf)]
    x, pairs = {"a": 30.0, "b": 0.0}, [("a", z) for z in edges]
    for target in (True, False):
        fast = ModelFunction(model, output="proba_of", target_class=target)
        slow = ModelFunction(model, output="proba_of", target_class=target, fast_path="off")
        expected = bits(slow.replaced(x, pairs, with_x=True))
        assert bits(fast.replaced(x, pairs, with_x=True)) == expected
        assert expected[1] != bits([float(target)])[0]  # z = 30: not saturated
        assert bits(fast.coalitions(x, ["a"], [{"a": -30.0, "b": 0.0}])) == bits(
            slow.coalitions(x, ["a"], [{"a": -30.0, "b": 0.0}]))
        grids = np.array([edges])
        assert fast.curves(x, ["a"], grids).tobytes() == slow.curves(x, ["a"], grids).tobytes()
        assert kernels.KERNELS is None or fast._fast.coalitions(x, ["a"], [x], 0, "proba_of", target) is not None


def test_a_kept_scope_follows_x_reordered_in_place():
    """River sums in x's key order; a shared evaluator that kept x's products must notice x's
    keys reordered in place (the same values: x == its copy), or it sums in the old order."""
    model = linear_model.LinearRegression()
    model.learn_one({"a": 1.0, "b": 1.0, "c": 1.0}, 1.0)
    model._weights["a"], model._weights["b"], model._weights["c"], model.intercept = 1.0, 1.0, 1.0, 0.0
    fast = compile_model(model)
    fast.shared = True
    fn, ref = ModelFunction(model, "value"), ModelFunction(model, "value", fast_path="off")
    fn.share(fast)
    x, pairs = {"a": 1.0, "b": 1e16, "c": -1e16}, [("a", 1.0), ("b", 1e16)]
    assert fn.replaced(x, pairs, with_x=True) == ref.replaced(x, pairs, with_x=True) == [0.0] * 3
    x["a"] = x.pop("a")  # (b, c, a): 1e16 - 1e16 + 1.0 = 1.0, where (a, b, c) gives 0.0
    assert fn.replaced(x, pairs, with_x=True) == ref.replaced(x, pairs, with_x=True) == [1.0] * 3
    assert fn.coalitions(x, ["a"], [x]) == ref.coalitions(x, ["a"], [x]) == [1.0] * 2
    grids = np.array([[1.0, 2.0]])
    assert fn.curves(x, ["a"], grids).tobytes() == ref.curves(x, ["a"], grids).tobytes()


def test_a_kept_scope_follows_x_changed_in_place_after_another_row():
    """x changed in place after its kept scope served a failing row y is not summed from x's old products."""
    model = linear_model.LinearRegression()
    model.learn_one({"a": 1.0, "b": 1.0}, 1.0)
    model._weights["a"], model._weights["b"], model.intercept = 1.0, 1.0, 0.0
    fast = compile_model(model)
    fast.shared = True
    x, y = {"a": 1.0, "b": 2.0}, {"a": 5.0, "b": 6.0}
    assert fast.replaced(x, [("a", 3.0)], "value", None, with_x=True) == [3.0, 5.0]
    with pytest.raises(Unsupported):  # y takes the kept scope, then fails before it is summed
        fast.replaced(y, (("z", 1.0),), "value", None)
    x["b"] = 10.0  # x changed in place: 1 + 10 and 3 + 10
    assert fast.replaced(x, [("a", 3.0)], "value", None, with_x=True) == [11.0, 13.0]
    grids = np.array([[3.0]])
    assert fast.curves(x, ["a"], grids, "value", None).tolist() == [[13.0]]
