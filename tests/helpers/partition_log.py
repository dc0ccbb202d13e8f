"""Topic partitions in memory, read back as ``streamxai.kafka.replay.PartitionHistory`` reads
Kafka: values by key (``history``), or whole records with timestamp and headers (``records``).

>>> log = PartitionLog()
>>> log.append("t", 0, b"a", b"v0", timestamp=5.0), log.append("t", 0, b"b", b"v1")
(0, 1)
>>> list(log.history("t", 0, 2, b"a")), [r[0] for r in log.records("t", 0, None, b"b")]
([b'v0'], [1])
"""

from __future__ import annotations

from collections.abc import Iterator

from streamxai.schemas import Headers, Source

__all__ = ["PartitionLog"]


class PartitionLog:
    def __init__(self) -> None:
        #: (topic, partition) -> [(key, value, timestamp, headers)] by offset
        self.parts: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, float | None, Headers | None]]] = {}

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes | None,
               headers: Headers | None = None, timestamp: float | None = None) -> int:
        part = self.parts.setdefault((topic, partition), [])
        part.append((key, value, timestamp, headers))
        return len(part) - 1

    def source(self, topic: str, partition: int, offset: int) -> Source:
        """Where record ``offset`` is, with its timestamp and headers (as the agent loop gives them)."""
        _, _, ts, headers = self.parts[(topic, partition)][offset]
        return Source(topic, partition, offset, timestamp=ts, headers=headers)

    def items(self, topic: str, partition: int) -> list[tuple[bytes | None, bytes | None]]:
        return [(k, v) for k, v, _, _ in self.parts.get((topic, partition), [])]

    def history(self, topic: str, partition: int, before_offset: int | None, key: bytes | None,
                from_offset: int = 0) -> Iterator[bytes | None]:
        for _, value, _, _ in self.records(topic, partition, before_offset, key, from_offset):
            yield value

    __call__ = history

    def records(self, topic: str, partition: int, before_offset: int | None, key: bytes | None,
                from_offset: int = 0) -> Iterator[tuple[int, bytes | None, float | None, Headers | None]]:
        part = self.parts.get((topic, partition), [])
        end = len(part) if before_offset is None else before_offset
        for off in range(from_offset, end):
            k, value, ts, headers = part[off]
            if key is None or k == key:
                yield off, value, ts, headers
