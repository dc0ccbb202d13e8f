"""``streamxai plot``: a stream's explanation trajectories, change events and PD curves as a
PNG (and optionally an HTML report), read from the topics, for reports.

>>> from streamxai.local.dashboard import DashboardState
>>> st = DashboardState()
>>> for seq in range(0, 100, 10):
...     st.add("explanations", {"schema": "explanation/v4", "stream_id": "s", "explainer": "ipfi", "feature": "a",
...                             "value": seq / 100, "seq": seq, "position": seq, "n_explained": seq, "n_seen": seq})
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp()) / "s.png"
>>> plot_view(st.stream_view("s"), out).stat().st_size > 10_000
True
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any

from streamxai.schemas import StreamxaiError

from ..settings import Settings
from .dashboard.state import DashboardState
from .markers import group_changes, label_text, level_text, place_labels
from .plot_local import save_png

__all__ = ["read_stream", "plot_view", "draw", "plot_summary", "changes_text", "write_html", "require_matplotlib"]

MODEL_LOSS_COLOR = "deepskyblue"  # no feature's colour (tab10), so never mistaken for a change marker
LABEL_SIZE = 7  # points, of the change labels
LABEL_PAD = 2.0  # pixels either side of a change label's text
#: the newest change events and episodes of the stream that ``streamxai plot`` keeps and draws
PLOT_MAX_CHANGES = 20_000
PLOT_MAX_EPISODES = 10_000
#: topics a deployment made by an older streamxai may lack: read when they exist
LATER_TOPICS = ("change-episodes", "local-explanations")
NAMES = {"ipfi": "iPFI", "isage": "iSAGE", "ipdp": "iPDP (importance: spread of the PD curve)",
         "local": "Local (mean |Shapley value| per prediction)"}


def require_matplotlib() -> None:
    """Raise :class:`StreamxaiError` saying how to install matplotlib if it is missing: it is an
    optional extra (``streamxai[plot]``), which the workers do without."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise StreamxaiError(f"streamxai plot draws with matplotlib, which cannot be imported ({e}); install it "
                             "with pip install 'streamxai[plot]'") from None


def read_stream(s: Settings, stream_id: str, idle: float = 3.0, max_points: int = 2000) -> dict[str, Any]:
    """Everything the topics hold about ``stream_id`` (read from the beginning until ``idle``
    seconds pass without a message), as a dashboard view."""
    from ..kafka.config import check_broker
    from ..kafka.io import consume

    check_broker(s)  # one line for no broker or refused credentials, before the topic lookup below
    state = DashboardState(max_points=max_points, only=stream_id, max_changes=PLOT_MAX_CHANGES,
                           max_episodes=PLOT_MAX_EPISODES)
    n = len(s.topic_prefix)
    topics = [s.topic(t) for t in state.TOPICS if t not in LATER_TOPICS or _exists(s, s.topic(t))]
    for rec in consume(s, topics, idle_timeout=idle):
        if rec.key is not None and not rec.key.decode(errors="replace").startswith(stream_id):
            continue  # keys are stream_id or stream_id/...: skip other streams without decoding
        state.feed(rec.topic[n:], rec.value)
    view = state.stream_view(stream_id)
    if view is None or not view["explainers"]:
        raise StreamxaiError(
            f"no explanations of stream {stream_id!r} on {s.topic('explanations')} (read until {idle:g} s idle); "
            "check --stream-id and the topic prefix (`streamxai tail explanations --from-beginning` lists what is there)")
    return view


def plot_summary(view: dict[str, Any], png: str | Path) -> str:
    """The line ``streamxai plot`` prints: the file, the change events, the newest seq every
    explainer has explained (an event's seq, also where the charts' axis is positions)."""
    return f"wrote {png} ({changes_text(view)}, explained up to seq {view['explained_seq']})"


def changes_text(view: dict[str, Any]) -> str:
    """How many change events the stream had, and how many older ones are not drawn (the views
    keep the newest).

    >>> changes_text({"changes": [{}] * 3, "changes_total": 5, "changes_not_drawn": 2})
    '5 change events, the newest 3 drawn (2 older not drawn)'
    >>> changes_text({"changes": [{}]})
    '1 change event'
    """
    drawn = len(view["changes"])
    total = view.get("changes_total", drawn)
    left_out = view.get("changes_not_drawn", 0)
    text = f"{total} change event{'' if total == 1 else 's'}"
    return f"{text}, the newest {drawn} drawn ({left_out} older not drawn)" if left_out else text


