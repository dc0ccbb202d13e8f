"""The offsets a worker's consumer has committed, for the checkpoint stores to read.

>>> commits = CommittedOffsets()
>>> commits.committed("features", 0) is None  # nothing committed yet (or not by this worker)
True
>>> commits.record({("features", 0): 120, ("features", 1): 7})
>>> commits.record({("features", 0): 80})  # an older commit never lowers it
>>> commits.committed("features", 0), commits.covers("features", 0, 119), commits.covers("features", 0, 120)
(120, True, False)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["CommittedOffsets"]


class CommittedOffsets:
    """Per ``(topic, partition)``, the highest offset committed (the next one to read, so a
    checkpoint at offset ``n`` is covered when ``n < committed``). Written on the worker's event
    loop, read by the checkpoint stores on the agents' threads, which keep per key the newest
    checkpoint a commit covers beside the newest one
    (:meth:`~streamxai.kafka.checkpoint_seal.SealedStore.save`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offsets: dict[tuple[str, int], int] = {}

    def __repr__(self) -> str:
        return f"CommittedOffsets({len(self._offsets)} partitions)"

    def record(self, offsets: Mapping[Any, int]) -> None:
        """Note offsets the broker accepted as committed; keys are ``(topic, partition)`` pairs or
        objects with ``topic`` and ``partition`` (Faust's ``TP``)."""
        with self._lock:
            for tp, offset in offsets.items():
                where = (tp.topic, tp.partition) if hasattr(tp, "topic") else (tp[0], tp[1])
                if offset > self._offsets.get(where, -1):
                    self._offsets[where] = offset

    def committed(self, topic: str, partition: int | None) -> int | None:
        """The highest offset committed on ``topic[partition]``; None when none is known."""
        if partition is None:
            return None
        with self._lock:
            return self._offsets.get((topic, partition))

    def covers(self, topic: str, partition: int | None, offset: int | None) -> bool:
        """Whether a commit covers the message at ``offset``: a restart resumes after it."""
        committed = self.committed(topic, partition)
        return committed is not None and offset is not None and offset < committed
