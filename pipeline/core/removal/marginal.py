"""Feature removal by marginal (interventional) imputation, iSAGE paper §3.2.1, Algorithm 2.

>>> import random
>>> rem = MarginalRemoval(["a", "b"], storage_size=10, seed=1)
>>> rem.ready
False
>>> for i in range(5):
...     rem.update({"a": float(i), "b": -float(i)})
>>> row = rem.sample({"a": 9.0, "b": 9.0}, {"a"}, random.Random(0))
>>> row["a"], row["b"] in {0.0, -1.0, -2.0, -3.0, -4.0}
(9.0, True)
>>> rows = rem.sample_rows({"a": 9.0, "b": 9.0}, ["a", "b"], 3, random.Random(0))
>>> all(r["a"] == -r["b"] for r in rows)   # one stored observation per row
True
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from typing import Any

from ..base import Component, check_feature_names, check_positive_int
from ..rng import derive_seed
from ..storage.reservoir import GeometricReservoir

__all__ = ["Removal", "MarginalRemoval"]


class Removal(Component):
    """What iSAGE needs to restrict a model to a feature subset: a feature not in ``present`` is
    absent and drawn by :meth:`sample_rows`. Subclasses implement ``ready``, ``update`` and
    ``sample_rows``."""

    feature_names: Sequence[str]

    @property
    def ready(self) -> bool:  # pragma: no cover - overridden
        """True once a draw is possible (at least one observation was stored)."""
        raise NotImplementedError

    def update(self, x: dict[str, Any]) -> None:  # pragma: no cover - overridden
        """Store what is needed from the observation ``x`` (never mutated)."""
        raise NotImplementedError

    def sample_rows(
        self, x: dict[str, Any], absent: Sequence[str], n: int, rng: random.Random
    ) -> list[dict[str, Any]]:  # pragma: no cover - overridden
        """``n`` copies of ``x``, each with the features ``absent`` replaced by fresh draws."""
        raise NotImplementedError

    def sample_chain(
        self, x: dict[str, Any], order: Sequence[str], n: int, rng: random.Random
    ) -> list[dict[str, Any]]:
        """Rows for a permutation chain: for ``j = 1..d-1`` (in order), ``n`` rows with
        ``order[:j]`` present and ``order[j:]`` drawn -- what iSAGE evaluates for one event."""
        rows: list[dict[str, Any]] = []
        for j in range(1, len(order)):
            rows.extend(self.sample_rows(x, order[j:], n, rng))
        return rows

    def sample(self, x: dict[str, Any], present: Collection[str], rng: random.Random) -> dict[str, Any]:
        """``x`` with every feature not in ``present`` replaced by a draw (a new dict)."""
        absent = [f for f in self.feature_names if f not in present]
        return self.sample_rows(x, absent, 1, rng)[0]


class MarginalRemoval(Removal):
    """Interventional removal: absent features copied from one observation of a geometric reservoir.

    All absent features of one inner sample come from one past observation drawn uniformly from a
    :class:`~streamxai.core.storage.GeometricReservoir` of ``storage_size``: the marginal distribution
    (:mod:`streamxai.core.removal.conditional` keeps dependencies). Draws use the caller's generator,
    updates the removal's own, seeded from ``seed``."""

    def __init__(self, feature_names: Sequence[str], storage_size: int = 100, seed: int | None = None):
        self.feature_names = feature_names
        self.storage_size = storage_size
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        check_feature_names(self.feature_names)
        self._reservoir = GeometricReservoir(
            check_positive_int(self.storage_size, "storage_size"), seed=derive_seed(self.seed, "marginal", "reservoir")
        )

    @property
    def ready(self) -> bool:
        return len(self._reservoir) > 0

    @property
    def reservoir(self) -> GeometricReservoir:
        """The stored observations (read only)."""
        return self._reservoir

    def update(self, x: dict[str, Any]) -> None:
        """Algorithm 2: append while not full, then replace a uniformly chosen slot."""
        self._reservoir.update(x)

    def sample_rows(
        self, x: dict[str, Any], absent: Sequence[str], n: int, rng: random.Random
    ) -> list[dict[str, Any]]:
        items = self._reservoir.items
        k = len(items)
        if not k:
            raise LookupError("the reservoir is empty; update the removal before sampling")
        rand = rng.random
        rows = []
        for _ in range(n):
            donor = items[int(rand() * k)]
            row = x.copy()
            for f in absent:
                row[f] = donor[f]
            rows.append(row)
        return rows
