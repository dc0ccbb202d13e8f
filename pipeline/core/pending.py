"""Compact stores for the label join: the events of a stream that wait for their label, and
which seqs of a stream were learned or expired.

>>> p = PendingEvents(["a", "b", "c"], categorical=["c"])
>>> for seq in range(4):
...     p.add(seq, {"a": seq / 2, "b": 1.0, "c": "red"}, y_pred=seq % 2, ts=10.0 + seq, at=None, version=seq)
>>> w = p.pop(2); (w.seq, w.x, w.y_pred, w.version, len(p))
(2, {'a': 1.0, 'b': 1.0, 'c': 'red'}, 0, 2, 3)
>>> p.oldest().seq, p.pop(7), [p.pop_oldest().seq for _ in range(3)], len(p)
(0, None, [0, 1, 3], 0)

>>> s = SeqIntervals()
>>> for q in (0, 1, 2, 5, 4, 9):
...     s.add(q)
>>> s.intervals(), 3 in s, 4 in s
([(0, 2), (4, 5), (9, 9)], False, True)
>>> s.trim(5); s.intervals()
[(5, 5), (9, 9)]
"""

from __future__ import annotations

import bisect
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["PendingEvents", "Waiting", "SeqIntervals"]

_COMPACT_AT = 1024  # rows removed before the arrays are compacted (amortised O(1) per event)


@dataclass(frozen=True, slots=True)
class Waiting:
    """One event that waited for its label: ``x``, the prediction made at arrival ``y_pred`` by
    the model of version ``version``, the event's ``ts`` and its arrival time ``at`` (None: unknown)."""

    seq: int
    x: dict[str, Any]
    y_pred: Any
    ts: float
    at: float | None
    version: int


