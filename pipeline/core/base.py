"""Base class shared by every stateful component of the core: a river ``Base``.

>>> from streamxai.core.storage import GeometricReservoir
>>> r = GeometricReservoir(size=2, seed=7)
>>> r.update({"a": 1.0})
>>> len(r.clone()), len(GeometricReservoir.restore(r.snapshot()))
(0, 1)
>>> r
GeometricReservoir (
  size=2
  seed=7
)
>>> r.clone({"size": 3})._get_params()
{'size': 3, 'seed': 7}
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any

from river import base

__all__ = ["Component", "check_positive_int", "check_feature_names"]


class Component(base.Base):
    """A river ``Base`` whose whole state round-trips through bytes: constructor arguments are
    stored under their own names (river builds ``clone()`` and ``repr`` on that), learned state is
    private and rebuilt in ``_reset()``, and ``snapshot()`` / ``restore()`` round-trip the state."""

    #: parameters that are what the component looks at, not parts of it (the model an explainer
    #: evaluates): a clone takes a copy of them as they are now, where river's would start them afresh
    _as_is: tuple[str, ...] = ()

    def clone(self, new_params: dict[str, Any] | None = None, include_attributes: bool = False) -> Any:
        given = dict(new_params or {})
        for name in self._as_is:
            value = given.get(name)
            # river's clone of a parent passes each component parameter as (class, params)
            if name not in given or (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], type)):
                given[name] = getattr(self, name)
        clone = super().clone(given)
        if include_attributes:  # one deep copy of the rest, so parts of it that share an object still do
            params = self._get_params()
            clone.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in params}))
        return clone

    def _reset(self) -> None:  # pragma: no cover - overridden
        """Rebuild the learned state from the parameters."""

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


def check_feature_names(feature_names: Sequence[str]) -> list[str]:
    """``feature_names`` as a list if it is non-empty and without duplicates; else a ValueError."""
    names = list(feature_names)
    if not names:
        raise ValueError("feature_names is empty; list the model's input features")
    if len(set(names)) != len(names):
        raise ValueError(f"feature_names has duplicates: {names}")
    return names
