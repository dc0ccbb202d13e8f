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
    ``STREAMXAI_PURE_PYTHON`` is set.

    ``pipeline/core/_kernels*.c`` (with ``_kernels.h``) are built at install (``pip install -e .``,
    ``deploy/setup.sh``) into one optional extension: without a compiler the install still succeeds
    and every class runs its pure-Python code, which stays the reference. A kernel does exactly the
    floating-point operations of the Python code it replaces, in the same order, on the same objects
    (the lists and dicts the classes hold), so the values are bit for bit the same on either path
    (tests/unit/core/test_kernels.py) and checkpoints do not change. A kernel that meets anything
    unusual (a type, a missing key) changes nothing and returns False; the caller then runs its
    Python code, which raises the usual error.

    - ``PATH``: ``"compiled"`` or ``"python"`` (what :attr:`StreamExplainer.bookkeeping_path
      <streamxai.core.stream.StreamExplainer.bookkeeping_path>` and the ``compiled_kernels``
      metric report);
    - ``STREAMXAI_PURE_PYTHON=1`` in the environment forces the Python path (for debugging, or to
      compare): read once, at import;
    - ``STREAMXAI_REQUIRE_KERNEL=1`` (set by ``.ci/run``) makes a missing build fail a test
      (``tests/unit/core/test_kernels.py``) instead of passing silently on the slower path.
    """
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
