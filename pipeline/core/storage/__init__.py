"""Fixed-memory storages of past observations."""

from .reservoir import GeometricReservoir, UniformReservoir

__all__ = ["GeometricReservoir", "UniformReservoir"]
