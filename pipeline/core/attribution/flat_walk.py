"""The background walk of plain Hoeffding trees with threshold branches, level by level.

A Hoeffding tree classifier whose branches all compare a number with a threshold (river's
numeric binary splits) and whose leaves predict by majority class or by naive Bayes over
Gaussians -- the trees an ARF grows on numeric streams -- is flattened into arrays: per node its
feature, threshold, children (its :class:`~.tree_shape.TreeShape`, kept between explanations
while the branches stay) and the child ``x`` takes. All *states* (a tree, a node, a
background point and its masks ``a`` and ``b``, as in :mod:`.background_walk`) of all trees of a
forest then move down one level per step, a state splitting in two where ``x`` and its point
part at a feature neither mask decides: in one compiled call (``tree_walk``, when the kernels
are built) or with a handful of numpy calls per level, not per node.

At the leaves, a majority-class leaf hands its points over as a constant, and every naive Bayes
leaf's votes are built for all its points at once from the Gaussians' means and variances
(river's ``Gaussian.log_pdf``), relative to the explained class; :class:`~.shares.Shares` then
settles them by the number of features the leaves read. A tree with anything else is left to
:mod:`.background_walk` (:func:`flat_collect` says which).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
from river.tree.splitter.gaussian_splitter import GaussianSplitter

from ..kernels import KERNELS
from .frame import Columns, Frame
from .shares import Shares
from .tree_shape import ShapeCache, tree_shape
from .trees import TooManyFree, TreeGame

__all__ = ["LeafMemo", "flat_collect"]

_HALF_LOG_TAU = 0.5 * math.log(2 * math.pi)
_UNSEEN = object()
_EXACT = 2 ** 53  # an int within it compares with a float as its float does


class _Flat:
    """Trees as arrays: ``feature[i]``, ``threshold[i]``, ``left[i]`` (its children are ``left[i]``
    and ``left[i] + 1``), ``x_right[i]`` for branch ``i``; ``leaf[i]`` (the leaf) otherwise. Each
    tree's branches come from its :class:`~.tree_shape.TreeShape` (kept in ``shapes`` between
    explanations), what ``x`` does at them from the frame."""

    def __init__(self, frame: Frame, shapes: ShapeCache | None):
        self.frame = frame
        self.shapes = shapes
        self.feature: list[np.ndarray] = []
        self.threshold: list[np.ndarray] = []
        self.left: list[np.ndarray] = []
        self.x_right: list[np.ndarray] = []
        self.leaf: list[Any] = []
        self._usable: dict = {}  # feature -> what _usable_feature says

    def add(self, game: TreeGame) -> int | None:
        """The root's id, or None when the tree has a node the flat walk does not take. Nodes
        get their ids in breadth-first order."""
        shape = self.shapes.get(game.tree, game.adaptive) if self.shapes is not None else tree_shape(
            game.tree, game.adaptive)
        if shape is None:
            return None
        usable = self._usable
        index, at_x = [], []
        for f in shape.features:
            got = usable.get(f, _UNSEEN)
            if got is _UNSEEN:
                got = usable[f] = self._usable_feature(f)
            if got is None:
                return None
            index.append(got[0])
            at_x.append(got[1])
        start = len(self.leaf)
        code = shape.code
        branch = code >= 0
        if shape.floats and all(type(v) is float or -_EXACT <= v <= _EXACT for v in at_x):  # compared as floats exactly
            x_right = np.zeros(len(code), dtype=bool)
            x_right[branch] = ~(np.array(at_x, dtype=float)[code[branch]] <= shape.threshold[branch])
        else:
            x_right = np.array([c >= 0 and not at_x[c] <= t for c, t in zip(code.tolist(), shape.thresholds, strict=True)],
                               dtype=bool)
        self.feature.append(np.array(index + [-1], dtype=np.int64)[code])  # a leaf's code -1 picks the -1
        self.threshold.append(shape.threshold)
        self.left.append(np.where(branch, shape.left + start, -1))
        self.x_right.append(x_right)
        self.leaf += shape.leaf
        return start

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(feature, threshold, left, x_right)`` of all the trees added."""
        return tuple(np.concatenate(c) for c in (self.feature, self.threshold, self.left, self.x_right))

    def _usable_feature(self, f: Any) -> tuple[int, Any] | None:
        """``(player index, x's value)`` for a feature a threshold branch may test here (a player
        whose value is a number in ``x`` and in every background row), else None."""
        frame = self.frame
        if f not in frame.index or type(frame.x[f]) not in (int, float) or frame.column(f) is None:
            return None
        return frame.index[f], frame.x[f]


