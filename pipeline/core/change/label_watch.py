"""The labels of a stream: a source that stops sending them, and labels that change as a broken
source changes them.

When a label source breaks, predictions go on while learning and explanations stop, so no
explanation series can change. :class:`LabelWatch` counts the events that arrive and the labels
that come (in line or later) and finds the labels ``stopped`` when none came for ``recent``
arrivals and for more than twice the longest gap before, or when they stopped for a share of the
events; it watches the labels' values as a feature's are (:class:`~.inputs.InputMonitor`,
classes numbered in the order they first appear). The rules are specified in
docs/pages/concepts/change-events.md (Data faults).

>>> watch = LabelWatch("class")
>>> found = []
>>> for t in range(4000):
...     y = t // 200 % 2 if t < 3500 and t % 3 == 0 else None  # every third event's label, then none
...     found += watch.arrival(t, y)
>>> [(f.feature, f.what, f.start, f.seq) for f in found]
[('class', 'stopped', 3499, 3598)]
>>> found[0].detail
'no label since 3499 (100 events); before, 33% of events had one, at most 2 in a row without one'
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .inputs import InputFault, InputMonitor
from .label_links import LABEL

__all__ = ["LabelWatch", "LABEL"]

#: the classes numbered at most (a label that is an identifier would grow the state without bound)
_MAX_CLASSES = 1000
#: the fewest labels of classes other than the most common one, among the 200 recent labels and
#: among the reference's, for the order test of labels that are mostly one class (a tenth)
_SPARSE_ORDER = 20
#: labels stopped in part: fewer than this share of those the rate before gives came
_PART = 0.7
#: ... and that many binomial standard deviations fewer
_PART_Z = 4.0


class LabelWatch:
    """The labels of one stream (module docstring): ``label``, the name a finding goes by;
    ``recent``: the fewest arrivals without a label that can be a fault; ``min_labels``: the
    labels that must have come before a gap is judged."""

    # the labels of the last two stretches of ``recent`` arrivals, and of the current one (class defaults)
    _window: tuple[int, ...] = ()
    _stretch_labels = 0
    _part_reported = False

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
        # the labels' values, in the order they come: 200 recent values tell flipped labels from
        # a smooth label stream's volatile stretches (ratio up to 1.3) more surely than 100; calm
        # stretches alternate with volatile ones, so only the current reference is the measure
        self._values = InputMonitor([label], recent=200, order_margin=0.7, ordered=1.3, order_memory=0,
                                    sparse_order=_SPARSE_ORDER, flips=False)
        self._codes: dict[Any, int] = {}  # a class's number: the order of its first appearance

    def arrival(self, seq: int, y: Any = None, loss: float | None = None) -> list[InputFault]:
        """An event arrived at position ``seq``, with its label ``y`` (None: without one) and the
        model's ``loss`` on it; the faults found now."""
        self._arrivals += 1
        found = self._rate(seq) if self._arrivals % self.recent == 0 else []
        if y is not None:
            return found + self.labelled(seq, y, loss)
        self._since += 1
        if self._since == 1:
            self._start = seq
        if (self._reported or self._labels < self.min_labels or self._since < self.recent
                or self._since <= 2 * self._longest):
            return found
        self._reported = self._part_reported = True
        rate = self._labels / max(1, self._arrivals - self._since)
        gaps = f", at most {self._longest} in a row without one" if self._longest else ""
        detail = f"no label since {self._start} ({self._since} events); before, {rate:.0%} of events had one{gaps}"
        return [InputFault(self.label, "stopped", seq, self._start, (rate, 0.0), (0.0, 0.0), detail)]

    def labelled(self, seq: int, y: Any, loss: float | None = None) -> list[InputFault]:
        """Label ``y`` came at position ``seq`` (with its event or later), the model's loss on its
        event ``loss``; the faults its values show now."""
        if self._labels and not self._reported:  # a gap found a fault is not a gap the stream has
            self._longest = max(self._longest, self._since)
        self._labels += 1
        self._stretch_labels += 1
        self._since = 0
        self._reported = False
        number = self.number(y)
        if number is None:
            return []
        # labels at one class for a share of the events: a stuck source, or the world's classes
        # moved with a concept; the person paged reads both
        return [replace(f, detail=f"{f.detail}; a concept that moved the classes' shares looks alike, so check "
                                  "whether the label source or the world changed")
                if f.what == "constant" and f.partial else f
                for f in self._values.update(seq, {self.label: number}, loss)]

    def number(self, y: Any) -> float | None:
        """Label ``y`` as a number: itself if it is one, else its class's number; None for labels
        that are identifiers (more than ``_MAX_CLASSES`` classes) or unhashable."""
        if isinstance(y, int | float) and not isinstance(y, bool):
            return float(y)
        try:
            code = self._codes.get(y)
        except TypeError:  # no class (unhashable)
            return None
        if code is None:
            if len(self._codes) >= _MAX_CLASSES:
                return None
            code = self._codes[y] = len(self._codes)
        return float(code)

    def _rate(self, seq: int) -> list[InputFault]:
        """At the end of a stretch of ``recent`` arrivals: the labels stopped in part (``_PART``,
        ``_PART_Z``), once until their rate is back to nine tenths of the rate before."""
        self._window = (*self._window[-1:], self._stretch_labels)
        self._stretch_labels = 0
        span = 2 * self.recent
        came, before = sum(self._window), self._arrivals - span
        if len(self._window) < 2 or self._labels - came < self.min_labels or span < 4 * self._longest:
            return []
        rate = (self._labels - came) / before
        expected = rate * span
        if came >= 0.9 * expected:
            self._part_reported = False
            return []
        sd = math.sqrt(expected * max(0.0, 1.0 - rate))
        if self._part_reported or came >= _PART * expected or expected - came < _PART_Z * sd:
            return []
        self._part_reported = True
        start = seq - span + 1
        detail = (f"labels came for {came / span:.0%} of the last {span} events, {rate:.0%} before: a label "
                  "source that stopped for a share of the events")
        return [InputFault(self.label, "stopped", seq, start, (rate, 0.0), (came / span, 0.0), detail)]
