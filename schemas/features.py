"""Validation of incoming feature events against the configured feature set, and what label events
share with them: stream ids, seqs and the check of a label (:func:`check_label`).

>>> spec = FeatureSpec(names=("age", "car"), categorical=frozenset({"car"}), task="classification")
>>> raw = b'{"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 0, "x": {"age": 30, "car": "a"}, "y": 1}'
>>> parse_feature_event(raw, spec, where="features[0]@0").x
{'age': 30.0, 'car': 'a'}
>>> parse_feature_event(raw.replace(b'"car": "a"', b'"car": 3.0'), spec, where="features[0]@0").x  # integral: 3
{'age': 30.0, 'car': 3}
>>> parse_feature_event(raw.replace(b'"car": "a"', b'"cat": "a"'), spec, where="features[0]@1")
Traceback (most recent call last):
...
streamxai.schemas.errors.FeatureMismatch: features[0]@1: missing features ['car'], unexpected features ['cat'] in stream 's' seq 0; the configured features are ['age', 'car']
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import BadValue, FeatureMismatch, LabelTypeMismatch, NoProfile, SchemaMismatch
from .messages import FeatureEvent
from .wire import DEFAULT_MAX_BYTES, decode_as

__all__ = ["FeatureSpec", "parse_feature_event", "feature_event_from", "check_feature_event", "check_stream_id", "TASKS",
           "STREAM_ID_CHARS", "MAX_STREAM_ID", "MAX_SEQ", "shown", "check_label"]

TASKS = ("classification", "regression")
#: the characters a stream id may use: no ``/`` (it separates the parts of task and explanation
#: keys), no spaces, control or non-ASCII characters, so ids are safe in logs, keys and labels
STREAM_ID_CHARS = "A-Z a-z 0-9 _ - . : @ + = ~"
MAX_STREAM_ID = 128
#: seqs are signed 64-bit integers on the wire (Java and Kafka Streams consumers read them as long)
MAX_SEQ = 2**63 - 1
#: a categorical value or class label that is an integer must be a signed 64-bit one, as seqs are:
#: orjson writes nothing wider, and other consumers of the topics read integers as a ``long``
INT64 = (-MAX_SEQ - 1, MAX_SEQ)
_STREAM_ID = re.compile(rf"[A-Za-z0-9_.:@+=~-]{{1,{MAX_STREAM_ID}}}")


@dataclass(frozen=True)
class FeatureSpec:
    """The features every event must carry, which of them are categorical, and the task
    (classification: a label; regression: a number);
    ``origin`` names where they were configured, for error messages (e.g. a stream profile)."""

    names: tuple[str, ...]
    categorical: frozenset[str] = field(default_factory=frozenset)
    task: str = "classification"
    origin: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("FeatureSpec.names is empty; list the model's input features")
        unknown = set(self.categorical) - set(self.names)
        if unknown:
            raise ValueError(f"categorical features {sorted(unknown)} are not in names {list(self.names)}")
        if self.task not in TASKS:
            raise ValueError(f"task={self.task!r} must be one of {TASKS}")


def parse_feature_event(
    raw: bytes | None, spec: FeatureSpec | Callable[[str], FeatureSpec], *, where: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> FeatureEvent:
    """Bytes to a validated :class:`FeatureEvent`, or an ``InvalidMessage`` saying what is wrong.

    ``spec`` is the features of every stream, or a function from a stream id to its features
    that raises ``LookupError`` for a stream it has none for (a :class:`NoProfile` dead letter).

    >>> specs = {"a": FeatureSpec(("age",), origin='stream profile "a"')}
    >>> raw = b'{"schema": "feature_event/v1", "stream_id": "b", "seq": 0, "ts": 0, "x": {"age": 1}, "y": 1}'
    >>> parse_feature_event(raw.replace(b'"b"', b'"a"'), specs.__getitem__, where="f[0]@0").x
    {'age': 1.0}
    >>> parse_feature_event(raw, specs.__getitem__, where="f[0]@1")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.NoProfile: f[0]@1: 'b'
    >>> parse_feature_event(raw.replace(b'"b"', b'"a"').replace(b'"age"', b'"car"'), specs.__getitem__, where="f[0]@2")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.FeatureMismatch: f[0]@2: missing features ['age'], unexpected features ['car'] in stream 'a' seq 0; the features of stream profile "a" are ['age']
    """
    obj = decode_as(raw, FeatureEvent.SCHEMA, where=where, max_bytes=max_bytes)
    return feature_event_from(obj, spec, where=where)


def feature_event_from(obj: dict[str, Any], spec: FeatureSpec | Callable[[str], FeatureSpec], *,
                       where: str) -> FeatureEvent:
    """A decoded ``feature_event/v1`` object to a validated :class:`FeatureEvent` (see :func:`parse_feature_event`).

    Every event comes through here, and again as an explain task, so the usual case costs no
    more than its checks; error texts are written only for an error."""
    ev = _usual_event(obj, spec)
    return ev if ev is not None else _checked_event(obj, spec, where=where)


def _checked_event(obj: dict[str, Any], spec: FeatureSpec | Callable[[str], FeatureSpec], *,
                   where: str) -> FeatureEvent:
    """:func:`feature_event_from` for any object: every check, the values converted, each error said."""
    keys = obj.keys()
    if not _REQUIRED <= keys <= _FIELDS:
        missing = sorted(_REQUIRED - set(obj))
        extra = sorted(set(obj) - _FIELDS)
        raise SchemaMismatch(f"feature_event/v1 fields: missing {missing}, unexpected {extra}", where=where)
    stream_id = obj["stream_id"]
    check_stream_id(stream_id, where=where)
    if not isinstance(spec, FeatureSpec):
        try:
            spec = spec(stream_id)
        except LookupError as e:
            raise NoProfile(str(e), where=where) from None
    seq = obj["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= MAX_SEQ:
        raise SchemaMismatch(
            f"seq {shown(seq)} must be an integer in [0, 2**63 - 1]; number each stream's events 0, 1, 2, ...",
            where=where)
    ts = _number(obj["ts"], "ts", where)
    x = obj["x"]
    if not isinstance(x, dict):
        raise SchemaMismatch(f"x must be an object of feature values, got {type(x).__name__}", where=where)
    names = spec.names
    if len(x) != len(names) or any(n not in x for n in names):
        missing_f = [n for n in names if n not in x]
        extra_f = sorted(k for k in x if k not in set(names))
        raise FeatureMismatch(
            f"missing features {shown(missing_f)}, unexpected features {shown(extra_f)} {_ctx(stream_id, seq)}; "
            f"the {f'features of {spec.origin}' if spec.origin else 'configured features'} are {list(names)}",
            where=where,
        )
    clean: dict[str, Any] = {}
    categorical = spec.categorical
    for n in names:
        v = x[n]
        if n in categorical:
            v = _integral(v)
            if _wide(v):
                raise BadValue(f"categorical feature {shown(n)} {_ctx(stream_id, seq)} is {shown(v)}, {_WIDE}",
                               where=where)
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise BadValue(f"categorical feature {shown(n)} {_ctx(stream_id, seq)} is {shown(v)}; send a string "
                               "or integer", where=where)
            clean[n] = v
        elif type(v) is float and v - v == 0.0:  # finite (inf - inf and nan - nan are nan): _number's value
            clean[n] = v
        else:
            clean[n] = _number(v, f"feature {n!r} {_ctx(stream_id, seq)}", where)
    y = obj.get("y")
    if y is not None:
        y = check_label(y, spec.task, f"label y {_ctx(stream_id, seq)}", where=where)
    return FeatureEvent(stream_id=stream_id, seq=seq, ts=ts, x=clean, y=y)


_FIELDS = frozenset({"schema", "stream_id", "seq", "ts", "x", "y"})
_REQUIRED = _FIELDS - {"y"}
#: stream ids that passed :func:`check_stream_id` (bounded: emptied when full)
_VALID_IDS: dict[str, None] = {}
_MAX_VALID_IDS = 4096


def _usual_event(obj: dict[str, Any], spec: FeatureSpec | Callable[[str], FeatureSpec]) -> FeatureEvent | None:
    """The event ``obj`` is, as :func:`feature_event_from` gives it, if it is the usual one (see
    :func:`_usual_x`); None for anything else, which the full checks take."""
    if not (obj.keys() <= _FIELDS and len(obj) - ("y" in obj) == 5):  # every field, no other
        return None
    stream_id, seq, ts, y = obj["stream_id"], obj["seq"], obj["ts"], obj.get("y")
    x = _usual_x(stream_id, seq, ts, obj["x"], y, spec)
    return None if x is None else FeatureEvent(stream_id, seq, ts, x, y)


def check_feature_event(stream_id: Any, seq: Any, ts: Any, x: Any, y: Any,
                        spec: FeatureSpec | Callable[[str], FeatureSpec], *, where: str) -> None:
    """Raise what :func:`feature_event_from` raises for an event of these fields, without making
    the event: the explain handler checks every task's event as the model handler took it."""
    if _usual_x(stream_id, seq, ts, x, y, spec, build=False) is None:
        _checked_event({"schema": FeatureEvent.SCHEMA, "stream_id": stream_id, "seq": seq, "ts": ts, "x": x, "y": y},
                       spec, where=where)


