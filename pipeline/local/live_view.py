"""A terminal view of one or more streams: importances updating live, change events, summary."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import orjson

from ..core.stream import EXPLAINER_NAMES
from ..kafka.io import Record
from ..schemas.change_feed import fault_subject
from .markers import level_text
from .output_reader import OutputReader, StreamState

__all__ = ["LiveView"]


class LiveView:
    """Feed it records of predictions, explanations, change events, change episodes (read by
    an :class:`~streamxai.local.output_reader.OutputReader`) and dead letters.

    >>> import io
    >>> view = LiveView(["a"], "p.", out=io.StringIO())
    >>> view.add(Record("p.drift-events", 0, 0, b"s", b'{"schema": "drift_event/v3", "stream_id": "s", "explainer":'
    ...                 b' "ipfi", "feature": "a", "seq": 70, "cut_seq": 50, "position": 70, "cut_position": 50,'
    ...                 b' "level_before": 0.1, "level_after": 0.4}'))
    >>> view.changes
    [{'stream_id': 's', 'seq': 70, 'explainer': 'ipfi', 'feature': 'a', 'before': 0.1, 'after': 0.4, 'cut_seq': 50, 'schema': 'drift_event/v3', 'position': 70, 'cut_position': 50}]
    """

    def __init__(self, features: list[str], prefix: str, out: TextIO = sys.stdout, plan: str = ""):
        self.features = features
        self.prefix = prefix
        self.out = out
        self.plan = plan
        self.reader = OutputReader()
        self.dead_letters: list[dict[str, Any]] = []
        self._tty = out.isatty()
        self._last_render = 0.0

    @property
    def streams(self) -> dict[str, StreamState]:
        return self.reader.streams

    @property
    def changes(self) -> list[dict[str, Any]]:
        """Every stream's change events (as the reader keeps them), in the order of their positions."""
        return sorted(({"stream_id": sid, **c} for sid, st in self.streams.items() for c in st.changes),
                      key=lambda c: c["position"])

    @property
    def episodes(self) -> list[dict[str, Any]]:
        """Every stream's change episodes (as :attr:`changes`), by the position they opened at."""
        return sorted(({"stream_id": sid, **e} for sid, st in self.streams.items() for e in st.episodes),
                      key=lambda e: e.get("first_position") or 0)

    def forget_changes(self) -> None:
        """Drop the change events and episodes read so far (to read their topics again)."""
        for st in self.streams.values():
            st.changes.clear()
            st.episodes.clear()

    def add(self, rec: Record) -> None:
        name = rec.topic[len(self.prefix):]
        if name == "dead-letters":
            try:
                obj = orjson.loads(rec.value) if rec.value else None
            except orjson.JSONDecodeError:
                obj = None
            self.dead_letters.append(obj if isinstance(obj, dict) else {})
        else:
            self.reader.feed(name, rec.value)

    def ranking(self, sid: str) -> dict[str, dict[str, float]]:
        st = self.streams.get(sid)
        cur = st.current if st is not None else {}
        return {ex: {f: cur[(ex, f)]["value"] for f in self.features if (ex, f) in cur} for ex in EXPLAINER_NAMES}

    def min_explained_seq(self, sid: str) -> int:
        st = self.streams.get(sid)
        return st.min_explained_seq() if st is not None else -1

    def render(self, force: bool = False, every: float = 1.0) -> None:
        now = time.monotonic()
        if not force and now - self._last_render < (every if self._tty else 5 * every):
            return
        self._last_render = now
        lines = []
        if self.plan:
            lines.append(f"demo stream: {self.plan}")
        for sid, st in sorted(self.streams.items()):
            err = st.mean_loss()
            lines.append(f"stream {sid}: {st.predictions} predictions (last seq {st.last_pred_seq}), "
                         f"mean loss of last {len(st.loss_window)}: {_fmt(err, 3, 'nan')}")
            counts = ", ".join(f"{ex} {n}/{m}" for ex, (n, m) in sorted(st.counts.items()))
            lines.append(f"  explained/seen: {counts or '-'}")
            if st.waiting is not None:
                lines.append(f"  {labels_line(st)}")
            lines.append(f"  {'feature':<11}{'iPFI':>9}  {'':<20}{'iSAGE':>9}{'iPDP':>9}")
            values = {key: cur["value"] for key, cur in st.current.items()}
            top = max((abs(v) for (ex, _), v in values.items() if ex == "ipfi"), default=0.0) or 1.0
            for f in self.features:
                ipfi = values.get(("ipfi", f))
                bar = "#" * int(20 * max(ipfi or 0.0, 0.0) / top)
                cells = [_fmt(ipfi), f"{bar:<20}", _fmt(values.get(("isage", f))), _fmt(values.get(("ipdp", f)))]
                lines.append(f"  {f:<11}{cells[0]:>9}  {cells[1]}{cells[2]:>9}{cells[3]:>9}")
        changes = self.changes
        episodes = [e for st in self.streams.values() for e in st.episodes]
        alerts = f" (alerts: {sum(1 for e in episodes if e.get('alert'))})" if any(e.get("kind") for e in episodes) else ""
        lines.append(f"change events: {len(changes)}   episodes: {len(episodes)}{alerts}   "
                     f"dead letters: {len(self.dead_letters)}")
        for ch in changes[-8:]:
            series = f"{ch['stream_id']}/{ch['explainer']}/{ch['feature']}"
            lines.append(f"  seq {ch['seq']:>6}  {series:<32} {_fmt(ch['before'])} -> {_fmt(ch['after'])}"
                         f"  (new regime from seq {ch.get('cut_seq', '?')})")
        text = "\n".join(lines)
        if self._tty:
            self.out.write("\x1b[H\x1b[2J" + text + "\n")
        else:
            self.out.write(text + "\n\n")
        self.out.flush()

    def summary(self) -> str:
        lines = ["", "=== summary === (value ± half-width of its 95 % interval)"]
        for sid, st in sorted(self.streams.items()):
            lines.append(f"stream {sid}: {st.predictions} predictions, explained up to seq "
                         f"{st.min_explained_seq()}")
            if st.waiting is not None:
                lines.append(f"  {labels_line(st)}")
            final = self.ranking(sid)
            for ex in EXPLAINER_NAMES:
                if final.get(ex):
                    ranked = sorted(final[ex].items(), key=lambda kv: -kv[1])[:3]
                    lines.append(f"  top {ex:<5}: " + ", ".join(
                        f"{f}={level_text(v, 3)}{_bound(st.current[(ex, f)]['stderr'])}" for f, v in ranked))
            episodes = sorted(st.episodes, key=lambda e: e.get("first_position") or 0)
            lines.append(f"  change events: {len(st.changes)}, change episodes: {len(episodes)}")
            for ep in episodes:
                lines += episode_lines(ep)
        if self.dead_letters:
            lines.append(f"dead letters: {len(self.dead_letters)} "
                         f"({', '.join(sorted({str(d.get('reason')) for d in self.dead_letters}))})")
        return "\n".join(lines)


