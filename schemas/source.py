"""Where a message came from, as dead letters and checkpoints record it.

>>> str(Source("features", 2, 41))
'features[2]@41'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Source", "Headers"]

#: Kafka record headers, as ``(name, value)`` pairs
Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from: ``topic[partition]@offset``; with the record's ``timestamp``
    (seconds) and ``headers`` where the reader has them (they take no part in equality)."""

    topic: str
    partition: int | None = None
    offset: int | None = None
    timestamp: float | None = field(default=None, compare=False, repr=False)
    headers: Headers | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"
