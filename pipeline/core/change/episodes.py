"""Change episodes: the changes of one stream that happened together, ranked by effect.

Changes of one stream detected within ``episode_gap`` events of the previous one form an
episode; it closes at the first message more than ``episode_gap`` events after its last change
(or when the stream ends). The episode ranks its changes by relative effect
``|after - before| / scale`` and carries, split at the cut of its top change, every explainer's
vector before and after, the iPDP curves of the features that changed, and the model's loss
before and after.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..increments import Block
from .events import Change, Levels

__all__ = ["Episode", "close_episode"]


@dataclass(frozen=True)
class Episode:
    """Changes of one stream that happened together, ranked by relative effect."""

    first_seq: int
    last_seq: int
    closed_seq: int
    cut_seq: int
    changes: tuple[Change, ...]
    #: ``{explainer: {feature: (before, after)}}``, levels split at ``cut_seq``
    explanations: Levels
    #: ``{feature: (curve before, curve after)}`` of the iPDP curves of changed features
    curves: dict[str, tuple[dict | None, dict | None]] = field(default_factory=dict)
    loss_before: Block | None = None
    loss_after: Block | None = None


def close_episode(
    changes: Sequence[Change], seq: int, level_now: Callable[[str, str], Block],
    curves: Callable[[str, int], tuple[dict | None, dict | None]],
) -> Episode:
    """The episode of ``changes``, closed at event ``seq``: the top change's context (split at
    its cut when it was detected), with each changed series' own levels -- before: at its first
    change in the episode, after: ``level_now(explainer, feature)``, its window now (which
    starts at its cut). ``curves(feature, cut_seq)`` gives a feature's iPDP curves around a cut."""
    ranked = sorted(changes, key=lambda c: (-c.relative_effect, c.explainer, c.feature))
    top = ranked[0]
    explanations = {e: dict(v) for e, v in top.vectors.items()}
    seen = set()
    for c in sorted(ranked, key=lambda c: c.seq):
        if (c.explainer, c.feature) in seen:
            continue
        seen.add((c.explainer, c.feature))
        now = level_now(c.explainer, c.feature)
        explanations[c.explainer][c.feature] = (c.before.mean, now.mean if now.n else c.after.mean)
    shown = {}
    for c in ranked:
        if c.feature not in shown:
            b, a = curves(c.feature, top.cut_seq)
            if b is None and c is top:  # an iPDP series cut at its change forgot the curves before
                b = top.curve_before
            if b is not None or a is not None:
                shown[c.feature] = (b, a)
    return Episode(
        first_seq=min(c.seq for c in ranked), last_seq=max(c.seq for c in ranked), closed_seq=seq,
        cut_seq=top.cut_seq, changes=tuple(ranked), explanations=explanations, curves=shown,
        loss_before=top.loss_before, loss_after=top.loss_after,
    )
