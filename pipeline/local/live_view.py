"""A terminal view of one or more streams: importances updating live, change events, summary."""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson

from ..kafka.io import Record

__all__ = ["LiveView"]

EXPLAINERS = ("ipfi", "isage", "ipdp")


@dataclass
class _Stream:
    predictions: int = 0
    last_pred_seq: int = -1
    losses: deque = field(default_factory=lambda: deque(maxlen=500))
    values: dict[tuple[str, str], float] = field(default_factory=dict)
    stderrs: dict[tuple[str, str], float] = field(default_factory=dict)
    explained_seq: dict[str, int] = field(default_factory=dict)
    n_explained: dict[str, tuple[int, int]] = field(default_factory=dict)
    snapshots: list[tuple[int, dict[str, dict[str, float]]]] = field(default_factory=list)


class LiveView:
    """Feed it records of predictions, explanations, drift events and dead letters."""

    def __init__(self, features: list[str], prefix: str, out: TextIO = sys.stdout, plan: str = ""):
        self.features = features
        self.prefix = prefix
        self.out = out
        self.plan = plan
        self.streams: dict[str, _Stream] = {}
        self.changes: list[dict[str, Any]] = []
        self.episodes: list[dict[str, Any]] = []
        self.dead_letters: list[dict[str, Any]] = []
        self._tty = out.isatty()
        self._last_render = 0.0

    def _s(self, sid: str) -> _Stream:
        return self.streams.setdefault(sid, _Stream())

    def add(self, rec: Record) -> None:
        name = rec.topic[len(self.prefix):]
        obj = orjson.loads(rec.value) if rec.value else {}
        if name == "predictions":
            st = self._s(obj["stream_id"])
            st.predictions += 1
            st.last_pred_seq = max(st.last_pred_seq, obj["seq"])
            if obj.get("loss") is not None:
                st.losses.append(obj["loss"])
        elif name == "explanations":
            st = self._s(obj["stream_id"])
            st.values[(obj["explainer"], obj["feature"])] = obj["value"]
            if obj.get("stderr") is not None:
                st.stderrs[(obj["explainer"], obj["feature"])] = obj["stderr"]
            ex = obj["explainer"]
            st.explained_seq[ex] = max(st.explained_seq.get(ex, -1), obj["seq"])
            st.n_explained[ex] = (obj["n_explained"], obj["n_seen"])
        elif name == "drift-events":
            self.changes.append(obj)
            st = self._s(obj["stream_id"])
            st.snapshots.append((obj["seq"], self.ranking(obj["stream_id"])))
        elif name == "change-episodes":
            self.episodes.append(obj)
        elif name == "dead-letters":
            self.dead_letters.append(obj)

    def ranking(self, sid: str) -> dict[str, dict[str, float]]:
        st = self._s(sid)
        return {ex: {f: st.values[(ex, f)] for f in self.features if (ex, f) in st.values} for ex in EXPLAINERS}

    def min_explained_seq(self, sid: str) -> int:
        st = self.streams.get(sid)
        if not st or not st.explained_seq:
            return -1
        return min(st.explained_seq.values())

    def render(self, force: bool = False, every: float = 1.0) -> None:
        now = time.monotonic()
        if not force and now - self._last_render < (every if self._tty else 5 * every):
            return
        self._last_render = now
        lines = []
        if self.plan:
            lines.append(f"demo stream: {self.plan}")
        for sid, st in sorted(self.streams.items()):
            err = sum(st.losses) / len(st.losses) if st.losses else float("nan")
            lines.append(f"stream {sid}: {st.predictions} predictions (last seq {st.last_pred_seq}), "
                         f"mean loss of last {len(st.losses)}: {err:.3f}")
            counts = ", ".join(f"{ex} {n}/{m}" for ex, (n, m) in sorted(st.n_explained.items()))
            lines.append(f"  explained/seen: {counts or '-'}")
            lines.append(f"  {'feature':<11}{'iPFI':>9}  {'':<20}{'iSAGE':>9}{'iPDP':>9}")
            top = max((abs(v) for (ex, _), v in st.values.items() if ex == "ipfi"), default=0.0) or 1.0
            for f in self.features:
                ipfi = st.values.get(("ipfi", f))
                bar = "#" * int(20 * max(ipfi or 0.0, 0.0) / top)
                cells = [_fmt(ipfi), f"{bar:<20}", _fmt(st.values.get(("isage", f))), _fmt(st.values.get(("ipdp", f)))]
                lines.append(f"  {f:<11}{cells[0]:>9}  {cells[1]}{cells[2]:>9}{cells[3]:>9}")
        lines.append(f"change events: {len(self.changes)}   episodes: {len(self.episodes)}   "
                     f"dead letters: {len(self.dead_letters)}")
        for ch in self.changes[-8:]:
            lines.append(f"  seq {ch['seq']:>6}  {ch['series']:<32} {ch['level_before']:.4f} -> {ch['level_after']:.4f}"
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
                         f"{self.min_explained_seq(sid)}")
            final = self.ranking(sid)
            for ex in EXPLAINERS:
                if final.get(ex):
                    ranked = sorted(final[ex].items(), key=lambda kv: -kv[1])[:3]
                    lines.append(f"  top {ex:<5}: " + ", ".join(
                        f"{f}={v:.3f}{_bound(st.stderrs.get((ex, f)))}" for f, v in ranked))
            n_changes = sum(1 for ch in self.changes if ch["stream_id"] == sid)
            episodes = sorted((e for e in self.episodes if e["stream_id"] == sid), key=lambda e: e["first_seq"])
            lines.append(f"  change events: {n_changes}, change episodes: {len(episodes)}")
            for ep in episodes:
                lines += episode_lines(ep)
        if self.dead_letters:
            lines.append(f"dead letters: {len(self.dead_letters)} "
                         f"({', '.join(sorted({d['reason'] for d in self.dead_letters}))})")
        return "\n".join(lines)


