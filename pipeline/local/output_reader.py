"""The one reader of the output topics: per-stream state from the ``predictions``,
``explanations``, ``local-explanations``, ``drift-events`` and ``change-episodes`` messages.

>>> r = OutputReader()
>>> r.feed("predictions", b'{"schema": "prediction/v2", "stream_id": "s", "seq": 4, "position": 4, "loss": 1.0}')
>>> r.feed("explanations", b'{"schema": "explanation/v4", "stream_id": "s", "explainer": "ipfi", "feature": "a",'
...                        b' "value": 0.3, "seq": 4, "position": 4}')
>>> r.feed("explanations", b'not json')
>>> r.feed("explanations", b'{"schema": "explanation/v3", "stream_id": "s", "explainer": "ipfi", "feature": "a"}')
>>> st = r.streams["s"]
>>> st.predictions, st.current[("ipfi", "a")]["value"], st.explained_seq, r.ignored, r.other_versions
(1, 0.3, {'ipfi': 4}, 1, 1)
>>> r.TOPICS
('predictions', 'explanations', 'local-explanations', 'drift-events', 'change-episodes')
"""

from __future__ import annotations

import bisect
import logging
import math
import time
from array import array
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

import orjson
from streamxai.schemas import ChangeEpisode, ChangeEvent, Explanation, LabelOutcome, LocalExplanation, Prediction

from ..core.stream import EXPLAINER_NAMES
from .waterfall import parse_local

__all__ = ["OutputReader", "StreamState", "Trajectory", "change_levels", "explainer_order"]

log = logging.getLogger("streamxai.reader")

#: the changes of an episode that are kept (its ``n_changes`` and ``n_series`` count all)
EPISODE_CHANGES = 20
#: the newest local explanations kept per stream (the views show the latest or a chosen one of them)
MAX_LOCALS = 200


def explainer_order(names: Any) -> list[str]:
    """``names`` in the order of :data:`~streamxai.core.stream.EXPLAINER_NAMES`, others after them.

    >>> explainer_order({"ipdp", "shap", "ipfi"})
    ['ipfi', 'ipdp', 'shap']
    """
    known = len(EXPLAINER_NAMES)
    return sorted(names, key=lambda e: (EXPLAINER_NAMES.index(e) if e in EXPLAINER_NAMES else known, e))


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


