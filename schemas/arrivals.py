"""The arrivals topic: every feature and label message of a stream, in the one order the model
learns them, each with headers naming where it came from.

The intake agent forwards each message of ``features`` and ``labels`` to ``arrivals`` with
its bytes and key unchanged, adding the headers of :func:`origin_headers`. The model agent
reads ``arrivals``: :func:`origin` gives back where a message came from, for dead letters and
to recognise a message the intake forwarded twice (after a restart).

>>> from schemas import FeatureSpec
>>> spec = FeatureSpec(("a",), target="number")
>>> parse_arrival(b'{"schema": "label_event/v1", "stream_id": "s", "seq": 4, "y": 2, "ts": 1}', spec, where="-")
LabelEvent(stream_id='s', seq=4, y=2.0, ts=1.0)
>>> at = Source("streamxai.arrivals", 1, 900, headers=origin_headers(Source("streamxai.labels", 3, 41)))
>>> origin(at), str(origin(Source("streamxai.features", 0, 7)))
(Source(topic='streamxai.labels', partition=3, offset=41), 'streamxai.features[0]@7')
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import NoProfile, SchemaMismatch
from .features import FeatureSpec, check_stream_id, feature_event_from
from .labels import label_event_from
from .messages import FeatureEvent, LabelEvent
from .source import Headers, Source
from .wire import DEFAULT_MAX_BYTES, decode

__all__ = ["parse_arrival", "origin_headers", "origin", "ORIGIN_TOPIC", "ORIGIN_PARTITION", "ORIGIN_OFFSET"]

ORIGIN_TOPIC = "streamxai-origin-topic"
ORIGIN_PARTITION = "streamxai-origin-partition"
ORIGIN_OFFSET = "streamxai-origin-offset"


def origin_headers(src: Source) -> Headers:
    """The headers naming ``src`` (topic, partition, offset as ASCII)."""
    return ((ORIGIN_TOPIC, src.topic.encode()), (ORIGIN_PARTITION, str(src.partition).encode()),
            (ORIGIN_OFFSET, str(src.offset).encode()))


def origin(src: Source) -> Source:
    """Where the message at ``src`` came from: the source its headers name, with ``src``'s
    timestamp; ``src`` itself if it has no (or broken) origin headers."""
    found = dict(src.headers or ())
    try:
        topic = found[ORIGIN_TOPIC].decode()
        partition = int(found[ORIGIN_PARTITION])
        offset = int(found[ORIGIN_OFFSET])
    except (KeyError, ValueError, UnicodeDecodeError, TypeError):
        return src
    return Source(topic, partition, offset, timestamp=src.timestamp)


def parse_arrival(raw: bytes | None, spec: FeatureSpec | Callable[[str], FeatureSpec], *, where: str,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> FeatureEvent | LabelEvent:
    """A feature event or a label event (by its ``schema`` tag), validated against ``spec``
    (a label's type against its target), or a function from a stream id to its spec (see
    :func:`~schemas.features.parse_feature_event`); an ``InvalidMessage`` saying what is wrong."""
    obj = decode(raw, where=where, max_bytes=max_bytes)
    tag = obj.get("schema")
    if tag == FeatureEvent.SCHEMA:
        return feature_event_from(obj, spec, where=where)
    if tag == LabelEvent.SCHEMA:
        if not isinstance(spec, FeatureSpec):
            check_stream_id(obj.get("stream_id"), where=where)
            try:
                spec = spec(obj["stream_id"])
            except LookupError as e:
                raise NoProfile(str(e), where=where) from None
        return label_event_from(obj, spec.target, where=where)
    raise SchemaMismatch(f"schema is {tag!r}, expected {FeatureEvent.SCHEMA!r} (on the features topic) or "
                         f"{LabelEvent.SCHEMA!r} (on the labels topic); set the 'schema' field of every message",
                         where=where)
