"""The watch of a stream's inputs: each data fault is found soon and named; streams without
faults -- independent, smooth, trending, spiky, discrete, a feature that starts to vary -- give
no finding. Every stream is seeded. The quiet streams are long (30,000 events, 1,160 tests of
each feature): each test asks for a pattern whose probability without a fault is far below
1e-6 for these streams (half of 100 new values beyond every one of 1,000 before; 100 equal
values where no run of 50 was; a rank von Neumann ratio 0.75 above the largest of ten stretches
before, several standard deviations of it), so a finding there is a defect, not bad luck."""

from __future__ import annotations

import math
import random

import pytest
from streamxai.core.change.inputs import InputMonitor

AT = 3000


def smooth(rng: random.Random, n: int, rho: float = 0.95, mean: float = 50.0, sd: float = 5.0) -> list[float]:
    """An AR(1) series: each value mostly the one before it."""
    out, v = [], 0.0
    for _ in range(n):
        v = rho * v + math.sqrt(1 - rho * rho) * rng.gauss(0.0, 1.0)
        out.append(mean + sd * v)
    return out


def stream(seed: int, n: int = AT + 1000, kind: str | None = None) -> list[dict]:
    """Features a (smooth, around 50), b (smooth, around 0.3) and c (independent, uniform on [0, 1]),
    with fault ``kind`` on a from event ``AT`` on."""
    rng = random.Random(seed)
    a, b = smooth(rng, n), smooth(rng, n, mean=0.3, sd=0.05)
    xs = [{"a": a[i], "b": b[i], "c": rng.random()} for i in range(n)]
    order = list(range(AT, n))
    rng.shuffle(order)
    for i in range(AT, n):
        x = xs[i]
        if kind == "stuck":
            x["a"] = a[AT - 1]
        elif kind == "missing":
            del x["a"]
        elif kind == "zero":
            x["a"] = 0.0
        elif kind == "scale":
            x["a"] = a[i] * 1000.0
        elif kind == "offset":
            x["a"] = a[i] + 5 * 5.0
        elif kind == "swap":
            x["a"], x["b"] = x["b"], x["a"]
        elif kind == "shuffle":
            x["a"] = a[order[i - AT]]
    return xs


def found(xs: list[dict]) -> list:
    mon = InputMonitor(["a", "b", "c"])
    return [f for t, x in enumerate(xs) for f in mon.update(t, x)]


@pytest.mark.parametrize("kind, what", [("stuck", "constant"), ("missing", "constant"), ("zero", "constant"),
                                        ("scale", "scaled"), ("offset", "shifted"), ("swap", "swapped"),
                                        ("shuffle", "reordered")])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_fault_is_found_within_a_window_and_named(kind, what, seed):
    faults = found(stream(seed, kind=kind))
    on_a = [f for f in faults if f.feature == "a"]
    assert on_a, f"{kind}: nothing found ({faults})"
    first = on_a[0]
    # the recent window is 100 events and the tests run every 25: found within 125 events
    assert first.what == what and AT <= first.seq <= AT + 125, first
    assert AT - 25 <= first.start <= first.seq, first
    assert all(f.feature in ("a", "b") for f in faults), faults  # c is left alone
    if kind == "swap":
        assert first.like == "b" and {f.feature for f in faults} == {"a", "b"}, faults
    if kind == "zero":
        assert "(missing?)" in first.detail, first.detail


def test_a_fault_is_found_once_and_again_only_after_its_reference_renews():
    faults = found(stream(4, n=AT + 2500, kind="scale"))
    assert [f.feature for f in faults] == ["a"], faults


def quiet_streams(n: int) -> dict[str, list[float]]:
    rng = random.Random(11)
    trend = [0.001 * i + rng.gauss(0.0, 1.0) for i in range(n)]
    spiky = [rng.lognormvariate(0.0, 1.5) for _ in range(n)]
    return {
        "independent": [rng.gauss(0.0, 1.0) for _ in range(n)],
        "smooth": smooth(rng, n, rho=0.99),
        "trending": trend,
        "spiky": spiky,
        "discrete": [float(rng.randrange(5)) for _ in range(n)],
        "starts to vary": [0.0 if i < n // 2 else rng.random() for i in range(n)],
    }


@pytest.mark.slow
def test_streams_without_faults_give_no_finding():
    n = 30_000
    series = quiet_streams(n)
    names = list(series)
    mon = InputMonitor(names)
    faults = [f for t in range(n) for f in mon.update(t, {k: series[k][t] for k in names})]
    assert faults == [], [(f.feature, f.what, f.seq, f.detail) for f in faults]


def test_non_numeric_values_count_as_missing():
    mon = InputMonitor(["a"], recent=20, reference=40, every=5)
    rng = random.Random(5)
    faults = [f for t in range(200) for f in mon.update(t, {"a": rng.random() if t < 120 else "n/a"})]
    assert [(f.what, f.start) for f in faults] == [("constant", 120)], faults
    assert faults[0].detail.startswith("missing since 120"), faults[0].detail


def test_bad_windows_are_refused():
    with pytest.raises(ValueError, match="reference >= 2 \\* recent"):
        InputMonitor(["a"], recent=100, reference=150)