def episode_lines(ep: dict[str, Any], top: int = 4) -> list[str]:
    """A change episode as the reader keeps it (:func:`~streamxai.local.output_reader.parse_episode`)
    in a few lines: where the new regime began, the model's loss, the top changed series with the
    explainer's values and ranks before and after (the episode's split; their levels where the
    episode carries no values).

    >>> from streamxai.local.output_reader import parse_episode
    >>> ep = parse_episode({"first_seq": 6120, "cut_seq": 6000, "loss_before": 0.05, "loss_after": 0.31,
    ...       "kind": "degradation", "alert": True, "status": "closed",
    ...       "changes": [{"explainer": "ipfi", "feature": "car", "level_before": 0.0, "level_after": 0.21,
    ...                    "relative_effect": 0.9, "cut_seq": 6000}],
    ...       "explanations": {"ipfi": {"car": {"before": 0.0, "after": 0.2, "rank_before": 5, "rank_after": 1}}}})
    >>> for line in episode_lines(ep):
    ...     print(line)
        ALERT degradation: episode opened at seq 6120, new regime from seq 6000; model loss 0.050 -> 0.310
          ipfi/car      0.0000 -> 0.2000  (rank 5 -> 1)
    """
    lb, la = ep.get("loss_before"), ep.get("loss_after")
    loss = f"; model loss {level_text(lb, 3)} -> {level_text(la, 3)}" if lb is not None and la is not None else ""
    cuts = sorted({c["cut_seq"] for c in ep["changes"] if c["cut_seq"] is not None}) or [ep["cut_seq"]]
    where = f"new regime from seq {cuts[0]}" if len(cuts) == 1 else f"new regimes from seq {cuts[0]} to {cuts[-1]}"
    lines = [f"    {episode_kind(ep)}episode opened at seq {ep['first_seq']}, {where}{loss}"
             + (" (still open)" if ep.get("status") == "open" else "")]
    shown: list[tuple[str, str]] = []
    for c in ep["changes"]:  # ranked by relative effect; a series that changed twice shows once
        key = (c["explainer"], c["feature"])
        if key in shown or len(shown) == top:
            continue
        shown.append(key)
        before = c["explanation_before"] if c["explanation_before"] is not None else c["before"]
        after = c["explanation_after"] if c["explanation_after"] is not None else c["after"]
        rank = ""
        if c["rank_before"] is not None and c["rank_after"] is not None:
            rank = f"  (rank {c['rank_before']} -> {c['rank_after']})"
        name = f"{c['explainer']}/{c['feature']}"
        lines.append(f"      {name:<13}{_fmt(before):>7} -> {_fmt(after)}{rank}")
    if ep["n_series"] > top:
        lines.append(f"      ... and {ep['n_series'] - top} more")
    for f in ep.get("faults") or ():  # a data fault: what to check
        relied = f" (relied on at {f['reliance']:.0%} of the top feature)" if f.get("reliance") is not None else ""
        lines.append(f"      check {fault_subject(f)}: {f['detail']}{relied}")
    return lines


