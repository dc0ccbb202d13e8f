"""All series of one stream in one place: change events that explain themselves, and episodes.

A :class:`StreamChangeDetector` holds one :class:`~pipeline.core.drift.SeriesDetector` per
``(explainer, feature)`` of a stream, the model's prequential loss, the latest published
values and a thinned history of iPDP curves. ``drift_delta`` is split evenly over the
stream's series, so it bounds the false-alarm probability of the *stream* (see
:mod:`pipeline.core.drift`).

Minimum effect. A change of series ``(e, f)`` is reported only if its levels differ by at
least ``min_effect * scale``, ``scale`` the largest ``|level|`` of explainer ``e`` over the
stream's features (whole windows) and the two sides of the cut: relative to the stream's
largest importance *of that explainer*, since iPFI (0-1 loss), iSAGE (Brier) and iPDP
(probability spread) have different units.

Tested explainers. Only the series of the explainers in ``tested`` (default: all) are tested
and share ``delta``; the others are kept for the levels and curves that change events show.

Warm-up. Blocks of events before ``warmup`` are not monitored: a model that starts from
nothing changes its explanation while it learns, which is not worth reporting.

Episodes. Changes of one stream detected within ``episode_gap`` events of the previous one
form an episode; it closes at the first message more than ``episode_gap`` events after its
last change, or on :meth:`StreamChangeDetector.flush`. The episode ranks its changes by
relative effect ``|after - before| / scale`` and carries, split at the cut of its top change,
every explainer's vector before and after (with ranks), the iPDP curves of the features that
changed, and the model's loss before and after.

>>> import random
>>> from pipeline.core.drift import Moments
>>> rng = random.Random(5)
>>> det = StreamChangeDetector([("ipfi", "a"), ("ipfi", "b")], delta=0.01, warmup=0, episode_gap=500)
>>> def block(level):
...     xs = [level + rng.gauss(0, 0.2) for _ in range(10)]
...     m = sum(xs) / 10
...     return Moments(10, m, sum((x - m) ** 2 for x in xs))
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

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .base import Component
from .drift import Z95, Moments, SeriesDetector, SeriesWindow

__all__ = ["StreamChangeDetector", "SeriesChange", "Episode"]

_CURVES_KEPT = 32


@dataclass(frozen=True)
class SeriesChange:
    """One series changed: the new regime starts at ``cut_seq``; detected at ``seq``."""

    explainer: str
    feature: str
    seq: int
    cut_seq: int
    before: Moments
    after: Moments
    z: float
    threshold: float
    min_effect: float
    scale: float
    #: ``{explainer: {feature: (before, after)}}``: every series' level split at the cut (None:
    #: no data on that side), computed at detection, when the cut is recent and the split fine
    vectors: dict[str, dict[str, tuple[float | None, float | None]]]
    curve_before: dict[str, list] | None = None
    curve_after: dict[str, list] | None = None
    loss_before: Moments | None = None
    loss_after: Moments | None = None

    @property
    def effect(self) -> float:
        return self.after.mean - self.before.mean

    @property
    def explanation_before(self) -> dict[str, float | None]:
        """This explainer's level of every feature before the cut."""
        return {f: v[0] for f, v in self.vectors[self.explainer].items()}

    @property
    def explanation_after(self) -> dict[str, float | None]:
        return {f: v[1] for f, v in self.vectors[self.explainer].items()}

    @property
    def relative_effect(self) -> float:
        return abs(self.effect) / self.scale if self.scale > 0 else float("inf")

    @staticmethod
    def ci(m: Moments) -> list[float]:
        """95% confidence interval of a level (normal approximation)."""
        r = Z95 * m.se if m.n > 1 else float("inf")
        return [m.mean - r, m.mean + r]


@dataclass(frozen=True)
class Episode:
    """Changes of one stream that happened together, ranked by relative effect."""

    first_seq: int
    last_seq: int
    closed_seq: int
    cut_seq: int
    changes: tuple[SeriesChange, ...]
    #: ``{explainer: {feature: (before, after)}}``, levels split at ``cut_seq``
    explanations: dict[str, dict[str, tuple[float | None, float | None]]]
    #: ``{feature: (curve before, curve after)}`` of the iPDP curves of changed features
    curves: dict[str, tuple[dict | None, dict | None]] = field(default_factory=dict)
    loss_before: Moments | None = None
    loss_after: Moments | None = None


class _Series:
    __slots__ = ("detector", "last_seq", "value", "curves", "curve", "previous_curve")

    def __init__(self, detector: SeriesDetector):
        self.detector = detector
        self.last_seq = -1
        self.value: float | None = None
        self.curves: list[tuple[int, dict]] = []  # (seq, curve), thinned, within the window
        self.curve: tuple[int, dict] | None = None  # the newest (seq, curve)
        self.previous_curve: tuple[int, dict] | None = None


