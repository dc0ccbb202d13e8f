"""Fixed-size reservoirs of past observations (iPFI paper, "uniform" and "geometric" sampling).

>>> import random
>>> r = GeometricReservoir(size=3, seed=1)
>>> for i in range(10):
...     r.update({"a": i})
>>> len(r), r.n_seen
(3, 10)
>>> r.sample(random.Random(0))["a"] in {x["a"] for x in r.items}
True
"""

from __future__ import annotations

import random
from typing import Any

from ..base import Component, check_positive_int

__all__ = ["UniformReservoir", "GeometricReservoir"]


class _Reservoir(Component):
    def __init__(self, size: int = 100, seed: int | None = None):
        self.size = check_positive_int(size, "size")
        self.seed = seed
        self._reset()

    def _reset(self) -> None:
        self._items: list[dict[str, Any]] = []
        self._rng = random.Random(self.seed)
        self.n_seen = 0
        self.last_slot = None

    @property
    def items(self) -> list[dict[str, Any]]:
        """The stored observations (do not mutate)."""
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def sample(self, rng: random.Random) -> dict[str, Any]:
        """One stored observation, uniformly, drawn with ``rng``."""
        if not self._items:
            raise LookupError("the reservoir is empty; update it before sampling")
        return self._items[rng.randrange(len(self._items))]

    def update(self, x: dict[str, Any]) -> None:
        """Store ``x`` (a copy); ``last_slot`` tells where (``None``: not kept)."""
        self.n_seen += 1
        if len(self._items) < self.size:
            self._items.append(dict(x))
            self.last_slot: int | None = len(self._items) - 1
            return
        slot = self.last_slot = self._slot()
        if slot is not None:
            self._items[slot] = dict(x)

    def _slot(self) -> int | None:  # pragma: no cover - overridden
        raise NotImplementedError


class UniformReservoir(_Reservoir):
    """Vitter's reservoir (algorithm R): every observation so far is kept with equal probability.

    References
    ----------
    1. Fumagalli, F., Muschalik, M., Hüllermeier, E., Hammer, B. "Incremental Permutation Feature
       Importance (iPFI): Towards Online Explanations on Data Streams". arXiv:2209.01939.
       Implements section "Incremental Sampling Strategies": uniform sampling, p_{s,r} = 1/s, as a
       reservoir of fixed length.

    Updates use the reservoir's own seeded generator; draws use a generator the caller passes, so
    each explainer (or feature) draws independently.
    """

    def _slot(self) -> int | None:
        j = self._rng.randrange(self.n_seen)
        return j if j < self.size else None


class GeometricReservoir(_Reservoir):
    """Each new observation replaces a uniformly chosen slot, so p_{s,r} = p(1-p)^{s-r-1}, p = 1/size.

    References
    ----------
    1. Fumagalli, F., Muschalik, M., Hüllermeier, E., Hammer, B. "Incremental Permutation Feature
       Importance (iPFI): Towards Online Explanations on Data Streams". arXiv:2209.01939.
       Implements section "Incremental Sampling Strategies": geometric sampling, each new observation
       replaces a random one of the L stored.
    2. Muschalik, M., Fumagalli, F., Hammer, B., Hüllermeier, E. "iSAGE: An Incremental Version of
       SAGE for Online Explanation on Data Streams". arXiv:2303.01181.
       Implements Algorithm 2 (updating the incremental geometric reservoir).
    """

    def _slot(self) -> int | None:
        return self._rng.randrange(self.size)
