"""Feature removal strategies: restrict a model to a feature subset by sampling the others."""

from .conditional import ConditionalRemoval
from .marginal import MarginalRemoval, Removal

__all__ = ["ConditionalRemoval", "MarginalRemoval", "Removal"]
