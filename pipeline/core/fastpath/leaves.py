"""Class distributions of Hoeffding tree leaves, one call's shared parts computed once.

A leaf predicts by majority class (its class counts, normalised) or by naive Bayes: for
each class ``c`` with weight ``n_c > 0`` the vote ``log(n_c / n)`` plus, feature by feature
in the order of the leaf's splitters, the log-likelihood term of the row's value (skipped
when it is ``-inf``; ``log p`` or 0 for splitters without log densities), then a
log-sum-exp normalisation. The terms depend on one feature value each, so within one call
a :class:`NaiveBayesLeaf` computes each ``(feature, value)``'s terms once, and for rows
that differ from ``x`` in one feature (ICE curves, permutations) it keeps the partial sum
of the features before it and the terms after it: a new value costs one term and the same
additions, in the same order, as river's loop. Only splitters whose terms are pure
functions of ``(value, class)`` are accepted (Gaussian, nominal). A Gaussian's log density
``(v - mu) ** 2 / (-2 var) - log(tau) / 2 - log(var) / 2`` keeps its per-class constants
for the call and evaluates that expression with them, the same operations as
``Gaussian.log_pdf``.

Distributions are lists aligned with the leaf's ``classes`` (the order of its class counts,
which is the order of river's dicts).

>>> normalized([1.0, 3.0]), normalized([0.0])
([0.25, 0.75], [0.0])
>>> MajorityLeaf({"a": 3.0, "b": 1.0}).row({})
[0.75, 0.25]
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from river.proba.gaussian import _HALF_LOG_TAU, Gaussian
from river.tree.splitter.gaussian_splitter import GaussianSplitter
from river.tree.splitter.nominal_splitter_classif import NominalSplitterClassif

from .base import Unsupported

__all__ = ["normalized", "softmax_votes", "MajorityLeaf", "NaiveBayesLeaf"]

_NEG_INF = -math.inf
_exp = math.exp
#: splitters whose naive Bayes factor is a pure function of (value, class), with the method
#: river's naive Bayes calls on each (``cond_log_proba`` when the class has one)
_SPLITTERS = {
    GaussianSplitter: ("cond_log_proba", GaussianSplitter.cond_log_proba),
    NominalSplitterClassif: ("cond_proba", NominalSplitterClassif.cond_proba),
}


def normalized(values: list, factor: float | None = None) -> list:
    """``values`` scaled by ``1 / factor`` (default: their sum), or an unscaled copy when the
    factor is 0 or NaN: river's ``normalize_values_in_dict(d, factor, inplace=False)`` on the
    values of ``d``, in order."""
    if factor is None:
        factor = sum(values)
    if factor == 0 or math.isnan(factor):
        return list(values)
    m = 1 / factor
    return [v * m for v in values]


def softmax_votes(votes: list) -> list:
    """Log-likelihood votes to probabilities with river's log-sum-exp (same operations)."""
    top = max(votes)
    lse = top + math.log(sum(_exp(v - top) for v in votes))
    return [_exp(v - lse) for v in votes]


def _gaussian_constants(splitter: GaussianSplitter, classes: list, priors: list) -> list:
    """Per class: ``(mu, -2 var, log(var) / 2)`` of the class's Gaussian, or None where
    ``cond_log_proba`` is ``-inf`` for every value (no Gaussian for the class, too few
    observations, zero variance) or the class is not voted on (no weight)."""
    dists = splitter._att_dist_per_class
    out: list[tuple | None] = []
    for c, prior in zip(classes, priors, strict=True):
        g = dists[c] if prior is not None and c in dists else None
        if g is None:
            out.append(None)
            continue
        if type(g).log_pdf is not Gaussian.log_pdf:
            raise Unsupported(f"a {type(g).__name__} in a Gaussian splitter")
        var = g._var
        n = var.mean.n
        if n > var.ddof:
            variance = var._S / (n - var.ddof)
            if variance > 0.0:
                out.append((var.mean._mean, -2.0 * variance, 0.5 * math.log(variance)))
                continue
        out.append(None)
    return out


class MajorityLeaf:
    """A leaf that predicts its normalised class counts, whatever the row."""

    __slots__ = ("classes", "dist")

    def __init__(self, stats: dict):
        self.classes = list(stats)
        self.dist = normalized(list(stats.values()))

    def row(self, row: dict) -> list:
        return self.dist

    def replaced(self, x: dict, feature: str, value: Any) -> list:
        return self.dist

    def depends_on(self, feature: str) -> bool:
        return False


