"""A dead letter built from a message that cannot be taken: what was wrong, where it came from,
and the message itself (base64, cut to a size the dead-letter topic accepts), with one log line
per stage and reason at a bounded rate (:class:`~streamxai.handlers.dead_letter_log.DeadLetterLog`)."""

from __future__ import annotations

import hashlib
import time

from streamxai.schemas import DeadLetter, InvalidMessage, Source, b64, dumps

from .dead_letter_log import DeadLetterLog
from .out import Out

__all__ = ["dead_letter", "DEFAULT_DEAD_LETTER_BYTES"]

#: default size limit of a dead letter: well under Kafka's default message.max.bytes (1 MiB)
DEFAULT_DEAD_LETTER_BYTES = 512 * 1024
_MAX_ERROR_CHARS = 2000
_DEAD_LETTER_LOG = DeadLetterLog()  # a line per dead letter, at most 20 a minute for each stage and reason
_MAX_KEY_BYTES = 1024


def dead_letter(
    raw: bytes | None, key: bytes | None, err: Exception, stage: str, src: Source, reason: str | None = None,
    *, max_bytes: int = DEFAULT_DEAD_LETTER_BYTES,
) -> Out:
    """A dead letter for ``raw`` of at most ``max_bytes`` (key and value); logs one line naming
    the reason and the source (at most 20 a minute for each stage and reason, then how many
    more: :class:`~streamxai.handlers.dead_letter_log.DeadLetterLog`).

    >>> import base64; from streamxai.schemas import decode
    >>> out = dead_letter(b"x" * 10_000, b"k", ValueError("bad"), "model", Source("f", 0, 7), max_bytes=4096)
    >>> m = decode(out.value, where="-")
    >>> len(out.value) <= 4096, m["truncated"], m["original_bytes"], len(base64.b64decode(m["original"])) > 2000
    (True, True, 10000, True)
    """
    reason = reason or (err.reason if isinstance(err, InvalidMessage) else "error")
    event_id = getattr(err, "event_id", None)  # a source's record names its event (streamxai.ingest.mapping)
    text = str(err)
    if len(text) > _MAX_ERROR_CHARS:
        text = f"{text[:_MAX_ERROR_CHARS]}...({len(text)} characters)"
    shown = text if isinstance(err, InvalidMessage) else f"{src}: {type(err).__name__}: {text}"
    _DEAD_LETTER_LOG.log(stage, reason, shown[:500])
    out_key = None if key is None else key[:_MAX_KEY_BYTES]

    def build(prefix: int | None) -> bytes:
        body = raw if raw is None or prefix is None else raw[:prefix]
        return dumps(DeadLetter(
            reason=reason,
            error=f"{type(err).__name__}: {text}",
            stage=stage,
            source={"topic": src.topic, "partition": src.partition, "offset": src.offset},
            original=b64(body) or "",
            original_bytes=None if raw is None else len(raw),
            original_sha256=None if raw is None else hashlib.sha256(raw).hexdigest(),
            truncated=prefix is not None,
            key=b64(out_key),
            ts=time.time(),
            event_id=event_id if isinstance(event_id, str) else None,
        ))

    room = max_bytes - len(out_key or b"")
    value = build(None)
    if len(value) > room and raw is not None:
        # base64 takes 4 bytes per 3: keep the prefix that fits next to the rest of the letter
        prefix = max(0, (room - len(build(0)) - 8) * 3 // 4)
        value = build(prefix)
        while len(value) > room and prefix > 0:  # only if the estimate was off
            prefix //= 2
            value = build(prefix)
    if len(value) > room:
        raise ValueError(f"a dead letter cannot fit in max_dead_letter_bytes={max_bytes}; raise it")
    return Out("dead-letters", out_key, value, reason=reason)
