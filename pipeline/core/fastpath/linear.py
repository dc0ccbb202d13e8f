"""River's linear models, alone or after a ``StandardScaler`` in a pipeline, from their weights.

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

import numpy as np
from river.base import Classifier
from river.compose import Pipeline
from river.linear_model import LinearRegression, LogisticRegression
from river.linear_model.base import GLM
from river.optim.losses import BinaryLoss, RegressionLoss
from river.preprocessing import StandardScaler

from ..kernels import KERNELS
from .base import FastModel, Unsupported, to_output

__all__ = ["LinearFast", "LinearCall", "glm_kind"]

_NUMBERS = (int, float)
_PROBA_KEYS = {False: 0, True: 1}
_ARRAY_FROM = 16  # rows from which replaced_batch computes with arrays  # the keys of LogisticRegression.predict_proba_one, by position


def glm_kind(model: Any) -> str | None:
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
    """One linear model (maybe behind a scaler) during one call over rows with ``keys``.

    River's ``w . x + b`` walks ``x`` in its key order, skips keys without a weight and adds
    ``x_k * w_k`` to a running sum that starts at the integer 0 (a scaler first maps each value to
    ``(v - mean) / var ** 0.5``); ``LogisticRegression`` applies river's sigmoid. Rows that differ
    from ``x`` in one feature share the running sum before it and add only the products after it,
    never a reordered sum. With the compiled kernels (:mod:`streamxai.core.kernels`) iPFI's rows,
    iSAGE's chains and iPDP's curves are each one C call; otherwise, from 16 such rows on, arrays
    summed left to right, and other rows go to the model itself (``serves_rows = False``)."""

    __slots__ = ("weights", "intercept", "classifier", "scale", "_x", "_pos", "_base", "_kargs", "_arrays",
                 "_layouts")

    def __init__(self, model: Any, keys: Any, layouts: dict | None = None):
        #: index arrays and matrices of ICE curves by their shape (z_curves), kept by the caller between calls
        self._layouts = {} if layouts is None else layouts
        scaler, glm = _split_pipeline(model)
        kind = glm_kind(glm)
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

    def row(self, row: dict) -> float:
        """``w . scaled(row) + b`` in river's order."""
        return self._base if row is self._x else self.z(row)  # x's, summed the same way

    def replaced(self, x: dict, feature: str, value: Any) -> float:
        return self.z_replaced(x, feature, value)

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
        pre, post, _, _ = self._parts()
        acc = pre[i] + self._term(feature, value)
        for t in post[i]:
            acc = acc + t
        return acc + self.intercept

    def _prepare(self, x: dict) -> None:
        w = self.weights
        scale = self.scale
        terms: list = []
        weights: list = []
        pos: dict = {}
        for k, v in x.items():
            wk = w.get(k)
            if wk is not None:
                pos[k] = len(terms)
                # _term's product; an exact float without a scaler needs none of its checks
                terms.append(v * wk if scale is None and type(v) is float else self._term(k, v))
                weights.append(wk)
            elif scale is not None and not isinstance(v, _NUMBERS):
                raise Unsupported(f"feature {k!r} is not a number")
        self._pos = pos
        acc: Any = 0
        for t in terms:
            acc = acc + t
        self._base = acc + self.intercept
        # the compiled kernels' view (pipeline/core/_kernels_linear.c): per weighted feature, in
        # x's order, its product, weight and the scaler's mean and deviation (None: variance 0)
        self._kargs = (terms, weights, None if scale is None else [scale[k][0] for k in pos],
                       None if scale is None else [scale[k][1] for k in pos], pos)
        self._arrays = None  # the Python code's partial sums and arrays, made when first needed
        self._x = x

    def forget_row(self) -> None:
        """Drop the row the partial sums are of: the next call prepares its own row even if it
        is that same dict (the caller no longer watches it for changes in place)."""
        self._x = None

    def _parts(self) -> tuple:
        """``(pre, post, terms, cols)`` of the current ``x``: each product's partial sum before it,
        the products after it, the products as an array and the weighted features' columns."""
        if self._arrays is not None:
            return self._arrays
        terms, w, means, sds, _ = self._kargs
        pre: list[Any] = []
        acc: Any = 0
        for t in terms:
            pre.append(acc)
            acc = acc + t
        post = [terms[i + 1:] for i in range(len(terms))]
        w_a = np.array(w, dtype=float)
        if means is None:
            cols = (w_a, None, None, None)
        else:
            zero_var = np.array([sd is None for sd in sds], dtype=bool)
            sd = np.array([1.0 if sd is None or sd is False else sd for sd in sds], dtype=float)
            cols = (w_a, np.array(means, dtype=float), sd if not any(sd is False for sd in sds) else None, zero_var)
        self._arrays = (pre, post, np.array(terms, dtype=float), cols)
        return self._arrays

    def mode(self, output: str, target_class: Any) -> int | None:
        """The compiled kernels' output mode: 0 ``z``, 1 the probability of ``True``, 2 of ``False``,
        3 the label, 4 the label as a float; None for any other output."""
        if not self.classifier:
            return 0 if output == "value" else None
        if output == "label":
            return 3
        if output == "value":
            return 4
        if output != "proba_of":
            return None
        key = _PROBA_KEYS.get(target_class)
        return None if key is None else 1 if key else 2

    def replaced_batch(self, x: dict, pairs: list) -> list:
        """:meth:`z_replaced` of every pair at once, each row's products in river's order summed
        one after the other (``np.add.accumulate``)."""
        if x is not self._x:
            self._prepare(x)
        pos = self._pos
        try:
            cols = [pos[f] for f, _ in pairs]
        except KeyError:  # a feature without a weight: row by row
            return [self.z_replaced(x, f, v) for f, v in pairs]
        n = len(pairs)
        if n < _ARRAY_FROM:  # too few rows to pay for the arrays
            return [self.z_replaced(x, f, v) for f, v in pairs]
        vals = [v for _, v in pairs]
        if not all(isinstance(v, _NUMBERS) for v in vals):
            raise Unsupported("a value that is not a number")
        _, _, x_terms, (w, mean, sd, zero_var) = self._parts()
        if not len(x_terms):
            return [self._base] * n
        idx = np.array(cols)
        v = np.array(vals, dtype=float)
        if mean is not None:
            v = v - mean[idx]
            if sd is not None:  # (v - mean) / var ** 0.5, or 0.0 where the variance is 0
                v = np.where(zero_var[idx], 0.0, v / sd[idx])
        terms = np.tile(x_terms, (n, 1))
        terms[np.arange(n), idx] = v * w[idx]
        return (np.add.accumulate(terms, axis=1)[:, -1] + self.intercept).tolist()

    def z_curves(self, x: dict, features: list, grids: np.ndarray) -> np.ndarray | None:
        """``z`` of ``x`` with ``features[i] = grids[i, k]``, shaped as ``grids``: each row's products
        in river's order after a 0, summed left to right; None when a feature has no weight."""
        if x is not self._x:
            self._prepare(x)
        pos = self._pos
        try:
            cols = [pos[f] for f in features]
        except KeyError:
            return None
        _, _, x_terms, (w, mean, sd, zero_var) = self._parts()
        nf, g = grids.shape
        n, width = nf * g, len(x_terms) + 1
        key = (*cols, g, width)
        layout = self._layouts.get(key)
        if layout is None:
            # each feature's weighted column, where its values go in the matrix (by grid
            # point), and the matrix itself: its first column 0 once, the rest written by
            # every call (the sums are new arrays, so the matrix is reused)
            idx = np.array(cols)
            terms = np.zeros((n, width))
            at = (np.arange(n) * width + np.repeat(idx, g) + 1).reshape(nf, g)
            layout = (idx[:, None], at, terms)
            if len(self._layouts) >= 16:
                self._layouts.clear()
            self._layouts[key] = layout
        col, at, terms = layout
        v = grids
        if mean is not None:  # the scaler's (v - mean) / var ** 0.5, or 0.0 where the variance is 0
            v = v - mean[col]
            if sd is not None:
                v = np.where(zero_var[col], 0.0, v / sd[col])
        terms[:, 1:] = x_terms
        terms.reshape(-1)[at] = v * w[col]  # (a view: the matrix is contiguous)
        return (np.add.accumulate(terms, axis=1)[:, -1] + self.intercept).reshape(nf, g)

    def output_array(self, z: np.ndarray, output: str, target_class: Any) -> np.ndarray | None:
        """:meth:`output` of each ``z`` for a numeric output, as floats (None: another output)."""
        if not self.classifier:
            return z if output == "value" else None
        # river's sigmoid: 0 below -30, 1 above 30, else 1 / (1 + exp(-z)) with the C library's exp
        neg = np.minimum(-z, 30.0).ravel().tolist()  # (no overflow where the value is 0 anyway)
        p = 1.0 / (1.0 + np.fromiter(map(math.exp, neg), dtype=float, count=len(neg)).reshape(z.shape))
        if np.fmax.reduce(np.abs(z), axis=None) > 30:  # z < -30 or z > 30 somewhere (fmax: past any NaN)
            p = np.where(z < -30, 0.0, np.where(z > 30, 1.0, p))
        if output == "proba_of":  # {False: 1 - p, True: p}.get(target_class, 0.0)
            key = _PROBA_KEYS.get(target_class)
            return np.zeros_like(p) if key is None else p if key else 1.0 - p
        if output == "value":  # the label True only if its probability is larger
            return (p > 1.0 - p).astype(float)
        return None

    def outputs(self, zs: list, output: str, target_class: Any) -> list:
        """:meth:`output` of each ``z``."""
        if not self.classifier:
            return [float(z) for z in zs] if output == "value" else list(zs)
        exp = math.exp
        ps = [0 if z < -30 else 1 if z > 30 else 1 / (1 + exp(-z)) for z in zs]  # river's sigmoid
        if output == "proba_of":  # {False: 1 - p, True: p}.get(target_class, 0.0)
            key = _PROBA_KEYS.get(target_class)
            if key is None:
                return [0.0] * len(ps)
            return [float(p) for p in ps] if key else [float(1.0 - p) for p in ps]
        if output == "label":  # max(d, key=d.get): True only if its probability is larger
            return [p > 1.0 - p for p in ps]
        if output == "value":
            return [float(p > 1.0 - p) for p in ps]
        return [{False: 1.0 - p, True: p} for p in ps]

    def output(self, z: float, output: str, target_class: Any) -> Any:
        if not self.classifier:
            return float(z) if output == "value" else z
        p = sigmoid(z)
        return to_output({False: 1.0 - p, True: p}, output, target_class)


