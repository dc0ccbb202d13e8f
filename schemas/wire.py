"""The one module that owns (de)serialisation: orjson options, size limits, decoding.

>>> from streamxai.schemas.messages import Explanation
>>> raw = dumps(Explanation("s", "ipfi", "age", 0.25, 9, 10, 10, 9))
>>> decode(raw, where="explanations[0]@3")["value"]
0.25
>>> decode(b"{nope", where="features[1]@7")
Traceback (most recent call last):
...
streamxai.schemas.errors.MalformedMessage: features[1]@7: not valid JSON (...); send one UTF-8 JSON object per message
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from functools import cache
from typing import Any

import orjson

from .errors import MalformedMessage, OversizedMessage, SchemaMismatch
from .messages import MESSAGE_TYPES, Message, field_names

__all__ = ["dumps", "dumps_fields", "dumps_obj", "decode", "decode_as", "decoded_or_none", "b64", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 64 * 1024
_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


def dumps(msg: Message) -> bytes:
    """Serialise a message type (numpy scalars become Python numbers); refuses non-finite
    floats rather than writing ``null``."""
    return dumps_obj(msg.to_dict())


def dumps_fields(cls: type[Message], values: tuple) -> bytes:
    """What ``dumps(cls(*values))`` gives, ``values`` being every field of ``cls`` in order,
    without making the frozen instance (a worker writes several messages an event). A
    ``position`` of None is the ``seq`` (in the types whose ``position`` defaults so), an
    ``event_id`` of None is left out, as the message types do.

    >>> from streamxai.schemas.messages import Prediction
    >>> dumps_fields(Prediction, ("s", 3, 1.0, 1, 0, 1.0, 3, None, None)) == dumps(Prediction("s", 3, 1.0, 1, 0, 1.0, 3))
    True
    """
    return _writer_of(cls)(values)


@cache
def _writer_of(cls: type[Message]) -> Callable[[tuple], bytes]:
    """The function :func:`dumps_fields` is for ``cls``, made once per type: one dict display
    with the field names as constants (quicker than ``zip(names, values)``), then what
    :func:`dumps_obj` does."""
    names = field_names(cls)
    body = ", ".join(f"{name!r}: v{i}" for i, name in enumerate(names))
    lines = [f"    if len(v) != {len(names)}:",
             f"        raise ValueError(f'{cls.__name__} has {len(names)} fields, {{len(v)}} values were given')",
             f"    {', '.join(f'v{i}' for i in range(len(names)))}, = v",
             f"    d = {{'schema': schema, {body}}}"]
    if "position" in names and hasattr(cls, "__post_init__"):  # what their __post_init__ does
        lines.append("    if d['position'] is None: d['position'] = d['seq']")
    if "event_id" in names:
        lines.append("    if d['event_id'] is None: del d['event_id']")
    lines.append("    return finite(orjson_dumps(d, option=opts), d)")
    scope = {"schema": cls.SCHEMA, "orjson_dumps": orjson.dumps, "opts": _OPTS, "finite": _finite_output}
    # exec of a function of the type's own field names, each an identifier, and of dumps_obj's steps
    exec("def write(v):\n" + "\n".join(lines), scope)  # noqa: S102
    return scope["write"]


def dumps_obj(obj: Any) -> bytes:
    """``obj`` as JSON; refuses a non-finite float anywhere in it, naming where.

    orjson writes NaN and the infinities as ``null``, so a document with no more ``null`` than
    ``obj`` has top-level None values has no non-finite float and is not walked (:func:`_finite`).

    >>> dumps_obj({"a": 1.5, "b": None, "c": {"d": [2.0]}})
    b'{"a":1.5,"b":null,"c":{"d":[2.0]}}'
    >>> dumps_obj({"a": None, "c": {"d": [float("nan")]}})
    Traceback (most recent call last):
    ...
    ValueError: refusing to serialise non-finite value nan at .c.d[0]
    """
    return _finite_output(orjson.dumps(obj, option=_OPTS), obj)


def _finite_output(out: bytes, obj: Any) -> bytes:
    """``out``, orjson's document of ``obj``, unless ``obj`` holds a non-finite float (raises,
    naming where; see :func:`dumps_obj`)."""
    if b"null" in out and out.count(b"null") != _top_level_nones(obj) and not _finite(obj):
        _check_finite(obj, "")
    return out


def _top_level_nones(obj: Any) -> int:
    """How many of ``obj``'s own values (a dict's values, a list's or tuple's items) are None."""
    t = type(obj)
    if t is dict:
        return list(obj.values()).count(None)
    if t is list or t is tuple:
        return obj.count(None)
    return 0


def _finite(obj: Any) -> bool:
    """Whether every float in ``obj`` and in its dicts', lists' and tuples' values is finite, as
    :func:`_check_finite` checks, without building each value's path (only the error needs it).

    >>> _finite({"a": [1.0, 2, None, "x", (True, {"b": 3.5})]}), _finite({"a": [1.0, {"b": float("inf")}]})
    (True, False)
    """
    t = type(obj)
    if t is dict:
        values = obj.values()
    elif t is list or t is tuple:
        values = obj
    elif isinstance(obj, float):  # a subclass too, as numpy's float64
        return math.isfinite(obj)
    elif isinstance(obj, dict):
        values = obj.values()
    elif isinstance(obj, (list, tuple)):
        values = obj
    else:
        return True
    for v in values:
        t = type(v)
        if t is float:
            if v - v != 0.0:  # inf - inf and nan - nan are nan; a finite x - x is 0.0
                return False
        elif t is str or t is int or t is bool or v is None:
            continue
        elif not _finite(v):
            return False
    return True


def _check_finite(obj: Any, path: str) -> None:
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"refusing to serialise non-finite value {obj!r} at {path or 'top'}")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _check_finite(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _check_finite(v, f"{path}[{i}]")


def decode(raw: bytes | None, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Bytes to a JSON object, refusing oversized, empty, non-JSON and non-object payloads."""
    if raw is None or len(raw) == 0:
        raise MalformedMessage("empty message; send one UTF-8 JSON object per message", where=where)
    if len(raw) > max_bytes:
        raise OversizedMessage(
            f"message is {len(raw)} bytes, over the limit of {max_bytes}; "
            "split it or raise max_message_bytes",
            where=where,
        )
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise MalformedMessage(
            _not_utf8(raw) or f"not valid JSON ({e}); send one UTF-8 JSON object per message", where=where
        ) from None
    if not isinstance(obj, dict):
        raise MalformedMessage(
            f"expected a JSON object, got {type(obj).__name__}", where=where
        )
    return obj