class PendingEvents:
    """The events of one stream that wait for their label, in arrival order, by column in typed
    arrays. A label removes a row anywhere (marked), expiry the oldest; compaction, once the removed
    rows outnumber the waiting ones (and at least 1,024), keeps memory within twice the waiting events."""

    def __init__(self, feature_names: Iterable[str], categorical: Iterable[str] = ()):
        self.feature_names = list(feature_names)
        cats = set(categorical)
        self.categorical = [f for f in self.feature_names if f in cats]
        self._numeric = [f for f in self.feature_names if f not in cats]
        #: where each feature's value is kept: (name, categorical?, index in its row)
        self._layout = [(f, f in cats, (self.categorical if f in cats else self._numeric).index(f))
                        for f in self.feature_names]
        self._seq = array("q")
        self._num = array("d")
        self._cat: list[Any] = []
        self._ts = array("d")
        self._at = array("d")
        self._version = array("q")
        self._y_pred: list[Any] = []
        self._alive = bytearray()
        self._head = 0  # rows before it are all removed
        self._n = 0
        self._removed = 0

    def __len__(self) -> int:
        return self._n

    def __contains__(self, seq: int) -> bool:
        return self._row(seq) >= 0

    def add(self, seq: int, x: dict[str, Any], y_pred: Any, ts: float, at: float | None, version: int) -> None:
        """Append the event ``seq`` (larger than every seq added before)."""
        if self._seq and seq <= self._seq[-1]:
            raise ValueError(f"seq {seq} is not after the last waiting seq {self._seq[-1]}")
        self._seq.append(seq)
        self._num.extend([float(x[f]) for f in self._numeric])
        if self.categorical:
            self._cat.extend([x[f] for f in self.categorical])
        self._ts.append(ts)
        self._at.append(math.nan if at is None else at)
        self._version.append(version)
        self._y_pred.append(y_pred)
        self._alive.append(1)
        self._n += 1

    def get(self, seq: int) -> Waiting | None:
        """The waiting event ``seq`` (None if it does not wait), left in place."""
        row = self._row(seq)
        return None if row < 0 else self._waiting(row)

    def pop(self, seq: int) -> Waiting | None:
        """Remove and return the waiting event ``seq`` (None if it does not wait)."""
        row = self._row(seq)
        if row < 0:
            return None
        w = self._waiting(row)
        self._remove(row)
        return w

    def discard(self, seq: int) -> None:
        """Remove the waiting event ``seq``, if it waits."""
        row = self._row(seq)
        if row >= 0:
            self._remove(row)

    def oldest(self) -> Waiting | None:
        """The event that has waited longest (None if none waits)."""
        return self._waiting(self._head) if self._n else None

    def oldest_key(self) -> tuple[int, float | None] | None:
        """``(seq, arrival time)`` of the event that has waited longest (None if none waits)."""
        if not self._n:
            return None
        at = self._at[self._head]
        return self._seq[self._head], None if math.isnan(at) else at

    def pop_oldest(self) -> Waiting:
        w = self._waiting(self._head)
        self._remove(self._head)
        return w

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (checkpointed) without the removed rows."""
        if self._removed:
            self._compact()
        return self.__dict__

    # internals --------------------------------------------------------------------------
    def _row(self, seq: int) -> int:
        i = bisect.bisect_left(self._seq, seq, self._head)
        return i if i < len(self._seq) and self._seq[i] == seq and self._alive[i] else -1

    def _waiting(self, row: int) -> Waiting:
        k, c = len(self._numeric), len(self.categorical)
        nums = self._num[row * k:(row + 1) * k]
        if not c:  # the features in order are the numeric ones
            x = dict(zip(self.feature_names, nums, strict=True))
        else:
            cats = self._cat[row * c:(row + 1) * c]
            x = {f: (cats if is_cat else nums)[j] for f, is_cat, j in self._layout}
        at = self._at[row]
        return Waiting(self._seq[row], x, self._y_pred[row], self._ts[row], None if math.isnan(at) else at,
                       self._version[row])

    def _remove(self, row: int) -> None:
        self._alive[row] = 0
        self._y_pred[row] = None  # let the prediction go now
        self._n -= 1
        self._removed += 1
        while self._head < len(self._alive) and not self._alive[self._head]:
            self._head += 1
        if self._removed >= _COMPACT_AT and self._removed > self._n:
            self._compact()

    def _compact(self) -> None:
        keep = [i for i in range(self._head, len(self._alive)) if self._alive[i]]
        k, c = len(self._numeric), len(self.categorical)
        self._seq = array("q", (self._seq[i] for i in keep))
        self._num = array("d", (v for i in keep for v in self._num[i * k:(i + 1) * k]))
        self._cat = [v for i in keep for v in self._cat[i * c:(i + 1) * c]]
        self._ts = array("d", (self._ts[i] for i in keep))
        self._at = array("d", (self._at[i] for i in keep))
        self._version = array("q", (self._version[i] for i in keep))
        self._y_pred = [self._y_pred[i] for i in keep]
        self._alive = bytearray(b"\x01" * len(keep))
        self._head = 0
        self._removed = 0


class SeqIntervals:
    """A set of seqs as sorted, disjoint, non-adjacent closed intervals ``[start, end]``."""

    def __init__(self) -> None:
        self._starts = array("q")
        self._ends = array("q")

    def __contains__(self, seq: int) -> bool:
        i = bisect.bisect_right(self._starts, seq) - 1
        return i >= 0 and seq <= self._ends[i]

    def __len__(self) -> int:
        """The number of intervals (not of seqs)."""
        return len(self._starts)

    def add(self, seq: int) -> None:
        starts, ends = self._starts, self._ends
        i = bisect.bisect_right(starts, seq) - 1  # the interval starting at or before seq
        if i >= 0 and seq <= ends[i]:
            return
        joins_left = i >= 0 and ends[i] == seq - 1
        joins_right = i + 1 < len(starts) and starts[i + 1] == seq + 1
        if joins_left and joins_right:
            ends[i] = ends[i + 1]
            del starts[i + 1], ends[i + 1]
        elif joins_left:
            ends[i] = seq
        elif joins_right:
            starts[i + 1] = seq
        else:
            starts.insert(i + 1, seq)
            ends.insert(i + 1, seq)

    def trim(self, lo: int) -> None:
        """Forget the seqs below ``lo``."""
        if not self._starts or self._starts[0] >= lo:
            return
        i = bisect.bisect_right(self._ends, lo - 1)  # intervals ending before lo
        if i:
            del self._starts[:i], self._ends[:i]
        if self._starts and self._starts[0] < lo:
            self._starts[0] = lo

    def intervals(self) -> list[tuple[int, int]]:
        return list(zip(self._starts, self._ends, strict=True))
