"""Change detection on an explanation's per-event increments, with a bounded false-alarm rate.

What is tested. Each explainer publishes, per feature, a smoothed value and the *block* of
per-event increments folded in since its previous message: ``(n, mean, m2)`` (count, mean,
sum of squared deviations). For a fixed model the increments of different events are nearly
independent samples of the current explanation, unlike consecutive smoothed values, which
share almost all their weight. A :class:`SeriesWindow` keeps a series' recent blocks in an
exponential histogram (ADWIN's bucket scheme over blocks: at most ``buckets_per_level``
buckets of each size, sizes doubling into the past), so memory is ``O(log window)`` and the
candidate cuts are the bucket boundaries: fine near the present, coarse in the past.

The statistic. At a cut, ``Z = (mean_after - mean_before) / se`` with
``se^2 = max(v_pool (1/n0 + 1/n1), v0/n0 + v1/n1)``: the larger of the pooled two-sample and
Welch standard errors, each side's variance from its own increments (``m2 / (n - 1)``). The
series' own spread is the unit, so multiplying every increment by ``c > 0`` leaves every
``Z`` unchanged: the same ``delta`` means the same for 0-1 loss, Brier, cross-entropy or a
regression target of any scale. The max of both errors keeps one side with (nearly) no
variance (a rarely used feature) and one huge outlier from making a large ``Z``.

The bound (derived, not tuned). A stream has ``n_series`` series and gets ``delta``:
``alpha = delta / n_series`` per series. The ``j``-th check of a series since its last reset
spends ``alpha_j = alpha / (2 j (1 + ln j)^2)``; ``sum_j alpha_j <= alpha`` because
``1/(j (1 + ln j)^2)`` is decreasing with ``integral_1^inf = 1`` (so the sum is at most
``1 + 1``). A check tests ``C_j`` cuts, each two-sided at ``alpha_j / C_j``:
``threshold = z(1 - alpha_j / (2 C_j))`` of the standard normal. By the union bound over
cuts, checks and series, the probability that a stream with no change ever raises a change
event is at most ``delta`` -- over an unbounded stream -- as far as the Gaussian
approximation of means of at least ``min_samples`` increments holds (the benchmark measures
the real rate). After a reported change a series keeps only the data after the cut and starts
a new budget. The threshold grows like ``sqrt(2 ln j)``: about 5.2 at the 10th check and 6.9
at the 10,000th for 27 series and ``delta = 0.01``.

Practical significance. A significant cut is reported only if ``|mean_after - mean_before|
>= min_effect``, given by the caller (:mod:`pipeline.core.change_episodes` takes it relative
to the largest importance of the stream's explainer). A significant but smaller change is
not reported and not cut: the window keeps sliding, so a slow drift is reported once its
accumulated size exceeds ``min_effect``.

>>> import random
>>> rng = random.Random(3)
>>> det = SeriesDetector(alpha=0.001, min_samples=50)
>>> found = []
>>> for t in range(400):                       # blocks of 10 increments; +0.3 from event 2000
...     level = 0.1 if t < 200 else 0.4
...     xs = [level + rng.gauss(0, 0.3) for _ in range(10)]
...     m = sum(xs) / 10
...     cut = det.add(10 * t, 10 * t + 9, 10, m, sum((x - m) ** 2 for x in xs), min_effect=0.1)
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

from .base import Component
from .increments import Block

__all__ = ["SeriesWindow", "SeriesDetector", "Cut", "Moments", "threshold"]

_STD_NORMAL = NormalDist()
#: two-sided 95% normal quantile, for the confidence intervals of the levels
Z95 = 1.959963984540054


#: count, mean and sum of squared deviations of some increments: the explainers' blocks
Moments = Block


def _merge(a, b) -> tuple[int, float, float]:
    """Chan et al.'s merge of two ``(n, mean, m2)`` (numerically stable for any offset)."""
    na, nb = a[0], b[0]
    n = na + nb
    if n == 0:
        return 0, 0.0, 0.0
    d = b[1] - a[1]
    return n, a[1] + d * nb / n, a[2] + b[2] + d * d * na * nb / n