def flat_collect(trees: list[tuple[TreeGame, float]], frame: Frame, max_free: int, shares: Shares,
                 memo: LeafMemo | None = None) -> list[str | None]:
    """Add the shares of each ``(tree, scale)`` it takes to ``shares``; per tree, what its
    probabilities sum to, or None for a tree left to the caller. ``memo`` keeps what the
    walk learns about leaves for the next explanation."""
    if memo is not None:
        memo.start(frame.names)
    flat = _Flat(frame, memo.shapes if memo is not None else None)
    roots = [flat.add(game) for game, _ in trees]
    out: list[str | None] = [None] * len(trees)
    todo = [(k, r) for k, r in enumerate(roots) if r is not None]
    if not todo:
        return out
    names = frame.names
    z = frame.matrix()
    feature, threshold, left, x_right = flat.arrays()
    node, tree, zs, a, b = _walk(feature, threshold, np.stack([left, left + 1], axis=1), x_right, z, todo)
    scale = np.array([s for _, s in trees])[tree]
    counts = np.bincount(node, minlength=len(flat.leaf))  # states per node: the leaves met have some
    leaves = np.flatnonzero(counts)
    at_leaf = (np.cumsum(counts > 0) - 1)[node]  # each state's leaf, as a position in leaves
    owner = np.empty(len(counts), dtype=np.int64)
    owner[node] = tree  # a node is in one tree
    counts = counts[leaves]
    value: list[float] = []  # per leaf met: its constant (0.0 for a naive Bayes one)
    constant: list[bool] = []
    bad: set[int] = set()
    totals: dict[int, set] = defaultdict(set)
    naive: list[tuple] = []
    leaf, games = flat.leaf, [game for game, _ in trees]
    leaf_ids, owners = leaves.tolist(), owner[leaves].tolist()
    met = [leaf[i] for i in leaf_ids]
    met_games = [games[k] for k in owners]
    described = (memo.described(met, met_games, frame) if memo is not None
                 else [_described(m, g, frame, None) for m, g in zip(met, met_games, strict=True)])
    for pos, (k, (kind, params)) in enumerate(zip(owners, described, strict=True)):
        if kind == "constant":
            value.append(params[0])
            constant.append(True)
            totals[k].add("one" if params[1] else "zero")
            continue
        value.append(0.0)
        constant.append(kind is not None and params is None)  # a leaf that has not seen the class: 0
        if kind is None:
            bad.add(k)
            continue
        totals[k].add("one")
        if params is not None:
            naive.append((pos, k, params))
    value_of, constant = np.array(value), np.array(constant, dtype=bool)
    const = constant[at_leaf]
    if bad:  # the trees left to the caller
        const &= ~np.isin(tree, list(bad))
    if const.any():
        shares.add_constants(value_of[at_leaf][const] * scale[const], a[const], b[const])
    bayes: list[tuple] = []
    if naive:
        order = np.argsort(at_leaf, kind="stable")  # each leaf's states, in the walk's order
        ends = np.cumsum(counts)
        for pos, k, params in naive:
            if k in bad:
                continue
            if len(params[0]) > max_free:
                raise TooManyFree(f"a leaf that reads {len(params[0])} features (max_free={max_free})")
            bayes.append((order[ends[pos] - counts[pos]:ends[pos]], params))
    x = np.array([v if type(v := frame.x[f]) in (int, float) else 0.0 for f in names], dtype=float)
    _add_bayes(bayes, x, z, zs, a, b, scale, shares)
    for k, _ in todo:
        if k not in bad:
            out[k] = totals[k].pop() if len(totals[k]) == 1 else "mixed"
    return out


def _walk(feature: np.ndarray, threshold: np.ndarray, child: np.ndarray, x_right: np.ndarray, z: np.ndarray,
          todo: list[tuple[int, int]]) -> tuple:
    """The states ``(leaf, tree, point, a, b)`` at the leaves, from every background point
    (the rows of ``z``) at the roots of ``todo`` (``(tree, root)`` pairs), level by level: in
    one compiled call (``tree_walk`` of :mod:`streamxai.core.kernels`, the same states in the
    same order) when it is built, else with numpy."""
    n = len(z)
    roots = np.array([r for _, r in todo], dtype=np.int64)
    trees = np.array([k for k, _ in todo], dtype=np.int64)
    if KERNELS is not None:
        # a point's states at a tree's leaves follow different routes, one per leaf at most
        size = n * int(np.count_nonzero(feature < 0))
        out = [np.empty(size, dtype=np.int64) for _ in range(5)]
        count = KERNELS.tree_walk(feature, threshold, child, x_right, z, roots, trees, *out)
        if count is not None:
            return tuple(o[:count] for o in out)
    branch = feature >= 0
    node = np.repeat(roots, n)
    tree = np.repeat(trees, n)
    zs = np.tile(np.arange(n), len(todo))
    a = np.zeros(len(zs), dtype=np.int64)
    b = np.zeros(len(zs), dtype=np.int64)
    while True:
        active = branch[node]
        if not active.any():
            break
        at = np.flatnonzero(active)
        nd, pt = node[at], zs[at]
        f = feature[nd]
        bit = np.int64(1) << f
        z_right = ~(z[pt, f] <= threshold[nd])
        aa, bb = a[at], b[at]
        follow_x = (z_right == x_right[nd]) | ((aa & bit) != 0)
        free = ~follow_x & ((bb & bit) == 0)
        own = ~follow_x
        x_child = child[nd, x_right[nd].astype(np.int64)]
        z_child = child[nd, z_right.astype(np.int64)]
        rest = ~active
        node = np.concatenate([node[rest], x_child[follow_x], x_child[free], z_child[own]])
        tree = np.concatenate([tree[rest], tree[at][follow_x], tree[at][free], tree[at][own]])
        zs = np.concatenate([zs[rest], pt[follow_x], pt[free], pt[own]])
        a = np.concatenate([a[rest], aa[follow_x], aa[free] | bit[free], aa[own]])
        b = np.concatenate([b[rest], bb[follow_x], bb[free], bb[own] | (bit[own] * free[own])])
    return node, tree, zs, a, b


