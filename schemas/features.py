"""Validation of incoming feature events against the configured feature set.

>>> spec = FeatureSpec(names=("age", "car"), categorical=frozenset({"car"}), target="label")
>>> raw = b'{"schema": "feature_event/v1", "stream_id": "s", "seq": 0, "ts": 0, "x": {"age": 30, "car": "a"}, "y": 1}'
>>> parse_feature_event(raw, spec, where="features[0]@0").x
{'age': 30.0, 'car': 'a'}
>>> parse_feature_event(raw.replace(b'"car": "a"', b'"cat": "a"'), spec, where="features[0]@1")
Traceback (most recent call last):
...
schemas.errors.FeatureMismatch: features[0]@1: missing features ['car'], unexpected features ['cat'] in stream 's' seq 0; the configured features are ['age', 'car']
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .errors import BadValue, FeatureMismatch, SchemaMismatch
from .messages import FeatureEvent
from .wire import DEFAULT_MAX_BYTES, decode_as

__all__ = ["FeatureSpec", "parse_feature_event", "TARGETS"]

TARGETS = ("label", "number")
_MAX_STREAM_ID = 200


@dataclass(frozen=True)
class FeatureSpec:
    """The features every event must carry, which of them are categorical, and the target kind."""

    names: tuple[str, ...]
    categorical: frozenset[str] = field(default_factory=frozenset)
    target: str = "label"

    def __post_init__(self) -> None:
        if not self.names:
            raise ValueError("FeatureSpec.names is empty; list the model's input features")
        unknown = set(self.categorical) - set(self.names)
        if unknown:
            raise ValueError(f"categorical features {sorted(unknown)} are not in names {list(self.names)}")
        if self.target not in TARGETS:
            raise ValueError(f"target={self.target!r} must be one of {TARGETS}")


def parse_feature_event(
    raw: bytes | None, spec: FeatureSpec, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES
) -> FeatureEvent:
    """Bytes to a validated :class:`FeatureEvent`, or an ``InvalidMessage`` saying what is wrong."""
    obj = decode_as(raw, FeatureEvent.SCHEMA, where=where, max_bytes=max_bytes)
    expected = {"schema", "stream_id", "seq", "ts", "x", "y"}
    missing = sorted(expected - {"y"} - set(obj))
    extra = sorted(set(obj) - expected)
    if missing or extra:
        raise SchemaMismatch(f"feature_event/v1 fields: missing {missing}, unexpected {extra}", where=where)
    stream_id = obj["stream_id"]
    if not isinstance(stream_id, str) or not stream_id or len(stream_id) > _MAX_STREAM_ID or "/" in stream_id:
        raise SchemaMismatch(
            f"stream_id {stream_id!r} must be a non-empty string of at most {_MAX_STREAM_ID} "
            "characters without '/'",
            where=where,
        )
    seq = obj["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise SchemaMismatch(f"seq {seq!r} must be a non-negative integer", where=where)
    ts = _number(obj["ts"], "ts", where)
    x = obj["x"]
    if not isinstance(x, dict):
        raise SchemaMismatch(f"x must be an object of feature values, got {type(x).__name__}", where=where)
    ctx = f"in stream {stream_id!r} seq {seq}"
    names = spec.names
    if len(x) != len(names) or any(n not in x for n in names):
        missing_f = [n for n in names if n not in x]
        extra_f = sorted(k for k in x if k not in set(names))
        raise FeatureMismatch(
            f"missing features {missing_f}, unexpected features {extra_f} {ctx}; "
            f"the configured features are {list(names)}",
            where=where,
        )
    clean: dict[str, Any] = {}
    for n in names:
        v = x[n]
        if n in spec.categorical:
            if isinstance(v, bool) or not isinstance(v, (str, int)):
                raise BadValue(f"categorical feature {n!r} {ctx} is {v!r}; send a string or integer", where=where)
            clean[n] = v
        else:
            clean[n] = _number(v, f"feature {n!r} {ctx}", where)
    y = obj.get("y")
    if y is not None:
        if spec.target == "number":
            y = _number(y, f"target y {ctx}", where)
        elif not isinstance(y, (str, int, bool)):
            raise BadValue(f"target y {ctx} is {y!r}; a label must be a string, integer or boolean", where=where)
    return FeatureEvent(stream_id=stream_id, seq=seq, ts=ts, x=clean, y=y)


def _number(v: Any, what: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadValue(f"{what} is {v!r} ({type(v).__name__}); send a finite number", where=where)
    f = float(v)
    if not math.isfinite(f):
        raise BadValue(f"{what} is {v!r}; NaN and infinity are not accepted", where=where)
    return f
