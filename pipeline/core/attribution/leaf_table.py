"""What the flat walk reads of a tree's leaves, as arrays over the tree's nodes, kept between
explanations for the leaves that have not changed.

A leaf is described once for every class (:func:`_built`) and then per explained class
(:class:`LeafView`). :class:`LeafMemo` describes again only the leaves that changed: a leaf
changes only when it learns (its class counts grow) or is deactivated or reactivated (its
``splitters`` is replaced), so a leaf whose counts equal the copy taken and whose ``splitters`` is
the same object (held here, so no new object takes its address) is as it was."""

from __future__ import annotations

import math
from itertools import compress, count
from operator import attrgetter, is_, is_not, ne
from typing import Any

import numpy as np
from river.tree.splitter.gaussian_splitter import GaussianSplitter

from ..fastpath.base import Unsupported
from .frame import Columns, Frame
from .tree_shape import ShapeCache, TreeShape
from .trees import TreeGame

__all__ = ["LeafMemo", "LeafView", "BRANCH", "CONSTANT", "EMPTY", "BAYES", "UNSEEN", "OTHER", "REFUSED"]

#: what a node is to the flat walk: a branch; a constant leaf (its probability of the class); an
#: empty one (value 0); naive Bayes over Gaussians that has seen the class (its parameters) or not
#: (probability 0); a leaf left to the caller; one no exact walk takes (its :class:`Unsupported`)
BRANCH, CONSTANT, EMPTY, BAYES, UNSEEN, OTHER, REFUSED = range(7)

_HALF_LOG_TAU = 0.5 * math.log(2 * math.pi)
_STATS = attrgetter("stats")
_SPLITTERS = attrgetter("splitters")


class LeafView:
    """One tree's leaves for one class, per node: ``code`` (above), ``value`` (a constant
    leaf's) and ``params`` (:func:`_for_target` of a ``BAYES`` leaf, the exception of a
    ``REFUSED`` one, else None)."""

    __slots__ = ("code", "value", "params", "stale")

    def __init__(self, size: int):
        self.code = np.zeros(size, dtype=np.int8)
        self.value = np.zeros(size)
        self.params: list = [None] * size
        #: positions in the tree's leaves described again since this view was brought up to date
        self.stale: list[int] = []


class _TreeLeaves:
    """The leaves of one tree's :class:`~.tree_shape.TreeShape`, described (:func:`_built`),
    with a copy of the class counts and the ``splitters`` each had then, and a
    :class:`LeafView` per class."""

    __slots__ = ("shape", "nodes", "leaves", "stats", "splitters", "built", "views", "_tested")

    def __init__(self, shape: TreeShape, game: TreeGame, frame: Frame, old: _TreeLeaves | None):
        self.shape = shape
        self.nodes = [i for i, leaf in enumerate(shape.leaf) if leaf is not None]
        self.leaves = [shape.leaf[i] for i in self.nodes]
        self.stats = [dict(leaf.stats) for leaf in self.leaves]
        self.splitters = list(map(_SPLITTERS, self.leaves))
        where = {id(leaf): j for j, leaf in enumerate(old.leaves)} if old is not None else {}
        self.built = []
        for leaf, stats, splitters in zip(self.leaves, self.stats, self.splitters, strict=True):
            j = where.get(id(leaf))
            if (j is not None and old.leaves[j] is leaf and old.stats[j] == stats  # type: ignore[union-attr]
                    and old.splitters[j] is splitters):  # type: ignore[union-attr]
                self.built.append(old.built[j])  # type: ignore[union-attr]
            else:
                self.built.append(_refused_or_built(leaf, game, frame))
        self.views: dict = {}
        self._tested: tuple = (None, None)

    def tested(self, shape: TreeShape, frame: Frame) -> np.ndarray:
        """Per node of ``shape``, the player its branch tests (-1 at a leaf); every feature
        tested is a player."""
        if self._tested[0] is not shape:
            index = frame.index
            players = np.array([index[f] for f in shape.features] + [-1], dtype=np.int64)
            self._tested = (shape, players[shape.code])  # a leaf's code -1 picks the -1
        return self._tested[1]

    def holds(self, shape: TreeShape) -> bool:
        """True when ``shape`` has this one's leaves at the same nodes."""
        return shape is self.shape or (len(shape.leaf) == len(self.shape.leaf)
                                       and all(map(is_, shape.leaf, self.shape.leaf)))

    def refresh(self, game: TreeGame, frame: Frame) -> None:
        """Describe again the leaves that changed since they were described."""
        stats, splitters = list(map(_STATS, self.leaves)), list(map(_SPLITTERS, self.leaves))
        if stats == self.stats and all(map(is_, splitters, self.splitters)):
            return
        changed = set(compress(count(), map(ne, stats, self.stats)))
        changed.update(compress(count(), map(is_not, splitters, self.splitters)))
        for j in sorted(changed):
            leaf = self.leaves[j]
            self.built[j] = _refused_or_built(leaf, game, frame)
            self.stats[j], self.splitters[j] = dict(leaf.stats), splitters[j]
            for view in self.views.values():
                view.stale.append(j)

    def view(self, target: Any) -> LeafView:
        """The leaves for class ``target``."""
        view = self.views.get(target)
        if view is None:
            view = self.views[target] = LeafView(len(self.shape.leaf))
            todo: Any = range(len(self.nodes))
        else:
            todo, view.stale = view.stale, []
        nodes, built = self.nodes, self.built
        for j in todo:
            node = nodes[j]
            view.code[node], view.value[node], view.params[node] = _for_class(built[j], target)
        return view


