"""Drift path: explanation/v3 (or v2) → change test per stream → change events and change episodes.

Explanations are keyed by ``stream_id``, so every series of a stream reaches the same drift
worker, in partition order. A stream's state — one
:class:`~pipeline.core.change.StreamChangeDetector` over all its series — is
checkpointed and rebuilt per stream: a worker that meets a stream it has no state for (after
a restart or a rebalance) restores the stream's newest checkpoint and replays the stream's
later explanations from the same partition, or replays its whole history without one. A
restarted drift agent therefore emits exactly what an uninterrupted one would; events for
re-delivered explanations repeat with equal values (consumers dedupe change events by
``(series, seq)`` and episodes by ``(stream_id, first_seq)``).

Change events go to ``drift-events`` (``drift_event/v2``), episodes to ``change-episodes``
(``change_episode/v2``: each episode when it opens, with its kind and whether it is an alert,
and again when it closes), both keyed by ``stream_id``. explanation/v1 messages carry no
increments and go to the dead-letter topic with a reason that says to upgrade the
explainer workers.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from schemas import ChangeEpisode, ChangeEvent, InvalidMessage, SchemaMismatch, dumps
from schemas import parse_explanation as parse_explanation_message

from ..core.change import Change, Episode, StreamChangeDetector, ranks
from ..core.change.events import KINDS, ci, loss_z
from ..core.increments import Block
from ..metrics import Metrics
from ..settings import Settings
from .common import MessageHandler, Out, Source, log
from .protocols import CheckpointStore, History

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
    n_explained: int
    block: Block | None
    model_loss: Block | None
    curve: dict | None
    var_factor: float | None


def _block(block: dict[str, float] | None) -> Block | None:
    return None if block is None else Block(int(block["n"]), block["mean"], block["m2"])


def parse_explanation(raw: bytes | None, src: Source, max_bytes: int) -> _Point:
    """The drift path's view of an explanation (parsed and checked by :mod:`schemas.parsing`)."""
    e = parse_explanation_message(raw, where=str(src), max_bytes=max_bytes)
    return _Point(e.stream_id, e.explainer, e.feature, e.seq, e.n_explained, _block(e.block),
                  _block(e.model_loss), e.curve, e.var_factor)


def stream_detector(s: Settings) -> StreamChangeDetector:
    """The change detector of one stream under settings ``s``."""
    return StreamChangeDetector(
        [(e, f) for e in s.explainers for f in s.features],
        delta=s.drift_delta, min_effect=s.drift_min_effect, min_samples=s.drift_min_samples,
        max_increments=s.drift_window, warmup=s.drift_warmup, episode_gap=s.drift_episode_gap,
        tested=[e for e in s.explainers if e in s.drift_explainers] or None, alert_kinds=s.drift_alert_kinds,
    )


