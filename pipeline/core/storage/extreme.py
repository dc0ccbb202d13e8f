"""Rolling minimum and maximum of one feature over a window (iPDP paper, Algorithm 2).

>>> s = ExtremeValueStorage(window=3)
>>> for v in [5.0, 1.0, 4.0, 2.0, 3.0]:
...     s.update(v)
...     print(s.min, s.max)
5.0 5.0
1.0 5.0
1.0 5.0
1.0 4.0
2.0 4.0
>>> s.n_seen, len(s) <= 2 * 3
(5, True)
"""

from __future__ import annotations

from collections import deque

from ..base import Component, check_positive_int

__all__ = ["ExtremeValueStorage"]


class ExtremeValueStorage(Component):
    """Minimum and maximum of the last ``window`` values passed to :meth:`update`.

    References
    ----------
    1. Muschalik, M., Fumagalli, F., Jagtani, R., Hammer, B., Hüllermeier, E. "iPDP: On Partial
       Dependence Plots in Dynamic Modeling Scenarios". arXiv:2306.07775.
       Implements Algorithm 2 (incremental extreme value storage).

    The maxima are kept in a deque of decreasing values (the minima in one of increasing values):
    a value older than a newer one that beats it can never be the extreme again. The front is the
    current extreme and leaves once it is ``window`` updates old; an update costs O(1) amortised.
    No random numbers are drawn.
    """

    def __init__(self, window: int = 1000):
        self.window = check_positive_int(window, "window", " (number of recent values)")
        self._reset()

    def _reset(self) -> None:
        # (arrival index, value); _hi has decreasing values, _lo increasing ones
        self._hi: deque[tuple[int, float]] = deque()
        self._lo: deque[tuple[int, float]] = deque()
        self.n_seen = 0

    def __len__(self) -> int:
        """Entries held (both deques); bounded by ``2 * window``."""
        return len(self._hi) + len(self._lo)

    def update(self, value: float) -> None:
        """Add ``value``; the oldest value leaves the window once it holds ``window`` values."""
        if value != value:  # NaN compares false with everything and would corrupt the order
            raise ValueError("cannot store NaN in an ExtremeValueStorage; drop or impute it first")
        t = self.n_seen
        self.n_seen = t + 1
        expired = t - self.window  # entries with index <= expired are outside the window
        hi = self._hi
        while hi and hi[-1][1] <= value:
            hi.pop()
        hi.append((t, value))
        if hi[0][0] <= expired:
            hi.popleft()
        lo = self._lo
        while lo and lo[-1][1] >= value:
            lo.pop()
        lo.append((t, value))
        if lo[0][0] <= expired:
            lo.popleft()

    def extremes(self, empty: float) -> tuple[float, float]:
        """``(min, max)`` of the last ``window`` values; ``(empty, empty)`` before the first.

        >>> s = ExtremeValueStorage(window=2)
        >>> s.extremes(0.5), s.update(3.0), s.extremes(0.5)
        ((0.5, 0.5), None, (3.0, 3.0))
        """
        lo = self._lo
        return (lo[0][1], self._hi[0][1]) if lo else (empty, empty)

    @property
    def max(self) -> float:
        """Largest of the last ``window`` values."""
        if not self._hi:
            raise LookupError("the storage is empty; update it before asking for the maximum")
        return self._hi[0][1]

    @property
    def min(self) -> float:
        """Smallest of the last ``window`` values."""
        if not self._lo:
            raise LookupError("the storage is empty; update it before asking for the minimum")
        return self._lo[0][1]
