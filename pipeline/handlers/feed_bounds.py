"""What an explanation on the drift feed can carry, derived from the stream's settings, so a
crafted record cannot move a series' levels in the change test.

>>> from streamxai.settings import Settings
>>> b = feed_bounds(Settings(features=["a"], explainers=["ipfi", "isage", "ipdp"], emit_every=5))
>>> b.increments, b.loss, b.emit_every
({'ipfi': 1.0, 'isage': 2.0, 'ipdp': 1.414...}, 1.0, 5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from streamxai.schemas import BadValue
from streamxai.schemas.parsing import usual_moments

from ..core.attribution.series import LOCAL
from ..core.increments import Block
from ..core.losses import Brier, BrierOf, CrossEntropy, get_loss, has_unbiased_mean, zero_one
from ..core.prequential import MAX_LOSS
from ..plan import explainer_specs
from ..settings import Settings

__all__ = ["FeedBounds", "feed_bounds", "loss_range"]

_ROUNDING = 1e-9  # relative: sums of many floats may pass a bound by their rounding


@dataclass(frozen=True)
class FeedBounds:
    """The largest ``|increment|`` of each explainer's series, the largest model loss, and the
    most increments one report's block holds (``emit_every``).

    With ``L`` the loss's range (1 for 0-1 and one-class Brier loss, 2 for multi-class Brier,
    ``-log(1e-7)`` for cross-entropy), an increment lies within ``[-L, L]`` for iPFI (a
    difference of two losses), ``[-L, L]`` or ``[-2L, 2L]`` for iSAGE (the latter when the loss's
    mean-prediction estimate is unbiased, :func:`~streamxai.core.losses.has_unbiased_mean`),
    ``[-1, 1]`` for a local series of a class probability, and ``[-sqrt(2), sqrt(2)]`` for iPDP on
    a probability (an ICE curve of ``K >= 2`` values in ``[0, 1]`` against a gradient of norm
    ``1 / sqrt(K - 1)``). Unbounded losses and values get
    :data:`~streamxai.core.prequential.MAX_LOSS`, which only keeps the change test's sums finite.
    Values within ``[-R, R]`` have ``m2 <= n R^2``; losses in ``[0, L]`` have ``m2 <= n L^2 / 4``.
    """

    increments: dict[str, float]
    loss: float
    emit_every: int

    def __post_init__(self) -> None:
        # what _inside compares a block with, for each explainer's increments (None: any other) and the losses
        limits = {e: _limits(-r, r) for e, r in self.increments.items()}
        object.__setattr__(self, "_limits", limits | {None: _limits(-MAX_LOSS, MAX_LOSS)})
        object.__setattr__(self, "_loss_limits", _limits(0.0, self.loss))

    def usual_block(self, explainer: str, obj: Any, n_explained: int) -> Block | None:
        """The block of ``explainer``'s increments ``obj`` (as decoded, not null) as a worker writes
        it, if :func:`~streamxai.schemas.parsing.parse_moments` and :meth:`check` take it: its
        fields on exact types, within these bounds; None for anything else."""
        lo, hi, half = self._limits.get(explainer) or self._limits[None]  # type: ignore[attr-defined]
        return _usual(obj, lo, hi, half, min(self.emit_every, n_explained))

    def usual_loss(self, obj: Any, n_seen: Any) -> Block | None:
        """:meth:`usual_block` of the model's losses ``obj``, of ``n_seen`` events (as sent)."""
        lo, hi, half = self._loss_limits  # type: ignore[attr-defined]
        block = _usual(obj, lo, hi, half, None)
        return None if block is None or isinstance(n_seen, int) and block.n > n_seen else block

    def check(self, explainer: str, n_explained: int, n_seen: Any, block: Block | None, model_loss: Block | None,
              where: str) -> None:
        """Raise :class:`~schemas.BadValue` unless ``block`` and ``model_loss`` fit these bounds."""
        r = self.increments.get(explainer, MAX_LOSS)
        if block is not None:
            most = min(self.emit_every, n_explained)
            if block.n > most:
                raise BadValue(f"its block holds {block.n} increments, more than the {most} a report can (emit_every="
                               f"{self.emit_every}, n_explained={n_explained}); {_WHAT}", where=where)
            _within(block, -r, r, f"{explainer} increments", where)
        if model_loss is not None:
            if isinstance(n_seen, int) and model_loss.n > n_seen:
                raise BadValue(f"its model_loss holds {model_loss.n} losses, more than the {n_seen} events seen; {_WHAT}",
                               where=where)
            _within(model_loss, 0.0, self.loss, "the model's losses", where)


