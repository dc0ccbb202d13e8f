"""The arrivals topic: every feature and label message of a stream, in the one order the model
learns them, each with headers naming where it came from.

>>> from streamxai.schemas import FeatureSpec
>>> spec = FeatureSpec(("a",), task="regression")
>>> parse_arrival(b'{"schema": "label_event/v1", "stream_id": "s", "seq": 4, "y": 2, "ts": 1}', spec, where="-")
LabelEvent(stream_id='s', seq=4, y=2.0, ts=1.0)
>>> at = Source("streamxai.arrivals", 1, 900, headers=origin_headers(Source("streamxai.labels", 3, 41)))
>>> origin(at), str(origin(Source("streamxai.features", 0, 7)))
(Source(topic='streamxai.labels', partition=3, offset=41), 'streamxai.features[0]@7')
"""

from __future__ import annotations

from collections.abc import Callable

from .batch_forms import read_form
from .errors import NoProfile, SchemaMismatch
from .features import FeatureSpec, check_stream_id, feature_event_from
from .labels import label_event_from
from .messages import FeatureEvent, LabelEvent
from .source import Headers, Source
from .wire import DEFAULT_MAX_BYTES, decode

__all__ = ["parse_arrival", "origin_headers", "origin", "pack_arrivals", "unpack_arrivals", "ORIGIN_TOPIC",
           "ORIGIN_PARTITION", "ORIGIN_OFFSET", "BATCH_FORM"]

ORIGIN_TOPIC = "streamxai-origin-topic"
ORIGIN_PARTITION = "streamxai-origin-partition"
ORIGIN_OFFSET = "streamxai-origin-offset"
#: the header that marks an arrivals record carrying several messages of one stream (its value: the form)
BATCH_FORM = "streamxai-arrivals-form"
_BATCH_V1 = b"batch/1"


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


def pack_arrivals(items: list[tuple[Source, bytes]]) -> tuple[bytes, Headers]:
    """One arrivals record (value, headers) carrying ``items`` (where each message came from,
    and its bytes), in order: the intake's batch form, read back by :func:`unpack_arrivals`.
    Each message is framed by a line ``topic partition offset length`` (Kafka topic names have
    no spaces), so its bytes travel unchanged. :func:`origin` gives back where a message came
    from, for dead letters and to recognise one the intake forwarded twice.

    >>> value, headers = pack_arrivals([(Source("f", 0, 7), b'{"a": 1}'), (Source("l", 2, 3), b"")])
    >>> value, headers
    (b'f 0 7 8\\n{"a": 1}l 2 3 0\\n', (('streamxai-arrivals-form', b'batch/1'),))
    >>> [(str(o), raw) for raw, o in unpack_arrivals(value, Source("a", 0, 9, headers=headers))]
    [('f[0]@7', b'{"a": 1}'), ('l[2]@3', b'')]
    """
    parts = []
    for src, raw in items:
        parts.append(f"{src.topic} {src.partition} {src.offset} {len(raw)}\n".encode())
        parts.append(raw)
    return b"".join(parts), ((BATCH_FORM, _BATCH_V1),)


def unpack_arrivals(raw: bytes | None, src: Source) -> list[tuple[bytes, Source]] | None:
    """The messages of the arrivals record at ``src`` in the batch form (:func:`pack_arrivals`),
    each with where it came from (``src``'s timestamp: the time the intake recorded them);
    None for a record of one message (the form written for a lone message). A
    value that does not frame raises :class:`~schemas.SchemaMismatch`."""
    if not read_form(src, BATCH_FORM, _BATCH_V1, "arrivals", "the intake that wrote it"):
        return None
    where = str(src)
    data, items, at = raw or b"", [], 0
    while at < len(data):
        end = data.find(b"\n", at)
        try:
            topic, partition, offset, length = data[at:end].decode("ascii").split(" ")
            n = int(length)
            came = Source(topic, int(partition), int(offset), timestamp=src.timestamp)
        except (ValueError, UnicodeDecodeError):
            end = -1
        if end < 0 or n < 0 or end + 1 + n > len(data):
            raise SchemaMismatch(f"arrivals batch does not frame at byte {at} (message {len(items)}); it was not "
                                 "written by the intake", where=where)
        items.append((data[end + 1:end + 1 + n], came))
        at = end + 1 + n
    return items


def parse_arrival(raw: bytes | None, spec: FeatureSpec | Callable[[str], FeatureSpec], *, where: str,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> FeatureEvent | LabelEvent:
    """A feature event or a label event (by its ``schema`` tag), validated against ``spec``
    (a label's type against its task), or a function from a stream id to its spec (see
    :func:`~streamxai.schemas.features.parse_feature_event`); an ``InvalidMessage`` saying what is wrong."""
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
        return label_event_from(obj, spec.task, where=where)
    raise SchemaMismatch(f"schema is {tag!r}, expected {FeatureEvent.SCHEMA!r} (on the features topic) or "
                         f"{LabelEvent.SCHEMA!r} (on the labels topic); set the 'schema' field of every message",
                         where=where)
