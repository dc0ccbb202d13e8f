"""Labels that arrive later: predict each event on arrival, learn it when its label comes.

>>> from river import linear_model
>>> from streamxai.core.prequential import PrequentialModel
>>> join = LabelJoin(PrequentialModel(linear_model.LinearRegression(), output="value", loss="squared"),
...                  ["a"], max_label_delay=3)
>>> r = join.on_features(0, {"a": 1.0}, None, ts=0.0)
>>> [(s.kind, s.seq, s.position) for s in r.steps], r.prediction.y_true, join.waiting
([('predict', 0, 0)], None, 1)
>>> r = join.on_features(1, {"a": 2.0}, 4.0, ts=1.0)   # a label in line: learned at once
>>> [(s.kind, s.seq, s.position) for s in r.steps], r.prediction.loss
([('both', 1, 1)], 16.0)
>>> r = join.on_label(0, 2.0)                          # event 0's label comes: learned now
>>> [(s.kind, s.seq, s.position) for s in r.steps], r.outcomes[0].outcome, r.outcomes[0].delay_events
([('learn', 0, 2)], 'learned', 1)
>>> [(f.reason, f.seq) for f in join.on_label(0, 2.0).refused]
[('label_already_labelled', 0)]
>>> for seq in range(2, 6):
...     r = join.on_features(seq, {"a": 0.5}, None, ts=float(seq))
>>> [(o.seq, o.outcome) for o in r.outcomes], join.waiting      # 2 expired: 3 later events
([(2, 'expired')], 3)
>>> join.counts["labels_learned"], join.counts["labels_in_line"], join.counts["events_expired"]
(1, 1, 1)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import Component, check_positive_int
from .pending import PendingEvents, SeqIntervals, Waiting
from .prequential import NotABinaryLabel, PrequentialModel

__all__ = ["LabelJoin", "Step", "Predicted", "Outcome", "Refused", "Arrival", "REFUSALS", "CategoryTypeChanged"]

#: why a label is refused
REFUSALS = ("label_expired", "label_unknown_seq", "label_already_labelled")


class CategoryTypeChanged(ValueError):
    """A categorical feature's value of another type than the stream's earlier values of it:
    the event is not taken (river's trees order a nominal feature's values, and would fail once they
    learned both types).

    >>> e = CategoryTypeChanged("car", 3, str); (e.feature, e.expected, e.got)
    ('car', 'str', 'int')
    """

    def __init__(self, feature: str, value: Any, expected: type):
        self.feature, self.expected, self.got = feature, expected.__name__, type(value).__name__
        super().__init__(
            f"categorical feature {feature!r} is {value!r:.100} ({self.got}), and the stream's earlier values of it "
            f"are {self.expected}s: the event is not taken. Send every value of a categorical feature of a stream as "
            f"one type (all strings or all integers); the first value the stream's model took fixed it")


@dataclass(frozen=True, slots=True)
class Step:
    """What the explainers do for one arrival at ``position``: ``predict`` (no label needed),
    ``learn`` (with label ``y``, then the model learns; ``loss`` of the prediction at arrival), or ``both``."""

    kind: str
    seq: int
    position: int
    ts: float
    x: dict[str, Any]
    y: Any = None
    loss: float | None = None


@dataclass(frozen=True, slots=True)
class Predicted:
    """The prediction made when event ``seq`` arrived; ``y_true`` and ``loss`` if its label
    came with it (or before it)."""

    seq: int
    ts: float
    y_true: Any
    y_pred: Any
    loss: float | None
    model_version: int
    position: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of an event that waited: ``learned`` (its label came) or ``expired``."""

    seq: int
    ts: float
    outcome: str
    y_true: Any
    y_pred: Any
    loss: float | None
    model_version: int
    delay_events: int
    delay_s: float | None
    waiting: int
    position: int


@dataclass(frozen=True, slots=True)
class Refused:
    """A label that cannot be joined: ``reason`` (one of :data:`REFUSALS`), ``message`` (why and what
    to do), ``ref`` (what the caller gave with it) and, for a held label the model could not take,
    the model's ``error``."""

    seq: int
    reason: str
    message: str
    ref: Any
    error: Exception | None = None


