"""Hoeffding tree regressors, evaluated from their nodes.

``HoeffdingTreeRegressor.predict_one`` is the prediction of the leaf the row reaches;
``HoeffdingAdaptiveTreeRegressor`` averages the leaf and every alternate tree met on the
path (``pred += leaf``, then ``pred /= count``). A leaf predicts the mean target it has seen
(``mean``), its linear model (``model``: a ``LinearRegression``, evaluated by
:class:`~pipeline.core.fastpath.linear.LinearCall` with its partial sums shared across the
call), or whichever of the two has had the smaller faded squared error (``adaptive``).

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

from collections.abc import Sequence
from typing import Any

from river.tree import HoeffdingAdaptiveTreeRegressor, HoeffdingTreeRegressor
from river.tree.base import Branch
from river.tree.nodes.branch import DTBranch
from river.tree.nodes.hatr_nodes import AdaBranchRegressor, AdaLeafRegAdaptive, AdaLeafRegMean, AdaLeafRegModel
from river.tree.nodes.htr_nodes import LeafAdaptive, LeafMean, LeafModel

from .base import FastModel, Unsupported
from .linear import LinearCall, _glm_kind
from .walk import walk

__all__ = ["TreeRegressorFast"]

_LEAF_MODES = {
    LeafMean: "mean", AdaLeafRegMean: "mean",
    LeafModel: "model", AdaLeafRegModel: "model",
    LeafAdaptive: "adaptive", AdaLeafRegAdaptive: "adaptive",
}


def _kind(model: Any) -> str | None:
    predict = getattr(type(model), "predict_one", None)
    if predict is HoeffdingAdaptiveTreeRegressor.predict_one:
        return "hat"
    if predict is HoeffdingTreeRegressor.predict_one:
        return "ht"
    return None


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

    def value(self, row: dict, x: dict | None = None, feature: str | None = None, value: Any = None) -> float:
        root = self.root
        if root is None:
            return 0.0
        if not self.hat:
            if isinstance(root, DTBranch):
                if type(root).traverse is not Branch.traverse:
                    raise Unsupported(f"{type(root).__name__} overrides traverse")
                root = walk(root, row)[-1]
            return self._leaf(root, row, x, feature, value)
        found = self._found(row)
        pred = 0.0
        for node in found:
            pred += self._leaf(node, row, x, feature, value)
        pred /= len(found)
        return pred

    def _found(self, row: dict) -> list:
        root = self.root
        if not isinstance(root, DTBranch):
            return [root]
        if type(root).traverse is not AdaBranchRegressor.traverse:
            raise Unsupported(f"{type(root).__name__} is not an adaptive tree branch")
        nodes = walk(root, row)
        found = []
        for node in nodes:
            if isinstance(node, AdaBranchRegressor) and node._alternate_tree:
                alt = node._alternate_tree
                if isinstance(alt, AdaBranchRegressor):  # river would add a list here and fail
                    raise Unsupported("an alternate tree that is a branch")
                found.append(alt)
        found.append(nodes[-1])
        return found

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
        if _glm_kind(model) != "regressor":
            raise Unsupported(f"leaf model {type(model).__name__} is not a verified linear regression")
        return LinearCall(model, self.keys)


class TreeRegressorFast(FastModel):
    """``HoeffdingTreeRegressor`` and ``HoeffdingAdaptiveTreeRegressor``."""

    name = "hoeffding_tree_regressor"

    def __init__(self, model: Any):
        self.model = model

    @staticmethod
    def accepts(model: Any) -> bool:
        return _kind(model) is not None

    def rows(self, rows: Sequence[dict], output: str, target_class: Any) -> list:
        keys = rows[0].keys()
        call = _RegTree(self.model, keys)
        out = []
        for r in rows:
            if r.keys() != keys:
                raise Unsupported("the rows of one call carry different features")
            out.append(_out(call.value(r), output))
        return out

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], output: str, target_class: Any) -> list:
        call = _RegTree(self.model, x.keys())
        out = []
        for f, v in pairs:
            if f not in x:
                raise Unsupported(f"feature {f!r} is not in the row")
            row = x.copy()
            row[f] = v
            out.append(_out(call.value(row, x, f, v), output))
        return out


def _out(pred: float, output: str) -> Any:
    if output in ("proba", "proba_of"):
        raise Unsupported("a regressor has no class probabilities")
    return float(pred) if output == "value" else pred
