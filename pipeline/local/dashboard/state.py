"""What the dashboard knows about every stream, in bounded memory, built from topic messages.

Plain synchronous logic: :class:`DashboardState` is fed decoded messages of the
predictions, explanations, drift-events (and change-episodes) topics and answers
JSON-ready views. History is kept as :class:`Trajectory` objects of at most ``max_points``
points: when one fills up, every other point is dropped and the stride doubles, so memory
per stream stays fixed however long the stream runs.

Fields are read defensively: explanation/v1 and v2 (``stderr``, ``block``, ``model_loss``,
iPDP curves with ``se``), drift_event/v1 (``level_before``/``level_after``) and later change
events with nested ``before``/``after`` objects all show.

>>> st = DashboardState(max_points=4)
>>> for seq in range(10):
...     st.add("predictions", {"stream_id": "s", "seq": seq, "loss": seq % 2}, ts=100.0 + seq)
>>> st.add("explanations", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "value": 0.3,
...        "seq": 5, "n_explained": 6, "n_seen": 6})
>>> st.add("drift-events", {"stream_id": "s", "explainer": "ipfi", "feature": "a", "seq": 5,
...        "level_before": 0.1, "level_after": 0.3})
>>> v = st.stream_view("s")
>>> v["lag_events"], v["lag_s"], v["changes"][0]["before"], v["ranking"]["ipfi"][0]["feature"]
(4, 4.0, 0.1, 'a')
>>> len(st.streams_summary())
1
"""

from __future__ import annotations

import bisect
import math
import time
from array import array
from collections import deque
from typing import Any

__all__ = ["DashboardState", "Trajectory", "change_levels"]


class Trajectory:
    """At most ``max_points`` ``(x, y)`` points of a series, evenly thinned as it grows.

    >>> t = Trajectory(max_points=4)
    >>> for i in range(9):
    ...     t.append(i, float(i))
    >>> list(t.xs), t.stride
    ([0.0, 4.0, 8.0], 4)
    """

    __slots__ = ("max_points", "xs", "ys", "es", "stride", "_count", "last")

    def __init__(self, max_points: int = 400):
        if max_points < 2:
            raise ValueError(f"max_points={max_points} must be >= 2")
        self.max_points = max_points
        self.xs = array("d")
        self.ys = array("d")
        self.es: array | None = None  # standard errors, once a message carried one
        self.stride = 1
        self._count = 0
        self.last: tuple[float, float, float | None] | None = None

    def append(self, x: float, y: float, err: float | None = None) -> None:
        self.last = (x, y, err)
        keep = self._count % self.stride == 0
        self._count += 1
        if not keep:
            return
        if err is not None and self.es is None:
            self.es = array("d", [math.nan] * len(self.xs))
        self.xs.append(x)
        self.ys.append(y)
        if self.es is not None:
            self.es.append(math.nan if err is None else err)
        if len(self.xs) >= self.max_points:
            self.xs, self.ys = self.xs[::2], self.ys[::2]
            if self.es is not None:
                self.es = self.es[::2]
            self.stride *= 2

    def points(self) -> dict[str, list]:
        """The kept points plus the newest one (so the line always reaches the present)."""
        xs, ys = list(self.xs), list(self.ys)
        es = list(self.es) if self.es is not None else None
        if self.last is not None and (not xs or xs[-1] != self.last[0]):
            xs.append(self.last[0])
            ys.append(self.last[1])
            if es is not None:
                es.append(math.nan if self.last[2] is None else self.last[2])
        out: dict[str, list] = {"x": xs, "y": [_short(v) for v in ys]}
        if es is not None:
            out["se"] = [_short(v) for v in es]
        return out


