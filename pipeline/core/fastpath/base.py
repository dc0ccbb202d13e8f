"""What every white-box evaluator offers, the river versions they were verified on, and the
conversion of a river model's raw prediction into the output an explainer asks for.

>>> verified_river("0.26.1"), verified_river("0.27.0"), verified_river("0.26")
(True, False, False)
>>> to_output({"a": 0.25, "b": 0.75}, "label", None), to_output({"a": 0.25}, "proba_of", "b")
('b', 0.0)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["FastModel", "Unsupported", "VERIFIED_RIVER", "verified_river", "to_output", "tree_kind"]

#: the river releases whose internals the fast path was checked against (inclusive range):
#: tests/unit/core/fastpath/test_fastpath_*.py compare it with black-box evaluation on random models
VERIFIED_RIVER = ((0, 26, 1), (0, 26, 1))
#: calls a kept scope serves at most: its memos grow, and a model waiting for labels may not reset them
_MAX_USES = 256


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


def tree_kind(model: Any, method: str, adaptive: type, plain: type) -> str | None:
    """"hat" or "ht" if ``model``'s ``method`` is that of river's adaptive or plain Hoeffding
    tree class (a subclass that overrides it is not recognised), else None."""
    own = getattr(type(model), method, None)
    if own is getattr(adaptive, method):
        return "hat"
    if own is getattr(plain, method):
        return "ht"
    return None


def to_output(raw: Any, output: str, target_class: Any) -> Any:
    """A classifier's ``predict_proba_one`` dict as ``output``: ``label`` as ``predict_one`` picks
    it (the first class of largest probability, None for an empty dict), ``value`` that as a float,
    ``proba`` the dict, ``proba_of`` the probability of ``target_class``."""
    if output == "proba":
        return raw
    if output == "proba_of":
        return float(raw.get(target_class, 0.0))
    label = max(raw, key=raw.get) if raw else None
    return float(label) if output == "value" else label  # type: ignore[arg-type]


class FastModel:
    """Evaluates one river model as its own prediction methods would, from its internals.

    ``rows(rows, output, target_class)`` gives the model's output for each row;
    ``replaced(x, pairs, output, target_class, with_x)`` for each ``(feature, value)`` in ``pairs``
    the output at ``x`` with that one feature set to ``value``, preceded by the output at ``x`` when
    ``with_x``. Neither changes the model or the rows.

    A call computes what its rows share once, in a *scope* (:meth:`new_call`) that lives for one
    call, or, with ``shared = True``, until :meth:`invalidate` (called after every ``learn_one``),
    the model's :meth:`token` changes, or the row ``x`` changes in place. Each part is computed with
    river's floating-point operations in river's order, so values are the black-box values bit for
    bit; anything not recognised raises :class:`Unsupported` (or another exception), and the caller
    evaluates that call as a black box."""

    #: what the evaluator recognised (for logs and metrics)
    name = "fast"
    #: False: rows in general are evaluated faster by the model itself; only :meth:`replaced` runs here
    serves_rows = True
    def __init__(self, model: Any):
        self.model = model
        self.shared = False
        self.invalidate()

    def invalidate(self, keep: bool = True) -> None:
        """Forget the kept scope (the model has learnt, or may have); a family may keep parts it
        checks before reuse, unless ``keep`` is false (a call failed)."""
        self._call: Any = None
        self._uses = 0
        self._keys: set | None = None
        self._token: Any = None
        self._x: dict | None = None
        self._x_copy: dict | None = None
        self._x_keys: list | None = None  # x's key order when its scope was kept

    def new_call(self, keys: Any) -> Any:  # pragma: no cover - overridden
        """The scope of a call over rows with features ``keys``: ``row(r)`` and
        ``replaced(x, feature, value)`` give results for :meth:`output`."""
        raise NotImplementedError

    def token(self) -> Any:
        """A cheap value that changes whenever the model learns (None: no such value)."""
        return None

    def output(self, call: Any, result: Any, output: str, target_class: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def _scope(self, keys: Any) -> Any:
        call = self._call
        if call is not None and keys == self._keys and self.token() == self._token and self._uses < _MAX_USES:
            self._uses += 1
            return call
        call = self.new_call(keys)
        if self.shared:
            self._call, self._keys, self._token, self._uses = call, set(keys), self.token(), 1
        return call

    def _scope_of(self, x: dict) -> Any:
        """The scope of a call on rows that differ from ``x`` in one feature."""
        # the scope keeps parts of x, in x's key order (a linear model sums in it): x changed in
        # place is new values or the same ones reordered (a dict's == ignores the order)
        if self.shared and (x is not self._x or x != self._x_copy or list(x) != self._x_keys):
            if x is self._x:  # by identity: x changed in place
                self.invalidate()
            elif self._call is not None:
                # another row: the kept scope drops the parts of the row it holds, which is watched
                # no more (it need not be the last row given: that one may have failed before use)
                forget = getattr(self._call, "forget_row", None)
                if forget is not None:
                    forget()
            self._x, self._x_copy, self._x_keys = x, dict(x), list(x)
        return self._scope(x.keys())

    def outputs(self, call: Any, results: list, output: str, target_class: Any) -> list:
        """:meth:`output` of each result (a family may convert them all at once)."""
        return [self.output(call, r, output, target_class) for r in results]

    def rows(self, rows: Sequence[dict], output: str, target_class: Any) -> list:
        keys = rows[0].keys()
        call = self._scope(keys)
        for r in rows:
            if r.keys() != keys:
                raise Unsupported("the rows of one call carry different features")
        batch = getattr(call, "rows_batch", None)
        results = batch(rows) if batch is not None else [call.row(r) for r in rows]
        return self.outputs(call, results, output, target_class)

    def curves(self, x: dict, features: Sequence[str], grids: Any, output: str, target_class: Any) -> Any:
        """:meth:`replaced` of every ``(features[i], grids[i, k])``, as a float array of
        ``grids``' shape (a family may compute the curves as arrays)."""
        pairs = [(f, v) for f, row in zip(features, grids.tolist(), strict=True) for v in row]
        return np.array(self.replaced(x, pairs, output, target_class), dtype=float).reshape(grids.shape)

    def replaced(self, x: dict, pairs: Sequence[tuple[str, Any]], output: str, target_class: Any,
                 with_x: bool = False) -> list:
        call = self._scope_of(x)
        for f, _ in pairs:
            if f not in x:
                raise Unsupported(f"feature {f!r} is not in the row")
        batch = getattr(call, "replaced_batch", None)
        if batch is not None:
            results = batch(x, pairs)
        else:
            replaced = call.replaced
            results = [replaced(x, f, v) for f, v in pairs]
        if with_x:
            results.insert(0, call.row(x))
        return self.outputs(call, results, output, target_class)
