"""The iPDP curves a change detector keeps, stored compactly: a curve's lists of floats as one
``array('d')`` beside their keys and lengths; :func:`unpack` gives back the same dict, float for
float. A curve with anything else (a categorical grid) is kept as a plain copy.

>>> c = {"grid": [0.0, 0.5], "pd": [0.25, 0.75], "se": [0.01, 0.02]}
>>> unpack(pack(c)) == c, type(pack(c)).__name__
(True, 'tuple')
>>> unpack(pack({"grid": ["a", "b"], "pd": [0.1, 0.2]}))
{'grid': ['a', 'b'], 'pd': [0.1, 0.2]}
"""

from __future__ import annotations

from array import array
from typing import Any

__all__ = ["pack", "unpack"]

#: the layouts (keys and lengths) met so far, shared by every curve of that layout (bounded: a
#: crafted explanation may carry any keys)
_LAYOUTS: dict[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]] = {}
_MAX_LAYOUTS = 64

Packed = tuple[tuple[tuple[str, int], ...], array] | dict[str, Any]


def pack(curve: dict[str, Any]) -> Packed:
    """A compact copy of ``curve`` (never sharing its lists): ``(layout, values)`` when every
    value is a list of floats, else a plain copy."""
    layout = []
    values = array("d")
    for k, v in curve.items():
        if type(v) is not list or not all(type(x) is float for x in v):
            return _copy(curve)
        layout.append((k, len(v)))
        values.extend(v)
    key = tuple(layout)
    shared = _LAYOUTS.get(key)
    if shared is None:
        shared = _LAYOUTS.setdefault(key, key) if len(_LAYOUTS) < _MAX_LAYOUTS else key
    return shared, values


def unpack(packed: Packed) -> dict[str, Any]:
    """The curve ``packed`` holds, as a new dict of new lists (a caller may change them)."""
    if isinstance(packed, dict):  # kept as it came (or a checkpoint's plain curve)
        return _copy(packed)
    layout, values = packed
    out: dict[str, Any] = {}
    i = 0
    for k, n in layout:
        out[k] = values[i:i + n].tolist()
        i += n
    return out


def _copy(curve: dict[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, list) else v for k, v in curve.items()}
