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
from .dead_letter_watch import DeadLetterWatch
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

    def __init__(self, settings: Settings, metrics: Metrics | None = None, history: History | None = None,
                 checkpoints: CheckpointStore | None = None):
        self.settings = settings
        #: ``history(topic, partition, before_offset, key, from_offset)`` → earlier values (pipeline.kafka.replay)
        self.history = history
        #: a :class:`pipeline.handlers.protocols.CheckpointStore` (``pipeline.kafka``: files or a topic), or None
        self.checkpoints = checkpoints
        self.metrics = metrics or Metrics()
        self.spec = settings.stream_feature_spec  # each stream's features: its profile's (Settings.for_stream)
        self._samplers: dict[float, EventSampler] = {}
        self.streams: dict[str, _StreamState] = {}
        self.dead_letter_watch = DeadLetterWatch()

    def on_message(self, raw: bytes | None, key: bytes | None, src: Source) -> list[Out]:
        outs = super().on_message(raw, key, src)
        self.dead_letter_watch.observe(key, outs)  # a producer whose events are mostly refused: one error
        return outs

    def _state_for(self, stream_id: str, seq: int, key: bytes | None, src: Source) -> _StreamState:
        # a stream's groups go to consecutive explain-task partitions, so they spread over
        # workers whatever the keys hash to
        first_partition = derive_seed(0, "partition", stream_id) % self.settings.partitions
        return self._recover("model", key, src, lambda: _StreamState(
            prequential_model(self.settings.for_stream(stream_id)), first_partition), first=seq == 0)

    def _rebuild(self, st: _StreamState, key: bytes | None, src: Source, from_offset: int) -> None:
        """Re-learn the stream's events of this partition from ``from_offset`` to just before ``src``."""
        n = 0
        for raw in self.history(src.topic, src.partition, src.offset, key, from_offset):
            try:
                ev = parse_feature_event(raw, self.spec, where=str(src), max_bytes=self.settings.max_message_bytes)
            except InvalidMessage:
                continue  # it went to the dead-letter topic the first time
            if ev.seq <= st.last_seq or ev.seq - st.last_seq > self.settings.max_seq_gap:
                continue  # a duplicate, or a seq_gap dead letter the first time
            try:
                st.model.process_one(ev.x, ev.y)
            except Exception:  # noqa: S112 - it went to the dead-letter topic the first time
                continue
            st.last_seq = ev.seq
            n += 1
        self.metrics.inc("replayed_events", n)
        log.info("rebuilt stream %s from %d earlier events of %s", key, n, src)

    def _drop_state(self, key: bytes) -> None:
        self.streams.pop(key.decode(errors="replace"), None)

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

    def _state(self, ev: FeatureEvent, key: bytes | None, src: Source) -> _StreamState:
        st = self.streams.get(ev.stream_id)
        if st is None:
            st = self.streams[ev.stream_id] = self._state_for(ev.stream_id, ev.seq, key, src)
            self.metrics.gauge("streams", len(self.streams))
        return st

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
            explain = self._sampler(ev.stream_id).selected(ev.stream_id, ev.seq)
            if not explain:
                self.metrics.inc("sampled_out")
            now = time.time()
            first = st.first_partition
            n_part = self.settings.partitions
            for g in range(self.settings.explain_groups):
                task = ExplainTask(ev.stream_id, ev.seq, ev.ts, ev.x, ev.y, g, explain, now, loss)
                outs.append(Out("explain-tasks", f"{ev.stream_id}/{g}".encode(), dumps(task), (first + g) % n_part))
        return outs


    def _sampler(self, stream_id: str) -> EventSampler:
        """The sampler of the stream's ``sample_rate`` (one per rate)."""
        rate = self.settings.for_stream(stream_id).sample_rate
        sampler = self._samplers.get(rate)
        if sampler is None:
            sampler = self._samplers[rate] = EventSampler(rate, self.settings.explain_seed)
        return sampler


def _plain(v: object) -> object:
    """numpy scalars and other numbers to JSON-native values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    item = getattr(v, "item", None)
    return item() if callable(item) else str(v)
