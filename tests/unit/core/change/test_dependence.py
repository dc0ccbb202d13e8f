"""The long-run variance factor (streamxai.core.change.dependence): serially dependent increments keep the
change test's false-alarm bound, independent ones its power."""

from __future__ import annotations

import math
import random

from streamxai.core.change import SerialVariance, StreamChangeDetector
from streamxai.core.increments import Block


def _blocks(values, size=10):
    for i in range(0, len(values), size):
        xs = values[i:i + size]
        m = sum(xs) / len(xs)
        yield Block(len(xs), m, sum((x - m) ** 2 for x in xs))


def _ar1(rng, n, phi, level=0.0, sd=1.0):
    x, out = 0.0, []
    for _ in range(n):
        x = phi * x + rng.gauss(0.0, sd)
        out.append(level + x)
    return out


def test_the_factor_is_about_one_for_independent_values_and_the_long_run_ratio_for_ar1():
    """AR(1): long-run variance / variance = (1 + phi) / (1 - phi) (1, 3, 19 at 0, 0.5, 0.9). Measured over 60
    seeds: log(factor / truth) has mean 0.21-0.26 and sd 0.34-0.39, so over 5 seeds sd 0.17: [0.6, 2.2]
    times the truth is the mean +- 3 sd."""
    for phi, truth in ((0.0, 1.0), (0.5, 3.0), (0.9, 19.0)):
        logs = []
        for seed in range(5):
            v = SerialVariance()
            for b in _blocks(_ar1(random.Random(seed), 40_000, phi)):
                v.add(b)
            logs.append(math.log(v.factor / truth))
        assert 0.6 <= math.exp(sum(logs) / len(logs)) <= 2.2, (phi, logs)


def test_a_level_shift_barely_moves_the_factor():
    """The median of squared differences: one jump of 10 standard deviations among 32 batches
    is one large difference, not a larger variance."""
    rng = random.Random(3)
    values = [rng.gauss(0.0, 1.0) for _ in range(20_000)] + [rng.gauss(10.0, 1.0) for _ in range(10_000)]
    v = SerialVariance()
    for b in _blocks(values):
        v.add(b)
    assert v.factor < 2.0


def test_serially_dependent_increments_keep_the_false_alarm_bound():
    """AR(1) increments (phi 0.9, as elec2's longest scales) in 16 streams of 3 series, delta 0.3: with the factor
    the streams alarming are Binomial(16, p <= 0.3), above 10 w.p. 0.0016; without it every stream alarms."""
    alarmed = 0
    for seed in range(16):
        rng = random.Random(100 + seed)
        series = {f: list(_blocks(_ar1(rng, 10_000, 0.9, level=0.3, sd=0.1))) for f in "abc"}
        # the default warm-up: the factor has its first estimate when the test starts
        det = StreamChangeDetector([("ipfi", f) for f in "abc"], delta=0.3, min_effect=0.0, warmup=1000)
        hit = False
        for t in range(1000):
            for f in "abc":
                ch, _ = det.update("ipfi", f, 10 * t + 9, series[f][t])
                hit = hit or bool(ch)
        alarmed += hit
    assert alarmed <= 10


def test_independent_increments_keep_their_power():
    """A step of 0.3 standard deviations in independent increments is found within 1,000 events
    of it, about as fast as without the factor (which stays near 1)."""
    rng = random.Random(7)
    det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], delta=0.01, min_effect=0.0, warmup=0)
    found = None
    for t in range(1000):
        for f in "ab":
            level = 0.3 if (f == "a" and t >= 500) else 0.0
            ch, _ = det.update("ipfi", f, 10 * t + 9, next(_blocks([level + rng.gauss(0, 1) for _ in range(10)])))
            if ch and found is None and f == "a":
                found = 10 * t + 9
    assert found is not None and 5000 < found < 6000, found
