"""Shapley values of small games by their definition: weights, coalition sums and brute force.

The interventional game is ``v(S) = mean over z in Z of f(x_S, z_notS)``; :func:`brute_force`
computes its Shapley values from all ``2^d`` coalitions, the oracle the exact algorithms are
tested against.

>>> f = lambda r: r["a"] * r["b"]
>>> values, base = brute_force(f, {"a": 1.0, "b": 2.0}, [{"a": 0.0, "b": 0.0}], ["a", "b"])
>>> values, base        # the product's effect is shared equally
({'a': 1.0, 'b': 1.0}, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["shapley_weight", "unanimity_shares", "subset_shares", "brute_force", "game_shapley", "masks"]


def shapley_weight(s: int, m: int) -> float:
    """``s! (m - s - 1)! / m!``: the weight of a coalition of ``s`` players that one of the
    other ``m - s`` players joins, in a game of ``m`` players."""
    return math.factorial(s) * math.factorial(m - s - 1) / math.factorial(m)


def unanimity_shares(n_in: int, n_out: int) -> tuple[float, float]:
    """Shapley values of ``u(S) = 1`` if ``S`` holds all ``n_in`` players of ``A`` and none of the
    ``n_out`` of ``B``, else 0: ``(share of a player of A, share of a player of B)``."""
    m = n_in + n_out
    if m == 0:
        return 0.0, 0.0
    whole = math.factorial(m)
    share_in = math.factorial(n_in - 1) * math.factorial(n_out) / whole if n_in else 0.0
    share_out = -math.factorial(n_in) * math.factorial(n_out - 1) / whole if n_out else 0.0
    return share_in, share_out


def masks(k: int) -> np.ndarray:
    """The ``2^k`` subsets of ``k`` players as rows of 0/1 (row ``t`` holds player ``i`` when
    bit ``i`` of ``t`` is set)."""
    t = np.arange(1 << k)
    return ((t[:, None] >> np.arange(k)) & 1).astype(bool)


def subset_shares(n_in: int, n_out: int, values: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Shapley values of ``u(S) = g(S & F)`` if ``A <= S`` and ``S & B = {}``, else 0, for
    ``|A| = n_in``, ``|B| = n_out`` and ``k`` free players ``F`` (``values[t] = g(T_t)`` over
    :func:`masks(k) <masks>`): ``(share of a player of A, share of a player of B, shares of F)``."""
    values = np.asarray(values, dtype=float)
    k = int(round(math.log2(len(values))))
    if len(values) != 1 << k:
        raise ValueError(f"values holds {len(values)} entries, not 2^k for a number of free players k")
    m = n_in + n_out + k
    sizes = masks(k).sum(axis=1)
    share_in = share_out = 0.0
    if n_in:
        w = _weights(n_in - 1, k, m)
        share_in = float(np.dot(w[sizes], values))
    w = _weights(n_in, k, m)
    if n_out:
        share_out = -float(np.dot(w[sizes], values))
    free = np.zeros(k)
    t = np.arange(1 << k)
    for i in range(k):
        without = t[(t >> i) & 1 == 0]
        free[i] = np.dot(w[sizes[without]], values[without | (1 << i)] - values[without])
    return share_in, share_out, free


def _weights(first: int, k: int, m: int) -> np.ndarray:
    """``shapley_weight(first + s, m)`` for ``s = 0..k`` (0 where the coalition would hold all
    ``m`` players, which no joining player meets)."""
    return np.array([shapley_weight(first + s, m) if first + s < m else 0.0 for s in range(k + 1)])


def brute_force(
    f: Callable[[dict], float], x: dict[str, Any], background: Sequence[dict[str, Any]], features: Sequence[str]
) -> tuple[dict[str, float], float]:
    """Interventional Shapley values of ``f`` at ``x`` and the base value ``mean f(z)``, from
    ``v(S)`` of all ``2^d`` coalitions and the exact weights: ``len(background) * 2^d`` calls."""
    names = list(features)
    d = len(names)
    if not background:
        raise ValueError("background is empty; give at least one feature dict")
    v = np.zeros(1 << d)
    for t, mask in enumerate(masks(d)):
        total = 0.0
        for z in background:
            row = dict(z)
            for name, present in zip(names, mask, strict=True):
                if present:
                    row[name] = x[name]
            total += float(f(row))
        v[t] = total / len(background)
    return dict(zip(names, game_shapley(v).tolist(), strict=True)), float(v[0])


def game_shapley(v: np.ndarray) -> np.ndarray:
    """Shapley values of the game with ``v[t]`` the worth of the coalition of :func:`masks`
    row ``t``: ``sum over S without i of |S|! (d - |S| - 1)! / d! (v(S + i) - v(S))``."""
    v = np.asarray(v, dtype=float)
    d = int(round(math.log2(len(v))))
    if len(v) != 1 << d:
        raise ValueError(f"v holds {len(v)} entries, not 2^d for a number of players d")
    sizes = masks(d).sum(axis=1)
    w = _weights(0, d, d)
    t = np.arange(1 << d)
    out = np.zeros(d)
    for i in range(d):
        without = t[(t >> i) & 1 == 0]
        out[i] = np.dot(w[sizes[without]], v[without | (1 << i)] - v[without])
    return out
