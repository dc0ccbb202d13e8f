"""All series of one stream in one place: change events that explain themselves, and episodes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..base import Component
from ..increments import Block
from .curves import Packed, pack, unpack
from .dependence import SerialVariance
from .episodes import Episode, make_episode, ranked
from .events import INPUTS, KINDS, RELIANCE, Change, Levels, loss_kind, trend_z
from .inputs import InputFault
from .label_watch import LABEL
from .looks import close_kind, member_kind, open_kind
from .test import Z95, Cut, SeriesTest, two_sample_z
from .window import SeriesWindow

__all__ = ["LOSS", "StreamChangeDetector"]

_CURVES_KEPT = 32
#: the series of the model's loss in change events and episodes: ``(explainer, feature)``
LOSS = ("model", "loss")


#: the events before a change over which the model's reliance on its feature is read
_RELIANCE_SPAN = 2000

#: the spans over which the reliance on a faulted feature is read, the larger share counting (the
#: published values follow the last ~1/alpha events: a reliance that grew lately counts)
_FAULT_SPANS = (500, _RELIANCE_SPAN)

#: the least reliance on a feature (of the top feature's) whose effect's change pages a degradation
_LEANED_ON = 0.25
#: labels found at one class for a share of the events are a fault when the model's loss rose
#: since by this many standard errors (one-sided 0.1%), within this many events of the finding
_LABEL_LOSS_Z = 3.09
_LABEL_WAIT = 1000

#: the weight of each message in a series' running mean of the model's loss
_LOSS_WEIGHT = 0.01

#: an iPDP series whose new level lies within the range its own changes held over this many events
#: (widened by a tenth of the change's scale) takes it on without a change event: a young adaptive
#: tree's partial dependence flaps between two shapes
_RECALL = 3000
_RECALL_MARGIN = 0.1


class _Series:
    __slots__ = ("test", "dependence", "last_seq", "var_factor", "curves", "curve", "previous_curve", "loss_level",
                 "levels")

    def __init__(self, test: SeriesTest, dependence: SerialVariance):
        self.test = test
        self.dependence = dependence  # how serial dependence inflates the variance of its means
        self.last_seq = -1
        self.var_factor = 1.0  # the latest one its explainer reported
        self.curves: list[tuple[int, Packed]] = []  # (seq, curve), thinned, within the window (curves.pack)
        self.curve: tuple[int, Packed] | None = None  # the newest (seq, curve)
        self.previous_curve: tuple[int, Packed] | None = None
        #: the model's loss its messages carried, a running mean (about the last 100 messages)
        self.loss_level: float | None = None
        #: (seq, level before, level after) of its cuts within the last _RECALL events, oldest first
        self.levels: list[tuple[int, float, float]] = []

    def returned(self, cut: Cut, seq: int, scale: float) -> bool:
        """Whether ``cut``'s new level lies within the range its earlier cuts' levels spanned over
        the last _RECALL events (widened by _RECALL_MARGIN of ``scale``); records the cut."""
        levels = [lv for lv in getattr(self, "levels", ()) if lv[0] > seq - _RECALL]  # (a checkpoint without them)
        held = [v for _, before, after in levels for v in (before, after)]
        margin = _RECALL_MARGIN * scale
        back = bool(held) and min(held) - margin <= cut.after.mean <= max(held) + margin
        self.levels = [*levels, (seq, cut.before.mean, cut.after.mean)]
        return back


class StreamChangeDetector(Component):
    """Change detection over every explanation series of one stream.

    One :class:`~streamxai.core.change.test.SeriesTest` per ``(explainer, feature)`` and one of
    the model's prequential loss (:data:`LOSS`), sharing ``delta``, which so bounds the false-alarm
    probability of the *stream*. The rules and the episodes they form are specified in
    docs/pages/concepts/change-events.md.

    Parameters
    ----------
    series
        The stream's ``(explainer, feature)`` pairs, one series each (not empty).
    delta
        Bound on the probability that the stream, without a change, ever reports one: over all
        its tested series and the loss together, in ``(0, 1)``.
    min_effect
        The least change reported, a fraction (``>= 0``): of the explainer's largest ``|level|``
        in the stream, or of the loss's level; also the least reliance, as a fraction of the
        model's loss, for an iPDP change to be reported.
    min_samples
        Increments (explained events, ``>= 2``) each side of a cut needs before the test uses
        it; also the model's losses each side of a look at the loss.
    max_increments
        Increments (explained events) per series the test looks back over.
    warmup
        Events (``seq``) at the start of the stream whose messages are not monitored.
    episode_gap
        Events (``seq``): a change less than this after the open episode's last change joins
        it; an episode closes at the first message more than this after its last change (a
        data-fault episode, after its finding), and tells its kind at the latest this long
        after its first change.
    buckets_per_level
        Buckets of each size in a series' window (``>= 2``): their boundaries are the candidate
        cuts, so more buckets give finer cuts for more memory and work per check.
    tested
        The explainers whose series are tested and share ``delta`` (``None``: all); the others
        are kept for the levels and curves that change events show.
    alert_kinds
        The episode kinds that page, from ``learning``, ``degradation``, ``reliance_shift`` and
        ``data_fault``.
    episode_max
        Events (``seq``, ``>= 1``): an episode takes changes for at most this long after its
        first; a later change opens an episode of its own. A change confirmed within this of
        where its regime began is recent (alerts; :mod:`streamxai.core.change.episodes`).
    fault_share
        A data fault pages if the model relied on its feature by at least this fraction, in
        ``[0, 1]``, of the top feature's reliance.

    Examples
    --------
    Two features swap roles at event 3000: both changes are reported, in one episode that holds
    the explanation before and after its cut.

    >>> import random
    >>> from streamxai.core.increments import Block
    >>> rng = random.Random(5)
    >>> det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], delta=0.01, warmup=0, episode_gap=500)
    >>> def block(level):
    ...     xs = [level + rng.gauss(0, 0.2) for _ in range(10)]
    ...     m = sum(xs) / 10
    ...     return Block(10, m, sum((x - m) ** 2 for x in xs))
    >>> events, episodes = [], []
    >>> for t in range(600):                          # a and b swap roles at event 3000
    ...     seq = 10 * t + 9
    ...     for f, lv in (("a", 0.4 if t < 300 else 0.0), ("b", 0.0 if t < 300 else 0.4)):
    ...         ch, ep = det.update("ipfi", f, seq, block(lv))
    ...         events += ch
    ...         episodes += ep
    >>> [(c.feature, c.seq, c.cut_seq) for c in events]
    [('a', 3059, 3000), ('b', 3059, 3000)]
    >>> ep = episodes[0]
    >>> [c.feature for c in ep.changes], ep.cut_seq
    (['b', 'a'], 3000)
    >>> {f: (round(b, 1), round(a, 1)) for f, (b, a) in ep.explanations["ipfi"].items()}
    {'a': (0.4, 0.0), 'b': (0.0, 0.4)}
    """

    #: data-fault episodes, open until ``episode_gap`` after their finding: (close after, changes,
    #: alert); class defaults, for a checkpoint made without them
    _faults: tuple[tuple[int, tuple[Change, ...], bool], ...] = ()
    #: (feature, where its newest data fault began): the changes of it that follow are the fault's
    _faulted: tuple[tuple[str, int], ...] = ()
    _fault_seq = -1  # the newest position of an input fault taken in
    #: labels at one class for a share of the events, waiting for the loss to rise: (finding, until)
    _held: tuple[tuple[InputFault, int], ...] = ()

    def __init__(
        self,
        series: Sequence[tuple[str, str]],
        delta: float = 0.01,
        min_effect: float = 0.1,
        min_samples: int = 100,
        max_increments: int = 20_000,
        warmup: int = 1000,
        episode_gap: int = 1000,
        buckets_per_level: int = 2,
        tested: Sequence[str] | None = None,
        alert_kinds: Sequence[str] = ("degradation", "reliance_shift", "data_fault"),
        episode_max: int = 3000,
        fault_share: float = 0.15,
    ):
        if not series:
            raise ValueError("series is empty: list the stream's (explainer, feature) pairs")
        if not 0 < delta < 1:
            raise ValueError(f"change delta={delta} must be in (0, 1)")
        if min_effect < 0:
            raise ValueError(f"change min_effect={min_effect} must be >= 0")
        self.series = [tuple(s) for s in series]
        self.delta = delta
        self.min_effect = min_effect
        self.min_samples = min_samples
        self.max_increments = max_increments
        self.warmup = warmup
        self.episode_gap = episode_gap
        self.buckets_per_level = buckets_per_level
        self.tested = None if tested is None else list(tested)
        unknown = set(alert_kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"alert kinds {sorted(unknown)} are not among {list(KINDS)}")
        self.alert_kinds = tuple(alert_kinds)
        if episode_max < 1:
            raise ValueError(f"change episode_max={episode_max} must be >= 1")
        self.episode_max = episode_max
        if not 0 <= fault_share <= 1:
            raise ValueError(f"change fault_share={fault_share} must be in [0, 1]")
        self.fault_share = fault_share
        self._reset()

    def _reset(self) -> None:
        tested = {e for e, _ in self.series} if self.tested is None else set(self.tested)
        self._tested = frozenset(tested)
        n_tested = sum(1 for e, _ in self.series if e in tested)
        if n_tested == 0:
            raise ValueError(f"no series of explainers {sorted(tested)} among {self.series}: nothing to test")
        series_delta = self.delta / (n_tested + 1)  # the stream's budget, split over the tested series and the loss
        self._series = {
            s: _Series(SeriesTest(series_delta, self.min_samples, self.max_increments, self.buckets_per_level),
                       SerialVariance(self.min_samples))
            for s in self.series
        }
        # the model's loss: one block per report, every event (not only explained ones)
        self._loss = SeriesWindow(self.max_increments, self.buckets_per_level)
        self._loss_seq = -1
        self._loss_dependence = SerialVariance(self.min_samples)
        self._regime_seq = 0  # where the stream's current regime began: the last episode's cut
        self._open: list[Change] = []
        self._losses = 0  # losses taken in: where a look's sides lie (looks.Look)
        #: the open episode's look at its loss when it opened (looks.Look; False: not yet)
        self._opened: tuple[int, int, int] | bool = False
        #: the open episode's kind and the loss on either side of the cut it was decided on
        self._kind: tuple[str, Block | None, Block | None] | None = None
        #: changes that joined the open episode after its first, each waiting for its own look
        self._members: list[Change] = []
        self._lead: Change | None = None  # the member whose look told the open episode its kind
        self._told_at = 0  # the cut the open episode was told its kind on, at its open
        self._looks = 0  # member looks taken in the open episode (looks.member_rise)
        self._announced: int | None = None  # where the open episode's kind went out (None: not yet)
        self._alerted = False  # whether the open episode went out as an alert
        self._faults = ()
        self._faulted = ()
        self._fault_seq = -1
        self._held = ()
        # the change test of the model's loss (a series of its own, with its share of delta)
        self._loss_test = SeriesTest(series_delta, self.min_samples, self.max_increments, self.buckets_per_level)

    # queries ---------------------------------------------------------------------
    def knows(self, explainer: str, feature: str) -> bool:
        return (explainer, feature) in self._series

    def last_seq(self, explainer: str, feature: str) -> int:
        """The newest ``seq`` folded in for the series (-1: none)."""
        return self._series[(explainer, feature)].last_seq

    @property
    def fault_seq(self) -> int:
        """The newest position of a test of the inputs taken in (-1: none)."""
        return self._fault_seq

    def oldest_seq(self) -> int | None:
        """The oldest ``seq`` any series' window still covers (None before any data): a cut is
        never placed before it."""
        firsts = [st.test.window.first_seq for st in self._series.values() if st.test.window.n]
        return min(firsts) if firsts else None

    def level(self, explainer: str, feature: str) -> float | None:
        """Mean increment of the series' window (None before any data)."""
        w = self._series[(explainer, feature)].test.window
        return w.total.mean if w.n else None

    # the update ------------------------------------------------------------------
    def update(
        self,
        explainer: str,
        feature: str,
        seq: int,
        block: Block | None,
        curve: dict | None = None,
        model_loss: Block | None = None,
        var_factor: float | None = None,
    ) -> tuple[list[Change], list[Episode]]:
        """Fold in one explanation message; returns the changes it revealed and the episodes it
        opened or closed. ``var_factor``: the variance factor of the series' increments its
        explainer reported (None: keep the previous one; 1 at first)."""
        st = self._series.get((explainer, feature))
        if st is None:
            raise ValueError(
                f"series {explainer}/{feature} is not one of this stream's {len(self.series)} series; "
                "every worker must run with the same explainers and features settings"
            )
        episodes = self._episodes_due(seq)
        seq_lo = st.last_seq + 1 if st.last_seq >= 0 else max(0, seq - (block.n if block else 1) + 1)
        st.last_seq = seq
        if var_factor is not None:
            st.var_factor = var_factor
        if curve is not None:
            self._keep_curve(st, seq, curve)
        changes: list[Change] = []
        if model_loss is not None and model_loss.n > 0:
            lv = st.loss_level
            st.loss_level = model_loss.mean if lv is None else lv + _LOSS_WEIGHT * (model_loss.mean - lv)
        if model_loss is not None and seq > self._loss_seq and model_loss.n > 0:
            # every message of one report carries the same loss block: take it once per seq
            seq_lo_loss = self._loss_seq + 1
            self._loss.add(seq_lo_loss, seq, model_loss)
            self._loss_dependence.add(model_loss)
            self._loss_seq = seq
            self._losses += model_loss.n
            if seq >= self.warmup:
                changes += self._test_loss(seq_lo_loss, seq, model_loss, episodes)
            if self._held:
                held, more = self._release_held(seq)
                changes += held
                episodes += more
        if block is None or block.n <= 0:
            return changes, episodes
        st.dependence.add(block)  # the warm-up's too: the factor is ready when the test starts
        if seq < self.warmup:
            return changes, episodes
        if explainer not in self._tested:  # kept for the levels in change events, never tested
            st.test.window.add(seq_lo, seq, block)
            return changes, episodes
        scale_e: list[float] = []  # computed only when a cut is significant

        def min_effect(a: Block, b: Block, cut_seq: int) -> float:
            if not scale_e:
                scale_e.append(self._scale(explainer, seq))
                if explainer not in RELIANCE and not self._used(feature, seq):
                    scale_e[0] = math.inf  # an effect the model's accuracy does not rest on
            return self.min_effect * max(scale_e[0], abs(a.mean), abs(b.mean))

        cut = st.test.add(seq_lo, seq, block, min_effect, max(st.var_factor, st.dependence.factor),
                          lambda a, b, cut_seq: self._learned(cut_seq, st.test.window.first_seq))
        if cut is None:
            return changes, episodes
        scale = max(self._scale(explainer, seq), abs(cut.before.mean), abs(cut.after.mean))
        if explainer == "ipdp" and st.returned(cut, seq, scale):
            return changes, episodes
        vectors = self._vectors(cut.seq, seq, own=(explainer, feature, cut.before, cut.after))
        curve_b, curve_a = self._curves(feature, cut.seq, seq)
        loss_b, loss_a = self._loss_at(cut.seq, cut.since)
        change = Change(explainer, feature, seq, cut, scale, vectors, curve_b, curve_a, loss_b, loss_a,
                        loss_kind(loss_b, loss_a, min_n=self.min_samples, var_factor=self._loss_dependence.factor))
        self._join(change, seq, episodes)
        return [*changes, change], episodes

    def input_faults(self, faults: Sequence[InputFault]) -> tuple[list[Change], list[Episode]]:
        """Take in what one test of the stream's inputs found: a change of the series
        ``(inputs, feature)`` for each fault on a feature the model relies on (half of ``min_effect`` of
        the top feature's at least), in a ``data_fault`` episode of its own; labels at one class for a
        share of the events wait for the loss to rise. Findings at a position already taken are dropped."""
        if not faults or faults[0].seq <= self._fault_seq:
            return [], []
        seq = faults[0].seq
        self._fault_seq = seq
        episodes = self._episodes_due(seq)
        if seq < self.warmup:
            return [], episodes
        changes, more = self._take_faults(faults, seq, hold=True)
        return changes, episodes + more

    def _release_held(self, seq: int) -> tuple[list[Change], list[Episode]]:
        """The held label findings whose loss rose by ``seq`` page now; those held past their
        wait are dropped."""
        ready = [f for f, until in self._held if seq <= until and self._loss_rose(f.start)]
        self._held = tuple((f, until) for f, until in self._held if seq <= until and f not in ready)
        return self._take_faults(ready, seq, hold=False) if ready else ([], [])

    def _take_faults(self, faults: Sequence[InputFault], seq: int, hold: bool) -> tuple[list[Change], list[Episode]]:
        """The changes of ``faults`` found by ``seq`` and their episode; ``hold``: labels
        found at one class for a share of the events wait for the loss to rise."""
        changes, alert = [], False
        for fault in faults:
            if fault.what == "stopped":  # the labels: the model stops learning and iPFI and iSAGE with it
                changes.append(self._fault_change(fault, None))
                alert = True
                continue
            if hold and fault.feature == LABEL and fault.partial and not self._loss_rose(fault.start):
                self._held = (*self._held, (fault, seq + _LABEL_WAIT))
                continue
            share = self.reliance(fault.feature, fault.start, seq, _FAULT_SPANS)
            if fault.like is not None and share is not None:  # a swap: the values of both are wrong
                other = self.reliance(fault.like, fault.start, seq, _FAULT_SPANS)
                share = None if other is None else max(share, other)
            if share is not None and share < self.min_effect / 2:  # reported from half the minimum effect: the
                continue  # finding is sure, only the reliance is an estimate
            alert = alert or share is None or share >= self.fault_share
            changes.append(self._fault_change(fault, share))
            broken = {fault.feature, fault.like} - {None}  # a swap: the other feature's values are wrong too
            self._faulted = (*((f, s) for f, s in self._faulted if f not in broken), *((f, fault.start) for f in broken))
        if not changes:
            return [], []
        alert = alert and "data_fault" in self.alert_kinds
        self._faults = (*self._faults, (seq + self.episode_gap, tuple(changes), alert))
        return changes, [self._fault_episode(seq, changes, "open", alert)]

    def _loss_rose(self, start: int) -> bool:
        """Whether the model's loss since ``start`` is above the loss before it by
        ``_LABEL_LOSS_Z`` standard errors (its serial dependence counted)."""
        then, since = self._loss_at(start, None)
        if then is None or since is None or then.n < 2 or since.n < 2:
            return False
        return two_sample_z(then, since, self._loss_dependence.factor) >= _LABEL_LOSS_Z

    def reliance(self, feature: str, before: int, upto: int,
                 spans: Sequence[int] = (_RELIANCE_SPAN,)) -> float | None:
        """How much the model's accuracy rests on ``feature`` just before event ``before``: its
        level over the stream's largest, the largest over ``spans`` and over iPFI and iSAGE; None
        without either, or with fewer than ``min_samples`` increments over the longest span."""
        shares = []
        for e in RELIANCE:
            if (e, feature) not in self._series:
                continue
            for i, span in enumerate(sorted(spans, reverse=True)):
                levels = {}
                for f in (f for x, f in self._series if x == e):
                    side, _ = self._series[(e, f)].test.window_at(upto).split(before, upto, since=before - span)
                    levels[f] = side
                m = levels[feature]
                if m is None or m.n < self.min_samples:
                    if i == 0:
                        return None
                    continue  # a shorter span too short to read: the longer one stands
                scale = max(abs(b.mean) for b in levels.values() if b is not None)
                shares.append(m.mean / scale if scale > 0 else 0.0)
        return max(shares) if shares else None

    def _fault_change(self, fault: InputFault, share: float | None) -> Change:
        """The change of series ``(inputs, feature)`` of ``fault``: its levels are the median of
        the feature's values before it and since, their spread from the interquartile range."""
        (m0, q0), (m1, q1) = fault.before, fault.after
        before = _robust_block(m0, q0, 1000)
        after = _robust_block(m1, q1, max(2, fault.seq - fault.start + 1))
        z = two_sample_z(before, after)
        cut = Cut(fault.start, before, after, z, 0.0, 0.0, 1, 1, fault.seq)
        scale = q0 if q0 > 0 else abs(m0)
        vectors = self._vectors(fault.start, fault.seq, own=(INPUTS, fault.feature, before, after))
        curve_b, curve_a = self._curves(fault.feature, fault.start, fault.seq)
        loss_b, loss_a = self._loss_at(fault.start, None)
        return Change(INPUTS, fault.feature, fault.seq, cut, scale, vectors, curve_b, curve_a, loss_b, loss_a,
                      "data_fault", fault, share)

    def _fault_episode(self, seq: int, changes: Sequence[Change], status: str, alert: bool) -> Episode:
        top = changes[0]
        own = {(c.explainer, c.feature): c.after for c in changes}
        return make_episode(changes, seq, status, "data_fault", alert, top.loss_before, top.loss_after,
                            lambda e, f: own[(e, f)] if e == INPUTS else self._level_before(e, f, seq),
                            lambda f, cut_seq: self._curves(f, cut_seq, seq), status == "open", top)

    def _fault_explains(self, c: Change) -> bool:
        """Whether change ``c`` follows a data fault on its feature (for the loss, on any):
        after the fault began, within ``episode_max`` of it, its cut at most ``episode_gap`` before it."""
        return any((c.feature == f or c.explainer == LOSS[0]) and c.seq >= start
                   and c.seq - start <= self.episode_max and c.cut_seq >= start - self.episode_gap
                   for f, start in self._faulted)

    def _test_loss(self, seq_lo: int, seq: int, block: Block, episodes: list[Episode]) -> list[Change]:
        """The change test of the model's loss: a rise of at least ``min_effect`` of its level is
        a change of :data:`LOSS` (``degradation``); a fall restarts the window from its cut."""
        def min_effect(a: Block, b: Block, cut_seq: int) -> float:
            return self.min_effect * max(abs(a.mean), abs(b.mean)) if b.mean > a.mean else math.inf

        cut = self._loss_test.add(seq_lo, seq, block, min_effect, self._loss_dependence.factor,
                                  lambda a, b, cut_seq: b.mean < a.mean)
        if cut is None:
            return []
        scale = max(abs(cut.before.mean), abs(cut.after.mean))
        vectors = self._vectors(cut.seq, seq, own=(*LOSS, cut.before, cut.after))
        change = Change(*LOSS, seq, cut, scale, vectors, None, None, cut.before, cut.after, "degradation")
        self._join(change, seq, episodes)
        return [change]

    def _join(self, change: Change, seq: int, episodes: list[Episode]) -> None:
        """Add ``change`` to the open episode, or open one with it when it is a drift of its own
        (the open one then closes)."""
        if self._open and self._starts_episode(change):  # a drift of its own: the open episode ends here
            episodes.append(self._episode(seq, "closed", split=True))
        if self._open:  # its own look at the loss, once enough follow its cut (a new list: see _members)
            self._members = [*self._members, change]
        named = {c.feature for c in self._open}
        self._open.append(change)
        if self._announced is not None and self._alerted and change.explainer != LOSS[0] and change.feature not in named:
            # a page that went out names what it learns since: the feature, once, in a message of its own
            episodes.append(self._episode(seq, "open", update=True))

    def flush(self) -> list[Episode]:
        """Close the open episodes, if any (end of a finite stream)."""
        out = [self._fault_episode(max(c.seq for c in changes), list(changes), "closed", alert)
               for _, changes, alert in self._faults]
        self._faults = ()
        if self._open:
            out.append(self._episode(max(c.seq for c in self._open), "closed"))
        return out

    # internals -------------------------------------------------------------------
    # The other series' messages of the current report may come before or after this one, so every
    # read of another series uses its blocks that end before the current seq (SeriesTest.window_at).
    def _keep_curve(self, st: _Series, seq: int, curve: dict) -> None:
        """The newest curve, and a thinned history over the span of the series' window: at
        most about ``_CURVES_KEPT`` of them, evenly spaced in events."""
        curve = pack(curve)  # kept compactly: never share the caller's lists
        st.previous_curve, st.curve = st.curve, (seq, curve)
        first = st.test.window.first_seq
        while st.curves and first is not None and st.curves[0][0] < first:
            st.curves.pop(0)
        span = seq - (first if first is not None else seq)
        if not st.curves or seq - st.curves[-1][0] >= max(1, span // _CURVES_KEPT):
            st.curves.append((seq, curve))

    def _learned(self, cut_seq: int, since: int | None) -> bool:
        """Whether the model's loss fell at ``cut_seq`` (a change there is the model learning)."""
        kind = loss_kind(*self._loss_at(cut_seq, since), min_n=self.min_samples, var_factor=self._loss_dependence.factor)
        return kind == "learning"

    def _loss_at(self, cut_seq: int, since: int | None) -> tuple[Block | None, Block | None]:
        """The model's loss on the two sides of ``cut_seq``, the side before over the stream's
        current regime (since the cut of the last episode that was not learning), or, for a cut at or
        before that regime's start, from ``since``; never the warm-up."""
        return self._loss.split(cut_seq, since=self._loss_since(cut_seq, since))

    def _loss_since(self, cut_seq: int, since: int | None) -> int:
        """Where the loss before ``cut_seq`` starts (:meth:`_loss_at`)."""
        start = self._regime_seq if self._regime_seq < cut_seq else (since or 0)
        return max(start, min(self.warmup, cut_seq))

    def _close_kind(self, top: Change, seq: int) -> tuple[str, Block | None, Block | None]:
        """The kind of an episode whose loss had not moved when it opened, decided at its close
        (:func:`~streamxai.core.change.looks.close_kind`); a flat loss whose trend fell is learning."""
        before, after = self._loss_at(top.cut_seq, top.cut.since)
        # the open's look (None: it did not look; an episode without a kind has no other)
        k = self._loss_dependence.factor
        kind = close_kind(before, after, self._opened or None, self._losses, min_n=self.min_samples, var_factor=k)
        if kind == "reliance_shift" and before is not None and after is not None:
            z = trend_z(self._loss.span(self._loss_since(top.cut_seq, top.cut.since), seq), 2 * self.min_samples,
                        var_factor=k)
            if z is not None and z <= -Z95:
                kind = "learning"
        return kind, before, after

    def _level_before(self, explainer: str, feature: str, upto: int) -> Block:
        test = self._loss_test if (explainer, feature) == LOSS else self._series[(explainer, feature)].test
        w = test.window_at(upto)
        return w.before(w.upto(upto))

    def _scale(self, explainer: str, upto: int) -> float:
        best = 0.0
        for e, f in self._series:
            if e == explainer:
                m = self._level_before(e, f, upto)
                if m.n:
                    best = max(best, abs(m.mean))
        return best

    def _alerts(self, kind: str, changes: Sequence[Change]) -> bool:
        """Whether an episode of ``kind`` with ``changes`` is an alert: its kind is in
        ``alert_kinds`` and, within ``episode_max`` of where its regime began, its loss rose, or a
        reliance explainer changed (for a reliance shift, in every running one on one feature)."""
        if kind not in self.alert_kinds:
            return False
        recent = [c for c in changes if c.seq - c.cut_seq <= self.episode_max and not self._fault_explains(c)]
        if any(c.explainer == LOSS[0] for c in recent):
            return True
        if kind != "reliance_shift":
            return any(c.explainer in RELIANCE or (kind == "degradation" and self._leaned_on(c)) for c in recent)
        # at a loss that did not move, the reliance explainers that run must agree on a feature
        watched = self._tested & set(RELIANCE)
        by_feature: dict[str, set[str]] = {}
        for c in recent:
            if c.explainer in RELIANCE:
                by_feature.setdefault(c.feature, set()).add(c.explainer)
        return any(found >= watched for found in by_feature.values())

    def _leaned_on(self, c: Change) -> bool:
        """Whether ``c`` is a fall of an iPDP effect of a feature the model leaned on
        (reliance at least ``_LEANED_ON`` of the top feature's): a shuffled or stuck feature shows it first."""
        if c.explainer in RELIANCE or c.explainer == LOSS[0] or c.effect >= 0:
            return False
        share = self.reliance(c.feature, c.cut_seq, c.seq)
        return share is not None and share >= _LEANED_ON

    def _used(self, feature: str, upto: int) -> bool:
        """Whether the model's accuracy rests on ``feature``: its iPFI is at least ``min_effect``
        of the model's loss (True without iPFI or before ``min_samples`` increments)."""
        st = self._series.get(("ipfi", feature))
        if st is None:
            return True
        m = self._level_before("ipfi", feature, upto)
        if m.n < self.min_samples or st.loss_level is None or st.loss_level <= 0.0:
            return True
        return m.mean >= self.min_effect * st.loss_level

    def _vectors(self, cut_seq: int, upto: int, own: tuple[str, str, Block, Block]) -> Levels:
        out: Levels = {}
        for (e, f), st in self._series.items():
            if (e, f) == own[:2]:
                pair: tuple[float | None, float | None] = (own[2].mean, own[3].mean)
            else:
                b, a = st.test.window_at(upto).split(cut_seq, upto)
                pair = (b.mean if b else None, a.mean if a else None)
            out.setdefault(e, {})[f] = pair
        if own[:2] == LOSS or own[0] == INPUTS:
            out[own[0]] = {own[1]: (own[2].mean, own[3].mean)}
        return out

    def _curves(self, feature: str, cut_seq: int, upto: int) -> tuple[dict | None, dict | None]:
        st = self._series.get(("ipdp", feature))
        if st is None:
            return None, None
        now = st.curve if st.curve is not None and st.curve[0] < upto else st.previous_curve
        earlier = [c for s, c in st.curves if s < cut_seq]
        return (unpack(earlier[-1]) if earlier else None), (unpack(now[1]) if now is not None else None)

    def _episodes_due(self, seq: int) -> list[Episode]:
        """The episode announced at ``seq`` (when it opens, at a member's look, or at the
        latest ``episode_gap`` after its first change) and the ones that close."""
        out = []
        if self._faults and seq > self._faults[0][0]:
            due = [f for f in self._faults if seq > f[0]]
            self._faults = tuple(f for f in self._faults if seq <= f[0])
            out += [self._fault_episode(seq, list(changes), "closed", alert) for _, changes, alert in due]
        rise = next((c for c in self._open if c.explainer == LOSS[0]), None) if self._kind is None else None
        if rise is not None and seq > rise.seq:  # the loss's own test says it rose: told now
            self._kind, self._told_at, self._lead = ("degradation", rise.before, rise.after), rise.cut_seq, rise
            self._opened = True
            out.append(self._episode(seq, "open"))
        if self._open and not self._opened and self._kind is None and seq > self._open[0].seq:
            top = ranked(self._open)[0]
            before, after = self._loss_at(top.cut_seq, top.cut.since)  # the losses up to now
            # one look, with enough losses after the cut and some before it (none when the cut is
            # older than the oldest loss the window keeps: the episode is then told at its gap)
            if before is not None and after is not None and after.n >= self.min_samples:
                self._opened = (self._losses, before.n, after.n)  # the open's look (looks.Look)
                kind = open_kind(before, after, min_n=self.min_samples, var_factor=self._loss_dependence.factor)
                if kind != "reliance_shift":  # the loss moved: its kind is known now
                    self._kind, self._told_at = (kind, before, after), top.cut_seq
                    out.append(self._episode(seq, "open"))
        if self._members and (self._kind is None or self._kind[0] == "learning"):
            out += self._member_looks(seq)
        if self._open and seq > max(c.seq for c in self._open) + self.episode_gap:
            out.append(self._episode(seq, "closed"))
        elif self._open and self._kind is None and seq > self._open[0].seq + self.episode_gap:
            out.append(self._episode(seq, "open"))  # its kind is due: decided on the loss up to now
        return out

    def _starts_episode(self, change: Change) -> bool:
        """Whether ``change`` is a drift of its own rather than a member of the open
        episode: its regime began after the episode was announced, it came more than ``episode_max``
        after the episode's first change, or it could make an alert of an episode announced as none."""
        first = self._open[0].seq
        told = self._announced
        if told is not None and not self._alerted and self._alerts(self._kind[0] if self._kind else "", [change]):
            return True
        if (_reliance(change) and not self._alerted and not any(_reliance(c) for c in self._open)
                and change.cut_seq > first + (change.seq - first) // 2):
            return True  # the first change that could page, of a regime that began after the episode's first
        if told is not None and change.explainer == LOSS[0] and not self._alerted:
            return True  # the loss rose after an episode announced without a page: not the same case
        # a cut found d events after it lies at a bucket boundary up to about d / 4 from where the
        # regime began (the window's buckets grow with age): it began after the announcement only
        # if it lies more than half the way from the announcement to its own detection
        return change.seq > first + self.episode_max or (
            told is not None and change.cut_seq > told + (change.seq - told) // 2)

    def _member_looks(self, seq: int) -> list[Episode]:
        """Each change that joined an episode not yet told, or told ``learning``, gets one look
        at the loss at its own cut; a rise tells the episode ``degradation`` (or splits it off a
        ``learning`` one), led by that change."""
        for c in list(self._members):
            if seq <= c.seq:
                continue
            if self._kind is None:
                before, after = self._loss_at(c.cut_seq, c.cut.since)
            else:  # against the loss the model learned to: from the cut the episode was told on
                before, after = self._loss.split(c.cut_seq, since=self._told_at)
            if after is None or after.n < self.min_samples:
                continue
            self._members.remove(c)
            self._looks += 1
            if member_kind(before, after, self._looks, min_n=self.min_samples,
                           var_factor=self._loss_dependence.factor) != "degradation":
                continue
            out = []
            if self._kind is not None:  # learning: the rise is not part of it
                i = self._open.index(c)
                moved, self._open = self._open[i:], self._open[:i]
                waiting = [m for m in self._members if m in moved]
                out.append(self._episode(seq, "closed"))
                self._open, self._members = moved, waiting  # a new episode: its looks count from 0
            self._opened, self._lead = True, c
            self._kind = ("degradation", before, after)
            out.append(self._episode(seq, "open"))
            return out
        return []

    def _episode(self, seq: int, status: str, split: bool = False, update: bool = False) -> Episode:
        """The open episode's message at ``seq``; ``split``: it closes for a drift of its own;
        ``update``: a paged episode names a feature it had not named."""
        changes = self._open
        if update:
            return self._message(changes, seq, status, *self._kind, self._alerted, False, self._lead)
        first = self._kind is None or status == "open"
        if self._kind is None:  # a flat loss needs the data up to now to say it did not move
            top = ranked(changes)[0]
            self._kind, self._told_at = self._close_kind(top, seq), top.cut_seq
        if first and self._kind[0] == "learning" and _top_moved(changes):
            self._kind = ("reliance_shift", *self._kind[1:])  # not the model learning the same thing better
        kind, loss_before, loss_after = self._kind
        lead = self._lead
        alert = self._alerts(kind, changes)
        if first:
            self._announced, self._alerted = seq, alert
            if alert and kind == "degradation":  # paged: the loss's own test measures further rises
                self._loss_test.restart(self._told_at)  # from the new level
        if status == "closed":
            self._open, self._kind, self._opened, self._members, self._lead = [], None, False, [], None
            self._looks = 0
            self._announced = None
            self._alerted = False
            # the world (or the deployed model) changed: a new baseline; after the model learned,
            # the next drift's loss is read against the loss it had learned to
            if kind != "learning" or split:
                self._regime_seq = (lead or ranked(changes)[0]).cut_seq
        return self._message(changes, seq, status, kind, loss_before, loss_after, alert, first, lead)

    def _message(self, changes: Sequence[Change], seq: int, status: str, kind: str, loss_before: Block | None,
                 loss_after: Block | None, alert: bool, first: bool, lead: Change | None) -> Episode:
        """The episode message of ``changes`` at ``seq``, each series' level now from its window."""
        return make_episode(changes, seq, status, kind, alert, loss_before, loss_after,
                            lambda e, f: self._level_before(e, f, seq), lambda f, cut_seq: self._curves(f, cut_seq, seq),
                            first, lead)


def _robust_block(median: float, iqr: float, n: int) -> Block:
    """``n`` values around ``median`` with the spread of a normal sample of interquartile range ``iqr``."""
    sd = iqr / 1.349 if math.isfinite(iqr) else 0.0
    return Block(n, median if math.isfinite(median) else 0.0, sd * sd * (n - 1))


def _reliance(c: Change) -> bool:
    """Whether ``c`` is a change of what the model's accuracy rests on: iPFI, iSAGE or the loss."""
    return c.explainer in RELIANCE or c.explainer == LOSS[0]


def _top_moved(changes: Sequence[Change]) -> bool:
    """Whether the model gave up the feature it relied on most: a fall of a reliance series whose
    feature had the largest level before the cut and another feature after it."""
    for c in changes:
        if c.explainer in RELIANCE and c.effect < 0:
            vec = c.vectors[c.explainer]
            before = [(v[0], f) for f, v in vec.items() if v[0] is not None]
            after = [(v[1], f) for f, v in vec.items() if v[1] is not None]
            if before and after and max(before)[1] == c.feature and max(after)[1] != c.feature:
                return True
    return False

