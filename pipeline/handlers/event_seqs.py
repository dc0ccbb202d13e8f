"""Which event a stream explained at each of its positions, for the change messages."""

from __future__ import annotations

import bisect
from array import array

__all__ = ["EventSeqs"]


class EventSeqs:
    """The seq of the event explained at each report position of one stream, from the first
    position where the two differ on; older positions are dropped with :meth:`forget_before`.

    The change test runs on a stream's positions, while change events also name the events
    explained there; every explanation names both, so the handler keeps them for the positions
    its test may still cut at. While positions are seqs (labels in line) nothing is kept.

    >>> seqs = EventSeqs()
    >>> for position, seq in [(8, 8), (9, 9), (11, 10), (14, 4), (16, 12)]:
    ...     seqs.add(position, seq)
    >>> seqs.at(9), seqs.at(14), seqs.at(15)     # in line up to 9; 15 was no report
    (9, 4, None)
    >>> seqs.after(11), seqs.after(9)            # the event after the one explained there
    (11, 10)
    >>> seqs.forget_before(14); seqs.at(11), seqs.at(16), len(seqs)
    (None, 12, 2)
    """

    __slots__ = ("since", "positions", "seqs")

    def __init__(self) -> None:
        #: the first position whose seq differs from it (None: none yet; before it they are equal)
        self.since: int | None = None
        self.positions = array("q")
        self.seqs = array("q")

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, position: int, seq: int) -> None:
        """The report at ``position`` ended with event ``seq`` (positions come in order)."""
        if self.since is None:
            if position == seq:
                return
            self.since = position
        if self.positions and position <= self.positions[-1]:
            return  # another series' message of the same report
        self.positions.append(position)
        self.seqs.append(seq)

    def at(self, position: int) -> int | None:
        """The seq of the event explained at ``position`` (None: no report there, or forgotten)."""
        if self.since is None:
            return position
        if position < self.since:
            return position
        i = bisect.bisect_left(self.positions, position)
        return self.seqs[i] if i < len(self.positions) and self.positions[i] == position else None

    def after(self, position: int) -> int | None:
        """The event after the one explained at ``position``: where a series' regime that begins
        right after its report at ``position`` begins."""
        seq = self.at(position)
        return None if seq is None else seq + 1

    def forget_before(self, position: int) -> None:
        """Drop the positions before ``position`` (no cut can be placed there any more)."""
        i = bisect.bisect_left(self.positions, position)
        if i:
            del self.positions[:i]
            del self.seqs[:i]
