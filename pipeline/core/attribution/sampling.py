"""Interventional Shapley values of any model by permutation sampling, with standard errors.

A draw walks from a background point ``z`` to ``x`` in a random order of the features, each
marginal contribution an unbiased estimate (Strumbelj and Kononenko 2014); each pass draws every
point once, so the estimates sum exactly to ``f(x) - mean_z f(z)``.

>>> import random
>>> f = lambda r: r["a"] * r["b"]
>>> gen = random.Random(0)
>>> background = [{"a": gen.random(), "b": gen.random()} for _ in range(20)]
>>> est = permutation_shapley(f, {"a": 1.0, "b": 1.0}, background, ["a", "b"], 200, seed=1)
>>> est.n_draws, est.n_evaluations          # 8 passes of 20 draws, each 1 call, f(x) and 20 f(z)
(160, 181)
>>> round(float(sum(est.values)) + est.base, 12)   # f(x) exactly
1.0
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SampledValues", "permutation_shapley", "pass_cost"]


@dataclass(frozen=True)
class SampledValues:
    """Estimates in the features' order, their standard errors, the base value, ``f(x)`` and
    what they cost."""

    values: np.ndarray
    stderr: np.ndarray
    base: float
    prediction: float
    n_draws: int
    n_evaluations: int


def pass_cost(n_background: int, n_features: int) -> int:
    """Model calls of one pass: ``f(x)``, ``f(z)`` per background point, and the ``d - 1``
    rows between ``z`` and ``x`` of each draw."""
    return 1 + n_background + n_background * max(n_features - 1, 0)


def permutation_shapley(
    f: Callable[[dict], float], x: dict[str, Any], background: Sequence[dict[str, Any]],
    features: Sequence[str], max_evaluations: int, seed: int | None = None,
) -> SampledValues:
    """As many passes as ``max_evaluations`` model calls allow (at least one: a budget below
    :func:`pass_cost` runs one pass and reports what it cost)."""
    names = list(features)
    n, d = len(background), len(names)
    if not n:
        raise ValueError("background is empty; give at least one feature dict")
    per_pass = n * max(d - 1, 0)
    passes = max(1, (max_evaluations - 1 - n) // per_pass) if per_pass else 1
    rng = random.Random(seed)
    fx = float(f(x))
    fz = [float(f(z)) for z in background]
    calls = 1 + n
    draws = np.zeros((passes * n, d))
    row_index = 0
    for _ in range(passes):
        for z, start in zip(background, fz, strict=True):
            order = list(range(d))
            rng.shuffle(order)
            row = dict(z)
            prev = start
            for step, i in enumerate(order):
                row[names[i]] = x[names[i]]
                if step == d - 1:
                    now = fx
                else:
                    now = float(f(row))
                    calls += 1
                draws[row_index, i] = now - prev
                prev = now
            row_index += 1
    values = draws.reshape(passes, n, d).mean(axis=(0, 1))
    spread = draws.std(axis=0, ddof=1) if len(draws) > 1 else np.full(d, math.inf)
    return SampledValues(values, spread / math.sqrt(len(draws)), float(np.mean(fz)), fx, len(draws), calls)
