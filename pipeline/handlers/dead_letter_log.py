"""The log lines of dead letters, bounded: at most ``burst`` lines per (stage, reason) every
``every_s`` seconds, then one line saying how many more there were.

>>> t = [0.0]
>>> lines = []
>>> dl = DeadLetterLog(burst=2, every_s=60, clock=lambda: t[0], emit=lambda *a: lines.append(a[0] % a[1:]))
>>> for t[0] in (1, 2, 3, 4):
...     dl.log("model", "schema", "bad message")
>>> t[0] = 61; dl.log("model", "schema", "bad again")
>>> for line in lines:
...     print(line)
dead letter (model, schema): bad message
dead letter (model, schema): bad message
2 more dead letters (model, schema) not logged in the last 60 s; every one is on the dead-letter topic (`streamxai tail dead-letters`) and counted in the metric dead_letters
dead letter (model, schema): bad again
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["DeadLetterLog"]

log = logging.getLogger("streamxai")


class DeadLetterLog:
    """Logs a dead letter's line unless ``burst`` lines of its (stage, reason) were logged in the
    current ``every_s`` window; the first line of a later window is preceded by the number left
    out. Thread-safe (handlers rebuilding state run on threads).

    Every dead letter is on the dead-letter topic and counted; the bound keeps a producer from
    filling the log as fast as it sends.
    """

    def __init__(self, burst: int = 20, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 emit: Callable[..., None] | None = None):
        self.burst, self.every_s, self.clock = burst, every_s, clock
        self.emit = emit or log.warning
        self._lock = threading.Lock()
        self._windows: dict[tuple[str, str], list[float]] = {}  # (stage, reason) -> [start, logged, left out]

    def log(self, stage: str, reason: str, text: str) -> None:
        with self._lock:
            now = self.clock()
            w = self._windows.get((stage, reason))
            if w is None or now - w[0] >= self.every_s:
                if w is not None and w[2]:
                    self.emit("%d more dead letters (%s, %s) not logged in the last %.0f s; every one is on the "
                              "dead-letter topic (`streamxai tail dead-letters`) and counted in the metric dead_letters",
                              int(w[2]), stage, reason, now - w[0])
                w = self._windows[(stage, reason)] = [now, 0, 0]
            if w[1] >= self.burst:
                w[2] += 1
                return
            w[1] += 1
        self.emit("dead letter (%s, %s): %s", stage, reason, text)
