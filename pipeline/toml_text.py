"""TOML text for the values settings hold: the inverse of :mod:`tomllib` for strings, numbers,
booleans, arrays and tables (Python's standard library reads TOML but does not write it).

>>> print(toml_value({"grace_period": 5, "split": "gini", "w": [1, 2.5, "a\\"b"]}))
{grace_period = 5, split = "gini", w = [1, 2.5, "a\\"b"]}
>>> toml_key("fraud-*"), toml_key("alpha")
('"fraud-*"', 'alpha')
>>> import tomllib
>>> v = {"x": [float("inf"), 1e-3, True], "é ü": "tab\\t"}
>>> tomllib.loads(f"v = {toml_value(v)}")["v"] == v
True
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["toml_value", "toml_key"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    """``key`` bare when TOML allows it, else quoted."""
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(s: str) -> str:
    # JSON's escapes (\" \\ \n \t \uXXXX ...) are TOML's; DEL is a control character to TOML only
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v: Any) -> str:
    """One value as TOML text (tables inline); ``TypeError`` for what TOML cannot hold (``None``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"TOML has no value for {type(v).__name__} {v!r}")