def _exists(s: Settings, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    from ..kafka.config import confluent_config

    return topic in AdminClient(confluent_config(s)).list_topics(timeout=10).topics


def plot_view(view: dict[str, Any], path: str | Path, dpi: int = 110) -> Path:
    """Draw ``view`` (:meth:`DashboardState.stream_view`) into the PNG ``path``.

    One panel per explainer with every feature's importance over the stream (a dashed line at
    every change event, labels from :mod:`streamxai.local.markers`), the model's rolling loss,
    and the iPDP curves now (solid) and at the last change (dashed), with a ±stderr band.
    """
    return save_png(draw(view), path, dpi)


def draw(view: dict[str, Any]) -> Any:
    """The matplotlib Figure :func:`plot_view` saves (close it with ``plt.close``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter, MaxNLocator

    explainers = view["explainers"]  # in the order of streamxai.core.stream.EXPLAINER_NAMES
    curves = view.get("curves") or {}
    then_curves = view.get("curves_at_change") or {}
    features = sorted({f for ex in explainers for f in view["series"][ex]})
    colors = {f: plt.cm.tab10(i % 10) for i, f in enumerate(features)}
    model_loss = _model_loss(view)
    has_loss = bool(view["loss"]["x"]) or model_loss is not None
    rows = len(explainers) + int(has_loss)
    pd_cols = min(5, max(1, len(curves)))
    pd_rows = math.ceil(len(curves) / pd_cols) if curves else 0
    fig = plt.figure(figsize=(12, 2.6 * rows + 2.4 * pd_rows + 0.6), constrained_layout=True)
    grid = fig.add_gridspec(rows + pd_rows, pd_cols, height_ratios=[2.6] * rows + [2.4] * pd_rows)
    fig.suptitle(f"stream {view['stream_id']}: explanations over {view['last_seq'] + 1 if view['last_seq'] >= 0 else '?'} "
                 f"events, {changes_text(view)}")
    top = None
    labelled: list[tuple[Any, list[dict]]] = []  # panels and their groups of changes, labelled once laid out
    for r, ex in enumerate(explainers):
        ax = fig.add_subplot(grid[r, :], sharex=top)
        top = top or ax
        for f, pts in sorted(view["series"][ex].items()):
            xs, ys = pts["x"], [math.nan if y is None else y for y in pts["y"]]
            ax.plot(xs, ys, color=colors[f], lw=1.3, label=f)
            if "se" in pts:
                lo = [y - (e or 0.0) for y, e in zip(ys, pts["se"], strict=True)]
                hi = [y + (e or 0.0) for y, e in zip(ys, pts["se"], strict=True)]
                ax.fill_between(xs, lo, hi, color=colors[f], alpha=0.2, lw=0)
        mine = [c for c in view["changes"] if c.get("explainer") in (ex, None)]
        _changes(ax, mine, colors)
        labelled.append((ax, group_changes(mine, view.get("episodes") or [])))
        _episodes(ax, view.get("episodes") or [])
        ax.set_ylabel(NAMES.get(ex, ex).split(" ")[0])
        ax.set_title(NAMES.get(ex, ex), fontsize=10, loc="left")
        ax.grid(alpha=0.3)
    left_out = view.get("changes_not_drawn") or 0
    if top is not None and left_out and view["changes"]:  # where the drawn ones begin, in each panel's corner
        oldest = min(c["position"] for c in view["changes"])
        for ax, _ in labelled:
            shown = ax.get_xlim()
            ax.axvspan(shown[0], oldest, color="0.85", alpha=0.35, lw=0)
            ax.set_xlim(shown)
            ax.text(0.005, 0.03, f"{left_out} older change events not drawn (before position {oldest})",
                    transform=ax.transAxes, fontsize=7, color="dimgray", va="bottom")
    if top is not None:  # in the first panel's title row: inside the panel it hid the change labels along its top
        top.legend(ncol=min(len(features), 9), fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0),
                   frameon=False, borderaxespad=0.1, columnspacing=1.2, handlelength=1.5)
    if has_loss:
        ax = fig.add_subplot(grid[len(explainers), :], sharex=top)
        if view["loss"]["x"]:
            ax.plot(view["loss"]["x"], [math.nan if y is None else y for y in view["loss"]["y"]], color="black", lw=1.5,
                    label="rolling loss (predictions)")
        if model_loss is not None:  # on top: where the two agree, its dashes still show over the black line
            ax.plot(model_loss["x"], [math.nan if y is None else y for y in model_loss["y"]], color=MODEL_LOSS_COLOR,
                    lw=1.3, ls="--", zorder=3, label="model loss (explanations: the change test's input)")
        _changes(ax, view["changes"], colors)
        ax.set_ylabel("loss")
        ax.set_xlabel("position (seq + labels that came later)" if view.get("labels") else "seq")
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(alpha=0.3)
    for i, (f, c) in enumerate(sorted(curves.items())):
        ax = fig.add_subplot(grid[rows + i // pd_cols, i % pd_cols])
        grid_x, pd = _sorted(c["grid"], c["pd"])
        ax.plot(grid_x, pd, color=colors.get(f, "C0"), lw=1.8, marker="o", ms=3, label=f"now (seq {c['seq']})")
        if isinstance(c.get("se"), list):
            gx, se = _sorted(c["grid"], c["se"])
            ax.fill_between(gx, [p - e for p, e in zip(pd, se, strict=True)], [p + e for p, e in zip(pd, se, strict=True)],
                            color=colors.get(f, "C0"), alpha=0.2, lw=0)
        then = then_curves.get(f)
        if then:
            tx, tp = _sorted(then["grid"], then["pd"])
            ax.plot(tx, tp, color=colors.get(f, "C0"), lw=1.2, ls="--", label=f"at change (seq {then['seq']})")
        ax.set_title(f"PD of {f}", fontsize=9)
        ax.tick_params(labelsize=7)
        if all(isinstance(v, (int, float)) for v in grid_x):  # a category axis keeps a tick at each category
            ax.xaxis.set_major_locator(MaxNLocator(4))
        if max((abs(v) for v in grid_x if isinstance(v, (int, float))), default=0) >= 1e4:
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))  # 100k, not 100000 squeezed together
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    _label_changes(fig, labelled, colors)
    return fig


def _model_loss(view: dict[str, Any]) -> dict[str, list] | None:
    """The model's rolling loss as the explanations carry it: every explainer of a stream reports
    the same model's loss, so it is one series, the explainers' longest. None without two points.

    >>> _model_loss({"model_loss": {"ipfi": {"x": [9, 19], "y": [0.3, 0.2]}, "ipdp": {"x": [9], "y": [0.3]}}})
    {'x': [9, 19], 'y': [0.3, 0.2]}
    """
    series = [pts for pts in (view.get("model_loss") or {}).values() if len(pts["x"]) >= 2]
    return max(series, key=lambda pts: len(pts["x"]), default=None)


def _sorted(xs: list, ys: list) -> tuple[list, list]:
    pairs = sorted(zip(xs, ys, strict=False), key=lambda p: p[0])
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _changes(ax: Any, changes: list[dict], colors: dict) -> None:
    """A dashed line at every change, in its series' colour (labelled by :func:`_label_changes`)."""
    for c in changes:
        ax.axvline(c["position"], color=colors.get(c.get("feature"), "crimson"), ls="--", lw=1, alpha=0.8)


def _label_changes(fig: Any, labelled: list[tuple[Any, list[dict]]], colors: dict) -> None:
    """One label per group of changes (:func:`streamxai.local.markers.place_labels`) along the
    top of each panel, placed in the pixels of the figure's final layout."""
    if not any(groups for _, groups in labelled):
        return
    fig.canvas.draw()  # the constrained layout fixes the panels' sizes; the labels follow them
    fig.set_layout_engine("none")
    renderer = fig.canvas.get_renderer()
    probe = fig.text(0, 0, "", fontsize=LABEL_SIZE)

    def width(text: str) -> float:
        probe.set_text(text)
        return probe.get_window_extent(renderer).width + 2 * LABEL_PAD

    for ax, groups in labelled:
        x0, _, x1, _ = ax.get_window_extent(renderer).extents
        to_px = ax.transData.transform
        from_px = ax.transData.inverted().transform
        (lo, hi) = sorted(ax.get_xlim())
        shown = [g for g in groups if lo <= g["position"] <= hi]
        for g, left, row in place_labels(shown, lambda pos, to_px=to_px: to_px((pos, 0))[0], width, right=x1):
            ep = g.get("episodes") or ([g["episode"]] if g.get("episode") else [])
            features = {c.get("feature") for c in g["changes"]}
            color = ("crimson" if any(e.get("alert") for e in ep)
                     else colors.get(next(iter(features)), "dimgray") if len(features) == 1 else "dimgray")
            ax.annotate(label_text(g), (from_px((max(left, x0) + LABEL_PAD, 0))[0], 1.0),
                        xycoords=("data", "axes fraction"), xytext=(0, -2 - row * (LABEL_SIZE + 3)),
                        textcoords="offset points", va="top",
                        ha="left", fontsize=LABEL_SIZE, color=color, gid="change-label", annotation_clip=False,
                        bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75})
    probe.remove()


