"""How long streams wait for their next output once a rebalance hands their partitions to a worker: from
each ``partitions assigned`` log line to each stream's first prediction after it. A wait a later fault
or the worker's next assignment cuts short is counted as interrupted.

>>> line = "[2026-11-27 20:00:00,250] [4711] [INFO] partitions assigned: p.arrivals [0, 2]; p.features [0, 2]"
>>> [(round(at % 60, 2), parts) for at, parts in assignments_in([line], "p.arrivals")]
[(0.25, {0, 2})]
>>> waits = recovery_waits({"w1": [(100.0, {0})]}, {"s": 0}, {"s": [99.0, 104.5]}, faults=[], until=200.0)
>>> waits["w1"].timed, waits["w1"].longest, waits["w1"].interrupted
(1, 4.5, 0)"""

from __future__ import annotations

import bisect
import datetime
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["ASSIGNED", "Recovery", "assignments_in", "recovery_waits"]

#: a worker's line (as Faust's logging writes it: time, pid, level) when a rebalance assigned it partitions
ASSIGNED = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \[\d+\] \[INFO\] partitions assigned: (.*?)\s*$")


def assignments_in(lines: Iterable[str], topic: str) -> list[tuple[float, set[int]]]:
    """Each assignment in a worker's log ``lines``: its time (seconds since the epoch, as the log's
    local time says) and the partitions of ``topic`` the worker holds from then on."""
    out = []
    for line in lines:
        m = ASSIGNED.match(line)
        if m is None:
            continue
        at = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        parts: set[int] = set()
        for item in m.group(2).split("; "):
            name, _, rest = item.partition(" [")
            if name == topic:
                parts = {int(p) for p in rest.rstrip("]").split(",") if p.strip()}
        out.append((at, parts))
    return out


@dataclass
class Recovery:
    """One worker's assignments: how many were timed, the waits, and how many were cut short."""

    timed: int = 0
    interrupted: int = 0
    waits: list[float] = field(default_factory=list)

    @property
    def longest(self) -> float | None:
        return max(self.waits) if self.waits else None

    @property
    def median(self) -> float | None:
        return sorted(self.waits)[len(self.waits) // 2] if self.waits else None


def recovery_waits(assigned: dict[str, list[tuple[float, set[int]]]], partition_of: dict[str, int],
                   outputs: dict[str, list[float]], faults: list[float], until: float) -> dict[str, Recovery]:
    """Per worker, each assignment's wait before ``until``: the longest over its streams from the assignment to
    the stream's next output; one after the next fault or assignment, or never, interrupts it."""
    cuts = sorted(faults)
    out: dict[str, Recovery] = {}
    for worker, rows in assigned.items():
        rec = out.setdefault(worker, Recovery())
        times = sorted(at for at, _ in rows)
        for at, parts in rows:
            streams = [sid for sid, p in partition_of.items() if p in parts]
            if at >= until or not streams:
                continue
            bound = min([c for c in cuts if c > at][:1] + [t for t in times if t > at][:1], default=float("inf"))
            longest, cut = 0.0, False
            for sid in streams:
                ts = outputs.get(sid, [])
                i = bisect.bisect_left(ts, at)
                if i == len(ts) or ts[i] > bound:
                    cut = True
                    break
                longest = max(longest, ts[i] - at)
            rec.timed += 1
            if cut:
                rec.interrupted += 1
            else:
                rec.waits.append(round(longest, 1))
    return out
