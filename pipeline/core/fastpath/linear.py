"""River's linear models, alone or after a ``StandardScaler`` in a pipeline, from their weights.

``LinearRegression.predict_one(x)`` is ``w . x + b`` and ``LogisticRegression`` turns it into
``{False: 1 - p, True: p}`` with river's sigmoid (0 below -30, 1 above 30). River's dot
product (``VectorDict.dot``) walks ``x`` in its own key order, skips keys without a weight
and adds ``x_k * w_k`` to a running sum that starts at the integer 0; a scaler first maps
every value to ``(v - mean) / var ** 0.5`` (0.0 when the variance is 0). :class:`LinearFast`
does the same operations in the same order. For rows that differ from ``x`` in one feature
(ICE curves, permutations) the running sum before that feature is shared and only the
products after it are added again, so each row costs one product and the same additions,
never a reordered sum: the values are bit for bit river's.

>>> from river import compose, linear_model, preprocessing
>>> model = compose.Pipeline(preprocessing.StandardScaler(), linear_model.LogisticRegression())
>>> import random
>>> gen = random.Random(0)
>>> for _ in range(300):
...     x = {"a": gen.gauss(0, 3), "b": gen.random()}
...     model.learn_one(x, x["a"] + x["b"] > 0.5)
>>> fast = LinearFast(model)
>>> x = {"a": 0.3, "b": 0.9}
>>> pairs = [("a", v / 4) for v in range(-8, 9)]
>>> fast.replaced(x, pairs, "proba_of", True) == [model.predict_proba_one({**x, "a": v})[True] for _, v in pairs]
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from river.base import Classifier
from river.compose import Pipeline
from river.linear_model import LinearRegression, LogisticRegression
from river.linear_model.base import GLM
from river.optim.losses import BinaryLoss, RegressionLoss
from river.preprocessing import StandardScaler

from .base import FastModel, Unsupported, to_output

__all__ = ["LinearFast", "LinearCall"]

_NUMBERS = (int, float)


def _glm_kind(model: Any) -> str | None:
    """"classifier" / "regressor" for a logistic / linear regression predicting with river's code."""
    t = type(model)
    if not isinstance(model, GLM) or t._raw_dot_one is not GLM._raw_dot_one:
        return None
    if (getattr(t, "predict_proba_one", None) is LogisticRegression.predict_proba_one
            and t.predict_one is Classifier.predict_one
            and type(model.loss).mean_func is BinaryLoss.mean_func):
        return "classifier"
    if t.predict_one is LinearRegression.predict_one and type(model.loss).mean_func is RegressionLoss.mean_func:
        return "regressor"
    return None


def _split_pipeline(model: Any) -> tuple[Any, Any]:
    """``(scaler or None, linear model)``, or Unsupported."""
    if type(model) is not Pipeline:
        return None, model
    if Pipeline._LEARN_UNSUPERVISED_DURING_PREDICT or model._plan is None:
        raise Unsupported("a pipeline that learns while predicting, or has not planned its steps yet")
    steps = model._inference_transformers
    if len(steps) != 1 or type(steps[0]) is not StandardScaler or steps[0].window_size is not None:
        raise Unsupported("only a StandardScaler (no window) before the linear model is verified")
    return steps[0], model._last_step_cached


def sigmoid(z: float) -> float:
    """River's ``utils.math.sigmoid`` (the same operations)."""
    if z < -30:
        return 0
    if z > 30:
        return 1
    return 1 / (1 + math.exp(-z))


