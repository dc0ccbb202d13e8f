"""Change episodes: the changes of one stream that belong to one drift, what kind they are and
whether they page; the rules live in :class:`~streamxai.core.change.stream.StreamChangeDetector`.
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
    waited for the close).

    Grouping. A change joins the open episode if it comes less than ``episode_gap`` events after the
    episode's last change and at most ``episode_max`` after its first, unless it is a drift of its
    own: its new regime began after the episode was announced (its cut more than half the way from
    the announcement to its detection, as a cut found late lies on a coarse bucket boundary), or it
    could make an alert of an episode announced as none, or it is the first change that could page
    in an episode of iPDP changes and its regime began after that episode's first change. A drift of its own closes the open episode
    and opens the next; so does a change after ``episode_max``. An episode closes at the first
    message more than ``episode_gap`` events after its last change (or when the stream ends).

    Announcement. Each episode's first message (``first``) tells its kind and whether it is an
    alert, at the earliest of: a rise found by the loss's own test among its changes; its first look
    at the loss, once ``min_samples`` losses follow its top change's cut (its report complete), if
    the loss moved; a member's own look at its cut, if the loss rose there; and at the latest
    ``episode_gap`` events after its first change, with the losses up to then. The kind does not
    change afterwards. An episode that paged is sent again, open, each time a change of a feature
    it did not name joins it (a loss that rose names no feature; the features whose reliance fell
    come later), so the page's episode says what broke as soon as it is known; these messages
    are not first and page no more. The closed message repeats the kind with every change. An episode ranks its
    changes by relative effect (the change whose look told its kind first) and carries, split at
    its top change's cut, every explainer's vector, the changed features' iPDP curves and the
    model's loss.

    Kind (:func:`~streamxai.core.change.events.loss_kind`), from the model's loss on the two sides of
    the cut (the side before from the previous episode's cut):

    - ``learning``: the loss fell (one-sided 5%; at the last look also a falling slope over the
      episode, :func:`~streamxai.core.change.events.trend_z`), and the model kept the feature it
      relied on most;
    - ``degradation``: the loss rose -- by the loss's own change test, or by the episode's looks,
      which share one one-sided 5% (:mod:`streamxai.core.change.looks`);
    - ``reliance_shift``: the loss stayed within its interval, or it fell while the model gave up
      the feature it relied on most (the largest iPFI or iSAGE level before the cut is another
      feature's after it, and its own level fell): what a loss monitor misses;
    - ``data_fault``: a feature's own values changed as a broken pipeline changes them
      (:mod:`streamxai.core.change.inputs`), on a feature the model relies on: an episode of its
      own, announced at once, whatever the loss did and whatever episode is open
      (:meth:`~streamxai.core.change.stream.StreamChangeDetector.input_faults`).

    Alert. An episode is an alert if its kind is one of ``alert_kinds`` and, recently (confirmed
    within ``episode_max`` events of where its regime began), what the model's accuracy rests on
    moved: a rise found by the loss's own test; for a degradation, a change of iPFI or iSAGE, or a
    fall of the iPDP of a feature the model leaned on (at least a quarter of the top feature's
    reliance: it stopped responding to what it leaned on, as it does to a shuffled or stuck
    feature, before that feature's importance has fallen far enough to be told from noise); for a
    reliance shift at a loss that did not move, a change of one feature in every reliance explainer
    that runs (two estimators of reliance agree). Other iPDP changes describe the model's effects
    and are context, never the page; a slow drift that added up to the minimum effect over longer
    is reported, not paged.
    """

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