class LeafMemo:
    """Each tree's leaves described (:class:`LeafView`), kept for the next explanation and described
    again only where a leaf changed, with the background's columns and the trees' branches."""

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

    def leaves(self, game: TreeGame, shape: TreeShape, frame: Frame) -> tuple[LeafView, np.ndarray]:
        """The leaves of ``game``'s tree, whose branches are ``shape`` (every feature they test a
        player), for ``game.target``, and per node the player its branch tests (-1 at a leaf)."""
        key = id(game.tree)
        table = self._kept.get(key)
        if table is not None and table.shape.tree is game.tree and table.holds(shape):
            table.shape = shape
            table.refresh(game, frame)
        else:
            table = _TreeLeaves(shape, game, frame, table if table is not None and table.shape.tree is game.tree
                                else None)
        self._met[key] = table
        return table.view(game.target), table.tested(shape, frame)


def _for_class(built: tuple, target: Any) -> tuple[int, float, Any]:
    """``(code, value, params)`` of a leaf described as ``built`` (:func:`_refused_or_built`)
    for class ``target``."""
    kind, params, by_target = built
    if kind == "constant":
        return (CONSTANT if params[1] else EMPTY), params[0].get(target, 0.0), None
    if kind == "bayes":
        got = by_target.get(target, by_target)
        if got is by_target:
            got = by_target[target] = _for_target(params, target)
        return (UNSEEN, 0.0, None) if got is None else (BAYES, 0.0, got)
    if kind == "refused":
        return REFUSED, 0.0, params
    return OTHER, 0.0, None


def _refused_or_built(leaf: Any, game: TreeGame, frame: Frame) -> tuple[str | None, Any, dict]:
    """:func:`_built` of ``leaf`` with a dict for :func:`_for_target` per class, or
    ``("refused", the Unsupported raised, {})``."""
    try:
        return (*_built(leaf, game, frame), {})
    except Unsupported as e:
        return "refused", e, {}


def _built(leaf: Any, game: TreeGame, frame: Frame) -> tuple[str | None, Any]:
    """What is kept of a leaf for any class: ``("constant", (class probabilities, predicts))``,
    ``("bayes", _leaf_params)`` for naive Bayes over Gaussians, or ``(None, None)``."""
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
    """``(feature indices, mu, -2 var, log normaliser, dense, prior, packed)`` with the target's
    class first (``packed``: the six as one row); None when the leaf has not seen the target."""
    classes, idx, mu, var, prior = params
    try:
        t = classes.index(target)
    except ValueError:
        return None
    order = [t, *(c for c in range(len(classes)) if c != t)]
    var = var[:, order]
    dense = var > 0.0  # a class without a density gets no term
    safe = np.where(dense, var, 1.0)
    mu, var2, norm, prior = mu[:, order], -2.0 * safe, -_HALF_LOG_TAU - 0.5 * np.log(safe), prior[order]
    packed = np.concatenate([idx, mu.ravel(), var2.ravel(), norm.ravel(), dense.ravel(), prior], dtype=float)
    return idx, mu, var2, norm, dense, prior, packed
