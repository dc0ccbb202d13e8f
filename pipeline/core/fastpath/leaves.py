"""Class distributions of Hoeffding tree leaves, one call's shared parts computed once.

>>> normalized([1.0, 3.0]), normalized([0.0])
([0.25, 0.75], [0.0])
>>> MajorityLeaf({"a": 3.0, "b": 1.0}).row({})
[0.75, 0.25]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection
from typing import Any

import numpy as np
from river.proba.gaussian import _HALF_LOG_TAU, Gaussian
from river.tree.splitter.gaussian_splitter import GaussianSplitter
from river.tree.splitter.nominal_splitter_classif import NominalSplitterClassif

from .base import Unsupported

__all__ = ["normalized", "softmax_votes", "MajorityLeaf", "NaiveBayesLeaf"]

_NEG_INF = -math.inf
#: values of one feature whose terms a leaf keeps from call to call, at most
_MEMO_LIMIT = 256
_exp = math.exp
_log = math.log
#: splitters whose naive Bayes factor is a pure function of (value, class), with the method
#: river's naive Bayes calls on each (``cond_log_proba`` when the class has one)
_SPLITTERS = {
    GaussianSplitter: ("cond_log_proba", GaussianSplitter.cond_log_proba),
    NominalSplitterClassif: ("cond_proba", NominalSplitterClassif.cond_proba),
}


def normalized(values: list, factor: float | None = None) -> list:
    """``values`` scaled by ``1 / factor`` (default: their sum), unscaled when the factor is 0 or
    NaN: river's ``normalize_values_in_dict(d, factor, inplace=False)`` on the values of ``d``."""
    if factor is None:
        factor = sum(values)
    if factor == 0 or math.isnan(factor):
        return list(values)
    m = 1 / factor
    return [v * m for v in values]


def _libm(fn: Any, a: np.ndarray, *args: Any) -> np.ndarray:
    """``fn`` (the C library's ``exp``, ``log`` or Python's ``**``) of every element of ``a``:
    numpy's own differ from them in the last bit for a few values in a thousand."""
    flat = a.ravel().tolist()
    out = map(fn, flat, *(itertools.repeat(v) for v in args))
    return np.fromiter(out, dtype=float, count=len(flat)).reshape(a.shape)


def softmax_votes(votes: list) -> list:
    """Log-likelihood votes to probabilities with river's log-sum-exp (same operations)."""
    top = max(votes)
    lse = top + _log(sum([_exp(v - top) for v in votes]))
    return [_exp(v - lse) for v in votes]


