"""ICE curves of a Hoeffding tree classifier or an ARF as arrays: one class's probability at
``x`` with one feature moved along a grid, for many features and grid values at once.

>>> from river import tree
>>> import random
>>> import numpy as np
>>> from streamxai.core.fastpath.trees import TreeClassifierFast
>>> model = tree.HoeffdingAdaptiveTreeClassifier(grace_period=20, seed=1)
>>> gen = random.Random(0)
>>> for _ in range(500):
...     x = {"a": gen.random(), "b": gen.random()}
...     model.learn_one(x, x["a"] + 0.3 * x["b"] > 0.6)
>>> x, grids = {"a": 0.3, "b": 0.8}, np.array([[0.0, 0.5, 1.0], [0.1, 0.2, 0.9]])
>>> curves = class_curves(TreeClassifierFast(model).new_call(x.keys()), x, ["a", "b"], grids, True)
>>> curves.tolist() == [[model.predict_proba_one({**x, f: v}).get(True, 0.0) for v in row]
...                     for f, row in zip(["a", "b"], grids.tolist())]
True

An ARF's curves are its members', weighted and summed as ``predict_proba_one`` sums them:

>>> from river import forest
>>> from streamxai.core.fastpath.trees import ForestClassifierFast
>>> arf = forest.ARFClassifier(n_models=3, seed=1)
>>> for _ in range(500):
...     x = {"a": gen.random(), "b": gen.random()}
...     arf.learn_one(x, x["a"] + 0.3 * x["b"] > 0.6)
>>> x = {"a": 0.3, "b": 0.8}
>>> curves = forest_class_curves(ForestClassifierFast(arf).new_call(x.keys()), x, ["a", "b"], grids, True)
>>> curves.tolist() == [[arf.predict_proba_one({**x, f: v}).get(True, 0.0) for v in row]
...                     for f, row in zip(["a", "b"], grids.tolist())]
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Unsupported
from .walk import leaf_of

__all__ = ["class_curves", "class_arrays", "moved", "forest_class_curves", "combined"]


def class_curves(tree: Any, x: dict, features: list, grids: np.ndarray, target_class: Any) -> np.ndarray | None:
    """The probability of ``target_class`` at ``x`` with ``features[i]`` at each ``grids[i, k]``
    (:func:`class_arrays`' row of the class); None for more than two classes."""
    if tree.n > 2:
        return None
    ci = tree._class_index().get(target_class)
    if ci is None:  # predict_proba_one(row).get(target_class, 0.0)
        return np.zeros(grids.shape)
    out = class_arrays(tree, x, features, grids)
    return None if out is None else out[ci]


def class_arrays(tree: Any, x: dict, features: list, grids: np.ndarray) -> np.ndarray | None:
    """``predict_proba_one``'s values, ``(classes, features, values)`` in the tree's class
    order, at ``x`` with ``features[i]`` at each ``grids[i, k]``, from ``tree`` (a ``_Tree`` call);
    None for more than two classes. Features no branch on ``x``'s path tests reach ``x``'s leaves,
    whose naive Bayes curves are combined as ``predict_proba_one`` combines them (every sum of at
    most two terms); a feature the path tests goes through :func:`moved`."""
    if tree.n > 2:
        return None
    for f in features:
        if f not in x:
            raise Unsupported(f"feature {f!r} is not in the row")
    if x is not tree._x:
        tree._see(x)
    out = np.empty((tree.n, *grids.shape))
    splits = tree._x_splits
    # rows that keep x's path: a feature x's leaves read moves them; any other leaves them at x's prediction
    kept = [i for i, f in enumerate(features) if f not in splits and tree.depends(f)]
    if kept:
        proba = combined(tree, tree._x_leaves, x, [features[i] for i in kept], grids[kept])
        if proba is None:
            return None
        out[:, kept] = proba
    same = [i for i, f in enumerate(features) if f not in splits and not tree.depends(f)]
    if same:
        out[:, same] = np.array(tree.at_x(), dtype=float)[:, None, None]
    for i, f in enumerate(features):
        if f in splits:
            out[:, i] = moved(tree, x, f, grids[i].tolist())
    return out


def moved(tree: Any, x: dict, feature: str, values: list) -> list:
    """``(classes, values)`` as lists: the tree's values at ``x`` with ``feature``, which a
    branch on ``x``'s path tests, at each of ``values``. A plain tree's rows share ``x``'s path down
    to that branch, and the rows that end in one leaf take its distributions in one call; an adaptive
    tree's rows are evaluated one by one."""
    if tree.hat:
        return [list(c) for c in zip(*[tree.replaced(x, feature, v) for v in values], strict=True)]
    out = [[0.0] * len(values) for _ in range(tree.n)]
    row = x.copy()
    start = tree.start(feature)
    groups: dict[int, tuple[Any, list]] = {}  # leaf's id -> (leaf, positions of its values)
    for k, v in enumerate(values):
        row[feature] = v
        leaf = leaf_of(start, row)
        group = groups.get(id(leaf))
        if group is None:
            groups[id(leaf)] = (leaf, [k])
        else:
            group[1].append(k)
    for leaf, ks in groups.values():
        plan = tree._leaf(leaf)
        if plan.const is not None:  # majority class: one distribution for every value
            for p, v in zip(plan.pos, plan.const, strict=True):
                column = out[p]
                for k in ks:
                    column[k] = v
            continue
        inner = plan.inner
        if not inner.depends_on(feature):  # the leaf does not read feature: one distribution for all its rows
            dists = [inner.row(row)] * len(ks)
        elif len(ks) == 1 and plan is not tree._x_leaves[0]:  # one row in a leaf x does not reach: that row
            row[feature] = values[ks[0]]
            dists = [inner.row(row)]
        else:
            dists = inner.replaced_many(x, feature, [values[k] for k in ks], None)
        for k, dist in zip(ks, dists, strict=True):
            for p, v in zip(plan.pos, dist, strict=True):
                out[p][k] = v
    return out


def forest_class_curves(forest: Any, x: dict, features: list, grids: np.ndarray,
                        target_class: Any) -> np.ndarray | None:
    """:func:`class_curves` of an ARF whose members share their (at most two) classes in one
    order, else None: each member's :func:`class_arrays` weighed, summed and normalised as
    ``_Forest._sum`` does, on arrays."""
    trees = forest.trees
    classes = trees[0].classes
    if not classes or len(classes) > 2 or any(t.classes != classes for t in trees):
        return None
    acc = None
    for tree, mv in zip(trees, forest.weights, strict=True):
        arr = class_arrays(tree, x, features, grids)
        if arr is None:
            return None
        if mv is not None:
            arr = arr * mv
        acc = arr if acc is None else arr + acc
    ci = {c: i for i, c in enumerate(classes)}.get(target_class)
    if ci is None:
        return np.zeros(grids.shape)
    total = _total(acc)  # type: ignore[arg-type]
    ok = total > 0  # a total of 0 or NaN: river's Counter, unnormalised
    return np.where(ok, acc[ci] / np.where(ok, total, 1.0), acc[ci])  # type: ignore[index]


def combined(tree: Any, leaves: list, x: dict, features: list, grids: np.ndarray) -> np.ndarray | None:
    """``predict_proba_one``'s values, ``(classes, features, values)``, of the rows ``x`` with
    ``features[i]`` at ``grids[i, k]``, all of which reach ``leaves``."""
    proba = np.zeros((tree.n, *grids.shape))
    for leaf in leaves:
        if leaf.const is not None:  # majority class: the same (weighed) distribution for every row
            dist = np.array(leaf.const, dtype=float)[:, None, None]
        else:
            dist = leaf.inner.curves(x, features, grids)
            if dist is None:
                return None
            if leaf.error is not None:  # divided by sum * error^2 (unless that is 0 or NaN)
                dist = _normalized(dist, _total(dist) * leaf.error * leaf.error)
        if tree.hat:  # add_dict_values: class by class, in the leaves' order
            proba[leaf.pos] = proba[leaf.pos] + dist
        else:  # proba.update(leaf distribution)
            proba[leaf.pos] = dist
    return _normalized(proba, _total(proba)) if tree.hat else proba


def _total(dist: np.ndarray) -> np.ndarray:
    """``sum()`` over the (at most two) classes: ``0.0 + d0 + d1``, and ``0.0 + d0`` is ``d0``
    for the non-negative values of a distribution."""
    if not len(dist):
        return np.zeros(dist.shape[1:])
    return dist[0] + dist[1] if len(dist) == 2 else dist[0]


def _normalized(dist: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """River's ``normalize_values_in_dict``: the values times ``1 / factor``, or unchanged
    where the factor is 0 or NaN."""
    ok = (factor != 0) & (factor == factor)
    return np.where(ok, dist * (1 / np.where(ok, factor, 1.0)), dist)
