"""Outputs appended to aiokafka's batches in one step, for an Outbox given a Faust producer.
:meth:`Appender.send` keeps what matters of Faust's and aiokafka's per-message layers: the size
check, the partition (a key's partition under the default partitioner is cached, at most
:data:`MAX_KEPT` keys, until the metadata changes) and the append, whose future is the
delivery; Faust's commit flushes the producer first, so delivery stays at least once. What
this route cannot be sure of (producer not started, transactions, metadata not loaded, an
aiokafka without the parts used) goes through Faust's ``send``.
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
