"""Where a message came from, as dead letters and checkpoints record it.

>>> str(Source("features", 2, 41))
'features[2]@41'
>>> str(Source("drift-feed", 0, 9, part="explanation 2 of 27"))  # one message of a record in a batch form
'drift-feed[0]@9 (explanation 2 of 27)'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Source", "Headers"]

#: Kafka record headers, as ``(name, value)`` pairs
Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from: ``topic[partition]@offset``; with the record's ``timestamp``
    (seconds) and ``headers`` where the reader has them, and which ``part`` of a record in a
    batch form it is (these take no part in equality)."""

    topic: str
    partition: int | None = None
    offset: int | None = None
    timestamp: float | None = field(default=None, compare=False, repr=False)
    headers: Headers | None = field(default=None, compare=False, repr=False)
    part: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        where = f"{self.topic}[{self.partition}]@{self.offset}"
        return where if self.part is None else f"{where} ({self.part})"
