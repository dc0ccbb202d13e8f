"""Frequency distribution of one feature over a recent window (iPDP paper, Algorithm 3).

>>> s = FrequencyStorage(size=4, entrance_probability=0.5, seed=3)
>>> for v in range(20):
...     s.update(float(v))
>>> len(s), s.n_seen, s.values == sorted(s.values)
(4, 20, True)
>>> s.quantile(0.0) == min(s.values), s.quantile(1.0) == max(s.values)
(True, True)
>>> c = FrequencyStorage(size=5)
>>> for v in ["a", "b", "b", "c", "b", "c"]:
...     c.update(v)
>>> c.values, c.counts
(['b', 'b', 'c', 'b', 'c'], {'b': 3, 'c': 2})
>>> c.frequent(1), c.frequent(5)
(['b'], ['b', 'c'])
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Hashable
from typing import Any

from ..base import Component, check_positive_int

__all__ = ["FrequencyStorage", "category_key"]


def category_key(c: Any) -> tuple:
    """Sort key for categories of mixed types: numbers by value first, then the rest by text.

    >>> sorted([10, "b", 2, True, "a"], key=category_key)
    [2, 10, True, 'a', 'b']
    """
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        return (0, c, "")
    return (1, 0, f"{type(c).__name__}:{c}")


class FrequencyStorage(Component):
    """``size`` recent values, entering with ``entrance_probability``, oldest out first.

    References
    ----------
    1. Muschalik, M., Fumagalli, F., Jagtani, R., Hammer, B., Hüllermeier, E. "iPDP: On Partial
       Dependence Plots in Dynamic Modeling Scenarios". arXiv:2306.07775.
       Implements Algorithm 3 (incremental frequency storage).

    While it is not full every value enters; once full, a new value enters with probability ``p``
    and replaces the oldest, so the storage holds a thinned sample of roughly the last ``size / p``
    values: its quantiles and category counts describe the recent window. As in the authors'
    implementation (iXAI ``OrderedReservoirStorage``), the entrance draw applies only once the
    storage is full. Draws use the storage's own generator seeded with ``seed``.
    """

    def __init__(self, size: int = 100, entrance_probability: float = 1.0, seed: int | None = None):
        check_positive_int(size, "size")
        if not 0.0 < entrance_probability <= 1.0:
            raise ValueError(
                f"entrance_probability={entrance_probability!r} must be in (0, 1]; "
                "size / entrance_probability is the length of the window described"
            )
        self.size = size
        self.entrance_probability = entrance_probability
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        self._values: deque[Any] = deque()
        self._counts: dict[Hashable, int] = {}
        self._sorted: list[Any] | None = None
        self._frequent: tuple[int, list[Any]] | None = None
        self._rng = random.Random(self.seed)
        self.n_seen = 0
        #: values that entered the full reservoir (each replaced the oldest value)
        self.n_replaced = 0

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, value: Any) -> bool:
        return value in self._counts

    @property
    def values(self) -> list[Any]:
        """Stored values, oldest first (a copy)."""
        return list(self._values)

    @property
    def counts(self) -> dict[Hashable, int]:
        """``{value: count}`` over the stored values (a copy)."""
        return dict(self._counts)

    def update(self, value: Any) -> None:
        """Offer ``value``; the class docstring says when it enters."""
        self.n_seen += 1
        values = self._values
        if len(values) >= self.size:
            p = self.entrance_probability
            if p < 1.0 and self._rng.random() >= p:
                return
            old = values.popleft()
            n = self._counts[old] - 1
            if n:
                self._counts[old] = n
            else:
                del self._counts[old]
            self.n_replaced += 1
        values.append(value)
        self._counts[value] = self._counts.get(value, 0) + 1
        self._sorted = None
        self._frequent = None

    def quantile(self, q: float) -> float:
        """The ``q``-quantile of the stored numeric values, interpolated linearly between
        order statistics (numpy's default ``method="linear"``)."""
        if not self._values:
            raise LookupError("the storage is empty; update it before asking for quantiles")
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q={q!r} must be in [0, 1]")
        s = self._sorted
        if s is None:
            s = self._sorted = sorted(self._values)
        pos = q * (len(s) - 1)
        i = int(pos)
        if i >= len(s) - 1:
            return float(s[-1])
        lo = s[i]
        return float(lo + (s[i + 1] - lo) * (pos - i))

    def frequent(self, n: int) -> list[Any]:
        """Up to ``n`` most frequent stored values (ties broken by :func:`category_key`),
        returned in :func:`category_key` order."""
        cached = self._frequent
        if cached is not None and cached[0] == n:
            return list(cached[1])
        cats = sorted(self._counts, key=category_key)
        if len(cats) > n:
            counts = self._counts
            cats = sorted(sorted(cats, key=lambda c: -counts[c])[:n], key=category_key)
        self._frequent = (n, cats)
        return list(cats)
