"""Labels that stop coming: the gap since the stream's last label against the gaps it had before.

A model learns only from labelled events, and iPFI and iSAGE explain only those: when a label
source breaks, predictions go on while learning and explanations stop, and no explanation series
can change. :class:`LabelWatch` counts the events that arrive and the labels that come (in line or
later) and finds the labels stopped when no label came for ``recent`` arrivals and for more than
twice the longest gap between two labels before, once ``min_labels`` labels came: a stream whose
labels come in batches has long gaps, and its watch waits longer.

>>> watch = LabelWatch("class")
>>> found = []
>>> for t in range(4000):
...     found += watch.arrival(t, labelled=t < 3500 and t % 3 == 0)  # every third event's label, then none
>>> [(f.feature, f.what, f.start, f.seq) for f in found]
[('class', 'stopped', 3499, 3598)]
>>> found[0].detail
'no label since 3499 (100 events); before, 33% of events had one, at most 2 in a row without one'
"""

from __future__ import annotations

from .inputs import InputFault

__all__ = ["LabelWatch", "LABEL"]

#: the name the labels' fault goes by, where a fault of a feature names the feature
LABEL = "label"


class LabelWatch:
    """The labels of one stream (module docstring): ``label``, the name a finding goes by;
    ``recent``: the fewest arrivals without a label that can be a fault; ``min_labels``: the
    labels that must have come before a gap is judged."""

    def __init__(self, label: str = LABEL, recent: int = 100, min_labels: int = 1000):
        self.label = label
        self.recent = recent
        self.min_labels = min_labels
        self._arrivals = 0
        self._labels = 0
        self._since = 0  # arrivals since the last label
        self._longest = 0  # the longest run of arrivals without a label, between two labels
        self._start = -1  # the position of the first arrival since the last label
        self._reported = False  # the current gap was found a fault

    def arrival(self, seq: int, labelled: bool = False) -> list[InputFault]:
        """An event arrived at position ``seq`` (``labelled``: with its label); the fault found
        now, if any (once a gap)."""
        self._arrivals += 1
        if labelled:
            self.labelled()
            return []
        self._since += 1
        if self._since == 1:
            self._start = seq
        if (self._reported or self._labels < self.min_labels or self._since < self.recent
                or self._since <= 2 * self._longest):
            return []
        self._reported = True
        rate = self._labels / max(1, self._arrivals - self._since)
        gaps = f", at most {self._longest} in a row without one" if self._longest else ""
        detail = f"no label since {self._start} ({self._since} events); before, {rate:.0%} of events had one{gaps}"
        return [InputFault(self.label, "stopped", seq, self._start, (rate, 0.0), (0.0, 0.0), detail)]

    def labelled(self) -> None:
        """A label came (with its event or later)."""
        if self._labels and not self._reported:  # a gap found a fault is not a gap the stream has
            self._longest = max(self._longest, self._since)
        self._labels += 1
        self._since = 0
        self._reported = False
