"""A naive Bayes leaf's votes as arrays: the terms of many feature values at once.

River's naive Bayes vote of class ``c`` is ``log(n_c / n)`` plus each observed feature's
log-likelihood (a Gaussian's log density, skipped where ``-inf``; a nominal frequency's log, or
0); the probabilities are their softmax. The votes are additive over features, so every hybrid
row's votes are one base vote plus per-feature differences, which :mod:`.background_walk`
evaluates as arrays. Only Gaussian and nominal splitters are read; anything else raises
:class:`~streamxai.core.fastpath.Unsupported` and the leaf is asked for its own ``prediction``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from river.tree.splitter.gaussian_splitter import GaussianSplitter
from river.tree.splitter.nominal_splitter_classif import NominalSplitterClassif

from ..fastpath.base import Unsupported

__all__ = ["BayesVotes", "softmax"]

_HALF_LOG_TAU = 0.5 * math.log(2 * math.pi)


def softmax(votes: np.ndarray, axis: int = -1) -> np.ndarray:
    """Probabilities from votes along ``axis`` (log-sum-exp, as river computes them)."""
    top = votes.max(axis=axis, keepdims=True)
    e = np.exp(votes - top)
    return e / e.sum(axis=axis, keepdims=True)


class BayesVotes:
    """The votes of one leaf's naive Bayes model over the features in ``players``: ``classes`` in
    the leaf's order, ``prior`` their prior votes, ``live`` those with weight; :meth:`terms` gives a
    feature's vote terms for an array of values (0 where river skips the term)."""

    def __init__(self, stats: dict, splitters: dict, players: set):
        total = sum(stats.values()) if stats else 0
        if not stats or total == 0:
            raise Unsupported("a naive Bayes leaf without class counts predicts nothing")
        self.classes = list(stats)
        weights = list(stats.values())
        self.live = np.array([w > 0 for w in weights])
        self.prior = np.array([math.log(w / total) if w > 0 else 0.0 for w in weights])
        self.splitters: dict[str, Any] = {}
        for feature, obs in (splitters or {}).items():
            if feature not in players:
                raise Unsupported(f"the leaf observes {feature!r}, which is not a player")
            if type(obs) not in (GaussianSplitter, NominalSplitterClassif):
                raise Unsupported(f"naive Bayes over a {type(obs).__name__}")
            self.splitters[feature] = obs
        self._memo: dict[str, dict] = {}

    @property
    def reads(self) -> frozenset:
        return frozenset(self.splitters)

    def terms(self, feature: str, values: list) -> np.ndarray:
        """``(len(values), n_classes)``: each value's vote term per class."""
        obs = self.splitters[feature]
        out = np.zeros((len(values), len(self.classes)))
        if type(obs) is GaussianSplitter:
            dists = obs._att_dist_per_class
            mu, var = np.zeros(len(self.classes)), np.zeros(len(self.classes))
            for k, c in enumerate(self.classes):
                g = dists.get(c) if self.live[k] else None
                if g is not None:
                    mu[k], var[k] = g.mu, g.sigma ** 2
            dense = var > 0.0  # a class without a density gets no term
            safe = np.where(dense, var, 1.0)
            v = np.asarray(values, dtype=float)[:, None]
            terms = (v - mu) ** 2 / (-2.0 * safe) - _HALF_LOG_TAU - 0.5 * np.log(safe)
            return np.where(dense, terms, 0.0)
        memo = self._memo.setdefault(feature, {})
        for r, value in enumerate(values):
            row = memo.get(value)
            if row is None:
                row = memo[value] = [
                    (math.log(p) if (p := obs.cond_proba(value, c)) > 0 else 0.0) if self.live[k] else 0.0
                    for k, c in enumerate(self.classes)]
            out[r] = row
        return out
