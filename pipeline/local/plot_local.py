"""``streamxai plot STREAM --local``: why one prediction, as a waterfall PNG read from the
local-explanations topic (the stream's latest explained event, or a chosen ``--event``).

>>> from streamxai.local.waterfall import parse_local
>>> local = parse_local({"schema": "local_explanation/v1", "stream_id": "cards", "seq": 7, "position": 7,
...     "model_version": 7, "target": 1, "prediction": 0.8, "base": 0.3, "method": "tree", "exact": True,
...     "n_background": 50, "values": {"amount": 0.45, "hour": 0.05}, "x": {"amount": 900, "hour": 2}})
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "cards-local.png"
>>> plot_local(local, out).stat().st_size > 5_000
True
>>> fig = draw_waterfall(local)
>>> [(float(b.get_x()), round(float(b.get_x() + b.get_width()), 12)) for b in bars(fig)]   # top first
[(0.35, 0.8), (0.3, 0.35)]
>>> import matplotlib.pyplot as plt; plt.close(fig)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
from streamxai.schemas import StreamxaiError

from ..settings import Settings
from .markers import level_text
from .waterfall import MAX_ROWS, find_local, parse_local, value_text, waterfall

__all__ = ["read_local", "draw_waterfall", "plot_local", "local_summary", "local_png_name", "bars"]

UP, DOWN, NONE = "tab:red", "tab:blue", "0.47"  # a feature that raises the prediction, lowers it, leaves it
BAR_GID = "waterfall-bar"


def read_local(s: Settings, stream_id: str, event: str | None = None, idle: float = 3.0) -> dict[str, Any]:
    """The local explanation (parsed: :func:`~streamxai.local.waterfall.parse_local`) of
    ``event`` of ``stream_id`` (its ``event_id``, or its seq), or the stream's latest, read from
    the beginning of the local-explanations topic until ``idle`` seconds pass without a message."""
    from ..kafka.config import check_broker
    from ..kafka.io import consume

    check_broker(s)
    topic = s.topic("local-explanations")
    key = stream_id.encode()
    found: dict[str, Any] | None = None
    n = 0
    for rec in consume(s, [topic], idle_timeout=idle):
        if rec.key != key:
            continue
        try:
            loc = parse_local(orjson.loads(rec.value)) if rec.value else None
        except orjson.JSONDecodeError:
            loc = None
        if loc is None or loc["stream_id"] != stream_id:
            continue
        n += 1
        if find_local([loc], event) is not None:
            found = loc  # the newest that matches
    if found is None:
        what = f"event {event!r} (an event_id or a seq)" if event else "any event"
        raise StreamxaiError(
            f"no local explanation of {what} of stream {stream_id!r} on {topic} ({n} of the stream read, until "
            f"{idle:g} s idle); local explanations are sent with local = true in the stream's settings "
            "(`streamxai tail local-explanations --from-beginning` lists what is there)")
    return found


def local_png_name(stream_id: str, event: str | None) -> str:
    """The PNG ``streamxai plot --local`` writes by default: the stream and event in a file name.

    >>> local_png_name("cards", None), local_png_name("cards", "txn/41 b")
    ('cards-local.png', 'cards-txn_41_b.png')
    """
    return f"{stream_id}-{re.sub(r'[^A-Za-z0-9._-]', '_', event) if event else 'local'}.png"


def local_summary(local: dict[str, Any], png: str | Path) -> str:
    """The line ``streamxai plot --local`` prints."""
    event = f"event {local['event_id']} (seq {local['seq']})" if local["event_id"] else f"seq {local['seq']}"
    return (f"wrote {png} (stream {local['stream_id']}, {event}: prediction {level_text(local['prediction'], 4)} = "
            f"base value {level_text(local['base'], 4)} + the attributions of {local['n_features']} features)")


def plot_local(local: dict[str, Any], path: str | Path, dpi: int = 110, max_rows: int = MAX_ROWS) -> Path:
    """Draw ``local``'s waterfall (:func:`draw_waterfall`) into the PNG ``path``."""
    return save_png(draw_waterfall(local, max_rows=max_rows), path, dpi)


