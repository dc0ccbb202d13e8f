"""Incremental partial dependence plots, iPDP (Muschalik, Fumagalli et al. 2023), Algorithm 1."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..bare_model import check_model_fn, check_target_class
from ..base import check_positive_int
from ..batch.pdp import pdp_importance, require_numeric_output
from ..increments import IncrementTracker
from ..kernels import KERNELS
from ..model import ModelFunction
from ..rng import derive_seed
from ..storage.extreme import ExtremeValueStorage
from ..storage.frequency import FrequencyStorage
from ..uncertainty import SmoothedStderr
from .base import Explainer

__all__ = ["IPDP"]

GRIDS = ("extreme", "quantile")


class IPDP(Explainer):
    """Incremental PDP of every feature in ``features``, and its spread as an importance.

    Each event's ICE curve of each feature, on a grid from the feature's recent values, is folded
    into a smoothed partial dependence curve (:meth:`curves`), whose standard deviation over the
    grid is the feature's importance (``values``; the docs page "The explainers step by step").
    Draws for feature ``f`` are seeded from ``(seed, "ipdp", f)``, so ``IPDP(features=[f])`` gives
    exactly the full explainer's values for ``f``.

    Parameters
    ----------
    model_fn
        The model to explain: a bare river regressor or classifier, a callable returning
        numbers, or a ``ModelFunction`` of a numeric output (``"value"``, or ``"proba_of"``
        with a ``target_class``).
    feature_names
        All model inputs, in order.
    features
        The features this instance explains (default: all).
    alpha
        Smoothing parameter of the exponential smoothing, in ``(0, 1]``.
    grid_size
        Grid points per numeric feature; the most frequent categories kept per categorical one.
    grid
        ``"extreme"`` (equidistant between the minimum and maximum of the last ``window``
        values) or ``"quantile"`` (between the ``quantile_range`` quantiles of a frequency
        storage).
    storage_size
        Size of the frequency storage (``grid="quantile"`` and categorical features).
    window
        The recent values the grid is taken from.
    categorical
        Features whose grid is their most frequent recent categories.
    quantile_range
        The quantiles the ``"quantile"`` grid spans.
    seed
        Seed of the frequency storages' entrance draws (``None``: unseeded).
    target_class
        For a bare classifier: the class whose probability the curves show (1, which is also
        ``True``: the positive class of a binary stream). Explaining a model that predicts
        other classes only is an error naming them.

    Examples
    --------
    ``f = 2 a + b^2`` on uniform features: the PD curve of ``a`` is ``2 a + 1/3``.

    >>> import random
    >>> def f(x):
    ...     return 2.0 * x["a"] + x["b"] ** 2
    >>> ipdp = IPDP(f, ["a", "b"], alpha=0.01, grid_size=5, seed=1)
    >>> rng = random.Random(0)
    >>> for _ in range(2000):
    ...     imp = ipdp.explain_one({"a": rng.random(), "b": rng.random()}, None)
    >>> ipdp.n_explained, ipdp.n_evaluations      # 2 features x 5 grid points per event
    (2000, 20000)
    >>> c = ipdp.curves()["a"]
    >>> max(abs(p - (2 * g + 1 / 3)) for g, p in zip(c["grid"], c["pd"])) < 0.1
    True
    >>> round(imp["a"], 2), round(imp["b"], 2)    # analytic: std of 2a and of b^2 on 0, .25, .., 1
    (0.79, 0.41)

    References
    ----------
    1. Muschalik, M., Fumagalli, F., Jagtani, R., Hammer, B., Hüllermeier, E. "iPDP: On Partial
       Dependence Plots in Dynamic Modeling Scenarios". arXiv:2306.07775.
       Implements Algorithm 1 (iPDP with smoothed grid points); the grid from Algorithm 2 (extreme values)
       or Algorithm 3 (frequencies).

    """

    name = "ipdp"
    #: for a checkpoint made without them: a model function given as such
    target_class: Any = 1
    _class_unchecked = False

    def __init__(
        self,
        model_fn: ModelFunction,
        feature_names: Sequence[str],
        features: Sequence[str] | None = None,
        alpha: float = 0.001,
        grid_size: int = 10,
        grid: str = "extreme",
        storage_size: int = 100,
        window: int = 1000,
        categorical: Sequence[str] | None = None,
        quantile_range: tuple[float, float] = (0.05, 0.95),
        seed: int | None = None,
        target_class: Any = 1,
    ):
        self.target_class = target_class
        self._class_unchecked = not isinstance(model_fn, ModelFunction) and hasattr(model_fn, "predict_proba_one")
        self.model_fn = check_model_fn(model_fn, target_class=target_class)
        require_numeric_output(self.model_fn, "IPDP")
        self.feature_names = feature_names
        self.features = features
        self.alpha = self._check_alpha(alpha)
        if not isinstance(grid_size, int) or isinstance(grid_size, bool) or grid_size < 2:
            raise ValueError(f"grid_size={grid_size!r} must be an int >= 2")
        self.grid_size = grid_size
        if grid not in GRIDS:
            raise ValueError(f"grid={grid!r} is not one of {GRIDS}")
        self.grid = grid
        for name, v in (("storage_size", storage_size), ("window", window)):
            check_positive_int(v, name)
        self.storage_size = storage_size
        self.window = window
        self.categorical = categorical
        lo, hi = quantile_range
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"quantile_range={quantile_range!r} needs 0 <= low <= high <= 1")
        self.quantile_range = quantile_range
        self.seed = seed
        self._reset()

    # state -----------------------------------------------------------------------
    def _reset(self) -> None:
        names = self.feature_names
        self._explained = self._check_features(names, self.features)
        cats = list(self.categorical or ())
        unknown = [c for c in cats if c not in names]
        if unknown:
            raise ValueError(f"categorical features {unknown} are not in feature_names {list(names)}")
        self._cat = frozenset(cats)
        m = self.grid_size
        self._fracs = [k / (m - 1) for k in range(m)]
        p_enter = min(1.0, self.storage_size / self.window)
        self._storage: dict[str, Any] = {}
        numeric = [f for f in self._explained if f not in self._cat]
        #: the numeric features' rows in the arrays below, in explanation order
        self._row = {f: i for i, f in enumerate(numeric)}
        self._gx = np.zeros((len(numeric), m))  # smoothed grid points x_{t,k} (biased), one row per feature
        self._pd = np.zeros((len(numeric), m))  # smoothed PD f_{t,k} (biased)
        self._frac_row = np.array(self._fracs)
        # categorical: {category: [smoothed PD (biased), (1 - a)^n_c]}, and last grid
        self._cpd: dict[str, dict[Any, list[float]]] = {}
        self._cgrid: dict[str, list[Any]] = {}
        # per numeric feature, m + 1 series: the ICE values at each grid point, and the increment
        self._se = SmoothedStderr([f"{f}#{k}" for f in numeric for k in [*range(m), "importance"]],
                                  self.alpha, start="zero")
        for f in self._explained:
            if f in self._cat or self.grid == "quantile":
                self._storage[f] = FrequencyStorage(self.storage_size, p_enter, seed=derive_seed(self.seed, "ipdp", f))
            else:
                self._storage[f] = ExtremeValueStorage(self.window)
            if f in self._cat:
                self._cpd[f] = {}
                self._cgrid[f] = []
        self._decay = 1.0  # (1 - a)^t
        self._grad: tuple | None = None  # the gradient of the PD curves' std (_gradient), kept
        self.n_explained = 0
        self.values = {f: 0.0 for f in self._explained}
        #: each event's increment since the last report (streamxai.core.increments; the docs page "The explainers step by step")
        self.increments = IncrementTracker(self._explained)

    @property
    def explained_features(self) -> list[str]:
        """The features this instance explains, in order."""
        return list(self._explained)

    # protocol --------------------------------------------------------------------
    def observe_one(self, x: dict[str, Any], y: Any = None) -> None:
        """Update the storages with ``x`` only (an event skipped under a budget)."""
        self._store(self._values(x))  # all validated before any update

    def explain_one(self, x: dict[str, Any], y: Any = None) -> dict[str, float]:
        """Fold one ICE curve per feature of the current model at ``x`` into the PD
        estimates, then store ``x``; returns ``{feature: importance}``."""
        if self._class_unchecked:
            self._class_unchecked = not check_target_class(self.model_fn, x, "IPDP")
        vs = self._values(x)
        row = self._row
        fn = self.model_fn
        cat_grids = {f: self._evaluation_grid(f, v) for f, v in zip(self._explained, vs, strict=True)
                     if f not in row} if self._cat else {}
        grids = self._numeric_grids(vs) if row else None
        try:
            # the numeric features' ICE curves, one row per feature
            ice = fn.curves(x, list(row), grids) if row else None
            if cat_grids:  # the categorical features' rows in one call: x with f at each category
                preds = [float(p) for p in fn.replaced(x, [(f, c) for f, g in cat_grids.items() for c in g])]
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"model_fn returned a non-number ({e}); IPDP averages model outputs, so the "
                "model must return a float for output='value' or 'proba_of'"
            ) from None
        # nothing below can fail: the state changes all or not at all
        a = self.alpha
        b = 1.0 - a
        decay = self._decay * b
        self._decay = decay
        values = self.values
        if cat_grids:
            add = self.increments.add
            i = 0
            for f, g in cat_grids.items():
                j = i + len(g)
                add(f, self._categorical_increment(f, g, preds[i:j]))
                values[f] = self._update_categorical(f, g, preds[i:j], a, b)
                i = j
        if row:
            self._fold_curves(grids, ice, a, b, 1.0 - decay)  # type: ignore[arg-type]
        self._store(vs)
        self.n_explained += 1
        return dict(values)

    def _fold_curves(self, grids: np.ndarray, ice: np.ndarray, a: float, b: float, bias: float) -> None:
        """Eq. 2 and 3 for the numeric features' ICE curves ``ice`` at ``grids``: their
        increments, standard-error series and importances (the docs page "The explainers step by step")."""
        dev, scale, flat = self._gradient()
        # the standard errors' series: the ICE values and the increment, feature after feature
        series = self._se.next_row()
        if KERNELS is not None:  # all of the below in one compiled call (the same values), when built
            names = list(self._row)
            done = KERNELS.fold_curves(ice, grids, self._gx, self._pd, dev, scale, flat, series, a, b, bias,
                                       names, self.values)
            if done is not None:  # the PD curves, dev and scale updated in place
                lin, smooth = done
                self.increments.add_all(names, lin if self.n_explained else _stds(ice).tolist())
                # the new gradient; where a curve is flat, taken as 0 (computed here)
                self._grad = (dev, scale, None) if smooth else _gradient(*_deviations(self._pd))
                return
        # the increment the change test watches: this event's ICE curve along the PD curve's
        # gradient so far (centred at its first point: a flat ICE curve gives exactly 0 where the
        # gradient's sum is rounding noise); its ICE spread on the first event, with no PD yet
        lin = scale * _sums(dev * (ice - ice[:, :1]))
        if flat is not None:  # rows without spread: no gradient
            lin = np.where(flat, 0.0, lin)
        series[:] = np.concatenate((ice, lin[:, None]), axis=1).ravel()
        self.increments.add_all(self._row, (lin if self.n_explained else _stds(ice)).tolist())
        self._gx = b * self._gx + a * grids
        pd = self._pd = b * self._pd + a * ice
        dev, ss = _deviations(pd)
        self._grad = _gradient(dev, ss)
        # the std scales with the debiasing factor: std(pd / bias) = std(pd) / bias
        self.values.update(zip(self._row, (np.sqrt(ss / (pd.shape[1] - 1)) / bias).tolist(), strict=True))

    def _gradient(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`_gradient` of the PD curves as they are (kept until they change)."""
        if self._grad is None:
            self._grad = _gradient(*_deviations(self._pd))
        return self._grad

    def _values(self, x: dict[str, Any]) -> list[Any]:
        """The explained features' values in ``x``, each checked by :meth:`_value` (numbers
        that are all finite at once, when no feature is categorical)."""
        if not self._cat:
            try:
                vs = [x[f] for f in self._explained]
            except KeyError:
                vs = []
            if vs and all(type(v) is float or type(v) is int for v in vs):
                total = sum(vs)
                if total - total == 0:  # no NaN nor infinity (else, or on overflow, each is checked)
                    return vs
        return [self._value(f, x) for f in self._explained]

    def _numeric_grids(self, vs: list[Any]) -> np.ndarray:
        """The evaluation grid of every numeric feature, one row each: ``lo + (hi - lo) * k / (m - 1)``."""
        storage, row, extreme = self._storage, self._row, self.grid == "extreme"
        if extreme and KERNELS is not None and len(row) == len(vs):  # every feature numeric: one compiled call
            grids = np.empty((len(vs), len(self._frac_row)))
            if KERNELS.extremes_grids([storage[f] for f in self._explained], vs, self._frac_row, grids,
                                      ExtremeValueStorage):
                return grids
        lo, hi = [], []
        for f, v in zip(self._explained, vs, strict=True):
            if f not in row:
                continue
            s = storage[f]
            if extreme:  # one call: the window's (min, max), or (v, v) at t = 1 with nothing stored yet
                low, high = s.extremes(v)
            elif not s.n_seen:
                low = high = v
            else:
                low, high = s.quantile(self.quantile_range[0]), s.quantile(self.quantile_range[1])
            lo.append(low)
            hi.append(high)
        low = np.array(lo, dtype=float)[:, None]
        return low + (np.array(hi, dtype=float)[:, None] - low) * self._frac_row

    def curves(self) -> dict[str, dict[str, list]]:
        """``{feature: {"grid": [...], "pd": [...], "se": [...]}}``, debiased, as plain Python types.

        Numeric features: the smoothed grid points, PD values and their standard errors; categorical
        ones: the categories of the last grid (in :func:`category_key` order). Empty lists before the
        first explained event. A grid point's standard error is ``sqrt(sum_s w_s^2 Var[y_k])`` over
        independent ICE values, with the debiased weights; the grid points' own spread is not included."""
        out: dict[str, dict[str, list]] = {}
        bias = 1.0 - self._decay
        if self.n_explained and self._row:  # the numeric features' rows, debiased
            grids = (self._gx / bias).tolist()
            pds = (self._pd / bias).tolist()
            ses = (self._se.stderr_array().reshape(len(pds), -1)[:, :-1] / bias).tolist()
        for f in self._explained:
            if f in self._cat:
                cpd = self._cpd[f]
                grid = list(self._cgrid[f])
                pd = [cpd[c][0] / (1.0 - cpd[c][1]) for c in grid]
                se = [math.sqrt(cpd[c][2] * cpd[c][4]) / (1.0 - cpd[c][1]) for c in grid]
            elif self.n_explained == 0:
                grid, pd, se = [], [], []
            else:
                i = self._row[f]
                grid, pd, se = grids[i], pds[i], ses[i]
            out[f] = {"grid": grid, "pd": pd, "se": se}
        return out

    @property
    def stderr(self) -> dict[str, float]:
        """Standard error of each numeric feature's importance, by the delta method: each event
        contributes ``z = sum_k g_k y_k``, ``g_k = (pd_k - mean) / ((K - 1) std)``. It fails where the
        curve is nearly flat (the std is not differentiable there); categorical features have none."""
        bias = 1.0 - self._decay
        if self.n_explained == 0 or not self._row:
            return {}
        se = self._se.stderr_array().reshape(len(self._row), -1)[:, -1] / bias  # each feature's last series
        return dict(zip(self._row, se.tolist(), strict=True))

    # internals -------------------------------------------------------------------
    def _value(self, f: str, x: dict[str, Any]) -> Any:
        try:
            v = x[f]
        except KeyError:
            raise ValueError(f"feature {f!r} is missing from the event {sorted(x)}") from None
        if f in self._cat:
            try:
                hash(v)
            except TypeError:
                raise TypeError(f"categorical feature {f!r} has the unhashable value {v!r}") from None
        elif not isinstance(v, (int, float)):
            raise TypeError(
                f"feature {f!r} has the non-numeric value {v!r}; list it in categorical=[...] "
                "to explain it on a grid of its recent categories"
            )
        elif v != v or v in (_INF, -_INF):
            raise ValueError(f"feature {f!r} is {v}; drop or impute non-finite values before explaining")
        return v

    def _evaluation_grid(self, f: str, v: Any) -> list[Any]:
        s = self._storage[f]
        if f in self._cat:
            return s.frequent(self.grid_size) if len(s) else [v]
        if not len(s):
            lo = hi = v  # t = 1: nothing stored yet
        elif self.grid == "extreme":
            lo, hi = s.min, s.max
        else:
            lo, hi = s.quantile(self.quantile_range[0]), s.quantile(self.quantile_range[1])
        d = hi - lo
        return [lo + d * fr for fr in self._fracs]

    def _categorical_increment(self, f: str, g: list[Any], ys: list[float]) -> float:
        """``(y_hi - y_lo) / 4``: the event's ICE values at the categories of the grid with the
        highest and the lowest PD so far (the linearisation of ``(max - min) / 4``); the ICE
        spread while fewer than two of them have a PD."""
        cpd = self._cpd[f]
        known = [(cpd[c][0] / (1.0 - cpd[c][1]), k) for k, c in enumerate(g) if c in cpd]
        if len(known) < 2:
            return pdp_importance(ys, categorical=True)
        return (ys[max(known)[1]] - ys[min(known)[1]]) / 4.0

    def _update_categorical(self, f: str, g: list[Any], ys: list[float], a: float, b: float) -> float:
        cpd = self._cpd[f]
        for c, yk in zip(g, ys, strict=True):
            st = cpd.get(c)
            if st is None:  # smoothed PD, (1 - a)^n_c, sum of w^2, ICE mean, ICE variance, n_c
                st = cpd[c] = [0.0, 1.0, 0.0, 0.0, 0.0, 0]
            st[0] = b * st[0] + a * yk
            st[1] *= b
            st[2] = b * b * st[2] + a * a
            n = st[5] = st[5] + 1
            r = a if n * a >= 1.0 else 1.0 / n
            dx = yk - st[3]
            st[3] += r * dx
            st[4] = (1.0 - r) * (st[4] + r * dx * dx)
        self._cgrid[f] = g
        return pdp_importance([cpd[c][0] / (1.0 - cpd[c][1]) for c in g], categorical=True)

    def _store(self, vs: list[Any]) -> None:
        """The storages learn the explained features' values ``vs``."""
        storage = self._storage
        if KERNELS is None or self._cat or self.grid != "extreme" or not KERNELS.extremes_update(
                [storage[f] for f in self._explained], vs, ExtremeValueStorage):  # one compiled call when built
            for f, v in zip(self._explained, vs, strict=True):
                storage[f].update(v)
        for f in self._cat.intersection(self._cpd):
            cpd = self._cpd[f]
            if len(cpd) > self.grid_size:
                # forget categories that left the storage and the last grid: the state stays bounded
                s, grid = storage[f], self._cgrid[f]
                for c in [c for c in cpd if c not in s and c not in grid]:
                    del cpd[c]


