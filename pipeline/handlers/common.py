"""What every handler shares: the outgoing message type and dead-letter construction."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from schemas import DeadLetter, InvalidMessage, b64, dumps

__all__ = ["Out", "Source", "dead_letter"]

log = logging.getLogger("streamxai")


@dataclass(frozen=True, slots=True)
class Source:
    """Where a message came from: ``topic[partition]@offset``."""

    topic: str
    partition: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


@dataclass(frozen=True, slots=True)
class Out:
    """A message to send: topic *name* (unprefixed, e.g. ``"predictions"``), key, value, and
    an explicit partition where the key's hash would not spread the work (explain tasks)."""

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None


def dead_letter(
    raw: bytes | None, key: bytes | None, err: Exception, stage: str, src: Source, reason: str | None = None
) -> Out:
    """A dead letter for ``raw``; logs one line naming the reason and the source."""
    reason = reason or (err.reason if isinstance(err, InvalidMessage) else "error")
    text = str(err)
    log.warning("dead letter (%s, %s): %s", stage, reason, text if isinstance(err, InvalidMessage) else f"{src}: {text}")
    msg = DeadLetter(
        reason=reason,
        error=f"{type(err).__name__}: {text}",
        stage=stage,
        source={"topic": src.topic, "partition": src.partition, "offset": src.offset},
        original=b64(raw) or "",
        key=b64(key),
        ts=time.time(),
    )
    return Out("dead-letters", key, dumps(msg))
