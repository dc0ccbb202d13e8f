"""The features a local explanation lists: the k largest values by absolute value, and the sum of
the others, so that what is listed still adds up to the prediction minus the base value.

>>> top_k({"a": 0.1, "b": -0.5, "c": 0.05, "d": 0.3}, 2)
({'b': -0.5, 'd': 0.3}, 0.15000000000000002)
>>> top_k({"a": 0.1, "b": -0.5}, 0)
({'a': 0.1, 'b': -0.5}, 0.0)
"""

from __future__ import annotations

__all__ = ["top_k"]


def top_k(values: dict[str, float], k: int) -> tuple[dict[str, float], float]:
    """The ``k`` values largest by absolute value (ties: the first named), in ``values``' order, and
    the sum of the others; ``k`` 0 or at least ``len(values)``: every value, and 0."""
    if k < 0:
        raise ValueError(f"k={k} must be >= 0 (0: every value)")
    if k == 0 or k >= len(values):
        return dict(values), 0.0
    order = list(values)
    kept = set(sorted(order, key=lambda f: (-abs(values[f]), order.index(f)))[:k])
    return {f: values[f] for f in order if f in kept}, sum(values[f] for f in order if f not in kept)
