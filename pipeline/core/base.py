"""Base class shared by every stateful component of the core.

>>> from streamxai.core.storage import GeometricReservoir
>>> r = GeometricReservoir(size=2, seed=7)
>>> r.update({"a": 1.0})
>>> len(r.clone()), len(GeometricReservoir.restore(r.snapshot()))
(0, 1)
>>> r
GeometricReservoir(size=2, seed=7)
"""

from __future__ import annotations

import copy
import inspect
import pickle
from typing import Any

__all__ = ["Component", "check_positive_int"]


class Component:
    """Parameters are public attributes named like the constructor arguments.

    Constructor arguments are stored under their own names; learned state is private
    and rebuilt in ``_reset()``. ``clone()`` gives a fresh copy with the same parameters,
    and ``snapshot()`` / ``restore()`` round-trip the whole state through bytes.
    """

    def _reset(self) -> None:  # pragma: no cover - overridden
        """Rebuild the learned state from the parameters."""

    def _get_params(self) -> dict[str, Any]:
        params = {}
        for name, p in inspect.signature(type(self).__init__).parameters.items():
            if name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            params[name] = getattr(self, name)
        return params

    def clone(self, **overrides: Any) -> Any:
        """A fresh, unfitted copy with the same parameters and ``overrides``.

        Parameters that are components are cloned themselves (so their own learned state,
        such as an evaluation counter, starts afresh); other parameters are deep-copied.
        """
        params = {k: (v.clone() if isinstance(v, Component) else copy.deepcopy(v))
                  for k, v in self._get_params().items()}
        params.update(overrides)
        return type(self)(**params)

    def snapshot(self) -> bytes:
        """All parameters and learned state as bytes (pickle protocol 5)."""
        return pickle.dumps(self, protocol=5)

    @classmethod
    def restore(cls, blob: bytes) -> Any:
        """Inverse of :meth:`snapshot`; refuses an object of another type."""
        obj = pickle.loads(blob)
        if not isinstance(obj, cls):
            raise TypeError(
                f"snapshot holds a {type(obj).__name__}, not a {cls.__name__}; "
                "restore it with the class that wrote it"
            )
        return obj

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={_short(v)}" for k, v in self._get_params().items())
        return f"{type(self).__name__}({args})"


def _short(value: Any) -> str:
    if isinstance(value, (int, float, str, bool, type(None))):
        return repr(value)
    if isinstance(value, (list, tuple)) and len(value) <= 6:
        return repr(value)
    return type(value).__name__


def check_positive_int(value: Any, name: str, note: str = "") -> int:
    """``value`` if it is an int >= 1 (a bool is not); else a ValueError naming ``name``
    (``note`` says what it counts or what else is allowed).

    >>> check_positive_int(3, "size")
    3
    >>> check_positive_int(True, "window", " (number of recent values)")
    Traceback (most recent call last):
    ...
    ValueError: window=True must be a positive int (number of recent values)
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive int{note}")
    return value
