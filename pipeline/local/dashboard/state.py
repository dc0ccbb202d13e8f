"""What the dashboard shows of every stream: the views of an :class:`~streamxai.local.output_reader.OutputReader`.

>>> st = DashboardState(max_points=4)
>>> for seq in range(10):
...     st.add("predictions", {"schema": "prediction/v2", "stream_id": "s", "seq": seq, "position": seq,
...                            "y_true": 1, "loss": seq % 2}, ts=100.0 + seq)
>>> st.add("explanations", {"schema": "explanation/v4", "stream_id": "s", "explainer": "ipfi", "feature": "a",
...        "value": 0.3, "seq": 5, "position": 5, "n_explained": 6, "n_seen": 6})
>>> st.add("drift-events", {"schema": "drift_event/v3", "stream_id": "s", "explainer": "ipfi", "feature": "a",
...        "seq": 5, "cut_seq": 3, "position": 5, "cut_position": 3, "level_before": 0.1, "level_after": 0.3})
>>> v = st.stream_view("s")
>>> v["lag_events"], v["lag_s"], v["changes"][0]["before"], v["ranking"]["ipfi"][0]["feature"]
(4, 4.0, 0.1, 'a')
>>> len(st.streams_summary())
1

>>> st.add("predictions", {"schema": "prediction/v2", "stream_id": "d", "seq": 0, "position": 0, "y_true": None})
>>> st.add("predictions", {"schema": "prediction/v2", "stream_id": "d", "seq": 1, "position": 1, "y_true": None})
>>> st.add("predictions", {"schema": "label_outcome/v1", "stream_id": "d", "seq": 0, "position": 2,
...        "outcome": "learned", "loss": 1.0, "delay_events": 1, "delay_s": 0.5, "waiting": 1})
>>> st.stream_view("d")["labels"]
{'waiting': 1, 'labelled': 1, 'expired': 0, 'median_delay_events': 1.0, 'median_delay_s': 0.5}
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Any

from ...core.stream import NEEDS_LABEL
from ..output_reader import OutputReader, StreamState, Trajectory, change_levels
from ..waterfall import find_local, waterfall

__all__ = ["DashboardState", "Trajectory", "change_levels"]

#: the changes of an episode the page lists (it says how many more there were)
SHOWN_EPISODE_CHANGES = 5
#: the newest explained events of a stream the page offers to choose from
LISTED_LOCALS = 50


class DashboardState(OutputReader):
    """The output topics' per-stream state and the dashboard's views of it; see the module doc.

    ``explainers_of(stream_id)``, when given, names the explainers a stream's settings run (its
    profile's): the lag counts only those of them it has seen, so an explainer a profile no
    longer runs is not shown as falling behind.

    The views are JSON-ready: every stream's summary, and one stream's trajectories, ranking,
    lag, curves, change events and episodes, for the page and ``streamxai plot``.
    """

    def __init__(self, *args: Any, explainers_of: Callable[[str], Iterable[str]] | None = None, **kw: Any):
        super().__init__(*args, **kw)
        self.explainers_of = explainers_of

    @staticmethod
    def _curves_at(st: StreamState, seq: int | None) -> dict[str, dict[str, Any]]:
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

    def lag(self, st: StreamState, sid: str = "") -> tuple[int | None, float | None]:
        """Positions (events, and labels that came later) and seconds the slowest explainer
        trails the predictions: between the step it explained last and the newest step of the
        kind it explains (iPDP a prediction, iPFI and iSAGE a label learned: ``NEEDS_LABEL``),
        so explainers that have explained every step they can are not behind."""
        if not st.explained_position or st.last_position < 0:
            return None, None
        behind = []
        counted = st.explained_position
        if self.explainers_of is not None:
            runs = set(self.explainers_of(sid))
            counted = {ex: p for ex, p in counted.items() if ex in runs} or counted
        for ex, explained in counted.items():
            label = NEEDS_LABEL.get(ex)
            newest = st.last_position if label is None else st.step_position["learn" if label else "predict"]
            behind.append((max(0, newest - explained), explained, max(newest, explained)))
        events, explained, newest = max(behind)
        then, now = self._time_at(st, explained), self._time_at(st, newest)
        return events, None if then is None or now is None else round(max(0.0, now - then), 3)

    @staticmethod
    def _time_at(st: StreamState, position: int) -> float | None:
        """When the step at ``position`` (or the newest before it) was published: exact for the
        last 2,000 steps, else the nearest older thinned point; None if unknown."""
        times = st.pred_times
        if times and position >= times[0][0]:
            positions = [p for p, _, _ in times]  # bounded (2,000) and only built when asked
            return times[bisect.bisect_right(positions, position) - 1][1]
        i = bisect.bisect_right(st.pred_history.xs, position) - 1
        return st.pred_history.ys[i] if i >= 0 else None

    def streams_summary(self) -> list[dict[str, Any]]:
        out = []
        for sid in sorted(self.streams):
            st = self.streams[sid]
            events, secs = self.lag(st, sid)
            out.append({
                "stream_id": sid, "predictions": st.predictions, "last_seq": st.last_pred_seq,
                "loss": st.mean_loss(),
                "changes": st.changes_seen, "lag_events": events, "lag_s": secs, "version": st.version,
                "waiting": st.waiting,
            })
        return out

    def stream_view(self, sid: str) -> dict[str, Any] | None:
        st = self.streams.get(sid)
        if st is None:
            return None
        events, secs = self.lag(st, sid)
        explainers = st.explainers()
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
            "last_position": st.last_position,
            "explained_seq": st.min_explained_seq(),
            "lag_events": events,
            "lag_s": secs,
            "labels": self._labels(st),
            "counts": {ex: {"explained": n, "seen": m} for ex, (n, m) in st.counts.items()},
            "explainers": explainers,
            "series": {ex: {f: tr.points() for (e, f), tr in sorted(st.series.items()) if e == ex} for ex in explainers},
            "ranking": ranking,
            "loss": st.loss.points(),
            "model_loss": {ex: tr.points() for ex, tr in st.model_loss.items()},
            "curves": st.curves,
            "curves_at_change": self._curves_at(st, st.change_seq),
            "change_seq": st.change_seq,
            "changes": list(st.changes),  # at their positions, with the events' seqs
            "episodes": [_shown(ep) for ep in st.episodes],
            # how many were read, and how many older ones are not drawn (the newest are kept)
            "changes_total": st.changes_seen,
            "changes_not_drawn": st.changes_seen - len(st.changes),
            "episodes_total": st.episodes_seen,
            "episodes_not_drawn": st.episodes_seen - len(st.episodes),
            # the latest local explanation as a waterfall, and the events one can be chosen of
            "local": self.local_view(sid),
            "local_events": [{"seq": loc["seq"], "event_id": loc["event_id"], "prediction": loc["prediction"]}
                             for loc in list(st.locals)[-LISTED_LOCALS:]][::-1],
            "locals_kept": len(st.locals),
            "locals_total": st.locals_seen,
        }

    def local_view(self, sid: str, event: str | None = None) -> dict[str, Any] | None:
        """The local explanation of ``event`` (an ``event_id``, or a seq; None: the latest) of
        stream ``sid`` among those kept, as a waterfall (:func:`~streamxai.local.waterfall.waterfall`)
        with the message's fields; None when there is none."""
        st = self.streams.get(sid)
        loc = find_local(st.locals, event) if st is not None else None
        return None if loc is None else {**loc, "waterfall": waterfall(loc)}

    @staticmethod
    def _labels(st: StreamState) -> dict[str, Any] | None:
        """Labels that come later (None while every label came with its event): events waiting
        now, labels learned and events expired so far, the median delay of the recent labels."""
        if st.waiting is None:
            return None
        events, secs = st.median_delay()
        return {"waiting": st.waiting, "labelled": st.labelled, "expired": st.expired,
                "median_delay_events": events, "median_delay_s": None if secs is None else round(secs, 3)}


def _shown(ep: dict[str, Any]) -> dict[str, Any]:
    """An episode as the page and the plot list it: its first few changes, with their levels."""
    changes = [{k: c.get(k) for k in ("explainer", "feature", "seq", "cut_seq", "position", "cut_position", "before",
                                       "after")}
               for c in ep["changes"][:SHOWN_EPISODE_CHANGES]]
    return {**{k: v for k, v in ep.items() if k != "n_series"}, "changes": changes}
