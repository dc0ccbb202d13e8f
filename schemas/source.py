"""Where a message came from, as dead letters and checkpoints record it.

>>> str(Source("features", 2, 41))
'features[2]@41'
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Source"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from: ``topic[partition]@offset``."""

    topic: str
    partition: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"