def episode_kind(ep: dict[str, Any]) -> str:
    """``"ALERT degradation: "``, ``"learning: "``: the episode's kind, marked when it is an alert
    (nothing for an episode whose kind is not known).

    >>> episode_kind({"kind": "reliance_shift", "alert": True}), episode_kind({"kind": "learning", "alert": False})
    ('ALERT reliance_shift: ', 'learning: ')
    """
    kind = ep.get("kind")
    if not kind:
        return ""
    return f"{'ALERT ' if ep.get('alert') else ''}{kind}: "


def _bound(se: float | None) -> str:
    """``±`` half the width of the 95 % interval (1.96 standard errors), or nothing.

    >>> _bound(0.01), _bound(None)
    ('±0.020', '')
    """
    return "" if se is None else f"±{level_text(1.96 * se, 3)}"


def _fmt(v: float | None, digits: int = 4, missing: str = "-") -> str:
    """A level as the plot and dashboard show it (:func:`~streamxai.local.markers.level_text`):
    ``digits`` decimals up to four digits, compact beyond (6.34B)."""
    return missing if v is None else level_text(v, digits)


def labels_line(st: StreamState) -> str:
    """How the labels of a stream whose labels come later are doing.

    >>> st = StreamState(max_points=4, loss_window=4)
    >>> st.waiting, st.labelled, st.expired = 12, 500, 3
    >>> st.delays.extend([(499, 2.5), (501, 2.5)])
    >>> labels_line(st)
    'labels: 500 learned (median 500 events, 2.5 s after their event), 3 expired, 12 waiting'
    """
    events, secs = st.median_delay()
    delay = "" if events is None else f" (median {events:.0f} events" + (
        f", {secs:.1f} s" if secs is not None else "") + " after their event)"
    return f"labels: {st.labelled} learned{delay}, {st.expired} expired, {st.waiting} waiting"