class DriftHandler(MessageHandler[_Point, _StreamState]):
    """One per worker; keeps one change detector per stream it owns."""

    STAGE = "drift"
    DUPLICATE_METRIC = "duplicate_explanations_dropped"

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        #: ``history(topic, partition, before_offset, key, from_offset)`` → earlier values (pipeline.kafka.replay)
        self.history = history
        #: a :class:`pipeline.handlers.protocols.CheckpointStore` (``pipeline.kafka``: files or a topic), or None
        self.checkpoints = checkpoints
        self.streams: dict[str, _StreamState] = {}
        for kind in KINDS:  # every series from the start, so an alert rule sees the first increase
            for alert in {kind in s.drift_alert_kinds for s in (settings, *settings.profiles().values())}:
                self.metrics.inc("change_episodes", 0, kind=kind, alert=_flag(alert))

    def _parse(self, raw: bytes | None, src: Source) -> _Point:
        return parse_explanation(raw, src, self.settings.max_message_bytes)

    def _fresh(self, stream_id: str) -> _StreamState:
        return _StreamState(stream_detector(self.settings.for_stream(stream_id)))

    def _rebuild(self, st: _StreamState, key: bytes | None, src: Source, from_offset: int) -> None:
        """Re-run the stream's explanations of this partition from ``from_offset`` to just before ``src``."""
        stream_id = key.decode(errors="replace") if key else None
        det, n = st.detector, 0
        for raw in self.history(src.topic, src.partition, src.offset, key, from_offset):
            try:
                p = self._parse(raw, src)
            except InvalidMessage:
                continue  # it went to the dead-letter topic the first time
            if p.stream_id != stream_id or not det.knows(p.explainer, p.feature):
                continue
            if p.seq <= det.last_seq(p.explainer, p.feature):
                continue
            det.update(p.explainer, p.feature, p.seq, p.block, p.curve, p.model_loss, p.var_factor)
            n += 1
        self.metrics.inc("replayed_explanations", n)
        log.info("rebuilt drift state of stream %s from %d earlier explanations of %s", stream_id, n, src)

    def _drop_state(self, key: bytes) -> None:
        self.streams.pop(key.decode(errors="replace"), None)

    def _state_for(self, p: _Point, key: bytes | None, src: Source) -> _StreamState:
        if key != p.stream_id.encode():
            log.warning("explanation at %s is keyed %r, not by its stream_id %r: its stream's history cannot be "
                        "replayed after a restart; run every worker on the same streamxai version", src, key, p.stream_id)
            return self._fresh(p.stream_id)
        # a stream's first report carries n_explained <= emit_every: nothing of it came before
        first = p.n_explained <= self.settings.for_stream(p.stream_id).emit_every
        return self._recover("drift", key, src, lambda: self._fresh(p.stream_id), first=first)


    def _arrived(self) -> None:
        self.metrics.inc("explanations_seen")  # every message, good or bad: how far the drift agent has got

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> _Point:
        p = self._parse(raw, src)
        s = self.settings.for_stream(p.stream_id)
        if p.explainer not in s.explainers or p.feature not in s.features:
            raise SchemaMismatch(
                f"series {p.stream_id}/{p.explainer}/{p.feature} is not among this worker's explainers "
                f"{s.explainers} x features; every worker must run with the same settings", where=str(src))
        return p

    def _reason(self, err: InvalidMessage) -> str | None:
        return "explanation_v1" if "explanation/v1 carries" in str(err) else None

    def _state(self, p: _Point, key: bytes | None, src: Source) -> _StreamState:
        st = self.streams.get(p.stream_id)
        if st is None:
            st = self.streams[p.stream_id] = self._state_for(p, key, src)
            self.metrics.gauge("drift_streams", len(self.streams))
        return st

    def _is_duplicate(self, p: _Point, st: _StreamState) -> bool:
        return p.seq <= st.detector.last_seq(p.explainer, p.feature)

    def _process(self, p: _Point, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        """Fold the explanation into its series' change test; the change events and the episodes it closed."""
        m = self.metrics
        m.inc("explanations_monitored")
        changes, episodes = st.detector.update(p.explainer, p.feature, p.seq, p.block, p.curve, p.model_loss,
                                               p.var_factor)
        outs = []
        k = p.stream_id.encode()
        for c in changes:
            m.inc("drift_events")
            log.info("change in %s/%s/%s from seq %d (detected at %d): %.4g -> %.4g", p.stream_id, c.explainer,
                     c.feature, c.cut_seq, c.seq, c.before.mean, c.after.mean)
            outs.append(Out("drift-events", k, dumps(change_event(p.stream_id, c))))
        for ep in episodes:
            if ep.first:  # the message that announces the episode's kind: count it, page on it
                m.inc("change_episodes", kind=ep.kind, alert=_flag(ep.alert))
                log.log(logging.WARNING if ep.alert else logging.INFO,
                        "change episode of %s from seq %d: %s%s, %s", p.stream_id, ep.cut_seq, ep.kind,
                        " (alert)" if ep.alert else "", ", ".join(f"{c.explainer}/{c.feature}" for c in ep.changes))
            outs.append(Out("change-episodes", k, dumps(change_episode(p.stream_id, ep))))
        return outs


# --- core objects → wire messages ------------------------------------------------------------
def _finite(x: float, cap: float = _Z_CAP) -> float:
    return max(-cap, min(cap, x)) if not math.isnan(x) else 0.0


def _ci(m: Block) -> list[float] | None:
    lo, hi = ci(m)
    return [lo, hi] if math.isfinite(lo) and math.isfinite(hi) else None


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _loss(m: Block | None) -> tuple[float | None, int]:
    return (m.mean, m.n) if m is not None and m.n else (None, 0)


def change_event(stream_id: str, c: Change) -> ChangeEvent:
    before, after = c.explanation_before, c.explanation_after
    lb, nlb = _loss(c.loss_before)
    la, nla = _loss(c.loss_after)
    return ChangeEvent(
        stream_id=stream_id, explainer=c.explainer, feature=c.feature,
        series=f"{stream_id}/{c.explainer}/{c.feature}", seq=c.seq, cut_seq=c.cut_seq,
        n_before=c.before.n, n_after=c.after.n, level_before=c.before.mean, level_after=c.after.mean,
        ci_before=_ci(c.before), ci_after=_ci(c.after), effect=c.effect,
        relative_effect=_finite(c.relative_effect), min_effect=c.cut.min_effect,
        z=_finite(c.cut.z), threshold=c.cut.threshold,
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
    z = loss_z(ep.loss_before, ep.loss_after)
    return ChangeEpisode(
        stream_id=stream_id, status=ep.status, first_seq=ep.first_seq, last_seq=ep.last_seq,
        closed_seq=ep.closed_seq, cut_seq=ep.cut_seq, kind=ep.kind, alert=ep.alert,
        changes=[{"explainer": c.explainer, "feature": c.feature, "seq": c.seq, "cut_seq": c.cut_seq,
                  "level_before": c.before.mean, "level_after": c.after.mean, "effect": c.effect,
                  "relative_effect": _finite(c.relative_effect)} for c in ep.changes],
        explanations=explanations,
        curves={f: {"before": b, "after": a} for f, (b, a) in ep.curves.items()},
        loss_before=lb, loss_after=la, n_loss_before=nlb, n_loss_after=nla,
        loss_ci_before=_ci(ep.loss_before) if nlb > 1 else None, loss_ci_after=_ci(ep.loss_after) if nla > 1 else None,
        loss_z=None if z is None else _finite(z),
    )
