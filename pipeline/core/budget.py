"""Load shedding for explainers: which events to explain when they cannot keep up.
Skipped events still reach the explainers' storages and the model replica, so every
explained event uses the exact model version and the same past as without a budget.

>>> s = EventSampler(rate=0.5, seed=1)
>>> picks = [s.selected("stream-a", seq) for seq in range(1000)]
>>> 430 < sum(picks) < 570, picks == [s.selected("stream-a", q) for q in range(1000)]
(True, True)
"""

from __future__ import annotations

import math

from .base import Component
from .rng import derive_seed

__all__ = ["EventSampler", "LagShedder"]

_SCALE = float(1 << 63)


class EventSampler(Component):
    """Deterministic Bernoulli(rate) selection of ``(stream_id, seq)``: every worker agrees."""

    def __init__(self, rate: float = 1.0, seed: int = 0):
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"explain sample rate {rate} must be in (0, 1]")
        self.rate = rate
        self.seed = seed

    def selected(self, stream_id: str, seq: int) -> bool:
        if self.rate >= 1.0:
            return True
        return derive_seed(self.seed, "sample", stream_id, seq) / _SCALE < self.rate  # type: ignore[operator]


class LagShedder(Component):
    """Fair load shedding by lag: while events wait longer than ``max_lag_s``, each group
    explains one event in ``stride = ceil(waited_s / max_lag_s)`` (``None``: never skip). The stride
    is the same for every stream, so under overload every stream keeps the same share of its
    explanations. ``skipped``: events of the group shed since it last explained one.

    >>> LagShedder(2.0).shed(waited_s=3.0), LagShedder(None).shed(waited_s=1e9)
    (True, False)
    >>> s = LagShedder(2.0)
    >>> [s.shed(waited_s=7.0, skipped=k) for k in range(5)]  # stride 4: every 4th is explained
    [True, True, True, False, False]
    """

    def __init__(self, max_lag_s: float | None = None):
        if max_lag_s is not None and max_lag_s <= 0:
            raise ValueError(f"max_lag_s={max_lag_s} must be positive or None")
        self.max_lag_s = max_lag_s
        self._reset()

    def _reset(self) -> None:
        self.n_shed = 0

    def stride(self, waited_s: float) -> int:
        if self.max_lag_s is None or waited_s <= self.max_lag_s:
            return 1
        return math.ceil(waited_s / self.max_lag_s)

    def shed(self, waited_s: float, skipped: int = 0) -> bool:
        if skipped + 1 < self.stride(waited_s):
            self.n_shed += 1
            return True
        return False
