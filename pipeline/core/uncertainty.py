"""Standard errors of exponentially smoothed estimates whose increments reuse a reservoir.

Every explainer publishes ``phi_t = sum_s w_s Delta_s``: an exponential smoothing of
per-event increments ``Delta_s`` (weights ``w_s = a (1 - a)^(t - s)``, the first increment
weighted ``(1 - a)^(t - t0)`` when the smoothing starts at it). :class:`SmoothedStderr`
tracks, per feature, what its standard error needs:

- ``W2 = sum_s w_s^2``, exactly, by ``W2 <- (1 - a)^2 W2 + a^2`` (``a / (2 - a)`` in the
  stationary limit: the factor of Theorem 3.2 of the iSAGE paper, Theorem 3.4 of iPDP);
- the variance ``sigma^2`` of the increments, exponentially weighted at rate ``a`` (a running
  mean until ``1 / a`` increments are in), so it follows the current model as ``phi`` does.

If the increments were independent, ``Var[phi_t] = W2 sigma^2``. They are not, when every
increment draws its ``m`` donors (iPFI's perturbation values, iSAGE's imputations) from a
reservoir of ``L`` stored observations that changes one slot per stored event: the mean
increment given the reservoir, ``mu(R)``, is then itself random, with variance about
``m^2 zeta / L``, where ``zeta`` is the covariance of two increments that share one donor;
and since each slot survives about ``L`` events, ``mu(R_t)`` is correlated over time like an
AR(1) process with ``rho = (1 - q)^u`` (``u`` stored events per explained event, ``q`` the
probability that a stored event replaces a given slot: ``1/L`` for the geometric reservoir,
``1/n`` for the uniform one after ``n`` events -- it freezes, and its floor stays). Summing
the smoothed AR(1) covariances gives

    Var[phi_t] = W2 (sigma^2 + m^2 zeta / L * 2 c rho / (1 - c rho)),   c = 1 - a,

about ``W2 (sigma^2 + 2 m^2 zeta / (1 + a L))``: a correction that matters when ``a L`` is
small and donors carry much of the increment's variation. ``zeta`` is estimated from the
increments themselves: each slot keeps, per feature, the sum and count of the increments
that used its current observation; a new increment adds its product with that sum to an
exponentially weighted pair sum, and ``zeta = pair mean - mean^2`` (clipped at 0). A slot
whose observation was replaced (neither the same object nor equal to it) starts afresh. ``L`` is the reservoir's current length.

What the bounds do not cover: the smoothing's start-up bias (``(1 - a)^n phi`` for a zero
start: publish after ``n >= 5 / a``), drift (the bound is for the current model's value
under stationarity), and any bias of the estimator itself (iSAGE with cross-entropy: see
``jensen_gap``).

>>> import random
>>> se = SmoothedStderr(["a"], alpha=0.01, start="zero")
>>> gen = random.Random(0)
>>> for _ in range(5000):
...     se.add_increments([gen.gauss(0.0, 2.0)])
>>> round(se.stderr("a"), 2), round(2.0 * (0.01 / 1.99) ** 0.5, 2)  # sigma sqrt(a / (2 - a))
(0.14, 0.14)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .base import Component

__all__ = ["SmoothedStderr"]

STARTS = ("zero", "first")


class SmoothedStderr(Component):
    """Running variance of per-feature increments and the standard error of their smoothing.

    ``features`` in the order increments are given; ``alpha`` the smoothing rate of the
    estimate; ``start="zero"`` for ``phi_0 = 0`` (iSAGE, iPDP before debiasing) or
    ``"first"`` for ``phi_t0 = Delta_t0`` (iPFI). Call :meth:`add_increments` once per
    explained event (one increment per feature, in order) and, when the increments drew
    donors from a reservoir, :meth:`add_donors` for the slots they used.
    """

    def __init__(self, features: Sequence[str], alpha: float, start: str = "zero"):
        if start not in STARTS:
            raise ValueError(f"start={start!r} is not one of {STARTS}")
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha={alpha} must be in (0, 1]")
        self.features = features
        self.alpha = alpha
        self.start = start
        self._reset()

    def _reset(self) -> None:
        self._names = list(self.features)
        self._index = {f: i for i, f in enumerate(self._names)}
        d = len(self._names)
        self.n = 0
        self._w2 = 0.0
        self._mean = [0.0] * d
        self._var = [0.0] * d
        # reservoir reuse: per slot the stored observation (by identity), per-feature sums
        # and counts of the increments that used it; exponentially weighted pair sums
        self._slot_item: list[Any] = []
        self._slot_sum: list[list[float]] = []
        self._slot_cnt: list[list[int]] = []
        self._pair_sum = [0.0] * d
        self._pair_cnt = [0.0] * d
        self._donors = 0  # m: donors per increment
        self._size = 0  # L: reservoir length at the last event
        self._updates = 1.0  # u: stored events per explained event
        self._replace = 0.0  # probability that a stored event replaces a given slot

    # updates --------------------------------------------------------------------
    def add_increments(self, deltas: Sequence[float]) -> None:
        """One explained event: the increment of every feature, in ``features`` order."""
        a = self.alpha
        self.n += 1
        n = self.n
        if n == 1 and self.start == "first":
            self._w2 = 1.0
        else:
            c = 1.0 - a
            self._w2 = c * c * self._w2 + a * a
        r = a if n * a >= 1.0 else 1.0 / n  # running mean until 1 / a increments are in
        keep = 1.0 - r
        mean = self._mean
        var = self._var
        for i, x in enumerate(deltas):
            dx = x - mean[i]
            mean[i] += r * dx
            var[i] = keep * (var[i] + r * dx * dx)
        if self._donors:
            ps = self._pair_sum
            pc = self._pair_cnt
            for i in range(len(ps)):
                ps[i] *= keep
                pc[i] *= keep

    def add_donors(
        self, items: Sequence[Any], slots: Sequence[Any], deltas: Sequence[float], updates: float = 1.0,
        replace_rate: float | None = None,
    ) -> None:
        """The increments ``deltas`` (feature order) of this event used the stored
        observations ``items[k]``: ``slots`` lists the ``k`` shared by all features (iSAGE's
        ``m`` donors), or one list per feature (iPFI's ``M`` draws per feature).
        ``updates``: stored events per explained event (1 without a budget);
        ``replace_rate``: the probability that a stored event replaces a given slot (``1/L``
        for a geometric reservoir, the default; ``1/n`` for a full uniform one)."""
        size = len(items)
        d = len(self._names)
        if len(self._slot_item) < size:
            grow = size - len(self._slot_item)
            self._slot_item += [None] * grow
            self._slot_sum += [[0.0] * d for _ in range(grow)]
            self._slot_cnt += [[0] * d for _ in range(grow)]
        shared = not slots or isinstance(slots[0], int)
        per_feature = [slots] * d if shared else slots
        self._donors = len(per_feature[0])
        self._size = size
        self._updates = updates
        self._replace = 1.0 / size if replace_rate is None else replace_rate
        slot_item, slot_sum, slot_cnt = self._slot_item, self._slot_sum, self._slot_cnt
        ps, pc = self._pair_sum, self._pair_cnt
        # a slot whose observation was replaced starts afresh
        for used in ([slots] if shared else per_feature):
            for k in used:
                item = items[k]
                if slot_item[k] is not item and slot_item[k] != item:
                    slot_item[k] = item
                    slot_sum[k] = [0.0] * d
                    slot_cnt[k] = [0] * d
        for i, used in enumerate(per_feature):  # products with earlier users first
            x = deltas[i]
            for k in used:
                c = slot_cnt[k][i]
                if c:
                    ps[i] += x * slot_sum[k][i]
                    pc[i] += c
        for i, used in enumerate(per_feature):  # then this event joins them
            x = deltas[i]
            for k in used:
                slot_sum[k][i] += x
                slot_cnt[k][i] += 1

    # results --------------------------------------------------------------------
    def increment_variance(self, feature: str) -> float:
        """The (exponentially weighted) variance of the feature's increments."""
        return self._var[self._index[feature]]

    def donor_covariance(self, feature: str) -> float:
        """``zeta``: covariance of two increments sharing one donor (0 if unknown or < 0)."""
        i = self._index[feature]
        if self._pair_cnt[i] <= 0.0:
            return 0.0
        return max(0.0, self._pair_sum[i] / self._pair_cnt[i] - self._mean[i] ** 2)

    def stderr(self, feature: str) -> float:
        """Standard error of the smoothed estimate of ``feature`` (0.0 before any increment)."""
        i = self._index[feature]
        if self.n == 0:
            return 0.0
        var = self._var[i]
        if self._donors and self._size > 1:
            zeta = self.donor_covariance(feature)
            if zeta > 0.0:
                c = 1.0 - self.alpha
                rho = (1.0 - self._replace) ** self._updates
                var += self._donors ** 2 * zeta / self._size * 2.0 * c * rho / (1.0 - c * rho)
        return math.sqrt(self._w2 * var)

    def stderrs(self) -> dict[str, float]:
        return {f: self.stderr(f) for f in self._names}
