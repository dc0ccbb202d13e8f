"""ICE curves of a Hoeffding tree classifier as arrays: one class's probability at ``x`` with
one feature moved along a grid, for many features and grid values at once.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Unsupported

__all__ = ["class_curves", "combined"]


def class_curves(tree: Any, x: dict, features: list, grids: np.ndarray, target_class: Any) -> np.ndarray | None:
    """The probability of ``target_class`` at ``x`` with ``features[i]`` at each ``grids[i, k]``,
    from ``tree`` (a :class:`~streamxai.core.fastpath.trees._Tree` call); None for more than
    two classes.

    A row that changes a feature no branch on ``x``'s path tests reaches ``x``'s leaves, so the
    curves of all such features are the leaves' naive Bayes distributions
    (:meth:`~streamxai.core.fastpath.leaves.NaiveBayesLeaf.curves`), weighed and combined as
    ``predict_proba_one`` combines them: an adaptive tree divides each leaf's distribution by
    ``sum * error^2``, adds the leaves class by class and normalises by the sum; a plain tree
    takes its one leaf's. The same operations in the same order as
    :mod:`streamxai.core.fastpath.trees`, on arrays: every sum has at most two terms (two
    classes), where ``sum()`` and left-to-right addition agree on every Python version. A
    feature a branch on the path tests is evaluated value by value (its rows may take other
    paths).
    """
    if tree.n > 2:
        return None
    for f in features:
        if f not in x:
            raise Unsupported(f"feature {f!r} is not in the row")
    if x is not tree._x:
        tree._see(x)
    ci = tree._class_index().get(target_class)
    if ci is None:  # predict_proba_one(row).get(target_class, 0.0)
        return np.zeros(grids.shape)
    out = np.empty(grids.shape)
    splits = tree._x_splits
    kept = [i for i, f in enumerate(features) if f not in splits]  # rows that keep x's path
    if kept:
        proba = combined(tree, tree._x_leaves, x, [features[i] for i in kept], grids[kept])
        if proba is None:
            return None
        out[kept] = proba[ci]
    for i, f in enumerate(features):
        if f in splits:  # the rows may take other paths: value by value (fewer rows than arrays pay for)
            out[i] = [float(tree.replaced(x, f, v)[ci]) for v in grids[i].tolist()]
    return out


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
