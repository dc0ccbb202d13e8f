"""Parsing of the internal messages, explain tasks and explanations, from bytes to their frozen
message types with every field checked; bad input raises a
:class:`~streamxai.schemas.errors.SchemaMismatch` naming the field and where it came from.

>>> from streamxai.schemas import ExplainTask, dumps
>>> raw = dumps(ExplainTask("s", 3, 1.0, {"a": 1.0}, 0, 1, True, 2.0, 0.5))
>>> t = parse_explain_task(raw, where="explain-tasks[0]@9", groups=2); (t.seq, t.step, t.position)
(3, 'both', 3)
>>> parse_explain_task(raw, where="explain-tasks[0]@9", groups=1)
Traceback (most recent call last):
...
streamxai.schemas.errors.SchemaMismatch: explain-tasks[0]@9: group 1 is outside [0, 1); all workers must run with the same explain_groups setting
"""

from __future__ import annotations

import math
from dataclasses import MISSING, fields
from typing import Any

from .errors import SchemaMismatch
from .messages import STEPS, ExplainTask, Explanation
from .wire import DEFAULT_MAX_BYTES, decode

__all__ = ["parse_explain_task", "explain_task_fields", "parse_explanation", "explanation_fields", "parse_moments",
           "usual_explanation", "usual_report", "usual_series", "usual_moments"]

_TASK_FIELDS = frozenset({"schema", *(f.name for f in fields(ExplainTask))})
_EXPLANATION_REQUIRED = tuple(
    f.name for f in fields(Explanation) if f.default is MISSING and f.default_factory is MISSING)


def parse_explain_task(raw: bytes | None, *, where: str, groups: int, max_bytes: int = DEFAULT_MAX_BYTES) -> ExplainTask:
    """An :class:`~streamxai.schemas.messages.ExplainTask` for one of ``groups`` explainer groups: exactly the
    dataclass's fields, ``x`` an object, ``loss`` a number or null, ``group`` in ``[0, groups)``,
    ``step`` one of :data:`~streamxai.schemas.messages.STEPS` and ``position`` an integer >= 0."""
    return ExplainTask(**explain_task_fields(raw, where=where, groups=groups, max_bytes=max_bytes))


