"""Feature removal by conditional (observational) sampling, iSAGE paper §3.2.2, Algorithms 3 and 4.

>>> import random
>>> rem = ConditionalRemoval(["a", "b"], tree_params={"grace_period": 50}, seed=1)
>>> gen = random.Random(0)
>>> for _ in range(600):                      # b is a noisy copy of a
...     a = gen.random()
...     rem.update({"a": a, "b": a + 0.01 * gen.random()})
>>> rem.trees["b"].n_nodes > 1                # tree for b learned to split on a
True
>>> rows = [rem.sample({"a": 0.9, "b": 0.0}, {"a"}, gen) for _ in range(200)]
>>> sum(r["b"] for r in rows) / len(rows) > 0.6          # b drawn given a = 0.9
True
>>> rows = [rem.sample({"a": 0.9, "b": 0.0}, set(), gen) for _ in range(200)]
>>> 0.3 < sum(r["b"] for r in rows) / len(rows) < 0.7    # a absent: split ratios, ~E[b]
True
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterator, Sequence
from typing import Any

from river import tree as river_tree
from river.tree.base import Branch

from ..base import check_feature_names, check_positive_int
from ..rng import derive_seed, make_rng
from ..storage.reservoir import GeometricReservoir
from .marginal import Removal

__all__ = ["ConditionalRemoval"]


class _LeafStore:
    """Geometric reservoir of one leaf (Algorithm 2); the generator is the tree's, passed in."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, value: Any, size: int, rng: random.Random) -> None:
        items = self.items
        if len(items) < size:
            items.append(value)
        else:
            items[rng.randrange(size)] = value

    def __getstate__(self) -> list[Any]:
        return self.items

    def __setstate__(self, state: list[Any]) -> None:
        self.items = state


def _root(tree: Any) -> Any:
    try:
        return tree._root  # river keeps the root private; every Hoeffding tree has it
    except AttributeError:
        raise TypeError(
            f"{type(tree).__name__} has no _root; ConditionalRemoval needs a river Hoeffding tree"
        ) from None


def _leaf_of(node: Any, x: dict[str, Any]) -> Any:
    """The leaf ``x`` reaches with every feature present (river's own routing rules)."""
    while isinstance(node, Branch):
        try:
            node = node.next(x)
        except KeyError:  # missing feature or unseen category: river's most common path
            node = node.most_common_path()[1]
    return node