def save_png(fig: Any, path: str | Path, dpi: int) -> Path:
    """Save the matplotlib Figure ``fig`` as the PNG ``path`` (its folder made) and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def draw_waterfall(local: dict[str, Any], max_rows: int = MAX_ROWS) -> Any:
    """The matplotlib Figure of one prediction's waterfall: a bar per feature, largest at the
    top, named with the event's value of it; from the bottom up each bar starts where the one
    below ended, the lowest at the base value, the top one ending at the prediction (dotted
    lines mark both). Red bars raise the prediction, blue ones lower it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = waterfall(local, max_rows=max_rows)
    rows = w["rows"]
    fig, ax = plt.subplots(figsize=(9, 1.4 + 0.42 * max(len(rows), 1)), constrained_layout=True)
    ys = list(range(len(rows)))[::-1]  # the first row on top
    lo = min([w["base"], w["prediction"]] + [min(r["start"], r["end"]) for r in rows])
    hi = max([w["base"], w["prediction"]] + [max(r["start"], r["end"]) for r in rows])
    pad = (hi - lo) * 0.18 or 0.05
    for y, r in zip(ys, rows, strict=True):
        color = UP if r["value"] > 0 else DOWN if r["value"] < 0 else NONE
        ax.barh(y, r["end"] - r["start"], left=r["start"], height=0.62, color=color, alpha=0.85 if "others" not in r else 0.45,
                gid=BAR_GID)
        # the value where the bar ends: right of a bar that raises the prediction, left of one that lowers it
        up = r["value"] >= 0
        err = "" if r.get("stderr") is None else f" ± {level_text(r['stderr'], 4)}"
        ax.text(r["end"] + (pad if up else -pad) * 0.04, y, ("+" if up else "−") + level_text(abs(r["value"]), 4) + err,
                va="center", ha="left" if up else "right", fontsize=8, color=color)
    for y0, b in zip(ys, rows[1:], strict=False):  # each bar begins where the one below it ends
        ax.plot([b["end"], b["end"]], [y0 - 0.31, y0 - 0.69], color="0.5", lw=0.8)
    ax.set_yticks(ys, [_row_label(r) for r in rows], fontsize=9)
    ax.axvline(w["base"], color="0.35", ls=":", lw=1)
    ax.axvline(w["prediction"], color="black", ls=":", lw=1)
    top = len(rows) - 0.45
    ax.text(w["base"], -0.75, f"base value {level_text(w['base'], 4)}", ha="center", va="top", fontsize=8, color="0.3")
    ax.text(w["prediction"], top, f"prediction {level_text(w['prediction'], 4)}", ha="center", va="bottom", fontsize=8)
    ax.set_ylim(-1.3, len(rows) + 0.2)
    ax.set_xlim(lo - pad, hi + pad)
    ax.grid(axis="x", alpha=0.3)
    target = local["target"]
    ax.set_xlabel("model output" if target is None else f"probability of {target}")
    event = f"event {local['event_id']} (seq {local['seq']})" if local["event_id"] else f"seq {local['seq']}"
    how = f"exact ({local['method']})" if local["exact"] else f"sampled ({local['method']})"
    ax.set_title(f"stream {local['stream_id']} · {event} · model version {local['model_version']}\n"
                 f"why this prediction: each feature's Shapley value against {local['n_background']} recent events, "
                 f"{how}", fontsize=10)
    return fig


def bars(fig: Any) -> list[Any]:
    """The waterfall's bars (matplotlib Rectangles) in a Figure of :func:`draw_waterfall`, top first."""
    return [p for ax in fig.axes for p in ax.patches if p.get_gid() == BAR_GID]


def _row_label(r: dict[str, Any]) -> str:
    if "others" in r:
        return r["feature"]
    x = value_text(r["x"])
    return r["feature"] if x == "" else f"{r['feature']} = {x}"
