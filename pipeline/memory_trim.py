"""Freed memory back to the operating system after a worker evicted states.

Evicting and restoring states allocates and frees buffers of a state's size all the time, and
glibc keeps the freed memory scattered over its heap; :class:`MemoryTrim` calls ``malloc_trim``
after evictions to hand the free pages back (without glibc it does nothing).

>>> calls = []
>>> trim = MemoryTrim(calls.append)
>>> trim(0), trim(5), trim(5), trim(7)
(False, True, False, True)
>>> calls
[0, 0]
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

__all__ = ["MemoryTrim", "malloc_trim"]


def malloc_trim() -> Callable[[int], object] | None:
    """glibc's ``malloc_trim(pad)``, or None where the C library has none (musl, macOS)."""
    try:
        fn = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


class MemoryTrim:
    """Call ``trim(0)`` (default: :func:`malloc_trim`) when the count of evicted states moved
    since the last call: ``MemoryTrim()(evicted)`` is True if it trimmed."""

    def __init__(self, trim: Callable[[int], object] | None = None):
        self._trim = trim if trim is not None else malloc_trim()
        self._evicted = 0

    def __call__(self, evicted: int) -> bool:
        if self._trim is None or evicted == self._evicted:
            return False
        self._evicted = evicted
        self._trim(0)
        return True
