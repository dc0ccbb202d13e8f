"""The sequential two-sample test of one series, with a bounded false-alarm rate.

>>> import random
>>> from streamxai.core.increments import Block
>>> rng = random.Random(3)
>>> test = SeriesTest(delta=0.001, min_samples=50)
>>> found = []
>>> for t in range(400):                       # blocks of 10 increments; +0.3 from event 2000
...     level = 0.1 if t < 200 else 0.4
...     xs = [level + rng.gauss(0, 0.3) for _ in range(10)]
...     m = sum(xs) / 10
...     cut = test.add(10 * t, 10 * t + 9, Block(10, m, sum((x - m) ** 2 for x in xs)), min_effect=0.1)
...     if cut:
...         found.append((10 * t + 9, cut.seq))
>>> found                                      # (detected at, new regime from)
[(2079, 2000)]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

from ..base import Component
from ..increments import Block
from .window import SeriesWindow

__all__ = ["SeriesTest", "Cut", "threshold", "two_sample_z", "Z90", "Z95"]

_STD_NORMAL = NormalDist()
#: two-sided 95% normal quantile, for the confidence intervals of the levels
Z95 = 1.959963984540054
#: one-sided 95% (two-sided 90%) normal quantile: "the loss fell", "the loss rose"
Z90 = 1.6448536269514722


def threshold(delta: float, j: int, n_cuts: int) -> float:
    """Two-sided normal threshold of one cut of the ``j``-th check (:class:`SeriesTest`).

    >>> round(threshold(0.01 / 27, 10, 8), 2), round(threshold(0.01 / 27, 10_000, 30), 2)
    (5.19, 6.88)
    """
    if j < 1 or n_cuts < 1:
        raise ValueError(f"check j={j} and n_cuts={n_cuts} must be >= 1")
    delta_j = delta / (2.0 * j * (1.0 + math.log(j)) ** 2)
    return -_STD_NORMAL.inv_cdf(delta_j / (2.0 * n_cuts))


def two_sample_z(a: Block, b: Block, var_factor: float = 1.0, pooled_only: bool = False) -> float:
    """``(b.mean - a.mean) / se``, ``se^2`` the larger of the pooled and Welch squared errors
    times ``var_factor`` (:class:`SeriesTest`); ``pooled_only``: the pooled error alone. A
    difference without variance is infinite, none at all 0.

    >>> round(two_sample_z(Block(100, 0.0, 99.0), Block(100, 0.5, 99.0)), 3)   # sd 1 each side
    3.536
    >>> round(two_sample_z(Block(100, 0.0, 99.0), Block(100, 0.5, 99.0), var_factor=2.0), 3)
    2.5
    """
    na, nb = a.n, b.n
    d = b.mean - a.mean
    se2 = (a.m2 + b.m2) / (na + nb - 2 if na + nb > 2 else 1) * (1.0 / na + 1.0 / nb)
    if not pooled_only:
        welch = (a.m2 / (na - 1) if na > 1 else 0.0) / na + (b.m2 / (nb - 1) if nb > 1 else 0.0) / nb
        if welch > se2:
            se2 = welch
    se2 *= var_factor
    if se2 <= 0.0:
        return 0.0 if d == 0.0 else math.copysign(math.inf, d)
    return d / math.sqrt(se2)


@dataclass(frozen=True)
class Cut:
    """A reported change of one series: the new regime starts at event ``seq``, located where the
    regimes separate best (:meth:`SeriesTest._locate`); the test passed at ``test_seq``. ``before``
    (from event ``since``) and ``after`` are the increments either side, their effect of the sign
    of ``z``; made otherwise, it raises ValueError."""

    seq: int
    before: Block
    after: Block
    #: the test's statistic at ``test_seq``, where it crossed ``threshold``
    z: float
    threshold: float
    min_effect: float
    n_cuts: int
    check: int
    test_seq: int
    since: int = 0

    def __post_init__(self) -> None:
        if not abs(self.z) >= self.threshold or self.effect * self.z < 0:
            raise ValueError(f"a cut at {self.seq} must have passed the test (|z| = {abs(self.z):.4g} >= "
                             f"threshold {self.threshold:.4g}) with an effect of the sign of z")

    @property
    def effect(self) -> float:
        return self.after.mean - self.before.mean


class SeriesTest(Component):
    """The sequential two-sample test of one series; ``delta`` is its share of the stream's
    ``delta``, ``max_increments`` the window it looks back over.

    :meth:`add` folds in one block of increments (:class:`~streamxai.core.increments.Block`) and
    tests every bucket boundary of its :class:`~streamxai.core.change.window.SeriesWindow`; it returns
    the :class:`Cut` of a reported change (the window then keeps only the data after the cut) or
    None. Each check ``j`` spends ``delta / (2 j (1 + ln j)^2)`` over its cuts, so the probability
    of ever reporting a change without one is at most ``delta``; the statistic, the variance factor,
    the bound and absorption are specified in docs/pages/concepts/change-events.md (The series test)."""

    def __init__(self, delta: float, min_samples: int = 100, max_increments: int = 20_000,
                 buckets_per_level: int = 2):
        if not 0 < delta < 1:
            raise ValueError(f"delta={delta} must be in (0, 1)")
        if min_samples < 2:
            raise ValueError(f"min_samples={min_samples} must be >= 2")
        self.delta = delta
        self.min_samples = min_samples
        self.max_increments = max_increments
        self.buckets_per_level = buckets_per_level
        self._reset()

    def _reset(self) -> None:
        self.window = SeriesWindow(self.max_increments, self.buckets_per_level)
        self.checks = 0
        self.absorbed = 0  # changes absorbed (significant, below the minimum effect)
        #: (seq, window): the window as it was before the newest cut or absorption, which dropped
        #: its older buckets at event ``seq`` (see :meth:`window_at`)
        self._undropped: tuple[int, SeriesWindow] | None = None

    def window_at(self, seq: int) -> SeriesWindow:
        """The window to read the blocks that end before event ``seq`` from: the current one, or the
        one before a drop made by the check of a later block, so every series reads a report alike."""
        u = self._undropped
        return u[1] if u is not None and seq <= u[0] else self.window

    def _drop_before(self, i: int, seq: int) -> None:
        self._undropped = (seq, self.window.copy())
        self.window.drop_before(i)

    def restart(self, seq: int) -> None:
        """Forget the increments before the boundary nearest to event ``seq`` and start a new
        budget, as after a reported change."""
        w = self.window
        if not w.buckets:
            return
        i = w._nearest(seq, len(w.buckets))
        if i:
            self._drop_before(i, w.buckets[-1].seq_hi)
        self.checks = 0

    def add(self, seq_lo: int, seq_hi: int, block: Block, min_effect: float | Callable = 0.0,
            var_factor: float = 1.0, absorb: Callable[[Block, Block, int], bool] | None = None) -> Cut | None:
        """Fold in the block of the events ``seq_lo .. seq_hi`` and run one check.

        ``min_effect`` is a number or ``f(before, after, cut_seq) -> number`` (called only for
        significant cuts); ``var_factor`` the variance factor ``k`` of the increments (values below 1
        count as 1); ``absorb(before, after, cut_seq)``, asked for the most significant cut below the
        minimum effect when none is reported, whether to restart the window from it."""
        if block.n <= 0:
            return None
        w = self.window
        w.add(seq_lo, seq_hi, block)
        ms = self.min_samples
        pre = w.prefixes  # pre[i - 1]: the side before boundary i; the side after is the total minus it
        total = pre[-1]
        first = 1
        while first < len(pre) and pre[first - 1].n < ms:
            first += 1
        last = len(pre) - 1
        while last >= first and total.n - pre[last - 1].n < ms:
            last -= 1
        if last < first:
            return None
        self.checks += 1
        k = var_factor if var_factor > 1.0 else 1.0
        thr = threshold(self.delta, self.checks, last - first + 1)
        best = small = None
        for i in range(first, last + 1):
            a = pre[i - 1]
            b = total - a
            z = two_sample_z(a, b, k)
            if abs(z) < thr:
                continue
            eff = min_effect(a, b, w.buckets[i].seq_lo) if callable(min_effect) else min_effect
            if abs(b.mean - a.mean) < eff:
                if small is None or abs(z) > abs(small[1]):
                    small = (i, z)
                continue
            if best is None or abs(z) > abs(best[1]):
                best = (i, z, eff)
        if best is None:
            if small is not None and absorb is not None:
                i = small[0]
                if absorb(w.before(i), total - w.before(i), w.buckets[i].seq_lo):
                    self._drop_before(i, seq_hi)
                    self.checks = 0
                    self.absorbed += 1
            return None
        i, z, eff = best
        tested = w.buckets[i].seq_lo
        i = self._locate(i, eff, z)
        a = w.before(i)
        cut = Cut(w.buckets[i].seq_lo, a, total - a, z, thr, eff, last - first + 1, self.checks, tested,
                  w.buckets[0].seq_lo)
        self._drop_before(i, seq_hi)
        self.checks = 0
        return cut

    def _locate(self, i: int, eff: float, z: float) -> int:
        """Where the new regime began: among the boundaries whose means differ by at least
        ``eff`` in the direction of ``z``, the one with the largest pooled statistic, sides down to
        ``min_samples // 4``: the alarm needed ``min_samples`` a side, and would otherwise cut too early."""
        w = self.window
        lo = max(2, self.min_samples // 4)
        total = w.total
        best_z, best_i = abs(two_sample_z(w.before(i), total - w.before(i), pooled_only=True)), i
        for j in range(1, len(w.buckets)):
            a = w.before(j)
            b = total - a
            if a.n >= lo and b.n >= lo and abs(b.mean - a.mean) >= eff and (b.mean - a.mean) * z > 0:
                zj = abs(two_sample_z(a, b, pooled_only=True))
                if zj > best_z:
                    best_z, best_i = zj, j
        return best_i