def episode_lines(ep: dict[str, Any], top: int = 4) -> list[str]:
    """A change episode in a few lines: where the new regime began, the model's loss, the top
    changed series with their levels and ranks before and after (the episode's split).

    >>> ep = {"first_seq": 6120, "cut_seq": 6000, "loss_before": 0.05, "loss_after": 0.31,
    ...       "changes": [{"explainer": "ipfi", "feature": "car", "level_before": 0.0, "level_after": 0.21,
    ...                    "relative_effect": 0.9, "cut_seq": 6000}],
    ...       "explanations": {"ipfi": {"car": {"before": 0.0, "after": 0.2, "rank_before": 5, "rank_after": 1}}}}
    >>> for line in episode_lines(ep):
    ...     print(line)
        episode opened at seq 6120, new regime from seq 6000; model loss 0.050 -> 0.310
          ipfi/car      0.0000 -> 0.2000  (rank 5 -> 1)
    """
    lb, la = ep.get("loss_before"), ep.get("loss_after")
    loss = f"; model loss {lb:.3f} -> {la:.3f}" if lb is not None and la is not None else ""
    cuts = sorted({c["cut_seq"] for c in ep["changes"]}) or [ep["cut_seq"]]
    where = f"new regime from seq {cuts[0]}" if len(cuts) == 1 else f"new regimes from seq {cuts[0]} to {cuts[-1]}"
    lines = [f"    episode opened at seq {ep['first_seq']}, {where}{loss}"]
    shown: list[tuple[str, str]] = []
    for c in ep["changes"]:  # ranked by relative effect; a series that changed twice shows once
        key = (c["explainer"], c["feature"])
        if key in shown:
            continue
        shown.append(key)
        if len(shown) > top:
            continue
        entry = ep.get("explanations", {}).get(c["explainer"], {}).get(c["feature"], {})
        before = entry.get("before", c["level_before"])
        after = entry.get("after", c["level_after"])
        rank = ""
        if entry.get("rank_before") is not None and entry.get("rank_after") is not None:
            rank = f"  (rank {entry['rank_before']} -> {entry['rank_after']})"
        name = f"{c['explainer']}/{c['feature']}"
        lines.append(f"      {name:<13}{before:>7.4f} -> {after:.4f}{rank}")
    if len(shown) > top:
        lines.append(f"      ... and {len(shown) - top} more")
    return lines


def _bound(se: float | None) -> str:
    """``±`` half the width of the 95 % interval (1.96 standard errors), or nothing.

    >>> _bound(0.01), _bound(None)
    ('±0.020', '')
    """
    return "" if se is None else f"±{1.96 * se:.3f}"


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"
