"""Standard errors of exponentially smoothed estimates whose increments reuse a reservoir.

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

import numpy as np

from .base import Component

__all__ = ["SmoothedStderr", "PairSums", "SlotUse"]

STARTS = ("zero", "first")
_BUFFER = 64  # increments folded into the running moments every this many events
_EVERY_SLOT = 4  # the reuse statistic watches the slots whose index is a multiple of this
_PAIRS_SLOWER = 32  # the reuse statistics forget this many times more slowly than the estimate
#: the block tables of each smoothing rate (SmoothedStderr._block), shared by every tracker of it
_BLOCKS: dict[float, dict[int, tuple]] = {}


def _column_sums(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x`` summed row after row, so each column's result does not depend on the other
    columns (a subset tracker gives the full tracker's values); one column is accumulated, as
    ``np.add.reduce`` would add it pairwise."""
    y = w[:, None] * x
    if y.shape[1] < 2:
        return np.add.accumulate(y, axis=0)[-1]
    return np.add.reduce(y, axis=0)


def _zeros_shared(values: list) -> list:
    """``values`` with each ``0.0`` the same float object, as ``[0.0] * d`` made them:
    unpickling makes one float per element, which would multiply a young stream's memory."""
    return [_ZERO if type(v) is float and v == 0.0 and math.copysign(1.0, v) > 0 else v for v in values]


_ZERO = 0.0


def _set_slots(obj: Any, state: tuple[Any, dict[str, Any]]) -> None:
    """Set ``obj``'s slots from the state pickle gives a class with ``__slots__`` (``(None, slots)``)."""
    for name, value in state[1].items():
        setattr(obj, name, value)


class PairSums:
    """Exponentially weighted sums over pairs of increments, per feature: of the products
    (``xy``), of each element (``x``: the later, ``y``: the earlier) and the count (``n``).

    >>> p = PairSums(1)
    >>> p.add(0, 2.0, 3.0, 1.0); p.add(0, 4.0, 1.0, 1.0)
    >>> p.covariance().tolist()   # pairs (2, 3) and (4, 1): E[xy] - E[x] E[y] = 5 - 3 * 2
    [-1.0]
    """

    __slots__ = ("xy", "x", "y", "n")

    def __init__(self, d: int):
        self.xy = [0.0] * d
        self.x = [0.0] * d
        self.y = [0.0] * d
        self.n = [0.0] * d

    def __setstate__(self, state: tuple[Any, dict[str, Any]]) -> None:
        _set_slots(self, state)
        for name in self.__slots__:
            setattr(self, name, _zeros_shared(getattr(self, name)))

    def add(self, i: int, x: float, y_sum: float, count: float) -> None:
        """Feature ``i``: the later element ``x`` paired with ``count`` earlier ones summing to ``y_sum``."""
        self.xy[i] += x * y_sum
        self.x[i] += x * count
        self.y[i] += y_sum
        self.n[i] += count

    def decay(self, factor: float) -> None:
        self.xy = [v * factor for v in self.xy]
        self.x = [v * factor for v in self.x]
        self.y = [v * factor for v in self.y]
        self.n = [v * factor for v in self.n]

    def covariance(self) -> np.ndarray:
        """Covariance over the pairs, per feature (0 where there are none); computed in Python
        floats (the same IEEE operations as numpy's, cheaper for a few features)."""
        return np.array([xy / n - (x / n) * (y / n) if n > 0.0 else 0.0
                         for xy, x, y, n in zip(self.xy, self.x, self.y, self.n, strict=True)], dtype=float)


class SlotUse:
    """A watched reservoir slot: its observation, per feature the count and sum of the increments
    that drew it, and its own event's increments (None if that event was not explained)."""

    __slots__ = ("observation", "counts", "sums", "own")

    def __init__(self, observation: Any, d: int, own: tuple | None = None):
        self.observation = observation
        self.counts = [0] * d
        self.sums = [0.0] * d
        self.own = own

    def __setstate__(self, state: tuple[Any, dict[str, Any]]) -> None:
        _set_slots(self, state)
        self.sums = _zeros_shared(self.sums)

    def holds(self, item: Any) -> bool:
        obs = self.observation
        return obs is item or obs == item