class StreamState:
    """What the output topics said about one stream so far (bounded; see the module doc).

    >>> st = StreamState(max_points=4, loss_window=2)
    >>> st.mean_loss() is None, st.min_explained_seq()
    (True, -1)
    """

    def __init__(self, max_points: int, loss_window: int, max_changes: int = 1000, max_episodes: int = 500):
        self.max_points = max_points
        # predictions: how many, the newest seq and position, the rolling loss over the last loss_window
        self.predictions = 0
        self.last_pred_seq = -1
        self.last_position = -1
        # the newest position of each kind of step: a prediction ("predict"), a label learned
        # ("learn"); a prediction whose label came with it is both
        self.step_position = {"predict": -1, "learn": -1}
        # labels that come later (None while none waited): events waiting, outcomes, recent delays
        self.waiting: int | None = None
        self.labelled = 0
        self.expired = 0
        self.delays: deque[tuple[int, float | None]] = deque(maxlen=loss_window)
        self.loss_window: deque[float] = deque(maxlen=loss_window)
        self.loss_sum = 0.0
        self.loss = Trajectory(max_points)
        # prediction times by seq, to time the lag: the last 2,000 exactly, older ones thinned
        self.pred_times: deque[tuple[int, float, int]] = deque(maxlen=2_000)  # (position, time, seq)
        self.pred_history = Trajectory(max_points)
        # explanations: per (explainer, feature) the history and the newest value; per explainer
        # the newest seq, (n_explained, n_seen) and the model's rolling loss from its blocks
        self.series: dict[tuple[str, str], Trajectory] = {}
        self.current: dict[tuple[str, str], dict[str, Any]] = {}
        self.explained_seq: dict[str, int] = {}
        self.explained_position: dict[str, int] = {}
        self.counts: dict[str, tuple[int, int]] = {}
        self.model_loss: dict[str, Trajectory] = {}
        self.loss_blocks: dict[str, deque[tuple[float, float]]] = {}
        # iPDP: each feature's newest curve, and a thinned history to find the curve at a change
        self.curves: dict[str, dict[str, Any]] = {}
        self.curve_history: dict[str, _Thinned] = {}
        # drift-events and change-episodes, as parsed by the reader (the newest, last), and how
        # many were read (the views say how many older ones they leave out)
        self.change_seq: int | None = None
        self.changes: deque[dict[str, Any]] = deque(maxlen=max_changes)
        self.episodes: deque[dict[str, Any]] = deque(maxlen=max_episodes)
        self.changes_seen = 0
        self.episodes_seen = 0
        # local-explanations: the newest (parsed by streamxai.local.waterfall.parse_local), and how many were read
        self.locals: deque[dict[str, Any]] = deque(maxlen=MAX_LOCALS)
        self.locals_seen = 0
        # bumped by every message (the dashboard pushes a stream's view when it changed)
        self.version = 0
        self.updated = 0.0

    def mean_loss(self) -> float | None:
        """The mean loss of the last ``loss_window`` predictions (None before any)."""
        return _finite(self.loss_sum / len(self.loss_window)) if self.loss_window else None

    def min_explained_seq(self) -> int:
        """The newest seq every explainer of the stream has explained (-1 before any)."""
        return min(self.explained_seq.values()) if self.explained_seq else -1

    def median_delay(self) -> tuple[float | None, float | None]:
        """The median delay of the recent labels: in events, and in seconds of arrival time."""
        events = sorted(e for e, _ in self.delays)
        secs = sorted(s for _, s in self.delays if s is not None)
        return _median(events), _median(secs)
    def explainers(self) -> list[str]:
        """The explainers seen, in the order of ``EXPLAINER_NAMES``."""
        return explainer_order({ex for ex, _ in self.series})


