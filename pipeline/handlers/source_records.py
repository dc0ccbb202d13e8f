"""The records of the sources (``[sources.<name>]``) at the intake and at the model handler.

The intake forwards a source's record to ``arrivals`` keyed by the stream id it finds in it
(:meth:`SourceRecords.arrival`), bytes unchanged, with the origin headers and, for a source whose
event time is the record timestamp, that timestamp (:data:`ORIGIN_TIMESTAMP`): the arrivals
record has its own. A record without a stream id is a dead letter of the intake. The model
handler reads the record back with :meth:`SourceRecords.parse` and numbers it
(:meth:`~streamxai.ingest.mapping.MappedEvent.numbered`) when it takes it. A labels source's
record goes to the ``event-index`` topic keyed by its event id, for the join
(:mod:`streamxai.handlers.join`).

>>> from streamxai.settings import Settings
>>> s = Settings(sources={"pay": {"topic": "team.pay", "kind": "features", "features": ["amount"],
...     "stream_id": "account", "event_id": "txn_id", "event_time": "timestamp"}}, features=["amount"])
>>> rec = SourceRecords(s)
>>> (out,) = rec.arrival(b'{"account": "a1", "txn_id": 7, "amount": 2}', None, Source("team.pay", 0, 3, timestamp=5.0))
>>> out.topic, out.key, out.headers[-1]
('arrivals', b'pay:a1', ('streamxai-origin-timestamp', b'5.0'))
>>> m = rec.parse(b'{"account": "a1", "txn_id": 7, "amount": 2}', b"pay:a1", Source("arrivals", 0, 9, headers=out.headers),
...               Source("team.pay", 0, 3), s.stream_feature_spec, max_bytes=1000)
>>> m.event_id, m.event.ts, m.event.x
('7', 5.0, {'amount': 2.0})
"""

from __future__ import annotations

from collections.abc import Callable

from streamxai.schemas import BadValue, FeatureSpec, InvalidMessage, SchemaMismatch, Source, origin_headers
from streamxai.schemas.wire import decode

from ..ingest.mapping import MappedEvent, event_id_of, map_record, stream_of, value_at
from ..settings import Settings
from ..sources import RECORD_TIMESTAMP, SourceSpec
from .dead_letters import dead_letter
from .out import Out

__all__ = ["SourceRecords", "ORIGIN_TIMESTAMP"]

#: the header with the timestamp (seconds) of the source record an arrivals record forwards
ORIGIN_TIMESTAMP = "streamxai-origin-timestamp"


class SourceRecords:
    """The sources of ``settings`` by topic: what the intake and the model handler do with their records."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.by_topic: dict[str, SourceSpec] = {s.topic: s for s in settings.source_specs.values()}

    def of(self, topic: str) -> SourceSpec | None:
        return self.by_topic.get(topic)

    def arrival(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The arrivals record of one record of a source, keyed by its stream id; a dead letter if it has none."""
        spec = self.by_topic[src.topic]
        if spec.kind == "labels":
            return self._label(spec, raw, key, src)
        rec = None
        try:
            rec = decode(raw, where=str(src), max_bytes=self.settings.max_message_bytes)
            sid = stream_of(spec, rec, key, where=str(src))
        except InvalidMessage as e:
            e.event_id = event_id_of(spec, rec)  # type: ignore[attr-defined]
            return [dead_letter(raw, key, e, "intake", src, max_bytes=self.settings.max_dead_letter_bytes)]
        headers = origin_headers(src)
        if spec.event_time == RECORD_TIMESTAMP and src.timestamp is not None:
            headers += ((ORIGIN_TIMESTAMP, repr(float(src.timestamp)).encode()),)
        return [Out("arrivals", sid.encode(), raw or b"", headers=headers)]

    @property
    def joins(self) -> bool:
        """Whether a labels source reads labels that find their events by event id."""
        return any(s.kind == "labels" for s in self.by_topic.values())

    def _label(self, spec: SourceSpec, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """A labels source's record for the event-index topic, keyed by its event id (the join finds its stream)."""
        rec = None
        try:
            rec = decode(raw, where=str(src), max_bytes=self.settings.max_message_bytes)
            event_id = event_id_of(spec, rec)
            if event_id is None:
                value_at(spec, rec, spec.event_id, "event id: a string or integer", str(src))
                raise BadValue(f"source {spec.name!r}: event id at path {spec.event_id!r} is not a string or integer "
                               "of 1 to 256 characters", where=str(src))
        except InvalidMessage as e:
            return [dead_letter(raw, key, e, "intake", src, max_bytes=self.settings.max_dead_letter_bytes)]
        return [Out("event-index", event_id.encode(), raw or b"", headers=origin_headers(src))]

    def parse(self, raw: bytes | None, key: bytes | None, src: Source, came: Source,
              spec_of: Callable[[str], FeatureSpec], *, max_bytes: int) -> MappedEvent:
        """The arrivals record at ``src`` that forwards the record at ``came`` (a source's) as a
        :class:`MappedEvent`; ``InvalidMessage`` if it does not fit its source's mapping."""
        spec = self.by_topic[came.topic]
        where = str(came)
        mapped = map_record(spec, raw, _original_key(spec, key), _origin_timestamp(src), spec_of, where=where,
                            max_bytes=max_bytes)
        if key != mapped.event.stream_id.encode():
            raise SchemaMismatch(f"arrivals key {key!r} is not the stream id {mapped.event.stream_id!r} of the record; "
                                 "it was not forwarded by the intake", where=where)
        return mapped


def _original_key(spec: SourceSpec, key: bytes | None) -> bytes | None:
    """The record key a stream id ``<name>:<key>`` was made of (the intake keys arrivals by the stream id)."""
    prefix = f"{spec.name}:".encode()
    return key[len(prefix):] if key is not None and key.startswith(prefix) else None


def _origin_timestamp(src: Source) -> float | None:
    found = dict(src.headers or ())
    try:
        return float(found[ORIGIN_TIMESTAMP])
    except (KeyError, ValueError):
        return src.timestamp
