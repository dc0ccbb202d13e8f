"""Seeded demo streams with drift at known positions, as feature events.

>>> evs = list(agrawal_events("s1", n=4, drift_at=2, swap_at=3, seed=1))
>>> [e.seq for e in evs], sorted(evs[0].x) == sorted(AGRAWAL_FEATURES)
([0, 1, 2, 3], True)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from river.datasets import synth
from streamxai.schemas import FeatureEvent, LabelEvent

from ..settings import AGRAWAL_FEATURES  # noqa: F401  (used by the doctest)

__all__ = ["labels_later", "agrawal_events", "DemoPlan"]


class DemoPlan:
    """Where the demo stream drifts, for the live view and the tests."""

    def __init__(self, n: int, drift_at: int | None, swap_at: int | None, swap: tuple[str, str],
                 f_before: int = 1, f_after: int = 2):
        self.n, self.drift_at, self.swap_at, self.swap = n, drift_at, swap_at, swap
        self.f_before, self.f_after = f_before, f_after

    def relate(self, seq: int) -> str:
        """Where ``seq`` lies relative to the induced drifts.

        >>> DemoPlan(3000, 1000, 2000, ("elevel", "car")).relate(1509)
        '+509 after the concept drift at 1000'
        """
        marks = [(at, name) for at, name in ((self.drift_at, "concept drift"), (self.swap_at, "feature swap"))
                 if at is not None and at <= seq]
        if not marks:
            return "before any induced drift"
        at, name = max(marks)
        return f"+{seq - at} after the {name} at {at}"

    def story(self, stream_id: str, changes: list[dict], episodes: list[dict] = ()) -> str:
        """The induced drift points, and each change event (and change episode) of ``stream_id``
        with its distance from them.

        >>> plan = DemoPlan(3000, 1000, 2000, ("elevel", "car"), f_before=0)
        >>> print(plan.story("demo", [{"stream_id": "demo", "seq": 1769, "explainer": "ipfi", "feature": "elevel"}]))
        induced in stream demo: concept drift (agrawal function 0 -> 2) at 1000, feature swap elevel<->car at 2000
          change    seq 1769 ipfi/elevel: +769 after the concept drift at 1000
        """
        lines = [f"induced in stream {stream_id}: " + ", ".join(self.describe().split(", ")[1:])]
        for ep in sorted((e for e in episodes if e.get("stream_id") == stream_id),
                         key=lambda e: e.get("first_seq", 0)):
            # related by where it was detected: the estimated start of the new regime is only as
            # fine as the detector's cut points, so it can fall a block or two before the drift
            first = ep.get("first_seq", ep.get("cut_seq"))
            top = ep.get("changes") or [{}]
            kind = f"{ep['kind']}{' ALERT' if ep.get('alert') else ''}, " if ep.get("kind") else ""
            lines.append(f"  episode  first change at seq {first} ({kind}new regime estimated from seq "
                         f"{ep.get('cut_seq')}, largest {top[0].get('explainer')}/{top[0].get('feature')}): "
                         f"{self.relate(first)}")
        for ch in sorted((c for c in changes if c.get("stream_id") == stream_id), key=lambda c: c["seq"]):
            lines.append(f"  change    seq {ch['seq']} {ch.get('explainer')}/{ch.get('feature')}: {self.relate(ch['seq'])}")
        if len(lines) == 1:
            lines.append("  no change event yet")
        return "\n".join(lines)

    def describe(self) -> str:
        parts = [f"{self.n} events"]
        if self.drift_at is not None:
            parts.append(f"concept drift (agrawal function {self.f_before} -> {self.f_after}) at {self.drift_at}")
        if self.swap_at is not None:
            parts.append(f"feature swap {self.swap[0]}<->{self.swap[1]} at {self.swap_at}")
        return ", ".join(parts)


def agrawal_events(
    stream_id: str,
    n: int,
    drift_at: int | None = None,
    swap_at: int | None = None,
    seed: int = 42,
    f_before: int = 1,
    f_after: int = 2,
    swap: tuple[str, str] = ("elevel", "car"),
    t0: float = 1_700_000_000.0,
) -> Iterator[FeatureEvent]:
    """The agrawal demo uses river's Agrawal generator: classification function ``f_before``
    until ``drift_at``, then ``f_after`` (a concept drift: the label depends on other
    features), and from ``swap_at`` on the values of two features are exchanged (a feature
    drift: the model's inputs move). A stationary control keeps ``f_before`` throughout.
    """
    before = iter(synth.Agrawal(classification_function=f_before, seed=seed))
    after = iter(synth.Agrawal(classification_function=f_after, seed=seed + 1))
    a, b = swap
    for seq in range(n):
        src = after if drift_at is not None and seq >= drift_at else before
        x, y = next(src)
        x = {k: float(v) for k, v in x.items()}
        if swap_at is not None and seq >= swap_at:
            x[a], x[b] = x[b], x[a]
        yield FeatureEvent(stream_id=stream_id, seq=seq, ts=t0 + seq, x=x, y=int(y))


def labels_later(events: Iterable[FeatureEvent], delay: int, unlabelled: Iterable[int] = (),
                 early: Iterable[int] = ()) -> list[FeatureEvent | LabelEvent]:
    """The events without their labels, and each label as a :class:`~schemas.LabelEvent` sent
    right after the event ``delay`` places later (the last ``delay`` labels at the end); none
    for the seqs in ``unlabelled``; the labels of the seqs in ``early`` sent just before their
    own event (a label that overtook its event). ``delay = 0`` sends each label right after its event.

    >>> msgs = labels_later(agrawal_events("s", 4, seed=1), delay=2, unlabelled={1})
    >>> [(type(m).__name__[0], m.seq) for m in msgs]
    [('F', 0), ('F', 1), ('F', 2), ('L', 0), ('F', 3), ('L', 2), ('L', 3)]
    """
    events = list(events)
    unlabelled, early = set(unlabelled), set(early)
    out: list[FeatureEvent | LabelEvent] = []

    def label(ev: FeatureEvent) -> LabelEvent:
        return LabelEvent(ev.stream_id, ev.seq, ev.y, ev.ts + delay)

    def sent_later(ev: FeatureEvent) -> bool:
        return ev.y is not None and ev.seq not in unlabelled and ev.seq not in early

    for i, ev in enumerate(events):
        if ev.seq in early and ev.y is not None:
            out.append(label(ev))
        out.append(FeatureEvent(ev.stream_id, ev.seq, ev.ts, ev.x, None))
        if i >= delay and sent_later(events[i - delay]):
            out.append(label(events[i - delay]))
    out += [label(ev) for ev in events[max(0, len(events) - delay):] if sent_later(ev)]
    return out
