"""Exact interventional Shapley values of river's Hoeffding trees, by walking each tree.

Each route from the root to a leaf is reached by exactly the coalitions that hold the features
where ``x`` took it and lack those where the background point did, so the routes split the
coalitions between them: a constant leaf makes a unanimity game
(:func:`~.coalitions.unanimity_shares`), a leaf that reads the row is evaluated on every subset of
the free features it reads (:func:`~.coalitions.subset_shares`). Leaf values come from the leaves'
own ``prediction``, combined as the tree combines them. The derivation is in
docs/pages/concepts/algorithms.md (Local attributions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from river import linear_model, optim
from river.tree import (
    HoeffdingAdaptiveTreeClassifier,
    HoeffdingAdaptiveTreeRegressor,
    HoeffdingTreeClassifier,
    HoeffdingTreeRegressor,
)
from river.tree.base import Branch
from river.tree.nodes.hatc_nodes import AdaBranchClassifier, AdaLeafClassifier
from river.tree.nodes.hatr_nodes import AdaBranchRegressor
from river.tree.nodes.htc_nodes import LeafMajorityClass, LeafNaiveBayes, LeafNaiveBayesAdaptive
from river.tree.nodes.htr_nodes import LeafAdaptive, LeafMean

from ..fastpath.base import Unsupported, tree_kind
from ..fastpath.walk import is_branch
from .coalitions import masks, subset_shares, unanimity_shares

__all__ = ["TreeGame", "tree_game", "tree_shapley", "route_shares", "step", "total_kind", "TooManyFree"]

_ALL = None  # a leaf that may read any feature


class TooManyFree(Unsupported):
    """A route's leaves read more free features than the enumeration allows."""


def step(node: Any, row: dict) -> tuple[Any, bool]:
    """The child ``row`` goes to, and whether river's walk visits it twice (a missing feature
    or an unseen category sends the row down the most traversed path, yielding it twice)."""
    try:
        return node.next(row), False
    except KeyError:
        return node.most_common_path()[1], True


