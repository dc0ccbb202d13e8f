"""The background walk of plain Hoeffding trees with threshold branches, level by level.

A tree whose branches all compare a number with a threshold and whose leaves predict by majority
class or naive Bayes over Gaussians (the trees an ARF grows on numeric streams) is flattened into
arrays (:class:`~.tree_shape.TreeShape`, :class:`~.leaf_table.LeafView`, both kept between
explanations). All states (a tree, a node, a background point and its masks, as in
:mod:`.background_walk`) move down one level per step, in one compiled call (``tree_walk``) or a
few numpy calls per level; :class:`~.shares.Shares` settles the leaves. Other trees are left to
:mod:`.background_walk` (:func:`flat_collect` says which)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from ..kernels import KERNELS
from .frame import Frame
from .leaf_table import BAYES, BRANCH, CONSTANT, EMPTY, OTHER, REFUSED, UNSEEN, LeafMemo
from .shares import Shares
from .trees import TooManyFree, TreeGame

__all__ = ["flat_collect"]

_UNSEEN = object()
#: per code of :mod:`.leaf_table`: whether the leaf's value is a constant (its ``value``)
_CONSTANT = np.zeros(max(BRANCH, CONSTANT, EMPTY, BAYES, UNSEEN, OTHER, REFUSED) + 1, dtype=bool)
_CONSTANT[[CONSTANT, EMPTY, UNSEEN]] = True
_EXACT = 2 ** 53  # an int within it compares with a float as its float does


class _Flat:
    """Trees as arrays: per branch ``feature``, ``threshold``, ``left`` (children ``left`` and
    ``left + 1``) and ``x_right``; per leaf ``leaf``, ``code``, ``value`` and ``params``
    (:class:`~.leaf_table.LeafView`), from ``memo``."""

    def __init__(self, frame: Frame, memo: LeafMemo):
        self.frame = frame
        self.memo = memo
        self.feature: list[np.ndarray] = []
        self.threshold: list[np.ndarray] = []
        self.left: list[np.ndarray] = []
        self.x_right: list[np.ndarray | None] = []  # None: compared as floats in arrays()
        self.code: list[np.ndarray] = []
        self.value: list[np.ndarray] = []
        self.leaf: list[Any] = []
        self.params: list[Any] = []
        self._usable: dict = {}  # feature -> what _usable_feature says

    def add(self, game: TreeGame) -> int | None:
        """The root's id, or None when the tree has a node the flat walk does not take. Nodes
        get their ids in breadth-first order."""
        memo = self.memo
        shape = memo.shapes.get(game.tree, game.adaptive)
        if shape is None:
            return None
        usable = self._usable
        at_x = []
        for f in shape.features:
            got = usable.get(f, _UNSEEN)
            if got is _UNSEEN:
                got = usable[f] = self._usable_feature(f)
            if got is None:
                return None
            at_x.append(got)
        view, tested = memo.leaves(game, shape, self.frame)
        start = len(self.leaf)
        if shape.floats and all(type(v) is float or -_EXACT <= v <= _EXACT for v in at_x):  # compared as floats exactly
            self.x_right.append(None)
        else:
            self.x_right.append(np.array([c >= 0 and not at_x[c] <= t
                                          for c, t in zip(shape.code.tolist(), shape.thresholds, strict=True)],
                                         dtype=bool))
        self.feature.append(tested)
        self.threshold.append(shape.threshold)
        self.left.append(shape.left)
        self.code.append(view.code)
        self.value.append(view.value)
        self.leaf += shape.leaf
        self.params += view.params
        return start

    def arrays(self, x: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(feature, threshold, left, x_right, code, value)`` of all the trees added (``x``: its
        values as floats, by player)."""
        feature, threshold, code, value = (np.concatenate(c) for c in (self.feature, self.threshold, self.code,
                                                                       self.value))
        branch = feature >= 0
        sizes = [len(f) for f in self.feature]
        starts = np.cumsum([0, *sizes[:-1]])
        # a leaf's first child is -1 already; a branch's moves by its tree's start
        left = self.left[0] if len(sizes) == 1 else np.where(branch, np.concatenate(self.left) + np.repeat(starts, sizes),
                                                             -1)
        x_right = np.zeros(len(feature), dtype=bool)
        x_right[branch] = ~(x[feature[branch]] <= threshold[branch])
        for start, size, exact in zip(starts.tolist(), sizes, self.x_right, strict=True):
            if exact is not None:
                x_right[start:start + size] = exact
        return feature, threshold, left, x_right, code, value

    def _usable_feature(self, f: Any) -> Any:
        """``x``'s value of a feature a threshold branch may test here (a player whose value is a
        number in ``x`` and in every background row), else None."""
        frame = self.frame
        if f not in frame.index or type(frame.x[f]) not in (int, float) or frame.column(f) is None:
            return None
        return frame.x[f]


