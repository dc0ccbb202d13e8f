"""Data faults in a stream's inputs: each feature's recent values against the values before them.

A broken pipeline changes a feature's values at once and leaves them so: a join that fills the
column with another feature's values, a sensor stuck at one reading, a unit that changes, a field
that goes missing, values shuffled by a bad key. :class:`InputMonitor` keeps the last
``recent + reference`` values of every feature and, every ``every`` events, compares the newest
``recent`` of each with the ``reference`` before them, for patterns (``constant``, ``shifted``,
``scaled``, ``swapped``, ``reordered``) that a feature's own history makes very unlikely, whole or
phasing in. The rules are specified in docs/pages/concepts/change-events.md (Data faults). A
feature found faulty is not tested again until its reference holds only values after the finding;
whether a finding matters is for the change detector to say
(:meth:`~streamxai.core.change.stream.StreamChangeDetector.input_fault`).

>>> import random
>>> rng = random.Random(1)
>>> mon = InputMonitor(["a", "b"])
>>> found = []
>>> for t in range(3000):
...     x = {"a": rng.gauss(10, 1), "b": rng.random()}
...     if t >= 2000:
...         x["a"] = 0.0                       # a goes missing, sent as 0
...     if t >= 2500:
...         x["b"] = 1000 * x["b"]             # b's unit changes
...     found += mon.update(t, x)
>>> [(f.feature, f.what, f.start, f.seq) for f in found]
[('a', 'constant', 2000, 2049), ('b', 'scaled', 2500, 2524)]
>>> found[0].detail
'constant at 0 (missing?) since 2000, outside its range; median 9.96 -> 0, IQR 1.26 -> 0'
>>> found[1].detail
'scaled about x898 since 2500; median 0.499 -> 449, IQR 0.529 -> 520'
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base import Component
from .label_links import LABEL, change_point, foreseen, label_unlinked, labels_flipped, midranks, predicted_worse

__all__ = ["InputFault", "InputMonitor", "FAULTS"]

#: what an input fault can be
FAULTS = ("constant", "shifted", "scaled", "swapped", "reordered", "stopped")
#: the least rank von Neumann ratio of values whose order is lost (independent values: about 2)
_ORDER_LOST = 1.2
#: order is lost only when values up to this many apart do not follow each other either (sources
#: that take turns in one stream make neighbours unlike while each one's own values stay smooth)
_TURNS = 8
#: the median of the newest values beyond the whole range of the reference by this many of its
#: interquartile ranges: moved once half of ``shift`` from its median
_BEYOND = 0.5
#: tests between two reckonings of the reference's quartiles and range
_REF_EVERY = 4
#: an exchange: recent values differ from their reference by this many Kolmogorov-Smirnov scales
#: sqrt((n + m) / (n m)) (p about 2e-5) and agree with the other's within this many (p about 1e-3)
_KS_DIFFER = 2.4
_KS_AGREE = 1.9
#: the least rank von Neumann ratio of a reference whose values are about independent (2: independent)
_INDEPENDENT = 1.6
#: some order lost: the ratio of the newest 200 this far above the reference's (about two standard
#: errors), or half-way to the 2 of independent values where that is nearer: values shuffled among
#: nearby events take a ratio of 1.4 to 1.5 up to 1.7 to 1.9, not to 2, as their newest values span
#: two stretches shuffled apart
_ORDER_WEAKER = 0.3
#: a link between two features: a rank correlation of at least this in every older stretch; lost
#: at most _LINK_LOST and _LINK_MARGIN below the least stretch's (standard error 1 / sqrt(recent))
_LINKED = 0.5
_LINK_LOST = 0.15
_LINK_MARGIN = 0.3
#: a fault that phases in: this share of the recent values is one value, _MIXED_MARGIN more than any
#: older stretch held, or lies far beyond the older half's bulk (:meth:`InputMonitor._mixed_in`)
_MIXED = 0.3
_MIXED_MARGIN = 0.2
#: odd values of a fault phasing in: this share of the recent values (:meth:`InputMonitor._odd_values`)
_ODD = 0.1
#: a smooth series' odd values are mixed in when their runs are at most this many standard deviations
#: fewer than random placement's (Wald-Wolfowitz; a daily cycle makes about half as many runs)
_INTERLEAVED = 2.5
#: the fewest values other than the most common one, each side, :meth:`InputMonitor._sparse_scaled` reads
_SPARSE = 5
#: a reference whose largest stretch ratio lies this far above ``ordered`` is held to its own ratio
#: and the whole margin (gusty wind directions: 1.01 before, 1.85 shuffled)
_ORDER_SLACK = 0.2
#: the latest values other than the most common one remembered (a dry spell outlasts the values kept)
_RARE_MEMORY = 200
#: the fewest such values after a unit changed, each beyond the farthest of the ones remembered
_SPARSE_NEW = 3
#: a feature that is mostly one value, whose other values come in runs (a rain's hours): the newest
#: 2 * recent hold at least _RUNS_FEWEST of them, with at most _SCATTERED times as many neighbours
#: within _RUNS_NEAR events of each other as the same number placed at random has, where the stretches
#: of the reference that held as many had _CLUSTERED times as many at the median (measured on hourly
#: rainfall: natural stretches 2.3 to 6 times, the same values shuffled 1.0 to 1.5 in nine of ten)
_RUNS_NEAR = 8
_RUNS_FEWEST = 8
_SCATTERED = 1.5
_CLUSTERED = 3.0
#: the largest chance, at the reference's share of a value, of the run of it that ``constant`` reads
_RUN_CHANCE = 1e-6
#: the labels' tests of flips read the links of this many references before theirs, one every
#: ``_REF_EVERY`` tests: the reference of three tests back ended before the newest 500 events
_LINKS_KEPT = 3
#: a flag that flipped: its rare value this share of the recent values more than in any stretch of the
#: reference (a stretch's share has a standard error of 0.05 at most)
_FLIPPED = 0.5
#: two smooth features keep an order when one lies above the other in this share of the reference
_ABOVE = 0.95
#: the percentiles of the reference and of the recent values the tests read
_REFERENCE_QS = (10, 25, 50, 75, 90)
_RECENT_QS = (10, 25, 50, 75, 90)


@dataclass(frozen=True)
class InputFault:
    """Feature ``feature``'s values (or the labels', feature ``label``) changed as a data fault
    does: ``what`` (one of :data:`FAULTS`), found at ``seq``, showing from ``start``; ``before`` and
    ``after`` their median and interquartile range; ``like``: the feature they now look like;
    ``detail``: one line for the person paged; ``partial``: a fault phasing in."""

    feature: str
    what: str
    seq: int
    start: int
    before: tuple[float, float]
    after: tuple[float, float]
    detail: str
    like: str | None = None
    partial: bool = False

    def __post_init__(self) -> None:
        if self.what not in FAULTS:
            raise ValueError(f"input fault {self.what!r} is not one of {FAULTS}")


class InputMonitor(Component):
    """Tests every feature's recent values against its reference (module docstring).

    ``recent``: the values tested; ``reference``: the values before them; ``every``: events between
    tests; ``shift``: the least shift of the median, in interquartile ranges; ``factor``: the least
    change of scale; ``order_margin``: how far the recent rank von Neumann ratio must exceed the
    reference's; ``ordered``: the largest stretch ratio still smooth; ``order_memory``: events over
    which the smoothest reference is remembered; ``sparse_order``: the fewest rare values for the
    order test of a feature that is mostly one value (0: none); ``flips``: whether such a feature's
    rare value becoming the rule is ``shifted``. A missing or non-numeric value counts as missing."""

    #: class defaults, for a checkpoint made without them
    ordered = 1.0
    order_memory = 0
    sparse_order = 0
    flips = True
    #: each feature's largest stretch ratio at the reckonings within ``order_memory`` (NaN: none)
    _orders: tuple[np.ndarray, ...] = ()
    #: per feature found phasing in: (the event count until which its phase-in tests wait, what it was)
    _phasing: dict[int, tuple[int, str]] | None = None
    #: the model's loss and the label, as a number, on each event of the ring (NaN: none came with
    #: its event); a checkpoint made without them starts them afresh
    _losses: np.ndarray | None = None
    _pending_losses: list[float] | None = None
    _labels: np.ndarray | None = None
    _pending_labels: list[float] | None = None
    #: per feature that is mostly one value: (that value, the events and values of its latest others)
    _rare: dict[int, tuple[float, np.ndarray, np.ndarray]] | None = None
    #: the event count until which the labels' flips are not tested again (after a finding)
    _labels_quiet_until = 0
    #: the labels' links with the features at the last few tests of them (label_links.Links)
    _label_links: tuple[dict, ...] = ()

    def __init__(self, features: Sequence[str], recent: int = 100, reference: int = 1000, every: int = 25,
                 shift: float = 2.0, factor: float = 20.0, order_margin: float = 0.75, ordered: float = 1.0,
                 order_memory: int = 3000, sparse_order: int = 0, flips: bool = True):
        if recent < 10 or reference < 2 * recent or every < 1:
            raise ValueError(f"input monitor recent={recent}, reference={reference}, every={every}: need recent >= 10, "
                             "reference >= 2 * recent and every >= 1")
        self.features = list(features)
        self.recent = recent
        self.reference = reference
        self.every = every
        self.shift = shift
        self.factor = factor
        self.order_margin = order_margin
        self.ordered = ordered
        self.order_memory = order_memory
        self.sparse_order = sparse_order
        self.flips = flips
        self._reset()

    def _reset(self) -> None:
        size = self.recent + self.reference
        self._values = np.full((len(self.features), size), np.nan)
        self._seqs = np.zeros(size, dtype=np.int64)
        self._losses = np.full(size, np.nan)
        self._labels = np.full(size, np.nan)
        self._n = 0  # events taken in
        self._quiet_until = np.zeros(len(self.features), dtype=np.int64)  # per feature: no test before this
        #: the events since the last test, as taken in: written to the ring of values at each test
        self._pending: list[list[Any]] = []
        self._pending_seqs: list[int] = []
        self._pending_losses = []
        self._pending_labels = []
        self._ref_stats: tuple[np.ndarray, ...] | None = None  # the reference's quartiles, range and order
        self._ref_at = 0  # when they were worked out (events taken in)
        self._orders = ()
        self._phasing = {}
        self._rare = {}
        self._labels_quiet_until = 0
        self._label_links = ()

    def update(self, seq: int, x: dict[str, Any], loss: float | None = None,
               label: float | None = None) -> list[InputFault]:
        """Take in event ``x`` at position ``seq`` (``loss``: the model's loss on it, and
        ``label``: its label as a number, where its label came with it); the faults found now."""
        get = x.get
        self._pending.append([get(f) for f in self.features])
        self._pending_seqs.append(seq)
        if self._pending_losses is None:
            self._pending_losses = [math.nan] * (len(self._pending) - 1)
        self._pending_losses.append(math.nan if loss is None else float(loss))
        if self._pending_labels is None:
            self._pending_labels = [math.nan] * (len(self._pending) - 1)
        self._pending_labels.append(math.nan if label is None else float(label))
        self._n += 1
        if self._n % self.every:
            return []
        self._flush()
        if self._n < self._seqs.shape[0]:
            return []
        return self._test()

    def _flush(self) -> None:
        """Write the events taken in since the last test to the ring of values."""
        rows, seqs, losses, labels = self._pending, self._pending_seqs, self._pending_losses, self._pending_labels
        self._pending, self._pending_seqs, self._pending_losses, self._pending_labels = [], [], [], []
        try:
            block = np.array(rows, dtype=float)
        except (TypeError, ValueError):  # a value that is no number: one by one
            block = np.array([[_number(v) for v in row] for row in rows], dtype=float)
        size = self._seqs.shape[0]
        at = (self._n - len(rows) + np.arange(len(rows))) % size
        self._values[:, at] = block.T
        self._seqs[at] = seqs
        if self._losses is None:
            self._losses = np.full(size, np.nan)
        self._losses[at] = losses
        if self._labels is None:
            self._labels = np.full(size, np.nan)
        self._labels[at] = labels

    # the tests ----------------------------------------------------------------------------
    def _test(self) -> list[InputFault]:
        size = self._seqs.shape[0]
        order = np.roll(np.arange(size), -(self._n % size))  # oldest first
        vals, seqs = self._values[:, order], self._seqs[order]
        losses = self._losses[order]
        ref, rec = vals[:, :self.reference], vals[:, self.reference:]
        due = self._quiet_until <= self._n
        if (self._n - self._ref_at >= _REF_EVERY * self.every or self._ref_stats is None
                or len(self._ref_stats) != 12):  # (a checkpoint made before the links were kept with them)
            # the reference moves little between tests: its statistics are worked out every few
            stretch_order, next_order, whole_order = self._ref_order(ref)
            quartiles = _quartiles(ref, _REFERENCE_QS, with_range=True)
            smoothest = self._smoothest(next_order, quartiles[3] - quartiles[1])
            self._ref_stats, self._ref_at = (*quartiles, stretch_order, smoothest, whole_order,
                                             self._ref_links(vals[:, :size // 2], whole_order),
                                             np.array(_quartiles(vals[:, :size // 2], _REFERENCE_QS))), self._n
        q10, q25, med, q75, q90, lo, hi, stretch_order, smoothest, whole_order, (ranks, links), older = self._ref_stats
        r10, r25, rmed, r75, r90 = _quartiles(rec, _RECENT_QS)
        iqr, riqr = q75 - q25, r75 - r25
        # the rank von Neumann ratio of each feature's recent values (reordered asks for the reference's only above _ORDER_LOST)
        now = _rank_ratio(rec, _TURNS) if not np.isnan(rec).any() else np.zeros(len(self.features))
        found: list[InputFault] = []
        moved: dict[int, str] = {}
        rest: list[int] = []  # features no test of a whole fault found: links lost, faults that phase in
        for j, f in enumerate(self.features):
            if not due[j]:
                continue
            fault = self._constant(j, f, ref[j], rec[j], seqs, med[j], iqr[j])
            if fault is None:
                what = self._moved(rec[j], ref[j], lo[j], hi[j], q10[j], q90[j], med[j], iqr[j], r10[j], rmed[j],
                                   r90[j], riqr[j])
                if what is not None:
                    moved[j] = what
                    continue
                fault = self._reordered(f, vals[j], seqs, med[j], iqr[j], rmed[j], riqr[j], float(now[j]),
                                        float(stretch_order[j]), float(smoothest[j]), older[:, j])
            if fault is not None:
                found.append(fault)
            else:
                rest.append(j)
        unlinked = [j for j in rest if j in links]
        if unlinked:
            found += self._unlinked(unlinked, ranks, links, vals, seqs, med, iqr, rmed, riqr)
        named = {fault.feature for fault in found}
        starts: dict[int, int] = {}  # where each moved feature's fault began (an index into vals)
        partners: dict[int, str] = {}  # the other side of an exchange: the feature whose values it took
        flipped_flags: set[int] = set()  # flags that flipped
        for j in list(moved):
            # where the values left the reference's range, or, where they did not, its 10% tails
            newest = rec[j][-self.recent // 4:]
            left = np.mean((newest > hi[j]) | (newest < lo[j])) >= 0.8
            # a flag that flipped (mostly one value, now mostly another it had): where that one began to be the rule
            flipped = not iqr[j] > 0 and np.mean(ref[j] == rmed[j]) > 0.01
            if flipped:
                flipped_flags.add(j)
            bounds = (med[j], med[j]) if flipped else (lo[j], hi[j]) if left else (q10[j], q90[j])
            at = self.reference + _start_outside(rec[j], *bounds)
            if at == self.reference:  # outside from the first recent value: it began before them
                back = self.reference - self.recent
                at = back + _start_outside(vals[j][back:], *bounds)
            # values that left the whole range: where their level (shifted) or distance from the
            # median (scaled) stepped, around there; within the range, where they crossed the tails
            first = max(0, at - 2 * self.recent)
            around = vals[j][first:at + self.recent]
            if left and len(around) >= 2 and not np.isnan(around).any():
                at = first + change_point(around if moved[j] == "shifted" else np.abs(around - med[j]))
            elif flipped and len(around) >= 2:
                at = first + change_point((around != med[j]).astype(float))
            starts[j] = at  # an index into the reference and the recent values together
            # the other side of an exchange: the nearest feature whose values since then left its
            # range or tails, by less than the shift, and look like those of the feature that moved
            if vals.shape[1] - at < 10 or not iqr[j] > 0:
                continue
            sides = []
            for kk in range(len(self.features)):
                if kk == j or kk in moved or not due[kk]:
                    continue
                o10, o25, omed, o75, o90 = np.percentile(vals[kk][at:], [10, 25, 50, 75, 90])
                left = not lo[kk] <= omed <= hi[kk] or o90 < q10[kk] or o10 > q90[kk]
                # (a spread down to a fiftieth of the other's: a short stretch of a smooth series)
                if left and lo[j] <= omed <= hi[j] and 0.02 <= (o75 - o25) / iqr[j] <= 10.0:
                    sides.append((_unlikeness(omed, o75 - o25, med[j], iqr[j]), kk))
            if sides:
                kk = min(sides)[1]
                moved[kk], starts[kk], partners[kk] = "shifted", at, self.features[j]
        for j, what in moved.items():
            f = self.features[j]
            at = starts[j]
            start = seqs[at]
            tail = vals[j][at:]  # the values since the fault began
            t25, tmed, t75 = np.percentile(tail, [25, 50, 75])
            if what == "shifted" and not _jumped(vals[j], at, abs(tmed - med[j]), ref[j]):
                continue  # a level reached step by step, as a smooth series wanders: no fault's jump
            if j in flipped_flags and foreseen(losses[at:][tail == tmed], losses[:self.reference][ref[j] == tmed]):
                continue  # its other value, now the rule, told of as well as before: the world's (a storm's rain flag)
            before, after = (float(med[j]), float(iqr[j])), (float(tmed), float(t75 - t25))
            like = partners.get(j) or self._like(j, after[0], after[1], med, iqr, lo, hi, moved)
            if len(tail) >= 10 and tail.min() == tail.max():  # one value ever since: stuck, or a default
                if _steps(ref[j]):
                    continue  # a feature that moves in steps (a date) took its next one
                value = float(tail[0])
                what, like, after = "constant", None, (value, 0.0)
                where = "outside its range" if not lo[j] <= value <= hi[j] else "within its range, where it rarely was"
                detail = f"constant at {value:.6g}{' (missing?)' if value == 0.0 else ''} since {start}, {where}"
            elif like is not None:
                what, detail = "swapped", f"values look like {like}'s since {start}"
            else:
                detail = f"{_how(what, before, after)} since {start}"
            found.append(InputFault(f, what, int(seqs[-1]), int(start), before, after,
                                    f"{detail}; {_summary(before, after)}", like))
        # the link with the labels, every _REF_EVERY tests; a feature whose values follow each other
        # only once its newest values lost some of that order, as shuffled ones do (_ORDER_WEAKER)
        label_found: list[InputFault] = []
        if self._labels is not None and (self._n // self.every) % _REF_EVERY == 0:
            # labels flipped weaken every feature's link at once: theirs, not a feature's fault; while
            # labels found flipped are in the values kept, the links tell nothing of a feature
            flipping = self._labels_quiet_until > self._n
            # which features' newest 200 values lost some of the order their reference had
            # (_ORDER_WEAKER, or half-way to the 2 of independent values where that is nearer)
            newest = _rank_ratio(vals[:, -2 * self.recent:], _TURNS)
            order_lost = newest >= whole_order + np.minimum(_ORDER_WEAKER, (2.0 - whole_order) / 2)
            if not found and not flipping:
                skip = {j for j in range(len(self.features)) if not due[j] or j in moved}
                # the features that follow themselves a little and kept that order, which their
                # values shuffled among nearby events lose
                kept = {j for j in range(len(self.features)) if whole_order[j] < _INDEPENDENT and not order_lost[j]}
                label_found = self._labels_flipped(skip, vals, seqs, losses, self._labels[order], whole_order, kept)
            else:
                self._label_links = ()  # the links remembered are those of the tests just before
            subjects = [j for j in rest if self.features[j] not in named
                        and (whole_order[j] >= _INDEPENDENT or order_lost[j])] if not (label_found or flipping) else []
            found += self._label_unlinked(subjects, vals, seqs, losses, self._labels[order], whole_order, med, iqr)
        taken = {self.features.index(fault.feature): fault.start for fault in found}
        candidates = [j for j in range(len(self.features)) if due[j] and j not in taken and j not in moved]
        # look-alike features' exchange shows over more values: every _REF_EVERY tests, halves too
        long = (self._n // self.every) % _REF_EVERY == 0
        for split in (self.reference, size // 2) if long else (self.reference,):
            exchanged = self._exchanged(candidates, taken, vals[:, :split], vals[:, split:], seqs, split, med, iqr,
                                        whole_order)
            if exchanged:
                found += exchanged
                break
        if long:
            named = {self.features.index(fault.feature) for fault in found}
            found += self._crossed([j for j in candidates if j not in named], named, vals, seqs, med, iqr,
                                   whole_order)
        # a fault that phases in, where no other test found one, every _REF_EVERY tests
        named = {fault.feature for fault in found}
        phasing = self._phasing or {}
        for j in rest if long else ():
            if self.features[j] not in named and phasing.get(j, (0, ""))[0] <= self._n:
                fault = self._mixed_in(j, vals[j], seqs, med[j], iqr[j], float(whole_order[j]), older[:, j], losses)
                if fault is None and iqr[j] == 0:
                    fault = self._sparse_scaled(j, vals[j], seqs) or self._scattered(j, vals[j], seqs, med[j], losses)
                if fault is not None:
                    found.append(fault)
        named = {fault.feature for fault in found}
        pool = [j for j in rest if self.features[j] not in named and whole_order[j] >= _INDEPENDENT
                and phasing.get(j, (0, ""))[0] <= self._n]
        if long and len(pool) >= 2:
            found += self._exchange_mixed(pool, vals, seqs, med, iqr)
        # a fault found phasing in is tested again as a whole fault once the recent values are all
        # after the finding, the phase-in tests once the reference is; the same fault found whole
        # as it completes is the one found already
        phasing = dict(self._phasing or {})

        def completing(fault: InputFault) -> bool:
            until, what = phasing.get(self.features.index(fault.feature), (0, ""))
            return not fault.partial and fault.what == what and until > self._n

        found = [fault for fault in found if not completing(fault)]
        for fault in found:
            j = self.features.index(fault.feature)
            self._quiet_until[j] = self._n + (self.recent if fault.partial else self.reference)
            if fault.partial:
                phasing[j] = (self._n + self.reference, fault.what)
            # the order its references had before the finding says nothing of the values after it
            self._orders = tuple(np.where(np.arange(len(self.features)) == j, np.nan, o) for o in self._orders)
        self._phasing = {j: w for j, w in phasing.items() if w[0] > self._n}
        if label_found:
            self._labels_quiet_until = self._n + self.reference
        return found + label_found

    def _exchanged(self, candidates: list[int], found: dict[int, int], ref: np.ndarray, rec: np.ndarray,
                   seqs: np.ndarray, split: int, med: np.ndarray, iqr: np.ndarray,
                   whole_order: np.ndarray) -> list[InputFault]:
        """The ``candidates`` whose values were exchanged with another feature's within their
        common range: each one's recent values differ from its own reference (Kolmogorov-Smirnov,
        ``_KS_DIFFER``) and agree with the other's (``_KS_AGREE``). Only features whose values are about
        independent of each other (``_INDEPENDENT``) are read."""
        pool = [j for j in [*candidates, *found] if not (np.isnan(rec[j]).any() or np.isnan(ref[j]).any())]
        if not candidates or len(pool) < 2:
            return []
        scale = math.sqrt((rec.shape[1] + ref.shape[1]) / (rec.shape[1] * ref.shape[1]))
        refs = {j: np.sort(ref[j]) for j in pool}
        recs = {j: np.sort(rec[j]) for j in pool}
        moved = [j for j in pool if _ks(recs[j], refs[j]) >= _KS_DIFFER * scale]
        if len(moved) < 2 or not set(moved) & set(candidates):
            return []
        # values that follow one another are no sample of their distribution: their recent values
        # differ from the reference as the series wanders, and may look like another's by chance
        moved = [j for j in moved if whole_order[j] >= _INDEPENDENT]
        out: list[InputFault] = []
        done = set(found)
        for a, j in enumerate(moved):
            for k in moved[a + 1:]:
                if {j, k} <= done or (j in done and j not in found) or (k in done and k not in found):
                    continue
                if _ks(recs[j], refs[k]) <= _KS_AGREE * scale and _ks(recs[k], refs[j]) <= _KS_AGREE * scale:
                    start = found.get(j, found.get(k, int(seqs[split])))
                    for one, other in ((j, k), (k, j)):
                        if one in found:
                            continue
                        done.add(one)
                        out.append(self._swapped(one, other, rec[one], start, seqs, med, iqr,
                                                 f"values look like {self.features[other]}'s, and its like this "
                                                 f"one's, since about {start}"))
        return out

    def _crossed(self, candidates: list[int], named: set[int], vals: np.ndarray, seqs: np.ndarray,
                 med: np.ndarray, iqr: np.ndarray, whole_order: np.ndarray) -> list[InputFault]:
        """Two smooth features that kept an order (``_ABOVE``) exchanged within their common
        range: the order flipped at a jump of their difference (:func:`_jumped`), each one's new level
        nearer the level the other left than its own. Series that wander cross step by step."""
        ref_n, k = self.reference, self.recent
        smooth = [j for j in range(len(self.features)) if whole_order[j] < _INDEPENDENT and iqr[j] > 0
                  and not np.isnan(vals[j]).any()]
        out: list[InputFault] = []
        done: set[int] = set()
        newest = np.median(vals[:, -k // 2:], axis=1)  # a pair whose medians kept their order is passed over
        for j in candidates:
            if j not in smooth or j in done:
                continue
            for o in smooth:
                if o == j or o in done or (med[j] - med[o]) * (newest[j] - newest[o]) >= 0:
                    continue
                diff = vals[j] - vals[o]
                d = float(np.median(diff[:ref_n]))
                tail = diff[-2 * k:]
                if d == 0.0 or float(np.median(tail[-k // 2:])) * d >= 0:
                    continue
                if np.mean(diff[:ref_n] * d > 0) < _ABOVE:
                    continue  # no order the two keep: series that cross each other now and then
                at = len(diff) - 2 * k + change_point(tail)
                if at < _STEP or len(diff) - at < 2 * _STEP:
                    continue
                since, before = float(np.median(diff[at:])), float(np.median(diff[max(0, at - k):at]))
                if before * d <= 0 or since * d >= 0 or abs(since) < 0.5 * abs(before):
                    continue
                if not _jumped(diff, at, abs(before), diff[:ref_n]):
                    continue
                bj, aj = np.median(vals[j][at - _STEP:at]), np.median(vals[j][at:at + _STEP])
                bo, ao = np.median(vals[o][at - _STEP:at]), np.median(vals[o][at:at + _STEP])
                if abs(aj - bo) >= abs(aj - bj) or abs(ao - bj) >= abs(ao - bo):
                    continue
                start = int(seqs[at])
                for one, other in ((j, o), (o, j)):
                    if one in named:
                        continue
                    side = "below" if (d < 0) == (one == j) else "above"
                    out.append(self._swapped(one, other, vals[one][at:], start, seqs, med, iqr,
                                             f"values look like {self.features[other]}'s since {start}: it lay "
                                             f"{side} {self.features[other]} and crossed it at a jump"))
                done |= {j, o}
                break
        return out

    def _swapped(self, one: int, other: int, since: np.ndarray, start: int, seqs: np.ndarray, med: np.ndarray,
                 iqr: np.ndarray, detail: str) -> InputFault:
        """Feature ``one`` swapped with ``other`` since ``start``, its values since then ``since``."""
        q25, qmed, q75 = np.percentile(since, [25, 50, 75])
        b, after = (float(med[one]), float(iqr[one])), (float(qmed), float(q75 - q25))
        return InputFault(self.features[one], "swapped", int(seqs[-1]), start, b, after,
                          f"{detail}; {_summary(b, after)}", self.features[other])

    def _constant(self, j: int, f: str, ref: np.ndarray, rec: np.ndarray, seqs: np.ndarray, med: float,
                  iqr: float) -> InputFault | None:
        missing = np.isnan(rec)
        if missing.all():
            if np.isnan(ref).mean() > 0.5:
                return None
            value = None
        elif missing.any() or rec.min() != rec.max():
            return None
        else:
            value = float(rec[0])
        if _longest_run(ref) * 2 >= self.recent:
            return None
        full = np.concatenate([ref, rec])
        run = _longest_run(full[::-1], from_start=True)
        share = np.isnan(ref).mean() if value is None else np.mean(ref == value)
        if share > 0 and run * math.log(share) > math.log(_RUN_CHANCE):
            return None  # a value that common makes a run this long by chance (a flag that is rarely set)
        start = int(seqs[len(full) - run])
        said = "missing" if value is None else f"constant at {value:.6g}"
        hint = " (missing?)" if value == 0.0 else ""
        before = (float(med), float(iqr))
        return InputFault(f, "constant", int(seqs[-1]), start, before, (math.nan if value is None else value, 0.0),
                          f"{said} since {start}{hint}; before: median {med:.3g}, IQR {iqr:.3g}")

    def _moved(self, rec: np.ndarray, ref: np.ndarray, lo: float, hi: float, q10: float, q90: float, med: float,
               iqr: float, r10: float, rmed: float, r90: float, riqr: float) -> str | None:
        if not (np.isfinite(rmed) and np.isfinite(med)):
            return None
        if not iqr > 0:
            # a feature that is mostly one value: moved when most recent values are another one, which
            # the reference held once in a hundred at most, or _FLIPPED less in every stretch (a flag)
            share = np.mean(rec == rmed)
            if riqr == 0 and rmed != med and share >= 0.5 and not _steps(ref) and (
                    np.mean(ref == rmed) <= 0.01
                    or self.flips and share - _most_in_stretch(ref == rmed, len(rec)) / len(rec) >= _FLIPPED):
                return "scaled" if self._rescaled(med, rmed) else "shifted"
            return None
        # the median beyond the whole reference, or nine tenths of the values beyond its 10% tails,
        # ``shift`` interquartile ranges from its median; or half of that, where the median lies
        # ``_BEYOND`` of one beyond the whole range (an offset as a front takes a dewpoint back)
        beyond = rmed > hi or rmed < lo or r10 > q90 or r90 < q10
        if (beyond and abs(rmed - med) >= self.shift * iqr) or (
                max(rmed - hi, lo - rmed) >= _BEYOND * iqr and abs(rmed - med) >= self.shift / 2 * iqr):
            spread = riqr / iqr
            scaled = self._rescaled(med, rmed) or not 1 / self.factor < spread < self.factor
            return "scaled" if scaled else "shifted"
        out = (rec > hi) | (rec < lo)
        outside = np.mean(out)
        if riqr >= self.factor * iqr and outside >= 0.5:
            return "scaled"
        if riqr >= self.factor * iqr and outside >= 0.25:
            # a share of the values (those not 0, say) in a unit ``factor`` times larger
            reach = max(hi - med, med - lo)
            if reach > 0 and np.median(np.abs(rec[out] - med)) >= self.factor * reach:
                return "scaled"
        return None

    def _rescaled(self, med: float, rmed: float) -> bool:
        """Whether the median moved from ``med`` to ``rmed`` by a factor of ``factor`` at least, on one side of 0."""
        ratio = abs(rmed / med) if med != 0 else math.inf
        return rmed * med > 0 and not 1 / self.factor < ratio < self.factor

    def _ref_order(self, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each feature's largest rank von Neumann ratio over the ``recent``-long stretches of
        its reference, of values 1 to ``_TURNS`` apart and of neighbours alone, and the ratio of its
        whole reference (NaN for a feature with missing values). The remembered references keep the
        neighbours' ratio: sources that take turns in a narrow band have noise for order between turns."""
        k, (n_features, n) = self.recent, ref.shape
        stretches = ref[:, n % k:].reshape(-1, k)
        by_stretch = _rank_ratio(stretches, _TURNS).reshape(n_features, -1).max(axis=1)
        neighbours = _rank_ratio(stretches).reshape(n_features, -1).max(axis=1)
        whole = _rank_ratio(ref, _TURNS)
        missing = np.isnan(ref).any(axis=1)
        by_stretch[missing] = neighbours[missing] = whole[missing] = np.nan
        return by_stretch, neighbours, whole

    def _smoothest(self, order: np.ndarray, iqr: np.ndarray) -> np.ndarray:
        """Each feature's largest stretch ratio (``order``), or the least one its references
        had over the last ``order_memory`` events where that is less: a fault that phases in mixes into
        the reference too. References without spread, or from before a finding, are not remembered."""
        keep = self.order_memory // (_REF_EVERY * self.every)
        if keep < 1:
            return order
        self._orders = (*self._orders, np.where((iqr > 0) & (self._quiet_until <= self._n), order, np.nan))[-keep:]
        past = np.stack(self._orders)
        least = np.where(np.isnan(past), np.inf, past).min(axis=0)
        return np.where(least < order, least, order)  # NaN stays NaN: a reference with missing values

    def _reordered(self, f: str, values: np.ndarray, seqs: np.ndarray, med: float, iqr: float, rmed: float,
                   riqr: float, now: float, current: float, least: float, older: np.ndarray) -> InputFault | None:
        """Order lost against the current reference (its largest stretch ratio ``current``)
        or against the smoothest remembered (``least``); against the latter alone only where the odd
        values are not one value or beyond the bulk (:meth:`_odd_values`), which the phase-in tests name."""
        ref = values[:self.reference]
        if now < _ORDER_LOST or np.isnan(ref).any():
            return None
        if not iqr > 0 and not self._sparse_ordered(values, med):
            return None  # values that varied: a feature that starts to vary is no fault

        def lost(smooth: float) -> bool:
            if smooth <= self.ordered:
                return now >= min(smooth, 1.0) + self.order_margin
            # a reference a little more volatile than smooth: the whole margin above its own ratio
            return smooth <= self.ordered + _ORDER_SLACK and now >= smooth + self.order_margin

        if lost(current):
            was = current
        elif lost(least) and not self._odd_values(values, older):
            was = least
        else:
            return None
        k = self.recent
        start = int(seqs[self.reference + k // 2])
        b, a = (float(med), float(iqr)), (float(rmed), float(riqr))
        return InputFault(f, "reordered", int(seqs[-1]), start, b, a,
                          f"order lost since about {start}: successive values no longer follow each other, as values "
                          f"shuffled between events or mixed with other values do (rank von Neumann ratio {was:.2f} "
                          f"at most before, {now:.2f} now); {_summary(b, a)}")

    def _sparse_ordered(self, values: np.ndarray, mode: float) -> bool:
        """Whether a feature that is mostly ``mode`` has an order to lose: ``sparse_order``
        of its recent values and of its reference's are other values."""
        if not self.sparse_order:
            return False
        ref, rec = values[:self.reference], values[self.reference:]
        return bool(np.count_nonzero(rec != mode) >= self.sparse_order
                    and np.count_nonzero(ref != mode) >= self.sparse_order)

    def _odd_values(self, values: np.ndarray, older: np.ndarray) -> bool:
        """Whether a share ``_ODD`` of the recent values is one value that no stretch of the
        older half held half as often, or lies beyond that half's bulk: a fault phasing in."""
        k = self.recent
        rec, old = values[-k:], values[:len(values) // 2]
        common, counts = np.unique(rec, return_counts=True)
        top = int(counts.max())
        if top >= _ODD * k:
            same = old == common[counts.argmax()]
            if top >= 2 * same[len(old) % k:].reshape(-1, k).sum(axis=1).max():
                return True
        q10, q25, _, q75, q90 = older
        wide = 1.5 * ((q75 - q25) or (q90 - q10))
        return bool(np.mean((rec < q10 - wide) | (rec > q90 + wide)) >= _ODD)

    def _mixed_in(self, j: int, values: np.ndarray, seqs: np.ndarray, med: float, iqr: float,
                  whole_order: float, older: np.ndarray, losses: np.ndarray) -> InputFault | None:
        """A fault that phases in, its values mixed with the feature's own, against the older
        half of the values kept: a share ``_MIXED`` of the recent values is one value (``constant``,
        ``_MIXED_MARGIN`` more than any older stretch held, spread among the others) or lies beyond the
        older half's bulk (``shifted``, or ``scaled`` when ``factor`` times as far), with half that share
        in the ``recent`` values before. On a smooth series the odd values must also interleave with the
        others (:func:`_mixed`). Odd values the model predicted as well as the usual ones (``losses``,
        :func:`~.label_links.foreseen`) are the world's."""
        k = self.recent
        smooth = whole_order < _INDEPENDENT  # (NaN, missing values in the reference: as independent ones)
        old, span = values[:len(values) // 2], values[-2 * k:]
        what = None
        recent_losses, old_losses = losses[-2 * k:], losses[:len(old)]
        common, counts = np.unique(span[k:], return_counts=True)  # (missing values: one value)
        for value, count in zip(common[counts >= _MIXED * k].tolist(), counts[counts >= _MIXED * k].tolist(),
                                strict=True):
            odd = np.isnan(span) if math.isnan(value) else span == value
            same = np.isnan(old) if math.isnan(value) else old == value
            most = _most_in_stretch(same, k)
            # spread among the other values, not a run of them
            if (count >= most + _MIXED_MARGIN * k and odd[:k].sum() >= most + _MIXED_MARGIN * k / 2
                    and _longest_run(np.where(odd[k:], 0.0, np.arange(k, dtype=float))) <= count // 4
                    and (not smooth or _mixed(odd[k:], span[k:], older))):
                if foreseen(recent_losses[odd], old_losses[same]):
                    return None  # that value told of as well as before: the world's (a steady wind, a stormy evening)
                what = "constant"
                break
        if what is None and not np.isnan(values).any():
            # fences from the bulk of the older half (its range may hold the fault's first values)
            q10, q25, centre, q75, q90 = older  # the older half's percentiles _REFERENCE_QS
            wide = 1.5 * ((q75 - q25) or (q90 - q10))
            lo, hi = q10 - wide, q90 + wide
            above, below = span > hi, span < lo
            odd = above if above[k:].sum() >= below[k:].sum() else below
            if (wide > 0 and odd[k:].mean() >= _MIXED and odd[:k].mean() >= _MIXED / 2
                    and (not smooth or _mixed(odd[k:], span[k:], older))):
                reach = max(hi - centre, centre - lo)
                far = reach > 0 and np.median(np.abs(span[odd] - centre)) >= self.factor * reach
                what = "scaled" if far else "shifted"
        if what is None or (what == "shifted" and foreseen(recent_losses[odd], recent_losses[~odd])):
            return None  # (values scaled by a factor lie beyond any evening's: their unit changed)
        at = change_point(odd.astype(float))
        start = int(seqs[len(values) - 2 * k + at])
        share = float(odd[k:].mean())
        b = (float(med), float(iqr))
        if what == "constant":
            said = "missing" if math.isnan(value) else f"at {value:.6g}{' (missing?)' if value == 0.0 else ''}"
            after = (value, 0.0)
            detail = (f"constant in part since about {start}: {share:.0%} of the newest {k} values {said}, where "
                      f"no {k} before had more than {most} of it, as a stuck source or a default for missing values "
                      "phasing in does")
        else:
            t25, tmed, t75 = np.percentile(span[odd], [25, 50, 75])
            after = (float(tmed), float(t75 - t25))
            detail = (f"{_how(what, b, after)} in part since about {start}: {share:.0%} of the newest {k} values lie "
                      f"far beyond the bulk of the {len(old)} before, as a fault phasing in does")
        return InputFault(self.features[j], what, int(seqs[-1]), start, b, after, f"{detail}; {_summary(b, after)}",
                          partial=True)

    def _scattered(self, j: int, values: np.ndarray, seqs: np.ndarray, mode: float,
                   losses: np.ndarray) -> InputFault | None:
        """Values shuffled between events, on a feature that is mostly ``mode`` and whose other
        values come in runs (:data:`_CLUSTERED`, :func:`_nearness`): the newest ``2 * recent`` other
        values lie about as a random placement puts them, and the model predicts their events worse
        than the other values' events before (:func:`~.label_links.predicted_worse`)."""
        span = 2 * self.recent
        if np.isnan(values).any() or len(values) < 3 * span:
            return None
        rare = values != mode
        now, count = _nearness(rare[-span:])
        if count < _RUNS_FEWEST or now > _SCATTERED:
            return None
        ref = rare[:-span]
        stretches = [_nearness(ref[at:at + span]) for at in range(len(ref) % self.recent, len(ref) - span + 1,
                                                                    self.recent)]
        clustered = [r for r, n in stretches if n >= _RUNS_FEWEST]
        if len(clustered) < 2 or float(np.median(clustered)) < _CLUSTERED:
            return None  # (the median: the fault's first values enter the reference too)
        if not predicted_worse(losses[-span:][rare[-span:]], losses[:-span][ref]):
            return None  # their events told of as well as before: the world's scattered showers
        start = int(seqs[len(values) - span])
        f, b = self.features[j], (float(mode), 0.0)
        detail = (f"order lost since about {start}: its values other than {mode:.6g} no longer come in runs ({count} of "
                  f"the newest {span} have {now:.1f} times the neighbours within {_RUNS_NEAR} events that as many "
                  f"placed at random have, where {span} before had {np.median(clustered):.1f} times at the median), as "
                  "values shuffled between events (or labels flipped at random) leave them")
        return InputFault(f, "reordered", int(seqs[-1]), start, b, b, detail)

    def _sparse_scaled(self, j: int, values: np.ndarray, seqs: np.ndarray) -> InputFault | None:
        """A unit that changed on a feature that is mostly one value (an amount, rainfall):
        from the first of its other values in the newer half that lies beyond all those remembered
        (:meth:`_remember`), nine tenths lie ``factor`` times as far from the mode at the median (or
        nearer by as much): a season's larger values overlap its smaller ones, a unit's do not."""
        if np.isnan(values).any():
            return None
        half = len(values) // 2
        old, new = values[:half], values[half:]
        common, counts = np.unique(old, return_counts=True)
        mode = float(common[counts.argmax()])
        at, was = self._remember(j, mode, values, seqs)
        if _steps(values):
            return None  # (a feature that moves in steps, a date, has no unit to change)
        far_old = np.abs(was[at < seqs[half]] - mode)
        rare = np.flatnonzero(new != mode)
        far_new = np.abs(new[rare] - mode)
        if len(far_old) < _SPARSE or len(far_new) < _SPARSE_NEW:
            return None
        up, down = far_new > far_old.max(), far_new < far_old.min()
        larger = up.sum() >= down.sum()
        beyond = up if larger else down
        if not beyond.any():
            return None
        first = int(np.argmax(beyond))
        far_new, beyond = far_new[first:], beyond[first:]
        ratio = float(np.median(far_new) / np.median(far_old))
        if (len(far_new) < _SPARSE_NEW or beyond.mean() < 0.9
                or not (ratio >= self.factor if larger else ratio <= 1 / self.factor)):
            return None
        start = int(seqs[half + rare[first]])
        b = (mode, float(np.median(far_old)))
        after = (mode, float(np.median(far_new)))
        return InputFault(self.features[j], "scaled", int(seqs[-1]), start, b, after,
                          f"scaled about x{ratio:.3g} since about {start}: its values other than {mode:.6g} lie "
                          f"{ratio:.3g} times as far from it as the {len(far_old)} before "
                          f"(median distance {b[1]:.3g} -> {after[1]:.3g}), as a unit that changed does")

    def _remember(self, j: int, mode: float, values: np.ndarray, seqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The events and values other than ``mode`` of feature ``j`` remembered, the latest
        ``_RARE_MEMORY``, with those among its ``values`` kept (at events ``seqs``) taken in."""
        if self._rare is None:
            self._rare = {}
        held, at, was = self._rare.get(j, (mode, np.zeros(0, dtype=np.int64), np.zeros(0)))
        if held != mode:  # another most common value: the ones remembered were other values of another
            at, was = np.zeros(0, dtype=np.int64), np.zeros(0)
        last = int(at[-1]) if len(at) else -1
        new = (values != mode) & (seqs > last)
        at = np.concatenate([at, seqs[new]])[-_RARE_MEMORY:]
        was = np.concatenate([was, values[new]])[-_RARE_MEMORY:]
        self._rare[j] = (mode, at, was)
        return at, was

    def _exchange_mixed(self, pool: list[int], vals: np.ndarray, seqs: np.ndarray, med: np.ndarray,
                        iqr: np.ndarray) -> list[InputFault]:
        """Two features of the ``pool`` whose values an exchange that phases in mixes: each
        one's recent values differ from its older half (``_KS_DIFFER``) and match, within ``_KS_AGREE``,
        that half mixed with a share of at least ``_MIXED`` of the other's, the two shares within 0.25."""
        k, half = self.recent, vals.shape[1] // 2
        scale = math.sqrt((k + half) / (k * half))
        old = {j: np.sort(vals[j, :half]) for j in pool}
        rec = {j: np.sort(vals[j, -k:]) for j in pool}
        moved = [j for j in pool if not (np.isnan(old[j]).any() or np.isnan(rec[j]).any())
                 and _ks(rec[j], old[j]) >= _KS_DIFFER * scale]
        shares = np.linspace(0.0, 1.0, 21)
        out: list[InputFault] = []
        done: set[int] = set()
        for a, j in enumerate(moved):
            for g in moved[a + 1:]:
                if j in done or g in done:
                    continue
                at = np.concatenate([old[j], old[g], rec[j], rec[g]])
                cdf = {i: np.searchsorted(old[i], at, side="right") / half for i in (j, g)}
                fits = []
                for one, other in ((j, g), (g, j)):
                    mix = (1 - shares[:, None]) * cdf[one] + shares[:, None] * cdf[other]  # (shares, points)
                    for values in (rec[one], np.sort(vals[one, -2 * k:-k])):  # the recent values, those before
                        gaps = np.abs(mix - np.searchsorted(values, at, side="right") / k).max(axis=1)
                        best = int(np.argmin(gaps))
                        fits.append((float(shares[best]), float(gaps[best])))
                (pj, ej), (pj0, _), (pg, eg), (pg0, _) = fits
                if (min(pj, pg) >= _MIXED and abs(pj - pg) <= 0.25 and max(ej, eg) <= _KS_AGREE * scale
                        and min(pj0, pg0) >= _MIXED / 2):
                    # it grew over the values kept, from a share too small to tell: it began after
                    # the first of them, which is where the model's reliance is read before it
                    start = int(seqs[0])
                    for one, other, share in ((j, g, pj), (g, j, pg)):
                        done.add(one)
                        out.append(self._swapped(
                            one, other, vals[one, -k:], start, seqs, med, iqr,
                            f"about {share:.0%} of the newest {k} values look like {self.features[other]}'s, and "
                            f"as many of its like this one's: an exchange phasing in, begun after {start}"))
        return out

    def _ref_links(self, older: np.ndarray, whole_order: np.ndarray) -> tuple[dict, dict]:
        """Each feature's sorted values in ``older`` (its ranks) and, for features whose values are
        about independent, its links: ``(other, sign, least signed rank correlation of a stretch)`` for
        each feature it moved with by at least ``_LINKED`` in every stretch."""
        k, (n_features, n) = self.recent, older.shape
        usable = [j for j in range(n_features) if not np.isnan(older[j]).any() and older[j].min() < older[j].max()]
        if len(usable) < 2 or not any(whole_order[j] >= _INDEPENDENT for j in usable):
            return {}, {}
        sorted_ref = {j: np.sort(older[j]) for j in usable}
        u = np.array([midranks(sorted_ref[j], older[j]) for j in usable])  # (usable, n)
        z = u[:, n % k:].reshape(len(usable), -1, k).transpose(1, 0, 2)  # (stretch, usable, k)
        z = z - z.mean(axis=2, keepdims=True)
        with np.errstate(all="ignore"):
            z /= np.sqrt((z * z).sum(axis=2, keepdims=True))
            by_stretch = z @ z.transpose(0, 2, 1)  # (stretch, usable, usable): rank correlations
        sign = np.sign(np.nan_to_num(by_stretch.sum(axis=0)))
        least = np.nan_to_num(by_stretch * sign, nan=-1.0).min(axis=0)  # a stretch without spread: no link
        links = {}
        for a, j in enumerate(usable):
            linked = [(usable[b], float(sign[a, b]), float(least[a, b])) for b in range(len(usable))
                      if b != a and least[a, b] >= _LINKED]
            if linked and whole_order[j] >= _INDEPENDENT:
                links[j] = linked
        return sorted_ref, links

    def _unlinked(self, subjects: list[int], ranks: dict, links: dict, vals: np.ndarray, seqs: np.ndarray,
                  med: np.ndarray, iqr: np.ndarray, rmed: np.ndarray, riqr: np.ndarray) -> list[InputFault]:
        """The ``subjects`` whose values lost every link to the features linked to them
        (``_LINK_LOST``, ``_LINK_MARGIN`` below the least older stretch), unless those features lost more
        links: then the values that moved are theirs."""
        rec = vals[:, self.reference:]
        needed = sorted(set(links) | {o for j in links for o, _, _ in links[j]})
        needed = [j for j in needed if not np.isnan(rec[j]).any()]
        at = {j: i for i, j in enumerate(needed)}
        u = np.array([midranks(ranks[j], rec[j]) for j in needed])
        z = u - u.mean(axis=1, keepdims=True)
        with np.errstate(all="ignore"):  # stuck values (no spread): no correlation, the other tests say so
            z /= np.sqrt((z * z).sum(axis=1, keepdims=True))
            now = z @ z.T
        # every linked feature's links that weakened by _LINK_MARGIN at least
        weakened = {j: sum(j in at and o in at and s * now[at[j], at[o]] <= least - _LINK_MARGIN
                           for o, s, least in links[j]) for j in links}
        out = []
        for j in subjects:
            lost = [(o, s, least, s * now[at[j], at[o]]) for o, s, least in links[j]
                    if j in at and o in at and s * now[at[j], at[o]] <= min(_LINK_LOST, least - _LINK_MARGIN)]
            # (a feature whose values follow each other has no links of its own to weigh)
            if len(lost) < len(links[j]) or all(weakened.get(o, 0) > len(lost) for o, *_ in lost):
                continue  # it lost links only to features that lost more: their values moved
            # where the links were lost: the change point of the signed products of centred ranks
            span = vals[:, -2 * self.recent:]
            wj = midranks(ranks[j], span[j]) - 0.5
            prod = np.mean([s * wj * (midranks(ranks[o], span[o]) - 0.5) for o, s, _, _ in lost], axis=0)
            start = int(seqs[vals.shape[1] - 2 * self.recent + change_point(prod)])
            b, a = (float(med[j]), float(iqr[j])), (float(rmed[j]), float(riqr[j]))
            names = ", ".join(f"{self.features[o]}'s ({least:.2f} at least before, {c:.2f} now)" for o, _, least, c in lost)
            out.append(InputFault(self.features[j], "reordered", int(seqs[-1]), start, b, a,
                                  f"its values no longer go with the rest of their event since about {start}, as "
                                  f"values shuffled between events or joined on a wrong key do: rank correlation "
                                  f"with {names}; {_summary(b, a)}"))
        return out

    def _label_unlinked(self, subjects: list[int], vals: np.ndarray, seqs: np.ndarray, losses: np.ndarray,
                        labels: np.ndarray, whole_order: np.ndarray, med: np.ndarray,
                        iqr: np.ndarray) -> list[InputFault]:
        """The ``subjects`` whose values no longer go with their events' labels
        (:func:`~.label_links.label_unlinked`), ``reordered``."""
        out = []
        for j, at, before, least, now in label_unlinked(vals, labels, losses, subjects, self.recent, whole_order):
            tail = vals[j][at:]
            t25, tmed, t75 = np.percentile(tail, [25, 50, 75])
            b, a = (float(med[j]), float(iqr[j])), (float(tmed), float(t75 - t25))
            start = int(seqs[at])
            out.append(InputFault(self.features[j], "reordered", int(seqs[-1]), start, b, a,
                                  f"its values no longer go with their events' labels since about {start}, as values "
                                  f"shuffled between events or joined on a wrong key do: rank correlation with the "
                                  f"labels {before:.2f} before (at least {least:.2f} in every {2 * self.recent} "
                                  f"events), {now:.2f} now; {_summary(b, a)}"))
        return out

    def _labels_flipped(self, skip: set[int], vals: np.ndarray, seqs: np.ndarray, losses: np.ndarray,
                        labels: np.ndarray, serial: np.ndarray, kept: set[int]) -> list[InputFault]:
        """The labels, ``reordered``, where they no longer go with the features they went with
        (:func:`~.label_links.labels_flipped`, which reads the links of the last ``_LINKS_KEPT``
        references too; ``kept``: the features that follow themselves a little and kept that order)."""
        flipped, links = labels_flipped(vals, labels, losses, self.recent, skip, self._label_links, serial, kept)
        self._label_links = (*self._label_links, links)[-_LINKS_KEPT:]
        if flipped is None:
            return []
        at, links = flipped
        start, k = int(seqs[at]), 2 * self.recent
        ref, rec = labels[:-k], labels[-k:]
        b, a = (float(np.median(ref)), 0.0), (float(np.median(rec)), 0.0)
        told = ", ".join(f"{self.features[j]} {whole:.2f} before (at least {least:.2f} in every {k} events), "
                         f"{now:.2f} now" for j, whole, least, now in links)
        return [InputFault(LABEL, "reordered", int(seqs[-1]), start, b, a,
                           f"labels no longer go with the features they went with since about {start}, and the model "
                           f"predicts them worse, as labels flipped for a share of the events leave them: rank "
                           f"correlation with {told}")]

    def _like(self, j: int, rmed: float, riqr: float, med: np.ndarray, iqr: np.ndarray, lo: np.ndarray,
              hi: np.ndarray, moved: dict[int, str]) -> str | None:
        """The other feature whose reference the values of ``j`` since its fault look like, if
        one does: within its range, a spread within a factor 10 of its, the nearest by :func:`_unlikeness`
        (halved for a feature that moved too: an exchange)."""
        best = None
        for g in range(len(self.features)):
            if g == j or not iqr[g] > 0 or not lo[g] <= rmed <= hi[g]:
                continue
            if not 0.1 <= riqr / iqr[g] <= 10.0:
                continue
            d = _unlikeness(rmed, riqr, med[g], iqr[g])
            if g in moved:  # its values left too: the two were exchanged
                d /= 2
            if best is None or d < best[0]:
                best = (d, self.features[g])
        return None if best is None else best[1]


def _quartiles(a: np.ndarray, qs: tuple[int, ...], with_range: bool = False) -> tuple[np.ndarray, ...]:
    """Each row's percentiles ``qs`` (and its least and largest value), missing values left out
    (NaN for a row all missing)."""
    if not np.isnan(a).any():
        q = tuple(np.percentile(a, qs, axis=1))
        return (*q, a.min(axis=1), a.max(axis=1)) if with_range else q
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a row all missing: its quantiles are NaN
        q = tuple(np.nanpercentile(a, qs, axis=1))
        return (*q, np.nanmin(a, axis=1), np.nanmax(a, axis=1)) if with_range else q


def _mixed(odd: np.ndarray, values: np.ndarray, older: np.ndarray) -> bool:
    """Whether the ``odd`` ones of a smooth series' ``values`` are mixed into the others: they make
    as many runs as values placed at random would (``_INTERLEAVED``), and the others' median lies
    within the 10% tails (``older``: the percentiles ``_REFERENCE_QS`` of the values before)."""
    q10, _, _, _, q90 = older
    rest = values[~odd]
    n, n1 = len(odd), int(odd.sum())
    n2 = n - n1
    runs = np.count_nonzero(np.diff(odd.astype(np.int8))) + 1
    mean = 2.0 * n1 * n2 / n + 1.0
    sd = math.sqrt(max(0.0, 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1.0))))
    return (runs >= mean - _INTERLEAVED * sd and len(rest) > 0
            and q10 <= float(np.median(rest)) <= q90)


def _number(v: Any) -> float:
    if isinstance(v, bool) or v is None:
        return math.nan if v is None else float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _unlikeness(median: float, iqr: float, ref_median: float, ref_iqr: float) -> float:
    """How far values of ``median`` and interquartile range ``iqr`` are from a reference's: the
    medians' distance in the reference's interquartile ranges plus the log of the spreads' ratio."""
    return abs(median - ref_median) / ref_iqr + abs(math.log(max(iqr, 1e-300) / ref_iqr))


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov distance of sorted samples ``a`` and ``b``."""
    both = np.concatenate([a, b])
    return float(np.max(np.abs(np.searchsorted(a, both, side="right") / len(a)
                               - np.searchsorted(b, both, side="right") / len(b))))


def _longest_run(a: np.ndarray, from_start: bool = False) -> int:
    """The longest run of equal values in ``a`` (NaNs equal to each other); ``from_start``: the
    run that starts at ``a[0]``."""
    if len(a) == 0:
        return 0
    nan = np.isnan(a)
    same = (a[1:] == a[:-1]) | (nan[1:] & nan[:-1])
    breaks = np.flatnonzero(~same)
    if from_start:
        return int(breaks[0]) + 1 if len(breaks) else len(a)
    edges = np.concatenate([[-1], breaks, [len(a) - 1]])
    return int(np.diff(edges).max())


def _nearness(hits: np.ndarray) -> tuple[float, int]:
    """How many pairs of ``hits`` lie within ``_RUNS_NEAR`` events of each other, as a multiple of
    the pairs as many hits placed at random make, and the number of hits (NaN for fewer than two)."""
    at, n = np.flatnonzero(hits), len(hits)
    k = len(at)
    if k < 2:
        return math.nan, k
    near = int((np.searchsorted(at, at + _RUNS_NEAR, side="right") - np.arange(1, k + 1)).sum())
    expected = k * (k - 1) / 2 * (2 * _RUNS_NEAR * n - _RUNS_NEAR * (_RUNS_NEAR + 1)) / (n * (n - 1))
    return near / expected, k


def _most_in_stretch(hits: np.ndarray, k: int) -> int:
    """The most ``hits`` in a ``k``-long stretch of them (stretches from the newest back; ``k`` at
    most their number)."""
    return int(hits[len(hits) % k:].reshape(-1, k).sum(axis=1).max())


def _steps(a: np.ndarray) -> bool:
    """Whether ``a`` changes value twice at most: a feature that moves in steps and rests at each,
    as a date does in a stream of many events a day (its next step is no fault)."""
    return int(np.count_nonzero(a[1:] != a[:-1])) <= 2


def _rank_ratio(rows: np.ndarray, lags: int = 1) -> np.ndarray:
    """The rank von Neumann ratio of each row (about 2 without serial dependence, 0 for one
    value; ties share their mean rank); with ``lags`` > 1, the least ratio of values 1 to ``lags`` apart."""
    ranks = _row_ranks(rows)
    msd = np.min([np.mean((ranks[:, k:] - ranks[:, :-k]) ** 2, axis=1) for k in range(1, lags + 1)], axis=0)
    var = ranks.var(axis=1)
    with np.errstate(all="ignore"):
        return np.where(var > 0, msd / np.where(var > 0, var, 1.0), 0.0)


def _row_ranks(rows: np.ndarray) -> np.ndarray:
    """Each row's ranks, tied values sharing the mean of theirs."""
    n = rows.shape[1]
    order = np.argsort(rows, axis=1, kind="stable")
    s = np.take_along_axis(rows, order, axis=1)
    first = np.ones(s.shape, dtype=bool)  # where a run of equal values starts
    first[:, 1:] = s[:, 1:] != s[:, :-1]
    last = np.ones(s.shape, dtype=bool)
    last[:, :-1] = first[:, 1:]
    idx = np.arange(n)
    start = np.maximum.accumulate(np.where(first, idx, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, idx, n - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(s.shape)
    np.put_along_axis(ranks, order, (start + end) / 2.0, axis=1)
    return ranks


_STEP = 6  # the values on either side of a jump


def _jumped(values: np.ndarray, at: int, shift: float, ref: np.ndarray) -> bool:
    """Whether the values jumped at ``at``: the median of the ``_STEP`` values from it against
    the ``_STEP`` before moved by half of ``shift`` and by 1.5 times the 95th percentile of such
    moves in ``ref`` (a smooth series that wanders gets there step by step); or, for a feature with
    bursts of spikes, its level since moved by 1.5 times the most it moved between stretches of ``ref``."""
    if at < _STEP or at + _STEP > len(values):
        return True  # nothing to compare: the other tests decide
    jump = abs(np.nanmedian(values[at:at + _STEP]) - np.nanmedian(values[at - _STEP:at]))
    if jump < 0.5 * shift:
        return False
    if np.isnan(ref).any():
        return True
    medians = np.median(np.lib.stride_tricks.sliding_window_view(ref, _STEP)[::_STEP // 2], axis=1)
    moves = np.abs(medians[2:] - medians[:-2])  # stretches that meet end to start
    if not len(moves) or jump >= 1.5 * np.percentile(moves, 95):
        return True
    # a feature with bursts of spikes: its level since moved by 1.5 times the most it moved in the reference
    span = len(values) - at
    if span < 4 * _STEP:
        return False
    stretches = np.median(ref[len(ref) % span:].reshape(-1, span), axis=1)
    return len(stretches) >= 4 and shift >= 1.5 * np.abs(np.diff(stretches)).max()


def _start_outside(rec: np.ndarray, lo: float, hi: float) -> int:
    """Where in ``rec`` the values began to lie outside ``[lo, hi]``: the single change point of
    the share outside, at an index whose value lies outside."""
    out = ((rec > hi) | (rec < lo)).astype(float)
    n = len(out)
    if out[0] and out.mean() >= 0.9:  # outside from the first on: it began there (or before)
        return 0
    i = np.arange(1, n)
    after = np.cumsum(out[::-1])[::-1][1:] / (n - i)
    before = np.cumsum(out)[:-1] / i
    score = (after - before) * np.sqrt(i * (n - i) / n)
    score[out[1:] == 0] = -np.inf  # the new stretch starts with a value outside
    return int(i[np.argmax(score)]) if np.isfinite(score).any() else n // 2


def _how(what: str, before: tuple[float, float], after: tuple[float, float]) -> str:
    (m0, s0), (m1, s1) = before, after
    if what == "scaled":
        ratio = m1 / m0 if m0 != 0 and m1 * m0 > 0 else (s1 / s0 if s0 > 0 else math.inf)
        return f"scaled about x{ratio:.3g}"
    return f"shifted by {(m1 - m0) / s0:+.3g} IQR" if s0 > 0 else f"shifted by {m1 - m0:+.3g}"


def _summary(before: tuple[float, float], after: tuple[float, float]) -> str:
    return (f"median {before[0]:.3g} -> {after[0]:.3g}, IQR {before[1]:.3g} -> {after[1]:.3g}")
