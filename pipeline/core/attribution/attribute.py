"""One prediction's interventional Shapley values: exact where the model allows, else sampled.

:func:`attribute` picks the method from the model: a walk of each tree (:mod:`.trees`), the
trees' weighted average for ARF, :mod:`.linear` for linear and logistic regression, and
permutation sampling (:mod:`.sampling`) for anything else or too many coalitions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from river import base, compose
from river.forest.adaptive_random_forest import ARFClassifier, ARFRegressor

from ..fastpath import river_version_ok
from ..fastpath.base import Unsupported
from .background_walk import background_shapley, collect
from .flat_walk import flat_collect
from .frame import Frame
from .leaf_table import LeafMemo
from .linear import linear_game
from .sampling import permutation_shapley
from .shares import Shares
from .trees import tree_game, tree_shapley

__all__ = ["Attribution", "attribute", "METHODS"]

#: how the values were computed; every method but "sampling" is exact
METHODS = ("tree", "forest", "linear", "logistic", "constant", "sampling")


@dataclass(frozen=True)
class Attribution:
    """Each feature's value, the base value ``mean_z f(z)``, the prediction ``f(x)`` (the values
    sum to ``prediction - base``), the class explained (None: a regression value), the method,
    and for "sampling" the standard errors and the model calls it made."""

    values: dict[str, float]
    base: float
    prediction: float
    target: Any
    method: str
    exact: bool
    stderr: dict[str, float] = field(default_factory=dict)
    n_evaluations: int = 0


def isclassifier(model: Any) -> bool:
    """True for a river classifier, or a pipeline that ends in one."""
    if isinstance(model, compose.Pipeline):
        model = list(model.steps.values())[-1]
    return isinstance(model, base.Classifier)


def _target(model: Any, x: dict, target_class: Any) -> Any:
    if target_class is not None:
        return target_class
    if isinstance(model, ARFClassifier) and len(model) == 0:
        return None  # its first prediction builds the forest: leave it to the model's owner
    proba = model.predict_proba_one(x)
    return max(proba, key=proba.get) if proba else None


def _output(model: Any, target: Any) -> Callable[[dict], float]:
    if callable(model) and not hasattr(model, "predict_one"):
        return lambda row: float(model(row))
    if isclassifier(model):
        return lambda row: float(model.predict_proba_one(row).get(target, 0.0))
    return lambda row: float(model.predict_one(row))


def attribute(
    model: Any, x: dict[str, Any], background: Sequence[dict[str, Any]], features: Sequence[str],
    target_class: Any = None, max_exact: int = 12, max_evaluations: int = 2000, seed: int | None = None,
    memo: LeafMemo | None = None,
) -> Attribution:
    """The values of ``features`` (the players) for ``x`` against ``background``, a classifier
    explained on the probability of ``target_class`` (None: its predicted class); a model without a
    structure known here is sampled within ``max_evaluations`` calls. ``memo``
    (:class:`~.leaf_table.LeafMemo`) keeps what one explanation learns of the leaves for the next."""
    names = list(features)
    if not background:
        raise ValueError("background is empty; the base value needs at least one feature dict")
    extra = [f for f in x if f not in names]
    if extra:
        raise ValueError(f"x carries {extra}, which are not among features {names}: list every feature the "
                         "model reads (each is a player of the game)")
    players = set(names)
    if not (players.issubset(x) and (memo.columns.carry(background, names) if memo is not None
                                     else all(map(players.issubset, background)))):
        for row, where in [(x, "x"), *((z, f"background[{k}]") for k, z in enumerate(background))]:
            missing = [f for f in names if f not in row]
            if missing:
                raise ValueError(f"{where} lacks features {missing}; every row must carry all of {names}")
    is_fn = callable(model) and not hasattr(model, "predict_one")
    target = None if is_fn or not isclassifier(model) else _target(model, x, target_class)
    exact = None if is_fn else _exact(model, x, background, names, target, max_exact, memo)
    if exact is not None:
        values, base, fx, method = exact
        return Attribution(dict(zip(names, values.tolist(), strict=True)), float(base), float(fx), target, method, True)
    est = permutation_shapley(_output(model, target), x, background, names, max_evaluations, seed)
    return Attribution(dict(zip(names, est.values.tolist(), strict=True)), est.base, est.prediction, target,
                       "sampling", False, dict(zip(names, est.stderr.tolist(), strict=True)), est.n_evaluations)


def _exact(model: Any, x: dict, background: Sequence[dict], names: list[str], target: Any,
           max_exact: int, memo: LeafMemo | None = None) -> tuple[np.ndarray, float, float, str] | None:
    """``(values, base, f(x), method)``, or None when no exact method applies."""
    game = linear_game(model, target)
    if game is not None:
        out = game.shapley(x, background, names, max_exact)
        if out is None:
            return None
        return (*out, "logistic" if game.logistic else "linear")
    try:
        if isinstance(model, ARFClassifier) and type(model).predict_proba_one is ARFClassifier.predict_proba_one:
            return _forest(model, x, background, names, target, max_exact, memo)
        if isinstance(model, ARFRegressor) and type(model).predict_one is ARFRegressor.predict_one:
            return _forest_mean(model, x, background, names, max_exact)
        phi, base, fx, _ = _walk(tree_game(model, target), x, background, names, max_exact, memo)
        return phi, base, fx, "tree"
    except Unsupported:
        return None


def _walk(game: Any, x: dict, background: Sequence[dict], names: list[str], max_free: int,
          memo: LeafMemo | None = None) -> tuple:
    """The tree's values from the walk of all background points at once on the river releases
    whose naive Bayes internals it reads (:data:`~streamxai.core.fastpath.VERIFIED_RIVER`), else
    from the walk point by point, which asks the leaves only."""
    if not river_version_ok():
        return tree_shapley(game, x, background, names, max_free)
    if game.kind not in ("htc", "hatc"):
        return background_shapley(game, x, background, names, max_free)
    shares = Shares(len(names))
    frame = Frame(x, background, names, memo.columns if memo is not None else None)
    sums = _members([(game, 1.0 / len(background))], frame, max_free, shares, memo)[0]
    return (*shares.finish(), sums)


def _members(trees: list, frame: Frame, max_free: int, shares: Shares, memo: LeafMemo | None = None) -> list[str]:
    """Each ``(tree, scale)``'s shares added to ``shares``: level by level where
    :mod:`.flat_walk` takes the tree, else node by node; what each tree's probabilities sum to."""
    sums = flat_collect(trees, frame, max_free, shares, memo)
    return [s if s is not None else collect(game, frame, max_free, shares, scale)
            for s, (game, scale) in zip(sums, trees, strict=True)]