class TreeGame:
    """One river tree, seen as the leaves a row reaches and how their predictions combine:
    ``kind`` ``"htc"`` or ``"hatc"`` (classifiers, on the probability of ``target``), ``"htr"`` or
    ``"hatr"``; :meth:`value` gives the output on a row reaching ``leaves`` and its probabilities' sum."""

    def __init__(self, tree: Any, kind: str, target: Any = None):
        self.tree = tree
        self.kind = kind
        self.target = target
        self.adaptive = kind in ("hatc", "hatr")
        self.classes = list(tree.classes) if kind == "hatc" else None
        self._reads: dict[int, frozenset | None] = {}

    def routes(self, x: dict, z: dict) -> list[tuple[frozenset, frozenset, tuple]]:
        """``(A, B, leaves)`` of every route the hybrids of ``x`` and ``z`` take."""
        root = self.tree._root
        if root is None:
            return [(frozenset(), frozenset(), ())]
        out: list = []
        self._visit(root, x, z, frozenset(), frozenset(), (), False, out)
        return out

    def _visit(self, node: Any, x: dict, z: dict, a: frozenset, b: frozenset, alts: tuple, twice: bool,
               out: list) -> None:
        while is_branch(node):
            if self.adaptive and node._alternate_tree:
                alt = node._alternate_tree
                if is_branch(alt):  # river cannot predict with it either
                    raise Unsupported("an alternate tree that is a branch")
                alts = alts + (alt,) * (2 if twice else 1)
            cx, tx = step(node, x)
            cz, tz = step(node, z)
            if cx is cz and tx == tz:
                node, twice = cx, tx
                continue
            f = node.feature
            if f in a:
                node, twice = cx, tx
            elif f in b:
                node, twice = cz, tz
            else:
                self._visit(cx, x, z, a | {f}, b, alts, tx, out)
                a, b, node, twice = a, b | {f}, cz, tz
        out.append((a, b, alts + (node,)))

    def reads(self, leaf: Any) -> frozenset | None:
        """The features ``leaf``'s prediction reads (``None``: possibly any)."""
        key = id(leaf)
        if key not in self._reads:
            self._reads[key] = self._leaf_reads(leaf)
        return self._reads[key]

    def additive(self, leaf: Any) -> bool:
        """True when a regression leaf's prediction is a constant plus one term per feature, so a
        route of such leaves is exact from ``1 + k`` predictions instead of ``2^k``."""
        if self.kind not in ("htr", "hatr"):
            return False
        if not self.reads(leaf):
            return True
        model = getattr(leaf, "_leaf_model", None)
        return (type(model) is linear_model.LinearRegression
                and type(model.loss).mean_func is optim.losses.RegressionLoss.mean_func)

    def _leaf_reads(self, leaf: Any) -> frozenset | None:
        tree = self.tree
        t = type(leaf)
        if self.kind in ("htr", "hatr"):
            if t.prediction is LeafMean.prediction:
                return frozenset()
            if t.prediction is LeafAdaptive.prediction and leaf._fmse_mean < leaf._fmse_model:
                return frozenset()
            return _ALL
        bayes = frozenset(leaf.splitters or ())
        if t is AdaLeafClassifier:
            if not leaf.stats:
                raise Unsupported("an empty leaf of an adaptive tree")  # river cannot add its None
            option = tree.leaf_prediction
            if not leaf.is_active() or option == tree._MAJORITY_CLASS:
                return frozenset()
            if option == tree._NAIVE_BAYES:
                return bayes if leaf.total_weight >= tree.nb_threshold else frozenset()
            return bayes if leaf.is_active() and leaf._nb_correct_weight >= leaf._mc_correct_weight else frozenset()
        if t.prediction is LeafMajorityClass.prediction:
            return frozenset()
        if t.prediction is LeafNaiveBayes.prediction:
            return bayes if leaf.is_active() and leaf.total_weight >= tree.nb_threshold else frozenset()
        if t.prediction is LeafNaiveBayesAdaptive.prediction:
            return bayes if leaf.is_active() and leaf._nb_correct_weight >= leaf._mc_correct_weight else frozenset()
        return _ALL

    def value(self, leaves: tuple, row: dict) -> tuple[float, float]:
        """The tree's prediction for ``row``, which reaches ``leaves``, and its probabilities' sum."""
        tree = self.tree
        if not leaves:  # an empty tree
            return (0.0, 0.0) if self.classes is not None or self.kind == "htc" else (0.0, 1.0)
        if self.kind == "htr":
            return float(leaves[-1].prediction(row, tree=tree)), 1.0
        if self.kind == "hatr":
            return sum(leaf.prediction(row, tree=tree) for leaf in leaves) / len(leaves), 1.0
        if self.kind == "htc":
            dist = leaves[-1].prediction(row, tree=tree)
            total = sum(dist.values())
            return float(dist.get(self.target, 0.0)), float(total)
        proba = dict.fromkeys(self.classes, 0.0)  # type: ignore[arg-type]
        for leaf in leaves:
            dist = leaf.prediction(row, tree=tree)
            if dist is None:
                raise Unsupported("an adaptive tree leaf without a prediction")
            for k, v in dist.items():
                proba[k] = proba.get(k, 0.0) + v
        factor = sum(proba.values())
        if factor != 0 and factor == factor:
            proba = {k: v / factor for k, v in proba.items()}
        return float(proba.get(self.target, 0.0)), float(sum(proba.values()))


def tree_game(tree: Any, target: Any = None) -> TreeGame:
    """The :class:`TreeGame` of a river Hoeffding tree; :class:`Unsupported` for anything else
    (a subclass that predicts its own way, a branch that walks its own way)."""
    kind = tree_kind(tree, "predict_proba_one", HoeffdingAdaptiveTreeClassifier, HoeffdingTreeClassifier)
    if kind is not None:
        kind += "c"
        branch_walk = AdaBranchClassifier.traverse if kind == "hatc" else Branch.traverse
    else:
        kind = tree_kind(tree, "predict_one", HoeffdingAdaptiveTreeRegressor, HoeffdingTreeRegressor)
        if kind is None:
            raise Unsupported(f"{type(tree).__name__} is not a river Hoeffding tree")
        kind += "r"
        branch_walk = AdaBranchRegressor.traverse if kind == "hatr" else Branch.traverse
    root = tree._root
    if root is not None and is_branch(root) and type(root).traverse is not branch_walk:
        raise Unsupported(f"{type(root).__name__} traverses its own way")
    return TreeGame(tree, kind, target)


