"""The elec2 stream (``../shared/data/elec2.csv``, see that folder's README) for the benchmarks
on real data, as recorded or with the iPFI paper's feature drift ("fe. 1"): from ``at`` on, the
values of two features exchanged, at once or, gradually, for a share of the events that grows
linearly to all over ``width`` events (a seeded draw per event).

The file lacks the data set's ``date`` and ``day`` attributes, which the papers' version has. Its rows
are complete days of 48 half-hour periods in order (``period`` is 0 at every 48th row), so
``calendar=True`` rebuilds them: ``day``, the weekday 1 to 7 (the stream starts on Tuesday 7 May 1996,
day 2 counting Monday as 1), and ``date``, the day's index over the 944 days scaled to ``[0, 1]`` (a
monotone stand-in for the original's normalised date: a tree splits on it at the same events).

>>> rows = list(zip(range(3), elec2_events()))
>>> [sorted(x) for _, (x, y) in rows][0] == sorted(FEATURES), [y for _, (x, y) in rows]
(True, [1, 1, 1])
"""

from __future__ import annotations

import csv
import os
import random
from collections.abc import Iterator

__all__ = ["FEATURES", "CALENDAR", "N_EVENTS", "PATH", "elec2_events", "require"]

#: the stream's features, in the file's order (the class column is the label)
FEATURES = ("period", "nswprice", "nswdemand", "vicprice", "vicdemand", "transfer")
N_EVENTS = 45_312
#: the rebuilt calendar attributes (``calendar=True``), placed before the file's features as in the papers'
CALENDAR = ("date", "day")
PATH = os.environ.get("STREAMXAI_ELEC2", os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                                                      "data", "elec2.csv"))


def require() -> str:
    """The data file's path; exits with one line saying where it was looked for when it is absent."""
    if not os.path.exists(PATH):
        raise SystemExit(f"elec2 not found at {os.path.abspath(PATH)}: set STREAMXAI_ELEC2 to the path of elec2.csv")
    return PATH


def elec2_events(swap: tuple[str, str] | None = None, at: int = 20_000, width: int = 0,
                 seed: int = 1, calendar: bool = False) -> Iterator[tuple[dict[str, float], int]]:
    """``(x, y)`` of every event; ``swap``: the two features whose values are exchanged from
    event ``at`` on (``width`` > 0: gradually, as in the module docstring); ``calendar``: with
    ``date`` and ``day`` rebuilt (the module docstring).

    >>> x, _ = next(elec2_events(calendar=True))
    >>> x["date"], x["day"]
    (0.0, 2.0)
    """
    rng = random.Random(seed)
    days = N_EVENTS // 48
    with open(require(), newline="") as f:
        for t, row in enumerate(csv.DictReader(f)):
            x = {"date": (t // 48) / (days - 1), "day": float((t // 48 + 1) % 7 + 1)} if calendar else {}
            x.update((c, float(row[c])) for c in FEATURES)
            if swap is not None and t >= at and (not width or rng.random() < (t - at) / width):
                a, b = swap
                x[a], x[b] = x[b], x[a]
            yield x, int(float(row["class"]))
