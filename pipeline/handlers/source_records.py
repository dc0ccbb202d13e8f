"""The records of the sources (``[sources.<name>]``) at the intake and at the model handler.

The intake forwards a source's record to ``arrivals`` keyed by the stream id it finds in it
(:meth:`SourceRecords.arrival`), with the origin headers and, when the event time is the record
timestamp, that timestamp (:data:`ORIGIN_TIMESTAMP`). A registry-framed record is decoded at the
intake and forwarded as JSON, so the model handler and its replays never need the registry. The
model handler reads the record back with :meth:`SourceRecords.parse`; a labels source's record
goes to ``event-index`` keyed by its event id, for the join (:mod:`streamxai.handlers.join`).
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
from decimal import Decimal
from typing import Any

import orjson
from streamxai.schemas import (
    BadValue,
    FeatureSpec,
    InvalidMessage,
    MalformedMessage,
    OversizedMessage,
    SchemaMismatch,
    Source,
    origin_headers,
)
from streamxai.schemas.wire import decode

from ..ingest.mapping import MappedEvent, event_id_of, map_record, stream_of, value_at
from ..ingest.registry import REGISTRY_FORMATS, RegistryDecoder
from ..metrics import Metrics
from ..settings import Settings
from ..sources import RECORD_TIMESTAMP, SourceSpec
from .dead_letters import dead_letter
from .out import Out

__all__ = ["SourceRecords", "ORIGIN_TIMESTAMP"]

#: the header with the timestamp (seconds) of the source record an arrivals record forwards
ORIGIN_TIMESTAMP = "streamxai-origin-timestamp"


class SourceRecords:
    """The sources of ``settings`` by topic: what the intake and the model handler do with their records."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics
        self.by_topic: dict[str, SourceSpec] = {s.topic: s for s in settings.source_specs.values()}
        self._registry: RegistryDecoder | None = None

    @property
    def registry(self) -> RegistryDecoder:
        """The decoder of the registry-framed sources' records (made on first use)."""
        if self._registry is None:
            s = self.settings
            self._registry = RegistryDecoder(s.schema_registry_url, username=s.schema_registry_username,
                                             password=s.schema_registry_password.reveal(),
                                             cafile=s.schema_registry_cafile, metrics=self.metrics)
        return self._registry

    def _record(self, spec: SourceSpec, raw: bytes | None, src: Source) -> tuple[dict[str, Any], bytes]:
        """The record ``raw`` of ``spec`` decoded, and the bytes that forward it (JSON): ``raw``
        itself for a JSON source, the decoded record for a registry-framed one (a
        :class:`~streamxai.ingest.registry.RegistryUnreachable` while the registry does not answer)."""
        where, limit = str(src), self.settings.max_message_bytes
        if spec.format not in REGISTRY_FORMATS:
            return decode(raw, where=where, max_bytes=limit), raw or b""
        if raw is not None and len(raw) > limit:
            raise OversizedMessage(f"message is {len(raw)} bytes, over the limit of {limit}; split it or raise "
                                   "max_message_bytes", where=where)
        rec = self.registry.decode(spec, raw, where=where)
        if not isinstance(rec, dict):
            raise SchemaMismatch(f"source {spec.name!r}: the record decodes to {type(rec).__name__}, not a record "
                                 "with fields; give the topic's schema a record (object) at the top", where=where)
        try:
            return rec, orjson.dumps(rec, default=_plain)
        except TypeError as e:
            raise MalformedMessage(f"source {spec.name!r}: the decoded record has a value JSON cannot carry ({e})",
                                   where=where) from None

    def of(self, topic: str) -> SourceSpec | None:
        return self.by_topic.get(topic)

    def arrival(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The arrivals record of one record of a source, keyed by its stream id; a dead letter if it has none."""
        spec = self.by_topic[src.topic]
        if spec.kind == "labels":
            return self._label(spec, raw, key, src)
        rec = None
        try:
            rec, value = self._record(spec, raw, src)
            sid = stream_of(spec, rec, key, where=str(src))
        except InvalidMessage as e:
            e.event_id = event_id_of(spec, rec)  # type: ignore[attr-defined]
            return [dead_letter(raw, key, e, "intake", src, max_bytes=self.settings.max_dead_letter_bytes)]
        headers = origin_headers(src)
        if spec.event_time == RECORD_TIMESTAMP and src.timestamp is not None:
            headers += ((ORIGIN_TIMESTAMP, repr(float(src.timestamp)).encode()),)
        return [Out("arrivals", sid.encode(), value, headers=headers)]

    @property
    def joins(self) -> bool:
        """Whether a labels source reads labels that find their events by event id."""
        return any(s.kind == "labels" for s in self.by_topic.values())

    def _label(self, spec: SourceSpec, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """A labels source's record for the event-index topic, keyed by its event id (the join finds its stream)."""
        rec = None
        try:
            rec, value = self._record(spec, raw, src)
            event_id = event_id_of(spec, rec)
            if event_id is None:
                value_at(spec, rec, spec.event_id, "event id: a string or integer", str(src))
                raise BadValue(f"source {spec.name!r}: event id at path {spec.event_id!r} is not a string or integer "
                               "of 1 to 256 characters", where=str(src))
        except InvalidMessage as e:
            return [dead_letter(raw, key, e, "intake", src, max_bytes=self.settings.max_dead_letter_bytes)]
        return [Out("event-index", event_id.encode(), value, headers=origin_headers(src))]

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


def _plain(v: Any) -> Any:
    """A decoded value orjson does not write itself (it writes dates, times and UUIDs as ISO 8601
    and text): Avro's decimals as numbers; anything else (bytes) is refused."""
    if isinstance(v, Decimal):
        return float(v)
    raise TypeError(f"a value of type {type(v).__name__}")
