"""Batch partial dependence (Friedman 2001), the reference iPDP is validated against.

>>> from streamxai.core.model import ModelFunction
>>> f = ModelFunction(lambda x: 2.0 * x["a"] + x["b"], output="value")
>>> data = [{"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 3.0}]
>>> grid = equidistant_grid(0.0, 1.0, 3)
>>> grid, partial_dependence(f, data, "a", grid)
([0.0, 0.5, 1.0], [2.0, 3.0, 4.0])
>>> round(pdp_importance([2.0, 3.0, 4.0]), 6), pdp_importance([2.0, 3.0, 4.0], categorical=True)
(1.0, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..model import ModelFunction

__all__ = [
    "NUMERIC_OUTPUTS",
    "equidistant_grid",
    "partial_dependence",
    "pdp_importance",
    "require_numeric_output",
]

#: model outputs a PD curve can average
NUMERIC_OUTPUTS = ("value", "proba_of")


def require_numeric_output(model_fn: ModelFunction, who: str) -> None:
    """Refuse a model function whose explained output is not a number."""
    if model_fn.output not in NUMERIC_OUTPUTS:
        raise ValueError(
            f"{who} averages a numeric model output, but model_fn has output="
            f"{model_fn.output!r}; wrap the model as ModelFunction(model, output='value') for a "
            "regressor or ModelFunction(model, output='proba_of', target_class=<class>) for the "
            "probability of one class"
        )


def equidistant_grid(lo: float, hi: float, size: int) -> list[float]:
    """``size`` equidistant points from ``lo`` to ``hi`` (iPDP paper, model evaluation points)."""
    if size < 2:
        raise ValueError(f"size={size!r} must be at least 2")
    d = hi - lo
    last = size - 1
    return [lo + d * (k / last) for k in range(size)]


def partial_dependence(
    model_fn: ModelFunction,
    data: Iterable[dict[str, Any]],
    feature: str,
    grid: Sequence[Any],
) -> list[float]:
    """PD values of ``feature`` at each point of ``grid``, averaged over ``data`` (iPDP paper,
    Eq. 1: ``f_PD(v) = 1/n sum_i f(v, x_i^{-S})``), one ``model_fn.many`` call per grid value."""
    require_numeric_output(model_fn, "partial_dependence")
    rows = [dict(x) for x in data]
    if not rows:
        raise ValueError("data is empty; the PD function averages over at least one row")
    out = []
    for v in grid:
        for r in rows:
            r[feature] = v
        preds = model_fn.many(rows)
        out.append(math.fsum(float(p) for p in preds) / len(rows))
    return out


def pdp_importance(pd: Sequence[float], categorical: bool = False) -> float:
    """Greenwell et al.'s PDP-based importance: sample std of ``pd`` over the grid, or
    ``(max - min) / 4`` over a categorical feature's categories; 0.0 for fewer than two points."""
    n = len(pd)
    if n < 2:
        return 0.0
    if categorical:
        return (max(pd) - min(pd)) / 4.0
    mean = sum(pd) / n
    return math.sqrt(sum((p - mean) ** 2 for p in pd) / (n - 1))