def _usual_x(stream_id: Any, seq: Any, ts: Any, x: Any, y: Any,
             spec: FeatureSpec | Callable[[str], FeatureSpec], build: bool = True) -> dict[str, Any] | None:
    """The features ``x`` in the spec's order (``x`` itself unless ``build``) if the event is the
    usual one, its fields on exact types and its stream id seen valid before; None otherwise."""
    if not (type(seq) is int and 0 <= seq <= MAX_SEQ and type(ts) is float and ts - ts == 0.0  # finite
            and type(x) is dict and type(stream_id) is str and stream_id in _VALID_IDS):
        return None
    if not isinstance(spec, FeatureSpec):
        try:
            spec = spec(stream_id)  # type: ignore[arg-type]
        except LookupError:
            return None
    names, categorical = spec.names, spec.categorical
    if len(x) != len(names):
        return None
    clean: dict[str, Any] | None = None
    if not categorical and _finite_floats(x) and all(map(x.__contains__, names)):
        # every feature a finite float (the usual event of a numeric stream), checked in C
        if build:
            clean = x if tuple(x) == names else {n: x[n] for n in names}
    else:
        clean = {} if build else None
        for n in names:
            v = x.get(n)
            t = type(v)
            if t is float:
                if v - v != 0.0 or n in categorical:  # not finite, or a categorical value _integral may convert
                    return None
            elif not (n in categorical and (t is str or t is int and INT64[0] <= v <= INT64[1])):  # type: ignore[operator]
                return None
            if clean is not None:
                clean[n] = v
    t = type(y)
    if y is not None and not (t is float and y - y == 0.0 if spec.task == "regression"  # type: ignore[operator]
                              else t is str or t is bool or t is int and INT64[0] <= y <= INT64[1]):  # type: ignore[operator]
        return None
    return x if clean is None else clean


