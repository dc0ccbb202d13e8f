"""What every incremental explainer offers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Component, check_feature_names
from ..increments import IncrementTracker

__all__ = ["Explainer"]


class Explainer(Component):
    """Base class. Subclasses set ``name`` and implement ``explain_one`` / ``observe_one``.

    ``explain_one(x, y)`` explains the model as it is now, updates the storages and returns the
    current values, never training the model; ``observe_one(x, y)`` updates the storages only (an
    event skipped under a budget). Draws are seeded per ``(seed, explainer, feature)``, so an
    explainer over a subset of ``feature_names`` gives exactly the full explainer's values."""

    name = "explainer"

    #: per-feature scalar values after the last event (importance or effect spread)
    values: dict[str, float]
    #: events folded into the estimates so far
    n_explained: int
    #: the per-event increments of each explained feature since the last report
    increments: IncrementTracker

    def explain_one(self, x: dict[str, Any], y: Any) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError

    def observe_one(self, x: dict[str, Any], y: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    @property
    def stderr(self) -> dict[str, float]:
        """Standard error of each value in ``values`` (see :mod:`streamxai.core.uncertainty`);
        a feature without one is absent."""
        return {}

    @property
    def variance_factors(self) -> dict[str, float]:
        """Per feature, the variance factor of its increments
        (:meth:`~streamxai.core.uncertainty.SmoothedStderr.variance_factors`); empty when independent."""
        return {}

    @property
    def n_evaluations(self) -> int:
        """Model evaluations made through ``model_fn`` so far."""
        return self.model_fn.n_evaluations

    # helpers for subclasses -------------------------------------------------------
    @staticmethod
    def _check_features(
        feature_names: Sequence[str], features: Sequence[str] | None
    ) -> list[str]:
        names = check_feature_names(feature_names)
        if features is None:
            return names
        unknown = [f for f in features if f not in names]
        if unknown:
            raise ValueError(f"features {unknown} are not in feature_names {names}")
        return list(features)

    @staticmethod
    def _check_alpha(alpha: float) -> float:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha={alpha} must be in (0, 1]")
        return alpha
