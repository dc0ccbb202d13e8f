"""How long a worker's fetch requests wait, from how busy its agents are. A record the worker's
own agents wrote waits at the broker for the fetch in flight on each hop: while the agents have
room the wait is short, so records go through quickly; while they are busy (:data:`BUSY_SHARE`
of a core or more) records wait in the worker's queues anyway, and a long wait means fewer,
bigger fetches to parse.

>>> cpu, clock = iter([0.0, 0.95, 1.0, 1.3]), iter([0.0, 1.0, 2.0, 3.0])
>>> pace = FetchPace(100, 300, cpu=cpu.__next__, clock=clock.__next__)
>>> [pace.tick() for _ in range(4)]  # nothing to go by yet; busy; idle; on a core 30 % of the time
[100, 300, 100, 100]
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["BUSY_SHARE", "FetchPace", "PACE_S"]

#: the share of its time on a core from which the agents' thread is busy
BUSY_SHARE = 0.8
#: how often the wait is set again (s)
PACE_S = 1.0


class FetchPace:
    """The fetch wait, ``short_ms`` or ``long_ms``, from the share of the time the calling thread
    (the agents', which runs the worker's event loop) was on a core since the last :meth:`tick`."""

    def __init__(self, short_ms: int, long_ms: int, cpu: Callable[[], float] = time.thread_time,
                 clock: Callable[[], float] = time.monotonic):
        self.short_ms, self.long_ms = short_ms, long_ms
        self._cpu, self._clock = cpu, clock
        self._last: tuple[float, float] | None = None
        #: the wait the last tick gave (ms)
        self.wait_ms = short_ms

    def tick(self) -> int:
        """The wait for the fetches from now on (ms)."""
        now = (self._clock(), self._cpu())
        if self._last is not None and now[0] > self._last[0]:
            busy = (now[1] - self._last[1]) / (now[0] - self._last[0]) >= BUSY_SHARE
            self.wait_ms = self.long_ms if busy else self.short_ms
        self._last = now
        return self.wait_ms
