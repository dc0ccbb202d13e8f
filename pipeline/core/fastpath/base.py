"""What every white-box evaluator offers, the river versions they were verified on, and the
conversion of a river model's raw prediction into the output an explainer asks for.

A white-box evaluator (:class:`FastModel`) reads the model's internals *at the time of each
call* and keeps nothing between calls, so it follows every ``learn_one`` of the model without
being told. Within one call it computes each part of a prediction that does not depend on
the row once (a leaf's naive Bayes factor of a feature value, a linear model's partial sums)
and repeats exactly the floating-point operations of river's own code in river's order, so
the values are the black-box values bit for bit. Anything it does not recognise -- a node
type, a splitter, a leaf model, a river version -- raises :class:`Unsupported` (or any other
exception), and the caller evaluates that call as a black box, which gives the same values,
or raises the same error.

>>> verified_river("0.26.1"), verified_river("0.27.0"), verified_river("0.26")
(True, False, False)
>>> to_output({"a": 0.25, "b": 0.75}, "label", None), to_output({"a": 0.25}, "proba_of", "b")
('b', 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FastModel", "Unsupported", "VERIFIED_RIVER", "verified_river", "to_output"]

#: the river releases whose internals the fast path was checked against (inclusive range):
#: tests/unit/test_fastpath_*.py compare it with black-box evaluation on random models
VERIFIED_RIVER = ((0, 26, 1), (0, 26, 1))


class Unsupported(Exception):
    """The model (or a part of it met during a call) is not one the fast path knows."""


def verified_river(version: str) -> bool:
    """True if river ``version`` (``major.minor.patch``) lies in :data:`VERIFIED_RIVER`."""
    parts = version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return False
    v = tuple(int(p) for p in parts)
    lo, hi = VERIFIED_RIVER
    return lo <= v <= hi


def to_output(raw: Any, output: str, target_class: Any) -> Any:
    """A classifier's ``predict_proba_one`` dict as ``output`` (what ``ModelFunction`` would
    return calling the model itself): ``label`` as ``Classifier.predict_one`` picks it (the
    first class of largest probability, ``None`` for an empty dict), ``value`` that as a
    float, ``proba`` the dict, ``proba_of`` the probability of ``target_class``."""
    if output == "proba":
        return raw
    if output == "proba_of":
        return float(raw.get(target_class, 0.0))
    label = max(raw, key=raw.get) if raw else None
    return float(label) if output == "value" else label  # type: ignore[arg-type]


class FastModel:
    """Evaluates one river model as its own prediction methods would, from its internals.

    ``rows(rows, output, target_class)`` gives the model's output for each row;
    ``replaced(x, pairs, output, target_class)`` for each ``(feature, value)`` in ``pairs``
    the output at ``x`` with that one feature set to ``value`` (iPDP's ICE curves, iPFI's
    permutations), which white-box evaluators compute from shared parts of ``x``. Neither
    changes the model or the rows.
    """

    #: what the evaluator recognised (for logs and metrics)
    name = "fast"

    def rows(self, rows: Sequence[dict], output: str, target_class: Any) -> list:  # pragma: no cover
        raise NotImplementedError

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], output: str, target_class: Any) -> list:
        """Default: build the rows and evaluate them with :meth:`rows`."""
        rows = []
        for f, v in pairs:
            r = x.copy()
            r[f] = v
            rows.append(r)
        return self.rows(rows, output, target_class)