class _Thinned:
    """At most ``max_items`` ``(seq, item)`` pairs in seq order, thinned like :class:`Trajectory`."""

    __slots__ = ("max_items", "seqs", "items", "stride", "_count")

    def __init__(self, max_items: int):
        self.max_items, self.seqs, self.items, self.stride, self._count = max_items, [], [], 1, 0

    def append(self, seq: int, item: Any) -> None:
        keep = self._count % self.stride == 0
        self._count += 1
        if not keep:
            return
        i = bisect.bisect_right(self.seqs, seq)
        self.seqs.insert(i, seq)
        self.items.insert(i, item)
        if len(self.seqs) >= self.max_items:
            self.seqs, self.items = self.seqs[::2], self.items[::2]
            self.stride *= 2

    def at_or_before(self, seq: int) -> Any:
        i = bisect.bisect_right(self.seqs, seq) - 1
        return self.items[i] if i >= 0 else None


def _short(v: float) -> float | None:
    """Six decimals are plenty on a chart and halve the JSON pushed to browsers."""
    return round(v, 6) if math.isfinite(v) else None


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def change_levels(ev: dict[str, Any]) -> tuple[float | None, float | None]:
    """Level before and after a change, from ``level_before``/``level_after`` or nested
    ``before``/``after`` objects (``{"level": ...}``, ``{"mean": ...}``) or numbers.

    >>> change_levels({"level_before": 1, "level_after": 2})
    (1.0, 2.0)
    >>> change_levels({"before": {"mean": 0.5, "stderr": 0.1}, "after": {"level": 0.7}})
    (0.5, 0.7)
    """
    out = []
    for side in ("before", "after"):
        v = _num(ev.get(f"level_{side}"))
        if v is None:
            nested = ev.get(side)
            if isinstance(nested, dict):
                for k in ("level", "mean", "value"):
                    v = _num(nested.get(k))
                    if v is not None:
                        break
            else:
                v = _num(nested)
        out.append(v)
    return out[0], out[1]


class _Stream:
    def __init__(self, max_points: int, loss_window: int):
        self.max_points = max_points
        self.predictions = 0
        self.last_pred_seq = -1
        self.loss_window: deque[float] = deque(maxlen=loss_window)
        self.loss_sum = 0.0
        self.loss = Trajectory(max_points)
        self.model_loss: dict[str, Trajectory] = {}  # rolling, from explanation/v2 model_loss blocks
        self.loss_blocks: dict[str, deque[tuple[float, float]]] = {}
        # prediction times by seq, to time the lag: the last 2,000 exactly, older ones thinned
        self.pred_times: deque[tuple[int, float]] = deque(maxlen=2_000)
        self.pred_history = Trajectory(max_points)
        self.series: dict[tuple[str, str], Trajectory] = {}
        self.current: dict[tuple[str, str], dict[str, Any]] = {}
        self.explained_seq: dict[str, int] = {}
        self.counts: dict[str, tuple[int, int]] = {}
        self.curves: dict[str, dict[str, Any]] = {}
        self.curve_history: dict[str, _Thinned] = {}  # per feature, to find the curve at a change
        self.change_seq: int | None = None
        self.changes: deque[dict[str, Any]] = deque(maxlen=200)
        self.episodes: deque[dict[str, Any]] = deque(maxlen=100)
        self.version = 0
        self.updated = 0.0


