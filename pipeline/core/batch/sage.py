"""Batch SAGE (Covert, Lundberg & Lee 2020), the reference iSAGE is validated against.

:func:`sage` is the permutation estimator of the iSAGE paper's Algorithm 5 (Definition 2):
the mean prediction ``y_0 = 1/N sum_n f(x_n)``; for every observation ``(x_n, y_n)`` one
random permutation of the features, walked from ``S = {}`` to ``S = D``; at each step the
restricted prediction is the mean of ``m`` predictions with the absent features copied
from observations drawn uniformly from the batch (marginal imputation, ``x~`` may be
``x_n`` itself); the feature just added is credited with the drop in loss. The values are
the means of these increments over the batch, and the increments' standard deviations
are returned with them, so a comparison can use the estimator's own standard error
``std / sqrt(N)``.

As in iSAGE, the step ``S = D`` uses ``f(x_n)`` (already computed for ``y_0``): model
evaluations are ``N * (1 + (d - 1) * m)``. ``m`` is part of the estimand (see
:mod:`pipeline.core.explainers.isage`): compare iSAGE and batch SAGE with the same ``m``.

:class:`SlidingWindowSAGE` is the paper's SW-SAGE baseline (§3.0.1): keep the last
``window`` observations and recompute batch SAGE on them with the current model every
``stride`` events (the paper's experiments use ``stride = window / 20``, the default).

>>> from pipeline.core.model import ModelFunction
>>> import random
>>> gen = random.Random(0)
>>> X = [{"a": gen.random(), "b": gen.random()} for _ in range(2000)]
>>> y = [2.0 * x["a"] for x in X]
>>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
>>> est = sage(f, "squared", X, y, n_inner_samples=20, seed=0)
>>> {k: round(v, 2) for k, v in est.values.items()}   # 4 Var[a] = 1/3 for m -> inf; b is ignored
{'a': 0.34, 'b': -0.01}
>>> est.n, f.n_evaluations                            # N * (1 + (d - 1) * m)
(2000, 42000)
>>> est.stderr["a"] < 0.01
True
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..explainers.base import Explainer
from ..losses import get_loss
from ..model import ModelFunction, mean_output
from ..rng import derive_seed, make_rng

__all__ = ["SAGEEstimate", "sage", "SlidingWindowSAGE"]


@dataclass(frozen=True)
class SAGEEstimate:
    """SAGE values, the standard deviation of the per-observation increments, and ``N``."""

    values: dict[str, float]
    std: dict[str, float]
    n: int

    @property
    def stderr(self) -> dict[str, float]:
        """Standard error of each value, ``std / sqrt(n)``."""
        root = math.sqrt(self.n)
        return {f: s / root for f, s in self.std.items()}


def _check_output(model_fn: ModelFunction, who: str) -> None:
    if not isinstance(model_fn, ModelFunction):
        raise TypeError(
            f"model_fn must be a ModelFunction, got {type(model_fn).__name__}; wrap the model "
            "as ModelFunction(model, output=...)"
        )
    if model_fn.output == "label":
        raise ValueError(
            f"{who} averages predictions and a mean of labels is undefined; explain "
            "output='proba' with loss='cross_entropy', or output='value' for a regressor"
        )


def sage(
    model_fn: ModelFunction,
    loss: Any,
    X: Sequence[dict[str, Any]],
    y: Sequence[Any],
    feature_names: Sequence[str] | None = None,
    n_inner_samples: int = 1,
    seed: int | None = None,
) -> SAGEEstimate:
    """Algorithm 5 over ``(X, y)``; ``feature_names`` default to the keys of ``X[0]``."""
    _check_output(model_fn, "SAGE")
    X = list(X)
    y = list(y)
    if not X:
        raise ValueError("X is empty; SAGE needs at least one observation")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} observations but y has {len(y)} targets")
    m = n_inner_samples
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise ValueError(f"n_inner_samples={m!r} must be a positive int")
    names = list(feature_names) if feature_names is not None else list(X[0])
    loss_fn = get_loss(loss)
    rng = make_rng(seed, "sage")
    rand = rng.random
    n = len(X)
    d = len(names)

    full = model_fn.many(X)
    y_empty = mean_output(full)
    sums = dict.fromkeys(names, 0.0)
    squares = dict.fromkeys(names, 0.0)
    for x, yt, y_full in zip(X, y, full, strict=True):
        order = names.copy()
        rng.shuffle(order)
        rows = []
        for j in range(1, d):
            absent = order[j:]
            for _ in range(m):
                donor = X[int(rand() * n)]
                row = x.copy()
                for f in absent:
                    row[f] = donor[f]
                rows.append(row)
        preds = model_fn.many(rows) if rows else []
        prev = loss_fn(yt, y_empty)
        for j, f in enumerate(order):
            if j == d - 1:
                pred = y_full
            elif m == 1:
                pred = preds[j]
            else:
                pred = mean_output(preds[j * m : (j + 1) * m])
            cur = loss_fn(yt, pred)
            delta = prev - cur
            sums[f] += delta
            squares[f] += delta * delta
            prev = cur
    values = {f: sums[f] / n for f in names}
    std = {
        f: math.sqrt(max(squares[f] - n * values[f] ** 2, 0.0) / (n - 1)) if n > 1 else 0.0
        for f in names
    }
    return SAGEEstimate(values, std, n)


class SlidingWindowSAGE(Explainer):
    """SW-SAGE: batch SAGE on the last ``window`` observations with the current model.

    ``explain_one`` appends ``(x, y)`` to the window and, on the first event and then every
    ``stride`` events, recomputes :func:`sage` on the window (``window * (1 + (d - 1) * m)``
    evaluations); in between it returns the last values. ``observe_one`` only appends.
    Each recomputation draws with a generator seeded from ``(seed, "sw-sage", n)``, ``n`` the
    number of events seen, so results do not depend on when the object was restored.

    >>> from pipeline.core.model import ModelFunction
    >>> import random
    >>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
    >>> sw = SlidingWindowSAGE(f, "squared", ["a", "b"], window=200, stride=50,
    ...                        n_inner_samples=10, seed=1)
    >>> gen = random.Random(1)
    >>> for _ in range(400):
    ...     x = {"a": gen.random(), "b": gen.random()}
    ...     phi = sw.explain_one(x, 2.0 * x["a"])
    >>> sw.n_recomputed, f.n_evaluations   # events 1, 51, ..., 351: (1+51+101+151+4*200) rows x 11
    (8, 12144)
    >>> round(phi["a"], 1), round(phi["b"], 1)
    (0.3, 0.0)
    """

    name = "sw_sage"

    def __init__(
        self,
        model_fn: ModelFunction,
        loss: Any,
        feature_names: Sequence[str],
        window: int = 1000,
        stride: int | None = None,
        n_inner_samples: int = 1,
        seed: int | None = None,
    ):
        self.model_fn = self._check_model_fn(model_fn)
        _check_output(model_fn, "SW-SAGE")
        self.loss = loss
        self.feature_names = feature_names
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise ValueError(f"window={window!r} must be a positive int")
        self.window = window
        if stride is not None and (not isinstance(stride, int) or isinstance(stride, bool) or stride < 1):
            raise ValueError(f"stride={stride!r} must be a positive int or None (window // 20)")
        self.stride = stride
        if not isinstance(n_inner_samples, int) or isinstance(n_inner_samples, bool) or n_inner_samples < 1:
            raise ValueError(f"n_inner_samples={n_inner_samples!r} must be a positive int")
        self.n_inner_samples = n_inner_samples
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        self._names = self._check_features(self.feature_names, None)
        get_loss(self.loss)
        self._stride = self.stride if self.stride is not None else max(1, self.window // 20)
        self._X: deque[dict[str, Any]] = deque(maxlen=self.window)
        self._y: deque[Any] = deque(maxlen=self.window)
        self.values: dict[str, float] = {f: 0.0 for f in self._names}
        self.n_explained = 0
        self.n_seen = 0
        self.n_recomputed = 0
        self._since = 0

    def observe_one(self, x: dict[str, Any], y: Any) -> None:
        self._X.append(dict(x))
        self._y.append(y)
        self.n_seen += 1

    def explain_one(self, x: dict[str, Any], y: Any) -> dict[str, float]:
        self.observe_one(x, y)
        self.n_explained += 1
        if self.n_recomputed == 0 or self._since + 1 >= self._stride:
            est = sage(
                self.model_fn, self.loss, self._X, self._y, self._names,
                n_inner_samples=self.n_inner_samples,
                seed=derive_seed(self.seed, "sw-sage", self.n_seen),
            )
            self.values = est.values
            self.n_recomputed += 1
            self._since = 0
        else:
            self._since += 1
        return dict(self.values)