class SmoothedStderr(Component):
    """Running variance of per-feature increments and the standard error of their smoothing.

    ``features`` in the order increments are given; ``alpha`` the smoothing rate of the
    estimate; ``start="zero"`` for ``phi_0 = 0`` (iSAGE, iPDP before debiasing) or
    ``"first"`` for ``phi_t0 = Delta_t0`` (iPFI). Call :meth:`add_increments` once per
    explained event (one increment per feature, in order) and, when the increments drew
    donors from a reservoir, :meth:`add_donors` for the slots they used.

    The standard error is ``sqrt(W2 (sigma^2 + reuse))``, derived in
    docs/pages/concepts/algorithms.md (Standard errors). Increments are buffered and folded in
    every 64 events; a query reads a copy of the moments, so it never changes later results."""

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
        # exponentially weighted sums of 1, x, x^2 (weights (1 - a)^age) and of the squared
        # weights; increments wait in a buffer and are folded in blocks
        self._mom = np.zeros((3, d))
        self._w2sum = 0.0
        # the same at the reuse statistics' slower rate, for the variance factors
        self._slow = np.zeros((3, d))
        self._slow_w2sum = 0.0
        self._buffer = np.empty((_BUFFER, d))  # the increments not folded in yet: rows [0, _held)
        self._held = 0
        # reservoir reuse, on the slots whose index is a multiple of _EVERY_SLOT
        self._slots: dict[int, SlotUse] = {}
        # pairs of increments that drew the same observation
        self._pairs = PairSums(d)
        # pairs (later increment that drew an observation, the observation's own increment)
        self._owns = PairSums(d)
        self._uses = [0.0] * d  # uses of watched slots
        self._donors = 0  # m: donors per increment
        self._size = 0  # L: reservoir length at the last event
        self._updates = 1.0  # u: stored events per explained event
        self._replace = 0.0  # probability that a stored event replaces a given slot
        self._cached: tuple[np.ndarray, np.ndarray] | None = None  # _report() since the last update
        self._cached_moments: tuple[np.ndarray, np.ndarray] | None = None  # _moments() since the last increments
        self._cached_cov: tuple[np.ndarray, np.ndarray] | None = None  # zeta and zeta' since the last update
        self._powers: np.ndarray | None = None  # per rate, (1 - r)^k, k = _BUFFER - 1 .. 0: a block's weights
        self._blocks: dict[int, tuple] = _blocks_of(self.alpha)  # _block(b), per b (shared, read-only)

    # updates --------------------------------------------------------------------
    def add_increments(self, deltas: Sequence[float]) -> None:
        """One explained event: the increment of every feature, in ``features`` order
        (copied: the caller may reuse its list)."""
        row = self.next_row()
        row[:] = deltas

    def next_row(self) -> np.ndarray:
        """One explained event whose increments the caller writes into the returned row (a
        view of the buffer, every feature's, in ``features`` order) before anything else."""
        if self._held >= _BUFFER:  # before appending: add_donors may follow
            self._flush()
        self.n += 1
        row = self._buffer[self._held]
        self._held += 1
        self._cached = self._cached_moments = self._cached_cov = None
        return row

    def _flush(self) -> None:
        b = self._held
        if not b:
            return
        mom = np.array((self._mom, self._slow))
        self._w2sum, self._slow_w2sum = self._fold(mom, [self._w2sum, self._slow_w2sum], self._buffer[:b])
        self._mom, self._slow = mom[0].copy(), mom[1].copy()
        slow = (1.0 - self.alpha / _PAIRS_SLOWER) ** b
        self._pairs.decay(slow)
        self._owns.decay(slow)
        self._uses = [v * slow for v in self._uses]
        self._held = 0

    def add_donors(
        self, items: Sequence[Any], slots: Sequence[Any], deltas: Sequence[float],
        updates: float = 1.0, replace_rate: float | None = None, per_feature: bool = False,
    ) -> None:
        """The increments ``deltas`` of this event used the stored observations ``items[k]``:
        ``slots`` lists the ``k`` shared by all features (iSAGE's donors) or, with ``per_feature``, one
        ``k`` or list of ``k`` per feature (iPFI's draws); ``updates``: stored events per explained
        event; ``replace_rate``: the chance a stored event replaces a given slot (default ``1/L``)."""
        self._cached = self._cached_cov = None
        self._size = len(items)
        self._updates = updates
        self._replace = 1.0 / len(items) if replace_rate is None else replace_rate
        if not per_feature:
            self._donors = len(slots)
        elif slots and isinstance(slots[0], int):
            self._donors = 1
        else:
            self._donors = len(slots[0]) if slots else 0
        use = self._use
        if not per_feature:
            for k in slots:
                if not k % _EVERY_SLOT:
                    use(k, items[k], deltas, range(len(deltas)))
        elif slots and isinstance(slots[0], int):
            for i, k in enumerate(slots):
                if not k % _EVERY_SLOT:
                    use(k, items[k], deltas, (i,))
        else:
            for i, ks in enumerate(slots):
                for k in ks:
                    if not k % _EVERY_SLOT:
                        use(k, items[k], deltas, (i,))

    def stored(self, slot: int | None, items: Sequence[Any], deltas: Sequence[float] | None) -> None:
        """The event just explained (increments ``deltas``, or ``None`` if it was only
        observed) was stored in ``items[slot]`` (``slot`` ``None``: not stored)."""
        if slot is None or slot % _EVERY_SLOT:
            return
        self._cached = self._cached_cov = None
        self._slots[slot] = SlotUse(items[slot], len(self._names), None if deltas is None else tuple(deltas))

    def _use(self, k: int, item: Any, deltas: Sequence[float], feats: Sequence[int]) -> None:
        st = self._slots.get(k)
        if st is None or not st.holds(item):  # an observation not seen stored
            st = self._slots[k] = SlotUse(item, len(self._names))
        cnt, tot, own = st.counts, st.sums, st.own
        pairs = self._pairs
        pxy, px, py, pn = pairs.xy, pairs.x, pairs.y, pairs.n  # PairSums.add, inlined (the same operations)
        uses = self._uses
        for i in feats:
            x = deltas[i]
            c = cnt[i]
            if c:  # pairs with the earlier users of this observation
                t = tot[i]
                pxy[i] += x * t
                px[i] += x * c
                py[i] += t
                pn[i] += c
            tot[i] += x
            cnt[i] = c + 1
            uses[i] += 1.0
        if own is not None:  # the pairs with the observation's own event (count 1.0 each)
            owns = self._owns
            oxy, ox, oy, on = owns.xy, owns.x, owns.y, owns.n
            for i in feats:
                x, t = deltas[i], own[i]
                oxy[i] += x * t
                ox[i] += x  # x * 1.0
                oy[i] += t
                on[i] += 1.0

    # results --------------------------------------------------------------------
    def _moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the increments, the buffer included (nothing is changed), at
        either rate, as rows ``[estimate's, slow]`` of 2-row arrays, from one pass over the buffer."""
        d = len(self._names)
        mom = np.array((self._mom, self._slow))  # a copy, one row per rate
        w2sums = [self._w2sum, self._slow_w2sum]
        if self._held:
            w2sums = self._fold(mom, w2sums, self._buffer[:self._held])
        w0 = mom[:, 0]
        if not d or w0[0, 0] == 0.0:  # (every feature has the same weights; every rate is 0 before any increment)
            z = np.zeros((2, d))
            return z, z.copy()
        mean = mom[:, 1] / w0
        var = np.maximum(mom[:, 2] / w0 - mean * mean, 0.0)
        # the weighted variance's small-sample correction, var * n_eff / (n_eff - 1) where
        # n_eff > 1 (else var * 1.0 / 1.0: var itself, bit for bit)
        num, den = [], []
        for w0s, w2sum in zip(w0[:, 0].tolist(), w2sums, strict=True):
            n_eff = w0s * w0s / w2sum if w2sum > 0 else 1.0
            num.append([n_eff if n_eff > 1.0 else 1.0])
            den.append([n_eff - 1.0 if n_eff > 1.0 else 1.0])
        var = var * np.array(num) / np.array(den)
        return mean, var

    def _fold(self, mom: np.ndarray, w2sums: list, x: np.ndarray) -> list:
        """Fold the increments ``x`` (rows, oldest first) into the moments ``mom`` (in place; one
        ``(3, d)`` block per rate: the estimate's, the reuse statistics'); returns each rate's
        squared weights' sum. Each rate's operations are elementwise those of folding it alone."""
        w, cbs, wsums, w2 = self._block(len(x))
        mom *= np.array(cbs)[:, None, None]
        mom[:, 0] += np.array(wsums)[:, None]
        xx = np.concatenate((x, x * x), axis=1)  # both moments' columns: one column sum per rate
        for i, wr in enumerate(w):
            mom[i, 1:] += _column_sums(wr, xx).reshape(2, -1)
        return [cb * cb * s + v for cb, s, v in zip(cbs, w2sums, w2, strict=True)]

    def _weights(self) -> np.ndarray:
        """Per rate (the estimate's, the slow one) ``(1 - r)^k`` for ``k = _BUFFER - 1 .. 0``: a
        block's weights, its newest increment's last."""
        if self._powers is None:
            self._powers = _powers_of(self.alpha)
        return self._powers

    def _block(self, b: int) -> tuple[np.ndarray, list[float], list[float], list[float]]:
        """A block of ``b`` increments at both rates: the weights (2, b), and per rate ``c^b``,
        the weights' sum and the squared weights' sum; kept per ``b``."""
        block = self._blocks.get(b)
        if block is None:
            w = self._weights()[[0, 1], _BUFFER - b:]
            cbs = [(1.0 - self.alpha) ** b, (1.0 - self.alpha / _PAIRS_SLOWER) ** b]
            w.setflags(write=False)
            block = self._blocks[b] = (w, cbs, np.add.reduce(w, axis=1).tolist(), np.add.reduce(w * w, axis=1).tolist())
        return block

    def _weights2(self) -> float:
        """``sum_s w_s^2`` of the smoothing after ``n`` increments."""
        a = self.alpha
        c2 = (1.0 - a) ** 2
        if self.start == "zero":
            return a / (2.0 - a) * (1.0 - c2**self.n)
        k = self.n - 1  # the first increment has weight (1 - a)^k
        return c2**k + a / (2.0 - a) * (1.0 - c2**k)

    def _own_cov(self) -> np.ndarray:
        """``zeta'``: covariance of an increment with the increment of the event its donor
        came from, per donor use (uses whose donor was never explained count as 0)."""
        owns = self._owns
        return np.array([(n / u if u > 0.0 else 0.0) * c
                         for u, n, c in zip(self._uses, owns.n, owns.covariance().tolist(), strict=True)], dtype=float)

    def _reuse(self, var: np.ndarray, c: float) -> np.ndarray:
        """The reuse correction of the variance ``var`` for a smoothing that keeps ``c`` of its weight
        per event (1: a long mean), each covariance clipped to ``[-var, var]``, the total at least ``-3/4 var``."""
        if not (self._donors and self._size > 1):
            return np.zeros_like(var)
        rho = (1.0 - self._replace) ** self._updates
        m = self._donors
        if self._cached_cov is None:
            self._cached_cov = (self._pairs.covariance(), self._own_cov())  # zeta and zeta'
        # clipped to [-var, var]: np.clip's operations without its wrappers' cost
        zeta, own_cov = (np.minimum(np.maximum(cov, -var), var) for cov in self._cached_cov)
        extra = m * m * zeta / self._size * 2.0 * c * rho / (1.0 - c * rho)
        extra = extra + 2.0 * m * own_cov
        return np.maximum(extra, -0.75 * var)

    def stderrs(self) -> dict[str, float]:
        """Standard error of the smoothed estimate of every feature (0.0 before any increment)."""
        return dict(zip(self._names, self.stderr_array().tolist(), strict=True))

    def stderr_array(self) -> np.ndarray:
        """:meth:`stderrs` as an array in ``features`` order (do not change it: it is kept
        until the next update)."""
        return self._report()[0]

    def _report(self) -> tuple[np.ndarray, np.ndarray]:
        """The standard errors and the variance factors, as arrays in ``features`` order, kept
        until the next update, computed together from one pass over the buffer."""
        if self._cached is None:
            d = len(self._names)
            if self.n == 0:
                self._cached = (np.zeros(d), np.ones(d))
            else:
                if self._cached_moments is None:
                    self._cached_moments = self._moments()
                var = self._cached_moments[1]
                reuse = self._reuse(var, np.array([[1.0 - self.alpha], [1.0]]))
                se = np.sqrt(self._weights2() * (var[0] + reuse[0]))
                slow = var[1]  # the factors' variance: over the reuse statistics' own horizon
                positive = slow > 0.0
                k = np.where(positive, 1.0 + reuse[1] / np.where(positive, slow, 1.0), 1.0)
                self._cached = (se, k)
        return self._cached

    def variance_factors(self) -> dict[str, float]:
        """``k`` of every feature: ``1 + reuse / sigma^2`` in the limit ``c -> 1``, ``sigma^2`` at
        the reuse statistics' rate (docs/pages/concepts/algorithms.md); 1.0 without donors or variance."""
        return dict(zip(self._names, self._report()[1].tolist(), strict=True))

    def stderr(self, feature: str) -> float:
        """Standard error of the smoothed estimate of ``feature`` (see :meth:`stderrs`)."""
        return self.stderrs()[feature]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_cached"] = state["_cached_moments"] = state["_cached_cov"] = state["_powers"] = None
        del state["_blocks"]  # a cache, made again (__setstate__): checkpoints keep their shape
        state["_buffer"] = self._buffer[:self._held].copy()  # only the rows held
        return state

    def __setstate__(self, state: dict) -> None:
        held = state["_buffer"]  # the rows held (__getstate__), back in a full-size buffer
        state["_held"] = len(held)
        state["_buffer"] = np.empty((_BUFFER, len(state["_names"])))
        state["_buffer"][:len(held)] = held
        state["_blocks"] = _blocks_of(state["alpha"])
        self.__dict__.update(state)


def _blocks_of(alpha: float) -> dict[int, tuple]:
    """The block tables of smoothing rate ``alpha`` (:meth:`SmoothedStderr._block`), one dict
    shared by every tracker of that rate; its arrays are read-only."""
    return _BLOCKS.setdefault(alpha, {})


_POWERS: dict[float, np.ndarray] = {}


def _powers_of(alpha: float) -> np.ndarray:
    """Per rate (``alpha``, ``alpha / _PAIRS_SLOWER``) ``(1 - r)^k`` for ``k = _BUFFER - 1 .. 0``,
    shared by every tracker of that rate (read-only)."""
    powers = _POWERS.get(alpha)
    if powers is None:
        ages = np.arange(_BUFFER - 1, -1, -1)
        powers = np.stack([(1.0 - alpha) ** ages, (1.0 - alpha / _PAIRS_SLOWER) ** ages])
        powers.setflags(write=False)
        powers = _POWERS.setdefault(alpha, powers)
    return powers
