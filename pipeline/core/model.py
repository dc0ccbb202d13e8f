"""The model an explainer evaluates, with the output to explain made explicit."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .base import Component

__all__ = ["ModelFunction", "OUTPUTS", "FAST_PATHS", "mean_output", "blend_output", "chain_rows", "check_model", "fresh_copy"]

OUTPUTS = ("label", "value", "proba", "proba_of")
#: ``auto``: evaluate a recognised river model from its internals; ``off``: always call it
FAST_PATHS = ("auto", "off")

Prediction = Any


class ModelFunction(Component):
    """Evaluate ``model`` on feature dicts and count the evaluations.

    Nothing is guessed from type names: ``output`` says which prediction is explained.

    - ``"label"``: ``model.predict_one(x)`` (classification label), for 0-1 loss;
    - ``"value"``: ``float(model.predict_one(x))``, for regression losses;
    - ``"proba"``: ``model.predict_proba_one(x)``, a ``{class: probability}`` dict,
      for cross-entropy;
    - ``"proba_of"``: the probability of ``target_class`` as a float (a PD curve of a class).

    A plain callable ``f(x) -> prediction`` is used as is for every output. On the fast path a
    river model that :func:`streamxai.core.fastpath.compile_model` recognises is evaluated from
    its internals, with exactly the values of calling it (``path`` says which); a call the fast
    path cannot serve calls the model and is counted in ``fallbacks``.

    Parameters
    ----------
    model
        The model explained: a river model (``predict_one`` or ``predict_proba_one``) or a
        callable ``f(x) -> prediction``. It is evaluated as it is at each call, never trained
        here; a clone evaluates a copy of it as it is then.
    output
        Which prediction is explained: ``"label"``, ``"value"``, ``"proba"`` or ``"proba_of"``
        (above).
    target_class
        The class whose probability ``output="proba_of"`` explains (required there, unused by
        the other outputs).
    batch
        ``rows -> list of predictions``, one call for all rows of ``many``, ``replaced``,
        ``curves`` and ``coalitions`` (``None``: the model is called once per row, or the fast
        path serves them). With ``batch`` the fast path is off.
    fast_path
        ``"auto"`` (evaluate a recognised river model from its internals) or ``"off"`` (always
        call the model).

    Attributes
    ----------
    n_evaluations
        Predictions made so far (rows evaluated, one per row whichever path made them).
    fallbacks
        Calls the fast path handed back to calling the model.
    fallback_reason
        The last fallback's exception, as ``"Type: message"`` (``""``: none).

    Examples
    --------
    >>> f = ModelFunction(lambda x: 2.0 * x["a"], output="value")
    >>> f({"a": 1.5}), f.many([{"a": 1.0}, {"a": 2.0}]), f.n_evaluations, f.path
    (3.0, [2.0, 4.0], 3, 'black_box')
    >>> f.replaced({"a": 1.0, "b": 0.0}, [("a", 3.0), ("b", 5.0)], with_x=True)
    [2.0, 6.0, 2.0]

    A river model is evaluated from its internals, with the values of calling it:

    >>> from river import linear_model
    >>> lr = linear_model.LinearRegression()
    >>> lr.learn_one({"a": 1.0}, 2.0)
    >>> fast, slow = ModelFunction(lr, output="value"), ModelFunction(lr, output="value", fast_path="off")
    >>> fast.path, slow.path, fast.replaced({"a": 1.0}, [("a", 2.0)]) == slow.replaced({"a": 1.0}, [("a", 2.0)])
    ('fast', 'black_box', True)
    """

    _as_is = ("model",)  # the model explained: a clone evaluates a copy of it as it is

    def __init__(
        self,
        model: Any,
        output: str = "label",
        target_class: Any = None,
        batch: Callable[[Sequence[dict]], Sequence[Prediction]] | None = None,
        fast_path: str = "auto",
    ):
        if output not in OUTPUTS:
            raise ValueError(f"output={output!r} is not one of {OUTPUTS}; say which prediction to explain")
        if output == "proba_of" and target_class is None:
            raise ValueError("output='proba_of' needs target_class=<the class whose probability is explained>")
        self.model = model
        self.output = output
        self.target_class = target_class
        self.batch = batch
        self._fast_path = self._check_fast_path(fast_path)
        self._reset()

    @staticmethod
    def _check_fast_path(mode: str) -> str:
        if mode not in FAST_PATHS:
            raise ValueError(f"fast_path={mode!r} is not one of {FAST_PATHS}")
        return mode

    @property
    def fast_path(self) -> str:
        """``auto`` or ``off``; setting it takes effect with the next evaluation."""
        return self._fast_path

    @fast_path.setter
    def fast_path(self, mode: str) -> None:
        self._fast_path = self._check_fast_path(mode)
        self._fast = self._compile()

    def _reset(self) -> None:
        self.n_evaluations = 0
        #: calls the fast path handed back to black-box evaluation, and the last one's reason
        self.fallbacks = 0
        self.fallback_reason = ""
        self._resolve()
        self._fast = self._compile()

    def _compile(self) -> Any:
        m = self.model
        if self.fast_path == "off" or self.batch is not None:
            return None
        if not (hasattr(m, "predict_one") or hasattr(m, "predict_proba_one")):
            return None
        from .fastpath import compile_model

        return compile_model(m)

    @property
    def path(self) -> str:
        """``"fast"`` (white-box evaluation, :mod:`streamxai.core.fastpath`) or ``"black_box"``."""
        return "black_box" if self._fast is None else "fast"

    def _resolve(self) -> None:
        """Set ``_fn`` (one row) and ``_rows_fn`` (``rows -> [self._fn(r) for r in rows]``, the
        same calls in the same order, with no Python frame of ours per row); :attr:`_rows_floats`
        says whether they give floats."""
        m = check_model(self.model)
        self._rows_floats = self.output in ("value", "proba_of")
        if not (hasattr(m, "predict_one") or hasattr(m, "predict_proba_one")):
            self._rows_floats = False  # a plain callable's outputs, as they come
            one = m
        elif self.output in ("label", "value"):
            one = m.predict_one
        elif hasattr(m, "predict_proba_one"):
            one = m.predict_proba_one
        else:
            raise TypeError(f"output={self.output!r} needs predict_proba_one, which {type(m).__name__} lacks")
        if not self._rows_floats:
            self._fn = one
            self._rows_fn = lambda rows: list(map(one, rows))
        elif self.output == "value":
            self._fn = lambda x: float(one(x))
            self._rows_fn = lambda rows: [float(p) for p in map(one, rows)]
        else:
            cls = self.target_class
            self._fn = lambda x: float(one(x).get(cls, 0.0))
            self._rows_fn = lambda rows: [float(p.get(cls, 0.0)) for p in map(one, rows)]

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state.pop("_fn", None)
        state.pop("_rows_fn", None)
        state.pop("_rows_floats", None)
        state.pop("_fast", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._resolve()
        self._fast = self._compile()

    def __call__(self, x: dict) -> Prediction:
        self.n_evaluations += 1
        return self._fn(x)

    def many(self, rows: Sequence[dict]) -> list[Prediction]:
        """Predictions for ``rows``, in one call when ``batch`` was given."""
        self.n_evaluations += len(rows)
        if self.batch is not None and rows:
            return list(self.batch(rows))
        if self._fast is not None and rows and self._fast.serves_rows:
            try:
                return self._fast.rows(rows, self.output, self.target_class)
            except Exception as e:  # not recognised, or the model itself fails: ask the model
                self._fell_back(e)
        return self._rows_fn(rows)

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], with_x: bool = False) -> list[Prediction]:
        """For each ``(feature, value)`` of ``pairs``, the prediction at ``x`` with that one
        feature set to ``value`` (ICE curves, permutations); preceded by the prediction at
        ``x`` itself when ``with_x``. ``x`` is not changed."""
        fast = self._fast if self.batch is None else None
        if fast is not None:
            try:
                out = fast.replaced(x, pairs, self.output, self.target_class, with_x)
                self.n_evaluations += len(pairs) + with_x
                return out
            except Exception as e:
                self._fell_back(e)
        return self._called(x, pairs, with_x)

    def curves(self, x: dict, features: Sequence[str], grids: np.ndarray) -> np.ndarray:
        """ICE curves: for feature ``features[i]`` and each value ``grids[i, k]``, the output at ``x``
        with that feature set to that value, as floats shaped as ``grids`` (a numeric output); the rows
        of :meth:`replaced`, in order. ``x`` is not changed."""
        fast = self._fast if self.batch is None else None
        if fast is not None:
            try:
                out = fast.curves(x, features, grids, self.output, self.target_class)
                self.n_evaluations += grids.size
                return out
            except Exception as e:
                self._fell_back(e)
        preds = self._called(x, [(f, v) for f, row in zip(features, grids.tolist(), strict=True) for v in row])
        if self.batch is not None or not self._rows_floats:
            preds = [float(p) for p in preds]
        return np.array(preds, dtype=float).reshape(grids.shape)

    def coalitions(self, x: dict, order: Sequence[str], donors: Sequence[dict], first: int = 0) -> list[Prediction]:
        """The prediction at ``x``, then at the rows of a permutation chain (:func:`chain_rows`),
        in one :meth:`many` call or on the fast path; ``x`` and the donors are not changed."""
        fast = self._fast if self.batch is None else None
        if fast is not None and hasattr(fast, "coalitions"):
            try:
                out = fast.coalitions(x, order, donors, first, self.output, self.target_class)
            except Exception as e:
                self._fell_back(e)
                out = None
            if out is not None:
                self.n_evaluations += len(out)
                return out
        return self.many([x, *chain_rows(x, order, donors, first)])

    def _called(self, x: dict, pairs: Sequence[tuple[str, Any]], with_x: bool = False) -> list[Prediction]:
        """:meth:`replaced` by calling the model (or ``batch``) on the rows."""
        rows = [x] if with_x else []
        for f, v in pairs:
            r = x.copy()
            r[f] = v
            rows.append(r)
        self.n_evaluations += len(rows)
        if self.batch is not None and rows:
            return list(self.batch(rows))
        return self._rows_fn(rows)

    def share(self, fast: Any) -> None:
        """Evaluate with ``fast``, a white-box evaluator of this model that its owner shares and
        invalidates whenever the model learns; no effect when the fast path is off."""
        if self._fast is not None and fast is not None and fast.model is self.model:
            self._fast = fast

    def _fell_back(self, e: Exception) -> None:
        self.fallbacks += 1
        self.fallback_reason = f"{type(e).__name__}: {e}"
        if self._fast is not None:
            self._fast.invalidate(keep=False)  # what the failed call kept is not to be trusted


def chain_rows(x: dict, order: Sequence[str], donors: Sequence[dict], first: int = 0) -> list[dict]:
    """The rows of one permutation chain: for ``j = first .. d - 1`` (``d = len(order)``), one
    row per donor with ``order[:j]`` from ``x`` and ``order[j:]`` from the donor.

    >>> chain_rows({"a": 1, "b": 2}, ["b", "a"], [{"a": 0, "b": 0}])
    [{'a': 0, 'b': 0}, {'a': 0, 'b': 2}]
    """
    d = len(order)
    # build from the last coalition (one absent feature) back to the first, one feature
    # swapped in per step; per_step[j - first][k] has order[:j] present, donor k elsewhere
    per_step: list[list[dict]] = [[] for _ in range(d - first)]
    for donor in donors:
        row = x
        for j in range(d - 1, first - 1, -1):
            row = row.copy()
            f = order[j]
            row[f] = donor[f]
            per_step[j - first].append(row)
    out: list[dict] = []
    for step in per_step:
        out += step
    return out


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


def check_model(model: Any) -> Any:
    """``model`` if it is a river model (``predict_one`` or ``predict_proba_one``) or a callable
    ``f(x) -> prediction``; else a TypeError saying what to pass.

    >>> check_model("river.tree.HoeffdingTreeClassifier")
    Traceback (most recent call last):
    ...
    TypeError: model of type str has neither predict_one/predict_proba_one nor __call__; pass a river model or a callable f(x) -> prediction (or a ModelFunction naming the output to explain)
    """
    if not (hasattr(model, "predict_one") or hasattr(model, "predict_proba_one") or callable(model)):
        raise TypeError(f"model of type {type(model).__name__} has neither predict_one/predict_proba_one nor "
                        "__call__; pass a river model or a callable f(x) -> prediction (or a ModelFunction naming "
                        "the output to explain)")
    return model


def fresh_copy(model: Any) -> Any:
    """An untrained copy of ``model``: river's ``clone()``, or a deep copy of a model without one."""
    return model.clone() if callable(getattr(model, "clone", None)) else copy.deepcopy(model)
