"""Hoeffding tree regressors, evaluated from their nodes.

>>> from river import tree
>>> import random
>>> model = tree.HoeffdingTreeRegressor(grace_period=30)
>>> gen = random.Random(0)
>>> for _ in range(600):
...     x = {"a": gen.random(), "b": gen.random()}
...     model.learn_one(x, 3 * x["a"] + (x["b"] > 0.5))
>>> x = {"a": 0.2, "b": 0.7}
>>> pairs = [("b", k / 10) for k in range(11)]
>>> TreeRegressorFast(model).replaced(x, pairs, "value", None) == [model.predict_one({**x, "b": v}) for _, v in pairs]
True
"""

from __future__ import annotations

from typing import Any

from river.tree import HoeffdingAdaptiveTreeRegressor, HoeffdingTreeRegressor
from river.tree.base import Branch
from river.tree.nodes.hatr_nodes import AdaBranchRegressor, AdaLeafRegAdaptive, AdaLeafRegMean, AdaLeafRegModel
from river.tree.nodes.htr_nodes import LeafAdaptive, LeafMean, LeafModel

from .base import FastModel, Unsupported, tree_kind
from .linear import LinearCall, glm_kind
from .walk import is_branch, runs, split_features, walk

__all__ = ["TreeRegressorFast"]

_LEAF_MODES = {
    LeafMean: "mean", AdaLeafRegMean: "mean",
    LeafModel: "model", AdaLeafRegModel: "model",
    LeafAdaptive: "adaptive", AdaLeafRegAdaptive: "adaptive",
}


def _kind(model: Any) -> str | None:
    return tree_kind(model, "predict_one", HoeffdingAdaptiveTreeRegressor, HoeffdingTreeRegressor)


class _RegTree:
    """One tree regressor during one call."""

    __slots__ = ("hat", "root", "keys", "_leaves")

    def __init__(self, tree: Any, keys: Any):
        kind = _kind(tree)
        if kind is None:
            raise Unsupported(f"{type(tree).__name__} is not a verified Hoeffding tree regressor")
        self.hat = kind == "hat"
        self.root = tree._root
        self.keys = keys
        self._leaves: dict[int, Any] = {}

    def row(self, row: dict) -> float:
        return self.value(row)

    def replaced(self, x: dict, feature: str, value: Any) -> float:
        row = x.copy()
        row[feature] = value
        return self.value(row, x, feature, value)

    def replaced_batch(self, x: dict, pairs: list) -> list:
        """:meth:`replaced` of every pair; a run of one feature that no branch on ``x``'s path
        tests reaches ``x``'s leaves, whose linear models take the run as one array."""
        nodes = self._nodes(x)
        splits = split_features(nodes)
        out: list = []
        for f, i, j in runs(pairs):
            if j - i > 1 and f not in splits:
                found = self._leaves_of(nodes)
                run = pairs[i:j]
                parts = [self._leaf_run(node, x, run) for node in found]
                for k in range(j - i):
                    if not self.hat:
                        out.append(parts[0][k])
                        continue
                    pred = 0.0
                    for part in parts:
                        pred += part[k]
                    pred /= len(found)
                    out.append(pred)
            else:
                out += [self.replaced(x, f, v) for f, v in pairs[i:j]]
        return out

    def _leaf_run(self, node: Any, x: dict, run: list) -> list:
        plan = self._leaves.get(id(node))
        if plan is None:
            plan = self._leaves[id(node)] = self._plan(node)
        if isinstance(plan, LinearCall):
            return plan.replaced_batch(x, run)
        return [plan] * len(run)

    def _nodes(self, row: dict) -> list:
        root = self.root
        if root is None:
            return []
        if not is_branch(root):
            return [root]
        if type(root).traverse is not (AdaBranchRegressor.traverse if self.hat else Branch.traverse):
            raise Unsupported(f"{type(root).__name__} traverses its own way")
        return walk(root, row)

    def _leaves_of(self, nodes: list) -> list:
        if not self.hat or len(nodes) == 1:
            return [nodes[-1]]
        found = []
        for node in nodes:
            if is_branch(node) and isinstance(node, AdaBranchRegressor) and node._alternate_tree:
                alt = node._alternate_tree
                if isinstance(alt, AdaBranchRegressor):  # river would add a list here and fail
                    raise Unsupported("an alternate tree that is a branch")
                found.append(alt)
        found.append(nodes[-1])
        return found

    def value(self, row: dict, x: dict | None = None, feature: str | None = None, value: Any = None) -> float:
        """``predict_one(row)``: the leaf's prediction, or the mean over the leaves an
        adaptive tree reaches (``pred += leaf``, then ``pred /= count``)."""
        if self.root is None:
            return 0.0
        found = self._leaves_of(self._nodes(row))
        if not self.hat:
            return self._leaf(found[0], row, x, feature, value)
        pred = 0.0
        for node in found:
            pred += self._leaf(node, row, x, feature, value)
        pred /= len(found)
        return pred

    def _leaf(self, leaf: Any, row: dict, x: dict | None, feature: str | None, value: Any) -> float:
        plan = self._leaves.get(id(leaf))
        if plan is None:
            plan = self._leaves[id(leaf)] = self._plan(leaf)
        if not isinstance(plan, LinearCall):
            return plan
        return plan.z(row) if x is None else plan.z_replaced(x, feature, value)  # type: ignore[arg-type]

    def _plan(self, leaf: Any) -> Any:
        """The leaf's constant prediction (a float), or the LinearCall of its model."""
        mode = _LEAF_MODES.get(type(leaf))
        if mode is None:
            raise Unsupported(f"{type(leaf).__name__} is not a verified leaf")
        if mode == "mean" or (mode == "adaptive" and leaf._fmse_mean < leaf._fmse_model):
            return leaf.stats.mean.get()
        model = leaf._leaf_model
        if glm_kind(model) != "regressor":
            raise Unsupported(f"leaf model {type(model).__name__} is not a verified linear regression")
        return LinearCall(model, self.keys)


class TreeRegressorFast(FastModel):
    """``HoeffdingTreeRegressor`` and ``HoeffdingAdaptiveTreeRegressor`` (which averages the leaf
    and every alternate tree met on the path). A leaf predicts its mean target (``mean``), its linear
    model (``model``, by :class:`~streamxai.core.fastpath.linear.LinearCall`), or whichever has the
    smaller faded squared error (``adaptive``)."""

    name = "hoeffding_tree_regressor"
    serves_rows = False  # a leaf's linear model is compiled river code: general rows go to the model

    @staticmethod
    def accepts(model: Any) -> bool:
        return _kind(model) is not None

    def new_call(self, keys: Any) -> _RegTree:
        return _RegTree(self.model, keys)

    def token(self) -> Any:
        return self.model._train_weight_seen_by_model

    def output(self, call: Any, result: Any, output: str, target_class: Any) -> Any:
        if output in ("proba", "proba_of"):
            raise Unsupported("a regressor has no class probabilities")
        return float(result) if output == "value" else result
