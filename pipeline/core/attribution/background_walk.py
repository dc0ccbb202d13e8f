"""The tree walk of :mod:`.trees` for all background points at once, with arrays.

The points travel together: at each node a *group* holds, per point, the features that must come
from ``x`` (``a``) and from the point (``b``) as bit masks, and a branch splits the group by where
``x`` and each point go; a node is visited once per group. At the end of a route its points are
settled together: constant leaves by a table of unanimity shares, naive Bayes leaves by their
votes as arrays (:mod:`.bayes`), anything else point by point with :func:`~.trees.route_shares`.
The values are those of :func:`~.trees.tree_shapley`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from river.tree.nodes.branch import NumericBinaryBranch

from ..fastpath.base import Unsupported
from ..fastpath.walk import is_branch
from .bayes import BayesVotes, softmax
from .coalitions import masks
from .frame import Frame
from .shares import Shares
from .trees import TooManyFree, TreeGame, route_shares, step, total_kind

__all__ = ["background_shapley", "collect"]

_NUMERIC_NO = NumericBinaryBranch.branch_no


class _Walk:
    def __init__(self, game: TreeGame, frame: Frame, max_free: int):
        self.game, self.frame, self.max_free = game, frame, max_free
        self.x, self.bg, self.names, self.index = frame.x, frame.bg, frame.names, frame.index
        self.d = len(self.names)
        self._bayes: dict[int, Any] = {}
        self._tables: dict[int, tuple] = {}
        self._terms: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
        self.routes: list[tuple[tuple, np.ndarray, np.ndarray, np.ndarray]] = []

    # the walk ------------------------------------------------------------------------
    def column(self, f: str) -> np.ndarray | None:
        return self.frame.column(f)

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
            bit = np.int64(1) << self.index[node.feature]
            col = self.column(node.feature) if type(node).branch_no is _NUMERIC_NO and not tx else None
            if col is not None:  # a threshold: no point is sent down twice, the other child is 1 - ix
                same = (col[zs] <= node.threshold) == (ix == 0)
                if not same.all():
                    in_a, in_b = (a & bit) != 0, (b & bit) != 0
                    follow_x = same | in_a
                    free = ~follow_x & ~in_b
                    other = ~follow_x
                    self.descend(node.children[1 - ix], zs[other], a[other], b[other] | (bit * free[other]),
                                 alts, False)
                    zs = np.concatenate([zs[follow_x], zs[free]])
                    a, b = np.concatenate([a[follow_x], a[free] | bit]), np.concatenate([b[follow_x], b[free]])
                node, twice = cx, tx
                continue
            kids, dups = self.decide(node, zs)
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
    def collect(self, shares: Shares, scale: float) -> str:
        """Hand every route's points to ``shares``, each weighted by ``scale``; what the
        probabilities met sum to (:func:`~.trees.tree_shapley`'s last value)."""
        game = self.game
        n = len(self.bg)
        root = game.tree._root
        zero = np.zeros(n, dtype=np.int64)
        if root is None:
            self.routes.append(((), np.arange(n), zero, zero.copy()))
        else:
            self.descend(root, np.arange(n), zero, zero.copy(), (), False)
        totals: set[str] = set()
        for leaves, zs, a, b in self.routes:
            reads = [game.reads(leaf) for leaf in leaves]
            if not any(r is None or r for r in reads):
                g, total = game.value(leaves, self.x)
                totals.add(total_kind(total))
                shares.add_constant(g, a, b, scale)
            elif game.kind not in ("htc", "hatc") or not self.bayes(leaves, reads, zs, a, b, totals, shares, scale):
                shares.add(*self.by_point(leaves, zs, a, b, totals), scale)
        return totals.pop() if len(totals) == 1 else "mixed"

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
              totals: set, shares: Shares, scale: float) -> bool:
        """Hand the route to ``shares`` as vote arrays; False when a leaf is neither naive Bayes
        nor majority class (the caller then goes point by point)."""
        game = self.game
        models = []
        for leaf, r in zip(leaves, reads, strict=True):
            if r is None:
                return False
            models.append(self._votes(leaf) if r else None)
            if r and models[-1] is None:
                return False
        used = sorted(set().union(*[m.reads for m in models if m is not None]), key=self.index.__getitem__)
        k = len(used)
        if k > self.max_free:
            raise TooManyFree(f"a route whose leaves read {k} features (max_free={self.max_free})")
        s = len(zs)
        used_idx = np.broadcast_to(np.array([self.index[f] for f in used], dtype=np.int64), (s, k))
        if len(leaves) == 1:  # (an adaptive tree's weighting cancels in its normalisation)
            totals.add("one")
            self._single(leaves[0], models[0], used, zs, a, b, used_idx, shares, scale)
            return True
        subsets_t = np.ascontiguousarray(masks(k).T, dtype=float)  # (k, 2^k)
        ab = a | b
        classes: dict = {c: i for i, c in enumerate(game.classes or ())}
        parts = []  # (classes, distribution as (classes, points, subsets))
        for leaf, model in zip(leaves, models, strict=True):
            if model is None:
                dist = leaf.prediction(self.x, tree=game.tree)
                if dist is None:
                    return False
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
        shares.add_values(g, used_idx, a, b, scale)
        return True

    def _single(self, leaf: Any, model: BayesVotes, used: list, zs: np.ndarray, a: np.ndarray, b: np.ndarray,
                used_idx: np.ndarray, shares: Shares, scale: float) -> None:
        """A lone naive Bayes leaf: the votes of the other classes relative to the target's,
        ``p_t = 1 / (1 + sum_c exp(v_c - v_t))``, handed over as votes."""
        try:
            t = model.classes.index(self.game.target)
        except ValueError:  # the leaf has not seen the class: its probability is 0
            shares.add_constant(0.0, a, b, scale)
            return
        idx, tx, tz = self._leaf_tables(leaf, model, used)
        others = [c for c in range(len(model.classes)) if c != t]
        dx = tx[:, others] - tx[:, t:t + 1]  # (features, others): relative to the target's
        tz = tz[:, zs]
        dz = tz[:, :, others] - tz[:, :, t:t + 1]  # (features, points, others)
        from_x = ((a[None, :] >> idx[:, None]) & 1).astype(bool)[:, :, None]
        fixed = (((a | b)[None, :] >> idx[:, None]) & 1).astype(bool)[:, :, None]
        votes = (model.prior[others] - model.prior[t])[:, None] + np.where(from_x, dx[:, None, :], dz).sum(axis=0).T
        diff = np.where(fixed, 0.0, dx[:, None, :] - dz).transpose(2, 1, 0)
        shares.add_votes(votes, diff, used_idx, a, b, scale)

    def _leaf_tables(self, leaf: Any, model: BayesVotes, used: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The players' indices, and the vote terms of ``x``'s values ``(features, classes)``
        and of the background's ``(features, points, classes)``, of a leaf's ``used`` features."""
        key = id(leaf)
        if key not in self._tables:
            terms = np.stack([model.terms(f, self.frame.values(f)) for f in used])
            self._tables[key] = (np.array([self.index[f] for f in used], dtype=np.int64), terms[:, 0], terms[:, 1:])
        return self._tables[key]

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
            terms = model.terms(f, self.frame.values(f))
            self._terms[key] = (terms[0], terms[1:])
        return self._terms[key]


def background_shapley(game: TreeGame, x: dict, background: Sequence[dict], features: Sequence[str],
                       max_free: int = 12) -> tuple[np.ndarray, float, float, str]:
    """What :func:`~.trees.tree_shapley` returns, computed for all background points at once."""
    shares = Shares(len(features))
    totals = collect(game, Frame(x, background, features), max_free, shares, 1.0 / len(background))
    phi, base, fx = shares.finish()
    return phi, base, fx, totals


def collect(game: TreeGame, frame: Frame, max_free: int, shares: Shares, scale: float) -> str:
    """Add the tree's shares, times ``scale``, to ``shares`` (a forest sums its members in one
    :class:`~.shares.Shares` over one :class:`Frame`); what the tree's probabilities sum to."""
    return _Walk(game, frame, max_free).collect(shares, scale)
