"""The model an explainer evaluates, with the output to explain made explicit.

Nothing is guessed from type names: ``output`` says which prediction is explained.

- ``"label"``: ``model.predict_one(x)`` (classification label), for 0-1 loss;
- ``"value"``: ``float(model.predict_one(x))``, for regression losses;
- ``"proba"``: ``model.predict_proba_one(x)``, a ``{class: probability}`` dict,
  for cross-entropy;
- ``"proba_of"``: the probability of ``target_class`` as a float (a PD curve of a class).

A plain callable ``f(x) -> prediction`` is accepted in place of a river model and used
as is for every output. A model that can score many rows at once is given all
perturbed rows of one event in one call via ``batch``: a callable
``rows -> list of predictions`` in the same output format.

>>> from river import linear_model
>>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
>>> f({"a": 1.5}), f.many([{"a": 1.0}, {"a": 2.0}]), f.n_evaluations
(3.0, [2.0, 4.0], 3)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .base import Component

__all__ = ["ModelFunction", "OUTPUTS", "mean_output", "blend_output", "check_model_fn"]

OUTPUTS = ("label", "value", "proba", "proba_of")

Prediction = Any


class ModelFunction(Component):
    """Evaluate ``model`` on feature dicts and count the evaluations."""

    def __init__(
        self,
        model: Any,
        output: str = "label",
        target_class: Any = None,
        batch: Callable[[Sequence[dict]], Sequence[Prediction]] | None = None,
    ):
        if output not in OUTPUTS:
            raise ValueError(f"output={output!r} is not one of {OUTPUTS}; say which prediction to explain")
        if output == "proba_of" and target_class is None:
            raise ValueError("output='proba_of' needs target_class=<the class whose probability is explained>")
        self.model = model
        self.output = output
        self.target_class = target_class
        self.batch = batch
        self._reset()

    def _reset(self) -> None:
        self.n_evaluations = 0
        self._fn = self._resolve()

    def _resolve(self) -> Callable[[dict], Prediction]:
        m = self.model
        has_river = hasattr(m, "predict_one") or hasattr(m, "predict_proba_one")
        if not has_river:
            if not callable(m):
                raise TypeError(
                    f"model of type {type(m).__name__} has neither predict_one/predict_proba_one "
                    "nor __call__; pass a river model or a callable f(x) -> prediction"
                )
            return m
        if self.output == "label":
            return m.predict_one
        if self.output == "value":
            return lambda x: float(m.predict_one(x))
        if not hasattr(m, "predict_proba_one"):
            raise TypeError(
                f"output={self.output!r} needs predict_proba_one, which {type(m).__name__} lacks"
            )
        if self.output == "proba":
            return m.predict_proba_one
        cls = self.target_class
        return lambda x: float(m.predict_proba_one(x).get(cls, 0.0))

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_fn", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._fn = self._resolve()

    def __call__(self, x: dict) -> Prediction:
        self.n_evaluations += 1
        return self._fn(x)

    def many(self, rows: Sequence[dict]) -> list[Prediction]:
        """Predictions for ``rows``, in one call when ``batch`` was given."""
        self.n_evaluations += len(rows)
        if self.batch is not None and rows:
            return list(self.batch(rows))
        fn = self._fn
        return [fn(r) for r in rows]


def check_model_fn(model_fn: Any) -> ModelFunction:
    """``model_fn`` itself, or a TypeError saying how to wrap a bare model."""
    if not isinstance(model_fn, ModelFunction):
        raise TypeError(
            f"model_fn must be a ModelFunction, got {type(model_fn).__name__}; wrap the model "
            "as ModelFunction(model, output=...) to say which prediction is explained"
        )
    return model_fn


def mean_output(preds: Sequence[Prediction]) -> Prediction:
    """Mean of numeric predictions, or per-class mean of probability dicts.

    >>> mean_output([1.0, 3.0]), mean_output([{"a": 1.0}, {"a": 0.5, "b": 0.5}])
    (2.0, {'a': 0.75, 'b': 0.25})
    """
    first = preds[0]
    if isinstance(first, dict):
        acc: dict = {}
        for p in preds:
            for k, v in p.items():
                acc[k] = acc.get(k, 0.0) + v
        n = len(preds)
        return {k: v / n for k, v in acc.items()}
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        return sum(preds) / len(preds)
    raise TypeError(
        f"cannot average predictions of type {type(first).__name__}; explain a numeric output "
        "(output='value', 'proba' or 'proba_of') with this explainer"
    )


def blend_output(old: Prediction, new: Prediction, alpha: float) -> Prediction:
    """``(1 - alpha) * old + alpha * new`` for floats or probability dicts.

    >>> blend_output({"a": 1.0}, {"b": 1.0}, 0.25)
    {'a': 0.75, 'b': 0.25}
    """
    if isinstance(new, dict):
        old = old or {}
        keys = set(old) | set(new)
        return {k: (1 - alpha) * old.get(k, 0.0) + alpha * new.get(k, 0.0) for k in sorted(keys, key=str)}
    return (1 - alpha) * float(old or 0.0) + alpha * float(new)