def explain_task_fields(raw: bytes | None, *, where: str, groups: int,
                        max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """What :func:`parse_explain_task` checks, as the task's fields by name (``position`` the
    ``seq`` where it is null), without making the frozen instance."""
    obj = decode(raw, where=where, max_bytes=max_bytes)
    tag = obj.get("schema")
    if tag != ExplainTask.SCHEMA:
        raise SchemaMismatch(f"schema is {tag!r}, expected {ExplainTask.SCHEMA!r}; run every worker on the same "
                             "streamxai version", where=where)
    obj.setdefault("event_id", None)  # the team's event id: only in the tasks of a source's events
    if obj.keys() != _TASK_FIELDS or not isinstance(obj["x"], dict):
        raise SchemaMismatch(f"{ExplainTask.SCHEMA} fields are {sorted(obj)}, expected {sorted(_TASK_FIELDS)}",
                             where=where)
    if obj["event_id"] is not None and not isinstance(obj["event_id"], str):
        raise SchemaMismatch(f"event_id {obj['event_id']!r} must be a string or absent", where=where)
    loss = obj["loss"]
    if loss is not None and not _is_number(loss):
        raise SchemaMismatch(f"loss {loss!r} must be a number or null", where=where)
    if obj["step"] not in STEPS:
        raise SchemaMismatch(f"step {obj['step']!r} must be one of {STEPS}", where=where)
    position, seq = obj["position"], obj["seq"]
    if not (_is_int(seq) and seq >= 0 and (position is None or _is_int(position) and position >= 0)):
        raise SchemaMismatch(f"seq {seq!r} and position {position!r} must be integers >= 0", where=where)
    g = obj["group"]
    if not isinstance(g, int) or not 0 <= g < groups:
        raise SchemaMismatch(
            f"group {g!r} is outside [0, {groups}); all workers must run with the same explain_groups setting",
            where=where)
    obj.pop("schema")
    if position is None:  # what ExplainTask's __post_init__ does
        obj["position"] = seq
    return obj


def parse_moments(obj: Any, name: str, *, where: str) -> dict[str, float] | None:
    """``None``, or a block of increments ``{"n": integer >= 0, "mean": finite, "m2": finite >= 0}``
    with ``mean`` and ``m2`` as floats.

    >>> parse_moments({"n": 2, "mean": 1, "m2": 0.5}, "block", where="-")
    {'n': 2, 'mean': 1.0, 'm2': 0.5}
    """
    if obj is None:
        return None
    usual = usual_moments(obj)  # the usual block, as a worker writes it: checked at once
    if usual is not None:
        return {"n": usual[0], "mean": usual[1], "m2": usual[2]}
    if isinstance(obj, dict) and set(obj) == {"n", "mean", "m2"}:
        n, mean, m2 = obj["n"], obj["mean"], obj["m2"]
        if (isinstance(n, int) and not isinstance(n, bool) and n >= 0
                and all(_is_number(v) and math.isfinite(v) for v in (mean, m2)) and m2 >= 0):
            return {"n": n, "mean": float(mean), "m2": float(m2)}
    raise SchemaMismatch(
        f"{name} must be null or {{\"n\": integer >= 0, \"mean\": finite number, \"m2\": finite number >= 0}}, "
        f"got {obj!r:.200}", where=where)


def parse_explanation(raw: bytes | None, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Explanation:
    """An :class:`~streamxai.schemas.messages.Explanation` with every field the change path reads
    checked (``block`` and ``model_loss`` by :func:`parse_moments`); the other fields are passed
    through as sent (None when absent).

    >>> from streamxai.schemas import dumps
    >>> raw = dumps(Explanation("s", "ipfi", "a", 0.5, 9, 10, 10, 9, block={"n": 1, "mean": 0.5, "m2": 0.0}))
    >>> e = parse_explanation(raw, where="explanations[0]@1"); (e.value, e.block)
    (0.5, {'n': 1, 'mean': 0.5, 'm2': 0.0})
    """
    return Explanation(**explanation_fields(raw, where=where, max_bytes=max_bytes))


def explanation_fields(raw: bytes | None, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """What :func:`parse_explanation` checks, as the :class:`~streamxai.schemas.messages.Explanation`'s
    fields by name, without making the frozen instance (the change handler builds its own view)."""
    obj = decode(raw, where=where, max_bytes=max_bytes)
    tag = obj.get("schema")
    if tag != Explanation.SCHEMA:
        raise SchemaMismatch(f"schema is {tag!r}, expected {Explanation.SCHEMA!r} for an explanation (as the "
                             "explanations and drift-feed topics carry); run every worker on the same streamxai "
                             "version", where=where)
    stream_id, explainer, feature = obj.get("stream_id"), obj.get("explainer"), obj.get("feature")
    seq, value, n_explained, curve = obj.get("seq"), obj.get("value"), obj.get("n_explained"), obj.get("curve")
    position, var_factor = obj.get("position"), obj.get("var_factor")
    if not (isinstance(stream_id, str) and isinstance(explainer, str) and isinstance(feature, str)
            and _is_int(seq) and seq >= 0 and _is_int(n_explained)
            and _is_number(value) and math.isfinite(value)
            and (curve is None or isinstance(curve, dict))):
        raise SchemaMismatch(
            f"{tag} needs string stream_id/explainer/feature, integer seq >= 0 and n_explained, "
            "a finite numeric value and a curve object or null", where=where)
    if not (_is_int(position) and position >= 0):
        raise SchemaMismatch(f"position {position!r} must be an integer >= 0", where=where)
    if var_factor is not None and not (_is_number(var_factor) and math.isfinite(var_factor) and var_factor >= 0):
        raise SchemaMismatch(f"var_factor must be null or a finite number >= 0, got {var_factor!r:.100}", where=where)
    values = {name: obj.get(name) for name in _EXPLANATION_REQUIRED}
    values.update(value=float(value), curve=curve, stderr=obj.get("stderr"), position=position,
                  block=parse_moments(obj.get("block"), "block", where=where),
                  model_loss=parse_moments(obj.get("model_loss"), "model_loss", where=where),
                  var_factor=None if var_factor is None else float(var_factor))
    return values


def usual_explanation(obj: dict[str, Any]) -> bool:
    """Whether the decoded ``obj`` is the usual explanation, as a worker writes it, checked on
    exact types (:func:`usual_report` and :func:`usual_series`); False for anything else, which
    the full checks take."""
    g = obj.get
    return (g("schema") == Explanation.SCHEMA and usual_report(g("stream_id"), g("seq"), g("position"))
            and usual_series(g("explainer"), g("feature"), g("value"), g("n_explained"), g("curve"), g("var_factor")))


def usual_report(stream_id: Any, seq: Any, position: Any) -> bool:
    """Whether the fields every explanation of a report shares are as a worker writes them (see
    :func:`usual_explanation`)."""
    return type(stream_id) is str and type(seq) is int and seq >= 0 and type(position) is int and position >= 0


def usual_series(explainer: Any, feature: Any, value: Any, n_explained: Any, curve: Any, var_factor: Any) -> bool:
    """Whether the fields of one series' explanation other than its blocks are as a worker writes
    them (see :func:`usual_explanation`)."""
    return (type(explainer) is str and type(feature) is str and type(n_explained) is int
            and type(value) is float and value - value == 0.0  # finite: inf - inf is nan
            and (curve is None or type(curve) is dict)
            and (var_factor is None or type(var_factor) is float and var_factor - var_factor == 0.0 and var_factor >= 0))


def usual_moments(obj: Any) -> tuple[int, float, float] | None:
    """``(n, mean, m2)`` of a block of increments as a worker writes it (what :func:`parse_moments`
    takes first, on exact types); None for anything else, null included.

    >>> usual_moments({"n": 2, "mean": 1.0, "m2": 0.5}), usual_moments({"n": 2, "mean": 1, "m2": 0.5})
    ((2, 1.0, 0.5), None)
    """
    if type(obj) is not dict or len(obj) != 3:
        return None
    n, mean, m2 = obj.get("n"), obj.get("mean"), obj.get("m2")
    if (type(n) is int and n >= 0 and type(mean) is float and type(m2) is float
            and mean - mean == 0.0 and m2 - m2 == 0.0 and m2 >= 0):  # finite: inf - inf, nan - nan are nan
        return n, mean, m2
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