def _forest(model: Any, x: dict, background: Sequence[dict], names: list[str], target: Any,
            max_exact: int, memo: LeafMemo | None = None) -> tuple[np.ndarray, float, float, str] | None:
    """``ARFClassifier`` weighs each member's probabilities by its accuracy and divides by the total;
    where every member's probabilities sum to 1, the forest is the weighted mean of its members,
    whose values average alike (a member that predicts nothing adds nothing)."""
    if len(model) == 0:
        return np.zeros(len(names)), 0.0, 0.0, "constant"
    weights = [mv if not model.disable_weighted_vote and mv > 0.0 else 1.0 for mv in (m.get() for m in model._metrics)]
    games = [tree_game(member, target) for member in model]
    shares = Shares(len(names))
    if river_version_ok():  # a member that predicts nothing adds zeros: its weight is left out below
        frame = Frame(x, background, names, memo.columns if memo is not None else None)
        sums = _members([(g, w / len(background)) for g, w in zip(games, weights, strict=True)], frame, max_exact,
                        shares, memo)
    else:
        sums = []
        for game, w in zip(games, weights, strict=True):
            m_phi, m_base, m_fx, m_sums = tree_shapley(game, x, background, names, max_exact)
            shares.add(m_phi, m_base, m_fx, w)
            sums.append(m_sums)
    if any(s not in ("one", "zero") for s in sums):
        return None
    phi, base, fx = shares.finish()
    weight = sum(w for w, s in zip(weights, sums, strict=True) if s == "one")
    if weight == 0:
        return np.zeros(len(names)), 0.0, 0.0, "constant"
    return phi / weight, base / weight, fx / weight, "forest"


def _forest_mean(model: Any, x: dict, background: Sequence[dict], names: list[str],
                 max_exact: int) -> tuple[np.ndarray, float, float, str] | None:
    """``ARFRegressor`` with ``aggregation_method="mean"`` is a fixed linear combination of its
    members, so its values combine alike; the median is not (None: the caller samples)."""
    if model.aggregation_method != "mean":
        return None
    if len(model) == 0:  # its first prediction builds the forest and is 0.0
        return np.zeros(len(names)), 0.0, 0.0, "constant"
    n = len(model)
    coef = np.full(n, 1.0 / n)
    if not model.disable_weighted_vote:
        errors = np.array([m.get() for m in model._metrics])
        if errors.sum() != 0:
            weights = errors.sum() - errors
            if weights.sum() == 0:  # river divides 0 by 0 here
                return None
            coef = weights / weights.sum() / n
    parts = [_walk(tree_game(member), x, background, names, max_exact) for member in model]
    phi = sum(c * p[0] for c, p in zip(coef, parts, strict=True))
    base = sum(c * p[1] for c, p in zip(coef, parts, strict=True))
    fx = sum(c * p[2] for c, p in zip(coef, parts, strict=True))
    return np.asarray(phi), float(base), float(fx), "forest"
