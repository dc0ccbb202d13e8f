"""An episode's looks at its loss, with one 5% budget for ``degradation`` among them all."""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from ..increments import Block
from .events import loss_kind

__all__ = ["DELTA", "OPEN_DELTA", "MEMBER_DELTA", "CLOSE_DELTA", "Z_OPEN", "Look", "open_kind", "close_kind",
           "close_rise", "correlation", "member_kind", "member_rise", "spent"]

#: the false ``degradation`` rate of an episode at a loss that did not move, all its looks together
DELTA = 0.05
#: the part of it spent when the episode opens
OPEN_DELTA = DELTA / 2
#: what the looks of an episode's members (:mod:`streamxai.core.change.episodes`) spend together
MEMBER_DELTA = DELTA / 4
#: what the close spends beyond the open (:func:`close_rise`): the rest
CLOSE_DELTA = DELTA - OPEN_DELTA - MEMBER_DELTA
_N = NormalDist()
#: the open's boundary: one-sided ``OPEN_DELTA``
Z_OPEN = _N.inv_cdf(1.0 - OPEN_DELTA)
#: the close's boundary when the open never looked: the open's share is its too
_Z_ALONE = _N.inv_cdf(1.0 - OPEN_DELTA - CLOSE_DELTA)
#: the close's boundary when where the open looked is not known: Bonferroni
_Z_CLOSE = _N.inv_cdf(1.0 - CLOSE_DELTA)
#: correlations are rounded down to this many steps: a lower correlation gives a higher, safe boundary
_STEPS = 1000


def open_kind(before: Block | None, after: Block | None, min_n: int = 2, var_factor: float = 1.0) -> str:
    """The kind at an episode's open: ``degradation`` at ``z >= Z_OPEN`` (1.96), ``learning`` at
    ``z <= -1.645`` (:func:`~streamxai.core.change.events.loss_kind`).

    >>> before = Block(5000, 0.20, 800.0)          # 0-1 losses at 20%
    >>> open_kind(before, Block(300, 0.24, 48.0))   # z 1.68: each look at 5% said degradation
    'reliance_shift'
    >>> open_kind(before, Block(300, 0.25, 48.0))   # z 2.10
    'degradation'
    """
    return loss_kind(before, after, min_n, rise=Z_OPEN, var_factor=var_factor)


def spent() -> float:
    """What an episode's looks spend together at most, by the union bound: the open's and the
    close's joint spend and the members'. It must not exceed :data:`DELTA`; the split is described
    in docs/pages/concepts/change-events.md (How the loss tells an episode's kind).

    >>> spent() <= DELTA, round(spent(), 4)
    (True, 0.05)
    """
    return OPEN_DELTA + CLOSE_DELTA + MEMBER_DELTA


def member_rise(k: int) -> float:
    """The ``degradation`` boundary of an episode's ``k``-th member look: one-sided at
    ``MEMBER_DELTA * 6 / (pi^2 k^2)``, which sums to ``MEMBER_DELTA`` over every ``k``.

    >>> [round(member_rise(k), 2) for k in (1, 2, 3, 10)]
    [2.43, 2.89, 3.14, 3.79]
    """
    if k < 1:
        raise ValueError(f"member look k={k} must be >= 1")
    return _N.inv_cdf(1.0 - MEMBER_DELTA * 6.0 / (math.pi ** 2 * k * k))


def member_kind(before: Block | None, after: Block | None, k: int, min_n: int = 2, var_factor: float = 1.0) -> str:
    """``degradation`` if the loss rose at an episode's ``k``-th member look (:func:`member_rise`),
    else what :func:`~streamxai.core.change.events.loss_kind` says below it.

    >>> before = Block(5000, 0.20, 800.0)
    >>> member_kind(before, Block(300, 0.25, 48.0), 1), member_kind(before, Block(300, 0.26, 48.0), 2)
    ('reliance_shift', 'reliance_shift')
    >>> member_kind(before, Block(300, 0.26, 48.0), 1)   # z 2.52 >= 2.43
    'degradation'
    """
    return loss_kind(before, after, min_n, rise=member_rise(k), var_factor=var_factor)


#: a look at the loss: ``(end, before, after)``, the number of losses taken in when it was taken
#: (its side after ends there, its side before ends where that begins) and its sides' sizes
Look = tuple[int, int, int]


