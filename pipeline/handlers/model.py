"""Model path: the arrivals of a stream → predict on arrival, learn when the label is known,
hand each step to the explainers."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from streamxai.schemas import (
    CategoryTypeMismatch,
    ExplainTask,
    FeatureEvent,
    InvalidMessage,
    LabelEvent,
    LabelOutcome,
    LabelRejected,
    LabelTypeMismatch,
    Prediction,
    SchemaMismatch,
    Source,
    dumps_fields,
    origin,
    origin_headers,
    pack_tasks,
    parse_arrival,
    unpack_arrivals,
)

from ..core.budget import EventSampler
from ..core.labels import Arrival, CategoryTypeChanged, LabelJoin, Step
from ..core.prequential import NotABinaryLabel
from ..core.rng import derive_seed
from ..core.stream import ISAGE_UNIT
from ..metrics import Metrics
from ..plan import group_units, label_join
from ..settings import Settings
from .common import MessageHandler, Rejected
from .dead_letter_watch import DeadLetterWatch
from .join import index_record
from .out import Out
from .protocols import CheckpointStore, History
from .source_records import SourceRecords

__all__ = ["ModelHandler", "MAX_TASKS_BYTES", "MAX_TASKS_PER_RECORD"]

#: the most bytes of tasks one explain-tasks record carries (well under Kafka's 1 MiB default limit)
MAX_TASKS_BYTES = 256 * 1024
#: the most tasks one explain-tasks record carries: the explainer agent takes a record in one
#: turn of the event loop, so this bounds how long the worker's other agents wait
MAX_TASKS_PER_RECORD = 32


@dataclass
class _StreamState:
    join: LabelJoin
    first_partition: int
    since_checkpoint: int = 0
    #: the settings it was built under (ModelHandler.SHAPED_BY)
    built_under: dict[str, Any] | None = None
    #: the team's event id of each event of a source that waits for its label, by seq (its
    #: outcome, learned or expired, names it); as many as the join's events waiting
    event_ids: dict[int, str] = field(default_factory=dict)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"event_ids": {}, **state})  # a checkpoint of a state that kept no event ids

    @property
    def last_seq(self) -> int:
        return self.join.last_seq


@dataclass(frozen=True, slots=True)
class _Arriving:
    """One message of the arrivals topic: the event, where it came from and when it arrived."""

    event: FeatureEvent | LabelEvent
    origin: Source
    at: float | None
    #: the team's event id of a record of a source (numbered when taken: its seq is a placeholder)
    event_id: str | None = None

    @property
    def stream_id(self) -> str:
        return self.event.stream_id

    @property
    def key(self) -> tuple[tuple[str, int | None], int] | None:
        """``((topic, partition), offset)`` of where it came from (None: unknown)."""
        o = self.origin
        return None if o.offset is None else ((o.topic, o.partition), o.offset)


class _SeqGap(Exception):
    pass


class ModelHandler(MessageHandler[_Arriving, _StreamState]):
    """One per worker; keeps one model (and its events waiting for labels) per stream id it owns.

    The join itself is :class:`~streamxai.core.labels.LabelJoin`, as in the in-process
    reference: this handler validates, drops what the intake forwarded twice, and turns what the
    join did into messages. It never waits for explanations: it only produces explain tasks.
    """

    STAGE = "model"
    DUPLICATE_METRIC = "duplicates_dropped"
    STATES_GAUGE = "streams"
    REPLAYED_METRIC = "replayed_events"
    #: what label_join builds a stream's state from (and the task its labels are read as)
    SHAPED_BY = ("model", "model_params", "model_seed", "features", "categorical", "task", "output", "loss",
                 "max_label_delay", "label_timeout_s")

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        super().__init__(settings, metrics, history, checkpoints)
        self.spec = settings.stream_feature_spec  # each stream's features: its profile's (Settings.for_stream)
        self._samplers: dict[float, EventSampler] = {}
        self.dead_letter_watch = DeadLetterWatch()
        self._labels_topic = settings.topic("labels")
        self._sources = SourceRecords(settings)
        self._joins = self._sources.joins
        self._waiting = self._held = 0  # events waiting for a label, labels for their event, over all streams
        self._count_from_zero("sampled_out")

    @property
    def streams(self) -> dict[str, _StreamState]:
        """The model of every stream met so far, by stream id."""
        return self.states  # type: ignore[return-value]

    def _settings(self, stream_id: str) -> Settings:
        """The settings of ``stream_id``: the one place a stream's settings are looked up (its profile's)."""
        return self.settings.for_stream(stream_id)

    def _unpack(self, raw: bytes | None, src: Source) -> list[tuple[bytes | None, Source]] | None:
        """The messages of the intake's batch form (:func:`streamxai.schemas.unpack_arrivals`), each with
        its record's place and the origin headers of its features or labels record."""
        items = unpack_arrivals(raw, src)
        if items is None:
            return None
        return [(r, Source(src.topic, src.partition, src.offset, timestamp=src.timestamp, headers=origin_headers(c)))
                for r, c in items]

    def _combine(self, outs: list[Out]) -> list[Out]:
        """A batch's explain tasks as one record per group (:func:`streamxai.schemas.pack_tasks`), after its
        other messages: one stream per batch, so each group's tasks stay in order."""
        tasks: dict[tuple[bytes | None, int | None], list[bytes]] = {}
        rest = []
        for o in outs:
            if o.topic == "explain-tasks":
                tasks.setdefault((o.key, o.partition), []).append(o.value)
            else:
                rest.append(o)
        for (k, p), values in tasks.items():
            rest += [Out("explain-tasks", k, v, p, headers=h) for v, h in pack_tasks(values, MAX_TASKS_BYTES, MAX_TASKS_PER_RECORD)]
        return rest

    def _on_one(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        outs = super()._on_one(raw, key, src)
        self.dead_letter_watch.observe(key, outs)  # a producer whose events are mostly refused: one error
        return outs

    # Recovering -------------------------------------------------------------------------
    def _state_key(self, a: _Arriving) -> str:
        return a.stream_id

    def _fresh(self, stream_id: str) -> _StreamState:
        # a stream's groups go to consecutive explain-task partitions, so they spread over
        # workers whatever the keys hash to
        first_partition = derive_seed(0, "partition", stream_id) % self.settings.partitions
        return _StreamState(label_join(self._settings(stream_id)), first_partition,
                            built_under=self._built_under(stream_id))

    # No message opens a stream: its label may have overtaken its first event on the arrivals
    # topic, so a stream met without state is always looked up in the (shared, cached) history.

    def _load(self, a: _Arriving, key: bytes | None, src: Source) -> _StreamState:
        st = self._recover(a, key, src)
        self._count_waiting(st.join.waiting, st.join.held)
        return st

    def _forget(self, key: bytes | None, state_key: Any) -> None:
        st = self.states.get(state_key)
        if st is not None:
            self._count_waiting(-st.join.waiting, -st.join.held)  # type: ignore[attr-defined]
        super()._forget(key, state_key)

    def _replaced(self, old: _StreamState, new: _StreamState) -> None:
        self._count_waiting(new.join.waiting - old.join.waiting, new.join.held - old.join.held)

    def _replay_one(self, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-run one earlier arrival of the stream, as it was run the first time (outputs dropped)."""
        try:
            a = self._parse(raw, key, src)
        except InvalidMessage:
            return False  # it went to the dead-letter topic the first time
        if self._is_duplicate(a, st):
            return False
        a = self._numbered(a, st)
        try:
            res = self._apply(a, st, raw, key)
        except _SeqGap:
            return False  # a seq_gap dead letter the first time
        self._event_ids(a, st, res)
        if res.error is not None:
            self._replay_error()
        return res.error is None

    # MessageHandler ---------------------------------------------------------------------
    def _arrived(self, n: int) -> None:
        self.metrics.inc("events_in", n)

    def _parse(self, raw: bytes | None, key: bytes | None, src: Source) -> _Arriving:
        came = origin(src)
        if self._sources.by_topic and came.topic in self._sources.by_topic:
            m = self._sources.parse(raw, key, src, came, self.spec, max_bytes=self.settings.max_message_bytes)
            return _Arriving(m.event, came, src.timestamp, m.event_id)
        ev = parse_arrival(raw, self.spec, where=str(came), max_bytes=self.settings.max_message_bytes)
        if key != ev.stream_id.encode():
            raise SchemaMismatch(
                f"message key {key!r} is not the stream_id {ev.stream_id!r}; key every event and label by "
                "its stream_id so one stream stays on one partition, in order",
                where=str(came),
            )
        return _Arriving(ev, came, src.timestamp, getattr(ev, "event_id", None))  # a label the join sent names it

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> _Arriving:
        try:
            a = self._parse(raw, key, src)
        except InvalidMessage:
            if origin(src).topic == self._labels_topic:
                self.metrics.inc("labels_received")
                self.metrics.inc("labels_dead_lettered")
            raise
        if isinstance(a.event, LabelEvent):
            self.metrics.inc("labels_received")
        return a

    def _dead_letter(self, raw: bytes | None, key: bytes | None, err: Exception, src: Source,
                     reason: str | None = None) -> Out:
        return super()._dead_letter(raw, key, err, origin(src), reason)  # it names the features or labels record

    def _is_duplicate(self, a: _Arriving, st: _StreamState) -> bool:
        if st.join.seen(a.key):
            return True  # the intake forwarded it again (after a restart), or Kafka delivered it again
        return isinstance(a.event, FeatureEvent) and a.event_id is None and a.event.seq <= st.join.last_seq

    @staticmethod
    def _numbered(a: _Arriving, st: _StreamState) -> _Arriving:
        """A source's record numbered as the stream's next event (its place in the recorded
        order, so a replay numbers it the same); other arrivals as they are."""
        if a.event_id is None or not isinstance(a.event, FeatureEvent):
            return a
        return _Arriving(replace(a.event, seq=st.join.last_seq + 1), a.origin, a.at, a.event_id)

    def _duplicate_metric(self, a: _Arriving) -> str:
        return "duplicate_labels_dropped" if isinstance(a.event, LabelEvent) else self.DUPLICATE_METRIC

    def _apply(self, a: _Arriving, st: _StreamState, raw: bytes | None, key: bytes | None) -> Arrival:
        """The change of ``st`` by one arrival: the same when it is first processed and in a replay."""
        ev = a.event
        if isinstance(ev, LabelEvent):
            return st.join.on_label(ev.seq, ev.y, a.at, ref=(raw, key, a.origin), origin=a.key)
        if ev.seq - st.join.last_seq > self._settings(ev.stream_id).max_seq_gap:
            raise _SeqGap
        return st.join.on_features(ev.seq, ev.x, ev.y, ev.ts, a.at, origin=a.key)

    def _process(self, a: _Arriving, st: _StreamState, raw: bytes | None, key: bytes | None,
                 src: Source) -> list[Out]:
        """Join the arrival; its prediction, outcomes, refused labels and explain tasks."""
        a = self._numbered(a, st)
        ev, sid = a.event, a.stream_id
        waiting, held = st.join.waiting, st.join.held
        try:
            res = self._apply(a, st, raw, key)
        except _SeqGap:
            # accepting it would make every later event of the stream look like a duplicate
            gap = self._settings(sid).max_seq_gap
            e = SchemaMismatch(
                f"seq {ev.seq} of stream {sid!r} is {ev.seq - st.join.last_seq} beyond its last accepted "
                f"seq {st.join.last_seq}, more than max_seq_gap={gap}; number each "
                "stream's events 0, 1, 2, ... (or raise max_seq_gap)",
                where=str(a.origin),
            )
            raise Rejected(self._dead_letter(raw, key, e, src, "seq_gap")) from None
        self._count_waiting(st.join.waiting - waiting, st.join.held - held)
        k = sid.encode()
        m = self.metrics
        outs: list[Out] = []
        event_ids = self._event_ids(a, st, res)
        if isinstance(res.error, CategoryTypeChanged):  # bad input, refused before the model saw it
            refused = CategoryTypeMismatch(str(res.error), where=str(a.origin))
            refused.event_id = a.event_id  # type: ignore[attr-defined]  # a source's record: its dead letter names it
            outs.append(self._dead_letter(raw, key, refused, src))
        elif res.error is not None:
            outs.append(self._model_refused(res.error, raw, key, src, a.origin, sid, ev.seq))
            if isinstance(ev, LabelEvent):
                m.inc("labels_dead_lettered")
        if res.prediction is not None:
            p = res.prediction
            m.inc("predictions")
            if a.event_id is not None and self._joins:  # where the labels of a labels source find the event
                outs.append(index_record(a.event_id, sid, p.seq))
            outs.append(Out("predictions", k, dumps_fields(Prediction, (
                sid, p.seq, p.ts, p.y_true, _plain(p.y_pred), p.loss, p.model_version, p.position, a.event_id))))
        for o in res.outcomes:
            m.inc("labels_learned" if o.outcome == "learned" else "labels_expired")
            if o.outcome == "learned":
                m.inc("label_delay_events_sum", o.delay_events)
                if o.delay_s is not None:
                    m.inc("label_delay_seconds_sum", o.delay_s)
            outs.append(Out("predictions", k, dumps_fields(LabelOutcome, (
                sid, o.seq, o.ts, o.outcome, o.y_true, _plain(o.y_pred), o.loss, o.model_version, o.delay_events,
                o.delay_s, o.waiting, o.position, event_ids.get(o.seq)))))
        for r in res.refused:
            r_raw, r_key, r_origin = r.ref
            m.inc("labels_dead_lettered")
            if r.error is not None:  # a held label the model could not take when its event came
                outs.append(self._model_refused(r.error, r_raw, r_key, r_origin, r_origin, sid, r.seq, held=True))
                continue
            outs.append(self._dead_letter(r_raw, r_key, LabelRejected(r.message, reason=r.reason, where=str(r_origin)),
                                          r_origin, r.reason))
        if res.joined_held:
            m.inc("labels_learned")  # a label that came before its event joined it now
        outs += self._tasks(sid, st, res.steps, event_ids)
        return outs

    @staticmethod
    def _event_ids(a: _Arriving, st: _StreamState, res: Arrival) -> dict[int, str]:
        """The team's event id of each seq the outputs of arrival ``a`` name; a source's event
        that waits for its label is noted in ``st.event_ids`` until its outcome."""
        ids = {a.event.seq: a.event_id} if a.event_id is not None else {}
        waiting = st.event_ids
        if ids and res.prediction is not None and res.prediction.y_true is None:
            waiting[a.event.seq] = a.event_id  # type: ignore[assignment]
        for o in res.outcomes:
            found = waiting.pop(o.seq, None)
            if found is not None:
                ids.setdefault(o.seq, found)
        return ids

    def _model_refused(self, err: Exception, raw: bytes | None, key: bytes | None, src: Source, where: Source,
                       sid: str, seq: int, held: bool = False) -> Out:
        """The dead letter of a message the model raised on: ``label_type`` for a label a binary
        classifier cannot take, else ``model_error``. ``held``: a label that came before its
        event, refused when the event came."""
        if isinstance(err, NotABinaryLabel):
            return self._dead_letter(raw, key, LabelTypeMismatch(f"stream {sid!r} seq {seq}: {err}", where=str(where)),
                                     src)
        if held:
            err = ValueError(f"stream {sid!r} seq {seq}: the label came before its event, and when the event came "
                             f"the model could not take it ({type(err).__name__}: {err}). The event was predicted "
                             "and waits for a label the model takes")
        return self._dead_letter(raw, key, err, src, "model_error")

    def _tasks(self, sid: str, st: _StreamState, steps: list[Step], event_ids: dict[int, str]) -> list[Out]:
        """One explain task per step and group (a predict step only for groups that run iPDP)."""
        s = self._settings(sid)
        outs = []
        now = time.time()
        for step in steps:
            explain = self._sampler(sid).selected(sid, step.seq)
            if not explain:
                self.metrics.inc("sampled_out", profile=self._profile(sid))
            for g in range(self.settings.explain_groups):
                if step.kind == "predict" and not _runs_ipdp(s, g):
                    continue
                task = (sid, step.seq, step.ts, step.x, step.y, g, explain, now, step.loss, step.kind, step.position,
                        event_ids.get(step.seq))
                outs.append(Out("explain-tasks", f"{sid}/{g}".encode(), dumps_fields(ExplainTask, task),
                                (st.first_partition + g) % self.settings.partitions))
        return outs

    def _sampler(self, stream_id: str) -> EventSampler:
        """The sampler of the stream's ``sample_rate`` (one per rate)."""
        rate = self._settings(stream_id).sample_rate
        sampler = self._samplers.get(rate)
        if sampler is None:
            sampler = self._samplers[rate] = EventSampler(rate, self.settings.explain_seed)
        return sampler

    def _count_waiting(self, waiting: int, held: int) -> None:
        """Events waiting for a label and labels waiting for their event, over every stream held here."""
        if waiting:
            self._waiting += waiting
            self.metrics.gauge("labels_pending", self._waiting)
        if held:
            self._held += held
            self.metrics.gauge("labels_held", self._held)


def _runs_ipdp(s: Settings, group: int) -> bool:
    """Whether explainer group ``group`` has an iPDP unit (a feature), so predict steps concern it."""
    return "ipdp" in s.explainers and any(u != ISAGE_UNIT for u in group_units(s, group) or s.features)


def _plain(v: object) -> object:
    """numpy scalars and other numbers to JSON-native values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    item = getattr(v, "item", None)
    return item() if callable(item) else str(v)
