"""Exact interventional Shapley values of river's linear and logistic regression.

Against a background point ``z``, a hybrid row's score is ``eta(z) + sum_{j in S} delta_j``, with
``delta_j = w_j (s_j(x_j) - s_j(z_j))`` (``s_j`` the identity or a ``StandardScaler``'s scaling):
linear regression's values are ``mean_z delta_j`` in closed form; logistic regression's come from
all ``2^d`` coalitions as one array, exact for ``d <= max_exact`` (beyond it the caller samples)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from river import compose, linear_model, optim, preprocessing

from .coalitions import game_shapley, masks

__all__ = ["LinearGame", "linear_game"]


class LinearGame:
    """A river linear model as ``transform`` (the scalers before it) and ``final``."""

    def __init__(self, transforms: list, final: Any, target: Any = None):
        self.transforms = transforms
        self.final = final
        self.target = target
        self.logistic = isinstance(final, linear_model.LogisticRegression)

    def _scores(self, rows: Sequence[dict], features: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Per row, ``eta`` and the terms ``w_j s_j(row_j)`` of ``features`` (the rows carry
        no other feature)."""
        weights = self.final.weights
        for step in self.transforms:
            rows = [step.transform_one(row) for row in rows]
        w = np.array([weights.get(f, 0.0) for f in features])
        values = np.array([[row[f] for f in features] for row in rows], dtype=float)
        terms = values * w
        return self.final.intercept + terms.sum(axis=1), terms

    def shapley(self, x: dict, background: Sequence[dict], features: Sequence[str],
                max_exact: int = 12) -> tuple[np.ndarray, float, float] | None:
        """Values of ``features`` (an array), base value and ``f(x)``; None when the model is
        logistic and ``features`` outnumber ``max_exact``."""
        eta_x, terms_x = self._scores([x], features)
        eta_z, terms_z = self._scores(background, features)
        delta = terms_x - terms_z
        if not self.logistic:
            mean = self.final.loss.mean_func
            return delta.mean(axis=0), float(np.mean([mean(float(e)) for e in eta_z])), float(mean(float(eta_x[0])))
        d = len(features)
        if d > max_exact:
            return None
        sign, offset = self._class_of_target()
        if sign == 0:
            return np.zeros(d), offset, offset
        scores = eta_z[:, None] + delta @ np.ascontiguousarray(masks(d).T, dtype=float)
        with np.errstate(over="ignore"):  # a saturated probability: exp(-score) is inf, p is 0
            v = offset + sign * self.final.loss.mean_func(scores).mean(axis=0)
        p_x = offset + sign * self.final.loss.mean_func(float(eta_x[0]))
        return game_shapley(v), float(v[0]), float(p_x)

    def _class_of_target(self) -> tuple[int, float]:
        """The target's probability as ``offset + sign * p(True)``."""
        if self.target is True:
            return 1, 0.0
        if self.target is False:
            return -1, 1.0
        return 0, 0.0


def linear_game(model: Any, target: Any = None) -> LinearGame | None:
    """The :class:`LinearGame` of a ``LinearRegression`` or ``LogisticRegression`` (binary), alone
    or after ``StandardScaler`` steps in a pipeline; None for anything else."""
    transforms: list = []
    final = model
    if isinstance(model, compose.Pipeline):
        steps = list(model.steps.values())
        transforms, final = steps[:-1], steps[-1]
        if not all(type(s) is preprocessing.StandardScaler for s in transforms):
            return None
    if type(final) is linear_model.LinearRegression:
        if type(final.loss).mean_func is not optim.losses.RegressionLoss.mean_func:
            return None
        return LinearGame(transforms, final)
    if type(final) is linear_model.LogisticRegression:
        return LinearGame(transforms, final, target)
    return None
