"""Change episodes: the changes of one stream that happened together, and what kind they are.

Grouping. Changes of one stream detected within ``episode_gap`` events of the previous one
form an episode. It *opens* once the report of its first change is complete (at the stream's
first message of a later event: the other series of that report may come in any order) and
at least ``min_samples`` of the model's losses follow its top change's cut, and
*closes* at the first message more than ``episode_gap`` events after its last change (or when
the stream ends). Each gives an :class:`Episode` (``status`` ``"open"`` or ``"closed"``) --
the open one only when the kind is known by then (below). The episode ranks its changes by relative effect ``|after - before| / scale``
(its lead first, below) and carries, split at the cut of its top change, every explainer's vector before and after,
the iPDP curves of the features that changed, and the model's loss before and after.

Kind (:func:`~pipeline.core.change.events.loss_kind`). Whether the model learned or the world changed is read off the
model's prequential loss on the two sides of the cut, with the change test's statistic
(:func:`~pipeline.core.change.test.two_sample_z`): ``z`` of the loss after against before.

- ``learning``: the loss fell (a one-sided test at 5%, ``z <= -1.645``; at the close also its
  trend, below): the model got better, and its reliance moved as it learned;
- ``degradation``: the loss rose: the world changed and the model has not caught up. The
  episode's two looks (below) share one one-sided 5%: ``z >= 1.96`` when it opens, and at its
  close the boundary that spends the rest for the two looks' correlation (1.65-1.95;
  :mod:`pipeline.core.change.looks`);
- ``reliance_shift``: the loss stayed within its 90% interval, yet the reliance did move --
  what a loss monitor misses (also when the loss is unknown).

When the kind is decided. That the loss moved can be seen at once; that it did *not* move
needs more data than the few hundred events after a fresh cut (a model that is still learning
improves a little at a time). So the loss is looked at once when the episode opens, and if it
had moved the episode takes that kind there (a ``degradation`` pages right away); otherwise the kind
is decided when the episode closes, ``episode_gap`` events later, on the loss from the top
change's cut up to then. The loss before a cut reaches back to the previous episode's cut, not
into the regime before it. At the close, a loss that the cut says did not move is also tested
for a slope over the same stretch (:func:`~pipeline.core.change.events.trend_z`): a model that
keeps learning improves a little at a time, so the two sides of one cut are averages of a
sloping line and differ by little (the demo's stream under the 30,000-event demo's smoothing
paged "reliance on salary grew" at z = -1.3 while its loss fell from 0.31 to 0.22 over 5,000
events); a slope below zero at one-sided 2.5% (``z <= -1.96``) makes it ``learning``. The price:
a loss that did not move is told as ``learning`` by one test or the other at most 7.5% of the
time (measured 7.5% on flat 0-1 losses; by the cut alone 5%), so a true reliance shift at a
flat loss goes unpaged that much more often (more with the open's look too: the two looks' cut
tests alone tell 7.7-8.2% of flat 0-1 or normal losses ``learning``). For ``degradation``, which
pages, the two looks (the open's, then the close's) share one 5% (:mod:`.looks`): each at 5%,
they told 8.5% of flat 0-1 or normal losses ``degradation``; sharing, 4.8-5.4% (± 0.4; 2.7% of a regression tree's heavy-tailed squared loss,
``tests/benchmarks/bench_loss_kind.py``).

A member's own look. A change that joins an episode not yet told, or told ``learning``, gets one
look at the loss at its own cut, once ``min_samples`` losses follow it: a model that keeps learning makes small changes less than ``episode_gap`` apart, so an
episode opened by them before a drift takes the drift's changes in, and its own cut, read
against losses mostly before the drift, says nothing of the drift's rise (Friedman ``gra`` and
the demo's concept drift went unpaged at ``min_effect`` 0.1). If the loss rose there, an episode
not yet told is told ``degradation`` then; one told ``learning`` closes without that change and
the changes after it, which open their own episode, told ``degradation`` (its side before starts
at the learning episode's cut: the loss the model had learned to). The change then *leads* the
episode: it comes first among its changes, and the episode is split at its cut. Each member's
look is one more test of a loss that may not have moved, so an episode's members share 1.25%:
the ``k``-th look is one-sided at ``1.25% * 6 / (pi^2 k^2)``
(:func:`~pipeline.core.change.looks.member_rise`), and an episode, however many members it has,
says ``degradation`` of a flat loss at most 5% of the time (the open's 2.5%, the close's 1.25%
beyond it, the members' 1.25%: :mod:`~pipeline.core.change.looks`; each member at 2.5% told 62-76%
of a learning model's long chains at a flat loss ``degradation``,
``tests/benchmarks/bench_loss_kind.py``).

The kind does not change afterwards; the episode carries the loss on
either side of the cut it was decided on, and ``alert`` says whether the kind is one of
``alert_kinds`` -- for a ``reliance_shift``, if what the model's accuracy relies on moved (a
change of iPFI or iSAGE): iPDP's curves alone moving at a flat loss are the model's effect
changing, not its reliance (a Hoeffding adaptive tree that swaps in a subtree makes its
probabilities less extreme at the same labels), and do not page.
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
    """Changes of one stream that happened together, ranked by relative effect (module
    docstring); ``closed_seq`` is None while the episode is open; ``first``: the first message
    of the episode, which announces its kind (the open one, or the closed one when its kind
    waited for the close)."""

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
    """The episode of ``changes`` at event ``seq``: the top change's context (split at its cut
    when it was detected), with each changed series' own levels -- before: at its first change
    in the episode, after: ``level_now(explainer, feature)``, its window now (which starts at its
    cut). ``curves(feature, cut_seq)`` gives a feature's iPDP curves around a cut; ``loss_*`` the
    model's loss on either side of the cut, as the kind was decided on it. ``lead``: the change
    whose cut the kind was told on, when not the largest (it comes first, the rest ranked)."""
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
        explanations[c.explainer][c.feature] = (c.before.mean, now.mean if now.n else c.after.mean)
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
