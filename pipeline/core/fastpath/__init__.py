"""White-box evaluation of river models, faster than calling them and exactly as exact.

>>> from river import linear_model, neighbors
>>> compile_model(linear_model.LogisticRegression()).name, compile_model(neighbors.KNNClassifier())
('linear', None)
"""

from __future__ import annotations

import logging
from typing import Any

from .base import VERIFIED_RIVER, FastModel, Unsupported, to_output, verified_river

__all__ = ["compile_model", "FastModel", "Unsupported", "VERIFIED_RIVER", "verified_river", "to_output",
           "river_version_ok"]

log = logging.getLogger("streamxai.fastpath")
_warned: list[str] = []


def river_version_ok() -> bool:
    """True if the installed river is verified; else False, after one warning per process."""
    import river

    version = getattr(river, "__version__", "unknown")
    if verified_river(version):
        return True
    if not _warned:
        _warned.append(version)
        lo, hi = (".".join(map(str, v)) for v in VERIFIED_RIVER)
        log.warning("river %s is outside the range the fast path was verified on (%s to %s): models are "
                    "evaluated as black boxes (slower, same values)", version, lo, hi)
    return False


def compile_model(model: Any) -> FastModel | None:
    """A white-box evaluator of ``model``, or None if it is not one the fast path knows.

    It recognises the Hoeffding tree family (classifiers and regressors, adaptive or not),
    ``ARFClassifier``, and ``LinearRegression`` / ``LogisticRegression`` alone or after a
    ``StandardScaler``, on the river releases in :data:`VERIFIED_RIVER`, and returns a
    :class:`FastModel` that computes what one call's rows share once, with river's floating-point
    operations in river's order: the black-box values bit for bit. Anything else (None here, or
    :class:`Unsupported` during a call) is evaluated as a black box."""
    if not river_version_ok():
        return None
    from .linear import LinearFast
    from .regressors import TreeRegressorFast
    from .trees import ForestClassifierFast, TreeClassifierFast

    for cls in (TreeClassifierFast, ForestClassifierFast, TreeRegressorFast, LinearFast):
        if cls.accepts(model):
            return cls(model)
    return None
