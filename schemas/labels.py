"""Validation of incoming label events: the label of an earlier feature event of a stream.

>>> raw = b'{"schema": "label_event/v1", "stream_id": "s", "seq": 4, "y": 1, "ts": 10.5}'
>>> parse_label_event(raw, "classification", where="labels[0]@3")
LabelEvent(stream_id='s', seq=4, y=1, ts=10.5)
>>> parse_label_event(raw.replace(b'"y": 1', b'"y": "high"'), "regression", where="labels[0]@4")
Traceback (most recent call last):
...
streamxai.schemas.errors.LabelTypeMismatch: labels[0]@4: label y of stream 's' seq 4 is 'high' (str); the task is regression: send a finite number
"""

from __future__ import annotations

import math
from typing import Any

from .errors import SchemaMismatch
from .features import MAX_SEQ, TASKS, check_label, check_stream_id, shown
from .messages import LabelEvent
from .wire import DEFAULT_MAX_BYTES, decode_as

__all__ = ["parse_label_event", "label_event_from"]

_FIELDS = frozenset({"schema", "stream_id", "seq", "y", "ts"})


def parse_label_event(raw: bytes | None, task: str, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES) -> LabelEvent:
    """Bytes to a validated :class:`~streamxai.schemas.messages.LabelEvent` whose ``y`` fits ``task``
    (``classification``: a string, integer or boolean; ``regression``: a finite number, as a float), or an
    ``InvalidMessage`` saying what is wrong."""
    return label_event_from(decode_as(raw, LabelEvent.SCHEMA, where=where, max_bytes=max_bytes), task, where=where)


def label_event_from(obj: dict[str, Any], task: str, *, where: str) -> LabelEvent:
    """A decoded ``label_event/v1`` object to a validated :class:`LabelEvent` (see :func:`parse_label_event`)."""
    if task not in TASKS:
        raise ValueError(f"task={task!r} must be one of {TASKS}")
    event_id = obj.get("event_id")  # optional: the team's id, in the labels the join sends
    if set(obj) - {"event_id"} != _FIELDS or not (event_id is None or isinstance(event_id, str) and 0 < len(event_id) <= 256):
        raise SchemaMismatch(f"label_event/v1 fields: missing {sorted(_FIELDS - set(obj))}, unexpected "
                             f"{shown(sorted(set(obj) - _FIELDS))}", where=where)
    stream_id, seq, ts = obj["stream_id"], obj["seq"], obj["ts"]
    check_stream_id(stream_id, where=where)
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
        raise SchemaMismatch(f"seq {shown(seq)} must be an integer in [0, 2**63 - 1]: the seq of the event this "
                             "label belongs to", where=where)
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise SchemaMismatch(f"ts {shown(ts)} must be a finite number (seconds)", where=where)
    y = check_label(obj["y"], task, f"label y of stream {stream_id!r} seq {seq}", where=where)
    return LabelEvent(stream_id, seq, y, float(ts), event_id)