def _episodes(ax: Any, episodes: list[dict]) -> None:
    """Shade each change episode from where its new regime began to its last change (positions)."""
    for ep in episodes:
        a = ep.get("cut_position") if ep.get("cut_position") is not None else ep.get("first_position")
        b = ep.get("last_position") if ep.get("last_position") is not None else a
        if a is not None:
            ax.axvspan(a, max(b, a + 1), color="orange", alpha=0.15, lw=0)


def write_html(view: dict[str, Any], png: Path, path: str | Path) -> Path:
    """A self-contained HTML report: the PNG inline and a table of the change events."""
    img = base64.b64encode(Path(png).read_bytes()).decode()
    rows = "".join(
        f"<tr><td>{_at(c, 'seq', view)}</td><td>{_at(c, 'cut_seq', view)}</td><td>{html.escape(str(c.get('explainer')))}</td><td>{html.escape(str(c.get('feature')))}</td>"
        f"<td>{_fmt(c.get('before'))}</td><td>{_fmt(c.get('after'))}</td></tr>" for c in view["changes"])
    ranking = "".join(
        f"<li><b>{html.escape(ex)}</b>: " + ", ".join(f"{html.escape(r['feature'])} {level_text(r['value'], 3)}" for r in rs[:5]) + "</li>"
        for ex, rs in view["ranking"].items())
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>streamxai: {html.escape(view['stream_id'])}</title>"
           "<style>body{font-family:sans-serif;margin:1em}td,th{padding:2px 8px;text-align:right}</style></head><body>"
           f"<h1>stream {html.escape(view['stream_id'])}</h1><p>{view['predictions']} predictions, last seq {view['last_seq']}</p>"
           f"<h2>Ranking at the end</h2><ul>{ranking}</ul>"
           f"<img alt='explanation trajectories' style='max-width:100%' src='data:image/png;base64,{img}'>"
           f"<h2>Change events ({html.escape(changes_text(view))})</h2><table><tr><th>detected at seq</th><th>regime from seq</th>"
           f"<th>explainer</th><th>feature</th><th>mean increment before</th><th>after</th></tr>{rows}</table>"
           "<p>Levels are the change test's: the mean per-event increment on each side of the cut, not the "
           "published (smoothed) value.</p>"
           f"{_episodes_html(view.get('episodes') or [], view)}</body></html>")
    path = Path(path)
    path.write_text(doc)
    return path