def _finite_floats(x: dict[str, Any]) -> bool:
    """Whether every value of ``x`` is a finite float (False may also mean their sum overflows:
    the caller then looks at each).

    >>> _finite_floats({"a": 1.0, "b": -2.5}), _finite_floats({"a": 1.0, "b": 2}), _finite_floats({"a": math.inf})
    (True, False, False)
    """
    values = x.values()
    if set(map(type, values)) != _FLOAT:
        return False
    total = sum(values)
    return total - total == 0.0  # inf - inf and nan - nan are nan


_FLOAT = {float}


def _ctx(stream_id: str, seq: int) -> str:
    """Where in the stream a bad value is, for its error."""
    return f"in stream {stream_id!r} seq {seq}"


def check_label(y: Any, task: str, what: str, *, where: str | None = None) -> Any:
    """``y`` as the task ``task`` wants it, or :class:`~streamxai.schemas.errors.LabelTypeMismatch`.

    The same check for a label in a feature event and on the labels topic, so the same fault is
    the same dead letter wherever it comes from; an integral float is taken as that integer.

    >>> check_label(3, "regression", "y"), check_label(True, "classification", "y"), check_label(1.0, "classification", "y")
    (3.0, True, 1)
    """
    if task == "regression":
        if isinstance(y, bool) or not isinstance(y, (int, float)) or not math.isfinite(y):
            raise LabelTypeMismatch(f"{what} is {shown(y)} ({type(y).__name__}); the task is regression: send a "
                                    "finite number", where=where)
        return float(y)
    if _wide(y := _integral(y)):
        raise LabelTypeMismatch(f"{what} is {shown(y)}, {_WIDE}", where=where)
    if not isinstance(y, (str, int, bool)):
        raise LabelTypeMismatch(f"{what} is {shown(y)} ({type(y).__name__}); the task is classification: send a string, "
                                "integer or boolean", where=where)
    return y


