"""The in-process reference: a recorded order of arrivals through the core alone. Given the same
arrivals, a run through Kafka and this function give the same predictions, outcomes,
explanations and change events, built from the same settings (:mod:`streamxai.plan`); a clock
is never read.

>>> from streamxai.schemas import FeatureEvent, LabelEvent
>>> from streamxai.settings import Settings
>>> s = Settings(features=["a"], task="regression", output="value", loss="squared", explainers=["ipfi", "ipdp"],
...              model="river.linear_model.LinearRegression", model_params={}, emit_every=2, grid_size=3)
>>> arrivals = [Recorded(FeatureEvent("s", q, float(q), {"a": q / 10})) for q in range(4)]
>>> arrivals += [Recorded(LabelEvent("s", q, q / 5, 9.0)) for q in range(4)]
>>> run = run_in_process(s, arrivals)
>>> sorted({(p, e) for (_, p, e, _) in run.explanations}), run.joins["s"].counts["labels_learned"]
([(1, 'ipdp'), (3, 'ipdp'), (5, 'ipfi'), (7, 'ipfi')], 4)
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from streamxai.schemas import FeatureEvent, LabelEvent

from .core.budget import EventSampler
from .core.change import StreamChangeDetector
from .core.labels import LabelJoin, Outcome
from .core.stream import StreamExplainer
from .handlers.change import alert_key, stream_detector
from .plan import label_join, stream_explainer
from .settings import Settings

__all__ = ["Recorded", "ReferenceRun", "run_in_process"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One arrival as the arrivals topic records it: the event, when it arrived (the record's
    timestamp) and where it came from (``(input partition, offset)``, to drop what came twice)."""

    event: FeatureEvent | LabelEvent
    at: float | None = None
    origin: tuple[Hashable, int] | None = None


@dataclass
class ReferenceRun:
    """What the pipeline would publish, keyed as its messages are."""

    #: (stream, seq) -> the prediction made when the event arrived
    predictions: dict[tuple[str, int], Any] = field(default_factory=dict)
    #: (stream, seq) -> what became of an event that waited for its label
    outcomes: dict[tuple[str, int], Outcome] = field(default_factory=dict)
    #: (stream, position, explainer, feature) -> the published value
    explanations: dict[tuple[str, int, str, str], float] = field(default_factory=dict)
    #: (stream, position detected, explainer, feature) -> (cut position, level before, level after)
    changes: dict[tuple[str, int, str, str], tuple[int, float, float]] = field(default_factory=dict)
    #: (stream, first position, cut position, changed features)
    episodes: list[tuple[str, int, int, list[str]]] = field(default_factory=list)
    #: (stream, position of the message that announced it, kind, alert): each episode once, as it is counted and paged
    kinds: list[tuple[str, int, str, bool]] = field(default_factory=list)
    #: the ``alert_key`` of each alerting episode, once, as it is announced: what a pager pages on
    alerts: list[str] = field(default_factory=list)
    joins: dict[str, LabelJoin] = field(default_factory=dict)
    explainers: dict[str, StreamExplainer] = field(default_factory=dict)
    detectors: dict[str, StreamChangeDetector] = field(default_factory=dict)


def run_in_process(s: Settings, arrivals: Iterable[Recorded], *, changes: bool = True) -> ReferenceRun:
    """Run ``arrivals`` (in their recorded order) through the core under settings ``s``, each
    stream under its profile (``s.for_stream``); ``changes=False`` skips the change detection."""
    run = ReferenceRun()
    samplers: dict[str, EventSampler] = {}
    for r in arrivals:
        ev, sid = r.event, r.event.stream_id
        join = run.joins.get(sid)
        if join is None:
            ss = s.for_stream(sid)  # its profile, as every handler builds it
            join = run.joins[sid] = label_join(ss)
            run.explainers[sid] = stream_explainer(ss, sid)
            run.detectors[sid] = stream_detector(ss)
            samplers[sid] = EventSampler(ss.sample_rate, s.explain_seed)
        if isinstance(ev, LabelEvent):
            res = join.on_label(ev.seq, ev.y, r.at, origin=r.origin)
        else:
            res = join.on_features(ev.seq, ev.x, ev.y, ev.ts, r.at, origin=r.origin)
        if res.prediction is not None:
            run.predictions[(sid, res.prediction.seq)] = res.prediction.y_pred
        for o in res.outcomes:
            run.outcomes[(sid, o.seq)] = o
        se, det = run.explainers[sid], run.detectors[sid]
        for step in res.steps:
            values = se.step(step.kind, step.x, step.y, explain=samplers[sid].selected(sid, step.seq), loss=step.loss,
                             position=step.position)
            faults = se.take_faults()
            if faults and changes:
                found, closed = det.input_faults(faults)
                _note(run, sid, step.position, found, closed)
            for v in values:
                run.explanations[(sid, step.position, v.explainer, v.feature)] = v.value
                if not changes:
                    continue
                found, closed = det.update(v.explainer, v.feature, step.position, v.block, v.curve, v.model_loss,
                                           v.var_factor)
                _note(run, sid, step.position, found, closed)
    return run


def _note(run: ReferenceRun, sid: str, position: int, found: list, closed: list) -> None:
    """Keep the changes ``found`` and the episodes ``closed`` (or announced) at ``position``."""
    for c in found:
        run.changes[(sid, c.seq, c.explainer, c.feature)] = (c.cut_seq, c.before.mean, c.after.mean)
    run.episodes += [(sid, e.first_seq, e.cut_seq, sorted({c.feature for c in e.changes}))
                     for e in closed if e.status == "closed"]
    run.kinds += [(sid, position, e.kind, e.alert) for e in closed if e.first]
    run.alerts += [alert_key(sid, e.first_seq, e.kind) for e in closed if e.first and e.alert]