class NaiveBayesLeaf:
    """River's naive Bayes prediction of one leaf during one call (``keys``: the features
    every row of the call carries)."""

    __slots__ = ("classes", "priors", "atts", "index", "methods", "memos", "empty",
                 "_x", "_x_terms", "_x_dist", "_split")

    def __init__(self, stats: dict, splitters: dict, keys: Collection[str]):
        total = sum(stats.values())
        self.empty = not stats or total == 0
        self.classes = [] if self.empty else list(stats)
        # None marks a class without weight: river gives it the vote 0.0 and no terms
        self.priors = [] if self.empty else [math.log(w / total) if w > 0 else None for w in stats.values()]
        self.atts: list[str] = []
        self.methods: list[Any] = []
        for att, obs in (splitters or {}).items():
            if att not in keys:
                continue
            known = _SPLITTERS.get(type(obs))
            if known is None or getattr(type(obs), known[0]) is not known[1]:
                raise Unsupported(f"naive Bayes over a {type(obs).__name__} is not verified")
            self.atts.append(att)
            if known[0] == "cond_log_proba":
                self.methods.append((True, _gaussian_constants(obs, self.classes, self.priors)))
            else:
                self.methods.append((False, obs.cond_proba))
        self.index = {a: i for i, a in enumerate(self.atts)}
        self.memos: list[dict] = [{} for _ in self.atts]
        self._x: dict | None = None

    def depends_on(self, feature: str) -> bool:
        return not self.empty and feature in self.index

    def _terms(self, i: int, value: Any) -> tuple:
        memo = self.memos[i]
        t = memo.get(value)
        if t is None:
            is_log, method = self.methods[i]
            out = []
            if is_log:
                for const in method:  # Gaussian.log_pdf with the constants of each class
                    if const is None:
                        out.append(None)
                        continue
                    mu, denom, half_log_var = const
                    lp = (value - mu) ** 2 / denom - _HALF_LOG_TAU - half_log_var
                    out.append(lp if lp > _NEG_INF else None)
            else:
                for c, prior in zip(self.classes, self.priors, strict=True):
                    if prior is None:
                        out.append(None)
                    else:
                        p = method(value, c)
                        out.append(math.log(p) if p > 0 else 0.0)
            t = memo[value] = tuple(out)
        return t

    def row(self, row: dict) -> list:
        if self.empty:
            return []
        return self._probs([self._terms(i, row[a]) for i, a in enumerate(self.atts)])

    def _probs(self, terms: list) -> list:
        votes = []
        for ci, v in enumerate(self.priors):
            if v is None:
                votes.append(0.0)
                continue
            for t in terms:
                tc = t[ci]
                if tc is not None:
                    v += tc
            votes.append(v)
        return softmax_votes(votes)

    def _see(self, x: dict) -> None:
        self._x = x
        self._x_terms = [self._terms(i, x[a]) for i, a in enumerate(self.atts)]
        self._x_dist = None
        self._split: dict[int, tuple[list, list]] = {}

    def replaced(self, x: dict, feature: str, value: Any) -> list:
        """The prediction at ``x`` with ``feature`` set to ``value`` (``x`` is the same dict
        for every call of one evaluation)."""
        if self.empty:
            return []
        if x is not self._x:
            self._see(x)
        i = self.index.get(feature)
        if i is None:  # not a factor of this leaf: x's own prediction
            if self._x_dist is None:
                self._x_dist = self._probs(self._x_terms)
            return self._x_dist
        split = self._split.get(i)
        if split is None:
            split = self._split[i] = self._prefix_suffix(i)
        before, after = split
        t = self._terms(i, value)
        votes = []
        for ci, v in enumerate(before):
            if v is None:
                votes.append(0.0)
                continue
            tc = t[ci]
            if tc is not None:
                v += tc
            for s in after[ci]:
                v += s
            votes.append(v)
        return softmax_votes(votes)

    def _prefix_suffix(self, i: int) -> tuple[list, list]:
        """Per class: the vote summed over the features before ``i`` (river's order) and
        the non-skipped terms of the features after it, both at ``x``."""
        terms = self._x_terms
        before, after = [], []
        for ci, prior in enumerate(self.priors):
            if prior is None:
                before.append(None)
                after.append(())
                continue
            v = prior
            for t in terms[:i]:
                tc = t[ci]
                if tc is not None:
                    v += tc
            before.append(v)
            after.append([t[ci] for t in terms[i + 1:] if t[ci] is not None])
        return before, after