class LinearFast(FastModel):
    """``LinearRegression`` / ``LogisticRegression``, bare or as ``StandardScaler | model``."""

    name = "linear"
    serves_rows = False  # river's dot product is compiled: a row costs it under a microsecond

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
        return glm_kind(model) is not None

    def __init__(self, model: Any):
        super().__init__(model)
        self._layouts: dict = {}  # LinearCall's ICE curve layouts, kept from call to call

    def new_call(self, keys: Any) -> LinearCall:
        return LinearCall(self.model, keys, self._layouts)

    def token(self) -> Any:
        glm = self.model._last_step_cached if type(self.model) is Pipeline else self.model
        return getattr(glm, "optimizer", None) and glm.optimizer.n_iterations

    def output(self, call: Any, result: Any, output: str, target_class: Any) -> Any:
        return call.output(result, output, target_class)

    def outputs(self, call: Any, results: list, output: str, target_class: Any) -> list:
        return call.outputs(results, output, target_class)

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], output: str, target_class: Any,
                 with_x: bool = False) -> list:
        if KERNELS is not None and type(pairs) is list:  # one compiled call (the same operations)
            call = self._scope_of(x)
            mode = call.mode(output, target_class)
            if mode is not None:
                if x is not call._x:
                    call._prepare(x)
                out = KERNELS.linear_replaced(*call._kargs, pairs, call.intercept, mode, with_x)
                if out is not None:
                    return out
        return super().replaced(x, pairs, output, target_class, with_x)

    def coalitions(self, x: dict, order: list, donors: list, first: int, output: str, target_class: Any) -> list | None:
        """The output at ``x``, then at the chain's rows, in one compiled call; None otherwise (the
        rows then go to the model, whose compiled dot product is faster than Python)."""
        if KERNELS is None:
            return None
        call = self._scope_of(x)
        mode = call.mode(output, target_class)
        if mode is None:
            return None
        if x is not call._x:
            call._prepare(x)
        return KERNELS.linear_chain(*call._kargs, order, donors, first, call.intercept, mode)

    def curves(self, x: dict, features: Sequence[str], grids: np.ndarray, output: str, target_class: Any) -> np.ndarray:
        call = self._scope_of(x)
        if KERNELS is not None and type(grids) is np.ndarray and grids.ndim == 2 and len(grids) == len(features):
            mode = call.mode(output, target_class)
            if mode is not None:  # one compiled call (the same operations)
                if x is not call._x:
                    call._prepare(x)
                out = np.empty(grids.shape)
                if KERNELS.linear_curves(*call._kargs, list(features), grids, call.intercept, mode, out):
                    return out
        z = call.z_curves(x, list(features), grids)
        out = None if z is None else call.output_array(z, output, target_class)
        return super().curves(x, features, grids, output, target_class) if out is None else out
