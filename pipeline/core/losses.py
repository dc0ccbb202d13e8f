"""Losses ``loss(y_true, y_pred) -> float``, chosen by name or given as a callable.

>>> get_loss("zero_one")(1, 0), get_loss("squared")(1.0, 3.0), get_loss("absolute")(1.0, 3.0)
(1.0, 4.0, 2.0)
>>> round(get_loss("cross_entropy")(True, {True: 0.8, False: 0.2}), 4)
0.2231
>>> get_loss("brier")("a", {"a": 0.75, "b": 0.25})
0.125

>>> loss_of_mean(squared, 0.0, [1.0, 3.0])      # (1 * 3): unbiased for (E f)^2
3.0
>>> squared(0.0, 2.0)                           # the plug-in: larger by Var / m = 1
4.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "get_loss", "zero_one", "absolute", "squared", "brier", "CrossEntropy", "BrierOf", "LOSSES",
    "loss_of_mean", "has_unbiased_mean", "resolve_estimator", "ESTIMATORS",
]

#: how a coalition's loss is estimated from its inner samples (None: the loss's default)
ESTIMATORS = (None, "unbiased", "plug_in", "paper")


def zero_one(y_true: Any, y_pred: Any) -> float:
    """1 when the predicted label differs from the true one."""
    return 0.0 if y_pred == y_true else 1.0


def absolute(y_true: float, y_pred: float) -> float:
    return abs(float(y_true) - float(y_pred))


def _u_products(y: float, preds: Sequence[Any]) -> float:
    """``1 / (m (m - 1)) sum_{k != l} (p_k - y)(p_l - y)`` for ``m >= 2`` floats."""
    m = len(preds)
    if m == 2:
        return (float(preds[0]) - y) * (float(preds[1]) - y)
    s = q = 0.0
    for p in preds:
        r = float(p) - y
        s += r
        q += r * r
    return (s * s - q) / (m * (m - 1))


def _u_products_groups(y: float, preds: Sequence[Any], m: int) -> list[float]:
    """:func:`_u_products` of each group of ``m`` consecutive predictions."""
    if m == 2:
        return [(float(a) - y) * (float(b) - y) for a, b in zip(preds[0::2], preds[1::2], strict=True)]
    return [_u_products(y, preds[i:i + m]) for i in range(0, len(preds), m)]


def _check_m(preds: Sequence[Any]) -> None:
    if len(preds) < 2:
        raise ValueError(
            f"an unbiased loss of the mean prediction needs >= 2 independent predictions, got "
            f"{len(preds)}; raise n_inner_samples to 2 or more"
        )


class _Quadratic:
    """``(t - p)^2`` of the number ``t`` a label stands for (:meth:`_target`); ``of_mean`` is
    unbiased for ``(t - E[p])^2``."""

    def _target(self, y_true: Any) -> float:
        raise NotImplementedError

    def __call__(self, y_true: Any, y_pred: float) -> float:
        d = self._target(y_true) - float(y_pred)
        return d * d

    def of_mean(self, y_true: Any, preds: Sequence[float]) -> float:
        _check_m(preds)
        return _u_products(self._target(y_true), preds)

    def of_means(self, y_true: Any, preds: Sequence[float], m: int) -> list[float]:
        """:meth:`of_mean` of each group of ``m`` consecutive predictions.

        >>> BrierOf(1).of_means(0, [0.5, 0.25, 1.0, 0.0], 2)
        [0.125, 0.0]
        """
        _check_m(preds[:m])
        return _u_products_groups(self._target(y_true), preds, m)


class Squared(_Quadratic):
    """``(y_true - y_pred)^2``."""

    def _target(self, y_true: Any) -> float:
        return float(y_true)

    def __repr__(self) -> str:
        return "squared"

    def __reduce__(self) -> str:  # the module-level instance pickles by name
        return "squared"


class Brier:
    """Multi-class Brier score ``sum_k (1[y = k] - p_k)^2`` of a ``{class: probability}`` dict (a class
    missing has probability 0); ``of_mean`` sums the per-class U-statistics."""

    def __call__(self, y_true: Any, y_pred: dict) -> float:
        total = 0.0 if y_true in y_pred else 1.0
        for k, p in y_pred.items():
            d = (1.0 if k == y_true else 0.0) - float(p)
            total += d * d
        return total

    def of_mean(self, y_true: Any, preds: Sequence[dict]) -> float:
        _check_m(preds)
        keys: dict[Any, None] = {y_true: None}
        for p in preds:
            keys.update(dict.fromkeys(p))
        return sum(
            _u_products(1.0 if k == y_true else 0.0, [p.get(k, 0.0) for p in preds]) for k in keys
        )

    def __repr__(self) -> str:
        return "brier"

    def __reduce__(self) -> str:
        return "brier"


class BrierOf(_Quadratic):
    """Squared error of the predicted probability of ``target_class``: (1[y = c] - p)^2.

    >>> BrierOf(1)(1, 0.75), BrierOf(1)(0, 0.75), BrierOf(1).of_mean(0, [0.5, 0.25])
    (0.0625, 0.5625, 0.125)
    """

    def __init__(self, target_class: object):
        self.target_class = target_class

    def _target(self, y_true: Any) -> float:
        return 1.0 if y_true == self.target_class else 0.0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BrierOf) and other.target_class == self.target_class

    def __hash__(self) -> int:
        return hash(("BrierOf", self.target_class))

    def __repr__(self) -> str:
        return f"BrierOf({self.target_class!r})"


class CrossEntropy:
    """``-log p(y_true)``, the probability clipped to ``[eps, 1 - eps]``; ``y_pred`` a
    ``{class: probability}`` dict or the positive class's probability. No unbiased estimate of
    ``-log E[p]`` exists: explainers use the plug-in and report its bias."""

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


squared = Squared()
brier = Brier()

LOSSES: dict[str, Callable[[Any, Any], float]] = {
    "zero_one": zero_one,
    "absolute": absolute,
    "squared": squared,
    "brier": brier,
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


def has_unbiased_mean(loss: Callable[[Any, Any], float]) -> bool:
    """True if ``loss`` offers ``of_mean`` (an unbiased loss of the mean prediction)."""
    return callable(getattr(loss, "of_mean", None))


def loss_of_mean(loss: Callable[[Any, Any], float], y_true: Any, preds: Sequence[Any]) -> float:
    """``loss.of_mean(y, preds)`` for a quadratic loss and ``m >= 2`` (the U-statistic
    ``1 / (m (m - 1)) sum_{k != l} (f_k - y)(f_l - y)``, unbiased for ``l(y, E[f])``), else the
    plug-in ``loss(y, mean of preds)``, biased upwards by a Jensen gap for a convex loss."""
    if len(preds) >= 2 and has_unbiased_mean(loss):
        return loss.of_mean(y_true, preds)  # type: ignore[attr-defined]
    from .model import mean_output

    return loss(y_true, preds[0] if len(preds) == 1 else mean_output(preds))


def resolve_estimator(estimator: str | None, loss_fn: Any, m: int, loss: Any = None) -> str:
    """The coalition-loss estimator: ``estimator`` checked, or the default for the loss."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator={estimator!r} is not one of {ESTIMATORS}")
    quadratic = has_unbiased_mean(loss_fn)
    if estimator == "unbiased" and not (quadratic and m >= 2):
        raise ValueError(
            f"estimator='unbiased' needs a loss quadratic in the prediction (squared, brier, "
            f"BrierOf) and n_inner_samples >= 2, got loss={loss!r} and n_inner_samples={m}; "
            "pass estimator=None (unbiased when possible), 'plug_in' or 'paper'"
        )
    return estimator or ("unbiased" if quadratic and m >= 2 else "plug_in")