class StreamChangeDetector(Component):
    """Change detection over every explanation series of one stream (module docstring)."""

    def __init__(
        self,
        series: Sequence[tuple[str, str]],
        delta: float = 0.01,
        min_effect: float = 0.2,
        min_samples: int = 100,
        max_window: int = 20_000,
        warmup: int = 1000,
        episode_gap: int = 1000,
        buckets_per_level: int = 2,
        tested: Sequence[str] | None = None,
    ):
        if not series:
            raise ValueError("series is empty: list the stream's (explainer, feature) pairs")
        if not 0 < delta < 1:
            raise ValueError(f"drift delta={delta} must be in (0, 1)")
        if min_effect < 0:
            raise ValueError(f"drift min_effect={min_effect} must be >= 0")
        self.series = [tuple(s) for s in series]
        self.delta = delta
        self.min_effect = min_effect
        self.min_samples = min_samples
        self.max_window = max_window
        self.warmup = warmup
        self.episode_gap = episode_gap
        self.buckets_per_level = buckets_per_level
        self.tested = None if tested is None else list(tested)
        self._reset()

    def _reset(self) -> None:
        tested = {e for e, _ in self.series} if self.tested is None else set(self.tested)
        self._tested = frozenset(tested)
        n_tested = sum(1 for e, _ in self.series if e in tested)
        if n_tested == 0:
            raise ValueError(f"no series of explainers {sorted(tested)} among {self.series}: nothing to test")
        alpha = self.delta / n_tested  # the stream's budget, split over the series actually tested
        self._series = {
            s: _Series(SeriesDetector(alpha, self.min_samples, self.max_window, self.buckets_per_level))
            for s in self.series
        }
        self._loss = SeriesWindow(self.max_window, self.buckets_per_level)
        self._loss_seq = -1
        self._open: list[SeriesChange] = []
        self._curve_stride = max(1, self.max_window // _CURVES_KEPT)

    # queries ---------------------------------------------------------------------
    def knows(self, explainer: str, feature: str) -> bool:
        return (explainer, feature) in self._series

    def last_seq(self, explainer: str, feature: str) -> int:
        """The newest ``seq`` folded in for the series (-1: none)."""
        return self._series[(explainer, feature)].last_seq

    def level(self, explainer: str, feature: str) -> float | None:
        """Mean increment of the series' window (None before any data)."""
        w = self._series[(explainer, feature)].detector.window
        return w.total.mean if w.n else None

    # the update ------------------------------------------------------------------
    def update(
        self,
        explainer: str,
        feature: str,
        seq: int,
        block: Any,
        value: float | None = None,
        curve: dict | None = None,
        model_loss: Any = None,
    ) -> tuple[list[SeriesChange], list[Episode]]:
        """Fold in one explanation message; returns the changes it revealed and the episodes
        it closed. ``block`` and ``model_loss`` have ``n``, ``mean`` and ``m2`` (or are None)."""
        st = self._series.get((explainer, feature))
        if st is None:
            raise ValueError(
                f"series {explainer}/{feature} is not one of this stream's {len(self.series)} series; "
                "every worker must run with the same explainers and features settings"
            )
        episodes = self._close_if_due(seq)
        seq_lo = st.last_seq + 1 if st.last_seq >= 0 else max(0, seq - (block.n if block else 1) + 1)
        st.last_seq = seq
        if value is not None:
            st.value = value
        if curve is not None:
            curve = _copy(curve)  # kept: never share the caller's lists
            st.previous_curve, st.curve = st.curve, (seq, curve)
            if not st.curves or seq - st.curves[-1][0] >= self._curve_stride:
                st.curves.append((seq, curve))
            while st.curves and st.curves[0][0] < seq - self.max_window:
                st.curves.pop(0)
        if model_loss is not None and seq > self._loss_seq and model_loss.n > 0:
            # every message of one report carries the same loss block: take it once per seq
            self._loss.add(self._loss_seq + 1, seq, model_loss.n, model_loss.mean, model_loss.m2)
            self._loss_seq = seq
        if block is None or block.n <= 0 or seq < self.warmup:
            return [], episodes
        if explainer not in self._tested:  # kept for the levels in change events, never tested
            st.detector.window.add(seq_lo, seq, int(block.n), float(block.mean), float(block.m2))
            return [], episodes
        scale_e: list[float] = []  # computed only when a cut is significant

        def min_effect(a: Moments, b: Moments) -> float:
            if not scale_e:
                scale_e.append(self._scale(explainer, seq))
            return self.min_effect * max(scale_e[0], abs(a.mean), abs(b.mean))

        cut = st.detector.add(seq_lo, seq, int(block.n), float(block.mean), float(block.m2), min_effect)
        if cut is None:
            return [], episodes
        scale = max(scale_e[0], abs(cut.before.mean), abs(cut.after.mean))
        vectors = self._vectors(cut.seq, seq, own=(explainer, feature, cut.before, cut.after))
        curve_b, curve_a = self._curves(feature, cut.seq, seq)
        loss_b, loss_a = self._loss.split(cut.seq)
        change = SeriesChange(
            explainer, feature, seq, cut.seq, cut.before, cut.after, cut.z, cut.threshold, cut.min_effect,
            scale, vectors, curve_b, curve_a, loss_b, loss_a,
        )
        self._open.append(change)
        return [change], episodes

    def flush(self) -> list[Episode]:
        """Close the open episode, if any (end of a finite stream)."""
        if not self._open:
            return []
        return [self._close(max(c.seq for c in self._open))]

    # internals -------------------------------------------------------------------
    # Order independence: the other series' messages of the current report (same seq) may come
    # before or after this one (explain groups on different workers), so every read of another
    # series uses only its blocks that end before the current seq, and curves sent before it.
    def _scale(self, explainer: str, upto: int) -> float:
        best = 0.0
        for (e, _), st in self._series.items():
            if e == explainer:
                m = st.detector.window.before(upto)
                if m.n:
                    best = max(best, abs(m.mean))
        return best

    def _vectors(self, cut_seq: int, upto: int, own: tuple[str, str, Moments, Moments]):
        out: dict[str, dict[str, tuple[float | None, float | None]]] = {}
        for (e, f), st in self._series.items():
            if (e, f) == own[:2]:
                pair: tuple[float | None, float | None] = (own[2].mean, own[3].mean)
            else:
                b, a = st.detector.window.split(cut_seq, upto)
                pair = (b.mean if b else None, a.mean if a else None)
            out.setdefault(e, {})[f] = pair
        return out

    def _curves(self, feature: str, cut_seq: int, upto: int) -> tuple[dict | None, dict | None]:
        st = self._series.get(("ipdp", feature))
        if st is None:
            return None, None
        now = st.curve if st.curve is not None and st.curve[0] < upto else st.previous_curve
        earlier = [c for s, c in st.curves if s < cut_seq]
        return (_copy(earlier[-1]) if earlier else None), (_copy(now[1]) if now is not None else None)

    def _close_if_due(self, seq: int) -> list[Episode]:
        if self._open and seq > max(c.seq for c in self._open) + self.episode_gap:
            return [self._close(seq)]
        return []

    def _close(self, seq: int) -> Episode:
        """The top change's context (split at its cut when it was detected), with each changed
        series' own levels: before = at its first change in the episode, after = its window
        now (which starts at its cut)."""
        changes = sorted(self._open, key=lambda c: (-c.relative_effect, c.explainer, c.feature))
        self._open = []
        top = changes[0]
        explanations = {e: dict(v) for e, v in top.vectors.items()}
        seen = set()
        for c in sorted(changes, key=lambda c: c.seq):
            if (c.explainer, c.feature) in seen:
                continue
            seen.add((c.explainer, c.feature))
            now = self._series[(c.explainer, c.feature)].detector.window.before(seq)
            explanations[c.explainer][c.feature] = (c.before.mean, now.mean if now.n else c.after.mean)
        curves = {}
        for c in changes:
            if c.feature not in curves:
                b, a = self._curves(c.feature, top.cut_seq, seq)
                if b is not None or a is not None:
                    curves[c.feature] = (b, a)
        return Episode(
            first_seq=min(c.seq for c in changes), last_seq=max(c.seq for c in changes), closed_seq=seq,
            cut_seq=top.cut_seq, changes=tuple(changes), explanations=explanations, curves=curves,
            loss_before=top.loss_before, loss_after=top.loss_after,
        )


def ranks(levels: dict[str, float | None]) -> dict[str, int | None]:
    """Rank 1 = largest level; features without a level get None.

    >>> ranks({"a": 0.1, "b": 0.4, "c": None})
    {'a': 2, 'b': 1, 'c': None}
    """
    known = sorted((f for f, v in levels.items() if v is not None), key=lambda f: (-levels[f], f))
    pos = {f: i + 1 for i, f in enumerate(known)}
    return {f: pos.get(f) for f in levels}


def _copy(curve: dict) -> dict:
    return {k: list(v) if isinstance(v, list) else v for k, v in curve.items()}
