"""Delayed labels for the handler tests: arrivals recorded as the intake records them, and the handlers
run over that record.

>>> from helpers.streams import threshold_events
>>> log = PartitionLog()
>>> rec = record_arrivals(log, labels_later(threshold_events("s", 4, seed=1), delay=2, unlabelled={1}))
>>> [(type(r.event).__name__[0], r.event.seq, r.origin) for r in rec][2:4]
[('F', 2, (('streamxai.features', 0), 2)), ('L', 0, (('streamxai.labels', 0), 0))]"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import orjson
from streamxai.handlers import ChangeHandler, ExplainHandler, IntakeHandler, ModelHandler
from streamxai.local.demo_stream import labels_later
from streamxai.reference import Recorded
from streamxai.schemas import FeatureEvent, Headers, LabelEvent, Source, dumps, origin, origin_headers, unpack_tasks
from streamxai.settings import Settings

from .partition_log import PartitionLog

__all__ = ["labels_later", "record_arrivals", "redeliver", "batched", "Run", "run_handlers", "run_model", "ARRIVALS"]

ARRIVALS = "arrivals"


def record_arrivals(log: PartitionLog, messages: Iterable[FeatureEvent | LabelEvent | tuple[str, bytes, bytes]],
                    t0: float = 1_700_000_000.0, dt: float = 0.01, prefix: str = "streamxai.") -> list[Recorded]:
    """Append ``messages`` to arrivals partition 0 as the intake would (headers naming the input offset, ``dt``
    seconds apart; a ``(kind, key, raw)`` triple is a raw message); returns the reference's reads."""
    offsets = {"features": 0, "labels": 0}
    recorded = []
    for i, m in enumerate(messages):
        if isinstance(m, tuple):
            topic, key, raw = m
            event = None
        else:
            topic = "labels" if isinstance(m, LabelEvent) else "features"
            key, raw, event = m.stream_id.encode(), dumps(m), m
        origin = Source(prefix + topic, 0, offsets[topic])
        offsets[topic] += 1
        at = t0 + i * dt
        log.append(ARRIVALS, 0, key, raw, headers=origin_headers(origin), timestamp=at)
        if event is not None:
            recorded.append(Recorded(event, at, ((origin.topic, 0), origin.offset)))
    return recorded


def redeliver(log: PartitionLog, offsets: Iterable[int]) -> None:
    """Append again the arrivals at ``offsets`` (the intake forwarding them a second time)."""
    for off in offsets:
        key, value, ts, headers = log.parts[(ARRIVALS, 0)][off]
        log.append(ARRIVALS, 0, key, value, headers=headers, timestamp=ts)


def batched(log: PartitionLog, window: int) -> PartitionLog:
    """The arrivals of ``log`` as the intake records them taking ``window`` records at a time (one record per stream
    and window), each at its window's first timestamp."""
    intake, out = IntakeHandler(Settings()), PartitionLog()
    part = log.parts.get((ARRIVALS, 0), [])
    for start in range(0, len(part), window):
        records = [(value, key, origin(log.source(ARRIVALS, 0, off)))
                   for off, (key, value, _, _) in enumerate(part[start:start + window], start)]
        for o in intake.on_batch(records):
            out.append(ARRIVALS, 0, o.key, o.value, headers=o.headers, timestamp=part[start][2])
    return out


class Run:
    """The handlers' outputs over a record of arrivals, by topic, decoded."""

    def __init__(self) -> None:
        self.by_topic: dict[str, list[dict]] = {}
        self.tasks = PartitionLog()
        self.explanations = PartitionLog()

    def add(self, topic: str, value: bytes, headers: Headers | None = None) -> None:
        """One message sent (a record of explain tasks in the batch form: each of its tasks)."""
        tasks = unpack_tasks(value, Source(topic, headers=headers))
        self.by_topic.setdefault(topic, []).extend(orjson.loads(v) for v in tasks or [value])

    def of(self, topic: str, schema: str | None = None) -> list[dict]:
        return [m for m in self.by_topic.get(topic, []) if schema is None or m.get("schema") == schema]

    def predictions(self) -> dict[tuple[str, int], object]:
        return {(m["stream_id"], m["seq"]): m["y_pred"] for m in self.of("predictions", "prediction/v2")}

    def explanation_values(self) -> dict[tuple[str, int, str, str], float]:
        return {(m["stream_id"], m["position"], m["explainer"], m["feature"]): m["value"]
                for m in self.of("explanations")}

    def changes(self) -> dict[tuple[str, int, str, str], tuple[int, float, float]]:
        """Each change event at its positions (where the change test found it), as the reference keeps them."""
        return {(c["stream_id"], c["position"], c["explainer"], c["feature"]): (c["cut_position"], c["level_before"],
                                                                               c["level_after"])
                for c in self.of("drift-events")}


def run_handlers(s: Settings, log: PartitionLog, model: Callable[[int], ModelHandler] | None = None,
                 explain: Callable[[int, int], ExplainHandler] | None = None,
                 change: Callable[[int], ChangeHandler] | None = None, run: Run | None = None) -> Run:
    """The model, explain and change handlers over the arrivals (``model(offset)`` etc. pick each message's
    handler), called as the agents call them; ``run`` collects the outputs and histories."""
    one_model, one_explain, one_change = ModelHandler(s), ExplainHandler(s), ChangeHandler(s)
    model = model or (lambda off: one_model)
    explain = explain or (lambda p, off: one_explain)
    change = change or (lambda off: one_change)
    run = run or Run()

    def feed(handler, topic: str, partition: int, plog: PartitionLog, off: int):
        src = plog.source(topic, partition, off)
        key, value, _, _ = plog.parts[(topic, partition)][off]
        handler.needs_recovery(key, src)
        return handler.on_message(value, key, src)

    for off in range(len(log.parts.get((ARRIVALS, 0), []))):
        for out in feed(model(off), ARRIVALS, 0, log, off):
            if out.topic == "explain-tasks":
                run.tasks.append("explain-tasks", out.partition, out.key, out.value, headers=out.headers)
            run.add(out.topic, out.value, out.headers)
    for (topic, p), items in sorted(run.tasks.parts.items()):
        for off in range(len(items)):
            for out in feed(explain(p, off), topic, p, run.tasks, off):
                if out.topic == "drift-feed":  # what the change agent reads: a report's explanations as one record
                    run.explanations.append("drift-feed", 0, out.key, out.value, headers=out.headers)
                else:
                    run.add(out.topic, out.value)
    for off in range(len(run.explanations.parts.get(("drift-feed", 0), []))):
        for out in feed(change(off), "drift-feed", 0, run.explanations, off):
            run.add(out.topic, out.value)
    return run


def run_model(s: Settings, messages: Iterable[FeatureEvent | LabelEvent | tuple[str, bytes, bytes]]):
    """``messages`` recorded as the intake would, through one model handler and the explainers:
    the run's outputs, the model handler, and the in-process reference over the valid ones."""
    from streamxai.reference import run_in_process

    log, run = PartitionLog(), Run()
    recorded = record_arrivals(log, messages)
    mh = ModelHandler(s)
    run_handlers(s, log, model=lambda off: mh, run=run)
    return run, mh, run_in_process(s, recorded, changes=False)