class OutputReader:
    """Per-stream state (:attr:`streams`: stream id → :class:`StreamState`) from decoded
    messages (:meth:`add`) or their bytes (:meth:`feed`); the dashboard, the demo's terminal view
    and ``streamxai plot`` each show its :class:`StreamState` objects their own way.

    ``only``: read one stream and skip the messages of the others. ``max_changes`` and
    ``max_episodes``: the newest change events and episodes kept per stream.

    Memory is bounded: trajectories keep at most ``max_points`` points (thinned by half when
    full). A message of a version not in :attr:`VERSIONS` is counted in ``other_versions`` and
    skipped, one without a usable ``stream_id`` in ``ignored``; a field of the wrong type is
    skipped. History is kept by the stream's *position* (its record order).
    """

    def __init__(self, max_points: int = 400, loss_window: int = 500, clock: Callable[[], float] = time.time,
                 only: str | None = None, max_changes: int = 1000, max_episodes: int = 500):
        self.max_points = max_points
        self.max_changes = max_changes
        self.max_episodes = max_episodes
        self.loss_window = loss_window
        self.clock = clock
        self.only = only
        self.streams: dict[str, StreamState] = {}
        self.messages = 0
        self.ignored = 0
        self.other_versions = 0  # messages of a version the reader does not read (VERSIONS)
        self._logged_versions: set[tuple[str, Any]] = set()

    def _s(self, sid: str) -> StreamState:
        st = self.streams.get(sid)
        if st is None:
            st = self.streams[sid] = StreamState(self.max_points, self.loss_window, self.max_changes,
                                                 self.max_episodes)
        return st

    def feed(self, topic: str, raw: bytes | None, ts: float | None = None) -> None:
        """Fold in the bytes of one message of ``topic`` (short name). A message that is not
        JSON, or that a parse branch trips over, is counted in ``ignored`` and logged, never raised."""
        try:
            obj = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            self.messages += 1
            self.ignored += 1
            return
        try:
            self.add(topic, obj, ts)
        except Exception:
            self.ignored += 1
            log.exception("could not read a message of %s", topic)

    def add(self, topic: str, obj: Any, ts: float | None = None) -> None:
        """Fold in one decoded message of ``topic`` (short name); ``ts`` is its Kafka timestamp
        in seconds. Messages without a usable ``stream_id`` are counted and ignored."""
        self.messages += 1
        sid = obj.get("stream_id") if isinstance(obj, dict) else None
        parse = self.PARSERS.get(topic)
        if not isinstance(sid, str) or parse is None:
            self.ignored += 1
            return
        if self.only is not None and sid != self.only:
            return
        version = obj.get("schema")
        if version not in self.VERSIONS[topic]:
            self.other_versions += 1
            if (topic, version) not in self._logged_versions and len(self._logged_versions) < 100:
                self._logged_versions.add((topic, version))
                log.warning("skipping the messages of %s of version %.100r: this reader reads %s", topic, version,
                            " and ".join(self.VERSIONS[topic]))
            return
        st = self._s(sid)
        parse(self, st, obj, ts)
        st.version += 1
        st.updated = self.clock()

    # -- the parse branches: one per topic -------------------------------------------------

    def _prediction(self, st: StreamState, obj: dict, ts: float | None) -> None:
        seq, position = obj.get("seq"), obj.get("position")
        if not isinstance(seq, int) or not isinstance(position, int):
            return
        outcome = obj.get("schema") == LabelOutcome.SCHEMA
        steps = st.step_position
        if outcome:
            self._outcome(st, obj)
            if obj.get("outcome") == "learned":
                steps["learn"] = max(steps["learn"], position)
        else:
            st.predictions += 1
            st.last_pred_seq = max(st.last_pred_seq, seq)
            steps["predict"] = max(steps["predict"], position)
            if obj.get("y_true") is None:
                st.waiting = (st.waiting or 0) + 1
            else:
                steps["learn"] = max(steps["learn"], position)
        if position > st.last_position:
            st.last_position = position
            t = ts if ts is not None else self.clock()
            st.pred_times.append((position, t, st.last_pred_seq))
            st.pred_history.append(position, t)
        loss = _num(obj.get("loss"))
        if loss is not None:
            if len(st.loss_window) == st.loss_window.maxlen:
                st.loss_sum -= st.loss_window[0]
            st.loss_window.append(loss)
            st.loss_sum += loss
            st.loss.append(position, st.loss_sum / len(st.loss_window))

    def _outcome(self, st: StreamState, obj: dict) -> None:
        """A label outcome: what became of an event that waited for its label."""
        waiting = obj.get("waiting")
        if isinstance(waiting, int):
            st.waiting = waiting
        if obj.get("outcome") == "learned":
            st.labelled += 1
            delay = obj.get("delay_events")
            if isinstance(delay, int):
                st.delays.append((delay, _num(obj.get("delay_s"))))
        elif obj.get("outcome") == "expired":
            st.expired += 1

    def _explanation(self, st: StreamState, obj: dict, ts: float | None) -> None:
        ex, feat, seq, value = obj.get("explainer"), obj.get("feature"), obj.get("seq"), _num(obj.get("value"))
        position = obj.get("position")
        if (not isinstance(ex, str) or not isinstance(feat, str) or not isinstance(seq, int) or value is None
                or not isinstance(position, int)):
            return
        err = _num(obj.get("stderr"))
        key = (ex, feat)
        tr = st.series.get(key)
        if tr is None:
            tr = st.series[key] = Trajectory(self.max_points)
        if tr.last is None or position > tr.last[0]:
            tr.append(position, value, err)
            st.current[key] = {"value": value, "stderr": err, "seq": seq}
        st.explained_seq[ex] = max(st.explained_seq.get(ex, -1), seq)
        st.explained_position[ex] = max(st.explained_position.get(ex, -1), position)
        n_exp, n_seen = obj.get("n_explained"), obj.get("n_seen")
        if isinstance(n_exp, int) and isinstance(n_seen, int):
            st.counts[ex] = (n_exp, n_seen)
        self._model_loss(st, ex, position, obj.get("model_loss"))
        c = _curve(obj.get("curve"))
        if c is not None:
            c.update(seq=seq, position=position)
            if feat not in st.curves or position >= st.curves[feat]["position"]:
                st.curves[feat] = c
            hist = st.curve_history.get(feat)
            if hist is None:
                hist = st.curve_history[feat] = _Thinned(max(8, self.max_points // 8))
            hist.append(position, c)

    def _model_loss(self, st: StreamState, ex: str, seq: int, ml: Any) -> None:
        """The model's rolling loss over the last ~loss_window events, as the explainer saw it:
        each message sends ``{"n", "mean", "m2"}`` over the events since its previous one."""
        if not isinstance(ml, dict):
            return
        n, mean = ml.get("n"), _num(ml.get("mean"))
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n <= 0 or mean is None:
            return
        block = (float(n), mean * n)
        mt = st.model_loss.get(ex)
        if mt is None:
            mt = st.model_loss[ex] = Trajectory(self.max_points)
            st.loss_blocks[ex] = deque()
        if mt.last is None or seq > mt.last[0]:
            blocks = st.loss_blocks[ex]
            blocks.append(block)
            while len(blocks) > 1 and sum(b[0] for b in blocks) - blocks[0][0] >= self.loss_window:
                blocks.popleft()
            mt.append(seq, sum(b[1] for b in blocks) / sum(b[0] for b in blocks))

    def _change(self, st: StreamState, obj: dict, ts: float | None) -> None:
        seq = obj.get("seq")
        if not isinstance(seq, int):
            return
        before, after = change_levels(obj)
        ev = {"seq": seq, "explainer": obj.get("explainer"), "feature": obj.get("feature"),
              "before": before, "after": after}
        for k, read in _CHANGE_FIELDS.items():
            if k in obj:
                ev[k] = read(obj[k])
        _positions(ev, obj, ("seq", "cut_seq"))
        st.changes.append(ev)
        st.changes_seen += 1
        if st.change_seq is None or ev["position"] >= st.change_seq:
            st.change_seq = ev["position"]

    def _episode(self, st: StreamState, obj: dict, ts: float | None) -> None:
        # an episode is sent when it opens and again when it closes: the later message (same
        # first change) replaces the earlier one
        ep = parse_episode(obj)
        for i, seen in enumerate(st.episodes):  # (a data fault's episode may share its first position with another)
            if (ep["first_position"] is not None and seen["first_position"] == ep["first_position"]
                    and seen["kind"] == ep["kind"]):
                st.episodes[i] = ep
                return
        st.episodes.append(ep)
        st.episodes_seen += 1

    def _local(self, st: StreamState, obj: dict, ts: float | None) -> None:
        loc = parse_local(obj)
        if loc is None:
            self.ignored += 1
            return
        st.locals.append(loc)
        st.locals_seen += 1

    #: topic (short name) → its parse branch
    PARSERS: ClassVar[dict[str, Callable[[OutputReader, StreamState, dict, float | None], None]]] = {
        "predictions": _prediction,
        "explanations": _explanation,
        "local-explanations": _local,
        "drift-events": _change,
        "change-episodes": _episode,
    }
    #: the topics the reader reads (short names), which its consumers subscribe to
    TOPICS: ClassVar[tuple[str, ...]] = tuple(PARSERS)
    #: topic (short name) → the message versions read from it (the ``schema`` of each)
    VERSIONS: ClassVar[dict[str, tuple[str, ...]]] = {
        "predictions": (Prediction.SCHEMA, LabelOutcome.SCHEMA),
        "explanations": (Explanation.SCHEMA,),
        "local-explanations": (LocalExplanation.SCHEMA,),
        "drift-events": (ChangeEvent.SCHEMA,),
        "change-episodes": (ChangeEpisode.SCHEMA,),
    }


def parse_episode(obj: dict[str, Any]) -> dict[str, Any]:
    """What the views show of a change episode: where and when, its kind and whether it is an
    alert, whether it is still open, the model's loss, and its first :data:`EPISODE_CHANGES`
    changes, each with its levels and the explainer's values and ranks before and after.

    >>> ep = parse_episode({"first_seq": 6120, "cut_seq": 6000, "first_position": 6120, "cut_position": 6000,
    ...     "kind": "degradation", "alert": True, "status": "open", "changes": [
    ...     {"explainer": "ipfi", "feature": "car", "seq": 6120, "level_before": 0.0, "level_after": 0.21}],
    ...     "explanations": {"ipfi": {"car": {"before": 0.0, "after": 0.2, "rank_before": 5, "rank_after": 1}}}})
    >>> c = ep["changes"][0]
    >>> c["before"], c["after"], c["explanation_after"], c["rank_after"], ep["n_changes"], ep["n_series"]
    (0.0, 0.21, 0.2, 1, 1, 1)
    >>> ep["kind"], ep["alert"], ep["status"], ep["first_position"], ep["faults"]
    ('degradation', True, 'open', 6120, [])
    """
    ep: dict[str, Any] = {k: _int(obj.get(k)) for k in EPISODE_SEQS}
    ep.update({k: _num(obj.get(k)) for k in ("loss_before", "loss_after")})
    _positions(ep, obj, EPISODE_SEQS)
    kind, alert, status = obj.get("kind"), obj.get("alert"), obj.get("status")
    ep["kind"] = kind if isinstance(kind, str) else None
    ep["alert"] = alert if isinstance(alert, bool) else None
    ep["status"] = status if status in ("open", "closed") else "closed"
    changes = [c for c in obj.get("changes") or [] if isinstance(c, dict)] if isinstance(obj.get("changes"), list) else []
    explanations = obj.get("explanations") if isinstance(obj.get("explanations"), dict) else {}
    ep["changes"] = []
    for c in changes[:EPISODE_CHANGES]:
        before, after = change_levels(c)
        entry = explanations.get(c.get("explainer"), {})
        entry = entry.get(c.get("feature"), {}) if isinstance(entry, dict) else {}
        entry = entry if isinstance(entry, dict) else {}
        shown = {"explainer": c.get("explainer"), "feature": c.get("feature"), "seq": _int(c.get("seq")),
                 "cut_seq": _int(c.get("cut_seq")), "before": before, "after": after,
                 "explanation_before": _num(entry.get("before")),
                 "explanation_after": _num(entry.get("after")),
                 "rank_before": entry.get("rank_before"), "rank_after": entry.get("rank_after")}
        ep["changes"].append(_positions(shown, c, ("seq", "cut_seq")))
    ep["n_changes"] = len(changes)
    ep["n_series"] = len({(c.get("explainer"), c.get("feature")) for c in changes})
    faults = obj.get("faults") if isinstance(obj.get("faults"), list) else []
    ep["faults"] = [{"feature": f.get("feature"), "what": f.get("what"), "detail": f.get("detail"),
                     "like": f.get("like"), "reliance": _num(f.get("reliance"))}
                    for f in faults[:EPISODE_CHANGES] if isinstance(f, dict)]
    return ep


#: the seq fields of an episode; each has its position (``first_seq`` → ``first_position``)
EPISODE_SEQS = ("first_seq", "last_seq", "closed_seq", "cut_seq")


def _positions(rec: dict[str, Any], obj: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """Give ``rec`` the position of each of its seq ``fields`` as ``obj`` sends it (``seq`` →
    ``position``, ``cut_seq`` → ``cut_position``); None where it is not an integer."""
    for f in fields:
        rec[_position(f)] = _int(obj.get(_position(f)))
    return rec


def _position(seq_field: str) -> str:
    return "position" if seq_field == "seq" else seq_field.replace("_seq", "_position")


def change_levels(ev: dict[str, Any]) -> tuple[float | None, float | None]:
    """Level before and after a change (``level_before``, ``level_after``; None where it is not a
    number).

    >>> change_levels({"level_before": 1, "level_after": 2}), change_levels({"level_before": "x"})
    ((1.0, 2.0), (None, None))
    """
    return _num(ev.get("level_before")), _num(ev.get("level_after"))


def _short(v: float) -> float | None:
    """Six decimals are plenty on a chart and halve the JSON pushed to browsers."""
    return round(v, 6) if math.isfinite(v) else None


def _median(xs: list[float]) -> float | None:
    """The median of sorted ``xs`` (None if empty)."""
    if not xs:
        return None
    mid = len(xs) // 2
    return float(xs[mid]) if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


#: the largest magnitude read as a number: no worker sends more (a loss above 1e100, MAX_LOSS,
#: is a dead letter), and a chart of values near 1e308 cannot be drawn (their range overflows)
MAX_SHOWN = 1e100


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) and abs(v) <= MAX_SHOWN else None


def _curve(curve: Any) -> dict[str, Any] | None:
    """An iPDP curve as the views draw it: a grid of numbers or of category names, a number at
    each point (and a standard error at each, if it has them); None for anything else.

    >>> _curve({"grid": [0.0, 1.0], "pd": [0.2, 0.4], "se": [0.01, 0.02]})
    {'grid': [0.0, 1.0], 'pd': [0.2, 0.4], 'se': [0.01, 0.02]}
    >>> _curve({"grid": ["a", "b"], "pd": [0.2, 0.4], "se": [0.01, "x"]})
    {'grid': ['a', 'b'], 'pd': [0.2, 0.4]}
    >>> _curve({"grid": [1, "a"], "pd": [0.2, 0.4]}), _curve({"grid": [1, 2], "pd": [1e308, 0.1]})
    (None, None)
    """
    if not isinstance(curve, dict):
        return None
    grid, pd, se = curve.get("grid"), curve.get("pd"), curve.get("se")
    if not isinstance(grid, list) or not isinstance(pd, list) or len(pd) != len(grid):
        return None
    if not (all(_num(g) is not None for g in grid) or all(isinstance(g, str) for g in grid)):
        return None
    pd = [_num(v) for v in pd]
    if None in pd:
        return None
    c: dict[str, Any] = {"grid": list(grid), "pd": pd}
    if isinstance(se, list) and len(se) == len(grid) and all(_num(v) is not None for v in se):
        c["se"] = [_num(v) for v in se]
    return c


def _int(v: Any) -> int | None:
    """A seq as the messages carry it, or None for anything else (a string, a float, a
    boolean): the views put seqs into their pages as they are."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _plain(v: Any) -> Any:
    """JSON-safe copy: non-finite floats become None."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    return v


def _interval(v: Any) -> list[float | None] | None:
    return [_num(e) for e in v] if isinstance(v, list) and len(v) == 2 else None


#: the fields of a change event the views read besides its levels, each as it reads them: a seq
#: as an integer, numbers as numbers (a crafted value of another type is read as None)
_CHANGE_FIELDS: dict[str, Callable[[Any], Any]] = {
    "cut_seq": _int, "ci_before": _interval, "ci_after": _interval, "effect": _num, "relative_effect": _num,
    "loss_before": _num, "loss_after": _num, "schema": _plain}
