"""How much serial dependence inflates the variance of a series' means: the long-run variance factor.

>>> import random
>>> from streamxai.core.increments import Block
>>> def blocks(values, size=10):
...     for i in range(0, len(values), size):
...         xs = values[i:i + size]
...         m = sum(xs) / len(xs)
...         yield Block(len(xs), m, sum((x - m) ** 2 for x in xs))
>>> rng = random.Random(1)
>>> iid, ar = SerialVariance(), SerialVariance()
>>> for b in blocks([rng.gauss(0, 1) for _ in range(40_000)]):
...     iid.add(b)
>>> x, xs = 0.0, []
>>> for _ in range(40_000):                   # AR(1), phi 0.9: sigma_LR^2 / s^2 = 1.9 / 0.1 = 19
...     x = 0.9 * x + rng.gauss(0, 1)
...     xs.append(x)
>>> for b in blocks(xs):
...     ar.add(b)
>>> round(iid.factor, 1), round(ar.factor)     # about 1 and 19, from 31 differences each
(0.8, 21)
"""

from __future__ import annotations

from ..base import Component
from ..increments import Block

__all__ = ["SerialVariance"]

#: the median of chi-square with one degree of freedom: median(Z^2) for a standard normal Z
_CHI2_1_MEDIAN = 0.4549364231195724
#: the longer scale's batches hold this many of the shorter's values
_WIDE = 8


class _Scale:
    __slots__ = ("batch", "open", "means")

    def __init__(self, batch: int):
        self.batch = batch
        self.open = Block.EMPTY  # the batch being filled
        self.means: list[Block] = []  # the newest closed batches, oldest first


class SerialVariance(Component):
    """The long-run variance factor of one series; ``add`` takes each block of values in order,
    ``factor`` is ``>= 0`` (1 until a scale has ``min_pairs`` differences).

    ``k = sigma_LR^2 / s^2`` multiplies the squared standard error of a difference of means of
    correlated values. It is estimated by batch means at two scales (``batch`` and ``8 * batch``
    values, the newest ``kept`` batches): the median of the squared standardised differences of
    successive batch means over the median of chi-square(1), so a few level shifts move it little;
    ``factor`` is the larger scale's ratio to the values' variance."""

    def __init__(self, batch: int = 100, kept: int = 32, min_pairs: int = 8):
        if batch < 2 or kept < 3 or not 2 <= min_pairs < kept:
            raise ValueError(f"batch={batch} must be >= 2, kept={kept} >= 3 and min_pairs={min_pairs} "
                             "in [2, kept)")
        self.batch = batch
        self.kept = kept
        self.min_pairs = min_pairs
        self._reset()

    def _reset(self) -> None:
        self._scales = (_Scale(self.batch), _Scale(self.batch * _WIDE))
        self.factor = 1.0

    def add(self, block: Block) -> None:
        if block.n <= 0:
            return
        changed = False
        for sc in self._scales:
            sc.open = sc.open + block
            if sc.open.n >= sc.batch:
                sc.means.append(sc.open)
                sc.open = Block.EMPTY
                if len(sc.means) > self.kept:
                    del sc.means[0]
                changed = True
        if changed:
            self.factor = self._factor()

    def _factor(self) -> float:
        best = None
        for sc in self._scales:
            ms = sc.means
            if len(ms) <= self.min_pairs:
                continue
            total = Block.EMPTY
            for m in ms:
                total = total + m
            s2 = total.m2 / (total.n - 1)
            if s2 <= 0.0:
                continue
            r = sorted((b.mean - a.mean) ** 2 / (1.0 / a.n + 1.0 / b.n) for a, b in zip(ms[:-1], ms[1:], strict=True))
            mid = len(r) // 2
            med = r[mid] if len(r) % 2 else 0.5 * (r[mid - 1] + r[mid])
            k = med / _CHI2_1_MEDIAN / s2
            best = k if best is None else max(best, k)
        return 1.0 if best is None else best
