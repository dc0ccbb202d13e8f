"""The join of a labels source's labels to their events, by the team's event id.

The ``event-index`` topic is keyed by event id, so one partition holds, in order, both the index
records the model handler writes as it numbers a source's event and the label records of a
labels source. A label whose id is indexed goes to ``arrivals`` as a ``label_event/v1`` of that
stream and seq; one not indexed yet is held until its index record comes. Both wait at most
``max_label_delay`` index records (the dead letter is ``unknown_event_id``). The state is a
function of the partition's records, so after a restart the handler replays the partition.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson
from streamxai.schemas import InvalidMessage, LabelEvent, LabelRejected, SchemaMismatch, Source, dumps, origin
from streamxai.schemas import origin_headers as _origin_headers
from streamxai.schemas.wire import decode

from ..ingest.mapping import event_id_of, value_at
from ..metrics import Metrics
from ..settings import Settings
from .dead_letters import dead_letter
from .history_cache import records_of
from .out import Out
from .protocols import History

__all__ = ["JoinHandler", "INDEX_HEADER", "index_record"]

#: the header that marks an index record of the event-index topic (written by the model handler)
INDEX_HEADER = "streamxai-index"


def index_record(event_id: str, stream_id: str, seq: int) -> Out:
    """The index record of event ``event_id``: stream ``stream_id``, seq ``seq``."""
    return Out("event-index", event_id.encode(), orjson.dumps({"event_id": event_id, "stream_id": stream_id, "seq": seq}),
               headers=((INDEX_HEADER, b"1"),))


class _Partition:
    __slots__ = ("index", "held", "next", "events")

    def __init__(self) -> None:
        #: event id -> (stream, seq, its number among the partition's index records)
        self.index: OrderedDict[str, tuple[str, int, int]] = OrderedDict()
        #: offset -> (event id, label, record, origin, index records seen when it came)
        self.held: OrderedDict[int, tuple[str, Any, bytes | None, Source, int]] = OrderedDict()
        self.next: int | None = None
        self.events = 0  # index records seen


class JoinHandler:
    """Index and label records of the event-index topic in, labels of their streams out.

    >>> from streamxai.settings import Settings
    >>> s = Settings(features=["a"], max_label_delay=3, sources={
    ...     "pay": {"topic": "t.pay", "kind": "features", "features": ["a"], "stream_id": "key", "event_id": "id",
    ...             "event_time": "timestamp"},
    ...     "fraud": {"topic": "t.fraud", "kind": "labels", "event_id": "id", "label": "y"}})
    >>> j, topic = JoinHandler(s), s.topic("event-index")
    >>> label = Source(topic, 0, 0, timestamp=9.0, headers=_origin_headers(Source("t.fraud", 1, 40)))
    >>> j.on_message(b'{"id": "e1", "y": 1}', b"e1", label)   # before its event: held
    []
    >>> idx = index_record("e1", "pay:a", 7)
    >>> (out,) = j.on_message(idx.value, idx.key, Source(topic, 0, 1, timestamp=9.5, headers=idx.headers))
    >>> out.topic, out.key, orjson.loads(out.value)
    ('arrivals', b'pay:a', {'schema': 'label_event/v1', 'stream_id': 'pay:a', 'seq': 7, 'y': 1, 'ts': 9.0, 'event_id': 'e1'})
    >>> for off in range(2, 6):   # an id never indexed: a dead letter once max_label_delay records passed
    ...     outs = j.on_message(b'{"id": "nope", "y": 0}' if off == 2 else idx.value, b"nope" if off == 2 else b"x",
    ...                         Source(topic, 0, off, headers=label.headers if off == 2 else idx.headers))
    >>> [(o.topic, o.reason) for o in outs]
    [('dead-letters', 'unknown_event_id')]
    """

    STAGE = "join"

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.history = history
        self.window = settings.max_label_delay
        self.labels = {s.topic: s for s in settings.source_specs.values() if s.kind == "labels"}
        self._parts: dict[int, _Partition] = {}

    # Handler ---------------------------------------------------------------------------
    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        p = src.partition or 0
        part = self._parts.get(p)
        if part is None or src.offset is None or part.next != src.offset:
            part = self._parts[p] = self._rebuilt(src)
        outs = self._take(part, raw, key, src)
        part.next = None if src.offset is None else src.offset + 1
        return outs

    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        if src is None:
            return False
        part = self._parts.get(src.partition or 0)
        return part is None or part.next != src.offset

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        for topic, p in tps:
            if topic == self.settings.topic("event-index"):
                self._parts.pop(p, None)

    # the join ------------------------------------------------------------------------------
    def _rebuilt(self, src: Source) -> _Partition:
        """The state of ``src``'s partition before ``src``: its records before it replayed."""
        part = _Partition()
        if self.history is None or not src.offset:
            return part
        start = 0
        n = 0
        for off, value, ts, headers in records_of(self.history, src.topic, src.partition, src.offset, None, start):
            if off is None:
                continue
            at = Source(src.topic, src.partition, off, timestamp=ts, headers=headers)
            self._take(part, value, None, at)
            n += 1
        self.metrics.inc("join_replayed_records", n)
        return part

    def _take(self, part: _Partition, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """One record of the partition (its event id read from the record itself: a replay has no keys)."""
        if dict(src.headers or ()).get(INDEX_HEADER) == b"1":
            try:
                entry = orjson.loads(raw or b"")
                event_id, sid, seq = str(entry["event_id"]), str(entry["stream_id"]), int(entry["seq"])
            except (ValueError, KeyError, TypeError):
                return [self._letter(raw, key, SchemaMismatch("index record does not parse; it was not written by "
                                                              "the model handler", where=str(src)), src)]
            part.events += 1
            outs = self._expire(part)
            part.index[event_id] = (sid, seq, part.events)
            part.index.move_to_end(event_id)
            for off in [o for o, h in part.held.items() if h[0] == event_id]:
                _, y, _, came, _ = part.held.pop(off)
                outs.append(self._label(event_id, y, came, src, part))
            return outs
        outs = []
        came = origin(src)
        came = Source(came.topic, came.partition, came.offset, timestamp=src.timestamp)
        spec = self.labels.get(came.topic)
        event_id = None
        try:
            if spec is None:
                raise SchemaMismatch(f"a record from {came.topic!r}, which no labels source reads", where=str(came))
            rec = decode(raw, where=str(came), max_bytes=self.settings.max_message_bytes)
            event_id = event_id_of(spec, rec)
            if event_id is None:
                value_at(spec, rec, spec.event_id, "event id: a string or integer", str(came))
                raise SchemaMismatch(f"source {spec.name!r}: event id at path {spec.event_id!r} is not a string or "
                                     "integer of 1 to 256 characters", where=str(came))
            y = value_at(spec, rec, spec.label or "", "label", str(came))
        except InvalidMessage as e:
            e.event_id = event_id  # type: ignore[attr-defined]
            return outs + [self._letter(raw, key, e, came)]
        self.metrics.inc("join_labels_in")
        if event_id in part.index:
            outs.append(self._label(event_id, y, came, src, part))
        else:
            part.held[src.offset or 0] = (event_id, y, raw, came, part.events)
            self.metrics.inc("join_labels_held")
            if len(part.held) > self.window:
                outs.append(self._unknown(*part.held.popitem(last=False)[1][:4]))
        return outs

    def _label(self, event_id: str, y: Any, came: Source, at: Source, part: _Partition) -> Out:
        """The label of ``event_id`` for its stream's arrivals; its origin: the event-index record ``at``
        that let it go (strictly later per partition, so the model handler knows a label sent twice)."""
        sid, seq, _ = part.index[event_id]
        self.metrics.inc("join_labels_joined")
        ts = came.timestamp if came.timestamp is not None else (at.timestamp or 0.0)
        return Out("arrivals", sid.encode(), dumps(LabelEvent(sid, seq, y, ts, event_id)), headers=_origin_headers(at))

    def _expire(self, part: _Partition) -> list[Out]:
        """Forget the index entries, and dead-letter the held labels, ``max_label_delay`` events old."""
        edge = part.events - self.window
        while part.index and next(iter(part.index.values()))[2] <= edge:
            part.index.popitem(last=False)
        outs = []
        while part.held and next(iter(part.held.values()))[4] <= edge:
            outs.append(self._unknown(*part.held.popitem(last=False)[1][:4]))
        return outs

    def _unknown(self, event_id: str, y: Any, raw: bytes | None, came: Source) -> Out:
        err = LabelRejected(f"label of event id {event_id!r}: no event with this id came while max_label_delay="
                            f"{self.window} events came to its event-index partition; check the id (the features "
                            "source's event_id) or raise max_label_delay", reason="unknown_event_id", where=str(came))
        err.event_id = event_id  # type: ignore[attr-defined]
        return self._letter(raw, event_id.encode(), err, came)

    def _letter(self, raw: bytes | None, key: bytes | None, err: Exception, src: Source) -> Out:
        self.metrics.inc("join_dead_letters")
        return dead_letter(raw, key, err, self.STAGE, src, max_bytes=self.settings.max_dead_letter_bytes)

