"""iSAGE's permutation chains through Hoeffding tree classifiers and ARF members: the rows of
one chain differ from their neighbours in one feature, and a tree's prediction depends only on
the features its path tests and its leaves read, so most rows reuse a neighbour's prediction.

>>> import random
>>> from river import forest
>>> from streamxai.core.model import chain_rows
>>> from streamxai.core.fastpath.trees import ForestClassifierFast
>>> model = forest.ARFClassifier(n_models=3, seed=1)
>>> gen = random.Random(0)
>>> for _ in range(400):
...     x = {"a": gen.random(), "b": gen.random(), "c": gen.random()}
...     model.learn_one(x, x["a"] > 0.5)
>>> x, donors = {"a": 0.2, "b": 0.7, "c": 0.1}, [{"a": 0.9, "b": 0.1, "c": 0.5}, {"a": 0.6, "b": 0.3, "c": 0.8}]
>>> fast = ForestClassifierFast(model).coalitions(x, ["c", "a", "b"], donors, 0, "proba_of", True)
>>> fast == [model.predict_proba_one(r).get(True, 0.0) for r in [x, *chain_rows(x, ["c", "a", "b"], donors)]]
True
"""

from __future__ import annotations

from operator import is_
from typing import Any

from .base import Unsupported
from .walk import first_test, leaf_of, rewalk, split_features

__all__ = ["chain_parts", "forest_chain"]


def _state(tree: Any, row: dict, nodes: list) -> list:
    """``tree``'s prediction of ``row`` given its path ``nodes``, with what it depends on: the
    features its path tests and its leaves read, the leaves and the path."""
    leaves = tree._leaves_of(nodes)
    return [tree._combine(leaves, [leaf.row(row) for leaf in leaves]), split_features(nodes), _read(leaves), leaves,
            nodes]


def _at_x(tree: Any, x: dict) -> list:
    """:func:`_state` of ``x``, from what the tree's call keeps of ``x`` (its path, leaves,
    the features its branches test and its prediction)."""
    if x is not tree._x:
        tree._see(x)
    leaves = tree._x_leaves
    return [tree.at_x(), tree._x_splits, _read(leaves), leaves, tree._x_nodes]


def _read(leaves: list) -> frozenset:
    """The features the leaves' predictions read (a naive Bayes leaf's factors; a majority
    class leaf reads none)."""
    out: frozenset = frozenset()
    for leaf in leaves:
        if leaf.const is None and not leaf.inner.empty:
            out = out.union(leaf.inner.atts)
    return out


def chain_parts(trees: list, x: dict, order: list, donors: list, first: int) -> list[list]:
    """Per tree (``_Tree`` calls of one scope), its prediction at ``x`` and then at each row
    of :func:`~streamxai.core.model.chain_rows` ``(x, order, donors, first)``, in that order.

    Each row is its neighbour with one more feature ``f`` taken from the donor. A tree's prediction
    depends only on the features its path tests and its leaves read, so when ``f`` is none of them
    the row reuses the neighbour's prediction; when only a leaf reads ``f``, the neighbour's leaves
    with their distributions computed anew; otherwise the walk goes on from the first branch on the
    neighbour's path that tests ``f``. Every prediction computed is ``_Tree.row``'s."""
    d = len(order)
    for f in order:
        if f not in x:  # the rows would carry a key x lacks: not one scope's rows
            raise Unsupported(f"feature {f!r} of the chain is not in the row")
    m = len(donors)
    n = 1 + (d - first) * m
    starts = [_at_x(t, x) for t in trees]
    out = []
    for s in starts:
        parts: list = [None] * n
        parts[0] = s[0]
        out.append(parts)
    for k, donor in enumerate(donors):
        row = x.copy()  # row j of this donor, changed in place from j = d - 1 down to first
        states = [list(s) for s in starts]
        for j in range(d - 1, first - 1, -1):
            f = order[j]
            row[f] = donor[f]
            i = 1 + (j - first) * m + k
            for t, s, parts in zip(trees, states, out, strict=True):
                if f in s[1]:  # a branch on the path tests f: the row may go elsewhere below it
                    if not t.hat and leaf_of(first_test(s[4], f), row) is s[4][-1]:
                        nodes = s[4]  # a plain tree's leaf has one path: the row's is the neighbour's
                    else:
                        nodes = rewalk(s[4], row, f) or t._nodes(row)
                    if nodes is not s[4] and (len(nodes) != len(s[4]) or not all(map(is_, nodes, s[4]))):
                        s[:] = _state(t, row, nodes)
                        parts[i] = s[0]
                        continue
                if f in s[2]:  # the same path and leaves, one of which reads f
                    leaves = s[3]
                    s[0] = t._combine(leaves, [leaf.row(row) for leaf in leaves])
                parts[i] = s[0]
    return out


def forest_chain(forest: Any, x: dict, order: list, donors: list, first: int) -> list:
    """An ARF's ``_Forest.row`` of ``x`` and of each row of the chain: its members'
    :func:`chain_parts` summed row by row (rows whose members agree share one sum)."""
    sums: dict = {}
    out = []
    for parts in zip(*chain_parts(forest.trees, x, order, donors, first), strict=True):
        key = tuple(map(id, parts))  # the lists stay alive in the members' parts: ids are unique
        res = sums.get(key)
        if res is None:
            res = sums[key] = forest._sum(list(parts))
        out.append(res)
    return out
