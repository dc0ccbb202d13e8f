"""Drift path: ADWIN per explanation series, change events out.

Each series (``stream/explainer/feature``, the explanation's key) has its own detector, so
its state can be checkpointed and rebuilt on its own: a worker that meets a series it has
no state for — after a restart or a rebalance — restores the series' newest checkpoint and
replays the series' later explanations from the same partition, or replays the whole
series without one. A restarted drift agent therefore detects exactly what an
uninterrupted one would; change events for re-delivered explanations repeat with equal
values (consumers dedupe by ``(series, seq)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas import DriftEvent, Explanation, InvalidMessage, SchemaMismatch, decode_as, dumps

from ..core.drift import ExplanationDriftMonitor
from ..metrics import Metrics
from ..settings import Settings
from .common import Out, Recovering, Source, dead_letter, log

__all__ = ["DriftHandler"]


@dataclass
class _SeriesState:
    monitor: ExplanationDriftMonitor
    last_seq: int = -1
    since_checkpoint: int = 0


@dataclass(frozen=True, slots=True)
class _Point:
    stream_id: str
    explainer: str
    feature: str
    seq: int
    value: float
    n_explained: int

    @property
    def series(self) -> str:
        return f"{self.stream_id}/{self.explainer}/{self.feature}"


class DriftHandler(Recovering):
    def __init__(self, settings: Settings, metrics: Metrics | None = None, history=None, checkpoints=None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        #: ``history(topic, partition, before_offset, key, from_offset)`` → earlier values (pipeline.replay)
        self.history = history
        #: a :class:`pipeline.checkpoints.CheckpointStore`, or None
        self.checkpoints = checkpoints
        self.series: dict[str, _SeriesState] = {}

    def _monitor(self) -> ExplanationDriftMonitor:
        s = self.settings
        return ExplanationDriftMonitor(delta=s.drift_delta, grace_period=s.drift_grace_period, warmup=s.drift_warmup)

    def _parse(self, raw: bytes | None, src: Source) -> _Point:
        obj = decode_as(raw, Explanation.SCHEMA, where=str(src), max_bytes=self.settings.max_message_bytes)
        stream_id, explainer, feature = obj.get("stream_id"), obj.get("explainer"), obj.get("feature")
        seq, value, n_explained = obj.get("seq"), obj.get("value"), obj.get("n_explained")
        if not (isinstance(stream_id, str) and isinstance(explainer, str) and isinstance(feature, str)
                and isinstance(seq, int) and isinstance(n_explained, int)
                and isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise SchemaMismatch(
                f"{Explanation.SCHEMA} needs string stream_id/explainer/feature, integer seq and n_explained "
                "and a numeric value", where=str(src))
        return _Point(stream_id, explainer, feature, seq, float(value), n_explained)

    def _rebuild(self, st: _SeriesState, key: bytes | None, src: Source, from_offset: int) -> None:
        """Re-run the series' explanations of this partition from ``from_offset`` to just before ``src``."""
        series = key.decode(errors="replace") if key else None
        n = 0
        for raw in self.history(src.topic, src.partition, src.offset, key, from_offset):
            try:
                p = self._parse(raw, src)
            except InvalidMessage:
                continue  # it went to the dead-letter topic the first time
            if p.series != series or p.seq <= st.last_seq:
                continue
            st.monitor.update(p.series, p.seq, p.value)
            st.last_seq = p.seq
            n += 1
        self.metrics.inc("replayed_explanations", n)
        log.info("rebuilt drift series %s from %d earlier explanations of %s", series, n, src)

    def _state_for(self, p: _Point, key: bytes | None, src: Source) -> _SeriesState:
        if key != p.series.encode():
            return _SeriesState(self._monitor())  # not keyed by its series: no history to replay
        # a series' first explanation carries n_explained == emit_every: nothing came before it
        first = p.n_explained <= self.settings.emit_every
        return self._recover("drift", key, src, lambda: _SeriesState(self._monitor()), first=first)

    def _drop_state(self, key: bytes) -> None:
        self.series.pop(key.decode(errors="replace"), None)

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        m = self.metrics
        try:
            p = self._parse(raw, src)
        except InvalidMessage as e:
            return [dead_letter(raw, key, e, "drift", src, max_bytes=self.settings.max_dead_letter_bytes)]
        series = p.series
        st = self.series.get(series)
        if st is None:
            st = self.series[series] = self._state_for(p, key, src)
            m.gauge("drift_series", len(self.series))
        if p.seq <= st.last_seq:
            m.inc("duplicate_explanations_dropped")
            return []
        st.last_seq = p.seq
        m.inc("explanations_monitored")
        change = st.monitor.update(series, p.seq, p.value)
        self._checkpoint_if_due("drift", key, st, src)
        if change is None:
            return []
        m.inc("drift_events")
        log.info("change in %s at seq %d: %.4f -> %.4f", series, p.seq, change.level_before, change.level_after)
        ev = DriftEvent(p.stream_id, p.explainer, p.feature, series, p.seq, change.n_points,
                        change.level_before, change.level_after)
        return [Out("drift-events", series.encode(), dumps(ev))]