class LinearCall:
    """One linear model (maybe behind a scaler) during one call over rows with ``keys``."""

    __slots__ = ("weights", "intercept", "classifier", "scale", "_x", "_pre", "_post", "_pos", "_base")

    def __init__(self, model: Any, keys: Any):
        scaler, glm = _split_pipeline(model)
        kind = _glm_kind(glm)
        if kind is None:
            raise Unsupported(f"{type(glm).__name__} is not a verified linear model")
        self.classifier = kind == "classifier"
        self.weights = glm._weights.to_dict()
        self.intercept = glm.intercept
        self.scale: dict[str, tuple] | None = None
        if scaler is not None:
            means, variances = scaler.means, scaler.vars if scaler.with_std else None
            if any(k not in means or (variances is not None and k not in variances) for k in keys):
                raise Unsupported("the scaler has not seen every feature (it would add it while predicting)")
            # (mean, standard deviation or None when the variance is 0, or False without std)
            self.scale = {k: (means[k], (variances[k] ** 0.5 if variances[k] else None)
                              if variances is not None else False) for k in keys}
        self._x: dict | None = None

    def _term(self, k: str, v: Any) -> float:
        """``x_k * w_k`` after scaling (river's transform, then its product)."""
        if not isinstance(v, _NUMBERS):
            raise Unsupported(f"feature {k!r} is not a number")
        scale = self.scale
        if scale is not None:
            mean, sd = scale[k]
            if sd is False:
                v = v - mean
            else:
                v = (v - mean) / sd if sd is not None else 0.0
        return v * self.weights[k]

    def z(self, row: dict) -> float:
        """``w . scaled(row) + b`` in river's order."""
        w = self.weights
        acc: Any = 0
        for k, v in row.items():
            if k in w:
                acc = acc + self._term(k, v)
            elif self.scale is not None and not isinstance(v, _NUMBERS):
                raise Unsupported(f"feature {k!r} is not a number")
        return acc + self.intercept

    def z_replaced(self, x: dict, feature: str, value: Any) -> float:
        """``z`` of ``x`` with ``feature = value`` (``x`` is the same dict for a whole call)."""
        if x is not self._x:
            self._prepare(x)
        i = self._pos.get(feature)
        if i is None:  # no weight: the value only passes through the scaler, if any
            if self.scale is not None and not isinstance(value, _NUMBERS):
                raise Unsupported(f"feature {feature!r} is not a number")
            return self._base
        acc = self._pre[i] + self._term(feature, value)
        for t in self._post[i]:
            acc = acc + t
        return acc + self.intercept

    def _prepare(self, x: dict) -> None:
        w = self.weights
        terms = []
        self._pos = {}
        for k, v in x.items():
            if k in w:
                self._pos[k] = len(terms)
                terms.append(self._term(k, v))
            elif self.scale is not None and not isinstance(v, _NUMBERS):
                raise Unsupported(f"feature {k!r} is not a number")
        pre: list[Any] = []
        acc: Any = 0
        for t in terms:
            pre.append(acc)
            acc = acc + t
        self._pre = pre
        self._post = [terms[i + 1:] for i in range(len(terms))]
        self._base = acc + self.intercept
        self._x = x

    def output(self, z: float, output: str, target_class: Any) -> Any:
        if not self.classifier:
            return float(z) if output == "value" else z
        p = sigmoid(z)
        return to_output({False: 1.0 - p, True: p}, output, target_class)


class LinearFast(FastModel):
    """``LinearRegression`` / ``LogisticRegression``, bare or as ``StandardScaler | model``."""

    name = "linear"

    def __init__(self, model: Any):
        self.model = model

    @staticmethod
    def accepts(model: Any) -> bool:
        if type(model) is Pipeline:
            t = type(model)
            if (t.predict_one is not Pipeline.predict_one or t.predict_proba_one is not Pipeline.predict_proba_one
                    or t._transform_one is not Pipeline._transform_one):
                return False
            steps = list(model.steps.values())
            if len(steps) != 2 or type(steps[0]) is not StandardScaler:
                return False
            if type(steps[0]).transform_one is not StandardScaler.transform_one:
                return False
            model = steps[1]
        return _glm_kind(model) is not None

    def rows(self, rows: Sequence[dict], output: str, target_class: Any) -> list:
        keys = rows[0].keys()
        call = LinearCall(self.model, keys)
        out = []
        for r in rows:
            if r.keys() != keys:
                raise Unsupported("the rows of one call carry different features")
            out.append(call.output(call.z(r), output, target_class))
        return out

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], output: str, target_class: Any) -> list:
        call = LinearCall(self.model, x.keys())
        for f, _ in pairs:
            if f not in x:
                raise Unsupported(f"feature {f!r} is not in the row")
        return [call.output(call.z_replaced(x, f, v), output, target_class) for f, v in pairs]
