"""Labels sent later than their events, for ``streamxai produce FILE --label-delay N``: the
features of each event at once, its label as a label event N events later (as the demo's
``--label-delay`` sends them)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from streamxai.schemas import FeatureEvent, LabelEvent

__all__ = ["labels_after"]


def labels_after(events: Iterable[FeatureEvent], delay: int) -> Iterator[FeatureEvent | LabelEvent]:
    """Each of ``events`` without its label, and the label as a :class:`~schemas.LabelEvent` right
    after the event ``delay`` places later, with that event's ``ts``; the last ``delay`` labels
    follow the last event. Holds ``delay`` events.

    >>> events = [FeatureEvent("s", q, 10.0 + q, {"a": 1.0}, None if q == 1 else q % 2) for q in range(4)]
    >>> [(type(m).__name__[0], m.seq, m.y, m.ts) for m in labels_after(events, 2)]
    [('F', 0, None, 10.0), ('F', 1, None, 11.0), ('F', 2, None, 12.0), ('L', 0, 0, 12.0), ('F', 3, None, 13.0), ('L', 2, 0, 13.0), ('L', 3, 1, 13.0)]
    """
    if not isinstance(delay, int) or delay < 0:
        raise ValueError(f"delay={delay!r} must be an integer >= 0 (events between an event and its label)")
    waiting: deque[FeatureEvent] = deque()
    ts = 0.0
    for ev in events:
        yield FeatureEvent(ev.stream_id, ev.seq, ev.ts, ev.x, None)
        waiting.append(ev)
        ts = ev.ts
        if len(waiting) > delay:
            old = waiting.popleft()
            if old.y is not None:
                yield LabelEvent(old.stream_id, old.seq, old.y, ts)
    for old in waiting:
        if old.y is not None:
            yield LabelEvent(old.stream_id, old.seq, old.y, ts)
