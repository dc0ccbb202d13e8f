"""Seeds derived from names, stable across processes and Python versions.

>>> derive_seed(42, "stream-a", "salary") == derive_seed(42, "stream-a", "salary")
True
>>> derive_seed(42, "stream-a", "salary") != derive_seed(42, "stream-a", "age")
True
"""

from __future__ import annotations

import hashlib
import random

__all__ = ["derive_seed", "make_rng"]


def derive_seed(seed: int | None, *parts: object) -> int | None:
    """A 63-bit seed from ``seed`` and ``parts`` (``None`` stays ``None``), by BLAKE2b: Python's
    string ``hash`` changes with every process."""
    if seed is None:
        return None
    h = hashlib.blake2b(digest_size=8)
    h.update(str(int(seed)).encode())
    for part in parts:
        h.update(b"\x1f")
        h.update(str(part).encode())
    return int.from_bytes(h.digest(), "big") >> 1


def make_rng(seed: int | None, *parts: object) -> random.Random:
    """A ``random.Random`` seeded by :func:`derive_seed`."""
    return random.Random(derive_seed(seed, *parts))
