"""Fixed-memory storages of past observations."""

from .extreme import ExtremeValueStorage
from .frequency import FrequencyStorage
from .reservoir import GeometricReservoir, UniformReservoir

__all__ = ["ExtremeValueStorage", "FrequencyStorage", "GeometricReservoir", "UniformReservoir"]