def _gaussian_constants(splitter: GaussianSplitter, classes: list, priors: list) -> list:
    """Per class: ``(mu, -2 var, log(var) / 2)`` of its Gaussian, or None where ``cond_log_proba``
    is ``-inf`` for every value or the class has no weight."""
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
    """A leaf that predicts its normalised class counts, whatever the row.

    A naive Bayes leaf (:class:`NaiveBayesLeaf`) instead sums, per class, ``log(n_c / n)`` and each
    feature's log-likelihood term in the order of its splitters, then normalises by log-sum-exp.
    Each term depends on one feature value, so within a call it is computed once per value, and rows
    that differ from ``x`` in one feature keep the partial sum before it: the same additions, in the
    same order, as river's loop. Only splitters whose terms are pure functions of ``(value, class)``
    are accepted (Gaussian, nominal). Distributions are lists aligned with the leaf's ``classes``."""

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

    __slots__ = ("classes", "priors", "atts", "index", "methods", "memos", "rows", "empty",
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
        #: distributions by the row's values of atts (all the prediction reads)
        self.rows: dict[tuple, list] = {}
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
        """The distribution at ``row``, a function of its values of :attr:`atts` alone: computed
        once per such values (rows of other features moved share it)."""
        if self.empty:
            return []
        key = tuple([row[a] for a in self.atts])
        dist = self.rows.get(key)
        if dist is None:
            terms = []
            for i, (value, memo) in enumerate(zip(key, self.memos, strict=True)):
                t = memo.get(value)
                terms.append(self._terms(i, value) if t is None else t)
            dist = self.rows[key] = self._probs(terms)
        return dist

    def _probs(self, terms: list) -> list:
        """Softmax of the votes: per class, its prior plus its terms in the features' order."""
        votes = []
        for v, column in zip(self.priors, zip(*terms, strict=True) if terms else [()] * len(self.priors), strict=True):
            if v is None:
                votes.append(0.0)
                continue
            for tc in column:
                if tc is not None:
                    v += tc
            votes.append(v)
        top = max(votes)
        lse = top + _log(sum([_exp(v - top) for v in votes]))
        return [_exp(v - lse) for v in votes]

    def forget_row(self) -> None:
        """Drop x's factors: the next call computes them anew even for that same dict."""
        self._x = None

    def new_call(self) -> None:
        """Serve another call of an unchanged leaf: x's factors go, the memoised terms and
        distributions stay unless they outgrew :data:`_MEMO_LIMIT` values."""
        self._x = None
        if any(len(m) > _MEMO_LIMIT for m in self.memos):
            self.memos = [{} for _ in self.atts]
        if len(self.rows) > _MEMO_LIMIT:
            self.rows = {}

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
        return self.replaced_many(x, feature, [value], None)[0]

    def replaced_many(self, x: dict, feature: str, values: list, error: float | None) -> list:
        """:meth:`replaced` for each of ``values``; with ``error`` (an adaptive tree's only
        leaf) each distribution weighed and normalised as the tree does."""
        if self.empty or feature not in self.index:
            return [self._weighed(self.replaced(x, feature, v), error) for v in values]
        if x is not self._x:
            self._see(x)
        i = self.index[feature]
        split = self._split.get(i)
        if split is None:
            split = self._split[i] = self._prefix_suffix(i)
        before, after = split
        is_log, consts = self.methods[i]
        if len(values) == 1:
            dist = self._one(i, values[0], before, after, is_log, consts)
            return [dist if error is None else self._weighed(dist, error)]
        # the votes class by class, each over all the values (river adds in the same order
        # per value: the features before i, the term of i unless skipped, the ones after it)
        columns = []
        for ci, (b, rest) in enumerate(zip(before, after, strict=True)):
            if b is None:  # a class without weight
                columns.append([0.0] * len(values))
                continue
            if not is_log:
                terms = [self._terms(i, v)[ci] for v in values]
                column = [b if t is None else b + t for t in terms]
            elif consts[ci] is None:  # no density for the class: the term is always skipped
                column = [b] * len(values)
            else:
                mu, denom, half_log_var = consts[ci]
                lps = [(v - mu) ** 2 / denom - _HALF_LOG_TAU - half_log_var for v in values]
                column = [b + lp if lp > _NEG_INF else b for lp in lps]
            for term in rest:
                column = [v + term for v in column]
            columns.append(column)
        out = []
        for votes in zip(*columns, strict=True):
            top = max(votes)
            lse = top + _log(sum([_exp(v - top) for v in votes]))
            dist = [_exp(v - lse) for v in votes]
            out.append(dist if error is None else self._weighed(dist, error))
        return out

    def _one(self, i: int, value: Any, before: list, after: list, is_log: bool, consts: Any) -> list:
        """:meth:`replaced_many` of one value: the same additions, one class at a time."""
        votes = []
        terms = None if is_log else self._terms(i, value)
        for ci, b in enumerate(before):
            if b is None:  # a class without weight
                votes.append(0.0)
                continue
            if terms is not None:
                t = terms[ci]
                v = b if t is None else b + t
            elif consts[ci] is None:  # no density for the class: the term is always skipped
                v = b
            else:
                mu, denom, half_log_var = consts[ci]
                lp = (value - mu) ** 2 / denom - _HALF_LOG_TAU - half_log_var
                v = b + lp if lp > _NEG_INF else b
            for term in after[ci]:
                v = v + term
            votes.append(v)
        top = max(votes)
        lse = top + _log(sum([_exp(v - top) for v in votes]))
        return [_exp(v - lse) for v in votes]

    def curves(self, x: dict, features: list, grids: np.ndarray) -> np.ndarray | None:
        """:meth:`replaced` at ``x`` with ``features[i]`` at each ``grids[i, k]``, as an array
        ``(classes, features, values)``; None for more than two classes (Python 3.12's ``sum()``
        compensates beyond two terms). River's additions in river's order, every ``**``, ``exp`` and
        ``log`` the C library's (:func:`_libm`)."""
        n_classes = len(self.classes)
        if n_classes > 2:
            return None
        if self.empty:
            return np.empty((0, *grids.shape))
        if x is not self._x:
            self._see(x)
        votes = np.empty((n_classes, *grids.shape))
        gauss: list[tuple[int, int]] = []  # (row, factor) of the features with a Gaussian density
        for i, f in enumerate(features):
            k = self.index.get(f)
            if k is None:  # not a factor of this leaf: x's own votes
                votes[:, i, :] = np.array(self._x_votes())[:, None]
            elif self.methods[k][0]:
                gauss.append((i, k))
            else:  # a nominal factor: value by value
                before, after = self._before_after(k)
                for ci, b in enumerate(before):
                    if b is None:
                        votes[ci, i] = 0.0
                        continue
                    column = [b if t is None else b + t for t in (self._terms(k, v)[ci] for v in grids[i].tolist())]
                    for term in after[ci]:
                        column = [v + term for v in column]
                    votes[ci, i] = column
        if gauss:
            self._gaussian_votes(votes, gauss, grids)
        # river's log-sum-exp, value by value: top, exp(v - top) summed, top + log(sum), exp(v - lse)
        top = np.maximum(votes[0], votes[1]) if n_classes == 2 else votes[0]
        e = _libm(math.exp, votes - top)
        lse = top + _libm(math.log, e[0] + e[1] if n_classes == 2 else e[0])
        return _libm(math.exp, votes - lse)

    def _gaussian_votes(self, votes: np.ndarray, gauss: list[tuple[int, int]], grids: np.ndarray) -> None:
        """The votes of the rows ``gauss`` (row, factor), all classes at once."""
        rows = [i for i, _ in gauss]
        splits = [self._before_after(k) for _, k in gauss]
        width = max(len(t) for _, after in splits for t in after)
        before, after, consts, dense = [], [], [], []
        for ci, prior in enumerate(self.priors):  # a class without weight: placeholders, voting 0.0
            before.append([[0.0 if prior is None else bs[ci]] for bs, _ in splits])
            after.append([[*afters[ci], *[0.0] * (width - len(afters[ci]))] for _, afters in splits])
            per_row = [None if prior is None else self.methods[k][1][ci] for _, k in gauss]
            consts.append([c or (0.0, -1.0, 0.0) for c in per_row])
            dense.append([[c is not None] for c in per_row])
        mu, denom, half_log_var = np.array(consts).transpose(2, 0, 1)[..., None]  # (classes, rows, 1) each
        b = np.array(before)
        lp = _libm(pow, grids[rows] - mu, 2) / denom - _HALF_LOG_TAU - half_log_var
        v = np.where(np.array(dense) & (lp > _NEG_INF), b + lp, b)
        a = np.array(after)  # the kept terms after the factor, padded with 0.0
        for t in range(width):
            v = v + a[:, :, t:t + 1]
        for ci, prior in enumerate(self.priors):
            if prior is None:  # a class without weight: the vote 0.0
                v[ci] = 0.0
        votes[:, rows] = v

    def _before_after(self, k: int) -> tuple[list, list]:
        split = self._split.get(k)
        if split is None:
            split = self._split[k] = self._prefix_suffix(k)
        return split

    def _x_votes(self) -> list:
        """Per class, the vote at ``x`` (river's: the prior plus the kept terms in order)."""
        out = []
        for prior, column in zip(self.priors, zip(*self._x_terms, strict=True) if self._x_terms
                                 else [()] * len(self.priors), strict=True):
            if prior is None:
                out.append(0.0)
                continue
            v = prior
            for tc in column:
                if tc is not None:
                    v += tc
            out.append(v)
        return out

    @staticmethod
    def _weighed(dist: list, error: float | None) -> list:
        """An adaptive tree's only leaf: ``dist / (sum * error^2)``, then normalised by the sum, as
        river's ``normalize_values_in_dict`` twice."""
        if error is None:
            return dist
        factor = sum(dist) * error * error
        if factor != 0 and factor == factor:
            m = 1 / factor
            dist = [v * m for v in dist]
        proba = [0.0 + v for v in dist]
        factor = sum(proba)
        if factor == 0 or factor != factor:
            return proba
        m = 1 / factor
        return [v * m for v in proba]

    def _prefix_suffix(self, i: int) -> tuple[list, list]:
        """Per class: the vote summed over the features before ``i`` and the non-skipped terms
        of those after it, at ``x``, for every ``i`` at once."""
        splits = self._split
        if not splits:
            n = len(self.atts)
            columns = list(zip(*self._x_terms, strict=True)) if self._x_terms else [()] * len(self.priors)
            per_class = []  # (running sums, kept terms, where the terms after each i start)
            for prior, column in zip(self.priors, columns, strict=True):
                if prior is None:
                    per_class.append(None)
                    continue
                sums, kept, starts = [], [], []
                v = prior
                for tc in column:
                    sums.append(v)  # the vote before this feature
                    if tc is not None:
                        v += tc
                        kept.append(tc)
                    starts.append(len(kept))  # the kept terms after this feature start here
                per_class.append((sums, kept, starts))
            for k in range(n):
                before = [None if c is None else c[0][k] for c in per_class]
                after = [() if c is None else c[1][c[2][k]:] for c in per_class]
                splits[k] = (before, after)
        return splits[i]