_INF = float("inf")


def _sums(a: np.ndarray) -> np.ndarray:
    """Row sums added left to right, as ``sum`` adds a list (no pairwise reordering, so a row's
    sum does not depend on the other rows)."""
    return np.add.accumulate(a, axis=1)[:, -1]


def _deviations(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the deviations from the row's mean and their sum of squares. The mean is taken
    of the values less the row's first one, so a row of equal values has deviations exactly 0
    (the mean of equal values, added up, need not be that value)."""
    shifted = a - a[:, :1]
    dev = shifted - (_sums(shifted) / a.shape[1])[:, None]
    return dev, _sums(dev * dev)


def _stds(a: np.ndarray) -> np.ndarray:
    """The sample std of every row (:func:`~streamxai.core.batch.pdp.pdp_importance`)."""
    return np.sqrt(_deviations(a)[1] / (a.shape[1] - 1))


def _gradient(dev: np.ndarray, ss: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradient of each row's std over the grid, ``g_k = dev_k * scale``, ``scale = 1 /
    sqrt(ss (k - 1))``, as ``(dev, scale, flat)``: ``flat`` marks rows without spread (gradient 0),
    None when there are none."""
    if min(ss.tolist(), default=1.0) > 0.0:
        return dev, 1.0 / np.sqrt(ss * (dev.shape[1] - 1)), None
    flat = ss <= 0.0
    return dev, 1.0 / np.sqrt(np.where(flat, 1.0, ss) * (dev.shape[1] - 1)), flat
