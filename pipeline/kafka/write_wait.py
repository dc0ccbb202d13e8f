"""One log line and a gauge when the brokers stop taking a worker's writes (a leader gone, too
few in-sync replicas, no broker reachable), one line when they take them again. The producer
retries without a deadline and the consumer commits nothing past a message not taken.

>>> t, told = [0.0], []
>>> w = WriteWait(told.append, after_s=5.0, clock=lambda: t[0])
>>> [w.check(in_flight=3, settled=10) for t[0] in (0.0, 2.0, 6.0, 7.0)]
[None, None, 'waiting', None]
>>> t[0] = 9.0; w.check(in_flight=0, settled=13)
'again'
>>> told  # what the worker's metrics take: the gauge writes_waiting, and a count of the waits
[True, False]
>>> t[0] = 100.0; w.check(in_flight=2, settled=13)  # in flight again after a lull: for no time yet
>>> t[0] = 106.0; w.check(in_flight=2, settled=13)
'waiting'
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["WriteWait", "WAIT_S"]

log = logging.getLogger("streamxai")

#: how long messages in flight may go without an acknowledgement before the worker says writes wait:
#: longer than a partition's leader takes to move when its broker fails (about 10 s)
WAIT_S = 15.0


class WriteWait:
    """Watches a producer's acknowledgements (the module docstring says what for): :meth:`check`
    with the messages in flight and the number settled so far, as often as convenient;
    ``on_wait(True)`` when a wait begins, ``on_wait(False)`` when it ends."""

    def __init__(self, on_wait: Callable[[bool], None] | None = None, after_s: float = WAIT_S,
                 clock: Callable[[], float] = time.monotonic):
        self.on_wait = on_wait or (lambda waiting: None)
        self.after_s = after_s
        self._clock = clock
        self._settled = -1
        self._in_flight = 0
        self._since = 0.0  # when the number settled last moved (or messages went in flight)
        self._waiting_since: float | None = None

    def check(self, in_flight: int, settled: int) -> str | None:
        """``'waiting'`` when a wait begins, ``'again'`` when it ends, else None."""
        now = self._clock()
        moved = settled != self._settled or not self._in_flight  # (messages in flight again after a lull)
        self._in_flight = in_flight
        if moved or not in_flight:
            self._settled, self._since = settled, now
            if self._waiting_since is not None:
                waited, self._waiting_since = now - self._waiting_since + self.after_s, None
                self.on_wait(False)
                log.warning("the brokers take the worker's writes again, after about %.0f s; nothing was lost", waited)
                return "again"
            return None
        if self._waiting_since is None and now - self._since >= self.after_s:
            self._waiting_since = now
            self.on_wait(True)
            log.warning("writes wait: the brokers have taken none of the worker's %d messages in flight for %.0f s "
                        "(a partition without a leader, fewer in-sync replicas than min.insync.replicas, or no broker "
                        "reachable); the worker keeps them, commits nothing past them, and goes on when the brokers "
                        "take them", in_flight, now - self._since)
            return "waiting"
        return None