def _integral(v: Any) -> Any:
    """An integral float within :data:`INT64` as that integer (JSON writers differ on ``1`` and
    ``1.0``), else ``v``.

    >>> _integral(2.0), _integral(2.5), _integral("2.0"), _integral(1e21)
    (2, 2.5, '2.0', 1e+21)
    """
    return int(v) if isinstance(v, float) and v.is_integer() and INT64[0] <= v <= INT64[1] else v


_WIDE = ("beyond the signed 64-bit integers [-2**63, 2**63 - 1] that a categorical value or class label may be "
         "(nothing wider can be written to the topics, and their consumers read integers as 64-bit); send it as a string")


def _wide(v: Any) -> bool:
    """Whether ``v`` is an integer, or an integral float, outside :data:`INT64`.

    >>> _wide(2**63 - 1), _wide(2**63), _wide(1e21), _wide(1e21 + 0.5), _wide(True)
    (False, True, True, True, False)
    """
    if isinstance(v, float):
        return v.is_integer() and not INT64[0] <= v <= INT64[1]
    return isinstance(v, int) and not INT64[0] <= v <= INT64[1]


def _number(v: Any, what: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadValue(f"{what} is {shown(v)} ({type(v).__name__}); send a finite number", where=where)
    f = float(v)
    if not math.isfinite(f):
        raise BadValue(f"{what} is {shown(v)}; NaN and infinity are not accepted", where=where)
    return f


def check_stream_id(stream_id: Any, *, where: str | None = None) -> None:
    """Raise :class:`SchemaMismatch` unless ``stream_id`` is 1 to 128 characters of :data:`STREAM_ID_CHARS`.

    >>> check_stream_id("shop-17")
    >>> check_stream_id("shop 17")
    Traceback (most recent call last):
    ...
    streamxai.schemas.errors.SchemaMismatch: stream_id 'shop 17' must be 1 to 128 characters from A-Z a-z 0-9 _ - . : @ + = ~ (no '/', spaces or non-ASCII)
    """
    if type(stream_id) is str and stream_id in _VALID_IDS:
        return
    if not isinstance(stream_id, str) or not _STREAM_ID.fullmatch(stream_id):
        raise SchemaMismatch(
            f"stream_id {shown(stream_id)} must be 1 to {MAX_STREAM_ID} characters from "
            f"{STREAM_ID_CHARS} (no '/', spaces or non-ASCII)",
            where=where,
        )
    if type(stream_id) is str:
        if len(_VALID_IDS) >= _MAX_VALID_IDS:
            _VALID_IDS.clear()
        _VALID_IDS[stream_id] = None


def shown(v: Any, limit: int = 200) -> str:
    """``repr(v)`` cut to ``limit`` characters, so a huge value cannot flood an error or a log line.

    >>> shown("x" * 1000, limit=12)
    "'xxxxxx...(1002 chars)"
    """
    r = repr(v)
    return r if len(r) <= limit else f"{r[:limit - 5]}...({len(r)} chars)"
