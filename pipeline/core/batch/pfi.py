"""Batch permutation feature importance, the reference iPFI is validated against.

>>> from streamxai.core.model import ModelFunction
>>> X = [{"a": float(i % 4), "b": float(i % 3)} for i in range(12)]
>>> f = ModelFunction(lambda x: x["a"], output="value")
>>> y = [x["a"] for x in X]
>>> exact = batch_pfi(f, "squared", X, y, n_repeats=None)
>>> exact                              # E[(a - a')^2] over pairs, b unused
{'a': 2.727..., 'b': 0.0}
>>> sampled = batch_pfi(f, "squared", X, y, n_repeats=200, seed=1)
>>> abs(sampled["a"] - exact["a"]) < 0.2, sampled["b"]
(True, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..bare_model import check_model_fn
from ..base import Component, check_positive_int
from ..losses import get_loss
from ..model import ModelFunction
from ..rng import derive_seed

__all__ = ["batch_pfi", "IntervalPFI", "pfi_error"]

Loss = str | Callable[[Any, Any], float]


def batch_pfi(
    model_fn: ModelFunction,
    loss: Loss,
    X: Sequence[dict[str, Any]],
    y: Sequence[Any],
    features: Sequence[str] | None = None,
    n_repeats: int | None = 10,
    seed: int | None = None,
) -> dict[str, float]:
    """PFI (Eq. 3) of ``model_fn`` on ``(X, y)``; ``n_repeats=None`` for the exact U-statistic.

    With ``n_repeats=M``: ``N / (N - 1)`` times the mean loss increase over ``M`` random
    permutations (unbiased, the paper's Theorem 1); with None, the mean over all ``N (N - 1)``
    ordered pairs (model reliance). Draws for feature ``j`` are seeded by ``(seed, "batch_pfi", j)``."""
    model_fn = check_model_fn(model_fn, loss)
    n = len(X)
    if n != len(y):
        raise ValueError(f"X has {n} rows but y has {len(y)} labels")
    if n < 2:
        raise ValueError(f"PFI needs at least 2 observations, got {n}")
    if n_repeats is not None:
        check_positive_int(n_repeats, "n_repeats", " or None (exact)")
    names = list(X[0]) if features is None else list(features)
    missing = [f for f in names if f not in X[0]]
    if missing:
        raise ValueError(f"features {missing} are not in the observations {list(X[0])}")
    loss_fn = get_loss(loss)
    base = np.array([loss_fn(yi, p) for yi, p in zip(y, model_fn.many(X), strict=True)], float)
    out = {}
    for f in names:
        if n_repeats is None:
            out[f] = _exact(model_fn, loss_fn, X, y, f, base)
        else:
            out[f] = _sampled(model_fn, loss_fn, X, y, f, base, n_repeats, seed)
    return out


def _exact(model_fn, loss_fn, X, y, f, base) -> float:
    n = len(X)
    counts: dict[Any, int] = {}
    for x in X:
        v = x[f]
        counts[v] = counts.get(v, 0) + 1
    values = list(counts)
    weights = np.array([counts[v] for v in values], float)
    # sum over m != n of loss(h(x_n^(-f), x_m^(f)), y_n): distinct values once, weighted
    switch = np.empty(n)
    for i, (x, yi) in enumerate(zip(X, y, strict=True)):
        own = x[f]
        keep = [k for k, v in enumerate(values) if v != own]
        rows = []
        for k in keep:
            r = dict(x)
            r[f] = values[k]
            rows.append(r)
        losses = np.array([loss_fn(yi, p) for p in model_fn.many(rows)], float)
        same = counts[own] - 1  # other observations sharing x_n's value: row == x_n
        switch[i] = float(weights[keep] @ losses) + same * base[i] if keep else same * base[i]
    return float(switch.sum() / (n * (n - 1)) - base.mean())


def _sampled(model_fn, loss_fn, X, y, f, base, n_repeats, seed) -> float:
    n = len(X)
    rng = np.random.default_rng(derive_seed(seed, "batch_pfi", f))
    column = [x[f] for x in X]
    total = 0.0
    for _ in range(n_repeats):
        perm = rng.permutation(n).tolist()
        swapped = [column[j] for j in perm]
        idx = [i for i in range(n) if swapped[i] != column[i]]  # others: lambda = 0
        rows = []
        for i in idx:
            r = dict(X[i])
            r[f] = swapped[i]
            rows.append(r)
        losses = np.array([loss_fn(y[i], p) for i, p in zip(idx, model_fn.many(rows), strict=True)], float)
        total += float(losses.sum() - base[idx].sum()) / n if idx else 0.0
    return float(n / (n - 1) * total / n_repeats)


def pfi_error(estimate: Mapping[str, float], reference: Mapping[str, float]) -> float:
    """The paper's error (Table 1): min-max normalise both, sum ``|difference|`` over features.

    >>> pfi_error({"a": 0.5, "b": 0.0, "c": 0.25}, {"a": 1.0, "b": 0.1, "c": 0.5})  # |0.5 - 4/9|
    0.0555...
    """
    keys = list(reference)
    if set(estimate) != set(keys):
        raise ValueError(f"features differ: {sorted(estimate)} vs {sorted(keys)}")
    a = _minmax(np.array([estimate[k] for k in keys], float))
    b = _minmax(np.array([reference[k] for k in keys], float))
    return float(np.abs(a - b).sum())


def _minmax(v: np.ndarray) -> np.ndarray:
    span = v.max() - v.min()
    return (v - v.min()) / span if span > 0 else np.zeros_like(v)


class IntervalPFI(Component):
    """Batch PFI over consecutive intervals of a stream (the iPFI paper's drift baseline).

    ``update(x, y)`` collects events; when ``interval`` events are collected, the PFI of Eq. 3
    (``n_repeats`` permutations, :func:`batch_pfi`) of the model as it is *now* on those events is
    returned, and the next interval starts empty. The model is assumed deterministic at prediction
    time.

    >>> from streamxai.core.model import ModelFunction
    >>> def h(x):
    ...     return int(x["a"] > 0.5)
    >>> ipfi = IntervalPFI(ModelFunction(h), "zero_one", ["a", "b"], interval=500, seed=3)
    >>> import random
    >>> rng = random.Random(0)
    >>> results = []
    >>> for _ in range(1000):
    ...     x = {"a": rng.random(), "b": rng.random()}
    ...     out = ipfi.update(x, h(x))
    ...     if out is not None:
    ...         results.append(out)
    >>> len(results), ipfi.n_intervals, round(results[-1]["a"], 1), results[-1]["b"]
    (2, 2, 0.5, 0.0)
    """

    def __init__(
        self,
        model_fn: ModelFunction,
        loss: Loss,
        feature_names: Sequence[str],
        features: Sequence[str] | None = None,
        interval: int = 1000,
        n_repeats: int = 10,
        seed: int | None = None,
    ):
        self.model_fn = check_model_fn(model_fn, loss)
        self.loss = loss
        self.feature_names = feature_names
        self.features = features
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 2:
            raise ValueError(f"interval={interval!r} must be an int >= 2")
        self.interval = interval
        self.n_repeats = check_positive_int(n_repeats, "n_repeats")
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        names = list(self.feature_names)
        features = names if self.features is None else list(self.features)
        unknown = [f for f in features if f not in names]
        if unknown:
            raise ValueError(f"features {unknown} are not in feature_names {names}")
        self._explained = features
        get_loss(self.loss)
        self._X: list[dict[str, Any]] = []
        self._y: list[Any] = []
        self.n_intervals = 0
        self.values: dict[str, float] = {f: 0.0 for f in features}

    def update(self, x: dict[str, Any], y: Any) -> dict[str, float] | None:
        """Collect ``(x, y)``; at the end of an interval, return the interval's PFI."""
        self._X.append(dict(x))
        self._y.append(y)
        if len(self._X) < self.interval:
            return None
        self.values = batch_pfi(
            self.model_fn,
            self.loss,
            self._X,
            self._y,
            features=self._explained,
            n_repeats=self.n_repeats,
            seed=derive_seed(self.seed, "interval", self.n_intervals),
        )
        self.n_intervals += 1
        self._X, self._y = [], []
        return dict(self.values)

