"""Drift path: ADWIN per explanation series, change events out."""

from __future__ import annotations

from schemas import DriftEvent, Explanation, InvalidMessage, SchemaMismatch, decode_as, dumps

from ..core.drift import ExplanationDriftMonitor
from ..metrics import Metrics
from ..settings import Settings
from .common import Out, Source, dead_letter, log

__all__ = ["DriftHandler"]


class DriftHandler:
    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.monitor = ExplanationDriftMonitor(
            delta=settings.drift_delta, grace_period=settings.drift_grace_period, warmup=settings.drift_warmup
        )
        self.last_seq: dict[str, int] = {}

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        m = self.metrics
        try:
            obj = decode_as(raw, Explanation.SCHEMA, where=str(src), max_bytes=self.settings.max_message_bytes)
            stream_id, explainer, feature = obj.get("stream_id"), obj.get("explainer"), obj.get("feature")
            seq, value = obj.get("seq"), obj.get("value")
            if not (isinstance(stream_id, str) and isinstance(explainer, str) and isinstance(feature, str)
                    and isinstance(seq, int) and isinstance(value, (int, float)) and not isinstance(value, bool)):
                raise SchemaMismatch("explanation/v1 needs string stream_id/explainer/feature, integer seq and numeric value", where=str(src))
        except InvalidMessage as e:
            m.inc("dead_letters", reason=e.reason)
            return [dead_letter(raw, key, e, "drift", src)]
        series = f"{stream_id}/{explainer}/{feature}"
        if seq <= self.last_seq.get(series, -1):
            m.inc("duplicate_explanations_dropped")
            return []
        self.last_seq[series] = seq
        m.inc("explanations_monitored")
        change = self.monitor.update(series, seq, float(value))
        if change is None:
            return []
        m.inc("drift_events")
        log.info("change in %s at seq %d: %.4f -> %.4f", series, seq, change.level_before, change.level_after)
        ev = DriftEvent(stream_id, explainer, feature, series, seq, change.n_points,
                        change.level_before, change.level_after)
        return [Out("drift-events", series.encode(), dumps(ev))]
