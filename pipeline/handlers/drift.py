"""Drift path: explanation/v2 → change test per stream → change events and change episodes.

Explanations are keyed by ``stream_id``, so every series of a stream reaches the same drift
worker, in partition order. Their time axis is the stream's ``position`` (explanation/v3; the
seq itself while labels come in line, and for explanation/v2): with labels that come later, an
event's loss-based explanations come when its label does, so seq no longer orders them. The
``seq`` and ``cut_seq`` of change events and the seqs of episodes are positions on that axis. A stream's state — one
:class:`~pipeline.core.change_episodes.StreamChangeDetector` over all its series — is
checkpointed and rebuilt per stream: a worker that meets a stream it has no state for (after
a restart or a rebalance) restores the stream's newest checkpoint and replays the stream's
later explanations from the same partition, or replays its whole history without one. A
restarted drift agent therefore emits exactly what an uninterrupted one would; events for
re-delivered explanations repeat with equal values (consumers dedupe change events by
``(series, seq)`` and episodes by ``(stream_id, first_seq)``).

Change events go to ``drift-events`` (``drift_event/v2``), episodes to ``change-episodes``
(``change_episode/v1``), both keyed by ``stream_id``. explanation/v1 messages carry no
increments and go to the dead-letter topic with a reason that says to upgrade the
explainer workers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from schemas import ChangeEpisode, DriftEvent, InvalidMessage, SchemaMismatch, dumps
from schemas import parse_explanation as parse_explanation_message

from ..core.change_episodes import Episode, SeriesChange, StreamChangeDetector, ranks
from ..core.drift import Moments
from ..settings import Settings
from .common import MessageHandler, Out, Source, log

__all__ = ["DriftHandler", "change_event", "change_episode"]

_Z_CAP = 1e6  # a side without variance gives an infinite z; the wire carries finite numbers


@dataclass
class _StreamState:
    detector: StreamChangeDetector
    since_checkpoint: int = 0


@dataclass(frozen=True, slots=True)
class _Point:
    stream_id: str
    explainer: str
    feature: str
    seq: int
    position: int
    value: float
    n_explained: int
    block: Moments | None
    model_loss: Moments | None
    curve: dict | None


def _moments(block: dict[str, float] | None) -> Moments | None:
    return None if block is None else Moments(int(block["n"]), block["mean"], block["m2"])


def parse_explanation(raw: bytes | None, src: Source, max_bytes: int) -> _Point:
    """The drift path's view of an explanation (parsed and checked by :mod:`schemas.parsing`)."""
    e = parse_explanation_message(raw, where=str(src), max_bytes=max_bytes)
    return _Point(e.stream_id, e.explainer, e.feature, e.seq, e.position, e.value, e.n_explained,
                  _moments(e.block), _moments(e.model_loss), e.curve)


def stream_detector(s: Settings) -> StreamChangeDetector:
    """The change detector of one stream under settings ``s``."""
    return StreamChangeDetector(
        [(e, f) for e in s.explainers for f in s.features],
        delta=s.drift_delta, min_effect=s.drift_min_effect, min_samples=s.drift_min_samples,
        max_window=s.drift_window, warmup=s.drift_warmup, episode_gap=s.drift_episode_gap,
        tested=[e for e in s.explainers if e in s.drift_explainers] or None,
    )


