"""One record of a source (a team's own JSON record) to the feature event the model takes.

:func:`map_record` follows the source's paths into the record: the features, the stream id (or
the record key), the event id, the event time (or the record timestamp) and the label if the
record has one. A record that does not fit raises an :class:`~streamxai.schemas.InvalidMessage`
naming the path and the type expected. The event has seq 0: the model handler numbers a
source's events as it takes them (:meth:`MappedEvent.numbered`).

>>> from streamxai.schemas import FeatureSpec
>>> from streamxai.sources import parse_sources
>>> src = parse_sources({"pay": {"topic": "t", "kind": "features", "features": ["amount", "merchant.mcc"],
...     "stream_id": "account", "event_id": "txn_id", "event_time": "event_time", "label": "fraud"}}, {})["pay"]
>>> spec = FeatureSpec(("amount", "merchant.mcc"), frozenset({"merchant.mcc"}))
>>> raw = b'{"txn_id": "a81f", "account": "ac-1", "amount": 12.5, "merchant": {"mcc": "5411"}, "event_time": "2024-05-01T10:00:00Z", "fraud": 0}'
>>> m = map_record(src, raw, None, None, lambda sid: spec, where="t[0]@4")
>>> m.event_id, m.event.stream_id, m.event.x, m.event.ts, m.event.y
('a81f', 'pay:ac-1', {'amount': 12.5, 'merchant.mcc': '5411'}, 1714557600.0, 0)
>>> map_record(src, raw.replace(b'"mcc"', b'"code"'), None, None, lambda sid: spec, where="t[0]@5")
Traceback (most recent call last):
...
streamxai.schemas.errors.FeatureMismatch: t[0]@5: source 'pay': the record has no field 'mcc' at path 'merchant.mcc' (feature 'merchant.mcc': a string or integer, categorical); the record's fields there are ['code']
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from streamxai.schemas import (
    BadValue,
    FeatureEvent,
    FeatureMismatch,
    FeatureSpec,
    InvalidMessage,
    NoProfile,
    SchemaMismatch,
)
from streamxai.schemas.features import check_stream_id, feature_event_from, shown
from streamxai.schemas.wire import DEFAULT_MAX_BYTES, decode

from ..sources import RECORD_KEY, RECORD_TIMESTAMP, SourceSpec

__all__ = ["map_record", "event_id_of", "stream_of", "value_at", "MappedEvent", "MAX_EVENT_ID"]

#: the longest event id a record may carry (it travels in every prediction and explanation)
MAX_EVENT_ID = 256
_MISSING = object()


@dataclass(frozen=True, slots=True)
class MappedEvent:
    """A record of a source as a feature event (seq 0 until numbered) and the team's event id."""

    event: FeatureEvent
    event_id: str

    def numbered(self, seq: int) -> FeatureEvent:
        return replace(self.event, seq=seq)


def map_record(src: SourceSpec, raw: bytes | None, key: bytes | None, timestamp: float | None,
               spec_of: Callable[[str], FeatureSpec], *, where: str,
               max_bytes: int = DEFAULT_MAX_BYTES) -> MappedEvent:
    """The record ``raw`` (key ``key``, record timestamp ``timestamp`` in seconds) of source
    ``src`` as a :class:`MappedEvent`, its values checked against ``spec_of(stream id)``; an
    ``InvalidMessage`` naming what does not fit."""
    rec = decode(raw, where=where, max_bytes=max_bytes)
    event_id = value_at(src, rec, src.event_id, "event id: a string or integer", where)
    if isinstance(event_id, bool) or not isinstance(event_id, (str, int)) or not 0 < len(str(event_id)) <= MAX_EVENT_ID:
        raise BadValue(f"source {src.name!r}: event id at path {src.event_id!r} is {shown(event_id)}; expected a "
                       f"string or integer of 1 to {MAX_EVENT_ID} characters", where=where)
    try:
        return MappedEvent(_event(src, rec, key, timestamp, spec_of, where), str(event_id))
    except InvalidMessage as e:
        e.event_id = str(event_id)  # type: ignore[attr-defined]  # its dead letter names the event
        raise