def threshold(alpha: float, j: int, n_cuts: int) -> float:
    """Two-sided normal threshold of one cut of the ``j``-th check (module docstring).

    >>> round(threshold(0.01 / 27, 10, 8), 2), round(threshold(0.01 / 27, 10_000, 30), 2)
    (5.19, 6.88)
    """
    if j < 1 or n_cuts < 1:
        raise ValueError(f"check j={j} and n_cuts={n_cuts} must be >= 1")
    alpha_j = alpha / (2.0 * j * (1.0 + math.log(j)) ** 2)
    return -_STD_NORMAL.inv_cdf(alpha_j / (2.0 * n_cuts))


class SeriesWindow(Component):
    """Blocks of one series in an exponential histogram; sums over bucket ranges.

    A bucket is ``[n, mean, m2, seq_lo, seq_hi, level]``; ``seq_lo`` is the first event
    it may cover, ``seq_hi`` the last. Older buckets are dropped once the window holds
    more than ``max_window`` increments.

    >>> w = SeriesWindow(max_window=100, buckets_per_level=2)
    >>> for t in range(6):
    ...     w.add(10 * t, 10 * t + 9, 10, float(t), 0.0)
    >>> [(b[0], b[3]) for b in w.buckets]         # sizes double into the past
    [(20, 0), (20, 20), (10, 40), (10, 50)]
    >>> w.total
    Block(n=60, mean=2.5, m2=175.0)
    """

    def __init__(self, max_window: int = 20_000, buckets_per_level: int = 2):
        if max_window < 1 or buckets_per_level < 2:
            raise ValueError(f"max_window={max_window} must be >= 1 and buckets_per_level={buckets_per_level} >= 2")
        self.max_window = max_window
        self.buckets_per_level = buckets_per_level
        self._reset()

    def _reset(self) -> None:
        self.buckets: list[list] = []
        #: ``_pre[i]``: ``(n, mean, m2)`` of ``buckets[: i + 1]``, kept up to date on every add
        self._pre: list[tuple[int, float, float]] = []

    @property
    def _total(self) -> tuple[int, float, float]:
        return self._pre[-1] if self._pre else (0, 0.0, 0.0)

    @property
    def total(self) -> Moments:
        return Moments(*self._total)

    @property
    def n(self) -> int:
        return self._pre[-1][0] if self._pre else 0

    def add(self, seq_lo: int, seq_hi: int, n: int, mean: float, m2: float) -> None:
        b, pre = self.buckets, self._pre
        b.append([n, mean, m2, seq_lo, seq_hi, 0])
        pre.append(_merge(self._total, b[-1]))
        # compress: levels fall from the oldest bucket to the newest, so each level is one run;
        # a run longer than M merges its two oldest buckets into one of the next level (the
        # cumulative sums of the other boundaries do not change: drop the merged-away one)
        M = self.buckets_per_level
        end, level = len(b) - 1, 0
        while True:
            j = end
            while j >= 0 and b[j][5] == level:
                j -= 1
            if end - j <= M:
                break
            k = j + 1
            x, y = b[k], b[k + 1]
            n_, mean_, m2_ = _merge(x, y)
            b[k : k + 2] = [[n_, mean_, m2_, x[3], y[4], level + 1]]
            del pre[k]
            end, level = k, level + 1
        if len(b) > 1 and pre[-1][0] - b[0][0] >= self.max_window:
            while len(b) > 1 and self.n - b[0][0] >= self.max_window:
                x = b.pop(0)
                pre[:] = [(c[0] - x[0], 0.0, 0.0) for c in pre[1:]]  # counts only, until rebuilt
            self._rebuild()

    def _rebuild(self) -> None:
        acc: tuple[int, float, float] = (0, 0.0, 0.0)
        self._pre = []
        for x in self.buckets:
            acc = _merge(acc, x)
            self._pre.append(acc)

    @staticmethod
    def _sum(buckets: list[list]) -> tuple[int, float, float]:
        acc: tuple[int, float, float] = (0, 0.0, 0.0)
        for x in buckets:
            acc = _merge(acc, x)
        return acc

    def prefix_suffix(self) -> tuple[list, list]:
        """``pre[i]`` / ``suf[i]``: ``(n, mean, m2)`` of ``buckets[:i]`` / ``buckets[i:]``.
        The prefixes are kept up to date; a suffix is the total minus its prefix."""
        k = len(self.buckets)
        tn, tmean, tm2 = self._total
        pre = [(0, 0.0, 0.0), *self._pre]
        suf = [(0, 0.0, 0.0)] * (k + 1)
        for i in range(k):
            na, ma, m2a = pre[i]
            nb = tn - na
            if na == 0:
                suf[i] = (tn, tmean, tm2)
                continue
            mb = (tn * tmean - na * ma) / nb
            d = mb - ma
            m2b = tm2 - m2a - d * d * na * nb / tn
            suf[i] = (nb, mb, m2b if m2b > 0.0 else 0.0)
        return pre, suf

    def cut_stats(self) -> list[tuple[int, Moments, Moments]]:
        """``(i, before, after)`` for every boundary ``i`` (``buckets[:i]`` | ``buckets[i:]``)."""
        pre, suf = self.prefix_suffix()
        return [(i, Moments(*pre[i]), Moments(*suf[i])) for i in range(1, len(self.buckets))]

    def before(self, upto: int) -> Moments:
        """The increments of blocks that end before event ``upto`` (only the newest bucket, a
        single block, can end later)."""
        b = self.buckets
        if b and b[-1][4] >= upto:
            return Moments(*self._pre[-2]) if len(b) > 1 else Moments(0, 0.0, 0.0)
        return self.total

    def split(self, seq: int, upto: int | None = None) -> tuple[Moments | None, Moments | None]:
        """Increments before and from the bucket boundary nearest to ``seq`` (None: empty side),
        of the blocks that end before event ``upto`` (default: all)."""
        b = self.buckets
        if b and upto is not None and b[-1][4] >= upto:
            b = b[:-1]
        if not b:
            return None, None
        i = min(range(len(b) + 1), key=lambda i: abs((b[i][3] if i < len(b) else b[-1][4] + 1) - seq))
        before, after = Moments(*self._sum(b[:i])), Moments(*self._sum(b[i:]))
        return (before if before.n else None), (after if after.n else None)

    def drop_before(self, i: int) -> None:
        del self.buckets[:i]
        self._rebuild()


