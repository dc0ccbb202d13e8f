"""Counters a worker exposes at ``GET /streamxai/metrics`` and logs on shutdown.

>>> m = Metrics()
>>> m.inc("events_in"); m.inc("dead_letters", reason="malformed")
>>> m.snapshot()["counters"]
{'dead_letters{reason=malformed}': 1, 'events_in': 1}
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        self._counters: Counter[str] = Counter()
        self._gauges: dict[str, float] = {}
        self.started = time.time()

    def inc(self, name: str, n: int = 1, **labels: Any) -> None:
        if labels:
            name = name + "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}"
        self._counters[name] += n

    def gauge(self, name: str, value: float) -> None:
        self._gauges[name] = value

    def get(self, name: str) -> int:
        return self._counters.get(name, 0)

    def snapshot(self) -> dict[str, Any]:
        return {
            "uptime_s": round(time.time() - self.started, 3),
            "counters": dict(sorted(self._counters.items())),
            "gauges": dict(sorted(self._gauges.items())),
        }
