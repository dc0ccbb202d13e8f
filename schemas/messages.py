"""Versioned message types on the wire.

>>> e = FeatureEvent(stream_id="s1", seq=0, ts=1.5, x={"a": 1.0}, y=1)
>>> e.to_dict()["schema"]
'feature_event/v1'
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any, ClassVar

__all__ = [
    "Message",
    "FeatureEvent",
    "LabelEvent",
    "LabelOutcome",
    "ExplainTask",
    "ExplainDecision",
    "Prediction",
    "Explanation",
    "LocalExplanation",
    "ChangeEvent",
    "ChangeEpisode",
    "DeadLetter",
    "MESSAGE_TYPES",
    "field_names",
]

Scalar = float | int | str | bool | None


class Message:
    """What every message type shares: its ``SCHEMA`` (``name/version``) and :meth:`to_dict`.

    Every payload is a JSON object whose ``schema`` field names its type and version; types are
    frozen, ``to_dict()`` gives plain JSON types, and ``schemas/json/`` holds the JSON Schemas.
    """

    SCHEMA: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """The payload: ``schema`` then the fields. Shallow: messages are built to be sent, not
        edited, and no field holds another dataclass."""
        d = {"schema": self.SCHEMA}
        for name in field_names(type(self)):
            d[name] = getattr(self, name)
        if d.get("event_id", 0) is None:
            del d["event_id"]  # the team's event id is left out of messages of the own envelope's events
        return d


@cache
def field_names(cls: type) -> tuple[str, ...]:
    """The fields of the message type ``cls``, in order (its payload's after ``schema``)."""
    return tuple(f.name for f in fields(cls))


@dataclass(frozen=True, slots=True)
class FeatureEvent(Message):
    """One observation of a stream: features ``x`` and, once known, the target ``y``."""

    SCHEMA: ClassVar[str] = "feature_event/v1"
    stream_id: str
    seq: int
    ts: float
    x: dict[str, Scalar]
    y: Scalar = None


@dataclass(frozen=True, slots=True)
class LabelEvent(Message):
    """The target ``y`` of event ``seq`` of a stream, sent after its features (topic ``labels``).

    >>> LabelEvent("s1", 7, 1, 2.5).to_dict()
    {'schema': 'label_event/v1', 'stream_id': 's1', 'seq': 7, 'y': 1, 'ts': 2.5}
    """

    SCHEMA: ClassVar[str] = "label_event/v1"
    stream_id: str
    seq: int
    y: Scalar
    ts: float
    #: the team's own id of the event (a labels source's label, as the join sends it)
    event_id: str | None = field(default=None, repr=False)


#: the steps of an explain task: ``predict`` (at the event's arrival: explainers that need no
#: label), ``learn`` (when its label is known: the others, then the replica learns it), or
#: ``both`` (a label in line)
STEPS = ("predict", "learn", "both")


def _default_position(msg: Any) -> None:
    """A message without a ``position`` is of a stream whose labels come in line: its position is its seq."""
    if msg.position is None:
        object.__setattr__(msg, "position", msg.seq)


@dataclass(frozen=True, slots=True)
class ExplainTask(Message):
    """Internal: one step of one event handed to the explainer group ``group`` of its stream.

    ``loss`` is the model's prequential loss on the event, so explainers report the model's loss
    without evaluating it again. An event is explained in up to two steps (``step``, :data:`STEPS`),
    each at its ``position`` in the stream's record of arrivals.
    """

    SCHEMA: ClassVar[str] = "explain_task/v3"
    stream_id: str
    seq: int
    ts: float
    x: dict[str, Scalar]
    y: Scalar
    group: int
    explain: bool
    sent_at: float
    loss: float | None = None
    step: str = "both"
    position: int = None  # type: ignore[assignment]  # None: the seq
    #: the team's own id of the event (a source's ``event_id``; null for the own envelope)
    event_id: str | None = None

    def __post_init__(self) -> None:
        _default_position(self)


@dataclass(frozen=True, slots=True)
class ExplainDecision(Message):
    """Internal: whether explainer group ``group`` explained (or shed) event ``seq``, recorded
    when lag shedding is on so a replay makes the same decision."""

    SCHEMA: ClassVar[str] = "explain_decision/v2"
    stream_id: str
    group: int
    seq: int
    explain: bool
    #: the task's position (a seq has two tasks when its label comes later)
    position: int = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        _default_position(self)


@dataclass(frozen=True, slots=True)
class Prediction(Message):
    """The model's prediction for event ``seq`` when it arrived, and its loss if its label came
    with it (``y_true``; else null, and a :class:`LabelOutcome` follows).

    ``position`` is the event's place in its stream's record of arrivals, the time axis the
    explanations share.
    """

    SCHEMA: ClassVar[str] = "prediction/v2"
    stream_id: str
    seq: int
    ts: float
    y_true: Scalar
    y_pred: Scalar
    loss: float | None
    model_version: int
    position: int = None  # type: ignore[assignment]
    #: the team's own id of the event (a source's ``event_id``; null for the own envelope)
    event_id: str | None = None

    def __post_init__(self) -> None:
        _default_position(self)


#: what became of an event that waited for its label
OUTCOMES = ("learned", "expired")


@dataclass(frozen=True, slots=True)
class LabelOutcome(Message):
    """What became of event ``seq``, predicted without its label (topic ``predictions``, after
    its :class:`Prediction`): its label came and the model learned it (``outcome="learned"``;
    ``loss`` scores the prediction made at arrival, ``y_pred``, against ``y_true``), or it waited
    too long (``"expired"``; never learned).

    ``delay_events`` and ``delay_s`` are how far the stream had moved on since the event arrived,
    ``waiting`` how many of its events still wait for their label.

    >>> LabelOutcome("s", 3, 1.0, "learned", 1, 0, 1.0, 3, 500, 2.5, 499, 1003).to_dict()["loss"]
    1.0
    """

    SCHEMA: ClassVar[str] = "label_outcome/v1"
    stream_id: str
    seq: int
    ts: float
    outcome: str
    y_true: Scalar
    y_pred: Scalar
    loss: float | None
    model_version: int
    delay_events: int
    delay_s: float | None
    waiting: int
    position: int
    #: the team's own id of the event, where its label named it (a labels source's)
    event_id: str | None = None


@dataclass(frozen=True, slots=True)
class Explanation(Message):
    """One explainer's value for one feature after folding in event ``seq``.

    ``model_version`` is the number of events the explained model had learned, ``n_explained``
    how many events went into the estimate and ``n_seen`` how many the explainer saw (the rest
    were shed). ``stderr``, ``block``, ``model_loss`` and ``var_factor`` are what change
    detection needs (see the ``explanation/v4`` schema); ``position`` is the stream's position
    of the step that produced it, strictly increasing per stream, and ``seq`` the event explained
    last (a label may come long after its event).
    """

    SCHEMA: ClassVar[str] = "explanation/v4"
    stream_id: str
    explainer: str
    feature: str
    value: float
    seq: int
    n_explained: int
    n_seen: int
    model_version: int
    curve: dict[str, list] | None = None
    stderr: float | None = None
    block: dict[str, float] | None = None
    model_loss: dict[str, float] | None = None
    var_factor: float | None = None
    position: int = None  # type: ignore[assignment]
    #: the team's own id of event ``seq`` (a source's ``event_id``; null for the own envelope)
    event_id: str | None = None

    def __post_init__(self) -> None:
        _default_position(self)


@dataclass(frozen=True, slots=True)
class LocalExplanation(Message):
    """Why one prediction: each feature's interventional Shapley value for the prediction of
    event ``seq`` by ``model_version``, against the stream's recent feature values (iSAGE's
    reservoir, ``n_background`` rows); ``base`` is the mean prediction over them. ``target`` is
    the class whose probability is explained (null: a regression value); ``method`` says how:
    ``sampling`` gives ``stderr`` per feature, the others are exact.

    ``values`` lists every feature, or the ``local_top_k`` largest by absolute value, with the
    others' sum in ``rest``, so ``base + sum(values) + rest == prediction``; ``x`` holds the
    event's value of each listed feature.
    """

    SCHEMA: ClassVar[str] = "local_explanation/v1"
    stream_id: str
    seq: int
    position: int
    model_version: int
    target: Scalar
    prediction: float
    base: float
    values: dict[str, float]
    method: str
    exact: bool
    n_background: int
    stderr: dict[str, float] | None = None
    n_evaluations: int = 0
    #: the team's own id of event ``seq`` (a source's ``event_id``; null for the own envelope)
    event_id: str | None = None
    #: the event's value of each feature in ``values``
    x: dict[str, Scalar] | None = None
    #: the sum of the values of the features ``values`` leaves out (``local_top_k``)
    rest: float = 0.0
    #: the features attributed, listed in ``values`` or summed in ``rest`` (None: those listed)
    n_features: int | None = None


@dataclass(frozen=True, slots=True)
class ChangeEvent(Message):
    """The series ``stream_id/explainer/feature`` changed: a new regime from position
    ``cut_position``, detected at ``position`` (the stream's record order). ``seq`` is the event
    whose explanation revealed it and ``cut_seq`` the first event of the new regime (null where
    no longer known). Schema ``drift_event/v3`` on ``drift-events``.

    Levels are mean per-event increments on each side of the cut (``n_*`` increments, 95%
    intervals ``ci_*``); ``effect = level_after - level_before``, ``relative_effect`` its size
    against the explainer's largest importance in the stream. ``z`` crossed ``threshold`` at
    the boundary where the test detected the change; ``explanation_*``, ``rank_*``, ``curve_*``
    and ``loss_*`` describe both sides of the cut.
    """

    SCHEMA: ClassVar[str] = "drift_event/v3"
    stream_id: str
    explainer: str
    feature: str
    series: str
    seq: int
    cut_seq: int | None
    n_before: int
    n_after: int
    level_before: float
    level_after: float
    ci_before: list[float] | None
    ci_after: list[float] | None
    effect: float
    relative_effect: float
    min_effect: float
    z: float
    threshold: float
    explanation_before: dict[str, float | None]
    explanation_after: dict[str, float | None]
    rank_before: dict[str, int | None]
    rank_after: dict[str, int | None]
    curve_before: dict[str, list] | None
    curve_after: dict[str, list] | None
    loss_before: float | None
    loss_after: float | None
    n_loss_before: int
    n_loss_after: int
    position: int
    cut_position: int


@dataclass(frozen=True, slots=True)
class ChangeEpisode(Message):
    """Changes of one stream that happened together (topic ``change-episodes``).

    ``changes`` are ranked by ``relative_effect`` (largest first); ``explanations``,
    ``curves`` and ``loss_*`` compare the two sides of ``cut_seq`` (the top change's cut).
    ``kind`` says why (``learning``, ``degradation``, ``reliance_shift`` or ``data_fault``, whose
    ``faults`` say how each feature changed) and ``alert`` whether it pages
    (``change_alert_kinds``). An episode is sent ``open`` once its loss has moved (again, open,
    when an alerting episode gains a feature) and ``closed`` at ``closed_seq``; consumers keep the
    later message by ``(stream_id, first_position, kind)``. The ``*_position`` fields place it on
    the stream's record order, the ``*_seq`` fields name the events explained there.
    ``alert_key`` (null unless it alerts) depends on the stream and the episode only, so every
    message of one alert, sent again or not, carries the same key.
    """

    SCHEMA: ClassVar[str] = "change_episode/v4"
    stream_id: str
    status: str
    first_seq: int
    last_seq: int
    closed_seq: int | None
    cut_seq: int | None
    kind: str
    alert: bool
    changes: list[dict[str, Any]]
    explanations: dict[str, dict[str, dict[str, Any]]]
    curves: dict[str, dict[str, Any]]
    loss_before: float | None
    loss_after: float | None
    n_loss_before: int
    n_loss_after: int
    loss_ci_before: list[float] | None
    loss_ci_after: list[float] | None
    loss_z: float | None
    first_position: int
    last_position: int
    closed_position: int | None
    cut_position: int
    alert_key: str | None = None
    #: a ``data_fault`` episode's faults: what each feature's values did and how much the model relied on it
    faults: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter(Message):
    """A message that could not be processed: why, where it came from, and its bytes (base64).

    ``original`` holds the whole original only when it fits the broker's size limit, else a
    prefix (``truncated``), with ``original_bytes`` and ``original_sha256`` of the whole;
    ``key`` is the original key (base64), cut to its first KiB.
    """

    SCHEMA: ClassVar[str] = "dead_letter/v2"
    reason: str
    error: str
    stage: str
    source: dict[str, Any]
    original: str
    original_bytes: int | None
    original_sha256: str | None
    truncated: bool
    key: str | None = None
    ts: float = field(default=0.0)
    #: the team's own id of the event, where the message is a source's record that names one
    event_id: str | None = None


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.SCHEMA: cls
    for cls in (FeatureEvent, LabelEvent, LabelOutcome, ExplainTask, ExplainDecision, Prediction, Explanation,
                LocalExplanation, ChangeEvent, ChangeEpisode,
                DeadLetter)
}