def _at(rec: dict, seq_field: str, view: dict) -> str:
    """A change's seq field, with its position when labels come later (where they differ).

    >>> _at({"seq": 480, "position": 1000}, "seq", {"labels": {"waiting": 0}}), _at({"seq": 7}, "seq", {})
    ('480 (position 1000)', '7')
    """
    seq = rec.get(seq_field)
    pos = rec.get("position" if seq_field == "seq" else seq_field.replace("_seq", "_position"))
    shown = "–" if seq is None else str(seq)
    return f"{shown} (position {pos})" if view.get("labels") and pos is not None and pos != seq else shown


def _episodes_html(episodes: list[dict], view: dict) -> str:
    if not episodes:
        return ""
    rows = "".join(
        f"<tr><td>{_at(ep, 'cut_seq', view)}</td><td>{_at(ep, 'first_seq', view)}..{_at(ep, 'last_seq', view)}</td>"
        "<td style='text-align:left'>"
        + "<br>".join(f"{html.escape(str(c.get('explainer')))}/{html.escape(str(c.get('feature')))} "
                      f"{_fmt(c.get('before'))} → {_fmt(c.get('after'))}" for c in ep.get("changes", []))
        + f"</td><td>{_fmt(ep.get('loss_before'))} → {_fmt(ep.get('loss_after'))}</td></tr>" for ep in episodes)
    return (f"<h2>Change episodes ({len(episodes)})</h2><table><tr><th>regime from</th><th>changes at</th>"
            f"<th>changes (mean increment before → after)</th><th>model loss</th></tr>{rows}</table>")


def _fmt(v: Any) -> str:
    """A level in the report's tables: four decimals, compact beyond four digits (as the labels)."""
    return "–" if v is None else level_text(v, 4)
