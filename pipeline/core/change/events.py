"""What a change event says: one series changed, with the context to understand it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..increments import Block
from .test import Z90, Z95, Cut, two_sample_z
from .window import Bucket

__all__ = ["Change", "Levels", "KINDS", "INPUTS", "RELIANCE", "ci", "loss_kind", "loss_z", "ranks", "trend_z"]

#: ``{explainer: {feature: (level before, level after)}}`` (None: no data on that side)
Levels = dict[str, dict[str, tuple[float | None, float | None]]]


@dataclass(frozen=True)
class Change:
    """Series ``explainer/feature`` changed: the new regime starts at ``cut.seq``; detected at
    event ``seq``. ``scale`` is the explainer's largest importance in the stream (the unit of
    ``relative_effect``); ``vectors`` every series' level split at the cut, computed at detection;
    ``curve_*`` the feature's iPDP curve before the cut and now; ``loss_*`` the model's prequential
    loss on either side at detection, and ``kind`` how it had moved by then (:func:`loss_kind`).
    The change handler sends it as a ``drift_event/v3`` message (:class:`schemas.ChangeEvent`)."""

    explainer: str
    feature: str
    seq: int
    cut: Cut
    scale: float
    vectors: Levels
    curve_before: dict[str, list] | None = None
    curve_after: dict[str, list] | None = None
    loss_before: Block | None = None
    loss_after: Block | None = None
    kind: str = "reliance_shift"
    #: what the stream's inputs showed, for a change of the series ``(inputs, feature)``
    #: (:class:`~streamxai.core.change.inputs.InputFault`), and how much the model relied on the
    #: feature before it (its iPFI over the top feature's; None: not known)
    fault: Any = None
    reliance: float | None = None

    @property
    def cut_seq(self) -> int:
        return self.cut.seq

    @property
    def before(self) -> Block:
        return self.cut.before

    @property
    def after(self) -> Block:
        return self.cut.after

    @property
    def effect(self) -> float:
        return self.cut.effect

    @property
    def relative_effect(self) -> float:
        return abs(self.effect) / self.scale if self.scale > 0 else float("inf")

    @property
    def explanation_before(self) -> dict[str, float | None]:
        """This explainer's level of every feature before the cut."""
        return {f: v[0] for f, v in self.vectors[self.explainer].items()}

    @property
    def explanation_after(self) -> dict[str, float | None]:
        return {f: v[1] for f, v in self.vectors[self.explainer].items()}


KINDS = ("learning", "degradation", "reliance_shift", "data_fault")
#: the series of a feature's own values (:mod:`streamxai.core.change.inputs`) in change events and episodes
INPUTS = "inputs"
#: the explainers that measure reliance for the model's accuracy (loss differences); iPDP
#: measures the effect on its output
RELIANCE = ("ipfi", "isage")


def loss_kind(before: Block | None, after: Block | None, min_n: int = 2, rise: float = Z90,
              var_factor: float = 1.0) -> str:
    """``learning``, ``degradation`` or ``reliance_shift`` from the model's loss on either side
    of a cut: the loss fell (``z <= -1.645``), rose (``z >= rise``), or stayed within its interval;
    ``reliance_shift`` also with unknown loss or fewer than ``min_n`` losses a side. ``var_factor``:
    the losses' long-run variance factor (:mod:`streamxai.core.change.dependence`).

    >>> loss_kind(Block(1000, 0.30, 210.0), Block(200, 0.21, 33.0))   # the loss fell: learned
    'learning'
    >>> loss_kind(Block(1000, 0.20, 160.0), Block(200, 0.22, 34.0))   # within its interval
    'reliance_shift'
    """
    z = loss_z(before, after, min_n, var_factor)
    if z is None:
        return "reliance_shift"
    if z <= -Z90:
        return "learning"
    if z >= rise:
        return "degradation"
    return "reliance_shift"


def loss_z(before: Block | None, after: Block | None, min_n: int = 2, var_factor: float = 1.0) -> float | None:
    """The loss after a cut against before, in standard errors (:func:`two_sample_z`); None
    when a side has fewer than ``min_n`` (at least two) values."""
    min_n = max(2, min_n)
    if before is None or after is None or before.n < min_n or after.n < min_n:
        return None
    return two_sample_z(before, after, max(1.0, var_factor))


def trend_z(buckets: Sequence[Bucket], min_n: int = 2, var_factor: float = 1.0) -> float | None:
    """The slope of the model's loss over time in standard errors: the least-squares line
    through the buckets' means at their middle events, weighted by their sizes (``Var(slope) =
    sigma^2 / sum n_i (t_i - t)^2``, ``sigma^2`` estimated around the line). None with fewer than
    three buckets, ``min_n`` losses (at least three), or no spread. A loss that falls steadily is
    the case it is for: the slope's own test uses every bucket's time, not only its side of a cut.

    >>> from .window import Bucket
    >>> falling = [Bucket(Block(100, 0.40 - 0.01 * i, 100 * 0.2), 100 * i, 100 * i + 99) for i in range(10)]
    >>> round(trend_z(falling), 2)     # 0.40 -> 0.31 over 1,000 losses of variance 0.2
    -2.03
    >>> def side(bs):
    ...     return sum((b.block for b in bs[1:]), bs[0].block)
    >>> round(loss_z(side(falling[:5]), side(falling[5:])), 2)    # the two halves' means
    -1.77
    >>> trend_z(falling[:2]) is None       # two buckets: a line through two points says nothing
    True
    """
    n = sum(b.block.n for b in buckets)
    if len(buckets) < 3 or n < max(3, min_n):
        return None
    mid = [(b.seq_lo + b.seq_hi) / 2 for b in buckets]
    t_bar = sum(b.block.n * c for b, c in zip(buckets, mid, strict=True)) / n
    m_bar = sum(b.block.n * b.block.mean for b in buckets) / n
    sxx = sum(b.block.n * (c - t_bar) ** 2 for b, c in zip(buckets, mid, strict=True))
    sxy = sum(b.block.n * (c - t_bar) * (b.block.mean - m_bar) for b, c in zip(buckets, mid, strict=True))
    if sxx <= 0:
        return None
    slope = sxy / sxx
    ss = sum(b.block.m2 + b.block.n * (b.block.mean - m_bar) ** 2 for b in buckets) - slope * sxy
    var = ss / (n - 2)
    if var <= 0:
        return None
    return slope * math.sqrt(sxx / (var * max(1.0, var_factor)))


def ci(m: Block) -> tuple[float, float]:
    """95% confidence interval of a level (normal approximation; infinite below 2 values).

    >>> ci(Block(100, 0.5, 99.0))
    (0.304..., 0.695...)
    """
    r = Z95 * m.se if m.n > 1 else float("inf")
    return m.mean - r, m.mean + r


def ranks(levels: dict[str, float | None]) -> dict[str, int | None]:
    """Rank 1 = largest level; features without a level get None.

    >>> ranks({"a": 0.1, "b": 0.4, "c": None})
    {'a': 2, 'b': 1, 'c': None}
    """
    known = sorted((f for f, v in levels.items() if v is not None), key=lambda f: (-levels[f], f))
    pos = {f: i + 1 for i, f in enumerate(known)}
    return {f: pos.get(f) for f in levels}
