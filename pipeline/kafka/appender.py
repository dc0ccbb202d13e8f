"""Outputs appended to aiokafka's batches in one step: what the agents' Outbox does when it is
given a Faust producer (tests and benchmarks build one; a worker's Outbox sends through
:class:`~streamxai.kafka.output_producer.OutputProducer`). Faust's producer and aiokafka's each
wrap the append of a record to its partition's batch in a coroutine with checks a worker's
outputs do not need at every message (a signal with no receiver, header conversion, a
transaction lookup, a wait for metadata already there, a debug line), so
:meth:`Appender.send` does what those layers do that matters here: the size check
(``MessageSizeTooLargeError`` past ``max_request_size``), the partition (the
client's partitioner on the key, or the partition given; a key's partition under aiokafka's
default partitioner is kept until the client's metadata is refreshed, at most
:data:`MAX_KEPT` keys: its murmur2 hash is Python), and the append, whose future is the
message's delivery. Delivery is at least once: the record is in the accumulator when the
call returns, and Faust's commit flushes the producer (``AIOKafkaProducer.flush``: it waits
for every batch in the accumulator) before it commits an offset. Whatever the direct route
cannot be sure of goes the full way, through Faust's ``send``: the producer not started, a
transactional producer, a topic whose metadata the client has not loaded yet, or an aiokafka
without the parts used here (checked once, with one log line).
"""

from __future__ import annotations

import logging
from typing import Any

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.structs import TopicPartition

__all__ = ["Appender", "MAX_KEPT"]

log = logging.getLogger("streamxai")

#: the most partitions of keys kept at once (a dead letter's key is its input's, any bytes)
MAX_KEPT = 10_000

#: what the direct route uses of aiokafka's producer (private parts, checked once per producer)
_PARTS = ("_message_accumulator", "_metadata", "_serialize", "_partition", "_partitioner", "_request_timeout_ms",
          "_txn_manager")


class Appender:
    """Sends through Faust's producer ``producer``, appending to aiokafka's batches directly
    where it can (the module docstring says when and why).

    >>> import asyncio
    >>> class Producer:  # Faust's producer before it started: no aiokafka producer yet
    ...     _producer = None
    ...     async def send(self, topic, key, value, partition, timestamp, headers):
    ...         print("the full way:", topic, key, value)
    ...         return "future"
    >>> asyncio.run(Appender(Producer()).send("t", b"k", b"v", None, None))
    the full way: t b'k' b'v'
    'future'
    """

    def __init__(self, producer: Any):
        self.producer = producer
        self._client: Any = None  # the aiokafka producer checked for the direct route
        self._direct = False
        self._keyed = False  # its partitioner is aiokafka's default: a key's partition can be kept
        #: (topic, key or partition) -> the topic-partition, while the client's metadata is as it was
        self._tps: dict[tuple[str, Any], TopicPartition] = {}
        self._refreshed = None

    async def send(self, topic: str, key: bytes | None, value: bytes, partition: int | None,
                   headers: list[tuple[str, bytes]] | None) -> Any:
        """Append one message; its delivery future (raises what the producer raises)."""
        client = getattr(self.producer, "_producer", None)
        if client is not self._client:
            self._client, self._direct = client, _usable(client)
            self._keyed = self._direct and type(client._partitioner) is DefaultPartitioner
        if not self._direct or client._txn_manager is not None:
            return await self.producer.send(topic, key, value, partition, None, headers)
        metadata = client._metadata
        if metadata._last_successful_refresh_ms != self._refreshed or len(self._tps) > MAX_KEPT:  # changed, or full
            self._tps.clear()
            self._refreshed = metadata._last_successful_refresh_ms
        headers = headers or []
        key, value = client._serialize(key, value, headers)  # the size check
        which = (topic, partition if partition is not None or not self._keyed else key)
        tp = self._tps.get(which) if which[1] is not None else None
        if tp is None:
            if not metadata.partitions_for_topic(topic):  # not loaded yet: the full way waits for it
                return await self.producer.send(topic, key, value, partition, None, headers)
            tp = TopicPartition(topic, client._partition(topic, partition, key, value, key, value))
            if which[1] is not None:
                self._tps[which] = tp
        return await client._message_accumulator.add_message(
            tp, key, value, client._request_timeout_ms / 1000, timestamp_ms=None, headers=headers)


def _usable(client: Any) -> bool:
    if client is None:
        return False
    missing = [p for p in _PARTS if not hasattr(client, p)]
    if not hasattr(getattr(client, "_metadata", None), "_last_successful_refresh_ms"):
        missing.append("_metadata._last_successful_refresh_ms")
    if missing:
        log.warning("this aiokafka's producer lacks %s: outputs go through Faust's producer.send (slower)",
                    ", ".join(missing))
    return not missing
