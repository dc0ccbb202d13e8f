"""Reading a partition's earlier messages, to rebuild state that is not in memory."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

from streamxai.schemas import Headers

from ..settings import Settings
from .config import confluent_config
from .watermarks import watermarks

__all__ = ["PartitionHistory"]


class PartitionHistory:
    """``history(topic, partition, before_offset, key, from_offset=0)`` → values of the
    messages with ``key`` (any key if None) at offsets ``from_offset .. before_offset - 1`` (to
    the end if ``before_offset`` is None).

    A worker that meets a stream (or explainer group) without state rebuilds it by re-running
    its earlier messages from the same partition, exact while the topic still holds them; where
    retention deleted some, the handler reports what is missing (:meth:`first_offset`).
    """

    #: how long a partition's first offset is taken as known (retention moves it on slowly)
    FIRST_OFFSET_TTL_S = 10.0

    def __init__(self, settings: Settings, poll_timeout: float = 5.0):
        self.settings = settings
        self.poll_timeout = poll_timeout
        self._first: dict[tuple[str, int], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def first_offset(self, topic: str, partition: int) -> int:
        """The first offset ``topic[partition]`` still holds (its low watermark: retention deleted
        the messages before it), asked of the broker at most every :attr:`FIRST_OFFSET_TTL_S` s."""
        from confluent_kafka import Consumer

        with self._lock:
            known = self._first.get((topic, partition))
            if known is not None and time.monotonic() - known[0] < self.FIRST_OFFSET_TTL_S:
                return known[1]
            c = Consumer(confluent_config(self.settings, **{
                "log_level": 0, "group.id": f"streamxai-replay-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}))
            try:
                low = watermarks(c, topic, partition, self.poll_timeout)[0]
            finally:
                c.close()
            self._first[(topic, partition)] = (time.monotonic(), low)
            return low

    def __call__(
        self, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
    ) -> Iterator[bytes | None]:
        """``before_offset=None``: up to the partition's end (its high watermark) now."""
        for _, value, _, _ in self.records(topic, partition, before_offset, key, from_offset):
            yield value

    def records(
        self, topic: str, partition: int, before_offset: int | None, key: bytes | None, from_offset: int = 0
    ) -> Iterator[tuple[int, bytes | None, float | None, Headers | None]]:
        """``(offset, value, timestamp, headers)`` of the messages with ``key`` (any key if None)."""
        for off, k, value, ts, headers in self.scan(topic, partition, before_offset, from_offset):
            if key is None or k == key:
                yield off, value, ts, headers

    def scan(
        self, topic: str, partition: int, before_offset: int | None, from_offset: int = 0
    ) -> Iterator[tuple[int, bytes | None, bytes | None, float | None, Headers | None]]:
        """``(offset, key, value, timestamp, headers)`` of every message at ``from_offset .. before_offset - 1``
        (timestamp in seconds; None if the record has none)."""
        from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_NOT_AVAILABLE, Consumer, TopicPartition

        if before_offset is not None and before_offset <= from_offset:
            return
        c = Consumer(confluent_config(self.settings, **{
            "log_level": 0,  # an unreachable broker surfaces as the stall error below, not per retry
            "group.id": f"streamxai-replay-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }))
        try:
            low, high = watermarks(c, topic, partition, self.poll_timeout)
            if before_offset is None:
                before_offset = high
            # nothing kept of the range (retention deleted it): there is no message to wait for
            if before_offset <= max(from_offset, low):
                return
            c.assign([TopicPartition(topic, partition, from_offset or OFFSET_BEGINNING)])
            while True:
                msg = c.poll(self.poll_timeout)
                if msg is None:
                    raise RuntimeError(
                        f"replay of {topic}[{partition}] stalled before offset {before_offset}; "
                        "is the broker reachable?"
                    )
                if msg.error():
                    continue
                if msg.offset() >= before_offset:
                    return
                kind, ms = msg.timestamp()
                headers = msg.headers()
                yield (msg.offset(), msg.key(), msg.value(), ms / 1000.0 if kind != TIMESTAMP_NOT_AVAILABLE else None,
                       tuple((k, v or b"") for k, v in headers) if headers else None)
                if msg.offset() >= before_offset - 1:
                    return
        finally:
            c.close()
