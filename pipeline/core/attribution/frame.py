"""One explanation's ``x``, background rows and players, with the background's numeric columns.

>>> frame = Frame({"a": 1.0, "c": "red"}, [{"a": 0.5, "c": "blue"}, {"a": 2, "c": "red"}], ["a", "c"])
>>> frame.column("a").tolist(), frame.column("c"), sorted(frame.numeric)
([0.5, 2.0], None, ['a'])

:class:`Columns` keeps the columns from one explanation to the next, reading only the rows that
are new objects (a reservoir replaces one row at a time):

>>> kept = Columns()
>>> bg = [{"a": 0.5, "c": "blue"}, {"a": 2, "c": "red"}]
>>> Frame({"a": 1.0, "c": "red"}, bg, ["a", "c"], kept).column("a").tolist()
[0.5, 2.0]
>>> bg[1] = {"a": 3, "c": "red"}
>>> bg.append({"a": 4, "c": "red"})
>>> frame = Frame({"a": 1.0, "c": "red"}, bg, ["a", "c"], kept)
>>> frame.column("a").tolist(), frame.column("c"), kept.n_read
([0.5, 3.0, 4.0], None, 4)

and tells whether every row carries the players, looking only at the rows it has not read:

>>> kept.carry(bg, ["a", "c"]), kept.carry(bg + [{"a": 5}], ["a", "c"]), kept.carry([{"a": 1}], ["a"])
(True, False, True)
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import numpy as np

from ..fastpath.base import Unsupported

__all__ = ["Frame", "Columns"]


class Frame:
    """One explanation's ``x``, background and players, with the background's numeric columns
    (shared by the trees of a forest)."""

    def __init__(self, x: dict, background: Sequence[dict], features: Sequence[str], kept: Columns | None = None):
        self.x, self.bg, self.names = x, background, list(features)
        if len(self.names) > 62:
            raise Unsupported("more than 62 features do not fit the walk's bit masks")
        self.index = {f: i for i, f in enumerate(self.names)}
        self._cols: dict[str, np.ndarray | None] = {}
        self._values: dict[str, list] = {}
        self._table = kept.table(background, self.names) if kept is not None else None

    def column(self, f: str) -> np.ndarray | None:
        """The background's values of ``f`` as floats, or None when they are not all numbers."""
        if f not in self._cols:
            if self._table is not None:
                z, numeric = self._table
                j = self.index[f]
                self._cols[f] = z[:, j] if numeric[j] else None
            else:
                column = np.asarray(self.values(f)[1:])  # numbers give a numeric array, anything else not
                self._cols[f] = column.astype(float) if column.dtype.kind in "biuf" else None
        return self._cols[f]

    def matrix(self) -> np.ndarray:
        """The background as a ``(rows, players)`` array: the numeric columns' values, anything
        in the others (never read)."""
        if self._table is not None:
            return self._table[0]
        n = len(self.bg)
        return np.column_stack([c if (c := self.column(f)) is not None else np.zeros(n) for f in self.names])

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


class Columns:
    """The background's numeric columns, kept between explanations over the same players: a row
    that is the same object as before is unchanged (the reservoirs replace rows, never change one)."""

    def __init__(self) -> None:
        self._names: tuple = ()
        self._rows: list = []
        self._z = np.zeros((0, 0))
        self._ok = np.zeros((0, 0), dtype=bool)
        #: rows read since the start (the others were kept)
        self.n_read = 0

    def carry(self, background: Sequence[dict], names: list) -> bool:
        """Whether every row carries all of ``names``: a row kept in its place by the last
        :meth:`table` over the same players does (it was read then), any other is looked at."""
        kept = self._rows if tuple(names) == self._names else []
        players = set(names)
        if len(kept) == len(background) and all(map(operator.is_, background, kept)):
            return True
        return all(row is old or players.issubset(row)
                   for row, old in itertools.zip_longest(background, kept[:len(background)]))

    def table(self, background: Sequence[dict], names: list) -> tuple[np.ndarray, np.ndarray]:
        """``(z, numeric)``: the rows' values as floats (0 where not a number) and, per player,
        whether every row's value is a number."""
        n = len(background)
        if tuple(names) != self._names:
            self._names, self._rows = tuple(names), []
            self._z, self._ok = np.zeros((0, len(names))), np.zeros((0, len(names)), dtype=bool)
        if len(self._rows) != n:  # a reservoir that fills: the rows in place are kept
            keep = min(n, len(self._rows))
            self._rows = self._rows[:keep] + [None] * (n - keep)
            self._z = np.concatenate([self._z[:keep], np.zeros((n - keep, len(names)))])
            self._ok = np.concatenate([self._ok[:keep], np.zeros((n - keep, len(names)), dtype=bool)])
        rows, z, ok = self._rows, self._z, self._ok
        for i, row in enumerate(background):
            if row is not rows[i]:
                for j, f in enumerate(names):
                    v = row[f]
                    ok[i, j] = number = type(v) is float or np.asarray(v).dtype.kind in "biuf"
                    z[i, j] = float(v) if number else 0.0
                rows[i] = row
                self.n_read += 1
        return z, ok.all(axis=0)
