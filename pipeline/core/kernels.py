"""The compiled kernels of the per-event bookkeeping, or None: which path runs.

>>> PATH in ("compiled", "python")
True
>>> (PATH == "compiled") == (KERNELS is not None)
True
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["FUNCTIONS", "KERNELS", "PATH", "load"]


#: the functions this code calls: a build from older source (pulled, not reinstalled) lacks
#: some, and is not used (``deploy/setup.sh`` rebuilds it when the source is newer)
FUNCTIONS = ("fold_curves", "extremes_update", "extremes_grids", "linear_chain", "linear_replaced", "linear_curves",
             "tree_walk")


def load(environ: dict | None = None) -> ModuleType | None:
    """The compiled module, or None when it is not built (or built from older source) or
    ``STREAMXAI_PURE_PYTHON`` is set (read once, at import).

    ``pipeline/core/_kernels*.c`` are built at install into one optional extension; without a
    compiler every class runs its pure-Python code, the reference. A kernel does exactly the
    floating-point operations of the Python code it replaces, in the same order, on the same
    objects, so values and checkpoints are the same on either path; a kernel that meets anything
    unusual changes nothing and returns False, and the caller runs its Python code. ``PATH`` says
    which path runs; ``STREAMXAI_REQUIRE_KERNEL=1`` makes a missing build fail the kernel tests."""
    env = os.environ if environ is None else environ
    if env.get("STREAMXAI_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        _kernels = importlib.import_module(f"{__package__}._kernels")
    except ImportError:
        return None
    if not all(hasattr(_kernels, f) for f in FUNCTIONS):
        return None
    return _kernels


KERNELS = load()
PATH = "python" if KERNELS is None else "compiled"
