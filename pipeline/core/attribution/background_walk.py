"""The tree walk of :mod:`.trees` for all background points at once, with arrays.

:func:`~.trees.tree_shapley` walks the tree once per background point. Here the points travel
together: at each node a *group* holds, per point, the features that must come from ``x``
(``a``) and from the point (``b``) as bit masks, and a branch splits the group by where ``x`` and
each point go (a numeric threshold decides all points with one comparison; other branches ask
river's own ``next`` point by point). A node is visited once per group, not once per point.

At the end of a route, all its points are settled together:

- leaves that read nothing: the unanimity shares of each point's ``(|a|, |b|)``, looked up in a
  table, times the route's value;
- naive Bayes leaves (and majority-class leaves beside them, as an adaptive tree combines
  them): the votes of every point and every subset ``T`` of the features the leaves read are
  one base vote plus a sum of per-feature differences (:mod:`.bayes`); softmax, the adaptive
  tree's weighting and normalisation, and Shapley's weights (``T`` kept away from the point's
  ``a`` and ``b``) are applied as arrays;
- anything else (a linear model at a regression leaf): point by point with
  :func:`~.trees.route_shares`, which asks the leaves themselves.

The values are those of :func:`~.trees.tree_shapley` (the tests hold both to brute force).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from river.tree.nodes.branch import NumericBinaryBranch

from ..fastpath.base import Unsupported
from ..fastpath.walk import is_branch
from .bayes import BayesVotes, softmax
from .coalitions import masks, shapley_weight, unanimity_shares
from .trees import TooManyFree, TreeGame, route_shares, step, total_kind

__all__ = ["background_shapley"]

_NUMERIC_NO = NumericBinaryBranch.branch_no


class _Walk:
    def __init__(self, game: TreeGame, x: dict, background: Sequence[dict], features: Sequence[str], max_free: int):
        self.game, self.x, self.bg, self.names, self.max_free = game, x, background, list(features), max_free
        self.index = {f: i for i, f in enumerate(self.names)}
        self.d = len(self.names)
        self._cols: dict[str, np.ndarray | None] = {}
        self._bayes: dict[int, Any] = {}
        self._terms: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        self.routes: list[tuple[tuple, np.ndarray, np.ndarray, np.ndarray]] = []
        self.bits = np.int64(1) << np.arange(self.d, dtype=np.int64)

    # the walk ------------------------------------------------------------------------
    def column(self, f: str) -> np.ndarray | None:
        if f not in self._cols:
            values = [z[f] for z in self.bg]
            ok = all(type(v) in (int, float) for v in values)
            self._cols[f] = np.array(values, dtype=float) if ok else None
        return self._cols[f]

    def decide(self, node: Any, zs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per point, the index of the child it goes to and whether river visits it twice."""
        col = self.column(node.feature) if type(node).branch_no is _NUMERIC_NO else None
        if col is not None:
            return (~(col[zs] <= node.threshold)).astype(np.int64), np.zeros(len(zs), dtype=bool)
        where = {id(c): k for k, c in enumerate(node.children)}
        kids = np.empty(len(zs), dtype=np.int64)
        dups = np.empty(len(zs), dtype=bool)
        for i, z in enumerate(zs.tolist()):
            child, dup = step(node, self.bg[z])
            kids[i], dups[i] = where[id(child)], dup
        return kids, dups

    def descend(self, node: Any, zs: np.ndarray, a: np.ndarray, b: np.ndarray, alts: tuple, twice: bool) -> None:
        game = self.game
        while is_branch(node):
            if game.adaptive and node._alternate_tree:
                alt = node._alternate_tree
                if is_branch(alt):
                    raise Unsupported("an alternate tree that is a branch")
                alts = alts + (alt,) * (2 if twice else 1)
            if node.feature not in self.index:
                raise Unsupported(f"a branch on {node.feature!r}, which is not a player")
            cx, tx = step(node, self.x)
            ix = next(k for k, c in enumerate(node.children) if c is cx)
            kids, dups = self.decide(node, zs)
            bit = np.int64(1) << self.index[node.feature]
            same = (kids == ix) & (dups == tx)
            in_a, in_b = (a & bit) != 0, (b & bit) != 0
            follow_x = same | in_a
            free = ~follow_x & ~in_b
            own = ~follow_x & in_b
            if free.any() or own.any():
                # points that go their own way: those with the feature from them (b), and the
                # undecided ones twice over, once holding the feature (to x's child) and once not
                for k in np.unique(kids[own | free]).tolist():
                    for dup in (False, True):
                        sel_own = own & (kids == k) & (dups == dup)
                        sel_free = free & (kids == k) & (dups == dup)
                        if sel_own.any() or sel_free.any():
                            self.descend(node.children[k], np.concatenate([zs[sel_own], zs[sel_free]]),
                                         np.concatenate([a[sel_own], a[sel_free]]),
                                         np.concatenate([b[sel_own], b[sel_free] | bit]), alts, dup)
                zs = np.concatenate([zs[follow_x], zs[free]])
                a, b = np.concatenate([a[follow_x], a[free] | bit]), np.concatenate([b[follow_x], b[free]])
            if not len(zs):
                return
            node, twice = cx, tx
        self.routes.append((alts + (node,), zs, a, b))

    # the routes' shares ------------------------------------------------------------------
    def shapley(self) -> tuple[np.ndarray, float, float, str]:
        game = self.game
        n = len(self.bg)
        root = game.tree._root
        zero = np.zeros(n, dtype=np.int64)
        if root is None:
            self.routes.append(((), np.arange(n), zero, zero.copy()))
        else:
            self.descend(root, np.arange(n), zero, zero.copy(), (), False)
        phi = np.zeros(self.d)
        base = fx = 0.0
        totals: set[str] = set()
        for leaves, zs, a, b in self.routes:
            reads = [game.reads(leaf) for leaf in leaves]
            if not any(r is None or r for r in reads):
                g, total = game.value(leaves, self.x)
                totals.add(total_kind(total))
                part = self.constant(g, a, b)
            else:
                part = self.bayes(leaves, reads, zs, a, b, totals) if game.kind in ("htc", "hatc") else None
                if part is None:
                    part = self.by_point(leaves, zs, a, b, totals)
            phi += part[0]
            base += part[1]
            fx += part[2]
        return phi / n, base / n, fx / n, totals.pop() if len(totals) == 1 else "mixed"

    def constant(self, g: float, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float, float]:
        pa, pb = np.bitwise_count(a), np.bitwise_count(b)
        table = _unanimity_table(self.d)
        share_in, share_out = table[0][pa, pb] * g, table[1][pa, pb] * g
        phi = self._spread(a, share_in) + self._spread(b, share_out)
        return phi, g * float(np.sum(a == 0)), g * float(np.sum(b == 0))

    def _spread(self, masks_: np.ndarray, shares: np.ndarray) -> np.ndarray:
        """Each point's share added to every feature in its mask."""
        return (((masks_[:, None] & self.bits) != 0) * shares[:, None]).sum(axis=0)

    def by_point(self, leaves: tuple, zs: np.ndarray, a: np.ndarray, b: np.ndarray,
                 totals: set) -> tuple[np.ndarray, float, float]:
        phi = np.zeros(self.d)
        base = fx = 0.0
        names = self.names
        for z, am, bm in zip(zs.tolist(), a.tolist(), b.tolist(), strict=True):
            row = self.bg[z]
            a_set = frozenset(f for i, f in enumerate(names) if am >> i & 1)
            b_set = frozenset(f for i, f in enumerate(names) if bm >> i & 1)
            differ = {f for f in names if self.x[f] != row[f]}
            shares, at_base, at_x = route_shares(self.game, self.x, row, a_set, b_set, leaves, differ, self.index,
                                                 self.max_free, {}, totals)
            for f, v in shares:
                phi[self.index[f]] += v
            base += at_base
            fx += at_x
        return phi, base, fx

    def bayes(self, leaves: tuple, reads: list, zs: np.ndarray, a: np.ndarray, b: np.ndarray,
              totals: set) -> tuple[np.ndarray, float, float] | None:
        """The route's shares from vote arrays, or None when a leaf is not naive Bayes or
        majority class (the caller then goes point by point)."""
        game = self.game
        models = []
        for leaf, r in zip(leaves, reads, strict=True):
            if r is None:
                return None
            models.append(self._votes(leaf) if r else None)
            if r and models[-1] is None:
                return None
        used = sorted(set().union(*[m.reads for m in models if m is not None]), key=self.index.__getitem__)
        k = len(used)
        if k > self.max_free:
            raise TooManyFree(f"a route whose leaves read {k} features (max_free={self.max_free})")
        subsets_t = masks(k).T.astype(float)  # (k, 2^k)
        s = len(zs)
        if len(leaves) == 1:  # (an adaptive tree's weighting cancels in its normalisation)
            g = self._single(leaves[0], models[0], used, subsets_t, zs, a, b)
            totals.add("one")
            return self._subset_shares(g, used, a, b)
        ab = a | b
        classes: dict = {c: i for i, c in enumerate(game.classes or ())}
        parts = []  # (classes, distribution as (classes, points, subsets))
        for leaf, model in zip(leaves, models, strict=True):
            if model is None:
                dist = leaf.prediction(self.x, tree=game.tree)
                if dist is None:
                    return None
                parts.append((list(dist), np.array(list(dist.values()), dtype=float)[:, None, None]))
                continue
            n_classes = len(model.classes)
            votes = np.broadcast_to(model.prior[:, None], (n_classes, s)).copy()
            diff = np.zeros((n_classes, s, k))
            for j, f in enumerate(used):
                if f not in model.splitters:
                    continue
                tx, tz = self._feature_terms(leaf, model, f)
                tz = tz[zs].T  # (classes, points)
                bit = np.int64(1) << self.index[f]
                votes += np.where((a & bit) != 0, tx[:, None], tz)
                diff[:, :, j] = np.where((ab & bit) != 0, 0.0, tx[:, None] - tz)
            dist = softmax(votes[:, :, None] + diff @ subsets_t, axis=0)
            if game.adaptive:
                error = leaf._mean_error.get()
                factor = error * error  # the distribution sums to 1
                if factor != 0 and factor == factor:
                    dist = dist / factor
            parts.append((model.classes, dist))
        for names, _ in parts:
            for c in names:
                classes.setdefault(c, len(classes))
        proba = np.zeros((len(classes), s, 1 << k))
        for names, dist in parts:
            pos = [classes[c] for c in names]
            if game.adaptive:
                proba[pos] += dist
            else:
                proba[pos] = dist
        if game.adaptive:
            factor = proba.sum(axis=0)
            ok = (factor != 0) & (factor == factor)
            proba = np.where(ok, proba / np.where(ok, factor, 1.0), proba)
        sums = proba.sum(axis=0)
        totals.update({"one"} if np.all(np.abs(sums - 1.0) <= 1e-12) else {total_kind(v) for v in sums.ravel().tolist()})
        t = classes.get(game.target)
        g = proba[t] if t is not None else np.zeros((s, 1 << k))
        return self._subset_shares(g, used, a, b)

    def _subset_shares(self, g: np.ndarray, used: list, a: np.ndarray, b: np.ndarray
                       ) -> tuple[np.ndarray, float, float]:
        """:func:`~.coalitions.subset_shares` for every point, ``T`` over the subsets of
        ``used`` that avoid the point's ``a`` and ``b``. A subset's weight depends on its size
        only, so the sums over points are matrix products: a free feature ``j`` gains
        ``w(|a| + |T| - 1) g(T)`` from each ``T`` that holds it and loses ``w(|a| + |T|) g(T)``
        to each that does not (where ``j`` is free for the point)."""
        k = len(used)
        t = np.arange(1 << k)
        sizes = np.bitwise_count(t).astype(np.int64)
        ab_used = np.zeros(len(a), dtype=np.int64)
        for j, f in enumerate(used):
            ab_used |= (((a | b) >> self.index[f]) & 1) << j
        h = g * ((t[None, :] & ab_used[:, None]) == 0)  # g on the subsets a point allows
        pa, pb = np.bitwise_count(a).astype(np.int64), np.bitwise_count(b).astype(np.int64)
        m = (pa + pb + (k - np.bitwise_count(ab_used).astype(np.int64)))[:, None]
        w = _weight_table(self.d + k + 1)
        q = np.arange(k + 1)
        w_in = np.where(pa[:, None] + q > 0, w[np.maximum(pa[:, None] - 1 + q, 0), m], 0.0)  # (points, sizes)
        w_out = w[pa[:, None] + q, m]
        h_in, h_out = h * w_in[:, sizes], h * w_out[:, sizes]
        phi = self._spread(a, h_in.sum(axis=1) * (pa > 0)) + self._spread(b, -h_out.sum(axis=1))
        bits = ((t[:, None] >> np.arange(k)) & 1).astype(float)  # (2^k, k)
        free = 1.0 - ((ab_used[:, None] >> np.arange(k)) & 1)  # (points, k)
        gain = h_in.sum(axis=0) @ bits - ((h_out.T @ free) * (1.0 - bits)).sum(axis=0)
        for j, f in enumerate(used):
            phi[self.index[f]] += gain[j]
        full = ((1 << k) - 1) & ~ab_used
        rows = np.arange(len(a))
        return phi, float(g[rows, 0][a == 0].sum()), float(g[rows, full][b == 0].sum())

    def _single(self, leaf: Any, model: BayesVotes, used: list, subsets_t: np.ndarray, zs: np.ndarray,
                a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The target's probability at a lone naive Bayes leaf, ``1 / sum_c exp(v_c - v_t)``,
        for every point and subset."""
        try:
            t = model.classes.index(self.game.target)
        except ValueError:
            return np.zeros((len(zs), subsets_t.shape[1]))
        ab = a | b
        others = [c for c in range(len(model.classes)) if c != t]
        votes = np.broadcast_to((model.prior[others] - model.prior[t])[:, None], (len(others), len(zs))).copy()
        diff = np.zeros((len(others), len(zs), len(used)))
        for j, f in enumerate(used):
            if f not in model.splitters:
                continue
            tx, tz = self._feature_terms(leaf, model, f)
            tx, tz = tx[others] - tx[t], (tz[zs][:, others] - tz[zs, t:t + 1]).T
            bit = np.int64(1) << self.index[f]
            votes += np.where((a & bit) != 0, tx[:, None], tz)
            diff[:, :, j] = np.where((ab & bit) != 0, 0.0, tx[:, None] - tz)
        rel = votes[:, :, None] + diff @ subsets_t  # v_c - v_t of the other classes
        with np.errstate(over="ignore"):
            return 1.0 / (1.0 + np.exp(rel).sum(axis=0))

    def _votes(self, leaf: Any) -> BayesVotes | None:
        key = id(leaf)
        if key not in self._bayes:
            try:
                self._bayes[key] = BayesVotes(leaf.stats, leaf.splitters, set(self.names))
            except Unsupported:
                self._bayes[key] = None
        return self._bayes[key]

    def _feature_terms(self, leaf: Any, model: BayesVotes, f: str) -> tuple[np.ndarray, np.ndarray]:
        key = (id(leaf), f)
        if key not in self._terms:
            values = [self.x[f]] + [z[f] for z in self.bg]
            terms = model.terms(f, values)
            self._terms[key] = (terms[0], terms[1:])
        return self._terms[key]


_TABLES: dict[int, Any] = {}


def _unanimity_table(d: int) -> tuple[np.ndarray, np.ndarray]:
    key = ("u", d)
    if key not in _TABLES:
        t_in, t_out = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1))
        for i in range(d + 1):
            for o in range(d + 1 - i):
                t_in[i, o], t_out[i, o] = unanimity_shares(i, o)
        _TABLES[key] = (t_in, t_out)  # type: ignore[index]
    return _TABLES[key]  # type: ignore[index]


def _weight_table(size: int) -> np.ndarray:
    """``w[p, m] = p! (m - p - 1)! / m!`` for ``0 <= p < m < size``, else 0."""
    if size not in _TABLES:
        w = np.zeros((size + 1, size + 1))
        for mm in range(1, size + 1):
            for p in range(mm):
                w[p, mm] = shapley_weight(p, mm)
        _TABLES[size] = w
    return _TABLES[size]


def background_shapley(game: TreeGame, x: dict, background: Sequence[dict], features: Sequence[str],
                       max_free: int = 12) -> tuple[np.ndarray, float, float, str]:
    """What :func:`~.trees.tree_shapley` returns, computed for all background points at once."""
    if len(features) > 62:
        raise Unsupported("more than 62 features do not fit the walk's bit masks")
    return _Walk(game, x, background, features, max_free).shapley()
