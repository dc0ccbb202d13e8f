"""Intake: the one record of the order in which a stream's features and labels arrived.

>>> from streamxai.schemas import origin
>>> (out,) = IntakeHandler(Settings()).on_message(b"{}", b"s", Source("streamxai.labels", 2, 17))
>>> out.topic, out.key, out.value, str(origin(Source("streamxai.arrivals", 0, 5, headers=out.headers)))
('arrivals', b's', b'{}', 'streamxai.labels[2]@17')
"""

from __future__ import annotations

from streamxai.schemas import Source, origin_headers, pack_arrivals
from streamxai.schemas.batch_forms import chunk_bounds

from ..metrics import Metrics
from ..settings import Settings
from .out import Out
from .source_records import SourceRecords

__all__ = ["IntakeHandler", "MAX_BATCH_BYTES", "MAX_BATCH_RECORDS"]

#: the most records the intake agent takes up at once: the model agent takes an arrivals record
#: in one turn of the event loop, so this bounds how long the worker's other agents wait
MAX_BATCH_RECORDS = 100
#: the most bytes of messages one arrivals record carries (well under Kafka's 1 MiB default limit)
MAX_BATCH_BYTES = 256 * 1024


class IntakeHandler:
    """Features and labels in, arrivals out: each message, bytes and key unchanged, with headers
    naming its origin (:func:`streamxai.schemas.origin_headers`), so a stream's arrivals are one
    partition in one order. It validates nothing and keeps no state; messages already fetched
    go as one arrivals record per stream (:meth:`on_batch`).
    """

    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.sources = SourceRecords(settings, self.metrics)

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """The message as it came, for the arrivals topic (an empty value stays empty: the model
        handler dead-letters it, naming the origin); a record of a source keyed by the stream id
        found in it (:meth:`SourceRecords.arrival`)."""
        if self.sources.by_topic and src.topic in self.sources.by_topic:
            return self.sources.arrival(raw, key, src)
        return [Out("arrivals", key, raw or b"", headers=origin_headers(src))]

    def on_batch(self, records: list[tuple[bytes | None, bytes | None, Source]]) -> list[Out]:
        """``(raw, key, src)`` records in the order they came, as one arrivals record per key
        (their order kept; a key with one record: :meth:`on_message`'s form), up to
        :data:`MAX_BATCH_BYTES` of messages each.

        >>> h = IntakeHandler(Settings())
        >>> outs = h.on_batch([(b"1", b"s", Source("f", 0, 7)), (b"2", b"t", Source("f", 1, 3)),
        ...                    (b"3", b"s", Source("l", 0, 4))])
        >>> [(o.key, o.value) for o in outs]
        [(b's', b'f 0 7 1\\n1l 0 4 1\\n3'), (b't', b'2')]
        """
        by_key: dict[bytes | None, list[tuple[Source, bytes]]] = {}
        outs = []
        for raw, key, src in records:
            if self.sources.by_topic and src.topic in self.sources.by_topic:
                outs += self.sources.arrival(raw, key, src)  # one by one: keyed by the stream id found in it
                continue
            by_key.setdefault(key, []).append((src, raw or b""))
        for key, items in by_key.items():
            if len(items) == 1:
                outs += self.on_message(items[0][1], key, items[0][0])
                continue
            for start, end in chunk_bounds([len(raw) for _, raw in items], MAX_BATCH_BYTES):
                outs.append(self._batch(key, items[start:end]))
        return outs

    def _batch(self, key: bytes | None, items: list[tuple[Source, bytes]]) -> Out:
        if len(items) == 1:
            return self.on_message(items[0][1], key, items[0][0])[0]
        value, headers = pack_arrivals(items)
        return Out("arrivals", key, value, headers=headers)

    def needs_recovery(self, key: bytes | None, src: Source | None = None) -> bool:
        return False  # no state

    def partitions_revoked(self, tps: set[tuple[str, int]]) -> None:
        pass
