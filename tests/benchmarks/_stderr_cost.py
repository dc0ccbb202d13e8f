"""Shared by the benchmarks: the per-event cost of the standard errors, measured in the run."""

from __future__ import annotations

import time

from streamxai.core.uncertainty import SmoothedStderr


def stderr_overhead(label: str, make, data: list, repeats: int = 5) -> None:
    """Per-event cost of the standard-error tracking (:class:`SmoothedStderr`): the same
    explainer on the same events with its tracker's updates replaced by no-ops, interleaved,
    best of ``repeats`` (the baseline of this run)."""
    real = (SmoothedStderr.add_increments, SmoothedStderr.add_donors)
    best = {True: float("inf"), False: float("inf")}
    try:
        for _ in range(repeats):
            for track in (True, False):
                if track:
                    SmoothedStderr.add_increments, SmoothedStderr.add_donors = real
                else:
                    SmoothedStderr.add_increments = lambda self, *a, **k: None
                    SmoothedStderr.add_donors = lambda self, *a, **k: None
                ex = make()
                for x, y in data[:200]:
                    ex.explain_one(x, y)
                t0 = time.perf_counter()
                for x, y in data[200:]:
                    ex.explain_one(x, y)
                best[track] = min(best[track], (time.perf_counter() - t0) / (len(data) - 200))
    finally:
        SmoothedStderr.add_increments, SmoothedStderr.add_donors = real
    on, off = best[True] * 1e6, best[False] * 1e6
    print(f"  {label:<34} explain_one {on:7.1f} us/event with standard errors, {off:7.1f} us without: "
          f"+{on - off:5.1f} us/event ({on / off:4.2f}x)")