class DriftHandler(MessageHandler[_Point, _StreamState]):
    """One per worker; keeps one change detector per stream it owns."""

    STAGE = "drift"
    DUPLICATE_METRIC = "duplicate_explanations_dropped"

    STATES_GAUGE = "drift_streams"
    REPLAYED_METRIC = "replayed_explanations"

    @property
    def streams(self) -> dict[str, _StreamState]:
        """The change detector of every stream met so far, by stream id."""
        return self.states  # type: ignore[return-value]

    def _parse(self, raw: bytes | None, src: Source) -> _Point:
        return parse_explanation(raw, src, self.settings.max_message_bytes)

    def _state_key(self, p: _Point) -> str:
        return p.stream_id

    def _opens(self, p: _Point) -> bool:
        # a stream's first report carries n_explained <= emit_every: nothing of it came before;
        # a report past its event's seq (a label came later) may follow others of the stream
        return p.n_explained <= self.settings.emit_every and p.position == p.seq

    def _fresh(self, p: _Point) -> _StreamState:
        return _StreamState(stream_detector(self.settings))

    def _load(self, p: _Point, key: bytes | None, src: Source) -> _StreamState:
        if key != p.stream_id.encode():
            log.warning("explanation at %s is keyed %r, not by its stream_id %r: its stream's history cannot be "
                        "replayed after a restart; run every worker on the same streamxai version", src, key, p.stream_id)
            return self._fresh(p)
        return self._recover(p, key, src)

    def _replay_one(self, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-run one earlier explanation of the stream into its change test."""
        try:
            p = self._parse(raw, src)
        except InvalidMessage:
            return False  # it went to the dead-letter topic the first time
        det = st.detector
        if key is None or p.stream_id.encode() != key or not det.knows(p.explainer, p.feature):
            return False
        if self._is_duplicate(p, st):
            return False
        det.update(p.explainer, p.feature, p.position, p.block, p.value, p.curve, p.model_loss)
        return True

    def _arrived(self) -> None:
        self.metrics.inc("explanations_seen")  # every message, good or bad: how far the drift agent has got

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> _Point:
        s = self.settings
        p = self._parse(raw, src)
        if p.explainer not in s.explainers or p.feature not in s.features:
            raise SchemaMismatch(
                f"series {p.stream_id}/{p.explainer}/{p.feature} is not among this worker's explainers "
                f"{s.explainers} x features; every worker must run with the same settings", where=str(src))
        return p

    def _reason(self, err: InvalidMessage) -> str | None:
        return "explanation_v1" if "explanation/v1 carries" in str(err) else None

    def _is_duplicate(self, p: _Point, st: _StreamState) -> bool:
        return p.position <= st.detector.last_seq(p.explainer, p.feature)

    def _process(self, p: _Point, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """Fold the explanation into its series' change test; the change events and the episodes it closed."""
        m = self.metrics
        m.inc("explanations_monitored")
        changes, episodes = st.detector.update(p.explainer, p.feature, p.position, p.block, p.value, p.curve,
                                               p.model_loss)
        outs = []
        k = p.stream_id.encode()
        for c in changes:
            m.inc("drift_events")
            log.info("change in %s/%s/%s from seq %d (detected at %d): %.4g -> %.4g", p.stream_id, c.explainer,
                     c.feature, c.cut_seq, c.seq, c.before.mean, c.after.mean)
            outs.append(Out("drift-events", k, dumps(change_event(p.stream_id, c))))
        for ep in episodes:
            m.inc("change_episodes")
            outs.append(Out("change-episodes", k, dumps(change_episode(p.stream_id, ep))))
        return outs


# --- core objects → wire messages ------------------------------------------------------------
def _finite(x: float, cap: float = _Z_CAP) -> float:
    return max(-cap, min(cap, x)) if not math.isnan(x) else 0.0


def _ci(m: Moments) -> list[float] | None:
    lo, hi = SeriesChange.ci(m)
    return [lo, hi] if math.isfinite(lo) and math.isfinite(hi) else None


def _loss(m: Moments | None) -> tuple[float | None, int]:
    return (m.mean, m.n) if m is not None and m.n else (None, 0)


def change_event(stream_id: str, c: SeriesChange) -> DriftEvent:
    before, after = c.explanation_before, c.explanation_after
    lb, nlb = _loss(c.loss_before)
    la, nla = _loss(c.loss_after)
    return DriftEvent(
        stream_id=stream_id, explainer=c.explainer, feature=c.feature,
        series=f"{stream_id}/{c.explainer}/{c.feature}", seq=c.seq, cut_seq=c.cut_seq,
        n_before=c.before.n, n_after=c.after.n, level_before=c.before.mean, level_after=c.after.mean,
        ci_before=_ci(c.before), ci_after=_ci(c.after), effect=c.effect,
        relative_effect=_finite(c.relative_effect), min_effect=c.min_effect,
        z=_finite(c.z), threshold=c.threshold,
        explanation_before=before, explanation_after=after, rank_before=ranks(before), rank_after=ranks(after),
        curve_before=c.curve_before, curve_after=c.curve_after,
        loss_before=lb, loss_after=la, n_loss_before=nlb, n_loss_after=nla,
    )


def change_episode(stream_id: str, ep: Episode) -> ChangeEpisode:
    explanations: dict[str, dict[str, dict[str, Any]]] = {}
    for e, vec in ep.explanations.items():
        rb = ranks({f: v[0] for f, v in vec.items()})
        ra = ranks({f: v[1] for f, v in vec.items()})
        explanations[e] = {f: {"before": b, "after": a, "rank_before": rb[f], "rank_after": ra[f]}
                           for f, (b, a) in vec.items()}
    lb, nlb = _loss(ep.loss_before)
    la, nla = _loss(ep.loss_after)
    return ChangeEpisode(
        stream_id=stream_id, first_seq=ep.first_seq, last_seq=ep.last_seq, closed_seq=ep.closed_seq,
        cut_seq=ep.cut_seq,
        changes=[{"explainer": c.explainer, "feature": c.feature, "seq": c.seq, "cut_seq": c.cut_seq,
                  "level_before": c.before.mean, "level_after": c.after.mean, "effect": c.effect,
                  "relative_effect": _finite(c.relative_effect)} for c in ep.changes],
        explanations=explanations,
        curves={f: {"before": b, "after": a} for f, (b, a) in ep.curves.items()},
        loss_before=lb, loss_after=la, n_loss_before=nlb, n_loss_after=nla,
    )