@dataclass(frozen=True)
class Cut:
    """A reported change: the new regime starts at event ``seq``.

    What it promises: the two-sample test passed (``|z| >= threshold``) at the boundary
    ``test_seq`` where it was detected; the change is then located at ``seq``, the boundary
    that best separates the two regimes (``SeriesDetector._refine``), and ``before`` and
    ``after`` are the increments on either side of ``seq`` (their effect has the sign of ``z``).
    """

    seq: int
    before: Moments
    after: Moments
    #: the test's statistic at ``test_seq``, where it crossed ``threshold``
    z: float
    threshold: float
    min_effect: float
    n_cuts: int
    check: int
    test_seq: int

    def __post_init__(self) -> None:
        if not abs(self.z) >= self.threshold or (self.after.mean - self.before.mean) * self.z < 0:
            raise ValueError(f"a cut at {self.seq} must have passed the test (|z| = {abs(self.z):.4g} >= "
                             f"threshold {self.threshold:.4g}) with an effect of the sign of z")

    @property
    def effect(self) -> float:
        return self.after.mean - self.before.mean


class SeriesDetector(Component):
    """The sequential two-sample test of one series (module docstring); ``alpha`` is its share.

    ``add`` folds in one block and runs one check; it returns the :class:`Cut` of a reported
    change (the window then keeps only the data after the cut) or None.
    """

    def __init__(self, alpha: float, min_samples: int = 100, max_window: int = 20_000, buckets_per_level: int = 2):
        if not 0 < alpha < 1:
            raise ValueError(f"alpha={alpha} must be in (0, 1)")
        if min_samples < 2:
            raise ValueError(f"min_samples={min_samples} must be >= 2")
        self.alpha = alpha
        self.min_samples = min_samples
        self.max_window = max_window
        self.buckets_per_level = buckets_per_level
        self._reset()

    def _reset(self) -> None:
        self.window = SeriesWindow(self.max_window, self.buckets_per_level)
        self.checks = 0

    def add(
        self, seq_lo: int, seq_hi: int, n: int, mean: float, m2: float, min_effect: float | Callable = 0.0
    ) -> Cut | None:
        """Fold in a block and run one check; ``min_effect`` is a number or
        ``f(before, after) -> number`` (called only for significant cuts)."""
        if n <= 0:
            return None
        w = self.window
        w.add(seq_lo, seq_hi, n, mean, m2)
        ms = self.min_samples
        cum = w._pre  # cum[i - 1]: the side before boundary i; the side after is the total minus it
        tn, tmean, tm2 = cum[-1]
        first = 1
        while first < len(cum) and cum[first - 1][0] < ms:
            first += 1
        last = len(cum) - 1
        while last >= first and tn - cum[last - 1][0] < ms:
            last -= 1
        if last < first:
            return None
        self.checks += 1
        thr = threshold(self.alpha, self.checks, last - first + 1)
        best = None
        for i in range(first, last + 1):
            a = cum[i - 1]
            na, ma, m2a = a
            nb = tn - na
            mb = (tn * tmean - na * ma) / nb
            d = mb - ma
            m2b = tm2 - m2a - d * d * na * nb / tn
            if m2b < 0.0:
                m2b = 0.0
            # _z inlined (this loop runs on every check)
            pooled = (m2a + m2b) / (tn - 2 if tn > 2 else 1) * (1.0 / na + 1.0 / nb)
            welch = (m2a / (na - 1) if na > 1 else 0.0) / na + (m2b / (nb - 1) if nb > 1 else 0.0) / nb
            se2 = pooled if pooled > welch else welch
            if se2 > 0.0:
                if d * d <= thr * thr * se2:
                    continue
                z = d / math.sqrt(se2)
            elif d == 0.0:
                continue
            else:
                z = math.copysign(math.inf, d)
            b = (nb, mb, m2b)
            am, bm = Moments(*a), Moments(*b)
            eff = min_effect(am, bm) if callable(min_effect) else min_effect
            if abs(d) < eff:
                continue
            if best is None or abs(z) > abs(best[1]):
                best = (i, z, eff)
        if best is None:
            return None
        i, z, eff = best
        pre, suf = w.prefix_suffix()
        tested = w.buckets[i][3]
        i = self._refine(i, pre, suf, eff, z)
        a, b = Moments(*pre[i]), Moments(*suf[i])
        cut = Cut(w.buckets[i][3], a, b, z, thr, eff, last - first + 1, self.checks, tested)
        w.drop_before(i)
        self.checks = 0
        return cut

    def _refine(self, i: int, pre: list, suf: list, eff: float, z: float) -> int:
        """Where the new regime began: among the boundaries whose means differ by at least
        ``eff`` in the direction of ``z``, the one with the largest pooled two-sample statistic, sides down to
        ``min_samples // 4`` increments. The alarm needed ``min_samples`` on each side, so a
        change found soon after it happened would otherwise be cut too early (old data
        mixed into the new level)."""
        lo = max(2, self.min_samples // 4)
        best_z, best_i = abs(_z_pooled(pre[i], suf[i])), i
        for j in range(1, len(pre) - 1):
            a, b = pre[j], suf[j]
            if a[0] >= lo and b[0] >= lo and abs(b[1] - a[1]) >= eff and (b[1] - a[1]) * z > 0:
                zj = abs(_z_pooled(a, b))
                if zj > best_z:
                    best_z, best_i = zj, j
        return best_i


def _z_pooled(a, b) -> float:
    d = b[1] - a[1]
    se2 = (a[2] + b[2]) / max(a[0] + b[0] - 2, 1) * (1.0 / a[0] + 1.0 / b[0])
    if se2 <= 0.0:
        return 0.0 if d == 0.0 else math.copysign(math.inf, d)
    return d / math.sqrt(se2)


def _z(a, b) -> float:
    """Standardised difference of the means of two ``(n, mean, m2)`` (module docstring)."""
    na, nb = a[0], b[0]
    d = b[1] - a[1]
    pooled = (a[2] + b[2]) / max(na + nb - 2, 1) * (1.0 / na + 1.0 / nb)
    welch = (a[2] / (na - 1) if na > 1 else 0.0) / na + (b[2] / (nb - 1) if nb > 1 else 0.0) / nb
    se2 = pooled if pooled > welch else welch
    if se2 <= 0.0:
        return 0.0 if d == 0.0 else math.copysign(math.inf, d)
    return d / math.sqrt(se2)