def decoded_or_none(raw: bytes | None, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any] | None:
    """What :func:`decode` gives for ``raw``, or None where it would raise: for a reader with a
    quick path for the usual message, whose other messages :func:`decode` then refuses, saying why.

    >>> decoded_or_none(b'{"a": 1}'), decoded_or_none(b"{nope"), decoded_or_none(b"[1]"), decoded_or_none(b"")
    ({'a': 1}, None, None, None)
    """
    if not raw or len(raw) > max_bytes:
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return obj if type(obj) is dict else None


def _not_utf8(raw: bytes) -> str | None:
    r"""Which byte of ``raw`` is not UTF-8 text, where, and what came before it; None if it is
    UTF-8 (orjson's own message names neither the byte nor where it is).

    >>> print(_not_utf8(b'{"a": "caf\xe9"}'))
    not UTF-8 text: byte 0xe9 at offset 10, after '{"a": "caf'; encode the text as UTF-8 (send one UTF-8 JSON object per message)
    >>> _not_utf8('{"a": "café"}'.encode()) is None
    True
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        before = repr(raw[max(0, e.start - 16):e.start])[2:-1]
        return (f"not UTF-8 text: byte 0x{raw[e.start]:02x} at offset {e.start}, after '{before}'; encode the "
                "text as UTF-8 (send one UTF-8 JSON object per message)")
    return None


def decode_as(raw: bytes | None, schema: str, *, where: str, max_bytes: int = DEFAULT_MAX_BYTES) -> dict:
    """Decode and check that the ``schema`` tag is exactly ``schema`` (type and version)."""
    obj = decode(raw, where=where, max_bytes=max_bytes)
    tag = obj.get("schema")
    if tag != schema:
        known = ", ".join(sorted(MESSAGE_TYPES))
        raise SchemaMismatch(
            f"schema is {tag!r}, expected {schema!r} (known: {known}); "
            "set the 'schema' field of every message",
            where=where,
        )
    return obj


def b64(raw: bytes | None) -> str | None:
    """Original bytes as base64 text for dead letters."""
    return None if raw is None else base64.b64encode(raw).decode("ascii")