def event_id_of(src: SourceSpec, rec: object) -> str | None:
    """The event id of a decoded record of ``src``, if it has a usable one (for a dead letter)."""
    v = rec
    for part in src.event_id.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    ok = isinstance(v, (str, int)) and not isinstance(v, bool) and 0 < len(str(v)) <= MAX_EVENT_ID
    return str(v) if ok else None


def _event(src: SourceSpec, rec: dict[str, Any], key: bytes | None, timestamp: float | None,
           spec_of: Callable[[str], FeatureSpec], where: str) -> FeatureEvent:
    stream_id = stream_of(src, rec, key, where=where)
    try:
        spec = spec_of(stream_id)
    except LookupError as e:
        raise NoProfile(str(e), where=where) from None
    x = {}
    for name in src.features:
        want = "a string or integer, categorical" if name in spec.categorical else "a number"
        v = value_at(src, rec, name, f"feature {name!r}: {want}", where)
        if name not in spec.categorical and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise BadValue(f"source {src.name!r}: feature {name!r} at path {name!r} is {shown(v)}; expected {want} "
                           "(list it in the profile's categorical features if it is a category)", where=where)
        x[name] = v
    ts = _event_time(src, rec, timestamp, where)
    y = None if src.label is None else value_at(src, rec, src.label, "label", where)
    obj = {"schema": FeatureEvent.SCHEMA, "stream_id": stream_id, "seq": 0, "ts": ts, "x": x, "y": y}
    return feature_event_from(obj, spec, where=where)


def stream_of(src: SourceSpec, rec: dict[str, Any], key: bytes | None, *, where: str) -> str:
    """The stream id of record ``rec`` (key ``key``) of ``src``, checked; ``InvalidMessage`` if it has none."""
    try:
        sid = src.stream_of(key, rec)
    except (KeyError, TypeError, UnicodeDecodeError):
        if src.stream_id == RECORD_KEY:
            raise SchemaMismatch(f"source {src.name!r}: the record has no key (stream_id = \"key\"); key each record "
                                 "by its stream (e.g. the account), as UTF-8 text", where=where) from None
        value_at(src, rec, src.stream_id, "stream id: a string or integer", where)
        raise BadValue(f"source {src.name!r}: stream id at path {src.stream_id!r} is not a string or integer",
                       where=where) from None
    check_stream_id(sid, where=where)
    return sid


def value_at(src: SourceSpec, rec: dict[str, Any], path: str, what: str, where: str) -> Any:
    """The value at the dotted ``path`` of ``rec``; a :class:`FeatureMismatch` naming the path and
    ``what`` it should hold when the record has none there (or null)."""
    v: Any = rec
    parts = path.split(".")
    for i, part in enumerate(parts):
        inner = v.get(part, _MISSING) if isinstance(v, dict) else _MISSING
        if inner is _MISSING or inner is None:
            at = ".".join(parts[:i]) or "the top"
            if not isinstance(v, dict):
                found = f"'{at}' is {shown(v)}, not an object"
            else:
                found = f"the record's fields there are {shown(sorted(v))}"
            missing = "no field" if inner is _MISSING else "null for the field"
            raise FeatureMismatch(f"source {src.name!r}: the record has {missing} {part!r} at path {path!r} ({what}); "
                                  f"{found}", where=where)
        v = inner
    return v


def _event_time(src: SourceSpec, rec: dict[str, Any], timestamp: float | None, where: str) -> float:
    if src.event_time == RECORD_TIMESTAMP:
        if timestamp is None:
            raise SchemaMismatch(f"source {src.name!r}: the record has no timestamp (event_time = \"timestamp\")",
                                 where=where)
        return timestamp
    v = value_at(src, rec, src.event_time, "event time: seconds since 1970 or an ISO 8601 time", where)
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v)
        except ValueError:
            pass
        else:
            return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
    raise BadValue(f"source {src.name!r}: event time at path {src.event_time!r} is {shown(v)}; expected seconds since "
                   "1970 or an ISO 8601 time such as \"2024-05-01T10:00:00Z\" (without a zone: UTC)", where=where)