class DashboardState:
    """Per-stream history and current values for the dashboard; see the module doc."""

    def __init__(self, max_points: int = 400, loss_window: int = 500, clock=time.time):
        self.max_points = max_points
        self.loss_window = loss_window
        self.clock = clock
        self.streams: dict[str, _Stream] = {}
        self.messages = 0
        self.ignored = 0

    def _s(self, sid: str) -> _Stream:
        st = self.streams.get(sid)
        if st is None:
            st = self.streams[sid] = _Stream(self.max_points, self.loss_window)
        return st

    def add(self, topic: str, obj: Any, ts: float | None = None) -> None:
        """Fold in one decoded message of ``topic`` (short name); ``ts`` is its Kafka timestamp
        in seconds. Messages without a usable ``stream_id`` are counted and ignored."""
        self.messages += 1
        sid = obj.get("stream_id") if isinstance(obj, dict) else None
        if not isinstance(sid, str):
            self.ignored += 1
            return
        st = self._s(sid)
        if topic == "predictions":
            self._prediction(st, obj, ts)
        elif topic == "explanations":
            self._explanation(st, obj)
        elif topic in ("drift-events", "change-events"):
            self._change(st, obj)
        elif topic == "change-episodes":
            st.episodes.append(_episode(obj))
        else:
            self.ignored += 1
            return
        st.version += 1
        st.updated = self.clock()

    def _prediction(self, st: _Stream, obj: dict, ts: float | None) -> None:
        seq = obj.get("seq")
        if not isinstance(seq, int):
            return
        st.predictions += 1
        st.last_pred_seq = max(st.last_pred_seq, seq)
        t = ts if ts is not None else self.clock()
        st.pred_times.append((seq, t))
        st.pred_history.append(seq, t)
        loss = _num(obj.get("loss"))
        if loss is not None:
            if len(st.loss_window) == st.loss_window.maxlen:
                st.loss_sum -= st.loss_window[0]
            st.loss_window.append(loss)
            st.loss_sum += loss
            st.loss.append(seq, st.loss_sum / len(st.loss_window))

    def _explanation(self, st: _Stream, obj: dict) -> None:
        ex, feat, seq, value = obj.get("explainer"), obj.get("feature"), obj.get("seq"), _num(obj.get("value"))
        if not isinstance(ex, str) or not isinstance(feat, str) or not isinstance(seq, int) or value is None:
            return
        err = _num(obj.get("stderr"))
        key = (ex, feat)
        tr = st.series.get(key)
        if tr is None:
            tr = st.series[key] = Trajectory(self.max_points)
        if tr.last is None or seq > tr.last[0]:
            tr.append(seq, value, err)
            st.current[key] = {"value": value, "stderr": err, "seq": seq}
        st.explained_seq[ex] = max(st.explained_seq.get(ex, -1), seq)
        n_exp, n_seen = obj.get("n_explained"), obj.get("n_seen")
        if isinstance(n_exp, int) and isinstance(n_seen, int):
            st.counts[ex] = (n_exp, n_seen)
        ml = obj.get("model_loss")  # v2: {"n", "mean", "m2"} over the events since the last message
        if isinstance(ml, dict):
            n, mean = ml.get("n"), _num(ml.get("mean"))
            block = (float(n), mean * n) if isinstance(n, (int, float)) and n > 0 and mean is not None else None
        else:
            block = (1.0, _num(ml)) if _num(ml) is not None else None
        if block is not None:
            mt = st.model_loss.get(ex)
            if mt is None:
                mt = st.model_loss[ex] = Trajectory(self.max_points)
                st.loss_blocks[ex] = deque()
            if mt.last is None or seq > mt.last[0]:
                # rolling mean over the last ~loss_window events, like the predictions' rolling loss
                blocks = st.loss_blocks[ex]
                blocks.append(block)
                while len(blocks) > 1 and sum(b[0] for b in blocks) - blocks[0][0] >= self.loss_window:
                    blocks.popleft()
                mt.append(seq, sum(b[1] for b in blocks) / sum(b[0] for b in blocks))
        curve = obj.get("curve")
        if isinstance(curve, dict) and isinstance(curve.get("grid"), list) and isinstance(curve.get("pd"), list):
            c = {"grid": curve["grid"], "pd": curve["pd"], "seq": seq}
            if isinstance(curve.get("se"), list):
                c["se"] = curve["se"]
            if feat not in st.curves or seq >= st.curves[feat]["seq"]:
                st.curves[feat] = c
            hist = st.curve_history.get(feat)
            if hist is None:
                hist = st.curve_history[feat] = _Thinned(max(8, self.max_points // 8))
            hist.append(seq, c)

    def _change(self, st: _Stream, obj: dict) -> None:
        seq = obj.get("seq")
        if not isinstance(seq, int):
            return
        before, after = change_levels(obj)
        ev = {"seq": seq, "explainer": obj.get("explainer"), "feature": obj.get("feature"),
              "before": before, "after": after}
        for k in ("cut_seq", "ci_before", "ci_after", "effect", "relative_effect", "loss_before", "loss_after",
                  "start_seq", "began_at", "loss_moved", "schema"):
            if k in obj:
                ev[k] = _plain(obj[k])
        st.changes.append(ev)
        if st.change_seq is None or seq >= st.change_seq:
            st.change_seq = seq

    @staticmethod
    def _curves_at(st: _Stream, seq: int | None) -> dict[str, dict[str, Any]]:
        """Each feature's PD curve as it was at ``seq`` (the newest kept at or before it), whatever
        order the topics were read in."""
        if seq is None:
            return {}
        out = {}
        for f, hist in st.curve_history.items():
            c = hist.at_or_before(seq)
            if c is not None:
                out[f] = c
        return out

    def lag(self, st: _Stream) -> tuple[int | None, float | None]:
        """Events and seconds the slowest explainer trails the predictions: the time between
        the prediction of its last explained event and the newest prediction."""
        if not st.explained_seq or st.last_pred_seq < 0:
            return None, None
        explained = min(st.explained_seq.values())
        events = max(0, st.last_pred_seq - explained)
        times = st.pred_times
        if not times:
            return events, None
        if explained >= times[0][0]:
            seqs = [s for s, _ in times]  # bounded (2,000) and only built when asked
            i = bisect.bisect_right(seqs, explained) - 1
            then = times[i][1]
        else:  # further behind than the exact window: the nearest older thinned point
            i = bisect.bisect_right(st.pred_history.xs, explained) - 1
            if i < 0:
                return events, None
            then = st.pred_history.ys[i]
        return events, round(max(0.0, times[-1][1] - then), 3)

    def streams_summary(self) -> list[dict[str, Any]]:
        out = []
        for sid in sorted(self.streams):
            st = self.streams[sid]
            events, secs = self.lag(st)
            out.append({
                "stream_id": sid, "predictions": st.predictions, "last_seq": st.last_pred_seq,
                "loss": _finite(st.loss_sum / len(st.loss_window)) if st.loss_window else None,
                "changes": len(st.changes), "lag_events": events, "lag_s": secs, "version": st.version,
            })
        return out

    def stream_view(self, sid: str) -> dict[str, Any] | None:
        st = self.streams.get(sid)
        if st is None:
            return None
        events, secs = self.lag(st)
        explainers = sorted({ex for ex, _ in st.series})
        ranking = {
            ex: sorted(({"feature": f, **cur} for (e, f), cur in st.current.items() if e == ex),
                       key=lambda r: -abs(r["value"]))
            for ex in explainers
        }
        return {
            "stream_id": sid,
            "version": st.version,
            "predictions": st.predictions,
            "last_seq": st.last_pred_seq,
            "lag_events": events,
            "lag_s": secs,
            "counts": {ex: {"explained": n, "seen": m} for ex, (n, m) in st.counts.items()},
            "explainers": explainers,
            "series": {ex: {f: tr.points() for (e, f), tr in sorted(st.series.items()) if e == ex} for ex in explainers},
            "ranking": ranking,
            "loss": st.loss.points(),
            "model_loss": {ex: tr.points() for ex, tr in st.model_loss.items()},
            "curves": st.curves,
            "curves_at_change": self._curves_at(st, st.change_seq),
            "change_seq": st.change_seq,
            "changes": list(st.changes),
            "episodes": list(st.episodes),
        }


def _episode(obj: dict[str, Any]) -> dict[str, Any]:
    """The parts of a change episode the page shows (change_episode/v1; other fields kept out)."""
    ep: dict[str, Any] = {k: _plain(obj.get(k)) for k in ("first_seq", "last_seq", "closed_seq", "cut_seq",
                                                          "loss_before", "loss_after")}
    changes = obj.get("changes") if isinstance(obj.get("changes"), list) else []
    ep["changes"] = []
    for c in changes[:5]:
        if isinstance(c, dict):
            before, after = change_levels(c)
            ep["changes"].append({"explainer": c.get("explainer"), "feature": c.get("feature"),
                                  "seq": c.get("seq"), "before": before, "after": after})
    ep["n_changes"] = len(changes)
    return ep


def _plain(v: Any) -> Any:
    """JSON-safe copy: non-finite floats become None."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v