def flat_collect(trees: list[tuple[TreeGame, float]], frame: Frame, max_free: int, shares: Shares,
                 memo: LeafMemo | None = None) -> list[str | None]:
    """Add the shares of each ``(tree, scale)`` it takes to ``shares``; per tree, what its
    probabilities sum to, or None for a tree left to the caller. ``memo`` keeps the trees'
    branches and leaves for the next explanation (without it, they are read afresh)."""
    if memo is None:
        memo = LeafMemo()
    memo.start(frame.names)
    flat = _Flat(frame, memo)
    roots = [flat.add(game) for game, _ in trees]
    out: list[str | None] = [None] * len(trees)
    todo = [(k, r) for k, r in enumerate(roots) if r is not None]
    if not todo:
        return out
    names = frame.names
    z = frame.matrix()
    x = np.array([v if type(v := frame.x[f]) in (int, float) else 0.0 for f in names], dtype=float)
    feature, threshold, left, x_right, code_of, value_of = flat.arrays(x)
    node, tree, zs, a, b = _walk(feature, threshold, np.stack([left, left + 1], axis=1), x_right, z, todo)
    scale = np.array([s for _, s in trees])[tree]
    counts = np.bincount(node, minlength=len(flat.leaf))  # states per node: the leaves met have some
    leaves = np.flatnonzero(counts)
    at_leaf = (np.cumsum(counts > 0) - 1)[node]  # each state's leaf, as a position in leaves
    owner = np.empty(len(counts), dtype=np.int64)
    owner[node] = tree  # a node is in one tree
    counts, code, owners = counts[leaves], code_of[leaves], owner[leaves]
    if not frame.numeric.issuperset(names):  # a naive Bayes leaf reads players only where they are numbers
        for pos in np.flatnonzero((code == BAYES) | (code == UNSEEN)).tolist():
            if not frame.numeric.issuperset(flat.leaf[leaves[pos]].splitters):
                code[pos] = OTHER
    kinds = np.bincount(code, minlength=len(_CONSTANT))  # the leaves met of each code
    if kinds[REFUSED]:
        raise flat.params[leaves[np.flatnonzero(code == REFUSED)[0]]]
    bad = np.unique(owners[code == OTHER]) if kinds[OTHER] else ()  # the trees left to the caller
    const = _CONSTANT[code][at_leaf]
    if len(bad):
        const &= ~np.isin(tree, bad)
    if const.any():
        shares.add_constants(value_of[leaves][at_leaf][const] * scale[const], a[const], b[const])
    bad_trees = set(bad.tolist()) if len(bad) else set()
    bayes: list[tuple] = []
    if kinds[BAYES]:
        naive = np.flatnonzero(code == BAYES)
        order = np.argsort(at_leaf, kind="stable")  # each leaf's states, in the walk's order
        ends = np.cumsum(counts)
        starts = ends - counts
        params_of = flat.params
        for pos, k, leaf in zip(naive.tolist(), owners[naive].tolist(), leaves[naive].tolist(), strict=True):
            if k in bad_trees:
                continue
            params = params_of[leaf]
            if len(params[0]) > max_free:
                raise TooManyFree(f"a leaf that reads {len(params[0])} features (max_free={max_free})")
            bayes.append((order[starts[pos]:ends[pos]], params))
    _add_bayes(bayes, x, z, zs, a, b, scale, shares)
    if kinds[EMPTY]:
        ones = np.bincount(owners[code != EMPTY], minlength=len(trees)).tolist()  # a leaf that predicts
        zeros = np.bincount(owners[code == EMPTY], minlength=len(trees)).tolist()  # one that predicts nothing
    else:
        ones, zeros = [1] * len(trees), [0] * len(trees)
    for k, _ in todo:
        if k not in bad_trees:
            out[k] = "mixed" if ones[k] and zeros[k] else "one" if ones[k] else "zero"
    return out


def _walk(feature: np.ndarray, threshold: np.ndarray, child: np.ndarray, x_right: np.ndarray, z: np.ndarray,
          todo: list[tuple[int, int]]) -> tuple:
    """The states ``(leaf, tree, point, a, b)`` at the leaves, from every background point at the
    roots of ``todo``, level by level: one compiled call (``tree_walk``) when built, else numpy."""
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


def _terms(values: np.ndarray, mu: np.ndarray, var2: np.ndarray, norm: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """Gaussian log densities (``(v - mu)^2 / (-2 var) + norm``), 0 where a class has no density
    (river skips the term)."""
    return np.where(dense, (values - mu) ** 2 / var2 + norm, 0.0)


def _unpacked(packed: np.ndarray, n: int, k: int, c: int) -> tuple[np.ndarray, ...]:
    """The parameters of ``n`` naive Bayes leaves that read ``k`` features over ``c`` classes,
    from their packed rows one after the other: ``(feature indices, mu, -2 var, log normaliser,
    dense, prior)``, each with the leaves first."""
    rows = packed.reshape(n, -1)
    kc = k * c
    idx = rows[:, :k].astype(np.int64)
    mu, var2, norm, dense = (rows[:, k + i * kc:k + (i + 1) * kc].reshape(n, k, c) for i in range(4))
    return idx, mu, var2, norm, dense != 0.0, rows[:, k + 4 * kc:]


def _add_bayes(bayes: list, x: np.ndarray, z: np.ndarray, zs: np.ndarray, a: np.ndarray, b: np.ndarray,
               scale: np.ndarray, shares: Shares) -> None:
    """Every naive Bayes leaf's points, stacked by (features read, classes). The votes are
    handed over relative to the target's (the target's class comes first)."""
    groups: dict[tuple[int, int], list] = defaultdict(list)
    for rows, params in bayes:
        groups[params[1].shape].append((rows, params))
    for items in groups.values():
        if len(items) == 1:  # one leaf: its parameters broadcast over its points
            rows, (idx, *gauss, prior, _) = items[0]
            tx = _terms(x[idx][:, None], *gauss)  # (k, classes)
            used = np.broadcast_to(idx, (len(rows), len(idx)))
        else:
            rows = np.concatenate([r for r, _ in items])
            which = np.repeat(np.arange(len(items)), [len(r) for r, _ in items])
            idx, *gauss, prior = _unpacked(np.concatenate([p[6] for _, p in items]), len(items), *items[0][1][1].shape)
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
