"""Seeded demo streams with drift at known positions, and file readers, as feature events.

The agrawal demo uses river's Agrawal generator: classification function ``f_before``
until ``drift_at``, then ``f_after`` (a concept drift: the label depends on other
features), and from ``swap_at`` on the values of two features are exchanged (a feature
drift: the model's inputs move). A stationary control keeps ``f_before`` throughout.

>>> evs = list(agrawal_events("s1", n=4, drift_at=2, swap_at=3, seed=1))
>>> [e.seq for e in evs], sorted(evs[0].x) == sorted(AGRAWAL_FEATURES)
([0, 1, 2, 3], True)
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

from river.datasets import synth

from schemas import FeatureEvent

from .settings import AGRAWAL_FEATURES  # noqa: F401  (used by the doctest)

__all__ = ["agrawal_events", "threshold_events", "file_events", "DemoPlan"]


class DemoPlan:
    """Where the demo stream drifts, for the live view and the tests."""

    def __init__(self, n: int, drift_at: int | None, swap_at: int | None, swap: tuple[str, str]):
        self.n, self.drift_at, self.swap_at, self.swap = n, drift_at, swap_at, swap

    def describe(self) -> str:
        parts = [f"{self.n} events"]
        if self.drift_at is not None:
            parts.append(f"concept drift (agrawal function switch) at {self.drift_at}")
        if self.swap_at is not None:
            parts.append(f"feature swap {self.swap[0]}<->{self.swap[1]} at {self.swap_at}")
        return ", ".join(parts)


def agrawal_events(
    stream_id: str,
    n: int,
    drift_at: int | None = None,
    swap_at: int | None = None,
    seed: int = 42,
    f_before: int = 1,
    f_after: int = 2,
    swap: tuple[str, str] = ("elevel", "car"),
    t0: float = 1_700_000_000.0,
) -> Iterator[FeatureEvent]:
    before = iter(synth.Agrawal(classification_function=f_before, seed=seed))
    after = iter(synth.Agrawal(classification_function=f_after, seed=seed + 1))
    a, b = swap
    for seq in range(n):
        src = after if drift_at is not None and seq >= drift_at else before
        x, y = next(src)
        x = {k: float(v) for k, v in x.items()}
        if swap_at is not None and seq >= swap_at:
            x[a], x[b] = x[b], x[a]
        yield FeatureEvent(stream_id=stream_id, seq=seq, ts=t0 + seq, x=x, y=int(y))


def file_events(path: str | Path, stream_id: str, features: list[str], target: str = "y") -> Iterator[FeatureEvent]:
    """Events from a JSONL file of feature events or plain ``{feature: value, target: y}``
    objects, or from a CSV file with a header of feature names and the target column."""
    p = Path(path)
    if p.suffix.lower() == ".csv":
        with p.open(newline="") as fh:
            for seq, row in enumerate(csv.DictReader(fh)):
                x = {f: _num(row[f]) for f in features if f in row}
                yield FeatureEvent(stream_id, seq, float(seq), x, _num(row.get(target)))
        return
    with p.open() as fh:
        for seq, line in enumerate(fh):
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            if obj.get("schema") == FeatureEvent.SCHEMA:
                obj.pop("schema")
                yield FeatureEvent(**obj)
            else:
                y = obj.pop(target, None)
                yield FeatureEvent(stream_id, seq, float(seq), obj, y)


def _num(v: str | None) -> float | str | None:
    if v is None or v == "":
        return None
    try:
        return float(v)
    except ValueError:
        return v


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
    import random

    rng = random.Random(seed)
    for seq in range(n):
        a, b, c = rng.random(), rng.random(), rng.random()
        y = int(b > 0.5) if drift_at is not None and seq >= drift_at else int(a > 0.5)
        if swap_at is not None and seq >= swap_at:
            b, c = c, b
        yield FeatureEvent(stream_id=stream_id, seq=seq, ts=t0 + seq, x={"a": a, "b": b, "c": c}, y=y)
