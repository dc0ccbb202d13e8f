"""A bare model given to an explainer: the ``ModelFunction`` of the output its loss scores."""

from __future__ import annotations

from typing import Any

from .losses import Brier, BrierOf, CrossEntropy, Squared, absolute
from .model import ModelFunction

__all__ = ["check_model_fn", "bare_output", "check_target_class"]


def check_model_fn(model_fn: Any, loss: Any = None, target_class: Any = None) -> ModelFunction:
    """``model_fn`` itself, or a bare river model or callable wrapped as a ``ModelFunction`` of
    the output ``loss`` scores (:func:`bare_output`). Without a loss, a bare classifier given a
    ``target_class`` is explained by the probability of that class (``"proba_of"``).

    >>> from river import linear_model
    >>> check_model_fn(linear_model.LogisticRegression(), "zero_one").output
    'label'
    >>> check_model_fn(linear_model.LogisticRegression(), "cross_entropy").output
    'proba'
    >>> check_model_fn(linear_model.LinearRegression()).output
    'value'
    >>> fn = check_model_fn(linear_model.LogisticRegression(), target_class=1)
    >>> fn.output, fn.target_class
    ('proba_of', 1)
    """
    if isinstance(model_fn, ModelFunction):
        return model_fn
    if loss is None and target_class is not None and hasattr(model_fn, "predict_proba_one"):
        return ModelFunction(model_fn, output="proba_of", target_class=target_class)
    output, target_class = bare_output(model_fn, loss)
    return ModelFunction(model_fn, output=output, target_class=target_class)


def bare_output(model: Any, loss: Any = None) -> tuple[str, Any]:
    """The output (and target class) a bare model explains: the one ``loss`` scores.

    ``"proba"`` for ``"brier"`` and ``"cross_entropy"``, ``"proba_of"`` for ``BrierOf(c)``,
    ``"value"`` for ``"squared"`` and ``"absolute"``, the label for ``"zero_one"`` or a loss of
    one's own; without a loss, a number unless the model predicts probabilities, then its label.

    >>> from streamxai.core.losses import BrierOf
    >>> bare_output(None, "squared"), bare_output(None, BrierOf(1)), bare_output(None, "zero_one")
    (('value', None), ('proba_of', 1), ('label', None))
    """
    if isinstance(loss, BrierOf):
        return "proba_of", loss.target_class
    if loss is None:
        return ("label" if hasattr(model, "predict_proba_one") else "value"), None
    if isinstance(loss, (Brier, CrossEntropy)) or loss in ("brier", "cross_entropy"):
        return "proba", None
    if isinstance(loss, Squared) or loss in ("squared", "absolute") or loss is absolute:
        return "value", None
    return "label", None


def check_target_class(model_fn: ModelFunction, x: dict[str, Any], who: str) -> bool:
    """Whether the classes ``model_fn``'s classifier predicts at ``x`` are known and include its
    ``target_class`` (``False`` while it predicts none); a ``ValueError`` naming them if not."""
    classes = model_fn.model.predict_proba_one(x)
    if not classes:
        return False  # (it has learned nothing yet)
    if model_fn.target_class not in classes:
        raise ValueError(
            f"{who} shows the probability of class {model_fn.target_class!r}, which the model does not predict "
            f"(its classes: {', '.join(sorted(map(repr, classes)))}); pass target_class=<one of them>")
    return True
