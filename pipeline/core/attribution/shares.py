"""Routes' Shapley shares, gathered from a whole walk (or forest) and settled in a few batches.

A route of a tree walk hands over, per background point, the masks ``a`` and ``b`` and the
route's value (a constant, ``g(T)`` over the subsets of the features its leaves read, or the
naive Bayes votes that give ``g``). :class:`Shares` stacks routes of the same shape and settles
each stack at once in :meth:`Shares.finish`; every entry carries a ``scale`` (``1 / n`` times a
tree's weight in a forest): the shares are linear in ``g``."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from .coalitions import masks, shapley_weight, unanimity_shares

__all__ = ["Shares"]


class Shares:
    """The shares of ``d`` players, gathered route by route."""

    def __init__(self, d: int):
        self.d = d
        self.bits = np.int64(1) << np.arange(d, dtype=np.int64)
        self.phi = np.zeros(d)
        self.base = 0.0
        self.fx = 0.0
        self._constant: list[tuple] = []
        self._votes: dict[tuple[int, int], list[tuple]] = defaultdict(list)
        self._values: dict[int, list[tuple]] = defaultdict(list)
        self._spreads: list[tuple] = []

    def add_constant(self, g: float, a: np.ndarray, b: np.ndarray, scale: float) -> None:
        """A route whose value is ``g`` for every coalition that reaches it."""
        self._constant.append((np.full(len(a), g * scale), a, b))

    def add_constants(self, g: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Routes of constant values ``g`` (one per point, scaled already)."""
        self._constant.append((g, a, b))

    def add_values(self, g: np.ndarray, used: np.ndarray, a: np.ndarray, b: np.ndarray, scale: float) -> None:
        """A route whose value is ``g[point, T]`` over the subsets ``T`` of the players ``used``
        (indices, one row per point)."""
        self._values[used.shape[1]].append((g * scale, used, a, b))

    def add_votes(self, votes: np.ndarray, diff: np.ndarray, used: np.ndarray, a: np.ndarray, b: np.ndarray,
                  scale: float | np.ndarray) -> None:
        """A lone naive Bayes leaf, explained on its class ``t``: ``votes[c, point]`` is
        ``v_c - v_t`` of each other class ``c`` at ``T = {}``, ``diff[c, point, j]`` what player
        ``used[point, j]`` adds to it; ``g(T) = 1 / (1 + sum_c exp(votes + diff . T))``."""
        self._votes[(diff.shape[0], diff.shape[2])].append((votes, diff, used, a, b,
                                                            np.broadcast_to(scale, (len(a),))))

    def add(self, phi: np.ndarray, base: float, fx: float, scale: float) -> None:
        """Shares settled elsewhere (point by point)."""
        self.phi += phi * scale
        self.base += base * scale
        self.fx += fx * scale

    def finish(self) -> tuple[np.ndarray, float, float]:
        """``(values, base, f(x))``, all stacks settled."""
        if self._constant:
            g, a, b = (np.concatenate(c) for c in zip(*self._constant, strict=True))
            pa, pb = np.bitwise_count(a), np.bitwise_count(b)
            t_in, t_out = _unanimity_table(self.d)
            self._spread(a, t_in[pa, pb] * g)
            self._spread(b, t_out[pa, pb] * g)
            self.base += float(g[a == 0].sum())
            self.fx += float(g[b == 0].sum())
            self._constant = []
        for (_, k), stack in self._votes.items():
            votes, diff, used, a, b, scale = stack[0] if len(stack) == 1 else (
                np.concatenate(c, axis=1 if i < 2 else 0) for i, c in enumerate(zip(*stack, strict=True)))
            rel = _exp_votes(votes, diff, k)  # (classes, subsets, points)
            g = rel[0] if len(rel) == 1 else rel.sum(axis=0)
            g += 1.0
            np.reciprocal(g, out=g)
            self._settle(g, used, a, b, k, scale)
        self._votes.clear()
        for k, stack in self._values.items():
            g, used, a, b = stack[0] if len(stack) == 1 else (np.concatenate(c) for c in zip(*stack, strict=True))
            self._settle(g.T, used, a, b, k, None)
        self._values.clear()
        self._spread_all()
        return self.phi, self.base, self.fx

    def _settle(self, g: np.ndarray, used: np.ndarray, a: np.ndarray, b: np.ndarray, k: int,
                scale: np.ndarray | None) -> None:
        """:func:`~.coalitions.subset_shares` for every point, ``T`` over the subsets of its ``used``
        players that avoid its ``a`` and ``b``; ``g[T, point]`` times the point's ``scale`` (None:
        scaled already). A subset's weight depends on its size only."""
        slots = np.arange(k)
        fixed = (((a | b)[:, None] >> used) & 1) if k else np.zeros((len(a), 0), dtype=np.int64)
        ab_used = fixed @ (1 << slots) if k else np.zeros(len(a), dtype=np.int64)
        pa, pb = np.bitwise_count(a).astype(np.int64), np.bitwise_count(b).astype(np.int64)
        m = pa + pb + k - fixed.sum(axis=1)
        w = _weight_table(self.d + k + 1)
        full = ((1 << k) - 1) & ~ab_used
        rows = np.arange(len(a))
        at_base, at_x = g[0], g[full, rows]
        if scale is not None:
            at_base, at_x = at_base * scale, at_x * scale
        self.base += float(at_base[a == 0].sum())
        self.fx += float(at_x[b == 0].sum())
        if k >= 6:  # many subsets: sum the points of one (|a|, m, fixed) first
            self._settle_grouped(g, used, a, b, k, pa, m, ab_used, fixed, w, scale)
        else:
            self._settle_rows(g.T, used, a, b, k, pa, m, ab_used, fixed, w, scale)

    def _settle_rows(self, g: np.ndarray, used: np.ndarray, a: np.ndarray, b: np.ndarray, k: int, pa: np.ndarray,
                     m: np.ndarray, ab_used: np.ndarray, fixed: np.ndarray, w: np.ndarray,
                     scale: np.ndarray | None) -> None:
        """:meth:`_settle` point by point (few subsets, many points), ``g[point, T]``."""
        allowed = (np.arange(1 << k) & ab_used[:, None]) == 0
        h = g * (allowed if scale is None else allowed * scale[:, None])  # g on the subsets a point allows
        w_joins, w_out = _row_weights(self.d, k, w)
        h_in, h_out = h * w_joins[pa, m], h * w_out[pa, m]
        self._spread(a, h_in.sum(axis=1) * (pa > 0))
        self._spread(b, -h_out.sum(axis=1))
        if k:
            gain = h_in @ _bits(k) - (h_out @ _bits(k, 0)) * (1 - fixed)
            self.phi += np.bincount(used.ravel(), weights=gain.ravel(), minlength=self.d)

    def _settle_grouped(self, g: np.ndarray, used: np.ndarray, a: np.ndarray, b: np.ndarray, k: int,
                        pa: np.ndarray, m: np.ndarray, ab_used: np.ndarray, fixed: np.ndarray, w: np.ndarray,
                        scale: np.ndarray | None) -> None:
        """:meth:`_settle` group by group: the points of one ``(|a|, m, fixed players, used)`` share
        their weights and allowed subsets, so each group takes two matrix products."""
        g = np.ascontiguousarray(g)  # C order for the products below
        t = np.arange(1 << k)
        sizes = np.bitwise_count(t).astype(np.int64)
        bits, other_bits = _bits(k), _bits(k, 0)
        n = len(a)
        key = ((pa * (self.d + k + 1) + m) << k) | ab_used  # |a|, m and the fixed players, in one number
        first, group = _groups(key, used)
        p, mm = pa[first][:, None], m[first][:, None]
        allowed = (t & ab_used[first][:, None]) == 0  # (groups, subsets)
        w_joins = w[np.maximum(p - 1 + sizes, 0), mm] * allowed  # a player joining T - j, for T holding j
        w_out = w[p + sizes, mm] * allowed  # a player joining T
        n_groups = len(first)
        weights = np.concatenate([w_joins * (p > 0), w_out])  # a's share and b's share of each subset
        shares = weights @ g  # (2 groups, points)
        share_in, share_out = shares[group, rows := np.arange(n)], -shares[n_groups + group, rows]
        member = np.zeros((n, n_groups))
        member[rows, group] = 1.0 if scale is None else scale
        if scale is not None:
            share_in *= scale
            share_out *= scale
        total = (g @ member).T  # (groups, subsets): each group's scaled column sums
        gain = (total * w_joins) @ bits - ((total * w_out) @ other_bits) * (1 - fixed[first])
        self.phi += np.bincount(used[first].ravel(), weights=gain.ravel(), minlength=self.d)
        self._spread(a, share_in)
        self._spread(b, share_out)

    def _spread(self, masks_: np.ndarray, shares: np.ndarray) -> None:
        """Each point's share, to be added to every player in its mask (by :meth:`_spread_all`)."""
        self._spreads.append((masks_, shares))

    def _spread_all(self) -> None:
        """The shares :meth:`_spread` kept, added to the players of their masks in one product."""
        if self._spreads:
            masks_, shares = (np.concatenate(c) for c in zip(*self._spreads, strict=True))
            if self.d <= _FEW_PLAYERS:  # few masks: each one's total first, then its players'
                self.phi += np.bincount(masks_, weights=shares, minlength=1 << self.d) @ _bits(self.d)
            else:
                self.phi += shares @ ((masks_[:, None] & self.bits) != 0).astype(float)
            self._spreads = []