class LeafMemo:
    """What a walk learnt about each leaf, kept for the next explanation while the leaf stays
    as it was (the same object, the same total weight, active or not: a leaf's counts, Gaussians
    and naive Bayes mode change only when it learns). Only the leaves met by the last
    explanation are kept, so the memo is as large as the trees' leaves. It keeps the
    background's columns (:class:`~.frame.Columns`) and the trees' branches
    (:class:`~.tree_shape.ShapeCache`) too."""

    def __init__(self) -> None:
        self._kept: dict = {}
        self._met: dict = {}
        self._names: tuple = ()
        #: the trees' branches, kept while they stay (:class:`~.tree_shape.ShapeCache`)
        self.shapes = ShapeCache()
        #: the background's columns, kept for the next explanation too
        self.columns = Columns()

    def start(self, names: list) -> None:
        """Begin an explanation over the players ``names``."""
        names_t = tuple(names)
        self.shapes.start()
        self._kept = self._met if names_t == self._names else {}
        self._met = {}
        self._names = names_t

    def described(self, leaves: list, games: list[TreeGame], frame: Frame) -> list[tuple[str | None, Any]]:
        """:func:`_described` of each leaf (of the tree of ``games`` alongside), from what is
        kept of it while it stays as it was."""
        kept_get, met, out = self._kept.get, self._met, []
        for leaf, game in zip(leaves, games, strict=True):
            key = id(leaf)
            total, active = sum(leaf.stats.values()), leaf.is_active()
            kept = kept_get(key)
            if kept is None or kept[0] is not leaf or kept[1] != total or kept[2] is not active:
                kept = (leaf, total, active, *_built(leaf, game, frame), {})
            met[key] = kept
            if kept[3] == "constant":
                params = kept[4]
                out.append(("constant", (params[0].get(game.target, 0.0), params[1])))
            else:
                out.append(_for_game(kept[3], kept[4], kept[5], leaf, game, frame))
        return out


def _described(leaf: Any, game: TreeGame, frame: Frame, memo: LeafMemo | None) -> tuple[str | None, Any]:
    """``("constant", (value, predicts))`` for a leaf that reads nothing (its normalised class
    counts, as river's leaves give them), ``("bayes", params)`` for naive Bayes over Gaussians of
    numeric players (:func:`_for_target`), ``(None, None)`` for a leaf left to the caller."""
    if memo is not None:
        return memo.described([leaf], [game], frame)[0]
    return _for_game(*_built(leaf, game, frame), {}, leaf, game, frame)


def _for_game(kind: str | None, params: Any, by_target: dict, leaf: Any, game: TreeGame,
              frame: Frame) -> tuple[str | None, Any]:
    """What :func:`_described` says from what :func:`_built` says (``by_target`` keeps
    :func:`_for_target` per target)."""
    if kind == "constant":
        return kind, (params[0].get(game.target, 0.0), params[1])
    if kind == "bayes":
        if not frame.numeric.issuperset(leaf.splitters):
            return None, None
        target = game.target
        got = by_target.get(target, _UNSEEN)
        if got is _UNSEEN:
            got = by_target[target] = _for_target(params, target)
        return kind, got
    return kind, params


