"""A bare model given to an explainer: the ``ModelFunction`` of the output its loss scores."""

from __future__ import annotations

from typing import Any

from .losses import Brier, BrierOf, CrossEntropy, Squared, absolute
from .model import ModelFunction

__all__ = ["check_model_fn", "bare_output"]


def check_model_fn(model_fn: Any, loss: Any = None) -> ModelFunction:
    """``model_fn`` itself, or a bare river model or callable wrapped as a ``ModelFunction`` of
    the output ``loss`` scores (:func:`bare_output`).

    >>> from river import linear_model
    >>> check_model_fn(linear_model.LogisticRegression(), "zero_one").output
    'label'
    >>> check_model_fn(linear_model.LogisticRegression(), "cross_entropy").output
    'proba'
    >>> check_model_fn(linear_model.LinearRegression()).output
    'value'
    """
    if isinstance(model_fn, ModelFunction):
        return model_fn
    output, target_class = bare_output(model_fn, loss)
    return ModelFunction(model_fn, output=output, target_class=target_class)


def bare_output(model: Any, loss: Any = None) -> tuple[str, Any]:
    """The output (and target class) a bare model explains: the one ``loss`` scores.

    Class probabilities (``"proba"``) for ``"brier"`` and ``"cross_entropy"``, the probability
    of class ``c`` (``"proba_of"``) for ``BrierOf(c)``, a number (``"value"``) for
    ``"squared"`` and ``"absolute"``, and ``predict_one``'s label for ``"zero_one"`` or a loss
    of one's own. Without a loss (iPDP, batch PFI): a number, unless the model predicts
    probabilities; a classifier then says which class's probability is explained with
    ``ModelFunction(model, output="proba_of", target_class=c)``.

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
