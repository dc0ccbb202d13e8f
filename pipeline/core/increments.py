"""Per-event increments of an explainer, gathered in blocks between two reports.

An incremental explainer smooths one *increment* per feature and event (iPFI's loss
difference, iSAGE's marginal contribution, the spread of iPDP's ICE curve). For a fixed
model the increments of different events are nearly independent samples of the current
explanation, while consecutive smoothed values share almost all their weight. Change
detection and confidence bounds therefore work on the increments: the explainer adds each
one to an :class:`IncrementTracker`, and whoever publishes the explanation takes the
:class:`Block` of increments since the previous report (count, mean and sum of squared
deviations, Welford's update).

>>> t = IncrementTracker(["a", "b"])
>>> for v in (1.0, 2.0, 3.0):
...     t.add("a", v)
>>> t.take()
{'a': Block(n=3, mean=2.0, m2=2.0)}
>>> t.take()    # a new block starts after every take
{}
>>> Block.merge(Block(2, 1.0, 0.5), Block(1, 4.0, 0.0))
Block(n=3, mean=2.0, m2=6.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Block", "IncrementTracker"]


@dataclass(frozen=True, slots=True)
class Block:
    """``n`` values with mean ``mean`` and sum of squared deviations from it ``m2``."""

    n: int
    mean: float
    m2: float

    @property
    def var(self) -> float:
        """Sample variance (``m2 / (n - 1)``; 0 for fewer than two values)."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0

    variance = var

    @property
    def se(self) -> float:
        """Standard error of ``mean`` for independent values (infinite when empty)."""
        return math.sqrt(self.var / self.n) if self.n > 0 else math.inf

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mean": self.mean, "m2": self.m2}

    @staticmethod
    def merge(a: Block, b: Block) -> Block:
        """The block of all values of ``a`` and ``b`` (Chan et al.'s parallel update)."""
        n = a.n + b.n
        if n == 0:
            return Block(0, 0.0, 0.0)
        d = b.mean - a.mean
        mean = a.mean + d * b.n / n
        return Block(n, mean, a.m2 + b.m2 + d * d * a.n * b.n / n)


class IncrementTracker:
    """Welford accumulators per feature, reset by :meth:`take`."""

    __slots__ = ("_stats",)

    def __init__(self, features: Iterable[str]):
        # feature -> [n, mean, m2]
        self._stats: dict[str, list] = {f: [0, 0.0, 0.0] for f in features}

    def add(self, feature: str, value: float) -> None:
        s = self._stats[feature]
        n = s[0] + 1
        d = value - s[1]
        mean = s[1] + d / n
        s[0] = n
        s[1] = mean
        s[2] += d * (value - mean)

    def take(self) -> dict[str, Block]:
        """The block of each feature that got increments since the last take; then reset."""
        out = {}
        for f, s in self._stats.items():
            if s[0]:
                out[f] = Block(s[0], s[1], s[2])
                s[0], s[1], s[2] = 0, 0.0, 0.0
        return out
