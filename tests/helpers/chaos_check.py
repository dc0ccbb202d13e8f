"""The chaos benchmark's verdict: each output topic's messages, grouped by identity, against the in-process
reference on the recorded arrivals. A topic's row counts messages, distinct identities, extra copies
(each an exact copy of its first), identities missing, and messages whose value differs from the
reference's or another copy's, or has no counterpart; a last row counts the pages (``alert_key``)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from streamxai.plan import label_join
from streamxai.reference import Recorded, ReferenceRun
from streamxai.schemas import LabelEvent
from streamxai.settings import Settings

__all__ = ["TopicCheck", "check_alerts", "check_topic", "check_outputs", "expected_dead_letters", "table"]


@dataclass
class TopicCheck:
    """One row of the verdict."""

    name: str
    messages: int = 0
    distinct: int = 0
    duplicates: int = 0
    missing: int = 0
    mismatched: int = 0
    examples: list[str] = field(default_factory=list)

    def wrong(self, what: str) -> None:
        self.mismatched += 1
        if len(self.examples) < 5:
            self.examples.append(what)

    def lacks(self, what: str) -> None:
        self.missing += 1
        if len(self.examples) < 5:
            self.examples.append(f"missing {what}")

    @property
    def ok(self) -> bool:
        return not (self.missing or self.mismatched)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, tuples and lists element by element: the bit-identical
    values a run through Kafka gives, as JSON gives them back."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def check_topic(name: str, messages: Iterable[dict], key: Callable[[dict], Hashable],
                value: Callable[[dict], Any], want: dict[Hashable, Any]) -> TopicCheck:
    """``messages`` grouped by ``key``; each group's copies must be equal to each other, and
    ``value`` of them equal to ``want[key]``; every key of ``want`` must be there."""
    row = TopicCheck(name)
    copies: dict[Hashable, list[bytes]] = {}
    first: dict[Hashable, dict] = {}
    for m in messages:
        m = {k: v for k, v in m.items() if k != "_partition"}
        row.messages += 1
        k = key(m)
        copies.setdefault(k, []).append(orjson.dumps(m, option=orjson.OPT_SORT_KEYS))
        first.setdefault(k, m)
    row.distinct = len(copies)
    for k, cs in copies.items():
        row.duplicates += len(cs) - 1
        if len(set(cs)) > 1:
            row.wrong(f"{k}: {len(set(cs))} different messages under one identity")
        elif k not in want:
            row.wrong(f"{k}: not in the reference")
        elif not same(value(first[k]), want[k]):
            row.wrong(f"{k}: {value(first[k])!r}, the reference {want[k]!r}")
    for k in want:
        if k not in copies:
            row.lacks(str(k))
    return row


def expected_dead_letters(s: Settings, record: Iterable[Recorded]) -> dict[tuple[str, int, int], str]:
    """The dead letters the model handler sends for ``record`` (labels each join refuses, by input record, with
    the reason), from the joins run once more as the reference builds them."""
    joins: dict[str, Any] = {}
    out: dict[tuple[str, int, int], str] = {}
    for r in record:
        ev, sid = r.event, r.event.stream_id
        join = joins.get(sid) or joins.setdefault(sid, label_join(s.for_stream(sid)))
        if isinstance(ev, LabelEvent):
            res = join.on_label(ev.seq, ev.y, r.at, ref=r.origin, origin=r.origin)
        else:
            res = join.on_features(ev.seq, ev.x, ev.y, ev.ts, r.at, origin=r.origin)
        for refused in res.refused:
            (topic, partition), offset = refused.ref
            out[(topic, partition, offset)] = refused.reason
        if res.error is not None and r.origin is not None:
            (topic, partition), offset = r.origin
            out[(topic, partition, offset)] = "error"
    return out


def _episodes(ref: ReferenceRun) -> dict[Hashable, Any]:
    return {(sid, first, "closed"): (cut, feats) for sid, first, cut, feats in ref.episodes}


def check_outputs(topics: dict[str, list[dict]], ref: ReferenceRun,
                  dead_letters: dict[tuple[str, int, int], str]) -> list[TopicCheck]:
    """A row per output topic (the predictions topic's two kinds apart): ``topics`` maps each
    short name to its decoded messages."""
    preds = [m for m in topics["predictions"] if m["schema"].startswith("prediction/")]
    outcomes = [m for m in topics["predictions"] if m["schema"].startswith("label_outcome/")]
    rows = [
        check_topic("predictions", preds, lambda m: (m["stream_id"], m["seq"]), lambda m: m["y_pred"],
                    dict(ref.predictions)),
        check_topic("label outcomes", outcomes, lambda m: (m["stream_id"], m["seq"]),
                    lambda m: (m["outcome"], m["loss"], m["position"], m["delay_events"], m["waiting"]),
                    {k: (o.outcome, o.loss, o.position, o.delay_events, o.waiting) for k, o in ref.outcomes.items()}),
        check_topic("explanations", topics["explanations"],
                    lambda m: (m["stream_id"], m["position"], m["explainer"], m["feature"]), lambda m: m["value"],
                    dict(ref.explanations)),
        check_topic("drift-events", topics["drift-events"],
                    lambda m: (m["stream_id"], m["position"], m["explainer"], m["feature"]),
                    lambda m: (m["cut_position"], m["level_before"], m["level_after"]), dict(ref.changes)),
    ]
    # the reference lists each closed episode (first position, cut, changed features), and the
    # kind and alert of each episode once; an open message is checked by its identity's copies
    # and by the kind its episode has
    episodes = topics["change-episodes"]
    row = check_topic("change-episodes", [m for m in episodes if m["status"] == "closed"],
                      lambda m: (m["stream_id"], m["first_position"], m["status"]),
                      lambda m: (m["cut_position"], sorted({c["feature"] for c in m["changes"]})), _episodes(ref))
    opened = check_topic("change-episodes", [m for m in episodes if m["status"] != "closed"],
                         lambda m: (m["stream_id"], m["first_position"], m["status"]), lambda m: None,
                         {(m["stream_id"], m["first_position"], m["status"]): None
                          for m in episodes if m["status"] != "closed"})
    for f in ("messages", "distinct", "duplicates", "mismatched"):
        setattr(row, f, getattr(row, f) + getattr(opened, f))
    row.examples += opened.examples
    kinds = sorted({(m["stream_id"], m["first_position"]): (m["stream_id"], m["kind"], m["alert"])
                    for m in episodes}.values())
    if kinds != sorted((sid, kind, alert) for sid, _, kind, alert in ref.kinds):
        row.wrong(f"kinds and alerts of the episodes {kinds}, the reference {sorted(ref.kinds)}")
    rows.append(row)
    rows.append(check_alerts(episodes, ref))
    rows.append(check_topic("dead-letters", topics["dead-letters"],
                            lambda m: (m["source"]["topic"], m["source"]["partition"], m["source"]["offset"]),
                            lambda m: m["reason"], dict(dead_letters)))
    return rows


def check_alerts(episodes: list[dict], ref: ReferenceRun) -> TopicCheck:
    """The pages of ``episodes``, as a pager paging once per ``alert_key`` sends them: alerting messages, keys,
    messages that page no more, reference alerts never paged, and keys paging wrongly or twice."""
    row = TopicCheck("alerts (pages)")
    want = Counter(ref.alerts)
    for k, n in want.items():
        if n > 1:
            row.wrong(f"{k}: the reference announces it {n} times")
    episodes_of: dict[str, set[tuple[str, int, str]]] = {}
    for m in episodes:
        if m["alert"] != (m.get("alert_key") is not None):
            row.wrong(f"{(m['stream_id'], m['first_position'], m['kind'])}: alert {m['alert']} "
                      f"with alert_key {m.get('alert_key')!r}")
        if m.get("alert_key") is None:
            continue
        row.messages += 1
        episodes_of.setdefault(m["alert_key"], set()).add((m["stream_id"], m["first_position"], m["kind"]))
    row.distinct = len(episodes_of)
    row.duplicates = row.messages - row.distinct
    for k, eps in episodes_of.items():
        if k not in want:
            row.wrong(f"{k}: paged, and the reference has no such alert")
        elif len(eps) > 1:
            row.wrong(f"{k}: paged for {len(eps)} episodes {sorted(eps)}")
    for k in want:
        if k not in episodes_of:
            row.lacks(f"alert {k}")
    return row


def table(rows: list[TopicCheck]) -> str:
    """The rows as a fixed-width table, then the first few examples of what went wrong."""
    head = f"{'topic':<16} {'messages':>9} {'distinct':>9} {'duplicates':>10} {'missing':>8} {'mismatched':>10}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.name:<16} {r.messages:>9} {r.distinct:>9} {r.duplicates:>10} {r.missing:>8} {r.mismatched:>10}")
    for r in rows:
        lines += [f"  {r.name}: {e}" for e in r.examples]
    return "\n".join(lines)


def check_arrivals(inputs: dict[tuple[str, int, int], tuple[str, str, int]], record: list[Recorded],
                   acked: set[tuple[str, str, int]]) -> TopicCheck:
    """The arrivals topic against the input topics: every input record recorded as what it is, once or again,
    and every message the producer had acknowledged (``acked``) on an input topic."""
    row = TopicCheck("arrivals")
    seen: dict[tuple[str, int, int], tuple[str, str, int]] = {}
    for r in record:
        row.messages += 1
        (topic, partition), offset = r.origin
        kind = "label" if isinstance(r.event, LabelEvent) else "features"
        what = (kind, r.event.stream_id, r.event.seq)
        where = (topic, partition, offset)
        if where in seen:
            row.duplicates += 1
            if seen[where] != what:
                row.wrong(f"{where}: recorded as {seen[where]} and as {what}")
            continue
        seen[where] = what
        if inputs.get(where) != what:
            row.wrong(f"{where}: recorded as {what}, the input record is {inputs.get(where)}")
    row.distinct = len(seen)
    for where in inputs:
        if where not in seen:
            row.lacks(f"input record {where}")
    for what in acked - set(inputs.values()):
        row.lacks(f"acknowledged {what}, on no input topic")
    return row
