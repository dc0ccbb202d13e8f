"""Batch references (PFI, SAGE, PDP) the incremental explainers are validated against."""

from .pdp import equidistant_grid, partial_dependence, pdp_importance
from .pfi import IntervalPFI, batch_pfi, pfi_error
from .sage import SAGEEstimate, SlidingWindowSAGE, sage

__all__ = [
    "equidistant_grid",
    "partial_dependence",
    "pdp_importance",
    "IntervalPFI",
    "batch_pfi",
    "pfi_error",
    "SAGEEstimate",
    "SlidingWindowSAGE",
    "sage",
]
