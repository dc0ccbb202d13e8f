"""A Hoeffding tree's branches as arrays, and a cache of them kept while the branches stay.

:func:`tree_shape` reads a tree whose branches all compare a number with a threshold into, per
node (breadth-first), the feature it tests, its threshold, its first child and, for a leaf, the
leaf. :class:`ShapeCache` keeps each shape between explanations: in ``HoeffdingTreeClassifier``
and ARF's trees (those classes exactly) a branch, once made, never changes, and a tree grows only
by a leaf becoming a branch, so a kept shape holds while the tree has the same root and every
leaf of the shape is still its parent's child at the same place. Adaptive trees swap subtrees
deep inside: their shapes are read anew each time."""

from __future__ import annotations

from operator import getitem, is_
from typing import Any

import numpy as np
from river.forest.adaptive_random_forest import BaseTreeClassifier
from river.tree import HoeffdingTreeClassifier
from river.tree.nodes.branch import NumericBinaryBranch

from ..fastpath.walk import is_branch

__all__ = ["TreeShape", "tree_shape", "ShapeCache"]

_NUMERIC_NO = NumericBinaryBranch.branch_no
#: the tree classes whose branches stay as they are made (see the module's docstring)
_STEADY = (HoeffdingTreeClassifier, BaseTreeClassifier)


class TreeShape:
    """One tree's branches: ``features`` (each tested feature once), per node ``code`` (its
    feature's position, -1 for a leaf), ``threshold``, ``left`` (first child, -1 for a leaf),
    ``leaf`` and ``branch``."""

    __slots__ = ("tree", "root", "features", "code", "threshold", "thresholds", "left", "leaf", "branch", "floats",
                 "_pins")

    def __init__(self, tree: Any, root: Any, features: list, code: list[int], thresholds: list, left: list[int],
                 leaf: list, branch: list):
        self.tree, self.root, self.features, self.leaf, self.branch = tree, root, features, leaf, branch
        size = len(leaf)
        self.code = np.fromiter(code, dtype=np.int64, count=size)
        self.thresholds = thresholds
        self.threshold = np.fromiter(thresholds, dtype=float, count=size)
        self.left = np.fromiter(left, dtype=np.int64, count=size)
        #: whether every threshold is a float (else x's side is decided on ``thresholds`` one by one)
        self.floats = all(type(t) is float or type(t) is np.float64 for t in thresholds)
        self._pins: tuple = ()

    def pin(self) -> TreeShape:
        """Note where each leaf below the root hangs (its parent's list of children and its
        slot there), for :meth:`holds`; the shape itself."""
        lists, slots, leaves = [], [], []
        for parent, first in zip(self.branch, self.left.tolist(), strict=True):
            if parent is not None:
                for slot in (0, 1):
                    if self.leaf[first + slot] is not None:
                        lists.append(parent.children)
                        slots.append(slot)
                        leaves.append(self.leaf[first + slot])
        self._pins = (lists, slots, leaves)
        return self

    def holds(self, tree: Any) -> bool:
        """True while ``tree`` is as this shape, pinned, read it (for the classes of ``_STEADY``)."""
        return (tree is self.tree and tree._root is self.root
                and all(map(is_, map(getitem, self._pins[0], self._pins[1]), self._pins[2])))


def tree_shape(tree: Any, adaptive: bool) -> TreeShape | None:
    """The shape of ``tree``, or None when it is empty or has a branch other than a numeric
    binary one (or, ``adaptive``, one with an alternate tree)."""
    root = tree._root
    if root is None:
        return None
    features: list = []
    position: dict = {}
    code: list[int] = []
    thresholds: list = []
    left: list[int] = []
    leaf: list = []
    branch: list = []
    nodes = [root]
    for node in nodes:  # the list grows by each branch's children as it is read
        if not is_branch(node):
            code.append(-1)
            thresholds.append(0.0)
            left.append(-1)
            leaf.append(node)
            branch.append(None)
            continue
        if type(node).branch_no is not _NUMERIC_NO or (adaptive and node._alternate_tree):
            return None
        f = node.feature
        at = position.get(f)
        if at is None:
            at = position[f] = len(features)
            features.append(f)
        left.append(len(nodes))
        nodes += node.children
        code.append(at)
        thresholds.append(node.threshold)
        leaf.append(None)
        branch.append(node)
    return TreeShape(tree, root, features, code, thresholds, left, leaf, branch)


class ShapeCache:
    """The shapes of the trees of the last explanation, for the next; a tree of another class
    than ``_STEADY``'s, or an adaptive one, is read anew each time."""

    def __init__(self) -> None:
        self._kept: dict = {}
        self._met: dict = {}

    def start(self) -> None:
        """Begin an explanation: the shapes met by the last one are kept for this one."""
        self._kept, self._met = self._met, {}

    def get(self, tree: Any, adaptive: bool) -> TreeShape | None:
        """:func:`tree_shape` of ``tree``, kept or read anew."""
        if adaptive or type(tree) not in _STEADY:
            return tree_shape(tree, adaptive)
        key = id(tree)
        shape = self._kept.get(key)
        if shape is None or not shape.holds(tree):
            shape = tree_shape(tree, adaptive)
            if shape is not None:
                shape.pin()
        if shape is not None:
            self._met[key] = shape
        return shape
