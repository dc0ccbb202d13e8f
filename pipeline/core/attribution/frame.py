"""One explanation's ``x``, background rows and players, with the background's numeric columns.

>>> frame = Frame({"a": 1.0, "c": "red"}, [{"a": 0.5, "c": "blue"}, {"a": 2, "c": "red"}], ["a", "c"])
>>> frame.column("a").tolist(), frame.column("c"), sorted(frame.numeric)
([0.5, 2.0], None, ['a'])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..fastpath.base import Unsupported

__all__ = ["Frame"]


class Frame:
    """One explanation's ``x``, background and players, with the background's numeric columns
    (shared by the trees of a forest)."""

    def __init__(self, x: dict, background: Sequence[dict], features: Sequence[str]):
        self.x, self.bg, self.names = x, background, list(features)
        if len(self.names) > 62:
            raise Unsupported("more than 62 features do not fit the walk's bit masks")
        self.index = {f: i for i, f in enumerate(self.names)}
        self._cols: dict[str, np.ndarray | None] = {}
        self._values: dict[str, list] = {}

    def column(self, f: str) -> np.ndarray | None:
        """The background's values of ``f`` as floats, or None when they are not all numbers."""
        if f not in self._cols:
            column = np.asarray(self.values(f)[1:])  # numbers give a numeric array, anything else not
            self._cols[f] = column.astype(float) if column.dtype.kind in "biuf" else None
        return self._cols[f]

    @property
    def numeric(self) -> set:
        """The players whose values in ``x`` and in every background point are numbers."""
        if not hasattr(self, "_numeric"):
            self._numeric = {f for f in self.names
                             if type(self.x[f]) in (int, float) and self.column(f) is not None}
        return self._numeric

    def values(self, f: str) -> list:
        """``x``'s value of ``f``, then each background point's."""
        if f not in self._values:
            self._values[f] = [self.x[f]] + [z[f] for z in self.bg]
        return self._values[f]
