"""Incremental SAGE, iSAGE (Muschalik, Fumagalli, Hammer, Hüllermeier 2023), Algorithm 1."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..bare_model import check_model_fn
from ..base import check_positive_int
from ..increments import IncrementTracker
from ..losses import get_loss, resolve_estimator
from ..model import ModelFunction, blend_output, mean_output
from ..removal.conditional import ConditionalRemoval
from ..removal.marginal import MarginalRemoval, Removal
from ..rng import derive_seed, make_rng
from ..uncertainty import SmoothedStderr
from .base import Explainer

__all__ = ["ISAGE"]

REMOVALS = ("interventional", "observational")


class ISAGE(Explainer):
    """Incremental SAGE values of all features.

    Each event walks a random permutation of the features, adding one at a time to a coalition;
    a feature's value is the smoothed drop of the loss of the mean prediction as it joins. The
    chain couples all features, so iSAGE explains all of ``feature_names`` on one worker. The
    algorithm is on the docs page "The explainers step by step".

    Parameters
    ----------
    model_fn
        The model to explain: a ``ModelFunction`` of an output that can be averaged
        (``"value"``, ``"proba"`` or ``"proba_of"``), or a bare river model or callable, which
        explains the output ``loss`` scores (``streamxai.core.bare_model.bare_output``).
    loss
        A name from ``streamxai.core.losses.LOSSES`` or ``loss(y_true, y_pred) -> float``.
    feature_names
        All model inputs, in order.
    features
        ``None`` or all of ``feature_names`` (anything else is refused).
    alpha
        Smoothing parameter of the exponential smoothing, in ``(0, 1]``.
    n_inner_samples
        ``m``, the draws of the removed features per coalition.
    removal
        ``"interventional"`` (``MarginalRemoval``), ``"observational"`` (``ConditionalRemoval``),
        or a removal object used as a template (the explainer feeds its own fresh clone).
    storage_size
        The removal's reservoir size (per leaf for the observational removal).
    categorical
        Features the observational removal predicts with classification trees.
    seed
        Seed of all random draws (``None``: unseeded): permutations and removal draws from
        ``(seed, "isage")``, the removal's storage from ``(seed, "isage", "removal")``.
    estimator
        ``None`` (unbiased when the loss allows it, else plug-in), ``"unbiased"``, ``"plug_in"``
        or ``"paper"``.

    Examples
    --------
    A model ``3 a + b`` on uniform features: the SAGE values with the squared loss are 9/12 for
    ``a``, 1/12 for ``b`` and 0 for ``c``, which the model never reads.

    >>> import random
    >>> def f(x):
    ...     return 3.0 * x["a"] + x["b"]
    >>> isage = ISAGE(f, "squared", ["a", "b", "c"], alpha=0.001, seed=2)
    >>> gen = random.Random(2)
    >>> for _ in range(10_000):
    ...     x = {"a": gen.random(), "b": gen.random(), "c": gen.random()}
    ...     phi = isage.explain_one(x, f(x))
    >>> isage.estimator_used, isage.n_explained, isage.n_evaluations  # 1 + 3 * 2 per event
    ('unbiased', 9999, 69993)
    >>> {k: round(v, 1) for k, v in phi.items()}  # sd here ~0.035
    {'a': 0.8, 'b': 0.1, 'c': 0.0}
    >>> phi["c"]                                  # a feature the model never reads: exactly 0
    0.0

    References
    ----------
    1. Muschalik, M., Fumagalli, F., Hammer, B., Hüllermeier, E. "iSAGE: An Incremental Version of
       SAGE for Online Explanation on Data Streams". arXiv:2303.01181.
       Implements Algorithm 1 (iSAGE); interventional removal with the geometric reservoir (Algorithm 2),
       observational removal with incremental trees and leaf reservoirs (Algorithms 3 and 4).

    """

    name = "isage"

    def __init__(
        self,
        model_fn: ModelFunction,
        loss: Any,
        feature_names: Sequence[str],
        features: Sequence[str] | None = None,
        alpha: float = 0.001,
        n_inner_samples: int = 2,
        removal: str | Removal = "interventional",
        storage_size: int = 100,
        categorical: Sequence[str] | None = None,
        seed: int | None = None,
        estimator: str | None = None,
    ):
        self.model_fn = check_model_fn(model_fn, loss)
        if self.model_fn.output == "label":
            raise ValueError(
                "iSAGE averages predictions (the mean prediction y_0 and the mean over inner "
                "samples), and a mean of labels is undefined; wrap a classifier as "
                "ModelFunction(model, output='proba_of', target_class=c) with loss=BrierOf(c) "
                "(unbiased), or output='proba' with loss='brier' or 'cross_entropy' (a bare "
                "classifier with these losses explains its probabilities), and a regressor as "
                "ModelFunction(model, output='value') (a bare regressor with loss='squared' or 'absolute')"
            )
        self.loss = loss
        self.feature_names = feature_names
        self.features = features
        self.alpha = self._check_alpha(alpha)
        self.n_inner_samples = check_positive_int(n_inner_samples, "n_inner_samples")
        if isinstance(removal, str) and removal not in REMOVALS:
            raise ValueError(f"removal={removal!r} is not one of {REMOVALS} nor a Removal object")
        if not isinstance(removal, (str, Removal)):
            raise TypeError(
                f"removal must be one of {REMOVALS} or a Removal object "
                f"(MarginalRemoval, ConditionalRemoval), got {type(removal).__name__}"
            )
        self.removal = removal
        self.storage_size = storage_size
        self.categorical = categorical
        self.seed = seed
        self.estimator = estimator
        self._reset()

    def _reset(self) -> None:
        names = self._check_features(self.feature_names, None)
        if self.features is not None and set(self._check_features(names, self.features)) != set(names):
            raise ValueError(
                f"iSAGE explains all features in one permutation chain per event, so it cannot "
                f"explain only features={list(self.features)}; pass features=None and run the "
                "iSAGE chain as one unit (split streams across workers, not iSAGE's features)"
            )
        self._names = names
        self._loss = get_loss(self.loss)
        mode = resolve_estimator(self.estimator, self._loss, self.n_inner_samples, self.loss)
        self._mode = mode
        self._of_mean = self._loss.of_mean if mode == "unbiased" else None  # type: ignore[attr-defined]
        self._removal = self._make_removal(names)
        # interventional removal: the m donors of an event are shared by its whole chain
        self._shared = isinstance(self._removal, MarginalRemoval)
        self._rng = make_rng(self.seed, "isage")
        self.values: dict[str, float] = {f: 0.0 for f in names}
        self._y_empty: Any = None
        self._gap = 0.0
        self.n_explained = 0
        #: the per-event marginal contributions ``Delta`` since the last report (streamxai.core.increments)
        self.increments = IncrementTracker(names)
        self._index = {f: i for i, f in enumerate(names)}
        self._deltas = [0.0] * len(names)
        self._se = SmoothedStderr(names, self.alpha, start="zero")
        self._n_stored = 0

    def _make_removal(self, names: list[str]) -> Removal:
        removal = self.removal
        seed = derive_seed(self.seed, "isage", "removal")
        if removal == "interventional":
            return MarginalRemoval(names, storage_size=self.storage_size, seed=seed)
        if removal == "observational":
            return ConditionalRemoval(
                names, categorical=self.categorical, storage_size=self.storage_size, seed=seed
            )
        if list(removal.feature_names) != names:
            raise ValueError(
                f"the removal's feature_names {list(removal.feature_names)} differ from "
                f"iSAGE's {names}; build the removal over the same features in the same order"
            )
        return removal.clone()  # a template: the explainer owns a fresh, unfitted copy

    # public state ----------------------------------------------------------------
    @property
    def mean_prediction(self) -> Any:
        """The smoothed mean prediction ``y_0`` (``None`` before the first explained event)."""
        y = self._y_empty
        return dict(y) if isinstance(y, dict) else y

    @property
    def estimator_used(self) -> str:
        """``"unbiased"``, ``"plug_in"`` or ``"paper"``: how coalition losses are estimated."""
        return self._mode

    @property
    def stderr(self) -> dict[str, float]:
        """Standard error of each value: see :mod:`streamxai.core.uncertainty` (with the
        reservoir-reuse correction for the interventional removal, whose donors are known;
        the observational removal's leaf reservoirs are not corrected for)."""
        return self._se.stderrs()

    @property
    def variance_factors(self) -> dict[str, float]:
        return self._se.variance_factors()

    @property
    def jensen_gap(self) -> float:
        """Smoothed estimate of how much the values' sum overstates ``v({}) - v(D)``: per event,
        the loss of the all-imputed coalition minus that of the smoothed mean prediction. About 0 for
        the unbiased estimator, the Jensen gap ``G_m({}) >= 0`` of the plug-in, 0 for ``"paper"``."""
        return self._gap

    @property
    def removal_state(self) -> Removal:
        """The removal strategy this explainer feeds (read only)."""
        return self._removal

    # the algorithm ---------------------------------------------------------------
    def explain_one(self, x: dict[str, Any], y: Any) -> dict[str, float]:
        removal = self._removal
        if not removal.ready:  # first event: nothing stored to draw absent features from
            self.observe_one(x, y)
            return dict(self.values)
        fn = self.model_fn
        loss = self._loss
        alpha = self.alpha
        keep = 1.0 - alpha
        m = self.n_inner_samples
        rng = self._rng
        rand = rng.random
        order = self._names.copy()
        d = len(order)
        for i in range(d - 1, 0, -1):  # Fisher-Yates
            k = int(rand() * (i + 1))
            order[i], order[k] = order[k], order[i]

        first = 1 if self._mode == "paper" else 0  # else the chain starts at S = {} imputed
        slots = None
        if self._shared:  # the m donors of the event are shared by its whole chain
            items = removal.reservoir.items  # type: ignore[attr-defined]
            slots = _donor_slots(len(items), m, rng)
            preds = fn.coalitions(x, order, [items[k] for k in slots], first)
        else:
            rows = removal.sample_chain(x, order, m, rng)  # S = order[:j], j = 1..d-1
            if first == 0:
                rows = removal.sample_rows(x, order, m, rng) + rows
            preds = fn.many([x, *rows])  # f(x_t) and the chain's rows in one call
        y_full = preds.pop(0)
        if self._y_empty is None:  # Definition 4: f_t0(x, {}) = f_t0(x_t0)
            self._y_empty = dict(y_full) if isinstance(y_full, dict) else y_full
        else:
            self._y_empty = blend_output(self._y_empty, y_full, alpha)

        # the loss of each coalition of the chain, S = order[:j] for j = 0 .. d - 1, then S = D
        losses = self._losses(y, preds)
        if first == 0:
            self._gap = keep * self._gap + alpha * (losses[0] - loss(y, self._y_empty))
        else:  # "paper": the chain starts at the mean prediction
            losses.insert(0, loss(y, self._y_empty))
        losses.append(loss(y, y_full))  # S = D: the full x_t, no draw
        ds = [losses[j] - losses[j + 1] for j in range(d)]  # Delta of order[j]
        values = self.values
        deltas = self._deltas  # the increments in feature order
        self.increments.add_smoothed(order, ds, values, keep, alpha, self._index, deltas)

        self.n_explained += 1
        se = self._se
        se.add_increments(deltas)
        if slots is not None:
            se.add_donors(items, slots, deltas, updates=self._n_stored / self.n_explained)
        self._n_stored += 1
        removal.update(x)
        if slots is not None:
            rsv = removal.reservoir  # type: ignore[attr-defined]
            se.stored(rsv.last_slot, rsv.items, deltas)
        return dict(values)

    def _losses(self, y: Any, preds: list) -> list:
        """The estimated loss of each coalition whose ``m`` predictions follow each other in ``preds``."""
        m = self.n_inner_samples
        loss = self._loss
        if m == 1:
            return [loss(y, p) for p in preds]
        if self._of_mean is not None:
            of_means = getattr(loss, "of_means", None)
            if of_means is not None:
                return of_means(y, preds, m)
            return [self._of_mean(y, preds[i:i + m]) for i in range(0, len(preds), m)]
        return [loss(y, mean_output(preds[i:i + m])) for i in range(0, len(preds), m)]

    def observe_one(self, x: dict[str, Any], y: Any) -> None:
        """Update the removal's storage only (an event skipped under a budget)."""
        self._n_stored += 1
        self._removal.update(x)
        if self._shared:
            rsv = self._removal.reservoir  # type: ignore[attr-defined]
            self._se.stored(rsv.last_slot, rsv.items, None)


def _donor_slots(n: int, m: int, rng: Any) -> list[int]:
    """The slots of the ``m`` donors of one chain among ``n`` stored observations, distinct when
    the storage holds at least ``m``: the products of their residuals are then unbiased for the loss
    of the mean over the population."""
    if m == 1:
        return [int(rng.random() * n)]
    if m == 2 and n >= 2:
        i = int(rng.random() * n)
        k = int(rng.random() * (n - 1))
        return [i, k + 1 if k >= i else k]
    if n >= m:
        return rng.sample(range(n), m)
    # fewer stored observations than inner samples: only at the start of a stream
    return [int(rng.random() * n) for _ in range(m)]
