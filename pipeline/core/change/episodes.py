"""Change episodes: the changes of one stream that belong to one drift, what kind they are and
whether they page (the rules: docs/pages/concepts/change-events.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..increments import Block
from .events import KINDS, Change, Levels

__all__ = ["Episode", "make_episode", "STATUSES"]

STATUSES = ("open", "closed")


@dataclass(frozen=True)
class Episode:
    """Changes of one stream that happened together, ranked by relative effect (the change
    whose look told its kind first leads); ``closed_seq`` is None while the episode is open;
    ``first``: the episode's first message, which announces its kind and alert (the open one, or
    the closed one when its kind waited for the close). It carries, split at its top change's cut,
    every explainer's vector, the changed features' iPDP curves and the model's loss. Grouping,
    announcement, kinds and alerts are specified in docs/pages/concepts/change-events.md (Episodes)."""

    status: str
    first_seq: int
    last_seq: int
    closed_seq: int | None
    cut_seq: int
    changes: tuple[Change, ...]
    #: ``{explainer: {feature: (before, after)}}``, levels split at ``cut_seq``
    explanations: Levels
    kind: str
    alert: bool
    #: ``{feature: (curve before, curve after)}`` of the iPDP curves of changed features
    curves: dict[str, tuple[dict | None, dict | None]] = field(default_factory=dict)
    loss_before: Block | None = None
    loss_after: Block | None = None
    first: bool = True

    def __post_init__(self) -> None:
        if self.status not in STATUSES or self.kind not in KINDS:
            raise ValueError(f"episode status {self.status!r} / kind {self.kind!r} not in {STATUSES} / {KINDS}")


def ranked(changes: Sequence[Change]) -> list[Change]:
    """Largest relative effect first (ties by series name)."""
    return sorted(changes, key=lambda c: (-c.relative_effect, c.explainer, c.feature))


def make_episode(
    changes: Sequence[Change], seq: int, status: str, kind: str, alert: bool,
    loss_before: Block | None, loss_after: Block | None,
    level_now: Callable[[str, str], Block], curves: Callable[[str, int], tuple[dict | None, dict | None]],
    first: bool = True, lead: Change | None = None,
) -> Episode:
    """The episode of ``changes`` at event ``seq``: the top change's context, with each changed
    series' levels before its first change in the episode and now (``level_now``), the changed
    features' curves (``curves``) and the loss the kind was told on; ``lead``, when given, first."""
    order = ranked(changes)
    if lead is not None:
        order = [lead] + [c for c in order if c is not lead]
    top = order[0]
    explanations = {e: dict(v) for e, v in top.vectors.items()}
    seen = set()
    for c in sorted(order, key=lambda c: c.seq):
        if (c.explainer, c.feature) in seen:
            continue
        seen.add((c.explainer, c.feature))
        now = level_now(c.explainer, c.feature)
        explanations.setdefault(c.explainer, {})[c.feature] = (c.before.mean, now.mean if now.n else c.after.mean)
    shown = {}
    for c in order:
        if c.feature not in shown:
            b, a = curves(c.feature, top.cut_seq)
            if b is None and c is top:  # an iPDP series cut at its change forgot the curves before
                b = top.curve_before
            if b is not None or a is not None:
                shown[c.feature] = (b, a)
    return Episode(
        status=status, first_seq=min(c.seq for c in order), last_seq=max(c.seq for c in order),
        closed_seq=seq if status == "closed" else None, cut_seq=top.cut_seq, changes=tuple(order),
        explanations=explanations, kind=kind, alert=alert, curves=shown,
        loss_before=loss_before, loss_after=loss_after, first=first,
    )
