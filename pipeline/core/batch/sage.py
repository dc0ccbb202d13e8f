"""Batch SAGE (Covert, Lundberg & Lee 2020), the reference iSAGE is validated against.

>>> from streamxai.core.model import ModelFunction
>>> import random
>>> gen = random.Random(0)
>>> X = [{"a": gen.random(), "b": gen.random()} for _ in range(2000)]
>>> y = [2.0 * x["a"] for x in X]
>>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
>>> est = sage(f, "squared", X, y, seed=0)              # unbiased, m = 2
>>> {k: round(v, 2) for k, v in est.values.items()}   # 4 Var[a] = 1/3; b is ignored
{'a': 0.34, 'b': 0.0}
>>> est.n, f.n_evaluations                            # N * (1 + d * m)
(2000, 10000)
>>> round(est.stderr["a"], 3), est.stderr["b"]         # b: 0 on every observation
(0.015, 0.0)
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..bare_model import check_model_fn
from ..base import check_positive_int
from ..explainers.base import Explainer
from ..losses import get_loss, resolve_estimator
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
    n_inner_samples: int = 2,
    seed: int | None = None,
    estimator: str | None = None,
) -> SAGEEstimate:
    """Algorithm 5 of the iSAGE paper over ``(X, y)``; ``feature_names`` default to the keys of ``X[0]``.

    For every observation one random permutation of the features, walked from ``S = {}`` to
    ``S = D``, with ``m`` donors drawn among the *other* observations shared by the whole chain; each
    coalition's loss is estimated as :class:`~streamxai.core.explainers.ISAGE` does (``estimator``:
    ``"unbiased"``, ``"plug_in"`` or ``"paper"``, which starts at the batch mean prediction), so the
    two compare like with like. Returns the mean increments with their standard deviations; model
    evaluations are ``N * (1 + d * m)``, or ``N * (1 + (d - 1) * m)`` for ``"paper"``."""
    _check_output(model_fn, "SAGE")
    X = list(X)
    y = list(y)
    if not X:
        raise ValueError("X is empty; SAGE needs at least one observation")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} observations but y has {len(y)} targets")
    m = n_inner_samples
    check_positive_int(m, "n_inner_samples")
    names = list(feature_names) if feature_names is not None else list(X[0])
    loss_fn = get_loss(loss)
    mode = resolve_estimator(estimator, loss_fn, m, loss)
    of_mean = loss_fn.of_mean if mode == "unbiased" else None  # type: ignore[attr-defined]
    first = 1 if mode == "paper" else 0
    rng = make_rng(seed, "sage")
    rand = rng.random
    n = len(X)
    d = len(names)
    others = n - 1  # donors are drawn among the other observations, distinct when possible

    full = model_fn.many(X)
    y_empty = mean_output(full)
    sums = dict.fromkeys(names, 0.0)
    squares = dict.fromkeys(names, 0.0)
    for i, (x, yt, y_full) in enumerate(zip(X, y, full, strict=True)):
        order = names.copy()
        rng.shuffle(order)
        if others == 0:
            idx = [i] * m
        elif others >= m:
            idx = [k + 1 if k >= i else k for k in rng.sample(range(others), m)]
        else:
            idx = [k + 1 if k >= i else k for k in (int(rand() * others) for _ in range(m))]
        steps: list[list[dict[str, Any]]] = [[] for _ in range(d - first)]
        for k in idx:  # the m donors are shared by the whole chain (marginal imputation)
            donor = X[k]
            row = x
            for j in range(d - 1, first - 1, -1):
                row = row.copy()
                row[order[j]] = donor[order[j]]
                steps[j - first].append(row)
        rows = [r for step in steps for r in step]
        preds = model_fn.many(rows) if rows else []
        if first == 1:
            prev = loss_fn(yt, y_empty)
        for j in range(first, d + 1):
            if j == d:
                cur = loss_fn(yt, y_full)
            else:
                group = preds[(j - first) * m : (j - first + 1) * m]
                if of_mean is not None:
                    cur = of_mean(yt, group)
                else:
                    cur = loss_fn(yt, group[0] if m == 1 else mean_output(group))
            if j > 0:
                f = order[j - 1]
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
    """SW-SAGE (the iSAGE paper's baseline): batch SAGE on the last ``window`` observations with
    the current model, recomputed on the first event and every ``stride`` events (``window / 20`` by
    default); ``observe_one`` only appends. Each recomputation is seeded from
    ``(seed, "sw-sage", n)``, so results do not depend on when the object was restored.

    >>> from streamxai.core.model import ModelFunction
    >>> import random
    >>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
    >>> sw = SlidingWindowSAGE(f, "squared", ["a", "b"], window=200, stride=50,
    ...                        n_inner_samples=10, seed=1)
    >>> gen = random.Random(1)
    >>> for _ in range(400):
    ...     x = {"a": gen.random(), "b": gen.random()}
    ...     phi = sw.explain_one(x, 2.0 * x["a"])
    >>> sw.n_recomputed, f.n_evaluations   # events 1, 51, ..., 351: (1+51+101+151+4*200) rows x 21
    (8, 23184)
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
        n_inner_samples: int = 2,
        seed: int | None = None,
        estimator: str | None = None,
    ):
        self.model_fn = check_model_fn(model_fn, loss)
        _check_output(self.model_fn, "SW-SAGE")
        self.loss = loss
        self.feature_names = feature_names
        self.window = check_positive_int(window, "window")
        if stride is not None:
            check_positive_int(stride, "stride", " or None (window // 20)")
        self.stride = stride
        self.n_inner_samples = check_positive_int(n_inner_samples, "n_inner_samples")
        self.seed = seed
        self.estimator = estimator
        self._reset()

    def _reset(self) -> None:
        self._names = self._check_features(self.feature_names, None)
        resolve_estimator(self.estimator, get_loss(self.loss), self.n_inner_samples, self.loss)
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
                estimator=self.estimator,
            )
            self.values = est.values
            self.n_recomputed += 1
            self._since = 0
        else:
            self._since += 1
        return dict(self.values)
