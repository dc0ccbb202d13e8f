"""Labels of change markers a person can read when changes come close together.

>>> changes = [{"explainer": "ipfi", "feature": f, "position": p} for f, p in (("a", 100), ("b", 120), ("c", 900))]
>>> episodes = [{"first_position": 100, "last_position": 120, "kind": "degradation", "alert": True}]
>>> [label_text(g) for g in group_changes(changes, episodes)]
['ALERT degradation: a, b', 'c']
>>> layout_labels([(0, 50), (30, 50), (40, 50), (200, 50)], right=1000)  # two rows, then shared
[([0], 0, 50, 0), ([1, 2], 30, 80, 1), ([3], 200, 250, 0)]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["group_changes", "label_text", "layout_labels", "level_text", "merge", "place_labels"]

#: series named in a label before it says "N series" instead
NAMED_SERIES = 2
#: pixels kept free between two labels of a row
GAP = 4.0
#: rows of labels along a chart's top before neighbours share a label
ROWS = 2


def _span(ep: dict) -> tuple[float, float] | None:
    """Where an episode's changes lie on the stream's positions."""
    a, b = ep.get("first_position"), ep.get("last_position")
    if a is None:
        return None
    return a, a if b is None else b


def group_changes(changes: list[dict], episodes: list[dict]) -> list[dict]:
    """The changes (each with a ``position``) grouped by the episode whose first..last change
    positions hold them, in order of position; a change in no episode is a group of its own.
    A group is ``{"position": first, "changes": [...], "episode": episode or None}``. A drift
    raises changes on several series at once, so grouping them keeps their labels readable;
    the dashboard's ``dashboard.js`` does the same.
    """
    spans = [(s, ep) for ep in episodes if (s := _span(ep)) is not None]
    groups: dict[int, dict] = {}
    for i, c in enumerate(sorted(changes, key=lambda c: c["position"])):
        ep = next((ep for (a, b), ep in spans if a <= c["position"] <= b), None)
        key = id(ep) if ep is not None else -1 - i
        g = groups.setdefault(key, {"position": c["position"], "changes": [], "episode": ep})
        g["changes"].append(c)
    return sorted(groups.values(), key=lambda g: g["position"])


def merge(groups: list[dict]) -> dict:
    """One group of several neighbouring ones (their labels had no room apart)."""
    eps = [g["episode"] for g in groups if g["episode"] is not None]
    return {"position": groups[0]["position"], "changes": [c for g in groups for c in g["changes"]],
            "episode": eps[0] if len(eps) == 1 else None, "episodes": eps,
            "lone": sum(len(g["changes"]) for g in groups if g["episode"] is None)}


#: the compact units of a level beyond four digits, as the dashboard's axes name them (3.25T)
_UNITS = ((1e3, "K"), (1e6, "M"), (1e9, "B"), (1e12, "T"))


def _fixed(v: float, decimals: int) -> str:
    """``v`` with ``decimals`` decimals, a tie rounded away from zero (as JavaScript's toFixed)."""
    return str(Decimal(v).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _significant(m: float, digits: int = 3) -> str:
    """``m`` (not 0) to ``digits`` significant digits, trailing zeros dropped."""
    text = _fixed(m, max(0, digits - 1 - math.floor(math.log10(abs(m)))))
    return text.rstrip("0").rstrip(".") if "." in text else text


def level_text(v: float, decimals: int = 2) -> str:
    """A change's level as its label shows it: up to four digits with ``decimals`` decimals, beyond
    that compact with three significant digits (K, M, B, T; from 1e15 an exponent), as the
    dashboard's ``levelText`` does (tests/integration/test_dashboard_browser.py compares them).

    >>> [level_text(v) for v in (0.1, 6342689766.11, 730973117446.7, 999960.0, -3.25e15)]
    ['0.10', '6.34B', '731B', '1M', '-3.25e15']
    """
    v = v or 0.0  # -0.0 as 0.0, as toFixed gives it
    a = abs(v)
    if a < 1e4:
        return _fixed(v, decimals)
    if not math.isfinite(v):
        return str(v)
    for scale, unit in _UNITS:
        if a < scale * 1e3:
            m = _significant(v / scale)
            if abs(float(m)) < 1e3:  # else rounded up to the next unit's 1
                return m + unit
    e = math.floor(math.log10(a))
    m = _significant(v / 10 ** e)
    if abs(float(m)) >= 10:  # rounded up to the next power of ten
        e, m = e + 1, _significant(v / 10 ** (e + 1))
    return f"{m}e{e}"


def label_text(group: dict) -> str:
    """What a group's label says: the episode's kind (``ALERT`` first when it pages) and the
    series that changed (names up to :data:`NAMED_SERIES`, else how many); a lone change
    outside any episode keeps its levels.

    >>> label_text({"changes": [{"feature": "age", "before": 0.1, "after": 0.3}], "episode": None})
    'age 0.10→0.30'
    >>> label_text(merge([{"position": 1, "changes": [{"feature": f} for f in "abc"],
    ...                    "episode": {"kind": "learning"}}, {"position": 9, "changes": [{"feature": "d"}],
    ...                    "episode": {"kind": "degradation", "alert": True}}]))
    'ALERT 2 episodes: 4 series'
    """
    series = list(dict.fromkeys(str(c.get("feature", "")) for c in group["changes"]))
    eps = group.get("episodes") or ([group["episode"]] if group.get("episode") else [])
    alert = "ALERT " if any(ep.get("alert") for ep in eps) else ""
    if len(eps) > 1:
        head = f"{alert}{len(eps)} episodes"
    elif eps and eps[0].get("kind"):
        head = f"{alert}{eps[0]['kind'].replace('_', ' ')}"
    else:
        head = ""
    if head and group.get("lone"):  # changes outside the episode(s) share its label: not told as theirs
        head += f" + {group['lone']} other change" + ("s" if group["lone"] > 1 else "")
    if len(group["changes"]) == 1 and not head:
        c = group["changes"][0]
        before, after = c.get("before"), c.get("after")
        return series[0] + (f" {level_text(before)}→{level_text(after)}" if before is not None and after is not None
                            else "")
    names = ", ".join(series) if len(series) <= NAMED_SERIES else f"{len(series)} series"
    return f"{head}: {names}" if head else names


def layout_labels(labels: list[tuple[float, float]], right: float, gap: float = GAP,
                  width_of: Callable[[list[int]], float] | None = None,
                  rows: int = ROWS) -> list[tuple[list[int], float, float, int]]:
    """Boxes for labels ``(x, width)`` (pixels, sorted by x) that do not overlap: a label starts
    at its x (or ends at ``right``), in the first of ``rows`` rows with room; when none has, it
    and the one before become one, of width ``width_of(indices)``. Returns
    ``[(indices, left, right, row), ...]`` in order of x, boxes of a row ``gap`` pixels apart.

    >>> layout_labels([(0, 50), (30, 50), (60, 50)], right=1000)
    [([0], 0, 50, 0), ([1], 30, 80, 1), ([2], 60, 110, 0)]
    >>> layout_labels([(990, 40)], right=1000, rows=1)
    [([0], 960, 1000, 0)]
    """
    width_of = width_of or (lambda idx: max(labels[i][1] for i in idx))
    boxes: list[tuple[list[int], float, float, int]] = []
    for i in range(len(labels)):
        idx = [i]
        while True:
            w = width_of(idx)
            left = min(labels[idx[0]][0], right - w)
            ends = [max((b[2] for b in boxes if b[3] == r), default=-math.inf) for r in range(rows)]
            row = next((r for r in range(rows) if left >= ends[r] + gap), None)
            if row is None:
                idx = boxes.pop()[0] + idx  # no room: one label for both, placed where the first began
                continue
            boxes.append((idx, left, left + w, row))
            break
    return boxes


def place_labels(groups: list[dict], x_of: Callable[[float], float], width_of: Callable[[str], float],
                 right: float) -> list[tuple[dict, float, int]]:
    """``(group, left, row)`` for every label of ``groups`` on an axis: the groups merged where their
    labels would overlap (``x_of`` a position's pixel, ``width_of`` a text's width in pixels)."""
    texts: dict[tuple[int, ...], str] = {}

    def text(idx: list[int]) -> str:
        key = tuple(idx)
        if key not in texts:
            texts[key] = label_text(groups[idx[0]] if len(idx) == 1 else merge([groups[i] for i in idx]))
        return texts[key]

    items = [(x_of(g["position"]), width_of(text([i]))) for i, g in enumerate(groups)]
    boxes = layout_labels(items, right, width_of=lambda idx: width_of(text(idx)))
    return [(groups[idx[0]] if len(idx) == 1 else merge([groups[i] for i in idx]), left, row)
            for idx, left, _, row in boxes]
