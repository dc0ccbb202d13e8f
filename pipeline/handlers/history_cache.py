"""One pass over a partition serves the replay of every key on it (no Kafka in here: the
handlers wrap any History that can also ``scan`` a partition).

>>> class Log:  # a partition in memory: (key, value) by offset
...     parts = {("t", 0): [(b"a", b"a0"), (b"b", b"b0"), (b"a", b"a1"), (b"b", b"b1")]}
...     def __call__(self, topic, partition, before, key, from_offset=0):  # one key's pass
...         return iter([b"read from Kafka"])
...     def scan(self, topic, partition, before, from_offset=0):
...         for off, (k, v) in enumerate(self.parts[(topic, partition)][from_offset:before]):
...             yield from_offset + off, k, v
>>> cache = HistoryCache(Log())
>>> list(cache("t", 0, 3, b"a")), list(cache("t", 0, 3, b"b")), list(cache("t", 0, 3, b"a", from_offset=1))
([b'a0', b'a1'], [b'b0'], [b'read from Kafka'])
>>> cache.scans  # one pass for both keys; a key served once already is read again
1
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HistoryCache", "records_of"]


#: what a record keeps besides its value: (timestamp, headers) when the source gives them
_Meta = tuple[Any, ...]
_NO_META: _Meta = (None, None)


@dataclass
class _Partition:
    start: int
    by_key: dict[bytes, list[tuple[int, bytes | None, _Meta]]]
    size: int = 0
    served: set[bytes] = field(default_factory=set)


_TOO_BIG = object()


class HistoryCache:
    """Wraps a ``history(topic, partition, before_offset, key, from_offset)`` callable that also
    has ``scan(topic, partition, before_offset, from_offset)`` (a
    ``streamxai.handlers.protocols.ScanningHistory``); :meth:`records` gives the records back
    per key.

    After a restart a handler meets its keys one after another; the cache reads the partition
    once, up to where the first key needed it (or where the handler began to see it,
    :meth:`follow`), and hands each key its messages. That is exact since the handler sees the
    partition's messages in order (:meth:`forget` drops a revoked partition). A key that needs
    earlier messages extends the pass back once for all; a partition whose history would exceed
    ``max_bytes`` is not cached.
    """

    def __init__(self, source: Any, owner: Any = None, max_bytes: int = 256 * 1024 * 1024):
        self.source = source
        self.owner = owner  # counts go to ``owner.metrics`` if it has one
        self.max_bytes = max_bytes
        self.scans = 0
        self._parts: dict[tuple[str, int], Any] = {}

    def __call__(
        self, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
    ) -> Iterator[bytes | None]:
        return (v for _, v, _, _ in self.records(topic, partition, before_offset, key, from_offset))

    def records(
        self, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
    ) -> Iterator[tuple[int | None, bytes | None, Any, Any]]:
        """``(offset, value, timestamp, headers)`` of the key's messages (offset, timestamp and
        headers None where the source does not give them)."""
        if key is None or before_offset is None:
            return records_of(self.source, topic, partition, before_offset, key, from_offset)
        part = self._parts.get((topic, partition))
        if part is None:  # read from where this key needs it (after its checkpoint, or from 0)
            part = self._parts[(topic, partition)] = _Partition(before_offset, {})
        if part is not _TOO_BIG and from_offset < part.start:  # an earlier start: read the gap once
            part = self._parts[(topic, partition)] = self._scan(topic, partition, part, from_offset)
        if part is _TOO_BIG or key in part.served:
            return records_of(self.source, topic, partition, before_offset, key, from_offset)
        part.served.add(key)
        entries = part.by_key.pop(key, [])
        return iter([(off, v, *meta) for off, v, meta in entries if from_offset <= off < before_offset])

    def first_offset(self, topic: str, partition: int) -> int | None:
        """The first offset the source still holds of ``topic[partition]`` (None: it does not say)."""
        first = getattr(self.source, "first_offset", None)
        return first(topic, partition) if first is not None else None

    def forget(self, topic: str, partition: int) -> None:
        """Drop what is cached of ``topic[partition]`` (the handler did not see all of it)."""
        self._parts.pop((topic, partition), None)

    def follow(self, topic: str, partition: int, offset: int) -> None:
        """The handler sees every message of ``topic[partition]`` from ``offset`` on, in order,
        so a pass for a key met there ends at ``offset``."""
        if (topic, partition) not in self._parts:
            self._parts[(topic, partition)] = _Partition(offset, {})

    def built(self, topic: str, partition: int, key: bytes) -> None:
        """``key``'s state was built (with or without its messages from here): if it is built
        again, its messages are read from the source."""
        part = self._parts.get((topic, partition))
        if isinstance(part, _Partition):
            part.served.add(key)
            part.by_key.pop(key, None)

    def _scan(self, topic: str, partition: int, part: _Partition, from_offset: int) -> Any:
        """Read ``[from_offset, part.start)`` into ``part``, or give up past ``max_bytes``."""
        m = self._metrics()
        gap: dict[bytes, list[tuple[int, bytes | None, _Meta]]] = {}
        n = 0
        for off, key, value, *meta in self.source.scan(topic, partition, part.start, from_offset):
            n += 1
            if n % 1000 == 0:  # progress, visible in the metrics while a long pass runs
                m.inc("history_messages_scanned", 1000)
            if key is None or key in part.served:
                continue
            part.size += len(key) + len(value or b"")
            if part.size > self.max_bytes:
                m.inc("history_cache_too_big")
                return _TOO_BIG
            gap.setdefault(key, []).append((off, value, tuple(meta) if meta else _NO_META))
        for key, entries in gap.items():
            part.by_key[key] = entries + part.by_key.get(key, [])
        part.start = from_offset
        self.scans += 1
        m.inc("history_scans")
        m.inc("history_messages_scanned", n % 1000)
        return part

    def _metrics(self) -> Any:
        return getattr(self.owner, "metrics", None) or _NoMetrics()


class _NoMetrics:
    def inc(self, name: str, n: int = 1) -> None:
        pass


def records_of(
    source: Any, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
) -> Iterator[tuple[int | None, bytes | None, Any, Any]]:
    """``(offset, value, timestamp, headers)`` from a history that has ``records``, or its values
    with the rest None."""
    if hasattr(source, "records"):
        return source.records(topic, partition, before_offset, key, from_offset)
    return ((None, v, None, None) for v in source(topic, partition, before_offset, key, from_offset))
