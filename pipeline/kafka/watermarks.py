"""A partition's watermarks, asked again while its leader is moving.

Right after a topic is made or a broker restarts, ``get_watermark_offsets`` can fail for a
moment (no leader yet, an unknown partition, all brokers down); :func:`watermarks` asks again
until its deadline. Any other error is raised at once.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["watermarks"]

#: how long to wait before asking again
RETRY_S = 0.2


def _passing(e: Exception) -> bool:
    from confluent_kafka import KafkaError

    err = e.args[0] if e.args else None
    if not isinstance(err, KafkaError):
        return False
    return err.code() in (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                          KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                          KafkaError._UNKNOWN_TOPIC, KafkaError._TRANSPORT,
                          KafkaError._ALL_BROKERS_DOWN) or err.retriable()


def watermarks(consumer: Any, topic: str, partition: int, timeout: float) -> tuple[int, int]:
    """``(low, high)`` of ``topic[partition]`` by ``consumer``, asked again every
    :data:`RETRY_S` s while the broker answers with an error that passes (a leader being
    elected, a broker restarting), for up to ``timeout`` s in all; then the last
    ``KafkaException`` is raised."""
    from confluent_kafka import KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                  timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as e:
            if not _passing(e) or time.monotonic() + RETRY_S > deadline:
                raise
            time.sleep(RETRY_S)