def _built(leaf: Any, game: TreeGame, frame: Frame) -> tuple[str | None, Any]:
    """What :func:`_described` keeps of a leaf for any target: ``("constant", (class
    probabilities, predicts))``, ``("bayes", _leaf_params)`` or ``(None, None)``."""
    reads = game.reads(leaf)
    if reads is None:
        return None, None
    stats = leaf.stats
    total = sum(stats.values())
    if not reads or not total or len(stats) == 1:
        # naive Bayes over one class gives it probability exp(v - v) = 1 whatever the row
        # (river drops a -inf log density), as the class counts normalised do
        return "constant", ({c: w / total for c, w in stats.items()} if total else {}, bool(total))
    if any(type(obs) is not GaussianSplitter or f not in frame.index for f, obs in leaf.splitters.items()):
        return None, None
    return "bayes", _leaf_params(leaf, frame)


def _leaf_params(leaf: Any, frame: Frame) -> tuple:
    """``(classes, feature indices, mu, var, prior votes)`` of a naive Bayes leaf, per feature
    and class in the leaf's class order (a class without weight votes 0 and has no terms)."""
    stats = leaf.stats
    classes = list(stats)
    total = sum(stats.values())
    prior = np.array([math.log(w / total) if w > 0 else 0.0 for w in stats.values()])
    features = sorted(leaf.splitters, key=frame.index.__getitem__)
    mu, var = np.zeros((len(features), len(classes))), np.zeros((len(features), len(classes)))
    for j, f in enumerate(features):
        dists = leaf.splitters[f]._att_dist_per_class
        for c, cls in enumerate(classes):
            g = dists.get(cls) if stats[cls] > 0 else None
            if g is not None:
                mu[j, c], var[j, c] = g.mu, g._var.get()
    return classes, np.array([frame.index[f] for f in features], dtype=np.int64), mu, var, prior


def _for_target(params: tuple, target: Any) -> tuple | None:
    """``(feature indices, mu, -2 var, log normaliser, dense, prior)`` with the target's class
    first (what :func:`_terms` reads); None when the leaf has not seen the target (its
    probability is 0)."""
    classes, idx, mu, var, prior = params
    try:
        t = classes.index(target)
    except ValueError:
        return None
    order = [t, *(c for c in range(len(classes)) if c != t)]
    var = var[:, order]
    dense = var > 0.0  # a class without a density gets no term
    safe = np.where(dense, var, 1.0)
    return idx, mu[:, order], -2.0 * safe, -_HALF_LOG_TAU - 0.5 * np.log(safe), dense, prior[order]


def _terms(values: np.ndarray, mu: np.ndarray, var2: np.ndarray, norm: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """Gaussian log densities (``(v - mu)^2 / (-2 var) + norm``), 0 where a class has no density
    (river skips the term)."""
    return np.where(dense, (values - mu) ** 2 / var2 + norm, 0.0)


def _add_bayes(bayes: list, x: np.ndarray, z: np.ndarray, zs: np.ndarray, a: np.ndarray, b: np.ndarray,
               scale: np.ndarray, shares: Shares) -> None:
    """Every naive Bayes leaf's points, stacked by (features read, classes). The votes are
    handed over relative to the target's (the target's class comes first)."""
    groups: dict[tuple[int, int], list] = defaultdict(list)
    for rows, params in bayes:
        groups[params[1].shape].append((rows, params))
    for items in groups.values():
        if len(items) == 1:  # one leaf: its parameters broadcast over its points
            rows, (idx, *gauss, prior) = items[0]
            tx = _terms(x[idx][:, None], *gauss)  # (k, classes)
            used = np.broadcast_to(idx, (len(rows), len(idx)))
        else:
            rows = np.concatenate([r for r, _ in items])
            which = np.repeat(np.arange(len(items)), [len(r) for r, _ in items])
            first = items[0][1]  # the leaves' parameters have one shape: one concatenation each
            idx, *gauss, prior = (np.concatenate([p[i] for _, p in items]).reshape(len(items), *first[i].shape)
                                  for i in range(6))
            tx = _terms(x[idx][:, :, None], *gauss)[which]  # (points, k, classes)
            idx, prior = idx[which], prior[which]
            gauss = [v[which] for v in gauss]
            used = idx
        tz = _terms(z[zs[rows][:, None], idx][:, :, None], *gauss)
        rel_x, rel_z = tx[..., 1:] - tx[..., :1], tz[..., 1:] - tz[..., :1]  # the other classes against the target
        ar, br = a[rows], b[rows]
        from_x = ((ar[:, None] >> idx) & 1).astype(bool)[:, :, None]
        fixed = (((ar | br)[:, None] >> idx) & 1).astype(bool)[:, :, None]
        rel_votes = (prior[..., 1:] - prior[..., :1] + np.where(from_x, rel_x, rel_z).sum(axis=1)).T  # (c - 1, points)
        rel_diff = np.where(fixed, 0.0, rel_x - rel_z).transpose(2, 0, 1)  # (c - 1, points, k)
        shares.add_votes(rel_votes, rel_diff, used, ar, br, scale[rows])
