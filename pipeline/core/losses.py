"""Losses ``loss(y_true, y_pred) -> float``, chosen by name or given as a callable.

>>> get_loss("zero_one")(1, 0), get_loss("squared")(1.0, 3.0), get_loss("absolute")(1.0, 3.0)
(1.0, 4.0, 2.0)
>>> round(get_loss("cross_entropy")(True, {True: 0.8, False: 0.2}), 4)
0.2231
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["get_loss", "zero_one", "absolute", "squared", "CrossEntropy", "LOSSES"]


def zero_one(y_true: Any, y_pred: Any) -> float:
    """1 when the predicted label differs from the true one."""
    return 0.0 if y_pred == y_true else 1.0


def absolute(y_true: float, y_pred: float) -> float:
    return abs(float(y_true) - float(y_pred))


def squared(y_true: float, y_pred: float) -> float:
    d = float(y_true) - float(y_pred)
    return d * d


class CrossEntropy:
    """``-log p(y_true)`` with the probability clipped to ``[eps, 1 - eps]``.

    ``y_pred`` is a ``{class: probability}`` dict, or a float read as the probability of
    the positive class (``y_true`` truthy).
    """

    def __init__(self, eps: float = 1e-7):
        if not 0 < eps < 0.5:
            raise ValueError(f"eps={eps} must be in (0, 0.5)")
        self.eps = eps

    def __call__(self, y_true: Any, y_pred: Any) -> float:
        if isinstance(y_pred, dict):
            p = y_pred.get(y_true, 0.0)
        else:
            p = float(y_pred) if y_true else 1.0 - float(y_pred)
        p = min(max(p, self.eps), 1.0 - self.eps)
        return -math.log(p)

    def __repr__(self) -> str:
        return f"CrossEntropy(eps={self.eps})"


LOSSES: dict[str, Callable[[Any, Any], float]] = {
    "zero_one": zero_one,
    "absolute": absolute,
    "squared": squared,
    "cross_entropy": CrossEntropy(),
}


def get_loss(loss: str | Callable[[Any, Any], float]) -> Callable[[Any, Any], float]:
    """The loss named ``loss`` (one of :data:`LOSSES`) or ``loss`` itself if callable."""
    if callable(loss):
        return loss
    try:
        return LOSSES[loss]
    except KeyError:
        raise ValueError(f"unknown loss {loss!r}; use one of {sorted(LOSSES)} or a callable") from None
