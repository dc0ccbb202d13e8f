"""The elec2 stream (``../shared/data/elec2.csv``, see that folder's README) for the benchmarks
on real data, as recorded or with the iPFI paper's feature drift ("fe. 1"): from ``at`` on, the
values of two features exchanged, at once or, gradually, for a share of the events that grows
linearly to all over ``width`` events (a seeded draw per event).

>>> rows = list(zip(range(3), elec2_events()))
>>> [sorted(x) for _, (x, y) in rows][0] == sorted(FEATURES), [y for _, (x, y) in rows]
(True, [1, 1, 1])
"""

from __future__ import annotations

import csv
import os
import random
from collections.abc import Iterator

__all__ = ["FEATURES", "N_EVENTS", "PATH", "elec2_events", "require"]

#: the stream's features, in the file's order (the class column is the label)
FEATURES = ("period", "nswprice", "nswdemand", "vicprice", "vicdemand", "transfer")
N_EVENTS = 45_312
PATH = os.environ.get("STREAMXAI_ELEC2", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                                      "data", "elec2.csv"))


def require() -> str:
    """The data file's path; exits with one line saying where it was looked for when it is absent."""
    if not os.path.exists(PATH):
        raise SystemExit(f"elec2 not found at {os.path.abspath(PATH)}: set STREAMXAI_ELEC2 to the path of elec2.csv")
    return PATH


def elec2_events(swap: tuple[str, str] | None = None, at: int = 20_000, width: int = 0,
                 seed: int = 1) -> Iterator[tuple[dict[str, float], int]]:
    """``(x, y)`` of every event; ``swap``: the two features whose values are exchanged from
    event ``at`` on (``width`` > 0: gradually, as in the module docstring)."""
    rng = random.Random(seed)
    with open(require(), newline="") as f:
        for t, row in enumerate(csv.DictReader(f)):
            x = {c: float(row[c]) for c in FEATURES}
            if swap is not None and t >= at and (not width or rng.random() < (t - at) / width):
                a, b = swap
                x[a], x[b] = x[b], x[a]
            yield x, int(float(row["class"]))