def _groups(key: np.ndarray, used: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups of the points with equal ``key`` and equal rows of ``used``: one point of
    each group, and each point's group."""
    if used.strides[0] == 0 or len(used) == 0 or bool((used == used[0]).all()):
        values = np.unique(key)
        group = np.searchsorted(values, key)
        first = np.empty(len(values), dtype=np.int64)
        first[group] = np.arange(len(key))  # any point of a group stands for it
        return first, group
    if used.shape[1] <= 10:  # player indices below 64: six bits each
        read = (used << (6 * np.arange(used.shape[1], dtype=np.int64))).sum(axis=1)
    else:
        read = np.unique(used, axis=0, return_inverse=True)[1].reshape(-1)
    order = np.lexsort((read, key))
    new = np.empty(len(key), dtype=bool)
    new[0] = True
    new[1:] = (np.diff(key[order]) != 0) | (np.diff(read[order]) != 0)
    group = np.empty(len(key), dtype=np.int64)
    group[order] = np.cumsum(new) - 1
    return order[new], group


_TABLES: dict = {}

#: up to this many players, shares are summed per mask (of 2^d) before they are spread
_FEW_PLAYERS = 12

#: below this bound on ``|votes| + sum |diff|`` every partial product of exponentials stays within
#: [e^-700, e^700], far from overflow and underflow (e^709)
_SAFE_EXPONENT = 700.0


def _exp_votes(votes: np.ndarray, diff: np.ndarray, k: int) -> np.ndarray:
    """``exp(votes + diff . T)`` of every subset ``T`` of the ``k`` players, ``(c, 2^k, s)``.
    For a point whose ``|votes| + sum |diff|`` stays within 700 (no overflow or underflow), as
    products of ``exp(votes)`` and each ``exp(diff_j)``, within ``k + 1`` roundings; any other point
    from the sums."""
    c, s = votes.shape
    out = np.empty((c, 1 << k, s))
    if not (c and k and s):
        return _exp_of_sums(votes, diff, k, out)
    with np.errstate(all="ignore"):  # the points outside the bound are done again below
        factors = np.exp(diff.transpose(0, 2, 1))  # (c, k, s)
        np.exp(votes, out=out[:, 0])
        for j in range(k):  # the subsets that hold j are those without it, times exp(diff_j)
            np.multiply(out[:, :1 << j], factors[:, j, None], out=out[:, 1 << j:2 << j])
    far = np.flatnonzero((np.abs(votes) + np.abs(diff).sum(axis=2)).max(axis=0) > _SAFE_EXPONENT)
    if len(far):
        out[:, :, far] = _exp_of_sums(votes[:, far], diff[:, far], k, np.empty((c, 1 << k, len(far))))
    return out


def _exp_of_sums(votes: np.ndarray, diff: np.ndarray, k: int, out: np.ndarray) -> np.ndarray:
    """:func:`_exp_votes` from the sums ``votes + diff . T``, into ``out`` ``(c, 2^k, s)``."""
    c, s = votes.shape
    sums = np.matmul(diff.reshape(c * s, k), _subsets(k)).reshape(c, s, 1 << k)  # one 2-D product
    sums += votes[:, :, None]
    with np.errstate(over="ignore"):
        np.exp(sums.transpose(0, 2, 1), out=out)
    return out


def _subsets(k: int) -> np.ndarray:
    """``(k, 2^k)``: row ``j`` is 1 where subset ``t`` holds player ``j`` (C order: a matrix
    product with a transposed view makes OpenBLAS take a slow threaded path)."""
    key = ("subsets", k)
    if key not in _TABLES:
        _TABLES[key] = np.ascontiguousarray(masks(k).T, dtype=float)
    return _TABLES[key]


def _bits(k: int, held: int = 1) -> np.ndarray:
    """``(2^k, k)``: 1 where subset ``t`` holds player ``j`` (``held=0``: where it does not)."""
    key = ("bits", k, held)
    if key not in _TABLES:
        t = np.arange(1 << k)
        _TABLES[key] = (((t[:, None] >> np.arange(k)) & 1) == held).astype(float)
    return _TABLES[key]


def _row_weights(d: int, k: int, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(joins, out)[|a|, m, T]``: the weight of a player joining ``T`` minus one of its players
    (0 for ``T = {}`` and ``|a| = 0``) and of one joining ``T``, in a game of ``m`` players with
    ``|a|`` held, for the subsets ``T`` of ``k`` players (``w`` is :func:`_weight_table`)."""
    key = ("rows", d, k, w.shape[0])
    if key not in _TABLES:
        sizes = np.bitwise_count(np.arange(1 << k)).astype(np.int64)
        p, mm = np.arange(d + 1)[:, None, None], np.arange(w.shape[1])[None, :, None]
        _TABLES[key] = (np.where(p + sizes > 0, w[np.maximum(p - 1 + sizes, 0), mm], 0.0), w[p + sizes, mm])
    return _TABLES[key]


def _unanimity_table(d: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~.coalitions.unanimity_shares` of every ``(|A|, |B|)`` with ``|A| + |B| <= d``."""
    key = ("unanimity", d)
    if key not in _TABLES:
        t_in, t_out = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1))
        for i in range(d + 1):
            for o in range(d + 1 - i):
                t_in[i, o], t_out[i, o] = unanimity_shares(i, o)
        _TABLES[key] = (t_in, t_out)
    return _TABLES[key]


def _weight_table(size: int) -> np.ndarray:
    """``w[p, m] = p! (m - p - 1)! / m!`` for ``0 <= p < m <= size``, else 0."""
    key = ("weights", size)
    if key not in _TABLES:
        w = np.zeros((size + 1, size + 1))
        for mm in range(1, size + 1):
            for p in range(mm):
                w[p, mm] = shapley_weight(p, mm)
        _TABLES[key] = w
    return _TABLES[key]