def _iter_leaves(node: Any) -> Iterator[Any]:
    """Leaves of the main tree (alternate subtrees of an adaptive tree are not walked)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Branch):
            stack.extend(c for c in reversed(n.children) if c is not None)
        else:
            yield n


class ConditionalRemoval(Removal):
    """Observational removal: per-feature adaptive trees with leaf reservoirs.

    For every feature ``j`` a Hoeffding adaptive tree (a classifier for a categorical feature: those
    in ``categorical`` and those whose first value is a string or a bool) learns ``x^(j)`` from the
    other features, each leaf keeping a geometric reservoir of the values that reached it
    (Algorithm 3). Absent feature ``j`` is drawn (Algorithm 4) by walking tree ``j``, following ``x``
    at present features and a child drawn by its share of past weight at absent ones, from the leaf's
    reservoir; new or empty leaves are filled from a pool of recent rows. ``tree_params`` go to both
    tree kinds. Seeds derive from ``(seed, "conditional", ...)``; draws use the caller's generator."""

    def __init__(
        self,
        feature_names: Sequence[str],
        categorical: Sequence[str] | None = None,
        storage_size: int = 100,
        tree_params: dict[str, Any] | None = None,
        seed: int | None = None,
    ):
        self.feature_names = feature_names
        self.categorical = categorical
        self.storage_size = storage_size
        self.tree_params = tree_params
        self.seed = seed
        self._reset()

    # state -----------------------------------------------------------------------
    def _reset(self) -> None:
        names = check_feature_names(self.feature_names)
        self._names = names
        self._size = check_positive_int(self.storage_size, "storage_size")
        cats = list(self.categorical or ())
        unknown = [c for c in cats if c not in names]
        if unknown:
            raise ValueError(f"categorical features {unknown} are not in feature_names {names}")
        if self.tree_params is not None and not isinstance(self.tree_params, dict):
            raise TypeError(f"tree_params must be a dict of tree keyword arguments, got {self.tree_params!r}")
        self._trees: dict[str, Any] | None = None  # built on the first observation
        self._categorical_used: list[str] | None = None
        self._stores: dict[str, dict[Any, _LeafStore]] = {f: {} for f in names}
        self._rngs = {f: make_rng(self.seed, "conditional", f, "leaf-reservoirs") for f in names}
        self._pool = GeometricReservoir(self._size, seed=derive_seed(self.seed, "conditional", "pool"))
        self._split_cache: dict[Any, tuple[list[Any], list[float], float]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_split_cache"] = {}  # derived from the trees; rebuilt lazily
        return state

    def _build(self, x: dict[str, Any]) -> dict[str, Any]:
        missing = [f for f in self._names if f not in x]
        if missing:
            raise KeyError(f"observation lacks features {missing}; it has {sorted(x)}")
        cats = set(self.categorical or ()) | {
            f for f in self._names if isinstance(x[f], (str, bool))
        }
        params = dict(self.tree_params or {})
        trees = {}
        for f in self._names:
            nominal = sorted(c for c in cats if c != f) or None
            seed = derive_seed(self.seed, "conditional", f, "tree")
            if f in cats:
                kw = {"leaf_prediction": "mc", "nominal_attributes": nominal, "seed": seed, **params}
                trees[f] = river_tree.HoeffdingAdaptiveTreeClassifier(**kw)
            else:
                kw = {"leaf_prediction": "mean", "nominal_attributes": nominal, "seed": seed, **params}
                trees[f] = river_tree.HoeffdingAdaptiveTreeRegressor(**kw)
        self._categorical_used = sorted(cats)
        self._trees = trees
        return trees

    @property
    def trees(self) -> dict[str, Any]:
        """The tree predicting each feature from the others (read only; empty before the first update)."""
        return dict(self._trees or {})

    @property
    def categorical_features(self) -> list[str] | None:
        """Features predicted by a classification tree (``None`` before the first update)."""
        return None if self._categorical_used is None else list(self._categorical_used)

    @property
    def ready(self) -> bool:
        return len(self._pool) > 0

    # learning (Algorithm 3) ------------------------------------------------------
    def update(self, x: dict[str, Any]) -> None:
        trees = self._trees if self._trees is not None else self._build(x)
        size = self._size
        for f, tree in trees.items():
            xr = {k: v for k, v in x.items() if k != f}
            value = x[f]
            tree.learn_one(xr, value)
            leaf = _leaf_of(_root(tree), xr)
            stores = self._stores[f]
            store = stores.get(leaf)
            if store is None:  # the tree changed along x's path: new leaves, dead leaves
                self._refresh(f)
                store = self._stores[f][leaf]
            store.add(value, size, self._rngs[f])
        self._pool.update(x)
        self._split_cache.clear()

    def _refresh(self, f: str) -> None:
        """Keep the reservoirs of surviving leaves, drop dead ones, seed new ones from the pool."""
        root = _root(self._trees[f])  # type: ignore[index]  # built before any refresh
        old = self._stores[f]
        new: dict[Any, _LeafStore] = {}
        fresh: dict[Any, _LeafStore] = {}
        for leaf in _iter_leaves(root):
            store = old.get(leaf)
            if store is None:
                store = fresh[leaf] = _LeafStore()
            new[leaf] = store
        if fresh:
            rng = self._rngs[f]
            for row in self._pool.items:
                store = fresh.get(_leaf_of(root, row))
                if store is not None:
                    store.add(row[f], self._size, rng)
        self._stores[f] = new

    # drawing (Algorithm 4) -------------------------------------------------------
    def _split(self, node: Any) -> tuple[list[Any], list[float], float]:
        """Children of ``node`` and their cumulative weights (cached until the next update)."""
        cached = self._split_cache.get(node)
        if cached is None:
            children = [c for c in node.children if c is not None]
            cum: list[float] = []
            total = 0.0
            for c in children:
                total += max(float(c.total_weight), 0.0)
                cum.append(total)
            if total <= 0.0:  # nothing observed below: uniform
                cum = [float(i + 1) for i in range(len(children))]
                total = float(len(children))
            cached = self._split_cache[node] = (children, cum, total)
        return cached

    def _draw(self, f: str, x: dict[str, Any], absent: frozenset[str], rng: random.Random) -> Any:
        node = _root(self._trees[f])  # type: ignore[index]  # ready implies built
        while isinstance(node, Branch):
            if node.feature not in absent:
                try:
                    node = node.next(x)
                    continue
                except KeyError:  # unseen category of a present feature: follow the ratios
                    pass
            children, cum, total = self._split(node)
            node = children[bisect.bisect_right(cum, rng.random() * total)]
        store = self._stores[f].get(node)
        if store is not None and store.items:
            items = store.items
            return items[int(rng.random() * len(items))]
        pool = self._pool.items  # a leaf no observation has reached yet
        return pool[int(rng.random() * len(pool))][f]

    def sample_rows(
        self, x: dict[str, Any], absent: Sequence[str], n: int, rng: random.Random
    ) -> list[dict[str, Any]]:
        if not self.ready:
            raise LookupError("no observation stored yet; update the removal before sampling")
        absent_set = frozenset(absent)
        draw = self._draw
        rows = []
        for _ in range(n):
            row = x.copy()
            for f in absent:
                row[f] = draw(f, x, absent_set, rng)
            rows.append(row)
        return rows
