"""Batch references (PFI, SAGE, PDP) the incremental explainers are validated against."""

from .pdp import equidistant_grid, partial_dependence, pdp_importance

__all__ = ["equidistant_grid", "partial_dependence", "pdp_importance"]
