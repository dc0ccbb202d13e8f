"""Model path: validate a feature event, predict, score, learn, hand the event to explainers.

The model path never waits for explanations: it only produces explain tasks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from schemas import ExplainTask, FeatureEvent, InvalidMessage, Prediction, SchemaMismatch, dumps, parse_feature_event

from ..core.budget import EventSampler
from ..core.prequential import PrequentialModel
from ..core.rng import derive_seed
from ..metrics import Metrics
from ..plan import prequential_model
from ..settings import Settings
from .common import MessageHandler, Out, Rejected, Source, log
from .protocols import CheckpointStore, History

__all__ = ["ModelHandler"]


@dataclass
class _StreamState:
    model: PrequentialModel
    first_partition: int
    last_seq: int = -1
    since_checkpoint: int = 0


class ModelHandler(MessageHandler[FeatureEvent, _StreamState]):
    """One per worker; keeps one model per stream id it owns."""

    STAGE = "model"
    DUPLICATE_METRIC = "duplicates_dropped"

    STATES_GAUGE = "streams"
    REPLAYED_METRIC = "replayed_events"

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        super().__init__(settings, metrics, history, checkpoints)
        self.spec = settings.feature_spec()
        self.sampler = EventSampler(settings.sample_rate, settings.explain_seed)

    @property
    def streams(self) -> dict[str, _StreamState]:
        """The model of every stream met so far, by stream id."""
        return self.states  # type: ignore[return-value]

    def _state_key(self, ev: FeatureEvent) -> str:
        return ev.stream_id

    def _opens(self, ev: FeatureEvent) -> bool:
        return ev.seq == 0

    def _fresh(self, ev: FeatureEvent) -> _StreamState:
        # a stream's groups go to consecutive explain-task partitions, so they spread over
        # workers whatever the keys hash to
        first_partition = derive_seed(0, "partition", ev.stream_id) % self.settings.partitions
        return _StreamState(prequential_model(self.settings), first_partition)

    def _replay_one(self, st: _StreamState, raw: bytes | None, key: bytes | None, src: Source) -> bool:
        """Re-learn one earlier event of the stream (skipping what was a dead letter or a duplicate)."""
        try:
            ev = parse_feature_event(raw, self.spec, where=str(src), max_bytes=self.settings.max_message_bytes)
        except InvalidMessage:
            return False  # it went to the dead-letter topic the first time
        if ev.seq <= st.last_seq or ev.seq - st.last_seq > self.settings.max_seq_gap:
            return False  # a duplicate, or a seq_gap dead letter the first time
        try:
            st.model.process_one(ev.x, ev.y)
        except Exception:  # it went to the dead-letter topic the first time
            return False
        st.last_seq = ev.seq
        return True

    def _arrived(self) -> None:
        self.metrics.inc("events_in")

    def _read(self, raw: bytes | None, key: bytes | None, src: Source) -> FeatureEvent:
        ev = parse_feature_event(raw, self.spec, where=str(src), max_bytes=self.settings.max_message_bytes)
        if key != ev.stream_id.encode():
            raise SchemaMismatch(
                f"message key {key!r} is not the stream_id {ev.stream_id!r}; key every event by "
                "its stream_id so one stream stays on one partition, in order",
                where=str(src),
            )
        return ev

    def _is_duplicate(self, ev: FeatureEvent, st: _StreamState) -> bool:
        if ev.seq > st.last_seq:
            return False
        log.debug("dropping %s seq %d: already processed up to %d", ev.stream_id, ev.seq, st.last_seq)
        return True

    def _process(self, ev: FeatureEvent, st: _StreamState, raw: bytes | None, key: bytes | None,
                 src: Source) -> list[Out]:
        """Predict, score, learn; the prediction, and one explain task per group once ``y`` is known."""
        if ev.seq - st.last_seq > self.settings.max_seq_gap:
            # accepting it would make every later event of the stream look like a duplicate
            e = SchemaMismatch(
                f"seq {ev.seq} of stream {ev.stream_id!r} is {ev.seq - st.last_seq} beyond its last accepted "
                f"seq {st.last_seq}, more than max_seq_gap={self.settings.max_seq_gap}; number each "
                "stream's events 0, 1, 2, ... (or raise max_seq_gap)",
                where=str(src),
            )
            raise Rejected(self._dead_letter(raw, key, e, src, "seq_gap"))
        version = st.model.version
        try:
            y_pred, loss = st.model.process_one(ev.x, ev.y)
        except Exception as e:  # a model that raises on one event must not kill the worker
            raise Rejected(self._dead_letter(raw, key, e, src, "model_error")) from None
        st.last_seq = ev.seq
        self.metrics.inc("predictions")
        k = ev.stream_id.encode()
        outs = [Out("predictions", k, dumps(Prediction(
            ev.stream_id, ev.seq, ev.ts, ev.y, _plain(y_pred), loss, version)))]
        if ev.y is not None:
            explain = self.sampler.selected(ev.stream_id, ev.seq)
            if not explain:
                self.metrics.inc("sampled_out")
            now = time.time()
            first = st.first_partition
            n_part = self.settings.partitions
            for g in range(self.settings.explain_groups):
                task = ExplainTask(ev.stream_id, ev.seq, ev.ts, ev.x, ev.y, g, explain, now, loss)
                outs.append(Out("explain-tasks", f"{ev.stream_id}/{g}".encode(), dumps(task), (first + g) % n_part))
        return outs


def _plain(v: object) -> object:
    """numpy scalars and other numbers to JSON-native values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    item = getattr(v, "item", None)
    return item() if callable(item) else str(v)