_WHAT = "only the explainer workers write the drift feed (run every worker with the same settings and version)"


def _limits(lo: float, hi: float) -> tuple[float, float, float]:
    """The least and the largest mean a block of values in ``[lo, hi]`` can have, up to
    rounding, and half the range (what :func:`_inside` compares)."""
    tol = _ROUNDING * max(abs(lo), abs(hi))
    return lo - tol, hi + tol, (hi - lo) / 2


def _usual(obj: Any, lo: float, hi: float, half: float, most: int | None) -> Block | None:
    """The block ``obj`` (as decoded) if :func:`~streamxai.schemas.parsing.usual_moments` takes it,
    ``n`` is at most ``most``, its mean lies in ``[lo, hi]`` and its ``m2`` is what values of range
    ``2 half`` can have (as :func:`_inside` tests); None otherwise."""
    moments = usual_moments(obj)
    if moments is None:
        return None
    n, mean, m2 = moments
    return Block(n, mean, m2) if (most is None or n <= most) and _fits(n, mean, m2, lo, hi, half) else None


def _fits(n: int, mean: float, m2: float, lo: float, hi: float, half: float) -> bool:
    """Whether values whose mean lies in ``[lo, hi]`` (the bounds of :func:`_limits`) and whose
    range is ``2 half`` can have this ``mean`` and ``m2`` over ``n``."""
    return lo <= mean <= hi and m2 <= n * half * half * (1 + _ROUNDING)


def _inside(b: Block, lo: float, hi: float) -> bool:
    """Whether values in ``[lo, hi]`` can have the mean and ``m2`` of ``b`` (up to rounding)."""
    return _fits(b.n, b.mean, b.m2, *_limits(lo, hi))


def _within(b: Block, lo: float, hi: float, what: str, where: str) -> None:
    if not _inside(b, lo, hi):
        raise BadValue(f"{what} cannot have the mean {b.mean:.6g} and m2 {b.m2:.6g} over {b.n}: they lie in "
                       f"[{lo:g}, {hi:g}] for this stream's loss and output; {_WHAT}", where=where)


def loss_range(loss: Any) -> float:
    """The range ``L`` of a loss's values ``[0, L]`` (:data:`MAX_LOSS` for one without a bound).

    >>> loss_range("zero_one"), loss_range("brier"), round(loss_range("cross_entropy"), 2), loss_range("squared")
    (1.0, 2.0, 16.12, 1e+100)
    """
    fn = get_loss(loss)
    if fn is zero_one or isinstance(fn, BrierOf):
        return 1.0
    if isinstance(fn, Brier):
        return 2.0
    if isinstance(fn, CrossEntropy):
        return -math.log(fn.eps)
    return MAX_LOSS


def feed_bounds(s: Settings) -> FeedBounds:
    """The bounds of a stream's explanations under its settings ``s`` (:class:`FeedBounds`)."""
    increments = {}
    for spec in explainer_specs(s):
        if spec.name == "ipdp":
            increments[spec.name] = math.sqrt(2) if spec.output == "proba_of" else MAX_LOSS
        else:
            width = loss_range(spec.loss)
            unbiased = spec.name == "isage" and has_unbiased_mean(get_loss(spec.loss))
            increments[spec.name] = min(MAX_LOSS, 2 * width if unbiased else width)
    if s.local_change:  # |phi| of a class probability (in [0, 1]: every marginal contribution is), or of a value
        increments[LOCAL] = 1.0 if s.task == "classification" else MAX_LOSS
    return FeedBounds(increments, loss_range(s.loss), s.emit_every)
