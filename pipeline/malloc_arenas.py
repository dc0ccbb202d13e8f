"""One C allocator arena for every thread of a worker (glibc's ``M_ARENA_MAX``).

glibc's ``malloc`` gives a thread that starts allocating an arena of its own, up to eight per
core, and a block freed goes back to the arena it came from. A worker's threads allocate for
each other: a state that the event loop cannot wait for is restored on an executor thread
(``agents/_forward.py``) and later freed on the loop when it is evicted (``max_live_streams``),
while Faust's consumer thread and librdkafka's threads allocate the records and outputs the loop
takes. Each arena then grows to its own high-water mark, and the free blocks in one are no use to
a thread of another, so a worker that evicts and restores states all the time holds well more
than its live states need. With one arena every thread reuses what any thread freed; the
worker's threads seldom allocate at the same time (they share Python's GIL, and glibc's
per-thread cache serves most small blocks without the arena's lock).

:func:`limit_arenas` sets the limit when the worker starts, before its threads allocate. An
operator's own ``MALLOC_ARENA_MAX`` in the environment is left as it is; where the C library is
not glibc it does nothing.

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
