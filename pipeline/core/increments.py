"""Per-event increments of an explainer, gathered in blocks between two reports.

>>> t = IncrementTracker(["a", "b"])
>>> for v in (1.0, 2.0, 3.0):
...     t.add("a", v)
>>> t.take()
{'a': Block(n=3, mean=2.0, m2=2.0)}
>>> t.take()    # a new block starts after every take
{}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import ClassVar

__all__ = ["Block", "IncrementTracker"]


class Block:
    """``n`` values with mean ``mean`` and sum of squared deviations from it ``m2``.

    ``a + b`` is the block of the values of both (Chan et al.'s parallel update), ``total - a`` that
    of the values of ``total`` not in ``a``; the operators return new blocks. An explainer's
    per-event increments are gathered in blocks between reports: for a fixed model they are nearly
    independent samples, which the change test and the confidence bounds need.

    >>> a, b = Block(2, 1.0, 0.5), Block(1, 4.0, 0.0)
    >>> a + b
    Block(n=3, mean=2.0, m2=6.5)
    >>> (a + b) - a == b, (a + b).var, Block.EMPTY + a == a
    (True, 3.25, True)
    """

    __slots__ = ("n", "mean", "m2")
    EMPTY: ClassVar[Block]

    def __init__(self, n: int, mean: float, m2: float):
        self.n = n
        self.mean = mean
        self.m2 = m2

    def __add__(self, other: Block) -> Block:
        na, nb = self.n, other.n
        if not nb:
            return self
        if not na:
            return other
        n = na + nb
        d = other.mean - self.mean
        return Block(n, self.mean + d * nb / n, self.m2 + other.m2 + d * d * na * nb / n)

    def __sub__(self, part: Block) -> Block:
        na, n = part.n, self.n
        if not na:
            return self
        nb = n - na
        if nb <= 0:
            return Block.EMPTY
        mean = (n * self.mean - na * part.mean) / nb
        d = mean - part.mean
        m2 = self.m2 - part.m2 - d * d * na * nb / n
        return Block(nb, mean, m2 if m2 > 0.0 else 0.0)  # rounding can leave a tiny negative

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Block):
            return NotImplemented
        return self.n == other.n and self.mean == other.mean and self.m2 == other.m2

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Block(n={self.n!r}, mean={self.mean!r}, m2={self.m2!r})"

    def __reduce__(self) -> tuple:
        return Block, (self.n, self.mean, self.m2)

    @property
    def var(self) -> float:
        """Sample variance (``m2 / (n - 1)``; 0 for fewer than two values)."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0

    @property
    def se(self) -> float:
        """Standard error of ``mean`` for independent values (infinite when empty)."""
        return math.sqrt(self.var / self.n) if self.n > 0 else math.inf

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mean": self.mean, "m2": self.m2}


Block.EMPTY = Block(0, 0.0, 0.0)


class IncrementTracker:
    """Welford accumulators per feature, reset by :meth:`take`."""

    __slots__ = ("_stats",)

    def __init__(self, features: Iterable[str]):
        # feature -> [n, mean, m2]
        self._stats: dict[str, list] = {f: [0, 0.0, 0.0] for f in features}

    def add(self, feature: str, value: float) -> None:
        self.add_all((feature,), (value,))

    def add_all(self, features: Iterable[str], values: Iterable[float]) -> None:
        """Welford's update of each feature's accumulator with its value, in order."""
        stats = self._stats
        for f, value in zip(features, values, strict=True):
            s = stats[f]
            n = s[0] + 1
            d = value - s[1]
            mean = s[1] + d / n
            s[0] = n
            s[1] = mean
            s[2] += d * (value - mean)

    def add_smoothed(
        self, features: Sequence[str], values: Sequence[float], smoothed: dict[str, float], keep: float, a: float,
        index: dict[str, int] | None = None, out: list | None = None,
    ) -> None:
        """:meth:`add_all`, then each feature's exponential smoothing ``smoothed[f] = keep *
        smoothed[f] + a * value`` and, with ``index``, ``out[index[f]] = value``: an
        explainer's per-event updates.

        >>> t, phi, out = IncrementTracker(["a", "b"]), {"a": 1.0, "b": 0.0}, [None, None]
        >>> t.add_smoothed(["b", "a"], [2.0, 3.0], phi, 0.5, 0.5, {"a": 0, "b": 1}, out)
        >>> phi, out, t.take()["a"]
        ({'a': 2.0, 'b': 1.0}, [3.0, 2.0], Block(n=1, mean=3.0, m2=0.0))
        """
        self.add_all(features, values)
        for f, value in zip(features, values, strict=True):
            smoothed[f] = keep * smoothed[f] + a * value
        if index is not None:
            for f, value in zip(features, values, strict=True):
                out[index[f]] = value  # type: ignore[index]

    def take(self) -> dict[str, Block]:
        """The block of each feature that got increments since the last take; then reset."""
        out = {}
        for f, s in self._stats.items():
            if s[0]:
                out[f] = Block(s[0], s[1], s[2])
                s[0], s[1], s[2] = 0, 0.0, 0.0
        return out