@dataclass
class Arrival:
    """What one arrival did: its :class:`Predicted`, :class:`Step` s, :class:`Outcome` s and
    :class:`Refused` labels; ``held`` the label waits for its event, ``joined_held`` a label
    that came before its event was learned with it, ``duplicate`` the event came before;
    ``error`` is set if the model raised (nothing was learned then).

    >>> from river import dummy
    >>> join = LabelJoin(PrequentialModel(dummy.NoChangeClassifier()), ["a"])
    >>> join.on_label(1, 1, ref="the label's record").held      # before its event: held
    True
    >>> r = join.on_features(0, {"a": 0.5}, None, ts=0.0)
    >>> r.prediction.position, [s.kind for s in r.steps]
    (0, ['predict'])
    >>> r = join.on_features(1, {"a": 0.7}, None, ts=1.0)     # the held label joins its event
    >>> r.joined_held, [s.kind for s in r.steps], r.prediction.y_true
    (True, ['both'], 1)
    >>> r = join.on_label(0, True)
    >>> o = r.outcomes[0]; (o.outcome, o.seq, o.delay_events, o.waiting, r.steps[0].kind)
    ('learned', 0, 1, 0, 'learn')
    >>> [(f.seq, f.reason, f.ref) for f in join.on_label(0, 1, ref="again").refused]
    [(0, 'label_already_labelled', 'again')]
    """

    prediction: Predicted | None = None
    steps: list[Step] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)
    held: bool = False
    joined_held: bool = False
    duplicate: bool = False
    error: Exception | None = None


