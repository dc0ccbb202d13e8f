"""Incremental permutation feature importance, iPFI (Fumagalli, Muschalik et al.), Algorithm 1."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..bare_model import check_model_fn
from ..base import check_positive_int
from ..increments import IncrementTracker
from ..losses import get_loss
from ..model import ModelFunction
from ..rng import derive_seed, make_rng
from ..storage.reservoir import GeometricReservoir, UniformReservoir
from ..uncertainty import SmoothedStderr
from .base import Explainer

__all__ = ["IPFI"]

STORAGES = {"geometric": GeometricReservoir, "uniform": UniformReservoir}


class IPFI(Explainer):
    """Incremental PFI of every feature in ``features``.

    Per event and feature: the loss with the feature's value replaced by one drawn from a
    reservoir of earlier events, minus the loss, smoothed at rate ``alpha`` (the docs page "The
    explainers step by step"). Draws for feature ``j`` are seeded from ``(seed, "ipfi", j)``, so
    ``IPFI(features=[j])`` gives exactly the full explainer's values for ``j``.

    Parameters
    ----------
    model_fn
        The model to explain: a ``ModelFunction`` naming the explained output, or a bare river
        model or callable, which explains the output ``loss`` scores
        (:func:`~streamxai.core.bare_model.bare_output`).
    loss
        ``loss(y_true, y_pred) -> float`` or a name from :data:`streamxai.core.losses.LOSSES`.
    feature_names
        All model inputs, in order.
    features
        The features this instance explains (default: all).
    alpha
        Smoothing parameter of the exponential smoothing, in ``(0, 1]``.
    n_samples
        ``M``, realizations of the sampling strategy averaged per event and feature.
    storage
        ``"geometric"`` or ``"uniform"`` sampling.
    storage_size
        Reservoir length ``L``.
    seed
        Seed of all random draws (``None``: unseeded).

    Examples
    --------
    The model predicts ``a > 0.5``, labels follow the model, so with 0-1 loss the PFI of
    ``a`` is ``P(a > 0.5) P(a' <= 0.5) + P(a <= 0.5) P(a' > 0.5) = 0.5`` and ``b`` is unused.

    >>> import random
    >>> def h(x):
    ...     return int(x["a"] > 0.5)
    >>> ipfi = IPFI(h, "zero_one", ["a", "b"], alpha=0.01, n_samples=2, seed=7)
    >>> rng = random.Random(1)
    >>> for _ in range(3000):
    ...     x = {"a": rng.random(), "b": rng.random()}
    ...     values = ipfi.explain_one(x, h(x))
    >>> ipfi.n_explained, ipfi.n_evaluations    # the first event only fills the storage
    (2999, 14995)
    >>> round(values["a"], 1), values["b"]
    (0.5, 0.0)

    References
    ----------
    1. Fumagalli, F., Muschalik, M., Hüllermeier, E., Hammer, B. "Incremental Permutation Feature
       Importance (iPFI): Towards Online Explanations on Data Streams". arXiv:2209.01939.
       Implements Algorithm 1 (one explanation step) and the smoothed estimator
       phi_t = (1 - alpha) phi_{t-1} + alpha lambda_t, with the uniform or geometric sampling strategy.
    """

    name = "ipfi"

    def __init__(
        self,
        model_fn: ModelFunction,
        loss: str | Callable[[Any, Any], float],
        feature_names: Sequence[str],
        features: Sequence[str] | None = None,
        alpha: float = 0.001,
        n_samples: int = 1,
        storage: str = "geometric",
        storage_size: int = 100,
        seed: int | None = None,
    ):
        self.model_fn = check_model_fn(model_fn, loss)
        self.loss = loss
        self.feature_names = feature_names
        self.features = features
        self.alpha = self._check_alpha(alpha)
        self.n_samples = check_positive_int(n_samples, "n_samples")
        if storage not in STORAGES:
            raise ValueError(f"storage={storage!r} is not one of {sorted(STORAGES)}")
        self.storage = storage
        self.storage_size = check_positive_int(storage_size, "storage_size")
        self.seed = seed
        self._reset()

    # state -----------------------------------------------------------------------
    def _reset(self) -> None:
        self._explained = self._check_features(self.feature_names, self.features)
        self._loss = get_loss(self.loss)
        self._storage = STORAGES[self.storage](size=self.storage_size, seed=derive_seed(self.seed, "storage"))
        # (feature, generator) pairs in explanation order; one generator per feature
        self._rngs = [(f, make_rng(self.seed, "ipfi", f)) for f in self._explained]
        self.n_explained = 0
        self.values: dict[str, float] = {f: 0.0 for f in self._explained}
        #: the per-event increments ``lambda_t`` since the last report (streamxai.core.increments)
        self.increments = IncrementTracker(self._explained)
        self._se = SmoothedStderr(self._explained, self.alpha, start="first")
        self._n_stored = 0

    @property
    def stderr(self) -> dict[str, float]:
        """Standard error of each value (:mod:`streamxai.core.uncertainty`): the smoothing's
        weights, the increments' running variance and the storage's reuse of observations."""
        return self._se.stderrs()

    @property
    def variance_factors(self) -> dict[str, float]:
        return self._se.variance_factors()

    @property
    def explained_features(self) -> list[str]:
        """The features this instance explains, in order."""
        return list(self._explained)

    # protocol --------------------------------------------------------------------
    def observe_one(self, x: dict[str, Any], y: Any = None) -> None:
        """Update the storage with ``x`` only (an event skipped under a budget)."""
        self._n_stored += 1
        self._storage.update(x)
        self._se.stored(self._storage.last_slot, self._storage.items, None)

    def explain_one(self, x: dict[str, Any], y: Any) -> dict[str, float]:
        """Fold the increment of the current model at ``(x, y)`` into the estimates, then
        store ``x``; returns ``{feature: importance}`` (a new dict)."""
        storage = self._storage
        past = storage.items
        n_past = len(past)
        if n_past == 0:  # before t0: nothing to sample from yet
            self._n_stored += 1
            storage.update(x)
            self._se.stored(storage.last_slot, storage.items, None)
            return dict(self.values)

        model_fn = self.model_fn
        loss = self._loss
        m = self.n_samples

        # the perturbed rows: x with one feature from a past observation, drawn at floor(u * n)
        # as random.choices draws (stable across Python versions); x itself is never written to
        pairs: list[tuple[str, Any]] = []
        append = pairs.append
        slots: list[Any] = []  # the stored observations each feature's draws used
        try:
            if m == 1:
                for f, rng in self._rngs:
                    k = int(rng.random() * n_past)
                    append((f, past[k][f]))
                    slots.append(k)
            else:
                for f, rng in self._rngs:
                    u = rng.random
                    ks = [int(u() * n_past) for _ in range(m)]
                    for k in ks:
                        append((f, past[k][f]))
                    slots.append(ks)
        except KeyError as e:
            raise ValueError(
                f"a stored observation lacks feature {e.args[0]!r}; every event given to "
                f"{type(self).__name__} must carry all of {list(self.feature_names)}"
            ) from None
        preds = model_fn.replaced(x, pairs, with_x=True)
        base_loss = float(loss(y, preds[0]))
        preds = preds[1:]

        if m == 1:
            lams = [float(loss(y, p)) - base_loss for p in preds]
        else:  # the mean loss of each feature's m rows, added in order (not sum(): 3.12 compensates)
            lams = []
            for i in range(0, len(preds), m):
                s = 0.0
                for p in preds[i:i + m]:
                    s += loss(y, p)
                lams.append(float(s) / m - base_loss)
        features = self._explained
        values = self.values
        if self.n_explained == 0:  # phi_t0 = lambda_t0
            self.increments.add_all(features, lams)
            values.update(zip(features, lams, strict=True))
        else:
            a = self.alpha
            self.increments.add_smoothed(features, lams, values, 1.0 - a, a)
        self.n_explained += 1
        se = self._se
        se.add_increments(lams)
        n_stored = self._n_stored
        se.add_donors(past, slots, lams, updates=n_stored / self.n_explained,
                      replace_rate=1.0 / n_stored if self.storage == "uniform" else None, per_feature=True)
        self._n_stored = n_stored + 1
        storage.update(x)
        se.stored(storage.last_slot, storage.items, lams)
        return dict(values)
