"""Batch references (PFI, SAGE, PDP) the incremental explainers are validated against."""

from .pdp import equidistant_grid, partial_dependence, pdp_importance
from .sage import SAGEEstimate, SlidingWindowSAGE, sage

__all__ = [
    "equidistant_grid",
    "partial_dependence",
    "pdp_importance",
    "SAGEEstimate",
    "SlidingWindowSAGE",
    "sage",
]
