"""Small seeded event streams for tests."""

from __future__ import annotations

import random
from collections.abc import Iterator

from streamxai.schemas import FeatureEvent

__all__ = ["threshold_events", "linear_events", "LINEAR_FEATURES"]


def threshold_events(
    stream_id: str, n: int, drift_at: int | None = None, swap_at: int | None = None, seed: int = 0,
    t0: float = 1_700_000_000.0,
) -> Iterator[FeatureEvent]:
    """A small, fast-to-learn stream for tests: features ``a, b, c`` uniform on [0, 1];
    the label is ``a > 0.5`` until ``drift_at``, then ``b > 0.5``; from ``swap_at`` on the
    values of ``b`` and ``c`` are exchanged before the model sees them.

    >>> [e.y for e in threshold_events("t", 3, seed=1)]
    [0, 0, 1]
    """
    rng = random.Random(seed)
    for seq in range(n):
        a, b, c = rng.random(), rng.random(), rng.random()
        y = int(b > 0.5) if drift_at is not None and seq >= drift_at else int(a > 0.5)
        if swap_at is not None and seq >= swap_at:
            b, c = c, b
        yield FeatureEvent(stream_id=stream_id, seq=seq, ts=t0 + seq, x={"a": a, "b": b, "c": c}, y=y)


LINEAR_FEATURES = ("x0", "x1", "x2", "x3", "x4")


def linear_events(
    stream_id: str, n: int, drift_at: int | None = None, seed: int = 0, noise: float = 0.1,
    t0: float = 1_700_000_000.0,
) -> Iterator[FeatureEvent]:
    """A regression stream: features ``x0..x4`` uniform on [0, 1]; the target is
    ``3 x0 + x1`` plus Gaussian noise until ``drift_at``, then ``3 x2 + x3``.

    >>> [round(e.y, 3) for e in linear_events("r", 2, seed=1)]
    [1.113, 2.505]
    """
    rng = random.Random(seed)
    for seq in range(n):
        x = {f: rng.random() for f in LINEAR_FEATURES}
        a, b = ("x2", "x3") if drift_at is not None and seq >= drift_at else ("x0", "x1")
        yield FeatureEvent(stream_id=stream_id, seq=seq, ts=t0 + seq, x=x, y=3 * x[a] + x[b] + rng.gauss(0, noise))
