"""Incremental SAGE, iSAGE (Muschalik, Fumagalli, Hammer, Hüllermeier 2023), Algorithm 1.

For every event ``(x_t, y_t)``, with the model ``f_t`` as it is now:

1. draw a permutation ``pi`` of all ``d`` features, start with ``S = {}``;
2. smoothed mean prediction ``y_0 <- (1 - a) y_0 + a f_t(x_t)`` (line 5) and
   ``lossPrev = l(y_0, y_t)``;
3. for ``j = 1..d``: ``S <- S + {pi[j]}``; the restricted prediction is the mean of ``m``
   predictions ``f_t(x_t^(S), x~_k^(S-bar))``, the absent features drawn by the removal
   strategy (interventional, Algorithm 2, or observational, Algorithms 3-4);
   ``Delta = lossPrev - l(mean, y_t)``, ``phi[pi[j]] <- (1 - a) phi[pi[j]] + a Delta``;
4. the removal strategy stores ``x_t`` (after the draws: they come from the past only).

Choices the paper leaves open, and what is done here:

- ``y_0`` starts at ``f(x_{t0})`` on the first explained event (Definition 4 of the paper;
  Algorithm 1's ``y_0 <- 0`` would give a probability dict summing to ``a`` at first).
  ``phi`` starts at 0 as in Algorithm 1, so ``E[phi_t] = phi (1 - (1 - a)^n)`` after ``n``
  explained events (the proof of Theorem 3.1); after ``n ~ 5 / a`` events the bias is < 1 %.
- The first event only fills the removal's storage (nothing to draw from yet).
- The step ``S = D`` removes nothing: its prediction is ``f_t(x_t)``, computed once for
  line 5 and reused. **Model evaluations per explained event: ``1 + (d - 1) * m``** (the
  naive count ``1 + d * m`` evaluates the same row ``m`` more times); for ``m = 1`` that is
  ``d``. All ``(d - 1) * m`` restricted rows of one event go to ``model_fn.many`` in one call.
- ``m = n_inner_samples`` is part of the estimand: ``l(mean of m predictions, y)`` is
  biased for ``l(E[f(x, S)], y)`` (Theorem 3.1 needs ``m -> inf``), and the bias does not
  average out. E.g. for ``f = sum_i w_i x_i``, independent features, squared loss:
  ``E[phi_i] = w_i^2 V_i (1 + 1/m)(d - 1)/d + (w_i^2 V_i - sum_{k != i} w_k^2 V_k / m) / d``,
  which tends to the SAGE value ``w_i^2 V_i`` only as ``m`` grows; a feature the model
  ignores gets ``-sum_k w_k^2 V_k / (d m)``. Batch SAGE with the same ``m``
  (:func:`pipeline.core.batch.sage`, Algorithm 5) has the same expectation. The sum of the
  values is unbiased for any ``m``: the chain telescopes to ``l(y_0, y) - l(f(x), y)``.

Variance: ``Var[phi_t(i)] <= sigma_i^2 a / (2 - a) = O(a)`` (Theorem 3.2), ``sigma_i^2`` the
variance of one event's ``Delta(i)``.

The chain couples all features, so iSAGE cannot be split by feature: it explains all of
``feature_names`` on one worker. The model output must be averageable: ``output="value"``,
``"proba"`` (with cross-entropy) or ``"proba_of"``; a mean of labels is undefined.

Random draws (permutations and removal draws) use one generator seeded from
``(seed, "isage")``; the removal's storage is seeded from ``(seed, "isage", "removal")``.

>>> import random
>>> from pipeline.core.model import ModelFunction
>>> f = ModelFunction(lambda x: 3.0 * x["a"] + x["b"], output="value")
>>> isage = ISAGE(f, "squared", ["a", "b", "c"], alpha=0.005, n_inner_samples=10, seed=2)
>>> gen = random.Random(2)
>>> for _ in range(3000):
...     x = {"a": gen.random(), "b": gen.random(), "c": gen.random()}
...     phi = isage.explain_one(x, 3.0 * x["a"] + x["b"])
>>> isage.n_explained, isage.n_evaluations   # first event fills the storage; 1 + 2 * 10 per event
(2999, 62979)
>>> {k: round(v, 1) for k, v in phi.items()}    # m = 10: 0.80, 0.06, -0.03 expected (see above)
{'a': 0.8, 'b': 0.1, 'c': -0.0}
>>> round(sum(phi.values()), 1)                  # efficiency: Var[3a + b] = 10 / 12
0.8
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..increments import IncrementTracker
from ..losses import get_loss
from ..model import ModelFunction, blend_output, mean_output
from ..removal.conditional import ConditionalRemoval
from ..removal.marginal import MarginalRemoval, Removal
from ..rng import derive_seed, make_rng
from .base import Explainer

__all__ = ["ISAGE"]

REMOVALS = ("interventional", "observational")


class ISAGE(Explainer):
    """Incremental SAGE values of all features; see the module docstring.

    Parameters: ``model_fn`` the model and the output explained (``"value"``, ``"proba"``
    or ``"proba_of"``); ``loss`` a name from :data:`pipeline.core.losses.LOSSES` or a
    callable ``loss(y_true, y_pred)``; ``feature_names`` all model inputs; ``features``
    ``None`` or all of ``feature_names`` (anything else is refused); ``alpha`` the
    smoothing rate; ``n_inner_samples`` ``m``; ``removal`` ``"interventional"``
    (:class:`~pipeline.core.removal.MarginalRemoval`), ``"observational"``
    (:class:`~pipeline.core.removal.ConditionalRemoval`) or a removal object used as a
    template (the explainer feeds its own fresh clone); ``storage_size`` the reservoir
    size (per leaf for the observational removal); ``categorical`` features the
    observational removal predicts with classification trees; ``seed``.
    """

    name = "isage"

    def __init__(
        self,
        model_fn: ModelFunction,
        loss: Any,
        feature_names: Sequence[str],
        features: Sequence[str] | None = None,
        alpha: float = 0.001,
        n_inner_samples: int = 1,
        removal: str | Removal = "interventional",
        storage_size: int = 100,
        categorical: Sequence[str] | None = None,
        seed: int | None = None,
    ):
        self.model_fn = self._check_model_fn(model_fn)
        if model_fn.output == "label":
            raise ValueError(
                "iSAGE averages predictions (the mean prediction y_0 and the mean over inner "
                "samples), and a mean of labels is undefined; wrap a classifier as "
                "ModelFunction(model, output='proba') and use loss='cross_entropy', or a "
                "regressor as ModelFunction(model, output='value')"
            )
        self.loss = loss
        self.feature_names = feature_names
        self.features = features
        self.alpha = self._check_alpha(alpha)
        if not isinstance(n_inner_samples, int) or isinstance(n_inner_samples, bool) or n_inner_samples < 1:
            raise ValueError(f"n_inner_samples={n_inner_samples!r} must be a positive int")
        self.n_inner_samples = n_inner_samples
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
        self._removal = self._make_removal(names)
        self._rng = make_rng(self.seed, "isage")
        self.values: dict[str, float] = {f: 0.0 for f in names}
        self._y_empty: Any = None
        self.n_explained = 0
        #: the per-event marginal contributions ``Delta`` since the last report (pipeline.core.increments)
        self.increments = IncrementTracker(names)

    def _make_removal(self, names: list[str]) -> Removal:
        removal = self.removal
        seed = derive_seed(self.seed, "isage", "removal")
        if removal == "interventional":
            return MarginalRemoval(names, storage_size=self.storage_size, seed=seed)
        if removal == "observational":
            return ConditionalRemoval(
                names, categorical=self.categorical, storage_size=self.storage_size, seed=seed
            )
        if not isinstance(removal, Removal):  # pragma: no cover - checked in __init__
            raise TypeError(f"removal must be a string or a Removal, got {type(removal).__name__}")
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
    def removal_state(self) -> Removal:
        """The removal strategy this explainer feeds (read only)."""
        return self._removal

    # the algorithm ---------------------------------------------------------------
    def explain_one(self, x: dict[str, Any], y: Any) -> dict[str, float]:
        removal = self._removal
        if not removal.ready:  # first event: nothing stored to draw absent features from
            removal.update(x)
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

        y_full = fn(x)
        if self._y_empty is None:  # Definition 4: f_t0(x, {}) = f_t0(x_t0)
            self._y_empty = dict(y_full) if isinstance(y_full, dict) else y_full
        else:
            self._y_empty = blend_output(self._y_empty, y_full, alpha)
        prev = loss(y, self._y_empty)

        rows = removal.sample_chain(x, order, m, rng)  # S = order[:j], j = 1..d-1
        preds = fn.many(rows) if rows else []

        values = self.values
        add = self.increments.add
        for j in range(d - 1):
            if m == 1:
                pred = preds[j]
            else:
                pred = mean_output(preds[j * m : (j + 1) * m])
            cur = loss(y, pred)
            f = order[j]
            delta = prev - cur
            add(f, delta)
            values[f] = keep * values[f] + alpha * delta
            prev = cur
        cur = loss(y, y_full)  # S = D: the full x_t, no draw
        f = order[-1]
        delta = prev - cur
        add(f, delta)
        values[f] = keep * values[f] + alpha * delta

        self.n_explained += 1
        removal.update(x)
        return dict(values)

    def observe_one(self, x: dict[str, Any], y: Any) -> None:
        """Update the removal's storage only (an event skipped under a budget)."""
        self._removal.update(x)
