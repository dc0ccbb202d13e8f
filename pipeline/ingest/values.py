"""One value of a file's line for :mod:`streamxai.ingest`, checked and converted: a feature (a
CSV cell has no type; a JSON value is sent as it is unless no worker takes it), a target, a seq,
a timestamp. What no worker takes raises ``BadLine``, naming the value."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["BadLine", "parse_seq", "parse_number", "csv_feature", "json_feature", "parse_target"]


class BadLine(ValueError):
    """A line of a file that makes no event (or label); its message says why, naming the value."""


def parse_seq(v: Any) -> int:
    """A seq: an integer >= 0 (an integral float or a CSV cell's text is taken as that integer)."""
    try:
        seq = int(v) if not isinstance(v, float) or v.is_integer() else None
    except (TypeError, ValueError):
        seq = None
    if seq is None or isinstance(v, bool) or seq < 0:
        raise BadLine(f"seq={v!r} is not an integer >= 0")
    return seq


def parse_number(name: str, v: Any) -> float:
    """``v`` (a number, or a CSV cell's text) as a finite float; ``name`` names it in the bad line's reason."""
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise BadLine(f"{name}={v!r} is not a number") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadLine(f"{name}={v!r} is not a number")
    if not math.isfinite(v):
        raise BadLine(f"{name}={v!r} is not finite")
    return float(v)


def csv_feature(name: str, v: str, categorical: bool) -> Any:
    """A CSV cell (text: a CSV has no types): a number, or the text of a categorical value."""
    if categorical:
        if v != "":
            return v
        raise BadLine(f"categorical feature {name} has no value")
    if v == "":
        raise BadLine(f"feature {name} has no value")
    return parse_number(name, v)


def json_feature(name: str, v: Any, categorical: bool) -> Any:
    """A JSON value, sent as it is (the worker knows which features are categorical); only what no
    worker takes is a bad line: null, booleans, arrays, objects, empty strings, and for a
    ``categorical`` feature a number that is not an integer."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)) or v == "":
        raise BadLine(f"feature {name}={v!r} is not a number or a non-empty string")
    if isinstance(v, float) and not math.isfinite(v):  # 1e999
        raise BadLine(f"feature {name}={v!r} is not finite")
    if categorical and isinstance(v, float) and not v.is_integer():
        raise BadLine(f"categorical feature {name}={v!r} must be a non-empty string or an integer")
    return v


def parse_target(y: Any, kind: str, cell: bool = False) -> Any:
    """The target of a CSV ``cell`` (text) or of a JSON line (sent as it is, unless no worker takes it)."""
    if y is None or y == "":
        return None  # unlabelled: predicted, not learned
    if kind == "regression":
        return parse_number("target", y) if cell else _json_number("target", y)
    if isinstance(y, str):
        if not cell:
            return y  # a class name
        try:
            f = float(y)
        except ValueError:
            return y  # a class name
        if not f.is_integer():
            raise BadLine(f"label {y!r} is not an integer; for regression set task = regression")
        return int(f)
    if isinstance(y, float) and (not math.isfinite(y) or not y.is_integer()):
        raise BadLine(f"label {y!r} is not an integer; for regression set task = regression")
    return y


def _json_number(name: str, v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadLine(f"{name}={v!r} is not a number")
    if not math.isfinite(v):
        raise BadLine(f"{name}={v!r} is not finite")
    return v
