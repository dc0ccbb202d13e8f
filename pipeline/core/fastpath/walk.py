"""The path of a row through a river decision tree, as river's own traversal finds it.

>>> from river import tree
>>> model = tree.HoeffdingTreeClassifier(grace_period=10)
>>> for i in range(200):
...     model.learn_one({"a": i % 10, "b": 0}, i % 10 < 5)
>>> nodes = walk(model._root, {"a": 2, "b": 0})
>>> nodes[0] is model._root, nodes[-1] is model._root.traverse({"a": 2, "b": 0})
(True, True)
"""

from __future__ import annotations

from typing import Any

from river.tree.base import Branch, Leaf
from river.tree.nodes.branch import (
    DTBranch,
    NominalBinaryBranch,
    NominalMultiwayBranch,
    NumericBinaryBranch,
    NumericMultiwayBranch,
)

from .base import Unsupported

__all__ = ["walk", "rewalk", "leaf_of", "first_test", "is_branch", "split_features", "runs"]

_WALK = Branch.walk
_LEAF_WALK = Leaf.walk
_NEXT = DTBranch.next
#: river's four branch tests, each reading only ``row[branch.feature]``
_BRANCH_NOS = {c.branch_no for c in (NumericBinaryBranch, NominalBinaryBranch, NumericMultiwayBranch,
                                     NominalMultiwayBranch)}


_IS_BRANCH: dict[type, bool] = {}  # node class -> is a branch (checked to walk the generic way)
#: node class -> how a walk passes it: 0 a leaf, 1 river's numeric binary test, 2 another branch
_STEP: dict[type, int] = {}
_NUMERIC_BINARY_NO = NumericBinaryBranch.branch_no


def is_branch(node: Any) -> bool:
    """True for a branch, False for a leaf; Unsupported for a node that walks its own way."""
    t = type(node)
    kind = _IS_BRANCH.get(t)
    if kind is None:
        if isinstance(node, Branch):
            if t.walk is not _WALK or t.next is not _NEXT or getattr(t, "branch_no", None) not in _BRANCH_NOS:
                raise Unsupported(f"{t.__name__} overrides how a row walks the tree")
            kind = True
        elif isinstance(node, Leaf) and t.walk is _LEAF_WALK:
            kind = False
        else:
            raise Unsupported(f"{t.__name__} is not a river tree node")
        _IS_BRANCH[t] = kind
        _STEP[t] = (1 if t.branch_no is _NUMERIC_BINARY_NO else 2) if kind else 0
    return kind


def walk(root: Any, row: dict) -> list:
    """The nodes ``root.walk(row, until_leaf=True)`` yields, in order, duplicates included: where
    ``branch_no`` raises ``KeyError`` (a missing feature, an unseen category) river goes to the most
    traversed child and yields it twice, and the adaptive trees add an alternate tree's prediction
    once per visit. The decision at each branch is river's own; only the recursion is unrolled."""
    nodes = [root]
    node = root
    steps = _STEP
    while True:
        step = steps.get(type(node))
        if step is None:
            is_branch(node)
            step = steps[type(node)]
        if not step:
            return nodes
        try:
            child = node.children[0 if row[node.feature] <= node.threshold else 1] if step == 1 else node.next(row)
        except KeyError:
            child = node.most_common_path()[1]
            nodes.append(child)
        nodes.append(child)
        node = child


def leaf_of(node: Any, row: dict) -> Any:
    """The last node of :func:`walk` ``(node, row)``: the leaf ``row`` reaches from ``node``."""
    steps = _STEP
    while True:
        step = steps.get(type(node))
        if step is None:
            is_branch(node)
            step = steps[type(node)]
        if not step:
            return node
        try:  # river's branch_no (a numeric binary test's inline), or the most traversed child
            node = node.children[0 if row[node.feature] <= node.threshold else 1] if step == 1 else node.next(row)
        except KeyError:
            node = node.most_common_path()[1]


def first_test(nodes: list, feature: str) -> Any:
    """The first branch among ``nodes`` that tests ``feature`` (None: none does)."""
    for node in nodes:
        if getattr(node, "feature", None) == feature and is_branch(node):
            return node
    return None


def rewalk(nodes: list, row: dict, feature: str) -> list | None:
    """The path of ``row``, which differs from the row of ``nodes`` only in ``feature``: the same
    nodes down to the first branch that tests ``feature``, then river's walk; None when no branch on
    the path tests it."""
    for i, node in enumerate(nodes):
        if getattr(node, "feature", None) == feature and is_branch(node):
            if i + 1 < len(nodes) and nodes[i + 1] is node:
                i += 1
            return nodes[:i] + walk(node, row)
    return None


def split_features(nodes: list) -> set:
    """The features the branches among ``nodes`` test: a row that differs from another only
    in features outside this set takes the same path."""
    try:
        return {n.feature for n in nodes if is_branch(n)}
    except AttributeError:
        raise Unsupported("a branch without a feature") from None


def runs(pairs: list) -> list[tuple[str, int, int]]:
    """``(feature, start, stop)`` of each run of consecutive pairs with one feature (an ICE
    curve is one run).

    >>> runs([("a", 1), ("a", 2), ("b", 1), ("a", 3)])
    [('a', 0, 2), ('b', 2, 3), ('a', 3, 4)]
    """
    out = []
    n = len(pairs)
    i = 0
    while i < n:
        f = pairs[i][0]
        j = i + 1
        while j < n and pairs[j][0] == f:
            j += 1
        out.append((f, i, j))
        i = j
    return out