def close_kind(before: Block | None, after: Block | None, first: Look | None, end: int,
               min_n: int = 2, var_factor: float = 1.0) -> str:
    """The kind at an episode's close, on ``before`` and ``after`` up to the ``end``-th loss,
    after an open that said neither. ``first``: the open's look (:data:`Look`); None: it never
    looked, so this look has the open's share too (``DELTA - MEMBER_DELTA``, ``z >= 1.78``).

    >>> before = Block(5000, 0.20, 800.0)       # the open: 5,000 before, 300 after, at loss 5,300
    >>> close_kind(before, Block(1500, 0.226, 240.0), (5300, 5000, 300), 6500)   # z 2.21 >= 2.15
    'degradation'
    >>> close_kind(before, Block(1500, 0.224, 240.0), (5300, 5000, 300), 6500)   # z 2.04
    'reliance_shift'
    >>> close_kind(before, Block(1500, 0.221, 240.0), None, 6500)   # z 1.78: the open never looked
    'degradation'
    """
    if first is None or before is None or after is None:
        return loss_kind(before, after, min_n, rise=_Z_ALONE, var_factor=var_factor)
    rise = close_rise(correlation(first, (end, before.n, after.n)))
    return loss_kind(before, after, min_n, rise=rise, var_factor=var_factor)


def correlation(first: Look, last: Look) -> float:
    """The correlation of two looks' ``z`` at a flat loss (independent losses of one variance),
    from where their sides lie (:data:`Look`): ``Cov(mean of S, mean of T) = s^2 |S & T| / (|S| |T|)``
    summed over the four pairs of sides (signed), against ``Var(d) = s^2 (1 / after + 1 / before)``.
    The sides need not nest: the close's cut may lie a few losses after the open's.

    >>> round(correlation((10**9 + 300, 10**9, 300), (10**9 + 1200, 10**9, 1200)), 3)   # sqrt(300 / 1200)
    0.5
    >>> round(correlation((5300, 5000, 300), (6500, 5000, 1500)), 3)    # nested: the same cut
    0.495
    >>> round(correlation((5300, 5000, 300), (6500, 5100, 1400)), 3)    # the close's cut 100 later
    0.338
    """
    (e1, b1, a1), (e2, b2, a2) = first, last
    sides1 = ((e1 - a1, e1, a1, 1.0), (e1 - a1 - b1, e1 - a1, b1, -1.0))
    sides2 = ((e2 - a2, e2, a2, 1.0), (e2 - a2 - b2, e2 - a2, b2, -1.0))
    cov = sum(g * h * max(0, min(hi, hi2) - max(lo, lo2)) / (n * n2)
              for lo, hi, n, g in sides1 for lo2, hi2, n2, h in sides2)
    return max(-1.0, min(1.0, cov / math.sqrt((1.0 / a1 + 1.0 / b1) * (1.0 / a2 + 1.0 / b2))))


def close_rise(rho: float) -> float:
    """The close's ``degradation`` boundary ``c`` when the open's was :data:`Z_OPEN` and the two
    looks' statistics are standard bivariate normal with correlation ``rho``: ``P(Z1 < Z_OPEN,
    Z2 >= c) = CLOSE_DELTA``. ``rho`` is rounded down to a thousandth (a higher, safe boundary);
    below 0, Bonferroni's ``CLOSE_DELTA`` alone.

    >>> round(close_rise(0.0), 3), round(close_rise(0.5), 3), round(close_rise(1.0), 3), round(close_rise(-0.2), 3)
    (2.232, 2.148, 1.78, 2.241)
    """
    if rho < 0:
        return _Z_CLOSE
    return _close_rise(min(_STEPS, math.floor(rho * _STEPS + 1e-9)))


@lru_cache(maxsize=_STEPS + 1)
def _close_rise(step: int) -> float:
    # P(Z1 < c1, Z2 >= c) = integral over x < c1 of phi(x) Q((c - rho x) / s) dx, s = sqrt(1 - rho^2)
    # (Z2 given Z1 = x is normal, mean rho x, variance s^2), by Simpson's rule on x in [-9, c1]
    # (1,200 intervals), solved for c by Newton's method kept inside [1.6, 2.6], where the root
    # lies. rho = 1: Z2 = Z1, so P = Phi(c1) - Phi(c).
    rho, c1, spend = step / _STEPS, Z_OPEN, CLOSE_DELTA
    if step >= _STEPS:
        return _N.inv_cdf(_N.cdf(c1) - spend)
    x = np.linspace(-9.0, c1, 1201)
    w = np.ones_like(x)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    w *= (x[1] - x[0]) / 3.0 * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    s = math.sqrt(1.0 - rho * rho)
    erfc = np.frompyfunc(math.erfc, 1, 1)
    c, lo, hi = 2.1, 1.6, 2.6
    for _ in range(30):
        u = (c - rho * x) / s
        f = float(np.dot(w, 0.5 * erfc(u / math.sqrt(2.0)).astype(float))) - spend
        if abs(f) < 1e-10:
            break
        lo, hi = (c, hi) if f > 0 else (lo, c)
        slope = -float(np.dot(w, np.exp(-0.5 * u * u))) / (s * math.sqrt(2.0 * math.pi))
        c = c - f / slope if slope < 0 and lo < c - f / slope < hi else 0.5 * (lo + hi)
    return c