def tree_shapley(
    game: TreeGame, x: dict, background: Sequence[dict], features: Sequence[str], max_free: int = 12
) -> tuple[np.ndarray, float, float, str]:
    """Interventional Shapley values of ``features`` at ``x`` (an array), the base value, ``f(x)``
    and what the predictions' probabilities sum to (``"one"``, ``"zero"`` or ``"mixed"``, for a
    forest's average). :class:`TooManyFree` when a route's leaves read more than ``max_free``."""
    index = {f: i for i, f in enumerate(features)}
    phi = np.zeros(len(features))
    base = fx = 0.0
    totals: set[str] = set()
    const: dict[tuple, tuple[float, float]] = {}
    for z in background:
        differ = {f for f in features if x[f] != z[f]}
        for a, b, leaves in game.routes(x, z):
            shares, at_base, at_x = route_shares(game, x, z, a, b, leaves, differ, index, max_free, const, totals)
            for f, v in shares:
                phi[index[f]] += v
            base += at_base
            fx += at_x
    n = len(background)
    return phi / n, base / n, fx / n, totals.pop() if len(totals) == 1 else "mixed"


def route_shares(game: TreeGame, x: dict, z: dict, a: frozenset, b: frozenset, leaves: tuple, differ: set,
                 index: dict, max_free: int, const: dict, totals: set) -> tuple[list, float, float]:
    """One route's part of the values for background point ``z``: ``(feature, share)`` pairs and
    its parts of ``f(z)`` and ``f(x)``; ``const`` caches constant routes, ``totals`` collects sums."""
    reads: set = set()
    for leaf in leaves:
        r = game.reads(leaf)
        reads |= differ if r is None else (r & differ)
    free = sorted((reads - a) - b, key=index.__getitem__)
    if not free:
        key = tuple(map(id, leaves))
        got = const.get(key) if not reads else None
        if got is None:
            got = game.value(leaves, _hybrid(x, z, a))
            if not reads:
                const[key] = got
        g, total = got
        totals.add(total_kind(total))
        share_in, share_out = unanimity_shares(len(a), len(b))
        share_in, share_out = share_in * g, share_out * g
        values = np.array([g])
        shares = np.zeros(0)
    elif all(game.additive(leaf) for leaf in leaves):
        # g(T) = g({}) + sum of each free feature's step: the unanimity game of (A, B) times g({})
        # plus, per free feature j, that of (A + j, B) times its step
        g0 = game.value(leaves, _hybrid(x, z, a))[0]
        steps = np.array([game.value(leaves, _hybrid(x, z, a | {f}))[0] - g0 for f in free])
        totals.add("one")
        in0, out0 = unanimity_shares(len(a), len(b))
        in1, out1 = unanimity_shares(len(a) + 1, len(b))
        share_in, share_out = g0 * in0 + steps.sum() * in1, g0 * out0 + steps.sum() * out1
        values = np.array([g0, g0 + steps.sum()])
        shares = steps * in1
    else:
        if len(free) > max_free:
            raise TooManyFree(f"a route whose leaves read {len(free)} free features (max_free={max_free})")
        got_all = [game.value(leaves, _hybrid(x, z, a.union([f for f, keep in zip(free, m, strict=True) if keep])))
                   for m in masks(len(free))]
        values = np.array([g for g, _ in got_all])
        totals.update(total_kind(t) for _, t in got_all)
        share_in, share_out, shares = subset_shares(len(a), len(b), values)
    out = [(f, share_in) for f in a] + [(f, share_out) for f in b] + list(zip(free, shares.tolist(), strict=True))
    return out, float(values[0]) if not a else 0.0, float(values[-1]) if not b else 0.0


def total_kind(total: float) -> str:
    """A prediction's probabilities' sum as "one", "zero" or "other" (rounding aside)."""
    if abs(total - 1.0) <= 1e-12:
        return "one"
    return "zero" if total == 0 else "other"


def _hybrid(x: dict, z: dict, present: Any) -> dict:
    """``z`` with the features in ``present`` taken from ``x``."""
    row = dict(z)
    for f in present:
        row[f] = x[f]
    return row
