"""ADWIN over explanation series: one detector per (stream, explainer, feature).

>>> import random
>>> rng = random.Random(7)
>>> m = ExplanationDriftMonitor(delta=0.002, warmup=0)
>>> hits = [seq for seq in range(2000)
...         if m.update("s/ipfi/age", seq, (0.1 if seq < 1000 else 0.6) + rng.gauss(0, 0.05))]
>>> len(hits) >= 1 and 1000 <= hits[0] < 1100
True
"""

from __future__ import annotations

from dataclasses import dataclass

from river import drift

from .base import Component

__all__ = ["ExplanationDriftMonitor", "Change"]


@dataclass(frozen=True)
class Change:
    series: str
    seq: int
    n_points: int
    level_before: float
    level_after: float


class ExplanationDriftMonitor(Component):
    """River's ADWIN per series; the first ``warmup`` points of a series are not monitored.

    ``warmup`` skips the start-up of smoothed estimates (which rise from zero), so the
    ramp is not reported as a change.
    """

    def __init__(self, delta: float = 0.002, grace_period: int = 10, clock: int = 1, warmup: int = 0):
        if not 0 < delta < 1:
            raise ValueError(f"drift delta={delta} must be in (0, 1)")
        self.delta = delta
        self.grace_period = grace_period
        self.clock = clock
        self.warmup = warmup
        self._reset()

    def _reset(self) -> None:
        self._detectors: dict[str, drift.ADWIN] = {}
        self._counts: dict[str, int] = {}

    def update(self, series: str, seq: int, value: float) -> Change | None:
        n = self._counts.get(series, 0) + 1
        self._counts[series] = n
        if n <= self.warmup:
            return None
        det = self._detectors.get(series)
        if det is None:
            det = drift.ADWIN(delta=self.delta, grace_period=self.grace_period, clock=self.clock)
            self._detectors[series] = det
        before = det.estimation if det.width else value
        det.update(value)
        if not det.drift_detected:
            return None
        return Change(series, seq, n, float(before), float(det.estimation))

    @property
    def n_series(self) -> int:
        return len(self._counts)
