"""Model path: validate a feature event, predict, score, learn, hand the event to explainers.

The model path never waits for explanations: it only produces explain tasks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from schemas import ExplainTask, InvalidMessage, Prediction, SchemaMismatch, dumps, parse_feature_event

from ..core.budget import EventSampler
from ..core.prequential import PrequentialModel
from ..metrics import Metrics
from ..plan import prequential_model
from ..settings import Settings
from .common import Out, Source, dead_letter, log

__all__ = ["ModelHandler"]


@dataclass
class _StreamState:
    model: PrequentialModel
    last_seq: int = -1


class ModelHandler:
    """One per worker; keeps one model per stream id it owns."""

    def __init__(self, settings: Settings, metrics: Metrics | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.spec = settings.feature_spec()
        self.sampler = EventSampler(settings.sample_rate, settings.explain_seed)
        self.streams: dict[str, _StreamState] = {}

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        m = self.metrics
        m.inc("events_in")
        try:
            ev = parse_feature_event(raw, self.spec, where=str(src), max_bytes=self.settings.max_message_bytes)
            if key != ev.stream_id.encode():
                raise SchemaMismatch(
                    f"message key {key!r} is not the stream_id {ev.stream_id!r}; key every event by "
                    "its stream_id so one stream stays on one partition, in order",
                    where=str(src),
                )
        except InvalidMessage as e:
            m.inc("dead_letters", reason=e.reason)
            return [dead_letter(raw, key, e, "model", src)]
        st = self.streams.get(ev.stream_id)
        if st is None:
            st = self.streams[ev.stream_id] = _StreamState(prequential_model(self.settings))
            m.gauge("streams", len(self.streams))
        if ev.seq <= st.last_seq:
            m.inc("duplicates_dropped")
            log.debug("dropping %s seq %d: already processed up to %d", ev.stream_id, ev.seq, st.last_seq)
            return []
        version = st.model.version
        try:
            y_pred, loss = st.model.process_one(ev.x, ev.y)
        except Exception as e:  # a model that raises on one event must not kill the worker
            m.inc("dead_letters", reason="model_error")
            return [dead_letter(raw, key, e, "model", src, reason="model_error")]
        st.last_seq = ev.seq
        m.inc("predictions")
        k = ev.stream_id.encode()
        outs = [Out("predictions", k, dumps(Prediction(
            ev.stream_id, ev.seq, ev.ts, ev.y, _plain(y_pred), loss, version)))]
        if ev.y is not None:
            explain = self.sampler.selected(ev.stream_id, ev.seq)
            if not explain:
                m.inc("sampled_out")
            now = time.time()
            for g in range(self.settings.explain_groups):
                task = ExplainTask(ev.stream_id, ev.seq, ev.ts, ev.x, ev.y, g, explain, now)
                outs.append(Out("explain-tasks", f"{ev.stream_id}/{g}".encode(), dumps(task)))
        return outs


def _plain(v: object) -> object:
    """numpy scalars and other numbers to JSON-native values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    item = getattr(v, "item", None)
    return item() if callable(item) else str(v)
