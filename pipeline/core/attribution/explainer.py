"""Why this prediction: local attributions of the current model against the stream's recent values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Component, check_positive_int
from ..model import ModelFunction, check_model
from ..removal.marginal import MarginalRemoval
from ..rng import derive_seed
from .attribute import Attribution, attribute
from .leaf_table import LeafMemo

__all__ = ["LocalShapley"]


class LocalShapley(Component):
    """Each feature's interventional Shapley value for one prediction of the model as it is now.

    The background is a geometric reservoir of the stream's recent feature values, fed by
    :meth:`learn_one` and built as iSAGE's interventional removal builds its own. The values sum to
    ``prediction - base_value``, the mean prediction over the background. They are exact for
    river's Hoeffding trees, ARF and linear and logistic regression, and sampled otherwise
    (``method`` "sampling", with ``stderr``; :func:`~streamxai.core.attribution.attribute`).

    Parameters
    ----------
    model
        A river model, a ``ModelFunction`` (whose ``target_class`` is used for
        ``output="proba_of"``) or a callable ``f(row) -> float``.
    feature_names
        All model inputs (the players: every row must carry them).
    target_class
        The class whose probability a classifier is explained on (``None``: the class it
        predicts for ``x``).
    storage_size
        The background's size.
    max_exact
        The most features an exact method enumerates coalitions of (logistic regression; the
        free features a naive Bayes or linear leaf reads).
    max_evaluations
        The model calls the sampling estimator may make per explanation (at least one pass over
        the background).
    seed
        Seed of the background's reservoir and of the sampling estimator.

    Examples
    --------
    >>> from river import datasets, tree
    >>> import streamxai
    >>> model = tree.HoeffdingTreeClassifier(grace_period=50)
    >>> local = streamxai.LocalShapley(model, ["empty_server_form_handler", "popup_window", "https",
    ...     "request_from_other_domain", "anchor_from_other_domain", "is_popular", "long_url",
    ...     "age_of_domain", "ip_in_url"], seed=1)
    >>> for i, (x, y) in enumerate(datasets.Phishing()):
    ...     if i == 1000:
    ...         values = local.explain_one(x)       # the model as it is now, before it learns x
    ...     local.learn_one(x)
    ...     model.learn_one(x, y)
    >>> local.method, local.exact, local.target
    ('tree', True, False)
    >>> top = max(values, key=lambda f: abs(values[f]))
    >>> top, round(values[top], 3), round(local.base_value, 3), round(local.prediction, 3)
    ('empty_server_form_handler', 0.246, 0.529, 0.961)
    >>> round(sum(values.values()) - (local.prediction - local.base_value), 12)   # efficiency
    0.0
    """

    _as_is = ("model",)  # the model explained: a clone evaluates a copy of it as it is

    def __init__(
        self,
        model: Any,
        feature_names: Sequence[str],
        target_class: Any = None,
        storage_size: int = 100,
        max_exact: int = 12,
        max_evaluations: int = 2000,
        seed: int | None = None,
    ):
        self.model = model
        self.feature_names = feature_names
        self.target_class = target_class
        self.storage_size = check_positive_int(storage_size, "storage_size")
        self.max_exact = check_positive_int(max_exact, "max_exact")
        self.max_evaluations = check_positive_int(max_evaluations, "max_evaluations")
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        names = list(self.feature_names)
        self._names = names
        self._background = MarginalRemoval(names, storage_size=self.storage_size,
                                           seed=derive_seed(self.seed, "isage", "removal"))
        self._model, self._target = self._unwrap(self.model, self.target_class)
        self.n_explained = 0
        self.last: Attribution | None = None
        self._memo = LeafMemo()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_memo"] = None  # a cache of the model's leaves: rebuilt, never pickled
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._memo = LeafMemo()

    @staticmethod
    def _unwrap(model: Any, target_class: Any) -> tuple[Any, Any]:
        if isinstance(model, ModelFunction):
            if target_class is None and model.output == "proba_of":
                target_class = model.target_class
            return model.model, target_class
        return check_model(model), target_class

    @property
    def background(self) -> list[dict[str, Any]]:
        """The stored rows the values are computed against (copies)."""
        return [dict(z) for z in self._background.reservoir.items]

    def learn_one(self, x: dict[str, Any], y: Any = None) -> None:
        """Store ``x`` in the background (``y`` is not used: the background is the features')."""
        self._background.update(x)

    def explain_one(self, x: dict[str, Any]) -> dict[str, float]:
        """Each feature's value for the model's prediction at ``x``, as it is now."""
        items = self._background.reservoir.items or [x]
        self.last = attribute(self._model, x, items, self._names, target_class=self._target,
                              max_exact=self.max_exact, max_evaluations=self.max_evaluations,
                              seed=derive_seed(self.seed, "local", self.n_explained), memo=self._memo)
        self.n_explained += 1
        return dict(self.last.values)

    def _field(self, name: str, default: Any) -> Any:
        return default if self.last is None else getattr(self.last, name)

    @property
    def base_value(self) -> float | None:
        """The mean prediction over the background, for the last explanation."""
        return self._field("base", None)

    @property
    def prediction(self) -> float | None:
        """``f(x)`` of the last explanation: the values sum to it minus :attr:`base_value`."""
        return self._field("prediction", None)

    @property
    def target(self) -> Any:
        """The class whose probability was explained last (None: a regression value)."""
        return self._field("target", None)

    @property
    def method(self) -> str | None:
        """How the last values were computed (one of :data:`~.attribute.METHODS`)."""
        return self._field("method", None)

    @property
    def exact(self) -> bool | None:
        """True when the last values carry no sampling error."""
        return self._field("exact", None)

    @property
    def stderr(self) -> dict[str, float]:
        """Standard errors of the last values when they were sampled, else empty."""
        return dict(self._field("stderr", {}))

    @property
    def n_evaluations(self) -> int:
        """Model calls the last explanation made when it was sampled (0 when exact)."""
        return self._field("n_evaluations", 0)
