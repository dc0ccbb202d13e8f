"""What every handler shares: the outgoing message type and dead-letter construction."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schemas import DeadLetter, InvalidMessage, b64, dumps

__all__ = ["Out", "Source", "dead_letter", "Recovering"]

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


class Recovering:
    """State recovery shared by the model and explain handlers.

    A handler that meets a key it has no state for restores the newest checkpoint and
    replays the key's later messages of this partition, or, without a checkpoint, starts
    fresh and replays the key's whole history (unless the message opens the stream).
    Subclasses set ``checkpoints``, ``history`` and ``metrics`` and implement ``_rebuild``.
    """

    checkpoints: Any
    history: Any
    metrics: Any

    def _rebuild(self, st: Any, key: bytes | None, src: Source, from_offset: int) -> None:  # pragma: no cover
        raise NotImplementedError

    def _checkpoint_if_due(self, kind: str, key: bytes | None, st: Any, src: Source) -> None:
        """Count one more message for ``st``; write its checkpoint when ``checkpoint_every`` is reached."""
        st.since_checkpoint += 1
        if self.checkpoints is not None and key and self.checkpoints.due(st.since_checkpoint):
            st.since_checkpoint = 0
            self.checkpoints.save(kind, key, st, src)
            self.metrics.inc("checkpoints_written")

    def _recover(self, kind: str, key: bytes | None, src: Source, fresh: Callable[[], Any], first: bool) -> Any:
        # only a checkpoint before this message: after a SIGKILL the worker resumes from the
        # committed offset, and a newer checkpoint covers messages whose outputs may be lost
        loaded = (self.checkpoints.load(kind, key, src.topic, src.partition, before_offset=src.offset)
                  if self.checkpoints and key else None)
        if loaded is not None:
            st, ck_offset = loaded
            st.since_checkpoint = 0
            self.metrics.inc("checkpoints_restored")
            if self.history is not None and src.offset is not None and src.offset > ck_offset + 1:
                self._rebuild(st, key, src, ck_offset + 1)
            return st
        st = fresh()
        if not first and self.history is not None and src.offset:
            self._rebuild(st, key, src, 0)
        return st
