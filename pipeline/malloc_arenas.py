"""One C allocator arena for every thread of a worker (glibc's ``M_ARENA_MAX``).

A worker's threads allocate for each other (a state restored on an executor thread is freed on
the loop when evicted), and glibc gives each thread an arena of its own whose free blocks the
others cannot reuse; with one arena every thread reuses what any freed. :func:`limit_arenas`
sets the limit as the worker starts; an operator's ``MALLOC_ARENA_MAX`` stands, and without
glibc it does nothing.

>>> limit_arenas(1, environ={"MALLOC_ARENA_MAX": "4"})  # the operator's choice stands
False
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

__all__ = ["M_ARENA_MAX", "limit_arenas"]

#: glibc's ``mallopt`` parameter for the most arenas (``malloc.h``)
M_ARENA_MAX = -8


def limit_arenas(n: int = 1, environ: Mapping[str, str] | None = None) -> bool:
    """Have glibc's ``malloc`` use at most ``n`` arenas from now on; True if it was set (False:
    ``MALLOC_ARENA_MAX`` is in ``environ`` (default ``os.environ``), or the C library has no
    ``mallopt``)."""
    if n < 1:
        raise ValueError(f"n={n}: a process needs at least one arena")
    if "MALLOC_ARENA_MAX" in (os.environ if environ is None else environ):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(M_ARENA_MAX, n) == 1