class LabelJoin(Component):
    """One stream's model and the events that wait for their labels.

    From the stream's record of arrivals alone, it decides what the model learns and when: a
    feature event is predicted on arrival and, with its label (in line, or held from before), scored
    and learned at once (one :class:`Step` ``both``); otherwise it waits (a ``predict`` step) until
    its label comes (a ``learn`` step, scored against the prediction made at arrival) or it expires
    after ``max_label_delay`` later events or ``label_timeout_s`` of the records' own arrival time.
    A label that comes before its event is held; every label is learned, held or refused with a
    reason, and duplicates are dropped by origin. Each step gets a *position*: the newest seq plus
    the labels learned at their own arrival. The rules are in docs/pages/concepts/labels.md.

    >>> from river import dummy
    >>> join = LabelJoin(PrequentialModel(dummy.NoChangeClassifier()), ["car"], categorical=["car"])
    >>> join.on_features(0, {"car": "a"}, True, ts=0.0).error is None
    True
    >>> type(join.on_features(1, {"car": 3}, True, ts=1.0).error).__name__, join.last_seq
    ('CategoryTypeChanged', 0)
    """

    def __init__(self, model: PrequentialModel, feature_names: Sequence[str], categorical: Sequence[str] = (),
                 max_label_delay: int = 100_000, label_timeout_s: float = 0.0):
        check_positive_int(max_label_delay, "max_label_delay", " (events of a stream an event may wait)")
        if isinstance(label_timeout_s, bool) or not isinstance(label_timeout_s, (int, float)) \
                or not 0 <= label_timeout_s < math.inf:
            raise ValueError(f"label_timeout_s={label_timeout_s!r} must be a finite number >= 0 (0: off)")
        self.model = model
        self.feature_names = list(feature_names)
        self.categorical = list(categorical)
        self.max_label_delay = max_label_delay
        self.label_timeout_s = label_timeout_s
        self._reset()

    def _reset(self) -> None:
        self._model = self.model.clone()
        self._pending = PendingEvents(self.feature_names, self.categorical)
        self._learned = SeqIntervals()
        self._expired = SeqIntervals()
        self._held: dict[int, tuple[Any, float | None, Any]] = {}  # seq -> (y, arrival time, ref)
        self.last_seq = -1
        self.n_label_steps = 0
        self._clock: float | None = None
        self._origins: dict[Hashable, int] = {}  # the newest offset taken from each input partition
        self._kinds: dict[str, type] = {}  # the type of each categorical feature's values (its first value's)
        self.counts: Counter[str] = Counter()

    # what callers read -----------------------------------------------------------------
    @property
    def position(self) -> int:
        """The position of the stream's latest step (its newest seq plus the labels learned at their own arrival)."""
        return self.last_seq + self.n_label_steps

    @property
    def waiting(self) -> int:
        """Events waiting for their label."""
        return len(self._pending)

    @property
    def held(self) -> int:
        """Labels waiting for their event."""
        return len(self._held)

    @property
    def model_version(self) -> int:
        """Events the model has learned."""
        return self._model.version

    def seen(self, origin: tuple[Hashable, int] | None) -> bool:
        """Whether the message at ``origin`` (``(input partition, offset)``) was taken already."""
        return origin is not None and origin[1] <= self._origins.get(origin[0], -1)

    # arrivals --------------------------------------------------------------------------
    def on_features(self, seq: int, x: dict[str, Any], y: Any, ts: float, at: float | None = None,
                    origin: tuple[Hashable, int] | None = None) -> Arrival:
        """Event ``seq`` arrived at time ``at`` (from ``origin``) with features ``x`` and, if known,
        its label ``y``; a duplicate (seen, or a seq not after the last) changes nothing."""
        if self._take(origin) or seq <= self.last_seq:
            return Arrival(duplicate=True)
        res = Arrival()
        kinds = self._kinds
        for n in self.categorical:
            kind = kinds.get(n)
            if kind is not None and type(x[n]) is not kind:
                res.error = CategoryTypeChanged(n, x[n], kind)
                return res
        held = self._held.get(seq)
        label = y if y is not None else (held[0] if held is not None else None)
        version = self._model.version
        try:
            y_pred = self._model.predict_one(x)
            loss = None
            if label is not None:
                try:
                    loss = self._model.score(label, y_pred)
                except Exception as e:
                    if y is not None:
                        raise
                    # the held label's fault, not the event's: it is refused, the event waits for another
                    self._refuse_held(res, seq, e)
                    held = label = None
                else:
                    self._model.learn_one(x, label)
        except Exception as e:  # a model that raises on one event: nothing of it is kept
            res.error = e
            return res
        now = self._tick(at)
        self.last_seq = seq
        if len(kinds) < len(self.categorical):
            self._kinds = {n: type(x[n]) for n in self.categorical}
        position = self.position
        if held is not None:
            del self._held[seq]
            if y is None:
                self.counts["labels_learned"] += 1
                res.joined_held = True
            else:
                self._refuse(res, seq, "label_already_labelled", held[2],
                             f"seq {seq} came with its label in its feature event; send each label once, in "
                             "the feature event or as a label event")
        if label is None:
            self._pending.add(seq, x, y_pred, ts, now if at is not None else None, version)
            res.steps.append(Step("predict", seq, position, ts, x))
        else:
            self._learned.add(seq)
            if y is not None:
                self.counts["labels_in_line"] += 1
            res.steps.append(Step("both", seq, position, ts, x, label, loss))
        res.prediction = Predicted(seq, ts, label, y_pred, loss, version, position)
        self._expire(res, seq)
        return res

    def on_label(self, seq: int, y: Any, at: float | None = None, ref: Any = None,
                 origin: tuple[Hashable, int] | None = None) -> Arrival:
        """The label ``y`` of event ``seq`` arrived at time ``at`` (from ``origin``); ``ref`` comes
        back in a :class:`Refused`. A message seen before changes nothing."""
        if self._take(origin):
            return Arrival(duplicate=True)
        res = Arrival()
        self._tick(at)
        self._expire(res, None)
        try:  # before it waits for its event too: the event would be refused with it
            self._model.check_label(y)
        except NotABinaryLabel as e:
            res.error = e
            return res
        w = self._pending.get(seq)
        if w is not None:
            try:
                loss = self._model.score(y, w.y_pred)
                self._model.learn_one(w.x, y)
            except Exception as e:  # the event keeps waiting; a label the model accepts may still come
                res.error = e
                return res
            self._pending.discard(seq)
            self._learned.add(seq)
            self.n_label_steps += 1
            self.counts["labels_learned"] += 1
            position = self.position
            res.steps.append(Step("learn", seq, position, w.ts, w.x, y, loss))
            res.outcomes.append(self._outcome(w, "learned", y, loss, position))
            return res
        W, last = self.max_label_delay, self.last_seq
        if seq > last:
            if seq in self._held:
                self._refuse(res, seq, "label_already_labelled", ref,
                             f"a label for seq {seq} already waits for its event; send each label once")
            elif seq - last > W:
                self._refuse(res, seq, "label_unknown_seq", ref,
                             f"seq {seq} is {seq - last} beyond the stream's newest seq {last}, more than "
                             f"max_label_delay={W}; send labels after (or shortly before) their feature events")
            else:
                self._held[seq] = (y, self._clock if at is not None else None, ref)
                res.held = True
        elif seq <= last - W:
            self._refuse(res, seq, "label_expired", ref,
                         f"seq {seq} is more than max_label_delay={W} behind the stream's newest seq {last}: its "
                         "event has expired (or was labelled already); labels must come within max_label_delay "
                         "events (raise it to wait longer)")
        elif seq in self._learned:
            self._refuse(res, seq, "label_already_labelled", ref,
                         f"seq {seq} was already labelled (in its feature event or by an earlier label event); "
                         "send each label once")
        elif seq in self._expired:
            self._refuse(res, seq, "label_expired", ref,
                         f"event {seq} expired before its label came (max_label_delay={W}, "
                         f"label_timeout_s={self.label_timeout_s:g}); raise them to wait longer")
        else:
            self._refuse(res, seq, "label_unknown_seq", ref,
                         f"the stream has no event with seq {seq} (it was never sent, or went to the dead-letter "
                         "topic); label only events the model accepted")
        return res

    # internals -------------------------------------------------------------------------
    def _take(self, origin: tuple[Hashable, int] | None) -> bool:
        """Whether ``origin`` was seen; else it is noted as the newest of its partition."""
        if origin is None:
            return False
        if self.seen(origin):
            return True
        self._origins[origin[0]] = origin[1]
        return False

    def _tick(self, at: float | None) -> float | None:
        """Arrival time, never going back (records of several intake workers may disagree a little)."""
        if at is not None and (self._clock is None or at > self._clock):
            self._clock = at
        return self._clock

    def _timed_out(self, at: float | None) -> bool:
        return bool(self.label_timeout_s) and at is not None and self._clock is not None \
            and self._clock - at > self.label_timeout_s

    def _expire(self, res: Arrival, new_seq: int | None) -> None:
        """Expire the oldest events past either bound; refuse held labels whose event cannot come."""
        W = self.max_label_delay
        while self._pending:
            seq, at = self._pending.oldest_key()  # type: ignore[misc]
            if not ((new_seq is not None and seq <= new_seq - W) or self._timed_out(at)):
                break
            w = self._pending.pop_oldest()
            self._expired.add(w.seq)
            self.counts["events_expired"] += 1
            res.outcomes.append(self._outcome(w, "expired", None, None, self.position))
        for seq in [q for q, (_, t, _) in self._held.items() if (new_seq is not None and q < new_seq)
                    or self._timed_out(t)] if self._held else ():
            _, _, ref = self._held.pop(seq)
            why = (f"the stream went on to seq {new_seq} without it" if new_seq is not None and seq < new_seq
                   else f"it did not arrive within label_timeout_s={self.label_timeout_s:g}")
            self._refuse(res, seq, "label_unknown_seq", ref,
                         f"the label of seq {seq} came before its event, and {why}; label only events the "
                         "model accepts")
        if new_seq is not None:
            lo = self.last_seq - W + 1  # a label older than that is refused without looking
            self._learned.trim(lo)
            self._expired.trim(lo)

    def _outcome(self, w: Waiting, outcome: str, y: Any, loss: float | None, position: int) -> Outcome:
        delay_s = None if w.at is None or self._clock is None else self._clock - w.at
        return Outcome(w.seq, w.ts, outcome, y, w.y_pred, loss, w.version, self.last_seq - w.seq, delay_s,
                       len(self._pending), position)

    def _refuse(self, res: Arrival, seq: int, reason: str, ref: Any, message: str) -> None:
        self.counts[reason] += 1
        res.refused.append(Refused(seq, reason, message, ref))

    def _refuse_held(self, res: Arrival, seq: int, error: Exception) -> None:
        """The label held for ``seq`` could not be scored against its event's prediction: refused
        with the model's ``error`` (before anything was learned); the event then waits."""
        _, _, ref = self._held.pop(seq)
        res.refused.append(Refused(seq, "model_error", str(error), ref, error=error))
