"""The model path: predict, score, then learn (prequential evaluation).

>>> from river import linear_model
>>> m = PrequentialModel(linear_model.LinearRegression(), output="value", loss="squared")
>>> y_pred, loss = m.process_one({"a": 1.0}, 2.0)
>>> y_pred, loss, m.version
(0.0, 4.0, 1)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .base import Component
from .losses import get_loss
from .model import ModelFunction, fresh_copy

__all__ = ["PrequentialModel", "MAX_LOSS", "NotABinaryLabel"]

#: the largest loss of one event that is learned: the loss summaries square it (past about 1e154
#: they overflow), and 1e100 leaves room for 1e100 such squares
MAX_LOSS = 1e100


#: the labels a binary classifier tells apart (a float 1.0 or 0.0 arrives as the integer)
_BINARY = frozenset({0, 1})


class NotABinaryLabel(ValueError):
    """A label a binary classifier (river's ``_multiclass`` False) cannot tell apart from its two
    classes: anything but true/false and 0/1 (river's logistic regression learns 2 as True and -1
    as False). The event is not learned.

    >>> e = NotABinaryLabel(2); e.y, str(e)[:56]
    (2, 'the label 2 (int) is not a class of a binary classifier:')
    """

    def __init__(self, y: Any):
        self.y = y
        how = "it cannot learn class names" if isinstance(y, str) else f"it would learn {y!r:.100} as one of those two"
        super().__init__(
            f"the label {y!r:.100} ({type(y).__name__}) is not a class of a binary classifier: the model (such as "
            f"river's LogisticRegression or Perceptron) predicts True or False only ({how}): the event is not "
            "learned; send the labels as true/false or 0 and 1 (target_class = 1 is the positive class), or, for "
            "class names or more than two classes, use a multiclass model (river.tree.HoeffdingTreeClassifier, "
            "HoeffdingAdaptiveTreeClassifier, river.forest.ARFClassifier, or river.multiclass.OneVsRestClassifier "
            "around the binary one in a model of your own)")


class PrequentialModel(Component):
    """Predicts each event with the model as it is, scores it, then learns it. The learner is a
    fresh copy of ``model`` (never trained itself); ``version`` counts the events learned."""

    def __init__(self, model: Any, output: str = "label", loss: Any = "zero_one", target_class: Any = None):
        self.model = model
        self.output = output
        self.loss = loss
        self.target_class = target_class
        self._reset()

    def _reset(self) -> None:
        self._learner = fresh_copy(self.model)
        self._fn = ModelFunction(self._learner, output=self.output, target_class=self.target_class)
        self._loss = get_loss(self.loss)
        self.version = 0

    def process_one(self, x: dict[str, Any], y: Any) -> tuple[Any, float | None]:
        """Prediction and loss for ``(x, y)``; learns it when ``y`` is not None."""
        y_pred = self.predict_one(x)
        if y is None:
            return y_pred, None
        loss = self.score(y, y_pred)
        self.learn_one(x, y)
        return y_pred, loss

    def predict_one(self, x: dict[str, Any]) -> Any:
        """The prediction for ``x`` of the model as it is; ValueError if it is a number that is
        not finite (nothing could publish it, and learning such an event ruins most models)."""
        y_pred = self._fn(x)
        if isinstance(y_pred, (float, np.floating)) and not math.isfinite(y_pred):
            raise ValueError(f"the model's prediction is not finite ({y_pred}): the event is not learned; its "
                             "features are probably far outside what the model has seen")
        return y_pred

    def score(self, y: Any, y_pred: Any) -> float:
        """The loss of the prediction ``y_pred`` against the target ``y``; ValueError if it is
        not finite, larger than :data:`MAX_LOSS` (its square would overflow the loss summaries), or,
        for class labels, a label that cannot be ordered with the predicted class (models that sort
        their classes would fail on every later event); :class:`NotABinaryLabel` (:meth:`check_label`).

        >>> from river import linear_model
        >>> m = PrequentialModel(linear_model.LinearRegression(), output="value", loss="squared")
        >>> m.score(1.0, 3e200)
        Traceback (most recent call last):
        ...
        ValueError: the model's loss is not finite (inf: the prediction 3e+200 against the target 1.0): the event is not learned; ...
        >>> m.score(1e60, 0.0)
        Traceback (most recent call last):
        ...
        ValueError: the model's loss 1e+120 (the prediction 0.0 against the target 1e+60) is too large to summarise ...
        """
        self.check_label(y)
        if self.output == "label" and y_pred is not None and not _comparable(y, y_pred):
            raise ValueError(f"the label {y!r:.100} ({type(y).__name__}) cannot be compared with the stream's classes "
                             f"(the model predicted {y_pred!r:.100}, {type(y_pred).__name__}): the event is not learned; "
                             "send every label of a stream as the same type (all strings, or all numbers and booleans)")
        loss = float(self._loss(y, y_pred))
        if not math.isfinite(loss):
            raise ValueError(f"the model's loss is not finite ({loss}: the prediction {y_pred!r} against the target "
                             f"{y!r}): the event is not learned; its features or target are probably far outside "
                             "what the model has seen")
        if abs(loss) > MAX_LOSS:
            raise ValueError(f"the model's loss {loss:.3g} (the prediction {y_pred!r} against the target {y!r}) is too "
                             f"large to summarise (more than {MAX_LOSS:g}): the event is not learned; its target or "
                             "features are probably far outside the stream's scale (rescale them)")
        return loss

    def check_label(self, y: Any) -> None:
        """:class:`NotABinaryLabel` if the model is a binary classifier (``_multiclass`` False,
        as river's linear models and the pipelines and ensembles around them say) and ``y`` is
        not true/false or 0/1; multiclass models and regressions take any label.

        >>> from river import linear_model
        >>> m = PrequentialModel(linear_model.LogisticRegression(), output="label")
        >>> m.check_label(1), m.check_label(False)
        (None, None)
        >>> m.check_label(2)
        Traceback (most recent call last):
        ...
        streamxai.core.prequential.NotABinaryLabel: the label 2 (int) is not a class of a binary classifier: ...
        """
        if (self.output == "label" and not (isinstance(y, (bool, int)) and y in _BINARY)
                and getattr(self._learner, "_multiclass", None) is False):
            raise NotABinaryLabel(y)

    def learn_one(self, x: dict[str, Any], y: Any) -> None:
        """Learn ``(x, y)``: the model's version grows by one."""
        self._learner.learn_one(x, y)
        self.version += 1


def _comparable(a: Any, b: Any) -> bool:
    """Whether two class labels can be ordered with each other as far as the labels a stream
    may carry go (strings, integers, booleans): not a string and a non-string.

    >>> _comparable(True, 3), _comparable("a", "b"), _comparable("a", False), _comparable(np.int64(2), True)
    (True, True, False, True)
    """
    return isinstance(a, str) == isinstance(b, str)
